//! Query executor (ByoKG-RAG §3.4, GraphRAFT).

pub mod core;
pub mod grounded;
pub mod planner;
pub mod role;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Need, Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::QUERY_EXECUTOR,
    kind: RoleKind::Retriever,
    summary: "validated read-only Cypher with row/time budgets, or repair hints",
    smoke_test: false,
    // It asks a model for its grounded Cypher pick only where every role may use the
    // model (`AgentDeps::llm_roles` unset): `llm.roles` does not offer it.
    uses_model: false,
    needs: Needs {
        graph: Need::Required,
        plan_store: Need::Optional,
        ..Needs::NOTHING
    },
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
