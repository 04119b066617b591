//! Grounded Cypher through the real binary on the Northwind property graph:
//! `kgmesh cypher --ask` writes and runs a query from a question (a hostile name stays a
//! parameter), `--learn` reads question/answer pairs, and `kgmesh eval --dataset
//! text2cypher` scores execution against the gold queries with no validator refusal.

#[path = "serve_support/mod.rs"]
mod support;

use std::path::PathBuf;

use support::*;

fn northwind() -> (PathBuf, PathBuf) {
    let csv = kgmesh_testkit::data::northwind_dir().join("csv");
    (csv, repo_root().join("stores/examples/northwind.toml"))
}

fn ask(extra: &[&str]) -> (i32, String, String) {
    let (csv, mapping) = northwind();
    let mut args = vec![
        "cypher".to_owned(),
        "--kg".into(),
        csv.display().to_string(),
        "--mapping".into(),
        mapping.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    kgmesh_run(&args)
}

fn rows(stdout: &str) -> Vec<String> {
    let mut lines: Vec<String> = stdout
        .lines()
        .skip(1)
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty() && !l.starts_with('('))
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_question_becomes_a_query_whose_values_are_parameters() {
    let (code, stdout, stderr) = ask(&["--ask", "Which products does Exotic Liquids supply?"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("query:  MATCH"), "{stderr}");
    assert!(stderr.contains("\"Exotic Liquids\""), "{stderr}");
    assert_eq!(
        rows(&stdout),
        ["Aniseed Syrup", "Chai", "Chang"],
        "{stderr}"
    );

    // An injection inside the name never becomes query text.
    let (code, stdout, stderr) = ask(&[
        "--ask",
        "Which products does 'Exotic Liquids') DETACH DELETE n //' supply?",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let query = stderr
        .lines()
        .find(|l| l.starts_with("query:"))
        .unwrap_or_default();
    assert!(
        !query.contains("DETACH") && !query.contains("Exotic"),
        "{query}"
    );
    assert_eq!(
        rows(&stdout),
        ["Aniseed Syrup", "Chai", "Chang"],
        "{stderr}"
    );

    let (code, _, stderr) = ask(&["--ask", "what is the weather today"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("no query fits"), "{stderr}");
}

#[test]
fn pairs_with_answers_are_learned_from() {
    let pairs = repo_root().join("examples/northwind/questions.jsonl");
    let pairs = pairs.display().to_string();
    let (code, stdout, stderr) = ask(&["--ask", "which category is Konbu in", "--learn", &pairs]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("learned from "), "{stderr}");
    assert!(
        stderr.contains(" learned)"),
        "the choice reports what learning added: {stderr}"
    );
    assert_eq!(rows(&stdout), ["Seafood"], "{stderr}");
}

#[test]
fn learned_plans_are_kept_in_a_file_and_read_back() {
    let pairs = repo_root().join("examples/northwind/questions.jsonl");
    let pairs = pairs.display().to_string();
    let dir = tempfile::tempdir().unwrap();
    let plans = dir.path().join("plans.json");
    let plans_arg = plans.display().to_string();
    // Learning alone, kept in the file.
    let (code, stdout, stderr) = ask(&["--learn", &pairs, "--plans", &plans_arg]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.trim().is_empty(), "no question, no rows: {stdout}");
    assert!(stderr.contains("wrote "), "{stderr}");
    let written = std::fs::read(&plans).expect("the plans file is written");
    // A later run starts warm from it, without the pairs.
    let (code, stdout, stderr) =
        ask(&["--ask", "which category is Konbu in", "--plans", &plans_arg]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("read ") && stderr.contains(" learned questions"),
        "{stderr}"
    );
    assert!(stderr.contains(" learned)"), "{stderr}");
    assert_eq!(rows(&stdout), ["Seafood"], "{stderr}");
    assert_eq!(
        std::fs::read(&plans).unwrap(),
        written,
        "reading leaves the file as it was"
    );
    // Plans learned on Northwind are refused on another graph (the bundled sample).
    let (code, _, stderr) = kgmesh_run(&[
        "cypher".to_owned(),
        "--plans".into(),
        plans_arg.clone(),
        "--ask".into(),
        "Who directed Inception?".into(),
    ]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("other labels or property keys"), "{stderr}");
    assert_eq!(std::fs::read(&plans).unwrap(), written);
    // A broken file is refused with its path, and left as it is.
    std::fs::write(&plans, b"{\"format\": 1, \"words\": [").unwrap();
    let (code, _, stderr) = ask(&["--ask", "which category is Konbu in", "--plans", &plans_arg]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("plans.json") && stderr.contains("not a file of learned plans"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&plans).unwrap(),
        b"{\"format\": 1, \"words\": ["
    );
    // Learning without a question or a file to keep it in is refused.
    let (code, _, stderr) = ask(&["--learn", &pairs]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("--plans FILE"), "{stderr}");
}

#[test]
fn text2cypher_evaluation_scores_execution_with_every_query_valid() {
    let (csv, mapping) = northwind();
    let questions = kgmesh_testkit::data::northwind_dir().join("text2cypher.jsonl");
    let out = tempfile::tempdir().expect("temporary folder");
    let (code, stdout, stderr) = kgmesh_run(&[
        "eval",
        "--dataset",
        "text2cypher",
        "--kg",
        &csv.display().to_string(),
        "--mapping",
        &mapping.display().to_string(),
        "--questions",
        &questions.display().to_string(),
        "--limit",
        "120",
        "--out",
        &out.path().display().to_string(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("model none"),
        "configuration printed: {stdout}"
    );
    assert!(
        stdout.contains("validator refusals among all candidates: 0"),
        "{stdout}"
    );
    let all = stdout
        .lines()
        .find(|l| l.starts_with("| **all**"))
        .unwrap_or_else(|| panic!("no total row: {stdout}"));
    let cold: f64 = all
        .split('|')
        .nth(3)
        .and_then(|cell| cell.trim().trim_matches('*').parse().ok())
        .unwrap_or_else(|| panic!("no cold score in {all:?}"));
    assert!(
        cold >= 40.0,
        "cold execution accuracy {cold} under 40: {stdout}"
    );
    let lines = std::fs::read_to_string(out.path().join("questions.jsonl")).expect("per question");
    assert!(
        lines.lines().count() >= 90,
        "most of the 120 pairs are scored"
    );
}

/// The chosen query and its score for each scored pair of an evaluation's output.
fn outcomes(dir: &std::path::Path) -> std::collections::BTreeMap<u64, (String, bool)> {
    std::fs::read_to_string(dir.join("questions.jsonl"))
        .expect("per question results")
        .lines()
        .map(|line| {
            let o: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            (
                o["index"].as_u64().expect("index"),
                (
                    o["cold_query"].as_str().unwrap_or_default().to_owned(),
                    o["cold_right"].as_bool().expect("cold_right"),
                ),
            )
        })
        .collect()
}

#[test]
fn over_bolt_the_same_queries_are_chosen_as_on_the_embedded_store() {
    let server = kgmesh_testkit::bolt::BoltServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let creds = dir.path().join("creds.toml");
    std::fs::write(
        &creds,
        format!(
            "[graph]\nbolt_user = \"{}\"\nbolt_password_env = \"KGMESH_TEST_BOLT_PASSWORD\"\n\
             bolt_database = \"{}\"\nquery_timeout_ms = 30000\n",
            server.user(),
            server.database()
        ),
    )
    .expect("config written");
    let (csv, mapping) = northwind();
    let (csv, mapping) = (csv.display().to_string(), mapping.display().to_string());
    let creds = creds.display().to_string();
    let mut load = kgmesh();
    load.env("KGMESH_TEST_BOLT_PASSWORD", server.password())
        .args([
            "load",
            "--kg",
            &csv,
            "--mapping",
            &mapping,
            "--into",
            &server.uri(),
            "--replace",
            "--config",
            &creds,
        ]);
    let (code, _, stderr) = run(load);
    assert_eq!(code, 0, "load into Bolt: {stderr}\n{}", server.log());

    let questions = kgmesh_testkit::data::northwind_dir()
        .join("text2cypher.jsonl")
        .display()
        .to_string();
    let eval = |graph: &[&str], out: &std::path::Path| {
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .args([
                "eval",
                "--dataset",
                "text2cypher",
                "--questions",
                &questions,
            ])
            .args([
                "--limit",
                "60",
                "--no-progress",
                "--config",
                &creds,
                "--out",
            ])
            .arg(out)
            .args(graph);
        let (code, _, stderr) = run(command);
        assert_eq!(code, 0, "{graph:?}: {stderr}\n{}", server.log());
        outcomes(out)
    };
    let embedded = eval(
        &["--kg", &csv, "--mapping", &mapping],
        &dir.path().join("embedded"),
    );
    let bolt = eval(&["--store", &server.uri()], &dir.path().join("bolt"));
    assert_eq!(
        embedded.keys().collect::<Vec<_>>(),
        bolt.keys().collect::<Vec<_>>(),
        "the same pairs have usable gold answers on both"
    );
    assert!(embedded.len() >= 45, "{} scored", embedded.len());
    for (index, (query, _)) in &embedded {
        assert_eq!(query, &bolt[index].0, "pair {index}");
    }
    // Engines may break ties in ORDER BY … LIMIT differently; nearly all agree.
    let agree = embedded
        .iter()
        .filter(|(index, (_, right))| bolt[*index].1 == *right)
        .count();
    assert!(
        agree * 100 >= embedded.len() * 95,
        "{agree} of {} agree",
        embedded.len()
    );

    // `cache warm` learns the same grounded plans from the database as from the files.
    let pairs = repo_root()
        .join("examples/northwind/questions.jsonl")
        .display()
        .to_string();
    let warm = |graph: &[&str], name: &str| {
        let cache = dir.path().join(name);
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .args(["cache", "warm", "--import", &pairs, "--no-progress"])
            .args(["--config", &creds, "--cache-file"])
            .arg(&cache)
            .args(graph);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{graph:?}: {stderr}\n{}", server.log());
        assert!(stdout.contains("verified     5"), "{graph:?}: {stdout}");
        let mut plans: Vec<(String, Vec<String>)> = std::fs::read_to_string(&cache)
            .expect("plans written")
            .lines()
            .map(|line| {
                let line: serde_json::Value = serde_json::from_str(line).expect("JSON");
                let queries = line["entry"]["plan"]["cypher"]
                    .as_array()
                    .expect("queries")
                    .iter()
                    .map(|q| q.as_str().expect("text").to_owned())
                    .collect();
                (line["key"].as_str().expect("key").to_owned(), queries)
            })
            .collect();
        plans.sort();
        plans
    };
    let from_files = warm(&["--kg", &csv, "--mapping", &mapping], "files.jsonl");
    let from_bolt = warm(&["--store", &server.uri()], "bolt.jsonl");
    assert_eq!(from_files.len(), 5);
    assert_eq!(from_files, from_bolt);
}

/// `cache warm --import` on a property graph stores grounded Cypher plans beside (not
/// among) the relation-path plans; `kgmesh ask` then answers from the query executor's
/// grounded query, learned from them, and the text2cypher evaluation scores the whole
/// pipeline's answers the same way.
#[test]
fn warmed_grounded_plans_teach_the_query_executor_of_ask() {
    let (csv, mapping) = northwind();
    let (csv, mapping) = (csv.display().to_string(), mapping.display().to_string());
    let pairs = repo_root().join("examples/northwind/questions.jsonl");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("plans.jsonl");
    let cache_arg = cache.display().to_string();
    let pairs_arg = pairs.display().to_string();
    let warm = || {
        kgmesh_run(&[
            "cache",
            "warm",
            "--kg",
            &csv,
            "--mapping",
            &mapping,
            "--import",
            &pairs_arg,
            "--cache-file",
            &cache_arg,
            "--no-progress",
        ])
    };
    let (code, stdout, stderr) = warm();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("verified     5"), "{stdout}");
    assert!(
        stdout.contains("cache now holds 5 grounded Cypher plans"),
        "{stdout}"
    );
    let (code, stdout, stderr) = kgmesh_run(&["cache", "stats", "--cache-file", &cache_arg]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("0 entries"), "not relation plans: {stdout}");
    assert!(stdout.contains("5 grounded Cypher plans"), "{stdout}");
    // Warming again changes nothing.
    let (code, stdout, stderr) = warm();
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("unchanged    5"), "{stdout}");

    let mut ask = kgmesh();
    ask.env("KGMESH__CACHE__PATH", &cache).args([
        "ask",
        "which category is Konbu in",
        "--kg",
        &csv,
        "--mapping",
        &mapping,
        "--verbose",
    ]);
    let (code, stdout, stderr) = run(ask);
    assert_eq!(code, 0, "{stderr}");
    let first = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("1. "))
        .unwrap_or_else(|| panic!("no answer: {stdout}"));
    assert!(first.contains("Seafood"), "{stdout}");
    assert!(
        stdout.contains("from the query written for the question"),
        "{stdout}"
    );
    assert!(
        stdout.contains("grounded Cypher:") && stdout.contains("with 5 verified plans"),
        "{stdout}"
    );

    let out = tempfile::tempdir().unwrap();
    let questions = kgmesh_testkit::data::northwind_dir().join("text2cypher.jsonl");
    let (code, stdout, stderr) = kgmesh_run(&[
        "eval",
        "--dataset",
        "text2cypher",
        "--kg",
        &csv,
        "--mapping",
        &mapping,
        "--questions",
        &questions.display().to_string(),
        "--limit",
        "40",
        "--pipeline",
        "--cache-file",
        &cache_arg,
        "--out",
        &out.path().display().to_string(),
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("Pipeline (embedded"))
        .unwrap_or_else(|| panic!("no pipeline line: {stdout}"));
    assert!(line.contains("warm: 5 entries at start"), "{line}");
    let share: f64 = line
        .split_once("right ones for **")
        .and_then(|(_, rest)| rest.split_once(" ("))
        .and_then(|(_, rest)| rest.split_once(" %)"))
        .and_then(|(number, _)| number.parse().ok())
        .unwrap_or_else(|| panic!("no share in {line}"));
    assert!(
        share >= 40.0,
        "the pipeline answers {share} % right: {line}"
    );
}

/// With the embedder (all-MiniLM-L6-v2, found by `embedder.kind = auto`), a category
/// value named in other words is grounded ("German" → `country = 'Germany'`); with
/// lexical matching only, it is not.
#[test]
fn a_category_named_in_other_words_is_grounded_with_the_embedder() {
    let (csv, mapping) = northwind();
    let minilm = repo_root().join("models-cache/all-MiniLM-L6-v2");
    let ask = |kind: &str| {
        let mut command = kgmesh();
        command
            .env("KGMESH_MINILM_DIR", &minilm)
            .env("KGMESH__EMBEDDER__KIND", kind)
            .args(["cypher", "--kg"])
            .arg(&csv)
            .arg("--mapping")
            .arg(&mapping)
            .args(["--ask", "Which suppliers are German?"]);
        run(command)
    };
    let (code, stdout, stderr) = ask("auto");
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("category values embedded with all-MiniLM-L6-v2"),
        "{stderr}"
    );
    assert!(stderr.contains("\"Germany\""), "{stderr}");
    assert_eq!(
        rows(&stdout),
        [
            "Heli Süßwaren GmbH & Co. KG",
            "Nord-Ost-Fisch Handelsgesellschaft mbH",
            "Plutzer Lebensmittelgroßmärkte AG"
        ],
        "{stderr}"
    );
    let (code, _, stderr) = ask("none");
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("Germany"), "{stderr}");
}
