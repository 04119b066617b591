//! Shared by the differential Cypher tests: results as JSON in one canonical form, and a
//! comparison of the embedded executor with another engine that tells real differences
//! from rows that differ only in how ties were broken.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_stores::cypher;
use kgmesh_stores::embedded::EmbeddedGraph;
use kgmesh_stores::QueryLimits;
use serde_json::{json, Value as Json};

pub struct CompareOptions {
    /// The other engine's columns come sorted by name (neo4rs does not keep their order).
    pub sort_columns: bool,
    /// Bookkeeping properties the other engine's nodes carry (removed before comparing).
    pub strip_node_properties: &'static [&'static str],
    /// What the other engine's times measure.
    pub their_timing: &'static str,
}

fn sorted_columns(rows: Rows) -> Rows {
    let mut order: Vec<usize> = (0..rows.columns.len()).collect();
    order.sort_by(|a, b| rows.columns[*a].cmp(&rows.columns[*b]));
    Rows {
        columns: order
            .iter()
            .map(|index| rows.columns[*index].clone())
            .collect(),
        rows: rows
            .rows
            .iter()
            .map(|row| order.iter().map(|index| row[*index].clone()).collect())
            .collect(),
        truncated: rows.truncated,
    }
}

fn strip(value: &Json, keys: &[&str]) -> Json {
    match value {
        Json::Array(items) => Json::Array(items.iter().map(|item| strip(item, keys)).collect()),
        Json::Object(map) => Json::Object(
            map.iter()
                .map(|(key, item)| {
                    if key == "props" && map.contains_key("$node") {
                        let Json::Object(props) = item else {
                            return (key.clone(), item.clone());
                        };
                        let kept = props
                            .iter()
                            .filter(|(k, _)| !keys.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect();
                        (key.clone(), Json::Object(kept))
                    } else {
                        (key.clone(), strip(item, keys))
                    }
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

pub fn value_json(value: &Value) -> Json {
    match value {
        Value::Null => Json::Null,
        Value::Bool(b) => json!(b),
        Value::Int(i) => json!(i),
        Value::Float(f) => json!(f),
        Value::String(s) => json!(s),
        Value::List(items) => Json::Array(items.iter().map(value_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(k, v)| (k.clone(), value_json(v)))
                .collect(),
        ),
        Value::Node(node) => json!({
            "$node": node.labels.first().cloned().unwrap_or_default(),
            "props": Json::Object(node.properties.iter().map(|(k, v)| (k.clone(), value_json(v))).collect()),
        }),
        Value::Relationship(rel) => json!({
            "$rel": rel.rel_type,
            "props": Json::Object(rel.properties.iter().map(|(k, v)| (k.clone(), value_json(v))).collect()),
        }),
        Value::Path(path) => Json::Array(
            path.nodes
                .iter()
                .map(|node| value_json(&Value::Node(node.clone())))
                .chain(
                    path.relationships
                        .iter()
                        .map(|rel| value_json(&Value::Relationship(rel.clone()))),
                )
                .collect(),
        ),
    }
}

fn same(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => {
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()).max(1.0)
        }
        (Json::Array(x), Json::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, value)| y.get(key).is_some_and(|other| same(value, other)))
        }
        _ => a == b,
    }
}

/// A sort key under which rows that are `same` sort together (floats rounded).
pub fn sort_key(row: &Json) -> String {
    fn walk(value: &Json, out: &mut String) {
        match value {
            Json::Number(n) => out.push_str(&format!("{:.6e}", n.as_f64().unwrap_or(0.0))),
            Json::Array(items) => {
                out.push('[');
                items.iter().for_each(|item| {
                    walk(item, out);
                    out.push(',');
                });
                out.push(']');
            }
            Json::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for key in keys {
                    out.push_str(key);
                    out.push(':');
                    walk(&map[key], out);
                    out.push(',');
                }
                out.push('}');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    walk(row, &mut out);
    out
}

pub fn rows_equal(ours: &[Json], theirs: &[Json], ordered: bool) -> bool {
    if ours.len() != theirs.len() {
        return false;
    }
    if ordered {
        return ours.iter().zip(theirs).all(|(a, b)| same(a, b));
    }
    let mut a: Vec<&Json> = ours.iter().collect();
    let mut b: Vec<&Json> = theirs.iter().collect();
    a.sort_by_key(|row| sort_key(row));
    b.sort_by_key(|row| sort_key(row));
    a.iter().zip(&b).all(|(x, y)| same(x, y))
}

/// How a simple expression is written (`x`, `p.name`, `count(p)`), to find the output
/// column an ORDER BY key refers to.
fn render(expr: &cypher::ast::Expr) -> Option<String> {
    use cypher::ast::Expr;
    match expr {
        Expr::Variable(name, _) => Some(name.clone()),
        Expr::Property(base, key, _) => Some(format!("{}.{key}", render(base)?)),
        Expr::CountStar => Some("count(*)".into()),
        Expr::Function(call) => {
            let args: Option<Vec<String>> = call.args.iter().map(render).collect();
            Some(format!(
                "{}({}{})",
                call.name,
                if call.distinct { "DISTINCT " } else { "" },
                args?.join(", ")
            ))
        }
        _ => None,
    }
}

/// Where a sort key is found in an output row: a column, optionally a property of the
/// node in it, optionally measured with `length()`/`size()`.
#[derive(Clone)]
struct KeyPath {
    column: usize,
    property: Option<String>,
    length: bool,
}

fn locate(
    expr: &cypher::ast::Expr,
    columns: &[String],
    items: &[cypher::ast::ProjectionItem],
) -> Option<KeyPath> {
    use cypher::ast::Expr;
    let column_of = |text: &str| {
        columns
            .iter()
            .position(|column| column.eq_ignore_ascii_case(text))
    };
    if let Expr::Function(call) = expr {
        if (call.name == "length" || call.name == "size") && call.args.len() == 1 {
            let mut inner = locate(&call.args[0], columns, items)?;
            inner.length = true;
            return Some(inner);
        }
    }
    let text = render(expr)?;
    if let Some(column) = column_of(&text) {
        return Some(KeyPath {
            column,
            property: None,
            length: false,
        });
    }
    // An alias of this projection: look through to what it names.
    if let Some(item) = items.iter().find(|item| item.column_name() == text) {
        if let Some(inner) = render(&item.expr).and_then(|inner| column_of(&inner)) {
            return Some(KeyPath {
                column: inner,
                property: None,
                length: false,
            });
        }
    }
    // `p.prop` where the output has the node `p`.
    if let Expr::Property(base, key, _) = expr {
        let base = render(base)?;
        let column = column_of(&base)?;
        return Some(KeyPath {
            column,
            property: Some(key.clone()),
            length: false,
        });
    }
    None
}

/// Every ORDER BY / LIMIT of the query's top level, and where the sort keys of the last
/// ordering are found in the output, so that rows that differ only in how ties were
/// broken can be told from real differences.
struct Ordering {
    has_limit: bool,
    has_order: bool,
    keys: Option<Vec<KeyPath>>,
}

fn ordering(query: &cypher::ast::Query, columns: &[String]) -> Ordering {
    let mut has_limit = false;
    let mut has_order = false;
    let mut keys: Vec<Option<KeyPath>> = Vec::new();
    for clause in query.parts.iter().flat_map(|part| &part.clauses) {
        let projection = match clause {
            cypher::ast::Clause::With(with) => &with.projection,
            cypher::ast::Clause::Return(projection) => projection,
            _ => continue,
        };
        has_limit |= projection.limit.is_some() || projection.skip.is_some();
        for sort in &projection.order_by {
            has_order = true;
            keys.push(locate(&sort.expr, columns, &projection.items));
        }
    }
    let keys = if keys.is_empty() {
        None
    } else {
        keys.into_iter().collect()
    };
    Ordering {
        has_limit,
        has_order,
        keys,
    }
}

fn key_rows(rows: &[Json], keys: &[KeyPath]) -> Vec<Json> {
    rows.iter()
        .map(|row| {
            Json::Array(
                keys.iter()
                    .map(|path| {
                        let mut value = row.get(path.column).cloned().unwrap_or(Json::Null);
                        if let Some(property) = &path.property {
                            value = value
                                .get("props")
                                .and_then(|props| props.get(property))
                                .cloned()
                                .unwrap_or(Json::Null);
                        }
                        if path.length {
                            value = match value {
                                Json::String(text) => json!(text.chars().count()),
                                Json::Array(items) => json!(items.len()),
                                other => other,
                            };
                        }
                        value
                    })
                    .collect(),
            )
        })
        .collect()
}

fn final_projection(query: &cypher::ast::Query) -> Option<&cypher::ast::Projection> {
    match query.parts.last()?.clauses.last()? {
        cypher::ast::Clause::Return(projection) => Some(projection),
        _ => None,
    }
}

/// Runs every query on the embedded graph and compares with another engine's results
/// (`{"rows": [...]}`, or `{"error": "..."}`, with `"millis"` for the timed runs), printing
/// the identical share, the mismatch categories and the times; returns
/// (ran by the other engine, identical, identical or tie-equivalent).
pub fn compare(
    graph: &EmbeddedGraph,
    queries: &[String],
    theirs: &[Json],
    engine: &str,
    options: &CompareOptions,
) -> (usize, usize, usize) {
    let schema = graph.schema_sync();
    let limits = QueryLimits {
        max_rows: 100_000,
        timeout: Duration::from_secs(10),
        max_depth: 3,
    };
    let (mut arcade_ok, mut identical, mut tie_equivalent, mut not_comparable) =
        (0usize, 0usize, 0usize, 0usize);
    let (mut our_time, mut their_time) = (Duration::ZERO, 0f64);
    let mut categories: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut arcade_errors: BTreeMap<String, usize> = BTreeMap::new();
    for (text, theirs) in queries.iter().zip(theirs) {
        // Warm pass first, as for ArcadeDB; the timed pass is the one compared.
        let _ = cypher::parse(text).map(|query| cypher::execute(graph, &query, &[], &limits));
        let started = Instant::now();
        let ours = cypher::parse(text)
            .map_err(kgmesh_stores::StoreError::from)
            .and_then(|query| {
                cypher::validate(&query, &schema, &limits)?;
                let rows = cypher::execute(graph, &query, &[], &limits)?;
                Ok((query, rows))
            });
        let elapsed = started.elapsed();
        if let Some(error) = theirs.get("error").and_then(Json::as_str) {
            let head: String = error.chars().take(60).collect();
            *arcade_errors.entry(head).or_default() += 1;
            continue;
        }
        arcade_ok += 1;
        our_time += elapsed;
        their_time += theirs["millis"].as_f64().unwrap_or(0.0);
        let their_rows: Vec<Json> = theirs["rows"].as_array().cloned().unwrap_or_default();
        let one_line = text.replace('\n', " ");
        match ours {
            Err(error) => {
                let kind = match &error {
                    kgmesh_stores::StoreError::InvalidQuery { .. } => "kgmesh refuses or fails",
                    _ => "kgmesh limit/timeout",
                };
                categories.entry(kind.into()).or_default().push(format!(
                    "{error}\n      {one_line}\n      {engine}: {} rows",
                    their_rows.len()
                ));
            }
            Ok((query, rows)) => {
                let rows = if options.sort_columns {
                    sorted_columns(rows)
                } else {
                    rows
                };
                let their_rows: Vec<Json> = their_rows
                    .iter()
                    .map(|row| strip(row, options.strip_node_properties))
                    .collect();
                let our_rows: Vec<Json> = rows
                    .rows
                    .iter()
                    .map(|row| Json::Array(row.iter().map(value_json).collect()))
                    .collect();
                let projection = final_projection(&query);
                let ordered = projection.is_some_and(|p| !p.order_by.is_empty());
                if rows_equal(&our_rows, &their_rows, ordered) {
                    identical += 1;
                    continue;
                }
                let order = ordering(&query, &rows.columns);
                let same_count = our_rows.len() == their_rows.len();
                if same_count && order.has_order {
                    if let Some(keys) = &order.keys {
                        // Same sort keys in the same order: only the tie-breaking differs,
                        // which openCypher leaves open.
                        let (ours_keys, theirs_keys) =
                            (key_rows(&our_rows, keys), key_rows(&their_rows, keys));
                        if rows_equal(&ours_keys, &theirs_keys, ordered) {
                            tie_equivalent += 1;
                            categories
                                .entry("equivalent: ties broken differently".into())
                                .or_default()
                                .push(one_line.clone());
                            continue;
                        }
                    }
                }
                let category = if same_count && ordered && rows_equal(&our_rows, &their_rows, false)
                {
                    "same rows, tie order differs under ORDER BY (sort key not an output column)"
                } else if same_count && order.has_limit && !order.has_order {
                    not_comparable += 1;
                    "not comparable: LIMIT without ORDER BY picks different rows (same count)"
                } else if same_count && order.has_limit {
                    "LIMIT after ORDER BY on a key that is not an output column picks different tied rows"
                } else if our_rows.len() != their_rows.len() {
                    "row count differs"
                } else {
                    "values differ"
                };
                let show = |rows: &[Json]| -> String {
                    let text: String =
                        Json::from(rows.iter().take(3).cloned().collect::<Vec<_>>()).to_string();
                    text.chars().take(300).collect()
                };
                categories.entry(category.into()).or_default().push(format!(
                    "{one_line}\n      kgmesh ({} rows): {}\n      {engine} ({} rows): {}",
                    our_rows.len(),
                    show(&our_rows),
                    their_rows.len(),
                    show(&their_rows)
                ));
            }
        }
    }
    let total = queries.len();
    println!(
        "{engine} ran {arcade_ok}/{total} without error; kgmesh identical on {identical}/{arcade_ok} ({:.1}%), identical or differing only in tie-breaking on {}/{arcade_ok} ({:.1}%)",
        100.0 * identical as f64 / arcade_ok.max(1) as f64,
        identical + tie_equivalent,
        100.0 * (identical + tie_equivalent) as f64 / arcade_ok.max(1) as f64
    );
    let comparable = arcade_ok - not_comparable;
    println!(
        "leaving out {not_comparable} queries whose LIMIT without ORDER BY makes any rows valid: identical or tie-equivalent on {}/{comparable} ({:.1}%)",
        identical + tie_equivalent,
        100.0 * (identical + tie_equivalent) as f64 / comparable.max(1) as f64
    );
    println!(
        "warm execution time over those queries: kgmesh embedded {:.1} ms ({} build; parse+validate+execute+convert), {engine} {:.1} ms ({}); {engine}/kgmesh = {:.1}",
        our_time.as_secs_f64() * 1000.0,
        if cfg!(debug_assertions) { "debug" } else { "release" },
        their_time,
        options.their_timing,
        their_time / (our_time.as_secs_f64() * 1000.0).max(1e-9)
    );
    println!("{engine} errors:");
    for (error, count) in &arcade_errors {
        println!("  {count:4}  {error}");
    }
    for (category, items) in &categories {
        println!("--- {category}: {}", items.len());
        if category.starts_with("equivalent") && std::env::var("KGMESH_SHOW_EQUIVALENT").is_err() {
            continue;
        }
        for item in items {
            println!("  {item}");
        }
    }

    (arcade_ok, identical, identical + tie_equivalent)
}
