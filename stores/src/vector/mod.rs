//! The embedded vector index: exact search over contiguous `f32` rows for small or
//! filtered searches, and an inverted-file index ([`ivf`]: k-means lists, the nearest
//! lists scanned exactly) for large collections.
//!
//! Rows live in one contiguous buffer (`dim` values per item, row-major), so exact
//! search is a straight pass the compiler vectorizes. They are 32-bit floats, half
//! floats with [`Precision::F16`] (half the memory; each row scored is converted back,
//! see `rows.rs`) or 8-bit codes with a scale per row with [`Precision::Int8`] (a
//! quarter of the memory and four bytes a row). Cosine vectors are stored normalized, making cosine a dot product. The lists are built lazily: after writes they are stale, and
//! the next unfiltered search on a collection of at least
//! [`EmbeddedVectorIndex::index_threshold`] items rebuilds them on the blocking pool
//! (every core; seconds for a million MiniLM vectors, where the HNSW graph used before
//! took most of an hour); smaller collections and filtered searches (`only`) are
//! answered exactly.
//!
//! [`EmbeddedVectorIndex::save`] writes everything, lists included, to one checksummed
//! file that is conventionally placed next to the graph snapshot (`graph.kgs` →
//! `graph.kgv`). Files of earlier versions are still read: version 2 (32-bit rows and
//! lists) as it is, version 1 (with an HNSW graph) with its rows kept and the lists
//! built on first use.
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
use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::{
    common::invalid_query, Metric, StoreError, StoreResult, VectorHit, VectorIndex, VectorItem,
};

mod ivf;
pub mod qdrant;
mod rows;
use ivf::{dot, squared_l2, Ivf};
pub use qdrant::{QdrantIndex, QdrantOptions};
pub use rows::Precision;
use rows::Rows;

const FILE_MAGIC: &[u8; 8] = b"KGMVECS\0";
/// 4: rows as 32- or 16-bit floats or 8-bit codes; 3: the same without 8-bit codes
/// (read as it is); 2: 32-bit rows and inverted lists (still read); 1: an HNSW graph
/// (still read, the graph dropped).
const FILE_VERSION: u32 = 4;
/// Collections smaller than this are always searched exactly.
pub const DEFAULT_INDEX_THRESHOLD: usize = 20_000;

#[derive(Default, Serialize, Deserialize)]
struct State {
    ids: Vec<u64>,
    /// `ids.len() * dim` values.
    rows: Rows,
    payloads: Vec<Vec<(String, String)>>,
    /// Inverted lists over the rows as they were at the last build.
    ivf: Option<Ivf>,
    ivf_fresh: bool,
}

/// A version-2 file's state: 32-bit rows.
#[derive(Deserialize)]
struct StateV2 {
    ids: Vec<u64>,
    rows: Vec<f32>,
    payloads: Vec<Vec<(String, String)>>,
    ivf: Option<Ivf>,
    ivf_fresh: bool,
}

#[derive(Deserialize)]
struct PersistedV2 {
    dim: usize,
    cosine: bool,
    state: StateV2,
}

impl From<PersistedV2> for Persisted {
    fn from(old: PersistedV2) -> Self {
        Persisted {
            dim: old.dim,
            cosine: old.cosine,
            state: State {
                ids: old.state.ids,
                rows: Rows::F32(old.state.rows),
                payloads: old.state.payloads,
                ivf: old.state.ivf,
                ivf_fresh: old.state.ivf_fresh,
            },
        }
    }
}

/// A version-1 file's rows, as a version-2 file without lists.
impl From<LegacyPersisted> for PersistedV2 {
    fn from(legacy: LegacyPersisted) -> Self {
        PersistedV2 {
            dim: legacy.dim,
            cosine: legacy.cosine,
            state: StateV2 {
                ids: legacy.state.ids,
                rows: legacy.state.rows,
                payloads: legacy.state.payloads,
                ivf: None,
                ivf_fresh: false,
            },
        }
    }
}

/// A version-1 file: the same rows, and an HNSW graph this version does not use.
#[derive(Deserialize)]
struct LegacyPersisted {
    dim: usize,
    cosine: bool,
    state: LegacyState,
}

#[derive(Deserialize)]
struct LegacyState {
    ids: Vec<u64>,
    rows: Vec<f32>,
    payloads: Vec<Vec<(String, String)>>,
    #[allow(dead_code)]
    hnsw: Option<instant_distance::HnswMap<LegacyRow, u64>>,
    #[allow(dead_code)]
    hnsw_fresh: bool,
}

/// A point of a version-1 HNSW graph, read only to be dropped.
#[derive(Clone, Serialize, Deserialize)]
struct LegacyRow {
    values: Vec<f32>,
    cosine: bool,
}

