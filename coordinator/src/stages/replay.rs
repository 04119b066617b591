//! Stage 2, from the plan cache: a verified plan replayed with this question's
//! entities, in place of the KG-Linker (the 0-LLM-call fast path), and what it reached.

use std::collections::{HashMap, HashSet};

use kgmesh_schemas::{
    graph::ScoredEntity,
    messages::{
        cache::{FewShotExample, Plan},
        context::EvidenceItem,
    },
    NodeId,
};

use super::{
    link::{push_unique, Findings, RoundWork},
    RunContext,
};
use crate::calls::RunRecord;

/// A replayed plan: whose it was and what it reached.
#[derive(Debug, Default)]
pub(crate) struct ReplayReport {
    /// The past question the plan was stored for, when the cache's examples name it.
    pub question: Option<String>,
    /// Distinct nodes the replay's paths end at and values its query rows give.
    pub reached: u32,
    /// A retriever stopped at its limit while replaying.
    pub cut: bool,
}

/// The past question whose plan this is: the most relevant example with the same
/// relation paths and as many queries (the replay is that plan with this question's
/// entities, which its queries name).
pub(crate) fn past_question(examples: &[FewShotExample], plan: &Plan) -> Option<String> {
    examples
        .iter()
        .find(|e| e.plan.metapaths == plan.metapaths && e.plan.cypher.len() == plan.cypher.len())
        .map(|e| e.question.clone())
}

/// Takes the plan's entities, relation paths (trusted: the plan was verified) and
/// queries into what was found, and returns what is new as the round's work.
pub(crate) fn adopt(found: &mut Findings, plan: Plan) -> RoundWork {
    for entity in &plan.entities {
        push_unique(
            &mut found.topic,
            ScoredEntity {
                entity: entity.clone(),
                score: 1.0,
            },
        );
    }
    found.plan.entities = found.topic.iter().map(|s| s.entity.clone()).collect();
    let mut work = RoundWork::default();
    for metapath in plan.metapaths {
        found.trust(&metapath);
        if found.seen_metapaths.insert(metapath.clone()) {
            found.plan.metapaths.push(metapath.clone());
            work.metapaths.push(metapath);
        }
    }
    for cypher in plan.cypher {
        if found.seen_cypher.insert(cypher.clone()) {
            found.plan.cypher.push(cypher.clone());
            work.cypher.push(cypher);
        }
    }
    work
}

/// What the replayed plan's retrieval (the evidence from `first_new` on) reached: the
/// distinct nodes its paths end at and its query rows name, and whether a retriever
/// stopped at its limit (as many paths as it may return, or rows cut).
pub(crate) fn measure(
    cx: &RunContext<'_>,
    record: &RunRecord,
    topic: &[ScoredEntity],
    first_new: usize,
) -> (u32, bool) {
    let limit = cx
        .config()
        .max_evidence_per_retriever
        .min(record.ledger.budget().result_rows) as usize;
    let topic: HashSet<NodeId> = topic.iter().map(|s| s.entity.id).collect();
    let mut nodes: HashSet<NodeId> = HashSet::new();
    let mut values: HashSet<String> = HashSet::new();
    let mut per_source: HashMap<&str, usize> = HashMap::new();
    let mut cut = false;
    for evidence in &record.context.context().evidence[first_new..] {
        *per_source.entry(evidence.source.as_str()).or_insert(0) += 1;
        match &evidence.item {
            EvidenceItem::Path(path) => {
                let end = path.end().id;
                if !topic.contains(&end) {
                    nodes.insert(end);
                }
            }
            EvidenceItem::Query { rows, .. } => {
                cut |= rows.truncated;
                for value in rows.rows.iter().filter_map(|row| row.first()) {
                    values.insert(value.text());
                }
            }
            EvidenceItem::Triple(_) | EvidenceItem::Excerpt(_) => {}
        }
    }
    cut |= per_source.values().any(|&count| count >= limit.max(1));
    ((nodes.len() + values.len()) as u32, cut)
}
