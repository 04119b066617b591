//! Graph-shaped values shared by stores, agents and the wire: entities, triples, paths,
//! query rows, and the graph's schema as shown to validators and models.

use serde::{Deserialize, Serialize};

use crate::NodeId;

/// A node with its display name (what a person or a model reads).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Entity {
    pub id: NodeId,
    pub name: String,
}

/// An entity with a relevance score (link confidence, similarity, rank).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoredEntity {
    pub entity: Entity,
    pub score: f32,
}

/// Which way an edge is followed relative to its stored direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
pub struct Triple {
    pub head: Entity,
    pub relation: String,
    pub tail: Entity,
}

/// One relation of a metapath and the direction to follow it in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct RelationStep {
    pub relation: String,
    pub direction: Direction,
}

/// A sequence of relations (`r1 -> r2 -> r3`), at most [`crate::budget::MAX_DEPTH`] long.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Metapath {
    pub steps: Vec<RelationStep>,
}

/// One hop of a concrete path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PathStep {
    pub relation: String,
    /// `true` when the edge was followed tail → head.
    pub inverse: bool,
    pub node: Entity,
}

/// A concrete path through the graph, with every intermediate entity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
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
}

/// A typed value in a query result (openCypher's value model).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodeValue {
    pub id: NodeId,
    pub labels: Vec<String>,
    pub properties: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RelationshipValue {
    pub start: NodeId,
    pub end: NodeId,
    pub rel_type: String,
    pub properties: Vec<(String, Value)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PathValue {
    pub nodes: Vec<NodeValue>,
    pub relationships: Vec<RelationshipValue>,
}

/// A query result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rows {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// More rows existed than the row budget allowed.
    pub truncated: bool,
}

/// How often a relation connects which node labels (sampled).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationSchema {
    pub name: String,
    pub count: u64,
    /// (head label, tail label, sampled count), most frequent first.
    pub endpoints: Vec<(String, String, u64)>,
    /// A few example triples, verbalized, for prompts.
    pub examples: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSchema {
    pub name: String,
    pub count: u64,
    pub property_keys: Vec<String>,
}

/// The graph's schema: what validators check Cypher against and what models are shown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
