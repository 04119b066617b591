//! Top-k subgraph search by graph semantic distance (SimGRAG §5, Algorithm 1 with the
//! optimizations of §5.2), over a small graph already read from the store.
//!
//! A *match* maps every node of a connected pattern to a graph node and every pattern
//! edge to a distinct graph edge between the mapped ends, in either stored direction
//! (the paper's structure ignores direction). Two pattern nodes may map to one graph
//! node, as in the authors' code: "X's son's mother" is X by way of two different
//! edges; but no graph edge serves twice, so "films with the same director as X" does
//! not come back to X over the edge it left by. Its distance is the sum of the node
//! distances of the known pattern nodes and the relation distances of the pattern edges
//! (paper Eq. 2); unknown nodes and relations contribute zero (Eq. 3).
//!
//! The search starts at the known node with the fewest candidates, maps the pattern's
//! edges in breadth-first order from it, tries the cheapest extensions first, and prunes
//! a partial match whose lower bound (the mapped distances plus the smallest possible
//! distance of everything not yet mapped, Eq. 11) cannot beat the k-th best match found.
//! The property tests hold it to the top-k of an enumeration of every mapping.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{graph::Entity, NodeId};

/// One stored edge seen from one of its ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalEdge {
    /// Index into [`LocalGraph::relations`].
    pub relation: u32,
    pub other: NodeId,
    /// The stored edge points from `other` to this node.
    pub inverse: bool,
}

/// The part of the graph the search may use: the edges read around the pattern's known
/// nodes, with the entities' names.
#[derive(Debug, Clone, Default)]
pub struct LocalGraph {
    adjacency: HashMap<NodeId, Vec<LocalEdge>>,
    entities: HashMap<NodeId, Entity>,
    relations: Vec<String>,
    relation_ids: HashMap<String, u32>,
    edges: HashSet<(NodeId, u32, NodeId)>,
}

impl LocalGraph {
    pub fn new() -> Self {
        Self::default()
    }

    /// The id of relation `name`, interned on first sight.
    pub fn relation_id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.relation_ids.get(name) {
            return id;
        }
        let id = self.relations.len() as u32;
        self.relations.push(name.to_owned());
        self.relation_ids.insert(name.to_owned(), id);
        id
    }

    pub fn relations(&self) -> &[String] {
        &self.relations
    }

    /// Adds the stored edge `head -relation-> tail` (once, however often it is added).
    /// Returns whether it was new.
    pub fn add(&mut self, head: &Entity, relation: &str, tail: &Entity) -> bool {
        let relation = self.relation_id(relation);
        if !self.edges.insert((head.id, relation, tail.id)) {
            return false;
        }
        self.entities.entry(head.id).or_insert_with(|| head.clone());
        self.entities.entry(tail.id).or_insert_with(|| tail.clone());
        self.adjacency.entry(head.id).or_default().push(LocalEdge {
            relation,
            other: tail.id,
            inverse: false,
        });
        if head.id != tail.id {
            self.adjacency.entry(tail.id).or_default().push(LocalEdge {
                relation,
                other: head.id,
                inverse: true,
            });
        }
        true
    }

    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Whether the stored edge `head -relation-> tail` was added.
    pub fn has_edge(&self, head: NodeId, relation: &str, tail: NodeId) -> bool {
        self.relation_ids
            .get(relation)
            .is_some_and(|&r| self.edges.contains(&(head, r, tail)))
    }

    /// Every node with an edge.
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.adjacency.keys().copied()
    }

    pub fn entity(&self, id: NodeId) -> Option<&Entity> {
        self.entities.get(&id)
    }

    fn edges_of(&self, id: NodeId) -> &[LocalEdge] {
        self.adjacency.get(&id).map_or(&[], Vec::as_slice)
    }
}

/// A pattern edge's candidate relations (by relation id of the [`LocalGraph`]) with
/// their distances, or `None`: an unknown relation, any relation at distance zero.
pub type RelationCandidates = Option<HashMap<u32, f32>>;

/// A connected pattern with its distances already computed.
#[derive(Debug, Clone, Default)]
pub struct SearchPattern {
    /// Per pattern node: its candidates with their distances (a known node), or `None`
    /// (an unknown node: any graph node, at distance zero).
    pub nodes: Vec<Option<Vec<(NodeId, f32)>>>,
    /// Per pattern edge: its two pattern nodes and its relation candidates.
    pub edges: Vec<(usize, usize, RelationCandidates)>,
}

