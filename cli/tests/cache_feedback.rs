//! `kgmesh cache feedback FILE` end to end: verdicts from a JSON-lines file applied to a
//! warmed plan cache file and to the JetStream KV bucket on a real nats-server.

mod serve_support;

use std::path::Path;

use kgmesh_testkit::nats::NatsServer;
use serve_support::*;

const QA_PAIRS: &str = "who directed [Heat]\tMichael Mann\n";

const FEEDBACK: &str = r#"{"question": "who directed Collateral", "correct": false}
{"question": "who directed The Insider", "correct": false}

{"question": "what language is Heat in", "answers": ["English"]}
{"question": "who directed Heat", "correct": true}
this is not JSON
{"question": "what language is Heat in", "answers": ["Klingon"]}
{"question": "what language is Heat in", "correct": true, "answers": ["English"]}
"#;

fn cache(dir: &Path, store: &[&str], args: &[&str]) -> (i32, String, String) {
    let mut command = kgmesh();
    command.current_dir(dir).arg("cache").args(args).args(store);
    run(command)
}

/// The count a summary line `name   N` gives.
fn count(stdout: &str, name: &str) -> usize {
    stdout
        .lines()
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(name)).then(|| words.next()?.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no `{name}` line in {stdout}"))
}

fn warm_and_feed(dir: &Path, store: &[&str]) -> String {
    std::fs::write(dir.join("qa.txt"), QA_PAIRS).unwrap();
    std::fs::write(dir.join("feedback.jsonl"), FEEDBACK).unwrap();
    let kg = sample_kg();
    let kg = kg.to_str().unwrap();
    let (code, stdout, stderr) = cache(
        dir,
        store,
        &["warm", "--kg", kg, "--import", "qa.txt", "--no-progress"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = cache(
        dir,
        store,
        &["feedback", "feedback.jsonl", "--kg", kg, "--verbose"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    for (name, expected) in [
        ("confirmed", 0),
        ("demoted", 1),
        ("dropped", 1),
        ("learned", 1),
        ("no_plan", 1),
        ("not_verified", 1),
        ("unreadable", 2),
    ] {
        assert_eq!(count(&stdout, name), expected, "{name}: {stdout}");
    }
    // Bad lines are named with their numbers; the verbose lines say what happened.
    assert!(stdout.contains("feedback.jsonl:6:"), "{stdout}");
    assert!(stdout.contains("feedback.jsonl:8:"), "{stdout}");
    assert!(stdout.contains("feedback.jsonl:2: dropped"), "{stdout}");
    assert!(
        stdout.contains("cache now holds 1 entries"),
        "only the learned plan is left: {stdout}"
    );
    stdout
}

#[test]
fn feedback_demotes_drops_and_learns_in_a_cache_file() {
    let dir = tempfile::tempdir().unwrap();
    warm_and_feed(dir.path(), &["--cache-file", "plans.jsonl"]);
    let log = std::fs::read_to_string(dir.path().join("plans.jsonl")).unwrap();
    let entries: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // warm, demote, drop, learn.
    let ops: Vec<&str> = entries.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["put", "put", "del", "put"], "{log}");
    assert_eq!(entries[1]["entry"]["failures"], 1);
    let learned = &entries[3]["entry"];
    assert_eq!(learned["template"], "what language is <e> in", "{log}");
    assert_eq!(
        learned["plan"]["metapaths"][0]["steps"][0]["relation"], "in_language",
        "{log}"
    );

    // A file with nothing readable fails before touching anything.
    std::fs::write(
        dir.path().join("bad.jsonl"),
        "nope\n{\"question\": \"q\"}\n",
    )
    .unwrap();
    let kg = sample_kg();
    let (code, stdout, stderr) = cache(
        dir.path(),
        &["--cache-file", "plans.jsonl"],
        &["feedback", "bad.jsonl", "--kg", kg.to_str().unwrap()],
    );
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("no readable feedback"), "{stderr}");
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("plans.jsonl")).unwrap(),
        log
    );
}

#[test]
fn feedback_with_nats_changes_the_shared_kv_bucket() {
    let server = NatsServer::start();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    warm_and_feed(dir.path(), &["--nats", &url]);
    let (code, stdout, stderr) = cache(dir.path(), &["--nats", &url], &["stats"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with("1 entries in JetStream KV bucket"),
        "{stdout}"
    );
}
