//! KG-Linker (ByoKG-RAG §3.1).

pub mod core;
pub mod reader;
pub mod role;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::KG_LINKER,
    kind: RoleKind::Core,
    summary:
        "entities, relation paths, Cypher and draft answers for a question (model or LLM-free)",
    smoke_test: false,
    uses_model: true,
    needs: Needs::GRAPH,
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
