//! The one retry policy of calls between kgmesh processes (the coordinator's calls to
//! roles and a role's calls to another): which failures are worth another attempt,
//! and how long to pause first.
//!
//! Retried: no responders (a replica may be starting), a closed or reconnecting bus,
//! an agent that said it is unavailable or overloaded (another replica may take it),
//! and an attempt that got no reply in time, once (a replica may have died with the
//! request). Never retried: an agent's own refusal (bad request, invalid query, spent
//! budget, the question's deadline passed), which another replica would repeat. The pause doubles from `backoff` up to `max_backoff`;
//! callers never pause or retry past the question's deadline.

use std::{future::Future, time::Duration};

use kgmesh_schemas::{AgentError, Deadline};

use crate::{typed::CallError, BusError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first, at most.
    pub retries: u32,
    /// Pause before the first retry.
    pub backoff: Duration,
    /// Longest pause.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    /// Two retries, 10 ms doubling to at most 500 ms.
    fn default() -> Self {
        Self::with_retries(2)
    }
}

impl RetryPolicy {
    pub fn with_retries(retries: u32) -> Self {
        Self {
            retries,
            backoff: Duration::from_millis(10),
            max_backoff: Duration::from_millis(500),
        }
    }

    /// After `error` on retry number `attempt` (0: the first attempt failed), the pause
    /// before trying again, or `None` to give up.
    pub fn next(&self, error: &CallError, attempt: u32) -> Option<Duration> {
        if attempt >= self.retries || !Self::worth_retrying(error, attempt) {
            return None;
        }
        let pause = self.backoff.saturating_mul(1 << attempt.min(16));
        Some(pause.min(self.max_backoff))
    }

    /// Runs `attempt` (given its number, 0 first) until it succeeds, fails for good,
    /// runs out of retries, or the next pause would reach past `deadline`; the last
    /// error when it gives up.
    pub async fn run<T, F, Fut>(&self, deadline: Deadline, mut attempt: F) -> Result<T, CallError>
    where
        F: FnMut(u32) -> Fut,
        Fut: Future<Output = Result<T, CallError>>,
    {
        let mut tries = 0;
        loop {
            let error = match attempt(tries).await {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            match self.next(&error, tries) {
                Some(pause) if pause < deadline.remaining() => {
                    tries += 1;
                    tracing::debug!(attempt = tries, %error, "retrying call");
                    tokio::time::sleep(pause).await;
                }
                _ => return Err(error),
            }
        }
    }

    /// Whether another attempt, or another replica, may succeed where this one failed
    /// (every retried failure, timeouts included); an agent's refusal is final.
    pub fn is_transient(error: &CallError) -> bool {
        Self::worth_retrying(error, 0)
    }

    fn worth_retrying(error: &CallError, attempt: u32) -> bool {
        match error {
            CallError::Bus(BusError::NoResponders { .. } | BusError::Closed) => true,
            CallError::Bus(BusError::TimedOut { .. }) => attempt == 0,
            CallError::Bus(_) => false,
            CallError::Agent { error, .. } => match error {
                AgentError::Unavailable { .. }
                | AgentError::Overloaded { .. }
                | AgentError::NoResponders { .. } => true,
                // The agent answered that the question's deadline passed while it
                // worked: no attempt would finish in time.
                _ => false,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bus(error: BusError) -> CallError {
        CallError::Bus(error)
    }

    fn agent(error: AgentError) -> CallError {
        CallError::Agent {
            role: "r".into(),
            error,
        }
    }

    #[test]
    fn what_is_retried_and_how_long_to_wait() {
        let policy = RetryPolicy::with_retries(3);
        let none = bus(BusError::NoResponders {
            subject: "s".into(),
        });
        assert_eq!(policy.next(&none, 0), Some(Duration::from_millis(10)));
        assert_eq!(policy.next(&none, 2), Some(Duration::from_millis(40)));
        assert_eq!(policy.next(&none, 3), None, "three retries at most");
        assert!(policy.next(&bus(BusError::Closed), 0).is_some());
        let timeout = bus(BusError::TimedOut {
            subject: "s".into(),
            timeout: Duration::from_secs(1),
        });
        assert!(policy.next(&timeout, 0).is_some(), "a timeout once");
        assert_eq!(policy.next(&timeout, 1), None);
        let overloaded = agent(AgentError::Overloaded { in_flight: 3 });
        assert!(policy.next(&overloaded, 0).is_some());
        for refused in [
            agent(AgentError::BadRequest { detail: "d".into() }),
            agent(AgentError::Internal { detail: "d".into() }),
            agent(AgentError::Timeout { detail: "d".into() }),
            bus(BusError::PayloadTooLarge { size: 2, limit: 1 }),
        ] {
            assert_eq!(policy.next(&refused, 0), None, "{refused}");
        }
        let long = RetryPolicy::with_retries(20);
        assert_eq!(long.next(&none, 19), Some(Duration::from_millis(500)));
    }
}
