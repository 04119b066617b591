//! The framing of kgmesh's single-file formats (the vector index, the text index): an
//! 8-byte magic, the format version, the CRC-32 of the body, the body's length, the
//! body. Files are written to a temporary name and renamed, so that a crash while
//! writing leaves the previous file whole; reading checks the magic, the length and the
//! checksum before anything is decoded. Which versions a reader accepts is its own
//! business.

use std::path::Path;

use crate::{StoreError, StoreResult};

const HEADER: usize = 24;

/// Writes `body` framed to `path`; returns the bytes written.
pub(crate) fn write(path: &Path, magic: &[u8; 8], version: u32, body: &[u8]) -> StoreResult<u64> {
    let mut bytes = Vec::with_capacity(body.len() + HEADER);
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&version.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(body);
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".partial");
    let temporary = std::path::PathBuf::from(temporary);
    std::fs::write(&temporary, &bytes).map_err(|error| io_error(&temporary, error))?;
    std::fs::rename(&temporary, path).map_err(|error| io_error(path, error))?;
    Ok(bytes.len() as u64)
}

/// The version and body of the framed file at `path`, a `what` ("vector index").
pub(crate) fn read(path: &Path, magic: &[u8; 8], what: &str) -> StoreResult<(u32, Vec<u8>)> {
    let mut bytes = std::fs::read(path).map_err(|error| io_error(path, error))?;
    if bytes.len() < HEADER || &bytes[..8] != magic {
        return Err(corrupt(path, format!("not a kgmesh {what} (bad magic)")));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let (version, checksum) = (word(8), word(12));
    let mut length = [0u8; 8];
    length.copy_from_slice(&bytes[16..HEADER]);
    if u64::from_le_bytes(length) != (bytes.len() - HEADER) as u64 {
        return Err(corrupt(path, format!("truncated {what}")));
    }
    bytes.drain(..HEADER);
    if crc32fast::hash(&bytes) != checksum {
        return Err(corrupt(
            path,
            "checksum mismatch: the file was altered or damaged".to_owned(),
        ));
    }
    Ok((version, bytes))
}

pub(crate) fn corrupt(path: &Path, detail: String) -> StoreError {
    StoreError::Corrupt {
        path: path.display().to_string(),
        detail,
    }
}

pub(crate) fn io_error(path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}
