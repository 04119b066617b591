//! The embedded answerer: every role in this process on the in-process bus, started
//! exactly as `kgmesh ask` starts them, and one coordinator asked concurrently.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Instant,
};

use async_trait::async_trait;
use kgmesh_bus::{Bus, LocalBus};
use kgmesh_coordinator::{Coordinator, CoordinatorConfig};
use kgmesh_schemas::messages::ask::{AskReply, AskRequest};
use tokio::sync::Mutex;

use super::answerer::{AnswerError, Answerer, AnswererConfig, AnswererMode};
use crate::{
    cmd::ask::{coordinator_config, EmbeddedRoles, GraphSource},
    config::Config,
};

pub struct EmbeddedAnswerer {
    coordinator: Coordinator,
    roles: Mutex<Option<EmbeddedRoles>>,
    description: AnswererConfig,
}

impl EmbeddedAnswerer {
    /// Loads the KG and starts every role in-process.
    pub async fn start(config: &Config, kg: &Path, cache: CacheStart) -> Result<Self, AnswerError> {
        Self::start_on(config, &GraphSource::File(kg.to_owned()), cache).await
    }

    /// Starts every role in-process on a graph file or database.
    pub async fn start_on(
        config: &Config,
        source: &GraphSource,
        cache: CacheStart,
    ) -> Result<Self, AnswerError> {
        let started = Instant::now();
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        let roles = EmbeddedRoles::start(config, bus.clone(), source)
            .await
            .map_err(|error| AnswerError::Unavailable(format!("{error:#}")))?;
        let coordinator = Coordinator::new(bus, coordinator_config(config));
        let kg = match source {
            GraphSource::File(path) => Some(path.as_path()),
            _ => None,
        };
        let mut description = describe_config(config, kg, &cache);
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

/// What the report says about a system configured by `config`.
pub fn describe_config(config: &Config, kg: Option<&Path>, cache: &CacheStart) -> AnswererConfig {
    // `kgmesh ask` also takes the endpoint from OPENAI_BASE_URL.
    let llm_base_url = config.llm.base_url.clone().or_else(|| {
        std::env::var("OPENAI_BASE_URL")
            .ok()
            .filter(|url| !url.trim().is_empty())
    });
    let llm = match llm_base_url {
        Some(base_url) => format!(
            "{} @ {} (temperature {}, max_tokens {})",
            config.llm.model, base_url, config.llm.temperature, config.llm.max_tokens
        ),
        None => "none (LLM-free strategy)".to_owned(),
    };
    let embedder = config.embedder.describe();
    let mut effective = config.clone();
    if let Some(kg) = kg {
        effective.graph.path = Some(PathBuf::from(kg));
    }
    // The model calls a question may make, as resolved from `llm.roles` when unset.
    effective.budget.llm_calls = Some(config.llm_calls());
    AnswererConfig {
        mode: AnswererMode::Embedded,
        server_url: None,
        llm,
        embedder,
        budget: serde_json::to_value(&effective.budget).ok(),
        k_values: None,
        cache: cache.describe(),
        roles: Vec::new(),
        setup_ms: None,
        config: serde_json::to_value(&effective).ok(),
        server_info: None,
    }
}
