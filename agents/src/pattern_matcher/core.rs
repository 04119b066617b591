//! The pattern matcher's whole step: pattern, distances, the graph around the pattern's
//! named entities, top-k search, and the matches as paths.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    budget::Deadline,
    graph::{Direction, Path, PathStep, ScoredEntity},
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreError};

use super::{
    pattern::{
        pattern_without_model, run_phrases, Pattern, PatternNode, PhraseNearest, PhraseRelations,
    },
    search::{top_k, LocalGraph, Match, SearchLimits, SearchPattern},
};
use crate::{
    scoring::{
        relevance::{standing_out, TextVectors, ASKED_COSINE, SYNONYM_COSINE},
        text::{content_stems, relation_label, stem_similarity, ANSWER_TYPE_WORDS},
    },
    summarizer::core::anchors,
};

/// Limits of one pattern match.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatchLimits {
    /// Pattern edges at most (the depth budget).
    pub max_edges: usize,
    /// Subgraphs returned at most.
    pub k: usize,
    /// Graph relations kept as candidates of a pattern edge (SimGRAG's k⁽ʳ⁾), nearest
    /// first; relations as near as the last one kept are kept too.
    pub relation_candidates: usize,
    /// Edges read per frontier node.
    pub fanout_cap: usize,
    /// Edges read in all.
    pub max_edges_read: usize,
    /// Partial matches extended at most.
    pub max_steps: usize,
    /// A closest subgraph farther than this from the pattern, per pattern edge, is no
    /// evidence: the pattern names nothing this graph holds.
    pub max_mean_distance: f32,
    pub deadline_opt: Option<Deadline>,
}

impl Default for MatchLimits {
    fn default() -> Self {
        Self {
            max_edges: 3,
            k: 100,
            relation_candidates: 4,
            fanout_cap: 500,
            max_edges_read: 50_000,
            max_steps: 200_000,
            max_mean_distance: 0.5,
            deadline_opt: None,
        }
    }
}

/// What a match step found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Matched {
    /// One path per match and named entity, from the entity to the answer, with the
    /// match's distance; best first.
    pub paths: Vec<(Path, f32)>,
    pub edges_read: usize,
    pub notes: Vec<String>,
}

/// How alike a relation phrase and a relation name are, in `[0, 1]`: by their letters
/// (the best pair of their stems), and overall (the letters, or their embeddings'
/// cosine when that is higher).
fn similarity(
    phrase_stems: &[String],
    relation_stems: &[String],
    cosine: Option<f32>,
) -> (f32, f32) {
    let letters = phrase_stems
        .iter()
        .flat_map(|p| relation_stems.iter().map(move |r| stem_similarity(p, r)))
        .fold(0.0, f32::max);
    (letters, letters.max(cosine.unwrap_or(0.0)).clamp(0.0, 1.0))
}

/// How alike each phrase is to each relation (`[phrase][relation]`, see
/// [`similarity`]).
pub(super) async fn similarities(
    phrases: &[String],
    relations: &[String],
    vectors_opt: Option<&TextVectors>,
) -> Vec<Vec<(f32, f32)>> {
    let relation_texts: Vec<String> = relations.iter().map(|r| relation_label(r)).collect();
    let relation_stems: Vec<Vec<String>> =
        relation_texts.iter().map(|t| content_stems(t)).collect();
    let vectors = match vectors_opt {
        Some(vectors) if !phrases.is_empty() => {
            let mut texts = phrases.to_vec();
            texts.extend(relation_texts.iter().cloned());
            match vectors.vectors(&texts).await {
                Ok(v) => Some(v),
                Err(error) => {
                    tracing::warn!(%error, "relation phrases not embedded; matched by their words");
                    None
                }
            }
        }
        _ => None,
    };
    phrases
        .iter()
        .enumerate()
        .map(|(p, phrase)| {
            let stems = content_stems(phrase);
            // A cosine counts where it would let a question word name the relation in
            // relevance scoring: past the floor and standing out from the phrase's
            // cosines to the other relations (a phrase of the graph's own domain,
            // "professional football team" over a football graph, is near them all).
            let counted: Option<Vec<f32>> = vectors.as_ref().map(|v| {
                let cosines: Vec<f32> = (0..relation_stems.len())
                    .map(|r| {
                        let (a, b) = (&v[p], &v[phrases.len() + r]);
                        a.iter().zip(b.iter()).map(|(x, y)| x * y).sum()
                    })
                    .collect();
                // An asking wh-word ("where") counts from a lower floor, as in relevance
                // scoring.
                let floor = if ANSWER_TYPE_WORDS.contains(&phrase.as_str()) {
                    ASKED_COSINE
                } else {
                    SYNONYM_COSINE
                };
                standing_out(&cosines)
                    .zip(&cosines)
                    .map(|(out, &c)| if out && c >= floor { c } else { 0.0 })
                    .collect()
            });
            relation_stems
                .iter()
                .enumerate()
                .map(|(r, relation)| similarity(&stems, relation, counted.as_ref().map(|c| c[r])))
                .collect()
        })
        .collect()
}

