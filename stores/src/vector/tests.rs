//! Tests of the embedded index's own behaviour: HNSW recall against exact search and
//! persistence. The contract every backend meets is in `stores/tests/vector_index.rs`.

use std::time::Duration;

use super::*;

const T: Duration = Duration::from_secs(30);

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(T, future)
        .await
        .expect("vector index call timed out")
}

fn item(id: u64, vector: Vec<f32>) -> VectorItem {
    VectorItem {
        id,
        vector,
        payload: vec![("name".to_owned(), format!("item {id}"))],
    }
}

#[tokio::test]
async fn hnsw_recall_matches_exact_search_on_random_vectors() {
    let dim = 16;
    let vectors = lcg_vectors(1_000, dim, 11);
    let items: Vec<VectorItem> = vectors
        .iter()
        .enumerate()
        .map(|(id, v)| item(id as u64, v.clone()))
        .collect();
    let exact = EmbeddedVectorIndex::new(dim, Metric::Cosine);
    let approximate = EmbeddedVectorIndex::new(dim, Metric::Cosine).with_hnsw_threshold(1);
    within(exact.upsert(items.clone())).await.unwrap();
    within(approximate.upsert(items)).await.unwrap();
    let queries = lcg_vectors(50, dim, 99);
    let mut found = 0;
    for query in &queries {
        let truth: Vec<u64> = within(exact.search(query, 10, None))
            .await
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        let hits = within(approximate.search(query, 10, None)).await.unwrap();
        found += hits.iter().filter(|hit| truth.contains(&hit.id)).count();
    }
    let recall = found as f64 / (queries.len() * 10) as f64;
    assert!(recall >= 0.9, "HNSW recall@10 {recall:.3} below 0.9");
}

#[tokio::test]
async fn saved_indexes_reopen_with_their_hnsw_graph_and_reject_damage() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("graph.kgs");
    let path = EmbeddedVectorIndex::path_beside(&snapshot);
    assert!(path.ends_with("graph.kgv"));
    let index = EmbeddedVectorIndex::new(3, Metric::L2).with_hnsw_threshold(1);
    within(index.upsert(vec![
        item(7, vec![1.0, 2.0, 3.0]),
        item(8, vec![-1.0, 0.0, 0.0]),
    ]))
    .await
    .unwrap();
    index.build_hnsw();
    index.save(&path).unwrap();
    let reopened = EmbeddedVectorIndex::open(&path).unwrap();
    assert_eq!(reopened.metric(), Metric::L2);
    assert!(reopened.hnsw_is_fresh());
    let hits = within(reopened.search(&[1.0, 2.0, 2.5], 1, None))
        .await
        .unwrap();
    assert_eq!(hits[0].id, 7);
    assert_eq!(hits[0].payload[0].1, "item 7");

    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        EmbeddedVectorIndex::open(&path),
        Err(StoreError::Corrupt { .. })
    ));
    std::fs::write(&path, &bytes[..30]).unwrap();
    assert!(matches!(
        EmbeddedVectorIndex::open(&path),
        Err(StoreError::Corrupt { .. })
    ));
}

/// Deterministic pseudo-random vectors in [-1, 1).
fn lcg_vectors(count: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            (0..dim)
                .map(|_| {
                    let value = crate::embedded::splitmix64(&mut state);
                    (value >> 40) as f32 / (1u64 << 23) as f32 - 1.0
                })
                .collect()
        })
        .collect()
}
