//! Summarizer: final answers with the evidence they rest on.

use serde::{Deserialize, Serialize};

use super::{cache::RelationCue, context::Context, Rpc};
use crate::{
    graph::{Entity, Metapath},
    Role,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct SummarizeRequest {
    pub question: String,
    pub context: Context,
    /// Question entities (never an answer to their own question).
    pub topic_entities: Vec<Entity>,
    pub max_answers: u16,
    /// What the question's words meant in past verified plans (the plan cache's
    /// lexicon): the LLM-free rule prefers the ends of the paths they explain best.
    pub cues: Vec<RelationCue>,
    /// Relation paths chosen for this question that the rule trusts over its own
    /// reading: a language model's that the graph confirmed, or a replayed verified
    /// plan's. The ends of the evidence paths that follow one of them rank first.
    #[serde(default)]
    pub plan: Vec<Metapath>,
    /// Relation paths the rule prefers among those its own reading ranks equally
    /// first, and only there: the learned reader's choice among the KG-Linker's plans
    /// that its word match could not tell apart (`KgLinkReply::reader_tie`). Unlike
    /// `plan`, a preferred path is still set aside when its ends cannot be what is
    /// asked.
    #[serde(default)]
    pub preferred: Vec<Metapath>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Answer {
    pub text: String,
    /// The graph entity the answer names, when it is one.
    pub entity: Option<Entity>,
    pub score: f32,
    /// 0-based indices into the request context's evidence (an `AskReply`'s
    /// `evidence`); text for people numbers the same lines from 1.
    pub evidence: Vec<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct SummarizeReply {
    /// Best first; empty when the context does not answer the question.
    pub answers: Vec<Answer>,
    /// A sentence for people (or the "I don't know" explanation).
    pub explanation: String,
    /// The answers rest on a path that no word of the question names (at least one of
    /// its relations was chosen for what it reaches, not for what the question says):
    /// worth checking before use. The explanation says which path.
    #[serde(default)]
    pub low_confidence: bool,
    /// The summarizer's own estimate of the chance that the first answer is right, when
    /// it made one (answers read from document passages); `None` leaves the estimate to
    /// the coordinator (answers from the graph's paths).
    #[serde(default)]
    pub confidence: Option<f32>,
    /// The answers are given on a condition: the rule read them as far from the
    /// question, and the reply declines them ("I don't know") unless their confidence,
    /// which the coordinator estimates, reaches `below`. `None`: no condition.
    #[serde(default)]
    pub decline: Option<Decline>,
}

/// When a reply's answers are to be declined (`SummarizeReply::decline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Decline {
    /// The confidence the answers need to stand.
    pub below: f32,
    /// Why they might not, for people ("the path that best explains the question
    /// (inception) is far from its words by meaning …").
    pub why: String,
}

impl Rpc for SummarizeRequest {
    const OP: &'static str = "summarize";
    const DEFAULT_ROLE: &'static str = Role::SUMMARIZER;
    type Reply = SummarizeReply;
}
