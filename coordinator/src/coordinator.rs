//! The round loop (ByoKG-RAG Algorithm 2 with CacheRAG's dispatcher, Algorithm 3).
//!
//! ```text
//! cache lookup ─┐
//!               ▼
//! round t: kg-linker ─► entity-linker ─► every retriever (parallel) ─► merge
//!               ▲                                                       │
//!               │            judge ◄──── σ_depth / σ_breadth expansion ◄┤
//!               └──── next round ◄── NextRound        COMPLETE ──► summarizer ─► cache store
//! ```
//!
//! The coordinator only talks to the bus: it cannot tell in-process roles from remote
//! ones, and every role it fans out to is discovered, not configured.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::join_all;
use kgmesh_bus::{
    typed::{call_to, cancel, CallError, Target},
    Bus, BusError, RetryPolicy,
};
use kgmesh_schemas::{
    budget::{Cost, Limit},
    graph::{Entity, Metapath, ScoredEntity},
    messages::{
        ask::{AskReply, AskRequest, Degradation},
        cache::{CacheEntry, CacheLookup, CacheStore, FewShotExample, Isr, Plan, RelationCue},
        context::{Context, EvidenceItem},
        entity_linker::LinkRequest,
        judge::{JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
        path_follower::{ExpandRequest, Expansion},
        retrieve::{RetrieveReply, RetrieveRequest},
        summarizer::{SummarizeReply, SummarizeRequest},
    },
    AgentError, ContentType, Deadline, Meta, NodeId, QuestionId, Role, Rpc, TraceContext,
};
use tracing::Instrument;

use crate::{
    config::CoordinatorConfig,
    context::ContextState,
    directory::{RoleDirectory, RoleSnapshot},
    hedge::{Hedge, Latencies},
    ledger::Ledger,
    recent::RecentQuestions,
};

/// Roles a question cannot be answered without.
pub const REQUIRED_ROLES: [&str; 2] = [Role::KG_LINKER, Role::SUMMARIZER];

/// Upper bounds on what one request may ask for (`options` of `POST /v1/ask`).
pub const MAX_ROUNDS: u8 = 10;
/// Ten minutes: enough for a CPU-hosted model, not a request that never ends.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
pub const MAX_ANSWERS: u16 = 1_000;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CoordinatorError {
    #[error("invalid question: {0}")]
    InvalidQuestion(String),
    #[error("cannot discover the roles on the bus: {0}")]
    Discovery(BusError),
    #[error("required roles are not on the bus: {}", .0.join(", "))]
    MissingRoles(Vec<String>),
    /// Feedback named a question id this coordinator does not remember.
    #[error("unknown question: {0}")]
    UnknownQuestion(String),
    /// A role the request needed replied with an error or did not reply.
    #[error("{role} failed: {error}")]
    RoleFailed { role: String, error: AgentError },
}

impl CoordinatorError {
    /// A short stable name for HTTP error bodies and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            CoordinatorError::InvalidQuestion(_) => "invalid_question",
            CoordinatorError::Discovery(_) => "discovery_failed",
            CoordinatorError::MissingRoles(_) => "missing_roles",
            CoordinatorError::UnknownQuestion(_) => "unknown_question",
            CoordinatorError::RoleFailed { .. } => "role_failed",
        }
    }
}

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
        let snapshot = self
            .directory()
            .snapshot()
            .await
            .map_err(CoordinatorError::Discovery)?;
        if snapshot.serves(role, op) {
            return Ok(snapshot.codec(role));
        }
        let snapshot = self
            .directory()
            .refresh()
            .await
            .map_err(CoordinatorError::Discovery)?;
        if snapshot.serves(role, op) {
            Ok(snapshot.codec(role))
        } else {
            Err(CoordinatorError::MissingRoles(vec![role.to_owned()]))
        }
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
        crate::metrics::record_question(&result, started.elapsed());
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
        let reply = match self.config.cascade_below.filter(|_| budget.llm_calls > 0) {
            None => {
                self.new_run(&request, snapshot, question_id, trace, budget, None)
                    .run()
                    .instrument(span)
                    .await
            }
            Some(threshold) => {
                self.cascade(&request, snapshot, question_id, trace, budget, threshold)
                    .instrument(span)
                    .await
            }
        };
        self.recent.remember(
            reply.question_id.clone(),
            request.question.trim().to_owned(),
        );
        Ok(reply)
    }

    /// A question's run. `store_at`: store its plan in the cache only when its answer
    /// has at least this confidence (or replayed a plan); `None`: whenever it may.
    fn new_run(
        &self,
        request: &AskRequest,
        snapshot: Arc<RoleSnapshot>,
        question_id: QuestionId,
        trace: TraceContext,
        budget: kgmesh_schemas::Budget,
        store_at: Option<f32>,
    ) -> Run<'_> {
        let reserved = if budget.llm_calls > 0 {
            self.config.summarizer_llm_calls
        } else {
            0
        };
        Run {
            coordinator: self,
            snapshot,
            question: request.question.trim().to_owned(),
            no_cache: request.options.no_cache,
            store_at,
            evidence_edges: request.options.evidence_edges,
            max_answers: request
                .options
                .max_answers
                .unwrap_or(self.config.max_answers),
            ledger: Ledger::new(question_id, trace, budget).with_reserved_llm_calls(reserved),
            context: ContextState::default(),
            linked_mentions: HashMap::new(),
            topic: Vec::new(),
            drafts: Vec::new(),
            seen_metapaths: HashSet::new(),
            seen_cypher: HashSet::new(),
            plan: Plan::default(),
            trusted_metapaths: Vec::new(),
            repair_hints: Vec::new(),
            examples: Vec::new(),
            cues: Vec::new(),
            isr: None,
            cache_hit: false,
            plan_replayed: false,
            replay_similarity: None,
            replay: ReplayReport::default(),
            rounds_run: 0,
            complete: false,
            model_verified: false,
            degraded: Vec::new(),
            plan_confidence: None,
            plan_reranked: false,
        }
    }

    /// The model cascade: the question is first answered with no model call; an answer
    /// with at least `threshold` confidence (or from a replayed, verified plan) is the
    /// reply. Below it the question is answered again with the model, and that answer
    /// is kept unless it is worse supported (no answer, or a role fell back from its
    /// model), in which case the LLM-free one stands. Either way the reply says so, and
    /// carries both runs' cost and role calls.
    async fn cascade(
        &self,
        request: &AskRequest,
        snapshot: Arc<RoleSnapshot>,
        question_id: QuestionId,
        trace: TraceContext,
        budget: kgmesh_schemas::Budget,
        threshold: f32,
    ) -> AskReply {
        let started = Instant::now();
        let mut free_budget = budget;
        free_budget.llm_calls = 0;
        let free = self
            .new_run(
                request,
                snapshot.clone(),
                question_id,
                trace.clone(),
                free_budget,
                Some(threshold),
            )
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
        let asked = self
            .new_run(request, snapshot, question_id, trace, budget, None)
            .run()
            .await;
        let worse = asked.answers.is_empty() && !free.answers.is_empty()
            || (!asked.degraded.is_empty() && free.degraded.is_empty());
        let why = format!(
            "model cascade: the LLM-free answer's confidence {} is below {threshold:.2}, so the model was asked",
            shown(free.confidence)
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

/// Sends one typed request, retrying once more per `retries` when no replica
/// answered (another may have come up) or one was unavailable or overloaded; with a
/// `hedge`, a request with no reply after its delay is also sent to the hedge's
/// replicas in turn (see [`crate::hedge`]), and the first reply wins.
pub(crate) async fn send<R: Rpc + Clone>(
    bus: &dyn Bus,
    (role, codec): (&Role, ContentType),
    mut meta: Meta,
    body: R,
    timeout: Duration,
    retries: u32,
    hedge: Option<Hedge>,
) -> Result<(R::Reply, Cost), CallError> {
    // The receiving agent's span becomes a child of the span this call is made in.
    meta.trace = kgmesh_telemetry::current_or(meta.trace);
    let started = Instant::now();
    let to = Target::role(role, codec);
    let result = match hedge.filter(|_| R::READ_ONLY) {
        Some(hedge) => send_hedged(bus, to, meta, body, timeout, retries, hedge).await,
        None => send_retrying(bus, to, meta, body, timeout, retries).await,
    };
    crate::metrics::record_call(role, R::OP, &result, started.elapsed());
    result
}

/// One call, retried as [`RetryPolicy`] says, each attempt bounded by `timeout` and
/// none past the request's deadline.
async fn send_retrying<R: Rpc + Clone>(
    bus: &dyn Bus,
    target: Target<'_>,
    meta: Meta,
    body: R,
    timeout: Duration,
    retries: u32,
) -> Result<(R::Reply, Cost), CallError> {
    RetryPolicy::with_retries(retries)
        .run(meta.budget.deadline, |attempt| {
            let wait = if attempt == 0 {
                timeout
            } else {
                timeout.min(meta.budget.deadline.remaining())
            };
            call_to::<R>(bus, target, meta.clone(), body.clone(), wait)
        })
        .await
}

/// The request to any replica first; then, each time `hedge.after` passes with no
/// reply, to the next of `hedge.instances` on its direct subject, all within
/// `timeout`. The first reply wins, and the replicas are asked to cancel the others'
/// work; an agent's own error (a refused request) is final at once, since another
/// replica would refuse it too.
async fn send_hedged<R: Rpc + Clone>(
    bus: &dyn Bus,
    to: Target<'_>,
    meta: Meta,
    body: R,
    timeout: Duration,
    retries: u32,
    hedge: Hedge,
) -> Result<(R::Reply, Cost), CallError> {
    use futures::stream::{FuturesUnordered, StreamExt};

    let role = to.role;
    let call_id = uuid::Uuid::new_v4().simple().to_string();
    let to = Target {
        call_id: Some(&call_id),
        ..to
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut pending = FuturesUnordered::new();
    pending.push(Box::pin(send_retrying(
        bus,
        to,
        meta.clone(),
        body.clone(),
        timeout,
        retries,
    )));
    let mut instances = hedge.instances.iter();
    let mut more = true;
    let mut first_error = None;
    let next_hedge = tokio::time::sleep(hedge.after);
    tokio::pin!(next_hedge);
    loop {
        let send_next = tokio::select! {
            Some(result) = pending.next() => match result {
                Ok(reply) => {
                    if !pending.is_empty() {
                        // The losers' replicas stop their work (the winner's has ended).
                        drop(pending);
                        for instance in &hedge.instances {
                            if let Err(error) = cancel(bus, role, instance, &call_id).await {
                                tracing::debug!(%error, %instance, "cancel not sent");
                            }
                        }
                        crate::metrics::record_cancel(role, R::OP);
                    }
                    return Ok(reply);
                }
                Err(error) if !RetryPolicy::is_transient(&error) => return Err(error),
                Err(error) => {
                    first_error.get_or_insert(error);
                    // Nothing left in flight: the next replica at once, if any.
                    pending.is_empty()
                }
            },
            () = &mut next_hedge, if more => true,
            else => false,
        };
        if send_next {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match instances.next() {
                Some(instance) if !left.is_zero() => {
                    crate::metrics::record_hedge(role, R::OP);
                    tracing::debug!(role = role.as_str(), op = R::OP, %instance, "hedged call");
                    let to = Target {
                        instance: Some(instance.as_str()),
                        ..to
                    };
                    pending.push(Box::pin(send_retrying(
                        bus,
                        to,
                        meta.clone(),
                        body.clone(),
                        left,
                        0,
                    )));
                    next_hedge
                        .as_mut()
                        .reset(tokio::time::Instant::now() + hedge.after);
                }
                _ => more = false,
            }
        }
        if pending.is_empty() && !more {
            return Err(first_error.unwrap_or(CallError::Bus(BusError::TimedOut {
                subject: role.subject(R::OP),
                timeout,
            })));
        }
    }
}

/// One question in flight.
struct Run<'a> {
    coordinator: &'a Coordinator,
    snapshot: Arc<RoleSnapshot>,
    question: String,
    no_cache: bool,
    /// Store the plan only when the answer has at least this confidence (the cascade's
    /// LLM-free run, whose answer may be replaced).
    store_at: Option<f32>,
    evidence_edges: bool,
    max_answers: u16,
    ledger: Ledger,
    context: ContextState,
    /// Mentions (lower-cased) already sent to the entity linker, with what came back.
    linked_mentions: HashMap<String, Vec<ScoredEntity>>,
    /// Linked question entities, first-linked first.
    topic: Vec<ScoredEntity>,
    /// Linked draft answers.
    drafts: Vec<ScoredEntity>,
    seen_metapaths: HashSet<Metapath>,
    seen_cypher: HashSet<String>,
    /// What retrieved the evidence, for the plan cache.
    plan: Plan,
    /// Relation paths the summarizer's rule trusts over its own reading: those a
    /// model chose and the graph confirmed, or a replayed verified plan's.
    trusted_metapaths: Vec<Metapath>,
    repair_hints: Vec<String>,
    examples: Vec<FewShotExample>,
    /// What the question's words meant in past verified plans (the cache's lexicon).
    cues: Vec<RelationCue>,
    isr: Option<Isr>,
    cache_hit: bool,
    /// A cached plan was replayed in round 1.
    plan_replayed: bool,
    /// The replayed plan was a similar template's, this similar.
    replay_similarity: Option<f32>,
    /// What the replayed plan was and what it reached.
    replay: ReplayReport,
    rounds_run: u8,
    complete: bool,
    /// A language model judged the retrieval complete (rather than the rule-based
    /// judge): the plan counts as verified and may be replayed without a model.
    model_verified: bool,
    /// Roles that failed, timed out, were missing, or answered without their model.
    degraded: Vec<Degradation>,
    /// The reader's chance that its first plan is right (the first LLM-free plan that
    /// came with one).
    plan_confidence: Option<f32>,
    /// The plan the confidence is for is a re-ranking reader's (not calibrated).
    plan_reranked: bool,
}

/// What one round asks the retrievers for.
#[derive(Default)]
struct RoundWork {
    metapaths: Vec<Metapath>,
    cypher: Vec<String>,
}

impl Run<'_> {
    fn config(&self) -> &CoordinatorConfig {
        &self.coordinator.config
    }

    async fn run(mut self) -> AskReply {
        let max_rounds = self.ledger.budget().rounds.max(1);
        let mut replay = self.cache_lookup().await;
        let mut round: u8 = 0;
        while round < max_rounds {
            if self.complete || self.ledger.is_exhausted() {
                break;
            }
            round += 1;
            self.rounds_run = round;
            self.ledger.begin_round(round, max_rounds);
            let budget = self.ledger.budget();
            let round_span = tracing::info_span!(
                "round",
                round,
                kgmesh.round = round,
                kgmesh.question_id = %self.ledger.question_id(),
                kgmesh.budget.rounds_left = budget.rounds,
                kgmesh.budget.llm_calls_left = budget.llm_calls,
                kgmesh.budget.tokens_left = budget.tokens,
            );
            let round_started = Instant::now();
            let keep_going = if let Some(plan) = replay.take() {
                self.plan_replayed = true;
                self.replay_round(round, plan).instrument(round_span).await
            } else {
                self.linker_round(round).instrument(round_span).await
            };
            crate::metrics::record_round(round, round_started.elapsed());
            if !keep_going {
                break;
            }
        }
        self.finish().await
    }

    /// ByoKG-RAG's round: link, retrieve, judge. Returns whether another round may
    /// help.
    async fn linker_round(&mut self, round: u8) -> bool {
        let (context, _) = self.context_for(Role::KG_LINKER);
        let request = KgLinkRequest {
            question: self.question.clone(),
            context,
            repair_hints: std::mem::take(&mut self.repair_hints),
            examples: self.examples.clone(),
            cues: self.cues.clone(),
        };
        // Worth a note only where the KG-Linker asked the model in an earlier round.
        if self.ledger.model_calls_of(Role::KG_LINKER) > 0
            && self.ledger.meta(round).budget.llm_calls == 0
        {
            self.context.note(format!(
                "round {round}: the kg-linker plans without the model: the question's \
                 model calls (budget.llm_calls) are spent or kept for the summarizer"
            ));
        }
        let Some(link): Option<KgLinkReply> = self
            .call_role(
                &Role::well_known(Role::KG_LINKER),
                round,
                request,
                "kg-linker",
            )
            .await
        else {
            return false;
        };
        let finish = link.finish;
        let work = self.adopt_link(round, link).await;
        let Some(work) = work else {
            let why = if finish {
                "the kg-linker answered FINISH"
            } else {
                "the kg-linker found nothing new"
            };
            tracing::debug!(round, why, "rounds end");
            // Retrievers that read the question itself (documents) still get the first
            // round, even when nothing in it names a graph entity.
            if round == 1 && !finish && self.context.is_empty() && !self.ledger.is_exhausted() {
                self.retrieve_and_judge(round, RoundWork::default()).await;
            }
            return false;
        };
        if self.ledger.is_exhausted() {
            return false;
        }
        self.retrieve_and_judge(round, work).await;
        !finish
    }

    /// A cached plan replayed without the kg-linker (the 0-LLM-call fast path);
    /// the rounds after it use the linker only when the replay was not enough.
    async fn replay_round(&mut self, round: u8, plan: Plan) -> bool {
        // The past question whose plan this is: the most relevant example with the
        // same relation paths and as many queries (the replay is that plan with this
        // question's entities, which its queries name).
        self.replay.question = self
            .examples
            .iter()
            .find(|e| {
                e.plan.metapaths == plan.metapaths && e.plan.cypher.len() == plan.cypher.len()
            })
            .map(|e| e.question.clone());
        for entity in &plan.entities {
            push_unique(
                &mut self.topic,
                ScoredEntity {
                    entity: entity.clone(),
                    score: 1.0,
                },
            );
        }
        self.plan.entities = self.topic.iter().map(|s| s.entity.clone()).collect();
        let mut work = RoundWork::default();
        for metapath in plan.metapaths {
            if !self.trusted_metapaths.contains(&metapath) {
                self.trusted_metapaths.push(metapath.clone());
            }
            if self.seen_metapaths.insert(metapath.clone()) {
                self.plan.metapaths.push(metapath.clone());
                work.metapaths.push(metapath);
            }
        }
        for cypher in plan.cypher {
            if self.seen_cypher.insert(cypher.clone()) {
                self.plan.cypher.push(cypher.clone());
                work.cypher.push(cypher);
            }
        }
        let first_new = self.context.len();
        self.retrieve(round, work).await;
        self.measure_replay(first_new);
        if !self.ledger.is_exhausted() {
            self.judge_and_expand(round, first_new).await;
        }
        true
    }

    /// What the replayed plan's retrieval (the evidence from `first_new` on) reached:
    /// the distinct nodes its paths end at and its query rows name, and whether a
    /// retriever stopped at its limit (as many paths as it may return, or rows cut).
    fn measure_replay(&mut self, first_new: usize) {
        let limit = self
            .config()
            .max_evidence_per_retriever
            .min(self.ledger.budget().result_rows) as usize;
        let topic: HashSet<NodeId> = self.topic.iter().map(|s| s.entity.id).collect();
        let mut nodes: HashSet<NodeId> = HashSet::new();
        let mut values: HashSet<String> = HashSet::new();
        let mut per_source: HashMap<&str, usize> = HashMap::new();
        let mut cut = false;
        for evidence in &self.context.context().evidence[first_new..] {
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
                        values.insert(crate::context::value_text(value));
                    }
                }
                EvidenceItem::Triple(_) | EvidenceItem::Excerpt(_) => {}
            }
        }
        cut |= per_source.values().any(|&count| count >= limit.max(1));
        self.replay.reached = (nodes.len() + values.len()) as u32;
        self.replay.cut = cut;
    }

    async fn retrieve_and_judge(&mut self, round: u8, work: RoundWork) {
        let first_new = self.context.len();
        self.retrieve(round, work).await;
        if self.ledger.is_exhausted() {
            return;
        }
        self.judge_and_expand(round, first_new).await;
    }

    async fn cache_lookup(&mut self) -> Option<Plan> {
        if self.no_cache || !self.snapshot.serves(Role::CACHE_MANAGER, CacheLookup::OP) {
            return None;
        }
        let request = CacheLookup {
            question: self.question.clone(),
            // Not linked yet at this point: the cache masks mentions itself.
            entities: Vec::new(),
            k: self.config().cache_examples,
        };
        let reply = self
            .call_role(&Role::well_known(Role::CACHE_MANAGER), 0, request, "cache")
            .await?;
        self.cache_hit = !reply.examples.is_empty() || reply.replay.is_some();
        if let (Some(_), Some(similarity)) = (&reply.replay, reply.replay_similarity) {
            self.replay_similarity = Some(similarity);
            self.context.note(format!(
                "plan cache: no plan for this question's wording; replaying the verified \
                 plan of a similar question (similarity {similarity:.2})"
            ));
        }
        self.examples = reply.examples;
        self.cues = reply.cues;
        self.isr = Some(reply.isr);
        reply.replay
    }

    /// Takes in the kg-linker's proposals, links new mentions and draft answers, and
    /// returns the round's work, or `None` when nothing is new (self-termination).
    async fn adopt_link(&mut self, round: u8, link: KgLinkReply) -> Option<RoundWork> {
        let mut new_anything = false;
        if self.plan_confidence.is_none() && !link.model_plan {
            self.plan_confidence = link.confidence;
            self.plan_reranked = link.reader_plan;
        }
        for entity in link.linked {
            new_anything |= push_unique(&mut self.topic, entity);
        }

        let mut to_link: Vec<(String, bool)> = Vec::new();
        let mut queued: HashSet<String> = HashSet::new();
        let mentions = link.mentions.iter().map(|m| (m, false));
        let drafts = link.draft_answers.iter().map(|m| (m, true));
        for (mention, is_draft) in mentions.chain(drafts) {
            let key = mention.trim().to_lowercase();
            if key.is_empty() {
                continue;
            }
            match self.linked_mentions.get(&key) {
                // Linked in an earlier round: reuse, do not ask again.
                Some(candidates) => {
                    let candidates = candidates.clone();
                    new_anything |= self.adopt_candidates(candidates, is_draft);
                }
                None => {
                    if queued.insert(key) {
                        to_link.push((mention.trim().to_owned(), is_draft));
                    }
                }
            }
        }
        if !to_link.is_empty() {
            new_anything |= self.link_mentions(round, to_link).await;
        }

        let mut work = RoundWork::default();
        // The learned reader's first plan (it came with the reader's confidence) is
        // trusted over the summarizer's own word match, as a model's plan is: the reader
        // was trained to choose among exactly these paths.
        let reader_first = (!link.model_plan && link.reader_plan)
            .then(|| link.metapaths.first().cloned())
            .flatten();
        for metapath in link.metapaths {
            if metapath.steps.is_empty() {
                continue;
            }
            let trusted = link.model_plan || reader_first.as_ref() == Some(&metapath);
            if trusted && !self.trusted_metapaths.contains(&metapath) {
                self.trusted_metapaths.push(metapath.clone());
            }
            if self.seen_metapaths.insert(metapath.clone()) {
                self.plan.metapaths.push(metapath.clone());
                work.metapaths.push(metapath);
                new_anything = true;
            }
        }
        for cypher in link.cypher {
            let cypher = cypher.trim().to_owned();
            if !cypher.is_empty() && self.seen_cypher.insert(cypher.clone()) {
                self.plan.cypher.push(cypher.clone());
                work.cypher.push(cypher);
                new_anything = true;
            }
        }
        self.plan.entities = self.topic.iter().map(|s| s.entity.clone()).collect();
        new_anything.then_some(work)
    }

    fn adopt_candidates(&mut self, candidates: Vec<ScoredEntity>, is_draft: bool) -> bool {
        let target = if is_draft {
            &mut self.drafts
        } else {
            &mut self.topic
        };
        let mut added = false;
        for candidate in candidates {
            added |= push_unique(target, candidate);
        }
        added
    }

    async fn link_mentions(&mut self, round: u8, mentions: Vec<(String, bool)>) -> bool {
        if !self.snapshot.has(Role::ENTITY_LINKER) {
            self.context.note(format!(
                "round {round}: no entity-linker on the bus; {} mention(s) left unlinked",
                mentions.len()
            ));
            self.degrade(
                &Role::well_known(Role::ENTITY_LINKER),
                Degradation::MISSING,
                round,
            );
            return false;
        }
        let request = LinkRequest {
            mentions: mentions.iter().map(|(m, _)| m.clone()).collect(),
            top_m: self.config().top_m,
            mode: self.config().link_mode,
        };
        let Some(reply) = self
            .call_role(
                &Role::well_known(Role::ENTITY_LINKER),
                round,
                request,
                "entity-linker",
            )
            .await
        else {
            return false;
        };
        let mut added = false;
        for ((mention, is_draft), links) in mentions.into_iter().zip(reply.links) {
            self.linked_mentions
                .insert(mention.to_lowercase(), links.candidates.clone());
            added |= self.adopt_candidates(links.candidates, is_draft);
        }
        added
    }

    /// Calls every retriever on the bus at once; a failing one leaves a note.
    async fn retrieve(&mut self, round: u8, work: RoundWork) {
        let snapshot = self.snapshot.clone();
        for gone in snapshot.gone_retrievers() {
            if let Ok(role) = Role::new(gone) {
                if !self.is_degraded(&role, Degradation::MISSING) {
                    self.context.note(format!(
                        "round {round}: retriever {gone} was on the bus recently and is gone; its evidence is missing"
                    ));
                }
                self.degrade(&role, Degradation::MISSING, round);
            }
        }
        let retrievers = self.snapshot.retrievers();
        if retrievers.is_empty() {
            self.context
                .note(format!("round {round}: no retriever is on the bus"));
            self.degrade(&Role::well_known("retriever"), Degradation::MISSING, round);
            return;
        }
        let Some(timeout) = self.ledger.call_timeout(self.config().call_timeout) else {
            self.ledger.exhaust(Limit::Deadline);
            return;
        };
        let body = RetrieveRequest {
            question: self.question.clone(),
            entities: self.topic.clone(),
            draft_answers: self.drafts.clone(),
            metapaths: work.metapaths,
            cypher: work.cypher,
            max_evidence: self
                .config()
                .max_evidence_per_retriever
                .min(self.ledger.budget().result_rows),
            cues: self.cues.clone(),
        };
        let meta = until(self.ledger.meta(round), timeout);
        let bus = self.coordinator.bus.as_ref();
        let retries = self.config().retries;
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
        let hedges: Vec<Option<Hedge>> = retrievers
            .iter()
            .map(|role| self.hedge_for(role, RetrieveRequest::OP))
            .collect();
        let calls = retrievers
            .iter()
            .zip(&spans)
            .zip(hedges)
            .map(|((role, span), hedge)| {
                let to = (role, snapshot.codec(role.as_str()));
                let sent = send::<RetrieveRequest>(
                    bus,
                    to,
                    meta.clone(),
                    body.clone(),
                    timeout,
                    retries,
                    hedge,
                )
                .instrument(span.clone());
                async move {
                    let started = Instant::now();
                    let result = sent.await;
                    (result, started.elapsed())
                }
            });
        let results = join_all(calls).await;
        self.ledger
            .record_stage(format!("round{round}.retrieve"), started.elapsed());
        // Merged in role-name order, whatever order the replies arrived in.
        for ((role, (result, elapsed)), span) in retrievers.iter().zip(results).zip(spans) {
            self.record_call(round, role, RetrieveRequest::OP, elapsed, &result);
            match result {
                Ok((reply, cost)) => {
                    span.record("kgmesh.retrieved.evidence", reply.evidence.len());
                    self.charge(role, round, &cost);
                    self.adopt_retrieved(reply);
                }
                Err(error) => self.note_failure(round, role, &error),
            }
        }
    }

    fn adopt_retrieved(&mut self, reply: RetrieveReply) {
        self.context.merge(reply.evidence);
        for note in reply.notes {
            self.context.note(note);
        }
        self.repair_hints.extend(reply.repair_hints);
    }

    /// CacheRAG's dispatcher: ask the judge, grow the context by bounded expansions
    /// until it says COMPLETE, the next round, or the expansion budget is spent.
    async fn judge_and_expand(&mut self, round: u8, first_new: usize) {
        if !self.snapshot.has(Role::JUDGE) {
            self.context.note(format!(
                "round {round}: no judge on the bus; the evidence was not checked or expanded"
            ));
            self.degrade(&Role::well_known(Role::JUDGE), Degradation::MISSING, round);
            return;
        }
        let topic: Vec<Entity> = self.topic.iter().map(|s| s.entity.clone()).collect();
        let max_frontier = self.config().max_frontier;
        let mut frontier = self.context.frontier(first_new, &topic, max_frontier);
        loop {
            if self.ledger.is_exhausted() {
                return;
            }
            let (context, _) = self.context_for(Role::JUDGE);
            let request = JudgeRequest {
                question: self.question.clone(),
                context,
                frontier: frontier.clone(),
                depth_expansions_left: self.ledger.budget().depth_expansions,
            };
            let (calls_before, fallbacks_before) = {
                let spent = self.ledger.spent();
                (spent.llm_calls, spent.model_fallbacks)
            };
            let mut meta = self.ledger.meta(round);
            if self.plan_replayed && round == 1 {
                // A replayed plan was verified when it was stored: the judge's rule is
                // enough, and the model's calls are left to the summarizer.
                meta.budget.llm_calls = 0;
            }
            if round > 1 && self.ledger.budget().rounds <= 1 {
                // The last of several rounds: its NEXT_ROUND could not be followed, the
                // round-1 judge already asked the model whether retrieval was on
                // track, and the rule chooses expansions without one; so the model's
                // calls go to the KG-Linker and the summarizer, and a second round
                // costs one call, not two.
                meta.budget.llm_calls = 0;
            }
            let Some(reply) = self
                .call_role_with(
                    &Role::well_known(Role::JUDGE),
                    round,
                    request,
                    "judge",
                    meta,
                )
                .await
            else {
                return;
            };
            let (expansion, proposed) = match reply.verdict {
                Verdict::Complete => {
                    self.complete = true;
                    // A model's verdict, not the rule's after an unusable reply.
                    let spent = self.ledger.spent();
                    self.model_verified =
                        spent.llm_calls > calls_before && spent.model_fallbacks == fallbacks_before;
                    return;
                }
                Verdict::NextRound => return,
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
                        k_degree: self.ledger.budget().breadth,
                    },
                    frontier,
                ),
            };
            // Each expansion, deep or broad, spends one of CacheRAG's K_depth steps, so
            // a question's expanded subgraph stays O(K_depth · K_degree).
            if !self.ledger.take_depth_expansion() {
                self.context.note(format!(
                    "round {round}: the judge asked for more expansion than the budget allows"
                ));
                return;
            }
            let Some(role) = self
                .snapshot
                .role_serving(Role::PATH_FOLLOWER, ExpandRequest::OP)
            else {
                self.context
                    .note(format!("round {round}: no role on the bus serves expand"));
                self.degrade(
                    &Role::well_known(Role::PATH_FOLLOWER),
                    Degradation::MISSING,
                    round,
                );
                return;
            };
            let mut start = if proposed.is_empty() {
                frontier.clone()
            } else {
                proposed
            };
            start.truncate(max_frontier);
            let request = ExpandRequest {
                question: self.question.clone(),
                frontier: start,
                expansion,
            };
            let Some(expanded) = self.call_role(&role, round, request, "expand").await else {
                return;
            };
            let added = self.context.merge(expanded.evidence);
            if added == 0 {
                return;
            }
            frontier = expanded.frontier;
            frontier.truncate(max_frontier);
        }
    }

    async fn finish(mut self) -> AskReply {
        let summary = self.summarize().await;
        let answers = {
            let mut answers = summary.answers;
            answers.truncate(usize::from(self.max_answers));
            answers
        };
        // Cut short by a budget, or missing the part of a role every answer needs.
        let required_failed = self.degraded.iter().any(|d| {
            REQUIRED_ROLES.contains(&d.role.as_str()) && d.reason != Degradation::MODEL_FALLBACK
        });
        let partial = self.ledger.is_exhausted() || required_failed;
        if let Some(limit) = self.ledger.exhausted() {
            crate::metrics::record_exhausted(limit);
            self.context.note(format!(
                "budget exhausted ({limit}): the answer may be incomplete"
            ));
        }
        // The reader's confidence in the plan the answers come from; a replayed plan
        // was verified before, so the estimate for a fresh reading does not apply.
        let confidence = self
            .plan_confidence
            .filter(|_| !self.plan_replayed && !answers.is_empty())
            .map(|plan| match &self.config().answer_calibration {
                Some(calibration) if !self.plan_reranked => {
                    let texts: Vec<&str> = answers.iter().map(|a| a.text.as_str()).collect();
                    calibration.chance(&crate::confidence::signals(
                        plan,
                        summary.low_confidence,
                        &texts,
                        self.rounds_run,
                        self.topic.len(),
                    ))
                }
                _ => plan,
            });
        // The cascade's LLM-free run stores only an answer it will keep.
        let kept = self
            .store_at
            .is_none_or(|at| self.plan_replayed || confidence.is_some_and(|c| c >= at));
        if self.complete && !partial && !answers.is_empty() && kept {
            if self.ran_without_a_role() {
                tracing::info!("plan not stored: a role failed or was missing");
            } else {
                self.cache_store(&answers).await;
            }
        }
        let evidence = self.context.lines(self.evidence_edges);
        let mut answers = answers;
        let mut explanation = summary.explanation;
        crate::context::cite_each_line_once(&evidence, &mut answers, &mut explanation);
        let min_confidence = self.config().min_confidence;
        if let Some(chance) = confidence.filter(|c| *c < min_confidence) {
            let possible: Vec<String> = answers.iter().take(3).map(|a| a.text.clone()).collect();
            explanation = format!(
                "I don't know: the best reading of the question is unlikely to be right \
                 (confidence {chance:.2}, below {min_confidence:.2}); possibly {}.",
                possible.join(", ")
            );
            answers.clear();
        }
        // A name the question misspells is read as the closest one; the reply says so.
        let nothing_exact = self.topic.iter().all(|t| t.score < 1.0);
        let read_as: Vec<String> = self
            .topic
            .iter()
            .filter(|t| nothing_exact && t.score > 0.0)
            .take(3)
            .map(|t| format!("\"{}\"", t.entity.name))
            .collect();
        if !read_as.is_empty() && !answers.is_empty() {
            explanation = format!(
                "No name in the graph is written as in the question; read as {} (the closest). {explanation}",
                read_as.join(", ")
            );
        }
        let cache_use = self.cache_use(answers.len());
        let question_span = tracing::Span::current();
        question_span.record("kgmesh.rounds_run", self.rounds_run);
        question_span.record("kgmesh.answers", answers.len());
        let low_confidence = summary.low_confidence && !answers.is_empty();
        question_span.record("kgmesh.low_confidence", low_confidence);
        let trace_id = self.ledger.trace().trace_id().map(str::to_owned);
        AskReply {
            question_id: self.ledger.question_id().to_string(),
            answers,
            evidence,
            explanation,
            rounds: self.rounds_run,
            cost: self.ledger.spent(),
            timings: self.ledger.timings(),
            partial,
            low_confidence,
            confidence,
            cache_hit: self.cache_hit,
            cache_use,
            cache_examples: self.examples.len().min(usize::from(u16::MAX)) as u16,
            replay_reached: self.plan_replayed.then_some(self.replay.reached),
            replay_cut: self.plan_replayed && self.replay.cut,
            plan_replayed: self.plan_replayed,
            replay_similarity: self.replay_similarity.filter(|_| self.plan_replayed),
            trace_id,
            notes: self.context.context().notes.clone(),
            degraded: std::mem::take(&mut self.degraded),
            graph: self.config().graph.clone(),
            topic_entities: self.topic.iter().map(|s| s.entity.clone()).collect(),
            calls: self.ledger.take_calls(),
        }
    }

    /// What the plan cache did, in a sentence for people (see `AskReply::cache_use`).
    fn cache_use(&self, answers: usize) -> Option<String> {
        let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        if self.plan_replayed {
            let whose = match (&self.replay.question, self.replay_similarity) {
                (Some(question), Some(similarity)) => format!(
                    "the verified plan of the past question \"{question}\" (a similar \
                     wording, similarity {similarity:.2})"
                ),
                (Some(question), None) => {
                    format!("the verified plan of the past question \"{question}\"")
                }
                (None, Some(similarity)) => {
                    format!("the verified plan of a similar question (similarity {similarity:.2})")
                }
                (None, None) => "a verified plan of this question's wording".to_owned(),
            };
            let reached = self.replay.reached as usize;
            let mut sentence = format!(
                "plan cache: answered by replaying {whose}; it reached {}, {} given",
                plural(reached, "node"),
                plural(answers, "answer")
            );
            if self.replay.cut {
                sentence.push_str(
                    "; its retrieval stopped at a limit, so answers may be missing (ask \
                     again without the plan cache for a cold run)",
                );
            }
            return Some(sentence);
        }
        if self.examples.is_empty() {
            return None;
        }
        Some(format!(
            "plan cache: {} offered to the planner as examples (the closest: \"{}\"); \
             the plan was made for this question",
            plural(self.examples.len(), "past question"),
            self.examples[0].question
        ))
    }

    /// The context to send to `role`: whole, or cut to its best-scored evidence when
    /// it would not fit in a bus message (three quarters of the bus's payload limit,
    /// leaving room for the rest of the request); a cut is noted in the reply. The map
    /// reads the sent lines' indices as the whole context's.
    fn context_for(&mut self, role: &str) -> (Context, Option<Vec<usize>>) {
        let max_bytes = self.coordinator.bus.max_payload() / 4 * 3;
        let (context, kept) = self.context.to_send(max_bytes, self.snapshot.codec(role));
        if kept.is_some() {
            if let Some(cut) = context.notes.last() {
                self.context.note(format!("{role}: {cut}"));
            }
        }
        (context, kept)
    }

    /// The summarizer always gets a chance, even past the deadline: it then works
    /// without a model (its budget says no LLM calls are left) on what was retrieved.
    async fn summarize(&mut self) -> SummarizeReply {
        let (context, kept) = self.context_for(Role::SUMMARIZER);
        let request = SummarizeRequest {
            question: self.question.clone(),
            context,
            topic_entities: self.topic.iter().map(|s| s.entity.clone()).collect(),
            max_answers: self.max_answers,
            cues: self.cues.clone(),
            plan: self.trusted_metapaths.clone(),
        };
        let mut meta = self.ledger.final_meta(self.rounds_run);
        let grace = self.config().finalize_grace;
        if self.ledger.is_exhausted() {
            meta.budget.llm_calls = 0;
            meta.budget.deadline = Deadline::after(grace);
        }
        let timeout = meta
            .budget
            .deadline
            .remaining()
            .max(grace)
            .min(self.config().call_timeout);
        let meta = until(meta, timeout);
        let role = Role::well_known(Role::SUMMARIZER);
        let started = Instant::now();
        let span = tracing::info_span!(
            "call",
            otel.name = format!("call {} {}", role.as_str(), SummarizeRequest::OP),
            role = role.as_str(),
            op = SummarizeRequest::OP,
            kgmesh.role = role.as_str(),
            kgmesh.op = SummarizeRequest::OP,
            kgmesh.round = self.rounds_run,
        );
        let result = send(
            self.coordinator.bus.as_ref(),
            (&role, self.snapshot.codec(role.as_str())),
            meta,
            request,
            timeout,
            self.config().retries,
            self.hedge_for(&role, SummarizeRequest::OP),
        )
        .instrument(span)
        .await;
        self.ledger
            .record_stage("summarizer".to_owned(), started.elapsed());
        self.record_call(
            self.rounds_run,
            &role,
            SummarizeRequest::OP,
            started.elapsed(),
            &result,
        );
        match result {
            Ok((mut reply, cost)) => {
                self.charge(&role, self.rounds_run, &cost);
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
                reply
            }
            Err(error) => {
                self.note_failure(self.rounds_run, &role, &error);
                SummarizeReply {
                    low_confidence: false,
                    answers: Vec::new(),
                    explanation: "no answer: the summarizer failed".to_owned(),
                }
            }
        }
    }

    async fn cache_store(&mut self, answers: &[kgmesh_schemas::messages::summarizer::Answer]) {
        if self.no_cache || !self.snapshot.serves(Role::CACHE_MANAGER, CacheStore::OP) {
            return;
        }
        // Only what produced the answers is worth replaying: a metapath tried in vain
        // would cost every later replay a retrieval and add noise to its context.
        let topic: Vec<Entity> = self.topic.iter().map(|s| s.entity.clone()).collect();
        let plan = answering_plan(&self.plan, self.context.context(), answers, &topic);
        if plan.metapaths.is_empty() && plan.cypher.is_empty() {
            return;
        }
        let entry = CacheEntry {
            question: self.question.clone(),
            // Left to the cache manager, which owns the masking rule.
            template: String::new(),
            isr: self.isr.clone().unwrap_or_default(),
            plan,
            answers: answers.iter().map(|a| a.text.clone()).collect(),
            // A model's verdict verifies the plan (replayable at once); the rule-based
            // judge's makes it a few-shot example only, since replaying a rule's mistake
            // would repeat it for every question of the template.
            hits: u32::from(self.model_verified),
            failures: 0,
        };
        let role = Role::well_known(Role::CACHE_MANAGER);
        let _stored = self
            .call_role(&role, self.rounds_run, CacheStore { entry }, "cache-store")
            .await;
    }

    /// One sequential call: bounded by the deadline, charged, timed; a failure becomes
    /// a note (and an exhausted budget when the agent said so).
    async fn call_role<R: Rpc + Clone>(
        &mut self,
        role: &Role,
        round: u8,
        body: R,
        stage: &str,
    ) -> Option<R::Reply> {
        let meta = self.ledger.meta(round);
        self.call_role_with(role, round, body, stage, meta).await
    }

    /// [`Self::call_role`] with the request's meta given (a narrower budget).
    async fn call_role_with<R: Rpc + Clone>(
        &mut self,
        role: &Role,
        round: u8,
        body: R,
        stage: &str,
        meta: Meta,
    ) -> Option<R::Reply> {
        let Some(timeout) = self.ledger.call_timeout(self.config().call_timeout) else {
            self.ledger.exhaust(Limit::Deadline);
            return None;
        };
        let meta = until(meta, timeout);
        let started = Instant::now();
        let span = tracing::info_span!(
            "call",
            otel.name = format!("call {} {}", role.as_str(), R::OP),
            role = role.as_str(),
            op = R::OP,
            kgmesh.role = role.as_str(),
            kgmesh.op = R::OP,
            kgmesh.round = round,
        );
        let result = send(
            self.coordinator.bus.as_ref(),
            (role, self.snapshot.codec(role.as_str())),
            meta,
            body,
            timeout,
            self.config().retries,
            self.hedge_for(role, R::OP),
        )
        .instrument(span)
        .await;
        let stage = if round == 0 {
            stage.to_owned()
        } else {
            format!("round{round}.{stage}")
        };
        self.ledger.record_stage(stage, started.elapsed());
        self.record_call(round, role, R::OP, started.elapsed(), &result);
        match result {
            Ok((reply, cost)) => {
                self.charge(role, round, &cost);
                Some(reply)
            }
            Err(error) => {
                self.note_failure(round, role, &error);
                None
            }
        }
    }

    /// The hedge of a call to `role`'s `op` (see [`crate::hedge`]).
    fn hedge_for(&self, role: &Role, op: &'static str) -> Option<Hedge> {
        self.coordinator.latencies.hedge(
            &self.config().hedge,
            role.as_str(),
            op,
            self.snapshot.instances(role.as_str()),
            self.snapshot.recent_replicas(role.as_str()),
        )
    }

    /// Adds a finished call to the question's life (`AskReply::calls`), and a
    /// successful one's time to the role's recent ones (what hedges wait for).
    fn record_call<T>(
        &mut self,
        round: u8,
        role: &Role,
        op: &'static str,
        elapsed: Duration,
        result: &Result<(T, Cost), CallError>,
    ) {
        if let Ok((_, cost)) = result {
            // The role's own time, as it reports it: the wall time of a hedged call
            // includes the wait before the hedge, and would raise the next delay.
            let own = match cost.elapsed_us {
                0 => elapsed,
                us => Duration::from_micros(us),
            };
            self.coordinator.latencies.record(role.as_str(), op, own);
        }
        let outcome = match result {
            Ok((_, cost)) => Ok(cost),
            Err(error) => Err(error.to_agent_error(&role.subject(op)).kind()),
        };
        self.ledger
            .record_call(round, role.as_str(), op, elapsed, outcome);
    }

    /// Charges a reply's cost; a role that answered without its model (the model's
    /// reply was unusable) makes the answer degraded.
    fn charge(&mut self, role: &Role, round: u8, cost: &Cost) {
        self.ledger.charge(cost);
        if cost.model_fallbacks > 0 {
            if !self.is_degraded(role, Degradation::MODEL_FALLBACK) {
                self.context.note(format!(
                    "round {round}: {role} answered without its language model (the model failed or its reply was unusable)"
                ));
            }
            self.degrade(role, Degradation::MODEL_FALLBACK, round);
        }
    }

    fn is_degraded(&self, role: &Role, reason: &str) -> bool {
        self.degraded
            .iter()
            .any(|d| d.role == role.as_str() && d.reason == reason)
    }

    /// Records that `role` did not do its part (once per role and reason), in the
    /// reply, the metrics and the question's span.
    fn degrade(&mut self, role: &Role, reason: &'static str, round: u8) {
        if self.is_degraded(role, reason) {
            return;
        }
        crate::metrics::record_degraded(role.as_str(), reason);
        tracing::warn!(round, role = role.as_str(), reason, "question degraded");
        self.degraded.push(Degradation {
            role: role.as_str().to_owned(),
            reason: reason.to_owned(),
            round,
        });
    }

    /// A role that failed, timed out or was missing: what was learned in this run is
    /// not worth storing (a model's fallback changes no plan).
    fn ran_without_a_role(&self) -> bool {
        self.degraded
            .iter()
            .any(|d| d.reason != Degradation::MODEL_FALLBACK)
    }

    fn note_failure(&mut self, round: u8, role: &Role, error: &CallError) {
        let agent_error = error.to_agent_error(&role.subject("*"));
        match &agent_error {
            AgentError::BudgetExhausted { limit } => self.ledger.exhaust(*limit),
            AgentError::Timeout { .. } if self.ledger.budget().deadline.is_past() => {
                self.ledger.exhaust(Limit::Deadline)
            }
            _ => {}
        }
        tracing::warn!(round, role = role.as_str(), kind = agent_error.kind(), %error, "role call failed");
        match &agent_error {
            // A spent budget is reported as `partial`, not as a broken role.
            AgentError::BudgetExhausted { .. } => {}
            AgentError::Timeout { .. } => self.degrade(role, Degradation::TIMEOUT, round),
            _ => self.degrade(role, Degradation::FAILED, round),
        }
        self.context.note(format!(
            "round {round}: {role} failed ({}): {error}",
            agent_error.kind()
        ));
    }
}

