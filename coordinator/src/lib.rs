//! The kgmesh coordinator: turns a question into answers with evidence by driving the
//! roles on a bus through ByoKG-RAG's refinement rounds and CacheRAG's bounded
//! expansions, under budgets it enforces (rounds, depth, breadth, LLM calls, tokens,
//! result rows, deadline).
//!
//! It knows roles only by what they announce on the bus: retrievers are discovered
//! and all called in parallel each round, so a new retrieval strategy needs no change
//! here; in-process and NATS deployments look the same to it.
//!
//! ```no_run
//! # async fn demo(bus: std::sync::Arc<dyn kgmesh_bus::Bus>) {
//! use kgmesh_coordinator::{Coordinator, CoordinatorConfig};
//! use kgmesh_schemas::messages::ask::{AskOptions, AskRequest};
//! let coordinator = Coordinator::new(bus, CoordinatorConfig::default());
//! let reply = coordinator
//!     .ask(AskRequest { question: "who directed Heat".into(), options: AskOptions::default() })
//!     .await
//!     .expect("roles are on the bus");
//! println!("{:?} (partial: {})", reply.answers, reply.partial);
//! # }
//! ```

pub mod auth;
mod calls;
pub mod confidence;
pub mod config;
pub mod console;
pub mod context;
mod coordinator;
mod cypher;
pub mod directory;
mod error;
pub mod feedback;
mod hedge;
pub mod http;
pub mod ledger;
mod metrics;
pub mod recent;
mod rounds;
mod stages;
pub mod tls;

pub use config::{CoordinatorConfig, HedgePolicy};
pub use coordinator::Coordinator;
pub use directory::{AllowedRoles, RoleDirectory, RoleSnapshot, RoleSummary};
pub use error::{CoordinatorError, MAX_ANSWERS, MAX_ROUNDS, MAX_TIMEOUT_MS, REQUIRED_ROLES};
pub use feedback::{FeedbackReply, FeedbackRequest, FeedbackSubject};
pub use recent::RecentQuestions;
