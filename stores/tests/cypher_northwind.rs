//! Runs all 822 LLM-written Northwind queries through parse → validate → execute on the
//! in-memory graph and holds the rates to floors, so that a regression in any stage
//! shows up as a failure with the offending queries printed.

#[path = "cypher_common.rs"]
mod common;

use std::collections::BTreeMap;
use std::time::Instant;

use kgmesh_stores::cypher::{self, ErrorKind};
use kgmesh_stores::QueryLimits;

#[test]
fn northwind_queries_parse_validate_and_run() {
    let graph = common::load_northwind();
    let schema = graph.schema();
    let queries = common::northwind_queries();
    assert_eq!(queries.len(), 822, "the text2cypher set has 822 pairs");
    let limits = QueryLimits::default();
    let (mut parsed, mut validated, mut executed) = (0usize, 0usize, 0usize);
    let mut failures: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let started = Instant::now();
    for (_, text) in &queries {
        let query = match cypher::parse(text) {
            Ok(query) => query,
            Err(error) => {
                failures
                    .entry("parse".into())
                    .or_default()
                    .push(format!("{error}\n      {}", text.replace('\n', " ")));
                continue;
            }
        };
        parsed += 1;
        if let Err(error) = cypher::validate(&query, &schema, &limits) {
            let category = format!("validate/{:?}", error.kind);
            failures
                .entry(category)
                .or_default()
                .push(format!("{error}\n      {}", text.replace('\n', " ")));
            continue;
        }
        validated += 1;
        match cypher::execute(&graph, &query, &[], &limits) {
            Ok(_) => executed += 1,
            Err(error) => {
                let category = match error.kind {
                    ErrorKind::Timeout { .. } => "execute/Timeout".to_string(),
                    kind => format!("execute/{kind:?}"),
                };
                failures
                    .entry(category)
                    .or_default()
                    .push(format!("{error}\n      {}", text.replace('\n', " ")));
            }
        }
    }
    let total = queries.len();
    println!(
        "northwind: parsed {parsed}/{total} ({:.1}%), validated {validated}/{total} ({:.1}%), executed {executed}/{total} ({:.1}%) in {:.2?}",
        100.0 * parsed as f64 / total as f64,
        100.0 * validated as f64 / total as f64,
        100.0 * executed as f64 / total as f64,
        started.elapsed()
    );
    for (category, items) in &failures {
        println!("--- {category}: {}", items.len());
        for item in items {
            println!("  {item}");
        }
    }
    assert!(parsed * 100 >= total * 95, "parse rate under 95%");
    assert!(executed * 100 >= total * 90, "execution rate under 90%");
}
