//! Dense layers over a few rows: `out = x · Wᵀ + b` with `W` stored as the model
//! stores it, one output's weights per row.
//!
//! Each output's weight row is read once per block of input rows and dotted with every
//! row of the block, four rows and two outputs at a time; the weights of the outputs
//! after them are prefetched meanwhile, because with few rows the pass waits on memory
//! more than on arithmetic. On x86-64 with AVX2 and FMA (checked at run time) the dot
//! products use 8-lane fused multiply-adds; elsewhere a portable loop computes the same
//! sums.

/// Floats per SIMD lane group; every layer width must be a multiple of it.
pub(super) const LANES: usize = 8;
/// Input rows per block: their inputs stay in the core's cache while the layer's
/// weights stream past once.
const ROW_BLOCK: usize = 64;

/// A dense layer's weights (`outputs × inputs`, row-major) and bias.
pub(super) struct Dense {
    weight: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
}

impl Dense {
    pub(super) fn new(weight: Vec<f32>, bias: Vec<f32>, inputs: usize) -> Result<Self, String> {
        if inputs == 0 || !inputs.is_multiple_of(LANES) || weight.len() != bias.len() * inputs {
            return Err(format!(
                "a dense layer of {} weights, {} outputs and {inputs} inputs is not supported",
                weight.len(),
                bias.len()
            ));
        }
        Ok(Self {
            weight,
            bias,
            inputs,
        })
    }

    /// One layer computing the outputs of `parts` side by side (same inputs).
    pub(super) fn stacked(parts: &[Dense]) -> Result<Self, String> {
        let inputs = parts.first().map_or(0, |p| p.inputs);
        if parts.iter().any(|p| p.inputs != inputs) {
            return Err("stacked layers read different inputs".into());
        }
        Self::new(
            parts
                .iter()
                .flat_map(|p| p.weight.iter().copied())
                .collect(),
            parts.iter().flat_map(|p| p.bias.iter().copied()).collect(),
            inputs,
        )
    }

    pub(super) fn outputs(&self) -> usize {
        self.bias.len()
    }
}

/// `out[r][o] = bias[o] + Σₖ x[r][k] · weight[o][k]` for `rows` rows.
///
/// # Panics
/// When `x` or `out` does not hold `rows` rows of the layer's inputs and outputs.
pub(super) fn linear(x: &[f32], rows: usize, dense: &Dense, out: &mut [f32]) {
    assert_eq!(x.len(), rows * dense.inputs, "input rows");
    assert_eq!(out.len(), rows * dense.outputs(), "output rows");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
        // SAFETY: the CPU has both features, checked just above, and the slices'
        // lengths were checked against the layer's shape.
        unsafe { x86::linear(x, rows, dense, out) };
        return;
    }
    portable(x, rows, dense, out);
}

