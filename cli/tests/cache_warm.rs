//! `kgmesh cache warm` end to end: imported QA pairs and sampled star schemas into a
//! plan cache file and into JetStream KV on a real nats-server, re-runs that write
//! nothing new, bad input, and an evaluation that starts from the warmed file.

use std::{
    io::Read,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

use kgmesh_testkit::nats::NatsServer;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(120);

struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Outcome {
    success: bool,
    stdout: String,
    stderr: String,
}

fn sample(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/movies")
        .join(file)
}

/// Runs kgmesh with `args`, killed if it outlives [`TIMEOUT`].
fn kgmesh(dir: &Path, args: &[&str]) -> Outcome {
    let child = Command::new(env!("CARGO_BIN_EXE_kgmesh"))
        .args(args)
        .current_dir(dir)
        .env_remove("KGMESH_CONFIG")
        .env_remove("OPENAI_BASE_URL")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kgmesh");
    let mut running = Running(child);
    let mut stdout_pipe = running.0.stdout.take().expect("stdout");
    let mut stderr_pipe = running.0.stderr.take().expect("stderr");
    let out_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout_pipe.read_to_string(&mut text);
        text
    });
    let err_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr_pipe.read_to_string(&mut text);
        text
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = running.0.try_wait().expect("poll kgmesh") {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "kgmesh {args:?} did not finish in {TIMEOUT:?}"
        );
        thread::sleep(Duration::from_millis(20));
    };
    Outcome {
        success: status.success(),
        stdout: out_reader.join().expect("stdout reader"),
        stderr: err_reader.join().expect("stderr reader"),
    }
}

