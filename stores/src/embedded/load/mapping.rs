//! Property-graph CSV directories: which file holds which nodes and relationships,
//! described by a small TOML mapping (see `stores/examples/northwind.toml`).
//!
//! ```toml
//! null_values = ["NULL", ""]          # cells that mean "no value"
//!
//! [[nodes]]
//! label = "Product"
//! file = "products.csv"               # relative to the KG directory
//! key = "productID"                   # identity of a node within its label
//! name = "productName"                # display name: a column, or "{first} {last}"
//! skip = ["picture"]                  # columns not loaded (default: load all)
//! types = { unitPrice = "float", discontinued = "bool" }   # default: string
//!
//! [[relationships]]
//! type = "PART_OF"
//! file = "products.csv"
//! from = { label = "Product", column = "productID" }
//! to = { label = "Category", column = "categoryID" }
//! properties = []                     # columns copied onto the relationship
//! ```
//!
//! A row whose endpoint cell is a null value has no relationship (not an error); an
//! endpoint key that names no node, a cell that does not parse as its type, or a row
//! with the wrong number of cells is a bad line.

use std::{
    collections::{BTreeMap, HashMap},
    fs::File,
    io::BufReader,
    path::Path,
};

use kgmesh_schemas::graph::Value;
use serde::Deserialize;

use super::{io_error, LoadSink};
use crate::{
    embedded::{GraphBuilder, NodeIdx},
    StoreError, StoreResult,
};

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mapping {
    /// Cells equal to one of these (after trimming) are missing values.
    #[serde(default = "default_null_values")]
    pub null_values: Vec<String>,
    /// Repairs rows of files written without quoting: when a row has more cells than
    /// the header, a cell that starts with a space is joined back onto the cell before
    /// it (`Pavlova, Ltd.` was split into `Pavlova` and ` Ltd.`). Repaired rows are
    /// counted in the report; rows it cannot repair are still bad lines.
    #[serde(default)]
    pub repair_unquoted_commas: bool,
    #[serde(default)]
    pub nodes: Vec<NodeMapping>,
    #[serde(default)]
    pub relationships: Vec<RelationshipMapping>,
}

