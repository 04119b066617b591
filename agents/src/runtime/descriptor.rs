//! What a role says about itself: one [`RoleDescriptor`] per role, exported by its
//! folder as `DESCRIPTOR`. The registry, the command line's list of roles, the roles
//! that may use a model and the configuration reference are read from the descriptors.

use kgmesh_schemas::RoleKind;

use super::{AgentDeps, RoleBuildError, RoleSpec};

/// Builds a role's spec from the process's dependencies.
pub type RoleFactory = fn(&AgentDeps) -> Result<RoleSpec, RoleBuildError>;

/// A role: its name, what it is, what it needs, its configuration and its factory.
#[derive(Debug, Clone, Copy)]
pub struct RoleDescriptor {
    /// Its name on the bus (`kgmesh agent --role NAME`).
    pub name: &'static str,
    /// What it announces: a retriever (called every round) or a step of the round.
    pub kind: RoleKind,
    /// One line for `kgmesh agent --role help`.
    pub summary: &'static str,
    /// A role for smoke tests of a deployment (`echo`): not started in embedded mode and
    /// not listed among the roles a deployment runs.
    pub smoke_test: bool,
    /// It may use the language model: `llm.roles` may name it.
    pub uses_model: bool,
    /// What it takes from [`AgentDeps`] besides the bus and the models.
    pub needs: Needs,
    /// Its own section of the configuration, when it has one.
    pub config: Option<ConfigSection>,
    /// Builds it; the factory takes what it needs from the dependencies and captures it
    /// in its handlers.
    pub build: RoleFactory,
}

/// How much a role needs one of its dependencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Not used.
    Unused,
    /// Used when there is one; the role serves without it.
    Optional,
    /// The role does not do its work without one: its factory refuses (a graph, a text
    /// index), or `kgmesh agent` does not start it (a plan store its replicas share).
    Required,
}

impl Need {
    /// Used at all.
    pub fn is_used(self) -> bool {
        self != Need::Unused
    }
}

/// What a role takes from the process besides the bus and the models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Needs {
    /// A graph store (`graph.path` or `graph.bolt_uri`).
    pub graph: Need,
    /// An index of entity-name embeddings (`vectors.backend`).
    pub vectors: Need,
    /// A store of verified plans (`cache.path`, or JetStream KV in distributed mode).
    pub plan_store: Need,
    /// A text index (`text.index`).
    pub text_index: Need,
}

impl Needs {
    /// Nothing but the bus.
    pub const NOTHING: Needs = Needs {
        graph: Need::Unused,
        vectors: Need::Unused,
        plan_store: Need::Unused,
        text_index: Need::Unused,
    };

    /// A graph store and nothing else.
    pub const GRAPH: Needs = Needs {
        graph: Need::Required,
        ..Needs::NOTHING
    };
}

/// A role's own section of the configuration: `[section]`, and each key with its
/// meaning (the doc comment of its field in the role's config type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigSection {
    pub section: &'static str,
    pub keys: &'static [(&'static str, &'static str)],
}

impl ConfigSection {
    /// Each key as `section.key`, with its meaning on one line.
    pub fn meanings(&self) -> impl Iterator<Item = (String, &'static str)> + '_ {
        self.keys
            .iter()
            .map(|(key, meaning)| (format!("{}.{key}", self.section), meaning.trim()))
    }
}

/// Declares a role's config type: a struct whose fields are the keys of its section of
/// the configuration, read with serde (unknown keys refused, missing ones defaulted,
/// so the type implements [`Default`]). Each field's doc comment, one paragraph, is
/// also the key's meaning in the configuration reference: the type gets
/// `KEYS: &[(key, meaning)]` for its [`ConfigSection`].
macro_rules! role_config {
    (
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $(
                #[doc = $doc:literal]
                $(#[doc = $more:literal])*
                $field_vis:vis $field:ident : $ty:ty
            ),* $(,)?
        }
    ) => {
        $(#[$attr])*
        #[derive(serde::Serialize, serde::Deserialize)]
        #[serde(deny_unknown_fields, default)]
        $vis struct $name {
            $(
                #[doc = $doc]
                $(#[doc = $more])*
                $field_vis $field: $ty,
            )*
        }

        impl $name {
            /// Each key of the type's configuration section with its meaning.
            pub const KEYS: &'static [(&'static str, &'static str)] =
                &[$((stringify!($field), concat!($doc $(, $more)*))),*];
        }
    };
}
pub(crate) use role_config;
