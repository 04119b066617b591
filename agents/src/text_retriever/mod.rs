//! The text retriever (KET-RAG): documents indexed as chunks and passages with a
//! keyword bipartite graph and a KG skeleton read from the most central chunks
//! ([`build`], [`skeleton`]), searched through an entity channel and a keyword channel
//! ([`retrieve`]); [`role`] serves it on the bus.

pub mod build;
pub mod chunk;
pub mod retrieve;
pub mod role;
pub mod skeleton;
use kgmesh_schemas::{Role, RoleKind};

use crate::runtime::{Need, Needs, RoleDescriptor};

/// A text index folder and how to search it: what the role answers from
/// (`AgentDeps::with`).
#[derive(Debug, Clone, PartialEq)]
pub struct TextSource {
    pub dir: std::path::PathBuf,
    pub search: retrieve::SearchSettings,
}

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::TEXT_RETRIEVER,
    kind: RoleKind::Retriever,
    summary: "passages of indexed documents and facts of their KG skeleton, by keyword and entity channels (KET-RAG)",
    smoke_test: false,
    uses_model: false,
    needs: Needs {
        text_index: Need::Required,
        ..Needs::NOTHING
    },
    config: None,
    build: role::role,
};

#[cfg(test)]
mod tests;