fn default_null_values() -> Vec<String> {
    vec![String::new()]
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeMapping {
    pub label: String,
    pub file: String,
    pub key: String,
    /// A column name, or a template with `{column}` placeholders.
    pub name: String,
    /// Columns to load as properties; `None` loads every column not in `skip`.
    #[serde(default)]
    pub properties: Option<Vec<String>>,
    #[serde(default)]
    pub skip: Vec<String>,
    #[serde(default)]
    pub types: BTreeMap<String, PropertyType>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationshipMapping {
    #[serde(rename = "type")]
    pub rel_type: String,
    pub file: String,
    pub from: EndpointMapping,
    pub to: EndpointMapping,
    #[serde(default)]
    pub properties: Vec<String>,
    #[serde(default)]
    pub types: BTreeMap<String, PropertyType>,
}

/// A relationship endpoint: the node of `label` whose key equals this row's `column`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EndpointMapping {
    pub label: String,
    pub column: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PropertyType {
    String,
    Int,
    Float,
    /// `1/0`, `true/false`, `yes/no` (any case).
    Bool,
}

impl PropertyType {
    fn parse(self, cell: &str) -> Result<Value, String> {
        let trimmed = cell.trim();
        match self {
            PropertyType::String => Ok(Value::String(cell.to_owned())),
            PropertyType::Int => trimmed
                .parse::<i64>()
                .map(Value::Int)
                .map_err(|_| format!("`{trimmed}` is not an integer")),
            PropertyType::Float => trimmed
                .parse::<f64>()
                .map(Value::Float)
                .map_err(|_| format!("`{trimmed}` is not a number")),
            PropertyType::Bool => match trimmed.to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "y" | "t" => Ok(Value::Bool(true)),
                "0" | "false" | "no" | "n" | "f" => Ok(Value::Bool(false)),
                _ => Err(format!("`{trimmed}` is not a boolean")),
            },
        }
    }
}

impl Mapping {
    pub fn from_file(path: &Path) -> StoreResult<Self> {
        let text = std::fs::read_to_string(path).map_err(|error| io_error(path, error))?;
        Self::from_toml(&text).map_err(|detail| StoreError::Corrupt {
            path: path.display().to_string(),
            detail,
        })
    }

    /// Parses and checks a mapping, reporting every problem at once.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let mapping: Mapping =
            toml::from_str(text).map_err(|error| format!("invalid mapping: {error}"))?;
        let mut problems = Vec::new();
        let mut labels = Vec::new();
        for node in &mapping.nodes {
            if labels.contains(&node.label.as_str()) {
                problems.push(format!("label `{}` is mapped twice", node.label));
            }
            labels.push(node.label.as_str());
        }
        for relationship in &mapping.relationships {
            for endpoint in [&relationship.from, &relationship.to] {
                if !labels.contains(&endpoint.label.as_str()) {
                    problems.push(format!(
                        "relationship `{}` refers to label `{}`, which no [[nodes]] entry \
                         maps{}",
                        relationship.rel_type,
                        endpoint.label,
                        did_you_mean(&endpoint.label, labels.iter().copied())
                    ));
                }
            }
        }
        if problems.is_empty() {
            Ok(mapping)
        } else {
            Err(problems.join("; "))
        }
    }

    /// Checks the mapping against the CSV files of `directory` before anything is
    /// loaded: every file it names exists, and every column it names is in its file's
    /// header. Every problem is reported, each with the nearest name when one is close.
    pub fn check_files(&self, directory: &Path) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        let csv_files: Vec<String> = std::fs::read_dir(directory)
            .map(|entries| {
                let mut names: Vec<String> = entries
                    .filter_map(|entry| entry.ok())
                    .map(|entry| entry.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.to_ascii_lowercase().ends_with(".csv"))
                    .collect();
                names.sort();
                names
            })
            .unwrap_or_default();
        let mut check = |entry: String, file: &str, columns: Vec<(&str, &str)>| {
            let path = directory.join(file);
            if !path.is_file() {
                problems.push(format!(
                    "{entry}: file `{file}` is not in {}{}",
                    directory.display(),
                    did_you_mean(file, csv_files.iter().map(String::as_str))
                ));
                return;
            }
            let headers = match open_csv(&path) {
                Ok((_, headers)) => headers,
                Err(error) => {
                    problems.push(format!("{entry}: {error}"));
                    return;
                }
            };
            for (field, column) in columns {
                if !headers.iter().any(|header| header == column) {
                    problems.push(format!(
                        "{entry}: {field} `{column}` is not a column of {file}{} (its \
                         columns: {})",
                        did_you_mean(column, headers.iter().map(String::as_str)),
                        headers.join(", ")
                    ));
                }
            }
        };
        for node in &self.nodes {
            let mut columns = vec![("key", node.key.as_str())];
            columns.extend(
                template_columns(&node.name)
                    .into_iter()
                    .map(|c| ("name", c)),
            );
            for column in node.properties.iter().flatten() {
                columns.push(("properties", column));
            }
            columns.extend(node.skip.iter().map(|c| ("skip", c.as_str())));
            columns.extend(node.types.keys().map(|c| ("types", c.as_str())));
            check(format!("[[nodes]] `{}`", node.label), &node.file, columns);
        }
        for relationship in &self.relationships {
            let mut columns = vec![
                ("from.column", relationship.from.column.as_str()),
                ("to.column", relationship.to.column.as_str()),
            ];
            columns.extend(
                relationship
                    .properties
                    .iter()
                    .map(|c| ("properties", c.as_str())),
            );
            columns.extend(relationship.types.keys().map(|c| ("types", c.as_str())));
            check(
                format!("[[relationships]] `{}`", relationship.rel_type),
                &relationship.file,
                columns,
            );
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    fn is_null(&self, cell: &str) -> bool {
        let trimmed = cell.trim();
        self.null_values.iter().any(|null| null == trimmed)
    }

    /// Hands `set` each property of `record` that is not null and parses as its type;
    /// returns the problems of those that do not parse.
    fn parse_properties(
        &self,
        record: &csv::StringRecord,
        columns: &[PropertyColumn],
        mut set: impl FnMut(&str, Value),
    ) -> Vec<String> {
        let mut problems = Vec::new();
        for (index, column, kind) in columns {
            let cell = &record[*index];
            if self.is_null(cell) {
                continue;
            }
            match kind.parse(cell) {
                Ok(value) => set(column, value),
                Err(reason) => problems.push(format!("{column}: {reason}")),
            }
        }
        problems
    }
}

impl EndpointMapping {
    /// The node of this endpoint's label whose key is `key` (among `keys`, that label's
    /// nodes by key), or why there is none.
    fn node(
        &self,
        keys: &HashMap<String, NodeIdx>,
        key: &str,
        rel_type: &str,
    ) -> Result<NodeIdx, String> {
        keys.get(key)
            .copied()
            .ok_or_else(|| format!("{rel_type}: no {} with {} `{key}`", self.label, self.column))
    }
}

/// A column loaded as a property: its index, its name and its type.
type PropertyColumn = (usize, String, PropertyType);

/// The type `types` gives `column`; string by default.
fn property_type(types: &BTreeMap<String, PropertyType>, column: &str) -> PropertyType {
    types.get(column).copied().unwrap_or(PropertyType::String)
}

/// The property columns `columns` names, each of which must be in `headers`.
fn property_columns(
    headers: &[String],
    columns: &[String],
    types: &BTreeMap<String, PropertyType>,
    path: &Path,
) -> StoreResult<Vec<PropertyColumn>> {
    columns
        .iter()
        .map(|column| {
            let index = column_index(headers, column, path)?;
            Ok((index, column.clone(), property_type(types, column)))
        })
        .collect()
}

/// Reports a row whose properties did not all load as a bad line.
fn report_properties(
    problems: Vec<String>,
    path: &Path,
    line: u64,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    if !problems.is_empty() {
        sink.bad(
            path,
            line,
            format!("properties not loaded: {}", problems.join("; ")),
        )?;
    }
    Ok(())
}

/// ` (did you mean `x`?)` when a name among `names` is close to `wanted`, else nothing.
fn did_you_mean<'n>(wanted: &str, names: impl Iterator<Item = &'n str>) -> String {
    match crate::cypher::validator::closest(wanted, names).first() {
        Some(name) => format!(" (did you mean `{name}`?)"),
        None => String::new(),
    }
}

