//! A broken language model never makes an answer worse than no model, and never
//! silently: `kgmesh ask` on the sample KG with a scripted OpenAI-compatible server that
//! talks nonsense, says nothing, or refuses gives the LLM-free answers, flagged
//! `degraded` with the roles that fell back.

#[path = "serve_support/mod.rs"]
mod support;

use kgmesh_testkit::llm_stub::{oracle, prompt_role, LlmStub, OracleRoles, Script, StubReply};
use support::*;

/// `kgmesh ask --json` on the sample KG, with the model at `base_url` when given.
fn ask(question: &str, base_url: Option<&str>) -> serde_json::Value {
    ask_with_cache(question, base_url, None)
}

/// [`ask`] with a plan-cache file.
fn ask_with_cache(
    question: &str,
    base_url: Option<&str>,
    cache: Option<&std::path::Path>,
) -> serde_json::Value {
    let mut command = kgmesh();
    command
        .arg("ask")
        .arg(question)
        .arg("--json")
        .arg("--kg")
        .arg(sample_kg());
    if let Some(cache) = cache {
        command.arg("--cache-file").arg(cache);
    }
    if let Some(url) = base_url {
        command
            .env("OPENAI_BASE_URL", url)
            .env("OPENAI_API_KEY", "stub")
            .env("KGMESH__LLM__MAX_RETRIES", "0");
    }
    run_json(command)
}

fn degraded(reply: &serde_json::Value) -> Vec<String> {
    reply["degraded"]
        .as_array()
        .expect("degraded")
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["role"].as_str().unwrap(),
                d["reason"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn a_broken_model_gives_the_llm_free_answers_flagged_degraded() {
    let questions = read_questions(&repo_root().join("examples/movies/questions.tsv"), 4);
    assert_eq!(questions.len(), 4);
    let without: Vec<serde_json::Value> = questions.iter().map(|(q, _)| ask(q, None)).collect();
    for reply in &without {
        assert!(!answer_texts(reply).is_empty(), "{reply}");
        assert_eq!(degraded(reply), Vec::<String>::new(), "{reply}");
    }
    for (name, script) in [
        (
            "nonsense",
            Script::text("As an AI language model, I love pancakes."),
        ),
        ("empty", Script::text("")),
        ("HTTP 400", Script::status(400)),
    ] {
        let stub = LlmStub::start(script);
        for ((question, _), llm_free) in questions.iter().zip(&without) {
            let reply = ask(question, Some(&stub.base_url()));
            assert_eq!(
                answer_texts(&reply),
                answer_texts(llm_free),
                "{name} model, {question}: {reply}"
            );
            let flagged = degraded(&reply);
            for role in ["kg-linker", "summarizer"] {
                assert!(
                    flagged.contains(&format!("{role} model_fallback")),
                    "{name} model, {question}: {role} not flagged in {flagged:?}"
                );
            }
            let notes = reply["notes"].to_string();
            assert!(
                notes.contains("answered without its language model"),
                "{name} model, {question}: {notes}"
            );
        }
        assert!(
            stub.requests() >= questions.len(),
            "{name}: the model was asked"
        );
        // The default roles spend at most three calls on a cold question (kg-linker,
        // judge, summarizer), none of them retried here.
        assert!(
            stub.requests() <= 3 * questions.len(),
            "{name}: {} model calls for {} questions",
            stub.requests(),
            questions.len()
        );
    }
}

/// The oracle of `llm-stub` recognises the real judge and summarizer prompts and writes
/// replies their parsers accept: with it no role falls back, and the answers are gold.
#[test]
fn the_oracle_model_is_used_by_the_judge_and_the_summarizer() {
    let path = repo_root().join("examples/movies/questions.tsv");
    let questions = read_questions(&path, 5);
    let text = std::fs::read_to_string(&path).expect("questions");
    let stub = LlmStub::start(oracle(&[text], OracleRoles::ALL));
    for (question, gold) in &questions {
        let reply = ask(question, Some(&stub.base_url()));
        let answers = answer_texts(&reply);
        assert!(
            answers.first().is_some_and(|a| gold.contains(a)),
            "{question}: {answers:?} not in {gold:?}: {reply}"
        );
        let flagged = degraded(&reply);
        for role in ["judge", "summarizer"] {
            assert!(
                !flagged.iter().any(|f| f.starts_with(role)),
                "{question}: {role} fell back: {flagged:?}"
            );
        }
        // The KG-Linker has no gold path in this file: it is refused and says so.
        assert!(
            flagged.contains(&"kg-linker model_fallback".to_owned()),
            "{question}: {flagged:?}"
        );
    }
    assert!(stub.requests() >= 2 * questions.len());
}

#[test]
fn the_text_output_says_the_answer_was_degraded() {
    let stub = LlmStub::start(Script::text("lorem ipsum"));
    let mut command = kgmesh();
    command
        .args(["ask", "who directed Heat"])
        .env("OPENAI_BASE_URL", stub.base_url())
        .env("OPENAI_API_KEY", "stub");
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("Michael Mann"), "{stdout}");
    assert!(
        stdout.contains("DEGRADED: ") && stdout.contains("summarizer (model fallback)"),
        "{stdout}"
    );
}

#[test]
fn the_default_roles_spend_one_call_on_a_replayed_plan_and_three_on_a_cold_question() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("plans.jsonl");
    let warm = kgmesh()
        .arg("cache")
        .arg("warm")
        .arg("--kg")
        .arg(sample_kg())
        .arg("--import")
        .arg(repo_root().join("examples/movies/questions.tsv"))
        .arg("--cache-file")
        .arg(&cache)
        .output()
        .expect("kgmesh cache warm runs");
    assert!(warm.status.success(), "{warm:?}");
    let stub = LlmStub::start(Script::text("As an AI language model, I love pancakes."));
    let base_url = stub.base_url();
    let ask_cached = |question: &str| ask_with_cache(question, Some(&base_url), Some(&cache));
    // The warmed template "who directed <e>": the plan is replayed, and only the
    // summarizer asks the model (the cache's lookup asks it nothing by default).
    let before = stub.requests();
    let replayed = ask_cached("who directed Collateral");
    assert_eq!(replayed["plan_replayed"], true, "{replayed}");
    assert_eq!(stub.requests() - before, 1, "{replayed}");
    // A wording no plan has: kg-linker, judge and summarizer, one call each.
    let before = stub.requests();
    let cold = ask_cached("which genre does Collateral belong to");
    assert_eq!(cold["plan_replayed"], false, "{cold}");
    assert!(stub.requests() - before <= 3, "{cold}");
}

