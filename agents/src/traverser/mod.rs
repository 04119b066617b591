//! Agentic traverser (ByoKG-RAG Algorithm 1).

pub mod core;
pub mod role;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{ConfigSection, Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::AGENTIC_TRAVERSER,
    kind: RoleKind::Retriever,
    summary: "step-wise relation and entity selection from the linked entities",
    smoke_test: false,
    uses_model: true,
    needs: Needs::GRAPH,
    config: Some(ConfigSection {
        section: "traverser",
        keys: core::TraverseConfig::KEYS,
    }),
    build: role::role,
};

#[cfg(test)]
mod tests;