/// The columns a name template reads: `{first} {last}` reads `first` and `last`; a
/// template without braces is one column.
fn template_columns(template: &str) -> Vec<&str> {
    if !template.contains('{') {
        return vec![template];
    }
    template
        .split('{')
        .skip(1)
        .filter_map(|part| part.split_once('}').map(|(column, _)| column))
        .collect()
}

/// One CSV file with a header row: its records, with line numbers.
fn open_csv(path: &Path) -> StoreResult<(csv::Reader<BufReader<File>>, Vec<String>)> {
    let file = File::open(path).map_err(|error| io_error(path, error))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(true)
        .from_reader(BufReader::new(file));
    let headers = reader
        .headers()
        .map_err(|error| io_error(path, error))?
        .iter()
        .map(|header| header.trim().to_owned())
        .collect();
    Ok((reader, headers))
}

fn column_index(headers: &[String], column: &str, path: &Path) -> StoreResult<usize> {
    headers
        .iter()
        .position(|header| header == column)
        .ok_or_else(|| StoreError::Corrupt {
            path: path.display().to_string(),
            detail: format!("no column `{column}` (columns: {})", headers.join(", ")),
        })
}

/// `record` with the cells its unquoted commas split joined back, when that leaves as
/// many cells as the header. See [`Mapping::repair_unquoted_commas`].
fn rejoin_split_cells(
    record: &csv::StringRecord,
    header_count: usize,
) -> Option<csv::StringRecord> {
    let mut extra = record.len() - header_count;
    let mut cells: Vec<String> = Vec::with_capacity(header_count);
    for cell in record.iter() {
        match cells.last_mut() {
            Some(previous) if extra > 0 && cell.starts_with(' ') => {
                previous.push(',');
                previous.push_str(cell);
                extra -= 1;
            }
            _ => cells.push(cell.to_owned()),
        }
    }
    (cells.len() == header_count).then(|| {
        let mut repaired = csv::StringRecord::from(cells);
        repaired.set_position(record.position().cloned());
        repaired
    })
}

