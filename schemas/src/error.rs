//! Errors that cross the wire. A caller matches on the variant; the text is for people.

use serde::{Deserialize, Serialize};

use crate::budget::Limit;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum AgentError {
    /// The agent gave up because the question's deadline passed.
    #[error("timed out: {detail}")]
    Timeout { detail: String },
    /// No agent of the role answered.
    #[error("no agent serves {subject}")]
    NoResponders { subject: String },
    /// The request could not be decoded (garbage, truncated, or a type mismatch).
    #[error("undecodable request: {detail}")]
    Decode { detail: String },
    /// The sender speaks a schema version this agent does not.
    #[error("unsupported schema version {got} (this agent speaks {supported})")]
    UnsupportedVersion { got: String, supported: u16 },
    /// The question's budget does not allow the work.
    #[error("budget exhausted: {limit}")]
    BudgetExhausted { limit: Limit },
    /// A query was refused or failed; `hint` tells a model how to repair it.
    #[error("invalid query: {reason}")]
    InvalidQuery {
        reason: String,
        hint: Option<String>,
    },
    /// The request was well-formed but asked for something impossible.
    #[error("bad request: {detail}")]
    BadRequest { detail: String },
    /// A dependency (store, model) is unreachable or failing.
    #[error("unavailable: {detail}")]
    Unavailable { detail: String },
    /// A bug on the agent's side.
    #[error("internal error: {detail}")]
    Internal { detail: String },
    /// The agent already serves as many requests as it may (`bus.max_in_flight`);
    /// another replica may take this one.
    #[error("overloaded: {in_flight} requests in flight")]
    Overloaded { in_flight: u32 },
}

impl AgentError {
    /// A short stable name for metrics, logs and the error header.
    pub fn kind(&self) -> &'static str {
        match self {
            AgentError::Timeout { .. } => "timeout",
            AgentError::NoResponders { .. } => "no_responders",
            AgentError::Decode { .. } => "decode",
            AgentError::UnsupportedVersion { .. } => "unsupported_version",
            AgentError::BudgetExhausted { .. } => "budget_exhausted",
            AgentError::InvalidQuery { .. } => "invalid_query",
            AgentError::BadRequest { .. } => "bad_request",
            AgentError::Unavailable { .. } => "unavailable",
            AgentError::Internal { .. } => "internal",
            AgentError::Overloaded { .. } => "overloaded",
        }
    }

    /// Whether retrying the same request elsewhere may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            AgentError::Timeout { .. }
                | AgentError::NoResponders { .. }
                | AgentError::Unavailable { .. }
                | AgentError::Overloaded { .. }
        )
    }
}

impl From<crate::BudgetError> for AgentError {
    fn from(error: crate::BudgetError) -> Self {
        match error {
            crate::BudgetError::Exhausted { limit } => AgentError::BudgetExhausted { limit },
            other => AgentError::BadRequest {
                detail: other.to_string(),
            },
        }
    }
}
