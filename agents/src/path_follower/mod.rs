//! Path follower (ByoKG-RAG §3.3) and the bounded expansion operators (CacheRAG §4.3).

pub mod core;
pub mod role;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::PATH_FOLLOWER,
    kind: RoleKind::Retriever,
    summary: "metapaths and bounded shortest paths; depth/breadth expansion operators",
    smoke_test: false,
    uses_model: false,
    needs: Needs::GRAPH,
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
