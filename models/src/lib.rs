//! Language models and embedders behind small traits, the project's prompts, and
//! parsers that tolerate what real models emit.

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
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError>;
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
