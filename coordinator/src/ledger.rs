//! One question's accounts: what it may still spend, what it spent, where the time
//! went, and which limit (if any) ended it.

use std::time::{Duration, Instant};

use kgmesh_schemas::{
    budget::{Cost, Limit},
    messages::ask::{RoleCall, Timings},
    Budget, BudgetError, Meta, QuestionId, TraceContext,
};

pub struct Ledger {
    question_id: QuestionId,
    trace: TraceContext,
    budget: Budget,
    /// Model calls kept for the summarizer: every other request is sent the budget
    /// less these, so the answer's call is never spent on planning or judging.
    reserved_llm_calls: u32,
    spent: Cost,
    exhausted: Option<Limit>,
    started: Instant,
    stages: Vec<(String, u64)>,
    calls: Vec<RoleCall>,
}

impl Ledger {
    pub fn new(question_id: QuestionId, trace: TraceContext, budget: Budget) -> Self {
        Self {
            question_id,
            trace,
            budget,
            reserved_llm_calls: 0,
            spent: Cost::default(),
            exhausted: None,
            started: Instant::now(),
            stages: Vec::new(),
            calls: Vec::new(),
        }
    }

    /// Keeps `calls` of the model-call budget for [`Self::final_meta`].
    pub fn with_reserved_llm_calls(mut self, calls: u32) -> Self {
        self.reserved_llm_calls = calls;
        self
    }

    pub fn question_id(&self) -> QuestionId {
        self.question_id
    }

    pub fn trace(&self) -> &TraceContext {
        &self.trace
    }

    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The envelope of a request made in `round`: carries what is left of the budget,
    /// less the model calls kept for the summarizer.
    pub fn meta(&self, round: u8) -> Meta {
        let mut meta = self.final_meta(round);
        meta.budget.llm_calls = meta
            .budget
            .llm_calls
            .saturating_sub(self.reserved_llm_calls);
        meta
    }

    /// The envelope of the summarizer's request: everything that is left.
    pub fn final_meta(&self, round: u8) -> Meta {
        let mut meta = Meta::new(self.question_id, round, self.budget);
        meta.trace = self.trace.clone();
        meta
    }

    /// Charges a reply's cost. A crossed limit is remembered (the first one wins) and
    /// ends the question after the current step.
    pub fn charge(&mut self, cost: &Cost) {
        let mut cost = *cost;
        cost.bus_messages = cost.bus_messages.max(1);
        self.spent.add(&cost);
        if let Err(BudgetError::Exhausted { limit }) = self.budget.charge(&cost) {
            self.exhausted.get_or_insert(limit);
        }
    }

    /// Records that a limit ran out without a charge (deadline seen before a call,
    /// an agent refusing for lack of budget).
    pub fn exhaust(&mut self, limit: Limit) {
        self.exhausted.get_or_insert(limit);
    }

    /// The limit that ended the question, checking the deadline now.
    pub fn exhausted(&mut self) -> Option<Limit> {
        if self.exhausted.is_none() && self.budget.deadline.is_past() {
            self.exhausted = Some(Limit::Deadline);
        }
        self.exhausted
    }

    pub fn is_exhausted(&mut self) -> bool {
        self.exhausted().is_some()
    }

    /// How long a call may wait: `cap`, cut to the time left before the deadline;
    /// `None` when no time is left.
    pub fn call_timeout(&self, cap: Duration) -> Option<Duration> {
        let left = self.budget.deadline.remaining();
        if left.is_zero() {
            return None;
        }
        Some(cap.min(left))
    }

    /// Starts `round` of `max_rounds`: requests now say how many rounds are left,
    /// this one included.
    pub fn begin_round(&mut self, round: u8, max_rounds: u8) {
        self.budget.rounds = max_rounds.saturating_sub(round).saturating_add(1);
    }

    /// Uses one depth expansion (CacheRAG's K_depth); false when none is left.
    pub fn take_depth_expansion(&mut self) -> bool {
        if self.budget.depth_expansions == 0 {
            return false;
        }
        self.budget.depth_expansions -= 1;
        true
    }

    pub fn record_stage(&mut self, name: String, elapsed: Duration) {
        self.stages.push((name, elapsed.as_micros() as u64));
    }

