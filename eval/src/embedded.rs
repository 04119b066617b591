//! The embedded answerer: every role in this process on the in-process bus, and one
//! coordinator asked concurrently. Whoever configures the roles starts them (`kgmesh
//! eval` starts them exactly as `kgmesh ask` does) and says what the report records of
//! the configuration.

use std::{future::Future, path::PathBuf, sync::Arc, time::Instant};

use async_trait::async_trait;
use kgmesh_bus::{Bus, LocalBus};
use kgmesh_coordinator::{Coordinator, CoordinatorConfig};
use kgmesh_schemas::messages::ask::{AskReply, AskRequest};
use tokio::sync::Mutex;

use super::answerer::{AnswerError, Answerer, AnswererConfig};

/// The roles an [`EmbeddedAnswerer`] asks, running on its bus.
#[async_trait]
pub trait RunningRoles: Send {
    /// The names of the roles started, for the report.
    fn role_names(&self) -> Vec<String>;
    /// Stops every role.
    async fn stop(self: Box<Self>);
}

pub struct EmbeddedAnswerer {
    coordinator: Coordinator,
    roles: Mutex<Option<Box<dyn RunningRoles>>>,
    description: AnswererConfig,
}

impl EmbeddedAnswerer {
    /// Starts the roles with `start_roles` on a new in-process bus, and a coordinator
    /// configured by `coordinator` on the same bus. `description` is what the report
    /// says about the system's configuration; the roles started, the k values and the
    /// time taken to start are added to it here.
    pub async fn start<F, Fut>(
        start_roles: F,
        coordinator: CoordinatorConfig,
        description: AnswererConfig,
    ) -> Result<Self, AnswerError>
    where
        F: FnOnce(Arc<dyn Bus>) -> Fut,
        Fut: Future<Output = anyhow::Result<Box<dyn RunningRoles>>>,
    {
        let started = Instant::now();
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let roles = start_roles(bus.clone())
            .await
            .map_err(|error| AnswerError::Unavailable(format!("{error:#}")))?;
        let coordinator = Coordinator::new(bus, coordinator);
        let mut description = description;
        description.roles = roles.role_names();
        description.k_values = Some(k_values(coordinator.config()));
        description.setup_ms = Some(started.elapsed().as_secs_f64() * 1e3);
        if !description
            .roles
            .iter()
            .any(|role| role == kgmesh_schemas::Role::CACHE_MANAGER)
        {
            description.cache = "none (no cache-manager role in this build)".to_owned();
        }
        Ok(Self {
            coordinator,
            roles: Mutex::new(Some(roles)),
            description,
        })
    }

    /// Stops the roles (the run is over).
    pub async fn stop(&self) {
        if let Some(roles) = self.roles.lock().await.take() {
            roles.stop().await;
        }
    }
}

#[async_trait]
impl Answerer for EmbeddedAnswerer {
    async fn ask(&self, request: AskRequest) -> Result<AskReply, AnswerError> {
        self.coordinator
            .ask(request)
            .await
            .map_err(|error| AnswerError::Failed(error.to_string()))
    }

    fn describe(&self) -> AnswererConfig {
        self.description.clone()
    }
}

/// The knobs the papers call k: linking top-m, evidence per retriever, answers,
/// plan-cache examples, frontier and breadth (K_degree), depth.
fn k_values(config: &CoordinatorConfig) -> serde_json::Value {
    serde_json::json!({
        "top_m": config.top_m,
        "link_mode": format!("{:?}", config.link_mode),
        "max_evidence_per_retriever": config.max_evidence_per_retriever,
        "max_answers": config.max_answers,
        "cache_examples": config.cache_examples,
        "max_frontier": config.max_frontier,
        "breadth_k_degree": config.budget.breadth,
        "depth": config.budget.depth.get(),
        "rounds": config.budget.rounds,
        "question_timeout_ms": config.question_timeout.as_millis() as u64,
    })
}

/// The plan cache's state when a run starts.
#[derive(Debug, Clone, PartialEq)]
pub enum CacheStart {
    /// `--no-cache`: no lookup, no store.
    Disabled,
    /// In-process and empty: plans are stored as questions are answered.
    Cold,
    /// Read from a file (pre-warmed, or left by earlier runs) and written back.
    File {
        path: PathBuf,
        entries: usize,
        /// The `--cache-file` the run's copy was made from.
        warmed_from: Option<PathBuf>,
    },
}

impl CacheStart {
    /// One line for reports: warm or cold, and how many entries at the start.
    pub fn describe(&self) -> String {
        match self {
            CacheStart::Disabled => "disabled (no lookup, no store)".to_owned(),
            CacheStart::Cold => {
                "cold: 0 entries at start, in-process; stores as it answers".to_owned()
            }
            CacheStart::File {
                path,
                entries,
                warmed_from: Some(from),
            } => format!(
                "warm: {entries} entries at start, from {} (run uses the copy {}); stores as it answers",
                from.display(),
                path.display()
            ),
            CacheStart::File {
                path,
                entries,
                warmed_from: None,
            } => format!(
                "{}: {entries} entries at start in {} (cache.path); stores as it answers",
                if *entries == 0 { "cold" } else { "warm" },
                path.display()
            ),
        }
    }
}
