//! Grounded Cypher at scale: reading a graph's values, and grounding + enumerating +
//! ranking the candidate queries of each Northwind question, on Northwind itself and on
//! Northwind grown to about a million relationships in the same run.
//!
//! The grown graph repeats the fact tables: `orders.csv` and `order-details.csv` are
//! written `KGMESH_BENCH_SCALE` times (default 216, about 1.0M relationships) with new
//! order ids, beside the same customers, products, suppliers and employees. It loads
//! through the same mapping as `kgmesh cypher --kg … --mapping stores/examples/northwind.toml`.
//!
//! `cargo bench -p kgmesh-benches --bench grounded` (data from `KGMESH_NORTHWIND_DIR`,
//! default `northwind/` of the shared data sets beside the workspace). Prints figures;
//! a harness, not criterion: each question is one measurement.

use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kgmesh_agents::query_executor::grounded::GroundedCypher;
use kgmesh_stores::embedded::load::{load_graph, KgFormat, LoadOptions};
use kgmesh_stores::QueryLimits;

fn data_dir() -> PathBuf {
    std::env::var_os("KGMESH_NORTHWIND_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(kgmesh_testkit::data::northwind_dir)
}

/// Loads the Northwind CSVs through the mapping `kgmesh cypher --mapping` takes.
fn options() -> LoadOptions {
    LoadOptions {
        format: Some(KgFormat::PropertyCsv),
        mapping: Some(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../stores/examples/northwind.toml"),
        ),
        ..LoadOptions::default()
    }
}

/// The `question` of each line of the text2cypher pairs.
fn questions() -> Vec<String> {
    let path = data_dir().join("text2cypher.jsonl");
    let file = std::fs::File::open(&path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()));
    BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(&line).ok()?;
            value.get("question")?.as_str().map(str::to_owned)
        })
        .collect()
}

/// Copies the Northwind CSVs into `into`, with the order tables written `scale` times:
/// copy `c` of order `o` gets id `o + c·1,000,000` (ids stay strings, as in the source).
fn grow(source: &Path, into: &Path, scale: u64) -> std::io::Result<()> {
    for entry in std::fs::read_dir(source)? {
        let path = entry?.path();
        let name = path.file_name().unwrap().to_owned();
        let repeated = name == "orders.csv" || name == "order-details.csv";
        if !repeated {
            std::fs::copy(&path, into.join(&name))?;
            continue;
        }
        let text = std::fs::read_to_string(&path)?;
        let mut lines = text.lines();
        let mut out = BufWriter::new(std::fs::File::create(into.join(&name))?);
        writeln!(out, "{}", lines.next().unwrap_or_default())?;
        let rows: Vec<&str> = lines.filter(|l| !l.is_empty()).collect();
        for copy in 0..scale {
            for row in &rows {
                let (id, rest) = row.split_once(',').unwrap_or((row, ""));
                let id: u64 = id.trim().parse().expect("numeric order ids");
                writeln!(out, "{},{rest}", id + copy * 1_000_000)?;
            }
        }
        out.flush()?;
    }
    Ok(())
}

struct Figures {
    relationships: u64,
    load: Duration,
    read: Duration,
    indexed_values: usize,
    p50: Duration,
    p99: Duration,
    mean_candidates: f64,
}

/// One row of the printed table.
fn print_row(name: &str, figures: &Figures) {
    println!(
        "| {name} | {} | {:.2} s | {:.2} s | {} | {:.0} | {:.2} ms | {:.2} ms |",
        figures.relationships,
        figures.load.as_secs_f64(),
        figures.read.as_secs_f64(),
        figures.indexed_values,
        figures.mean_candidates,
        figures.p50.as_secs_f64() * 1e3,
        figures.p99.as_secs_f64() * 1e3,
    );
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn measure(csv: &Path, questions: &[String]) -> Figures {
    let started = Instant::now();
    let (graph, _) = load_graph(csv, &options()).expect("the graph loads");
    let load = started.elapsed();
    let schema = graph.schema_sync();
    let limits = QueryLimits {
        max_rows: 100_000,
        timeout: Duration::from_secs(60),
        max_depth: 3,
    };
    let started = Instant::now();
    let planner = GroundedCypher::read(&graph, (*schema).clone(), &limits)
        .await
        .expect("the values are read");
    let read = started.elapsed();
    let mut times = Vec::with_capacity(questions.len());
    let mut candidates = 0usize;
    for question in questions {
        let started = Instant::now();
        let parsed = planner.question(question);
        let ranked = planner.ranked(&parsed);
        let choice = planner.choose(&parsed, &ranked);
        times.push(started.elapsed());
        candidates += ranked.len();
        std::hint::black_box(choice);
    }
    times.sort();
    Figures {
        relationships: graph.edge_count() as u64,
        load,
        read,
        indexed_values: planner.values().indexed_values(),
        p50: percentile(&times, 50.0),
        p99: percentile(&times, 99.0),
        mean_candidates: candidates as f64 / questions.len().max(1) as f64,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a filter argument selects nothing here.
    let scale: u64 = std::env::var("KGMESH_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(216);
    let questions = questions();
    let source = data_dir().join("csv");
    let grown = tempfile::tempdir().expect("a temporary directory");
    grow(&source, grown.path(), scale).expect("the grown CSVs are written");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "grounded Cypher: {} Northwind questions, no model, cold ranking, release build",
        questions.len()
    );
    println!(
        "| graph | relationships | load | read values | values indexed | candidates/question | p50 | p99 |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let mut rows = Vec::new();
    for (name, dir) in [
        ("Northwind".to_owned(), source.clone()),
        (
            format!("Northwind ×{scale} orders"),
            grown.path().to_owned(),
        ),
    ] {
        let figures = runtime.block_on(measure(&dir, &questions));
        print_row(&name, &figures);
        rows.push(figures);
    }
    // Northwind again while the grown graph is held in memory: whether the grown row's
    // slower enumeration comes from the process holding a large graph rather than from
    // the graph the questions are asked of.
    let (held, _) = load_graph(grown.path(), &options()).expect("the grown graph loads");
    let figures = runtime.block_on(measure(&source, &questions));
    print_row("Northwind, the grown graph held in memory", &figures);
    drop(held);
    if let [small, large] = rows.as_slice() {
        println!(
            "ratio grown/Northwind: read values ×{:.1}, enumeration p50 ×{:.2}, p99 ×{:.2}",
            large.read.as_secs_f64() / small.read.as_secs_f64().max(1e-9),
            large.p50.as_secs_f64() / small.p50.as_secs_f64().max(1e-9),
            large.p99.as_secs_f64() / small.p99.as_secs_f64().max(1e-9),
        );
    }
}
