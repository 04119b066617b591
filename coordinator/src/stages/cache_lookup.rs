//! Stage 1: what the plan cache knows of questions like this one.

use kgmesh_schemas::{
    messages::cache::{CacheLookup, FewShotExample, Isr, Plan, RelationCue},
    Role, Rpc,
};

use super::RunContext;
use crate::calls::RunRecord;

/// What the plan cache offered the question (nothing without a cache).
#[derive(Debug, Default)]
pub(crate) struct CacheFound {
    /// The cache had examples or a plan for it.
    pub hit: bool,
    /// Past questions and their plans, the most relevant first.
    pub examples: Vec<FewShotExample>,
    /// What the question's words meant in past verified plans (the cache's lexicon).
    pub cues: Vec<RelationCue>,
    pub isr: Option<Isr>,
    /// The plan to replay is a similar template's, this similar.
    pub replay_similarity: Option<f32>,
}

/// Looks the question up in the plan cache: what it offers, and a verified plan to
/// replay when it has one.
pub(crate) async fn cache_lookup(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
) -> (CacheFound, Option<Plan>) {
    if cx.no_cache || !cx.snapshot().serves(Role::CACHE_MANAGER, CacheLookup::OP) {
        return (CacheFound::default(), None);
    }
    let request = CacheLookup {
        question: cx.question.clone(),
        // Not linked yet at this point: the cache masks mentions itself.
        entities: Vec::new(),
        k: cx.config().cache_examples,
    };
    let Some(reply) = record
        .call_role(
            &cx.caller,
            (&Role::well_known(Role::CACHE_MANAGER), 0, "cache"),
            request,
            None,
        )
        .await
    else {
        return (CacheFound::default(), None);
    };
    let mut found = CacheFound {
        hit: !reply.examples.is_empty() || reply.replay.is_some(),
        ..CacheFound::default()
    };
    if let (Some(_), Some(similarity)) = (&reply.replay, reply.replay_similarity) {
        found.replay_similarity = Some(similarity);
        record.context.note(format!(
            "plan cache: no plan for this question's wording; replaying the verified \
             plan of a similar question (similarity {similarity:.2})"
        ));
    }
    found.examples = reply.examples;
    found.cues = reply.cues;
    found.isr = Some(reply.isr);
    (found, reply.replay)
}
