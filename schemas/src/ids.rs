//! Identifiers that travel on the wire.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One question's identity, shared by every message and span that works on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct QuestionId(pub uuid::Uuid);

impl QuestionId {
    pub fn new_random() -> Self {
        Self(uuid::Uuid::new_v4())
    }
}

impl fmt::Display for QuestionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A node of the graph as the configured backend identifies it.
///
/// The embedded store uses dense indices; the Bolt backend uses the database's integer
/// node id. Ids are only meaningful for the store that produced them, which is why
/// every message that carries one also carries the node's display name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct NodeId(pub u64);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}
