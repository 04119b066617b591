//! Stage 6: the plan that produced the answers, stored in the plan cache (the part of
//! it that answered: a relation path tried in vain would cost every later replay a
//! retrieval and add noise to its context).

use kgmesh_schemas::{
    graph::{Entity, Metapath, ScoredEntity},
    messages::{
        cache::{CacheEntry, CacheStore, Isr, Plan},
        summarizer::Answer,
    },
    Role, Rpc,
};

use super::RunContext;
use crate::calls::RunRecord;

/// What is stored, and how far it is trusted.
pub(crate) struct StoreInput<'a> {
    pub round: u8,
    /// Everything the rounds tried.
    pub plan: &'a Plan,
    pub topic: &'a [ScoredEntity],
    pub isr: Option<&'a Isr>,
    pub answers: &'a [Answer],
    /// A model judged the retrieval complete.
    pub model_verified: bool,
}

/// Stores the answering part of the plan, when the cache manager is on the bus and
/// the question may use the cache.
pub(crate) async fn cache_store(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    input: StoreInput<'_>,
) {
    if cx.no_cache || !cx.snapshot().serves(Role::CACHE_MANAGER, CacheStore::OP) {
        return;
    }
    let topic: Vec<Entity> = input.topic.iter().map(|s| s.entity.clone()).collect();
    let plan = answering_plan(input.plan, record.context.context(), input.answers, &topic);
    if plan.metapaths.is_empty() && plan.cypher.is_empty() {
        return;
    }
    let entry = CacheEntry {
        question: cx.question.clone(),
        // Left to the cache manager, which owns the masking rule.
        template: String::new(),
        isr: input.isr.cloned().unwrap_or_default(),
        plan,
        answers: input.answers.iter().map(|a| a.text.clone()).collect(),
        // A model's verdict verifies the plan (replayable at once); the rule-based
        // judge's makes it a few-shot example only, since replaying a rule's mistake
        // would repeat it for every question of the template.
        hits: u32::from(input.model_verified),
        failures: 0,
    };
    let role = Role::well_known(Role::CACHE_MANAGER);
    let _stored = record
        .call_role(
            &cx.caller,
            (&role, input.round, "cache-store"),
            CacheStore { entry },
            None,
        )
        .await;
}

/// The part of `plan` that produced `answers`: the tried metapaths that some evidence an
/// answer cites followed, and the Cypher whose rows it cites. A cited path or triple
/// from a topic entity that no tried metapath matches (an expansion found it) adds its
/// own relation sequence, so the replay reaches the answer too.
fn answering_plan(
    plan: &Plan,
    context: &kgmesh_schemas::messages::context::Context,
    answers: &[Answer],
    topic: &[Entity],
) -> Plan {
    use kgmesh_schemas::{
        graph::{Direction, RelationStep},
        messages::context::EvidenceItem,
    };
    let is_topic = |entity: &Entity| topic.iter().any(|t| t.id == entity.id);
    let mut used_metapaths = vec![false; plan.metapaths.len()];
    let mut used_cypher = vec![false; plan.cypher.len()];
    let mut derived: Vec<Metapath> = Vec::new();
    let mut cited: Vec<u32> = answers.iter().flat_map(|a| a.evidence.clone()).collect();
    cited.sort_unstable();
    cited.dedup();
    for index in cited {
        let Some(evidence) = context.evidence.get(index as usize) else {
            continue;
        };
        let steps: Vec<(String, bool)> = match &evidence.item {
            EvidenceItem::Query { cypher, .. } => {
                for (used, query) in used_cypher.iter_mut().zip(&plan.cypher) {
                    *used |= query == cypher;
                }
                continue;
            }
            EvidenceItem::Path(path) if is_topic(&path.start) => path
                .steps
                .iter()
                .map(|s| (s.relation.clone(), s.inverse))
                .collect(),
            EvidenceItem::Triple(triple) if is_topic(&triple.head) => {
                vec![(triple.relation.clone(), false)]
            }
            EvidenceItem::Triple(triple) if is_topic(&triple.tail) => {
                vec![(triple.relation.clone(), true)]
            }
            _ => continue,
        };
        if steps.is_empty() {
            continue;
        }
        let mut matched = false;
        for (used, metapath) in used_metapaths.iter_mut().zip(&plan.metapaths) {
            if metapath.walked_by(steps.iter().map(|(r, inverse)| (r.as_str(), *inverse))) {
                *used = true;
                matched = true;
            }
        }
        if !matched && steps.len() <= usize::from(kgmesh_schemas::budget::MAX_DEPTH) {
            let metapath = Metapath {
                steps: steps
                    .into_iter()
                    .map(|(relation, inverse)| RelationStep {
                        relation,
                        direction: if inverse {
                            Direction::In
                        } else {
                            Direction::Out
                        },
                    })
                    .collect(),
            };
            if !derived.contains(&metapath) {
                derived.push(metapath);
            }
        }
    }
    let mut metapaths: Vec<Metapath> = plan
        .metapaths
        .iter()
        .zip(&used_metapaths)
        .filter(|(_, used)| **used)
        .map(|(metapath, _)| metapath.clone())
        .collect();
    for metapath in derived {
        if !metapaths.contains(&metapath) {
            metapaths.push(metapath);
        }
    }
    Plan {
        entities: plan.entities.clone(),
        metapaths,
        cypher: plan
            .cypher
            .iter()
            .zip(&used_cypher)
            .filter(|(_, used)| **used)
            .map(|(query, _)| query.clone())
            .collect(),
    }
}