impl instant_distance::Point for LegacyRow {
    fn distance(&self, other: &Self) -> f32 {
        if self.cosine {
            1.0 - dot(&self.values, &other.values)
        } else {
            squared_l2(&self.values, &other.values).sqrt()
        }
    }
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
    index_threshold: usize,
    state: Arc<RwLock<State>>,
    /// id → row, rebuilt from `state.ids` when loaded.
    positions: Arc<RwLock<HashMap<u64, usize>>>,
}

impl EmbeddedVectorIndex {
    pub fn new(dim: usize, metric: Metric) -> Self {
        Self {
            dim,
            metric,
            index_threshold: DEFAULT_INDEX_THRESHOLD,
            state: Arc::default(),
            positions: Arc::default(),
        }
    }

    /// Holds the rows at `precision` (those already held are converted). Half floats
    /// and 8-bit codes need unit rows, so an L2 collection keeps 32-bit floats
    /// whatever is asked.
    pub fn with_precision(self, precision: Precision) -> Self {
        let precision = match self.metric {
            Metric::Cosine => precision,
            Metric::L2 => Precision::F32,
        };
        {
            let mut state = self.state.write();
            if state.rows.precision() != precision {
                state.rows = state.rows.to_precision(precision, self.dim);
            }
        }
        self
    }

    pub fn precision(&self) -> Precision {
        self.state.read().rows.precision()
    }

    /// Bytes the rows take in memory.
    pub fn row_bytes(&self) -> usize {
        self.state.read().rows.bytes()
    }

    /// Size from which unfiltered searches use the inverted lists (tests lower it).
    pub fn with_index_threshold(mut self, threshold: usize) -> Self {
        self.index_threshold = threshold;
        self
    }

    pub fn index_threshold(&self) -> usize {
        self.index_threshold
    }

    /// The conventional vector file beside a graph snapshot.
    pub fn path_beside(snapshot: &Path) -> std::path::PathBuf {
        snapshot.with_extension("kgv")
    }

    fn check_vector(&self, vector: &[f32]) -> StoreResult<()> {
        check_vector(vector, self.dim)
    }

    fn prepared(&self, vector: &[f32]) -> Vec<f32> {
        match self.metric {
            Metric::Cosine => normalized(vector),
            Metric::L2 => vector.to_vec(),
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
        let mut buffer = vec![0.0f32; self.dim];
        let mut score = |row: usize| state.rows.score(self.metric, query, row, &mut buffer);
        let scored: Vec<(f32, usize)> = match only {
            Some(ids) => {
                let mut rows: Vec<usize> = ids
                    .iter()
                    .filter_map(|id| positions.get(id).copied())
                    .collect();
                rows.sort_unstable();
                rows.dedup();
                rows.into_iter().map(|row| (score(row), row)).collect()
            }
            None => (0..state.ids.len()).map(|row| (score(row), row)).collect(),
        };
        top_hits(state, scored, k)
    }

    /// Builds the inverted lists now if they are stale (normally done by the first
    /// large search).
    pub fn build_index(&self) {
        let mut state = self.state.write();
        let mut positions = self.positions.write();
        rebuild(
            &mut state,
            &mut positions,
            self.dim,
            self.metric == Metric::Cosine,
        );
    }

    /// The exact top `k` over every row, whatever the collection's size (the baseline
    /// the inverted lists are measured against).
    pub fn exact_search(&self, query: &[f32], k: usize) -> StoreResult<Vec<VectorHit>> {
        self.check_vector(query)?;
        let query = self.prepared(query);
        let state = self.state.read();
        let positions = self.positions.read();
        Ok(self.exact(&state, &positions, &query, k, None))
    }

    /// How many inverted lists the index has (0 before they are built).
    pub fn list_count(&self) -> usize {
        self.state.read().ivf.as_ref().map_or(0, Ivf::lists)
    }

    /// Writes the index (rows, payloads, lists when built) to `path`.
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
        crate::framed::write(path, FILE_MAGIC, FILE_VERSION, &body).map(|_| ())
    }

