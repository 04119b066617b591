//! The in-memory graph: compressed sparse rows in both directions, grouped by relation.
//!
//! Layout (E edges, N nodes):
//! - out CSR: `out_offsets[n]..out_offsets[n+1]` are node `n`'s outgoing edges, sorted by
//!   (relation, target). Their positions are the edges' ids ([`EdgeId`]).
//! - in CSR: the same edges seen from their tails, sorted by (relation, source), each
//!   with the id of the edge it mirrors (so relationship properties are found either way).
//! - 20 bytes per edge in all, plus 8 bytes per node of offsets; names and properties
//!   live beside that.
//!
//! Because each node's edges are grouped by relation, "neighbours of `n` via `r`" is a
//! binary search inside `n`'s row and then a plain slice.

use std::sync::{Arc, OnceLock};

use kgmesh_schemas::{
    graph::{Entity, GraphSchema, Value},
    NodeId,
};
use rustc_hash::FxHashMap;

use super::{
    column::{Column, ColumnBytes},
    names::{hash_range, name_hash, normalize_name},
};

/// Dense index of a node inside one [`EmbeddedGraph`] (`NodeId(u64)` on the wire).
pub type NodeIdx = u32;

/// A relation type, interned. `relation_name` gives the text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct RelationId(pub u32);

/// A node label, interned. `label_name` gives the text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct LabelId(pub u32);

/// A property key (of nodes or relationships), interned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropertyKeyId(pub u32);

/// An edge: its position in the out CSR. Stable for the life of a graph and its
/// snapshot; used to read relationship properties.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, bytemuck::Pod, bytemuck::Zeroable,
)]
#[repr(transparent)]
pub struct EdgeId(pub u32);

/// A read-only property graph held in memory (or mapped from a snapshot).
///
/// Cheap to clone: a handle to shared, immutable data, so it can be moved into
/// `spawn_blocking` and shared by every agent of a process.
///
/// ```
/// use kgmesh_stores::embedded::GraphBuilder;
/// let mut builder = GraphBuilder::new();
/// let alice = builder.node("Alice");
/// let bob = builder.node("Bob");
/// builder.add_edge(alice, "knows", bob);
/// let graph = builder.finish();
/// let knows = graph.relation_id("knows").unwrap();
/// assert_eq!(graph.out_neighbors(alice, knows), &[bob]);
/// assert_eq!(graph.in_neighbors(bob, knows), &[alice]);
/// assert_eq!(graph.lookup_normalized("ALICE"), vec![alice]);
/// ```
#[derive(Clone)]
pub struct EmbeddedGraph {
    pub(crate) data: Arc<GraphData>,
}

/// Properties of nodes (or edges): a CSR over owners, keys sorted within an owner.
/// `offsets` is empty when no owner has a property (plain triple KGs).
#[derive(Debug, Default, Clone, serde::Serialize, serde::Deserialize)]
pub(crate) struct Properties {
    pub(crate) offsets: Vec<u32>,
    pub(crate) keys: Vec<u32>,
    pub(crate) values: Vec<Value>,
}

impl Properties {
    fn range(&self, owner: u32) -> std::ops::Range<usize> {
        let owner = owner as usize;
        if owner + 1 >= self.offsets.len() {
            return 0..0;
        }
        self.offsets[owner] as usize..self.offsets[owner + 1] as usize
    }

    fn get(&self, owner: u32, key: u32) -> Option<&Value> {
        let range = self.range(owner);
        let keys = &self.keys[range.clone()];
        let position = keys.binary_search(&key).ok()?;
        self.values.get(range.start + position)
    }

    fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4
            + self.keys.capacity() * 4
            + self.values.capacity() * std::mem::size_of::<Value>()
    }
}

/// Interned names of relations, labels and property keys.
#[derive(Debug, Default, Clone)]
pub(crate) struct Interned {
    pub(crate) names: Vec<String>,
    lookup: FxHashMap<String, u32>,
}

