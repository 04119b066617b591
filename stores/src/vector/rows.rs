//! The rows of the embedded vector index, held as 32-bit floats or as IEEE half floats.
//!
//! Half floats take half the memory and half the file. They keep about three decimal
//! digits, which for unit vectors (cosine collections, every value in [-1, 1]) moves a
//! cosine by about 10⁻³: `benches/benches/vectors.rs` measures recall@10 against exact
//! search over the 32-bit rows. A search converts each row it scores back to 32 bits
//! (with the CPU's conversion instructions where it has them) and takes the same
//! vectorized dot product.

use half::{f16, slice::HalfFloatSliceExt};
use serde::{Deserialize, Serialize};

use super::ivf::{dot, squared_l2};
use crate::Metric;

/// How an index holds its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit floats.
    #[default]
    F32,
    /// 16-bit (half) floats: half the memory; only for cosine collections, whose
    /// stored rows are unit vectors.
    F16,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
        })
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            other => Err(format!("unknown vector precision `{other}` (f32 or f16)")),
        }
    }
}

/// `dim` values per row, row-major.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) enum Rows {
    F32(Vec<f32>),
    /// Half floats by their bits (two bytes each in a file).
    F16(#[serde(with = "crate::text::half_floats::bits")] Vec<u16>),
}

impl Default for Rows {
    fn default() -> Self {
        Self::F32(Vec::new())
    }
}

impl Rows {
    #[cfg(test)]
    pub fn empty(precision: Precision) -> Self {
        match precision {
            Precision::F32 => Self::F32(Vec::new()),
            Precision::F16 => Self::F16(Vec::new()),
        }
    }

    pub fn precision(&self) -> Precision {
        match self {
            Self::F32(_) => Precision::F32,
            Self::F16(_) => Precision::F16,
        }
    }

    /// Values held (rows × dim).
    pub fn values(&self) -> usize {
        match self {
            Self::F32(values) => values.len(),
            Self::F16(bits) => bits.len(),
        }
    }

    /// Bytes the values take in memory.
    pub fn bytes(&self) -> usize {
        match self {
            Self::F32(values) => values.len() * 4,
            Self::F16(bits) => bits.len() * 2,
        }
    }

    /// The same rows held at `precision`.
    pub fn to_precision(&self, precision: Precision) -> Self {
        match (self, precision) {
            (Self::F32(values), Precision::F16) => {
                Self::F16(values.iter().map(|v| f16::from_f32(*v).to_bits()).collect())
            }
            (Self::F16(bits), Precision::F32) => {
                let mut values = vec![0.0f32; bits.len()];
                as_f16(bits).convert_to_f32_slice(&mut values);
                Self::F32(values)
            }
            (same, _) => same.clone(),
        }
    }

    /// Row `i` as 32-bit floats, into `buffer` (`dim` long); the slice to read.
    #[inline]
    pub fn row<'a>(&'a self, i: usize, buffer: &'a mut [f32]) -> &'a [f32] {
        let dim = buffer.len();
        match self {
            Self::F32(values) => &values[i * dim..(i + 1) * dim],
            Self::F16(bits) => {
                as_f16(&bits[i * dim..(i + 1) * dim]).convert_to_f32_slice(buffer);
                buffer
            }
        }
    }

    /// How near row `i` is to `query` under `metric` (higher is nearer); `buffer` is
    /// `dim` long.
    #[inline]
    pub fn score(&self, metric: Metric, query: &[f32], i: usize, buffer: &mut [f32]) -> f32 {
        let row = self.row(i, buffer);
        match metric {
            Metric::Cosine => dot(query, row),
            Metric::L2 => -squared_l2(query, row).sqrt(),
        }
    }

    pub fn push(&mut self, row: &[f32]) {
        match self {
            Self::F32(values) => values.extend_from_slice(row),
            Self::F16(bits) => bits.extend(row.iter().map(|v| f16::from_f32(*v).to_bits())),
        }
    }

    /// Overwrites row `i` (`row.len()` values).
    pub fn set(&mut self, i: usize, row: &[f32]) {
        let dim = row.len();
        match self {
            Self::F32(values) => values[i * dim..(i + 1) * dim].copy_from_slice(row),
            Self::F16(bits) => {
                for (slot, value) in bits[i * dim..(i + 1) * dim].iter_mut().zip(row) {
                    *slot = f16::from_f32(*value).to_bits();
                }
            }
        }
    }

    /// Moves the last row into row `i` and drops the last.
    pub fn swap_remove(&mut self, i: usize, dim: usize) {
        fn remove<T: Copy>(values: &mut Vec<T>, i: usize, dim: usize) {
            let last = values.len() / dim - 1;
            if i != last {
                let (head, tail) = values.split_at_mut(last * dim);
                head[i * dim..(i + 1) * dim].copy_from_slice(&tail[..dim]);
            }
            values.truncate(last * dim);
        }
        match self {
            Self::F32(values) => remove(values, i, dim),
            Self::F16(bits) => remove(bits, i, dim),
        }
    }

    /// The rows in `order` (old position of each new row).
    pub fn reordered(&self, order: &[u32], dim: usize) -> Self {
        fn pick<T: Copy>(values: &[T], order: &[u32], dim: usize) -> Vec<T> {
            let mut out = Vec::with_capacity(order.len() * dim);
            for &old in order {
                let old = old as usize;
                out.extend_from_slice(&values[old * dim..(old + 1) * dim]);
            }
            out
        }
        match self {
            Self::F32(values) => Self::F32(pick(values, order, dim)),
            Self::F16(bits) => Self::F16(pick(bits, order, dim)),
        }
    }
}

fn as_f16(bits: &[u16]) -> &[f16] {
    use half::slice::HalfBitsSliceExt;
    bits.reinterpret_cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_rows_read_back_within_a_thousandth_and_move_like_full_ones() {
        let rows_f32 = [[0.6f32, 0.8, 0.0], [0.0, 0.28, 0.96], [1.0, 0.0, 0.0]];
        let mut full = Rows::empty(Precision::F32);
        let mut half = Rows::empty(Precision::F16);
        for row in &rows_f32 {
            full.push(row);
            half.push(row);
        }
        assert_eq!(half.bytes() * 2, full.bytes());
        let mut buffer = [0.0f32; 3];
        let query = [0.6f32, 0.8, 0.0];
        for i in 0..3 {
            let exact = full.score(Metric::Cosine, &query, i, &mut buffer);
            let approximate = half.score(Metric::Cosine, &query, i, &mut buffer);
            assert!(
                (exact - approximate).abs() < 1e-3,
                "{i}: {exact} {approximate}"
            );
        }
        // The same moves on both: drop row 0 (row 2 takes its place), reorder, set.
        for rows in [&mut full, &mut half] {
            rows.swap_remove(0, 3);
            *rows = rows.reordered(&[1, 0], 3);
            rows.set(0, &[0.0, 1.0, 0.0]);
        }
        let read = |rows: &Rows, i: usize| {
            let mut buffer = [0.0f32; 3];
            rows.row(i, &mut buffer).to_vec()
        };
        assert_eq!(read(&full, 0), [0.0, 1.0, 0.0]);
        assert_eq!(read(&full, 1), [1.0, 0.0, 0.0]);
        assert_eq!(read(&half, 0), read(&full, 0));
        assert_eq!(read(&half, 1), read(&full, 1));
        assert_eq!(half.to_precision(Precision::F32), full);
        assert_eq!(full.to_precision(Precision::F16), half);
    }
}
