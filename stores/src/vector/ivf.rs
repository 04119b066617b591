//! An inverted-file (IVF) index over the embedded index's rows: the rows are clustered
//! by k-means into about √n lists around their centroids, and a search scans only the
//! lists whose centroids are nearest to the query, scoring their rows exactly.
//!
//! It replaces an HNSW graph that took 47 minutes to build over 875k MiniLM vectors on
//! two cores (and 1.6 GB of graph beside the rows): k-means on a sample plus one
//! assignment pass is a few dense matrix products, split over every core, and the index
//! itself is one list position per row plus the centroids. Recall is set by the share of
//! lists scanned ([`probe_count`]); `benches/benches/vectors.rs` measures recall@10
//! against exact search, search latency and build time.

use serde::{Deserialize, Serialize};

use super::rows::Rows;

/// Lloyd iterations of k-means on the sample.
const ITERATIONS: usize = 10;
/// Sample rows per list that k-means trains on (at most; all rows when fewer).
const SAMPLE_PER_LIST: usize = 64;
/// Most lists.
const MAX_LISTS: usize = 4_096;
/// Fewest lists scanned per search.
const MIN_PROBES: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Ivf {
    dim: usize,
    cosine: bool,
    /// `lists * dim` floats; unit length for cosine.
    centroids: Vec<f32>,
    /// Where each list's rows start, plus the row count: the rows are stored list by
    /// list, so a list is one contiguous run of rows (scanned at memory speed rather
    /// than row by scattered row).
    starts: Vec<u32>,
}

/// How many lists an index over `rows` rows has: about √rows.
pub(super) fn list_count(rows: usize) -> usize {
    ((rows as f64).sqrt().round() as usize).clamp(1, MAX_LISTS)
}

/// How many of `lists` lists a search scans: a quarter, and at least [`MIN_PROBES`].
/// Measured (`--bench vectors -- --minilm`, MiniLM embeddings of MetaQA's 42,797 names
/// searched with dev questions): an eighth gave recall@10 0.861, a quarter 0.930, at
/// 1.2 and 2.0 ms a search against 6.9 ms exact.
pub(super) fn probe_count(lists: usize) -> usize {
    (lists / 4).max(MIN_PROBES).min(lists)
}

/// `Σ term(a[i], b[i])` with eight running sums, which the compiler turns into vector
/// instructions (a plain sum must keep its order and cannot).
#[inline(always)]
pub(super) fn lane_sum<T: Copy>(a: &[f32], b: &[T], term: impl Fn(f32, T) -> f32) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(&x, &y)| term(x, y))
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            sums[lane] += term(x[lane], y[lane]);
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Dot product ([`lane_sum`]).
pub(super) fn dot(a: &[f32], b: &[f32]) -> f32 {
    lane_sum(a, b, |x, y| x * y)
}

/// Squared Euclidean distance ([`lane_sum`]).
pub(super) fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    lane_sum(a, b, |x, y| (x - y) * (x - y))
}

impl Ivf {
    /// Clusters `rows` (`dim` floats each, unit length for cosine) into [`list_count`]
    /// lists; returns the index and the order the rows must be stored in for it (the
    /// old position of each row, list by list). Deterministic: the same rows give the
    /// same index.
    pub(super) fn build(rows: &Rows, dim: usize, cosine: bool) -> (Self, Vec<u32>) {
        let count = rows.values().checked_div(dim).unwrap_or(0);
        if count == 0 {
            let empty = Self {
                dim,
                cosine,
                centroids: Vec::new(),
                starts: vec![0],
            };
            return (empty, Vec::new());
        }
        let lists = list_count(count).min(count.max(1));
        // Rows read as 32-bit floats (half-float rows are converted into it).
        let mut buffer = vec![0.0f32; dim];
        // A sample spread evenly over the rows: k-means trains on it.
        let sample_size = (lists * SAMPLE_PER_LIST).min(count);
        let sample: Vec<usize> = (0..sample_size)
            .map(|i| i * count / sample_size.max(1))
            .collect();
        // Initial centroids: rows spread evenly over the sample.
        let mut centroids: Vec<f32> = Vec::with_capacity(lists * dim);
        for i in 0..lists {
            centroids.extend_from_slice(rows.row(sample[i * sample.len() / lists], &mut buffer));
        }
        let mut index = Self {
            dim,
            cosine,
            centroids: Vec::new(),
            starts: Vec::new(),
        };
        for _ in 0..ITERATIONS {
            index.centroids = centroids.clone();
            let assigned = index.nearest_lists(rows, &sample);
            let mut sums = vec![0.0f32; lists * dim];
            let mut members = vec![0usize; lists];
            for (&list, &at) in assigned.iter().zip(&sample) {
                members[list] += 1;
                let values = rows.row(at, &mut buffer);
                for (sum, value) in sums[list * dim..(list + 1) * dim].iter_mut().zip(values) {
                    *sum += value;
                }
            }
            for list in 0..lists {
                // An empty list keeps its centroid.
                if members[list] == 0 {
                    continue;
                }
                let mean = &mut sums[list * dim..(list + 1) * dim];
                for value in mean.iter_mut() {
                    *value /= members[list] as f32;
                }
                if cosine {
                    let norm = dot(mean, mean).sqrt();
                    if norm > 0.0 {
                        mean.iter_mut().for_each(|value| *value /= norm);
                    }
                }
                centroids[list * dim..(list + 1) * dim].copy_from_slice(mean);
            }
        }
        index.centroids = centroids;
        let all: Vec<usize> = (0..count).collect();
        let assigned = index.nearest_lists(rows, &all);
        let mut members: Vec<Vec<u32>> = vec![Vec::new(); lists];
        for (at, list) in assigned.into_iter().enumerate() {
            members[list].push(at as u32);
        }
        index.starts = std::iter::once(0)
            .chain(members.iter().scan(0u32, |end, list| {
                *end += list.len() as u32;
                Some(*end)
            }))
            .collect();
        (index, members.concat())
    }

