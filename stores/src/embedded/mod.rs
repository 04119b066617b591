//! The embedded graph store: a read-only property graph in compressed sparse rows,
//! built by the loaders, saved to and mapped back from a snapshot file.
//!
//! Other crates use [`EmbeddedGraph`] two ways: through [`GraphStore`](crate::GraphStore)
//! (async, batched, what agents call across the bus), or directly through its
//! synchronous methods (the Cypher executor and in-process cores), which are cheap
//! enough to call per node:
//!
//! - sizes and ids: `node_count`, `edge_count`, `contains`, `node_index(NodeId)`, `node_id`
//! - names: `name(n)`, `entity(n)`, `lookup_exact(s)`, `lookup_normalized(s)`
//! - vocabularies: `relation_id`/`relation_name`/`relations`, `label_id`/`label_name`/
//!   `all_labels`, `property_key_id`/`property_key_name`
//! - labels: `labels(n)`, `has_label(n, l)`, `nodes_with_label(l)`
//! - edges: `out_edges(n)`, `in_edges(n)`, `out_edges_via(n, r)`, `in_edges_via(n, r)`,
//!   `out_neighbors(n, r)`, `in_neighbors(n, r)` (slices), `edge(e)`, degrees
//! - properties: `node_property(n, k)`, `node_properties(n)`, `edge_property(e, k)`,
//!   `edge_properties(e)` (and `*_by_name` variants)

mod builder;
mod column;
mod graph;
pub mod load;
mod names;
mod ops;
pub mod snapshot;
mod store;

pub use builder::{BuildEdge, GraphBuilder};
pub use graph::{EdgeId, Edges, EmbeddedGraph, LabelId, NodeIdx, PropertyKeyId, RelationId};
pub use names::normalize_name;
pub(crate) use ops::splitmix64;

#[cfg(test)]
mod tests;
