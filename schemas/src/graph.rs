//! Graph-shaped values shared by stores, agents and the wire: entities, triples, paths,
//! query rows, and the graph's schema as shown to validators and models.

use serde::{Deserialize, Serialize};

use crate::NodeId;

/// A node with its display name (what a person or a model reads).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Entity {
    pub id: NodeId,
    pub name: String,
}

/// An entity with a relevance score (link confidence, similarity, rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct ScoredEntity {
    pub entity: Entity,
    pub score: f32,
}

/// Which way an edge is followed relative to its stored direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Direction {
    /// head → tail, as stored.
    Out,
    /// tail → head (the relation used inverted).
    In,
    /// Either way.
    Both,
}

/// One stored edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Triple {
    pub head: Entity,
    pub relation: String,
    pub tail: Entity,
}

/// One relation of a metapath and the direction to follow it in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RelationStep {
    pub relation: String,
    pub direction: Direction,
}

/// A sequence of relations (`r1 -> r2 -> r3`), at most [`crate::budget::MAX_DEPTH`] long.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Metapath {
    pub steps: Vec<RelationStep>,
}

impl Metapath {
    /// Whether walking `steps` (each a relation and whether it was walked tail to head)
    /// follows this metapath: the same relations in the same order, each in the
    /// direction it names (either way for [`Direction::Both`]).
    pub fn walked_by<'a>(&self, steps: impl ExactSizeIterator<Item = (&'a str, bool)>) -> bool {
        self.steps.len() == steps.len()
            && self
                .steps
                .iter()
                .zip(steps)
                .all(|(want, (relation, inverse))| {
                    want.relation == relation
                        && match want.direction {
                            Direction::Out => !inverse,
                            Direction::In => inverse,
                            Direction::Both => true,
                        }
                })
    }
}

/// `r1 -> r2 (inverse)`: each relation by its name, marked where it is followed from
/// tail to head (or either way).
impl std::fmt::Display for Metapath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (index, step) in self.steps.iter().enumerate() {
            if index > 0 {
                f.write_str(" -> ")?;
            }
            f.write_str(&step.relation)?;
            match step.direction {
                Direction::Out => {}
                Direction::In => f.write_str(" (inverse)")?,
                Direction::Both => f.write_str(" (either way)")?,
            }
        }
        Ok(())
    }
}

/// One hop of a concrete path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct PathStep {
    pub relation: String,
    /// `true` when the edge was followed tail → head.
    pub inverse: bool,
    pub node: Entity,
}

/// A concrete path through the graph, with every intermediate entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Path {
    pub start: Entity,
    pub steps: Vec<PathStep>,
}

impl Path {
    pub fn end(&self) -> &Entity {
        self.steps.last().map(|s| &s.node).unwrap_or(&self.start)
    }

    pub fn len(&self) -> usize {
        self.steps.len()
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether this path walks `metapath` ([`Metapath::walked_by`]).
    pub fn follows(&self, metapath: &Metapath) -> bool {
        metapath.walked_by(self.steps.iter().map(|s| (s.relation.as_str(), s.inverse)))
    }
}

/// A typed value in a query result (openCypher's value model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    List(Vec<Value>),
    /// Keys in a stable order.
    Map(Vec<(String, Value)>),
    Node(NodeValue),
    Relationship(RelationshipValue),
    Path(PathValue),
}

