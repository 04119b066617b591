//! Differential test over Bolt: Northwind written into ArcadeDB (its Bolt plugin, started
//! by the testkit on random ports) through the Bolt backend's writer, the 822 queries run
//! through `BoltGraph::cypher` and through the embedded executor, results compared with
//! the same tie-aware comparison as `cypher_arcadedb`.
//!
//! Needs `pip install arcadedb-embedded` (the testkit fails with that instruction).
//! Run with `cargo test -p kgmesh-stores --test cypher_bolt -- --ignored --nocapture`.

#[path = "cypher_common.rs"]
mod common;
#[path = "cypher_compare.rs"]
mod compare;

use std::path::Path;
use std::time::{Duration, Instant};

use compare::{compare, value_json, CompareOptions};
use kgmesh_stores::bolt::{write_graph, BoltGraph, BoltSettings};
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::{GraphStore, QueryLimits};
use kgmesh_testkit::bolt::BoltServer;
use serde_json::{json, Value as Json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "starts ArcadeDB (JVM) with Bolt; run with --ignored"]
async fn embedded_matches_arcadedb_over_bolt() {
    let mapping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/northwind.toml");
    let options = LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(mapping),
        ..LoadOptions::default()
    };
    let (graph, _) =
        load_graph(&common::data_dir().join("csv"), &options).expect("Northwind loads");
    let server = tokio::task::spawn_blocking(BoltServer::start)
        .await
        .expect("server thread");
    let settings = BoltSettings {
        uri: server.uri(),
        user: server.user().to_string(),
        password: server.password().to_string(),
        database: Some(server.database().to_string()),
        timeout: Duration::from_secs(60),
    };
    let written = tokio::time::timeout(
        Duration::from_secs(300),
        write_graph(&settings, &graph, 500, true),
    )
    .await
    .expect("Northwind written within 5 minutes")
    .expect("Northwind written over Bolt");
    println!("bolt: wrote {written:?}");
    let store = tokio::time::timeout(Duration::from_secs(60), BoltGraph::connect(&settings))
        .await
        .expect("connected within a minute")
        .expect("connected");
    let queries: Vec<String> = common::northwind_queries()
        .into_iter()
        .map(|(_, cypher)| cypher)
        .collect();
    let limits = QueryLimits {
        max_rows: 100_000,
        timeout: Duration::from_secs(30),
        max_depth: 3,
    };
    let mut theirs: Vec<Json> = Vec::with_capacity(queries.len());
    for query in &queries {
        // Warm pass, then the timed one.
        let first = store.cypher(query, &[], &limits).await;
        let started = Instant::now();
        let second = store.cypher(query, &[], &limits).await;
        let millis = started.elapsed().as_secs_f64() * 1000.0;
        theirs.push(match first.and(second) {
            Ok(rows) => json!({
                "rows": rows.rows.iter().map(|row| Json::Array(row.iter().map(value_json).collect())).collect::<Vec<_>>(),
                "millis": millis,
            }),
            Err(error) => json!({"error": error.to_string()}),
        });
    }
    let options = CompareOptions {
        sort_columns: false,
        strip_node_properties: &["kgmesh_norm", "kgmesh_key"],
        their_timing: "BoltGraph::cypher round trip over loopback, rolled-back transaction",
    };
    let (ran, identical, equivalent) =
        compare(&graph, &queries, &theirs, "arcadedb-bolt", &options);
    drop(server);
    assert!(ran > 0, "ArcadeDB ran nothing over Bolt");
    assert!(identical * 100 >= ran * 70, "identical share under 70%");
    assert!(
        equivalent * 100 >= ran * 85,
        "identical-or-tie-equivalent share under 85%"
    );
}
