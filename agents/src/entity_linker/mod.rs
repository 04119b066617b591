//! Entity linker (ByoKG-RAG §3.2).

pub mod core;
pub mod names;
pub mod role;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Need, Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::ENTITY_LINKER,
    kind: RoleKind::Core,
    summary: "mentions to graph ids: trigram fuzzy index and/or name embeddings",
    smoke_test: false,
    uses_model: false,
    needs: Needs {
        graph: Need::Required,
        vectors: Need::Optional,
        ..Needs::NOTHING
    },
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
