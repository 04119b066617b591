//! One contract for every [`VectorIndex`] backend — the embedded index (exact and inverted lists)
//! and the Qdrant backend — plus the Qdrant backend's failure modes.
//!
//! The Qdrant backend runs against `kgmesh_testkit::qdrant_standin`, an in-memory server
//! implementing Qdrant's gRPC API from `qdrant-client`'s generated server traits, not
//! against a real Qdrant server (none can be installed here). The client, its requests
//! and the gRPC transport are the real ones.

use std::time::Duration;

use kgmesh_stores::{
    vector::{qdrant::ORDER_FIELD, EmbeddedVectorIndex, QdrantIndex, QdrantOptions},
    Metric, StoreError, VectorIndex, VectorItem,
};
use kgmesh_testkit::qdrant_standin::QdrantStandIn;
use qdrant_client::qdrant::Distance;
use tonic::Code;

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

fn ids(hits: &[kgmesh_stores::VectorHit]) -> Vec<u64> {
    hits.iter().map(|hit| hit.id).collect()
}

/// What every cosine [`VectorIndex`] of dimension 3 must do, whatever the backend.
async fn contract(index: &dyn VectorIndex) {
    assert_eq!(index.dim(), 3);
    assert_eq!(index.metric(), Metric::Cosine);
    assert!(within(index.is_empty()).await.unwrap());
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
    assert_eq!(ids(&hits), vec![1, 3]);
    assert!(hits[0].score >= hits[1].score);
    // cos([1, 0.1, 0], [1, 0, 0]) = 1 / sqrt(1.01)
    assert!(
        (hits[0].score - 1.0 / 1.01f32.sqrt()).abs() < 1e-5,
        "cosine similarity, got {}",
        hits[0].score
    );
    assert_eq!(
        hits[0].payload,
        vec![("name".to_owned(), "item 1".to_owned())]
    );

    let filtered = within(index.search(&[1.0, 0.1, 0.0], 10, Some(&[2, 4, 99])))
        .await
        .unwrap();
    let mut found = ids(&filtered);
    found.sort_unstable();
    assert_eq!(
        found,
        vec![2, 4],
        "only the allowed ids, unknown ones ignored"
    );
    assert!(within(index.search(&[1.0, 0.1, 0.0], 10, Some(&[])))
        .await
        .unwrap()
        .is_empty());

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
    within(index.delete(&[])).await.unwrap();

    assert!(matches!(
        within(index.search(&[1.0, 0.0], 1, None)).await,
        Err(StoreError::InvalidQuery { .. })
    ));
    assert!(matches!(
        within(index.upsert(vec![item(9, vec![1.0, 0.0])])).await,
        Err(StoreError::InvalidQuery { .. })
    ));
    assert!(matches!(
        within(index.upsert(vec![item(9, vec![f32::NAN, 0.0, 0.0])])).await,
        Err(StoreError::InvalidQuery { .. })
    ));
    assert_eq!(
        within(index.len()).await.unwrap(),
        3,
        "refused upserts write nothing"
    );
    assert!(within(index.search(&[1.0, 0.0, 0.0], 0, None))
        .await
        .unwrap()
        .is_empty());
}

/// What every L2 [`VectorIndex`] of dimension 2 must do.
async fn l2_contract(index: &dyn VectorIndex) {
    assert_eq!(index.metric(), Metric::L2);
    within(index.upsert(vec![
        item(1, vec![10.0, 0.0]),
        item(2, vec![1.0, 1.0]),
        item(3, vec![-3.0, 0.0]),
    ]))
    .await
    .unwrap();
    let hits = within(index.search(&[1.0, 0.0], 3, None)).await.unwrap();
    assert_eq!(
        ids(&hits),
        vec![2, 3, 1],
        "closer in space first, although 1 is closer in angle"
    );
    assert!(
        (hits[0].score + 1.0).abs() < 1e-5,
        "score is minus the distance"
    );
    assert!((hits[1].score + 4.0).abs() < 1e-5);
    assert!((hits[2].score + 9.0).abs() < 1e-5);
    let hits = within(index.search(&[1.0, 0.0], 1, Some(&[1, 3])))
        .await
        .unwrap();
    assert_eq!(ids(&hits), vec![3]);
}

