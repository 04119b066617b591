//! The agent runtime: turns a role's typed handlers into a bus service.
//!
//! A role is declared as a [`RoleSpec`]: what it announces ([`kgmesh_schemas::RoleInfo`])
//! and one async handler per operation, `Fn(CallContext, Request) -> Result<Reply,
//! AgentError>`. [`start_role`] runs the role as an actix actor and serves every
//! operation on the bus in the role's queue group, so N replicas share the load. The
//! runtime owns everything around the handler:
//!
//! - decoding (an undecodable payload or an unknown schema version gets a typed error
//!   reply; the handler never sees it),
//! - the question's deadline (checked on arrival and enforced while the handler runs),
//! - panics (a panicking handler answers `AgentError::Internal`, the role keeps serving),
//! - the reply's cost (what the handler recorded on its [`CallContext`], plus time),
//! - graceful shutdown ([`RoleHandle::stop`] stops taking requests and drains).
//!
//! Callers use [`Client`], which retries on timeouts and missing responders.
//!
//! ```
//! use std::{sync::Arc, time::Duration};
//!
//! use kgmesh_agents::runtime::{start_role, CallContext, Client, RoleSpec};
//! use kgmesh_bus::LocalBus;
//! use kgmesh_schemas::{
//!     messages::echo::{EchoReply, EchoRequest},
//!     AgentError, Budget, Meta, QuestionId, Role, RoleKind,
//! };
//!
//! // A role is a name, a kind, and a handler per operation. State the handlers need
//! // (a pure core, store handles) is captured, usually in an `Arc`.
//! let shout = Arc::new(|text: &str| text.to_uppercase());
//! let spec = RoleSpec::new(Role::new("shouter").unwrap(), RoleKind::Core).op(
//!     move |ctx: CallContext, request: EchoRequest| {
//!         let shout = shout.clone();
//!         async move {
//!             ctx.check_deadline()?;
//!             ctx.record_graph(0, Duration::ZERO);
//!             if request.text.is_empty() {
//!                 return Err(AgentError::BadRequest { detail: "empty text".into() });
//!             }
//!             Ok(EchoReply { text: shout(&request.text), served_by: ctx.served_by() })
//!         }
//!     },
//! );
//!
//! tokio::runtime::Runtime::new().unwrap().block_on(async {
//!     let bus = Arc::new(LocalBus::new());
//!     let handle = start_role(bus.clone(), spec).await.unwrap();
//!
//!     let client = Client::new(bus);
//!     let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
//!     let role = Role::new("shouter").unwrap();
//!     let (reply, cost) = client
//!         .call(&role, &meta, &EchoRequest { text: "hi".into() })
//!         .await
//!         .unwrap();
//!     assert_eq!(reply.text, "HI");
//!     assert_eq!(cost.bus_messages, 1);
//!
//!     handle.stop(Duration::from_secs(5)).await;
//! });
//! ```
//!
//! A role's folder exports its [`RoleDescriptor`] (name, kind, needs, configuration,
//! factory); the registry of the crate (`kgmesh_agents::registry`) makes the roles it
//! lists runnable by name (`kgmesh agent --role R`, the embedded mode).

mod actor;
mod bridge;
mod client;
mod context;
mod descriptor;
mod metrics;
mod retriever;
mod spec;
mod values;

use std::{any::Any, sync::Arc};

pub use bridge::{start_role, start_role_with, RoleHandle, StartOptions};
pub use client::Client;
pub use context::{chat_before, CallContext};
pub(crate) use descriptor::role_config;
pub use descriptor::{ConfigSection, Need, Needs, RoleDescriptor, RoleFactory};
pub use retriever::{evidence, retriever_spec, RetrieveCall, Retriever};
pub use spec::RoleSpec;

use kgmesh_bus::{Bus, BusError};
use kgmesh_models::{Embedder, LanguageModel};
use kgmesh_stores::{GraphStore, VectorIndex};
use parking_lot::Mutex;

use values::Values;

/// What a role may use. Built once per process and handed to every role factory;
/// cheap to clone. A factory takes what it needs and fails with
/// [`RoleBuildError::MissingDependency`] when something it requires is absent.
///
/// Besides the stores and models every role knows, the dependencies carry values by
/// type that the roles define and the runtime does not know: a role's settings (its
/// config type, [`Self::setting`]), handles such as a plan store ([`Self::get`]), and
/// values built once and shared by every role of the process ([`Self::shared`]).
#[derive(Clone)]
pub struct AgentDeps {
    pub bus: Arc<dyn Bus>,
    pub graph: Option<Arc<dyn GraphStore>>,
    pub vectors: Option<Arc<dyn VectorIndex>>,
    pub llm: Option<Arc<dyn LanguageModel>>,
    /// The roles that use `llm` (`None`: every role that can).
    pub llm_roles: Option<Vec<String>>,
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Settings and handles, one per type ([`Self::with`]).
    values: Values,
    /// Values built on first use and shared by every role of the process: clones of
    /// these deps share them ([`Self::shared`]).
    shared: Arc<Mutex<Values>>,
}

