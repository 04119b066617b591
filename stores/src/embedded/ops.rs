//! The batched graph operations of [`GraphStore`](crate::GraphStore), as plain
//! synchronous functions over an [`EmbeddedGraph`]. The async trait impl runs the
//! potentially large ones on the blocking pool.

use std::{
    collections::{hash_map::Entry, HashMap},
    sync::Arc,
};

use kgmesh_schemas::{
    graph::{
        Direction, Entity, GraphSchema, LabelSchema, Metapath, Path, PathStep, RelationSchema,
        Triple,
    },
    NodeId,
};
use rustc_hash::{FxHashMap, FxHashSet};

use super::graph::{EmbeddedGraph, NodeIdx, RelationId};
use crate::{
    common::{
        check_depth, check_metapath, level_end, node_not_found, order_schema, previous_node,
        ranked_endpoints,
    },
    NameMatch, NameTable, NeighborEdge, NeighborEdges, NeighborQuery, Neighborhood, PathLimits,
    Star, StoreResult,
};

/// Endpoint label pairs are sampled from at most this many edges per relation.
const SCHEMA_SAMPLE_EDGES: usize = 10_000;
const SCHEMA_EXAMPLES: usize = 3;
/// Label name reported for nodes without a label (plain triple KGs).
const NO_LABEL: &str = "";

impl EmbeddedGraph {
    pub(crate) fn indices(&self, ids: &[NodeId]) -> StoreResult<Vec<NodeIdx>> {
        ids.iter()
            .map(|id| self.node_index(*id).ok_or_else(|| node_not_found(*id)))
            .collect()
    }

    fn triple(&self, head: NodeIdx, relation: RelationId, tail: NodeIdx) -> Triple {
        Triple {
            head: self.entity(head),
            relation: self.relation_name(relation).to_owned(),
            tail: self.entity(tail),
        }
    }

