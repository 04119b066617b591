//! Cache pre-warming (CacheRAG §4.4): verified plans before the first question.
//!
//! Two sources. **Star schemas** sampled from the graph: every (centre, relation,
//! direction) group of a star becomes a question whose answers are the group's other
//! ends, written by a language model when one is configured and from the relation's
//! name otherwise. **Imported QA pairs** ([`QaPair`]: a question, its answers and the
//! topic entity when the input names it, from a dev set or a log of verified answers;
//! `kgmesh-eval` reads the benchmarks' file formats into them): the topic entity is linked, the metapaths from it to the
//! gold answers are found by shortest paths (≤ 3 hops) and among the metapaths that best
//! explain the question's words (by relation names and, with [`Warmer::with_lexicon`],
//! by what earlier verified plans taught), and the one whose replay matches the gold
//! answers best and explains the question best is kept; a question naming several
//! entities may keep one metapath per entity (a conjunction). A plan is kept only when
//! replaying it reaches a gold answer.
//!
//! Entries are keyed like every other cache entry, one per (domain, template): a
//! template seen in many questions is stored once, with the plan most of its verified
//! questions agree on, so re-running a warm-up never duplicates entries.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap, HashSet},
    fmt,
    sync::Arc,
};

use kgmesh_models::{lexical::gazetteer::Gazetteer, parse, prompts, ChatMessage, ChatRequest};
use kgmesh_models::{LanguageModel, LlmError};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, Path, RelationStep},
    messages::cache::{CacheEntry, Isr, Plan},
    NodeId,
};
use kgmesh_stores::{GraphStore, NameMatch, PathLimits, Star, StoreError};

use super::{
    core::{domain_of, entry_key, CacheConfig, PlanCache},
    lexicon::{learnable, Lexicon},
    persist::{PersistError, PlanStore},
    template,
};
use crate::{
    kg_linker::core::{metapath_text, rank_metapaths, EnumerateLimits},
    scoring::{relevance::Relevance, text::relation_label},
};

/// Gold answers looked up one by one when the joint shortest-path search missed them.
const MAX_SINGLE_TARGETS: usize = 10;
/// Distinct candidate metapaths replayed per question.
const MAX_CANDIDATE_METAPATHS: usize = 12;
/// Metapaths around the topic that best explain the question, also tried: the
/// shortest path to an answer is often a shortcut ("X 's mother 's child 's school"
/// is X's own school, one hop away), not what the question says.
const MAX_EXPLAINING_METAPATHS: usize = 12;

/// Why an input did not become a cache entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SkipReason {
    /// The line could not be read as a QA pair.
    BadLine,
    /// No topic entity: the line names none and the name index found no mention.
    NoTopicEntity,
    /// The topic entity the line names is no node of the graph.
    TopicNotInGraph,
    /// The name index does not find the topic entity in the question, so a lookup
    /// could never rebind the plan to it.
    TopicNotLinked,
    /// No gold answer names a node of the graph.
    AnswerNotInGraph,
    /// No path of at most three hops joins the topic entity and a gold answer.
    NoPath,
    /// Replaying the candidate plans reached no gold answer.
    NotVerified,
    /// The question has no maskable entity mention (nothing to rebind).
    NoTemplate,
    /// The language model wrote no usable question for the group.
    NoQuestion,
}

impl SkipReason {
    pub fn describe(self) -> &'static str {
        match self {
            SkipReason::BadLine => "unreadable line",
            SkipReason::NoTopicEntity => "no topic entity in the question",
            SkipReason::TopicNotInGraph => "topic entity not in the graph",
            SkipReason::TopicNotLinked => "topic entity not found by the name index",
            SkipReason::AnswerNotInGraph => "no gold answer in the graph",
            SkipReason::NoPath => "no path of at most 3 hops to a gold answer",
            SkipReason::NotVerified => "no replayed plan reached a gold answer",
            SkipReason::NoTemplate => "no maskable entity mention",
            SkipReason::NoQuestion => "the language model wrote no usable question",
        }
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum WarmError {
    #[error("graph store: {0}")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Persist(#[from] PersistError),
}

/// One verified question and answer to import.
#[derive(Debug, Clone, PartialEq)]
pub struct QaPair {
    pub question: String,
    pub answers: Vec<String>,
    /// The topic entity when the input names it; without one, the entities the
    /// question mentions are linked.
    pub topic: Option<String>,
    /// 1-based line in the input, for reports.
    pub line: usize,
}

/// Builds the name index the cache manager masks questions with.
pub async fn build_gazetteer(graph: &dyn GraphStore) -> Result<Gazetteer, StoreError> {
    let names = crate::entity_linker::core::scan_all_names(graph).await?;
    tokio::task::spawn_blocking(move || Gazetteer::build(names))
        .await
        .map_err(|e| StoreError::Backend {
            detail: format!("gazetteer build failed: {e}"),
        })
}

/// A verified entry before de-duplication by key.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub key: String,
    pub entry: CacheEntry,
}

