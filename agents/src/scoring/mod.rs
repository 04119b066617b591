//! Scoring retriever (ByoKG-RAG App. A) and the question-relevance helpers every
//! retriever shares.

pub mod answer_type;
pub mod core;
pub mod relevance;
pub mod role;
pub mod text;

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use kgmesh_schemas::{AgentError, Role, RoleKind};
use kgmesh_stores::StoreError;

use crate::{
    runtime::{AgentDeps, Needs, RoleDescriptor},
    settings::RetrievalSettings,
};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::SCORING_RETRIEVER,
    kind: RoleKind::Retriever,
    summary: "top-k triplets within L hops by decomposed similarity",
    smoke_test: false,
    uses_model: false,
    needs: Needs::GRAPH,
    config: None,
    build: role::role,
};

/// Texts embedded per process and kept for reuse (relation and node names).
pub const TEXT_VECTOR_CACHE: usize = 200_000;

/// The process's embedding caches, one per embedder, made on first use: every role built
/// from the same deps (or their clones) with the same embedder reads and fills one, so a
/// text one role embedded (a relation's name, a word of the question) is not embedded
/// again by the next role that reads the question.
#[derive(Default)]
struct SharedTextVectors(parking_lot::Mutex<Vec<Arc<relevance::TextVectors>>>);

/// The embedding cache a role uses when the process has an embedder (shared by the
/// process's roles that use the same embedder).
pub(crate) fn text_vectors(deps: &AgentDeps) -> Option<Arc<relevance::TextVectors>> {
    let embedder = deps.embedder.clone()?;
    let shared = deps.shared::<SharedTextVectors>();
    let mut caches = shared.0.lock();
    if let Some(cache) = caches.iter().find(|c| Arc::ptr_eq(c.embedder(), &embedder)) {
        return Some(cache.clone());
    }
    let cache = Arc::new(relevance::TextVectors::new(embedder, TEXT_VECTOR_CACHE));
    caches.push(cache.clone());
    Some(cache)
}

/// The embedding cache of a role that scores evidence by whole-question similarity (the
/// path follower, the scoring retriever, the traverser): only when the process has an
/// embedder and `retrieval.embed_questions` asks for it. Otherwise these roles score
/// lexically, which on every dev set answered as well or better and 10-50 times faster
/// (docs/evaluation.md).
pub(crate) fn question_vectors(deps: &AgentDeps) -> Option<Arc<relevance::TextVectors>> {
    if !deps.setting::<RetrievalSettings>().embed_questions {
        return None;
    }
    text_vectors(deps)
}

/// A store failure as the wire sees it.
pub(crate) fn store_error(error: StoreError) -> AgentError {
    match error {
        StoreError::Timeout { millis } => AgentError::Timeout {
            detail: format!("graph store call exceeded {millis} ms or the question's deadline"),
        },
        StoreError::InvalidQuery { reason, hint } => AgentError::InvalidQuery { reason, hint },
        StoreError::NotFound { what } => AgentError::BadRequest {
            detail: format!("{what} not found"),
        },
        other => AgentError::Unavailable {
            detail: other.to_string(),
        },
    }
}
