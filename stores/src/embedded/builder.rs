//! Builds an [`EmbeddedGraph`] from nodes and edges added in any order.
//!
//! Loaders add edges as they read them; `finish` sorts once (O(E log E) for the out
//! rows, two counting sorts for the in rows) and builds the name index. Exact duplicate
//! edges without properties are kept once, so reloading the same triples twice does
//! not double the graph.

use std::sync::{Arc, OnceLock};

use kgmesh_schemas::graph::Value;
use rustc_hash::FxHashMap;

use super::{
    column::Column,
    graph::{EdgeId, EmbeddedGraph, GraphData, Interned, LabelId, NodeIdx, Properties, RelationId},
    names::{name_hash, normalize_name},
};

/// Index of an edge while building (not the final [`EdgeId`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildEdge(pub u32);

#[derive(Default)]
pub struct GraphBuilder {
    name_bytes: Vec<u8>,
    name_offsets: Vec<u64>,
    by_name: FxHashMap<Box<str>, NodeIdx>,
    node_labels: Vec<(NodeIdx, u32)>,
    relations: Interned,
    /// Relation name → the relation's own label (an N-Triples predicate's `rdfs:label`).
    relation_labels: FxHashMap<String, String>,
    labels: Interned,
    property_keys: Interned,
    edges: Vec<(NodeIdx, u32, NodeIdx)>,
    node_properties: Vec<(NodeIdx, u32, Value)>,
    edge_properties: Vec<(u32, u32, Value)>,
}

impl GraphBuilder {
    pub fn new() -> Self {
        Self {
            name_offsets: vec![0],
            ..Self::default()
        }
    }

    pub fn node_count(&self) -> usize {
        self.name_offsets.len() - 1
    }

    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// The node named `name`, created when no node has that exact name yet (triple KGs:
    /// the name is the identity).
    pub fn node(&mut self, name: &str) -> NodeIdx {
        if let Some(node) = self.by_name.get(name) {
            return *node;
        }
        let node = self.push_name(name);
        self.by_name.insert(name.into(), node);
        node
    }

    /// A new node, even if another node has the same name (property graphs: two
    /// customers may share a display name; their identity is their key).
    pub fn add_node(&mut self, name: &str) -> NodeIdx {
        self.push_name(name)
    }

    fn push_name(&mut self, name: &str) -> NodeIdx {
        let node = self.node_count() as NodeIdx;
        self.name_bytes.extend_from_slice(name.as_bytes());
        self.name_offsets.push(self.name_bytes.len() as u64);
        node
    }

    pub fn add_label(&mut self, node: NodeIdx, label: &str) {
        let label = self.labels.intern(label);
        self.node_labels.push((node, label));
    }

    /// Gives `node` another display name (what answers and linking use), keeping its
    /// identity: `node(old name)` still finds it while the graph is built. N-Triples
    /// nodes are named by their `rdfs:label` this way, their IRI kept as a property.
    pub fn rename(&mut self, renames: &FxHashMap<NodeIdx, String>) {
        if renames.is_empty() {
            return;
        }
        let mut bytes = Vec::with_capacity(self.name_bytes.len());
        let mut offsets = Vec::with_capacity(self.name_offsets.len());
        offsets.push(0u64);
        for node in 0..self.node_count() {
            match renames.get(&(node as NodeIdx)) {
                Some(name) => bytes.extend_from_slice(name.as_bytes()),
                None => {
                    let start = self.name_offsets[node] as usize;
                    let end = self.name_offsets[node + 1] as usize;
                    bytes.extend_from_slice(&self.name_bytes[start..end]);
                }
            }
            offsets.push(bytes.len() as u64);
        }
        self.name_bytes = bytes;
        self.name_offsets = offsets;
    }

    /// Sets a node property; a later value for the same key wins.
    pub fn set_property(&mut self, node: NodeIdx, key: &str, value: Value) {
        let key = self.property_keys.intern(key);
        self.node_properties.push((node, key, value));
    }

    pub fn add_edge(&mut self, head: NodeIdx, relation: &str, tail: NodeIdx) -> BuildEdge {
        let relation = self.relations.intern(relation);
        let edge = BuildEdge(self.edges.len() as u32);
        self.edges.push((head, relation, tail));
        edge
    }

    /// Whether some edge added so far has relation `name`.
    pub fn has_relation(&self, name: &str) -> bool {
        self.relations.get(name).is_some()
    }