/// Turns inputs into verified cache entries against one graph.
pub struct Warmer {
    graph: Arc<dyn GraphStore>,
    gazetteer: Arc<Gazetteer>,
    limits: PathLimits,
    /// What earlier verified plans taught, to tell which of the metapaths that reach
    /// an answer the question means.
    lexicon: Option<Arc<Lexicon>>,
}

impl Warmer {
    pub fn new(graph: Arc<dyn GraphStore>, gazetteer: Arc<Gazetteer>) -> Self {
        Self {
            graph,
            gazetteer,
            limits: PathLimits {
                max_depth: 3,
                fanout_cap: 1_000,
                max_paths: 2_000,
            },
            lexicon: None,
        }
    }

    /// Chooses among the metapaths that reach a pair's answers with what `lexicon`
    /// learned (see [`lexicon_of`]) as well as by the words of relation names.
    pub fn with_lexicon(mut self, lexicon: Arc<Lexicon>) -> Self {
        self.lexicon = Some(lexicon);
        self
    }

    /// Links, finds and verifies the plan of one imported pair.
    pub async fn verify_pair(&self, pair: &QaPair) -> Result<Candidate, SkipReason> {
        let mentions = template::linked_mentions(&self.gazetteer, &pair.question);
        let topic_ids: Vec<NodeId> = match &pair.topic {
            Some(name) => {
                let ids = self.resolve_one(name).await;
                if ids.is_empty() {
                    return Err(SkipReason::TopicNotInGraph);
                }
                if !mentions.iter().any(|m| ids.contains(&m.id))
                    && !mentions
                        .iter()
                        .any(|m| m.name.trim().eq_ignore_ascii_case(name.trim()))
                {
                    return Err(SkipReason::TopicNotLinked);
                }
                ids
            }
            None => mentions.iter().map(|m| m.id).collect(),
        };
        if topic_ids.is_empty() {
            return Err(SkipReason::NoTopicEntity);
        }
        let mut gold: Vec<NodeId> = Vec::new();
        for answer in &pair.answers {
            for id in self.resolve_one(answer).await {
                if !gold.contains(&id) && !topic_ids.contains(&id) {
                    gold.push(id);
                }
            }
        }
        if gold.is_empty() {
            return Err(SkipReason::AnswerNotInGraph);
        }
        let mention_names: Vec<&str> = mentions.iter().map(|m| m.name.as_str()).collect();
        let template = template::mask(&pair.question, &mention_names);
        let mut relevance = Relevance::lexical(&pair.question, &mention_names);
        if let Some(lexicon) = &self.lexicon {
            relevance = relevance.with_cues(&lexicon.cues(&template));
        }
        let mut candidates = self.candidate_metapaths(&topic_ids, &gold).await;
        if candidates.is_empty() {
            return Err(SkipReason::NoPath);
        }
        let topic_entities: Vec<Entity> = topic_ids
            .iter()
            .map(|&id| Entity {
                id,
                name: String::new(),
            })
            .collect();
        // A question naming several entities asks for what their paths share (a
        // conjunction); one metapath from one of them explains only part of it, so
        // such a pair keeps the plan that matches the answers best.
        let one_entity = mentions.len() <= 1;
        if one_entity {
            let ranked = rank_metapaths(
                self.graph.as_ref(),
                &relevance,
                &topic_entities,
                &EnumerateLimits::default(),
                MAX_EXPLAINING_METAPATHS,
            )
            .await
            .unwrap_or_default();
            for scored in ranked {
                if !candidates.contains(&scored.metapath) {
                    candidates.push(scored.metapath);
                }
            }
        }
        let texts: Vec<String> = candidates.iter().map(metapath_text).collect();
        let references: Vec<&Metapath> = candidates.iter().collect();
        let explains = if one_entity {
            relevance.metapaths(&references, &texts).await
        } else {
            vec![0.0; references.len()]
        };
        let gold_set: HashSet<NodeId> = gold.iter().copied().collect();
        // (score, F1, metapaths)
        let mut best: Option<(f32, f32, Vec<Metapath>)> = None;
        for (metapath, explained) in candidates.into_iter().zip(explains) {
            let Ok(paths) = self
                .graph
                .follow_metapaths(&topic_ids, std::slice::from_ref(&metapath), &self.limits)
                .await
            else {
                continue;
            };
            let ends: HashSet<NodeId> = paths
                .iter()
                .map(|p| p.end().id)
                .filter(|id| !topic_ids.contains(id))
                .collect();
            let hits = ends.intersection(&gold_set).count();
            if hits == 0 {
                continue;
            }
            let precision = hits as f32 / ends.len() as f32;
            let recall = hits as f32 / gold_set.len() as f32;
            let f1 = 2.0 * precision * recall / (precision + recall);
            // How well the answers match, and how well the relations explain the
            // question's words; ties go to the shorter metapath (candidates arrive
            // shortest first).
            let score = f1 + explained;
            if best.as_ref().is_none_or(|(best, _, _)| score > *best) {
                best = Some((score, f1, vec![metapath]));
            }
        }
        if !one_entity {
            if let Some((f1, metapaths)) = self.conjunctive_plan(&mentions, &gold_set).await {
                if best.as_ref().is_none_or(|(_, best_f1, _)| f1 > *best_f1) {
                    best = Some((f1, f1, metapaths));
                }
            }
        }
        let Some((_, _, metapaths)) = best else {
            return Err(SkipReason::NotVerified);
        };
        if template::slots(&template) == 0 || template::slots(&template) != mentions.len() {
            return Err(SkipReason::NoTemplate);
        }
        let entry = CacheEntry {
            question: pair.question.clone(),
            template,
            isr: Isr {
                topic_entities: pair.topic.iter().cloned().collect(),
                ..Isr::default()
            },
            plan: Plan {
                entities: mentions,
                metapaths,
                cypher: Vec::new(),
            },
            answers: pair.answers.clone(),
            hits: 1,
            failures: 0,
        };
        Ok(candidate(entry))
    }

