//! Stage 5: the summarizer's answers, each citing its evidence. It always gets a
//! chance, even past the deadline: it then works without a model on what was
//! retrieved.

use kgmesh_schemas::{
    graph::{Metapath, ScoredEntity},
    messages::{
        cache::RelationCue,
        summarizer::{SummarizeReply, SummarizeRequest},
    },
    Deadline, Role, Rpc,
};

use super::{context_for, RunContext};
use crate::calls::{until, RunRecord};

/// What the summarizer is given besides the context.
pub(crate) struct SummarizeInput<'a> {
    /// The last round run.
    pub round: u8,
    pub topic: &'a [ScoredEntity],
    pub cues: &'a [RelationCue],
    /// Relation paths to trust over the summarizer's own reading.
    pub trusted: &'a [Metapath],
    /// Relation paths the summarizer prefers among those its own reading ties
    /// (`SummarizeRequest::preferred`).
    pub preferred: &'a [Metapath],
}

/// The summarizer's reply, its citations read as the whole context's lines; a failed
/// call gives no answer and says so.
pub(crate) async fn summarize(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    input: SummarizeInput<'_>,
) -> SummarizeReply {
    let round = input.round;
    let (context, kept) = context_for(cx, record, Role::SUMMARIZER);
    let request = SummarizeRequest {
        question: cx.question.clone(),
        context,
        topic_entities: input.topic.iter().map(|s| s.entity.clone()).collect(),
        max_answers: cx.max_answers,
        cues: input.cues.to_vec(),
        plan: input.trusted.to_vec(),
        preferred: input.preferred.to_vec(),
    };
    let mut meta = record.ledger.final_meta(round);
    let grace = cx.config().finalize_grace;
    if record.ledger.is_exhausted() {
        meta.budget.llm_calls = 0;
        meta.budget.deadline = Deadline::after(grace);
    }
    let timeout = meta
        .budget
        .deadline
        .remaining()
        .max(grace)
        .min(cx.config().call_timeout);
    let meta = until(meta, timeout);
    let role = Role::well_known(Role::SUMMARIZER);
    let (result, elapsed) = cx
        .caller
        .send_traced(&role, round, meta, request, timeout)
        .await;
    record.ledger.record_stage("summarizer".to_owned(), elapsed);
    record.record_call(
        &cx.caller,
        round,
        &role,
        SummarizeRequest::OP,
        elapsed,
        &result,
    );
    match result {
        Ok((mut reply, cost)) => {
            record.charge(&role, round, &cost);
            if let Some(kept) = kept {
                // Citations of the sent lines, read as the whole context's lines.
                for answer in &mut reply.answers {
                    answer.evidence = answer
                        .evidence
                        .iter()
                        .filter_map(|&line| kept.get(line as usize).map(|&i| i as u32))
                        .collect();
                }
            }
            // A chance outside 0..1 is no chance: the coordinator estimates its own.
            if let Some(chance) = reply.confidence.filter(|c| !(0.0..=1.0).contains(c)) {
                tracing::warn!(
                    chance,
                    "the summarizer's confidence is not a chance; ignored"
                );
                reply.confidence = None;
            }
            reply
        }
        Err(error) => {
            record.note_failure(round, &role, &error);
            SummarizeReply {
                low_confidence: false,
                answers: Vec::new(),
                explanation: "no answer: the summarizer failed".to_owned(),
                confidence: None,
                decline: None,
            }
        }
    }
}