    /// Records one call to a role: what it reported spending, or the kind of its error.
    pub fn record_call(
        &mut self,
        round: u8,
        role: &str,
        op: &str,
        elapsed: Duration,
        outcome: Result<&Cost, &str>,
    ) {
        self.calls.push(RoleCall {
            round,
            role: role.to_owned(),
            op: op.to_owned(),
            elapsed_us: elapsed.as_micros() as u64,
            cost: outcome.ok().copied(),
            outcome: match outcome {
                Ok(_) => RoleCall::OK.to_owned(),
                Err(kind) => kind.to_owned(),
            },
        });
    }

    /// Model calls that `role`'s recorded calls reported.
    pub fn model_calls_of(&self, role: &str) -> u32 {
        self.calls
            .iter()
            .filter(|call| call.role == role)
            .filter_map(|call| call.cost.map(|cost| cost.llm_calls))
            .sum()
    }

    /// Every call recorded so far, in order.
    pub fn take_calls(&mut self) -> Vec<RoleCall> {
        std::mem::take(&mut self.calls)
    }

    pub fn spent(&self) -> Cost {
        self.spent
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    pub fn timings(&self) -> Timings {
        Timings {
            total_us: self.started.elapsed().as_micros() as u64,
            stages: self.stages.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charging_past_a_limit_marks_the_question_exhausted() {
        let mut budget = Budget::with_timeout(Duration::from_secs(60));
        budget.llm_calls = 1;
        let mut ledger = Ledger::new(QuestionId::new_random(), TraceContext::default(), budget);
        ledger.charge(&Cost {
            llm_calls: 1,
            ..Cost::default()
        });
        assert_eq!(ledger.exhausted(), None);
        assert_eq!(ledger.meta(1).budget.llm_calls, 0);
        ledger.charge(&Cost {
            llm_calls: 1,
            ..Cost::default()
        });
        assert_eq!(ledger.exhausted(), Some(Limit::LlmCalls));
        assert_eq!(ledger.spent().llm_calls, 2);
        assert_eq!(ledger.spent().bus_messages, 2);
    }

    #[test]
    fn the_summarizers_calls_are_kept_from_every_other_request() {
        let mut budget = Budget::with_timeout(Duration::from_secs(60));
        budget.llm_calls = 3;
        let mut ledger = Ledger::new(QuestionId::new_random(), TraceContext::default(), budget)
            .with_reserved_llm_calls(1);
        assert_eq!(ledger.meta(1).budget.llm_calls, 2);
        for _ in 0..2 {
            ledger.charge(&Cost {
                llm_calls: 1,
                ..Cost::default()
            });
        }
        assert_eq!(ledger.meta(2).budget.llm_calls, 0);
        assert_eq!(ledger.final_meta(2).budget.llm_calls, 1);
        assert_eq!(ledger.exhausted(), None);
        let asked = Cost {
            llm_calls: 1,
            ..Cost::default()
        };
        ledger.record_call(1, "kg-linker", "link", Duration::ZERO, Ok(&asked));
        ledger.record_call(1, "judge", "judge", Duration::ZERO, Ok(&asked));
        ledger.record_call(2, "kg-linker", "link", Duration::ZERO, Err("timeout"));
        assert_eq!(ledger.model_calls_of("kg-linker"), 1);
        assert_eq!(ledger.model_calls_of("summarizer"), 0);
    }

    #[test]
    fn call_timeouts_never_outlive_the_deadline() {
        let budget = Budget::with_timeout(Duration::from_millis(200));
        let ledger = Ledger::new(QuestionId::new_random(), TraceContext::default(), budget);
        let timeout = ledger.call_timeout(Duration::from_secs(30)).unwrap();
        assert!(timeout <= Duration::from_millis(200), "{timeout:?}");
        let mut past = budget;
        past.deadline = kgmesh_schemas::Deadline { unix_ms: 1 };
        let mut ledger = Ledger::new(QuestionId::new_random(), TraceContext::default(), past);
        assert_eq!(ledger.call_timeout(Duration::from_secs(30)), None);
        assert_eq!(ledger.exhausted(), Some(Limit::Deadline));
    }

    #[test]
    fn depth_expansions_are_bounded() {
        let mut budget = Budget::with_timeout(Duration::from_secs(60));
        budget.depth_expansions = 2;
        let mut ledger = Ledger::new(QuestionId::new_random(), TraceContext::default(), budget);
        assert!(ledger.take_depth_expansion());
        assert!(ledger.take_depth_expansion());
        assert!(!ledger.take_depth_expansion());
    }
}
