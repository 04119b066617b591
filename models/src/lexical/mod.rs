//! LLM-free linking, so kgmesh answers questions with no model configured: entity
//! mentions found by matching the question against the graph's names ([`Gazetteer`]),
//! and candidate relation paths scored against the question ([`paths`]), lexically or by
//! embedding similarity when an [`Embedder`](crate::Embedder) is available.
//!
//! Nothing here knows any particular graph or benchmark: the only inputs are the graph's
//! own names and relation names, plus a general English stop-word list.

pub mod gazetteer;
pub mod normalize;
pub mod paths;

pub use gazetteer::{Gazetteer, Mention, EXACT_SCORE};
pub use normalize::{normalize, tokens};
pub use paths::{score_paths, score_paths_lexical};