    /// A plan for a question that names several entities and asks for what they share
    /// ("who plays position P for club C"): from each entity, the metapath whose ends
    /// cover most gold answers with the fewest others; the answers are the nodes every
    /// entity's metapath reaches. Returns the F1 of that intersection and the
    /// metapaths, one per entity, when it reaches a gold answer.
    async fn conjunctive_plan(
        &self,
        mentions: &[Entity],
        gold: &HashSet<NodeId>,
    ) -> Option<(f32, Vec<Metapath>)> {
        let gold_ids: Vec<NodeId> = gold.iter().copied().collect();
        let mut metapaths: Vec<Metapath> = Vec::new();
        let mut shared: Option<HashSet<NodeId>> = None;
        for mention in mentions {
            let from = [mention.id];
            // (gold reached, nodes reached, metapath, ends)
            let mut chosen: Option<(usize, usize, Metapath, HashSet<NodeId>)> = None;
            for metapath in self.candidate_metapaths(&from, &gold_ids).await {
                let Ok(paths) = self
                    .graph
                    .follow_metapaths(&from, std::slice::from_ref(&metapath), &self.limits)
                    .await
                else {
                    continue;
                };
                let ends: HashSet<NodeId> = paths.iter().map(|p| p.end().id).collect();
                let hits = ends.intersection(gold).count();
                let better = chosen.as_ref().is_none_or(|(best_hits, best_size, _, _)| {
                    hits > *best_hits || (hits == *best_hits && ends.len() < *best_size)
                });
                if hits > 0 && better {
                    chosen = Some((hits, ends.len(), metapath, ends));
                }
            }
            let (_, _, metapath, ends) = chosen?;
            if !metapaths.contains(&metapath) {
                metapaths.push(metapath);
            }
            shared = Some(match shared {
                Some(so_far) => so_far.intersection(&ends).copied().collect(),
                None => ends,
            });
        }
        let shared = shared?;
        let hits = shared.intersection(gold).count();
        if hits == 0 {
            return None;
        }
        let precision = hits as f32 / shared.len() as f32;
        let recall = hits as f32 / gold.len() as f32;
        Some((2.0 * precision * recall / (precision + recall), metapaths))
    }

    async fn resolve_one(&self, name: &str) -> Vec<NodeId> {
        let names = [name.to_owned()];
        for mode in [NameMatch::Exact, NameMatch::Normalized] {
            if let Ok(found) = self.graph.resolve(&names, mode).await {
                let ids: Vec<NodeId> = found.into_iter().flatten().map(|e| e.id).collect();
                if !ids.is_empty() {
                    return ids;
                }
            }
        }
        Vec::new()
    }

    /// Metapaths of the shortest paths to the gold answers, shortest first: one joint
    /// search, then one per answer it did not reach (a 3-hop answer set often has a
    /// member one hop away, which would hide the longer relation chain).
    async fn candidate_metapaths(&self, topic: &[NodeId], gold: &[NodeId]) -> Vec<Metapath> {
        let limits = PathLimits {
            max_paths: 200,
            ..self.limits
        };
        let mut found: BTreeSet<(usize, Metapath)> = BTreeSet::new();
        let mut reached: HashSet<NodeId> = HashSet::new();
        if let Ok(paths) = self.graph.shortest_paths(topic, gold, &limits).await {
            for path in &paths {
                reached.insert(path.end().id);
                if let Some(metapath) = metapath_of(path) {
                    found.insert((metapath.steps.len(), metapath));
                }
            }
        }
        for target in gold
            .iter()
            .filter(|id| !reached.contains(id))
            .take(MAX_SINGLE_TARGETS)
        {
            if let Ok(paths) = self
                .graph
                .shortest_paths(topic, std::slice::from_ref(target), &limits)
                .await
            {
                for path in &paths {
                    if let Some(metapath) = metapath_of(path) {
                        found.insert((metapath.steps.len(), metapath));
                    }
                }
            }
        }
        found
            .into_iter()
            .map(|(_, metapath)| metapath)
            .take(MAX_CANDIDATE_METAPATHS)
            .collect()
    }

