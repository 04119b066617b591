//! Graph-store figures: load, snapshot reload, resident bytes per edge, and the batched
//! operations agents run (1-hop of 100 frontier nodes, a 3-relation metapath from 10
//! sources, bounded shortest paths), on a synthetic power-law KG and on the MetaQA KB.
//!
//! ```text
//! cargo bench -p kgmesh-benches --bench stores                       # 1M edges + MetaQA, then criterion
//! KGMESH_BENCH_EDGES=10000000 cargo bench -p kgmesh-benches --bench stores -- --figures-only
//! ```
//! KGMESH_BENCH_EDGES=1000 cargo bench -p kgmesh-benches --bench stores -- --figures-only --bolt
//! ```
//! `--bolt` also writes the MetaQA KB into a fresh ArcadeDB (Bolt) and times the same
//! operations through the Bolt backend, printed next to the embedded figures.
//! ```text
//! Figures (load, reload, memory, p50/p99 of the operations over many random inputs) are
//! printed first; criterion then measures the micro operations on the same graph.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use criterion::Criterion;
use kgmesh_benches::{percentiles, resident_bytes, splitmix64, SyntheticKg};
use kgmesh_schemas::{
    graph::{Direction, Metapath, RelationStep},
    NodeId,
};
use kgmesh_stores::{
    embedded::{
        load::{load_graph, LoadOptions},
        snapshot, EmbeddedGraph,
    },
    NeighborQuery, PathLimits,
};

const FRONTIER: usize = 100;
const SAMPLES: usize = 500;

