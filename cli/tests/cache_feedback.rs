//! `kgmesh cache feedback FILE` end to end: verdicts from a JSON-lines file applied to a
//! warmed plan cache file and to the JetStream KV bucket on a real nats-server; `kgmesh
//! cache history` and `kgmesh cache revert` on the audit kept beside a cache file.

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
    // The operator is an admin: "wrong" removes the warmed plan at once, and the
    // second verdict on its template finds none.
    for (name, expected) in [
        ("confirmed", 0),
        ("demoted", 0),
        ("dropped", 1),
        ("learned", 1),
        ("no_plan", 2),
        ("not_verified", 1),
        ("pending", 0),
        ("limited", 0),
        ("unreadable", 2),
    ] {
        assert_eq!(count(&stdout, name), expected, "{name}: {stdout}");
    }
    // Bad lines are named with their numbers; the verbose lines say what happened.
    assert!(stdout.contains("feedback.jsonl:6:"), "{stdout}");
    assert!(stdout.contains("feedback.jsonl:8:"), "{stdout}");
    assert!(stdout.contains("feedback.jsonl:1: dropped"), "{stdout}");
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
    // warm, drop, learn.
    let ops: Vec<&str> = entries.iter().map(|e| e["op"].as_str().unwrap()).collect();
    assert_eq!(ops, ["put", "del", "put"], "{log}");
    let learned = &entries[2]["entry"];
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

fn history_json(dir: &Path, extra: &[&str]) -> Vec<serde_json::Value> {
    let (code, stdout, stderr) = cache(
        dir,
        &["--cache-file", "plans.jsonl"],
        &[&["history", "--json"][..], extra].concat(),
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn relation(entry: &serde_json::Value) -> &str {
    entry["plan"]["metapaths"][0]["steps"][0]["relation"]
        .as_str()
        .unwrap_or_default()
}

/// `kgmesh ask` on the sample graph with the cache file: whether the plan was replayed,
/// and the first answer.
fn ask_cached(dir: &Path, question: &str) -> (bool, String) {
    let mut command = kgmesh();
    command
        .current_dir(dir)
        .env("KGMESH__CACHE__PATH", dir.join("plans.jsonl"))
        .args(["ask", question, "--json", "--kg"])
        .arg(sample_kg());
    let reply = run_json(command);
    (
        reply["cache_hit"].as_bool().unwrap_or(false),
        answer_texts(&reply).first().cloned().unwrap_or_default(),
    )
}

#[test]
fn history_lists_the_audit_and_revert_restores_the_plan_before() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = ["--cache-file", "plans.jsonl"];
    let kg = sample_kg();
    let kg = kg.to_str().unwrap();
    std::fs::write(dir.join("qa.txt"), QA_PAIRS).unwrap();
    let (code, stdout, stderr) = cache(
        dir,
        &store,
        &["warm", "--kg", kg, "--import", "qa.txt", "--no-progress"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        ask_cached(dir, "who directed Collateral"),
        (true, "Michael Mann".to_owned())
    );

    // An admin's correction replaces the director with an actor (applied, though it
    // reads far from the question: the reply says so).
    std::fs::write(
        dir.join("wrong.jsonl"),
        "{\"question\": \"who directed Heat\", \"answers\": [\"Al Pacino\"]}\n",
    )
    .unwrap();
    let (code, stdout, stderr) = cache(
        dir,
        &store,
        &[
            "feedback",
            "wrong.jsonl",
            "--kg",
            kg,
            "--verbose",
            "--as",
            "ops",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("wrong.jsonl:1: learned"), "{stdout}");
    assert!(stdout.contains("reads far from the question"), "{stdout}");
    let (hit, answer) = ask_cached(dir, "who directed Collateral");
    assert!(
        hit && answer != "Michael Mann",
        "the learned plan is replayed: {answer}"
    );

    // The audit, newest first: the correction (who, before, after), then the import.
    let audit = history_json(dir, &[]);
    assert_eq!(audit.len(), 2, "{audit:#?}");
    let (learned, warmed) = (&audit[0], &audit[1]);
    assert_eq!(warmed["action"], "warmed");
    assert_eq!(warmed["principal"]["name"], "local");
    assert_eq!(warmed["before"], serde_json::Value::Null);
    assert_eq!(relation(&warmed["after"]), "directed_by");
    assert_eq!(learned["action"], "learned");
    assert_eq!(learned["principal"]["name"], "ops");
    assert_eq!(relation(&learned["before"]), "directed_by");
    assert_eq!(relation(&learned["after"]), "starred_actors");
    assert_eq!(learned["key"], warmed["key"]);
    assert!(learned["id"].as_u64() > warmed["id"].as_u64());
    let key = learned["key"].as_str().unwrap().to_owned();

    // As text: one entry per change, with the template and the plans.
    let (code, stdout, stderr) = cache(dir, &store, &["history", "--limit", "1"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("learned") && stdout.contains("by ops (admin)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`who directed <e>`: directed_by => starred_actors"),
        "{stdout}"
    );
    assert!(!stdout.contains("warmed"), "--limit 1: {stdout}");

    // Revert the correction: the director's plan is back, and replayed again.
    let id = learned["id"].to_string();
    let (code, stdout, stderr) = cache(dir, &store, &["revert", &id, "--as", "alice"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains(&format!("reverted entry {id}")), "{stdout}");
    assert_eq!(
        ask_cached(dir, "who directed Collateral"),
        (true, "Michael Mann".to_owned())
    );
    let audit = history_json(dir, &["--key", &key]);
    assert_eq!(audit.len(), 3, "{audit:#?}");
    assert_eq!(audit[0]["action"], "reverted");
    assert_eq!(audit[0]["principal"]["name"], "alice");
    assert_eq!(relation(&audit[0]["before"]), "starred_actors");
    assert_eq!(relation(&audit[0]["after"]), "directed_by");
    assert_eq!(history_json(dir, &["--key", "p0000000000000000"]).len(), 0);

    // An id the audit does not hold is a clear error and changes nothing.
    let plans = std::fs::read_to_string(dir.join("plans.jsonl")).unwrap();
    let (code, stdout, stderr) = cache(dir, &store, &["revert", "999"]);
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("no audit entry 999"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.join("plans.jsonl")).unwrap(),
        plans
    );
}
