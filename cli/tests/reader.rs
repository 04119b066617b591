//! The learned question reader through the real binary (`KGMESH_READER=on`: it is
//! off by default), on the domain zoo in the repository: training leaves a domain out
//! and scores it, a misspelled name is read as the closest and the reply says so,
//! answers carry a confidence that `--min-confidence` acts on, a calibration fitted on
//! a graph's own answers is used for it, and weights or calibrations that cannot be used
//! are refused.
//!
//! Expected answers come from the zoo's question files (written with their gold paths,
//! checked by `scripts/zoo-check`), never from the code under test.

#[path = "serve_support/mod.rs"]
mod support;

use std::path::PathBuf;

use support::*;

fn zoo() -> PathBuf {
    repo_root().join("tests/data/zoo")
}

/// The gold answers of the zoo question whose text is `question`.
fn gold(domain: &str, question: &str) -> Vec<String> {
    let text = std::fs::read_to_string(zoo().join(domain).join("questions.jsonl"))
        .expect("the zoo's questions");
    for line in text.lines() {
        let value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        if value["question"] == question {
            return value["answers"]
                .as_array()
                .expect("answers")
                .iter()
                .map(|a| a.as_str().expect("a string answer").to_owned())
                .collect();
        }
    }
    panic!("no zoo question {question:?} in {domain}");
}

/// `kgmesh ask --json` over a zoo graph, words only, with the reader on.
fn ask_json(domain_kg: &str, question: &str, extra: &[&str]) -> (i32, serde_json::Value) {
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env("KGMESH_READER", "on")
        .args(["ask", question, "--json", "--kg"])
        .arg(zoo().join(domain_kg))
        .args(extra);
    let (code, stdout, stderr) = run(command);
    let reply = serde_json::from_str(&stdout)
        .unwrap_or_else(|error| panic!("not JSON ({error}): {stdout}\n{stderr}"));
    (code, reply)
}

#[test]
fn training_leaves_a_domain_out_and_scores_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("weights.json");
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .args(["reader", "train", "--zoo"])
        .arg(zoo())
        .args(["--exclude", "library", "--iterations", "100", "--out"])
        .arg(&out);
    let (code, stdout, stderr) = run_within(command, std::time::Duration::from_secs(240));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("held out library:"), "{stdout}");
    assert!(stdout.contains("(held out)"), "{stdout}");
    let weights: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("weights written")).unwrap();
    let trained_on: Vec<&str> = weights["trained_on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(trained_on.len(), 7, "{trained_on:?}");
    assert!(
        trained_on.iter().all(|t| !t.starts_with("library")),
        "{trained_on:?}"
    );
    assert!(weights["confidence"].is_object(), "a confidence is fitted");

    // The weights are used when named (which turns the reader on), and refused when
    // they are not weights.
    let (code, reply) = ask_json("library/kg.tsv", "Who translated The Peat Cuters?", &[]);
    assert_eq!(code, 0);
    let with_file = {
        let mut command = kgmesh();
        command
            .env("KGMESH__EMBEDDER__KIND", "none")
            .env("KGMESH_READER_WEIGHTS", &out)
            .args(["ask", "Who translated The Peat Cuters?", "--json", "--kg"])
            .arg(zoo().join("library/kg.tsv"));
        run(command)
    };
    assert_eq!(with_file.0, 0, "{}", with_file.2);
    assert_eq!(
        answer_texts(&reply),
        gold("library", "Who translated The Peat Cuters?")
    );
    let reply_with_file: serde_json::Value =
        serde_json::from_str(&with_file.1).expect("a JSON reply");
    assert!(
        reply_with_file["confidence"].is_number(),
        "{reply_with_file}"
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, r#"{"format": 1, "features": ["x"], "mean": [0], "scale": [1], "weights": [1], "candidates": 5}"#).unwrap();
    let mut command = kgmesh();
    command
        .env("KGMESH__READER__WEIGHTS", &bad)
        .args(["ask", "who directed Heat"]);
    let (code, _, stderr) = run(command);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("kgmesh reader train"), "{stderr}");
}

