//! Agentic traversal (ByoKG-RAG Algorithm 1): up to `max_steps` rounds of one-hop
//! expansion of the frontier, relation selection, triplet filtering and next-entity
//! selection. With a language model the two selections are model calls (the project's
//! prompts and tolerant parsers); without one they rank by relevance to the question.
//! Next entities are always mapped back to graph ids among the entities just reached —
//! a model's text never becomes a frontier by itself.

use std::collections::{HashMap, HashSet};

use kgmesh_models::{
    parse::traversal::{parse_entity_selection, parse_relation_selection, EntitySelection},
    prompts::traversal::{entity_selection, relation_selection},
    LanguageModel, LlmError,
};
use kgmesh_schemas::{
    budget::{Cost, Deadline, MAX_DEPTH},
    graph::{Direction, Entity, Triple},
    messages::traverser::TraversalStep,
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreError};

use crate::{runtime::role_config, scoring::relevance::Relevance, verbalize::verbalize_triples};

role_config! {
    /// The agentic traverser's limits per step (`[traverser]`): its steps and model calls
    /// come from the question's budget, at most `max_steps` and `max_llm_calls`.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct TraverseConfig {
        /// Steps of the agentic traverser at most (the question's depth budget may allow
        /// fewer).
        pub max_steps: u8,
        /// Model calls of the agentic traverser per question at most, when llm.roles lists
        /// it (two per step; the question's budget may allow fewer).
        pub max_llm_calls: u32,
        /// Edges the traverser reads around its frontier per step at most.
        pub fanout_cap: usize,
        /// Relations offered to the model per step, the most relevant first.
        pub offered_relations: usize,
        /// Relations the traverser follows per step.
        pub max_relations: usize,
        /// Triplets the traverser keeps per step (the request's evidence limit may be
        /// lower).
        pub max_triplets: usize,
        /// Entities the traverser explores from in its next step.
        pub max_next_entities: usize,
        /// Relevance under which no relation is followed without a model (when none
        /// reaches it in the first step, the first step keeps them all).
        pub min_relevance: f32,
    }
}

impl Default for TraverseConfig {
    fn default() -> Self {
        Self {
            max_steps: MAX_DEPTH,
            fanout_cap: 300,
            offered_relations: 20,
            max_relations: 3,
            max_triplets: 50,
            max_next_entities: 5,
            min_relevance: 0.3,
            max_llm_calls: 6,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TraverseError {
    #[error("graph store: {0}")]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Traversal {
    pub triples: Vec<(Triple, f32)>,
    pub steps: Vec<TraversalStep>,
    /// Model calls and tokens spent.
    pub cost: Cost,
    /// Why the walk stopped (`None` while it walks).
    pub stopped: Option<Stop>,
    /// Model failures, as notes (the walk goes on without the model).
    pub notes: Vec<String>,
}

/// Why a walk stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// No entity left to walk from.
    FrontierEmpty,
    /// The question's deadline passed.
    Deadline,
    /// The frontier has no edges.
    NoEdges,
    /// No relation around the frontier is relevant enough to follow.
    NoRelevantRelation,
    /// A step reached no entity not seen before.
    NothingNew,
    /// The model said the triplets answer the question.
    Finish,
    /// The step limit was reached.
    StepLimit,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Stop::FrontierEmpty => "frontier empty",
            Stop::Deadline => "deadline",
            Stop::NoEdges => "no edges",
            Stop::NoRelevantRelation => "no relevant relation",
            Stop::NothingNew => "nothing new reached",
            Stop::Finish => "FINISH",
            Stop::StepLimit => "step limit",
        })
    }
}

/// Relation (followed from the frontier) as the selector sees it.
fn relation_key(relation: &str, inverse: bool) -> String {
    if inverse {
        format!("{relation} (inverse)")
    } else {
        relation.to_owned()
    }
}

/// The relation and direction of a [`relation_key`].
fn split_key(key: &str) -> (&str, bool) {
    match key.strip_suffix(" (inverse)") {
        Some(relation) => (relation, true),
        None => (key, false),
    }
}

async fn ask(
    llm: &dyn LanguageModel,
    request: kgmesh_models::ChatRequest,
    cost: &mut Cost,
    deadline_opt: Option<Deadline>,
) -> Result<String, LlmError> {
    let response = match deadline_opt {
        // Leave time to walk on without the model before the caller stops waiting.
        Some(deadline) => crate::runtime::chat_before(llm, request, deadline).await?,
        None => llm.chat(request).await?,
    };
    cost.llm_calls += 1;
    cost.prompt_tokens += response.usage.prompt_tokens;
    cost.completion_tokens += response.usage.completion_tokens;
    cost.llm_us += response.elapsed.as_micros() as u64;
    Ok(response.text)
}

