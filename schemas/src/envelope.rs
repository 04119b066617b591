//! The envelope every bus message travels in.
//!
//! Headers (see [`headers`]) carry what a receiver must know before it can decode the
//! payload: the content type and the schema version. The payload is a [`Request`] (meta +
//! body) or a [`Reply`] (cost + result).

use serde::{Deserialize, Serialize};

use crate::{budget::Cost, AgentError, Budget, QuestionId};

/// The wire schema version this build speaks. Bump on any incompatible change to a
/// message in this crate; the golden-bytes test fails until you do.
pub const SCHEMA_VERSION: u16 = 10;

/// The operation every kgmesh agent serves besides its own: a message on it carrying
/// a [`headers::CALL_ID`] cancels that call's work (the losers of a hedged call).
pub const CANCEL_OP: &str = "cancel";

/// Header names. NATS headers are case-sensitive; these are the canonical spellings.
pub mod headers {
    /// MIME type of the payload (see [`crate::ContentType`]).
    pub const CONTENT_TYPE: &str = "Content-Type";
    /// Decimal [`super::SCHEMA_VERSION`] of the payload.
    pub const SCHEMA_VERSION: &str = "Kgmesh-Schema";
    /// The question the message works on, for logs and routing.
    pub const QUESTION_ID: &str = "Kgmesh-Question";
    /// Set on replies that carry an [`crate::AgentError`] (value: the error kind).
    pub const ERROR: &str = "Kgmesh-Error";
    /// One call of the coordinator, the same on its hedges (other replicas asked the
    /// same): a message with it on a role's [`super::CANCEL_OP`] subject stops that
    /// call's work where it still runs.
    pub const CALL_ID: &str = "Kgmesh-Call";
    /// W3C trace context.
    pub const TRACEPARENT: &str = "traceparent";
    pub const TRACESTATE: &str = "tracestate";
}

/// W3C trace context (`traceparent` / `tracestate`), carried in headers and in [`Meta`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct TraceContext {
    pub traceparent: String,
    pub tracestate: String,
}

impl TraceContext {
    pub fn is_empty(&self) -> bool {
        self.traceparent.is_empty()
    }

    /// The 32-hex-digit trace id of a well-formed `traceparent`.
    pub fn trace_id(&self) -> Option<&str> {
        let mut parts = self.traceparent.split('-');
        let _version = parts.next()?;
        let trace_id = parts.next()?;
        (trace_id.len() == 32).then_some(trace_id)
    }
}

/// What every request says about the question it serves.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Meta {
    pub schema_version: u16,
    pub question_id: QuestionId,
    /// Refinement round, starting at 1; 0 for work outside a question (warm-up, admin).
    pub round: u8,
    /// What the question may still spend; includes the deadline.
    pub budget: Budget,
    pub trace: TraceContext,
}

impl Meta {
    pub fn new(question_id: QuestionId, round: u8, budget: Budget) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            question_id,
            round,
            budget,
            trace: TraceContext::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Request<T> {
    pub meta: Meta,
    pub body: T,
}

/// A reply: what the work cost, and its result or a typed error. Never a failure
/// dressed up as a successful body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Reply<T> {
    pub cost: Cost,
    pub result: Result<T, AgentError>,
}

impl<T> Reply<T> {
    pub fn ok(body: T, cost: Cost) -> Self {
        Self {
            cost,
            result: Ok(body),
        }
    }

    pub fn err(error: AgentError) -> Self {
        Self {
            cost: Cost::default(),
            result: Err(error),
        }
    }
}
