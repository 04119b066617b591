//! Settings several roles share. A role's own settings are its config type, in its
//! folder; each reaches the roles through [`crate::runtime::AgentDeps::with`].

/// Relation paths the LLM-free KG-Linker proposes per question, unless configured.
pub const DEFAULT_TOP_METAPATHS: usize = 5;

/// Triplets the scoring retriever returns at most, unless configured.
pub const DEFAULT_SCORING_TOP_K: usize = 30;

/// When the query executor writes grounded Cypher from the question
/// (`retrieval.grounded_cypher`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GroundedMode {
    /// On property graphs (nodes with labels or properties besides their names).
    #[default]
    Auto,
    On,
    Off,
}

/// How much the LLM-free retrieval tools return per call. Larger values retrieve more
/// (higher answer recall) at the price of a larger context for the judge and the LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrievalSettings {
    /// Relation paths the LLM-free KG-Linker proposes per question.
    pub top_metapaths: usize,
    /// Triplets the scoring retriever returns at most (also capped by the request).
    pub scoring_top_k: usize,
    /// With an embedder: the path follower, the scoring retriever and the traverser
    /// score evidence by whole-question embedding similarity instead of lexically
    /// (the KG-Linker and the summarizer use word embeddings either way).
    pub embed_questions: bool,
    /// When the query executor writes grounded Cypher from the question.
    pub grounded_cypher: GroundedMode,
}

impl Default for RetrievalSettings {
    fn default() -> Self {
        Self {
            top_metapaths: DEFAULT_TOP_METAPATHS,
            scoring_top_k: DEFAULT_SCORING_TOP_K,
            embed_questions: false,
            grounded_cypher: Default::default(),
        }
    }
}
