//! `POST /v1/ask` latency of `kgmesh serve --embedded` on the bundled sample KG, two
//! servers side by side in the same run, questions sent to them in turn (so drift of
//! the machine hits both alike):
//!
//! - `KGMESH_BASELINE_BIN` set: that binary (say, a build from before a change) against
//!   `KGMESH_BIN` (default `target/release/kgmesh`), both with their defaults;
//! - unset: `KGMESH_BIN` with the web console off (`http.console = false`) against the
//!   same binary with it on.
//!
//! Run: `cargo build --release --bin kgmesh && cargo bench -p kgmesh-benches --bench
//! http` (`KGMESH_HTTP_ROUNDS`, default 200, sets how often each question is asked).
//! Prints p50 / p90 / p99 / mean latency, reply bytes, and the ratio of the two. Each
//! question is asked with `no_cache`, so every ask does the whole work.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use kgmesh_benches::serve::{exchange, kgmesh, spawn_server, Proc};

const QUESTIONS: &[&str] = &[
    "who directed Heat",
    "what films did Michael Mann direct",
    "who starred in the films directed by Michael Mann",
    "what genre is Collateral",
    "which films share actors with Heat",
];

struct Server {
    label: String,
    _process: Proc,
    address: SocketAddr,
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `console`: `http.console` set to it, or left to the binary (a build from before the
/// setting existed refuses to start with it).
fn start(label: &str, binary: &Path, console: Option<bool>) -> Server {
    let mut command = kgmesh(binary);
    command
        .args([
            "serve",
            "--embedded",
            "--listen",
            "127.0.0.1:0",
            "--workers",
            "1",
        ])
        .arg("--kg")
        .arg(workspace().join("examples/movies/kg.tsv"));
    if let Some(console) = console {
        command.env("KGMESH__HTTP__CONSOLE", console.to_string());
    }
    let (process, address) = spawn_server(command);
    let deadline = Instant::now() + Duration::from_secs(60);
    while exchange(address, "GET", "/readyz", "").0 != 200 {
        assert!(Instant::now() < deadline, "{label} never became ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    Server {
        label: label.to_owned(),
        _process: process,
        address,
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

struct Summary {
    p50: f64,
    p90: f64,
    p99: f64,
    mean: f64,
    bytes: f64,
}

fn summarize(mut ms: Vec<f64>, bytes: &[usize]) -> Summary {
    ms.sort_by(f64::total_cmp);
    Summary {
        p50: percentile(&ms, 0.5),
        p90: percentile(&ms, 0.9),
        p99: percentile(&ms, 0.99),
        mean: ms.iter().sum::<f64>() / ms.len() as f64,
        bytes: bytes.iter().sum::<usize>() as f64 / bytes.len() as f64,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else is read from the command line.
    let binary = std::env::var_os("KGMESH_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/release/kgmesh"));
    let rounds: usize = std::env::var("KGMESH_HTTP_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let servers = match std::env::var_os("KGMESH_BASELINE_BIN") {
        Some(baseline) => [
            start("baseline", Path::new(&baseline), None),
            start("this build", &binary, None),
        ],
        None => [
            start("console off", &binary, Some(false)),
            start("console on", &binary, Some(true)),
        ],
    };
    println!(
        "POST /v1/ask, sample KG, embedded, no model, no_cache, 1 HTTP worker, {} questions x {rounds} rounds, one connection per request",
        QUESTIONS.len()
    );
    let mut latencies: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    let mut bytes: Vec<Vec<usize>> = vec![Vec::new(); servers.len()];
    // A warm-up round, not counted.
    for round in 0..=rounds {
        for question in QUESTIONS {
            let body = format!(r#"{{"question": "{question}", "options": {{"no_cache": true}}}}"#);
            // Alternate which server goes first.
            let order: Vec<usize> = if round % 2 == 0 {
                vec![0, 1]
            } else {
                vec![1, 0]
            };
            for i in order {
                let started = Instant::now();
                let (status, reply) = exchange(servers[i].address, "POST", "/v1/ask", &body);
                let size = reply.len();
                let elapsed = started.elapsed().as_secs_f64() * 1e3;
                assert_eq!(status, 200, "{}: {question}", servers[i].label);
                if round > 0 {
                    latencies[i].push(elapsed);
                    bytes[i].push(size);
                }
            }
        }
    }
    let summaries: Vec<Summary> = latencies
        .into_iter()
        .zip(&bytes)
        .map(|(ms, b)| summarize(ms, b))
        .collect();
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "server", "p50 ms", "p90 ms", "p99 ms", "mean ms", "reply bytes"
    );
    for (server, s) in servers.iter().zip(&summaries) {
        println!(
            "{:<12} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>12.0}",
            server.label, s.p50, s.p90, s.p99, s.mean, s.bytes
        );
    }
    let (a, b) = (&summaries[0], &summaries[1]);
    println!(
        "ratio {} / {}: p50 {:.3}, p90 {:.3}, p99 {:.3}, mean {:.3}, reply bytes {:.3}",
        servers[1].label,
        servers[0].label,
        b.p50 / a.p50,
        b.p90 / a.p90,
        b.p99 / a.p99,
        b.mean / a.mean,
        b.bytes / a.bytes
    );
    // What the console's page costs to fetch (a baseline without one answers 404).
    let console = &servers[1];
    let mut page_ms = Vec::new();
    let mut page_bytes = 0;
    for _ in 0..50 {
        let started = Instant::now();
        let (status, page) = exchange(console.address, "GET", "/", "");
        let size = page.len();
        page_ms.push(started.elapsed().as_secs_f64() * 1e3);
        assert_eq!(status, 200, "GET / of {}", console.label);
        page_bytes = size;
    }
    let page = summarize(page_ms, &[page_bytes]);
    println!(
        "GET / ({}): p50 {:.2} ms, p99 {:.2} ms, {} bytes",
        console.label, page.p50, page.p99, page_bytes
    );
}
