//! What the coordinator counts: questions by outcome, their latency and rounds, round
//! latency, answers' confidence and second readings, questions in flight, exhausted
//! budgets, calls to each role as the coordinator saw them, the replicas discovery sees,
//! and feedback on answers by outcome. The
//! recorder and the descriptions live in `kgmesh_telemetry::metrics`; without a recorder
//! these calls do nothing.

use std::{collections::BTreeSet, sync::Mutex, time::Duration};

use kgmesh_bus::typed::CallError;
use kgmesh_schemas::{budget::Limit, messages::ask::AskReply, Role};

pub(crate) const QUESTIONS_TOTAL: &str = "kgmesh_questions_total";
pub(crate) const QUESTION_DURATION_SECONDS: &str = "kgmesh_question_duration_seconds";
pub(crate) const QUESTION_ROUNDS: &str = "kgmesh_question_rounds";
pub(crate) const ANSWER_CONFIDENCE: &str = "kgmesh_answer_confidence";
pub(crate) const SECOND_READINGS_TOTAL: &str = "kgmesh_second_readings_total";
pub(crate) const ROUND_DURATION_SECONDS: &str = "kgmesh_round_duration_seconds";
pub(crate) const QUESTIONS_IN_FLIGHT: &str = "kgmesh_questions_in_flight";
pub(crate) const BUDGET_EXHAUSTED_TOTAL: &str = "kgmesh_budget_exhausted_total";
pub(crate) const ROLE_REPLICAS: &str = "kgmesh_role_replicas";
pub(crate) const ROLE_CALLS_TOTAL: &str = "kgmesh_role_calls_total";
pub(crate) const ROLE_CALL_DURATION_SECONDS: &str = "kgmesh_role_call_duration_seconds";
pub(crate) const FEEDBACK_TOTAL: &str = "kgmesh_feedback_total";
pub(crate) const DEGRADED_TOTAL: &str = "kgmesh_degraded_total";
pub(crate) const REFUSED_ROLES_TOTAL: &str = "kgmesh_refused_roles_total";
pub(crate) const HEDGED_CALLS_TOTAL: &str = "kgmesh_hedged_calls_total";
pub(crate) const CANCELLED_CALLS_TOTAL: &str = "kgmesh_cancelled_calls_total";
pub(crate) const HTTP_REQUESTS_TOTAL: &str = "kgmesh_http_requests_total";

/// One request to a scoped route of the HTTP API: the name of the token that sent it
/// (`anonymous` without one; never the token), the route and the status answered.
pub(crate) fn record_request(principal: &str, route: &str, status: u16) {
    metrics::counter!(
        HTTP_REQUESTS_TOTAL,
        "principal" => principal.to_owned(),
        "route" => route.to_owned(),
        "status" => status.to_string()
    )
    .increment(1);
}

/// Counts a question as in flight until dropped, so a cancelled question (a client that
/// hung up) leaves the gauge too.
pub(crate) struct InFlight;

impl InFlight {
    pub(crate) fn enter() -> Self {
        metrics::gauge!(QUESTIONS_IN_FLIGHT).increment(1.0);
        InFlight
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics::gauge!(QUESTIONS_IN_FLIGHT).decrement(1.0);
    }
}

/// The outcome label of an answered (or refused, `None`) question.
pub(crate) fn outcome(reply: Option<&AskReply>) -> &'static str {
    match reply {
        None => "error",
        Some(reply) => reply_outcome(
            !reply.answers.is_empty(),
            reply.partial,
            reply.low_confidence,
        ),
    }
}

/// No answer is "don't know" even when a budget ran out; answers cut short are partial;
/// whole answers on a path no word of the question names are low-confidence.
fn reply_outcome(has_answers: bool, partial: bool, low_confidence: bool) -> &'static str {
    match (has_answers, partial, low_confidence) {
        (false, _, _) => "dont_know",
        (true, true, _) => "partial",
        (true, false, true) => "low_confidence",
        (true, false, false) => "answered",
    }
}

/// A question answered (`Some`) or refused (`None`), and how long it took.
pub(crate) fn record_question(reply: Option<&AskReply>, elapsed: Duration) {
    let outcome = outcome(reply);
    metrics::counter!(QUESTIONS_TOTAL, "outcome" => outcome).increment(1);
    metrics::histogram!(QUESTION_DURATION_SECONDS, "outcome" => outcome)
        .record(elapsed.as_secs_f64());
    if let Some(reply) = reply {
        metrics::histogram!(QUESTION_ROUNDS).record(f64::from(reply.rounds));
        if let Some(confidence) = reply.confidence {
            let kept = if reply.answers.is_empty() {
                "no"
            } else {
                "yes"
            };
            metrics::histogram!(ANSWER_CONFIDENCE, "kept" => kept).record(f64::from(confidence));
        }
        if let Some(agree) = reply.readings_agree {
            let reaches = if agree { "yes" } else { "no" };
            metrics::counter!(SECOND_READINGS_TOTAL, "reaches" => reaches).increment(1);
        }
    }
}

/// Feedback, by its outcome label.
pub(crate) fn record_feedback(outcome: &'static str) {
    metrics::counter!(FEEDBACK_TOTAL, "outcome" => outcome).increment(1);
}