/// Payloads come back as written: several pairs in order, none, non-ASCII text.
async fn payload_contract(index: &dyn VectorIndex) {
    let pairs: Vec<(String, String)> = [
        ("zeta", "last key first"),
        ("name", "Ångström «quoted» \"x\"\n"),
        ("alpha", ""),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    within(index.upsert(vec![
        VectorItem {
            id: u64::MAX,
            vector: vec![1.0, 0.0, 0.0],
            payload: pairs.clone(),
        },
        VectorItem {
            id: 0,
            vector: vec![0.0, 1.0, 0.0],
            payload: vec![],
        },
    ]))
    .await
    .unwrap();
    let hits = within(index.search(&[1.0, 0.2, 0.0], 2, None))
        .await
        .unwrap();
    assert_eq!(ids(&hits), vec![u64::MAX, 0], "extreme ids survive");
    assert_eq!(hits[0].payload, pairs);
    assert!(hits[1].payload.is_empty());
}

fn embedded(dim: usize, metric: Metric, lists: bool) -> EmbeddedVectorIndex {
    let index = EmbeddedVectorIndex::new(dim, metric);
    if lists {
        index.with_index_threshold(1)
    } else {
        index
    }
}

async fn qdrant(
    standin: &QdrantStandIn,
    collection: &str,
    dim: usize,
    metric: Metric,
) -> QdrantIndex {
    within(QdrantIndex::connect(QdrantOptions::new(
        standin.url(),
        collection,
        dim,
        metric,
    )))
    .await
    .expect("connect to the Qdrant stand-in")
}

#[tokio::test]
async fn embedded_exact_index_meets_the_contract() {
    contract(&embedded(3, Metric::Cosine, false)).await;
    l2_contract(&embedded(2, Metric::L2, false)).await;
    payload_contract(&embedded(3, Metric::Cosine, false)).await;
}

#[tokio::test]
async fn embedded_inverted_lists_meet_the_contract() {
    let index = embedded(3, Metric::Cosine, true);
    contract(&index).await;
    assert!(
        index.index_is_fresh(),
        "unfiltered searches went through the inverted lists"
    );
    l2_contract(&embedded(2, Metric::L2, true)).await;
    payload_contract(&embedded(3, Metric::Cosine, true)).await;
}

#[tokio::test]
async fn qdrant_index_meets_the_contract() {
    let standin = QdrantStandIn::start();
    let index = qdrant(&standin, "contract", 3, Metric::Cosine).await;
    assert_eq!(index.backend(), "qdrant");
    contract(&index).await;
    l2_contract(&qdrant(&standin, "contract-l2", 2, Metric::L2).await).await;
    payload_contract(&qdrant(&standin, "contract-payload", 3, Metric::Cosine).await).await;
    assert!(standin.calls("query") > 0, "searches went over gRPC");
}

#[tokio::test]
async fn qdrant_upserts_go_out_in_batches() {
    let standin = QdrantStandIn::start();
    let index = within(QdrantIndex::connect(
        QdrantOptions::new(standin.url(), "batched", 2, Metric::L2).with_batch_size(2),
    ))
    .await
    .unwrap();
    let items: Vec<VectorItem> = (0..5).map(|id| item(id, vec![id as f32, 0.0])).collect();
    within(index.upsert(items)).await.unwrap();
    assert_eq!(standin.calls("upsert"), 3, "5 points in batches of 2");
    assert_eq!(standin.point_count("batched"), Some(5));
    assert_eq!(within(index.len()).await.unwrap(), 5);
}

#[tokio::test]
async fn qdrant_collections_are_created_once_and_checked_on_connect() {
    let standin = QdrantStandIn::start();
    let first = qdrant(&standin, "shared", 3, Metric::Cosine).await;
    within(first.upsert(vec![item(1, vec![1.0, 0.0, 0.0])]))
        .await
        .unwrap();
    // A second process finds the collection and its points.
    let second = qdrant(&standin, "shared", 3, Metric::Cosine).await;
    assert_eq!(within(second.len()).await.unwrap(), 1);
    assert_eq!(standin.calls("create_collection"), 1);

    let wrong_dim = within(QdrantIndex::connect(QdrantOptions::new(
        standin.url(),
        "shared",
        4,
        Metric::Cosine,
    )))
    .await;
    match wrong_dim {
        Err(StoreError::InvalidQuery { reason, hint }) => {
            assert!(reason.contains("3-dimensional"), "{reason}");
            assert!(hint.is_some());
        }
        other => panic!("expected a dimension mismatch, got {other:?}"),
    }
    let wrong_metric = within(QdrantIndex::connect(QdrantOptions::new(
        standin.url(),
        "shared",
        3,
        Metric::L2,
    )))
    .await;
    match wrong_metric {
        Err(StoreError::InvalidQuery { reason, .. }) => {
            assert!(
                reason.contains("Cosine") && reason.contains("Euclid"),
                "{reason}"
            )
        }
        other => panic!("expected a distance mismatch, got {other:?}"),
    }
}

#[tokio::test]
async fn qdrant_refuses_vectors_of_the_wrong_dimension_on_the_server_too() {
    let standin = QdrantStandIn::start();
    let index = qdrant(&standin, "resized", 3, Metric::Cosine).await;
    // Someone recreates the collection with 4 dimensions behind the index's back.
    standin.replace_collection("resized", 4, Distance::Cosine);
    for result in [
        within(index.upsert(vec![item(1, vec![1.0, 0.0, 0.0])])).await,
        within(index.search(&[1.0, 0.0, 0.0], 1, None))
            .await
            .map(|_| ()),
    ] {
        match result {
            Err(StoreError::InvalidQuery { reason, .. }) => {
                assert!(reason.contains("dimension"), "{reason}")
            }
            other => panic!("expected the server's dimension error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn qdrant_unreachable_server_is_unavailable() {
    let mut standin = QdrantStandIn::start();
    let url = standin.url();
    let index = qdrant(&standin, "gone", 2, Metric::Cosine).await;
    standin.kill();
    match within(QdrantIndex::connect(QdrantOptions::new(
        &url,
        "gone",
        2,
        Metric::Cosine,
    )))
    .await
    {
        Err(StoreError::Unavailable { detail }) => assert!(detail.contains(&url), "{detail}"),
        other => panic!("expected Unavailable on connect, got {other:?}"),
    }
    assert!(matches!(
        within(index.search(&[1.0, 0.0], 1, None)).await,
        Err(StoreError::Unavailable { .. })
    ));
    assert!(matches!(
        within(index.upsert(vec![item(1, vec![1.0, 0.0])])).await,
        Err(StoreError::Unavailable { .. })
    ));
}

#[tokio::test]
async fn qdrant_server_gone_mid_call_is_a_typed_error() {
    let mut standin = QdrantStandIn::start();
    let index = within(QdrantIndex::connect(
        QdrantOptions::new(standin.url(), "midcall", 2, Metric::Cosine)
            .with_timeout(Duration::from_secs(20)),
    ))
    .await
    .unwrap();
    within(index.upsert(vec![item(1, vec![1.0, 0.0])]))
        .await
        .unwrap();
    standin.set_delay(Duration::from_secs(10));
    let search = index.search(&[1.0, 0.0], 1, None);
    let kill = async {
        // Long enough for the request to reach the server and wait in its handler.
        tokio::time::sleep(Duration::from_millis(300)).await;
        standin.kill();
    };
    let (result, ()) = within(async { tokio::join!(search, kill) }).await;
    match result {
        Err(StoreError::Unavailable { .. }) => {}
        other => panic!("expected Unavailable after the server died, got {other:?}"),
    }
}

#[tokio::test]
async fn qdrant_calls_are_bounded_by_the_timeout() {
    let standin = QdrantStandIn::start();
    let index = within(QdrantIndex::connect(
        QdrantOptions::new(standin.url(), "slow", 2, Metric::Cosine)
            // Generous enough for connecting on a loaded machine, far below the delay.
            .with_timeout(Duration::from_millis(1_500)),
    ))
    .await
    .unwrap();
    standin.set_delay(Duration::from_secs(20));
    assert_eq!(
        within(index.search(&[1.0, 0.0], 1, None)).await,
        Err(StoreError::Timeout { millis: 1_500 })
    );
    assert!(matches!(
        within(index.len()).await,
        Err(StoreError::Timeout { .. })
    ));
}

#[tokio::test]
async fn qdrant_server_errors_map_to_store_errors() {
    let standin = QdrantStandIn::start();
    let index = qdrant(&standin, "failing", 2, Metric::Cosine).await;
    type Expected = fn(&StoreError) -> bool;
    let cases: [(Code, Expected); 6] = [
        (Code::Internal, |e| matches!(e, StoreError::Backend { .. })),
        (Code::InvalidArgument, |e| {
            matches!(e, StoreError::InvalidQuery { .. })
        }),
        (Code::NotFound, |e| matches!(e, StoreError::NotFound { .. })),
        (Code::ResourceExhausted, |e| {
            matches!(e, StoreError::LimitExceeded { .. })
        }),
        (Code::Unavailable, |e| {
            matches!(e, StoreError::Unavailable { .. })
        }),
        (Code::DeadlineExceeded, |e| {
            matches!(e, StoreError::Timeout { .. })
        }),
    ];
    for (code, expected) in cases {
        standin.fail_with(code, "injected by the test");
        let error = within(index.search(&[1.0, 0.0], 1, None))
            .await
            .expect_err("the server fails every call");
        assert!(expected(&error), "{code:?} became {error:?}");
        let error = within(index.upsert(vec![item(1, vec![1.0, 0.0])]))
            .await
            .expect_err("the server fails every call");
        assert!(expected(&error), "{code:?} on upsert became {error:?}");
    }
    standin.clear_failure();
    within(index.upsert(vec![item(1, vec![1.0, 0.0])]))
        .await
        .unwrap();
}

#[tokio::test]
async fn qdrant_refuses_payloads_it_cannot_store_faithfully() {
    let standin = QdrantStandIn::start();
    let index = qdrant(&standin, "payloads", 2, Metric::Cosine).await;
    for payload in [
        vec![
            ("k".to_owned(), "1".to_owned()),
            ("k".to_owned(), "2".to_owned()),
        ],
        vec![(ORDER_FIELD.to_owned(), "x".to_owned())],
    ] {
        let result = within(index.upsert(vec![VectorItem {
            id: 1,
            vector: vec![1.0, 0.0],
            payload,
        }]))
        .await;
        assert!(
            matches!(result, Err(StoreError::InvalidQuery { .. })),
            "{result:?}"
        );
    }
    assert_eq!(standin.calls("upsert"), 0, "nothing was sent");
}

#[tokio::test]
async fn qdrant_points_written_by_other_tools_read_back_or_fail_cleanly() {
    use qdrant_client::qdrant::{PointStruct, UpsertPointsBuilder};
    let standin = QdrantStandIn::start();
    let index = qdrant(&standin, "foreign", 2, Metric::Cosine).await;
    let client = qdrant_client::Qdrant::from_url(&standin.url())
        .skip_compatibility_check()
        .build()
        .unwrap();
    let numeric = PointStruct::new(
        7,
        vec![1.0, 0.0],
        [("b", 2.into()), ("a", "x".into()), ("c", true.into())],
    );
    let uuid = PointStruct::new(
        "5c56c793-69f3-4fbf-87e6-c4bf54c28c26",
        vec![0.0, 1.0],
        [("a", "y".into())],
    );
    within(
        client.upsert_points(UpsertPointsBuilder::new("foreign", vec![numeric, uuid]).wait(true)),
    )
    .await
    .unwrap();
    let hits = within(index.search(&[1.0, 0.0], 1, Some(&[7])))
        .await
        .unwrap();
    assert_eq!(hits[0].id, 7);
    assert_eq!(
        hits[0].payload,
        vec![
            ("a".to_owned(), "x".to_owned()),
            ("b".to_owned(), "2".to_owned()),
            ("c".to_owned(), "true".to_owned()),
        ],
        "without kgmesh's order field, fields come back sorted, values as text"
    );
    match within(index.search(&[0.0, 1.0], 2, None)).await {
        Err(StoreError::Corrupt { detail, .. }) => assert!(detail.contains("UUID"), "{detail}"),
        other => panic!("expected a typed error for a UUID point id, got {other:?}"),
    }
}

#[tokio::test]
async fn qdrant_bad_addresses_and_options_are_refused() {
    for options in [
        QdrantOptions::new("localhost:6334", "c", 2, Metric::Cosine),
        QdrantOptions::new("http://127.0.0.1:6334", "", 2, Metric::Cosine),
        QdrantOptions::new("http://127.0.0.1:6334", "c", 0, Metric::Cosine),
        QdrantOptions::new("http://127.0.0.1:6334", "c", 2, Metric::Cosine).with_batch_size(0),
        QdrantOptions::new("http://bad host:6334", "c", 2, Metric::Cosine),
    ] {
        let result = within(QdrantIndex::connect(options.clone())).await;
        assert!(
            matches!(result, Err(StoreError::InvalidQuery { .. })),
            "{options:?} gave {result:?}"
        );
    }
}

#[tokio::test]
async fn qdrant_scheme_is_read_as_plain_grpc() {
    let standin = QdrantStandIn::start();
    let url = format!("qdrant://{}", standin.addr());
    let index = within(QdrantIndex::connect(QdrantOptions::new(
        url,
        "scheme",
        2,
        Metric::L2,
    )))
    .await
    .unwrap();
    within(index.upsert(vec![item(1, vec![0.0, 0.0])]))
        .await
        .unwrap();
    assert_eq!(within(index.len()).await.unwrap(), 1);
}