impl Value {
    /// The value as plain JSON, for people and scripts: strings bare, numbers as
    /// numbers, a node `{"id", "labels", "properties"}`, a relationship `{"type",
    /// "start", "end", "properties"}`, a path `{"nodes", "relationships"}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let properties = |entries: &[(String, Value)]| -> serde_json::Value {
            serde_json::Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_json()))
                    .collect(),
            )
        };
        let node = |node: &NodeValue| json!({"id": node.id.0, "labels": node.labels, "properties": properties(&node.properties)});
        let relationship = |rel: &RelationshipValue| {
            json!({"type": rel.rel_type, "start": rel.start.0, "end": rel.end.0,
                   "properties": properties(&rel.properties)})
        };
        match self {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => json!(b),
            Value::Int(i) => json!(i),
            Value::Float(f) => json!(f),
            Value::String(s) => json!(s),
            Value::List(items) => {
                serde_json::Value::Array(items.iter().map(Value::to_json).collect())
            }
            Value::Map(entries) => properties(entries),
            Value::Node(n) => node(n),
            Value::Relationship(r) => relationship(r),
            Value::Path(p) => json!({
                "nodes": p.nodes.iter().map(node).collect::<Vec<_>>(),
                "relationships": p.relationships.iter().map(relationship).collect::<Vec<_>>(),
            }),
        }
    }

    /// The value as short text, for people and models: strings bare, a node by its
    /// `name` (else `title`, else `id`) property or else its id, a relationship as
    /// `-[TYPE]->`, a path as its nodes joined by ` - `.
    pub fn text(&self) -> String {
        self.text_quoting(&|text| text.to_owned())
    }

    /// [`Value::text`] with every string, map key and relationship type passed
    /// through `quote` (a prompt's quoting, which keeps graph text from reading as
    /// instructions).
    pub fn text_quoting(&self, quote: &dyn Fn(&str) -> String) -> String {
        let node = |node: &NodeValue| {
            node.name_property()
                .map(|value| value.text_quoting(quote))
                .unwrap_or_else(|| node.id.to_string())
        };
        match self {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::String(s) => quote(s),
            Value::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|item| item.text_quoting(quote))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", quote(k), v.text_quoting(quote)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Value::Node(n) => node(n),
            Value::Relationship(rel) => format!("-[{}]->", quote(&rel.rel_type)),
            Value::Path(path) => path.nodes.iter().map(node).collect::<Vec<_>>().join(" - "),
        }
    }

    /// A query parameter written as JSON: numbers that are integers become `Int`,
    /// objects `Map` (keys in the order serde_json keeps them), everything else its like.
    pub fn from_json(json: &serde_json::Value) -> Self {
        match json {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match n.as_i64() {
                Some(i) => Value::Int(i),
                None => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::String(s.clone()),
            serde_json::Value::Array(items) => {
                Value::List(items.iter().map(Value::from_json).collect())
            }
            serde_json::Value::Object(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::from_json(v)))
                    .collect(),
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct NodeValue {
    pub id: NodeId,
    pub labels: Vec<String>,
    pub properties: Vec<(String, Value)>,
}

impl NodeValue {
    /// The property a node is named by: `name`, else `title`, else `id`.
    pub fn name_property(&self) -> Option<&Value> {
        ["name", "title", "id"]
            .iter()
            .find_map(|key| self.properties.iter().find(|(k, _)| k == key))
            .map(|(_, value)| value)
    }

    /// The node's name ([`NodeValue::name_property`] as text), if it has one.
    pub fn name(&self) -> Option<String> {
        self.name_property().map(Value::text)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RelationshipValue {
    pub start: NodeId,
    pub end: NodeId,
    pub rel_type: String,
    pub properties: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct PathValue {
    pub nodes: Vec<NodeValue>,
    pub relationships: Vec<RelationshipValue>,
}

/// A query result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// More rows existed than the row budget allowed.
    pub truncated: bool,
}

impl Rows {
    /// `{"columns": [...], "rows": [[...]], "truncated": bool}` with every value as
    /// plain JSON ([`Value::to_json`]).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "columns": self.columns,
            "rows": self
                .rows
                .iter()
                .map(|row| row.iter().map(Value::to_json).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
            "truncated": self.truncated,
        })
    }
}

/// How often a relation connects which node labels (sampled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RelationSchema {
    pub name: String,
    pub count: u64,
    /// (head label, tail label, sampled count), most frequent first.
    pub endpoints: Vec<(String, String, u64)>,
    /// A few example triples, verbalized, for prompts.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct LabelSchema {
    pub name: String,
    pub count: u64,
    pub property_keys: Vec<String>,
}

/// The graph's schema: what validators check Cypher against and what models are shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct GraphSchema {
    pub labels: Vec<LabelSchema>,
    pub relations: Vec<RelationSchema>,
    /// Property keys of relationships.
    pub relationship_property_keys: Vec<String>,
    pub node_count: u64,
    pub edge_count: u64,
}

