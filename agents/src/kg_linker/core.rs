//! The KG-Linker without a model: entities from the graph's name index, then the
//! relation sequences (length 1–3) that actually leave those entities, enumerated from
//! the graph with bounded fan-out and ranked against the question (embedding similarity
//! of the verbalized sequence, or lexical overlap of relation words with question
//! words). Generic: it knows nothing about any particular graph.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use kgmesh_models::lexical::Gazetteer;
use kgmesh_schemas::{
    budget::MAX_DEPTH,
    graph::{Direction, Entity, Metapath, RelationStep, ScoredEntity},
    messages::kg_linker::KgLinkReply,
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreResult};

use crate::{
    entity_linker::core::{gazetteer_mentions, EXACT_SCORE},
    scoring::relevance::{Relevance, TextVectors},
};

/// Bounds of metapath enumeration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnumerateLimits {
    /// Edges read per node.
    pub fanout_cap: usize,
    /// Nodes reached by a relation prefix that are expanded further.
    pub sample_per_prefix: usize,
    pub max_depth: u8,
    /// Relation sequences kept in all.
    pub max_metapaths: usize,
}

impl Default for EnumerateLimits {
    fn default() -> Self {
        Self {
            fanout_cap: 300,
            sample_per_prefix: 20,
            max_depth: MAX_DEPTH,
            max_metapaths: 3_000,
        }
    }
}

/// How the LLM-free linker works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkerConfig {
    /// Question entities kept (longest mentions first).
    pub max_entities: usize,
    /// Nodes kept per mention when a name is shared.
    pub per_mention: usize,
    /// Longest mention tried, in words.
    pub max_mention_words: usize,
    /// Metapaths returned.
    pub top_metapaths: usize,
    pub enumerate: EnumerateLimits,
}