    /// Entries from sampled stars: one per (centre, relation, direction) group, with a
    /// question from the relation's name (`llm` = `None`) or written by the model.
    /// Returns the entries, the skipped groups (each named: its centre, relation and
    /// question, with why) and the model calls made.
    pub async fn star_entries(
        &self,
        stars: &[Star],
        llm: Option<&dyn LanguageModel>,
    ) -> (Vec<Candidate>, Vec<(String, SkipReason)>, u32) {
        let mut out = Vec::new();
        let mut skipped: Vec<(String, SkipReason)> = Vec::new();
        let mut calls = 0u32;
        for star in stars {
            let groups = star_groups(star);
            if groups.is_empty() {
                continue;
            }
            let written: Vec<Option<String>> = match llm {
                Some(model) => {
                    calls += 1;
                    match write_questions(model, &star.center, &groups).await {
                        Ok(questions) => questions,
                        Err(error) => {
                            tracing::warn!(%error, center = %star.center.name, "question writing failed; using templates");
                            groups.iter().map(|g| Some(g.template_question())).collect()
                        }
                    }
                }
                None => groups.iter().map(|g| Some(g.template_question())).collect(),
            };
            for (group, question) in groups.iter().zip(written) {
                let Some(question) = question else {
                    skipped.push((group.describe(None), SkipReason::NoQuestion));
                    continue;
                };
                match self.verify_group(&star.center, group, &question).await {
                    Ok(candidate) => out.push(candidate),
                    Err(reason) => skipped.push((group.describe(Some(&question)), reason)),
                }
            }
        }
        (out, skipped, calls)
    }

    async fn verify_group(
        &self,
        center: &Entity,
        group: &StarGroup,
        question: &str,
    ) -> Result<Candidate, SkipReason> {
        let template = template::mask(question, &[center.name.as_str()]);
        if template::slots(&template) != 1 {
            return Err(SkipReason::NoTemplate);
        }
        let metapath = Metapath {
            steps: vec![RelationStep {
                relation: group.relation.clone(),
                direction: group.direction,
            }],
        };
        // The group's edges are graph edges; replaying still checks the plan as the
        // coordinator will run it.
        let paths = self
            .graph
            .follow_metapaths(&[center.id], std::slice::from_ref(&metapath), &self.limits)
            .await
            .map_err(|_| SkipReason::NotVerified)?;
        let ends: HashSet<&str> = paths.iter().map(|p| p.end().name.as_str()).collect();
        if !group.answers.iter().any(|a| ends.contains(a.as_str())) {
            return Err(SkipReason::NotVerified);
        }
        Ok(candidate(CacheEntry {
            question: question.to_owned(),
            template,
            isr: Isr {
                topic_entities: vec![center.name.clone()],
                ..Isr::default()
            },
            plan: Plan {
                entities: vec![center.clone()],
                metapaths: vec![metapath],
                cypher: Vec::new(),
            },
            answers: group.answers.clone(),
            hits: 1,
            failures: 0,
        }))
    }
}

fn candidate(entry: CacheEntry) -> Candidate {
    let key = entry_key(&domain_of(&entry.isr), &entry.template);
    Candidate { key, entry }
}

/// A path's relation sequence as a metapath (`None` for a zero-length path).
pub fn metapath_of(path: &Path) -> Option<Metapath> {
    if path.steps.is_empty() {
        return None;
    }
    Some(Metapath {
        steps: path
            .steps
            .iter()
            .map(|step| RelationStep {
                relation: step.relation.clone(),
                direction: if step.inverse {
                    Direction::In
                } else {
                    Direction::Out
                },
            })
            .collect(),
    })
}

/// Edges of one star that share a relation and a direction seen from the centre.
#[derive(Debug, Clone, PartialEq)]
pub struct StarGroup {
    pub center: String,
    pub relation: String,
    pub direction: Direction,
    pub answers: Vec<String>,
}