/// One call from the coordinator to a role, as the coordinator saw it: bus time and
/// retries included, so next to the role's own `kgmesh_role_request_duration_seconds` it
/// shows what the bus and queueing add.
pub(crate) fn record_call<T>(
    role: &Role,
    op: &'static str,
    result: &Result<T, CallError>,
    elapsed: Duration,
) {
    let outcome = match result {
        Ok(_) => "ok",
        Err(CallError::Bus(error)) => error.kind(),
        Err(CallError::Agent { error, .. }) => error.kind(),
    };
    let labels = [
        ("role", role.as_str().to_owned()),
        ("op", op.to_owned()),
        ("outcome", outcome.to_owned()),
    ];
    metrics::counter!(ROLE_CALLS_TOTAL, &labels).increment(1);
    metrics::histogram!(ROLE_CALL_DURATION_SECONDS, &labels).record(elapsed.as_secs_f64());
}

/// One more request sent for a call that had no reply yet (a hedge).
pub(crate) fn record_hedge(role: &Role, op: &'static str) {
    metrics::counter!(HEDGED_CALLS_TOTAL, "role" => role.as_str().to_owned(), "op" => op)
        .increment(1);
}

/// A hedged call won with other attempts still in flight, whose work was cancelled.
pub(crate) fn record_cancel(role: &Role, op: &'static str) {
    metrics::counter!(CANCELLED_CALLS_TOTAL, "role" => role.as_str().to_owned(), "op" => op)
        .increment(1);
}

pub(crate) fn record_round(round: u8, elapsed: Duration) {
    metrics::histogram!(ROUND_DURATION_SECONDS, "round" => round_label(round))
        .record(elapsed.as_secs_f64());
}

/// Rounds are bounded by the budget, but the label set is bounded here too.
fn round_label(round: u8) -> &'static str {
    match round {
        0 => "0",
        1 => "1",
        2 => "2",
        3 => "3",
        4 => "4",
        5 => "5",
        _ => "6+",
    }
}

/// One question answered without `role`'s full part, for `reason`.
pub(crate) fn record_degraded(role: &str, reason: &str) {
    metrics::counter!(DEGRADED_TOTAL, "role" => role.to_owned(), "reason" => reason.to_owned())
        .increment(1);
}

pub(crate) fn record_exhausted(limit: Limit) {
    metrics::counter!(BUDGET_EXHAUSTED_TOTAL, "budget" => budget_label(limit)).increment(1);
}

pub(crate) fn budget_label(limit: Limit) -> &'static str {
    match limit {
        Limit::Rounds => "rounds",
        Limit::Depth => "depth",
        Limit::Breadth => "breadth",
        Limit::LlmCalls => "llm_calls",
        Limit::Tokens => "tokens",
        Limit::ResultRows => "result_rows",
        Limit::Deadline => "deadline",
    }
}

/// Sets the replica gauge of every role in `snapshot`, and zero for the roles an
/// earlier snapshot had that this one lacks (a gauge left at its last value would
/// claim replicas that are gone). `published` remembers which roles have a gauge.
/// Counts one discovery's announcements of a role the coordinator does not call.
pub(crate) fn record_refused(role: &str) {
    metrics::counter!(REFUSED_ROLES_TOTAL, "role" => role.to_owned()).increment(1);
}

pub(crate) fn record_replicas(published: &Mutex<BTreeSet<String>>, replicas: &[(String, usize)]) {
    let mut published = published
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let current: BTreeSet<String> = replicas.iter().map(|(role, _)| role.clone()).collect();
    for gone in published.difference(&current) {
        metrics::gauge!(ROLE_REPLICAS, "role" => gone.clone()).set(0.0);
    }
    for (role, count) in replicas {
        metrics::gauge!(ROLE_REPLICAS, "role" => role.clone()).set(*count as f64);
    }
    published.extend(current);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_follow_the_reply() {
        assert_eq!(reply_outcome(true, false, false), "answered");
        assert_eq!(reply_outcome(true, false, true), "low_confidence");
        assert_eq!(reply_outcome(true, true, false), "partial");
        assert_eq!(reply_outcome(true, true, true), "partial");
        assert_eq!(reply_outcome(false, true, false), "dont_know");
        assert_eq!(reply_outcome(false, false, true), "dont_know");
        assert_eq!(outcome(None), "error");
    }

    #[test]
    fn replicas_follow_discovery_and_fall_to_zero() {
        let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
        let handle = recorder.handle();
        let published = Mutex::new(BTreeSet::new());
        metrics::with_local_recorder(&recorder, || {
            let first = [("judge".to_owned(), 2), ("summarizer".to_owned(), 1)];
            record_replicas(&published, &first);
        });
        let text = handle.render();
        assert!(
            text.contains("kgmesh_role_replicas{role=\"judge\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("kgmesh_role_replicas{role=\"summarizer\"} 1"),
            "{text}"
        );

        metrics::with_local_recorder(&recorder, || {
            let second = [("judge".to_owned(), 1)];
            record_replicas(&published, &second);
        });
        let text = handle.render();
        assert!(
            text.contains("kgmesh_role_replicas{role=\"judge\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("kgmesh_role_replicas{role=\"summarizer\"} 0"),
            "{text}"
        );
    }

    #[test]
    fn labels_stay_bounded() {
        assert_eq!(round_label(2), "2");
        assert_eq!(round_label(200), "6+");
        assert_eq!(budget_label(Limit::LlmCalls), "llm_calls");
    }
}
