//! Metapath following, bounded shortest paths and the bounded expansion operators,
//! all as batched one-hop expansions over [`GraphStore::neighbors`]: one store call per
//! step of a metapath, whatever the size of the frontier. Every loop is bounded by a
//! fan-out cap per node, a cap on live paths, depth ≤ [`MAX_DEPTH`] and the deadline.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    budget::{Deadline, MAX_DEPTH},
    graph::{Direction, Entity, Metapath, Path, PathStep, Triple},
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreError, StoreResult};

use crate::scoring::relevance::Relevance;

/// Bounds of one path operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Edges read per frontier node per step.
    pub fanout_cap: usize,
    /// Paths kept alive (and returned) per metapath.
    pub max_paths: usize,
    /// Nodes of one BFS level kept for the next (shortest paths).
    pub max_frontier: usize,
    pub max_depth: u8,
    pub deadline_opt: Option<Deadline>,
}

impl Default for WalkLimits {
    fn default() -> Self {
        Self {
            fanout_cap: 500,
            max_paths: 300,
            max_frontier: 5_000,
            max_depth: MAX_DEPTH,
            deadline_opt: None,
        }
    }
}

impl WalkLimits {
    fn check_deadline(&self) -> StoreResult<()> {
        match self.deadline_opt {
            Some(deadline) if deadline.is_past() => Err(StoreError::Timeout { millis: 0 }),
            _ => Ok(()),
        }
    }
}

/// One edge as seen from the node it is followed from.
#[derive(Debug, Clone)]
struct Hop {
    relation: String,
    inverse: bool,
    node: Entity,
}

/// One hop from `frontier`, grouped by the node each edge leaves from.
async fn expand(
    store: &dyn GraphStore,
    frontier: &[NodeId],
    relation_opt: Option<&str>,
    direction: Direction,
    fanout_cap: usize,
) -> StoreResult<HashMap<NodeId, Vec<Hop>>> {
    let query = NeighborQuery {
        direction,
        relations: relation_opt.map(|r| vec![r.to_owned()]),
        fanout_cap,
    };
    let neighborhood = store.neighbors(frontier, &query).await?;
    let in_frontier: HashSet<NodeId> = frontier.iter().copied().collect();
    let mut out: HashMap<NodeId, Vec<Hop>> = HashMap::new();
    for triple in neighborhood.triples {
        let forward = direction != Direction::In && in_frontier.contains(&triple.head.id);
        let backward = direction != Direction::Out && in_frontier.contains(&triple.tail.id);
        if forward {
            out.entry(triple.head.id).or_default().push(Hop {
                relation: triple.relation.clone(),
                inverse: false,
                node: triple.tail.clone(),
            });
        }
        if backward {
            out.entry(triple.tail.id).or_default().push(Hop {
                relation: triple.relation,
                inverse: true,
                node: triple.head,
            });
        }
    }
    // The store caps per node, but a double-sided scan may return both sides: re-cap.
    for hops in out.values_mut() {
        hops.truncate(fanout_cap);
    }
    Ok(out)
}

fn flipped(direction: Direction) -> Direction {
    match direction {
        Direction::Out => Direction::In,
        Direction::In => Direction::Out,
        Direction::Both => Direction::Both,
    }
}

/// The stored edge `(head, relation, tail)` behind a step taken from `from` to `to`
/// (the relation by name, or by the store's index of it).
pub(crate) fn stored_edge<R>(
    from: NodeId,
    relation: R,
    inverse: bool,
    to: NodeId,
) -> (NodeId, R, NodeId) {
    if inverse {
        (to, relation, from)
    } else {
        (from, relation, to)
    }
}

/// Whether `hop` from the end of `path` would walk straight back over the edge the path
/// just walked.
fn walks_straight_back(path: &Path, hop: &Hop) -> bool {
    let Some(last) = path.steps.last() else {
        return false;
    };
    let from = match path.steps.len() {
        1 => path.start.id,
        n => path.steps[n - 2].node.id,
    };
    let walked = stored_edge(from, &last.relation, last.inverse, last.node.id);
    stored_edge(path.end().id, &hop.relation, hop.inverse, hop.node.id) == walked
}