/// Reads every record, handing good ones to `row` and reporting malformed ones.
fn for_each_record(
    path: &Path,
    header_count: usize,
    reader: &mut csv::Reader<BufReader<File>>,
    sink: &mut LoadSink<'_>,
    repair: bool,
    mut row: impl FnMut(&csv::StringRecord, u64, &mut LoadSink<'_>) -> StoreResult<()>,
) -> StoreResult<()> {
    let mut record = csv::StringRecord::new();
    let mut last_byte = reader.position().byte();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => return Ok(()),
            Ok(true) => {}
            Err(error) => {
                let line = error.position().map_or(0, |position| position.line());
                sink.line(0);
                if matches!(error.kind(), csv::ErrorKind::Io(_)) {
                    return Err(io_error(path, error));
                }
                sink.bad(path, line, format!("unreadable CSV record: {error}"))?;
                continue;
            }
        }
        let byte = reader.position().byte();
        sink.line((byte - last_byte) as usize);
        last_byte = byte;
        let line = record.position().map_or(0, |position| position.line());
        if record.len() == 1 && record[0].trim().is_empty() {
            continue;
        }
        if record.len() > header_count && repair {
            if let Some(repaired) = rejoin_split_cells(&record, header_count) {
                sink.repaired();
                row(&repaired, line, sink)?;
                continue;
            }
        }
        if record.len() != header_count {
            sink.bad(
                path,
                line,
                format!("expected {header_count} cells, found {}", record.len()),
            )?;
            continue;
        }
        row(&record, line, sink)?;
    }
}

enum NamePart {
    Literal(String),
    Column(usize),
}

fn name_template(template: &str, headers: &[String], path: &Path) -> StoreResult<Vec<NamePart>> {
    if !template.contains('{') {
        return Ok(vec![NamePart::Column(column_index(
            headers, template, path,
        )?)]);
    }
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            parts.push(NamePart::Literal(rest[..open].to_owned()));
        }
        let close = rest[open..].find('}').ok_or_else(|| StoreError::Corrupt {
            path: path.display().to_string(),
            detail: format!("unclosed `{{` in name template `{template}`"),
        })? + open;
        parts.push(NamePart::Column(column_index(
            headers,
            &rest[open + 1..close],
            path,
        )?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(NamePart::Literal(rest.to_owned()));
    }
    Ok(parts)
}

