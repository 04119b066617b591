//! Prometheus metrics for kgmesh processes.
//!
//! Library crates record through the [`metrics`] facade only, so a library used without a
//! recorder (tests, embedding applications) pays one no-op call per event. A process that
//! serves `/metrics` calls [`install`] once; it installs a Prometheus recorder, describes
//! every metric (help text, unit) and returns a [`MetricsHandle`] that renders the text
//! exposition format for an HTTP handler of the process's own server.
//!
//! Labels are low-cardinality by design: roles, operations, outcomes and error kinds,
//! never question text or entity names.

use std::{sync::OnceLock, time::Duration};

use metrics::Unit;
use metrics_exporter_prometheus::{BuildError, Matcher, PrometheusBuilder, PrometheusHandle};

/// The `Content-Type` of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Questions answered by the coordinator, by `outcome`
/// (`answered`, `low_confidence`, `partial`, `dont_know`, `error`).
pub const QUESTIONS_TOTAL: &str = "kgmesh_questions_total";
/// Wall-clock time of one question, from arrival to reply.
pub const QUESTION_DURATION_SECONDS: &str = "kgmesh_question_duration_seconds";
/// Refinement rounds one question took.
pub const QUESTION_ROUNDS: &str = "kgmesh_question_rounds";
/// The confidence of each answered question (the estimated chance its answer is right).
pub const ANSWER_CONFIDENCE: &str = "kgmesh_answer_confidence";
/// Counter: answers a second reading of the question was read for, by whether it
/// reaches them (`reaches`: `yes` or `no`).
pub const SECOND_READINGS_TOTAL: &str = "kgmesh_second_readings_total";
/// Wall-clock time of one refinement round, by `round` (1, 2, …).
pub const ROUND_DURATION_SECONDS: &str = "kgmesh_round_duration_seconds";
/// Questions being answered right now.
pub const QUESTIONS_IN_FLIGHT: &str = "kgmesh_questions_in_flight";
/// Budgets that ran out, once per question, by `budget`.
pub const BUDGET_EXHAUSTED_TOTAL: &str = "kgmesh_budget_exhausted_total";
/// Instances of each role the coordinator's last discovery saw, by `role`.
pub const ROLE_REPLICAS: &str = "kgmesh_role_replicas";
/// Requests a role served in this process, by `role`, `op`, `outcome`.
pub const ROLE_REQUESTS_TOTAL: &str = "kgmesh_role_requests_total";
/// Time a role took to serve one request, by `role`, `op`, `outcome`.
pub const ROLE_REQUEST_DURATION_SECONDS: &str = "kgmesh_role_request_duration_seconds";
/// Calls from the coordinator to a role, by `role`, `op`, `outcome`.
pub const ROLE_CALLS_TOTAL: &str = "kgmesh_role_calls_total";
/// A coordinator-to-role call as the coordinator saw it (bus and retries included).
pub const ROLE_CALL_DURATION_SECONDS: &str = "kgmesh_role_call_duration_seconds";
/// Language-model calls, by `model` and `outcome`.
pub const LLM_REQUESTS_TOTAL: &str = "kgmesh_llm_requests_total";
/// Time of one language-model call including retries, by `model` and `outcome`.
pub const LLM_REQUEST_DURATION_SECONDS: &str = "kgmesh_llm_request_duration_seconds";
/// Language-model tokens, by `model` and `type` (`input`, `output`).
pub const LLM_TOKENS_TOTAL: &str = "kgmesh_llm_tokens_total";
/// Plan-cache lookups, by `result` (`hit`, `miss`).
pub const PLAN_CACHE_LOOKUPS_TOTAL: &str = "kgmesh_plan_cache_lookups_total";
/// Plans offered to the plan cache, by `outcome` (`stored`, `rejected`, `error`).
pub const PLAN_CACHE_STORES_TOTAL: &str = "kgmesh_plan_cache_stores_total";
/// Feedback on answers received by the coordinator, by `outcome`.
pub const FEEDBACK_TOTAL: &str = "kgmesh_feedback_total";
/// Requests to the HTTP API's scoped routes, by `principal` (the API token's name, or
/// `anonymous`; never the token), `route` and `status` (refusals included: 401, 403, 429).
pub const HTTP_REQUESTS_TOTAL: &str = "kgmesh_http_requests_total";
/// Questions answered with a role failed, timed out, missing, or answering without
/// its model, by `role` and `reason`.
pub const DEGRADED_TOTAL: &str = "kgmesh_degraded_total";
/// Role instances discovery saw on the bus that the coordinator will not call (not
/// built in and not allowed by `bus.allowed_roles`), by `role`.
pub const REFUSED_ROLES_TOTAL: &str = "kgmesh_refused_roles_total";
/// NATS connection events since the metrics started, by `event`.
pub const BUS_CONNECTION_EVENTS_TOTAL: &str = "kgmesh_bus_connection_events_total";
/// Failed bus operations, by `kind`.
pub const BUS_ERRORS_TOTAL: &str = "kgmesh_bus_errors_total";