impl GraphSchema {
    pub fn relation(&self, name: &str) -> Option<&RelationSchema> {
        self.relations.iter().find(|r| r.name == name)
    }

    pub fn label(&self, name: &str) -> Option<&LabelSchema> {
        self.labels.iter().find(|l| l.name == name)
    }
}

#[cfg(test)]
mod json_tests {
    use super::*;

    #[test]
    fn values_read_from_and_written_as_plain_json() {
        let json = serde_json::json!({"n": 3, "x": 2.5, "s": "Heat", "l": [true, null]});
        let value = Value::from_json(&json);
        let Value::Map(entries) = &value else {
            panic!("an object is a map: {value:?}")
        };
        let get = |key: &str| {
            entries
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(get("n"), Some(Value::Int(3)));
        assert_eq!(get("x"), Some(Value::Float(2.5)));
        assert_eq!(get("s"), Some(Value::String("Heat".into())));
        assert_eq!(
            get("l"),
            Some(Value::List(vec![Value::Bool(true), Value::Null]))
        );
        assert_eq!(value.to_json(), json);
        let node = Value::Node(NodeValue {
            id: NodeId(7),
            labels: vec!["Film".into()],
            properties: vec![("name".into(), Value::String("Heat".into()))],
        });
        assert_eq!(
            node.to_json(),
            serde_json::json!({"id": 7, "labels": ["Film"], "properties": {"name": "Heat"}})
        );
    }
}

#[cfg(test)]
mod path_tests {
    use super::*;

    fn node(id: u64, name: &str) -> Entity {
        Entity {
            id: NodeId(id),
            name: name.into(),
        }
    }

    fn step(relation: &str, direction: Direction) -> RelationStep {
        RelationStep {
            relation: relation.into(),
            direction,
        }
    }

    #[test]
    fn a_metapath_reads_as_its_relations_with_their_directions() {
        let metapath = Metapath {
            steps: vec![
                step("directed_by", Direction::In),
                step("starred_actors", Direction::Out),
                step("spouse", Direction::Both),
            ],
        };
        assert_eq!(
            metapath.to_string(),
            "directed_by (inverse) -> starred_actors -> spouse (either way)"
        );
    }

    #[test]
    fn a_path_follows_the_metapath_it_walks_and_no_other() {
        // Al Pacino <-starred_actors- Heat -directed_by-> Michael Mann
        let path = Path {
            start: node(1, "Al Pacino"),
            steps: vec![
                PathStep {
                    relation: "starred_actors".into(),
                    inverse: true,
                    node: node(2, "Heat"),
                },
                PathStep {
                    relation: "directed_by".into(),
                    inverse: false,
                    node: node(3, "Michael Mann"),
                },
            ],
        };
        let walked = Metapath {
            steps: vec![
                step("starred_actors", Direction::In),
                step("directed_by", Direction::Out),
            ],
        };
        assert!(path.follows(&walked));
        let either = Metapath {
            steps: vec![
                step("starred_actors", Direction::Both),
                step("directed_by", Direction::Both),
            ],
        };
        assert!(path.follows(&either));
        let reversed = Metapath {
            steps: vec![
                step("starred_actors", Direction::Out),
                step("directed_by", Direction::Out),
            ],
        };
        assert!(
            !path.follows(&reversed),
            "the first hop is walked head to tail"
        );
        let shorter = Metapath {
            steps: vec![step("starred_actors", Direction::In)],
        };
        assert!(!path.follows(&shorter), "one hop short");
        let other = Metapath {
            steps: vec![
                step("starred_actors", Direction::In),
                step("written_by", Direction::Out),
            ],
        };
        assert!(!path.follows(&other));
    }
}
