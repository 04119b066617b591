//! Throughput of the LLM-free pipeline on this machine, three deployments in the same
//! run, the same MetaQA dev questions asked over HTTP at the same concurrency:
//!
//! 1. `kgmesh serve --nats` with one `kgmesh agent` process per role;
//! 2. the same with two replicas of every role;
//! 3. one `kgmesh serve --embedded` (every role in one process).
//!
//! Run: `cargo build --release --bin kgmesh && cargo bench -p kgmesh-benches --bench
//! cluster`. `KGMESH_BIN` (default `target/release/kgmesh`), `KGMESH_DATA_DIR`,
//! `KGMESH_CLUSTER_QUESTIONS` (default 600), `KGMESH_CLUSTER_CONCURRENCY` (default 8).
//! Prints questions per second and latency percentiles per deployment; every question
//! is asked with `no_cache`, after a warm-up pass that is not counted.

use std::{
    net::SocketAddr,
    path::PathBuf,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use kgmesh_benches::serve::{exchange, kgmesh, spawn, spawn_server, Proc};
use kgmesh_testkit::nats::NatsServer;

const ROLES: [&str; 8] = [
    "kg-linker",
    "entity-linker",
    "path-follower",
    "query-executor",
    "agentic-traverser",
    "scoring-retriever",
    "judge",
    "summarizer",
];

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Waits until the server lists `replicas` replicas of every role and is ready.
fn wait_ready(address: SocketAddr, replicas: u64) {
    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        let (status, _) = exchange(address, "GET", "/readyz", "");
        let (_, body) = exchange(address, "GET", "/v1/agents", "");
        let agents: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let all = ROLES.iter().all(|role| {
            agents["roles"].as_array().is_some_and(|listed| {
                listed
                    .iter()
                    .any(|r| r["role"] == *role && r["replicas"].as_u64() == Some(replicas))
            })
        });
        if status == 200 && all {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the cluster never became ready: {body}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Asks every question `concurrency` at a time; (questions per second, sorted
/// latencies in ms).
fn measure(address: SocketAddr, questions: &[String], concurrency: usize) -> (f64, Vec<f64>) {
    let next = AtomicUsize::new(0);
    let latencies = Mutex::new(Vec::with_capacity(questions.len()));
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..concurrency {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(question) = questions.get(i) else {
                    return;
                };
                let body = serde_json::json!({"question": question, "options": {"no_cache": true}})
                    .to_string();
                let asked = Instant::now();
                let (status, text) = exchange(address, "POST", "/v1/ask", &body);
                assert_eq!(status, 200, "{question}: {text:.200}");
                latencies
                    .lock()
                    .unwrap()
                    .push(asked.elapsed().as_secs_f64() * 1e3);
            });
        }
    });
    let qps = questions.len() as f64 / started.elapsed().as_secs_f64();
    let mut latencies = latencies.into_inner().unwrap();
    latencies.sort_by(f64::total_cmp);
    (qps, latencies)
}

fn report(label: &str, address: SocketAddr, questions: &[String], concurrency: usize) -> f64 {
    // Warm-up: caches of the stores, MiniLM's first batches, the hedges' latencies.
    measure(address, &questions[..questions.len().min(100)], concurrency);
    let (qps, ms) = measure(address, questions, concurrency);
    let at = |p: f64| ms[((ms.len() - 1) as f64 * p).round() as usize];
    println!(
        "| {label} | {qps:.1} | {:.0} | {:.0} | {:.0} |",
        at(0.5),
        at(0.9),
        at(0.99)
    );
    qps
}

fn main() {
    let binary = std::env::var_os("KGMESH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release/kgmesh"));
    let data = kgmesh_testkit::data::data_dir();
    let kb = match kgmesh_testkit::data::long_run_data("metaqa/kb.tsv") {
        Ok(kb) => kb,
        Err(why) => {
            eprintln!("cluster bench: {why}");
            std::process::exit(2);
        }
    };
    let count: usize = std::env::var("KGMESH_CLUSTER_QUESTIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(600);
    let concurrency: usize = std::env::var("KGMESH_CLUSTER_CONCURRENCY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let mut questions = Vec::new();
    for hops in ["1-hop", "2-hop", "3-hop"] {
        let path = data.join(format!("metaqa/{hops}/dev.txt"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (set KGMESH_DATA_DIR)", path.display()));
        questions.extend(
            text.lines()
                .take(count.div_ceil(3))
                .filter_map(|l| l.split('\t').next())
                .map(|q| q.replace(['[', ']'], "")),
        );
    }
    questions.truncate(count);
    println!(
        "LLM-free pipeline, MetaQA dev ({} questions, 1/2/3-hop), concurrency {concurrency}, no cache, default embedder, {} CPUs\n",
        questions.len(),
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("| deployment | questions/s | p50 ms | p90 ms | p99 ms |");
    println!("|---|---:|---:|---:|---:|");

    let nats = NatsServer::start();
    let agent = |role: &str| {
        let mut command = kgmesh(&binary);
        command
            .args(["agent", "--role", role, "--nats", &nats.url(), "--kg"])
            .arg(&kb);
        spawn(command)
    };
    let mut agents: Vec<Proc> = ROLES.iter().map(|role| agent(role)).collect();
    let (server, address) = {
        let mut command = kgmesh(&binary);
        command.args(["serve", "--nats", &nats.url(), "--listen", "127.0.0.1:0"]);
        spawn_server(command)
    };
    wait_ready(address, 1);
    let one = report(
        "NATS, one process per role",
        address,
        &questions,
        concurrency,
    );
    agents.extend(ROLES.iter().map(|role| agent(role)));
    wait_ready(address, 2);
    let two = report(
        "NATS, two replicas per role",
        address,
        &questions,
        concurrency,
    );
    drop(server);
    drop(agents);
    drop(nats);

    let (embedded, address) = {
        let mut command = kgmesh(&binary);
        command
            .args(["serve", "--embedded", "--listen", "127.0.0.1:0", "--kg"])
            .arg(&kb);
        spawn_server(command)
    };
    wait_ready(address, 1);
    let local = report("serve --embedded", address, &questions, concurrency);
    drop(embedded);
    println!(
        "\nratios: two replicas / one {:.2}, embedded / one process per role {:.2}",
        two / one,
        local / one
    );
}