fn main() {
    let figures_only = std::env::args().any(|arg| arg == "--figures-only");
    let edges: u64 = std::env::var("KGMESH_BENCH_EDGES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(1_000_000);
    let work = tempfile::Builder::new()
        .prefix("kgmesh-bench-")
        .tempdir()
        .expect("temp dir");

    let synthetic = work.path().join(format!("synthetic-{edges}.tsv"));
    let started = Instant::now();
    SyntheticKg::with_edges(edges)
        .write_tsv(&synthetic)
        .expect("write synthetic KG");
    println!(
        "generated {edges} synthetic edges in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let graph = figures(
        &format!("synthetic {edges} edges"),
        &synthetic,
        work.path(),
        None,
    );

    let metaqa = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/metaqa/kb.tsv");
    let metaqa_graph = if metaqa.exists() {
        let metapath = metapath(&[
            ("directed_by", Direction::Out),
            ("directed_by", Direction::In),
            ("has_genre", Direction::Out),
        ]);
        Some(figures("MetaQA KB", &metaqa, work.path(), Some(metapath)))
    } else {
        println!("MetaQA KB not found at {}; skipped", metaqa.display());
        None
    };

    if std::env::args().any(|arg| arg == "--bolt") {
        if let Some(graph) = &metaqa_graph {
            bolt_figures(graph);
        }
    }
    if figures_only {
        return;
    }
    let mut criterion = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    micro(&mut criterion, "synthetic", &graph);
    if let Some(graph) = &metaqa_graph {
        micro(&mut criterion, "metaqa", graph);
    }
    criterion.final_summary();
}

fn metapath(steps: &[(&str, Direction)]) -> Metapath {
    Metapath {
        steps: steps
            .iter()
            .map(|(relation, direction)| RelationStep {
                relation: (*relation).to_owned(),
                direction: *direction,
            })
            .collect(),
    }
}

/// Nodes with at least one out-edge, drawn deterministically.
fn random_nodes(graph: &EmbeddedGraph, count: usize, state: &mut u64) -> Vec<NodeId> {
    let node_count = graph.node_count() as u64;
    let mut nodes = Vec::with_capacity(count);
    while nodes.len() < count {
        let node = (splitmix64(state) % node_count) as u32;
        if graph.out_degree(node) > 0 {
            nodes.push(graph.node_id(node));
        }
    }
    nodes
}

/// The three most frequent relations, followed outwards.
fn frequent_metapath(graph: &EmbeddedGraph) -> Metapath {
    let counts = graph.relation_edge_counts();
    let mut relations: Vec<(u64, String)> = graph
        .relations()
        .map(|(id, name)| (counts[id.0 as usize], name.to_owned()))
        .collect();
    relations.sort_by_key(|relation| std::cmp::Reverse(relation.0));
    let steps: Vec<(&str, Direction)> = relations
        .iter()
        .take(3)
        .map(|(_, name)| (name.as_str(), Direction::Out))
        .collect();
    metapath(&steps)
}

fn time<T>(mut work: impl FnMut() -> T) -> (Duration, T) {
    let started = Instant::now();
    let value = work();
    (started.elapsed(), value)
}

fn figures(title: &str, kg: &Path, work: &Path, metapath_opt: Option<Metapath>) -> EmbeddedGraph {
    println!("\n== {title} ==");
    let options = LoadOptions::default();
    let (load_time, loaded) = time(|| load_graph(kg, &options).expect("load"));
    let (graph, report) = loaded;
    let edges = graph.edge_count().max(1);
    println!(
        "load        {:>8.2} s   {} lines, {} nodes, {} edges, {} relations, {} bad lines",
        load_time.as_secs_f64(),
        report.lines,
        graph.node_count(),
        graph.edge_count(),
        graph.relation_count(),
        report.bad_line_count
    );
    let snapshot_path = work.join(format!("{}.kgs", title.replace(' ', "-")));
    let (save_time, bytes) = time(|| snapshot::save(&graph, &snapshot_path).expect("save"));
    println!(
        "save        {:>8.2} s   {:.1} MB",
        save_time.as_secs_f64(),
        bytes as f64 / 1e6
    );
    drop(graph);

    let before = resident_bytes().unwrap_or(0);
    let (reload_time, graph) = time(|| snapshot::open(&snapshot_path).expect("reload"));
    println!(
        "reload      {:>8.2} s   (mmap + checksum + validation)",
        reload_time.as_secs_f64()
    );
    // Touch every row so the mapped pages count as resident.
    let mut checksum = 0u64;
    for node in 0..graph.node_count() as u32 {
        checksum = checksum.wrapping_add(
            graph
                .out_edges(node)
                .nodes
                .iter()
                .map(|n| u64::from(*n))
                .sum::<u64>(),
        );
        checksum = checksum.wrapping_add(graph.in_edges(node).nodes.len() as u64);
    }
    let after = resident_bytes().unwrap_or(0);
    println!(
        "memory      {:>8.1} B/edge structure (CSR both ways, labels, offsets); {:.1} B/edge names + name index; RSS growth {:.1} B/edge  [{checksum:x}]",
        graph.structure_bytes() as f64 / edges as f64,
        graph.names_and_properties_bytes() as f64 / edges as f64,
        after.saturating_sub(before) as f64 / edges as f64
    );

    let mut state = 7u64;
    let query = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 100,
    };
    let mut hop_times = Vec::with_capacity(SAMPLES);
    let mut raw_times = Vec::with_capacity(SAMPLES);
    let mut triples = 0usize;
    for _ in 0..SAMPLES {
        let frontier = random_nodes(&graph, FRONTIER, &mut state);
        let (elapsed, result) = time(|| graph.neighbors_sync(&frontier, &query).expect("1-hop"));
        triples += result.triples.len();
        hop_times.push(elapsed);
        let (elapsed, _) = time(|| {
            let mut sum = 0u64;
            for id in &frontier {
                let node = id.0 as u32;
                let out = graph.out_edges(node);
                let inn = graph.in_edges(node);
                sum += out
                    .nodes
                    .iter()
                    .chain(inn.nodes)
                    .take(100)
                    .map(|n| u64::from(*n))
                    .sum::<u64>();
            }
            std::hint::black_box(sum)
        });
        raw_times.push(elapsed);
    }
    let hop = percentiles(hop_times);
    let raw = percentiles(raw_times);
    println!(
        "1-hop x100  p50 {:>7.1} µs  p99 {:>7.1} µs  (both directions, cap 100/node, {} triples avg, names materialized)",
        micros(hop.p50),
        micros(hop.p99),
        triples / SAMPLES
    );
    println!(
        "1-hop raw   p50 {:>7.1} µs  p99 {:>7.1} µs  (same frontiers, CSR slices only)",
        micros(raw.p50),
        micros(raw.p99)
    );

    let metapath = metapath_opt.unwrap_or_else(|| frequent_metapath(&graph));
    let limits = PathLimits {
        max_depth: 3,
        fanout_cap: 100,
        max_paths: 1_000,
    };
    let mut path_times = Vec::new();
    let mut path_count = 0usize;
    for _ in 0..SAMPLES / 5 {
        let sources = random_nodes(&graph, 10, &mut state);
        let (elapsed, paths) = time(|| {
            graph
                .follow_metapaths_sync(&sources, std::slice::from_ref(&metapath), &limits)
                .expect("metapath")
        });
        path_count += paths.len();
        path_times.push(elapsed);
    }
    let metapaths = percentiles(path_times);
    let relations: Vec<&str> = metapath
        .steps
        .iter()
        .map(|step| step.relation.as_str())
        .collect();
    println!(
        "metapath    p50 {:>7.1} µs  p99 {:>7.1} µs  (10 sources, {}, fan-out 100, ≤1000 paths, {} paths avg)",
        micros(metapaths.p50),
        micros(metapaths.p99),
        relations.join(" → "),
        path_count / (SAMPLES / 5)
    );

    let limits = PathLimits {
        max_depth: 3,
        fanout_cap: 1_000,
        max_paths: 10,
    };
    let mut shortest_times = Vec::new();
    let mut found = 0usize;
    for _ in 0..SAMPLES / 5 {
        let pair = random_nodes(&graph, 2, &mut state);
        let (elapsed, paths) = time(|| {
            graph
                .shortest_paths_sync(&pair[..1], &pair[1..], &limits)
                .expect("shortest paths")
        });
        found += usize::from(!paths.is_empty());
        shortest_times.push(elapsed);
    }
    let shortest = percentiles(shortest_times);
    println!(
        "shortest    p50 {:>7.1} µs  p99 {:>7.1} µs  (random pairs, depth ≤ 3, fan-out 1000, ≤10 paths; {}% connected)",
        micros(shortest.p50),
        micros(shortest.p99),
        found * 100 / (SAMPLES / 5)
    );
    graph
}

