//! The reference forward pass: candle's BERT over the same files. [`super::MiniLm`]
//! runs its own encoder, which agrees with this one to float rounding and is several
//! times faster on the few word pieces of a question; this one is kept to check that
//! agreement (`models/tests/minilm.rs`) and to measure the difference
//! (`examples/embed_throughput.rs`).

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, DTYPE};
use tokenizers::{PaddingParams, PaddingStrategy};

use crate::{l2_normalize, EmbedError};

/// all-MiniLM-L6-v2 through candle's BERT.
pub struct CandleMiniLm {
    model: BertModel,
    tokenizer: tokenizers::Tokenizer,
    device: Device,
    dim: usize,
    batch_size: usize,
}

impl CandleMiniLm {
    /// Loads the model from `dir` (the files [`super::MiniLm::load`] reads).
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref();
        let load_error = |detail: String| EmbedError::Load {
            path: dir.display().to_string(),
            detail,
        };
        let files = super::ModelFiles::read(dir)?;
        let mut tokenizer = files.tokenizer;
        tokenizer.with_padding(Some(PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        }));
        let device = Device::Cpu;
        let tensors = files
            .tensors
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
        let model = BertModel::load(vb, &files.config)
            .map_err(|e| load_error(format!("BERT weights: {e}")))?;
        Ok(Self {
            model,
            tokenizer,
            device,
            dim: files.config.hidden_size,
            batch_size: 32,
        })
    }

    /// L2-normalized mean-pooled embeddings, computed on the calling thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
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
