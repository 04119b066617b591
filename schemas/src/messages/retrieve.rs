//! The one request every retriever serves. A new retrieval strategy is a role that
//! announces [`crate::RoleKind::Retriever`] and answers this on its `retrieve` op; the
//! coordinator calls all of them in parallel every round.

use serde::{Deserialize, Serialize};

use super::{cache::RelationCue, context::Evidence, Rpc};
use crate::{
    graph::{Metapath, ScoredEntity},
    Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RetrieveRequest {
    pub question: String,
    /// Question entities linked to the graph.
    pub entities: Vec<ScoredEntity>,
    /// Draft answers linked to the graph (targets for shortest paths).
    pub draft_answers: Vec<ScoredEntity>,
    pub metapaths: Vec<Metapath>,
    pub cypher: Vec<String>,
    /// Evidence items the retriever may return at most.
    pub max_evidence: u32,
    /// What the question's words meant in past verified plans (the plan cache's
    /// lexicon), for retrievers that choose relations.
    pub cues: Vec<RelationCue>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct RetrieveReply {
    pub evidence: Vec<Evidence>,
    /// Hints for the next KG-Linker call (e.g. how to repair refused Cypher).
    pub repair_hints: Vec<String>,
    /// Things worth telling the coordinator that are not evidence.
    pub notes: Vec<String>,
}

impl Rpc for RetrieveRequest {
    const OP: &'static str = "retrieve";
    const DEFAULT_ROLE: &'static str = Role::PATH_FOLLOWER;
    type Reply = RetrieveReply;
}
