//! [`PropertyGraph`] over the embedded CSR store, so that its `cypher()` runs the shared
//! executor directly on the store's slices.

use kgmesh_schemas::graph::{Rows, Value};
use kgmesh_schemas::NodeId;

use super::graph::{EdgeRef, PropertyGraph};
use crate::embedded::{EdgeId, EmbeddedGraph, LabelId, RelationId};
use crate::{QueryLimits, StoreResult};

/// The property every node has: its display name (what a Bolt database stores as
/// `name` when `kgmesh load` writes a KG to it).
const NAME_PROPERTY: &str = "name";

impl PropertyGraph for EmbeddedGraph {
    fn node_count(&self) -> usize {
        EmbeddedGraph::node_count(self)
    }

    fn label_id(&self, name: &str) -> Option<u32> {
        EmbeddedGraph::label_id(self, name).map(|label| label.0)
    }

    fn label_name(&self, label: u32) -> &str {
        if (label as usize) < self.label_count() {
            EmbeddedGraph::label_name(self, LabelId(label))
        } else {
            ""
        }
    }

    fn rel_type_id(&self, name: &str) -> Option<u32> {
        self.relation_id(name).map(|relation| relation.0)
    }

    fn rel_type_name(&self, rel_type: u32) -> &str {
        if (rel_type as usize) < self.relation_count() {
            self.relation_name(RelationId(rel_type))
        } else {
            ""
        }
    }

    fn nodes_with_label(&self, label: u32) -> &[u32] {
        EmbeddedGraph::nodes_with_label(self, LabelId(label))
    }

    fn node_labels(&self, node: u32) -> Vec<u32> {
        self.labels(node).iter().map(|label| label.0).collect()
    }

    fn has_label(&self, node: u32, label: u32) -> bool {
        EmbeddedGraph::has_label(self, node, LabelId(label))
    }

    fn node_property(&self, node: u32, key: &str) -> Option<Value> {
        if !self.contains(node) {
            return None;
        }
        match self.node_property_by_name(node, key) {
            Some(value) => Some(value.clone()),
            // A node of a triple KG has its display name and no properties: it is its
            // `name`, as on a Bolt database the loader wrote it to.
            None if key == NAME_PROPERTY => Some(Value::String(self.name(node).to_owned())),
            None => None,
        }
    }

    fn node_properties(&self, node: u32) -> Vec<(String, Value)> {
        if !self.contains(node) {
            return Vec::new();
        }
        let mut properties: Vec<(String, Value)> = EmbeddedGraph::node_properties(self, node)
            .map(|(key, value)| (self.property_key_name(key).to_string(), value.clone()))
            .collect();
        if !properties.iter().any(|(key, _)| key == NAME_PROPERTY) {
            properties.insert(
                0,
                (
                    NAME_PROPERTY.to_owned(),
                    Value::String(self.name(node).to_owned()),
                ),
            );
        }
        properties
    }

    fn edges(&self, node: u32, outgoing: bool, rel_type: Option<u32>, out: &mut Vec<EdgeRef>) {
        if !self.contains(node) {
            return;
        }
        if let Some(rel_type) = rel_type {
            if rel_type as usize >= self.relation_count() {
                return;
            }
        }
        let edges = match (outgoing, rel_type) {
            (true, None) => self.out_edges(node),
            (false, None) => self.in_edges(node),
            (true, Some(rel_type)) => self.out_edges_via(node, RelationId(rel_type)),
            (false, Some(rel_type)) => self.in_edges_via(node, RelationId(rel_type)),
        };
        for (relation, other, edge) in edges.iter() {
            let (start, end) = if outgoing {
                (node, other)
            } else {
                (other, node)
            };
            out.push(EdgeRef {
                id: u64::from(edge.0),
                start,
                end,
                rel_type: relation.0,
            });
        }
    }

    fn edge_property(&self, edge: &EdgeRef, key: &str) -> Option<Value> {
        self.edge_property_by_name(EdgeId(edge.id as u32), key)
            .cloned()
    }

    fn edge_properties(&self, edge: &EdgeRef) -> Vec<(String, Value)> {
        EmbeddedGraph::edge_properties(self, EdgeId(edge.id as u32))
            .map(|(key, value)| (self.property_key_name(key).to_string(), value.clone()))
            .collect()
    }

    fn property_key_exists(&self, key: &str) -> bool {
        key == NAME_PROPERTY || self.property_key_id(key).is_some()
    }

    fn property_keys(&self) -> Vec<String> {
        let mut keys = self.data.property_keys.names.clone();
        keys.push(NAME_PROPERTY.to_owned());
        keys.sort();
        keys.dedup();
        keys
    }

    fn node_id(&self, node: u32) -> NodeId {
        EmbeddedGraph::node_id(self, node)
    }

    fn node_index(&self, id: NodeId) -> Option<u32> {
        EmbeddedGraph::node_index(self, id)
    }
}

/// Parses, validates against the store's schema and runs a query on the embedded graph
/// (synchronous: call it from a blocking task).
pub fn run_on_embedded(
    graph: &EmbeddedGraph,
    query: &str,
    params: &[(String, Value)],
    limits: &QueryLimits,
) -> StoreResult<Rows> {
    let schema = graph.schema_sync();
    super::run_read_only(graph, &schema, query, params, limits)
}
