//! Stage 2: the KG-Linker's plan for the question (entities, relation paths, Cypher,
//! draft answers), and the entity linker's graph ids for the mentions it names.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    graph::{Metapath, ScoredEntity},
    messages::{
        ask::Degradation,
        cache::Plan,
        entity_linker::LinkRequest,
        kg_linker::{KgLinkReply, KgLinkRequest},
    },
    Role,
};

use super::{cache_lookup::CacheFound, context_for, RunContext};
use crate::calls::RunRecord;

/// What the rounds have linked and planned so far.
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Mentions (lower-cased) already sent to the entity linker, with what came back.
    pub linked_mentions: HashMap<String, Vec<ScoredEntity>>,
    /// Linked question entities, first-linked first.
    pub topic: Vec<ScoredEntity>,
    /// Linked draft answers.
    pub drafts: Vec<ScoredEntity>,
    pub seen_metapaths: HashSet<Metapath>,
    pub seen_cypher: HashSet<String>,
    /// What retrieved the evidence, for the plan cache.
    pub plan: Plan,
    /// Relation paths the summarizer's rule trusts over its own reading: those a
    /// model chose and the graph confirmed, or a replayed verified plan's.
    pub trusted_metapaths: Vec<Metapath>,
    /// What the query executor said would repair the last round's Cypher.
    pub repair_hints: Vec<String>,
}

impl Findings {
    /// Adds `metapath` to the trusted ones, once.
    pub(crate) fn trust(&mut self, metapath: &Metapath) {
        if !self.trusted_metapaths.contains(metapath) {
            self.trusted_metapaths.push(metapath.clone());
        }
    }

    /// Adds entity candidates to the topic or the drafts; true when any is new.
    fn adopt_candidates(&mut self, candidates: Vec<ScoredEntity>, is_draft: bool) -> bool {
        let target = if is_draft {
            &mut self.drafts
        } else {
            &mut self.topic
        };
        let mut added = false;
        for candidate in candidates {
            added |= push_unique(target, candidate);
        }
        added
    }
}

/// What one round asks the retrievers for.
#[derive(Debug, Default)]
pub(crate) struct RoundWork {
    pub metapaths: Vec<Metapath>,
    pub cypher: Vec<String>,
}

/// Asks the KG-Linker for the round's plan; `None` when the call failed (noted).
pub(crate) async fn plan(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    round: u8,
    found: &mut Findings,
    cache: &CacheFound,
) -> Option<KgLinkReply> {
    let (context, _) = context_for(cx, record, Role::KG_LINKER);
    let request = KgLinkRequest {
        question: cx.question.clone(),
        context,
        repair_hints: std::mem::take(&mut found.repair_hints),
        examples: cache.examples.clone(),
        cues: cache.cues.clone(),
    };
    // Worth a note only where the KG-Linker asked the model in an earlier round.
    if record.ledger.model_calls_of(Role::KG_LINKER) > 0
        && record.ledger.meta(round).budget.llm_calls == 0
    {
        record.context.note(format!(
            "round {round}: the kg-linker plans without the model: the question's \
             model calls (budget.llm_calls) are spent or kept for the summarizer"
        ));
    }
    record
        .call_role(
            &cx.caller,
            (&Role::well_known(Role::KG_LINKER), round, "kg-linker"),
            request,
            None,
        )
        .await
}

/// Takes in the KG-Linker's proposals, links new mentions and draft answers, and
/// returns the round's work, or `None` when nothing is new (self-termination).
pub(crate) async fn adopt(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    round: u8,
    found: &mut Findings,
    link: KgLinkReply,
) -> Option<RoundWork> {
    let mut new_anything = false;
    for entity in link.linked {
        new_anything |= push_unique(&mut found.topic, entity);
    }

    let mut to_link: Vec<(String, bool)> = Vec::new();
    let mut queued: HashSet<String> = HashSet::new();
    let mentions = link.mentions.iter().map(|m| (m, false));
    let drafts = link.draft_answers.iter().map(|m| (m, true));
    for (mention, is_draft) in mentions.chain(drafts) {
        let key = mention.trim().to_lowercase();
        if key.is_empty() {
            continue;
        }
        match found.linked_mentions.get(&key) {
            // Linked in an earlier round: reuse, do not ask again.
            Some(candidates) => {
                let candidates = candidates.clone();
                new_anything |= found.adopt_candidates(candidates, is_draft);
            }
            None => {
                if queued.insert(key) {
                    to_link.push((mention.trim().to_owned(), is_draft));
                }
            }
        }
    }
    if !to_link.is_empty() {
        new_anything |= link_mentions(cx, record, round, found, to_link).await;
    }

    let mut work = RoundWork::default();
    // The learned reader's first plan (it came with the reader's confidence) is
    // trusted over the summarizer's own word match, as a model's plan is: the reader
    // was trained to choose among exactly these paths.
    let reader_first = (!link.model_plan && link.reader_plan)
        .then(|| link.metapaths.first().cloned())
        .flatten();
    for metapath in link.metapaths {
        if metapath.steps.is_empty() {
            continue;
        }
        let trusted = link.model_plan || reader_first.as_ref() == Some(&metapath);
        if trusted {
            found.trust(&metapath);
        }
        if found.seen_metapaths.insert(metapath.clone()) {
            found.plan.metapaths.push(metapath.clone());
            work.metapaths.push(metapath);
            new_anything = true;
        }
    }
    for cypher in link.cypher {
        let cypher = cypher.trim().to_owned();
        if !cypher.is_empty() && found.seen_cypher.insert(cypher.clone()) {
            found.plan.cypher.push(cypher.clone());
            work.cypher.push(cypher);
            new_anything = true;
        }
    }
    found.plan.entities = found.topic.iter().map(|s| s.entity.clone()).collect();
    new_anything.then_some(work)
}

