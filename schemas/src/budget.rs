//! What a question may spend, as types.
//!
//! The coordinator owns a question's [`Budget`], charges every reply's [`Cost`] against
//! it and passes what is left down in every request; agents re-check it before doing
//! expensive work. Bounds that the design fixes (depth ≤ 3) are enforced by
//! construction.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The deepest traversal the design allows (CacheRAG's K_depth, ByoKG's metapath length).
pub const MAX_DEPTH: u8 = 3;

/// A traversal depth in `1..=MAX_DEPTH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
#[serde(try_from = "u8", into = "u8")]
pub struct Depth(u8);

impl Depth {
    pub const MAX: Depth = Depth(MAX_DEPTH);

    /// A depth, or an error when it is 0 or above [`MAX_DEPTH`].
    pub fn new(hops: u8) -> Result<Self, BudgetError> {
        if hops == 0 || hops > MAX_DEPTH {
            return Err(BudgetError::DepthOutOfRange { requested: hops });
        }
        Ok(Self(hops))
    }

    /// The requested depth clamped into `1..=MAX_DEPTH`; for values that come from a
    /// model or a user and should be bounded rather than refused.
    pub fn saturating(hops: u8) -> Self {
        Self(hops.clamp(1, MAX_DEPTH))
    }

    pub fn get(self) -> u8 {
        self.0
    }
}

impl TryFrom<u8> for Depth {
    type Error = BudgetError;
    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Depth::new(value)
    }
}

impl From<Depth> for u8 {
    fn from(value: Depth) -> Self {
        value.0
    }
}

/// A wall-clock instant, in milliseconds since the Unix epoch, after which work on a
/// question is pointless. Absolute so that it survives hops between processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Deadline {
    pub unix_ms: u64,
}

impl Deadline {
    pub fn after(timeout: Duration) -> Self {
        Self::at(SystemTime::now() + timeout)
    }

    pub fn at(instant: SystemTime) -> Self {
        let unix_ms = instant
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Self { unix_ms }
    }

    /// Time left before the deadline as seen from `now`; zero once it has passed.
    pub fn remaining_at(self, now: SystemTime) -> Duration {
        let now_ms = now
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        Duration::from_millis(self.unix_ms.saturating_sub(now_ms))
    }

    pub fn remaining(self) -> Duration {
        self.remaining_at(SystemTime::now())
    }

    pub fn is_past(self) -> bool {
        self.remaining().is_zero()
    }
}

/// The limits of one question. A request carries what is *left*, not the original.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Budget {
    /// Refinement rounds (ByoKG-RAG's T; default 2).
    pub rounds: u8,
    /// Deepest path any tool may follow.
    pub depth: Depth,
    /// Neighbours kept per frontier node in a breadth scan (CacheRAG's K_degree).
    pub breadth: u16,
    /// Depth expansions the judge may still order (CacheRAG's K_depth).
    pub depth_expansions: u8,
    /// Language-model calls left.
    pub llm_calls: u32,
    /// Prompt + completion tokens left.
    pub tokens: u64,
    /// Rows any single graph operation may return.
    pub result_rows: u32,
    pub deadline: Deadline,
}

impl Budget {
    /// The defaults the papers use, with a deadline `timeout` from now.
    pub fn with_timeout(timeout: Duration) -> Self {
        Self {
            rounds: 2,
            depth: Depth::MAX,
            breadth: 30,
            depth_expansions: MAX_DEPTH,
            llm_calls: 12,
            tokens: 60_000,
            result_rows: 1_000,
            deadline: Deadline::after(timeout),
        }
    }

    /// Subtracts what a reply cost. Fails, naming the first limit crossed, when the
    /// question can no longer afford it; the budget then stays at zero for that limit.
    pub fn charge(&mut self, cost: &Cost) -> Result<(), BudgetError> {
        let mut exhausted = None;
        if cost.llm_calls > self.llm_calls {
            exhausted.get_or_insert(Limit::LlmCalls);
        }
        let tokens = cost.prompt_tokens + cost.completion_tokens;
        if tokens > self.tokens {
            exhausted.get_or_insert(Limit::Tokens);
        }
        self.llm_calls = self.llm_calls.saturating_sub(cost.llm_calls);
        self.tokens = self.tokens.saturating_sub(tokens);
        if self.deadline.is_past() {
            exhausted.get_or_insert(Limit::Deadline);
        }
        match exhausted {
            Some(limit) => Err(BudgetError::Exhausted { limit }),
            None => Ok(()),
        }
    }

