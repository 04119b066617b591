//! The process's one name index. Every role that links names (entity-linker,
//! kg-linker, cache-manager) asks [`AgentDeps::shared`](crate::runtime::AgentDeps::shared)
//! for it: the first caller builds it from the graph (names paged from the store, the index
//! built off the async runtime), everyone else waits for that build and shares the
//! result. A process therefore holds one copy, however many roles it runs.

use std::{sync::Arc, time::Instant};

use kgmesh_models::lexical::Gazetteer;
use kgmesh_schemas::AgentError;
use kgmesh_stores::GraphStore;
use tokio::sync::OnceCell;

use super::core::scan_all_names;
use crate::scoring::store_error;

/// A lazily built, shared [`Gazetteer`].
#[derive(Default)]
pub struct SharedNames {
    index: OnceCell<Arc<Gazetteer>>,
}

impl SharedNames {
    pub fn new() -> Self {
        Self::default()
    }

    /// Already built (a process that loaded or built the index itself).
    pub fn ready(index: Arc<Gazetteer>) -> Self {
        Self {
            index: OnceCell::new_with(Some(index)),
        }
    }

    /// The index if some caller has built it.
    pub fn get_built(&self) -> Option<Arc<Gazetteer>> {
        self.index.get().cloned()
    }

    /// The index of `graph`, built on the first call. A failed build is not cached: the
    /// next call tries again.
    pub async fn get(&self, graph: &dyn GraphStore) -> Result<Arc<Gazetteer>, AgentError> {
        self.index
            .get_or_try_init(|| async {
                let started = Instant::now();
                let names = scan_all_names(graph).await.map_err(store_error)?;
                let scanned = names.len();
                let index = tokio::task::spawn_blocking(move || Gazetteer::build(names))
                    .await
                    .map_err(|error| AgentError::Internal {
                        detail: format!("name index build failed: {error}"),
                    })?;
                tracing::info!(
                    entities = scanned,
                    names = index.len(),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "name index built"
                );
                Ok(Arc::new(index))
            })
            .await
            .cloned()
    }
}

impl std::fmt::Debug for SharedNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedNames")
            .field("built", &self.index.initialized())
            .finish()
    }
}