/// The candidate relations of each pattern edge, as distances (`1 − similarity`) by
/// relation name; `None` for an edge whose phrase is missing (any relation, at distance
/// zero) or near no relation (the caller returns no evidence for such a pattern).
async fn relation_distances(
    pattern: &Pattern,
    relations: &[String],
    vectors_opt: Option<&TextVectors>,
    keep: usize,
) -> Vec<Option<HashMap<String, f32>>> {
    let phrases: Vec<String> = pattern
        .edges
        .iter()
        .filter_map(|e| e.phrase.clone())
        .collect();
    let mut table = similarities(&phrases, relations, vectors_opt)
        .await
        .into_iter();
    let mut out = Vec::with_capacity(pattern.edges.len());
    for edge in &pattern.edges {
        let Some(row) = edge.phrase.as_ref().and_then(|_| table.next()) else {
            out.push(None);
            continue;
        };
        let mut scored: Vec<(f32, &String)> = row
            .into_iter()
            .map(|(_, overall)| overall)
            .zip(relations)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        if scored.first().is_none_or(|(best, _)| *best <= 0.0) {
            out.push(None);
            continue;
        }
        let floor = scored
            .get(keep.saturating_sub(1))
            .map_or(f32::NEG_INFINITY, |(s, _)| *s);
        out.push(Some(
            scored
                .into_iter()
                .filter(|(s, _)| *s >= floor && *s > 0.0)
                .map(|(s, r)| (r.clone(), 1.0 - s))
                .collect(),
        ));
    }
    out
}

/// The entities the question names, grouped by name: one known pattern node per name,
/// its candidates the entities of that name with distance `1 − link score`. Entities
/// the question names word for word are its anchors (as for the summarizer); linked
/// look-alikes of another mention are left out.
pub fn named_entities(question: &str, entities: &[ScoredEntity]) -> NamedEntities {
    let topic: Vec<_> = entities.iter().map(|s| s.entity.clone()).collect();
    let anchors = anchors(question, &topic);
    let mut groups: Vec<(String, Vec<(NodeId, f32)>)> = Vec::new();
    for scored in entities.iter().filter(|s| anchors.contains(&s.entity.id)) {
        let distance = (1.0 - scored.score).clamp(0.0, 1.0);
        let key = scored.entity.name.to_lowercase();
        match groups
            .iter_mut()
            .find(|(name, _)| name.to_lowercase() == key)
        {
            Some((_, candidates)) => candidates.push((scored.entity.id, distance)),
            None => groups.push((
                scored.entity.name.clone(),
                vec![(scored.entity.id, distance)],
            )),
        }
    }
    groups
}

