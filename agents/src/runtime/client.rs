//! Typed calls to roles, with retries where another replica may answer.

use std::{sync::Arc, time::Duration};

use kgmesh_bus::{
    typed::{decode_reply, encode_request_ref, CallError},
    Bus, BusError, RetryPolicy,
};
use kgmesh_schemas::{budget::Cost, ContentType, Meta, Role, Rpc};

/// How long past the question's deadline a client still waits for the agent's own
/// timeout reply.
const DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// Calls roles over a bus, retrying as [`RetryPolicy`] says (no responders, a closed
/// bus, an unavailable or overloaded agent, a timeout once) up to `retries` more
/// times, never past the question's deadline. An agent's refusal is returned as it is.
#[derive(Clone)]
pub struct Client {
    pub bus: Arc<dyn Bus>,
    /// Per-attempt timeout (shortened to what is left of the question's deadline).
    pub timeout: Duration,
    pub retries: u32,
    /// Pause before the first retry, doubled on each further one (at most 500 ms).
    pub backoff: Duration,
    pub content_type: ContentType,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

impl Client {
    /// 10 s per attempt, 2 retries, 50 ms backoff, bincode.
    pub fn new(bus: Arc<dyn Bus>) -> Self {
        Self {
            bus,
            timeout: Duration::from_secs(10),
            retries: 2,
            backoff: Duration::from_millis(50),
            content_type: ContentType::Bincode,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Calls `R::OP` on `role`.
    pub async fn call<R: Rpc>(
        &self,
        role: &Role,
        meta: &Meta,
        body: &R,
    ) -> Result<(R::Reply, Cost), CallError> {
        let subject = role.subject(R::OP);
        // A call made while serving a request continues that request's trace.
        let traced;
        let meta = match kgmesh_telemetry::current() {
            trace if trace.is_empty() => meta,
            trace => {
                traced = Meta {
                    trace,
                    ..meta.clone()
                };
                &traced
            }
        };
        let message = encode_request_ref(self.content_type, meta, body)?;
        let policy = RetryPolicy {
            retries: self.retries,
            backoff: self.backoff,
            ..RetryPolicy::default()
        };
        policy
            .run(meta.budget.deadline, |_attempt| async {
                let remaining = meta.budget.deadline.remaining();
                if remaining.is_zero() {
                    return Err(CallError::Bus(BusError::TimedOut {
                        subject: subject.clone(),
                        timeout: Duration::ZERO,
                    }));
                }
                // The agent enforces the same deadline and answers a typed timeout (with
                // what it spent) when it passes; a little grace lets that answer arrive.
                let timeout = self.timeout.min(remaining + DEADLINE_GRACE);
                match self.bus.request(&subject, message.clone(), timeout).await {
                    Ok(reply) => decode_reply::<R>(role, &subject, &reply),
                    Err(error) => Err(CallError::Bus(error)),
                }
            })
            .await
    }

    /// Calls `R::OP` on the role that serves `R` by default.
    pub async fn call_default<R: Rpc>(
        &self,
        meta: &Meta,
        body: &R,
    ) -> Result<(R::Reply, Cost), CallError> {
        self.call(&Role::well_known(R::DEFAULT_ROLE), meta, body)
            .await
    }
}
