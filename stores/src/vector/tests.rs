//! Tests of the embedded index's own behaviour: recall of the inverted lists against
//! exact search, and persistence. The contract every backend meets is in `stores/tests/vector_index.rs`.

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
async fn inverted_lists_recall_matches_exact_search_on_clustered_vectors() {
    // Embeddings of names cluster (by topic, by kind of thing); 4,000 vectors around
    // 40 centres, as such embeddings do, and queries near the same centres.
    let dim = 32;
    let items = clustered_items(4_000, dim);
    let exact = EmbeddedVectorIndex::new(dim, Metric::Cosine);
    let approximate = EmbeddedVectorIndex::new(dim, Metric::Cosine).with_index_threshold(1);
    within(exact.upsert(items.clone())).await.unwrap();
    within(approximate.upsert(items)).await.unwrap();
    let queries = clustered_vectors(100, dim, 40, 99);
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
    assert!(
        approximate.index_is_fresh(),
        "the searches went through the lists"
    );
    assert_eq!(approximate.list_count(), ivf::list_count(4_000));
    let recall = found as f64 / (queries.len() * 10) as f64;
    assert!(recall >= 0.9, "recall@10 {recall:.3} below 0.9");
    // A write makes the lists stale; the next search rebuilds them.
    within(approximate.upsert(vec![item(9_999, queries[0].clone())]))
        .await
        .unwrap();
    assert!(!approximate.index_is_fresh());
    let hits = within(approximate.search(&queries[0], 1, None))
        .await
        .unwrap();
    assert_eq!(hits[0].id, 9_999);
}

