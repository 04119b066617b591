//! Pattern matcher (SimGRAG): the question as a graph pattern, matched to the top-k
//! subgraphs by graph semantic distance, as a retriever on the bus.
//!
//! [`pattern`] builds the pattern (LLM-free: relation phrases cut around the named
//! entities), [`search`] is the paper's pruned top-k subgraph search over a small
//! graph read around the named entities, [`core`] ties them together and [`role`] serves
//! it.

pub mod core;
pub mod pattern;
pub mod role;
pub mod search;

use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Needs, RoleDescriptor};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::PATTERN_MATCHER,
    kind: RoleKind::Retriever,
    summary:
        "top-k subgraphs closest to the question's pattern by graph semantic distance (SimGRAG)",
    smoke_test: false,
    uses_model: true,
    needs: Needs::GRAPH,
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