    /// Reads an index written by [`EmbeddedVectorIndex::save`].
    pub fn open(path: &Path) -> StoreResult<Self> {
        let corrupt = |detail: String| crate::framed::corrupt(path, detail);
        let (version, body) = crate::framed::read(path, FILE_MAGIC, "vector index")?;
        if !(1..=FILE_VERSION).contains(&version) {
            return Err(corrupt(format!(
                "vector index version {version}, expected {FILE_VERSION}, 3, 2 or 1"
            )));
        }
        fn decode<T: serde::de::DeserializeOwned>(
            body: &[u8],
        ) -> Result<T, bincode::error::DecodeError> {
            bincode::serde::decode_from_slice(body, bincode::config::standard())
                .map(|(value, _)| value)
        }
        let decoded = match version {
            1 => decode::<LegacyPersisted>(&body).map(|v1| PersistedV2::from(v1).into()),
            2 => decode::<PersistedV2>(&body).map(Persisted::from),
            _ => decode::<Persisted>(&body),
        };
        let persisted = decoded.map_err(|error| corrupt(format!("does not decode: {error}")))?;
        let state = persisted.state;
        let dim = persisted.dim;
        if state.rows.values() != state.ids.len() * dim
            || !state.rows.consistent(dim)
            || state.payloads.len() != state.ids.len()
        {
            return Err(corrupt(
                "rows, ids and payloads disagree in length".to_owned(),
            ));
        }
        if state
            .ivf
            .as_ref()
            .is_some_and(|ivf| !ivf.covers(state.ids.len(), dim))
        {
            return Err(corrupt(
                "the inverted lists do not cover the rows".to_owned(),
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
            index_threshold: DEFAULT_INDEX_THRESHOLD,
            state: Arc::new(RwLock::new(state)),
            positions: Arc::new(RwLock::new(positions)),
        })
    }

    /// Whether the inverted lists reflect every write (for tests and status pages).
    pub fn index_is_fresh(&self) -> bool {
        let state = self.state.read();
        state.ivf_fresh && state.ivf.is_some()
    }
}

#[derive(Serialize)]
struct PersistedRef<'a> {
    dim: usize,
    cosine: bool,
    state: &'a State,
}

/// Builds the inverted lists over the rows and stores the rows list by list
/// (`positions` follows the moved rows).
fn rebuild(state: &mut State, positions: &mut HashMap<u64, usize>, dim: usize, cosine: bool) {
    if state.ivf_fresh && state.ivf.is_some() {
        return;
    }
    let (ivf, order) = Ivf::build(&state.rows, dim, cosine);
    state.rows = state.rows.reordered(&order, dim);
    state.ids = order.iter().map(|&old| state.ids[old as usize]).collect();
    let mut payloads: Vec<Option<Vec<(String, String)>>> = std::mem::take(&mut state.payloads)
        .into_iter()
        .map(Some)
        .collect();
    state.payloads = order
        .iter()
        .map(|&old| payloads[old as usize].take().unwrap_or_default())
        .collect();
    *positions = state
        .ids
        .iter()
        .enumerate()
        .map(|(row, id)| (*id, row))
        .collect();
    state.ivf = Some(ivf);
    state.ivf_fresh = true;
}

/// The `k` best of `scored` (score, row position), best first (ties by position), as
/// hits.
fn top_hits(state: &State, mut scored: Vec<(f32, usize)>, k: usize) -> Vec<VectorHit> {
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

/// Refuses a vector that is not of `dim` finite values, as every index does.
pub(crate) fn check_vector(vector: &[f32], dim: usize) -> StoreResult<()> {
    if vector.len() != dim {
        return Err(invalid_query(format!(
            "vector has {} dimensions, the index has {dim}",
            vector.len()
        )));
    }
    if vector.iter().any(|value| !value.is_finite()) {
        return Err(invalid_query("vector contains NaN or infinite values"));
    }
    Ok(())
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
                    state.rows.set(existing, &row);
                    state.payloads[existing] = item.payload;
                }
                None => {
                    positions.insert(item.id, state.ids.len());
                    state.ids.push(item.id);
                    state.rows.push(&row);
                    state.payloads.push(item.payload);
                }
            }
        }
        state.ivf_fresh = false;
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
        let large = self.state.read().ids.len() >= self.index_threshold;
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
            let needs_build = {
                let state = state.read();
                !(state.ivf_fresh && state.ivf.is_some())
            };
            if needs_build {
                // Both locks in the order writers take them.
                let mut state = state.write();
                rebuild(&mut state, &mut positions.write(), dim, cosine);
            }
            let state = state.read();
            let Some(ivf) = state.ivf.as_ref() else {
                return Vec::new();
            };
            let mut buffer = vec![0.0f32; dim];
            let scored: Vec<(f32, usize)> = ivf
                .candidates(&query)
                .flatten()
                .map(|row| (state.rows.score(metric, &query, row, &mut buffer), row))
                .collect();
            top_hits(&state, scored, k)
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
            // Move the last row into the hole.
            state.rows.swap_remove(row, self.dim);
            if row != last {
                state.ids.swap(row, last);
                state.payloads.swap(row, last);
                let moved = state.ids[row];
                positions.insert(moved, row);
            }
            state.ids.pop();
            state.payloads.pop();
        }
        state.ivf_fresh = false;
        Ok(())
    }

    async fn len(&self) -> StoreResult<usize> {
        Ok(self.state.read().ids.len())
    }
}

#[cfg(test)]
mod tests;
