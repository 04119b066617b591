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
//! To make a role runnable by name (`kgmesh agent --role R`, the embedded mode), add
//! its factory to [`registry::roles`].

mod actor;
mod bridge;
mod client;
mod context;
mod metrics;
pub mod registry;
mod spec;

use std::sync::Arc;

pub use bridge::{start_role, start_role_with, RoleHandle, StartOptions};
pub use client::Client;
pub use context::{chat_before, CallContext};
pub use spec::RoleSpec;

use kgmesh_bus::{Bus, BusError};
use kgmesh_models::{Embedder, LanguageModel};
use kgmesh_stores::{GraphStore, VectorIndex};

/// What a role may use. Built once per process and handed to every role factory;
/// cheap to clone. A factory takes what it needs and fails with
/// [`RoleBuildError::MissingDependency`] when something it requires is absent.
#[derive(Clone)]
pub struct AgentDeps {
    pub bus: Arc<dyn Bus>,
    pub graph: Option<Arc<dyn GraphStore>>,
    pub vectors: Option<Arc<dyn VectorIndex>>,
    pub llm: Option<Arc<dyn LanguageModel>>,
    /// The roles that use `llm` (`None`: every role that can).
    pub llm_roles: Option<Vec<String>>,
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Where the cache manager persists verified plans (a file, or JetStream KV).
    pub plan_store: Option<Arc<dyn crate::cache_manager::persist::PlanStore>>,
    /// The graph's name index, built on first use and shared by every role of the
    /// process (clones of these deps share it).
    pub names: Arc<crate::entity_linker::names::SharedNames>,
    /// How much the LLM-free retrieval tools return.
    pub retrieval: RetrievalSettings,
    /// The judge's, summarizer's, traverser's and cache manager's knobs.
    pub tuning: RoleTuning,
    /// The documents the text retriever searches (`kgmesh index --text`).
    pub text: Option<TextSource>,
}

/// A text index folder and how to search it.
#[derive(Debug, Clone, PartialEq)]
pub struct TextSource {
    pub dir: std::path::PathBuf,
    pub search: crate::text_retriever::retrieve::SearchSettings,
}

/// The knobs of the roles that have some, as the configuration sets them (`[judge]`,
/// `[summarizer]`, `[traverser]`, `[cache]`); the defaults are each role's own.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RoleTuning {
    pub judge: crate::judge::core::JudgeRule,
    pub summarizer: crate::summarizer::core::SummaryRule,
    /// The traverser's limits per step; its step count and model calls come from the
    /// question's budget.
    pub traverser: crate::traverser::core::TraverseConfig,
    pub cache: crate::cache_manager::core::CacheConfig,
}

/// How much the LLM-free retrieval tools return per call. Larger values retrieve more
/// (higher answer recall) at the price of a larger context for the judge and the LLM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetrievalSettings {
    /// Relation paths the LLM-free KG-Linker proposes per question.
    pub top_metapaths: usize,
    /// Triplets the scoring retriever returns at most (also capped by the request).
    pub scoring_top_k: usize,
    /// With an embedder: the path follower, the scoring retriever and the traverser
    /// score evidence by whole-question embedding similarity instead of lexically
    /// (the KG-Linker and the summarizer use word embeddings either way).
    pub embed_questions: bool,
    /// When the query executor writes grounded Cypher from the question.
    pub grounded_cypher: crate::query_executor::planner::GroundedMode,
}

impl Default for RetrievalSettings {
    fn default() -> Self {
        Self {
            top_metapaths: crate::kg_linker::core::LinkerConfig::default().top_metapaths,
            scoring_top_k: crate::scoring::core::ScoringConfig::default().top_k,
            embed_questions: false,
            grounded_cypher: Default::default(),
        }
    }
}

impl std::fmt::Debug for AgentDeps {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentDeps")
            .field("graph", &self.graph.is_some())
            .field("vectors", &self.vectors.is_some())
            .field("llm", &self.llm.is_some())
            .field("embedder", &self.embedder.is_some())
            .field("names", &self.names)
            .field("retrieval", &self.retrieval)
            .field("tuning", &self.tuning)
            .field("text", &self.text)
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
            plan_store: None,
            names: Arc::default(),
            retrieval: RetrievalSettings::default(),
            tuning: RoleTuning::default(),
            text: None,
        }
    }

    pub fn with_text(mut self, text: TextSource) -> Self {
        self.text = Some(text);
        self
    }

    pub fn with_retrieval(mut self, retrieval: RetrievalSettings) -> Self {
        self.retrieval = retrieval;
        self
    }

    pub fn with_tuning(mut self, tuning: RoleTuning) -> Self {
        self.tuning = tuning;
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

    pub fn with_plan_store(
        mut self,
        store: Arc<dyn crate::cache_manager::persist::PlanStore>,
    ) -> Self {
        self.plan_store = Some(store);
        self
    }

    /// Shares a name index built elsewhere instead of building one on first use.
    pub fn with_names(mut self, names: Arc<kgmesh_models::lexical::Gazetteer>) -> Self {
        self.names = Arc::new(crate::entity_linker::names::SharedNames::ready(names));
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