impl Interned {
    pub(crate) fn from_names(names: Vec<String>) -> Self {
        let lookup = names
            .iter()
            .enumerate()
            .map(|(index, name)| (name.clone(), index as u32))
            .collect();
        Self { names, lookup }
    }

    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.lookup.get(name) {
            return *id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.lookup.insert(name.to_owned(), id);
        id
    }

    pub(crate) fn get(&self, name: &str) -> Option<u32> {
        self.lookup.get(name).copied()
    }

    /// Every name with its id, in id order.
    fn entries(&self) -> impl Iterator<Item = (u32, &str)> {
        self.names
            .iter()
            .enumerate()
            .map(|(index, name)| (index as u32, name.as_str()))
    }
}

pub(crate) struct GraphData {
    pub(crate) name_offsets: Column<u64>,
    pub(crate) name_bytes: Column<u8>,
    pub(crate) node_label_offsets: Column<u32>,
    pub(crate) node_labels: Column<LabelId>,
    pub(crate) label_node_offsets: Column<u32>,
    pub(crate) label_nodes: Column<u32>,
    pub(crate) out_offsets: Column<u32>,
    pub(crate) out_relations: Column<RelationId>,
    pub(crate) out_targets: Column<u32>,
    pub(crate) in_offsets: Column<u32>,
    pub(crate) in_relations: Column<RelationId>,
    pub(crate) in_sources: Column<u32>,
    pub(crate) in_edge_ids: Column<EdgeId>,
    pub(crate) exact_hashes: Column<u64>,
    pub(crate) exact_nodes: Column<u32>,
    pub(crate) normalized_hashes: Column<u64>,
    pub(crate) normalized_nodes: Column<u32>,
    pub(crate) relations: Interned,
    /// (relation name, its own label), sorted by name.
    pub(crate) relation_labels: Vec<(String, String)>,
    pub(crate) labels: Interned,
    pub(crate) property_keys: Interned,
    pub(crate) node_properties: Properties,
    pub(crate) edge_properties: Properties,
    pub(crate) schema_cache: OnceLock<Arc<GraphSchema>>,
}

/// One node's edges in one direction (optionally only one relation): parallel slices.
#[derive(Debug, Clone, Copy)]
pub struct Edges<'g> {
    /// Relation of each edge.
    pub relations: &'g [RelationId],
    /// The node at the other end of each edge (tail for out-edges, head for in-edges).
    pub nodes: &'g [NodeIdx],
    ids: EdgeIds<'g>,
}

#[derive(Debug, Clone, Copy)]
enum EdgeIds<'g> {
    /// Out-edges are stored contiguously: ids are `first..first+len`.
    Contiguous(u32),
    Listed(&'g [EdgeId]),
}

impl<'g> Edges<'g> {
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Id of the `index`-th edge of this slice (for relationship properties).
    pub fn edge_id(&self, index: usize) -> EdgeId {
        match self.ids {
            EdgeIds::Contiguous(first) => EdgeId(first + index as u32),
            EdgeIds::Listed(ids) => ids[index],
        }
    }

    /// `(relation, other node, edge id)` for every edge of the slice.
    pub fn iter(&self) -> impl Iterator<Item = (RelationId, NodeIdx, EdgeId)> + 'g {
        let edges = *self;
        (0..edges.len()).map(move |index| {
            (
                edges.relations[index],
                edges.nodes[index],
                edges.edge_id(index),
            )
        })
    }
}

impl EmbeddedGraph {
    // ---- sizes -------------------------------------------------------------------

    pub fn node_count(&self) -> usize {
        self.data.out_offsets.len().saturating_sub(1)
    }

    pub fn edge_count(&self) -> usize {
        self.data.out_targets.len()
    }

    pub fn relation_count(&self) -> usize {
        self.data.relations.names.len()
    }

    pub fn label_count(&self) -> usize {
        self.data.labels.names.len()
    }

    /// Does `node` exist in this graph?
    pub fn contains(&self, node: NodeIdx) -> bool {
        (node as usize) < self.node_count()
    }

    /// The dense index behind a wire id, if it names a node of this graph.
    pub fn node_index(&self, id: NodeId) -> Option<NodeIdx> {
        let index = u32::try_from(id.0).ok()?;
        self.contains(index).then_some(index)
    }