impl StarGroup {
    /// The group for a report: its centre, relation and direction, and the question
    /// asked of it when there was one.
    pub fn describe(&self, question: Option<&str>) -> String {
        let arrow = match self.direction {
            Direction::In => format!("<-{}-", self.relation),
            _ => format!("-{}->", self.relation),
        };
        match question {
            Some(question) => format!("{} {arrow} (asked \"{question}\")", self.center),
            None => format!("{} {arrow}", self.center),
        }
    }

    /// A question made from the relation's name alone: `directed_by` out of `Heat` is
    /// "what is Heat directed by", into `Michael Mann` "what is directed by Michael Mann".
    pub fn template_question(&self) -> String {
        let relation = relation_label(&self.relation);
        match self.direction {
            Direction::In => format!("what is {relation} {}", self.center),
            _ => format!("what is {} {relation}", self.center),
        }
    }
}

/// The star's edges grouped by (relation, direction from the centre), in a stable order.
pub fn star_groups(star: &Star) -> Vec<StarGroup> {
    let mut groups: BTreeMap<(String, bool), Vec<String>> = BTreeMap::new();
    for triple in &star.triples {
        let (inverse, other) = if triple.head.id == star.center.id {
            (false, &triple.tail)
        } else {
            (true, &triple.head)
        };
        let answers = groups
            .entry((triple.relation.clone(), inverse))
            .or_default();
        if !answers.contains(&other.name) {
            answers.push(other.name.clone());
        }
    }
    groups
        .into_iter()
        .map(|((relation, inverse), answers)| StarGroup {
            center: star.center.name.clone(),
            relation,
            direction: if inverse {
                Direction::In
            } else {
                Direction::Out
            },
            answers,
        })
        .collect()
}

/// CacheRAG §4.4's question writer, one call per star: one question per fact group,
/// naming the centre verbatim, or `NA`.
pub fn question_prompt(center: &Entity, groups: &[StarGroup]) -> ChatRequest {
    let mut facts = String::new();
    for (index, group) in groups.iter().enumerate() {
        let shown: Vec<&str> = group.answers.iter().take(8).map(String::as_str).collect();
        let arrow = match group.direction {
            Direction::In => format!(
                "{} <-[{}]- {}",
                center.name,
                group.relation,
                shown.join("; ")
            ),
            _ => format!(
                "{} -[{}]-> {}",
                center.name,
                group.relation,
                shown.join("; ")
            ),
        };
        facts.push_str(&format!("{}. {arrow}\n", index + 1));
    }
    let user = format!(
        "You write questions people would naturally ask about a knowledge graph.\n\
         Each numbered fact group below links the entity \"{name}\" through one relation \
         to the listed entities. For each group, write one question whose answer is the \
         listed entities. Use the name \"{name}\" exactly as written. Avoid questions \
         about identifiers or bare numbers; write NA when no sensible question exists.\n\
         Reply with one line per group, `N. question`, and nothing else.\n\n{facts}",
        name = center.name
    );
    ChatRequest::new(vec![ChatMessage::user(user)], 512)
}

/// Reads `N. question` lines; `None` for groups the model skipped or answered NA.
pub fn parse_questions(reply: &str, groups: usize) -> Vec<Option<String>> {
    let mut out = vec![None; groups];
    for line in reply.lines() {
        let line = line.trim().trim_start_matches(['-', '*']).trim();
        let digits: String = line.chars().take_while(char::is_ascii_digit).collect();
        let Ok(number) = digits.parse::<usize>() else {
            continue;
        };
        let rest = line[digits.len()..]
            .trim_start_matches(['.', ')', ':'])
            .trim();
        if number == 0 || number > groups || rest.is_empty() {
            continue;
        }
        let rest = rest.trim_matches('"').trim();
        if rest.eq_ignore_ascii_case("na") || rest.eq_ignore_ascii_case("n/a") {
            continue;
        }
        out[number - 1] = Some(rest.to_owned());
    }
    out
}

async fn write_questions(
    model: &dyn LanguageModel,
    center: &Entity,
    groups: &[StarGroup],
) -> Result<Vec<Option<String>>, LlmError> {
    let reply = model.chat(question_prompt(center, groups)).await?;
    Ok(parse_questions(&reply.text, groups.len()))
}

/// The ISR the cache manager would route `question` by: the model's when one is
/// configured (so warmed entries land in the buckets lookups search), else the
/// single default bucket.
pub async fn isr_for(model: &dyn LanguageModel, question: &str) -> Result<Isr, LlmError> {
    let reply = model.chat(prompts::isr::build(question, &[], &[])).await?;
    parse::isr::parse(&reply.text).map_err(|e| LlmError::Malformed(e.to_string()))
}

/// The lexicon the verified candidates teach (one count per template, as the cache
/// keeps them), for a second pass that chooses plans with it.
pub fn lexicon_of(candidates: &[Candidate]) -> Lexicon {
    let mut lexicon = Lexicon::default();
    for candidate in consolidate(candidates.to_vec()) {
        if learnable(&candidate.entry) {
            lexicon.add(&candidate.entry);
        }
    }
    lexicon
}

