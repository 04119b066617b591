//! W3C N-Triples: `<subject> <predicate> <object> .` per line.
//!
//! IRIs become node names and relation names as written (without the angle brackets);
//! blank nodes keep their `_:label`. A node named by `rdfs:label`, `skos:prefLabel`,
//! `foaf:name` or `schema:name` is shown and linked by that name instead, its IRI kept
//! as its `iri` property. A predicate given such a name is read by it ([`GraphBuilder::
//! set_relation_label`]: evidence shows it, question words are matched against it) and
//! becomes no node. A literal object becomes, by
//! [`LiteralMode`], either a node named by its lexical form (language tags and
//! datatypes dropped), which is how KG-QA data sets treat values such as years and
//! titles, or a typed property of the subject.

use std::{
    collections::hash_map::Entry,
    fs::File,
    io::{BufRead, BufReader},
    path::Path,
};

use kgmesh_schemas::graph::Value;
use rustc_hash::FxHashMap;

use super::{io_error, triples::add_triple, LiteralMode, LoadSink};
use crate::{
    embedded::{GraphBuilder, NodeIdx},
    StoreResult,
};

const XSD: &str = "http://www.w3.org/2001/XMLSchema#";

/// Predicates whose literal names their subject: the node is shown and linked by that
/// name (the first one given), its IRI kept as the property [`IRI_PROPERTY`], and the
/// statement is no edge.
const NAME_PREDICATES: &[&str] = &[
    "http://www.w3.org/2000/01/rdf-schema#label",
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://xmlns.com/foaf/0.1/name",
    "http://schema.org/name",
    "https://schema.org/name",
];

/// The property that keeps a renamed node's IRI.
pub const IRI_PROPERTY: &str = "iri";

/// The object of a statement.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Object {
    /// An IRI or a blank node: a node name.
    Resource(String),
    Literal {
        lexical: String,
        /// Datatype IRI, when given.
        datatype: Option<String>,
    },
}

impl Object {
    /// The name a node made from this object gets.
    fn node_name(&self) -> &str {
        match self {
            Object::Resource(name) => name,
            Object::Literal { lexical, .. } => lexical,
        }
    }
}

/// The typed value of a literal (see [`LiteralMode::Properties`]).
pub(super) fn literal_value(lexical: &str, datatype: Option<&str>) -> Value {
    let local = datatype.and_then(|iri| iri.strip_prefix(XSD));
    let text = lexical.trim();
    match local {
        Some(
            "integer" | "int" | "long" | "short" | "byte" | "nonNegativeInteger"
            | "positiveInteger" | "nonPositiveInteger" | "negativeInteger" | "unsignedLong"
            | "unsignedInt" | "unsignedShort" | "unsignedByte",
        ) => text
            .parse::<i64>()
            .map_or_else(|_| Value::String(lexical.to_owned()), Value::Int),
        Some("decimal" | "double" | "float") => text
            .parse::<f64>()
            .map_or_else(|_| Value::String(lexical.to_owned()), Value::Float),
        Some("boolean") => match text {
            "true" | "1" => Value::Bool(true),
            "false" | "0" => Value::Bool(false),
            _ => Value::String(lexical.to_owned()),
        },
        _ => Value::String(lexical.to_owned()),
    }
}

