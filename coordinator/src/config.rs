//! What a coordinator may spend and how long it waits, per question and per call.

use std::time::Duration;

use kgmesh_schemas::{messages::entity_linker::LinkMode, Budget, Deadline};

use crate::directory::AllowedRoles;

/// Most refinement rounds a request may ask for.
pub const MAX_ROUNDS: u8 = 10;

/// Limits and knobs of the round loop. The defaults follow the papers (2 rounds,
/// depth ≤ 3, K_degree = 30, top-3 linking).
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    /// The budget every question starts with; its deadline is replaced per question by
    /// `question_timeout` (or the request's `timeout_ms`).
    pub budget: Budget,
    /// Model calls of the budget kept for the summarizer (1 where it uses a model):
    /// planning, judging and retrieval never spend them, so a question that takes a
    /// second round still gets a model-written answer within `budget.llm_calls`.
    pub summarizer_llm_calls: u32,
    pub question_timeout: Duration,
    /// Longest wait for one bus call; the question's deadline cuts it shorter.
    pub call_timeout: Duration,
    /// Retries of a call, as [`kgmesh_bus::RetryPolicy`] says (no responders, a closed
    /// bus, an unavailable or overloaded role, a timeout once). Never beyond the
    /// deadline.
    pub retries: u32,
    /// Candidates kept per mention by the entity linker (ByoKG's m).
    pub top_m: u8,
    pub link_mode: LinkMode,
    /// Evidence items one retriever may return per round.
    pub max_evidence_per_retriever: u32,
    /// Answers returned unless the request asks for fewer or more.
    pub max_answers: u16,
    /// Past plans asked of the cache manager (CacheRAG's k).
    pub cache_examples: u16,
    /// How long a discovery of the roles on the bus is reused.
    pub discovery_ttl: Duration,
    /// How long one discovery listens for announcements.
    pub discovery_wait: Duration,
    /// Time the summarizer still gets after the deadline, so an exhausted question
    /// ends with its best answer rather than none.
    pub finalize_grace: Duration,
    /// Most frontier entities handed to the judge and to expansions.
    pub max_frontier: usize,
    /// Longest question accepted, in characters.
    pub max_question_chars: usize,
    /// Questions remembered by id (the last ones answered), so that feedback can name
    /// a question by the `question_id` of its reply.
    pub recent_questions: usize,
    /// The graph the roles answer from, in words, named in every reply (`None` when this
    /// process does not know it).
    pub graph: Option<String>,
    /// The roles this coordinator calls: by default those it calls by name; the process
    /// that builds it adds the roles of its build and those configured
    /// (`bus.allowed_roles`). Other roles announcing themselves are refused.
    pub allowed_roles: AllowedRoles,
    /// When a call with no reply yet is sent again to another replica.
    pub hedge: HedgePolicy,
    /// Answers whose confidence (the reader's estimate that they are right) is below
    /// this become "I don't know, but possibly …"; 0 answers always.
    pub min_confidence: f32,
    /// The model cascade: with a language model configured, every question is first
    /// answered with no model call, and that answer is the reply when its confidence is
    /// at least this (or it came from a replayed plan); below it the question is asked
    /// again with the model. `None`: the model is asked on every question.
    pub cascade_below: Option<f32>,
    /// The model calls a question sent on by the cascade may make (at most its
    /// budget's): with 1, the first role of the run that uses the model (the
    /// KG-Linker, for its plan) asks it, and the others answer without it.
    pub cascade_calls: u32,
    /// Turns the plan's confidence into the answer's ([`crate::confidence`]); `None`:
    /// the plan's is the answer's. Not applied to a re-ranking reader's plans.
    pub answer_calibration: Option<crate::confidence::AnswerCalibration>,
}

/// Hedged calls: a call to a role with several replicas that has no reply after the
/// role's recent p95 latency (held between `min_delay` and `max_delay`; `first_delay`
/// while too few calls are known) is sent again to another replica, and again to the
/// next one after as long, until every replica has it; the first reply wins. Only
/// operations that change nothing are hedged. About one call in twenty of a healthy
/// role is sent twice; a slow model role (p95 above `max_delay`) more often.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HedgePolicy {
    pub enabled: bool,
    pub min_delay: Duration,
    pub max_delay: Duration,
    pub first_delay: Duration,
}

impl Default for HedgePolicy {
    fn default() -> Self {
        Self {
            enabled: true,
            min_delay: Duration::from_millis(20),
            max_delay: Duration::from_secs(5),
            first_delay: Duration::from_millis(250),
        }
    }
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            budget: Budget::default(),
            summarizer_llm_calls: 0,
            question_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(30),
            retries: 1,
            top_m: 3,
            link_mode: LinkMode::Both,
            max_evidence_per_retriever: 200,
            max_answers: 10,
            cache_examples: 5,
            discovery_ttl: Duration::from_secs(5),
            discovery_wait: Duration::from_millis(250),
            finalize_grace: Duration::from_secs(2),
            max_frontier: 64,
            max_question_chars: 2_000,
            recent_questions: 10_000,
            graph: None,
            allowed_roles: AllowedRoles::default(),
            min_confidence: 0.0,
            cascade_below: None,
            cascade_calls: 1,
            answer_calibration: None,
            hedge: HedgePolicy::default(),
        }
    }
}

impl CoordinatorConfig {
    /// The starting budget of one question: the configured limits, the request's
    /// overrides, and a deadline `timeout` from now.
    pub fn budget_for(&self, max_rounds: Option<u8>, timeout: Option<Duration>) -> Budget {
        let mut budget = self.budget;
        if let Some(rounds) = max_rounds {
            budget.rounds = rounds.clamp(1, MAX_ROUNDS);
        }
        budget.deadline = Deadline::after(timeout.unwrap_or(self.question_timeout));
        budget
    }
}