#[tokio::test]
async fn a_version_1_file_with_an_hnsw_graph_is_read_and_indexed_anew() {
    #[derive(Serialize)]
    struct V1 {
        dim: usize,
        cosine: bool,
        state: V1State,
    }
    #[derive(Serialize)]
    struct V1State {
        ids: Vec<u64>,
        rows: Vec<f32>,
        payloads: Vec<Vec<(String, String)>>,
        hnsw: Option<instant_distance::HnswMap<LegacyRow, u64>>,
        hnsw_fresh: bool,
    }
    let rows = [[1.0f32, 0.0], [0.0, 1.0], [0.6, 0.8]];
    let points: Vec<LegacyRow> = rows
        .iter()
        .map(|r| LegacyRow {
            values: r.to_vec(),
            cosine: true,
        })
        .collect();
    let hnsw = instant_distance::Builder::default().build(points, vec![1u64, 2, 3]);
    let v1 = V1 {
        dim: 2,
        cosine: true,
        state: V1State {
            ids: vec![1, 2, 3],
            rows: rows.concat(),
            payloads: vec![Vec::new(); 3],
            hnsw: Some(hnsw),
            hnsw_fresh: true,
        },
    };
    let body = bincode::serde::encode_to_vec(&v1, bincode::config::standard()).unwrap();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(FILE_MAGIC);
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    bytes.extend_from_slice(&(body.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&body);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.kgv");
    std::fs::write(&path, &bytes).unwrap();
    let index = EmbeddedVectorIndex::open(&path)
        .unwrap()
        .with_index_threshold(1);
    assert_eq!(within(index.len()).await.unwrap(), 3);
    let hits = within(index.search(&[0.5, 0.9], 1, None)).await.unwrap();
    assert_eq!(hits[0].id, 3);
    assert!(index.index_is_fresh());
}

#[tokio::test]
async fn saved_indexes_reopen_with_their_lists_and_reject_damage() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("graph.kgs");
    let path = EmbeddedVectorIndex::path_beside(&snapshot);
    assert!(path.ends_with("graph.kgv"));
    let index = EmbeddedVectorIndex::new(3, Metric::L2).with_index_threshold(1);
    within(index.upsert(vec![
        item(7, vec![1.0, 2.0, 3.0]),
        item(8, vec![-1.0, 0.0, 0.0]),
    ]))
    .await
    .unwrap();
    index.build_index();
    index.save(&path).unwrap();
    let reopened = EmbeddedVectorIndex::open(&path).unwrap();
    assert_eq!(reopened.metric(), Metric::L2);
    assert!(reopened.index_is_fresh());
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

#[tokio::test]
async fn half_float_rows_find_what_full_ones_find_in_half_the_memory_and_survive_a_save() {
    let (full, half) = reduced_rows_find_what_full_ones_find(Precision::F16).await;
    assert_eq!(half.row_bytes() * 2, full.row_bytes());
}

#[tokio::test]
async fn eight_bit_rows_find_what_full_ones_find_in_a_quarter_of_the_memory_and_survive_a_save() {
    let (full, codes) = reduced_rows_find_what_full_ones_find(Precision::Int8).await;
    // One byte a value and a 4-byte scale a row.
    let rows = within(full.len()).await.unwrap();
    assert_eq!(codes.row_bytes(), full.row_bytes() / 4 + 4 * rows);
}

/// Two indexes over the same clustered rows, one at full precision and one at
/// `precision`: the reduced one's exact and list searches find what the full one finds,
/// and it reads back the same after a save. Returns both.
async fn reduced_rows_find_what_full_ones_find(
    precision: Precision,
) -> (EmbeddedVectorIndex, EmbeddedVectorIndex) {
    let dim = 32;
    let items = clustered_items(4_000, dim);
    let full = EmbeddedVectorIndex::new(dim, Metric::Cosine);
    let reduced = EmbeddedVectorIndex::new(dim, Metric::Cosine)
        .with_precision(precision)
        .with_index_threshold(1);
    within(full.upsert(items.clone())).await.unwrap();
    within(reduced.upsert(items)).await.unwrap();
    assert_eq!(reduced.precision(), precision);
    assert!(reduced.row_bytes() < full.row_bytes());
    let queries = clustered_vectors(100, dim, 40, 99);
    let (mut found, mut exact_found) = (0, 0);
    for query in &queries {
        let truth: Vec<u64> = within(full.search(query, 10, None))
            .await
            .unwrap()
            .iter()
            .map(|h| h.id)
            .collect();
        let hits = within(reduced.search(query, 10, None)).await.unwrap();
        found += hits.iter().filter(|hit| truth.contains(&hit.id)).count();
        let exact = reduced.exact_search(query, 10).unwrap();
        exact_found += exact.iter().filter(|hit| truth.contains(&hit.id)).count();
        // The scores are cosines still: the best within a hundredth of the truth's.
        let best_truth = within(full.search(query, 1, None)).await.unwrap()[0].score;
        assert!(
            (exact[0].score - best_truth).abs() < 0.01,
            "{precision}: {} against {best_truth}",
            exact[0].score
        );
    }
    assert!(
        reduced.index_is_fresh(),
        "the searches went through the lists"
    );
    // These clusters are tight (neighbours a few thousandths apart), where 8-bit
    // codes lose more than half floats do.
    let (exact_min, lists_min) = match precision {
        Precision::Int8 => (0.9, 0.85),
        _ => (0.98, 0.9),
    };
    let total = (queries.len() * 10) as f64;
    assert!(
        exact_found as f64 / total >= exact_min,
        "exact over {precision} rows: {exact_found}"
    );
    assert!(
        found as f64 / total >= lists_min,
        "lists over {precision} rows: {found}"
    );

    // Saved and reopened, the rows keep their precision and answer alike; a delete
    // moves the last row into the hole.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reduced.kgv");
    reduced.save(&path).unwrap();
    let reopened = EmbeddedVectorIndex::open(&path).unwrap();
    assert_eq!(reopened.precision(), precision);
    let before = within(reduced.search(&queries[0], 5, None)).await.unwrap();
    let after = within(reopened.search(&queries[0], 5, None)).await.unwrap();
    assert_eq!(before, after);
    within(reopened.delete(&[after[0].id])).await.unwrap();
    let hits = within(reopened.search(&queries[0], 5, None)).await.unwrap();
    assert!(hits.iter().all(|h| h.id != after[0].id));
    assert_eq!(hits[0].id, after[1].id);
    // An L2 collection keeps full floats (its rows need not be unit vectors).
    let l2 = EmbeddedVectorIndex::new(3, Metric::L2).with_precision(precision);
    assert_eq!(l2.precision(), Precision::F32);
    (full, reduced)
}

#[tokio::test]
async fn a_version_2_file_with_full_float_rows_is_read() {
    #[derive(Serialize)]
    struct V2 {
        dim: usize,
        cosine: bool,
        state: V2State,
    }
    #[derive(Serialize)]
    struct V2State {
        ids: Vec<u64>,
        rows: Vec<f32>,
        payloads: Vec<Vec<(String, String)>>,
        ivf: Option<Ivf>,
        ivf_fresh: bool,
    }
    let v2 = V2 {
        dim: 2,
        cosine: true,
        state: V2State {
            ids: vec![1, 2, 3],
            rows: [[1.0f32, 0.0], [0.0, 1.0], [0.6, 0.8]].concat(),
            payloads: vec![Vec::new(); 3],
            ivf: None,
            ivf_fresh: false,
        },
    };
    let body = bincode::serde::encode_to_vec(&v2, bincode::config::standard()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.kgv");
    crate::framed::write(&path, FILE_MAGIC, 2, &body).unwrap();
    let index = EmbeddedVectorIndex::open(&path).unwrap();
    assert_eq!(index.precision(), Precision::F32);
    let hits = within(index.search(&[0.5, 0.9], 1, None)).await.unwrap();
    assert_eq!(hits[0].id, 3);
}

/// `count` items around 40 centres (`clustered_vectors`), ids from 0.
fn clustered_items(count: usize, dim: usize) -> Vec<VectorItem> {
    clustered_vectors(count, dim, 40, 11)
        .into_iter()
        .enumerate()
        .map(|(id, v)| item(id as u64, v))
        .collect()
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

/// `count` vectors scattered around `centres` random centres (noise a fifth of a
/// centre's length), deterministically.
fn clustered_vectors(count: usize, dim: usize, centres: usize, seed: u64) -> Vec<Vec<f32>> {
    let centre_vectors = lcg_vectors(centres, dim, 7);
    let noise = lcg_vectors(count, dim, seed);
    noise
        .into_iter()
        .enumerate()
        .map(|(i, noise)| {
            let centre = &centre_vectors[(i * 7919 + seed as usize) % centres];
            centre.iter().zip(noise).map(|(c, n)| c + 0.2 * n).collect()
        })
        .collect()
}