#[test]
fn a_misspelled_name_is_read_as_the_closest_and_the_reply_says_so() {
    let question = "Who translated The Peat Cuters?";
    let (code, reply) = ask_json("library/kg.tsv", question, &[]);
    assert_eq!(code, 0, "{reply}");
    assert_eq!(answer_texts(&reply), gold("library", question));
    let explanation = reply["explanation"].as_str().unwrap();
    assert!(
        explanation.contains("read as \"The Peat Cutters\""),
        "{explanation}"
    );
    // Spelled right, nothing is said.
    let (_, exact) = ask_json("library/kg.tsv", "Who translated The Peat Cutters?", &[]);
    assert!(
        !exact["explanation"].as_str().unwrap().contains("read as"),
        "{exact}"
    );
}

#[test]
fn answers_carry_a_confidence_and_min_confidence_declines_low_ones() {
    let question = "Which books are set in Port Kell?";
    let (code, reply) = ask_json("library/kg.tsv", question, &[]);
    assert_eq!(code, 0, "{reply}");
    let mut got = answer_texts(&reply);
    let mut want = gold("library", question);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    let confidence = reply["confidence"].as_f64().expect("a confidence");
    assert!((0.0..=1.0).contains(&confidence), "{confidence}");

    // Asked for more confidence than the answer has: "I don't know", possibilities named,
    // exit status 4 (not 3, which says nothing was found), the confidence still given.
    let (code, declined) = ask_json("library/kg.tsv", question, &["--min-confidence", "1"]);
    assert_eq!(code, 4, "{declined}");
    assert!(answer_texts(&declined).is_empty(), "{declined}");
    assert_eq!(
        declined["confidence"].as_f64(),
        Some(confidence),
        "{declined}"
    );
    let explanation = declined["explanation"].as_str().unwrap();
    assert!(
        explanation.starts_with("I don't know") && explanation.contains("possibly"),
        "{explanation}"
    );
    assert!(
        explanation.contains(&want[0]) || want.iter().any(|w| explanation.contains(w.as_str())),
        "{explanation}"
    );

    // With re-ranking off (the default) the answer still carries a confidence: the
    // first stage's plan's; `reader.confidence = false` turns it off.
    let asked = |question: &str, confidence_on: &str| {
        let mut command = kgmesh();
        command
            .env("KGMESH__EMBEDDER__KIND", "none")
            .env("KGMESH__READER__CONFIDENCE", confidence_on)
            .env_remove("KGMESH_READER")
            .args(["ask", question, "--json", "--kg"])
            .arg(zoo().join("library/kg.tsv"));
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{stderr}");
        serde_json::from_str::<serde_json::Value>(&stdout).unwrap()
    };
    let default_run = |confidence_on: &str| asked(question, confidence_on);
    let default = default_run("true");
    let chance = default["confidence"]
        .as_f64()
        .expect("a confidence by default");
    assert!((0.0..=1.0).contains(&chance), "{default}");
    // "Which books are set in Port Kell?" is answered by the plan ranked first.
    assert_eq!(
        default["plan_followed"],
        serde_json::json!(true),
        "{default}"
    );
    // The learned reader, a second reading of the same candidates, reaches that answer
    // too. Not so for "Where was the author of The Peat Cutters born?", where the first
    // stage answers a book ("Under the Bell Tower", wrong) and the reader's plan does not
    // reach it: the calibration reads the disagreement and says so.
    assert_eq!(
        default["readings_agree"],
        serde_json::json!(true),
        "{default}"
    );
    let disputed = asked("Where was the author of The Peat Cutters born?", "true");
    assert_eq!(
        disputed["readings_agree"],
        serde_json::json!(false),
        "{disputed}"
    );
    let doubted = disputed["confidence"].as_f64().expect("a confidence");
    assert!(
        doubted < 0.5 && doubted < chance,
        "{doubted} against {chance}: {disputed}"
    );
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env_remove("KGMESH_READER")
        .args([
            "ask",
            "Where was the author of The Peat Cutters born?",
            "--kg",
        ])
        .arg(zoo().join("library/kg.tsv"));
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    let answer_line = stdout
        .lines()
        .find(|l| l.starts_with("A:"))
        .unwrap_or_default();
    assert!(
        answer_line.contains("a second reading of the question reaches other answers"),
        "{stdout}"
    );
    let off = default_run("false");
    assert!(off["confidence"].is_null(), "{off}");
    assert!(off["plan_followed"].is_null(), "no plan estimated: {off}");
    assert!(off["readings_agree"].is_null(), "no second reading: {off}");

    let (code, _, stderr) = kgmesh_run(&["ask", "who directed Heat", "--min-confidence", "1.5"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("from 0 to 1"), "{stderr}");
}

#[test]
fn a_class_word_decides_the_relation() {
    // "record label" names both a relation and a class node of the music graph.
    let question = "What is Kestrel Moon's record label?";
    let (code, reply) = ask_json("music/kg.tsv", question, &[]);
    assert_eq!(code, 0, "{reply}");
    assert_eq!(answer_texts(&reply), gold("music", question));
    // "authors" is what the answers are, not a hop to `foreword_author` (which the
    // first stage alone once took it for, and answered with a book): the answers are
    // authors born there, all of them or some.
    let question = "Which authors were born in Port Kell?";
    let (_, reply) = ask_json("library/kg.tsv", question, &[]);
    let got = answer_texts(&reply);
    let want = gold("library", question);
    assert!(!got.is_empty(), "{reply}");
    assert!(
        got.iter().all(|g| want.contains(g)),
        "{got:?} not all in {want:?}"
    );
}

/// `kgmesh eval` of one zoo domain into `out`, words only, default configuration
/// (re-ranking off, confidence on) but for `env`; `extra` arguments after the rest.
fn eval_domain(
    domain: &str,
    out: &std::path::Path,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (i32, String, String) {
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env_remove("KGMESH_READER")
        .envs(env.iter().copied())
        .args(["eval", "--dataset", "jsonl", "--no-cache", "--no-progress"])
        .arg("--kg")
        .arg(zoo().join(domain).join("kg.tsv"))
        .arg("--questions")
        .arg(zoo().join(domain).join("questions.jsonl"))
        .args(["--name", domain, "--out"])
        .arg(out)
        .args(extra);
    run(command)
}

/// The bundled reader weights for reading by words.
fn bundled_lexical() -> PathBuf {
    repo_root().join("agents/src/kg_linker/reader/weights-lexical.json")
}

/// `kgmesh reader calibrate` of `reports` into `out`, from `weights` (default: the
/// bundled ones for the reports' way of reading).
fn calibrate(
    weights: Option<&std::path::Path>,
    reports: &[PathBuf],
    out: &std::path::Path,
) -> (i32, String, String) {
    let mut command = kgmesh();
    command.args(["reader", "calibrate"]);
    if let Some(weights) = weights {
        command.arg("--weights").arg(weights);
    }
    command.arg("--reports").args(reports).arg("--out").arg(out);
    run(command)
}

#[test]
fn calibrate_fits_the_answer_calibration_from_eval_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    for domain in ["library", "retail"] {
        let (code, stdout, stderr) = eval_domain(domain, &dir.path().join(domain), &[], &[]);
        assert_eq!(code, 0, "{stderr}");
        // The report says how well the answers' confidences tell right from wrong.
        assert!(stdout.contains("## Confidence"), "{stdout}");
        assert!(stdout.contains("Risk–coverage"), "{stdout}");
        assert!(
            stdout.contains("Answers at the end of the plan their confidence starts from"),
            "{stdout}"
        );
        // Library's questions include six unanswerable ones: what withholding trades.
        if domain == "library" {
            let declined: Vec<usize> = stdout
                .lines()
                .filter(|l| l.starts_with("| 0.") && l.ends_with(" of 6 |"))
                .filter_map(|l| l.split('|').nth(3)?.split_whitespace().next()?.parse().ok())
                .collect();
            assert_eq!(declined.len(), 6, "a row per threshold: {stdout}");
            assert!(
                declined.windows(2).all(|w| w[0] <= w[1]) && declined[5] <= 6,
                "a higher threshold declines no fewer: {declined:?}"
            );
        }
    }
    let weights = dir.path().join("weights.json");
    let (code, stdout, stderr) = calibrate(
        Some(&bundled_lexical()),
        &[
            dir.path().join("library/report.json"),
            dir.path().join("retail/report.json"),
        ],
        &weights,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("each calibrated by the others") && stdout.contains("ECE"),
        "{stdout}"
    );
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&weights).unwrap()).unwrap();
    let signals = written["answer_calibration"]["signals"]
        .as_array()
        .expect("an answer calibration");
    assert_eq!(signals[0], "plan_log_odds", "{written}");
    assert_eq!(
        written["answer_calibration"]["model"]["weights"]
            .as_array()
            .unwrap()
            .len(),
        signals.len()
    );
    // The written weights are usable as they are.
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env("KGMESH_READER", "off")
        .env("KGMESH_READER_WEIGHTS", &weights)
        .args(["ask", "Which books are set in Port Kell?", "--json", "--kg"])
        .arg(zoo().join("library/kg.tsv"));
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    let reply: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert!(reply["confidence"].as_f64().is_some(), "{reply}");

    // A report whose answers carry no confidence cannot be calibrated on: an error.
    let off = [("KGMESH__READER__CONFIDENCE", "false")];
    let (code, _, stderr) =
        eval_domain("library", &dir.path().join("none"), &off, &["--limit", "5"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = calibrate(
        Some(&bundled_lexical()),
        &[dir.path().join("none/report.json")],
        &dir.path().join("unused.json"),
    );
    assert_ne!(code, 0);
    assert!(
        stderr.contains("no answer carries a confidence"),
        "{stderr}"
    );
    assert!(!dir.path().join("unused.json").exists());
}

/// `kgmesh eval` of the MetaQA slice's questions (all three hop counts) into `out`,
/// words only, default configuration but for `env`.
fn eval_slice(out: &std::path::Path, env: &[(&str, &str)]) -> serde_json::Value {
    let slice = metaqa_slice();
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env_remove("KGMESH_READER")
        .env_remove("KGMESH_READER_WEIGHTS")
        .envs(env.iter().copied())
        .args(["eval", "--dataset", "metaqa", "--no-cache", "--no-progress"])
        .arg("--kg")
        .arg(slice.join("kb.tsv"));
    for hops in ["1-hop", "2-hop", "3-hop"] {
        command
            .arg("--questions")
            .arg(slice.join(hops).join("dev.txt"));
    }
    command.arg("--out").arg(out);
    let (code, _, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap()
}

/// Over the answers that carry a confidence: (mean confidence, share right).
fn mean_confidence_and_right(report: &serde_json::Value) -> (f64, f64) {
    let answered: Vec<&serde_json::Value> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["confidence"].is_number())
        .collect();
    assert!(
        answered.len() >= 40,
        "answers with a confidence: {}",
        answered.len()
    );
    let n = answered.len() as f64;
    let mean = answered
        .iter()
        .map(|r| r["confidence"].as_f64().unwrap())
        .sum::<f64>()
        / n;
    let right = answered
        .iter()
        .filter(|r| r["score"]["hits_at_1"] == true)
        .count() as f64
        / n;
    (mean, right)
}

#[test]
fn a_calibration_fitted_on_a_graphs_own_answers_is_used_for_that_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The bundled calibration is the domain zoo's, where about 60 % of answers are
    // right; on the MetaQA slice nearly all are, and it says much less.
    let bundled = eval_slice(&dir.path().join("bundled"), &[]);
    let (mean, right) = mean_confidence_and_right(&bundled);
    assert!(
        right - mean > 0.1,
        "mean confidence {mean:.3}, right {right:.3}"
    );
    // Each answer reports the plan's chance the calibration read.
    let results = bundled["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .filter(|r| r["confidence"].is_number())
            .all(|r| r["plan_chance"].is_number()),
        "{bundled}"
    );
    // Fitted on that run, starting from the bundled weights (no --weights).
    let calibration = dir.path().join("calibration.json");
    let (code, stdout, stderr) = calibrate(
        None,
        &[dir.path().join("bundled/report.json")],
        &calibration,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("the bundled weights for reading by words"),
        "{stdout}"
    );
    // With it, the confidence says as much as is right on this graph, and nothing else
    // changes: the same answers (re-ranking stays off).
    let calibration_env = calibration.to_str().unwrap();
    let fitted = eval_slice(
        &dir.path().join("fitted"),
        &[("KGMESH__READER__CALIBRATION", calibration_env)],
    );
    let (mean, right) = mean_confidence_and_right(&fitted);
    assert!(
        (right - mean).abs() < 0.05,
        "mean confidence {mean:.3}, right {right:.3}"
    );
    let predictions = |report: &serde_json::Value| -> Vec<serde_json::Value> {
        report["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["predictions"].clone())
            .collect()
    };
    assert_eq!(predictions(&bundled), predictions(&fitted));

    // Runs read with MiniLM and by words have calibrations of their own: refused
    // together.
    let mut with_minilm = bundled.clone();
    with_minilm["system"]["embedder"] = "all-MiniLM-L6-v2 (local MiniLM)".into();
    let minilm_report = dir.path().join("minilm-report.json");
    std::fs::write(&minilm_report, with_minilm.to_string()).unwrap();
    let (code, _, stderr) = calibrate(
        None,
        &[dir.path().join("bundled/report.json"), minilm_report],
        &dir.path().join("mixed.json"),
    );
    assert_ne!(code, 0);
    assert!(stderr.contains("calibrate each way of reading"), "{stderr}");
    assert!(!dir.path().join("mixed.json").exists());

    // A file without an answer calibration, or none at all, is an error, not the
    // bundled calibration in silence.
    let bare = dir.path().join("bare.json");
    let mut weights: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(bundled_lexical()).unwrap()).unwrap();
    weights
        .as_object_mut()
        .unwrap()
        .remove("answer_calibration");
    std::fs::write(&bare, weights.to_string()).unwrap();
    for (file, says) in [
        (bare, "holds no answer calibration"),
        (dir.path().join("missing.json"), "reader.calibration"),
    ] {
        let mut command = kgmesh();
        command
            .env("KGMESH__EMBEDDER__KIND", "none")
            .env("KGMESH__READER__CALIBRATION", &file)
            .args(["ask", "who directed [Heat]", "--kg"])
            .arg(metaqa_slice().join("kb.tsv"));
        let (code, _, stderr) = run(command);
        assert_eq!(code, 2, "a configuration that cannot be used: {stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

/// A graph written here (no zoo domain), where no word of the question names the
/// relation asked for: "who runs" a company with an `auditor`, a `ceo`, `founders` and
/// `hubs`. The first stage's word match ranks them all alike (and `auditor` first by
/// name); the bundled reader's lexicon, learned from other graphs' questions, knows
/// what "runs" asks for, and breaks the tie with re-ranking off (the default).
#[test]
fn a_tie_the_first_stage_cannot_break_is_broken_by_the_learned_reader() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = dir.path().join("kg.tsv");
    std::fs::write(
        &kg,
        "Harbor Freight Lines\tauditor\tMina Lowe\n\
         Harbor Freight Lines\tceo\tOtto Brandt\n\
         Harbor Freight Lines\tfounders\tIda Rusk\n\
         Harbor Freight Lines\thubs\tPort Elm\n\
         Otto Brandt\temployer\tHarbor Freight Lines\n\
         Mina Lowe\temployer\tNorth Audit\n",
    )
    .expect("write the graph");
    let mut command = kgmesh();
    command
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env_remove("KGMESH_READER")
        .env_remove("KGMESH_READER_WEIGHTS")
        .args(["ask", "Who runs Harbor Freight Lines?", "--json", "--kg"])
        .arg(&kg);
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let reply: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(reply["answers"][0]["text"], "Otto Brandt", "{stdout}");
    // The reader's choice is the plan the confidence reads: both readings agree.
    assert_eq!(reply["readings_agree"], true, "{stdout}");
    // And the reply says who chose it.
    let notes = reply["notes"].as_array().expect("notes");
    assert!(
        notes.iter().any(|n| n
            == "round 1: the learned reader chose ceo among plans the question's words read alike"),
        "{stdout}"
    );
}
