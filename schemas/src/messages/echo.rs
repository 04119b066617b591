//! A trivial role that proves the path from client to agent and back.

use serde::{Deserialize, Serialize};

use super::Rpc;
use crate::Role;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct EchoRequest {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct EchoReply {
    pub text: String,
    /// Which process answered (for load-spreading tests and debugging).
    pub served_by: String,
}

impl Rpc for EchoRequest {
    const OP: &'static str = "echo";
    const DEFAULT_ROLE: &'static str = Role::ECHO;
    type Reply = EchoReply;
}