/// `meta` with its deadline brought forward to when the coordinator stops waiting for
/// this call (`timeout` from now), so that the role answers in time, without its model
/// if the model is slower.
fn until(mut meta: Meta, timeout: Duration) -> Meta {
    if timeout < meta.budget.deadline.remaining() {
        meta.budget.deadline = Deadline::after(timeout);
    }
    meta
}

/// The part of `plan` that produced `answers`: the tried metapaths that some evidence an
/// answer cites followed, and the Cypher whose rows it cites. A cited path or triple
/// from a topic entity that no tried metapath matches (an expansion found it) adds its
/// own relation sequence, so the replay reaches the answer too.
fn answering_plan(
    plan: &Plan,
    context: &kgmesh_schemas::messages::context::Context,
    answers: &[kgmesh_schemas::messages::summarizer::Answer],
    topic: &[Entity],
) -> Plan {
    use kgmesh_schemas::{
        graph::{Direction, RelationStep},
        messages::context::EvidenceItem,
    };
    let is_topic = |entity: &Entity| topic.iter().any(|t| t.id == entity.id);
    let follows = |metapath: &Metapath, steps: &[(String, bool)]| {
        metapath.steps.len() == steps.len()
            && metapath
                .steps
                .iter()
                .zip(steps)
                .all(|(step, (relation, inverse))| {
                    step.relation == *relation
                        && match step.direction {
                            Direction::Both => true,
                            Direction::Out => !inverse,
                            Direction::In => *inverse,
                        }
                })
    };
    let mut used_metapaths = vec![false; plan.metapaths.len()];
    let mut used_cypher = vec![false; plan.cypher.len()];
    let mut derived: Vec<Metapath> = Vec::new();
    let mut cited: Vec<u32> = answers.iter().flat_map(|a| a.evidence.clone()).collect();
    cited.sort_unstable();
    cited.dedup();
    for index in cited {
        let Some(evidence) = context.evidence.get(index as usize) else {
            continue;
        };
        let steps: Vec<(String, bool)> = match &evidence.item {
            EvidenceItem::Query { cypher, .. } => {
                for (used, query) in used_cypher.iter_mut().zip(&plan.cypher) {
                    *used |= query == cypher;
                }
                continue;
            }
            EvidenceItem::Path(path) if is_topic(&path.start) => path
                .steps
                .iter()
                .map(|s| (s.relation.clone(), s.inverse))
                .collect(),
            EvidenceItem::Triple(triple) if is_topic(&triple.head) => {
                vec![(triple.relation.clone(), false)]
            }
            EvidenceItem::Triple(triple) if is_topic(&triple.tail) => {
                vec![(triple.relation.clone(), true)]
            }
            _ => continue,
        };
        if steps.is_empty() {
            continue;
        }
        let mut matched = false;
        for (used, metapath) in used_metapaths.iter_mut().zip(&plan.metapaths) {
            if follows(metapath, &steps) {
                *used = true;
                matched = true;
            }
        }
        if !matched && steps.len() <= usize::from(kgmesh_schemas::budget::MAX_DEPTH) {
            let metapath = Metapath {
                steps: steps
                    .into_iter()
                    .map(|(relation, inverse)| RelationStep {
                        relation,
                        direction: if inverse {
                            Direction::In
                        } else {
                            Direction::Out
                        },
                    })
                    .collect(),
            };
            if !derived.contains(&metapath) {
                derived.push(metapath);
            }
        }
    }
    let mut metapaths: Vec<Metapath> = plan
        .metapaths
        .iter()
        .zip(&used_metapaths)
        .filter(|(_, used)| **used)
        .map(|(metapath, _)| metapath.clone())
        .collect();
    for metapath in derived {
        if !metapaths.contains(&metapath) {
            metapaths.push(metapath);
        }
    }
    Plan {
        entities: plan.entities.clone(),
        metapaths,
        cypher: plan
            .cypher
            .iter()
            .zip(&used_cypher)
            .filter(|(_, used)| **used)
            .map(|(query, _)| query.clone())
            .collect(),
    }
}

/// Adds `entity` unless its id is already there; true when added.
/// A replayed plan: whose it was and what it reached.
#[derive(Debug, Default)]
struct ReplayReport {
    /// The past question the plan was stored for, when the cache's examples name it.
    question: Option<String>,
    /// Distinct nodes the replay's paths end at and values its query rows give.
    reached: u32,
    /// A retriever stopped at its limit while replaying.
    cut: bool,
}

fn push_unique(list: &mut Vec<ScoredEntity>, entity: ScoredEntity) -> bool {
    if list.iter().any(|e| e.entity.id == entity.entity.id) {
        return false;
    }
    list.push(entity);
    true
}
