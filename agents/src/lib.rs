//! The agent roles of kgmesh. Each role is one folder: a pure core (tested without a
//! bus) and a thin actix actor that the runtime connects to the bus.

pub mod runtime;
pub mod verbalize;

pub mod cache_manager;
pub mod echo;
pub mod entity_linker;
pub mod judge;
pub mod kg_linker;
pub mod path_follower;
pub mod pattern_matcher;
pub mod query_executor;
pub mod scoring;
pub mod summarizer;
pub mod text_retriever;
pub mod traverser;

/// The learned question reader, the KG-Linker's second stage.
pub use kg_linker::reader;

#[cfg(test)]
mod testing;
