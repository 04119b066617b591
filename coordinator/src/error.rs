//! What can go wrong with a question before it is answered, and the bounds a request
//! may ask for.

use kgmesh_bus::BusError;
use kgmesh_schemas::{AgentError, Role};

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
