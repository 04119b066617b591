//! Triple files: one edge per line or record.

use std::{
    fs::File,
    io::{BufRead, BufReader},
    path::Path,
};

use super::{io_error, HeaderMode, LoadSink};
use crate::{embedded::GraphBuilder, StoreResult};

/// Column names read as a header at the top of a triple file whatever follows.
const USUAL_HEADERS: &[[&str; 3]] = &[
    ["head", "relation", "tail"],
    ["h", "r", "t"],
    ["subject", "predicate", "object"],
    ["source", "relation", "target"],
];

/// Rows after the first that [`header_reason`] looks at.
const HEADER_SAMPLE: usize = 1_000;

/// Why the first row of a triple file is a header rather than a triple, or `None`.
///
/// Besides the usual column names, a first row is a header when nothing after it looks
/// like it: its relation is no relation of the next rows, neither of its names is a
/// node of theirs, and those rows' relations repeat (so a relation seen once would be
/// odd) — the way a header such as `employee,reports to,manager` stands out from the
/// triples below it. A number in the row, or too few rows to compare, keeps it a
/// triple.
fn header_reason(first: &[String], rest: &[Vec<String>]) -> Option<String> {
    let [head, relation, tail] = first else {
        return None;
    };
    let (head, relation, tail) = (head.trim(), relation.trim(), tail.trim());
    let lower = [head, relation, tail].map(str::to_lowercase);
    if USUAL_HEADERS
        .iter()
        .any(|usual| usual.iter().zip(&lower).all(|(a, b)| *a == b))
    {
        return Some("the usual column names".to_owned());
    }
    let rows: Vec<[&str; 3]> = rest
        .iter()
        .filter_map(|row| match row.as_slice() {
            [h, r, t] => Some([h.trim(), r.trim(), t.trim()]),
            _ => None,
        })
        .collect();
    if rows.len() < 2
        || [head, relation, tail]
            .iter()
            .any(|field| field.is_empty() || field.parse::<f64>().is_ok())
    {
        return None;
    }
    let relations: std::collections::HashSet<&str> = rows.iter().map(|row| row[1]).collect();
    let nodes: std::collections::HashSet<&str> =
        rows.iter().flat_map(|row| [row[0], row[2]]).collect();
    if relations.contains(relation)
        || nodes.contains(head)
        || nodes.contains(tail)
        || relations.len() * 2 > rows.len()
    {
        return None;
    }
    Some(format!(
        "`{relation}` is no relation of the {} rows after it (which use {} relations) and \
         neither `{head}` nor `{tail}` is a node of theirs",
        rows.len(),
        relations.len()
    ))
}

/// Decides, per [`HeaderMode`], whether the first of the file's first `rows` is a
/// header; records the decision in `sink` and returns it.
fn is_header(path: &Path, rows: &[Vec<String>], sink: &mut LoadSink<'_>) -> bool {
    let Some((first, rest)) = rows.split_first() else {
        return false;
    };
    let reason = match sink.header_mode() {
        HeaderMode::Absent => None,
        HeaderMode::Present => Some("the load was told the file has a header".to_owned()),
        HeaderMode::Auto => header_reason(first, rest),
    };
    match reason {
        Some(why) => {
            sink.header(path, first.clone(), why);
            true
        }
        None => false,
    }
}

/// The fields of the first `limit` rows of a `separator`-separated file (empty and
/// comment lines skipped; a row's tail takes the rest of the line, as when loading).
fn separated_rows(path: &Path, separator: u8, limit: usize) -> StoreResult<Vec<Vec<String>>> {
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut rows = Vec::new();
    for line in BufReader::new(file).split(b'\n') {
        if rows.len() >= limit {
            break;
        }
        let line = line.map_err(|error| io_error(path, error))?;
        let Ok(text) = std::str::from_utf8(&line) else {
            rows.push(Vec::new());
            continue;
        };
        let text = text.trim_end_matches(['\r', '\n']);
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        rows.push(
            text.splitn(3, separator as char)
                .map(str::to_owned)
                .collect(),
        );
    }
    Ok(rows)
}

/// The fields of the first `limit` records of a CSV file (blank records skipped).
fn csv_rows(path: &Path, limit: usize) -> StoreResult<Vec<Vec<String>>> {
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(BufReader::new(file));
    let mut rows = Vec::new();
    for record in reader.records().take(limit) {
        match record {
            Ok(record) if record.len() == 1 && record[0].trim().is_empty() => {}
            Ok(record) => rows.push(record.iter().map(str::to_owned).collect()),
            Err(_) => rows.push(Vec::new()),
        }
    }
    Ok(rows)
}

/// `head SEP relation SEP tail` per line. The tail takes the rest of the line, so a
/// separator inside a tail survives; empty lines and lines starting with `#` are skipped.
pub(super) fn load_separated(
    path: &Path,
    separator: u8,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    sink.start_file(path);
    let rows = separated_rows(path, separator, HEADER_SAMPLE + 1)?;
    let mut skip_header = is_header(path, &rows, sink);
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
        if std::mem::take(&mut skip_header) {
            continue;
        }
        let Ok(text) = std::str::from_utf8(line) else {
            sink.not_utf8(path, line_number, line)?;
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
    let rows = csv_rows(path, HEADER_SAMPLE + 1)?;
    let mut skip_header = is_header(path, &rows, sink);
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(BufReader::with_capacity(1 << 20, file));
    let mut record = csv::StringRecord::new();
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
        if record.len() == 1 && record.get(0).is_some_and(|field| field.trim().is_empty()) {
            continue;
        }
        if std::mem::take(&mut skip_header) {
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
