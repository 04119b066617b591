//! `kgmesh ask` on the bundled sample KG answers its sample questions (embedded mode,
//! no language model).

#[path = "serve_support/mod.rs"]
mod support;

use support::*;

fn ask_json(question: &str, extra: &[&str]) -> serde_json::Value {
    let mut command = kgmesh();
    command.arg("ask").arg(question).arg("--json").args(extra);
    run_json(command)
}

#[test]
fn the_sample_questions_are_answered_with_evidence() {
    let kg = sample_kg();
    let questions = read_questions(
        &repo_root().join("examples/movies/questions.tsv"),
        usize::MAX,
    );
    assert!(questions.len() >= 5);
    let mut wrong = Vec::new();
    for (question, gold) in &questions {
        let reply = ask_json(question, &["--kg", kg.to_str().expect("utf-8 path")]);
        let got = answer_texts(&reply);
        match got.first() {
            Some(top) if gold.iter().any(|g| g.eq_ignore_ascii_case(top)) => {
                // The top answer cites evidence that exists.
                let cited = reply["answers"][0]["evidence"]
                    .as_array()
                    .expect("evidence");
                let lines = reply["evidence"].as_array().expect("evidence lines").len();
                assert!(!cited.is_empty(), "{question}: no evidence cited");
                for index in cited {
                    assert!((index.as_u64().expect("index") as usize) < lines);
                }
                assert_eq!(reply["cost"]["llm_calls"], 0, "no model is configured");
            }
            _ => wrong.push(format!("{question}: got {got:?}, expected one of {gold:?}")),
        }
    }
    // The LLM-free pipeline answers most, not all, of them (see the report of misses).
    let right = questions.len() - wrong.len();
    eprintln!(
        "{right} of {} sample questions answered correctly",
        questions.len()
    );
    assert!(
        right * 4 >= questions.len() * 3,
        "only {right} of {} right; wrong answers:\n{}",
        questions.len(),
        wrong.join("\n")
    );
}

#[test]
fn a_possessive_names_the_entity_and_an_unknown_name_is_not_guessed() {
    let kg = sample_kg();
    let kg = kg.to_str().expect("utf-8 path");
    for question in ["what is Heat's genre", "what is Heat’s genre"] {
        let reply = ask_json(question, &["--kg", kg]);
        let got = answer_texts(&reply);
        assert!(!got.is_empty(), "{question}: {reply}");
        assert!(
            got.iter().all(|g| g == "Crime" || g == "Thriller"),
            "{question}: {got:?}"
        );
    }
    // Nobody in the sample graph is called Bob Tanaka: no film or genre is given for him.
    let reply = ask_json("who is Bob Tanaka's manager", &["--kg", kg]);
    assert!(answer_texts(&reply).is_empty(), "{reply}");
}

#[test]
fn without_kg_the_bundled_sample_is_used_and_text_output_shows_answers_and_costs() {
    let mut command = kgmesh();
    command.args(["ask", "who directed Heat"]);
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
    assert!(stdout.contains("LLM calls 0"), "{stdout}");
    assert!(stdout.contains("Evidence"), "{stdout}");
}

#[test]
fn a_missing_kg_file_is_a_clear_error() {
    let mut command = kgmesh();
    command.args(["ask", "who directed Heat", "--kg", "/nonexistent/kg.tsv"]);
    let (code, _stdout, stderr) = run(command);
    assert_ne!(code, 0);
    assert!(stderr.contains("/nonexistent/kg.tsv"), "{stderr}");
}