/// Reads the graph around the pattern: from the named entities, each pattern edge's
/// candidate relations (all relations for an unknown one), in breadth-first order.
async fn read_around(
    store: &dyn GraphStore,
    pattern: &Pattern,
    known: &[Option<Vec<(NodeId, f32)>>],
    relations: &[Option<HashMap<String, f32>>],
    limits: &MatchLimits,
    notes: &mut Vec<String>,
) -> Result<LocalGraph, StoreError> {
    let mut graph = LocalGraph::new();
    let mut frontier: Vec<Option<Vec<NodeId>>> = known
        .iter()
        .map(|c| c.as_ref().map(|c| c.iter().map(|(id, _)| *id).collect()))
        .collect();
    let mut done = vec![false; pattern.edges.len()];
    // The next edge with one end reached, until none is left.
    while let Some((e, from, to)) = pattern.edges.iter().enumerate().find_map(|(e, edge)| {
        if done[e] {
            None
        } else if frontier[edge.from].is_some() {
            Some((e, edge.from, edge.to))
        } else if frontier[edge.to].is_some() {
            Some((e, edge.to, edge.from))
        } else {
            None
        }
    }) {
        done[e] = true;
        if limits.deadline_opt.is_some_and(|d| d.is_past()) {
            notes.push("pattern matcher: the deadline stopped reading the graph".to_owned());
            break;
        }
        if graph.edge_count() >= limits.max_edges_read {
            notes.push(format!(
                "pattern matcher: read {} edges, the most allowed; the rest of the pattern is unmatched",
                graph.edge_count()
            ));
            break;
        }
        let sources = frontier[from].clone().unwrap_or_default();
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: relations[e]
                .as_ref()
                .map(|candidates| candidates.keys().cloned().collect()),
            fanout_cap: limits.fanout_cap,
        };
        let hood = store.neighbors(&sources, &query).await?;
        if !hood.truncated.is_empty() {
            notes.push(format!(
                "pattern matcher: {} nodes have more than {} edges; the rest were not read",
                hood.truncated.len(),
                limits.fanout_cap
            ));
        }
        let source_set: HashSet<NodeId> = sources.iter().copied().collect();
        let allowed: Option<HashSet<NodeId>> = known[to]
            .as_ref()
            .map(|c| c.iter().map(|(id, _)| *id).collect());
        let mut reached: Vec<NodeId> = Vec::new();
        for triple in &hood.triples {
            graph.add(&triple.head, &triple.relation, &triple.tail);
            for (near, far) in [(&triple.head, &triple.tail), (&triple.tail, &triple.head)] {
                if source_set.contains(&near.id)
                    && allowed.as_ref().is_none_or(|a| a.contains(&far.id))
                {
                    reached.push(far.id);
                }
            }
        }
        reached.sort_unstable();
        reached.dedup();
        match &mut frontier[to] {
            Some(existing) => {
                existing.extend(reached);
                existing.sort_unstable();
                existing.dedup();
            }
            slot @ None => *slot = Some(reached),
        }
    }
    Ok(graph)
}

/// The path of `matched` from pattern node `from` to the answer.
fn path_of(
    pattern: &Pattern,
    graph: &LocalGraph,
    search: &SearchPattern,
    matched: &Match,
    from: usize,
) -> Option<Path> {
    let route = pattern.route(from);
    if route.is_empty() {
        return None;
    }
    let start = graph.entity(matched.nodes[from])?.clone();
    let mut steps = Vec::with_capacity(route.len());
    for (edge, reached) in route {
        let (a, _, _) = search.edges[edge];
        let (relation, reversed) = matched.edges[edge];
        // Walking from a to b: the stored edge points against the walk when it points
        // from b's image to a's; walking from b to a, the other way round.
        let inverse = if reached == a { !reversed } else { reversed };
        steps.push(PathStep {
            relation: graph.relations()[relation as usize].clone(),
            inverse,
            node: graph.entity(matched.nodes[reached])?.clone(),
        });
    }
    Some(Path { start, steps })
}

/// The entities a question names, grouped by name, with their candidates.
pub type NamedEntities = Vec<(String, Vec<(NodeId, f32)>)>;

/// Which of `relations` each relation phrase of `question` is nearest to, and how near.
pub(crate) async fn phrase_relations(
    question: &str,
    names: &[&str],
    relations: &[String],
    vectors_opt: Option<&TextVectors>,
) -> PhraseRelations {
    let phrases = run_phrases(question, names);
    similarities(&phrases, relations, vectors_opt)
        .await
        .into_iter()
        .zip(phrases)
        .filter_map(|(row, phrase)| {
            let (relation, (_, similarity)) = row
                .iter()
                .copied()
                .enumerate()
                .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))?;
            let letters = row.iter().map(|(l, _)| *l).fold(0.0, f32::max);
            let second = row
                .iter()
                .enumerate()
                .filter(|(r, _)| *r != relation)
                .map(|(_, (_, overall))| *overall)
                .fold(0.0, f32::max);
            Some((
                phrase,
                PhraseNearest {
                    relation,
                    similarity,
                    letters,
                    alone: similarity > second,
                },
            ))
        })
        .collect()
}

/// The LLM-free pattern of `question` (see [`pattern_without_model`]); `None` when it
/// names no linked entity.
pub async fn llm_free_pattern(
    question: &str,
    named: &NamedEntities,
    relations: &[String],
    vectors_opt: Option<&TextVectors>,
    max_edges: usize,
) -> Option<Pattern> {
    let names: Vec<&str> = named.iter().map(|(name, _)| name.as_str()).collect();
    let near = phrase_relations(question, &names, relations, vectors_opt).await;
    pattern_without_model(question, &names, max_edges, &near)
}

