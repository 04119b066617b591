//! Cache manager (CacheRAG §4.2, §4.4): a semantic cache of verified retrieval plans.
//!
//! A plan that retrieved a verified answer is stored with the question it answered,
//! indexed by domain → aspect of the question's intent (ISR), and found again for new
//! questions by BM25 relevance and MMR diversity. Selected plans become few-shot
//! examples for the KG-Linker; a near-exact match (the same question with another
//! entity) is replayed directly, skipping the model. Users' feedback on answers counts
//! for or against the plan that answered, and a plan that keeps failing is dropped; a
//! verified plan changes only when distinct principals (or an admin) agree, and every
//! change is audited where the cache lives ([`audit`]).

pub mod audit;
pub mod core;
pub mod feedback;
pub mod lexicon;
pub mod persist;
pub mod role;
pub mod template;
pub mod warm;

pub use self::core::{CacheConfig, Lookup, PlanCache};

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Need, Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::CACHE_MANAGER,
    kind: RoleKind::Core,
    summary: "semantic cache of verified plans: few-shot examples and replay (CacheRAG)",
    smoke_test: false,
    uses_model: true,
    needs: Needs {
        graph: Need::Optional,
        // Its replicas share their plans there (embedded mode keeps them in memory
        // without `cache.path`).
        plan_store: Need::Required,
        ..Needs::NOTHING
    },
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
