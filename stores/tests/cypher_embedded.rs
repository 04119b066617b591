//! Cypher through the embedded store's `GraphStore::cypher`: Northwind loaded with its
//! mapping file, queries answered on the blocking pool, writes refused at the boundary.

#[path = "cypher_common.rs"]
mod common;

use std::path::Path;
use std::time::Duration;

use kgmesh_schemas::graph::Value;
use kgmesh_stores::cypher;
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::embedded::EmbeddedGraph;
use kgmesh_stores::{GraphStore, QueryLimits, StoreError};

fn northwind() -> EmbeddedGraph {
    let mapping = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/northwind.toml");
    let options = LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(mapping),
        ..LoadOptions::default()
    };
    load_graph(&common::data_dir().join("csv"), &options)
        .expect("Northwind loads")
        .0
}

async fn ask(
    store: &EmbeddedGraph,
    query: &str,
) -> Result<kgmesh_schemas::graph::Rows, StoreError> {
    tokio::time::timeout(
        Duration::from_secs(30),
        store.cypher(query, &[], &QueryLimits::default()),
    )
    .await
    .expect("cypher answered within 30 s")
}

#[tokio::test]
async fn graph_store_cypher_answers_and_refuses() {
    let store = northwind();
    let rows = ask(&store, "MATCH (p:Product) RETURN count(p) AS products")
        .await
        .unwrap();
    assert_eq!(rows.columns, vec!["products".to_string()]);
    assert_eq!(rows.rows, vec![vec![Value::Int(77)]]);
    let rows = ask(
        &store,
        "MATCH (:Supplier {companyName: 'Exotic Liquids'})-[:SUPPLIES]->(p:Product) RETURN p.productName ORDER BY p.productName",
    )
    .await
    .unwrap();
    let names: Vec<Value> = rows.rows.into_iter().map(|mut row| row.remove(0)).collect();
    assert_eq!(
        names,
        vec![
            Value::String("Aniseed Syrup".into()),
            Value::String("Chai".into()),
            Value::String("Chang".into())
        ]
    );
    // Order 10248: 12 + 10 + 5 units on three lines.
    let rows = ask(
        &store,
        "MATCH (o:Order {orderID: '10248'})-[r:ORDERS]->() RETURN sum(r.quantity)",
    )
    .await
    .unwrap();
    assert_eq!(rows.rows, vec![vec![Value::Int(27)]]);
    match ask(&store, "MATCH (p:Product) DETACH DELETE p").await {
        Err(StoreError::InvalidQuery { reason, .. }) => {
            assert!(reason.contains("DETACH DELETE is refused"), "{reason}")
        }
        other => panic!("a write must be refused, got {other:?}"),
    }
    match ask(&store, "MATCH (o:Order)-[:ORDERED]->(p:Product) RETURN p").await {
        Err(StoreError::InvalidQuery { reason, hint }) => {
            assert!(
                reason.contains("relationship :ORDERED does not exist"),
                "{reason}"
            );
            let hint = hint.unwrap_or_default();
            assert!(
                hint.starts_with("did you mean :ORDERS? (:Order)-[:ORDERS]->(:Product)"),
                "{hint}"
            );
        }
        other => panic!("an unknown relationship must be refused with a hint, got {other:?}"),
    }
}

#[test]
fn the_822_queries_on_the_embedded_store() {
    let graph = northwind();
    let schema = graph.schema_sync();
    let limits = QueryLimits::default();
    let queries = common::northwind_queries();
    let (mut parsed, mut validated, mut executed) = (0, 0, 0);
    for (_, text) in &queries {
        let Ok(query) = cypher::parse(text) else {
            continue;
        };
        parsed += 1;
        if cypher::validate(&query, &schema, &limits).is_err() {
            continue;
        }
        validated += 1;
        if cypher::execute(&graph, &query, &[], &limits).is_ok() {
            executed += 1;
        }
    }
    let total = queries.len();
    println!("embedded northwind: parsed {parsed}/{total}, validated {validated}/{total}, executed {executed}/{total}");
    assert!(parsed * 100 >= total * 95);
    assert!(executed * 100 >= total * 90);
}