/// Matches the LLM-free pattern of `question` around `entities` (linked) and returns
/// the closest subgraphs as paths. `relations` are the graph's relation names.
pub async fn match_question(
    store: &dyn GraphStore,
    vectors_opt: Option<&TextVectors>,
    relations: &[String],
    question: &str,
    entities: &[ScoredEntity],
    limits: &MatchLimits,
) -> Result<Matched, StoreError> {
    let named = named_entities(question, entities);
    let Some(pattern) =
        llm_free_pattern(question, &named, relations, vectors_opt, limits.max_edges).await
    else {
        return Ok(Matched {
            notes: vec!["pattern matcher: the question names no linked entity".to_owned()],
            ..Matched::default()
        });
    };
    match_pattern(store, vectors_opt, relations, pattern, &named, limits).await
}

/// The closest subgraphs to `pattern`, whose known nodes are among `named`, as paths.
pub async fn match_pattern(
    store: &dyn GraphStore,
    vectors_opt: Option<&TextVectors>,
    relations: &[String],
    pattern: Pattern,
    named: &NamedEntities,
    limits: &MatchLimits,
) -> Result<Matched, StoreError> {
    let groups = named;
    let known: Vec<Option<Vec<(NodeId, f32)>>> = pattern
        .nodes
        .iter()
        .map(|node| match node {
            PatternNode::Known(name) => groups
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, candidates)| candidates.clone()),
            PatternNode::Unknown => None,
        })
        .collect();
    let by_name =
        relation_distances(&pattern, relations, vectors_opt, limits.relation_candidates).await;
    // A phrase near no relation of the graph asks for something the graph does not
    // say: whatever a search found for it would be a guess, so there is no evidence.
    let unmatched: Vec<&str> = pattern
        .edges
        .iter()
        .zip(&by_name)
        .filter(|(_, candidates)| candidates.is_none())
        .filter_map(|(edge, _)| edge.phrase.as_deref())
        .collect();
    if !unmatched.is_empty() {
        return Ok(Matched {
            notes: vec![format!(
                "pattern matcher: {pattern}; {unmatched:?} near no relation of the graph, no evidence"
            )],
            ..Matched::default()
        });
    }
    let mut notes = Vec::new();
    let mut graph = read_around(store, &pattern, &known, &by_name, limits, &mut notes).await?;
    let search = SearchPattern {
        nodes: known,
        edges: pattern
            .edges
            .iter()
            .zip(&by_name)
            .map(|(edge, candidates)| {
                let by_id = candidates.as_ref().map(|c| {
                    c.iter()
                        .map(|(name, d)| (graph.relation_id(name), *d))
                        .collect()
                });
                (edge.from, edge.to, by_id)
            })
            .collect(),
    };
    let mut outcome = top_k(
        &graph,
        &search,
        SearchLimits {
            k: limits.k.max(1),
            max_steps: limits.max_steps,
        },
    );
    let closest = outcome.matches.first().map(|m| m.distance);
    if let Some(closest) = closest {
        let mean = closest / pattern.edges.len().max(1) as f32;
        if mean > limits.max_mean_distance {
            notes.push(format!(
                "pattern matcher: no subgraph is close to the pattern (mean distance per edge {mean:.2} > {:.2}); no evidence",
                limits.max_mean_distance
            ));
            outcome.matches.clear();
        }
    }
    if outcome.truncated {
        notes.push(format!(
            "pattern matcher: stopped after {} partial matches; the best found so far are kept",
            outcome.steps
        ));
    }
    let mut paths: Vec<(Path, f32)> = Vec::new();
    let mut seen: HashSet<Path> = HashSet::new();
    for matched in &outcome.matches {
        for (v, node) in pattern.nodes.iter().enumerate() {
            if !matches!(node, PatternNode::Known(_)) {
                continue;
            }
            if let Some(path) = path_of(&pattern, &graph, &search, matched, v) {
                if seen.insert(path.clone()) {
                    paths.push((path, matched.distance));
                }
            }
        }
    }
    notes.insert(
        0,
        format!(
            "pattern matcher: {pattern}; {} subgraphs (closest at distance {}) from {} edges read",
            outcome.matches.len(),
            closest.map_or("-".to_owned(), |d| format!("{d:.2}")),
            graph.edge_count()
        ),
    );
    Ok(Matched {
        paths,
        edges_read: graph.edge_count(),
        notes,
    })
}