/// The number printed after `label` on its own line of the summary.
fn count(stdout: &str, label: &str) -> usize {
    stdout
        .lines()
        .find_map(|line| {
            line.strip_prefix(label)
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("no `{label}` line in:\n{stdout}"))
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `kgmesh cache warm` with `first` (a `--config`, say), importing fold 0/2 of
/// `questions` over `kg` into `cache`.
fn warm_first_half(
    dir: &Path,
    first: &[&str],
    kg: &Path,
    questions: &Path,
    cache: &Path,
) -> Outcome {
    let mut args = vec!["cache", "warm"];
    args.extend_from_slice(first);
    args.extend([
        "--kg",
        path_str(kg),
        "--import",
        path_str(questions),
        "--fold",
        "0/2",
        "--cache-file",
        path_str(cache),
        "--no-progress",
    ]);
    kgmesh(dir, &args)
}

#[test]
fn imported_pairs_and_stars_fill_a_cache_file_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("plans.jsonl");
    let kg = sample("kg.tsv");
    let questions = sample("questions.tsv");
    let pairs = std::fs::read_to_string(&questions)
        .expect("sample questions")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    let import = [
        "cache",
        "warm",
        "--kg",
        path_str(&kg),
        "--import",
        path_str(&questions),
        "--cache-file",
        path_str(&cache),
        "--no-progress",
    ];

    let first = kgmesh(dir.path(), &import);
    assert!(first.success, "{}{}", first.stdout, first.stderr);
    // Every sample answer is in the sample graph within three hops of its question's
    // entity, so every pair verifies.
    assert_eq!(count(&first.stdout, "checked"), pairs, "{}", first.stdout);
    assert_eq!(count(&first.stdout, "verified"), pairs, "{}", first.stdout);
    let entries = count(&first.stdout, "entries");
    assert!(entries > 0 && entries <= pairs, "{}", first.stdout);
    assert_eq!(count(&first.stdout, "written"), entries);
    let lines = |path: &Path| {
        std::fs::read_to_string(path)
            .expect("cache file")
            .lines()
            .count()
    };
    assert_eq!(lines(&cache), entries);

    // A re-run finds every plan already cached and appends nothing.
    let again = kgmesh(dir.path(), &import);
    assert!(again.success, "{}{}", again.stdout, again.stderr);
    assert_eq!(count(&again.stdout, "written"), 0, "{}", again.stdout);
    assert_eq!(count(&again.stdout, "unchanged"), entries);
    assert_eq!(lines(&cache), entries);

    // Star schemas add template questions made from relation names.
    let stars = kgmesh(
        dir.path(),
        &[
            "cache",
            "warm",
            "--kg",
            path_str(&kg),
            "--stars",
            "40",
            "--seed",
            "7",
            "--cache-file",
            path_str(&cache),
            "--no-progress",
        ],
    );
    assert!(stars.success, "{}{}", stars.stdout, stars.stderr);
    assert!(
        stars.stdout.contains("from relation names"),
        "{}",
        stars.stdout
    );
    let added = count(&stars.stdout, "written");
    assert!(added > 0, "{}", stars.stdout);
    let total = entries + added;
    let stats = kgmesh(
        dir.path(),
        &["cache", "stats", "--cache-file", path_str(&cache)],
    );
    assert!(stats.success, "{}", stats.stderr);
    assert!(
        stats.stdout.starts_with(&format!("{total} entries")),
        "{}",
        stats.stdout
    );
    let text = std::fs::read_to_string(&cache).expect("cache file");
    assert!(
        text.contains("what is <e> directed by") || text.contains("what is directed by <e>"),
        "a directed_by star question: {text}"
    );

    // An evaluation started from the warmed file says so, and replays its plans.
    let out = dir.path().join("eval");
    let eval = kgmesh(
        dir.path(),
        &[
            "eval",
            "--dataset",
            "metaqa",
            "--kg",
            path_str(&kg),
            "--questions",
            path_str(&questions),
            "--cache-file",
            path_str(&cache),
            "--out",
            path_str(&out),
            "--no-progress",
        ],
    );
    assert!(eval.success, "{}", eval.stderr);
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("report.json")).expect("report.json"),
    )
    .expect("JSON report");
    let described = report["system"]["cache"].as_str().unwrap_or_default();
    assert!(
        described.starts_with(&format!("warm: {total} entries")),
        "{described}"
    );
    assert_eq!(
        report["aggregate"]["cache_hit_rate"].as_f64(),
        Some(1.0),
        "every question was warmed"
    );
    // The run worked on a copy: the warmed file is as it was.
    assert_eq!(lines(&cache), total);

    // The cache-comparison table shows the state at start and the hit rate.
    let report_path = out.join("report.json");
    let table = kgmesh(
        dir.path(),
        &["eval", "table", "--cache", path_str(&report_path)],
    );
    assert!(table.success, "{}", table.stderr);
    let row = table
        .stdout
        .lines()
        .find(|line| line.contains(&format!("warm: {total} entries")))
        .unwrap_or_else(|| panic!("no warm row in:\n{}", table.stdout));
    assert!(row.contains("| 100.0 % |"), "{row}");
    assert!(row.contains(&format!("| {pairs} |")), "{row}");
}

#[test]
fn unreadable_input_is_reported_not_imported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("plans.jsonl");
    let kg = sample("kg.tsv");
    let garbage = dir.path().join("garbage.txt");
    std::fs::write(&garbage, "no tab here\nnor here\n").expect("write");
    let failed = kgmesh(
        dir.path(),
        &[
            "cache",
            "warm",
            "--kg",
            path_str(&kg),
            "--import",
            path_str(&garbage),
            "--cache-file",
            path_str(&cache),
        ],
    );
    assert!(!failed.success);
    assert!(
        failed.stderr.contains("no readable QA pairs"),
        "{}",
        failed.stderr
    );
    assert!(!cache.exists(), "nothing written");

    // Good and bad lines mixed: the good ones go in, the bad ones are counted, and an
    // answer the graph does not have is skipped with its reason.
    let mixed = dir.path().join("mixed.jsonl");
    std::fs::write(
        &mixed,
        "{\"question\": \"who directed Heat\", \"answers\": [\"Michael Mann\"]}\n\
         {\"question\": \"who directed Heat\"}\n\
         {\"question\": \"who directed Heat\", \"answers\": [\"Nobody In This Graph\"]}\n",
    )
    .expect("write");
    let run = kgmesh(
        dir.path(),
        &[
            "cache",
            "warm",
            "--kg",
            path_str(&kg),
            "--import",
            path_str(&mixed),
            "--cache-file",
            path_str(&cache),
            "--no-progress",
        ],
    );
    assert!(run.success, "{}{}", run.stdout, run.stderr);
    assert_eq!(count(&run.stdout, "verified"), 1, "{}", run.stdout);
    assert!(run.stdout.contains("unreadable line"), "{}", run.stdout);
    assert!(
        run.stdout.contains("no gold answer in the graph"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("mixed.jsonl:2"), "{}", run.stderr);
}

