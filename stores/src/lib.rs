//! Where the graph and the vectors live. Agents never talk to a database directly: they
//! use [`GraphStore`] and [`VectorIndex`], whose calls take whole frontiers so that a
//! question costs a few calls, not one per edge.
//!
//! Backends: the embedded CSR graph (default) and Neo4j over Bolt; the embedded vector
//! index (default) and Qdrant.

pub mod cypher;

use std::sync::Arc;

pub mod bolt;
mod common;
pub mod embedded;
mod framed;
pub mod text;
pub mod vector;

pub use embedded::EmbeddedGraph;

use async_trait::async_trait;
use kgmesh_schemas::{
    graph::{Direction, Entity, GraphSchema, Metapath, Path, Rows, Triple, Value},
    NodeId,
};

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error("{what} not found")]
    NotFound { what: String },
    #[error("store call timed out after {millis} ms")]
    Timeout { millis: u64 },
    #[error("store unavailable: {detail}")]
    Unavailable { detail: String },
    /// A query was refused or failed validation; `hint` says how to repair it.
    #[error("invalid query: {reason}")]
    InvalidQuery {
        reason: String,
        hint: Option<String>,
    },
    #[error("limit exceeded: {detail}")]
    LimitExceeded { detail: String },
    #[error("I/O error on {path}: {detail}")]
    Io { path: String, detail: String },
    #[error("corrupt data in {path}: {detail}")]
    Corrupt { path: String, detail: String },
    /// A KG file or folder that cannot be loaded as given: not a format the loader
    /// reads or can tell, or options that do not fit it.
    #[error("cannot load {path}: {detail}")]
    Unusable { path: String, detail: String },
    #[error("backend error: {detail}")]
    Backend { detail: String },
}

/// How names are matched when resolving them to nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameMatch {
    /// Byte-for-byte.
    Exact,
    /// Case-folded, whitespace and punctuation normalized (see `normalize_name`).
    Normalized,
}

/// A batched one-hop expansion.
#[derive(Debug, Clone, PartialEq)]
pub struct NeighborQuery {
    pub direction: Direction,
    /// Only these relations; `None` for all.
    pub relations: Option<Vec<String>>,
    /// Most edges returned per frontier node (the rest are reported as truncated).
    pub fanout_cap: usize,
}

/// What a one-hop expansion returns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Neighborhood {
    /// Edges in stored direction (head → relation → tail) whatever way they were followed.
    pub triples: Vec<Triple>,
    /// Frontier nodes whose fan-out was cut by the cap.
    pub truncated: Vec<NodeId>,
}

/// Names of nodes and relations, read in place: the store's own name table for the
/// embedded backend, a table built from the reply for remote backends.
pub trait NameTable: Send + Sync {
    /// Display name of a node, `None` for an id the table does not know.
    fn node_name(&self, id: NodeId) -> Option<&str>;
    /// Name of the relation with index `relation` (see [`NeighborEdge::relation`]).
    fn relation_name(&self, relation: u32) -> Option<&str>;
}

/// One edge of a [`NeighborEdges`], in stored direction, by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NeighborEdge {
    pub head: NodeId,
    /// Index into the reply's [`NameTable`] relation names.
    pub relation: u32,
    pub tail: NodeId,
}

/// A one-hop expansion as ids plus a shared name table.
///
/// The same edges as [`Neighborhood`] without a `String` per name: a large frontier
/// costs one allocation for the edge list instead of three per edge, which is what
/// keeps a 100-node expansion well under a millisecond. Names are borrowed on demand
/// ([`NeighborEdges::head_name`], …) or materialized with [`NeighborEdges::triple`].
///
/// ```
/// use kgmesh_schemas::graph::Direction;
/// use kgmesh_stores::{embedded::GraphBuilder, NeighborQuery};
/// let mut builder = GraphBuilder::new();
/// let heat = builder.node("Heat");
/// let mann = builder.node("Michael Mann");
/// builder.add_edge(heat, "directed_by", mann);
/// let graph = builder.finish();
/// let query = NeighborQuery { direction: Direction::Out, relations: None, fanout_cap: 10 };
/// let hood = graph.neighbor_edges_sync(&[graph.node_id(heat)], &query).unwrap();
/// assert_eq!(hood.edges.len(), 1);
/// assert_eq!(hood.tail_name(&hood.edges[0]), "Michael Mann");
/// assert_eq!(hood.relation_name(&hood.edges[0]), "directed_by");
/// ```
#[derive(Clone)]
pub struct NeighborEdges {
    /// Edges in stored direction (head → relation → tail) whatever way they were followed.
    pub edges: Vec<NeighborEdge>,
    /// Frontier nodes whose fan-out was cut by the cap.
    pub truncated: Vec<NodeId>,
    /// Resolves every node and relation that `edges` mention.
    pub names: Arc<dyn NameTable>,
}

