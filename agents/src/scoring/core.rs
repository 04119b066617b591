//! Scoring retriever (ByoKG-RAG App. A): every triplet within `hops` of the linked
//! entities, ranked by decomposed similarity to the question
//! `w_h·s(head) + w_r·s(relation) + w_t·s(tail)`, plus a share of the score of the
//! triplet that reached its near end (so a good first hop lifts what lies behind it).
//! Similarities are computed once per distinct node and relation, never per triplet.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    budget::{Deadline, MAX_DEPTH},
    graph::{Direction, Entity, Triple},
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreError, StoreResult};

use super::relevance::Relevance;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoringConfig {
    pub hops: u8,
    /// Triplets returned.
    pub top_k: usize,
    /// Edges read per node per hop.
    pub fanout_cap: usize,
    /// Nodes expanded per hop (the best-scored ones).
    pub max_frontier: usize,
    /// Triplets considered in all.
    pub max_triples: usize,
    pub head_weight: f32,
    pub relation_weight: f32,
    pub tail_weight: f32,
    /// Share of the reaching triplet's score inherited by the next hop.
    pub carry: f32,
    pub deadline_opt: Option<Deadline>,
}

impl Default for ScoringConfig {
    fn default() -> Self {
        Self {
            hops: 2,
            top_k: crate::settings::DEFAULT_SCORING_TOP_K,
            fanout_cap: 200,
            max_frontier: 200,
            max_triples: 20_000,
            head_weight: 0.25,
            relation_weight: 1.0,
            tail_weight: 0.25,
            carry: 0.5,
            deadline_opt: None,
        }
    }
}

/// The `top_k` triplets within `hops` of `entities`, best first, with scores.
pub async fn score_triples(
    store: &dyn GraphStore,
    relevance: &Relevance,
    entities: &[Entity],
    config: &ScoringConfig,
) -> StoreResult<Vec<(Triple, f32)>> {
    let mut frontier: Vec<(NodeId, f32)> = entities.iter().map(|e| (e.id, 0.0)).collect();
    let mut visited: HashSet<NodeId> = entities.iter().map(|e| e.id).collect();
    let mut node_scores: HashMap<NodeId, f32> = HashMap::new();
    let mut relation_scores: HashMap<String, f32> = HashMap::new();
    let mut all: Vec<(Triple, f32)> = Vec::new();
    let mut seen_triples: HashSet<(NodeId, String, NodeId)> = HashSet::new();
    for _ in 0..config.hops.min(MAX_DEPTH) {
        if frontier.is_empty() || all.len() >= config.max_triples {
            break;
        }
        if config.deadline_opt.is_some_and(|d| d.is_past()) {
            return Err(StoreError::Timeout { millis: 0 });
        }
        let carried: HashMap<NodeId, f32> = frontier.iter().copied().collect();
        let ids: Vec<NodeId> = frontier.iter().map(|(id, _)| *id).collect();
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: None,
            fanout_cap: config.fanout_cap,
        };
        let triples = store.neighbors(&ids, &query).await?.triples;

        // Score each new node and relation once.
        let mut new_nodes: Vec<Entity> = Vec::new();
        let mut new_relations: Vec<String> = Vec::new();
        let mut pending_nodes = HashSet::new();
        for triple in &triples {
            for entity in [&triple.head, &triple.tail] {
                if !node_scores.contains_key(&entity.id) && pending_nodes.insert(entity.id) {
                    new_nodes.push(entity.clone());
                }
            }
            if !relation_scores.contains_key(&triple.relation)
                && !new_relations.contains(&triple.relation)
            {
                new_relations.push(triple.relation.clone());
            }
        }
        let names: Vec<String> = new_nodes.iter().map(|e| e.name.clone()).collect();
        for (entity, score) in new_nodes.iter().zip(relevance.texts(&names).await) {
            node_scores.insert(entity.id, score);
        }
        let relation_texts: Vec<String> = new_relations
            .iter()
            .map(|r| crate::scoring::text::words(r).join(" "))
            .collect();
        for (relation, score) in new_relations
            .iter()
            .zip(relevance.texts(&relation_texts).await)
        {
            relation_scores.insert(relation.clone(), score);
        }

        let mut reached: HashMap<NodeId, f32> = HashMap::new();
        for triple in triples {
            let key = (triple.head.id, triple.relation.clone(), triple.tail.id);
            if !seen_triples.insert(key) {
                continue;
            }
            let near_score = carried
                .get(&triple.head.id)
                .or_else(|| carried.get(&triple.tail.id))
                .copied()
                .unwrap_or(0.0);
            let score = config.head_weight * node_scores[&triple.head.id]
                + config.relation_weight * relation_scores[&triple.relation]
                + config.tail_weight * node_scores[&triple.tail.id]
                + config.carry * near_score;
            for far in [triple.head.id, triple.tail.id] {
                if !carried.contains_key(&far) && !visited.contains(&far) {
                    let best = reached.entry(far).or_insert(score);
                    *best = best.max(score);
                }
            }
            all.push((triple, score));
            if all.len() >= config.max_triples {
                break;
            }
        }
        let mut next: Vec<(NodeId, f32)> = reached.into_iter().collect();
        next.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        next.truncate(config.max_frontier);
        visited.extend(next.iter().map(|(id, _)| *id));
        frontier = next;
    }
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(config.top_k);
    Ok(all)
}