/// The same operations through the Bolt backend against ArcadeDB holding `graph`.
fn bolt_figures(graph: &EmbeddedGraph) {
    use kgmesh_stores::{
        bolt::{write_graph, BoltGraph, BoltSettings},
        GraphStore, NameMatch,
    };
    println!("\n== MetaQA KB over Bolt (ArcadeDB) ==");
    let server = kgmesh_testkit::bolt::BoltServer::start();
    let settings = BoltSettings {
        uri: server.uri(),
        user: server.user().to_owned(),
        password: server.password().to_owned(),
        database: Some(server.database().to_owned()),
        timeout: Duration::from_secs(600),
    };
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (write_time, written) = time(|| {
        runtime
            .block_on(write_graph(&settings, graph, 5_000, true))
            .expect("write")
    });
    println!(
        "write       {:>8.2} s   {} nodes, {} relationships",
        write_time.as_secs_f64(),
        written.nodes,
        written.relationships
    );
    let store = runtime
        .block_on(BoltGraph::connect(&settings))
        .expect("connect");
    // Map embedded nodes to database nodes by name (MetaQA names are unique).
    let mut state = 7u64;
    let samples = 50;
    let query = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 100,
    };
    let mut hop_times = Vec::new();
    let mut embedded_times = Vec::new();
    for _ in 0..samples {
        let frontier = random_nodes(graph, FRONTIER, &mut state);
        let names: Vec<String> = frontier
            .iter()
            .map(|id| graph.name(id.0 as u32).to_owned())
            .collect();
        let resolved = runtime
            .block_on(store.resolve(&names, NameMatch::Exact))
            .expect("resolve");
        let remote: Vec<NodeId> = resolved
            .iter()
            .filter_map(|found| found.first().map(|e| e.id))
            .collect();
        let (elapsed, _) = time(|| {
            runtime
                .block_on(store.neighbors(&remote, &query))
                .expect("bolt 1-hop")
        });
        hop_times.push(elapsed);
        let (elapsed, _) = time(|| graph.neighbors_sync(&frontier, &query).expect("1-hop"));
        embedded_times.push(elapsed);
    }
    let bolt = percentiles(hop_times);
    let embedded = percentiles(embedded_times);
    println!(
        "1-hop x100  p50 {:>9.1} µs  p99 {:>9.1} µs  ({:.0}x the embedded p50 of {:.1} µs)",
        micros(bolt.p50),
        micros(bolt.p99),
        bolt.p50.as_secs_f64() / embedded.p50.as_secs_f64().max(1e-9),
        micros(embedded.p50)
    );
    let metapath = metapath(&[
        ("directed_by", Direction::Out),
        ("directed_by", Direction::In),
        ("has_genre", Direction::Out),
    ]);
    let limits = PathLimits {
        max_depth: 3,
        fanout_cap: 100,
        max_paths: 1_000,
    };
    let mut bolt_times = Vec::new();
    let mut embedded_times = Vec::new();
    for _ in 0..20 {
        let sources = random_nodes(graph, 10, &mut state);
        let names: Vec<String> = sources
            .iter()
            .map(|id| graph.name(id.0 as u32).to_owned())
            .collect();
        let resolved = runtime
            .block_on(store.resolve(&names, NameMatch::Exact))
            .expect("resolve");
        let remote: Vec<NodeId> = resolved
            .iter()
            .filter_map(|found| found.first().map(|e| e.id))
            .collect();
        let (elapsed, _) = time(|| {
            runtime
                .block_on(store.follow_metapaths(&remote, std::slice::from_ref(&metapath), &limits))
                .expect("bolt metapath")
        });
        bolt_times.push(elapsed);
        let (elapsed, _) = time(|| {
            graph
                .follow_metapaths_sync(&sources, std::slice::from_ref(&metapath), &limits)
                .expect("metapath")
        });
        embedded_times.push(elapsed);
    }
    let bolt = percentiles(bolt_times);
    let embedded = percentiles(embedded_times);
    println!(
        "metapath    p50 {:>9.1} µs  p99 {:>9.1} µs  ({:.0}x the embedded p50 of {:.1} µs)",
        micros(bolt.p50),
        micros(bolt.p99),
        bolt.p50.as_secs_f64() / embedded.p50.as_secs_f64().max(1e-9),
        micros(embedded.p50)
    );
    let limits = PathLimits {
        max_depth: 3,
        fanout_cap: 1_000,
        max_paths: 10,
    };
    let mut bolt_times = Vec::new();
    let mut embedded_times = Vec::new();
    for _ in 0..20 {
        let pair = random_nodes(graph, 2, &mut state);
        let names: Vec<String> = pair
            .iter()
            .map(|id| graph.name(id.0 as u32).to_owned())
            .collect();
        let resolved = runtime
            .block_on(store.resolve(&names, NameMatch::Exact))
            .expect("resolve");
        let remote: Vec<NodeId> = resolved
            .iter()
            .filter_map(|found| found.first().map(|e| e.id))
            .collect();
        if remote.len() < 2 {
            continue;
        }
        let (elapsed, _) = time(|| {
            runtime
                .block_on(store.shortest_paths(&remote[..1], &remote[1..], &limits))
                .expect("bolt shortest")
        });
        bolt_times.push(elapsed);
        let (elapsed, _) = time(|| {
            graph
                .shortest_paths_sync(&pair[..1], &pair[1..], &limits)
                .expect("shortest")
        });
        embedded_times.push(elapsed);
    }
    let bolt = percentiles(bolt_times);
    let embedded = percentiles(embedded_times);
    println!(
        "shortest    p50 {:>9.1} µs  p99 {:>9.1} µs  ({:.0}x the embedded p50 of {:.1} µs)",
        micros(bolt.p50),
        micros(bolt.p99),
        bolt.p50.as_secs_f64() / embedded.p50.as_secs_f64().max(1e-9),
        micros(embedded.p50)
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

fn micro(criterion: &mut Criterion, name: &str, graph: &EmbeddedGraph) {
    let mut state = 99u64;
    let frontiers: Vec<Vec<NodeId>> = (0..64)
        .map(|_| random_nodes(graph, FRONTIER, &mut state))
        .collect();
    let query = NeighborQuery {
        direction: Direction::Both,
        relations: None,
        fanout_cap: 100,
    };
    let mut index = 0usize;
    criterion.bench_function(&format!("{name}/1-hop of 100 nodes"), |bencher| {
        bencher.iter(|| {
            index = (index + 1) % frontiers.len();
            graph
                .neighbors_sync(&frontiers[index], &query)
                .expect("1-hop")
        })
    });
    let names: Vec<String> = frontiers[0]
        .iter()
        .map(|id| graph.name(id.0 as u32).to_owned())
        .collect();
    criterion.bench_function(
        &format!("{name}/resolve 100 names (normalized)"),
        |bencher| {
            bencher.iter(|| {
                names
                    .iter()
                    .map(|name| graph.lookup_normalized(name).len())
                    .sum::<usize>()
            })
        },
    );
}
