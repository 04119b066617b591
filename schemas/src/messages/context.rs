//! Evidence: what retrievers find and what judges, summarizers and models read.

use serde::{Deserialize, Serialize};

use crate::graph::{Path, Rows, Triple};

/// One piece of retrieved evidence and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Evidence {
    /// Role that produced it.
    pub source: String,
    /// Relevance to the question as the producer scored it (higher is better).
    pub score: f32,
    pub item: EvidenceItem,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub enum EvidenceItem {
    Triple(Triple),
    Path(Path),
    Query {
        cypher: String,
        rows: Rows,
        /// The query was written from the question itself (grounded Cypher: chosen
        /// among the typed queries that exist around the question's values), so its
        /// first column, in row order, is the answer. False for a query run as a plan
        /// asked (the KG-Linker's, a replayed one), whose rows are evidence to weigh.
        #[serde(default)]
        grounded: bool,
    },
    /// A passage of an indexed document, or a fact a model read from one.
    Excerpt(Excerpt),
}

/// Text from an indexed document, cited by file and byte offset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Excerpt {
    /// The passage's id in its index (`p<number>`), or the fact's (`f<number>`).
    pub id: String,
    /// The file as it was given to `kgmesh index`.
    pub file: String,
    /// Byte range of the passage in the file (for a fact: of the passage it was read
    /// from).
    pub offset: u64,
    pub len: u32,
    /// The passage, or the fact as `head | relation | tail`.
    pub text: String,
    /// Which retrieval channel found it: `keyword` or `skeleton`.
    pub channel: String,
}

impl Excerpt {
    /// `file:offset`, how answers cite it.
    pub fn citation(&self) -> String {
        format!("{}:{}", self.file, self.offset)
    }
}

/// Everything retrieved for a question so far, plus notes about what failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "json-schema", derive(schemars::JsonSchema))]
pub struct Context {
    pub evidence: Vec<Evidence>,
    /// Human-readable notes (a retriever timed out, a query was refused, …). Never
    /// passed off as evidence.
    pub notes: Vec<String>,
}

impl Context {
    /// Each evidence line's score divided by the best score of its source (when that is
    /// positive), in evidence order: retrievers score on their own scales, so only
    /// these compare across sources.
    pub fn normalized_scores(&self) -> Vec<f32> {
        let mut best: std::collections::HashMap<&str, f32> = std::collections::HashMap::new();
        for evidence in &self.evidence {
            let top = best.entry(evidence.source.as_str()).or_insert(f32::MIN);
            *top = top.max(evidence.score);
        }
        self.evidence
            .iter()
            .map(|evidence| match best.get(evidence.source.as_str()) {
                Some(&top) if top > 0.0 => evidence.score / top,
                _ => evidence.score,
            })
            .collect()
    }
}