    pub fn node_id(&self, node: NodeIdx) -> NodeId {
        NodeId(u64::from(node))
    }

    // ---- names -------------------------------------------------------------------

    /// Display name of a node. Panics when `node >= node_count()` (check wire ids with
    /// [`EmbeddedGraph::node_index`] first).
    pub fn name(&self, node: NodeIdx) -> &str {
        let offsets: &[u64] = &self.data.name_offsets;
        let start = offsets[node as usize] as usize;
        let end = offsets[node as usize + 1] as usize;
        let bytes = &self.data.name_bytes[start..end];
        // SAFETY: every name is UTF-8: the builder appends whole `&str`s and its offsets
        // fall between them, and `snapshot::open` checks each name with `from_utf8`
        // before a mapped graph exists. Neither is mutable afterwards. Re-validating
        // here was the largest single cost of reading names in a 1-hop expansion.
        unsafe { std::str::from_utf8_unchecked(bytes) }
    }

    /// The node as an [`Entity`] (wire id + display name).
    pub fn entity(&self, node: NodeIdx) -> Entity {
        Entity {
            id: self.node_id(node),
            name: self.name(node).to_owned(),
        }
    }

    /// Nodes whose name is exactly `name` (byte for byte), in index order.
    pub fn lookup_exact(&self, name: &str) -> Vec<NodeIdx> {
        let hashes = &self.data.exact_hashes;
        let mut found: Vec<NodeIdx> = hash_range(hashes, name_hash(name))
            .map(|position| self.data.exact_nodes[position])
            .filter(|node| self.name(*node) == name)
            .collect();
        found.sort_unstable();
        found
    }

    /// Nodes whose [`normalize_name`]d name equals that of `name`, in index order.
    pub fn lookup_normalized(&self, name: &str) -> Vec<NodeIdx> {
        let wanted = normalize_name(name);
        let hashes = &self.data.normalized_hashes;
        let mut found: Vec<NodeIdx> = hash_range(hashes, name_hash(&wanted))
            .map(|position| self.data.normalized_nodes[position])
            .filter(|node| normalize_name(self.name(*node)) == wanted)
            .collect();
        found.sort_unstable();
        found
    }

    // ---- relations, labels, property keys ---------------------------------------

    pub fn relation_id(&self, name: &str) -> Option<RelationId> {
        self.data.relations.get(name).map(RelationId)
    }

    /// Panics on an id that did not come from this graph.
    pub fn relation_name(&self, relation: RelationId) -> &str {
        &self.data.relations.names[relation.0 as usize]
    }

    /// Relations' own labels (relation name, label), sorted by name: the N-Triples
    /// predicates that had an `rdfs:label`.
    pub fn relation_labels(&self) -> &[(String, String)] {
        &self.data.relation_labels
    }

    /// The label relation `name` was given, if any.
    pub fn relation_label(&self, name: &str) -> Option<&str> {
        let labels = &self.data.relation_labels;
        labels
            .binary_search_by(|(relation, _)| relation.as_str().cmp(name))
            .ok()
            .map(|index| labels[index].1.as_str())
    }

    /// Every relation, in id order.
    pub fn relations(&self) -> impl Iterator<Item = (RelationId, &str)> {
        self.data
            .relations
            .entries()
            .map(|(id, name)| (RelationId(id), name))
    }

    pub fn label_id(&self, name: &str) -> Option<LabelId> {
        self.data.labels.get(name).map(LabelId)
    }

    /// Panics on an id that did not come from this graph.
    pub fn label_name(&self, label: LabelId) -> &str {
        &self.data.labels.names[label.0 as usize]
    }

    /// Every label, in id order.
    pub fn all_labels(&self) -> impl Iterator<Item = (LabelId, &str)> {
        self.data
            .labels
            .entries()
            .map(|(id, name)| (LabelId(id), name))
    }

    pub fn property_key_id(&self, name: &str) -> Option<PropertyKeyId> {
        self.data.property_keys.get(name).map(PropertyKeyId)
    }

    /// Panics on an id that did not come from this graph.
    pub fn property_key_name(&self, key: PropertyKeyId) -> &str {
        &self.data.property_keys.names[key.0 as usize]
    }