/// One match of a pattern.
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// Graph semantic distance (lower is closer).
    pub distance: f32,
    /// The graph node of each pattern node.
    pub nodes: Vec<NodeId>,
    /// The graph edge of each pattern edge: its relation id, and whether the stored edge
    /// points from the second pattern node's image to the first's.
    pub edges: Vec<(u32, bool)>,
}

/// Limits of one search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Matches returned at most.
    pub k: usize,
    /// Partial matches extended at most; the search stops (and says so) beyond it.
    pub max_steps: usize,
}

/// What a search found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchOutcome {
    /// Best first.
    pub matches: Vec<Match>,
    /// Partial matches extended.
    pub steps: usize,
    /// The step limit cut the search short (the matches are the best found so far).
    pub truncated: bool,
}

/// The order in which a search maps the pattern: the start node, then each edge with the
/// end already mapped (`from`) and the one it reaches (`to`).
struct Plan {
    start: usize,
    /// (edge index, mapped end, other end).
    order: Vec<(usize, usize, usize)>,
}

fn plan(pattern: &SearchPattern) -> Option<Plan> {
    let start = (0..pattern.nodes.len())
        .filter_map(|v| pattern.nodes[v].as_ref().map(|c| (c.len(), v)))
        .min()?
        .1;
    let mut mapped = vec![false; pattern.nodes.len()];
    mapped[start] = true;
    let mut queue = std::collections::VecDeque::from([start]);
    let mut done = vec![false; pattern.edges.len()];
    let mut order = Vec::new();
    while let Some(v) = queue.pop_front() {
        for (e, (a, b, _)) in pattern.edges.iter().enumerate() {
            if done[e] || (*a != v && *b != v) {
                continue;
            }
            let other = if *a == v { *b } else { *a };
            done[e] = true;
            order.push((e, v, other));
            if !mapped[other] {
                mapped[other] = true;
                queue.push_back(other);
            }
        }
    }
    // A pattern the caller did not split into connected parts cannot be planned.
    (mapped.iter().all(|&m| m) && done.iter().all(|&d| d)).then_some(Plan { start, order })
}

/// The stored edge behind `local`, seen from `source`.
fn stored(source: NodeId, local: &LocalEdge) -> (NodeId, u32, NodeId) {
    if local.inverse {
        (local.other, local.relation, source)
    } else {
        (source, local.relation, local.other)
    }
}

fn min_distance<I: IntoIterator<Item = f32>>(distances: I) -> f32 {
    distances.into_iter().fold(f32::INFINITY, f32::min)
}

struct State<'a> {
    graph: &'a LocalGraph,
    pattern: &'a SearchPattern,
    order: &'a [(usize, usize, usize)],
    /// Candidate distance of each known node's candidates, for membership tests.
    node_sets: Vec<Option<HashMap<NodeId, f32>>>,
    /// Smallest distance an unmapped node can add (zero for unknown nodes).
    node_floor: Vec<f32>,
    /// Smallest distance the edges from position `i` of `order` on can add.
    edge_floor_from: Vec<f32>,
    assignment: Vec<Option<NodeId>>,
    /// Stored edges (head, relation, tail) the partial match uses.
    used: HashSet<(NodeId, u32, NodeId)>,
    edges: Vec<(u32, bool)>,
    limits: SearchLimits,
    outcome: SearchOutcome,
}