/// One entry per key: the plan most verified candidates of that key agree on
/// (`hits` = how many), the first such candidate's question and answers.
pub fn consolidate(candidates: Vec<Candidate>) -> Vec<Candidate> {
    let mut by_key: BTreeMap<String, Vec<Candidate>> = BTreeMap::new();
    for candidate in candidates {
        by_key
            .entry(candidate.key.clone())
            .or_default()
            .push(candidate);
    }
    let mut out = Vec::with_capacity(by_key.len());
    for (_, group) in by_key {
        let mut votes: Vec<(u32, usize)> = Vec::new();
        let mut index_of: HashMap<(&[Metapath], &[String]), usize> = HashMap::new();
        for (position, candidate) in group.iter().enumerate() {
            let plan = &candidate.entry.plan;
            let slot = *index_of
                .entry((plan.metapaths.as_slice(), plan.cypher.as_slice()))
                .or_insert_with(|| {
                    votes.push((0, position));
                    votes.len() - 1
                });
            votes[slot].0 += 1;
        }
        // Most votes; ties to the plan seen first.
        let Some(&(count, first)) = votes
            .iter()
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
        else {
            continue;
        };
        let mut chosen = group[first].clone();
        chosen.entry.hits = count;
        out.push(chosen);
    }
    out
}

/// What writing the entries did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteStats {
    /// Entries stored (new or replacing a different plan for the same key).
    pub written: usize,
    /// Entries already cached with the same plan, left as they were.
    pub unchanged: usize,
    /// Entries evicted to keep buckets within capacity.
    pub evicted: usize,
    /// Entries in the cache afterwards.
    pub total: usize,
}

