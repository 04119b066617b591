//! Subjects and role names, built from constants so no agent spells one by hand.
//!
//! A subject is `kgmesh.v<schema>.<role>.<op>`. Every role serves its operations in a
//! queue group named after the role, so N replicas share the load.

use serde::{Deserialize, Serialize};

use crate::SCHEMA_VERSION;

/// Prefix of every kgmesh subject.
pub const PREFIX: &str = "kgmesh";

/// A role's name: lowercase ASCII letters, digits and `-` (a valid NATS service name
/// and subject token).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Role(String);

impl Role {
    // The names of the built-in roles (the registry of `kgmesh-agents` lists them).
    pub const KG_LINKER: &'static str = "kg-linker";
    pub const ENTITY_LINKER: &'static str = "entity-linker";
    pub const PATH_FOLLOWER: &'static str = "path-follower";
    pub const QUERY_EXECUTOR: &'static str = "query-executor";
    pub const AGENTIC_TRAVERSER: &'static str = "agentic-traverser";
    pub const SCORING_RETRIEVER: &'static str = "scoring-retriever";
    pub const PATTERN_MATCHER: &'static str = "pattern-matcher";
    pub const TEXT_RETRIEVER: &'static str = "text-retriever";
    pub const JUDGE: &'static str = "judge";
    pub const SUMMARIZER: &'static str = "summarizer";
    pub const CACHE_MANAGER: &'static str = "cache-manager";
    pub const ECHO: &'static str = "echo";

    /// A role name, or an error naming the offending character.
    pub fn new(name: &str) -> Result<Self, String> {
        if name.is_empty() || name.len() > 64 {
            return Err(format!("role name {name:?} must be 1 to 64 characters"));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(format!(
                "role name {name:?} contains {bad:?}; use lowercase letters, digits and '-'"
            ));
        }
        Ok(Self(name.to_owned()))
    }

    /// For the role constants above, which are valid by construction.
    pub fn well_known(name: &'static str) -> Self {
        Self(name.to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The subject of `op` on this role.
    pub fn subject(&self, op: &str) -> String {
        format!("{PREFIX}.v{SCHEMA_VERSION}.{}.{op}", self.0)
    }

    /// The queue group replicas of this role share.
    pub fn queue_group(&self) -> String {
        format!("{PREFIX}-{}", self.0)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a role is for, so the coordinator knows whom to fan out to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum RoleKind {
    /// Serves [`crate::messages::retrieve::RetrieveRequest`] on its `retrieve` op;
    /// the coordinator calls every retriever it discovers in each round.
    Retriever,
    /// A fixed step of the round loop (linker, judge, summarizer, cache).
    Core,
}

impl RoleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RoleKind::Retriever => "retriever",
            RoleKind::Core => "core",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "retriever" => Some(RoleKind::Retriever),
            "core" => Some(RoleKind::Core),
            _ => None,
        }
    }
}

/// What a role announces about itself (NATS service metadata, or the LocalBus registry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RoleInfo {
    pub role: Role,
    pub version: String,
    pub kind: RoleKind,
    /// Operations served, e.g. `["retrieve", "expand"]`.
    pub ops: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_follow_the_scheme() {
        let role = Role::new("path-follower").unwrap();
        assert_eq!(
            role.subject("retrieve"),
            format!("kgmesh.v{SCHEMA_VERSION}.path-follower.retrieve")
        );
        assert!(Role::new("Path.Follower").is_err());
        assert!(Role::new("").is_err());
    }
}
