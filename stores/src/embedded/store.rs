//! [`GraphStore`] for [`EmbeddedGraph`]: the async face of the synchronous methods.
//! Operations whose cost grows with the graph (paths, schema, sampling, large
//! frontiers) run on tokio's blocking pool so they never stall the async workers.

use std::sync::Arc;

use async_trait::async_trait;
use kgmesh_schemas::{
    graph::{Entity, GraphSchema, Metapath, Path, Rows, Value},
    NodeId,
};

use super::graph::EmbeddedGraph;
use crate::{
    GraphStore, NameMatch, NeighborEdges, NeighborQuery, Neighborhood, PathLimits, QueryLimits,
    Star, StoreError, StoreResult,
};

/// Frontiers up to this size are expanded inline: a few microseconds of work is cheaper
/// than a hop to the blocking pool.
const INLINE_FRONTIER: usize = 256;

/// Whether a one-hop expansion is small enough to run inline.
fn inline(frontier: &[NodeId], query: &NeighborQuery) -> bool {
    frontier.len() <= INLINE_FRONTIER && query.fanout_cap <= 10_000
}

async fn blocking<T, F>(graph: &EmbeddedGraph, work: F) -> StoreResult<T>
where
    T: Send + 'static,
    F: FnOnce(EmbeddedGraph) -> StoreResult<T> + Send + 'static,
{
    let graph = graph.clone();
    tokio::task::spawn_blocking(move || work(graph))
        .await
        .map_err(|error| StoreError::Backend {
            detail: format!("graph task failed: {error}"),
        })?
}

#[async_trait]
impl GraphStore for EmbeddedGraph {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    async fn schema(&self) -> StoreResult<Arc<GraphSchema>> {
        if let Some(schema) = self.data.schema_cache.get() {
            return Ok(schema.clone());
        }
        blocking(self, |graph| Ok(graph.schema_sync())).await
    }

    async fn resolve(&self, names: &[String], mode: NameMatch) -> StoreResult<Vec<Vec<Entity>>> {
        Ok(self.resolve_sync(names, mode))
    }

    async fn entities(&self, ids: &[NodeId]) -> StoreResult<Vec<Entity>> {
        let nodes = self.indices(ids)?;
        Ok(nodes.into_iter().map(|node| self.entity(node)).collect())
    }

    async fn scan_names(&self, after: Option<NodeId>, limit: usize) -> StoreResult<Vec<Entity>> {
        Ok(self.scan_names_sync(after, limit))
    }

    async fn neighbors(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<Neighborhood> {
        if inline(frontier, query) {
            return self.neighbors_sync(frontier, query);
        }
        let frontier = frontier.to_vec();
        let query = query.clone();
        blocking(self, move |graph| graph.neighbors_sync(&frontier, &query)).await
    }

    async fn neighbor_edges(
        &self,
        frontier: &[NodeId],
        query: &NeighborQuery,
    ) -> StoreResult<NeighborEdges> {
        if inline(frontier, query) {
            return self.neighbor_edges_sync(frontier, query);
        }
        let frontier = frontier.to_vec();
        let query = query.clone();
        blocking(self, move |graph| {
            graph.neighbor_edges_sync(&frontier, &query)
        })
        .await
    }

    async fn follow_metapaths(
        &self,
        sources: &[NodeId],
        metapaths: &[Metapath],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        let sources = sources.to_vec();
        let metapaths = metapaths.to_vec();
        let limits = *limits;
        blocking(self, move |graph| {
            graph.follow_metapaths_sync(&sources, &metapaths, &limits)
        })
        .await
    }

    async fn shortest_paths(
        &self,
        sources: &[NodeId],
        targets: &[NodeId],
        limits: &PathLimits,
    ) -> StoreResult<Vec<Path>> {
        let sources = sources.to_vec();
        let targets = targets.to_vec();
        let limits = *limits;
        blocking(self, move |graph| {
            graph.shortest_paths_sync(&sources, &targets, &limits)
        })
        .await
    }

    async fn sample_stars(
        &self,
        count: usize,
        max_neighbors: usize,
        seed: u64,
    ) -> StoreResult<Vec<Star>> {
        blocking(self, move |graph| {
            Ok(graph.sample_stars_sync(count, max_neighbors, seed))
        })
        .await
    }

    async fn cypher(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows> {
        let query = query.to_owned();
        let params = params.to_vec();
        let limits = *limits;
        blocking(self, move |graph| {
            crate::cypher::run_on_embedded(&graph, &query, &params, &limits)
        })
        .await
    }
}
