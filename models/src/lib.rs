//! Language models and embedders behind small traits, the project's prompts, and
//! parsers that tolerate what real models emit.
//!
//! Agents never talk HTTP or parse model text themselves. They build a prompt with
//! [`prompts`], send it through a [`LanguageModel`] (in production the
//! OpenAI-compatible client in [`openai`], which speaks to vLLM, Ollama, llama.cpp's
//! server, LM Studio or a hosted API), and turn the reply into typed values with
//! [`parse`]. Embeddings come from a local all-MiniLM-L6-v2 ([`minilm`], feature
//! `minilm`) or an OpenAI-compatible `/v1/embeddings` endpoint. With no model at all,
//! [`lexical`] links entity mentions and scores relation paths from the graph's names.
//!
//! ```no_run
//! use kgmesh_models::{openai::{OpenAiChat, OpenAiConfig}, prompts, parse, LanguageModel};
//! # async fn run(schema: kgmesh_schemas::graph::GraphSchema,
//! #              request: kgmesh_schemas::messages::kg_linker::KgLinkRequest)
//! #              -> Result<(), Box<dyn std::error::Error>> {
//! let llm = OpenAiChat::new(OpenAiConfig::from_env("qwen2.5-coder-0.5b-instruct"))?;
//! let prompt = prompts::kg_linker::build(&request, &schema, prompts::Round::First,
//!                                        &prompts::PromptBudget::default());
//! let reply = llm.chat(prompt).await?;
//! let relation_names: Vec<String> = schema.relations.iter().map(|r| r.name.clone()).collect();
//! let artifacts = parse::kg_linker::parse(&reply.text, &relation_names);
//! # let _ = artifacts; Ok(()) }
//! ```

pub mod lexical;
#[cfg(feature = "minilm")]
pub mod minilm;
pub mod openai;
pub mod parse;
pub mod prompts;
pub mod tokens;

use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    pub temperature: f32,
    pub stop: Vec<String>,
    /// The reply must be exactly one of these (empty: free text). A client enforces it
    /// where its server can ([`openai::ChoiceConstraint`]); the reply is parsed
    /// tolerantly either way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// The server reported no usage; these are estimates.
    pub estimated: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub text: String,
    pub usage: Usage,
    pub model: String,
    pub elapsed: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    #[error("language model call timed out after {0:?}")]
    Timeout(Duration),
    #[error("language model rate-limited the call (HTTP 429) after {attempts} attempts")]
    RateLimited { attempts: u32 },
    #[error("language model server error HTTP {status}: {body}")]
    Server { status: u16, body: String },
    #[error("language model rejected the request HTTP {status}: {body}")]
    Rejected { status: u16, body: String },
    #[error("cannot reach the language model at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("malformed response from the language model: {0}")]
    Malformed(String),
    #[error("language model misconfigured: {0}")]
    Config(String),
}

#[async_trait]
pub trait LanguageModel: Send + Sync + 'static {
    /// Model name for reports and traces.
    fn name(&self) -> &str;
    /// The model's context window in tokens, when it is known (`llm.context_tokens`):
    /// prompts cut their evidence to fit it ([`prompts::context::fit_evidence`]).
    fn context_tokens(&self) -> Option<usize> {
        None
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;
    /// The caller stopped waiting for a reply after `waited`: its deadline came first.
    /// A client with a circuit breaker counts that as a model that did not answer, so
    /// that the next calls do not wait the same way (see `llm.breaker_*`).
    fn gave_up(&self, _waited: std::time::Duration) {}
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    #[error("cannot load the embedding model from {path}: {detail}")]
    Load { path: String, detail: String },
    #[error("embedding failed: {0}")]
    Compute(String),
    #[error("embedding service error: {0}")]
    Remote(String),
}

#[async_trait]
pub trait Embedder: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn dim(&self) -> usize;
    /// One L2-normalized vector per text, in order.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::System,
            content: content.into(),
        }
    }

    pub fn user(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::User,
            content: content.into(),
        }
    }

    pub fn assistant(content: impl Into<String>) -> Self {
        Self {
            role: ChatRole::Assistant,
            content: content.into(),
        }
    }
}

impl ChatRequest {
    /// A deterministic request (temperature 0), which is what every prompt of this crate
    /// wants: the same question should retrieve the same things.
    pub fn new(messages: Vec<ChatMessage>, max_tokens: u32) -> Self {
        Self {
            messages,
            max_tokens,
            temperature: 0.0,
            stop: Vec::new(),
            choices: Vec::new(),
        }
    }

    /// Rough prompt size, for budgets checked before the call.
    pub fn estimated_prompt_tokens(&self) -> u64 {
        tokens::estimate_chat_tokens(&self.messages)
    }
}

/// Scales a vector to unit length (a zero vector stays zero).
pub fn l2_normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two vectors of the same length (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm_a = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let norm_b = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm_a == 0.0 || norm_b == 0.0 {
        0.0
    } else {
        dot / (norm_a * norm_b)
    }
}