impl std::fmt::Debug for AgentDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDeps")
            .field("graph", &self.graph.is_some())
            .field("vectors", &self.vectors.is_some())
            .field("llm", &self.llm.is_some())
            .field("embedder", &self.embedder.is_some())
            .field("values", &self.values)
            .field("shared", &*self.shared.lock())
            .finish()
    }
}

impl AgentDeps {
    /// Only a bus; add the rest with the `with_*` methods.
    pub fn new(bus: Arc<dyn Bus>) -> Self {
        Self {
            bus,
            graph: None,
            vectors: None,
            llm: None,
            llm_roles: None,
            embedder: None,
            values: Values::default(),
            shared: Arc::default(),
        }
    }

    /// Gives the roles `value`, which they read by its type: a role's settings (its
    /// config type) or a handle (a plan store). A second value of one type replaces the
    /// first.
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.values.insert(Arc::new(value));
        self
    }

    /// The value of type `T` given with [`Self::with`].
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values.get::<T>()
    }

    /// The settings of type `T` given with [`Self::with`], else their defaults.
    pub fn setting<T: Any + Send + Sync + Clone + Default>(&self) -> T {
        self.get::<T>().cloned().unwrap_or_default()
    }

    /// The process's one `T`: the one given with [`Self::with_shared`], or else one made
    /// on first use and shared by every role built from these deps or their clones.
    pub fn shared<T: Any + Send + Sync + Default>(&self) -> Arc<T> {
        let mut shared = self.shared.lock();
        match shared.get_arc::<T>() {
            Some(value) => value,
            None => {
                let value = Arc::new(T::default());
                shared.insert(value.clone());
                value
            }
        }
    }

    /// Shares `value` as the process's one `T` ([`Self::shared`]) instead of one made on
    /// first use. Clones made before keep what they shared.
    pub fn with_shared<T: Any + Send + Sync>(mut self, value: Arc<T>) -> Self {
        let mut shared = self.shared.lock().clone();
        shared.insert(value);
        self.shared = Arc::new(Mutex::new(shared));
        self
    }

    pub fn with_graph(mut self, graph: Arc<dyn GraphStore>) -> Self {
        self.graph = Some(graph);
        self
    }

    pub fn with_vectors(mut self, vectors: Arc<dyn VectorIndex>) -> Self {
        self.vectors = Some(vectors);
        self
    }

    pub fn with_llm(mut self, llm: Arc<dyn LanguageModel>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Only these roles use the language model; the others run their LLM-free
    /// strategy even when a model is configured.
    pub fn with_llm_roles(mut self, roles: Vec<String>) -> Self {
        self.llm_roles = Some(roles);
        self
    }

    /// The language model, when there is one and `role` may use it.
    pub fn llm_for(&self, role: &str) -> Option<Arc<dyn LanguageModel>> {
        let allowed = self
            .llm_roles
            .as_ref()
            .is_none_or(|roles| roles.iter().any(|r| r == role));
        self.llm.clone().filter(|_| allowed)
    }

    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The graph store, or the error a factory returns without one.
    pub fn require_graph(&self, role: &str) -> Result<Arc<dyn GraphStore>, RoleBuildError> {
        self.graph.clone().ok_or_else(|| {
            RoleBuildError::missing(role, "a graph store (graph.path or graph.bolt_uri)")
        })
    }

    pub fn require_vectors(&self, role: &str) -> Result<Arc<dyn VectorIndex>, RoleBuildError> {
        self.vectors
            .clone()
            .ok_or_else(|| RoleBuildError::missing(role, "a vector index"))
    }

    pub fn require_llm(&self, role: &str) -> Result<Arc<dyn LanguageModel>, RoleBuildError> {
        self.llm
            .clone()
            .ok_or_else(|| RoleBuildError::missing(role, "a language model (llm.base_url)"))
    }

    pub fn require_embedder(&self, role: &str) -> Result<Arc<dyn Embedder>, RoleBuildError> {
        self.embedder
            .clone()
            .ok_or_else(|| RoleBuildError::missing(role, "an embedder (embedder.kind)"))
    }

    /// A [`Client`] on this bus with default timeouts and retries.
    pub fn client(&self) -> Client {
        Client::new(self.bus.clone())
    }
}

/// Why a role could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoleBuildError {
    #[error("unknown role {name:?}; known roles: {}", known.join(", "))]
    UnknownRole { name: String, known: Vec<String> },
    #[error("role {role} needs {dependency}")]
    MissingDependency { role: String, dependency: String },
    #[error("role {role}: {detail}")]
    Invalid { role: String, detail: String },
}

impl RoleBuildError {
    pub fn missing(role: &str, dependency: &str) -> Self {
        RoleBuildError::MissingDependency {
            role: role.to_owned(),
            dependency: dependency.to_owned(),
        }
    }
}

/// Why a role could not be started.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Build(#[from] RoleBuildError),
    #[error("invalid role: {0}")]
    InvalidRole(String),
    #[error("cannot serve the role: {0}")]
    Bus(#[from] BusError),
    #[error("cannot start the role's actor: {0}")]
    Actor(String),
}

#[cfg(test)]
mod tests;
