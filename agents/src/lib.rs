//! The agent roles of kgmesh. Each role is one folder: a pure core (tested without a
//! bus), a thin actix actor that the runtime connects to the bus, and its
//! [`DESCRIPTOR`](echo::DESCRIPTOR) (name, kind, needs, configuration, factory).

pub mod registry;
pub mod runtime;
pub mod settings;
pub mod verbalize;

// The built-in roles: a folder each, registered by its line here (see `build.rs`).
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

// Every module above whose folder exports a `DESCRIPTOR` is a built-in role:
// `build.rs` lists them, and the registry reads the list.
include!(concat!(env!("OUT_DIR"), "/built_in.rs"));

#[cfg(test)]
mod testing;
