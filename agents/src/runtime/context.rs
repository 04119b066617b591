//! What a handler knows about the call it serves, and where it records what it cost.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_models::{ChatRequest, ChatResponse, LanguageModel, LlmError};
use kgmesh_schemas::{
    budget::Cost, AgentError, Budget, Deadline, Meta, QuestionId, Role, TraceContext,
};
use parking_lot::Mutex;

/// One call being served: the request's [`Meta`] (budget, deadline, question id, trace)
/// and a cost meter. Cheap to clone; clones share the meter, so work moved to
/// `spawn_blocking` or a sub-task can record into the same call.
#[derive(Clone)]
pub struct CallContext {
    inner: Arc<CallInner>,
}

struct CallInner {
    meta: Meta,
    role: Role,
    op: String,
    instance_id: Arc<str>,
    started: Instant,
    cost: Mutex<Cost>,
}

impl std::fmt::Debug for CallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallContext")
            .field("role", &self.inner.role)
            .field("op", &self.inner.op)
            .field("question_id", &self.inner.meta.question_id)
            .field("instance_id", &self.inner.instance_id)
            .finish()
    }
}

impl CallContext {
    /// A context for `meta`. The runtime builds one per request; tests of a handler
    /// build their own.
    pub fn new(meta: Meta, role: Role, op: &str, instance_id: &str) -> Self {
        Self {
            inner: Arc::new(CallInner {
                meta,
                role,
                op: op.to_owned(),
                instance_id: Arc::from(instance_id),
                started: Instant::now(),
                cost: Mutex::new(Cost::default()),
            }),
        }
    }

    /// A context for unit tests of a handler: a fresh question with the default budget.
    pub fn for_test(role: &str) -> Self {
        let role = Role::new(role).unwrap_or_else(|_| Role::well_known(Role::ECHO));
        let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
        Self::new(meta, role, "test", "test-instance")
    }

    pub fn meta(&self) -> &Meta {
        &self.inner.meta
    }

    /// What the question may still spend (as of when the request was sent).
    pub fn budget(&self) -> &Budget {
        &self.inner.meta.budget
    }

    pub fn deadline(&self) -> Deadline {
        self.inner.meta.budget.deadline
    }

    /// Time left before the question's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline().remaining()
    }

    pub fn question_id(&self) -> QuestionId {
        self.inner.meta.question_id
    }

    pub fn round(&self) -> u8 {
        self.inner.meta.round
    }

    pub fn trace(&self) -> &TraceContext {
        &self.inner.meta.trace
    }

    pub fn role(&self) -> &Role {
        &self.inner.role
    }

    pub fn op(&self) -> &str {
        &self.inner.op
    }

    /// This role instance's id (unique per started role).
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    /// `"<pid>/<instance id>"`: which process and instance served the call.
    pub fn served_by(&self) -> String {
        format!("{}/{}", std::process::id(), self.inner.instance_id)
    }

    /// Time since the runtime started serving this call.
    pub fn elapsed(&self) -> Duration {
        self.inner.started.elapsed()
    }

    /// Fails with a typed timeout once the question's deadline has passed; call it
    /// between expensive steps.
    pub fn check_deadline(&self) -> Result<(), AgentError> {
        if self.deadline().is_past() {
            return Err(AgentError::Timeout {
                detail: format!(
                    "{}.{}: deadline passed after {:?} of work",
                    self.inner.role,
                    self.inner.op,
                    self.elapsed()
                ),
            });
        }
        Ok(())
    }

    /// Adds `cost` (e.g. the cost reported by a role this handler called) to the call.
    pub fn record(&self, cost: &Cost) {
        self.inner.cost.lock().add(cost);
    }

    /// Rows or edges read from the graph, and the time the store took.
    pub fn record_graph(&self, rows: u64, store_time: Duration) {
        let mut cost = self.inner.cost.lock();
        cost.graph_rows += rows;
        cost.store_us += store_time.as_micros() as u64;
    }

    /// One language-model call with its token counts and latency.
    pub fn record_llm_call(&self, prompt_tokens: u64, completion_tokens: u64, latency: Duration) {
        let mut cost = self.inner.cost.lock();
        cost.llm_calls += 1;
        cost.prompt_tokens += prompt_tokens;
        cost.completion_tokens += completion_tokens;
        cost.llm_us += latency.as_micros() as u64;
    }

    /// Calls `llm`, giving up in time to answer without it before the call's deadline:
    /// a model slower than the caller will wait times out here, and the role still
    /// answers (with its LLM-free strategy) instead of being timed out by its caller.
    pub async fn chat(
        &self,
        llm: &dyn LanguageModel,
        request: ChatRequest,
    ) -> Result<ChatResponse, LlmError> {
        chat_before(llm, request, self.deadline()).await
    }

    /// The model's reply was unusable (`why`) and the role answered with its LLM-free
    /// strategy instead. Counted in the reply's cost, which the coordinator turns into
    /// a `model_fallback` degradation on the answer; logged here, inside the call's span.
    pub fn record_model_fallback(&self, why: &str) {
        self.inner.cost.lock().model_fallbacks += 1;
        tracing::warn!(
            role = self.role().as_str(),
            op = self.op(),
            why,
            "model reply unusable; answering without the model"
        );
    }

    /// What has been recorded so far (without the elapsed time, which the runtime
    /// fills in when it replies).
    pub fn cost(&self) -> Cost {
        *self.inner.cost.lock()
    }

    /// The cost to report: what was recorded, this call's bus message, and the time
    /// spent serving it.
    pub(crate) fn final_cost(&self) -> Cost {
        let mut cost = self.cost();
        cost.bus_messages += 1;
        cost.elapsed_us = self.inner.started.elapsed().as_micros() as u64;
        cost
    }
}

/// Calls `llm`, giving up a little before `deadline` ([`model_time`]) so that the
/// caller can still answer without the model.
pub async fn chat_before(
    llm: &dyn LanguageModel,
    request: ChatRequest,
    deadline: Deadline,
) -> Result<ChatResponse, LlmError> {
    let allowed = model_time(deadline.remaining());
    match tokio::time::timeout(allowed, llm.chat(request)).await {
        Ok(result) => result,
        Err(_) => {
            // The model's client learns that it did not answer in time, so the next
            // roles of this question (and the next questions, for the breaker's
            // cool-down) answer without waiting for it again.
            llm.gave_up(allowed);
            Err(LlmError::Timeout(allowed))
        }
    }
}

/// Of `remaining` until a call's deadline, the time a model call may take: the rest is
/// kept for the LLM-free fallback and the reply (a fifth, at most one second).
fn model_time(remaining: Duration) -> Duration {
    remaining.saturating_sub((remaining / 5).min(Duration::from_secs(1)))
}
