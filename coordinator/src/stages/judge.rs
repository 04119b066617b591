//! Stage 4: CacheRAG's dispatcher. The judge reads the context and says COMPLETE, the
//! next round, or one bounded expansion (deeper along a relation, or broader around
//! the frontier), which the path follower runs.

use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    messages::{
        ask::Degradation,
        judge::{JudgeRequest, Verdict},
        path_follower::{ExpandRequest, Expansion},
    },
    Role, Rpc,
};

use super::{context_for, RunContext};
use crate::calls::RunRecord;

/// What the judge is asked about.
pub(crate) struct JudgeInput<'a> {
    pub round: u8,
    /// The evidence from here on is this round's.
    pub first_new: usize,
    pub topic: &'a [ScoredEntity],
    /// Round 1 of a replayed plan: it was verified when it was stored, so the judge's
    /// rule is enough and the model's calls are left to the summarizer.
    pub replayed: bool,
}

/// What the judge concluded.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Judged {
    /// The judge said COMPLETE.
    pub complete: bool,
    /// A language model said so (rather than the rule, or the rule after an unusable
    /// reply): the plan counts as verified and may be replayed without a model.
    pub model_verified: bool,
}

/// Asks the judge, and grows the context by bounded expansions until it says
/// COMPLETE, the next round, or the expansion budget is spent.
pub(crate) async fn judge_and_expand(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    input: JudgeInput<'_>,
) -> Judged {
    let round = input.round;
    if !cx.snapshot().has(Role::JUDGE) {
        record.context.note(format!(
            "round {round}: no judge on the bus; the evidence was not checked or expanded"
        ));
        record.degrade(&Role::well_known(Role::JUDGE), Degradation::MISSING, round);
        return Judged::default();
    }
    let topic: Vec<Entity> = input.topic.iter().map(|s| s.entity.clone()).collect();
    let max_frontier = cx.config().max_frontier;
    let mut frontier = record
        .context
        .frontier(input.first_new, &topic, max_frontier);
    loop {
        if record.ledger.is_exhausted() {
            return Judged::default();
        }
        let (context, _) = context_for(cx, record, Role::JUDGE);
        let request = JudgeRequest {
            question: cx.question.clone(),
            context,
            frontier: frontier.clone(),
            depth_expansions_left: record.ledger.budget().depth_expansions,
        };
        let (calls_before, fallbacks_before) = {
            let spent = record.ledger.spent();
            (spent.llm_calls, spent.model_fallbacks)
        };
        let mut meta = record.ledger.meta(round);
        if input.replayed {
            meta.budget.llm_calls = 0;
        }
        if round > 1 && record.ledger.budget().rounds <= 1 {
            // The last of several rounds: its NEXT_ROUND could not be followed, the
            // round-1 judge already asked the model whether retrieval was on track,
            // and the rule chooses expansions without one; so the model's calls go to
            // the KG-Linker and the summarizer, and a second round costs one call, not
            // two.
            meta.budget.llm_calls = 0;
        }
        let Some(reply) = record
            .call_role(
                &cx.caller,
                (&Role::well_known(Role::JUDGE), round, "judge"),
                request,
                Some(meta),
            )
            .await
        else {
            return Judged::default();
        };
        let (expansion, proposed) = match reply.verdict {
            Verdict::Complete => {
                // A model's verdict, not the rule's after an unusable reply.
                let spent = record.ledger.spent();
                return Judged {
                    complete: true,
                    model_verified: spent.llm_calls > calls_before
                        && spent.model_fallbacks == fallbacks_before,
                };
            }
            Verdict::NextRound => return Judged::default(),
            Verdict::ExpandDepth {
                relation,
                direction,
                frontier,
            } => (
                Expansion::Depth {
                    relation,
                    direction,
                },
                frontier,
            ),
            Verdict::ExpandBreadth { frontier } => (
                Expansion::Breadth {
                    k_degree: record.ledger.budget().breadth,
                },
                frontier,
            ),
        };
        // Each expansion, deep or broad, spends one of CacheRAG's K_depth steps, so a
        // question's expanded subgraph stays O(K_depth · K_degree).
        if !record.ledger.take_depth_expansion() {
            record.context.note(format!(
                "round {round}: the judge asked for more expansion than the budget allows"
            ));
            return Judged::default();
        }
        let Some(role) = cx
            .snapshot()
            .role_serving(Role::PATH_FOLLOWER, ExpandRequest::OP)
        else {
            record
                .context
                .note(format!("round {round}: no role on the bus serves expand"));
            record.degrade(
                &Role::well_known(Role::PATH_FOLLOWER),
                Degradation::MISSING,
                round,
            );
            return Judged::default();
        };
        let mut start = if proposed.is_empty() {
            frontier.clone()
        } else {
            proposed
        };
        start.truncate(max_frontier);
        let request = ExpandRequest {
            question: cx.question.clone(),
            frontier: start,
            expansion,
        };
        let Some(expanded) = record
            .call_role(&cx.caller, (&role, round, "expand"), request, None)
            .await
        else {
            return Judged::default();
        };
        let added = record.context.merge(expanded.evidence);
        if added == 0 {
            return Judged::default();
        }
        frontier = expanded.frontier;
        frontier.truncate(max_frontier);
    }
}
