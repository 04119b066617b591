//! The embedded answerer: every role in this process, as `kgmesh ask` runs them.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use kgmesh_schemas::messages::ask::{AskReply, AskRequest};

use super::answerer::{AnswerError, Answerer, AnswererConfig, AnswererMode};
use crate::config::{Config, EmbedderKind};

pub struct EmbeddedAnswerer {
    description: AnswererConfig,
}

impl EmbeddedAnswerer {
    /// Loads the KG and starts every role in-process.
    pub async fn start(config: &Config, kg: &Path, no_cache: bool) -> Result<Self, AnswerError> {
        let description = describe_config(config, Some(kg), no_cache);
        // ADAPTER (embedded pipeline): build the in-process system with the same entry
        // point `kgmesh ask` uses and keep its handle here; `ask` then forwards to it.
        let _ = description;
        Err(AnswerError::Unavailable(
            "the embedded pipeline is not part of this build yet; evaluate a running \
             `kgmesh serve` with --server URL"
                .to_owned(),
        ))
    }
}

#[async_trait]
impl Answerer for EmbeddedAnswerer {
    async fn ask(&self, _request: AskRequest) -> Result<AskReply, AnswerError> {
        Err(AnswerError::Unavailable(
            "embedded pipeline not wired".to_owned(),
        ))
    }

    fn describe(&self) -> AnswererConfig {
        self.description.clone()
    }
}

/// What the report says about a system configured by `config`.
pub fn describe_config(config: &Config, kg: Option<&Path>, no_cache: bool) -> AnswererConfig {
    let llm = match &config.llm.base_url {
        Some(base_url) => format!(
            "{} @ {} (temperature {}, max_tokens {})",
            config.llm.model, base_url, config.llm.temperature, config.llm.max_tokens
        ),
        None => "none (LLM-free strategy)".to_owned(),
    };
    let embedder = match config.embedder.kind {
        EmbedderKind::None => "none (lexical scoring)".to_owned(),
        EmbedderKind::Minilm => format!(
            "{} from {}",
            config.embedder.model,
            config
                .embedder
                .model_dir
                .as_deref()
                .map(Path::display)
                .map(|d| d.to_string())
                .unwrap_or_default()
        ),
        EmbedderKind::Openai => format!(
            "{} @ {}",
            config.embedder.model,
            config.embedder.base_url.clone().unwrap_or_default()
        ),
    };
    let mut effective = config.clone();
    if let Some(kg) = kg {
        effective.graph.path = Some(PathBuf::from(kg));
    }
    AnswererConfig {
        mode: AnswererMode::Embedded,
        server_url: None,
        llm,
        embedder,
        budget: serde_json::to_value(&config.budget).ok(),
        cache: if no_cache {
            "disabled (no lookup, no store)".to_owned()
        } else {
            "in-process, empty at start".to_owned()
        },
        config: serde_json::to_value(&effective).ok(),
        server_info: None,
    }
}
