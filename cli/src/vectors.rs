//! The vector index of entity-name embeddings (`[vectors]`), which the entity linker
//! searches next to its lexical name index.
//!
//! `embedded` keeps the index in this process (read from and written to `vectors.path`
//! when set); `qdrant` uses a Qdrant collection that every replica shares. An empty index
//! is filled from the graph's names with the configured embedder, so the first process
//! to start against a new collection pays for embedding every name and later ones find
//! it filled.

use std::{sync::Arc, time::Duration};

use anyhow::{bail, Context as _};
use kgmesh_agents::entity_linker::core::{build_name_index, index_name_vectors};
use kgmesh_models::Embedder;
use kgmesh_stores::{
    vector::{EmbeddedVectorIndex, QdrantIndex, QdrantOptions},
    GraphStore, Metric, VectorIndex,
};

use crate::config::{Config, VectorBackend};

/// Used when neither `vectors.qdrant_url` nor `QDRANT_URL` is set.
const DEFAULT_QDRANT_URL: &str = "http://127.0.0.1:6334";

/// The configured index, filled from `graph` when it is empty; `None` when
/// `vectors.backend = "none"`.
pub(crate) async fn vector_index(
    config: &Config,
    embedder: Option<&Arc<dyn Embedder>>,
    graph: Option<&Arc<dyn GraphStore>>,
) -> anyhow::Result<Option<Arc<dyn VectorIndex>>> {
    let vectors = &config.vectors;
    if vectors.backend == VectorBackend::None {
        return Ok(None);
    }
    let Some(embedder) = embedder else {
        bail!("vectors.backend needs an embedder (embedder.kind)");
    };
    let dim = embedder.dim();
    match vectors.backend {
        VectorBackend::None => Ok(None),
        VectorBackend::Embedded => {
            let index = match &vectors.path {
                Some(path) if path.exists() => {
                    let shown = path.display().to_string();
                    let path = path.clone();
                    let index =
                        tokio::task::spawn_blocking(move || EmbeddedVectorIndex::open(&path))
                            .await
                            .context("the vector index reader panicked")?
                            .with_context(|| format!("cannot read the vector index {shown}"))?;
                    if index.dim() != dim {
                        bail!(
                            "the vector index {shown} holds {}-dimensional vectors, the embedder makes {dim}; delete it to rebuild",
                            index.dim()
                        );
                    }
                    index.with_precision(vectors.precision)
                }
                _ => {
                    EmbeddedVectorIndex::new(dim, Metric::Cosine).with_precision(vectors.precision)
                }
            };
            let index = Arc::new(index);
            if fill_if_empty(config, embedder.as_ref(), graph, index.as_ref()).await? {
                if let Some(path) = vectors.path.clone() {
                    let shown = path.display().to_string();
                    let writer = index.clone();
                    tokio::task::spawn_blocking(move || writer.save(&path))
                        .await
                        .context("the vector index writer panicked")?
                        .with_context(|| format!("cannot write the vector index {shown}"))?;
                }
            }
            Ok(Some(index))
        }
        VectorBackend::Qdrant => {
            let url = vectors
                .qdrant_url
                .clone()
                .or_else(|| std::env::var("QDRANT_URL").ok())
                .unwrap_or_else(|| DEFAULT_QDRANT_URL.to_owned());
            let mut options =
                QdrantOptions::new(url.clone(), vectors.collection.clone(), dim, Metric::Cosine)
                    .with_timeout(Duration::from_millis(vectors.timeout_ms));
            if let Some(variable) = &vectors.qdrant_api_key_env {
                options.api_key = Some(std::env::var(variable).with_context(|| {
                    format!("vectors.qdrant_api_key_env names {variable}, which is not set")
                })?);
            }
            let index = QdrantIndex::connect(options)
                .await
                .with_context(|| format!("cannot use Qdrant at {url}"))?;
            fill_if_empty(config, embedder.as_ref(), graph, &index).await?;
            Ok(Some(Arc::new(index)))
        }
    }
}

/// Embeds every name of `graph` into `index` when the index is empty; says whether it did.
async fn fill_if_empty(
    config: &Config,
    embedder: &dyn Embedder,
    graph: Option<&Arc<dyn GraphStore>>,
    index: &dyn VectorIndex,
) -> anyhow::Result<bool> {
    let Some(graph) = graph else {
        return Ok(false);
    };
    if !index
        .is_empty()
        .await
        .context("cannot read the vector index")?
    {
        return Ok(false);
    }
    let names = build_name_index(graph.as_ref())
        .await
        .context("cannot read the graph's names")?;
    tracing::info!(
        names = names.len(),
        backend = index.backend(),
        "embedding entity names into the vector index"
    );
    let started = std::time::Instant::now();
    let mut reported = 0;
    let mut progress = |done: usize, total: usize| {
        // About ten lines for a large graph, none for a small one.
        if total >= 10_000 && done < total && done >= reported + total / 10 {
            reported = done;
            let rate = done as f64 / started.elapsed().as_secs_f64().max(1e-3);
            tracing::info!(
                done,
                total,
                names_per_second = rate.round(),
                eta_seconds = ((total - done) as f64 / rate.max(1e-3)).round(),
                "embedding entity names"
            );
        }
    };
    index_name_vectors(
        &names,
        embedder,
        index,
        config.embedder.batch_size,
        &mut progress,
    )
    .await
    .context("cannot embed the graph's names")?;
    tracing::info!(
        names = names.len(),
        seconds = started.elapsed().as_secs_f64(),
        "entity names embedded"
    );
    Ok(true)
}