/// Stores `entries` in `store` next to what it already holds, as the cache manager
/// stores a verified plan: an entry whose key is cached with the same plan, or with a
/// different plan verified more often, is left alone (re-runs write nothing), and
/// bucket capacity is enforced.
/// Every write is audited as `principal`'s ([`super::audit`]).
pub async fn write_entries(
    store: &dyn PlanStore,
    config: CacheConfig,
    entries: Vec<Candidate>,
    principal: &kgmesh_schemas::messages::cache::Principal,
) -> Result<WriteStats, WarmError> {
    use super::audit::{AuditAction, AuditEntry};
    let mut cache = PlanCache::new(config);
    for (_, entry) in store.load_all().await? {
        cache.insert(entry);
    }
    let mut stats = WriteStats::default();
    for Candidate { key, entry } in entries {
        let before = cache.get(&key).cloned();
        let offered = cache.offer(entry);
        debug_assert_eq!(offered.key, key);
        let Some(kept) = cache.get(&offered.key).filter(|_| offered.changed) else {
            stats.unchanged += 1;
            continue;
        };
        store.put(&offered.key, kept).await?;
        let audited = AuditEntry::now(
            principal,
            AuditAction::Warmed,
            &offered.key,
            before,
            Some(kept.clone()),
            "imported by cache warm",
        );
        store.append_audit(&audited).await?;
        for key in offered.evicted {
            store.delete(&key).await?;
            let audited = AuditEntry::now(
                principal,
                AuditAction::Evicted,
                &key,
                None,
                None,
                "evicted to keep its bucket within capacity",
            );
            store.append_audit(&audited).await?;
            stats.evicted += 1;
        }
        stats.written += 1;
    }
    stats.total = cache.len();
    Ok(stats)
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::testing::block_on;
    use crate::{cache_manager::persist::FilePlanStore, testing::ScriptedModel};

    const KG: &str = "\
Heat\tdirected_by\tMichael Mann
Heat\tstarred_actors\tAl Pacino
Heat\tstarred_actors\tRobert De Niro
Collateral\tdirected_by\tMichael Mann
Collateral\tstarred_actors\tTom Cruise
Top Gun\tstarred_actors\tTom Cruise
Top Gun\tdirected_by\tTony Scott
The Irishman\tstarred_actors\tRobert De Niro
The Irishman\tdirected_by\tMartin Scorsese
Heat\trelease_year\t1995
Amelie\tin_language\tFrench
";

    fn graph() -> Arc<dyn GraphStore> {
        crate::testing::graph_from_tsv(KG)
    }

    fn warmer() -> Warmer {
        block_on(async {
            let graph = graph();
            let gazetteer = Arc::new(build_gazetteer(graph.as_ref()).await.unwrap());
            Warmer::new(graph, gazetteer)
        })
    }

    #[test]
    fn imported_pairs_keep_only_the_metapath_that_reaches_the_answer() {
        let warmer = warmer();
        // Two hops: the films of Heat's director, reached through directed_by twice.
        let pair = QaPair {
            question: "which films share a director with Heat".into(),
            answers: vec!["Collateral".into()],
            topic: Some("Heat".into()),
            line: 1,
        };
        let found = block_on(warmer.verify_pair(&pair)).expect("verified");
        let steps: Vec<(String, Direction)> = found.entry.plan.metapaths[0]
            .steps
            .iter()
            .map(|s| (s.relation.clone(), s.direction))
            .collect();
        assert_eq!(
            steps,
            vec![
                ("directed_by".to_owned(), Direction::Out),
                ("directed_by".to_owned(), Direction::In)
            ]
        );
        assert_eq!(found.entry.plan.metapaths.len(), 1);
        assert_eq!(
            found.entry.template,
            "which films share a director with <e>"
        );
        assert_eq!(found.entry.plan.entities[0].name, "Heat");

        // One hop, and the answer set decides between two one-hop relations.
        let pair = QaPair {
            question: "who acted in Heat".into(),
            answers: vec!["Al Pacino".into(), "Robert De Niro".into()],
            topic: Some("Heat".into()),
            line: 2,
        };
        let found = block_on(warmer.verify_pair(&pair)).expect("verified");
        assert_eq!(
            found.entry.plan.metapaths[0].steps[0].relation,
            "starred_actors"
        );
    }

    #[test]
    fn a_pair_is_verified_from_its_topic_and_answers_whatever_its_wording() {
        // As `kgmesh cache warm --import` reads an IRN line whose gold path names a
        // relation the graph does not have: the plan comes from the paths between the
        // topic entity and the answer.
        let pair = QaPair {
            question: "which films share a director with Heat ?".into(),
            answers: vec!["Collateral".into()],
            topic: Some("Heat".into()),
            line: 1,
        };
        let found = block_on(warmer().verify_pair(&pair)).expect("verified");
        let relations: Vec<&str> = found.entry.plan.metapaths[0]
            .steps
            .iter()
            .map(|s| s.relation.as_str())
            .collect();
        assert_eq!(relations, ["directed_by", "directed_by"]);
        assert_eq!(found.entry.isr.topic_entities, ["Heat"]);
    }

    #[test]
    fn unverifiable_pairs_are_skipped_with_a_reason() {
        let warmer = warmer();
        let ask = |question: &str, answer: &str, topic: Option<&str>| {
            block_on(warmer.verify_pair(&QaPair {
                question: question.into(),
                answers: vec![answer.into()],
                topic: topic.map(str::to_owned),
                line: 1,
            }))
            .map(|c| c.entry.question)
        };
        assert_eq!(
            ask("who directed Alien", "Ridley Scott", Some("Alien")),
            Err(SkipReason::TopicNotInGraph)
        );
        assert_eq!(
            ask("who directed Heat", "Ridley Scott", Some("Heat")),
            Err(SkipReason::AnswerNotInGraph)
        );
        assert_eq!(
            ask("who directed it", "Michael Mann", None),
            Err(SkipReason::NoTopicEntity)
        );
        // Both exist, but no path joins them.
        assert_eq!(
            ask("what language is Heat in", "French", Some("Heat")),
            Err(SkipReason::NoPath)
        );
        // Several one-hop relations leave Heat; the one kept is the one reaching the
        // gold answer.
        let found = block_on(warmer.verify_pair(&QaPair {
            question: "who is in Heat".into(),
            answers: vec!["Al Pacino".into()],
            topic: Some("Heat".into()),
            line: 1,
        }))
        .unwrap();
        assert_eq!(
            found.entry.plan.metapaths[0].steps[0].relation,
            "starred_actors"
        );
    }

    #[test]
    fn star_groups_become_template_questions_that_replay() {
        let warmer = warmer();
        let star = block_on(async {
            let graph = graph();
            let heat = graph
                .resolve(&["Heat".to_owned()], NameMatch::Exact)
                .await
                .unwrap()[0][0]
                .clone();
            let hood = graph
                .neighbors(
                    &[heat.id],
                    &kgmesh_stores::NeighborQuery {
                        direction: Direction::Both,
                        relations: None,
                        fanout_cap: 100,
                    },
                )
                .await
                .unwrap();
            Star {
                center: heat,
                triples: hood.triples,
            }
        });
        let (entries, skipped, calls) = block_on(warmer.star_entries(&[star], None));
        assert_eq!(calls, 0);
        assert!(skipped.is_empty(), "{skipped:?}");
        let questions: BTreeSet<&str> = entries.iter().map(|c| c.entry.question.as_str()).collect();
        assert_eq!(
            questions,
            BTreeSet::from([
                "what is Heat directed by",
                "what is Heat starred actors",
                "what is Heat release year",
            ])
        );
        let actors = entries
            .iter()
            .find(|c| c.entry.question.contains("starred"))
            .unwrap();
        assert_eq!(actors.entry.template, "what is <e> starred actors");
        assert_eq!(actors.entry.answers, vec!["Al Pacino", "Robert De Niro"]);
    }

    #[test]
    fn relation_names_become_words() {
        assert_eq!(relation_label("directed_by"), "directed by");
        assert_eq!(relation_label("hasGenre"), "has genre");
        assert_eq!(
            relation_label("http://dbpedia.org/ontology/birthPlace"),
            "birth place"
        );
        let group = StarGroup {
            center: "Michael Mann".into(),
            relation: "directed_by".into(),
            direction: Direction::In,
            answers: vec!["Heat".into()],
        };
        assert_eq!(
            group.template_question(),
            "what is directed by Michael Mann"
        );
    }

    #[test]
    fn a_model_writes_the_questions_when_configured() {
        let warmer = warmer();
        let star = Star {
            center: Entity {
                id: block_on(warmer.resolve_one("Heat"))[0],
                name: "Heat".into(),
            },
            triples: Vec::new(),
        };
        let star = Star {
            triples: vec![
                kgmesh_schemas::graph::Triple {
                    head: star.center.clone(),
                    relation: "directed_by".into(),
                    tail: Entity {
                        id: block_on(warmer.resolve_one("Michael Mann"))[0],
                        name: "Michael Mann".into(),
                    },
                },
                kgmesh_schemas::graph::Triple {
                    head: star.center.clone(),
                    relation: "release_year".into(),
                    tail: Entity {
                        id: block_on(warmer.resolve_one("1995"))[0],
                        name: "1995".into(),
                    },
                },
            ],
            ..star
        };
        let model = ScriptedModel::new(vec![Ok("1. Who was the director of Heat?\n2. NA\n")]);
        let (entries, skipped, calls) = block_on(warmer.star_entries(&[star], Some(&model)));
        assert_eq!(calls, 1);
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].entry.question, "Who was the director of Heat?");
        assert_eq!(entries[0].entry.template, "who was the director of <e>");
        assert_eq!(skipped.len(), 1, "{skipped:?}");
        assert_eq!(skipped[0].1, SkipReason::NoQuestion);
        // The skipped group is named: its centre and relation.
        assert!(skipped[0].0.starts_with("Heat "), "{skipped:?}");
        let prompt = &model.prompts()[0];
        assert!(
            prompt.contains("1. Heat -[directed_by]-> Michael Mann"),
            "{prompt}"
        );
    }

    #[test]
    fn question_lines_parse_leniently() {
        assert_eq!(
            parse_questions(
                "1) first?\n- 3. \"third?\"\n2. n/a\n9. out of range\nnoise",
                3
            ),
            vec![Some("first?".to_owned()), None, Some("third?".to_owned())]
        );
    }

    #[test]
    fn consolidation_keeps_the_plan_most_questions_agree_on() {
        let warmer = warmer();
        let pair = |question: &str, answer: &str| QaPair {
            question: question.into(),
            answers: vec![answer.into()],
            topic: None,
            line: 1,
        };
        let candidates: Vec<Candidate> = [
            pair("who directed Heat", "Michael Mann"),
            pair("who directed Collateral", "Michael Mann"),
            pair("who directed Top Gun", "Tony Scott"),
        ]
        .iter()
        .map(|p| block_on(warmer.verify_pair(p)).unwrap())
        .collect();
        assert!(candidates.iter().all(|c| c.key == candidates[0].key));
        let merged = consolidate(candidates);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].entry.hits, 3);
        assert_eq!(merged[0].entry.question, "who directed Heat");
    }

    #[test]
    fn writing_twice_stores_nothing_new() {
        let warmer = warmer();
        let dir = tempfile::tempdir().unwrap();
        let store = FilePlanStore::new(dir.path().join("plans.jsonl"));
        let verified = block_on(warmer.verify_pair(&QaPair {
            question: "who directed Heat".into(),
            answers: vec!["Michael Mann".into()],
            topic: Some("Heat".into()),
            line: 1,
        }))
        .unwrap();
        let first = block_on(write_entries(
            &store,
            CacheConfig::default(),
            vec![verified.clone()],
            &kgmesh_schemas::messages::cache::Principal::local(),
        ))
        .unwrap();
        assert_eq!((first.written, first.unchanged, first.total), (1, 0, 1));
        let again = block_on(write_entries(
            &FilePlanStore::new(dir.path().join("plans.jsonl")),
            CacheConfig::default(),
            vec![verified],
            &kgmesh_schemas::messages::cache::Principal::local(),
        ))
        .unwrap();
        assert_eq!((again.written, again.unchanged, again.total), (0, 1, 1));
        let lines = std::fs::read_to_string(dir.path().join("plans.jsonl"))
            .unwrap()
            .lines()
            .count();
        assert_eq!(lines, 1, "the re-run appended nothing");
    }
}
