//! Runtime values with openCypher's semantics for equality, comparison (three-valued,
//! null-aware) and ordering (a total order for ORDER BY).

use std::cmp::Ordering;

use kgmesh_schemas::graph::{NodeValue, PathValue, RelationshipValue, Value};

use crate::cypher::graph::{EdgeRef, PropertyGraph};

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Val>),
    Map(Vec<(String, Val)>),
    Node(u32),
    Rel(EdgeRef),
    Path(Vec<u32>, Vec<EdgeRef>),
}

impl Val {
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Null => "null",
            Val::Bool(_) => "boolean",
            Val::Int(_) => "integer",
            Val::Float(_) => "float",
            Val::Str(_) => "string",
            Val::List(_) => "list",
            Val::Map(_) => "map",
            Val::Node(_) => "node",
            Val::Rel(_) => "relationship",
            Val::Path(..) => "path",
        }
    }

    pub fn from_value(value: &Value, graph: &dyn PropertyGraph) -> Val {
        match value {
            Value::Null => Val::Null,
            Value::Bool(b) => Val::Bool(*b),
            Value::Int(i) => Val::Int(*i),
            Value::Float(f) => Val::Float(*f),
            Value::String(s) => Val::Str(s.clone()),
            Value::List(items) => Val::List(
                items
                    .iter()
                    .map(|item| Val::from_value(item, graph))
                    .collect(),
            ),
            Value::Map(entries) => Val::Map(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), Val::from_value(value, graph)))
                    .collect(),
            ),
            Value::Node(node) => match graph.node_index(node.id) {
                Some(index) => Val::Node(index),
                None => Val::Null,
            },
            // Relationships and paths from outside cannot be resolved back to stored ones.
            Value::Relationship(_) | Value::Path(_) => Val::Null,
        }
    }

    pub fn to_value(&self, graph: &dyn PropertyGraph) -> Value {
        match self {
            Val::Null => Value::Null,
            Val::Bool(b) => Value::Bool(*b),
            Val::Int(i) => Value::Int(*i),
            Val::Float(f) => Value::Float(*f),
            Val::Str(s) => Value::String(s.clone()),
            Val::List(items) => {
                Value::List(items.iter().map(|item| item.to_value(graph)).collect())
            }
            Val::Map(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(key, value)| (key.clone(), value.to_value(graph)))
                    .collect(),
            ),
            Val::Node(node) => Value::Node(node_value(*node, graph)),
            Val::Rel(edge) => Value::Relationship(rel_value(edge, graph)),
            Val::Path(nodes, edges) => Value::Path(PathValue {
                nodes: nodes.iter().map(|node| node_value(*node, graph)).collect(),
                relationships: edges.iter().map(|edge| rel_value(edge, graph)).collect(),
            }),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Val::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

pub fn node_value(node: u32, graph: &dyn PropertyGraph) -> NodeValue {
    NodeValue {
        id: graph.node_id(node),
        labels: graph
            .node_labels(node)
            .into_iter()
            .map(|label| graph.label_name(label).to_string())
            .collect(),
        properties: sorted(graph.node_properties(node)),
    }
}

pub fn rel_value(edge: &EdgeRef, graph: &dyn PropertyGraph) -> RelationshipValue {
    RelationshipValue {
        start: graph.node_id(edge.start),
        end: graph.node_id(edge.end),
        rel_type: graph.rel_type_name(edge.rel_type).to_string(),
        properties: sorted(graph.edge_properties(edge)),
    }
}

fn sorted(mut properties: Vec<(String, Value)>) -> Vec<(String, Value)> {
    properties.sort_by(|a, b| a.0.cmp(&b.0));
    properties
}

/// Three-valued logic over `verdicts`, null being `None`: the first that is `decisive`
/// settles it; else any null makes it null; else it is the other way. With `decisive`
/// false this is AND over all of them (`[1, null] = [1, 2]` is null, not false), with
/// `decisive` true it is OR.
pub(crate) fn settle(
    verdicts: impl IntoIterator<Item = Option<bool>>,
    decisive: bool,
) -> Option<bool> {
    let mut unknown = false;
    for verdict in verdicts {
        match verdict {
            Some(value) if value == decisive => return Some(decisive),
            None => unknown = true,
            Some(_) => {}
        }
    }
    if unknown {
        None
    } else {
        Some(!decisive)
    }
}

/// `a = b`: `None` is null (unknown).
pub fn equals(a: &Val, b: &Val) -> Option<bool> {
    match (a, b) {
        (Val::Null, _) | (_, Val::Null) => None,
        (Val::Int(x), Val::Int(y)) => Some(x == y),
        (Val::Int(x), Val::Float(y)) => Some((*x as f64) == *y),
        (Val::Float(x), Val::Int(y)) => Some(*x == (*y as f64)),
        (Val::Float(x), Val::Float(y)) => Some(x == y),
        (Val::Str(x), Val::Str(y)) => Some(x == y),
        (Val::Bool(x), Val::Bool(y)) => Some(x == y),
        (Val::Node(x), Val::Node(y)) => Some(x == y),
        (Val::Rel(x), Val::Rel(y)) => Some(x.id == y.id),
        (Val::Path(n1, e1), Val::Path(n2, e2)) => Some(n1 == n2 && e1 == e2),
        (Val::List(x), Val::List(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            settle(
                x.iter().zip(y).map(|(left, right)| equals(left, right)),
                false,
            )
        }
        (Val::Map(x), Val::Map(y)) => {
            if x.len() != y.len() {
                return Some(false);
            }
            settle(
                x.iter().map(|(key, left)| {
                    y.iter()
                        .find(|(other, _)| other == key)
                        .map_or(Some(false), |(_, right)| equals(left, right))
                }),
                false,
            )
        }
        _ => Some(false),
    }
}

/// `a < b` and friends: defined between numbers, between strings, between booleans and
/// between lists; anything else is null.
pub fn compare(a: &Val, b: &Val) -> Option<Ordering> {
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => Some(x.cmp(y)),
        (Val::Int(x), Val::Float(y)) => (*x as f64).partial_cmp(y),
        (Val::Float(x), Val::Int(y)) => x.partial_cmp(&(*y as f64)),
        (Val::Float(x), Val::Float(y)) => x.partial_cmp(y),
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        (Val::Bool(x), Val::Bool(y)) => Some(x.cmp(y)),
        (Val::List(x), Val::List(y)) => {
            for (left, right) in x.iter().zip(y) {
                match compare(left, right)? {
                    Ordering::Equal => {}
                    other => return Some(other),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => None,
    }
}

fn order_rank(value: &Val) -> u8 {
    match value {
        Val::Map(_) => 0,
        Val::Node(_) => 1,
        Val::Rel(_) => 2,
        Val::List(_) => 3,
        Val::Path(..) => 4,
        Val::Str(_) => 5,
        Val::Bool(_) => 6,
        Val::Int(_) | Val::Float(_) => 7,
        Val::Null => 8,
    }
}

/// The total order of ORDER BY (and of min/max): values of different kinds by kind,
/// null last when ascending.
pub fn order(a: &Val, b: &Val) -> Ordering {
    let (rank_a, rank_b) = (order_rank(a), order_rank(b));
    if rank_a != rank_b {
        return rank_a.cmp(&rank_b);
    }
    match (a, b) {
        (Val::Int(x), Val::Int(y)) => x.cmp(y),
        (Val::Int(_) | Val::Float(_), Val::Int(_) | Val::Float(_)) => {
            let x = as_f64(a);
            let y = as_f64(b);
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            }
        }
        (Val::Str(x), Val::Str(y)) => x.cmp(y),
        (Val::Bool(x), Val::Bool(y)) => x.cmp(y),
        (Val::Node(x), Val::Node(y)) => x.cmp(y),
        (Val::Rel(x), Val::Rel(y)) => x.id.cmp(&y.id),
        (Val::List(x), Val::List(y)) => {
            for (left, right) in x.iter().zip(y) {
                match order(left, right) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        (Val::Path(n1, e1), Val::Path(n2, e2)) => n1.cmp(n2).then_with(|| e1.cmp(e2)),
        (Val::Map(x), Val::Map(y)) => {
            let mut x = x.clone();
            let mut y = y.clone();
            x.sort_by(|p, q| p.0.cmp(&q.0));
            y.sort_by(|p, q| p.0.cmp(&q.0));
            for ((key_a, value_a), (key_b, value_b)) in x.iter().zip(&y) {
                match key_a.cmp(key_b).then_with(|| order(value_a, value_b)) {
                    Ordering::Equal => {}
                    other => return other,
                }
            }
            x.len().cmp(&y.len())
        }
        _ => Ordering::Equal,
    }
}

pub fn as_f64(value: &Val) -> f64 {
    match value {
        Val::Int(i) => *i as f64,
        Val::Float(f) => *f,
        _ => f64::NAN,
    }
}

/// A hashable stand-in used for grouping and DISTINCT, where two values are the same when
/// openCypher's equivalence says so (`1` and `1.0` are one group; nulls group together).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Key {
    Null,
    Bool(bool),
    Int(i64),
    Float(u64),
    Str(String),
    List(Vec<Key>),
    Map(Vec<(String, Key)>),
    Node(u32),
    Rel(u64),
    Path(Vec<u32>, Vec<u64>),
}

pub fn key(value: &Val) -> Key {
    match value {
        Val::Null => Key::Null,
        Val::Bool(b) => Key::Bool(*b),
        Val::Int(i) => Key::Int(*i),
        Val::Float(f) => {
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Key::Int(*f as i64)
            } else if f.is_nan() {
                Key::Float(f64::NAN.to_bits())
            } else {
                Key::Float(f.to_bits())
            }
        }
        Val::Str(s) => Key::Str(s.clone()),
        Val::List(items) => Key::List(items.iter().map(key).collect()),
        Val::Map(entries) => {
            let mut entries: Vec<(String, Key)> =
                entries.iter().map(|(k, v)| (k.clone(), key(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Key::Map(entries)
        }
        Val::Node(n) => Key::Node(*n),
        Val::Rel(e) => Key::Rel(e.id),
        Val::Path(nodes, edges) => Key::Path(nodes.clone(), edges.iter().map(|e| e.id).collect()),
    }
}

/// How openCypher prints a float: always with a fractional part or an exponent.
pub fn float_to_string(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if value.fract() == 0.0 && value.abs() < 1e16 {
        format!("{value:.1}")
    } else {
        format!("{value}")
    }
}
