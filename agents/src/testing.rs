//! Test doubles shared by the roles' unit tests.

use std::{
    collections::VecDeque,
    sync::{Mutex, MutexGuard},
    time::Duration,
};

use async_trait::async_trait;
use kgmesh_models::{ChatRequest, ChatResponse, LanguageModel, LlmError, Usage};

/// A language model that answers from a script and records the prompts it was sent
/// (every message of a request, joined by newlines).
pub(crate) struct ScriptedModel {
    replies: Mutex<VecDeque<Result<String, LlmError>>>,
    /// Keep answering with the last reply instead of failing once the script ends.
    repeat_last: bool,
    usage: Usage,
    prompts: Mutex<Vec<String>>,
    context_tokens: Option<usize>,
}

impl ScriptedModel {
    /// Answers each request with the next reply; fails once the script runs out.
    pub(crate) fn new(replies: Vec<Result<&str, LlmError>>) -> Self {
        Self {
            replies: Mutex::new(replies.into_iter().map(|r| r.map(str::to_owned)).collect()),
            repeat_last: false,
            usage: Usage {
                prompt_tokens: 100,
                completion_tokens: 10,
                estimated: false,
            },
            prompts: Mutex::new(Vec::new()),
            context_tokens: None,
        }
    }

    /// The context window the model declares.
    pub(crate) fn with_context_tokens(mut self, tokens: usize) -> Self {
        self.context_tokens = Some(tokens);
        self
    }

    /// Answers every request with `reply` (text, or the same error).
    pub(crate) fn always(reply: Result<&str, LlmError>) -> Self {
        Self {
            repeat_last: true,
            ..Self::new(vec![reply])
        }
    }

    /// The token usage every reply reports.
    pub(crate) fn with_usage(mut self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        self.usage.prompt_tokens = prompt_tokens;
        self.usage.completion_tokens = completion_tokens;
        self
    }

    /// The prompts received so far, in order.
    pub(crate) fn prompts(&self) -> MutexGuard<'_, Vec<String>> {
        self.prompts.lock().unwrap()
    }
}

#[async_trait]
impl LanguageModel for ScriptedModel {
    fn name(&self) -> &str {
        "scripted"
    }

    fn context_tokens(&self) -> Option<usize> {
        self.context_tokens
    }

    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let prompt = request
            .messages
            .iter()
            .map(|m| m.content.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        self.prompts.lock().unwrap().push(prompt);
        let reply = {
            let mut replies = self.replies.lock().unwrap();
            match (replies.len(), self.repeat_last) {
                (1, true) => replies.front().cloned(),
                _ => replies.pop_front(),
            }
        };
        let text =
            reply.unwrap_or_else(|| Err(LlmError::Malformed("the script ran out".into())))?;
        Ok(ChatResponse {
            text,
            usage: self.usage,
            model: "scripted".into(),
            elapsed: Duration::from_millis(1),
        })
    }
}

/// Runs `future` to completion on a fresh one-worker runtime, failing the test after 30 s.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(30), future)
                .await
                .expect("timed out")
        })
}

/// A graph read by the embedded store's own loader from TSV `text` (head, relation,
/// tail per line), as a user's file would be.
pub(crate) fn graph_from_tsv(text: &str) -> std::sync::Arc<dyn kgmesh_stores::GraphStore> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kg.tsv");
    std::fs::write(&path, text).unwrap();
    let (graph, _) = kgmesh_stores::embedded::load::load_graph(
        &path,
        &kgmesh_stores::embedded::load::LoadOptions::default(),
    )
    .unwrap();
    let graph: kgmesh_stores::EmbeddedGraph = graph;
    std::sync::Arc::new(graph)
}
