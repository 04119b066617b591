//! The read-only view of a property graph that the executor runs on. Small on purpose:
//! any backend that can list nodes by label and edges by type, and read properties, can
//! run Cypher through it.

use kgmesh_schemas::graph::{GraphSchema, LabelSchema, RelationSchema, Value};
use kgmesh_schemas::NodeId;

/// One stored relationship, as the executor sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeRef {
    /// Unique among the graph's relationships.
    pub id: u64,
    pub start: u32,
    pub end: u32,
    pub rel_type: u32,
}

pub trait PropertyGraph: Send + Sync {
    /// Node indexes run from 0 to `node_count() - 1`.
    fn node_count(&self) -> usize;
    fn label_id(&self, name: &str) -> Option<u32>;
    fn label_name(&self, label: u32) -> &str;
    fn rel_type_id(&self, name: &str) -> Option<u32>;
    fn rel_type_name(&self, rel_type: u32) -> &str;
    fn nodes_with_label(&self, label: u32) -> &[u32];
    fn node_labels(&self, node: u32) -> Vec<u32>;
    fn has_label(&self, node: u32, label: u32) -> bool;
    fn node_property(&self, node: u32, key: &str) -> Option<Value>;
    fn node_properties(&self, node: u32) -> Vec<(String, Value)>;
    /// Appends `node`'s outgoing (or incoming) relationships, of one type or all.
    fn edges(&self, node: u32, outgoing: bool, rel_type: Option<u32>, out: &mut Vec<EdgeRef>);
    fn edge_property(&self, edge: &EdgeRef, key: &str) -> Option<Value>;
    fn edge_properties(&self, edge: &EdgeRef) -> Vec<(String, Value)>;
    /// Whether any node or relationship has this property key. Schemas are sampled on
    /// large graphs; the validator asks this before calling a key unknown.
    fn property_key_exists(&self, _key: &str) -> bool {
        false
    }
    /// Every property key some node or relationship has, sorted (empty where the graph
    /// cannot list them). The validator checks keys against it when the schema has no
    /// labels to hold node keys (a graph of triples).
    fn property_keys(&self) -> Vec<String> {
        Vec::new()
    }
    /// The id a node has outside the executor (what `id(n)` returns).
    fn node_id(&self, node: u32) -> NodeId {
        NodeId(u64::from(node))
    }
    /// The reverse of [`PropertyGraph::node_id`].
    fn node_index(&self, id: NodeId) -> Option<u32> {
        u32::try_from(id.0)
            .ok()
            .filter(|node| (*node as usize) < self.node_count())
    }
}

/// A plain in-memory [`PropertyGraph`] for tests, examples and small graphs.
#[derive(Debug, Clone, Default)]
pub struct MemoryGraph {
    labels: Vec<String>,
    rel_types: Vec<String>,
    node_labels: Vec<Vec<u32>>,
    node_props: Vec<Vec<(String, Value)>>,
    by_label: Vec<Vec<u32>>,
    edges: Vec<EdgeRef>,
    edge_props: Vec<Vec<(String, Value)>>,
    out_adj: Vec<Vec<u32>>,
    in_adj: Vec<Vec<u32>>,
}

impl MemoryGraph {
    pub fn new() -> Self {
        Self::default()
    }

    fn intern(names: &mut Vec<String>, name: &str) -> u32 {
        match names.iter().position(|existing| existing == name) {
            Some(index) => index as u32,
            None => {
                names.push(name.to_string());
                (names.len() - 1) as u32
            }
        }
    }

    /// Adds a node; `Value::Null` properties are not stored (as in openCypher).
    pub fn add_node(&mut self, labels: &[&str], properties: Vec<(String, Value)>) -> u32 {
        let node = self.node_labels.len() as u32;
        let mut ids = Vec::new();
        for label in labels {
            let id = Self::intern(&mut self.labels, label);
            if self.by_label.len() <= id as usize {
                self.by_label.resize(id as usize + 1, Vec::new());
            }
            if !ids.contains(&id) {
                ids.push(id);
                self.by_label[id as usize].push(node);
            }
        }
        self.node_labels.push(ids);
        self.node_props.push(
            properties
                .into_iter()
                .filter(|(_, value)| *value != Value::Null)
                .collect(),
        );
        self.out_adj.push(Vec::new());
        self.in_adj.push(Vec::new());
        node
    }