impl Default for LinkerConfig {
    fn default() -> Self {
        Self {
            max_entities: 3,
            per_mention: 3,
            max_mention_words: 10,
            top_metapaths: 5,
            enumerate: EnumerateLimits::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScoredMetapath {
    pub metapath: Metapath,
    pub score: f32,
}

/// The relation sequences (1..=max_depth steps, each with the direction it is followed
/// in) that leave `sources` in this graph. One store call per depth.
pub async fn enumerate_metapaths(
    store: &dyn GraphStore,
    sources: &[NodeId],
    limits: &EnumerateLimits,
) -> StoreResult<Vec<Metapath>> {
    let mut found: Vec<Metapath> = Vec::new();
    let mut start: Vec<NodeId> = sources.to_vec();
    start.sort_unstable();
    start.dedup();
    // (steps so far, nodes reached by them and still to expand, nodes on the way)
    let mut layer: Vec<(Vec<RelationStep>, Vec<NodeId>)> = vec![(Vec::new(), start)];
    for _ in 0..limits.max_depth.min(MAX_DEPTH) {
        let mut frontier: Vec<NodeId> = layer.iter().flat_map(|(_, n)| n.iter().copied()).collect();
        frontier.sort_unstable();
        frontier.dedup();
        if frontier.is_empty() {
            break;
        }
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: None,
            fanout_cap: limits.fanout_cap,
        };
        // Ids and relation indexes only: enumeration never needs a node's name, and
        // copying names per edge dominated the cost around hubs.
        let neighborhood = store.neighbor_edges(&frontier, &query).await?;
        // node → (relation index, direction followed, far node)
        let mut by_node: HashMap<NodeId, Vec<(u32, Direction, NodeId)>> = HashMap::new();
        for edge in &neighborhood.edges {
            by_node
                .entry(edge.head)
                .or_default()
                .push((edge.relation, Direction::Out, edge.tail));
            by_node
                .entry(edge.tail)
                .or_default()
                .push((edge.relation, Direction::In, edge.head));
        }
        let mut next: Vec<(Vec<RelationStep>, Vec<NodeId>)> = Vec::new();
        for (prefix, nodes) in &layer {
            let mut extensions: HashMap<(u32, Direction), (Vec<NodeId>, HashSet<NodeId>)> =
                HashMap::new();
            for node in nodes {
                for (relation, direction, far) in by_node.get(node).into_iter().flatten() {
                    if far == node {
                        continue;
                    }
                    let entry = extensions.entry((*relation, *direction)).or_default();
                    if entry.0.len() < limits.sample_per_prefix && entry.1.insert(*far) {
                        entry.0.push(*far);
                    }
                }
            }
            let mut steps_found: Vec<(RelationStep, Vec<NodeId>)> = extensions
                .into_iter()
                .filter_map(|((relation, direction), (reached, _))| {
                    let name = neighborhood.names.relation_name(relation)?;
                    Some((
                        RelationStep {
                            relation: name.to_owned(),
                            direction,
                        },
                        reached,
                    ))
                })
                .collect();
            // The order a BTreeMap of steps gave: by relation name, then direction.
            steps_found.sort_by(|a, b| a.0.cmp(&b.0));
            for (step, reached) in steps_found {
                let mut steps = prefix.clone();
                steps.push(step);
                found.push(Metapath {
                    steps: steps.clone(),
                });
                if found.len() >= limits.max_metapaths {
                    return Ok(found);
                }
                next.push((steps, reached));
            }
        }
        layer = next;
    }
    Ok(found)
}

/// A metapath as words, for embedding: `directed by (inverse) -> in language`.
pub fn metapath_text(metapath: &Metapath) -> String {
    metapath
        .steps
        .iter()
        .map(|step| {
            let words = crate::scoring::text::words(&step.relation).join(" ");
            match step.direction {
                Direction::In => format!("{words} (inverse)"),
                _ => words,
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// Metapaths around `entities`, ranked against the question, best first.
pub async fn rank_metapaths(
    store: &dyn GraphStore,
    relevance: &Relevance,
    entities: &[Entity],
    limits: &EnumerateLimits,
    top: usize,
) -> StoreResult<Vec<ScoredMetapath>> {
    let ids: Vec<NodeId> = entities.iter().map(|e| e.id).collect();
    let candidates = enumerate_metapaths(store, &ids, limits).await?;
    let sequences: Vec<Vec<String>> = candidates
        .iter()
        .map(|m| m.steps.iter().map(|s| s.relation.clone()).collect())
        .collect();
    let texts: Vec<String> = candidates.iter().map(metapath_text).collect();
    let scores = relevance.sequences(&sequences, &texts).await;
    let mut scored: Vec<ScoredMetapath> = candidates
        .into_iter()
        .zip(scores)
        .map(|(metapath, score)| ScoredMetapath { metapath, score })
        .collect();
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.metapath.steps.len().cmp(&b.metapath.steps.len()))
            .then(a.metapath.cmp(&b.metapath))
    });
    scored.truncate(top);
    Ok(scored)
}

/// Question entities found by the gazetteer: longest mentions first, up to
/// `config.max_entities` mentions and `config.per_mention` nodes each.
pub fn link_question_entities(
    question: &str,
    index: &Gazetteer,
    config: &LinkerConfig,
) -> (Vec<String>, Vec<ScoredEntity>) {
    let mentions: Vec<String> = gazetteer_mentions(question, index, config.max_mention_words, 2)
        .into_iter()
        .take(config.max_entities)
        .collect();
    let mut linked: Vec<ScoredEntity> = Vec::new();
    let mut seen = HashSet::new();
    for mention in &mentions {
        for entity in index
            .named_normalized(mention)
            .iter()
            .take(config.per_mention)
        {
            if seen.insert(entity.id) {
                linked.push(ScoredEntity {
                    entity: entity.clone(),
                    score: EXACT_SCORE,
                });
            }
        }
    }
    (mentions, linked)
}

/// The whole LLM-free KG-Linker step.
pub async fn link_without_llm(
    store: &dyn GraphStore,
    index: &Gazetteer,
    vectors_opt: Option<Arc<TextVectors>>,
    question: &str,
    config: &LinkerConfig,
) -> StoreResult<KgLinkReply> {
    let (mentions, linked) = link_question_entities(question, index, config);
    if linked.is_empty() {
        return Ok(KgLinkReply {
            mentions,
            ..KgLinkReply::default()
        });
    }
    let names: Vec<&str> = mentions.iter().map(String::as_str).collect();
    let relevance = Relevance::new(question, &names, vectors_opt).await;
    let entities: Vec<Entity> = linked.iter().map(|s| s.entity.clone()).collect();
    let ranked = rank_metapaths(
        store,
        &relevance,
        &entities,
        &config.enumerate,
        config.top_metapaths,
    )
    .await?;
    Ok(KgLinkReply {
        mentions,
        linked,
        metapaths: ranked.into_iter().map(|s| s.metapath).collect(),
        cypher: Vec::new(),
        draft_answers: Vec::new(),
        finish: false,
    })
}
