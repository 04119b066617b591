//! Triple files: one edge per line or record.

use std::{
    fs::File,
    io::{BufRead, BufReader},
    path::Path,
};

use super::{io_error, LoadSink};
use crate::{embedded::GraphBuilder, StoreResult};

/// Header rows recognised (and skipped) at the top of a CSV triple file.
const CSV_HEADERS: &[[&str; 3]] = &[
    ["head", "relation", "tail"],
    ["h", "r", "t"],
    ["subject", "predicate", "object"],
    ["source", "relation", "target"],
];

/// `head SEP relation SEP tail` per line. The tail takes the rest of the line, so a
/// separator inside a tail survives; empty lines and lines starting with `#` are skipped.
pub(super) fn load_separated(
    path: &Path,
    separator: u8,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    sink.start_file(path);
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut buffer = Vec::with_capacity(256);
    let mut line_number = 0u64;
    loop {
        buffer.clear();
        let read = reader
            .read_until(b'\n', &mut buffer)
            .map_err(|error| io_error(path, error))?;
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        sink.line(read);
        let mut line = buffer.as_slice();
        while let Some((last, rest)) = line.split_last() {
            if *last == b'\n' || *last == b'\r' {
                line = rest;
            } else {
                break;
            }
        }
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            sink.bad(path, line_number, "not valid UTF-8")?;
            continue;
        };
        let separator = separator as char;
        // A tab never belongs to a name, so a fourth TSV field is an error; MetaQA's
        // `|` files keep the rest of the line as the tail ("Drama|Musical").
        let mut fields = text.splitn(if separator == '\t' { 4 } else { 3 }, separator);
        let (Some(head), Some(relation), Some(tail), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            sink.bad(
                path,
                line_number,
                format!(
                    "expected head{shown}relation{shown}tail, found {} field(s)",
                    text.split(separator).count(),
                    shown = if separator == '\t' {
                        "<TAB>".to_owned()
                    } else {
                        separator.to_string()
                    }
                ),
            )?;
            continue;
        };
        if let Err(reason) = add_triple(builder, head, relation, tail) {
            sink.bad(path, line_number, reason)?;
        }
    }
}

/// `head,relation,tail` records with CSV quoting.
pub(super) fn load_csv(
    path: &Path,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    sink.start_file(path);
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let mut record = csv::StringRecord::new();
    let mut first = true;
    let mut last_byte = 0u64;
    loop {
        let line_number = reader.position().line();
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(error) => {
                let line = error
                    .position()
                    .map_or(line_number, |position| position.line());
                sink.line(0);
                sink.bad(path, line, format!("unreadable CSV record: {error}"))?;
                if matches!(error.kind(), csv::ErrorKind::Io(_)) {
                    return Err(io_error(path, error));
                }
                continue;
            }
        }
        let byte = reader.position().byte();
        sink.line((byte - last_byte) as usize);
        last_byte = byte;
        let line_number = record
            .position()
            .map_or(line_number, |position| position.line());
        if first {
            first = false;
            if record.len() == 3 {
                let fields: Vec<String> = record
                    .iter()
                    .map(|field| field.trim().to_ascii_lowercase())
                    .collect();
                if CSV_HEADERS
                    .iter()
                    .any(|header| header.iter().zip(&fields).all(|(a, b)| *a == b))
                {
                    continue;
                }
            }
        }
        if record.len() == 1 && record.get(0).is_some_and(|field| field.trim().is_empty()) {
            continue;
        }
        if record.len() != 3 {
            sink.bad(
                path,
                line_number,
                format!(
                    "expected 3 fields (head,relation,tail), found {}",
                    record.len()
                ),
            )?;
            continue;
        }
        if let Err(reason) = add_triple(builder, &record[0], &record[1], &record[2]) {
            sink.bad(path, line_number, reason)?;
        }
    }
}

pub(super) fn add_triple(
    builder: &mut GraphBuilder,
    head: &str,
    relation: &str,
    tail: &str,
) -> Result<(), String> {
    let (head, relation, tail) = (head.trim(), relation.trim(), tail.trim());
    if head.is_empty() || relation.is_empty() || tail.is_empty() {
        return Err("empty head, relation or tail".to_owned());
    }
    let head = builder.node(head);
    let tail = builder.node(tail);
    builder.add_edge(head, relation, tail);
    Ok(())
}
