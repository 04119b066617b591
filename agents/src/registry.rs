//! Every role this build can run, by name. `kgmesh agent --role R` and the embedded
//! mode both start roles from here.
//!
//! A role is its folder, which exports its [`RoleDescriptor`] as `DESCRIPTOR`, and its
//! `pub mod` line in `agents/src/lib.rs`; `agents/build.rs` lists every such module, by
//! name, for [`roles`].

use crate::runtime::{
    start_role_with, AgentDeps, RoleBuildError, RoleDescriptor, RoleHandle, RuntimeError,
    StartOptions,
};

/// The roles of this build, by module name.
pub fn roles() -> &'static [&'static RoleDescriptor] {
    crate::BUILT_IN
}

/// Names of the roles of this build, by module name.
pub fn names() -> Vec<&'static str> {
    roles().iter().map(|role| role.name).collect()
}

/// The role named `name`, or an error listing the known ones.
pub fn find(name: &str) -> Result<&'static RoleDescriptor, RoleBuildError> {
    roles()
        .iter()
        .find(|role| role.name == name)
        .copied()
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
    let role = find(name)?;
    let spec = (role.build)(deps)?;
    start_role_with(deps.bus.clone(), spec, options).await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kgmesh_bus::LocalBus;
    use kgmesh_schemas::Role;

    use super::*;
    use crate::runtime::Need;

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

    #[tokio::test]
    async fn each_role_is_what_its_descriptor_says() {
        for role in roles() {
            // With only a bus, a role builds unless its factory requires a graph or a
            // text index.
            let bare = AgentDeps::new(Arc::new(LocalBus::new()));
            let requires =
                role.needs.graph == Need::Required || role.needs.text_index == Need::Required;
            match (role.build)(&bare) {
                Ok(spec) => {
                    assert!(!requires, "{} builds without what it requires", role.name);
                    assert_eq!(spec.info().role.as_str(), role.name);
                    assert_eq!(spec.info().kind, role.kind, "{}", role.name);
                }
                Err(RoleBuildError::MissingDependency { role: name, .. }) => {
                    assert!(requires, "{} requires more than it says", role.name);
                    assert_eq!(name, role.name);
                }
                Err(error) => panic!("{}: {error}", role.name),
            }
            if let Some(config) = role.config {
                assert!(!config.keys.is_empty(), "{}", role.name);
                for (key, meaning) in config.meanings() {
                    assert!(
                        !meaning.is_empty() && !meaning.contains('\n'),
                        "{key}: a meaning is one non-empty line"
                    );
                }
            }
        }
    }
}
