//! Agentic traverser (ByoKG-RAG Algorithm 1) details travel inside
//! [`super::retrieve::RetrieveRequest`]; this module holds its trace of steps, which the
//! traverser reports as notes and tests inspect.

use serde::{Deserialize, Serialize};

use crate::graph::Entity;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct TraversalStep {
    pub frontier: Vec<Entity>,
    pub relations_chosen: Vec<String>,
    pub triples_kept: u32,
}
