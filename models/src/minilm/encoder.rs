//! The BERT encoder of all-MiniLM-L6-v2, run directly on its f32 weights.
//!
//! A question is a handful of word pieces, and a forward pass over so few rows is
//! bound by streaming the ~42 MB of dense weights, not by arithmetic. A general tensor
//! library spends most of such a pass elsewhere: a matrix-multiply tile sized for many
//! rows, one allocation and one dispatch per operation, and worker threads woken for
//! each. Here the rows of every text of a call are stacked without padding, each dense
//! layer streams its weights once per block of rows ([`super::kernel::linear`]), and
//! only attention looks at one text at a time. A text's vector therefore does not
//! depend on what it is embedded with.
//!
//! The arithmetic is BERT's, as the reference implementation ([`super::reference`],
//! candle's) does it, but for GELU's error function, a polynomial within 5e-7 of libm's;
//! the two agree to 2e-5 per vector component (measured: 3e-7), which a test checks on
//! the real weights.

use std::collections::HashMap;

use candle_core::Tensor;

use super::kernel::{linear, Dense};

/// One LayerNorm's scale and shift.
struct Norm {
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// One transformer layer; the query, key and value projections are one dense layer
/// (their weights stacked), so the input rows are read once for the three.
struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    up: Dense,
    down: Dense,
    output_norm: Norm,
}

/// The encoder's weights and shape.
pub(super) struct Encoder {
    word: Vec<f32>,
    position: Vec<f32>,
    /// The embedding of token type 0 (every token of a single sentence).
    token_type: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    dim: usize,
    heads: usize,
    vocab: usize,
    positions: usize,
    eps: f32,
}

/// What the encoder needs of the model's `config.json`.
pub(super) struct Shape {
    pub dim: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub eps: f64,
}