pub(super) fn load(
    directory: &Path,
    mapping: &Mapping,
    builder: &mut GraphBuilder,
    sink: &mut LoadSink<'_>,
) -> StoreResult<()> {
    if let Err(problems) = mapping.check_files(directory) {
        return Err(StoreError::Corrupt {
            path: directory.display().to_string(),
            detail: format!(
                "the mapping does not fit the files ({} problem{}):\n  {}",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                problems.join("\n  ")
            ),
        });
    }
    // (label, key) → node, for wiring relationships.
    let mut keys: HashMap<String, HashMap<String, NodeIdx>> = HashMap::new();
    for node_mapping in &mapping.nodes {
        let path = directory.join(&node_mapping.file);
        sink.start_file(&path);
        let (mut reader, headers) = open_csv(&path)?;
        let key_column = column_index(&headers, &node_mapping.key, &path)?;
        let name_parts = name_template(&node_mapping.name, &headers, &path)?;
        let property_columns = match &node_mapping.properties {
            Some(columns) => property_columns(&headers, columns, &node_mapping.types, &path)?,
            None => headers
                .iter()
                .enumerate()
                .filter(|(_, header)| !node_mapping.skip.contains(header))
                .map(|(index, header)| {
                    let kind = property_type(&node_mapping.types, header);
                    (index, header.clone(), kind)
                })
                .collect(),
        };
        for typed in node_mapping.types.keys() {
            column_index(&headers, typed, &path)?;
        }
        let label_keys = keys.entry(node_mapping.label.clone()).or_default();
        for_each_record(
            &path,
            headers.len(),
            &mut reader,
            sink,
            mapping.repair_unquoted_commas,
            |record, line, sink| {
                let key = record[key_column].trim();
                if mapping.is_null(key) {
                    return sink.bad(&path, line, format!("empty key `{}`", node_mapping.key));
                }
                if label_keys.contains_key(key) {
                    return sink.bad(
                        &path,
                        line,
                        format!("duplicate {} key `{key}`", node_mapping.label),
                    );
                }
                let mut name = String::new();
                for part in &name_parts {
                    match part {
                        NamePart::Literal(text) => name.push_str(text),
                        NamePart::Column(index) if !mapping.is_null(&record[*index]) => {
                            name.push_str(record[*index].trim())
                        }
                        NamePart::Column(_) => {}
                    }
                }
                let name = name.trim();
                let node = builder.add_node(if name.is_empty() { key } else { name });
                builder.add_label(node, &node_mapping.label);
                label_keys.insert(key.to_owned(), node);
                let problems =
                    mapping.parse_properties(record, &property_columns, |column, value| {
                        builder.set_property(node, column, value)
                    });
                report_properties(problems, &path, line, sink)
            },
        )?;
    }

    for relationship in &mapping.relationships {
        let path = directory.join(&relationship.file);
        sink.start_file(&path);
        let (mut reader, headers) = open_csv(&path)?;
        let from_column = column_index(&headers, &relationship.from.column, &path)?;
        let to_column = column_index(&headers, &relationship.to.column, &path)?;
        let property_columns = property_columns(
            &headers,
            &relationship.properties,
            &relationship.types,
            &path,
        )?;
        let empty = HashMap::new();
        let from_keys = keys.get(&relationship.from.label).unwrap_or(&empty);
        let to_keys = keys.get(&relationship.to.label).unwrap_or(&empty);
        for_each_record(
            &path,
            headers.len(),
            &mut reader,
            sink,
            mapping.repair_unquoted_commas,
            |record, line, sink| {
                let from_key = record[from_column].trim();
                let to_key = record[to_column].trim();
                if mapping.is_null(from_key) || mapping.is_null(to_key) {
                    return Ok(());
                }
                let ends = relationship
                    .from
                    .node(from_keys, from_key, &relationship.rel_type)
                    .and_then(|from| {
                        let to = relationship
                            .to
                            .node(to_keys, to_key, &relationship.rel_type)?;
                        Ok((from, to))
                    });
                let (from, to) = match ends {
                    Ok(ends) => ends,
                    Err(reason) => return sink.bad(&path, line, reason),
                };
                let edge = builder.add_edge(from, &relationship.rel_type, to);
                let problems =
                    mapping.parse_properties(record, &property_columns, |column, value| {
                        builder.set_edge_property(edge, column, value)
                    });
                report_properties(problems, &path, line, sink)
            },
        )?;
    }
    Ok(())
}
