//! Stage 3: every retriever on the bus, called at once with the round's work; what
//! they return is merged into the context in role-name order.

use std::time::{Duration, Instant};

use super::{link::RoundWork, RunContext};
use crate::calls::{until, RunRecord};
use futures::future::join_all;
use kgmesh_schemas::{
    budget::Limit,
    graph::ScoredEntity,
    messages::{
        ask::Degradation,
        cache::RelationCue,
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    Role, Rpc,
};

/// What the retrievers are asked for in one round.
pub(crate) struct RetrieveInput<'a> {
    pub round: u8,
    pub entities: &'a [ScoredEntity],
    pub drafts: &'a [ScoredEntity],
    pub work: RoundWork,
    pub cues: &'a [RelationCue],
}

/// Calls every retriever on the bus at once and merges their evidence and notes into
/// the context; a failing or vanished one leaves a note and a degradation. Returns
/// the query executor's repair hints for the next round's Cypher.
pub(crate) async fn retrieve(
    cx: &RunContext<'_>,
    record: &mut RunRecord,
    input: RetrieveInput<'_>,
) -> Vec<String> {
    let round = input.round;
    let snapshot = cx.caller.snapshot.clone();
    for gone in snapshot.gone_retrievers() {
        if let Ok(role) = Role::new(gone) {
            if !record.is_degraded(&role, Degradation::MISSING) {
                record.context.note(format!(
                    "round {round}: retriever {gone} was on the bus recently and is gone; its evidence is missing"
                ));
            }
            record.degrade(&role, Degradation::MISSING, round);
        }
    }
    let retrievers = snapshot.retrievers();
    if retrievers.is_empty() {
        record
            .context
            .note(format!("round {round}: no retriever is on the bus"));
        record.degrade(&Role::well_known("retriever"), Degradation::MISSING, round);
        return Vec::new();
    }
    let Some(timeout) = record.ledger.call_timeout(cx.config().call_timeout) else {
        record.ledger.exhaust(Limit::Deadline);
        return Vec::new();
    };
    let body = RetrieveRequest {
        question: cx.question.clone(),
        entities: input.entities.to_vec(),
        draft_answers: input.drafts.to_vec(),
        metapaths: input.work.metapaths,
        cypher: input.work.cypher,
        max_evidence: cx
            .config()
            .max_evidence_per_retriever
            .min(record.ledger.budget().result_rows),
        cues: input.cues.to_vec(),
    };
    let meta = until(record.ledger.meta(round), timeout);
    let started = Instant::now();
    let spans: Vec<tracing::Span> = retrievers
        .iter()
        .map(|role| {
            tracing::info_span!(
                "retrieve",
                otel.name = format!("retrieve {}", role.as_str()),
                role = role.as_str(),
                kgmesh.role = role.as_str(),
                kgmesh.round = round,
                kgmesh.retrieved.evidence = tracing::field::Empty,
            )
        })
        .collect();
    let calls = retrievers.iter().zip(&spans).map(|(role, span)| {
        cx.caller
            .send_in(span.clone(), role, meta.clone(), body.clone(), timeout)
    });
    let results: Vec<(_, Duration)> = join_all(calls).await;
    record
        .ledger
        .record_stage(format!("round{round}.retrieve"), started.elapsed());
    let mut repair_hints = Vec::new();
    // Merged in role-name order, whatever order the replies arrived in.
    for ((role, (result, elapsed)), span) in retrievers.iter().zip(results).zip(spans) {
        record.record_call(
            &cx.caller,
            round,
            role,
            RetrieveRequest::OP,
            elapsed,
            &result,
        );
        match result {
            Ok((reply, cost)) => {
                span.record("kgmesh.retrieved.evidence", reply.evidence.len());
                record.charge(role, round, &cost);
                repair_hints.extend(adopt_retrieved(record, reply));
            }
            Err(error) => record.note_failure(round, role, &error),
        }
    }
    repair_hints
}

/// Merges one retriever's evidence and notes; returns its repair hints.
fn adopt_retrieved(record: &mut RunRecord, reply: RetrieveReply) -> Vec<String> {
    record.context.merge(reply.evidence);
    for note in reply.notes {
        record.context.note(note);
    }
    reply.repair_hints
}
