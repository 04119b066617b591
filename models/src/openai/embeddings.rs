//! `/v1/embeddings`.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use super::{
    transport::{Clock, SystemClock, Transport},
    OpenAiConfig,
};
use crate::{l2_normalize, EmbedError, Embedder};

/// Texts per HTTP request unless [`OpenAiEmbedder::with_batch_size`] says otherwise.
const DEFAULT_BATCH_SIZE: usize = 64;

/// An [`Embedder`] backed by an OpenAI-compatible embeddings endpoint (OpenAI, vLLM with
/// an embedding model, Ollama, llama.cpp started with `--embedding`, LM Studio).
pub struct OpenAiEmbedder {
    transport: Transport,
    dim: usize,
    batch_size: usize,
}

impl OpenAiEmbedder {
    /// For a model whose dimension is known (e.g. 1536 for text-embedding-3-small).
    pub fn new(config: OpenAiConfig, dim: usize) -> Result<Self, EmbedError> {
        Self::with_clock(config, dim, Arc::new(SystemClock))
    }

    pub fn with_clock(
        config: OpenAiConfig,
        dim: usize,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, EmbedError> {
        if dim == 0 {
            return Err(EmbedError::Remote(
                "embedding dimension must be above zero".to_owned(),
            ));
        }
        let transport =
            Transport::new(config, clock).map_err(|e| EmbedError::Remote(e.to_string()))?;
        Ok(Self {
            transport,
            dim,
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Learns the dimension by embedding one probe text.
    pub async fn connect(config: OpenAiConfig) -> Result<Self, EmbedError> {
        let transport = Transport::new(config, Arc::new(SystemClock))
            .map_err(|e| EmbedError::Remote(e.to_string()))?;
        let probe = request_batch(&transport, &["dimension probe".to_owned()]).await?;
        let dim = probe.first().map(Vec::len).unwrap_or(0);
        if dim == 0 {
            return Err(EmbedError::Remote(
                "the server returned an empty embedding".to_owned(),
            ));
        }
        Ok(Self {
            transport,
            dim,
            batch_size: DEFAULT_BATCH_SIZE,
        })
    }

    /// Texts per HTTP request (servers cap the input list).
    pub fn with_batch_size(mut self, batch_size: usize) -> Self {
        self.batch_size = batch_size.max(1);
        self
    }
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn name(&self) -> &str {
        &self.transport.config.model
    }

    fn dim(&self) -> usize {
        self.dim
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            for mut vector in request_batch(&self.transport, chunk).await? {
                if vector.len() != self.dim {
                    return Err(EmbedError::Remote(format!(
                        "expected {}-dimensional embeddings, the server returned {}",
                        self.dim,
                        vector.len()
                    )));
                }
                l2_normalize(&mut vector);
                out.push(vector);
            }
        }
        Ok(out)
    }
}

async fn request_batch(
    transport: &Transport,
    texts: &[String],
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let body = json!({"model": transport.config.model, "input": texts});
    let value = transport
        .post_json("embeddings", &body)
        .await
        .map_err(|e| EmbedError::Remote(e.to_string()))?;
    parse_embeddings(&value, texts.len())
}

/// Puts the vectors back in input order (`index`), checking that each input got one.
pub(crate) fn parse_embeddings(
    value: &Value,
    expected: usize,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let data = value
        .get("data")
        .and_then(Value::as_array)
        .ok_or_else(|| EmbedError::Remote("no data array in the embeddings response".to_owned()))?;
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in data.iter().enumerate() {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .map(|i| i as usize)
            .unwrap_or(position);
        let numbers = item
            .get("embedding")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                EmbedError::Remote(format!("data[{position}] has no embedding array"))
            })?;
        let vector = numbers
            .iter()
            .map(|n| n.as_f64().map(|x| x as f32))
            .collect::<Option<Vec<f32>>>()
            .ok_or_else(|| EmbedError::Remote(format!("data[{position}] holds a non-number")))?;
        match slots.get_mut(index) {
            Some(slot) => *slot = Some(vector),
            None => {
                return Err(EmbedError::Remote(format!(
                    "embedding index {index} out of range for {expected} inputs"
                )))
            }
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| {
            slot.ok_or_else(|| EmbedError::Remote(format!("no embedding for input {i}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_input_order() {
        let value = json!({"data": [
            {"index": 1, "embedding": [0.0, 1.0]},
            {"index": 0, "embedding": [1.0, 0.0]}
        ]});
        assert_eq!(
            parse_embeddings(&value, 2).unwrap(),
            vec![vec![1.0, 0.0], vec![0.0, 1.0]]
        );
    }

    #[test]
    fn missing_or_extra_vectors_are_errors() {
        let one = json!({"data": [{"index": 0, "embedding": [1.0]}]});
        assert!(parse_embeddings(&one, 2).is_err());
        let out_of_range = json!({"data": [{"index": 5, "embedding": [1.0]}]});
        assert!(parse_embeddings(&out_of_range, 1).is_err());
        assert!(parse_embeddings(&json!({"data": [{"index": 0, "embedding": ["x"]}]}), 1).is_err());
    }
}