/// The same sums on any CPU (eight partial sums per dot product, so a compiler can
/// vectorize them).
fn portable(x: &[f32], rows: usize, dense: &Dense, out: &mut [f32]) {
    let (k, n) = (dense.inputs, dense.outputs());
    for r in 0..rows {
        let row = &x[r * k..(r + 1) * k];
        for o in 0..n {
            let weight = &dense.weight[o * k..(o + 1) * k];
            let mut partial = [0f32; LANES];
            for (xs, ws) in row.chunks_exact(LANES).zip(weight.chunks_exact(LANES)) {
                for lane in 0..LANES {
                    partial[lane] += xs[lane] * ws[lane];
                }
            }
            out[r * n + o] = dense.bias[o] + partial.iter().sum::<f32>();
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{Dense, LANES, ROW_BLOCK};

    /// # Safety
    /// The CPU must support AVX2 and FMA; `x` must hold `rows × inputs` floats and
    /// `out` `rows × outputs`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn linear(x: &[f32], rows: usize, dense: &Dense, out: &mut [f32]) {
        let (k, n) = (dense.inputs, dense.outputs());
        let w = dense.weight.as_ptr();
        let mut block = 0;
        while block < rows {
            let block_rows = ROW_BLOCK.min(rows - block);
            let mut o = 0;
            while o < n {
                let pair = if o + 1 < n { 2 } else { 1 };
                let mut r = 0;
                while r < block_rows {
                    let tile = 4.min(block_rows - r);
                    let xs = x.as_ptr().add((block + r) * k);
                    let sums = match tile {
                        4 => dots::<4>(xs, w.add(o * k), w.add((o + pair - 1) * k), k),
                        3 => widen(dots::<3>(xs, w.add(o * k), w.add((o + pair - 1) * k), k)),
                        2 => widen(dots::<2>(xs, w.add(o * k), w.add((o + pair - 1) * k), k)),
                        _ => widen(dots::<1>(xs, w.add(o * k), w.add((o + pair - 1) * k), k)),
                    };
                    for (t, [first, second]) in sums.iter().take(tile).enumerate() {
                        let at = (block + r + t) * n + o;
                        out[at] = dense.bias[o] + first;
                        if pair == 2 {
                            out[at + 1] = dense.bias[o + 1] + second;
                        }
                    }
                    r += tile;
                }
                o += pair;
            }
            block += block_rows;
        }
    }

    fn widen<const R: usize>(sums: [[f32; 2]; R]) -> [[f32; 2]; 4] {
        let mut wide = [[0.0; 2]; 4];
        wide[..R].copy_from_slice(&sums);
        wide
    }

    /// The dot products of `R` input rows (at `x`, `k` apart) with two weight rows,
    /// prefetching the two weight rows after them.
    ///
    /// # Safety
    /// AVX2 and FMA; `x` readable for `R × k` floats, `w0` and `w1` for `k`, `k` a
    /// multiple of [`LANES`].
    #[inline(always)]
    unsafe fn dots<const R: usize>(
        x: *const f32,
        w0: *const f32,
        w1: *const f32,
        k: usize,
    ) -> [[f32; 2]; R] {
        let mut first = [_mm256_setzero_ps(); R];
        let mut second = [_mm256_setzero_ps(); R];
        // The rows after `w1` (past the end near the last outputs: a prefetch never
        // faults, and the address is only computed, never read).
        let ahead = w1.wrapping_add(k) as *const i8;
        let mut c = 0;
        while c < k {
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(c * 4));
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add((k + c) * 4));
            let a = _mm256_loadu_ps(w0.add(c));
            let b = _mm256_loadu_ps(w1.add(c));
            for r in 0..R {
                let xr = _mm256_loadu_ps(x.add(r * k + c));
                first[r] = _mm256_fmadd_ps(xr, a, first[r]);
                second[r] = _mm256_fmadd_ps(xr, b, second[r]);
            }
            c += LANES;
        }
        let mut sums = [[0.0; 2]; R];
        for r in 0..R {
            sums[r] = [horizontal_sum(first[r]), horizontal_sum(second[r])];
        }
        sums
    }

    #[inline(always)]
    unsafe fn horizontal_sum(v: __m256) -> f32 {
        let mut lanes = [0f32; LANES];
        _mm256_storeu_ps(lanes.as_mut_ptr(), v);
        lanes.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `out` computed one product at a time, in f64.
    fn naive(x: &[f32], rows: usize, dense: &Dense) -> Vec<f32> {
        let (k, n) = (dense.inputs, dense.outputs());
        let mut out = vec![0f32; rows * n];
        for r in 0..rows {
            for o in 0..n {
                let dot: f64 = (0..k)
                    .map(|i| x[r * k + i] as f64 * dense.weight[o * k + i] as f64)
                    .sum();
                out[r * n + o] = (dot + dense.bias[o] as f64) as f32;
            }
        }
        out
    }

    fn values(count: usize, seed: u32) -> Vec<f32> {
        (0..count)
            .map(|i| {
                let h = (i as u32).wrapping_mul(2654435761).wrapping_add(seed) >> 8;
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn every_row_count_and_an_odd_output_count_match_the_naive_product() {
        // Rows across tile and block edges; 7 outputs leave one without a pair.
        for (rows, outputs, inputs) in
            [(1, 7, 16), (3, 8, 24), (5, 7, 40), (70, 9, 16), (133, 3, 8)]
        {
            let dense =
                Dense::new(values(outputs * inputs, 1), values(outputs, 2), inputs).unwrap();
            let x = values(rows * inputs, 3);
            let want = naive(&x, rows, &dense);
            let mut fast = vec![f32::NAN; rows * outputs];
            linear(&x, rows, &dense, &mut fast);
            let mut plain = vec![f32::NAN; rows * outputs];
            portable(&x, rows, &dense, &mut plain);
            for ((f, p), w) in fast.iter().zip(&plain).zip(&want) {
                assert!(
                    (f - w).abs() < 1e-4,
                    "{rows}×{inputs}→{outputs}: {f} vs {w}"
                );
                assert!(
                    (p - w).abs() < 1e-4,
                    "portable {rows}×{inputs}→{outputs}: {p} vs {w}"
                );
            }
        }
    }

    #[test]
    fn stacked_layers_give_each_part_its_outputs() {
        let a = Dense::new(values(2 * 8, 4), vec![1.0, 2.0], 8).unwrap();
        let b = Dense::new(values(3 * 8, 5), vec![3.0, 4.0, 5.0], 8).unwrap();
        let x = values(2 * 8, 6);
        let mut separate_a = vec![0.0; 2 * 2];
        let mut separate_b = vec![0.0; 2 * 3];
        linear(&x, 2, &a, &mut separate_a);
        linear(&x, 2, &b, &mut separate_b);
        let both = Dense::stacked(&[a, b]).unwrap();
        let mut stacked = vec![0.0; 2 * 5];
        linear(&x, 2, &both, &mut stacked);
        for r in 0..2 {
            assert_eq!(&stacked[r * 5..r * 5 + 2], &separate_a[r * 2..r * 2 + 2]);
            assert_eq!(
                &stacked[r * 5 + 2..r * 5 + 5],
                &separate_b[r * 3..r * 3 + 3]
            );
        }
    }

    #[test]
    fn a_shape_the_kernel_cannot_take_is_refused() {
        assert!(Dense::new(vec![0.0; 12], vec![0.0; 2], 6).is_err());
        assert!(Dense::new(vec![0.0; 16], vec![0.0; 3], 8).is_err());
        let a = Dense::new(vec![0.0; 8], vec![0.0], 8).unwrap();
        let b = Dense::new(vec![0.0; 16], vec![0.0], 16).unwrap();
        assert!(Dense::stacked(&[a, b]).is_err());
    }
}