impl Encoder {
    /// The encoder from the model's tensors, by their names in `model.safetensors`.
    pub(super) fn from_tensors(
        mut tensors: HashMap<String, Tensor>,
        shape: &Shape,
    ) -> Result<Self, String> {
        let dim = shape.dim;
        if shape.heads == 0
            || !dim.is_multiple_of(shape.heads)
            || !dim.is_multiple_of(super::kernel::LANES)
        {
            return Err(format!(
                "a hidden size of {dim} with {} heads is not supported",
                shape.heads
            ));
        }
        let mut take = |name: &str, rows: Option<usize>, cols: usize| -> Result<Vec<f32>, String> {
            let tensor = tensors
                .remove(name)
                .or_else(|| tensors.remove(&format!("bert.{name}")))
                .ok_or_else(|| format!("no tensor {name}"))?;
            let dims = tensor.dims().to_vec();
            let fits = match (rows, dims.as_slice()) {
                (None, [c]) => *c == cols,
                (Some(r), [tr, c]) => *tr == r && *c == cols,
                (None, [_, c]) => *c == cols,
                _ => false,
            };
            if !fits {
                return Err(format!(
                    "{name} has shape {dims:?}, expected {rows:?} × {cols}"
                ));
            }
            tensor
                .flatten_all()
                .and_then(|t| t.to_dtype(candle_core::DType::F32))
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| format!("{name}: {e}"))
        };
        let word = take("embeddings.word_embeddings.weight", None, dim)?;
        let position = take("embeddings.position_embeddings.weight", None, dim)?;
        let token_type = take("embeddings.token_type_embeddings.weight", None, dim)?;
        let embedding_norm = Norm {
            weight: take("embeddings.LayerNorm.weight", None, dim)?,
            bias: take("embeddings.LayerNorm.bias", None, dim)?,
        };
        let mut layers = Vec::with_capacity(shape.layers);
        for index in 0..shape.layers {
            let name = |part: &str| format!("encoder.layer.{index}.{part}");
            let mut dense = |part: &str, outputs: usize, inputs: usize| -> Result<Dense, String> {
                Dense::new(
                    take(&name(&format!("{part}.weight")), Some(outputs), inputs)?,
                    take(&name(&format!("{part}.bias")), None, outputs)?,
                    inputs,
                )
            };
            let query = dense("attention.self.query", dim, dim)?;
            let key = dense("attention.self.key", dim, dim)?;
            let value = dense("attention.self.value", dim, dim)?;
            let attention_out = dense("attention.output.dense", dim, dim)?;
            let up = dense("intermediate.dense", shape.intermediate, dim)?;
            let down = dense("output.dense", dim, shape.intermediate)?;
            let mut norm = |part: &str| -> Result<Norm, String> {
                Ok(Norm {
                    weight: take(&name(&format!("{part}.weight")), None, dim)?,
                    bias: take(&name(&format!("{part}.bias")), None, dim)?,
                })
            };
            let attention_norm = norm("attention.output.LayerNorm")?;
            let output_norm = norm("output.LayerNorm")?;
            layers.push(Layer {
                qkv: Dense::stacked(&[query, key, value])?,
                attention_out,
                attention_norm,
                up,
                down,
                output_norm,
            });
        }
        Ok(Self {
            vocab: word.len() / dim,
            positions: position.len() / dim,
            token_type: token_type[..dim].to_vec(),
            word,
            position,
            embedding_norm,
            layers,
            dim,
            heads: shape.heads,
            eps: shape.eps as f32,
        })
    }

    /// The mean of the last layer's rows of each text (`texts` are word-piece ids,
    /// each at most as long as the model's positions), not normalized. An empty text
    /// gets a zero vector.
    pub(super) fn mean_pooled(&self, texts: &[&[u32]]) -> Result<Vec<Vec<f32>>, String> {
        let d = self.dim;
        let mut spans: Vec<(usize, usize)> = Vec::with_capacity(texts.len());
        let mut rows = 0;
        for ids in texts {
            if ids.len() > self.positions {
                return Err(format!(
                    "{} word pieces, more than the model's {} positions",
                    ids.len(),
                    self.positions
                ));
            }
            if let Some(id) = ids.iter().find(|&&id| id as usize >= self.vocab) {
                return Err(format!("word piece {id} is outside the vocabulary"));
            }
            spans.push((rows, ids.len()));
            rows += ids.len();
        }
        let mut x = vec![0f32; rows * d];
        for ((start, _), ids) in spans.iter().zip(texts) {
            for (t, &id) in ids.iter().enumerate() {
                let row = &mut x[(start + t) * d..(start + t + 1) * d];
                let word = &self.word[id as usize * d..(id as usize + 1) * d];
                let position = &self.position[t * d..(t + 1) * d];
                for (((out, w), p), k) in
                    row.iter_mut().zip(word).zip(position).zip(&self.token_type)
                {
                    *out = w + p + k;
                }
            }
        }
        layer_norm(&mut x, d, &self.embedding_norm, self.eps);
        let intermediate = self.layers.first().map_or(0, |l| l.up.outputs());
        let mut qkv = vec![0f32; rows * 3 * d];
        let mut context = vec![0f32; rows * d];
        let mut projected = vec![0f32; rows * d];
        let mut up = vec![0f32; rows * intermediate];
        for layer in &self.layers {
            linear(&x, rows, &layer.qkv, &mut qkv);
            for &(start, len) in &spans {
                self.attend(&qkv, start, len, &mut context);
            }
            linear(&context, rows, &layer.attention_out, &mut projected);
            add_into(&mut x, &projected);
            layer_norm(&mut x, d, &layer.attention_norm, self.eps);
            linear(&x, rows, &layer.up, &mut up);
            up.iter_mut().for_each(|v| *v = gelu(*v));
            linear(&up, rows, &layer.down, &mut projected);
            add_into(&mut x, &projected);
            layer_norm(&mut x, d, &layer.output_norm, self.eps);
        }
        Ok(spans
            .iter()
            .map(|&(start, len)| {
                let mut mean = vec![0f32; d];
                for row in x[start * d..(start + len) * d].chunks_exact(d) {
                    add_into(&mut mean, row);
                }
                let count = len.max(1) as f32;
                mean.iter_mut().for_each(|v| *v /= count);
                mean
            })
            .collect())
    }

    /// Self-attention within one text (rows `start..start + len`): each head's
    /// softmax of scaled query-key products weighs the values.
    fn attend(&self, qkv: &[f32], start: usize, len: usize, context: &mut [f32]) {
        let d = self.dim;
        let head = d / self.heads;
        let scale = (head as f32).sqrt();
        let mut weights = vec![0f32; len];
        for h in 0..self.heads {
            let at = h * head;
            for i in 0..len {
                let query = &qkv[(start + i) * 3 * d + at..][..head];
                for (j, weight) in weights.iter_mut().enumerate() {
                    let key = &qkv[(start + j) * 3 * d + d + at..][..head];
                    *weight = query.iter().zip(key).map(|(q, k)| q * k).sum::<f32>() / scale;
                }
                softmax(&mut weights);
                let out = &mut context[(start + i) * d + at..][..head];
                out.iter_mut().for_each(|v| *v = 0.0);
                for (j, weight) in weights.iter().enumerate() {
                    let value = &qkv[(start + j) * 3 * d + 2 * d + at..][..head];
                    for (o, v) in out.iter_mut().zip(value) {
                        *o += weight * v;
                    }
                }
            }
        }
    }
}