    /// Gives relation `name` its own label, what people and the question scorers read
    /// instead of the name ([`kgmesh_schemas::relation_text`]); the first label wins.
    pub fn set_relation_label(&mut self, name: &str, label: &str) {
        let label = label.trim();
        if !label.is_empty() {
            self.relation_labels
                .entry(name.to_owned())
                .or_insert_with(|| label.to_owned());
        }
    }

    /// Sets a relationship property; a later value for the same key wins.
    pub fn set_edge_property(&mut self, edge: BuildEdge, key: &str, value: Value) {
        let key = self.property_keys.intern(key);
        self.edge_properties.push((edge.0, key, value));
    }

    pub fn finish(self) -> EmbeddedGraph {
        let node_count = self.node_count();

        // ---- out rows: sort by (head, relation, tail), drop plain duplicates --------
        let mut has_properties = vec![false; self.edges.len()];
        for (edge, _, _) in &self.edge_properties {
            has_properties[*edge as usize] = true;
        }
        let mut order: Vec<(NodeIdx, u32, NodeIdx, u32)> = self
            .edges
            .iter()
            .enumerate()
            .map(|(index, (head, relation, tail))| (*head, *relation, *tail, index as u32))
            .collect();
        drop(self.edges);
        order.sort_unstable();
        let mut new_id_of = vec![u32::MAX; order.len()];
        let mut out_offsets = vec![0u32; node_count + 1];
        let mut out_relations: Vec<RelationId> = Vec::with_capacity(order.len());
        let mut out_targets: Vec<u32> = Vec::with_capacity(order.len());
        let mut previous: Option<(NodeIdx, u32, NodeIdx, bool)> = None;
        for (head, relation, tail, original) in order {
            let with_properties = has_properties[original as usize];
            if let Some((p_head, p_relation, p_tail, p_properties)) = previous {
                if (p_head, p_relation, p_tail) == (head, relation, tail)
                    && !p_properties
                    && !with_properties
                {
                    continue;
                }
            }
            previous = Some((head, relation, tail, with_properties));
            new_id_of[original as usize] = out_targets.len() as u32;
            out_offsets[head as usize + 1] += 1;
            out_relations.push(RelationId(relation));
            out_targets.push(tail);
        }
        for node in 0..node_count {
            out_offsets[node + 1] += out_offsets[node];
        }
        let edge_count = out_targets.len();

        // ---- in rows: stable counting sort by relation, then by tail ----------------
        // The out rows are in head order; a stable sort by relation keeps heads sorted
        // within a relation, and a stable sort of that by tail gives (tail, relation, head).
        let mut by_relation = vec![0u32; self.relations.names.len() + 1];
        for relation in &out_relations {
            by_relation[relation.0 as usize + 1] += 1;
        }
        for index in 0..self.relations.names.len() {
            by_relation[index + 1] += by_relation[index];
        }
        let mut relation_order = vec![0u32; edge_count];
        for (edge, relation) in out_relations.iter().enumerate() {
            let slot = &mut by_relation[relation.0 as usize];
            relation_order[*slot as usize] = edge as u32;
            *slot += 1;
        }
        let mut heads = vec![0u32; edge_count];
        for node in 0..node_count {
            for slot in &mut heads[out_offsets[node] as usize..out_offsets[node + 1] as usize] {
                *slot = node as u32;
            }
        }
        let mut in_offsets = vec![0u32; node_count + 1];
        for tail in &out_targets {
            in_offsets[*tail as usize + 1] += 1;
        }
        for node in 0..node_count {
            in_offsets[node + 1] += in_offsets[node];
        }
        let mut cursor = in_offsets.clone();
        let mut in_relations = vec![RelationId(0); edge_count];
        let mut in_sources = vec![0u32; edge_count];
        let mut in_edge_ids = vec![EdgeId(0); edge_count];
        for edge in relation_order {
            let tail = out_targets[edge as usize] as usize;
            let slot = cursor[tail] as usize;
            cursor[tail] += 1;
            in_relations[slot] = out_relations[edge as usize];
            in_sources[slot] = heads[edge as usize];
            in_edge_ids[slot] = EdgeId(edge);
        }
        drop(heads);
        drop(cursor);

        // ---- labels ------------------------------------------------------------------
        let mut node_labels = self.node_labels;
        node_labels.sort_unstable();
        node_labels.dedup();
        let (node_label_offsets, node_label_ids, label_node_offsets, label_nodes) =
            if node_labels.is_empty() {
                (Vec::new(), Vec::new(), Vec::new(), Vec::new())
            } else {
                let mut node_label_offsets = vec![0u32; node_count + 1];
                let mut label_node_offsets = vec![0u32; self.labels.names.len() + 1];
                for (node, label) in &node_labels {
                    node_label_offsets[*node as usize + 1] += 1;
                    label_node_offsets[*label as usize + 1] += 1;
                }
                for node in 0..node_count {
                    node_label_offsets[node + 1] += node_label_offsets[node];
                }
                for label in 0..self.labels.names.len() {
                    label_node_offsets[label + 1] += label_node_offsets[label];
                }
                let mut label_cursor = label_node_offsets.clone();
                let mut label_nodes = vec![0u32; node_labels.len()];
                let mut ids = Vec::with_capacity(node_labels.len());
                // Sorted by node, so each label's node list comes out sorted too.
                for (node, label) in &node_labels {
                    ids.push(LabelId(*label));
                    let slot = &mut label_cursor[*label as usize];
                    label_nodes[*slot as usize] = *node;
                    *slot += 1;
                }
                (node_label_offsets, ids, label_node_offsets, label_nodes)
            };

        // ---- name index ----------------------------------------------------------------
        let names = |node: usize| -> &str {
            let start = self.name_offsets[node] as usize;
            let end = self.name_offsets[node + 1] as usize;
            std::str::from_utf8(&self.name_bytes[start..end]).unwrap_or("")
        };
        let mut exact: Vec<(u64, u32)> = (0..node_count)
            .map(|node| (name_hash(names(node)), node as u32))
            .collect();
        exact.sort_unstable();
        let mut normalized: Vec<(u64, u32)> = (0..node_count)
            .map(|node| (name_hash(&normalize_name(names(node))), node as u32))
            .collect();
        normalized.sort_unstable();
        let (exact_hashes, exact_nodes): (Vec<u64>, Vec<u32>) = exact.into_iter().unzip();
        let (normalized_hashes, normalized_nodes): (Vec<u64>, Vec<u32>) =
            normalized.into_iter().unzip();

        // ---- properties ------------------------------------------------------------------
        let node_properties = build_properties(self.node_properties, node_count);
        let edge_properties = build_properties(
            self.edge_properties
                .into_iter()
                .filter_map(|(edge, key, value)| {
                    let new_id = new_id_of[edge as usize];
                    (new_id != u32::MAX).then_some((new_id, key, value))
                })
                .collect(),
            edge_count,
        );

        EmbeddedGraph {
            data: Arc::new(GraphData {
                name_offsets: Column::from(self.name_offsets),
                name_bytes: Column::from(self.name_bytes),
                node_label_offsets: Column::from(node_label_offsets),
                node_labels: Column::from(node_label_ids),
                label_node_offsets: Column::from(label_node_offsets),
                label_nodes: Column::from(label_nodes),
                out_offsets: Column::from(out_offsets),
                out_relations: Column::from(out_relations),
                out_targets: Column::from(out_targets),
                in_offsets: Column::from(in_offsets),
                in_relations: Column::from(in_relations),
                in_sources: Column::from(in_sources),
                in_edge_ids: Column::from(in_edge_ids),
                exact_hashes: Column::from(exact_hashes),
                exact_nodes: Column::from(exact_nodes),
                normalized_hashes: Column::from(normalized_hashes),
                normalized_nodes: Column::from(normalized_nodes),
                relations: self.relations,
                relation_labels: {
                    let mut labels: Vec<(String, String)> =
                        self.relation_labels.into_iter().collect();
                    labels.sort_unstable();
                    labels
                },
                labels: self.labels,
                property_keys: self.property_keys,
                node_properties,
                edge_properties,
                schema_cache: OnceLock::new(),
            }),
        }
    }
}

/// Sorts `(owner, key, value)` into a CSR; for a repeated key the last value set wins.
fn build_properties(mut entries: Vec<(u32, u32, Value)>, owner_count: usize) -> Properties {
    if entries.is_empty() {
        return Properties::default();
    }
    // Stable sort keeps insertion order among equal (owner, key): the last one wins.
    entries.sort_by_key(|(owner, key, _)| (*owner, *key));
    let mut offsets = vec![0u32; owner_count + 1];
    let mut keys = Vec::with_capacity(entries.len());
    let mut values: Vec<Value> = Vec::with_capacity(entries.len());
    let mut last: Option<(u32, u32)> = None;
    for (owner, key, value) in entries {
        if last == Some((owner, key)) {
            if let Some(previous) = values.last_mut() {
                *previous = value;
            }
            continue;
        }
        last = Some((owner, key));
        offsets[owner as usize + 1] += 1;
        keys.push(key);
        values.push(value);
    }
    for owner in 0..owner_count {
        offsets[owner + 1] += offsets[owner];
    }
    Properties {
        offsets,
        keys,
        values,
    }
}