#[cfg(test)]
mod tests {
    use kgmesh_models::EmbedError;
    use kgmesh_stores::embedded::GraphBuilder;
    use kgmesh_testkit::qdrant_standin::QdrantStandIn;

    use super::*;
    use crate::config::EmbedderKind;

    const T: Duration = Duration::from_secs(30);

    /// Letter counts, normalized: different names get different directions.
    struct LetterEmbedder;

    #[async_trait::async_trait]
    impl Embedder for LetterEmbedder {
        fn name(&self) -> &str {
            "letters"
        }

        fn dim(&self) -> usize {
            26
        }

        async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut vector = [0.0f32; 26];
                    for byte in text.to_ascii_lowercase().bytes() {
                        if byte.is_ascii_lowercase() {
                            vector[(byte - b'a') as usize] += 1.0;
                        }
                    }
                    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
                    vector.iter().map(|x| x / norm).collect()
                })
                .collect())
        }
    }

    fn graph() -> Arc<dyn GraphStore> {
        let mut builder = GraphBuilder::new();
        let heat = builder.node("Heat");
        let mann = builder.node("Michael Mann");
        let pacino = builder.node("Al Pacino");
        builder.add_edge(heat, "directed_by", mann);
        builder.add_edge(heat, "starred_actors", pacino);
        Arc::new(builder.finish())
    }

    fn config(backend: VectorBackend) -> Config {
        let mut config = Config::default();
        config.embedder.kind = EmbedderKind::Openai;
        config.embedder.base_url = Some("http://127.0.0.1:1/v1".to_owned());
        config.vectors.backend = backend;
        config
    }

    async fn nearest(index: &dyn VectorIndex, name: &str) -> String {
        let query = LetterEmbedder.embed(&[name.to_owned()]).await.unwrap();
        let hits = tokio::time::timeout(T, index.search(&query[0], 1, None))
            .await
            .unwrap()
            .unwrap();
        hits[0].payload[0].1.clone()
    }

    #[tokio::test]
    async fn qdrant_index_is_filled_once_from_the_graph() {
        let standin = QdrantStandIn::start();
        let mut config = config(VectorBackend::Qdrant);
        config.vectors.qdrant_url = Some(standin.url());
        config.vectors.collection = "names".to_owned();
        let embedder: Arc<dyn Embedder> = Arc::new(LetterEmbedder);
        let graph = graph();
        let index = tokio::time::timeout(T, vector_index(&config, Some(&embedder), Some(&graph)))
            .await
            .unwrap()
            .unwrap()
            .expect("a Qdrant index");
        assert_eq!(index.backend(), "qdrant");
        assert_eq!(standin.point_count("names"), Some(3));
        assert_eq!(nearest(index.as_ref(), "al pacino").await, "Al Pacino");
        let upserts = standin.calls("upsert");
        // A second replica finds the collection filled and embeds nothing.
        tokio::time::timeout(T, vector_index(&config, Some(&embedder), Some(&graph)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(standin.calls("upsert"), upserts);
    }

    #[tokio::test]
    async fn embedded_index_is_saved_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = config(VectorBackend::Embedded);
        let path = dir.path().join("graph.kgv");
        config.vectors.path = Some(path.clone());
        let embedder: Arc<dyn Embedder> = Arc::new(LetterEmbedder);
        let index = vector_index(&config, Some(&embedder), Some(&graph()))
            .await
            .unwrap()
            .expect("an embedded index");
        assert_eq!(index.len().await.unwrap(), 3);
        assert!(path.exists(), "written after the first fill");
        // Reopened without a graph: the names come from the file.
        let reopened = vector_index(&config, Some(&embedder), None)
            .await
            .unwrap()
            .expect("an embedded index");
        assert_eq!(reopened.len().await.unwrap(), 3);
        assert_eq!(
            nearest(reopened.as_ref(), "michael man").await,
            "Michael Mann"
        );
    }

    #[tokio::test]
    async fn no_backend_means_no_index_and_a_backend_needs_an_embedder() {
        let none = vector_index(&Config::default(), None, Some(&graph()))
            .await
            .unwrap();
        assert!(none.is_none());
        let error = vector_index(&config(VectorBackend::Embedded), None, None)
            .await
            .err()
            .expect("an error without an embedder");
        assert!(error.to_string().contains("embedder"), "{error}");
    }

    #[tokio::test]
    async fn unreachable_qdrant_is_reported_with_its_address() {
        let mut standin = QdrantStandIn::start();
        let url = standin.url();
        standin.kill();
        let mut config = config(VectorBackend::Qdrant);
        config.vectors.qdrant_url = Some(url.clone());
        let embedder: Arc<dyn Embedder> = Arc::new(LetterEmbedder);
        let error = tokio::time::timeout(T, vector_index(&config, Some(&embedder), None))
            .await
            .unwrap()
            .err()
            .expect("no server");
        assert!(format!("{error:#}").contains(&url), "{error:#}");
    }
}