impl std::fmt::Debug for NeighborEdges {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("NeighborEdges")
            .field("edges", &self.edges)
            .field("truncated", &self.truncated)
            .finish_non_exhaustive()
    }
}

impl NeighborEdges {
    /// Name of `edge`'s head (empty if the table lacks it, which a backend never lets happen).
    pub fn head_name(&self, edge: &NeighborEdge) -> &str {
        self.names.node_name(edge.head).unwrap_or_default()
    }

    pub fn tail_name(&self, edge: &NeighborEdge) -> &str {
        self.names.node_name(edge.tail).unwrap_or_default()
    }

    pub fn relation_name(&self, edge: &NeighborEdge) -> &str {
        self.names.relation_name(edge.relation).unwrap_or_default()
    }

    /// `edge` with its names copied out.
    pub fn triple(&self, edge: &NeighborEdge) -> Triple {
        Triple {
            head: Entity {
                id: edge.head,
                name: self.head_name(edge).to_owned(),
            },
            relation: self.relation_name(edge).to_owned(),
            tail: Entity {
                id: edge.tail,
                name: self.tail_name(edge).to_owned(),
            },
        }
    }

    /// Every edge with its names copied out, in order.
    pub fn into_neighborhood(self) -> Neighborhood {
        let mut triples = Vec::with_capacity(self.edges.len());
        triples.extend(self.edges.iter().map(|edge| self.triple(edge)));
        Neighborhood {
            triples,
            truncated: self.truncated,
        }
    }
}

impl From<Neighborhood> for NeighborEdges {
    /// Interns the names of a materialized expansion (what remote backends return).
    fn from(hood: Neighborhood) -> Self {
        let mut names = OwnedNames::default();
        let mut relation_index: std::collections::HashMap<String, u32> = Default::default();
        let mut edges = Vec::with_capacity(hood.triples.len());
        for triple in hood.triples {
            let next = names.relations.len() as u32;
            let relation = *relation_index
                .entry(triple.relation.clone())
                .or_insert_with(|| {
                    names.relations.push(triple.relation);
                    next
                });
            edges.push(NeighborEdge {
                head: triple.head.id,
                relation,
                tail: triple.tail.id,
            });
            names
                .nodes
                .entry(triple.head.id)
                .or_insert(triple.head.name);
            names
                .nodes
                .entry(triple.tail.id)
                .or_insert(triple.tail.name);
        }
        NeighborEdges {
            edges,
            truncated: hood.truncated,
            names: Arc::new(names),
        }
    }
}

/// A name table that owns its strings (built from a backend's reply).
#[derive(Debug, Clone, Default)]
pub struct OwnedNames {
    pub nodes: std::collections::HashMap<NodeId, String>,
    pub relations: Vec<String>,
}

impl NameTable for OwnedNames {
    fn node_name(&self, id: NodeId) -> Option<&str> {
        self.nodes.get(&id).map(String::as_str)
    }

    fn relation_name(&self, relation: u32) -> Option<&str> {
        self.relations.get(relation as usize).map(String::as_str)
    }
}

/// Bounds for path operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathLimits {
    /// At most [`kgmesh_schemas::budget::MAX_DEPTH`].
    pub max_depth: u8,
    /// Edges expanded per node per step.
    pub fanout_cap: usize,
    /// Paths returned in total.
    pub max_paths: usize,
}

