//! The rows of the embedded vector index, held as 32-bit floats, as IEEE half floats or
//! as 8-bit integers with one scale per row.
//!
//! Half floats take half the memory and half the file. They keep about three decimal
//! digits, which for unit vectors (cosine collections, every value in [-1, 1]) moves a
//! cosine by about 10⁻³: `benches/benches/vectors.rs` measures recall@10 against exact
//! search over the 32-bit rows. A search converts each row it scores back to 32 bits
//! (with the CPU's conversion instructions where it has them) and takes the same
//! vectorized dot product.
//!
//! 8-bit rows take a quarter of the memory, plus four bytes a row: each row is divided
//! by its largest magnitude over 127 (its scale) and rounded, so a value is off by at
//! most half a step, `scale / 2`. A search multiplies the codes by the 32-bit query
//! directly and scales the sum once per row.

use half::{f16, slice::HalfFloatSliceExt};
use serde::{Deserialize, Serialize};

use super::ivf::{dot, lane_sum, squared_l2};
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
    /// 8-bit integers and one 32-bit scale per row: a quarter of the memory and a
    /// little more; only for cosine collections.
    Int8,
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::F32 => "f32",
            Self::F16 => "f16",
            Self::Int8 => "int8",
        })
    }
}

impl std::str::FromStr for Precision {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "f32" => Ok(Self::F32),
            "f16" => Ok(Self::F16),
            "int8" => Ok(Self::Int8),
            other => Err(format!(
                "unknown vector precision `{other}` (f32, f16 or int8)"
            )),
        }
    }
}

/// `dim` values per row, row-major.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) enum Rows {
    F32(Vec<f32>),
    /// Half floats by their bits (two bytes each in a file).
    F16(#[serde(with = "crate::text::half_floats::bits")] Vec<u16>),
    /// 8-bit codes (a value is `code × scale`) and each row's scale.
    Int8 {
        #[serde(with = "codes")]
        codes: Vec<i8>,
        scales: Vec<f32>,
    },
}

impl Default for Rows {
    fn default() -> Self {
        Self::F32(Vec::new())
    }
}

impl Rows {
    pub fn empty(precision: Precision) -> Self {
        match precision {
            Precision::F32 => Self::F32(Vec::new()),
            Precision::F16 => Self::F16(Vec::new()),
            Precision::Int8 => Self::Int8 {
                codes: Vec::new(),
                scales: Vec::new(),
            },
        }
    }

    pub fn precision(&self) -> Precision {
        match self {
            Self::F32(_) => Precision::F32,
            Self::F16(_) => Precision::F16,
            Self::Int8 { .. } => Precision::Int8,
        }
    }

    /// Values held (rows × dim).
    pub fn values(&self) -> usize {
        match self {
            Self::F32(values) => values.len(),
            Self::F16(bits) => bits.len(),
            Self::Int8 { codes, .. } => codes.len(),
        }
    }

    /// Whether an 8-bit collection has one scale per row of `dim` values.
    pub fn consistent(&self, dim: usize) -> bool {
        match self {
            Self::Int8 { codes, scales } => codes.len() == scales.len() * dim,
            _ => true,
        }
    }

    /// Bytes the values take in memory.
    pub fn bytes(&self) -> usize {
        match self {
            Self::F32(values) => values.len() * 4,
            Self::F16(bits) => bits.len() * 2,
            Self::Int8 { codes, scales } => codes.len() + scales.len() * 4,
        }
    }

    /// The same rows held at `precision`; `dim` values a row.
    pub fn to_precision(&self, precision: Precision, dim: usize) -> Self {
        if self.precision() == precision {
            return self.clone();
        }
        let full = match self {
            Self::F32(values) => values.clone(),
            Self::F16(bits) => {
                let mut values = vec![0.0f32; bits.len()];
                as_f16(bits).convert_to_f32_slice(&mut values);
                values
            }
            Self::Int8 { .. } => {
                let rows = self.values().checked_div(dim).unwrap_or(0);
                let mut values = vec![0.0f32; rows * dim];
                let mut buffer = vec![0.0f32; dim];
                for (i, out) in values.chunks_exact_mut(dim.max(1)).enumerate() {
                    out.copy_from_slice(self.row(i, &mut buffer));
                }
                values
            }
        };
        let mut rows = Self::empty(precision);
        match &mut rows {
            Self::F32(values) => *values = full,
            _ => {
                for row in full.chunks_exact(dim.max(1)) {
                    rows.push(row);
                }
            }
        }
        rows
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
            Self::Int8 { codes, scales } => {
                let scale = scales[i];
                for (slot, &code) in buffer.iter_mut().zip(&codes[i * dim..(i + 1) * dim]) {
                    *slot = f32::from(code) * scale;
                }
                buffer
            }
        }
    }

    /// How near row `i` is to `query` under `metric` (higher is nearer); `buffer` is
    /// `dim` long.
    #[inline]
    pub fn score(&self, metric: Metric, query: &[f32], i: usize, buffer: &mut [f32]) -> f32 {
        if let (Self::Int8 { codes, scales }, Metric::Cosine) = (self, metric) {
            let dim = buffer.len();
            return scales[i] * dot_codes(query, &codes[i * dim..(i + 1) * dim]);
        }
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
            Self::Int8 { codes, scales } => {
                let scale = quantize_scale(row);
                codes.extend(row.iter().map(|&v| quantize(v, scale)));
                scales.push(scale);
            }
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
            Self::Int8 { codes, scales } => {
                let scale = quantize_scale(row);
                for (slot, &value) in codes[i * dim..(i + 1) * dim].iter_mut().zip(row) {
                    *slot = quantize(value, scale);
                }
                scales[i] = scale;
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
            Self::Int8 { codes, scales } => {
                remove(codes, i, dim);
                remove(scales, i, 1);
            }
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
            Self::Int8 { codes, scales } => Self::Int8 {
                codes: pick(codes, order, dim),
                scales: pick(scales, order, 1),
            },
        }
    }
}