/// Every path from `sources` along `metapath`, at most `limits.max_paths`. A path is a
/// walk that never turns straight back over the edge it just walked, as every
/// metapath walk in kgmesh is (see `GraphStore::follow_metapaths`): it may pass a node
/// or an edge again, so "X's mother's child's father" reaches X's father through X
/// itself, and "X's wife's husband's birthplace" goes X → wife → X → birthplace when
/// both spouse edges are stored; the co-stars of X are never X. A step whose stated
/// direction finds no edge at all is retried inverted (models often write a relation
/// the wrong way round).
pub async fn follow_metapath(
    store: &dyn GraphStore,
    sources: &[Entity],
    metapath: &Metapath,
    limits: &WalkLimits,
) -> StoreResult<Vec<Path>> {
    let depth = metapath
        .steps
        .len()
        .min(limits.max_depth.min(MAX_DEPTH) as usize);
    if depth == 0 || sources.is_empty() {
        return Ok(Vec::new());
    }
    let mut partials: Vec<Path> = Vec::new();
    let mut seen_sources = HashSet::new();
    for source in sources {
        if seen_sources.insert(source.id) {
            partials.push(Path {
                start: source.clone(),
                steps: Vec::new(),
            });
        }
    }
    for step in &metapath.steps[..depth] {
        limits.check_deadline()?;
        let mut frontier: Vec<NodeId> = partials.iter().map(|p| p.end().id).collect();
        frontier.sort_unstable();
        frontier.dedup();
        let mut hops = expand(
            store,
            &frontier,
            Some(&step.relation),
            step.direction,
            limits.fanout_cap,
        )
        .await?;
        if hops.is_empty() && step.direction != Direction::Both {
            hops = expand(
                store,
                &frontier,
                Some(&step.relation),
                flipped(step.direction),
                limits.fanout_cap,
            )
            .await?;
        }
        let mut next = Vec::new();
        'partials: for partial in &partials {
            let Some(options) = hops.get(&partial.end().id) else {
                continue;
            };
            for hop in options {
                if walks_straight_back(partial, hop) {
                    continue;
                }
                let mut extended = partial.clone();
                extended.steps.push(PathStep {
                    relation: hop.relation.clone(),
                    inverse: hop.inverse,
                    node: hop.node.clone(),
                });
                next.push(extended);
                if next.len() >= limits.max_paths {
                    break 'partials;
                }
            }
        }
        partials = next;
        if partials.is_empty() {
            break;
        }
    }
    partials.retain(|p| p.steps.len() == depth);
    Ok(partials)
}

/// Shortest paths (edges either way) from any source to any target, at most
/// `limits.max_depth` hops, one per reached target, found by a level-synchronous BFS
/// that stops at the first level reaching a target.
pub async fn shortest_paths(
    store: &dyn GraphStore,
    sources: &[Entity],
    targets: &[Entity],
    limits: &WalkLimits,
) -> StoreResult<Vec<Path>> {
    let target_ids: HashSet<NodeId> = targets.iter().map(|t| t.id).collect();
    if sources.is_empty() || target_ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut parent: HashMap<NodeId, Option<(NodeId, Hop)>> = HashMap::new();
    let mut names: HashMap<NodeId, Entity> = HashMap::new();
    let mut frontier: Vec<NodeId> = Vec::new();
    for source in sources {
        if parent.insert(source.id, None).is_none() {
            frontier.push(source.id);
            names.insert(source.id, source.clone());
        }
    }
    let mut reached: Vec<NodeId> = frontier
        .iter()
        .copied()
        .filter(|id| target_ids.contains(id))
        .collect();
    let max_depth = limits.max_depth.min(MAX_DEPTH);
    let mut depth = 0;
    while reached.is_empty() && depth < max_depth && !frontier.is_empty() {
        limits.check_deadline()?;
        depth += 1;
        let hops = expand(store, &frontier, None, Direction::Both, limits.fanout_cap).await?;
        let mut next = Vec::new();
        for from in &frontier {
            let Some(options) = hops.get(from) else {
                continue;
            };
            for hop in options {
                if parent.contains_key(&hop.node.id) {
                    continue;
                }
                if next.len() >= limits.max_frontier && !target_ids.contains(&hop.node.id) {
                    continue;
                }
                parent.insert(hop.node.id, Some((*from, hop.clone())));
                names.insert(hop.node.id, hop.node.clone());
                if target_ids.contains(&hop.node.id) {
                    reached.push(hop.node.id);
                }
                next.push(hop.node.id);
            }
        }
        frontier = next;
    }
    let mut paths = Vec::new();
    for target in reached.into_iter().take(limits.max_paths) {
        let mut steps = Vec::new();
        let mut node = target;
        while let Some(Some((previous, hop))) = parent.get(&node) {
            steps.push(PathStep {
                relation: hop.relation.clone(),
                inverse: hop.inverse,
                node: hop.node.clone(),
            });
            node = *previous;
        }
        steps.reverse();
        if let Some(start) = names.get(&node) {
            paths.push(Path {
                start: start.clone(),
                steps,
            });
        }
    }
    Ok(paths)
}