/// Upper bounds for latency histograms: a cached lookup takes milliseconds, a question
/// with a CPU-hosted LLM takes minutes.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// Upper bounds for rounds per question (rounds are few by design).
pub const ROUND_BUCKETS: &[f64] = &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 8.0];

/// Upper bounds for answer confidences (tenths, as the calibration is reported).
pub const CONFIDENCE_BUCKETS: &[f64] = &[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// How often recorded histogram samples are folded into buckets when nobody scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

/// Renders the metrics of the recorder installed by [`install`]. Cheap to clone.
#[derive(Clone, Debug)]
pub struct MetricsHandle {
    inner: PrometheusHandle,
}

impl MetricsHandle {
    /// The current values in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        self.inner.render()
    }
}

/// Why the recorder could not be installed.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    #[error("cannot configure the Prometheus recorder: {0}")]
    Build(#[from] BuildError),
    #[error("another metrics recorder is already installed in this process")]
    AlreadyInstalled,
}

static INSTALLED: OnceLock<MetricsHandle> = OnceLock::new();

/// Installs the Prometheus recorder for this process (once; later calls return the same
/// handle) and describes every kgmesh metric.
pub fn install() -> Result<MetricsHandle, MetricsError> {
    if let Some(handle) = INSTALLED.get() {
        return Ok(handle.clone());
    }
    let recorder = builder()?.build_recorder();
    let handle = MetricsHandle {
        inner: recorder.handle(),
    };
    // Two threads racing here: one wins the global slot, the other gets its error and
    // then finds the winner's handle.
    if metrics::set_global_recorder(recorder).is_err() {
        return INSTALLED
            .get()
            .cloned()
            .ok_or(MetricsError::AlreadyInstalled);
    }
    let handle = INSTALLED.get_or_init(|| handle).clone();
    describe();
    spawn_upkeep(handle.inner.clone());
    Ok(handle)
}

/// The recorder's configuration: real histograms (not summaries) with the buckets above.
fn builder() -> Result<PrometheusBuilder, BuildError> {
    PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), LATENCY_BUCKETS)?
        .set_buckets_for_metric(Matcher::Full(QUESTION_ROUNDS.to_owned()), ROUND_BUCKETS)?
        .set_buckets_for_metric(
            Matcher::Full(ANSWER_CONFIDENCE.to_owned()),
            CONFIDENCE_BUCKETS,
        )
}

/// Histogram samples wait in a queue until upkeep or a scrape folds them in; without
/// scrapes the queue would only grow.
fn spawn_upkeep(handle: PrometheusHandle) {
    let spawned = std::thread::Builder::new()
        .name("kgmesh-metrics-upkeep".to_owned())
        .spawn(move || loop {
            std::thread::sleep(UPKEEP_INTERVAL);
            handle.run_upkeep();
        });
    if let Err(error) = spawned {
        tracing::warn!(%error, "cannot start the metrics upkeep thread; scrapes still fold samples in");
    }
}