    /// The path from `start` along `steps`, each `(relation, inverse, node reached)`.
    fn path<'s>(
        &self,
        start: NodeIdx,
        steps: impl Iterator<Item = &'s (RelationId, bool, NodeIdx)>,
    ) -> Path {
        Path {
            start: self.entity(start),
            steps: steps
                .map(|(relation, inverse, node)| PathStep {
                    relation: self.relation_name(*relation).to_owned(),
                    inverse: *inverse,
                    node: self.entity(*node),
                })
                .collect(),
        }
    }

    /// Names → nodes (see [`GraphStore::resolve`](crate::GraphStore::resolve)).
    pub fn resolve_sync(&self, names: &[String], mode: NameMatch) -> Vec<Vec<Entity>> {
        names
            .iter()
            .map(|name| {
                let nodes = match mode {
                    NameMatch::Exact => self.lookup_exact(name),
                    NameMatch::Normalized => self.lookup_normalized(name),
                };
                nodes.into_iter().map(|node| self.entity(node)).collect()
            })
            .collect()
    }

    /// One hop from each frontier node (see [`GraphStore::neighbors`](crate::GraphStore::neighbors)).
    /// Unknown relation names match nothing; unknown node ids are an error.
    pub fn neighbors_sync(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<Neighborhood> {
        // Ids first, names after: the triple list is then allocated once at its final size.
        Ok(self
            .neighbor_edges_sync(frontier, query)?
            .into_neighborhood())
    }

    /// One hop from each frontier node as ids, names left in the graph (see
    /// [`GraphStore::neighbor_edges`](crate::GraphStore::neighbor_edges)).
    pub fn neighbor_edges_sync(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<NeighborEdges> {
        let nodes = self.indices(frontier)?;
        let relation_filter: Option<Vec<RelationId>> = query.relations.as_ref().map(|names| {
            let mut ids: Vec<RelationId> = names
                .iter()
                .filter_map(|name| self.relation_id(name))
                .collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        });
        let directions: &[bool] = match query.direction {
            Direction::Out => &[true],
            Direction::In => &[false],
            Direction::Both => &[true, false],
        };
        // Exact upper bound of the result, so the edge list never grows mid-call.
        let capacity: usize = nodes
            .iter()
            .map(|node| {
                let degree = directions
                    .iter()
                    .map(|outgoing| match (&relation_filter, *outgoing) {
                        (None, true) => self.out_degree(*node),
                        (None, false) => self.in_degree(*node),
                        (Some(relations), true) => relations
                            .iter()
                            .map(|relation| self.out_neighbors(*node, *relation).len())
                            .sum(),
                        (Some(relations), false) => relations
                            .iter()
                            .map(|relation| self.in_neighbors(*node, *relation).len())
                            .sum(),
                    })
                    .sum::<usize>();
                degree.min(query.fanout_cap)
            })
            .sum();
        let mut edges = Vec::with_capacity(capacity);
        let mut truncated_nodes = Vec::new();
        let mut seen_frontier =
            FxHashSet::with_capacity_and_hasher(nodes.len(), Default::default());
        for node in nodes {
            if !seen_frontier.insert(node) {
                continue;
            }
            let mut budget = query.fanout_cap;
            let mut truncated = false;
            'directions: for outgoing in directions {
                let mut emit = |relation: RelationId, other: NodeIdx| -> bool {
                    if budget == 0 {
                        truncated = true;
                        return false;
                    }
                    budget -= 1;
                    let (head, tail) = if *outgoing {
                        (node, other)
                    } else {
                        (other, node)
                    };
                    edges.push(NeighborEdge {
                        head: self.node_id(head),
                        relation: relation.0,
                        tail: self.node_id(tail),
                    });
                    true
                };
                match &relation_filter {
                    None => {
                        let edges = if *outgoing {
                            self.out_edges(node)
                        } else {
                            self.in_edges(node)
                        };
                        for (relation, other) in edges.relations.iter().zip(edges.nodes) {
                            if !emit(*relation, *other) {
                                break 'directions;
                            }
                        }
                    }
                    Some(relations) => {
                        for relation in relations {
                            let others = if *outgoing {
                                self.out_neighbors(node, *relation)
                            } else {
                                self.in_neighbors(node, *relation)
                            };
                            for other in others {
                                if !emit(*relation, *other) {
                                    break 'directions;
                                }
                            }
                        }
                    }
                }
            }
            if truncated {
                truncated_nodes.push(self.node_id(node));
            }
        }
        Ok(NeighborEdges {
            edges,
            truncated: truncated_nodes,
            names: Arc::new(self.clone()),
        })
    }

    /// Paths from `sources` along each metapath (see
    /// [`GraphStore::follow_metapaths`](crate::GraphStore::follow_metapaths)).
    pub fn follow_metapaths_sync(
        &self,
        sources: &[NodeId],
        metapaths: &[Metapath],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        check_depth(limits.max_depth)?;
        let sources = self.indices(sources)?;
        let mut paths = Vec::new();
        for metapath in metapaths {
            check_metapath(metapath, limits.max_depth)?;
            // A relation the graph lacks makes the metapath match nothing.
            let Some(steps) = metapath
                .steps
                .iter()
                .map(|step| Some((self.relation_id(&step.relation)?, step.direction)))
                .collect::<Option<Vec<_>>>()
            else {
                continue;
            };
            for source in &sources {
                let mut trail = Vec::with_capacity(steps.len());
                self.walk(*source, &steps, &mut trail, limits, &mut paths);
                if paths.len() >= limits.max_paths {
                    return Ok(paths);
                }
            }
        }
        Ok(paths)
    }

    fn walk(
        &self,
        start: NodeIdx,
        steps: &[(RelationId, Direction)],
        trail: &mut Vec<(RelationId, bool, NodeIdx)>,
        limits: &PathLimits,
        paths: &mut Vec<Path>,
    ) {
        if paths.len() >= limits.max_paths {
            return;
        }
        let here = trail.last().map_or(start, |(_, _, node)| *node);
        let Some(((relation, direction), rest)) = steps.split_first() else {
            paths.push(self.path(start, trail.iter()));
            return;
        };
        let forward: &[NodeIdx] = match direction {
            Direction::Out | Direction::Both => self.out_neighbors(here, *relation),
            Direction::In => &[],
        };
        let backward: &[NodeIdx] = match direction {
            Direction::In | Direction::Both => self.in_neighbors(here, *relation),
            Direction::Out => &[],
        };
        let candidates = forward
            .iter()
            .map(|node| (*node, false))
            .chain(backward.iter().map(|node| (*node, true)))
            .take(limits.fanout_cap);
        // The node the last step came from: the walk never turns straight back over
        // the edge it just walked (nodes and edges may otherwise repeat).
        let previous = previous_node(start, trail, |(_, _, node)| *node);
        for (next, inverse) in candidates {
            if let (Some(previous), Some((last_relation, last_inverse, _))) =
                (previous, trail.last())
            {
                if next == previous && last_relation == relation && *last_inverse != inverse {
                    continue;
                }
            }
            trail.push((*relation, inverse, next));
            self.walk(start, rest, trail, limits, paths);
            trail.pop();
            if paths.len() >= limits.max_paths {
                return;
            }
        }
    }

    /// Shortest paths between two node sets, edges usable either way (see
    /// [`GraphStore::shortest_paths`](crate::GraphStore::shortest_paths)).
    ///
    /// Breadth-first from all sources at once; stops at the first depth where a target
    /// is reached and enumerates up to `max_paths` of the paths of that length.
    ///
    /// Nodes first met at the deepest allowed level are never expanded, so only the
    /// targets among them are recorded: that level is by far the largest (up to
    /// `fanout_cap` times the one before), and recording every node of it was most of
    /// the cost of a search on a large graph.
    pub fn shortest_paths_sync(
        &self,
        sources: &[NodeId],
        targets: &[NodeId],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        check_depth(limits.max_depth)?;
        let sources = self.indices(sources)?;
        let targets: FxHashSet<NodeIdx> = self.indices(targets)?.into_iter().collect();
        if limits.max_paths == 0 {
            return Ok(Vec::new());
        }
        // Zero-length paths: a node in both sets.
        let mut paths: Vec<Path> = Vec::new();
        for source in &sources {
            if targets.contains(source) && paths.len() < limits.max_paths {
                paths.push(Path {
                    start: self.entity(*source),
                    steps: Vec::new(),
                });
            }
        }
        if !paths.is_empty() {
            return Ok(paths);
        }
        // Every way BFS reached a node at its own depth, in discovery order:
        // (node, parent, relation, inverse). Grouped by node after the search.
        let mut parents: Vec<(NodeIdx, NodeIdx, RelationId, bool)> = Vec::new();
        let mut depth_of: FxHashMap<NodeIdx, u8> = FxHashMap::default();
        let mut frontier: Vec<NodeIdx> = Vec::new();
        for source in &sources {
            if depth_of.insert(*source, 0).is_none() {
                frontier.push(*source);
            }
        }
        let mut reached: Vec<NodeIdx> = Vec::new();
        for depth in 1..=limits.max_depth {
            let deepest = depth == limits.max_depth;
            let mut next_frontier = Vec::new();
            for node in &frontier {
                let out = self.out_edges(*node);
                let inn = self.in_edges(*node);
                let edges = out
                    .relations
                    .iter()
                    .zip(out.nodes)
                    .map(|(relation, other)| (*relation, *other, false))
                    .chain(
                        inn.relations
                            .iter()
                            .zip(inn.nodes)
                            .map(|(relation, other)| (*relation, *other, true)),
                    )
                    .take(limits.fanout_cap);
                for (relation, other, inverse) in edges {
                    if deepest && !targets.contains(&other) {
                        continue;
                    }
                    match depth_of.entry(other) {
                        Entry::Occupied(known) if *known.get() < depth => continue,
                        Entry::Occupied(_) => {}
                        Entry::Vacant(slot) => {
                            slot.insert(depth);
                            next_frontier.push(other);
                        }
                    }
                    parents.push((other, *node, relation, inverse));
                }
            }
            if let Some(found) = level_end(&next_frontier, |node| targets.contains(node)) {
                reached = found;
                break;
            }
            frontier = next_frontier;
        }
        // Stable: each node's parents stay in discovery order.
        parents.sort_by_key(|(node, ..)| *node);
        reached.sort_unstable();
        for target in reached {
            let mut suffix = Vec::new();
            self.unwind(
                target,
                &parents,
                &depth_of,
                &mut suffix,
                limits.max_paths,
                &mut paths,
            );
            if paths.len() >= limits.max_paths {
                break;
            }
        }
        Ok(paths)
    }

    /// Enumerates the BFS parent chains that end at `node`, building paths backwards.
    fn unwind(
        &self,
        node: NodeIdx,
        parents: &[(NodeIdx, NodeIdx, RelationId, bool)],
        depth_of: &FxHashMap<NodeIdx, u8>,
        suffix: &mut Vec<(RelationId, bool, NodeIdx)>,
        max_paths: usize,
        paths: &mut Vec<Path>,
    ) {
        if paths.len() >= max_paths {
            return;
        }
        if depth_of.get(&node) == Some(&0) {
            paths.push(self.path(node, suffix.iter().rev()));
            return;
        }
        let start = parents.partition_point(|(child, ..)| *child < node);
        let end = start + parents[start..].partition_point(|(child, ..)| *child == node);
        let depth = depth_of.get(&node).copied().unwrap_or(0);
        for (_, parent, relation, inverse) in &parents[start..end] {
            // Only parents one level up lie on a shortest path.
            if depth_of.get(parent).map(|d| d + 1) != Some(depth) {
                continue;
            }
            suffix.push((*relation, *inverse, node));
            self.unwind(*parent, parents, depth_of, suffix, max_paths, paths);
            suffix.pop();
            if paths.len() >= max_paths {
                return;
            }
        }
    }

    /// `count` pseudo-random nodes (deterministic in `seed`) with up to
    /// `max_neighbors` of their edges, out-edges first.
    pub fn sample_stars_sync(&self, count: usize, max_neighbors: usize, seed: u64) -> Vec<Star> {
        let node_count = self.node_count();
        if node_count == 0 {
            return Vec::new();
        }
        let mut state = seed;
        let mut chosen = FxHashSet::default();
        let mut stars = Vec::new();
        let wanted = count.min(node_count);
        let mut attempts = 0usize;
        while stars.len() < wanted && attempts < wanted.saturating_mul(20) + 100 {
            attempts += 1;
            let node = (splitmix64(&mut state) % node_count as u64) as NodeIdx;
            if !chosen.insert(node) {
                continue;
            }
            let mut triples = Vec::new();
            let out = self.out_edges(node);
            for (relation, tail) in out.relations.iter().zip(out.nodes) {
                if triples.len() >= max_neighbors {
                    break;
                }
                triples.push(self.triple(node, *relation, *tail));
            }
            let inn = self.in_edges(node);
            for (relation, head) in inn.relations.iter().zip(inn.nodes) {
                if triples.len() >= max_neighbors {
                    break;
                }
                triples.push(self.triple(*head, *relation, node));
            }
            stars.push(Star {
                center: self.entity(node),
                triples,
            });
        }
        stars
    }

    /// Names of nodes in id order after `after` (see
    /// [`GraphStore::scan_names`](crate::GraphStore::scan_names)).
    pub fn scan_names_sync(&self, after: Option<NodeId>, limit: usize) -> Vec<Entity> {
        let start = match after {
            None => 0u64,
            Some(id) => id.0.saturating_add(1),
        };
        let end = (self.node_count() as u64).min(start.saturating_add(limit as u64));
        (start..end)
            .map(|node| self.entity(node as NodeIdx))
            .collect()
    }

    /// The graph's schema, computed once and cached.
    pub fn schema_sync(&self) -> Arc<GraphSchema> {
        self.data
            .schema_cache
            .get_or_init(|| Arc::new(self.compute_schema()))
            .clone()
    }

    fn compute_schema(&self) -> GraphSchema {
        let mut labels = Vec::new();
        for (label, name) in self.all_labels() {
            let nodes = self.nodes_with_label(label);
            let mut keys: Vec<u32> = Vec::new();
            for node in nodes.iter().take(SCHEMA_SAMPLE_EDGES) {
                keys.extend(self.node_properties(*node).map(|(key, _)| key.0));
            }
            keys.sort_unstable();
            keys.dedup();
            let mut property_keys: Vec<String> = keys
                .into_iter()
                .map(|key| {
                    self.property_key_name(super::graph::PropertyKeyId(key))
                        .to_owned()
                })
                .collect();
            // Every node answers to `name` in Cypher (its name when no property is
            // called that), so a query checked against this schema may read it.
            if !property_keys.iter().any(|key| key == "name") {
                property_keys.insert(0, "name".to_owned());
            }
            labels.push(LabelSchema {
                name: name.to_owned(),
                count: nodes.len() as u64,
                property_keys,
            });
        }

        let counts = self.relation_edge_counts();
        // Sample edges per relation by walking nodes in a fixed stride.
        let mut endpoint_counts: Vec<HashMap<(String, String), u64>> =
            vec![HashMap::new(); self.relation_count()];
        let mut sampled = vec![0usize; self.relation_count()];
        let mut examples: Vec<Vec<String>> = vec![Vec::new(); self.relation_count()];
        let mut edge_property_keys: Vec<u32> = Vec::new();
        let node_count = self.node_count();
        let stride = (node_count / 200_000).max(1);
        for node in (0..node_count).step_by(stride) {
            let node = node as NodeIdx;
            let edges = self.out_edges(node);
            for (relation, tail, edge) in edges.iter() {
                let index = relation.0 as usize;
                if sampled[index] >= SCHEMA_SAMPLE_EDGES {
                    continue;
                }
                sampled[index] += 1;
                let head_label = self.first_label_name(node);
                let tail_label = self.first_label_name(tail);
                *endpoint_counts[index]
                    .entry((head_label.to_owned(), tail_label.to_owned()))
                    .or_insert(0) += 1;
                if examples[index].len() < SCHEMA_EXAMPLES {
                    examples[index].push(format!(
                        "{} -[{}]-> {}",
                        self.name(node),
                        self.relation_name(relation),
                        self.name(tail)
                    ));
                }
                edge_property_keys.extend(self.edge_properties(edge).map(|(key, _)| key.0));
            }
        }
        edge_property_keys.sort_unstable();
        edge_property_keys.dedup();
        let mut relations: Vec<RelationSchema> = self
            .relations()
            .map(|(relation, name)| {
                let index = relation.0 as usize;
                RelationSchema {
                    name: name.to_owned(),
                    count: counts[index],
                    endpoints: ranked_endpoints(std::mem::take(&mut endpoint_counts[index])),
                    examples: std::mem::take(&mut examples[index]),
                }
            })
            .collect();
        order_schema(&mut labels, &mut relations);
        GraphSchema {
            labels,
            relations,
            relationship_property_keys: edge_property_keys
                .into_iter()
                .map(|key| {
                    self.property_key_name(super::graph::PropertyKeyId(key))
                        .to_owned()
                })
                .collect(),
            node_count: node_count as u64,
            edge_count: self.edge_count() as u64,
        }
    }

    fn first_label_name(&self, node: NodeIdx) -> &str {
        self.labels(node)
            .first()
            .map_or(NO_LABEL, |label| self.label_name(*label))
    }
}

impl NameTable for EmbeddedGraph {
    fn node_name(&self, id: NodeId) -> Option<&str> {
        self.node_index(id).map(|node| self.name(node))
    }

    fn relation_name(&self, relation: u32) -> Option<&str> {
        (relation < self.relation_count() as u32)
            .then(|| EmbeddedGraph::relation_name(self, RelationId(relation)))
    }
}

/// A tiny deterministic generator (SplitMix64): sampling must be repeatable per seed.
pub(crate) fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