fn add_into(into: &mut [f32], other: &[f32]) {
    into.iter_mut().zip(other).for_each(|(a, b)| *a += b);
}

/// Each row of `x` (rows of `d`) normalized to zero mean and unit variance, then scaled
/// and shifted.
fn layer_norm(x: &mut [f32], d: usize, norm: &Norm, eps: f32) {
    for row in x.chunks_exact_mut(d) {
        let mean = row.iter().sum::<f32>() / d as f32;
        let variance = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / d as f32;
        let scale = 1.0 / (variance + eps).sqrt();
        for ((v, w), b) in row.iter_mut().zip(&norm.weight).zip(&norm.bias) {
            *v = (*v - mean) * scale * w + b;
        }
    }
}

fn softmax(values: &mut [f32]) {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for v in values.iter_mut() {
        *v = (*v - max).exp();
        sum += *v;
    }
    values.iter_mut().for_each(|v| *v /= sum);
}

/// GELU with the error function, as BERT was trained with (`hidden_act: gelu`).
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x / std::f32::consts::SQRT_2))
}

/// The error function by Abramowitz and Stegun's formula 7.1.26 (absolute error at
/// most 1.5e-7; within 5e-7 of libm's `erff` in f32). A 10-word question has about
/// 110,000 activations; libm's `erff` took over a millisecond for them, this a fifth
/// of that.
fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = ((((1.061_405_4 * t - 1.453_152) * t + 1.421_413_8) * t - 0.284_496_74) * t
        + 0.254_829_6)
        * t;
    (1.0 - poly * (-a * a).exp()).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let norm = Norm {
            weight: vec![2.0; 4],
            bias: vec![1.0; 4],
        };
        let mut x = vec![1.0, 2.0, 3.0, 4.0, 5.0, 5.0, 5.0, 5.0];
        layer_norm(&mut x, 4, &norm, 1e-12);
        // (v - 2.5) / sqrt(1.25) * 2 + 1
        let expected = [-1.683282, 0.105573, 1.894427, 3.683282];
        for (got, want) in x[..4].iter().zip(expected) {
            assert!((got - want).abs() < 1e-5, "{got} vs {want}");
        }
        // A constant row has no spread: it becomes the shift.
        assert!(
            x[4..].iter().all(|v| (v - 1.0).abs() < 1e-6),
            "{:?}",
            &x[4..]
        );
    }

    #[test]
    fn softmax_sums_to_one_and_keeps_order() {
        let mut v = vec![1.0, 3.0, 2.0, 20.0];
        softmax(&mut v);
        assert!((v.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(v[3] > 0.999 && v[1] > v[2] && v[2] > v[0]);
    }

    #[test]
    fn erf_matches_its_known_values() {
        // erf(0.5), erf(1), erf(2), erf(3.5) to seven places.
        for (x, want) in [
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (3.5, 0.999_999_3),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
            assert!((erf(-x) + want).abs() < 3e-7, "erf(-{x}) = {}", erf(-x));
        }
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(40.0), 1.0);
    }

    #[test]
    fn gelu_matches_its_known_values() {
        // 0.5 x (1 + erf(x / sqrt 2)): Φ(1) = 0.841345, Φ(-1) = 0.158655.
        assert!((gelu(1.0) - 0.841345).abs() < 1e-5);
        assert!((gelu(-1.0) + 0.158655).abs() < 1e-5);
        assert_eq!(gelu(0.0), 0.0);
    }
}