impl State<'_> {
    /// The distance the k-th best match has (a partial match must stay below it).
    fn bound(&self) -> f32 {
        if self.outcome.matches.len() < self.limits.k {
            f32::INFINITY
        } else {
            self.outcome.matches[self.limits.k - 1].distance
        }
    }

    fn record(&mut self, distance: f32) {
        let found = Match {
            distance,
            nodes: self
                .assignment
                .iter()
                .map(|n| n.unwrap_or(NodeId(0)))
                .collect(),
            edges: self.edges.clone(),
        };
        let at = self
            .outcome
            .matches
            .partition_point(|m| m.distance <= distance);
        self.outcome.matches.insert(at, found);
        self.outcome.matches.truncate(self.limits.k);
    }

    /// Lower bound of any completion of the current partial match at `position`.
    fn lower_bound(&self, mapped: f32, position: usize) -> f32 {
        let unmapped: f32 = self
            .assignment
            .iter()
            .zip(&self.node_floor)
            .filter(|(a, _)| a.is_none())
            .map(|(_, floor)| floor)
            .sum();
        mapped + unmapped + self.edge_floor_from[position]
    }

    fn expand(&mut self, position: usize, mapped: f32) {
        if self.outcome.steps >= self.limits.max_steps {
            self.outcome.truncated = true;
            return;
        }
        self.outcome.steps += 1;
        if position == self.order.len() {
            if mapped < self.bound() {
                self.record(mapped);
            }
            return;
        }
        let (edge, from, to) = self.order[position];
        let (a, _, relations) = &self.pattern.edges[edge];
        let Some(source) = self.assignment[from] else {
            return;
        };
        // Every way to map this edge, with the distance it adds.
        let mut options: Vec<(f32, LocalEdge)> = Vec::new();
        for local in self.graph.edges_of(source) {
            let relation_distance = match relations {
                Some(candidates) => match candidates.get(&local.relation) {
                    Some(&d) => d,
                    None => continue,
                },
                None => 0.0,
            };
            if self.used.contains(&stored(source, local)) {
                continue;
            }
            let node_distance = match self.assignment[to] {
                // The edge closes a cycle: it must reach the node already mapped.
                Some(target) if target == local.other => 0.0,
                Some(_) => continue,
                None => match &self.node_sets[to] {
                    Some(set) => match set.get(&local.other) {
                        Some(&d) => d,
                        None => continue,
                    },
                    None => 0.0,
                },
            };
            options.push((relation_distance + node_distance, *local));
        }
        // Greedy order: the cheapest extension first (§5.2).
        options.sort_by(|x, y| x.0.total_cmp(&y.0));
        let newly_mapped = self.assignment[to].is_none();
        for (added, local) in options {
            let next = mapped + added;
            if newly_mapped {
                self.assignment[to] = Some(local.other);
            }
            if self.lower_bound(next, position + 1) >= self.bound() {
                if newly_mapped {
                    self.assignment[to] = None;
                }
                // Options are sorted: no later one can do better.
                break;
            }
            self.used.insert(stored(source, &local));
            // Whether the stored edge points from the image of the edge's second pattern
            // node to its first's.
            let reversed = if from == *a {
                local.inverse
            } else {
                !local.inverse
            };
            self.edges[edge] = (local.relation, reversed);
            self.expand(position + 1, next);
            self.used.remove(&stored(source, &local));
            if newly_mapped {
                self.assignment[to] = None;
            }
            if self.outcome.truncated {
                return;
            }
        }
    }
}

/// The `limits.k` matches of `pattern` in `graph` with the smallest distance, best
/// first. A pattern with no known node, or not connected, has no match.
pub fn top_k(graph: &LocalGraph, pattern: &SearchPattern, limits: SearchLimits) -> SearchOutcome {
    let Some(plan) = plan(pattern) else {
        return SearchOutcome::default();
    };
    if limits.k == 0 {
        return SearchOutcome::default();
    }
    let node_sets: Vec<Option<HashMap<NodeId, f32>>> = pattern
        .nodes
        .iter()
        .map(|c| {
            c.as_ref().map(|c| {
                let mut set = HashMap::new();
                for &(id, d) in c {
                    let best = set.entry(id).or_insert(d);
                    *best = f32::min(*best, d);
                }
                set
            })
        })
        .collect();
    let node_floor = pattern
        .nodes
        .iter()
        .map(|c| {
            c.as_ref()
                .map_or(0.0, |c| min_distance(c.iter().map(|(_, d)| *d)))
        })
        .collect();
    let mut edge_floor_from = vec![0.0; plan.order.len() + 1];
    for i in (0..plan.order.len()).rev() {
        let (edge, _, _) = plan.order[i];
        let floor = pattern.edges[edge]
            .2
            .as_ref()
            .map_or(0.0, |c| min_distance(c.values().copied()));
        edge_floor_from[i] = edge_floor_from[i + 1] + floor;
    }
    let mut starts: Vec<(NodeId, f32)> = node_sets[plan.start]
        .as_ref()
        .map(|set| set.iter().map(|(&id, &d)| (id, d)).collect())
        .unwrap_or_default();
    starts.sort_by(|x, y| x.1.total_cmp(&y.1).then(x.0.cmp(&y.0)));
    let mut state = State {
        graph,
        pattern,
        order: &plan.order,
        node_sets,
        node_floor,
        edge_floor_from,
        assignment: vec![None; pattern.nodes.len()],
        used: HashSet::new(),
        edges: vec![(0, false); pattern.edges.len()],
        limits,
        outcome: SearchOutcome::default(),
    };
    for (id, distance) in starts {
        state.assignment[plan.start] = Some(id);
        if state.lower_bound(distance, 0) >= state.bound() {
            break;
        }
        state.expand(0, distance);
        state.assignment[plan.start] = None;
        if state.outcome.truncated {
            break;
        }
    }
    let mut outcome = state.outcome;
    outcome.matches.truncate(limits.k);
    outcome
}