    /// The list of each row of `which`, computed on every core.
    fn nearest_lists(&self, rows: &Rows, which: &[usize]) -> Vec<usize> {
        let threads = std::thread::available_parallelism()
            .map(usize::from)
            .unwrap_or(1)
            .clamp(1, 64);
        let chunk = which.len().div_ceil(threads).max(1);
        let mut out = vec![0usize; which.len()];
        std::thread::scope(|scope| {
            for (slots, positions) in out.chunks_mut(chunk).zip(which.chunks(chunk)) {
                scope.spawn(move || {
                    let mut buffer = vec![0.0f32; self.dim];
                    for (slot, &at) in slots.iter_mut().zip(positions) {
                        *slot = self.nearest(rows.row(at, &mut buffer));
                    }
                });
            }
        });
        out
    }

    /// Similarity of a vector to a centroid: higher is nearer.
    fn closeness(&self, vector: &[f32], list: usize) -> f32 {
        let centroid = &self.centroids[list * self.dim..(list + 1) * self.dim];
        if self.cosine {
            dot(vector, centroid)
        } else {
            -squared_l2(vector, centroid)
        }
    }

    fn nearest(&self, vector: &[f32]) -> usize {
        (0..self.lists())
            .map(|list| (self.closeness(vector, list), list))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)))
            .map_or(0, |(_, list)| list)
    }

    /// The row ranges of the [`probe_count`] lists nearest to `query`, nearest first.
    pub(super) fn candidates(
        &self,
        query: &[f32],
    ) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let mut ranked: Vec<(f32, usize)> = (0..self.lists())
            .map(|list| (self.closeness(query, list), list))
            .collect();
        let probes = probe_count(ranked.len());
        if probes < ranked.len() {
            ranked.select_nth_unstable_by(probes - 1, |a, b| b.0.total_cmp(&a.0));
            ranked.truncate(probes);
        }
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        ranked
            .into_iter()
            .map(move |(_, list)| self.starts[list] as usize..self.starts[list + 1] as usize)
    }

    /// Whether the index was built over `rows` rows of `dim` floats.
    pub(super) fn covers(&self, rows: usize, dim: usize) -> bool {
        self.dim == dim
            && self.starts.len() == self.lists() + 1
            && self.starts.windows(2).all(|w| w[0] <= w[1])
            && self.starts.last().map(|&end| end as usize) == Some(rows)
    }

    /// How many lists there are.
    pub(super) fn lists(&self) -> usize {
        self.centroids.len() / self.dim.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_collection_has_one_empty_index() {
        let (index, order) = Ivf::build(&Rows::F32(Vec::new()), 4, true);
        assert!(order.is_empty());
        assert!(index.covers(0, 4));
        assert_eq!(index.candidates(&[1.0, 0.0, 0.0, 0.0]).count(), 0);
    }

    #[test]
    fn unrolled_products_equal_plain_ones() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..19).map(|i| 2.0 - i as f32 * 0.25).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
        assert!((squared_l2(&a, &b) - plain).abs() < 1e-3);
    }

    #[test]
    fn every_row_lands_in_one_list_and_lists_follow_clusters() {
        // Two tight clusters on either side of the origin, 2-d.
        let mut rows = Vec::new();
        for i in 0..200 {
            let jitter = (i % 7) as f32 * 0.01;
            if i % 2 == 0 {
                rows.extend_from_slice(&[1.0 + jitter, 0.0]);
            } else {
                rows.extend_from_slice(&[-1.0 - jitter, 0.0]);
            }
        }
        let (index, order) = Ivf::build(&Rows::F32(rows.clone()), 2, false);
        assert!(index.covers(200, 2));
        assert_eq!(index.lists(), list_count(200));
        let mut seen = order.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..200).collect::<Vec<u32>>(), "each row once");
        // Stored in that order, no list mixes the two clusters.
        let side = |stored: usize| rows[order[stored] as usize * 2] > 0.0;
        for list in 0..index.lists() {
            let range = index.starts[list] as usize..index.starts[list + 1] as usize;
            let sides: std::collections::HashSet<bool> = range.clone().map(side).collect();
            assert!(sides.len() <= 1, "{range:?}");
        }
        // The query's side is scanned first.
        let first = index
            .candidates(&[0.9, 0.0])
            .find(|r| !r.is_empty())
            .unwrap();
        assert!(side(first.start));
    }
}
