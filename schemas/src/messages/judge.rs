//! Judge / dispatcher (CacheRAG Algorithm 3): is the context enough, and if not, how to
//! grow it.

use serde::{Deserialize, Serialize};

use super::{context::Context, Rpc};
use crate::{
    graph::{Direction, Entity},
    Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct JudgeRequest {
    pub question: String,
    pub context: Context,
    /// Entities at the edge of what was retrieved (where expansions start).
    pub frontier: Vec<Entity>,
    /// Depth expansions still allowed for this question.
    pub depth_expansions_left: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum Verdict {
    Complete,
    ExpandDepth {
        relation: String,
        direction: Direction,
        frontier: Vec<Entity>,
    },
    ExpandBreadth {
        frontier: Vec<Entity>,
    },
    /// Not enough, and no expansion looks useful: go to the next round.
    NextRound,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct JudgeReply {
    pub verdict: Verdict,
    pub reason: String,
}

impl Rpc for JudgeRequest {
    const OP: &'static str = "judge";
    const DEFAULT_ROLE: &'static str = Role::JUDGE;
    type Reply = JudgeReply;
}