#[test]
fn warming_on_one_fold_and_evaluating_on_the_other_share_no_question() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("plans.jsonl");
    let kg = sample("kg.tsv");
    let questions = sample("questions.tsv");
    let lines: Vec<String> = std::fs::read_to_string(&questions)
        .expect("sample questions")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect();
    let warm = warm_first_half(dir.path(), &[], &kg, &questions, &cache);
    assert!(warm.success, "{}{}", warm.stdout, warm.stderr);
    let half = lines.len().div_ceil(2);
    assert_eq!(count(&warm.stdout, "checked"), half, "{}", warm.stdout);
    assert!(
        warm.stdout.contains(&format!(
            "read {half} QA pairs (metaqa) from {} (fold 0/2 of {})",
            questions.display(),
            lines.len()
        )),
        "{}",
        warm.stdout
    );
    let warmed: Vec<String> = std::fs::read_to_string(&cache)
        .expect("cache file")
        .lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line).expect("cache entry");
            let entry = entry.get("entry").unwrap_or(&entry);
            entry["question"].as_str().expect("question").to_owned()
        })
        .collect();
    assert!(!warmed.is_empty());

    let out = dir.path().join("eval");
    let eval = kgmesh(
        dir.path(),
        &[
            "eval",
            "--dataset",
            "metaqa",
            "--kg",
            path_str(&kg),
            "--questions",
            path_str(&questions),
            "--fold",
            "1/2",
            "--cache-file",
            path_str(&cache),
            "--out",
            path_str(&out),
            "--no-progress",
        ],
    );
    assert!(eval.success, "{}", eval.stderr);
    assert!(
        eval.stderr.contains(&format!(
            "{} of {} questions (fold 1/2 of each file)",
            lines.len() / 2,
            lines.len()
        )),
        "{}",
        eval.stderr
    );
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("report.json")).expect("report.json"),
    )
    .expect("JSON report");
    assert_eq!(
        report["dataset"]["fold"],
        serde_json::json!({"part": 1, "parts": 2, "complement": false})
    );
    assert_eq!(report["dataset"]["available"], lines.len());
    let asked: Vec<&str> = report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| result["question"].as_str().expect("question"))
        .collect();
    let expected: Vec<&str> = lines
        .iter()
        .skip(1)
        .step_by(2)
        .map(|line| line.split('\t').next().unwrap_or_default())
        .collect();
    assert_eq!(asked, expected);
    let warm_half: Vec<&str> = lines
        .iter()
        .step_by(2)
        .map(|line| line.split('\t').next().unwrap_or_default())
        .collect();
    for question in &warmed {
        assert!(
            warm_half.contains(&question.as_str()),
            "{question} not in fold 0/2"
        );
        assert!(
            !asked.contains(&question.as_str()),
            "{question} on both sides"
        );
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md");
    assert!(summary.contains("| fold | 1/2 of each file"), "{summary}");

    // Folds that name no part, or a fold with nothing to split, are refused.
    let bad = kgmesh(
        dir.path(),
        &[
            "eval",
            "--dataset",
            "metaqa",
            "--kg",
            path_str(&kg),
            "--questions",
        ]
        .into_iter()
        .chain([path_str(&questions), "--fold", "2/2"])
        .collect::<Vec<_>>(),
    );
    assert!(!bad.success);
    assert!(
        bad.stderr.contains("I must be less than N"),
        "{}",
        bad.stderr
    );
    let stars = kgmesh(
        dir.path(),
        &[
            "cache",
            "warm",
            "--kg",
            path_str(&kg),
            "--fold-complement",
            "0/2",
            "--dry-run",
        ],
    );
    assert!(!stars.success);
    assert!(stars.stderr.contains("--import FILE"), "{}", stars.stderr);
}

