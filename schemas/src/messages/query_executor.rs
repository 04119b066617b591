//! Query executor (ByoKG-RAG §3.4, GraphRAFT): validated, read-only Cypher.

use serde::{Deserialize, Serialize};

use super::Rpc;
use crate::{
    graph::{GraphSchema, Rows, Value},
    AgentError, Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct QueryRequest {
    pub cypher: String,
    pub params: Vec<(String, Value)>,
    /// Row cap; the budget's `result_rows` applies when lower.
    pub max_rows: u32,
    pub timeout_ms: u32,
}

/// A query's rows, or why it was refused (`AgentError::InvalidQuery` with a repair hint).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct QueryReply {
    pub outcome: Result<Rows, AgentError>,
}

impl Rpc for QueryRequest {
    const OP: &'static str = "query";
    const DEFAULT_ROLE: &'static str = Role::QUERY_EXECUTOR;
    type Reply = QueryReply;
}

/// Asks for the graph's schema: its labels and relations with their counts (what the
/// web console shows, and what tools outside the bus may read).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct SchemaRequest {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct SchemaReply {
    pub schema: GraphSchema,
}

impl Rpc for SchemaRequest {
    const OP: &'static str = "schema";
    const DEFAULT_ROLE: &'static str = Role::QUERY_EXECUTOR;
    type Reply = SchemaReply;
}
