//! Linking mentions to graph ids without scanning every name per mention.
//!
//! Fuzzy links come from the process's one name index, the
//! [`Gazetteer`](kgmesh_models::lexical::Gazetteer) (exact and normalized matches rank
//! first, then names by trigram Dice similarity over rare-trigram posting lists, so a
//! lookup costs a few posting lists, not the number of nodes). It is built once from
//! [`GraphStore::scan_names`] and shared by every role through
//! [`AgentDeps::names`](crate::runtime::AgentDeps). Embedding links come from a
//! [`VectorIndex`] over name embeddings.

use kgmesh_models::{
    lexical::{gazetteer::spelled_as, Gazetteer},
    Embedder,
};
use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    messages::entity_linker::{LinkMode, MentionLinks},
    NodeId,
};
use kgmesh_stores::{GraphStore, StoreError, VectorIndex, VectorItem};

pub use kgmesh_models::lexical::{normalize, EXACT_SCORE};

/// Names fetched per `scan_names` page while building the index.
const SCAN_PAGE: usize = 50_000;

#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    #[error("graph store: {0}")]
    Store(#[from] StoreError),
    #[error("embedder: {0}")]
    Embed(#[from] kgmesh_models::EmbedError),
    #[error("embedding link requested but no embedder or vector index is configured")]
    NoEmbeddings,
}

/// Every `(id, name)` of `store`, paged.
pub async fn scan_all_names(store: &dyn GraphStore) -> Result<Vec<(NodeId, String)>, StoreError> {
    let mut names = Vec::new();
    let mut after = None;
    loop {
        let page = store.scan_names(after, SCAN_PAGE).await?;
        let Some(last) = page.last() else { break };
        after = Some(last.id);
        let last_page = page.len() < SCAN_PAGE;
        names.extend(page.into_iter().map(|e| (e.id, e.name)));
        if last_page {
            break;
        }
    }
    Ok(names)
}

/// Pages through every node name of `store` and indexes it (on this thread; see
/// [`super::names::SharedNames`] for the shared, off-runtime build).
pub async fn build_name_index(store: &dyn GraphStore) -> Result<Gazetteer, StoreError> {
    Ok(Gazetteer::build(scan_all_names(store).await?))
}

/// Embeds every name of `index` into `vectors` (ids are node ids), in batches;
/// `progress(done, total)` is called after every batch, so a caller filling a large
/// graph's index can say how far it is.
pub async fn index_name_vectors(
    index: &Gazetteer,
    embedder: &dyn Embedder,
    vectors: &dyn VectorIndex,
    batch: usize,
    progress: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<(), LinkError> {
    let total = index.entities().len();
    let mut done = 0;
    for chunk in index.entities().chunks(batch.max(1)) {
        let names: Vec<String> = chunk.iter().map(|e| e.name.clone()).collect();
        let embedded = embedder.embed(&names).await?;
        let items = chunk
            .iter()
            .zip(embedded)
            .map(|(entity, vector)| VectorItem {
                id: entity.id.0,
                vector,
                payload: vec![("name".to_owned(), entity.name.clone())],
            })
            .collect();
        vectors.upsert(items).await?;
        done += chunk.len();
        progress(done, total);
    }
    Ok(())
}

/// What linking may use besides the name index.
pub struct EmbeddingLinker<'a> {
    pub embedder: &'a dyn Embedder,
    pub vectors: &'a dyn VectorIndex,
}

/// Links every mention: top `top_m` candidates each, best first, in request order.
/// With [`LinkMode::Both`] the candidates of both methods are merged by node, keeping
/// the higher score; exact matches always rank first.
pub async fn link(
    mentions: &[String],
    index: &Gazetteer,
    embedding_opt: Option<&EmbeddingLinker<'_>>,
    mode: LinkMode,
    top_m: usize,
) -> Result<Vec<MentionLinks>, LinkError> {
    let want_fuzzy = matches!(mode, LinkMode::Fuzzy | LinkMode::Both);
    let want_embedding = matches!(mode, LinkMode::Embedding | LinkMode::Both);
    let embedded = match (want_embedding, embedding_opt) {
        (false, _) => None,
        (true, Some(linker)) => {
            let vectors = linker.embedder.embed(mentions).await?;
            let mut hits = Vec::with_capacity(vectors.len());
            for vector in &vectors {
                hits.push(linker.vectors.search(vector, top_m, None).await?);
            }
            Some(hits)
        }
        (true, None) if mode == LinkMode::Embedding => return Err(LinkError::NoEmbeddings),
        (true, None) => None,
    };
    let mut out = Vec::with_capacity(mentions.len());
    for (position, mention) in mentions.iter().enumerate() {
        let mut candidates: Vec<ScoredEntity> = if want_fuzzy {
            index.lookup(mention, top_m)
        } else {
            // Exact matches only: the lookup's exact part, without its fuzzy tail.
            index
                .lookup(mention, top_m)
                .into_iter()
                .filter(|c| c.score >= EXACT_SCORE)
                .collect()
        };
        if let Some(hits) = embedded.as_ref().and_then(|h| h.get(position)) {
            for hit in hits {
                let name = hit
                    .payload
                    .iter()
                    .find(|(k, _)| k == "name")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let id = NodeId(hit.id);
                // Below exact matches however close the vectors are.
                let score = hit.score.clamp(0.0, 0.99);
                match candidates.iter_mut().find(|c| c.entity.id == id) {
                    Some(existing) => existing.score = existing.score.max(score),
                    None => candidates.push(ScoredEntity {
                        entity: Entity { id, name },
                        score,
                    }),
                }
            }
        }
        candidates.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(a.entity.id.cmp(&b.entity.id))
        });
        // A mention that names a node exactly names that node (or its namesakes): a
        // near name ("john_carradine" for "david carradine") is another entity, and
        // taking it as one of the question's own would hide it as an answer and send
        // the retrievers walking from it.
        if candidates.first().is_some_and(|c| c.score >= EXACT_SCORE) {
            candidates.retain(|c| c.score >= EXACT_SCORE);
            // Among names that read alike, the ones spelled as written ("Up", not "Up!";
            // "+1", not "1"), when some are.
            if candidates
                .iter()
                .any(|c| spelled_as(&c.entity.name, mention))
            {
                candidates.retain(|c| spelled_as(&c.entity.name, mention));
            }
        }
        candidates.truncate(top_m);
        out.push(MentionLinks {
            mention: mention.clone(),
            candidates,
        });
    }
    Ok(out)
}