/// Sends the new mentions to the entity linker; true when a new entity came back.
async fn link_mentions(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    round: u8,
    found: &mut Findings,
    mentions: Vec<(String, bool)>,
) -> bool {
    if !cx.snapshot().has(Role::ENTITY_LINKER) {
        record.context.note(format!(
            "round {round}: no entity-linker on the bus; {} mention(s) left unlinked",
            mentions.len()
        ));
        record.degrade(
            &Role::well_known(Role::ENTITY_LINKER),
            Degradation::MISSING,
            round,
        );
        return false;
    }
    let request = LinkRequest {
        mentions: mentions.iter().map(|(m, _)| m.clone()).collect(),
        top_m: cx.config().top_m,
        mode: cx.config().link_mode,
    };
    let Some(reply) = record
        .call_role(
            &cx.caller,
            (
                &Role::well_known(Role::ENTITY_LINKER),
                round,
                "entity-linker",
            ),
            request,
            None,
        )
        .await
    else {
        return false;
    };
    let mut added = false;
    for ((mention, is_draft), links) in mentions.into_iter().zip(reply.links) {
        let candidates = closest_reading(links.candidates);
        found
            .linked_mentions
            .insert(mention.to_lowercase(), candidates.clone());
        added |= found.adopt_candidates(candidates, is_draft);
    }
    added
}

/// A mention that names no node exactly is read as its closest name (and any as close):
/// it names one thing, and the linker's other near names are not more of the question's
/// entities. Taken as such, they were walked from as well and read as a conjunction
/// ("Where is Harbor Stret Library?" answered with the books held at both "Harbor Street
/// Library" and "Author's Lane Library"). Exact matches (score 1, a name and its
/// namesakes) are kept as the linker gives them.
fn closest_reading(mut candidates: Vec<ScoredEntity>) -> Vec<ScoredEntity> {
    let best = candidates
        .iter()
        .map(|c| c.score)
        .fold(f32::NEG_INFINITY, f32::max);
    if best < EXACT_LINK {
        candidates.retain(|c| c.score >= best);
    }
    candidates
}

/// The score the entity linker gives a name written as the mention writes it.
pub(crate) const EXACT_LINK: f32 = 1.0;

/// Adds `entity` unless its id is already there; true when added.
pub(crate) fn push_unique(list: &mut Vec<ScoredEntity>, entity: ScoredEntity) -> bool {
    if list.iter().any(|e| e.entity.id == entity.entity.id) {
        return false;
    }
    list.push(entity);
    true
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::{graph::Entity, NodeId};

    use super::*;

    fn scored(id: u64, name: &str, score: f32) -> ScoredEntity {
        ScoredEntity {
            entity: Entity {
                id: NodeId(id),
                name: name.to_owned(),
            },
            score,
        }
    }

    fn names(candidates: &[ScoredEntity]) -> Vec<&str> {
        candidates.iter().map(|c| c.entity.name.as_str()).collect()
    }

    #[test]
    fn a_misspelled_mention_is_read_as_its_closest_name_only() {
        let near = vec![
            scored(6, "Harbor Street Library", 0.93),
            scored(49, "Author's Lane Library", 0.44),
        ];
        assert_eq!(names(&closest_reading(near)), ["Harbor Street Library"]);
        // Names as close as each other are all kept: nothing tells them apart.
        let tied = vec![
            scored(1, "Quarrydb 1.0", 0.63),
            scored(2, "Quarrydb 2.0", 0.63),
            scored(3, "Quarry", 0.5),
        ];
        assert_eq!(
            names(&closest_reading(tied)),
            ["Quarrydb 1.0", "Quarrydb 2.0"]
        );
        assert!(closest_reading(Vec::new()).is_empty());
    }

    #[test]
    fn exact_names_and_their_namesakes_are_kept_as_linked() {
        let exact = vec![
            scored(1, "Up", 1.0),
            scored(2, "Up", 1.0),
            scored(3, "Upside", 0.6),
        ];
        assert_eq!(names(&closest_reading(exact)), ["Up", "Up", "Upside"]);
    }
}