    /// Adds a relationship between existing nodes; `None` when one of them does not exist.
    pub fn add_edge(
        &mut self,
        start: u32,
        rel_type: &str,
        end: u32,
        properties: Vec<(String, Value)>,
    ) -> Option<u64> {
        if start as usize >= self.node_labels.len() || end as usize >= self.node_labels.len() {
            return None;
        }
        let rel_type = Self::intern(&mut self.rel_types, rel_type);
        let id = self.edges.len() as u64;
        self.edges.push(EdgeRef {
            id,
            start,
            end,
            rel_type,
        });
        self.edge_props.push(
            properties
                .into_iter()
                .filter(|(_, value)| *value != Value::Null)
                .collect(),
        );
        self.out_adj[start as usize].push(id as u32);
        self.in_adj[end as usize].push(id as u32);
        Some(id)
    }

    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Labels with their property keys, relationship types with their endpoint labels.
    pub fn schema(&self) -> GraphSchema {
        let mut labels = Vec::new();
        for (id, name) in self.labels.iter().enumerate() {
            let mut keys: Vec<String> = self.by_label[id]
                .iter()
                .flat_map(|node| {
                    self.node_props[*node as usize]
                        .iter()
                        .map(|(key, _)| key.clone())
                })
                .collect();
            keys.sort();
            keys.dedup();
            labels.push(LabelSchema {
                name: name.clone(),
                count: self.by_label[id].len() as u64,
                property_keys: keys,
            });
        }
        let mut relations = Vec::new();
        for (id, name) in self.rel_types.iter().enumerate() {
            let mut endpoints: Vec<(String, String, u64)> = Vec::new();
            let mut count = 0;
            for edge in self.edges.iter().filter(|edge| edge.rel_type == id as u32) {
                count += 1;
                for head in &self.node_labels[edge.start as usize] {
                    for tail in &self.node_labels[edge.end as usize] {
                        let head = &self.labels[*head as usize];
                        let tail = &self.labels[*tail as usize];
                        match endpoints
                            .iter_mut()
                            .find(|(h, t, _)| h == head && t == tail)
                        {
                            Some(entry) => entry.2 += 1,
                            None => endpoints.push((head.clone(), tail.clone(), 1)),
                        }
                    }
                }
            }
            endpoints.sort_by_key(|entry| std::cmp::Reverse(entry.2));
            relations.push(RelationSchema {
                name: name.clone(),
                count,
                endpoints,
                examples: Vec::new(),
            });
        }
        let mut relationship_property_keys: Vec<String> = self
            .edge_props
            .iter()
            .flat_map(|props| props.iter().map(|(key, _)| key.clone()))
            .collect();
        relationship_property_keys.sort();
        relationship_property_keys.dedup();
        GraphSchema {
            labels,
            relations,
            relationship_property_keys,
            node_count: self.node_labels.len() as u64,
            edge_count: self.edges.len() as u64,
        }
    }
}

/// The id of `name` among `names` (its position).
fn id_of(names: &[String], name: &str) -> Option<u32> {
    names
        .iter()
        .position(|candidate| candidate == name)
        .map(|index| index as u32)
}

/// The name with id `id` among `names`; empty for an unknown id.
fn name_of(names: &[String], id: u32) -> &str {
    names.get(id as usize).map(String::as_str).unwrap_or("")
}

impl PropertyGraph for MemoryGraph {
    fn node_count(&self) -> usize {
        self.node_labels.len()
    }

    fn label_id(&self, name: &str) -> Option<u32> {
        id_of(&self.labels, name)
    }

    fn label_name(&self, label: u32) -> &str {
        name_of(&self.labels, label)
    }

    fn rel_type_id(&self, name: &str) -> Option<u32> {
        id_of(&self.rel_types, name)
    }

    fn rel_type_name(&self, rel_type: u32) -> &str {
        name_of(&self.rel_types, rel_type)
    }

    fn nodes_with_label(&self, label: u32) -> &[u32] {
        self.by_label
            .get(label as usize)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    fn node_labels(&self, node: u32) -> Vec<u32> {
        self.node_labels
            .get(node as usize)
            .cloned()
            .unwrap_or_default()
    }

    fn has_label(&self, node: u32, label: u32) -> bool {
        self.node_labels
            .get(node as usize)
            .is_some_and(|labels| labels.contains(&label))
    }

    fn node_property(&self, node: u32, key: &str) -> Option<Value> {
        self.node_props
            .get(node as usize)?
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.clone())
    }

    fn node_properties(&self, node: u32) -> Vec<(String, Value)> {
        self.node_props
            .get(node as usize)
            .cloned()
            .unwrap_or_default()
    }

    fn edges(&self, node: u32, outgoing: bool, rel_type: Option<u32>, out: &mut Vec<EdgeRef>) {
        let adjacency = if outgoing {
            &self.out_adj
        } else {
            &self.in_adj
        };
        let Some(list) = adjacency.get(node as usize) else {
            return;
        };
        for edge in list {
            let edge = self.edges[*edge as usize];
            if rel_type.is_none_or(|wanted| wanted == edge.rel_type) {
                out.push(edge);
            }
        }
    }

    fn edge_property(&self, edge: &EdgeRef, key: &str) -> Option<Value> {
        self.edge_props
            .get(edge.id as usize)?
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.clone())
    }

    fn edge_properties(&self, edge: &EdgeRef) -> Vec<(String, Value)> {
        self.edge_props
            .get(edge.id as usize)
            .cloned()
            .unwrap_or_default()
    }

    fn property_key_exists(&self, key: &str) -> bool {
        self.node_props
            .iter()
            .chain(&self.edge_props)
            .any(|props| props.iter().any(|(k, _)| k == key))
    }

    fn property_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self
            .node_props
            .iter()
            .chain(&self.edge_props)
            .flat_map(|props| props.iter().map(|(key, _)| key.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }
}
