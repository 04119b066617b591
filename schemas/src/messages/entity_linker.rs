//! Entity linker (ByoKG-RAG §3.2): mentions → graph ids.

use serde::{Deserialize, Serialize};

use super::Rpc;
use crate::{graph::ScoredEntity, Role};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum LinkMode {
    Fuzzy,
    Embedding,
    /// Union of both, scores merged.
    Both,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct LinkRequest {
    /// All mentions of a round (entities and draft answers), linked in one batch.
    pub mentions: Vec<String>,
    /// Candidates kept per mention (ByoKG's m, default 3).
    pub top_m: u8,
    pub mode: LinkMode,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct MentionLinks {
    pub mention: String,
    /// Best first.
    pub candidates: Vec<ScoredEntity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct LinkReply {
    /// One entry per requested mention, in request order.
    pub links: Vec<MentionLinks>,
}

impl Rpc for LinkRequest {
    const OP: &'static str = "link";
    const DEFAULT_ROLE: &'static str = Role::ENTITY_LINKER;
    type Reply = LinkReply;
}