    // ---- labels of nodes -----------------------------------------------------------

    /// Labels of a node, sorted by id (empty for plain triple KGs).
    pub fn labels(&self, node: NodeIdx) -> &[LabelId] {
        let offsets = &self.data.node_label_offsets;
        if node as usize + 1 >= offsets.len() {
            return &[];
        }
        let range = offsets[node as usize] as usize..offsets[node as usize + 1] as usize;
        &self.data.node_labels[range]
    }

    pub fn has_label(&self, node: NodeIdx, label: LabelId) -> bool {
        self.labels(node).binary_search(&label).is_ok()
    }

    /// Every node carrying `label`, in index order.
    pub fn nodes_with_label(&self, label: LabelId) -> &[NodeIdx] {
        let offsets = &self.data.label_node_offsets;
        let index = label.0 as usize;
        if index + 1 >= offsets.len() {
            return &[];
        }
        &self.data.label_nodes[offsets[index] as usize..offsets[index + 1] as usize]
    }

    // ---- edges -------------------------------------------------------------------

    /// All outgoing edges of `node`, grouped by relation.
    pub fn out_edges(&self, node: NodeIdx) -> Edges<'_> {
        let data = &*self.data;
        let range =
            data.out_offsets[node as usize] as usize..data.out_offsets[node as usize + 1] as usize;
        Edges {
            relations: &data.out_relations[range.clone()],
            nodes: &data.out_targets[range.clone()],
            ids: EdgeIds::Contiguous(range.start as u32),
        }
    }

    /// All incoming edges of `node`, grouped by relation (`nodes` are the heads).
    pub fn in_edges(&self, node: NodeIdx) -> Edges<'_> {
        let data = &*self.data;
        let range =
            data.in_offsets[node as usize] as usize..data.in_offsets[node as usize + 1] as usize;
        Edges {
            relations: &data.in_relations[range.clone()],
            nodes: &data.in_sources[range.clone()],
            ids: EdgeIds::Listed(&data.in_edge_ids[range]),
        }
    }

    /// Outgoing edges of `node` with relation `relation`.
    pub fn out_edges_via(&self, node: NodeIdx, relation: RelationId) -> Edges<'_> {
        restrict(self.out_edges(node), relation)
    }

    /// Incoming edges of `node` with relation `relation`.
    pub fn in_edges_via(&self, node: NodeIdx, relation: RelationId) -> Edges<'_> {
        restrict(self.in_edges(node), relation)
    }

    /// Tails of `node`'s `relation` edges, sorted.
    pub fn out_neighbors(&self, node: NodeIdx, relation: RelationId) -> &[NodeIdx] {
        self.out_edges_via(node, relation).nodes
    }

    /// Heads of the `relation` edges that end at `node`, sorted.
    pub fn in_neighbors(&self, node: NodeIdx, relation: RelationId) -> &[NodeIdx] {
        self.in_edges_via(node, relation).nodes
    }

    pub fn out_degree(&self, node: NodeIdx) -> usize {
        self.out_edges(node).len()
    }

    pub fn in_degree(&self, node: NodeIdx) -> usize {
        self.in_edges(node).len()
    }

    /// `(head, relation, tail)` of an edge. Panics on an id that did not come from
    /// this graph.
    pub fn edge(&self, edge: EdgeId) -> (NodeIdx, RelationId, NodeIdx) {
        let position = edge.0 as usize;
        let offsets = &self.data.out_offsets;
        // The head is the last node whose row starts at or before the edge.
        let head = offsets.partition_point(|start| (*start as usize) <= position) - 1;
        (
            head as NodeIdx,
            self.data.out_relations[position],
            self.data.out_targets[position],
        )
    }

    /// Number of edges of each relation, indexed by relation id.
    pub fn relation_edge_counts(&self) -> Vec<u64> {
        let mut counts = vec![0u64; self.relation_count()];
        for relation in self.data.out_relations.iter() {
            counts[relation.0 as usize] += 1;
        }
        counts
    }

    // ---- properties ----------------------------------------------------------------

    pub fn node_property(&self, node: NodeIdx, key: PropertyKeyId) -> Option<&Value> {
        self.data.node_properties.get(node, key.0)
    }

    /// Convenience for [`EmbeddedGraph::node_property`] by key name.
    pub fn node_property_by_name(&self, node: NodeIdx, key: &str) -> Option<&Value> {
        self.node_property(node, self.property_key_id(key)?)
    }

    /// Every property of a node, keys in id order.
    pub fn node_properties(&self, node: NodeIdx) -> impl Iterator<Item = (PropertyKeyId, &Value)> {
        properties_of(&self.data.node_properties, node)
    }

    pub fn edge_property(&self, edge: EdgeId, key: PropertyKeyId) -> Option<&Value> {
        self.data.edge_properties.get(edge.0, key.0)
    }

    pub fn edge_property_by_name(&self, edge: EdgeId, key: &str) -> Option<&Value> {
        self.edge_property(edge, self.property_key_id(key)?)
    }

    /// Every property of an edge, keys in id order.
    pub fn edge_properties(&self, edge: EdgeId) -> impl Iterator<Item = (PropertyKeyId, &Value)> {
        properties_of(&self.data.edge_properties, edge.0)
    }

    // ---- memory ----------------------------------------------------------------------

    /// The columns of the graph structure (CSR, labels, offsets): not names, the name
    /// index or properties.
    fn structure_columns(&self) -> [&dyn ColumnBytes; 11] {
        let data = &*self.data;
        [
            &data.out_offsets,
            &data.out_relations,
            &data.out_targets,
            &data.in_offsets,
            &data.in_relations,
            &data.in_sources,
            &data.in_edge_ids,
            &data.node_label_offsets,
            &data.node_labels,
            &data.label_node_offsets,
            &data.label_nodes,
        ]
    }

    /// Heap bytes held by the graph structure (CSR, labels, offsets), excluding names,
    /// the name index and properties. Zero for columns mapped from a snapshot.
    pub fn structure_heap_bytes(&self) -> usize {
        self.structure_columns()
            .iter()
            .map(|column| column.heap_bytes())
            .sum()
    }

    /// Bytes of the graph structure whether on the heap or mapped (what it costs
    /// resident once touched), excluding names, the name index and properties.
    pub fn structure_bytes(&self) -> usize {
        self.structure_columns()
            .iter()
            .map(|column| column.byte_len())
            .sum()
    }

    /// Bytes of names and the name index (heap or mapped) plus property heap bytes.
    pub fn names_and_properties_bytes(&self) -> usize {
        let data = &*self.data;
        data.name_offsets.byte_len()
            + data.name_bytes.byte_len()
            + data.exact_hashes.byte_len()
            + data.exact_nodes.byte_len()
            + data.normalized_hashes.byte_len()
            + data.normalized_nodes.byte_len()
            + data.node_properties.heap_bytes()
            + data.edge_properties.heap_bytes()
    }
}

fn restrict(edges: Edges<'_>, relation: RelationId) -> Edges<'_> {
    let start = edges
        .relations
        .partition_point(|candidate| *candidate < relation);
    let end = start + edges.relations[start..].partition_point(|candidate| *candidate == relation);
    Edges {
        relations: &edges.relations[start..end],
        nodes: &edges.nodes[start..end],
        ids: match edges.ids {
            EdgeIds::Contiguous(first) => EdgeIds::Contiguous(first + start as u32),
            EdgeIds::Listed(ids) => EdgeIds::Listed(&ids[start..end]),
        },
    }
}

fn properties_of(
    properties: &Properties,
    owner: u32,
) -> impl Iterator<Item = (PropertyKeyId, &Value)> {
    let range = properties.range(owner);
    properties.keys[range.clone()]
        .iter()
        .zip(&properties.values[range])
        .map(|(key, value)| (PropertyKeyId(*key), value))
}

impl std::fmt::Debug for EmbeddedGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedGraph")
            .field("nodes", &self.node_count())
            .field("edges", &self.edge_count())
            .field("relations", &self.relation_count())
            .field("labels", &self.label_count())
            .finish()
    }
}
