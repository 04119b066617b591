//! Contract tests for [`VectorIndex`], run on the embedded index in its exact and HNSW
//! modes, plus persistence.

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

/// What every [`VectorIndex`] must do, whatever the backend.
async fn contract(index: &dyn VectorIndex) {
    assert_eq!(index.dim(), 3);
    within(index.upsert(vec![
        item(1, vec![1.0, 0.0, 0.0]),
        item(2, vec![0.0, 1.0, 0.0]),
        item(3, vec![0.7, 0.7, 0.0]),
        item(4, vec![0.0, 0.0, 5.0]),
    ]))
    .await
    .unwrap();
    assert_eq!(within(index.len()).await.unwrap(), 4);

    let hits = within(index.search(&[1.0, 0.1, 0.0], 2, None))
        .await
        .unwrap();
    assert_eq!(
        hits.iter().map(|hit| hit.id).collect::<Vec<_>>(),
        vec![1, 3]
    );
    assert!(hits[0].score >= hits[1].score);
    assert_eq!(
        hits[0].payload,
        vec![("name".to_owned(), "item 1".to_owned())]
    );

    let filtered = within(index.search(&[1.0, 0.1, 0.0], 10, Some(&[2, 4, 99])))
        .await
        .unwrap();
    let mut ids: Vec<u64> = filtered.iter().map(|hit| hit.id).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        vec![2, 4],
        "only the allowed ids, unknown ones ignored"
    );

    // Upserting an existing id replaces its vector.
    within(index.upsert(vec![item(2, vec![1.0, 0.05, 0.0])]))
        .await
        .unwrap();
    assert_eq!(within(index.len()).await.unwrap(), 4);
    let hits = within(index.search(&[0.0, 1.0, 0.0], 1, None))
        .await
        .unwrap();
    assert_eq!(hits[0].id, 3);

    within(index.delete(&[3, 42])).await.unwrap();
    assert_eq!(within(index.len()).await.unwrap(), 3);
    let hits = within(index.search(&[0.7, 0.7, 0.0], 4, None))
        .await
        .unwrap();
    assert!(hits.iter().all(|hit| hit.id != 3));
    assert_eq!(hits.len(), 3);

    assert!(matches!(
        within(index.search(&[1.0, 0.0], 1, None)).await,
        Err(StoreError::InvalidQuery { .. })
    ));
    assert!(matches!(
        within(index.upsert(vec![item(9, vec![f32::NAN, 0.0, 0.0])])).await,
        Err(StoreError::InvalidQuery { .. })
    ));
    assert!(within(index.search(&[1.0, 0.0, 0.0], 0, None))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn exact_cosine_index_meets_the_contract() {
    contract(&EmbeddedVectorIndex::new(3, Metric::Cosine)).await;
}

#[tokio::test]
async fn hnsw_cosine_index_meets_the_contract() {
    let index = EmbeddedVectorIndex::new(3, Metric::Cosine).with_hnsw_threshold(1);
    contract(&index).await;
    assert!(
        index.hnsw_is_fresh(),
        "unfiltered searches went through HNSW"
    );
}

#[tokio::test]
async fn l2_ranks_by_distance_not_angle() {
    let index = EmbeddedVectorIndex::new(2, Metric::L2);
    within(index.upsert(vec![item(1, vec![10.0, 0.0]), item(2, vec![1.0, 1.0])]))
        .await
        .unwrap();
    let hits = within(index.search(&[1.0, 0.0], 2, None)).await.unwrap();
    assert_eq!(hits[0].id, 2, "closer in space although farther in angle");
    assert!(
        (hits[0].score + 1.0).abs() < 1e-6,
        "score is minus the distance"
    );
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