/// Help text and units for every metric, so a scrape explains itself.
pub fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        QUESTIONS_TOTAL,
        Unit::Count,
        "Questions answered, by outcome: answered, low_confidence (answers on a path no question word names), partial (a budget ran out), dont_know (no answer), error (refused before any work)"
    );
    describe_counter!(
        HTTP_REQUESTS_TOTAL,
        Unit::Count,
        "Requests to the HTTP API's scoped routes, by principal (the API token's name, or anonymous), route and status, refusals (401, 403, 429) included"
    );
    describe_histogram!(
        QUESTION_DURATION_SECONDS,
        Unit::Seconds,
        "Time from a question's arrival at the coordinator to its reply"
    );
    describe_histogram!(
        QUESTION_ROUNDS,
        Unit::Count,
        "Refinement rounds a question took"
    );
    describe_histogram!(
        ANSWER_CONFIDENCE,
        Unit::Count,
        "Confidence of each answer given (the estimated chance that it is right), by kept: yes, or no when it fell below min_confidence and was withheld"
    );
    describe_counter!(
        SECOND_READINGS_TOTAL,
        Unit::Count,
        "Answers a second reading of the question (the learned reader's first plan) was read for, by reaches: yes, or no when it reaches other answers (their confidence is lowered)"
    );
    describe_histogram!(
        ROUND_DURATION_SECONDS,
        Unit::Seconds,
        "Time of one refinement round (link, retrieve, judge, expand), by round number"
    );
    describe_gauge!(
        QUESTIONS_IN_FLIGHT,
        Unit::Count,
        "Questions the coordinator is answering right now"
    );
    describe_counter!(
        BUDGET_EXHAUSTED_TOTAL,
        Unit::Count,
        "Questions whose budget ran out, by the budget that ran out first"
    );
    describe_gauge!(
        ROLE_REPLICAS,
        Unit::Count,
        "Instances of each role seen on the bus by the coordinator's last discovery"
    );
    describe_counter!(
        ROLE_REQUESTS_TOTAL,
        Unit::Count,
        "Requests served by the roles in this process, by role, op and outcome (ok or the error kind)"
    );
    describe_histogram!(
        ROLE_REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "Time a role in this process took to serve a request, by role, op and outcome"
    );
    describe_counter!(
        ROLE_CALLS_TOTAL,
        Unit::Count,
        "Calls the coordinator made to roles, by role, op and outcome (ok, the agent's error kind, or the bus error kind)"
    );
    describe_histogram!(
        ROLE_CALL_DURATION_SECONDS,
        Unit::Seconds,
        "Time of a coordinator-to-role call as the coordinator saw it, bus time and retries included, by role, op and outcome"
    );
    describe_counter!(
        LLM_REQUESTS_TOTAL,
        Unit::Count,
        "Language-model chat calls from this process, by model and outcome (ok or the error kind)"
    );
    describe_histogram!(
        LLM_REQUEST_DURATION_SECONDS,
        Unit::Seconds,
        "Time of one language-model chat call, retries included, by model and outcome"
    );
    describe_counter!(
        LLM_TOKENS_TOTAL,
        Unit::Count,
        "Language-model tokens, by model and type (input or output); estimated when the server reports no usage"
    );
    describe_counter!(
        PLAN_CACHE_LOOKUPS_TOTAL,
        Unit::Count,
        "Plan-cache lookups, by result: hit (past plans or a replayable plan found) or miss"
    );
    describe_counter!(
        PLAN_CACHE_STORES_TOTAL,
        Unit::Count,
        "Verified plans offered to the plan cache, by outcome: stored, rejected (not replayable) or error"
    );
    describe_counter!(
        FEEDBACK_TOTAL,
        Unit::Count,
        "Feedback on answers, by outcome: confirmed, demoted, dropped, learned, no_plan, not_verified, or refused (invalid, unknown_question, error)"
    );
    describe_counter!(
        DEGRADED_TOTAL,
        Unit::Count,
        "Questions answered degraded, once per role and reason: failed, timeout, missing, or model_fallback (the role's model reply was unusable and its LLM-free strategy answered)"
    );
    describe_counter!(
        REFUSED_ROLES_TOTAL,
        Unit::Count,
        "Announcements of roles the coordinator does not call (neither built in nor allowed by bus.allowed_roles), once per discovery and role"
    );
    describe_counter!(
        BUS_CONNECTION_EVENTS_TOTAL,
        Unit::Count,
        "NATS connection events of this process since its metrics started, by event: connected, disconnected, lame_duck, draining, closed, slow_consumer, server_error, client_error"
    );
    describe_counter!(
        BUS_ERRORS_TOTAL,
        Unit::Count,
        "Failed bus requests and replies, by kind: timed_out, no_responders, decode, closed, payload_too_large, other"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `name{labels} value` lines into (series, value).
    fn samples(text: &str) -> Vec<(String, f64)> {
        text.lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .filter_map(|line| {
                let (series, value) = line.rsplit_once(' ')?;
                Some((series.to_owned(), value.parse().ok()?))
            })
            .collect()
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        samples(text)
            .into_iter()
            .find(|(s, _)| s == series)
            .map(|(_, v)| v)
    }

    #[test]
    fn local_recorder_renders_histograms_with_buckets_and_help() {
        let recorder = builder().expect("valid buckets").build_recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            describe();
            metrics::histogram!(ROLE_REQUEST_DURATION_SECONDS, "role" => "judge", "op" => "judge", "outcome" => "ok")
                .record(0.03);
            metrics::histogram!(ROLE_REQUEST_DURATION_SECONDS, "role" => "judge", "op" => "judge", "outcome" => "ok")
                .record(7.0);
            metrics::histogram!(QUESTION_ROUNDS).record(2.0);
            metrics::counter!(QUESTIONS_TOTAL, "outcome" => "answered").increment(3);
            metrics::gauge!(ROLE_REPLICAS, "role" => "judge").set(2.0);
        });
        let text = handle.render();

        assert!(
            text.contains("# TYPE kgmesh_role_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains("# HELP kgmesh_questions_total Questions answered"),
            "{text}"
        );
        let labels = r#"role="judge",op="judge",outcome="ok""#;
        // 0.03 s falls in the 0.05 bucket, 7 s only from the 10 s bucket on.
        let bucket = |le: &str| {
            value(
                &text,
                &format!("kgmesh_role_request_duration_seconds_bucket{{{labels},le=\"{le}\"}}"),
            )
        };
        assert_eq!(bucket("0.025"), Some(0.0), "{text}");
        assert_eq!(bucket("0.05"), Some(1.0), "{text}");
        assert_eq!(bucket("5"), Some(1.0), "{text}");
        assert_eq!(bucket("10"), Some(2.0), "{text}");
        assert_eq!(bucket("+Inf"), Some(2.0), "{text}");
        assert_eq!(
            value(
                &text,
                &format!("kgmesh_role_request_duration_seconds_count{{{labels}}}")
            ),
            Some(2.0)
        );
        let sum = value(
            &text,
            &format!("kgmesh_role_request_duration_seconds_sum{{{labels}}}"),
        )
        .expect("a _sum line");
        assert!((sum - 7.03).abs() < 1e-9, "{sum}");

        assert_eq!(
            value(&text, r#"kgmesh_question_rounds_bucket{le="1"}"#),
            Some(0.0)
        );
        assert_eq!(
            value(&text, r#"kgmesh_question_rounds_bucket{le="2"}"#),
            Some(1.0)
        );
        assert_eq!(
            value(&text, r#"kgmesh_questions_total{outcome="answered"}"#),
            Some(3.0)
        );
        assert_eq!(
            value(&text, r#"kgmesh_role_replicas{role="judge"}"#),
            Some(2.0)
        );
    }

    #[test]
    fn install_is_idempotent_and_renders_the_global_recorder() {
        let first = install().expect("installs");
        let second = install().expect("a second install returns the same handle");
        metrics::counter!(BUS_ERRORS_TOTAL, "kind" => "no_responders").increment(1);
        metrics::counter!(BUS_ERRORS_TOTAL, "kind" => "no_responders").increment(1);
        let series = r#"kgmesh_bus_errors_total{kind="no_responders"}"#;
        assert_eq!(value(&first.render(), series), Some(2.0));
        assert_eq!(value(&second.render(), series), Some(2.0));
        assert!(first
            .render()
            .contains("# TYPE kgmesh_bus_errors_total counter"));
    }

    #[test]
    fn content_type_is_the_text_exposition_format() {
        assert!(CONTENT_TYPE.starts_with("text/plain; version=0.0.4"));
    }
}