/// The scale of a row held in 8 bits: its largest magnitude maps to ±127.
fn quantize_scale(row: &[f32]) -> f32 {
    row.iter().fold(0.0f32, |max, v| max.max(v.abs())) / 127.0
}

fn quantize(value: f32, scale: f32) -> i8 {
    if scale > 0.0 {
        (value / scale).round().clamp(-127.0, 127.0) as i8
    } else {
        0
    }
}

/// `Σ query[i] × codes[i]` ([`lane_sum`]).
#[inline]
fn dot_codes(query: &[f32], codes: &[i8]) -> f32 {
    lane_sum(query, codes, |q, c| q * f32::from(c))
}

/// 8-bit codes written as one byte string (no per-value prefix).
mod codes {
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(codes: &[i8], serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
        serializer.serialize_bytes(&bytes)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<i8>, D::Error> {
        Ok(crate::text::half_floats::byte_string(deserializer)?
            .into_iter()
            .map(|b| b as i8)
            .collect())
    }
}

fn as_f16(bits: &[u16]) -> &[f16] {
    use half::slice::HalfBitsSliceExt;
    bits.reinterpret_cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three unit rows of three values.
    const ROWS: [[f32; 3]; 3] = [[0.6, 0.8, 0.0], [0.0, 0.28, 0.96], [1.0, 0.0, 0.0]];
    const QUERY: [f32; 3] = [0.6, 0.8, 0.0];

    fn filled(precision: Precision) -> Rows {
        let mut rows = Rows::empty(precision);
        for row in &ROWS {
            rows.push(row);
        }
        rows
    }

    /// Drops row 0 (row 2 takes its place), reorders, sets row 0.
    fn moved(rows: &mut Rows) {
        rows.swap_remove(0, 3);
        *rows = rows.reordered(&[1, 0], 3);
        rows.set(0, &[0.0, 1.0, 0.0]);
    }

    fn read(rows: &Rows, i: usize) -> Vec<f32> {
        let mut buffer = [0.0f32; 3];
        rows.row(i, &mut buffer).to_vec()
    }

    #[test]
    fn half_rows_read_back_within_a_thousandth_and_move_like_full_ones() {
        let mut full = filled(Precision::F32);
        let mut half = filled(Precision::F16);
        assert_eq!(half.bytes() * 2, full.bytes());
        let mut buffer = [0.0f32; 3];
        for i in 0..3 {
            let exact = full.score(Metric::Cosine, &QUERY, i, &mut buffer);
            let approximate = half.score(Metric::Cosine, &QUERY, i, &mut buffer);
            assert!(
                (exact - approximate).abs() < 1e-3,
                "{i}: {exact} {approximate}"
            );
        }
        // The same moves on both.
        moved(&mut full);
        moved(&mut half);
        assert_eq!(read(&full, 0), [0.0, 1.0, 0.0]);
        assert_eq!(read(&full, 1), [1.0, 0.0, 0.0]);
        assert_eq!(read(&half, 0), read(&full, 0));
        assert_eq!(read(&half, 1), read(&full, 1));
        assert_eq!(half.to_precision(Precision::F32, 3), full);
        assert_eq!(full.to_precision(Precision::F16, 3), half);
    }

    #[test]
    fn eight_bit_rows_score_within_half_a_step_and_move_like_full_ones() {
        let mut full = filled(Precision::F32);
        let mut codes = filled(Precision::Int8);
        assert_eq!(codes.bytes(), 3 * 3 + 3 * 4);
        assert!(codes.consistent(3));
        let mut buffer = [0.0f32; 3];
        for (i, row) in ROWS.iter().enumerate() {
            let exact = full.score(Metric::Cosine, &QUERY, i, &mut buffer);
            let approximate = codes.score(Metric::Cosine, &QUERY, i, &mut buffer);
            // Each value is off by at most half a step of its row's scale.
            let step = row.iter().fold(0.0f32, |m, v| m.max(v.abs())) / 127.0;
            let bound = step / 2.0 * QUERY.iter().map(|q| q.abs()).sum::<f32>();
            assert!(
                (exact - approximate).abs() <= bound + 1e-6,
                "{i}: {exact} {approximate} (bound {bound})"
            );
            // The largest value of a row is held exactly.
            let held = read(&codes, i);
            let at = (0..3)
                .max_by(|&a, &b| row[a].abs().total_cmp(&row[b].abs()))
                .unwrap();
            assert!((held[at] - row[at]).abs() < 1e-6, "{held:?} {row:?}");
        }
        // A zero row has a zero scale and scores zero.
        let mut zero = Rows::empty(Precision::Int8);
        zero.push(&[0.0, 0.0, 0.0]);
        assert_eq!(zero.score(Metric::Cosine, &QUERY, 0, &mut buffer), 0.0);
        // The same moves on both.
        moved(&mut full);
        moved(&mut codes);
        assert!(codes.consistent(3));
        assert_eq!(read(&codes, 0), [0.0, 1.0, 0.0]);
        assert_eq!(read(&codes, 1), [1.0, 0.0, 0.0]);
        // Converted to full floats and back, the codes are the same.
        let widened = codes.to_precision(Precision::F32, 3);
        assert_eq!(widened.to_precision(Precision::Int8, 3), codes);
        assert_eq!(full.to_precision(Precision::Int8, 3), codes);
    }
}