impl Default for PathLimits {
    fn default() -> Self {
        Self {
            max_depth: 3,
            fanout_cap: 1_000,
            max_paths: 1_000,
        }
    }
}

/// Bounds for a Cypher query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryLimits {
    pub max_rows: usize,
    pub timeout: std::time::Duration,
    /// Deepest variable-length pattern allowed.
    pub max_depth: u8,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            max_rows: 1_000,
            timeout: std::time::Duration::from_secs(5),
            max_depth: 3,
        }
    }
}

/// An entity and its one-hop neighbourhood (for cache pre-warming).
#[derive(Debug, Clone, PartialEq)]
pub struct Star {
    pub center: Entity,
    pub triples: Vec<Triple>,
}

#[async_trait]
pub trait GraphStore: Send + Sync + 'static {
    /// `"embedded"`, `"bolt"`, …
    fn backend(&self) -> &'static str;

    /// Labels, relation types, property keys and sampled endpoint statistics (cached).
    async fn schema(&self) -> StoreResult<Arc<GraphSchema>>;

    /// For each name, the nodes it names (empty when none).
    async fn resolve(&self, names: &[String], mode: NameMatch) -> StoreResult<Vec<Vec<Entity>>>;

    /// Display names of nodes, in request order; unknown ids are an error.
    async fn entities(&self, ids: &[NodeId]) -> StoreResult<Vec<Entity>>;

    /// Pages through every node's name in id order, starting after `after`
    /// (for building linker indexes).
    async fn scan_names(&self, after: Option<NodeId>, limit: usize) -> StoreResult<Vec<Entity>>;

    /// One hop from every node of the frontier.
    async fn neighbors(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<Neighborhood>;

    /// The same expansion as [`GraphStore::neighbors`], as ids plus a name table
    /// (no string copied per edge where the backend can avoid it).
    async fn neighbor_edges(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<NeighborEdges> {
        Ok(NeighborEdges::from(self.neighbors(frontier, query).await?))
    }

    /// Every path from `sources` that follows one of `metapaths`, bounded by `limits`.
    ///
    /// A path is a walk that never turns straight back over the edge it just walked:
    /// it may pass a node (or an edge) again, as the relation words of a question do
    /// ("X's mother's child's father" is X's father when X is the only child), but the
    /// actors of X's films never include X by walking X's own edge back.
    async fn follow_metapaths(
        &self,
        sources: &[NodeId],
        metapaths: &[Metapath],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>>;

    /// Shortest paths (either direction per edge) from any source to any target.
    async fn shortest_paths(
        &self,
        sources: &[NodeId],
        targets: &[NodeId],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>>;

    /// `count` random entities with up to `max_neighbors` of their edges.
    async fn sample_stars(
        &self,
        count: usize,
        max_neighbors: usize,
        seed: u64,
    ) -> StoreResult<Vec<Star>>;

    /// Runs validated, read-only openCypher.
    async fn cypher(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows>;
}

/// Distance used by a vector index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Cosine,
    L2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VectorItem {
    pub id: u64,
    pub vector: Vec<f32>,
    pub payload: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    pub id: u64,
    /// Higher is more similar (cosine similarity, or negated L2 distance).
    pub score: f32,
    pub payload: Vec<(String, String)>,
}

#[async_trait]
pub trait VectorIndex: Send + Sync + 'static {
    fn backend(&self) -> &'static str;
    fn dim(&self) -> usize;
    fn metric(&self) -> Metric;
    async fn upsert(&self, items: Vec<VectorItem>) -> StoreResult<()>;
    /// The `k` nearest items, restricted to `only` when given.
    async fn search(
        &self,
        query: &[f32],
        k: usize,
        only: Option<&[u64]>,
    ) -> StoreResult<Vec<VectorHit>>;
    async fn delete(&self, ids: &[u64]) -> StoreResult<()>;
    async fn len(&self) -> StoreResult<usize>;

    async fn is_empty(&self) -> StoreResult<bool> {
        Ok(self.len().await? == 0)
    }
}
