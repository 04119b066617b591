//! Grounded Cypher plans in the plan cache: a question verified by its answers
//! (GraphRAFT §4.1, without gold queries), kept with the queries that gave them, their
//! values written in. `kgmesh cache warm --import` writes them beside the relation-path
//! plans (keys starting with [`CYPHER_KEY_PREFIX`]); every query-executor replica reads
//! them and learns its ranking from them ([`GroundedCypher::learn_verified`]), so a
//! cluster shares what one import learned.

use kgmesh_models::lexical::text;
use kgmesh_schemas::messages::cache::{CacheEntry, Isr, Plan};

use super::{Candidate, GroundedCypher};
use crate::cache_manager::core::entry_key;
pub use crate::cache_manager::persist::{is_cypher_key, CYPHER_KEY_PREFIX};

/// Right queries kept per verified question at most, best-ranked first.
pub const MAX_QUERIES: usize = 16;

/// The plan store key of a verified question: one entry per question, whatever its
/// case and spacing.
pub fn key(question: &str) -> String {
    let words = text::words(question).join(" ");
    format!("{CYPHER_KEY_PREFIX}{}", entry_key("cypher", &words))
}

/// The plan-cache entry of a question whose `right` candidates gave its `answers`.
pub fn entry(question: &str, answers: Vec<String>, right: &[Candidate]) -> CacheEntry {
    CacheEntry {
        question: question.to_owned(),
        template: question.to_owned(),
        isr: Isr::default(),
        plan: Plan {
            entities: Vec::new(),
            metapaths: Vec::new(),
            cypher: right
                .iter()
                .take(MAX_QUERIES)
                .map(|c| c.display())
                .collect(),
        },
        answers,
        hits: 0,
        failures: 0,
    }
}

/// What reading stored plans gave.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Learned {
    /// Plans whose queries are among their question's candidates now: kept.
    pub kept: usize,
    /// Plans none of whose queries is a candidate any more (the graph's values or the
    /// enumeration changed since they were verified): not kept.
    pub stale: usize,
    /// Plans deleted from the store that had been kept: no longer learned from.
    pub removed: usize,
}

/// Adds stored plans (with their keys) to what `planner` learns from; a plan stored
/// again under a key replaces the one learned under it (call
/// [`GroundedCypher::fit`] afterwards). Entries without queries are skipped.
pub async fn learn(planner: &mut GroundedCypher, entries: &[(String, CacheEntry)]) -> Learned {
    let mut learned = Learned::default();
    for (key, entry) in entries {
        learned.add(planner, key, Some(entry)).await;
    }
    learned
}

/// Applies changes to the plan store as they came (`None`: the key was deleted), in
/// order (call [`GroundedCypher::fit`] afterwards).
pub async fn apply(
    planner: &mut GroundedCypher,
    changes: &[(String, Option<CacheEntry>)],
) -> Learned {
    let mut learned = Learned::default();
    for (key, entry) in changes {
        learned.add(planner, key, entry.as_ref()).await;
    }
    learned
}

impl Learned {
    async fn add(&mut self, planner: &mut GroundedCypher, key: &str, entry: Option<&CacheEntry>) {
        match entry {
            Some(entry) if !entry.plan.cypher.is_empty() => {
                if planner
                    .learn_verified(&entry.question, &entry.plan.cypher, Some(key))
                    .await
                {
                    self.kept += 1;
                } else {
                    self.stale += 1;
                }
            }
            // Stored again without queries, or deleted.
            _ => self.removed += usize::from(planner.forget(key)),
        }
    }
}
