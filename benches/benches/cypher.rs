//! Cypher on the Northwind set: parse + validate time per query over the 822 LLM-written
//! queries, and embedded execution time per query over those that validate.
//!
//! `cargo bench -p kgmesh-benches --bench cypher` (data from `KGMESH_NORTHWIND_DIR`,
//! default `northwind/` of the shared data sets, `shared/data` beside the workspace). ArcadeDB's times on the same queries are
//! printed by `cargo test --release -p kgmesh-stores --test cypher_arcadedb -- --ignored --nocapture`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kgmesh_stores::cypher;
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::QueryLimits;

fn data_dir() -> PathBuf {
    std::env::var_os("KGMESH_NORTHWIND_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(kgmesh_testkit::data::northwind_dir)
}

/// The `cypher` string of each JSON line (a JSON string, decoded by hand to keep this
/// bench free of a JSON dependency).
fn queries() -> Vec<String> {
    let path = data_dir().join("text2cypher.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    text.lines()
        .filter_map(|line| {
            let start = line.find("\"cypher\": \"")? + "\"cypher\": \"".len();
            let mut out = String::new();
            let mut chars = line[start..].chars();
            while let Some(c) = chars.next() {
                match c {
                    '"' => return Some(out),
                    '\\' => match chars.next()? {
                        'n' => out.push('\n'),
                        't' => out.push('\t'),
                        'r' => out.push('\r'),
                        'u' => {
                            let hex: String = chars.by_ref().take(4).collect();
                            out.push(
                                u32::from_str_radix(&hex, 16)
                                    .ok()
                                    .and_then(char::from_u32)
                                    .unwrap_or('\u{FFFD}'),
                            );
                        }
                        other => out.push(other),
                    },
                    other => out.push(other),
                }
            }
            None
        })
        .collect()
}

fn bench_cypher(c: &mut Criterion) {
    let mapping = Path::new(env!("CARGO_MANIFEST_DIR")).join("../stores/examples/northwind.toml");
    let options = LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(mapping),
        ..LoadOptions::default()
    };
    let (graph, _) = load_graph(&data_dir().join("csv"), &options).expect("Northwind loads");
    let schema = graph.schema_sync();
    let limits = QueryLimits {
        max_rows: 100_000,
        timeout: Duration::from_secs(10),
        max_depth: 3,
    };
    let texts = queries();
    let valid: Vec<cypher::ast::Query> = texts
        .iter()
        .filter_map(|text| cypher::parse(text).ok())
        .filter(|query| cypher::validate(query, &schema, &limits).is_ok())
        .collect();
    let runnable: Vec<&cypher::ast::Query> = valid
        .iter()
        .filter(|query| cypher::execute(&graph, query, &[], &limits).is_ok())
        .collect();

    // One pass each, timed by hand, for the per-query figures.
    let started = Instant::now();
    for text in &texts {
        if let Ok(query) = cypher::parse(text) {
            let _ = cypher::validate(&query, &schema, &limits);
        }
    }
    let parse_validate = started.elapsed();
    let started = Instant::now();
    for query in &runnable {
        let _ = cypher::execute(&graph, query, &[], &limits);
    }
    let execute = started.elapsed();
    println!(
        "northwind: {} queries, parse+validate {:.1} µs/query; {} run: execute {:.1} µs/query ({:.1} ms in all)",
        texts.len(),
        parse_validate.as_secs_f64() * 1e6 / texts.len() as f64,
        runnable.len(),
        execute.as_secs_f64() * 1e6 / runnable.len().max(1) as f64,
        execute.as_secs_f64() * 1e3
    );

    let mut group = c.benchmark_group("cypher_northwind");
    group.sample_size(10);
    group.bench_function("parse_validate_all_822", |b| {
        b.iter(|| {
            for text in &texts {
                if let Ok(query) = cypher::parse(text) {
                    let _ = cypher::validate(&query, &schema, &limits);
                }
            }
        })
    });
    group.bench_function("execute_all_runnable", |b| {
        b.iter(|| {
            for query in &runnable {
                let _ = cypher::execute(&graph, query, &[], &limits);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench_cypher);
criterion_main!(benches);