pub(super) fn load(
    path: &Path,
    literals: LiteralMode,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    // Literal values per (subject, predicate), set once at the end so that several
    // values of one predicate become a list instead of overwriting each other.
    let mut properties: FxHashMap<(NodeIdx, String), Vec<Value>> = FxHashMap::default();
    let mut property_order: Vec<(NodeIdx, String)> = Vec::new();
    // Subject → its label, the first given for it, in the order first met (a subject
    // that turns out to be a predicate labels the relation instead of a node).
    let mut names: FxHashMap<String, String> = FxHashMap::default();
    let mut named: Vec<String> = Vec::new();
    read(
        path,
        builder,
        sink,
        |builder, subject, predicate, object| match (literals, object) {
            (_, Object::Literal { lexical, .. })
                if NAME_PREDICATES.contains(&predicate.trim())
                    && !lexical.trim().is_empty()
                    && !subject.trim().is_empty() =>
            {
                let subject = subject.trim();
                if let Entry::Vacant(slot) = names.entry(subject.to_owned()) {
                    slot.insert(lexical.trim().to_owned());
                    named.push(subject.to_owned());
                }
                Ok(())
            }
            (LiteralMode::Properties, Object::Literal { lexical, datatype }) => {
                let value = literal_value(&lexical, datatype.as_deref());
                let subject = subject.trim();
                if subject.is_empty() || predicate.trim().is_empty() {
                    return Err("empty subject or predicate".to_owned());
                }
                let node = builder.node(subject);
                let key = (node, predicate.trim().to_owned());
                let values = properties.entry(key.clone()).or_default();
                if values.is_empty() {
                    property_order.push(key);
                }
                values.push(value);
                Ok(())
            }
            (_, object) => add_triple(builder, &subject, &predicate, object.node_name()),
        },
    )?;
    for key in property_order {
        let Some(mut values) = properties.remove(&key) else {
            continue;
        };
        let value = if values.len() == 1 {
            values.pop().unwrap_or(Value::Null)
        } else {
            Value::List(values)
        };
        builder.set_property(key.0, &key.1, value);
    }
    let mut renames: FxHashMap<NodeIdx, String> = FxHashMap::default();
    for iri in named {
        let Some(label) = names.remove(&iri) else {
            continue;
        };
        if builder.has_relation(&iri) {
            builder.set_relation_label(&iri, &label);
            continue;
        }
        let node = builder.node(&iri);
        builder.set_property(node, IRI_PROPERTY, Value::String(iri));
        renames.insert(node, label);
    }
    builder.rename(&renames);
    Ok(())
}

/// Reads every statement of `path`, handing each to `statement`; bad lines (syntax, or
/// refused by `statement`) go to `sink`.
fn read(
    path: &Path,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
    mut statement: impl FnMut(&mut GraphBuilder, String, String, Object) -> Result<(), String>,
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
                sink.not_utf8(path, line_number, line.as_bytes())?;
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
                if let Err(reason) = statement(builder, subject, predicate, object) {
                    sink.bad(path, line_number, reason)?;
                }
            }
            Err(reason) => sink.bad(path, line_number, reason)?,
        }
    }
}

/// Parses one statement into subject and predicate names and the object.
pub(super) fn parse_line(text: &str) -> Result<(String, String, Object), String> {
    let mut rest = text;
    let subject = resource(term(&mut rest, false)?)?;
    let predicate = resource(term(&mut rest, false)?)?;
    let object = term(&mut rest, true)?;
    if rest.trim_start() != "." {
        return Err(format!(
            "expected `.` after the object, found `{}`",
            rest.trim()
        ));
    }
    Ok((subject, predicate, object))
}

fn resource(object: Object) -> Result<String, String> {
    match object {
        Object::Resource(name) => Ok(name),
        Object::Literal { .. } => Err("a literal can only be an object".to_owned()),
    }
}

fn term(rest: &mut &str, literal_allowed: bool) -> Result<Object, String> {
    let text = rest.trim_start();
    if let Some(after) = text.strip_prefix('<') {
        let end = after.find('>').ok_or("unterminated IRI")?;
        *rest = &after[end + 1..];
        return unescape(&after[..end]).map(Object::Resource);
    }
    if text.starts_with("_:") {
        let end = text.find(|c: char| c.is_whitespace()).unwrap_or(text.len());
        *rest = &text[end..];
        return Ok(Object::Resource(text[..end].to_owned()));
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
            let lexical = unescape(&after[..close])?;
            let mut tail = &after[close + 1..];
            let mut datatype = None;
            if let Some(tagged) = tail.strip_prefix('@') {
                let end = tagged
                    .find(|c: char| c.is_whitespace() || c == '.')
                    .unwrap_or(tagged.len());
                tail = &tagged[end..];
            } else if let Some(typed) = tail.strip_prefix("^^<") {
                let end = typed.find('>').ok_or("unterminated datatype IRI")?;
                datatype = Some(unescape(&typed[..end])?);
                tail = &typed[end + 1..];
            }
            *rest = tail;
            return Ok(Object::Literal { lexical, datatype });
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
