//! LLM-free linking, so kgmesh answers questions with no model configured: entity
//! mentions found by matching the question against the graph's names ([`Gazetteer`]),
//! and the one text toolkit ([`text`]: words, stop words, stems) that linking, relevance
//! scoring, the plan cache and the summarizer share.
//!
//! Nothing here knows any particular graph or benchmark: the only inputs are the graph's
//! own names and relation names, plus a general English stop-word list.

pub mod gazetteer;
pub mod normalize;
pub mod text;

pub use gazetteer::{Gazetteer, Mention, EXACT_SCORE};
pub use normalize::{normalize, tokens};