    /// Fails when `needed` more LLM calls cannot be afforded or the deadline has passed.
    pub fn check_llm(&self, needed: u32) -> Result<(), BudgetError> {
        if self.deadline.is_past() {
            return Err(BudgetError::Exhausted {
                limit: Limit::Deadline,
            });
        }
        if self.llm_calls < needed || self.tokens == 0 {
            return Err(BudgetError::Exhausted {
                limit: Limit::LlmCalls,
            });
        }
        Ok(())
    }
}

impl Default for Budget {
    fn default() -> Self {
        Self::with_timeout(Duration::from_secs(60))
    }
}

/// Which limit ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Limit {
    Rounds,
    Depth,
    Breadth,
    LlmCalls,
    Tokens,
    ResultRows,
    Deadline,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Limit::Rounds => "rounds",
            Limit::Depth => "depth",
            Limit::Breadth => "breadth",
            Limit::LlmCalls => "llm calls",
            Limit::Tokens => "tokens",
            Limit::ResultRows => "result rows",
            Limit::Deadline => "deadline",
        };
        f.write_str(name)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum BudgetError {
    #[error("depth {requested} is outside 1..={MAX_DEPTH}")]
    DepthOutOfRange { requested: u8 },
    #[error("budget exhausted: {limit}")]
    Exhausted { limit: Limit },
}

/// What one reply cost; summed by the coordinator and reported with the answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Cost {
    pub llm_calls: u32,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Rows or edges read from the graph.
    pub graph_rows: u64,
    /// Bus round trips made on the question's behalf (including this one).
    pub bus_messages: u32,
    /// Time spent inside the agent, in microseconds.
    pub elapsed_us: u64,
    /// Time of `elapsed_us` spent waiting on a language model.
    pub llm_us: u64,
    /// Time of `elapsed_us` spent in graph or vector stores.
    pub store_us: u64,
    /// Model replies that were unusable (failed, timed out, empty, unparseable or not
    /// grounded in the graph) and were replaced by the role's LLM-free strategy.
    #[serde(default)]
    pub model_fallbacks: u32,
}

impl Cost {
    pub fn add(&mut self, other: &Cost) {
        self.llm_calls += other.llm_calls;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.graph_rows += other.graph_rows;
        self.bus_messages += other.bus_messages;
        self.elapsed_us += other.elapsed_us;
        self.llm_us += other.llm_us;
        self.store_us += other.store_us;
        self.model_fallbacks += other.model_fallbacks;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_is_bounded() {
        assert!(Depth::new(0).is_err());
        assert!(Depth::new(4).is_err());
        assert_eq!(Depth::new(3).unwrap().get(), 3);
        assert_eq!(Depth::saturating(9).get(), 3);
        assert_eq!(Depth::saturating(0).get(), 1);
    }

    #[test]
    fn charging_past_the_llm_limit_fails_and_saturates() {
        let mut budget = Budget::with_timeout(Duration::from_secs(60));
        budget.llm_calls = 1;
        let cost = Cost {
            llm_calls: 2,
            ..Cost::default()
        };
        assert_eq!(
            budget.charge(&cost),
            Err(BudgetError::Exhausted {
                limit: Limit::LlmCalls
            })
        );
        assert_eq!(budget.llm_calls, 0);
        assert!(budget.check_llm(1).is_err());
    }

    #[test]
    fn a_past_deadline_is_exhausted() {
        let mut budget = Budget::with_timeout(Duration::from_secs(60));
        budget.deadline = Deadline { unix_ms: 1 };
        assert_eq!(
            budget.charge(&Cost::default()),
            Err(BudgetError::Exhausted {
                limit: Limit::Deadline
            })
        );
    }
}
