//! The stages of a question, in the order a question meets them (see
//! `docs/architecture.md`, "A question's life"):
//!
//! 1. [`cache_lookup`]: past questions' plans, examples and word cues;
//! 2. [`link`]: the KG-Linker's plan and the entity linker's ids ([`replay`] instead,
//!    when the plan cache holds a verified plan);
//! 3. [`retrieve`]: every retriever on the bus at once;
//! 4. [`judge`]: COMPLETE, the next round, or a bounded expansion;
//! 5. [`summarize`]: the answers with their citations;
//! 6. [`store`]: the plan that answered, into the plan cache;
//! 7. [`reply`]: the reply, with its confidence and notes.
//!
//! Each stage is an `async fn` over the question's read-only [`RunContext`] and its
//! [`RunRecord`] (budget, evidence, degradations), with its own small input and output
//! types; the round loop that runs them is [`crate::rounds`].

pub(crate) mod cache_lookup;
pub(crate) mod judge;
pub(crate) mod link;
pub(crate) mod replay;
pub(crate) mod reply;
pub(crate) mod retrieve;
pub(crate) mod store;
pub(crate) mod summarize;

use kgmesh_schemas::messages::context::Context;

use crate::{
    calls::{Caller, RunRecord},
    config::CoordinatorConfig,
    directory::RoleSnapshot,
};

/// What every stage of one question reads and none changes.
pub(crate) struct RunContext<'a> {
    pub caller: Caller<'a>,
    /// The question, trimmed.
    pub question: String,
    pub no_cache: bool,
    /// Store the plan only when the answer has at least this confidence (the cascade's
    /// LLM-free run, whose answer may be replaced).
    pub store_at: Option<f32>,
    pub evidence_edges: bool,
    pub max_answers: u16,
}

impl RunContext<'_> {
    pub(crate) fn config(&self) -> &CoordinatorConfig {
        self.caller.config
    }

    pub(crate) fn snapshot(&self) -> &RoleSnapshot {
        &self.caller.snapshot
    }
}

/// The context to send to `role`: whole, or cut to its best-scored evidence when it
/// would not fit in a bus message (three quarters of the bus's payload limit, leaving
/// room for the rest of the request); a cut is noted in the reply. The map reads the
/// sent lines' indices as the whole context's.
pub(crate) fn context_for(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    role: &str,
) -> (Context, Option<Vec<usize>>) {
    let max_bytes = cx.caller.bus.max_payload() / 4 * 3;
    let (context, kept) = record.context.to_send(max_bytes, cx.snapshot().codec(role));
    if kept.is_some() {
        if let Some(cut) = context.notes.last() {
            record.context.note(format!("{role}: {cut}"));
        }
    }
    (context, kept)
}
