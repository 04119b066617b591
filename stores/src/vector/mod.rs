//! The embedded vector index: exact search over contiguous `f32` rows for small or
//! filtered searches, and an HNSW graph (`instant-distance`) for large collections.
//!
//! Rows live in one `Vec<f32>` (`dim` floats per item, row-major), so exact search is a
//! straight pass the compiler vectorizes. Cosine vectors are stored normalized, making
//! cosine a dot product. The HNSW graph is built lazily: after writes it is stale, and
//! the next unfiltered search on a collection of at least
//! [`EmbeddedVectorIndex::hnsw_threshold`] items rebuilds it on the blocking pool;
//! smaller collections and filtered searches (`only`) are answered exactly.
//!
//! [`EmbeddedVectorIndex::save`] writes everything, HNSW graph included, to one
//! checksummed file that is conventionally placed next to the graph snapshot
//! (`graph.kgs` → `graph.kgv`).
//!
//! The Qdrant backend ([`QdrantIndex`], in [`qdrant`]) implements the same trait over gRPC.
//!
//! ```
//! # tokio_test_block_on(async {
//! use kgmesh_stores::{vector::EmbeddedVectorIndex, Metric, VectorIndex, VectorItem};
//! let index = EmbeddedVectorIndex::new(2, Metric::Cosine);
//! index.upsert(vec![
//!     VectorItem { id: 1, vector: vec![1.0, 0.0], payload: vec![] },
//!     VectorItem { id: 2, vector: vec![0.0, 1.0], payload: vec![] },
//! ]).await.unwrap();
//! let hits = index.search(&[0.9, 0.1], 1, None).await.unwrap();
//! assert_eq!(hits[0].id, 1);
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(future: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
//! # }
//! ```

use std::{collections::HashMap, path::Path, sync::Arc};

use async_trait::async_trait;
use instant_distance::{Builder, HnswMap, Search};
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::{Metric, StoreError, StoreResult, VectorHit, VectorIndex, VectorItem};

pub mod qdrant;
pub use qdrant::{QdrantIndex, QdrantOptions};

const FILE_MAGIC: &[u8; 8] = b"KGMVECS\0";
const FILE_VERSION: u32 = 1;
/// Collections smaller than this are always searched exactly.
pub const DEFAULT_HNSW_THRESHOLD: usize = 20_000;

/// A stored row as an HNSW point. Distances: `1 - dot` for (normalized) cosine,
/// Euclidean for L2.
#[derive(Clone, Serialize, Deserialize)]
struct Row {
    values: Vec<f32>,
    cosine: bool,
}

impl instant_distance::Point for Row {
    fn distance(&self, other: &Self) -> f32 {
        if self.cosine {
            1.0 - dot(&self.values, &other.values)
        } else {
            squared_l2(&self.values, &other.values).sqrt()
        }
    }
}

#[derive(Default, Serialize, Deserialize)]
struct State {
    ids: Vec<u64>,
    /// `ids.len() * dim` floats.
    rows: Vec<f32>,
    payloads: Vec<Vec<(String, String)>>,
    /// HNSW over the rows as they were at the last build; values are ids.
    hnsw: Option<HnswMap<Row, u64>>,
    hnsw_fresh: bool,
}

#[derive(Serialize, Deserialize)]
struct Persisted {
    dim: usize,
    cosine: bool,
    state: State,
}

/// See the module documentation.
pub struct EmbeddedVectorIndex {
    dim: usize,
    metric: Metric,
    hnsw_threshold: usize,
    state: Arc<RwLock<State>>,
    /// id → row, rebuilt from `state.ids` when loaded.
    positions: Arc<RwLock<HashMap<u64, usize>>>,
}

impl EmbeddedVectorIndex {
    pub fn new(dim: usize, metric: Metric) -> Self {
        Self {
            dim,
            metric,
            hnsw_threshold: DEFAULT_HNSW_THRESHOLD,
            state: Arc::default(),
            positions: Arc::default(),
        }
    }

    /// Size from which unfiltered searches use HNSW (tests lower it).
    pub fn with_hnsw_threshold(mut self, threshold: usize) -> Self {
        self.hnsw_threshold = threshold;
        self
    }

    pub fn hnsw_threshold(&self) -> usize {
        self.hnsw_threshold
    }

    /// The conventional vector file beside a graph snapshot.
    pub fn path_beside(snapshot: &Path) -> std::path::PathBuf {
        snapshot.with_extension("kgv")
    }

    fn check_vector(&self, vector: &[f32]) -> StoreResult<()> {
        if vector.len() != self.dim {
            return Err(StoreError::InvalidQuery {
                reason: format!(
                    "vector has {} dimensions, the index has {}",
                    vector.len(),
                    self.dim
                ),
                hint: None,
            });
        }
        if vector.iter().any(|value| !value.is_finite()) {
            return Err(StoreError::InvalidQuery {
                reason: "vector contains NaN or infinite values".to_owned(),
                hint: None,
            });
        }
        Ok(())
    }

    fn prepared(&self, vector: &[f32]) -> Vec<f32> {
        match self.metric {
            Metric::Cosine => normalized(vector),
            Metric::L2 => vector.to_vec(),
        }
    }

    fn score(&self, query: &[f32], row: &[f32]) -> f32 {
        match self.metric {
            Metric::Cosine => dot(query, row),
            Metric::L2 => -squared_l2(query, row).sqrt(),
        }
    }

    /// Exact top-k over all rows or over the rows of `only`.
    fn exact(
        &self,
        state: &State,
        positions: &HashMap<u64, usize>,
        query: &[f32],
        k: usize,
        only: Option<&[u64]>,
    ) -> Vec<VectorHit> {
        let mut scored: Vec<(f32, usize)> = match only {
            Some(ids) => {
                let mut rows: Vec<usize> = ids
                    .iter()
                    .filter_map(|id| positions.get(id).copied())
                    .collect();
                rows.sort_unstable();
                rows.dedup();
                rows.into_iter()
                    .map(|row| {
                        (
                            self.score(query, &state.rows[row * self.dim..(row + 1) * self.dim]),
                            row,
                        )
                    })
                    .collect()
            }
            None => state
                .rows
                .chunks_exact(self.dim.max(1))
                .enumerate()
                .map(|(row, values)| (self.score(query, values), row))
                .collect(),
        };
        let k = k.min(scored.len());
        if k == 0 {
            return Vec::new();
        }
        let by_score = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        scored.select_nth_unstable_by(k - 1, by_score);
        scored.truncate(k);
        scored.sort_by(by_score);
        scored
            .into_iter()
            .map(|(score, row)| VectorHit {
                id: state.ids[row],
                score,
                payload: state.payloads[row].clone(),
            })
            .collect()
    }

    /// Builds the HNSW graph now if it is stale (normally done by the first search).
    pub fn build_hnsw(&self) {
        let mut state = self.state.write();
        rebuild(&mut state, self.dim, self.metric == Metric::Cosine);
    }

    /// Writes the index (rows, payloads, HNSW graph when built) to `path`.
    pub fn save(&self, path: &Path) -> StoreResult<()> {
        let state = self.state.read();
        let persisted = PersistedRef {
            dim: self.dim,
            cosine: self.metric == Metric::Cosine,
            state: &state,
        };
        let body = bincode::serde::encode_to_vec(&persisted, bincode::config::standard()).map_err(
            |error| StoreError::Backend {
                detail: format!("cannot encode the vector index: {error}"),
            },
        )?;
        let mut bytes = Vec::with_capacity(body.len() + 24);
        bytes.extend_from_slice(FILE_MAGIC);
        bytes.extend_from_slice(&FILE_VERSION.to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
        bytes.extend_from_slice(&body);
        let temporary = path.with_extension("kgv.tmp");
        std::fs::write(&temporary, &bytes).map_err(|error| io_error(&temporary, error))?;
        std::fs::rename(&temporary, path).map_err(|error| io_error(path, error))
    }

    /// Reads an index written by [`EmbeddedVectorIndex::save`].
    pub fn open(path: &Path) -> StoreResult<Self> {
        let corrupt = |detail: String| StoreError::Corrupt {
            path: path.display().to_string(),
            detail,
        };
        let bytes = std::fs::read(path).map_err(|error| io_error(path, error))?;
        if bytes.len() < 24 || &bytes[..8] != FILE_MAGIC {
            return Err(corrupt("not a kgmesh vector index (bad magic)".to_owned()));
        }
        let word = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        if word(8) != FILE_VERSION {
            return Err(corrupt(format!(
                "vector index version {}, expected {FILE_VERSION}",
                word(8)
            )));
        }
        let mut length = [0u8; 8];
        length.copy_from_slice(&bytes[16..24]);
        let body = &bytes[24..];
        if u64::from_le_bytes(length) != body.len() as u64 {
            return Err(corrupt("truncated vector index".to_owned()));
        }
        if crc32fast::hash(body) != word(12) {
            return Err(corrupt(
                "checksum mismatch: the file was altered or damaged".to_owned(),
            ));
        }
        let (persisted, _): (Persisted, usize) =
            bincode::serde::decode_from_slice(body, bincode::config::standard())
                .map_err(|error| corrupt(format!("does not decode: {error}")))?;
        let state = persisted.state;
        let dim = persisted.dim;
        if state.rows.len() != state.ids.len() * dim || state.payloads.len() != state.ids.len() {
            return Err(corrupt(
                "rows, ids and payloads disagree in length".to_owned(),
            ));
        }
        let positions = state
            .ids
            .iter()
            .enumerate()
            .map(|(row, id)| (*id, row))
            .collect();
        Ok(Self {
            dim,
            metric: if persisted.cosine {
                Metric::Cosine
            } else {
                Metric::L2
            },
            hnsw_threshold: DEFAULT_HNSW_THRESHOLD,
            state: Arc::new(RwLock::new(state)),
            positions: Arc::new(RwLock::new(positions)),
        })
    }

    /// Whether the HNSW graph reflects every write (for tests and status pages).
    pub fn hnsw_is_fresh(&self) -> bool {
        let state = self.state.read();
        state.hnsw_fresh && state.hnsw.is_some()
    }
}

#[derive(Serialize)]
struct PersistedRef<'a> {
    dim: usize,
    cosine: bool,
    state: &'a State,
}

fn rebuild(state: &mut State, dim: usize, cosine: bool) {
    if state.hnsw_fresh && state.hnsw.is_some() {
        return;
    }
    let points: Vec<Row> = state
        .rows
        .chunks_exact(dim.max(1))
        .map(|values| Row {
            values: values.to_vec(),
            cosine,
        })
        .collect();
    // A fixed seed keeps builds (and therefore results) reproducible.
    let map = Builder::default()
        .seed(0x6b67_6d65_7368)
        .build(points, state.ids.clone());
    state.hnsw = Some(map);
    state.hnsw_fresh = true;
}

fn io_error(path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        detail: error.to_string(),
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

fn normalized(vector: &[f32]) -> Vec<f32> {
    let norm = dot(vector, vector).sqrt();
    if norm == 0.0 {
        return vector.to_vec();
    }
    vector.iter().map(|value| value / norm).collect()
}

#[async_trait]
impl VectorIndex for EmbeddedVectorIndex {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn metric(&self) -> Metric {
        self.metric
    }

    async fn upsert(&self, items: Vec<VectorItem>) -> StoreResult<()> {
        for item in &items {
            self.check_vector(&item.vector)?;
        }
        let mut state = self.state.write();
        let mut positions = self.positions.write();
        for item in items {
            let row = self.prepared(&item.vector);
            match positions.get(&item.id) {
                Some(existing) => {
                    let existing = *existing;
                    state.rows[existing * self.dim..(existing + 1) * self.dim]
                        .copy_from_slice(&row);
                    state.payloads[existing] = item.payload;
                }
                None => {
                    positions.insert(item.id, state.ids.len());
                    state.ids.push(item.id);
                    state.rows.extend_from_slice(&row);
                    state.payloads.push(item.payload);
                }
            }
        }
        state.hnsw_fresh = false;
        Ok(())
    }

    async fn search(
        &self,
        query: &[f32],
        k: usize,
        only: Option<&[u64]>,
    ) -> StoreResult<Vec<VectorHit>> {
        self.check_vector(query)?;
        let query = self.prepared(query);
        let large = self.state.read().ids.len() >= self.hnsw_threshold;
        if only.is_some() || !large {
            let state = self.state.read();
            let positions = self.positions.read();
            return Ok(self.exact(&state, &positions, &query, k, only));
        }
        let state = self.state.clone();
        let positions = self.positions.clone();
        let dim = self.dim;
        let cosine = self.metric == Metric::Cosine;
        let metric = self.metric;
        tokio::task::spawn_blocking(move || {
            {
                let needs_build = {
                    let state = state.read();
                    !(state.hnsw_fresh && state.hnsw.is_some())
                };
                if needs_build {
                    rebuild(&mut state.write(), dim, cosine);
                }
            }
            let state = state.read();
            let positions = positions.read();
            let Some(map) = state.hnsw.as_ref() else {
                return Vec::new();
            };
            let point = Row {
                values: query.clone(),
                cosine,
            };
            let mut search = Search::default();
            map.search(&point, &mut search)
                .take(k)
                .filter_map(|item| {
                    let row = *positions.get(item.value)?;
                    let values = &state.rows[row * dim..(row + 1) * dim];
                    let score = match metric {
                        Metric::Cosine => dot(&query, values),
                        Metric::L2 => -squared_l2(&query, values).sqrt(),
                    };
                    Some(VectorHit {
                        id: *item.value,
                        score,
                        payload: state.payloads[row].clone(),
                    })
                })
                .collect()
        })
        .await
        .map_err(|error| StoreError::Backend {
            detail: format!("vector search task failed: {error}"),
        })
    }

    async fn delete(&self, ids: &[u64]) -> StoreResult<()> {
        let mut state = self.state.write();
        let mut positions = self.positions.write();
        for id in ids {
            let Some(row) = positions.remove(id) else {
                continue;
            };
            let last = state.ids.len() - 1;
            if row != last {
                // Move the last row into the hole.
                let dim = self.dim;
                let (head, tail) = state.rows.split_at_mut(last * dim);
                head[row * dim..(row + 1) * dim].copy_from_slice(&tail[..dim]);
                state.ids.swap(row, last);
                state.payloads.swap(row, last);
                let moved = state.ids[row];
                positions.insert(moved, row);
            }
            state.ids.pop();
            state.payloads.pop();
            let new_length = state.ids.len() * self.dim;
            state.rows.truncate(new_length);
        }
        state.hnsw_fresh = false;
        Ok(())
    }

    async fn len(&self) -> StoreResult<usize> {
        Ok(self.state.read().ids.len())
    }
}

#[cfg(test)]
mod tests;
