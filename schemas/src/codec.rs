//! Wire formats. bincode 2 (through serde) is the default; JSON is the alternative for
//! agents written in other languages. The content type travels in a header, so a
//! receiver never guesses.

use bytes::Bytes;
use serde::{de::DeserializeOwned, Serialize};

/// Largest payload a decoder will allocate for, whatever a hostile length prefix claims.
pub const MAX_DECODE_BYTES: usize = 64 << 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ContentType {
    #[default]
    Bincode,
    Json,
}

impl ContentType {
    pub const BINCODE_MIME: &'static str = "application/x-kgmesh-bincode";
    pub const JSON_MIME: &'static str = "application/json";

    pub fn mime(self) -> &'static str {
        match self {
            ContentType::Bincode => Self::BINCODE_MIME,
            ContentType::Json => Self::JSON_MIME,
        }
    }

    /// The short name agents announce in `kgmesh.codecs`: `bincode` or `json`.
    pub fn name(self) -> &'static str {
        match self {
            ContentType::Bincode => "bincode",
            ContentType::Json => "json",
        }
    }

    /// A short name ([`Self::name`], any case) or a mime type.
    pub fn from_name_or_mime(text: &str) -> Result<Self, CodecError> {
        let text = text.trim();
        [ContentType::Bincode, ContentType::Json]
            .into_iter()
            .find(|codec| codec.name().eq_ignore_ascii_case(text))
            .map_or_else(|| Self::from_mime(text), Ok)
    }

    pub fn from_mime(mime: &str) -> Result<Self, CodecError> {
        match mime.trim() {
            Self::BINCODE_MIME => Ok(ContentType::Bincode),
            Self::JSON_MIME => Ok(ContentType::Json),
            other => Err(CodecError::UnknownContentType(other.to_owned())),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("unknown content type {0:?}")]
    UnknownContentType(String),
    #[error("cannot encode: {0}")]
    Encode(String),
    #[error("cannot decode: {0}")]
    Decode(String),
}

fn bincode_config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<MAX_DECODE_BYTES>()
}

pub fn encode<T: Serialize>(content_type: ContentType, value: &T) -> Result<Bytes, CodecError> {
    let bytes = match content_type {
        ContentType::Bincode => bincode::serde::encode_to_vec(value, bincode_config())
            .map_err(|e| CodecError::Encode(e.to_string()))?,
        ContentType::Json => {
            serde_json::to_vec(value).map_err(|e| CodecError::Encode(e.to_string()))?
        }
    };
    Ok(Bytes::from(bytes))
}

/// Decodes a whole payload; trailing bytes are an error, so a truncated or padded
/// message is never half-understood.
pub fn decode<T: DeserializeOwned>(
    content_type: ContentType,
    bytes: &[u8],
) -> Result<T, CodecError> {
    match content_type {
        ContentType::Bincode => {
            let (value, read) = bincode::serde::decode_from_slice(bytes, bincode_config())
                .map_err(|e| CodecError::Decode(e.to_string()))?;
            if read != bytes.len() {
                return Err(CodecError::Decode(format!(
                    "{} trailing bytes after the message",
                    bytes.len() - read
                )));
            }
            Ok(value)
        }
        ContentType::Json => {
            serde_json::from_slice(bytes).map_err(|e| CodecError::Decode(e.to_string()))
        }
    }
}
