//! Every role this build can run, by name. `kgmesh agent --role R` and the embedded
//! mode both start roles from here.
//!
//! Adding a role is one line in [`roles`]: its name, a one-line summary, and its
//! factory (`fn(&AgentDeps) -> Result<RoleSpec, RoleBuildError>`), which takes what it
//! needs from the dependencies and captures it in its handlers.

use kgmesh_schemas::Role;

use super::{
    start_role_with, AgentDeps, RoleBuildError, RoleHandle, RoleSpec, RuntimeError, StartOptions,
};

/// Builds a role's spec from the process's dependencies.
pub type RoleFactory = fn(&AgentDeps) -> Result<RoleSpec, RoleBuildError>;

/// A role this build can run.
#[derive(Debug, Clone, Copy)]
pub struct RoleEntry {
    pub name: &'static str,
    pub summary: &'static str,
    pub build: RoleFactory,
}

/// The roles of this build.
pub fn roles() -> Vec<RoleEntry> {
    vec![
        RoleEntry {
            name: Role::ECHO,
            summary: "answers with the text it got (smoke tests)",
            build: crate::echo::role,
        },
        RoleEntry {
            name: Role::JUDGE,
            summary: "decides COMPLETE or a bounded depth/breadth expansion (CacheRAG dispatcher)",
            build: crate::judge::role,
        },
        RoleEntry {
            name: Role::CACHE_MANAGER,
            summary: "semantic cache of verified plans: few-shot examples and replay (CacheRAG)",
            build: crate::cache_manager::role::role,
        },
        RoleEntry {
            name: Role::SUMMARIZER,
            summary: "final answers citing their evidence; says when it does not know",
            build: crate::summarizer::role,
        },
        RoleEntry { name: Role::KG_LINKER, summary: "entities, relation paths, Cypher and draft answers for a question (model or LLM-free)", build: crate::kg_linker::role::role },
        RoleEntry { name: Role::ENTITY_LINKER, summary: "mentions to graph ids: trigram fuzzy index and/or name embeddings", build: crate::entity_linker::role::role },
        RoleEntry { name: Role::PATH_FOLLOWER, summary: "metapaths and bounded shortest paths; depth/breadth expansion operators", build: crate::path_follower::role::role },
        RoleEntry { name: Role::QUERY_EXECUTOR, summary: "validated read-only Cypher with row/time budgets, or repair hints", build: crate::query_executor::role::role },
        RoleEntry { name: Role::AGENTIC_TRAVERSER, summary: "step-wise relation and entity selection from the linked entities", build: crate::traverser::role::role },
        RoleEntry { name: Role::PATTERN_MATCHER, summary: "top-k subgraphs closest to the question's pattern by graph semantic distance (SimGRAG)", build: crate::pattern_matcher::role::role },
        RoleEntry { name: Role::TEXT_RETRIEVER, summary: "passages of indexed documents and facts of their KG skeleton, by keyword and entity channels (KET-RAG)", build: crate::text_retriever::role::role },
        RoleEntry { name: Role::SCORING_RETRIEVER, summary: "top-k triplets within L hops by decomposed similarity", build: crate::scoring::role::role },
    ]
}

/// Names of the roles of this build, in registration order.
pub fn names() -> Vec<&'static str> {
    roles().iter().map(|entry| entry.name).collect()
}

/// The entry named `name`, or an error listing the known ones.
pub fn find(name: &str) -> Result<RoleEntry, RoleBuildError> {
    roles()
        .into_iter()
        .find(|entry| entry.name == name)
        .ok_or_else(|| RoleBuildError::UnknownRole {
            name: name.to_owned(),
            known: names().iter().map(|n| (*n).to_owned()).collect(),
        })
}

/// Builds the role named `name` from `deps` and starts it on `deps.bus`.
pub async fn start(
    name: &str,
    deps: &AgentDeps,
    options: StartOptions,
) -> Result<RoleHandle, RuntimeError> {
    let entry = find(name)?;
    let spec = (entry.build)(deps)?;
    start_role_with(deps.bus.clone(), spec, options).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_valid_roles() {
        let names = names();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "duplicate role names: {names:?}");
        for name in names {
            assert!(Role::new(name).is_ok(), "{name} is not a valid role name");
        }
    }

    #[test]
    fn unknown_role_lists_the_known_ones() {
        let error = find("no-such-role").unwrap_err();
        let text = error.to_string();
        assert!(text.contains("no-such-role"), "{text}");
        assert!(text.contains(Role::ECHO), "{text}");
    }
}