#[test]
fn warming_with_nats_fills_the_shared_kv_bucket() {
    let server = NatsServer::start();
    let url = server.url();
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = sample("kg.tsv");
    let questions = sample("questions.tsv");
    let warm = [
        "cache",
        "warm",
        "--kg",
        path_str(&kg),
        "--import",
        path_str(&questions),
        "--nats",
        &url,
        "--no-progress",
    ];
    let first = kgmesh(dir.path(), &warm);
    assert!(first.success, "{}{}", first.stdout, first.stderr);
    let entries = count(&first.stdout, "entries");
    assert!(entries > 0);
    assert_eq!(count(&first.stdout, "written"), entries);
    assert!(first.stdout.contains("JetStream KV bucket kgmesh-plans"));

    let again = kgmesh(dir.path(), &warm);
    assert!(again.success, "{}{}", again.stdout, again.stderr);
    assert_eq!(count(&again.stdout, "written"), 0, "{}", again.stdout);
    assert_eq!(count(&again.stdout, "unchanged"), entries);

    let stats = kgmesh(dir.path(), &["cache", "stats", "--nats", &url]);
    assert!(stats.success, "{}", stats.stderr);
    assert!(
        stats.stdout.starts_with(&format!("{entries} entries")),
        "{}",
        stats.stdout
    );
}

/// The questions of an eval report, each with whether its first answer was right.
fn right_by_question(report: &Path) -> Vec<(String, bool)> {
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(report.join("report.json")).expect("report.json"),
    )
    .expect("JSON report");
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|result| {
            (
                result["question"].as_str().expect("question").to_owned(),
                result["score"]["hits_at_1"].as_bool().expect("hits_at_1"),
            )
        })
        .collect()
}

#[test]
fn warming_with_half_of_a_new_domain_breaks_none_of_the_other_half() {
    // The zoo's retail graph, words only: a cache warmed with one half of its questions
    // (one or two verified plans per word) answers the other half at least as the cold
    // reading does, question by question. Its cues used to override the summarizer's
    // reading whole, and 3 of these questions went wrong, "Which stores carry Smoked
    // Almonds?" among them.
    let dir = tempfile::tempdir().expect("tempdir");
    let zoo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/data/zoo/retail");
    let kg = zoo.join("kg.tsv");
    let questions = zoo.join("questions.jsonl");
    let cache = dir.path().join("plans.jsonl");
    let config = dir.path().join("words-only.toml");
    std::fs::write(&config, "[embedder]\nkind = \"none\"\n").expect("config");
    let warm = warm_first_half(
        dir.path(),
        &["--config", path_str(&config)],
        &kg,
        &questions,
        &cache,
    );
    assert!(warm.success, "{}{}", warm.stdout, warm.stderr);
    assert!(count(&warm.stdout, "written") > 10, "{}", warm.stdout);
    let eval = |name: &str, cache_args: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "eval",
            "--config",
            path_str(&config),
            "--dataset",
            "jsonl",
            "--kg",
            path_str(&kg),
            "--questions",
            path_str(&questions),
            "--fold",
            "1/2",
            "--no-progress",
            "--out",
            path_str(&out),
        ];
        args.extend_from_slice(cache_args);
        let run = kgmesh(dir.path(), &args);
        assert!(run.success, "{}{}", run.stdout, run.stderr);
        right_by_question(&out)
    };
    let cold = eval("cold", &["--no-cache"]);
    let warmed = eval("warm", &["--cache-file", path_str(&cache)]);
    assert_eq!(cold.len(), warmed.len());
    assert!(cold.len() > 30, "{cold:?}");
    let broken: Vec<&str> = cold
        .iter()
        .zip(&warmed)
        .filter(|((_, cold_right), (_, warm_right))| *cold_right && !*warm_right)
        .map(|((question, _), _)| question.as_str())
        .collect();
    assert!(broken.is_empty(), "warming broke {broken:?}");
    let right = |results: &[(String, bool)]| results.iter().filter(|(_, r)| *r).count();
    assert!(right(&warmed) >= right(&cold), "{warmed:?}");
}
