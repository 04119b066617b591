//! The agent roles of kgmesh. Each role is one folder: a pure core (tested without a
//! bus), a thin actix actor that the runtime connects to the bus, and its
//! [`DESCRIPTOR`](echo::DESCRIPTOR) (name, kind, needs, configuration, factory).

pub mod registry;
pub mod runtime;
pub mod settings;
pub mod verbalize;

pub mod cache_manager;
pub mod echo;
pub mod entity_linker;
pub mod judge;
pub mod kg_linker;
pub mod path_follower;
pub mod pattern_matcher;
pub mod qa;
pub mod query_executor;
pub mod reader;
pub mod scoring;
pub mod summarizer;
pub mod text_retriever;
pub mod traverser;

use runtime::RoleDescriptor;

/// The built-in roles, in the order `kgmesh agent --role help` lists them
/// ([`registry`]). A new role is its folder (with its `pub mod` above) and its line here.
const BUILT_IN: &[&RoleDescriptor] = &[
    &echo::DESCRIPTOR,
    &judge::DESCRIPTOR,
    &cache_manager::DESCRIPTOR,
    &summarizer::DESCRIPTOR,
    &kg_linker::DESCRIPTOR,
    &entity_linker::DESCRIPTOR,
    &path_follower::DESCRIPTOR,
    &query_executor::DESCRIPTOR,
    &traverser::DESCRIPTOR,
    &pattern_matcher::DESCRIPTOR,
    &text_retriever::DESCRIPTOR,
    &scoring::DESCRIPTOR,
];

#[cfg(test)]
mod testing;
