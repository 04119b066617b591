//! KG-Linker (ByoKG-RAG §3.1): one call proposes entities, relation paths, Cypher and
//! draft answers for a question.

use serde::{Deserialize, Serialize};

use super::{
    cache::{FewShotExample, RelationCue},
    context::Context,
    Rpc,
};
use crate::{
    graph::{Metapath, ScoredEntity},
    NodeId, Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct KgLinkRequest {
    pub question: String,
    /// Verbalized context from earlier rounds (empty in round 1).
    pub context: Context,
    /// Repair hints for Cypher refused in earlier rounds.
    pub repair_hints: Vec<String>,
    /// Past verified plans to show as examples.
    pub examples: Vec<FewShotExample>,
    /// Learned word → relation associations for this question (from the plan cache).
    pub cues: Vec<RelationCue>,
}

/// The most nodes `KgLinkReply::reader_reaches` lists.
pub const MAX_READER_REACHES: usize = 1000;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct KgLinkReply {
    /// Entity mentions as written in the question (to be linked).
    pub mentions: Vec<String>,
    /// Entities already linked to graph ids (the LLM-free linker does this itself).
    pub linked: Vec<ScoredEntity>,
    pub metapaths: Vec<Metapath>,
    pub cypher: Vec<String>,
    /// Answers the linker guesses; linked and checked against the graph, never trusted.
    pub draft_answers: Vec<String>,
    /// The linker considers the context sufficient.
    pub finish: bool,
    /// `metapaths` are a language model's, each confirmed by the graph from the linked
    /// entities (not the LLM-free ranking): the summarizer's rule answers with the ends
    /// of the paths that follow them.
    #[serde(default)]
    pub model_plan: bool,
    /// The chance, estimated by the learned reader, that the first of `metapaths`
    /// reaches the right answers; `None` when no reader estimated it (a model's plan,
    /// or a reader without a fitted confidence).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The first of `metapaths` is the learned reader's choice (it re-ranked the
    /// first stage's plans), not the first stage's word match.
    #[serde(default)]
    pub reader_plan: bool,
    /// A second reading of the question: the graph nodes the plan reaches that the
    /// learned reader ranks first among the same candidates, every one of them (at
    /// most [`MAX_READER_REACHES`]), so that the answer can be checked against it.
    /// `None` when it was not read (the reader re-ranked the plans itself, or estimated
    /// no `confidence`), or when that plan reaches more nodes, or only a sample of them
    /// is known.
    #[serde(default)]
    pub reader_reaches: Option<Vec<NodeId>>,
    /// The first of `metapaths`, when the learned reader chose it among plans the
    /// first stage's word match ranks equally first (it could not tell them apart):
    /// the summarizer prefers its paths among those its own reading ties. `None`
    /// otherwise (no tie, or the reader re-ranked the plans itself).
    #[serde(default)]
    pub reader_tie: Option<Metapath>,
}

impl Rpc for KgLinkRequest {
    const OP: &'static str = "link";
    const DEFAULT_ROLE: &'static str = Role::KG_LINKER;
    type Reply = KgLinkReply;
}
