//! The coordinator: checks a question, finds the roles on the bus, and runs it
//! ([`crate::rounds`]) under the budget its request and configuration allow, once or,
//! with a model cascade, twice.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_bus::Bus;
use kgmesh_schemas::{
    messages::ask::{AskReply, AskRequest},
    ContentType, QuestionId, TraceContext,
};
use tracing::Instrument;

use crate::{
    calls::Caller,
    config::CoordinatorConfig,
    directory::{RoleDirectory, RoleSnapshot},
    error::{CoordinatorError, MAX_ANSWERS, MAX_ROUNDS, MAX_TIMEOUT_MS, REQUIRED_ROLES},
    hedge::Latencies,
    ledger::Ledger,
    recent::RecentQuestions,
    rounds::Run,
    stages::RunContext,
};

/// Answers questions by driving the roles on a bus. Cheap to share (`Arc`).
pub struct Coordinator {
    bus: Arc<dyn Bus>,
    config: CoordinatorConfig,
    directory: RoleDirectory,
    /// What feedback by question id resolves against.
    recent: RecentQuestions,
    /// Recent call latencies per role, what hedged calls wait for.
    latencies: Latencies,
}

impl Coordinator {
    pub fn new(bus: Arc<dyn Bus>, config: CoordinatorConfig) -> Self {
        let directory = RoleDirectory::new(
            bus.clone(),
            config.discovery_ttl,
            config.discovery_wait,
            config.allowed_roles.clone(),
        );
        let recent = RecentQuestions::new(config.recent_questions);
        Self {
            bus,
            config,
            directory,
            recent,
            latencies: Latencies::default(),
        }
    }

    pub fn config(&self) -> &CoordinatorConfig {
        &self.config
    }

    /// Fails with `MissingRoles` unless some replica of `role` serves `op`. The cached
    /// discovery may predate the role; these requests are rare enough to look again
    /// before refusing them.
    pub(crate) async fn require_role(
        &self,
        role: &str,
        op: &str,
    ) -> Result<ContentType, CoordinatorError> {
        for refresh in [false, true] {
            let directory = self.directory();
            let snapshot = if refresh {
                directory.refresh().await
            } else {
                directory.snapshot().await
            }
            .map_err(CoordinatorError::Discovery)?;
            if snapshot.serves(role, op) {
                return Ok(snapshot.codec(role));
            }
        }
        Err(CoordinatorError::MissingRoles(vec![role.to_owned()]))
    }

