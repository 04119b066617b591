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
    messages::{
        cache::RelationCue,
        kg_linker::{KgLinkReply, MAX_READER_REACHES},
    },
    NodeId,
};
use kgmesh_stores::{GraphStore, NeighborQuery, StoreResult};

use crate::{
    entity_linker::core::EXACT_SCORE,
    path_follower::core::stored_edge,
    scoring::answer_type,
    scoring::{
        relevance::{Relevance, TextVectors},
        text::SequenceFit,
    },
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
            top_metapaths: crate::settings::DEFAULT_TOP_METAPATHS,
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
/// in) that leave `sources` in this graph, walked as the path follower walks them:
/// never straight back over the edge just walked. One store call per depth.
pub async fn enumerate_metapaths(
    store: &dyn GraphStore,
    sources: &[NodeId],
    limits: &EnumerateLimits,
) -> StoreResult<Vec<Metapath>> {
    Ok(enumerate_reaching(store, sources, limits)
        .await?
        .into_iter()
        .map(|found| found.metapath)
        .collect())
}

/// A metapath found by enumeration and the nodes it reaches from the sources.
#[derive(Debug, Clone, PartialEq)]
pub struct Reaching {
    pub metapath: Metapath,
    /// Nodes at the end of the metapath, sorted; every one of them when `complete`,
    /// else a sample (some prefix reached more than `sample_per_prefix` nodes).
    pub reached: Vec<NodeId>,
    pub complete: bool,
}

/// A stored edge `(head, relation index, tail)`.
type EdgeKey = (NodeId, u32, NodeId);

/// A node a prefix reaches, and the one edge it reaches it over (`None` for a source,
/// or a node reached over several edges).
type Arrival = (NodeId, Option<EdgeKey>);

/// Nodes one relation step reaches from a prefix: a sample, the edge each sampled node
/// is reached over (see [`Arrival`]), and whether the sample is all of them.
type Extension = (Vec<NodeId>, HashMap<NodeId, Option<EdgeKey>>, bool);

/// [`enumerate_metapaths`], with what each metapath reaches.
pub async fn enumerate_reaching(
    store: &dyn GraphStore,
    sources: &[NodeId],
    limits: &EnumerateLimits,
) -> StoreResult<Vec<Reaching>> {
    let mut found: Vec<Reaching> = Vec::new();
    let mut start: Vec<NodeId> = sources.to_vec();
    start.sort_unstable();
    start.dedup();
    let start: Vec<Arrival> = start.into_iter().map(|id| (id, None)).collect();
    // (steps so far, nodes reached by them and still to expand, all of them or a sample)
    let mut layer: Vec<(Vec<RelationStep>, Vec<Arrival>, bool)> = vec![(Vec::new(), start, true)];
    for _ in 0..limits.max_depth.min(MAX_DEPTH) {
        let mut frontier: Vec<NodeId> = layer
            .iter()
            .flat_map(|(_, n, _)| n.iter().map(|(id, _)| *id))
            .collect();
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
        // A node whose edges were cut at the fan-out cap reaches more than we see.
        let mut degree: HashMap<NodeId, usize> = HashMap::new();
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
            *degree.entry(edge.head).or_default() += 1;
            *degree.entry(edge.tail).or_default() += 1;
        }
        let mut next: Vec<(Vec<RelationStep>, Vec<Arrival>, bool)> = Vec::new();
        for (prefix, nodes, prefix_complete) in &layer {
            let mut extensions: HashMap<(u32, Direction), Extension> = HashMap::new();
            let all_edges_seen = nodes
                .iter()
                .all(|(node, _)| degree.get(node).copied().unwrap_or(0) < limits.fanout_cap);
            for (node, arrived_over) in nodes {
                for (relation, direction, far) in by_node.get(node).into_iter().flatten() {
                    if far == node {
                        continue;
                    }
                    let edge = stored_edge(*node, *relation, *direction == Direction::In, *far);
                    // As the path follower walks: never straight back over the one
                    // edge that led here ("X's child's parent" is X, over the child's
                    // own `parents` edge, not back along X's `children` edge).
                    if *arrived_over == Some(edge) {
                        continue;
                    }
                    let entry = extensions
                        .entry((*relation, *direction))
                        .or_insert_with(|| (Vec::new(), HashMap::new(), true));
                    if let Some(arrival) = entry.1.get_mut(far) {
                        // Reached over a second edge: any edge may be walked on from it.
                        if *arrival != Some(edge) {
                            *arrival = None;
                        }
                        continue;
                    }
                    if entry.0.len() < limits.sample_per_prefix {
                        entry.1.insert(*far, Some(edge));
                        entry.0.push(*far);
                    } else {
                        entry.2 = false;
                    }
                }
            }
            let mut steps_found: Vec<(RelationStep, Vec<Arrival>, bool)> = extensions
                .into_iter()
                .filter_map(|((relation, direction), (reached, arrivals, complete))| {
                    let name = neighborhood.names.relation_name(relation)?;
                    let reached = reached
                        .into_iter()
                        .map(|id| (id, arrivals.get(&id).copied().flatten()))
                        .collect();
                    Some((
                        RelationStep {
                            relation: name.to_owned(),
                            direction,
                        },
                        reached,
                        complete && *prefix_complete && all_edges_seen,
                    ))
                })
                .collect();
            // The order a BTreeMap of steps gave: by relation name, then direction.
            steps_found.sort_by(|a, b| a.0.cmp(&b.0));
            for (step, reached, complete) in steps_found {
                let mut steps = prefix.clone();
                steps.push(step);
                let mut sorted: Vec<NodeId> = reached.iter().map(|(id, _)| *id).collect();
                sorted.sort_unstable();
                found.push(Reaching {
                    metapath: Metapath {
                        steps: steps.clone(),
                    },
                    reached: sorted,
                    complete,
                });
                if found.len() >= limits.max_metapaths {
                    return Ok(found);
                }
                next.push((steps, reached, complete));
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
            let words = crate::scoring::text::relation_label(&step.relation);
            match step.direction {
                Direction::In => format!("{words} (inverse)"),
                _ => words,
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The first stage of ranking: every metapath that leaves `sources`, how its relations
/// read against the question, and their order by it; with `words_only`, also how they
/// read by words alone (what the reader compares), else the same scores again.
#[allow(clippy::type_complexity)]
pub async fn first_stage(
    store: &dyn GraphStore,
    relevance: &Relevance,
    sources: &[NodeId],
    limits: &EnumerateLimits,
    words_only: bool,
) -> StoreResult<(Vec<Reaching>, Vec<SequenceFit>, Vec<f32>, Vec<usize>)> {
    let reaching = enumerate_reaching(store, sources, limits).await?;
    let metapaths: Vec<&Metapath> = reaching.iter().map(|r| &r.metapath).collect();
    let texts: Vec<String> = reaching
        .iter()
        .map(|r| metapath_text(&r.metapath))
        .collect();
    let classes = if relevance.terms().answers_class_head().is_some() {
        hop_classes(store, &reaching, relevance.holder_words()).await
    } else {
        Vec::new()
    };
    let fits = relevance
        .metapath_fits_ending(&metapaths, &texts, &classes)
        .await;
    let lexical = if words_only {
        relevance.metapaths_lexically_ending(&metapaths, &classes)
    } else {
        fits.iter().map(|fit| fit.score).collect()
    };
    let mut order: Vec<usize> = (0..reaching.len()).collect();
    order.sort_by(|&a, &b| {
        let (a_path, b_path) = (&reaching[a].metapath, &reaching[b].metapath);
        fits[b]
            .score
            .total_cmp(&fits[a].score)
            .then(a_path.steps.len().cmp(&b_path.steps.len()))
            .then(a_path.cmp(b_path))
    });
    misfits_last(store, relevance, &reaching, &fits, &mut order).await?;
    Ok((reaching, fits, lexical, order))
}

/// Reached nodes read per metapath to tell whether what it reaches can answer.
const FORM_SAMPLE: usize = 5;

/// Reached nodes read per metapath to tell what class they are of ([`hop_classes`]).
pub(crate) const CLASS_SAMPLE: usize = 5;

/// For each metapath, per hop, the classes of the nodes its walk reaches at that hop
/// ([`classes_held`] by a sample of [`CLASS_SAMPLE`] nodes the metapath's prefix of that
/// length reaches; none for a prefix not enumerated).
async fn hop_classes(
    store: &dyn GraphStore,
    reaching: &[Reaching],
    holders: &HashMap<String, Vec<String>>,
) -> Vec<Vec<Vec<String>>> {
    let groups: Vec<&[NodeId]> = reaching
        .iter()
        .map(|r| &r.reached[..r.reached.len().min(CLASS_SAMPLE)])
        .collect();
    let nodes: Vec<NodeId> = groups.iter().flat_map(|g| g.iter().copied()).collect();
    let types = node_types(store, &nodes).await;
    let classes: Vec<Vec<String>> = groups
        .iter()
        .map(|group| classes_held(&types, group, None, holders))
        .collect();
    let by_steps: HashMap<&[RelationStep], usize> = reaching
        .iter()
        .enumerate()
        .map(|(index, r)| (r.metapath.steps.as_slice(), index))
        .collect();
    reaching
        .iter()
        .map(|r| {
            (1..=r.metapath.steps.len())
                .map(|len| {
                    by_steps
                        .get(&r.metapath.steps[..len])
                        .map(|&index| classes[index].clone())
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect()
}

/// What the graph says of the classes of `nodes`
/// ([`crate::reader::types::NodeTypes::read`]); nothing where it cannot be read (logged).
pub async fn node_types(
    store: &dyn GraphStore,
    nodes: &[NodeId],
) -> crate::reader::types::NodeTypes {
    match crate::reader::types::NodeTypes::read(store, nodes).await {
        Ok(types) => types,
        Err(error) => {
            tracing::warn!(%error, "classes of what the paths reach not read");
            Default::default()
        }
    }
}

/// The stems of the classes at least half of `group` (what one relation sequence
/// reaches at one hop) are of, as the graph says: the head nouns of the classes a node
/// declares over a type relation ("music *genre*"), and what the relations pointing to
/// it call what they reach (the
/// `former_club` of players is a club,
/// [`crate::reader::types::NodeTypes::reached_name_stems`]). With `own`, the classes
/// `own` declares and those the relations pointing to the group call at least half of
/// it: a declared class tells one node from the others reached alike (the nurses among
/// a department's staff), the relations' names only what most of them are. What a
/// question's class word is matched with ([`Relevance::metapath_fits_ending`]).
///
/// A past participle before a preposition other than "by" (`programmed in`,
/// [`crate::scoring::text::participle_not_by_agent`]) calls nothing here: a noun
/// sharing its stem names what has the relation as often as what it reaches (the
/// languages programs are `programmed in` are no programs). Its stem still says
/// what kind of name the nodes are ([`kinds_held`]: `based in` reaches a place), but
/// never a person (what a course is `taught in` is no teacher).
pub fn classes_held(
    types: &crate::reader::types::NodeTypes,
    group: &[NodeId],
    own: Option<NodeId>,
    holders: &HashMap<String, Vec<String>>,
) -> Vec<String> {
    stems_held(types, group, own, holders, false)
}

/// [`classes_held`], with the stems of participles before a preposition other than
/// "by" that name no person where `participles` (what [`kinds_held`] reads).
fn stems_held(
    types: &crate::reader::types::NodeTypes,
    group: &[NodeId],
    own: Option<NodeId>,
    holders: &HashMap<String, Vec<String>>,
    participles: bool,
) -> Vec<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for &node in group {
        let mut stems = types.reached_name_stems(node, holders, participles);
        if own.is_none() {
            stems.extend(types.declared_heads(node).map(str::to_owned));
        }
        for stem in stems {
            *count.entry(stem).or_default() += 1;
        }
    }
    let mut held: Vec<String> = count
        .into_iter()
        .filter(|&(_, n)| 2 * n >= group.len())
        .map(|(stem, _)| stem)
        .collect();
    if let Some(node) = own {
        held.extend(types.declared_heads(node).map(str::to_owned));
    }
    held.sort();
    held.dedup();
    held
}

/// The kinds of name (a person, an organization, a place …) that at least half of
/// `group` is of, as the class words of [`classes_held`] name them in the answer types'
/// lexicon ([`answer_type::stem_type`]): what the relations pointing to the nodes call
/// them (`spouse` a person, `place_of_birth` a place) and their declared classes' head
/// nouns; and an organization where a node's name says so by its form ("Northgale
/// Systems", [`answer_type::form_type`]), since a relation's agent noun (`developer`,
/// `owner`) may call a company what the lexicon reads as a person. Empty where nothing
/// names a kind.
pub fn kinds_held(
    types: &crate::reader::types::NodeTypes,
    group: &[NodeId],
    holders: &HashMap<String, Vec<String>>,
) -> Vec<answer_type::AnswerType> {
    let organization = answer_type::AnswerType::Organization;
    let mut kinds: Vec<answer_type::AnswerType> = stems_held(types, group, None, holders, true)
        .iter()
        .filter_map(|stem| answer_type::stem_type(stem))
        .collect();
    if group.iter().any(|&node| {
        types
            .name(node)
            .is_some_and(|name| answer_type::form_type(name, "") == organization)
    }) {
        kinds.push(organization);
    }
    kinds.sort_by_key(|kind| kind.name());
    kinds.dedup();
    kinds
}

/// Whether `kinds` ([`kinds_held`]) rule out answering a question asking for `asked`:
/// some kind is named and none fits what is asked ([`answer_type::fit`] 0).
pub fn kinds_misfit(asked: answer_type::AnswerType, kinds: &[answer_type::AnswerType]) -> bool {
    !kinds.is_empty()
        && kinds
            .iter()
            .all(|&kind| answer_type::fit(asked, kind) == 0.0)
}

/// When the first of `order` reaches only what cannot answer the question by its form
/// (numbers where a person or place is asked, names where a date or year is,
/// [`answer_type::form_misfits`]) and another metapath reaches something that can
/// while leaving at most one more of its hops unexplained by the question's words
/// (`fits`; the asking word explains that one by its end's form), those metapaths go
/// first, in their order: "when did X come out" over a graph where no
/// relation is named like "come out" is planned along the relation that reaches a
/// year, not one that reaches a person. A longer walk to some year ("when was X born"
/// → where X was born → a publisher based there → the year it was founded) explains
/// no more of the question than the form of its end, and stays where it was. The
/// summarizer sets aside such evidence paths the same way; planning by it brings the
/// path that can answer into the evidence at all. The question's words outside its
/// entities' names are read ([`Relevance::asking`]). When the first's form fits, the
/// kind of name it reaches may still not ([`kinds_last`]), nor that of the one put first
/// here.
async fn misfits_last(
    store: &dyn GraphStore,
    relevance: &Relevance,
    reaching: &[Reaching],
    fits: &[SequenceFit],
    order: &mut [usize],
) -> StoreResult<()> {
    let Some(asked) = answer_type::asked_by_form(relevance.asking()) else {
        return Ok(());
    };
    let mut sample: Vec<NodeId> = reaching
        .iter()
        .flat_map(|r| r.reached.iter().take(FORM_SAMPLE).copied())
        .collect();
    sample.sort_unstable();
    sample.dedup();
    let names: HashMap<NodeId, String> = store
        .entities(&sample)
        .await?
        .into_iter()
        .map(|e| (e.id, e.name))
        .collect();
    let misfit: Vec<bool> = reaching
        .iter()
        .map(|r| {
            let mut forms = r
                .reached
                .iter()
                .take(FORM_SAMPLE)
                .filter_map(|id| names.get(id))
                .peekable();
            forms.peek().is_some() && forms.all(|name| answer_type::form_misfits(asked, name))
        })
        .collect();
    let Some(&first) = order.first() else {
        return Ok(());
    };
    if !misfit[first] {
        return kinds_last(store, relevance, reaching, fits, order).await;
    }
    let unexplained = fits[first].unexplained_hops;
    // The asking word explains one hop by the form of its end.
    let answers = |i: usize| !misfit[i] && fits[i].unexplained_hops <= unexplained + 1;
    if order.iter().any(|&i| answers(i)) {
        order.sort_by_key(|&i| !answers(i));
        // The one now first reaches the form asked; the kind of name it reaches may
        // still not be ("where is X": a stadium's clubs before the town it is in).
        return kinds_last(store, relevance, reaching, fits, order).await;
    }
    Ok(())
}

/// When the question's wh-phrase asks for a person or a place ("who", "where", "which
/// city", [`answer_type::asked_by_wh_phrase`]) and the first of `order` reaches names the
/// relations pointing to them call another kind ([`kinds_held`]: "where does X's spouse
/// work", a spouse being a person), the candidates among the first [`KIND_CANDIDATES`]
/// that reach no other kind, leaving at most one more hop unexplained, go first: those
/// that reach the kind asked (or a near one, [`answer_type::fit`]) before those whose
/// kind nothing names, each in its order. The summarizer sets aside evidence paths the
/// same way. Where the first's kinds fit, its ties are ordered by the kind asked
/// ([`asked_kind_first_among_ties`]).
async fn kinds_last(
    store: &dyn GraphStore,
    relevance: &Relevance,
    reaching: &[Reaching],
    fits: &[SequenceFit],
    order: &mut [usize],
) -> StoreResult<()> {
    let Some(asked) = answer_type::asked_by_wh_phrase(relevance.asking()) else {
        return Ok(());
    };
    let first = order[0];
    let first_kinds = kinds_reached(store, relevance, reaching, &[first])
        .await
        .remove(&first)
        .unwrap_or_default();
    if !kinds_misfit(asked, &first_kinds) {
        if !first_kinds.contains(&asked) {
            asked_kind_first_among_ties(store, relevance, reaching, fits, order, asked).await;
        }
        return Ok(());
    }
    // The others' kinds, the first's being read already.
    let window = order.len().min(KIND_CANDIDATES);
    let kinds_of = kinds_reached(store, relevance, reaching, &order[1..window]).await;
    let unexplained = fits[first].unexplained_hops;
    // Per candidate: 0 reaches the kind asked, 1 no named kind, 2 another kind or too far.
    let rank: HashMap<usize, u8> = order[..window]
        .iter()
        .map(|&i| {
            if i == first {
                return (i, 2);
            }
            let kinds = &kinds_of[&i];
            let rank = if kinds_misfit(asked, kinds) || fits[i].unexplained_hops > unexplained + 1 {
                2
            } else if kinds
                .iter()
                .any(|&kind| answer_type::fit(asked, kind) > 0.0)
            {
                0
            } else {
                1
            };
            (i, rank)
        })
        .collect();
    if rank.values().any(|&r| r < 2) {
        order[..window].sort_by_key(|i| rank[i]);
    }
    Ok(())
}

/// Candidates read for the kind of what they reach when the first reaches another kind
/// than the one asked ([`kinds_last`]). Chosen before any measurement: the first stage's
/// order puts the plans that explain as much of the question first.
const KIND_CANDIDATES: usize = 40;

/// The kinds of name each of `candidates` (indices into `reaching`) reaches
/// ([`kinds_held`] by a sample of [`CLASS_SAMPLE`] of its ends), their classes read in
/// one call.
async fn kinds_reached(
    store: &dyn GraphStore,
    relevance: &Relevance,
    reaching: &[Reaching],
    candidates: &[usize],
) -> HashMap<usize, Vec<answer_type::AnswerType>> {
    let sample = |i: usize| &reaching[i].reached[..reaching[i].reached.len().min(CLASS_SAMPLE)];
    let nodes: Vec<NodeId> = candidates
        .iter()
        .flat_map(|&i| sample(i).iter().copied())
        .collect();
    let types = node_types(store, &nodes).await;
    let holders = relevance.holder_words();
    candidates
        .iter()
        .map(|&i| (i, kinds_held(&types, sample(i), holders)))
        .collect()
}

/// Among the candidates tied first (as alike by the question's words, as many hops
/// unexplained, as long), those reaching the kind of name the question asks for
/// ([`kinds_held`]) go first, each in its order; for a first that does not reach it:
/// "who works at X" over departments `part of` X is the staff working in them, not the
/// department its medical director works in (a department may answer "who", but
/// less well than a person).
async fn asked_kind_first_among_ties(
    store: &dyn GraphStore,
    relevance: &Relevance,
    reaching: &[Reaching],
    fits: &[SequenceFit],
    order: &mut [usize],
    asked: answer_type::AnswerType,
) {
    let first = order[0];
    let tied = order
        .iter()
        .take_while(|&&i| {
            fits[i].score == fits[first].score
                && fits[i].unexplained_hops == fits[first].unexplained_hops
                && reaching[i].metapath.steps.len() == reaching[first].metapath.steps.len()
        })
        .count()
        .min(KIND_CANDIDATES);
    if tied < 2 {
        return;
    }
    let kinds_of = kinds_reached(store, relevance, reaching, &order[1..tied]).await;
    let reaches_asked = |i: &usize| *i != first && kinds_of[i].contains(&asked);
    if order[1..tied].iter().any(reaches_asked) {
        order[..tied].sort_by_key(|i| !reaches_asked(i));
    }
}

/// Metapaths around `entities`, ranked against the question, best first: the first
/// stage's order, its best candidates re-ranked by the learned reader
/// ([`crate::reader`]) when one is in use.
pub async fn rank_metapaths(
    store: &dyn GraphStore,
    relevance: &Relevance,
    entities: &[Entity],
    limits: &EnumerateLimits,
    top: usize,
) -> StoreResult<Vec<ScoredMetapath>> {
    Ok(
        rank_metapaths_with_confidence(store, relevance, entities, limits, top)
            .await?
            .metapaths,
    )
}

/// Ranked metapaths and what the reader said of them.
#[derive(Debug, Clone, Default)]
pub struct Ranking {
    pub metapaths: Vec<ScoredMetapath>,
    /// The chance that the first is right; `None` without a reader (or its fitted
    /// confidence).
    pub confidence: Option<f32>,
    /// The reader re-ranked the first stage's order (its first plan is the reader's).
    pub reranked: bool,
    /// With the first stage's order standing: the nodes the plan the reader's weights
    /// rank first reaches, when all are known (`KgLinkReply::reader_reaches`).
    pub reader_reaches: Option<Vec<NodeId>>,
    /// With the first stage's order standing: the first plan, when the reader's weights
    /// chose it among plans the first stage ranked equally first
    /// (`KgLinkReply::reader_tie`).
    pub reader_tie: Option<Metapath>,
}

/// [`rank_metapaths`], with the reader's chance that the first is right: for its own
/// order when it re-ranks, for the first stage's when it only estimates.
pub async fn rank_metapaths_with_confidence(
    store: &dyn GraphStore,
    relevance: &Relevance,
    entities: &[Entity],
    limits: &EnumerateLimits,
    top: usize,
) -> StoreResult<Ranking> {
    let ids: Vec<NodeId> = entities.iter().map(|e| e.id).collect();
    let readers = crate::reader::active();
    let rerank = readers.as_ref().is_some_and(|r| r.rerank);
    let (reaching, fits, lexical, mut order) =
        first_stage(store, relevance, &ids, limits, readers.is_some()).await?;
    let mut confidence = None;
    let mut reader_reaches = None;
    let mut reader_tie = None;
    if let Some(readers) = readers.filter(|_| !reaching.is_empty()) {
        let vectors = relevance.word_vectors().map(|v| v.as_ref());
        if rerank {
            let first = crate::reader::FirstStage {
                reaching: &reaching,
                fits: &fits,
                lexical: &lexical,
                order: &order,
            };
            let model = readers.for_reading(vectors.is_some());
            (order, confidence) = crate::reader::rerank(
                store,
                model,
                relevance.question(),
                relevance.terms(),
                vectors,
                &ids,
                &first,
            )
            .await?;
        } else {
            // The first stage's order stands; its chance is read by words alone, with
            // an embedder too: reading by meaning would cost a call into the embedder
            // per question for an estimate no better overall (docs/confidence.md).
            let model = readers.for_reading(false);
            if model.first_stage_confidence.is_some() {
                let first = crate::reader::FirstStage {
                    reaching: &reaching,
                    fits: &fits,
                    lexical: &lexical,
                    order: &order,
                };
                let crate::reader::Candidates {
                    mut rows, types, ..
                } = crate::reader::candidate_features(
                    store,
                    relevance.question(),
                    relevance.terms(),
                    None,
                    &ids,
                    &first,
                    model.candidates,
                    Some(&model.lexicon),
                )
                .await?;
                // Where the first stage's word match ranks several plans equally first,
                // it cannot tell them apart: the learned reader's choice goes first
                // when it is one of them. Read by words only: with an embedder, the
                // summarizer breaks such ties by meaning, which chose better on the zoo
                // (docs/reader.md).
                let tied = if vectors.is_none() {
                    (0..rows.len())
                        .filter(|&row| ties_first(&reaching, &fits, &order, row))
                        .count()
                } else {
                    0
                };
                // The reader's choice must also be one its lexicon knows a question word
                // for: where it only knows words against the others, the tie stays.
                let choice = model.first_choice(&rows).filter(|&row| {
                    tied > 1
                        && ties_first(&reaching, &fits, &order, row)
                        && crate::reader::ReaderModel::lexicon_supports(&rows[row])
                });
                if let Some(row) = choice {
                    if row > 0 {
                        let index = order.remove(row);
                        order.insert(0, index);
                        // The same candidates, another order: their classes stand.
                        let first = crate::reader::FirstStage {
                            reaching: &reaching,
                            fits: &fits,
                            lexical: &lexical,
                            order: &order,
                        };
                        rows = crate::reader::candidate_features_read(
                            relevance.question(),
                            relevance.terms(),
                            None,
                            &ids,
                            &first,
                            model.candidates,
                            Some(&model.lexicon),
                            types,
                        )
                        .await
                        .rows;
                    }
                    let chosen = &reaching[order[0]].metapath;
                    tracing::debug!(
                        plan = %metapath_text(chosen),
                        tied,
                        "the learned reader broke the first stage's tie"
                    );
                    reader_tie = Some(chosen.clone());
                }
                confidence = model.first_stage_chance(&rows);
                reader_reaches = model
                    .first_choice(&rows)
                    .and_then(|row| order.get(row))
                    .map(|&index| &reaching[index])
                    .filter(|r| r.complete && r.reached.len() <= MAX_READER_REACHES)
                    .map(|r| r.reached.clone());
            }
        }
    }
    let scores: Vec<f32> = fits.iter().map(|fit| fit.score).collect();
    // A metapath as long as a better one that reaches exactly the same nodes
    // (`children` and `parents (inverse)`, a symmetric `spouse` either way) adds
    // nothing: skip it, so the `top` slots go to metapaths that can find something new.
    // (Only equal lengths compare: a longer metapath reaching the same nodes may be
    // the one the question spells out, "X's child's parent's child" for X's children.)
    let mut kept: Vec<ScoredMetapath> = Vec::with_capacity(top);
    let mut kept_reach: HashSet<(usize, &[NodeId])> = HashSet::new();
    for index in order {
        if kept.len() >= top {
            break;
        }
        let candidate = &reaching[index];
        let length = candidate.metapath.steps.len();
        if candidate.complete && !kept_reach.insert((length, candidate.reached.as_slice())) {
            continue;
        }
        kept.push(ScoredMetapath {
            metapath: candidate.metapath.clone(),
            score: scores[index],
        });
    }
    Ok(Ranking {
        metapaths: kept,
        confidence,
        reranked: rerank,
        reader_reaches,
        reader_tie,
    })
}

/// Whether the candidate at `row` of `order` reads the question as well as the first
/// by the first stage's word match (the same score) and has as many hops: the first
/// stage cannot tell them apart. (Among equal scores it puts the shorter paths first on
/// purpose; that order is not a tie.)
fn ties_first(reaching: &[Reaching], fits: &[SequenceFit], order: &[usize], row: usize) -> bool {
    match (order.first(), order.get(row)) {
        (Some(&first), Some(&other)) => {
            fits[other].score >= fits[first].score
                && reaching[other].metapath.steps.len() == reaching[first].metapath.steps.len()
        }
        _ => false,
    }
}

/// Question entities found by the gazetteer: longest mentions first, up to
/// `config.max_entities` mentions and `config.per_mention` nodes each. Only mentions
/// that name the question's entities count ([`entity_mention_mask`]): none when the
/// question writes a name the graph does not hold.
///
/// [`entity_mention_mask`]: crate::scoring::text::entity_mention_mask
pub fn link_question_entities(
    question: &str,
    index: &Gazetteer,
    config: &LinkerConfig,
) -> (Vec<String>, Vec<ScoredEntity>) {
    let found = index.exact_mentions(question, config.max_mention_words, 2);
    let texts: Vec<&str> = found.iter().map(String::as_str).collect();
    let keep = crate::scoring::text::entity_mention_mask(question, &texts);
    let mentions: Vec<String> = found
        .into_iter()
        .zip(keep)
        .filter_map(|(mention, keep)| keep.then_some(mention))
        .take(config.max_entities)
        .collect();
    let delimited = index.delimited_mentions(question);
    let mut linked: Vec<ScoredEntity> = Vec::new();
    let mut seen = HashSet::new();
    for mention in &mentions {
        // A delimited name links the nodes spelled as written, when some are.
        let named: Vec<&Entity> = match delimited.iter().find(|m| &m.text == mention) {
            Some(written) => written.candidates.iter().map(|c| &c.entity).collect(),
            None => index.named_normalized(mention).iter().collect(),
        };
        for entity in named.into_iter().take(config.per_mention) {
            if seen.insert(entity.id) {
                linked.push(ScoredEntity {
                    entity: entity.clone(),
                    score: EXACT_SCORE,
                });
            }
        }
    }
    if linked.is_empty() {
        // No name of the graph is written as such: the closest names the question
        // nearly writes (a misspelling, a dropped letter), each scored below an exact
        // link so that the reply can say it was read as that name (only spans the
        // question writes as names, `find_misspelled_mentions`).
        let mut fuzzy: Vec<_> = index
            .find_misspelled_mentions(question)
            .into_iter()
            .filter(|m| !m.exact && !m.candidates.is_empty())
            .collect();
        fuzzy.sort_by(|a, b| b.candidates[0].score.total_cmp(&a.candidates[0].score));
        let mut mentions = Vec::new();
        for mention in fuzzy.into_iter().take(config.max_entities) {
            for candidate in mention.candidates.into_iter().take(1) {
                if seen.insert(candidate.entity.id) {
                    linked.push(candidate);
                }
            }
            mentions.push(mention.text);
        }
        return (mentions, linked);
    }
    (mentions, linked)
}

/// [`link_question_entities`], less the mentions that name a class rather than an
/// entity: a node other nodes point to over a type relation (`instance of`, `is_a`,
/// `rdf:type`, …, see [`crate::reader::types::is_type_relation`]) is a class, and a
/// question writing its name ("what is X's *record label*", "which *hospital* …")
/// says what the answer is, not where to start. Kept when nothing else is linked.
pub async fn link_entities(
    store: &dyn GraphStore,
    question: &str,
    index: &Gazetteer,
    config: &LinkerConfig,
) -> StoreResult<(Vec<String>, Vec<ScoredEntity>)> {
    let (mentions, linked) = link_question_entities(question, index, config);
    if mentions.len() < 2 {
        return Ok((mentions, linked));
    }
    let ids: Vec<NodeId> = linked.iter().map(|s| s.entity.id).collect();
    let query = NeighborQuery {
        direction: Direction::In,
        relations: None,
        fanout_cap: crate::reader::TYPE_FANOUT,
    };
    let edges = store.neighbor_edges(&ids, &query).await?;
    let classes: HashSet<NodeId> = edges
        .edges
        .iter()
        .filter(|e| {
            edges
                .names
                .relation_name(e.relation)
                .is_some_and(crate::reader::types::is_type_relation)
        })
        .map(|e| e.tail)
        .collect();
    if classes.is_empty() {
        return Ok((mentions, linked));
    }
    let names_class = |mention: &String| {
        let named = index.named_normalized(mention);
        !named.is_empty() && named.iter().all(|e| classes.contains(&e.id))
    };
    let (class_mentions, entity_mentions): (Vec<String>, Vec<String>) =
        mentions.into_iter().partition(names_class);
    if entity_mentions.is_empty() {
        return Ok((class_mentions, linked));
    }
    let linked = linked
        .into_iter()
        .filter(|s| !classes.contains(&s.entity.id))
        .collect();
    Ok((entity_mentions, linked))
}

/// The graph's relation names (none when its schema cannot be read: word embeddings
/// then compare a question word with the relations being ranked).
pub async fn graph_relations(store: &dyn GraphStore) -> Arc<[String]> {
    match store.schema().await {
        Ok(schema) => schema.relations.iter().map(|r| r.name.clone()).collect(),
        Err(error) => {
            tracing::warn!(%error, "graph schema not read; words matched against the ranked relations");
            Arc::from(Vec::new())
        }
    }
}

/// For each relation named "A of B" ([`crate::scoring::text::of_phrase`]) whose
/// example edges the schema holds, the stems of the side that calls what has the
/// relation, as the graph's names show it by embedding: B where A read against the
/// tails' names and B against the heads' fits better than the other way round
/// ("original language of *film*": its heads are films, its tails languages), A where
/// it fits worse ("*member* of sports team": its tails are teams). Words alone do not
/// tell the two readings apart; without an embedder, or where the embedder fails,
/// every word of such a name may name what the relation reaches, as before.
pub async fn holder_words(
    store: &dyn GraphStore,
    vectors: &TextVectors,
) -> Arc<HashMap<String, Vec<String>>> {
    use crate::scoring::text::{content_stems, of_phrase};
    let Ok(schema) = store.schema().await else {
        return Arc::default();
    };
    // (relation, A, B, [(head, tail)]) of each relation the question may be read by.
    let mut phrased = Vec::new();
    for relation in &schema.relations {
        let Some((reaches, has)) = of_phrase(&relation.name) else {
            continue;
        };
        let arrow = format!(" -[{}]-> ", relation.name);
        let pairs: Vec<(String, String)> = relation
            .examples
            .iter()
            .filter_map(|example| example.split_once(&arrow))
            .map(|(head, tail)| (head.to_owned(), tail.to_owned()))
            .filter(|(head, tail)| !head.is_empty() && !tail.is_empty())
            .collect();
        if !pairs.is_empty() {
            phrased.push((relation.name.clone(), reaches, has, pairs));
        }
    }
    if phrased.is_empty() {
        return Arc::default();
    }
    let mut texts: Vec<String> = Vec::new();
    for (_, reaches, has, pairs) in &phrased {
        texts.push(reaches.clone());
        texts.push(has.clone());
        for (head, tail) in pairs {
            texts.push(head.clone());
            texts.push(tail.clone());
        }
    }
    let found = match vectors.vectors(&texts).await {
        Ok(found) => found,
        Err(error) => {
            tracing::warn!(%error, "relation names not read against their examples");
            return Arc::default();
        }
    };
    let vector: HashMap<&str, &[f32]> = texts
        .iter()
        .map(String::as_str)
        .zip(found.iter().map(|v| &v[..]))
        .collect();
    let cos = |a: &str, b: &str| kgmesh_models::cosine(vector[a], vector[b]);
    let mut holders = HashMap::new();
    for (relation, reaches, has, pairs) in &phrased {
        let as_written: f32 = pairs
            .iter()
            .map(|(head, tail)| {
                (cos(reaches, tail) + cos(has, head)) - (cos(reaches, head) + cos(has, tail))
            })
            .sum();
        if as_written > 0.0 {
            holders.insert(relation.clone(), content_stems(has));
        } else if as_written < 0.0 {
            holders.insert(relation.clone(), content_stems(reaches));
        }
    }
    Arc::new(holders)
}

/// Named entities whose properties are looked up at most.
const PROPERTY_ENTITIES: usize = 3;
/// Property keys looked up per question at most.
const PROPERTY_KEYS: usize = 2;

/// Read-only Cypher reading the properties a question asks for of its named entities
/// ("what is the *unit price* of Chai" → `MATCH (n {name: 'Chai'}) RETURN
/// n.`unitPrice``), so that a node's property values can be answers, as its
/// neighbours are. A property key is asked for when the words of its name
/// (`unitPrice` → "unit", "price") are the question's: the keys explaining the most
/// question words, then the largest share of their own words, win; none when no key
/// explains a word, or when more than [`PROPERTY_KEYS`] tie. Keys of every label are
/// candidates (an entity's label is not known here); the query executor runs the
/// queries, and a key the entity lacks gives no row.
pub async fn property_lookups(
    store: &dyn GraphStore,
    relevance: &Relevance,
    linked: &[ScoredEntity],
) -> Vec<String> {
    use crate::scoring::text::{content_stems, relation_label, CLAIM_MIN};

    let Ok(schema) = store.schema().await else {
        return Vec::new();
    };
    let mut keys: Vec<&str> = schema
        .labels
        .iter()
        .flat_map(|label| label.property_keys.iter().map(String::as_str))
        .filter(|key| !matches!(*key, "name" | "iri" | "id"))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    let terms = relevance.terms();
    // (question words explained, share of the key's words explained) per key.
    let mut scored: Vec<((usize, u32), &str)> = keys
        .into_iter()
        .filter_map(|key| {
            let stems = content_stems(&relation_label(key));
            if stems.is_empty() {
                return None;
            }
            let mut used = vec![false; terms.stems().len()];
            let mut explained = 0;
            for stem in &stems {
                if let Some((similarity, index)) = terms.best_match(stem, &used) {
                    if similarity >= CLAIM_MIN {
                        used[index] = true;
                        explained += 1;
                    }
                }
            }
            let share = (explained * 1000 / stems.len()) as u32;
            (explained > 0).then_some(((explained, share), key))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let Some(&(best, _)) = scored.first() else {
        return Vec::new();
    };
    let chosen: Vec<&str> = scored
        .iter()
        .filter(|(score, _)| *score == best)
        .map(|(_, key)| *key)
        .collect();
    if chosen.len() > PROPERTY_KEYS {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for scored in linked {
        if !names.contains(&scored.entity.name.as_str()) && names.len() < PROPERTY_ENTITIES {
            names.push(&scored.entity.name);
        }
    }
    names
        .iter()
        .flat_map(|name| {
            chosen.iter().map(move |key| {
                format!(
                    "MATCH (n {{name: {}}}) RETURN n.`{}`",
                    cypher_string(name),
                    key.replace('`', "``")
                )
            })
        })
        .collect()
}

/// `text` as a Cypher string literal.
fn cypher_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('\'');
    for c in text.chars() {
        match c {
            '\\' => quoted.push_str("\\\\"),
            '\'' => quoted.push_str("\\'"),
            c => quoted.push(c),
        }
    }
    quoted.push('\'');
    quoted
}

/// Embeds at once the texts a question is read by: its words one by one (the relations
/// they name), what it asks (the reader's features, when a re-ranking reader is
/// installed: the confidence alone reads by words) and its
/// words outside the entities' names (the summarizer's reading). The roles that read
/// them then find them in the shared cache. Each call into the embedder streams all of
/// its weights whatever the texts, so one call with a few short texts costs about what
/// one with a single text does, and much less than three. A failure is only logged here:
/// the roles that need a text embed it again and fall back, visibly, if that fails too.
async fn embed_question_texts(
    vectors: &TextVectors,
    question: &str,
    terms: &crate::scoring::text::QuestionTerms,
    entity_names: &[&str],
) {
    let mut texts: Vec<String> = terms.raw_words().to_vec();
    if crate::reader::active().is_some_and(|readers| readers.rerank) {
        let ask = crate::reader::features::AnswerAsk::read(question, terms);
        texts.extend(ask.relation_raw.iter().cloned());
        texts.extend(ask.class_raw.iter().cloned());
        texts.push(ask.asked_text());
    }
    texts.push(kgmesh_models::lexical::text::words_asking(question, entity_names).join(" "));
    if let Err(error) = vectors.vectors(&texts).await {
        tracing::debug!(%error, "question texts not embedded ahead");
    }
}

/// The stems of the classes the linked entities declare over a type relation (`is_a`,
/// `rdf:type`, `instance of`, `ship_type`, …; [`crate::reader::types::is_type_relation`]):
/// what the graph says they are. Empty where the graph declares none.
async fn declared_class_stems(
    store: &dyn GraphStore,
    entities: &[NodeId],
) -> StoreResult<Vec<String>> {
    let query = NeighborQuery {
        direction: Direction::Out,
        relations: None,
        fanout_cap: crate::reader::TYPE_FANOUT,
    };
    let edges = store.neighbor_edges(entities, &query).await?;
    let types = crate::reader::types::NodeTypes::from_edges(&edges);
    let mut stems: Vec<String> = entities
        .iter()
        .flat_map(|&entity| types.declared(entity).map(str::to_owned))
        .collect();
    stems.sort_unstable();
    stems.dedup();
    Ok(stems)
}

/// What the graph adds to a question's reading: the entities' declared classes (a word
/// calling an entity what the graph says it is not is no class word of it,
/// [`Relevance::with_entity_classes_checked`]), and with an embedder the graph's
/// relations ([`graph_relations`]) and which words of their names call what has them
/// ([`holder_words`]). Where the graph cannot be read, the question is read by its
/// words alone, as without a graph, and the failure logged.
pub async fn read_by_the_graph(
    store: &dyn GraphStore,
    mut relevance: Relevance,
    entities: &[NodeId],
    vectors_opt: Option<&TextVectors>,
) -> Relevance {
    if !relevance.terms().entity_class_words().is_empty() {
        let declared = match declared_class_stems(store, entities).await {
            Ok(declared) => declared,
            Err(error) => {
                tracing::warn!(%error, "entities' declared classes not read; the question read by its words");
                Vec::new()
            }
        };
        if !declared.is_empty() {
            relevance = relevance.with_entity_classes_checked(|word| {
                let word = kgmesh_models::lexical::text::stem(word);
                declared.iter().any(|class| {
                    kgmesh_models::lexical::text::stem_similarity(class, &word)
                        >= crate::scoring::text::CLAIM_MIN
                })
            });
        }
    }
    if let Some(vectors) = vectors_opt {
        relevance = relevance
            .with_graph_relations(graph_relations(store).await)
            .with_holder_words(holder_words(store, vectors).await);
    }
    relevance
}

/// The whole LLM-free KG-Linker step.
pub async fn link_without_llm(
    store: &dyn GraphStore,
    index: &Gazetteer,
    vectors_opt: Option<Arc<TextVectors>>,
    question: &str,
    cues: &[RelationCue],
    config: &LinkerConfig,
) -> StoreResult<KgLinkReply> {
    let (mentions, linked) = link_entities(store, question, index, config).await?;
    if linked.is_empty() {
        return Ok(KgLinkReply {
            mentions,
            ..KgLinkReply::default()
        });
    }
    let names: Vec<&str> = mentions.iter().map(String::as_str).collect();
    let relevance = Relevance::for_metapaths(question, &names, vectors_opt.clone()).with_cues(cues);
    let ids: Vec<NodeId> = linked.iter().map(|s| s.entity.id).collect();
    let relevance = read_by_the_graph(store, relevance, &ids, vectors_opt.as_deref()).await;
    if let Some(vectors) = &vectors_opt {
        let entity_names: Vec<&str> = linked.iter().map(|s| s.entity.name.as_str()).collect();
        embed_question_texts(vectors, question, relevance.terms(), &entity_names).await;
    }
    let cypher = property_lookups(store, &relevance, &linked).await;
    let entities: Vec<Entity> = linked.iter().map(|s| s.entity.clone()).collect();
    let ranking = rank_metapaths_with_confidence(
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
        metapaths: ranking.metapaths.into_iter().map(|s| s.metapath).collect(),
        cypher,
        draft_answers: Vec::new(),
        finish: false,
        model_plan: false,
        confidence: ranking.confidence,
        reader_plan: ranking.reranked && ranking.confidence.is_some(),
        reader_reaches: ranking.reader_reaches,
        reader_tie: ranking.reader_tie,
    })
}