/// A judge that always asks for another round cannot make a question cost more than the
/// default budget (3 calls): the second round is planned without the model, which the
/// reply says, and the summarizer still gets its call.
#[test]
fn a_second_round_keeps_within_three_calls_and_the_summarizers_call() {
    let asked = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = asked.clone();
    let stub = LlmStub::start(Script::computed(move |prompt| {
        let role = prompt_role(prompt).unwrap_or("other");
        log.lock().unwrap().push(role.to_owned());
        StubReply::Text(if role == "judge" {
            "<verdict>NEXT_ROUND</verdict>\n<reason>Not enough.</reason>".to_owned()
        } else {
            "As an AI language model, I love pancakes.".to_owned()
        })
    }));
    let reply = ask(
        "which genre does Collateral belong to",
        Some(&stub.base_url()),
    );
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked, ["kg-linker", "judge", "summarizer"], "{reply}");
    assert_eq!(reply["rounds"], 2, "{reply}");
    assert_eq!(reply["cost"]["llm_calls"], 3, "{reply}");
    let notes = reply["notes"].to_string();
    assert!(
        notes.contains("round 2: the kg-linker plans without the model"),
        "{notes}"
    );
}

/// A model endpoint that accepts connections and never answers costs the question one
/// wait, not one per role: once the first call gives up at its deadline, the other
/// roles (and the next questions, for the breaker's cool-down) answer without the model
/// at once, and the reply says they did.
#[test]
fn a_model_that_never_answers_is_waited_for_once() {
    use std::sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    };
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = listener.local_addr().expect("address");
    listener.set_nonblocking(true).expect("non-blocking");
    let accepted = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let silent = {
        let (accepted, stop) = (accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        held.push(stream);
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        })
    };
    let mut command = kgmesh();
    command
        .args(["ask", "who directed Heat", "--json", "--kg"])
        .arg(sample_kg())
        .env("OPENAI_BASE_URL", format!("http://{address}/v1"))
        .env("OPENAI_API_KEY", "stub")
        .env("KGMESH__EMBEDDER__KIND", "none")
        .env("KGMESH__BUS__REQUEST_TIMEOUT_MS", "2000");
    let reply = run_json(command);
    stop.store(true, Ordering::Relaxed);
    silent.join().expect("listener thread");
    assert_eq!(answer_texts(&reply), ["Michael Mann"], "{reply}");
    // One role waited for the model; the others did not try it.
    assert_eq!(accepted.load(Ordering::Relaxed), 1, "{reply}");
    let flagged = degraded(&reply);
    for role in ["kg-linker", "summarizer"] {
        assert!(
            flagged.contains(&format!("{role} model_fallback")),
            "{role} not flagged in {flagged:?}"
        );
    }
}

/// The model cascade (`llm.cascade_below`): a question whose LLM-free plan is at least
/// that confident makes no model call at all, and its answer is the LLM-free one; below
/// it the KG-Linker asks the model for its plan.
#[test]
fn the_cascade_asks_the_model_only_below_its_threshold() {
    let stub = LlmStub::start(Script::text("As an AI language model, I love pancakes."));
    let question = "who directed Heat";
    let llm_free = ask(question, None);
    let chance = llm_free["confidence"].as_f64().expect("a confidence");
    let ask_cascading = |threshold: &str| {
        let mut command = kgmesh();
        command
            .args(["ask", question, "--json", "--kg"])
            .arg(sample_kg())
            .env("OPENAI_BASE_URL", stub.base_url())
            .env("OPENAI_API_KEY", "stub")
            .env("KGMESH__LLM__MAX_RETRIES", "0")
            .env("KGMESH__LLM__CASCADE_BELOW", threshold);
        run_json(command)
    };
    let before = stub.requests();
    let confident = ask_cascading(&format!("{}", (chance - 0.01).max(0.0)));
    assert_eq!(stub.requests(), before, "a model call: {confident}");
    assert_eq!(confident["cost"]["llm_calls"], 0, "{confident}");
    assert_eq!(answer_texts(&confident), answer_texts(&llm_free));
    assert_eq!(degraded(&confident), Vec::<String>::new(), "{confident}");

    // Below it the model is asked, once by default (`llm.cascade_calls`): for the
    // KG-Linker's plan. This one talks nonsense, so its run falls back and the LLM-free
    // answer stands, with the fallback said.
    let unsure = ask_cascading("1");
    assert_eq!(stub.requests() - before, 1, "one model call: {unsure}");
    assert_eq!(answer_texts(&unsure), answer_texts(&llm_free), "{unsure}");
    assert!(!degraded(&unsure).is_empty(), "{unsure}");
    let notes = unsure["notes"].to_string();
    assert!(notes.contains("the LLM-free one stands"), "{notes}");
}