    pub fn directory(&self) -> &RoleDirectory {
        &self.directory
    }

    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.bus
    }

    /// The questions answered last, by the id their replies carried.
    pub fn recent_questions(&self) -> &RecentQuestions {
        &self.recent
    }

    /// Checks a question before any work is done on it.
    pub fn validate(&self, request: &AskRequest) -> Result<(), CoordinatorError> {
        self.validate_question(request.question.trim())?;
        let options = &request.options;
        let mut problems: Vec<String> = Vec::new();
        if let Some(rounds) = options.max_rounds.filter(|r| !(1..=MAX_ROUNDS).contains(r)) {
            problems.push(format!(
                "options.max_rounds = {rounds} must be between 1 and {MAX_ROUNDS}"
            ));
        }
        if let Some(ms) = options
            .timeout_ms
            .filter(|ms| !(1..=MAX_TIMEOUT_MS).contains(ms))
        {
            problems.push(format!(
                "options.timeout_ms = {ms} must be between 1 and {MAX_TIMEOUT_MS}"
            ));
        }
        if let Some(answers) = options
            .max_answers
            .filter(|a| !(1..=MAX_ANSWERS).contains(a))
        {
            problems.push(format!(
                "options.max_answers = {answers} must be between 1 and {MAX_ANSWERS}"
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(CoordinatorError::InvalidQuestion(problems.join("; ")))
        }
    }

    /// Checks a question's text: not empty, not too long.
    pub(crate) fn validate_question(&self, question: &str) -> Result<(), CoordinatorError> {
        if question.is_empty() {
            return Err(CoordinatorError::InvalidQuestion(
                "the question is empty".into(),
            ));
        }
        let chars = question.chars().count();
        if chars > self.config.max_question_chars {
            return Err(CoordinatorError::InvalidQuestion(format!(
                "the question has {chars} characters; at most {} are accepted",
                self.config.max_question_chars
            )));
        }
        Ok(())
    }

    pub async fn ask(&self, request: AskRequest) -> Result<AskReply, CoordinatorError> {
        self.ask_traced(request, TraceContext::default()).await
    }

    /// Answers `request` as part of the trace `trace` (a fresh trace when empty).
    pub async fn ask_traced(
        &self,
        request: AskRequest,
        trace: TraceContext,
    ) -> Result<AskReply, CoordinatorError> {
        self.ask_as(request, trace, "anonymous").await
    }

    /// [`Coordinator::ask_traced`] for `principal` (the name of the API token that
    /// asked), which the question's span records.
    pub async fn ask_as(
        &self,
        request: AskRequest,
        trace: TraceContext,
        principal: &str,
    ) -> Result<AskReply, CoordinatorError> {
        let _in_flight = crate::metrics::InFlight::enter();
        let started = Instant::now();
        let result = self.answer(request, trace, principal).await;
        crate::metrics::record_question(result.as_ref().ok(), started.elapsed());
        result
    }

    async fn answer(
        &self,
        request: AskRequest,
        trace: TraceContext,
        principal: &str,
    ) -> Result<AskReply, CoordinatorError> {
        self.validate(&request)?;
        let snapshot = self
            .directory
            .snapshot()
            .await
            .map_err(CoordinatorError::Discovery)?;
        let missing: Vec<String> = REQUIRED_ROLES
            .iter()
            .filter(|role| !snapshot.has(role))
            .map(|role| role.to_string())
            .collect();
        if !missing.is_empty() {
            return Err(CoordinatorError::MissingRoles(missing));
        }
        let question_id = QuestionId::new_random();
        let budget = self.config.budget_for(
            request.options.max_rounds,
            request.options.timeout_ms.map(Duration::from_millis),
        );
        let span = tracing::info_span!(
            "question",
            question_id = %question_id,
            kgmesh.question_id = %question_id,
            kgmesh.principal = principal,
            kgmesh.budget.rounds = budget.rounds,
            kgmesh.budget.llm_calls = budget.llm_calls,
            kgmesh.budget.tokens = budget.tokens,
            trace_id = tracing::field::Empty,
            kgmesh.rounds_run = tracing::field::Empty,
            kgmesh.answers = tracing::field::Empty,
            kgmesh.low_confidence = tracing::field::Empty,
        );
        // With a tracer the question's span is the trace (a child of the caller's span
        // when one came in), so the id quoted to the user is the one a trace backend
        // shows; without one, the caller's trace or a fresh id is still quoted.
        kgmesh_telemetry::set_parent(&span, &trace);
        let trace = match kgmesh_telemetry::inject(&span) {
            exported if !exported.is_empty() => exported,
            _ if !trace.is_empty() => trace,
            _ => new_trace(),
        };
        span.record("trace_id", trace.trace_id().unwrap_or(""));
        let admitted = Admitted {
            request: &request,
            snapshot,
            question_id,
            trace,
            budget,
        };
        let reply = match self.config.cascade_below.filter(|_| budget.llm_calls > 0) {
            None => {
                self.new_run(admitted, None, true)
                    .run()
                    .instrument(span)
                    .await
            }
            Some(threshold) => self.cascade(admitted, threshold).instrument(span).await,
        };
        self.recent.remember(
            reply.question_id.clone(),
            request.question.trim().to_owned(),
        );
        Ok(reply)
    }

    /// A question's run. `store_at`: store its plan in the cache only when its answer
    /// has at least this confidence (or replayed a plan); `None`: whenever it may.
    /// `reserve`: keep the summarizer's model calls for it, out of the first round's.
    fn new_run(&self, question: Admitted<'_>, store_at: Option<f32>, reserve: bool) -> Run<'_> {
        let Admitted {
            request,
            snapshot,
            question_id,
            trace,
            budget,
        } = question;
        let reserved = if reserve && budget.llm_calls > 0 {
            self.config.summarizer_llm_calls
        } else {
            0
        };
        let cx = RunContext {
            caller: Caller {
                bus: self.bus.as_ref(),
                config: &self.config,
                latencies: &self.latencies,
                snapshot,
            },
            question: request.question.trim().to_owned(),
            no_cache: request.options.no_cache,
            store_at,
            evidence_edges: request.options.evidence_edges,
            max_answers: request
                .options
                .max_answers
                .unwrap_or(self.config.max_answers),
        };
        let ledger = Ledger::new(question_id, trace, budget).with_reserved_llm_calls(reserved);
        Run::new(cx, ledger)
    }

    /// The model cascade: the question is first answered with no model call; an answer
    /// with at least `threshold` confidence (or from a replayed, verified plan) is the
    /// reply. Below it the question is answered again with at most `cascade_calls`
    /// model calls; fewer than its budget are spent by the run's roles in their order
    /// (with one, the KG-Linker's plan: nothing is kept back for the summarizer). That
    /// answer is kept unless it is worse supported (no answer, or a role fell back from
    /// its model), in which case the LLM-free one stands. Either way the reply says so,
    /// and carries both runs' cost and role calls.
    async fn cascade(&self, question: Admitted<'_>, threshold: f32) -> AskReply {
        let started = Instant::now();
        let mut free_budget = question.budget;
        free_budget.llm_calls = 0;
        let free_question = Admitted {
            budget: free_budget,
            ..question.clone()
        };
        let free = self
            .new_run(free_question, Some(threshold), false)
            .run()
            .await;
        let shown = |c: Option<f32>| c.map_or("none".to_owned(), |c| format!("{c:.2}"));
        if free.plan_replayed || free.confidence.is_some_and(|c| c >= threshold) {
            let mut reply = free;
            reply.notes.push(format!(
                "model cascade: answered without the model (confidence {} ≥ {threshold:.2}{})",
                shown(reply.confidence),
                if reply.plan_replayed {
                    ", or a replayed plan"
                } else {
                    ""
                }
            ));
            return reply;
        }
        // Fewer calls than the question's budget go to the roles in their order; the
        // whole budget is spent as on a question asked without the cascade.
        let cap = self.config.cascade_calls.max(1);
        let limited = cap < question.budget.llm_calls;
        let calls = question.budget.llm_calls.min(cap);
        let mut asked_question = question;
        asked_question.budget.llm_calls = calls;
        let asked = self.new_run(asked_question, None, !limited).run().await;
        let worse = asked.answers.is_empty() && !free.answers.is_empty()
            || (!asked.degraded.is_empty() && free.degraded.is_empty());
        let why = format!(
            "model cascade: the LLM-free answer's confidence {} is below {threshold:.2}, so the model was asked (at most {calls} call{})",
            shown(free.confidence),
            if calls == 1 { "" } else { "s" }
        );
        let (mut reply, other) = if worse {
            let mut kept = free;
            kept.notes.push(format!(
                "{why}; its answer is not used (it {}), the LLM-free one stands",
                if asked.answers.is_empty() {
                    "found no answer"
                } else {
                    "fell back from the model"
                }
            ));
            kept.degraded.extend(asked.degraded.iter().cloned());
            (kept, asked)
        } else {
            let mut kept = asked;
            kept.notes.push(why);
            (kept, free)
        };
        reply.cost.add(&other.cost);
        let mut calls = other.calls;
        calls.append(&mut reply.calls);
        reply.calls = calls;
        reply
            .timings
            .stages
            .insert(0, ("cascade: other run".to_owned(), other.timings.total_us));
        reply.timings.total_us = started.elapsed().as_micros() as u64;
        reply
    }
}

/// A question admitted to run: what was asked, the roles discovery saw when it came
/// in, its id, its trace and its budget.
#[derive(Clone)]
struct Admitted<'r> {
    request: &'r AskRequest,
    snapshot: Arc<RoleSnapshot>,
    question_id: QuestionId,
    trace: TraceContext,
    budget: kgmesh_schemas::Budget,
}

/// A fresh W3C trace context, so that every question has a trace id to quote even
/// when no tracer is installed.
fn new_trace() -> TraceContext {
    let trace_id = uuid::Uuid::new_v4().simple().to_string();
    let span_id = &uuid::Uuid::new_v4().simple().to_string()[..16];
    TraceContext {
        traceparent: format!("00-{trace_id}-{span_id}-01"),
        tracestate: String::new(),
    }
}
