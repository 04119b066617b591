//! `kgmesh eval` on the embedded pipeline: the bundled sample KG and its questions,
//! every role in the evaluating process, no LLM.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use serde_json::Value;

const TEST_TIMEOUT: Duration = Duration::from_secs(120);

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn sample(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/movies")
        .join(file)
}

#[test]
fn the_llm_free_pipeline_answers_the_sample_questions_in_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("run");
    let child = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(["eval", "--dataset", "metaqa", "--kg"])
        .arg(sample("kg.tsv"))
        .arg("--questions")
        .arg(sample("questions.tsv"))
        .arg("--out")
        .arg(&out)
        .args(["--concurrency", "2", "--no-progress"])
        .current_dir(dir.path())
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kgmesh");
    let mut running = Running(child);
    let deadline = Instant::now() + TEST_TIMEOUT;
    let status = loop {
        if let Some(status) = running.0.try_wait().expect("poll kgmesh") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "kgmesh eval did not finish in {TEST_TIMEOUT:?}"
        );
        thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = running.0.stderr.take() {
        pipe.read_to_string(&mut stderr).expect("read stderr");
    }
    assert!(status.success(), "kgmesh eval failed: {stderr}");

    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("report.json")).expect("report.json written"),
    )
    .expect("JSON report");
    let system = &report["system"];
    assert_eq!(system["mode"], "embedded");
    assert!(
        system["llm"]
            .as_str()
            .unwrap_or_default()
            .starts_with("none"),
        "{system}"
    );
    let roles: Vec<&str> = system["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for role in ["entity-linker", "summarizer"] {
        assert!(roles.contains(&role), "{role} not started: {roles:?}");
    }
    assert!(system["k_values"]["top_m"].as_u64().is_some(), "{system}");
    assert!(system["config"]["graph"]["path"]
        .as_str()
        .is_some_and(|p| p.ends_with("kg.tsv")));

    let aggregate = &report["aggregate"];
    assert_eq!(aggregate["questions"], 8);
    assert_eq!(aggregate["errors"], 0, "{aggregate}");
    assert_eq!(aggregate["llm_calls_total"], 0, "no model is configured");
    // Every answered question went over the bus and cost the system measurable time.
    let results = report["results"].as_array().expect("results");
    assert!(results
        .iter()
        .all(|r| r["cost"]["bus_messages"].as_u64().unwrap_or(0) > 0));
    assert!(results
        .iter()
        .all(|r| r["server_ms"].as_f64().unwrap_or(0.0) > 0.0));
    // "who directed Heat" is a one-hop lookup the LLM-free strategy must get right.
    let heat = results
        .iter()
        .find(|r| r["question"] == "who directed Heat")
        .expect("the Heat question");
    assert_eq!(heat["score"]["hits_at_1"], true, "{heat}");
    assert_eq!(heat["score"]["context_hit"], true, "{heat}");

    // The summary's settings read as words, not raw JSON.
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md written");
    let budget = summary
        .lines()
        .find(|l| l.starts_with("| budget |"))
        .expect("a budget row");
    assert!(
        budget.contains("rounds 2") && !budget.contains('{'),
        "{budget}"
    );
    let options = summary
        .lines()
        .find(|l| l.starts_with("| ask options |"))
        .expect("an ask options row");
    assert!(!options.contains("null"), "{options}");
}

/// Runs `kgmesh eval` to the end; its report.
fn eval_report(dir: &Path, out: &str, extra: &[&str]) -> Value {
    let child = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(["eval", "--dataset", "metaqa", "--questions"])
        .arg(sample("questions.tsv"))
        .args(["--out", out, "--no-progress"])
        .args(extra)
        .current_dir(dir)
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kgmesh eval");
    let mut running = Running(child);
    let deadline = Instant::now() + TEST_TIMEOUT;
    let status = loop {
        if let Some(status) = running.0.try_wait().expect("poll kgmesh") {
            break status;
        }
        assert!(Instant::now() < deadline, "kgmesh eval did not finish");
        thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    if let Some(mut pipe) = running.0.stderr.take() {
        pipe.read_to_string(&mut stderr).expect("read stderr");
    }
    assert!(status.success(), "kgmesh eval failed: {stderr}");
    serde_json::from_str(
        &std::fs::read_to_string(dir.join(out).join("report.json")).expect("report.json"),
    )
    .expect("JSON report")
}

#[test]
fn a_real_kgmesh_serve_over_http_gives_the_embedded_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = sample("kg.tsv");
    let server = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(["serve", "--embedded", "--listen", "127.0.0.1:0", "--kg"])
        .arg(&kg)
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start kgmesh serve");
    let mut server = Running(server);
    let stdout = server.0.stdout.take().expect("serve stdout");
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(url) = line.trim().strip_prefix("listening on ") {
                let _ = url_tx.send(url.to_owned());
            }
        }
    });
    let url = url_rx
        .recv_timeout(TEST_TIMEOUT)
        .expect("kgmesh serve printed `listening on http://ADDR`");

    let over_http = eval_report(dir.path(), "http", &["--server", &url]);
    let embedded = eval_report(dir.path(), "embedded", &["--kg", kg.to_str().unwrap()]);
    assert_eq!(over_http["system"]["mode"], "http");
    assert_eq!(
        over_http["aggregate"]["errors"], 0,
        "{}",
        over_http["aggregate"]
    );
    let answers = |report: &Value| -> Vec<(String, Value)> {
        report["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap_or("").to_owned(),
                    r["predictions"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(answers(&over_http), answers(&embedded));
    assert_eq!(
        over_http["aggregate"]["hits_at_1"],
        embedded["aggregate"]["hits_at_1"]
    );
}

#[test]
fn the_cache_table_has_one_row_per_run_and_counts_replays_apart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = sample("kg.tsv");
    let kg = kg.to_str().expect("utf-8");
    let report = eval_report(dir.path(), "run", &["--kg", kg, "--no-cache"]);
    let groups = report["breakdown"]["by_hops"]
        .as_object()
        .map_or(0, |groups| groups.len());
    let output = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(["eval", "table", "--cache"])
        .arg(dir.path().join("run").join("report.json"))
        .env_remove("KGMESH_CONFIG")
        .output()
        .expect("kgmesh eval table");
    assert!(output.status.success());
    let table = String::from_utf8_lossy(&output.stdout);
    assert!(table.contains("| plans replayed |"), "{table}");
    let rows = table
        .lines()
        .filter(|l| !l.starts_with("| run") && l.starts_with("| "))
        .count();
    let expected = if groups > 1 { 1 + groups } else { 1 };
    assert_eq!(rows, expected, "{table}");
}