/// Walks from `start` (linked entities). `llm_opt` chooses relations and entities when
/// given; otherwise `relevance` does. The walk stops at `deadline_opt`.
pub async fn traverse(
    store: &dyn GraphStore,
    relevance: &Relevance,
    llm_opt: Option<&dyn LanguageModel>,
    question: &str,
    start: &[Entity],
    config: &TraverseConfig,
    deadline_opt: Option<Deadline>,
) -> Result<Traversal, TraverseError> {
    let mut out = Traversal::default();
    let mut frontier: Vec<Entity> = Vec::new();
    let mut visited: HashSet<NodeId> = HashSet::new();
    for entity in start {
        if visited.insert(entity.id) {
            frontier.push(entity.clone());
        }
    }
    let mut kept_lines: Vec<Triple> = Vec::new();
    let mut llm_live = llm_opt;
    let mut used_words = vec![false; relevance.terms().stems().len()];
    for step in 0..config.max_steps.min(MAX_DEPTH) {
        if frontier.is_empty() {
            out.stopped = Some(Stop::FrontierEmpty);
            break;
        }
        if deadline_opt.is_some_and(|d| d.is_past()) {
            out.stopped = Some(Stop::Deadline);
            break;
        }
        // 1. one-hop expansion
        let ids: Vec<NodeId> = frontier.iter().map(|e| e.id).collect();
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: None,
            fanout_cap: config.fanout_cap,
        };
        let triples = store.neighbors(&ids, &query).await?.triples;
        let frontier_ids: HashSet<NodeId> = ids.iter().copied().collect();
        // (triple, key of the relation as followed, far entity)
        let mut hops: Vec<(Triple, String, Entity)> = Vec::new();
        for triple in triples {
            if frontier_ids.contains(&triple.head.id) {
                let far = triple.tail.clone();
                hops.push((triple.clone(), relation_key(&triple.relation, false), far));
            }
            if frontier_ids.contains(&triple.tail.id) {
                let far = triple.head.clone();
                hops.push((triple.clone(), relation_key(&triple.relation, true), far));
            }
        }
        let mut relations: Vec<String> = hops.iter().map(|h| h.1.clone()).collect();
        relations.sort();
        relations.dedup();
        if relations.is_empty() {
            out.stopped = Some(Stop::NoEdges);
            break;
        }

        // 2. relation selection (pruned by relevance first, as ByoKG prunes to 20)
        let relation_texts: Vec<String> = relations
            .iter()
            .map(|r| crate::scoring::text::words(r).join(" "))
            .collect();
        let mut relation_scores: Vec<f32> = if relevance.uses_embeddings() {
            relevance.texts(&relation_texts).await
        } else {
            relations
                .iter()
                .map(|r| {
                    let (name, inverse) = split_key(r);
                    relevance
                        .relation_match(name, inverse, &used_words)
                        .map(|(s, _)| s)
                        .unwrap_or(0.0)
                })
                .collect()
        };
        let mut order: Vec<usize> = (0..relations.len()).collect();
        order.sort_by(|&a, &b| {
            relation_scores[b]
                .total_cmp(&relation_scores[a])
                .then(a.cmp(&b))
        });
        let offered: Vec<String> = order
            .iter()
            .take(config.offered_relations)
            .map(|&i| relations[i].clone())
            .collect();
        let frontier_names: Vec<String> = frontier.iter().map(|e| e.name.clone()).collect();
        let mut chosen: Vec<String> = Vec::new();
        if let Some(llm) = llm_live.filter(|_| out.cost.llm_calls < config.max_llm_calls) {
            let request =
                relation_selection(question, &frontier_names, &offered, config.max_relations);
            match ask(llm, request, &mut out.cost, deadline_opt).await {
                Ok(reply) => {
                    chosen = parse_relation_selection(&reply, &offered);
                    if chosen.is_empty() {
                        // A model that answered this unusably is not asked again.
                        out.cost.model_fallbacks += 1;
                        out.notes.push(
                            "relation selection: the model named no offered relation; walking on without it"
                                .to_owned(),
                        );
                        llm_live = None;
                    }
                }
                Err(error) => {
                    out.cost.model_fallbacks += 1;
                    out.notes
                        .push(format!("relation selection failed: {error}"));
                    llm_live = None;
                }
            }
        }
        if chosen.is_empty() {
            let any_relevant = order
                .first()
                .is_some_and(|&i| relation_scores[i] > config.min_relevance);
            if step == 0 && !any_relevant {
                // Nothing in the question names any relation here: rather than guess
                // three, keep the whole star of the linked entities (every offered
                // relation; triplet filtering still caps what is kept).
                chosen = offered.clone();
            } else {
                // The first step always follows `max_relations`; later steps only
                // relations the question names.
                let threshold = if step == 0 {
                    f32::MIN
                } else {
                    config.min_relevance
                };
                chosen = order
                    .iter()
                    .filter(|&&i| relation_scores[i] > threshold)
                    .take(config.max_relations)
                    .map(|&i| relations[i].clone())
                    .collect();
            }
        }
        if chosen.is_empty() {
            out.stopped = Some(Stop::NoRelevantRelation);
            break;
        }
        if !relevance.uses_embeddings() {
            // A question word claimed by a followed relation is not claimed again.
            for relation in &chosen {
                let (name, inverse) = split_key(relation);
                if let Some((_, index)) = relevance.relation_match(name, inverse, &used_words) {
                    used_words[index] = true;
                }
            }
        }
        let chosen_set: HashSet<&str> = chosen.iter().map(String::as_str).collect();
        let score_of: HashMap<&str, f32> = relations
            .iter()
            .map(String::as_str)
            .zip(relation_scores.iter_mut().map(|s| *s))
            .collect();

        // 3. triplet filtering
        let mut filtered: Vec<(Triple, f32, Entity)> = Vec::new();
        let far_names: Vec<String> = hops.iter().map(|h| h.2.name.clone()).collect();
        let far_scores = relevance.texts(&far_names).await;
        for ((triple, key, far), far_score) in hops.into_iter().zip(far_scores) {
            if !chosen_set.contains(key.as_str()) || visited.contains(&far.id) {
                continue;
            }
            let score = score_of.get(key.as_str()).copied().unwrap_or(0.0) + 0.25 * far_score;
            filtered.push((triple, score, far));
        }
        filtered.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        filtered.truncate(config.max_triplets);
        out.steps.push(TraversalStep {
            frontier: frontier.clone(),
            relations_chosen: chosen.clone(),
            triples_kept: filtered.len() as u32,
        });
        kept_lines.extend(filtered.iter().map(|f| f.0.clone()));
        out.triples
            .extend(filtered.iter().map(|(t, s, _)| (t.clone(), *s)));

        // 4. next-entity selection, re-linked to the entities just reached
        let mut candidates: Vec<Entity> = Vec::new();
        let mut candidate_ids = HashSet::new();
        for (_, _, far) in &filtered {
            if candidate_ids.insert(far.id) {
                candidates.push(far.clone());
            }
        }
        if candidates.is_empty() {
            out.stopped = Some(Stop::NothingNew);
            break;
        }
        let mut next: Vec<Entity> = Vec::new();
        if let Some(llm) = llm_live.filter(|_| out.cost.llm_calls < config.max_llm_calls) {
            let names: Vec<String> = candidates.iter().map(|e| e.name.clone()).collect();
            let request = entity_selection(question, &verbalize_triples(&kept_lines), &names);
            match ask(llm, request, &mut out.cost, deadline_opt).await {
                Ok(reply) => match parse_entity_selection(&reply, &names) {
                    EntitySelection::Finish => {
                        out.stopped = Some(Stop::Finish);
                        break;
                    }
                    EntitySelection::Explore(chosen_names) => {
                        for name in chosen_names {
                            if let Some(entity) = candidates.iter().find(|c| c.name == name) {
                                if !next.iter().any(|n| n.id == entity.id) {
                                    next.push(entity.clone());
                                }
                            }
                        }
                        if next.is_empty() {
                            // Unusable, not a decision to stop: walk on without it.
                            out.cost.model_fallbacks += 1;
                            out.notes.push(
                                "entity selection: the model named no reached entity; walking on without it"
                                    .to_owned(),
                            );
                            llm_live = None;
                        }
                    }
                },
                Err(error) => {
                    out.cost.model_fallbacks += 1;
                    out.notes.push(format!("entity selection failed: {error}"));
                    llm_live = None;
                }
            }
        }
        if next.is_empty() {
            // `filtered` is sorted best first, so candidates are too.
            next = candidates;
        }
        next.truncate(config.max_next_entities);
        visited.extend(next.iter().map(|e| e.id));
        frontier = next;
    }
    if out.stopped.is_none() {
        out.stopped = Some(Stop::StepLimit);
    }
    Ok(out)
}
