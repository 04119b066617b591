//! W3C N-Triples: `<subject> <predicate> <object> .` per line.
//!
//! IRIs become node names and relation names as written (without the angle brackets);
//! blank nodes keep their `_:label`; a literal object becomes a node named by its
//! lexical form (language tags and datatypes are dropped), which is how KG-QA data sets
//! treat values such as years and titles.

use std::{
    fs::File,
    io::{BufRead, BufReader},
    path::Path,
};

use super::{io_error, triples::add_triple, LoadSink};
use crate::{embedded::GraphBuilder, StoreResult};

pub(super) fn load(
    path: &Path,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    sink.start_file(path);
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = String::new();
    let mut line_number = 0u64;
    loop {
        line.clear();
        let read = match reader.read_line(&mut line) {
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::InvalidData => {
                line_number += 1;
                sink.bad(path, line_number, "not valid UTF-8")?;
                // Skip the rest of the offending line.
                let mut skipped = Vec::new();
                reader
                    .read_until(b'\n', &mut skipped)
                    .map_err(|error| io_error(path, error))?;
                continue;
            }
            Err(error) => return Err(io_error(path, error)),
        };
        if read == 0 {
            return Ok(());
        }
        line_number += 1;
        sink.line(read);
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        match parse_line(text) {
            Ok((subject, predicate, object)) => {
                if let Err(reason) = add_triple(builder, &subject, &predicate, &object) {
                    sink.bad(path, line_number, reason)?;
                }
            }
            Err(reason) => sink.bad(path, line_number, reason)?,
        }
    }
}

/// Parses one statement into (subject, predicate, object) names.
pub(super) fn parse_line(text: &str) -> Result<(String, String, String), String> {
    let mut rest = text;
    let subject = term(&mut rest, false)?;
    let predicate = term(&mut rest, false)?;
    let object = term(&mut rest, true)?;
    if rest.trim_start() != "." {
        return Err(format!(
            "expected `.` after the object, found `{}`",
            rest.trim()
        ));
    }
    Ok((subject, predicate, object))
}

fn term(rest: &mut &str, literal_allowed: bool) -> Result<String, String> {
    let text = rest.trim_start();
    if let Some(after) = text.strip_prefix('<') {
        let end = after.find('>').ok_or("unterminated IRI")?;
        *rest = &after[end + 1..];
        return unescape(&after[..end]);
    }
    if text.starts_with("_:") {
        let end = text.find(|c: char| c.is_whitespace()).unwrap_or(text.len());
        *rest = &text[end..];
        return Ok(text[..end].to_owned());
    }
    if literal_allowed {
        if let Some(after) = text.strip_prefix('"') {
            // Find the closing quote that is not escaped.
            let mut escaped = false;
            let mut close = None;
            for (index, character) in after.char_indices() {
                match character {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        close = Some(index);
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let close = close.ok_or("unterminated literal")?;
            let value = unescape(&after[..close])?;
            let mut tail = &after[close + 1..];
            if let Some(tagged) = tail.strip_prefix('@') {
                let end = tagged
                    .find(|c: char| c.is_whitespace() || c == '.')
                    .unwrap_or(tagged.len());
                tail = &tagged[end..];
            } else if let Some(typed) = tail.strip_prefix("^^<") {
                let end = typed.find('>').ok_or("unterminated datatype IRI")?;
                tail = &typed[end + 1..];
            }
            *rest = tail;
            return Ok(value);
        }
    }
    Err(format!(
        "expected {}, found `{}`",
        if literal_allowed {
            "an IRI, blank node or literal"
        } else {
            "an IRI or blank node"
        },
        text.chars().take(20).collect::<String>()
    ))
}

fn unescape(text: &str) -> Result<String, String> {
    if !text.contains('\\') {
        return Ok(text.to_owned());
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(character) = chars.next() {
        if character != '\\' {
            out.push(character);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('"') => out.push('"'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(kind @ ('u' | 'U')) => {
                let digits = if kind == 'u' { 4 } else { 8 };
                let hex: String = chars.by_ref().take(digits).collect();
                let code =
                    u32::from_str_radix(&hex, 16).map_err(|_| format!("bad \\{kind} escape"))?;
                out.push(char::from_u32(code).ok_or_else(|| format!("bad code point {hex}"))?);
            }
            other => {
                return Err(format!(
                    "bad escape \\{}",
                    other.map(String::from).unwrap_or_default()
                ))
            }
        }
    }
    Ok(out)
}
