//! Call plumbing: every call the coordinator makes to a role goes through here. A call
//! is sent ([`send`]: retried as the bus's [`RetryPolicy`] says, hedged to other
//! replicas when the role is slow, see [`crate::hedge`]), bounded by the question's
//! deadline, recorded in the question's life and the role's latencies, and charged to
//! its budget; a failure becomes a note and a degradation ([`RunRecord`]).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_bus::{
    typed::{call_to, cancel, CallError, Target},
    Bus, BusError, RetryPolicy,
};
use kgmesh_schemas::{
    budget::{Cost, Limit},
    messages::ask::Degradation,
    AgentError, ContentType, Deadline, Meta, Role, Rpc,
};
use tracing::Instrument;

use crate::{
    config::CoordinatorConfig,
    context::ContextState,
    directory::RoleSnapshot,
    hedge::{Hedge, Latencies},
    ledger::Ledger,
};

/// Where one question's calls go, and how: the bus, the roles discovery saw when the
/// question came in, the configuration and every role's recent latencies (shared by
/// all questions, what hedges wait for).
pub(crate) struct Caller<'a> {
    pub bus: &'a dyn Bus,
    pub config: &'a CoordinatorConfig,
    pub latencies: &'a Latencies,
    pub snapshot: Arc<RoleSnapshot>,
}

impl Caller<'_> {
    /// Sends `body` to `role` within `timeout`, in a `call` span of the question's
    /// trace; returns the result and how long the call took.
    pub(crate) async fn send_traced<R: Rpc + Clone>(
        &self,
        role: &Role,
        round: u8,
        meta: Meta,
        body: R,
        timeout: Duration,
    ) -> (Result<(R::Reply, Cost), CallError>, Duration) {
        let span = tracing::info_span!(
            "call",
            otel.name = format!("call {} {}", role.as_str(), R::OP),
            role = role.as_str(),
            op = R::OP,
            kgmesh.role = role.as_str(),
            kgmesh.op = R::OP,
            kgmesh.round = round,
        );
        self.send_in(span, role, meta, body, timeout).await
    }

    /// Sends `body` to `role` within `timeout` ([`send`], hedged as the role's recent
    /// latencies say), inside `span`; returns the result and how long the call took.
    pub(crate) async fn send_in<R: Rpc + Clone>(
        &self,
        span: tracing::Span,
        role: &Role,
        meta: Meta,
        body: R,
        timeout: Duration,
    ) -> (Result<(R::Reply, Cost), CallError>, Duration) {
        let started = Instant::now();
        let to = (role, self.snapshot.codec(role.as_str()));
        let hedge = self.hedge_for(role, R::OP);
        let result = send(
            self.bus,
            to,
            meta,
            body,
            timeout,
            self.config.retries,
            hedge,
        )
        .instrument(span)
        .await;
        (result, started.elapsed())
    }

    /// The hedge of a call to `role`'s `op` (see [`crate::hedge`]).
    pub(crate) fn hedge_for(&self, role: &Role, op: &'static str) -> Option<Hedge> {
        self.latencies.hedge(
            &self.config.hedge,
            role.as_str(),
            op,
            self.snapshot.instances(role.as_str()),
            self.snapshot.recent_replicas(role.as_str()),
        )
    }
}

/// What one question has spent, seen and missed: its budget ledger, the context of
/// evidence and notes its roles returned, and the roles that did not do their part.
pub(crate) struct RunRecord {
    pub ledger: Ledger,
    pub context: ContextState,
    /// Roles that failed, timed out, were missing, or answered without their model.
    pub degraded: Vec<Degradation>,
}

impl RunRecord {
    pub(crate) fn new(ledger: Ledger) -> Self {
        Self {
            ledger,
            context: ContextState::default(),
            degraded: Vec::new(),
        }
    }

    /// One sequential call, with the question's budget for `round` or, given `meta`,
    /// a narrower one: bounded by the deadline, charged, timed; a failure becomes a
    /// note (and an exhausted budget when the agent said so).
    pub(crate) async fn call_role<R: Rpc + Clone>(
        &mut self,
        caller: &Caller<'_>,
        (role, round, stage): (&Role, u8, &str),
        body: R,
        meta: Option<Meta>,
    ) -> Option<R::Reply> {
        let Some(timeout) = self.ledger.call_timeout(caller.config.call_timeout) else {
            self.ledger.exhaust(Limit::Deadline);
            return None;
        };
        let meta = until(meta.unwrap_or_else(|| self.ledger.meta(round)), timeout);
        let (result, elapsed) = caller.send_traced(role, round, meta, body, timeout).await;
        let stage = if round == 0 {
            stage.to_owned()
        } else {
            format!("round{round}.{stage}")
        };
        self.ledger.record_stage(stage, elapsed);
        self.record_call(caller, round, role, R::OP, elapsed, &result);
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

    /// Adds a finished call to the question's life (`AskReply::calls`), and a
    /// successful one's time to the role's recent ones (what hedges wait for).
    pub(crate) fn record_call<T>(
        &mut self,
        caller: &Caller<'_>,
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
            caller.latencies.record(role.as_str(), op, own);
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
    pub(crate) fn charge(&mut self, role: &Role, round: u8, cost: &Cost) {
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

    pub(crate) fn is_degraded(&self, role: &Role, reason: &str) -> bool {
        self.degraded
            .iter()
            .any(|d| d.role == role.as_str() && d.reason == reason)
    }

    /// Records that `role` did not do its part (once per role and reason), in the
    /// reply, the metrics and the question's span.
    pub(crate) fn degrade(&mut self, role: &Role, reason: &'static str, round: u8) {
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
    pub(crate) fn ran_without_a_role(&self) -> bool {
        self.degraded
            .iter()
            .any(|d| d.reason != Degradation::MODEL_FALLBACK)
    }

    pub(crate) fn note_failure(&mut self, round: u8, role: &Role, error: &CallError) {
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

/// `meta` with its deadline brought forward to when the coordinator stops waiting for
/// this call (`timeout` from now), so that the role answers in time, without its model
/// if the model is slower.
pub(crate) fn until(mut meta: Meta, timeout: Duration) -> Meta {
    if timeout < meta.budget.deadline.remaining() {
        meta.budget.deadline = Deadline::after(timeout);
    }
    meta
}