/// What an expansion operator found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expanded {
    /// With a relevance score each, best first.
    pub triples: Vec<(Triple, f32)>,
    /// Endpoints reached, in the order of `triples`.
    pub frontier: Vec<Entity>,
}

/// σ_depth: follow `relation` one hop from the frontier, keeping at most `k_degree`
/// edges per frontier node and `max_total` in all.
pub async fn expand_depth(
    store: &dyn GraphStore,
    frontier: &[Entity],
    relation: &str,
    direction: Direction,
    k_degree: usize,
    max_total: usize,
) -> StoreResult<Expanded> {
    let ids: Vec<NodeId> = frontier.iter().map(|e| e.id).collect();
    let hops = expand(store, &ids, Some(relation), direction, k_degree).await?;
    let mut out = Expanded::default();
    let mut reached = HashSet::new();
    'frontier: for from in frontier {
        for hop in hops.get(&from.id).into_iter().flatten() {
            if out.triples.len() >= max_total {
                break 'frontier;
            }
            out.triples.push((triple_of(from, hop), 1.0));
            if reached.insert(hop.node.id) {
                out.frontier.push(hop.node.clone());
            }
        }
    }
    Ok(out)
}

/// σ_breadth: a star scan of the frontier (at most `scan_cap` edges per node read), of
/// which the `k_degree` edges most relevant to the question are kept.
pub async fn expand_breadth(
    store: &dyn GraphStore,
    frontier: &[Entity],
    relevance: &Relevance,
    k_degree: usize,
    scan_cap: usize,
) -> StoreResult<Expanded> {
    let ids: Vec<NodeId> = frontier.iter().map(|e| e.id).collect();
    let hops = expand(store, &ids, None, Direction::Both, scan_cap).await?;
    let mut candidates: Vec<Triple> = Vec::new();
    for from in frontier {
        for hop in hops.get(&from.id).into_iter().flatten() {
            candidates.push(triple_of(from, hop));
        }
    }
    let texts: Vec<String> = candidates
        .iter()
        .map(|t| format!("{} {} {}", t.head.name, t.relation, t.tail.name))
        .collect();
    let relation_texts: Vec<String> = candidates.iter().map(|t| t.relation.clone()).collect();
    let scores = if relevance.uses_embeddings() {
        relevance.texts(&texts).await
    } else {
        // Lexically only the relation says anything about the question.
        relevance.texts(&relation_texts).await
    };
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    order.truncate(k_degree);
    let frontier_ids: HashSet<NodeId> = ids.into_iter().collect();
    let mut out = Expanded::default();
    let mut reached = HashSet::new();
    for index in order {
        let triple = candidates[index].clone();
        let far = if frontier_ids.contains(&triple.head.id) {
            triple.tail.clone()
        } else {
            triple.head.clone()
        };
        if reached.insert(far.id) {
            out.frontier.push(far);
        }
        out.triples.push((triple, scores[index]));
    }
    Ok(out)
}

fn triple_of(from: &Entity, hop: &Hop) -> Triple {
    if hop.inverse {
        Triple {
            head: hop.node.clone(),
            relation: hop.relation.clone(),
            tail: from.clone(),
        }
    } else {
        Triple {
            head: from.clone(),
            relation: hop.relation.clone(),
            tail: hop.node.clone(),
        }
    }
}
