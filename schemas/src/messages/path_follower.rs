//! Path follower (ByoKG-RAG §3.3) operations besides `retrieve`: the bounded expansion
//! operators the judge orders (CacheRAG §4.3).

use serde::{Deserialize, Serialize};

use super::{context::Evidence, Rpc};
use crate::{
    graph::{Direction, Entity},
    Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Expansion {
    /// σ_depth: follow one relation from the frontier.
    Depth {
        relation: String,
        direction: Direction,
    },
    /// σ_breadth: star scan of the frontier, pruned to the `k_degree` neighbours most
    /// similar to the question.
    Breadth { k_degree: u16 },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct ExpandRequest {
    pub question: String,
    pub frontier: Vec<Entity>,
    pub expansion: Expansion,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct ExpandReply {
    pub evidence: Vec<Evidence>,
    /// The new frontier (tails reached).
    pub frontier: Vec<Entity>,
}

impl Rpc for ExpandRequest {
    const OP: &'static str = "expand";
    const DEFAULT_ROLE: &'static str = Role::PATH_FOLLOWER;
    type Reply = ExpandReply;
}
