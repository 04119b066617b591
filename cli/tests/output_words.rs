//! What `kgmesh ask`, `kgmesh serve` and `kgmesh cache warm` say to people, run as the
//! real binary: predicates read by their labels or local names (never the whole IRI),
//! each evidence line cited once and numbered as the JSON indexes it, the plan cache's
//! part said in words (examples offered, or whose plan was replayed and what it
//! reached), the skipped inputs of `cache warm` named with their reasons, the console's
//! example question built from the graph's own schema, and the edges of query rows.

#[path = "serve_support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};

use kgmesh_testkit::llm_stub::{prompt_role, LlmStub, Script, StubReply};
use support::*;

const LABEL: &str = "http://www.w3.org/2000/01/rdf-schema#label";

/// A small N-Triples graph with every predicate under `http://example.org/`: two
/// people, where they work and live, and one predicate (`p7`) whose IRI says nothing
/// and whose `rdfs:label` says "employer".
fn write_people(dir: &Path) -> PathBuf {
    let ex = |local: &str| format!("<http://example.org/{local}>");
    let mut lines = Vec::new();
    for (node, name) in [
        ("alice", "Alice Martin"),
        ("bob", "Bob Stone"),
        ("acme", "Acme Corp"),
        ("globex", "Globex"),
        ("paris", "Paris"),
        ("lyon", "Lyon"),
    ] {
        lines.push(format!("{} <{LABEL}> \"{name}\" .", ex(node)));
    }
    for (head, relation, tail) in [
        ("alice", "worksFor", "acme"),
        ("alice", "livesIn", "paris"),
        ("bob", "livesIn", "lyon"),
        ("bob", "p7", "globex"),
    ] {
        lines.push(format!("{} {} {} .", ex(head), ex(relation), ex(tail)));
    }
    lines.push(format!("{} <{LABEL}> \"employer\" .", ex("p7")));
    let path = dir.join("people.nt");
    std::fs::write(&path, lines.join("\n") + "\n").expect("write the graph");
    path
}

fn ask_json(kg: &Path, question: &str, extra: &[&str]) -> serde_json::Value {
    let mut command = kgmesh();
    command
        .arg("ask")
        .arg(question)
        .arg("--json")
        .arg("--kg")
        .arg(kg)
        .args(extra);
    run_json(command)
}

fn ask_text(kg: &Path, question: &str, extra: &[&str]) -> String {
    let mut command = kgmesh();
    command
        .arg("ask")
        .arg(question)
        .arg("--kg")
        .arg(kg)
        .args(extra);
    let (code, stdout, stderr) = run(command);
    assert!(code == 0 || code == NO_ANSWER_EXIT, "{stdout}\n{stderr}");
    stdout
}

fn evidence_texts(reply: &serde_json::Value) -> Vec<String> {
    reply["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .map(|line| line["text"].as_str().expect("text").to_owned())
        .collect()
}

#[test]
fn predicates_read_by_their_label_or_local_name_never_the_whole_iri() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = write_people(dir.path());

    // The local name, camelCase split, is what the evidence shows and the question's
    // words meet.
    let reply = ask_json(&kg, "who does Alice Martin work for", &[]);
    assert_eq!(answer_texts(&reply), ["Acme Corp"], "{reply}");
    let lines = evidence_texts(&reply);
    assert!(
        lines
            .iter()
            .any(|l| l == "Alice Martin -> works for -> Acme Corp"),
        "{lines:?}"
    );
    assert!(
        lines.iter().all(|l| !l.contains("http://")),
        "an IRI is shown: {lines:?}"
    );
    let text = ask_text(&kg, "who does Alice Martin work for", &[]);
    assert!(
        text.contains("Alice Martin -> works for -> Acme Corp"),
        "{text}"
    );
    assert!(!text.contains("example.org"), "{text}");

    // A predicate's own rdfs:label wins over its local name, and the label's node is
    // no entity of the graph.
    let reply = ask_json(&kg, "who is the employer of Bob Stone", &[]);
    assert_eq!(answer_texts(&reply), ["Globex"], "{reply}");
    assert!(
        evidence_texts(&reply)
            .iter()
            .any(|l| l == "Bob Stone -> employer -> Globex"),
        "{reply}"
    );

    // "organization" shares "org" with every predicate's IRI and no word with any
    // predicate's name: no word of the question names the path answered from.
    let reply = ask_json(&kg, "which organization is Alice Martin in", &[]);
    assert!(
        answer_texts(&reply).is_empty() || reply["low_confidence"] == true,
        "a word matched the IRI's host: {reply}"
    );
}

#[test]
fn each_evidence_line_is_cited_once_and_numbered_as_the_json_indexes_it() {
    let kg = sample_kg();
    for question in [
        "who directed Heat",
        "what movies did Tom Hanks act in",
        "which movies were written by Quentin Tarantino",
    ] {
        let reply = ask_json(&kg, question, &[]);
        let lines = evidence_texts(&reply);
        for answer in reply["answers"].as_array().expect("answers") {
            let cited: Vec<usize> = answer["evidence"]
                .as_array()
                .expect("evidence")
                .iter()
                .map(|i| i.as_u64().expect("index") as usize)
                .collect();
            let mut texts: Vec<&str> = cited.iter().map(|&i| lines[i].as_str()).collect();
            let count = texts.len();
            texts.sort_unstable();
            texts.dedup();
            assert_eq!(
                texts.len(),
                count,
                "{question}: one line cited twice: {answer}"
            );
            // The index cited is the first line that reads so.
            for &index in &cited {
                assert_eq!(
                    lines.iter().position(|l| *l == lines[index]),
                    Some(index),
                    "{question}: {answer}"
                );
            }
        }
        // The explanation's "evidence line N" is index N - 1 of the JSON.
        let explanation = reply["explanation"].as_str().expect("explanation");
        if let Some(rest) = explanation.split("evidence line ").nth(1) {
            let number: usize = rest
                .chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .expect("a line number");
            let first = reply["answers"][0]["evidence"][0].as_u64().expect("cited") as usize;
            assert_eq!(number, first + 1, "{question}: {explanation}");
        }

        // The text: an answer's citations are distinct, each names a line printed once
        // under that number, and the explanation's line is among them.
        let text = ask_text(&kg, question, &["--evidence", "all"]);
        let answer_lines: Vec<&str> = text
            .lines()
            .take_while(|l| !l.starts_with("Evidence ("))
            .filter(|l| l.starts_with("  ") && l.contains(". "))
            .collect();
        assert!(!answer_lines.is_empty(), "{text}");
        for line in &answer_lines {
            let labels: Vec<&str> = line
                .split_whitespace()
                .filter(|w| w.starts_with('[') && w.ends_with(']'))
                .collect();
            let mut unique = labels.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), labels.len(), "{question}: {line}");
            for label in labels {
                let printed = text
                    .lines()
                    .skip_while(|l| !l.starts_with("Evidence ("))
                    .filter(|l| l.trim_start().starts_with(&format!("{label} ")))
                    .count();
                assert_eq!(printed, 1, "{question}: {label} is not one line:\n{text}");
            }
        }
        for line in text
            .lines()
            .skip_while(|l| !l.starts_with("Evidence ("))
            .skip(1)
        {
            let labels = line
                .split_whitespace()
                .take_while(|w| w.starts_with('[') && w.ends_with(']'))
                .count();
            assert!(labels <= 1, "{question}: a line numbered twice: {line}");
        }
    }
}

/// `kgmesh cache warm` of the sample questions into `cache`; its stdout.
fn warm(kg: &Path, pairs: &Path, cache: &Path) -> String {
    let mut command = kgmesh();
    command
        .args(["cache", "warm", "--no-progress", "--kg"])
        .arg(kg)
        .arg("--import")
        .arg(pairs)
        .arg("--cache-file")
        .arg(cache);
    let (code, stdout, stderr) = run_within(command, std::time::Duration::from_secs(120));
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    stdout
}

#[test]
fn the_plan_cache_says_what_it_did_and_what_a_replay_reached() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("plans.jsonl");
    let kg = sample_kg();
    warm(
        &kg,
        &repo_root().join("examples/movies/questions.tsv"),
        &cache,
    );
    let cache_arg = cache.to_str().expect("utf-8 path");

    // The question's own template was warmed: its verified plan is replayed, and the
    // reply says whose plan it was and what it reached.
    let reply = ask_json(&kg, "who directed Heat", &["--cache-file", cache_arg]);
    assert_eq!(reply["plan_replayed"], true, "{reply}");
    assert_eq!(answer_texts(&reply), ["Michael Mann"]);
    assert_eq!(reply["replay_reached"], 1, "{reply}");
    assert_eq!(reply["replay_cut"], false, "{reply}");
    let said = reply["cache_use"].as_str().expect("cache_use");
    assert_eq!(
        said,
        "plan cache: answered by replaying the verified plan of the past question \
         \"who directed Heat\"; it reached 1 node, 1 answer given",
        "{reply}"
    );
    let text = ask_text(&kg, "who directed Heat", &["--cache-file", cache_arg]);
    assert!(text.contains(said), "{text}");

    // A replay whose retrieval stops at a limit says that answers may be missing.
    let mut command = kgmesh();
    command
        .args(["ask", "what movies did Tom Hanks act in", "--json", "--kg"])
        .arg(&kg)
        .args(["--cache-file", cache_arg])
        .env("KGMESH__BUDGET__RESULT_ROWS", "2");
    let reply = run_json(command);
    assert_eq!(reply["plan_replayed"], true, "{reply}");
    assert_eq!(reply["replay_cut"], true, "{reply}");
    let said = reply["cache_use"].as_str().expect("cache_use");
    assert!(
        said.contains("stopped at a limit, so answers may be missing"),
        "{said}"
    );
    // Without the limit the same replay reaches all four films.
    let reply = ask_json(
        &kg,
        "what movies did Tom Hanks act in",
        &["--cache-file", cache_arg],
    );
    assert_eq!(reply["replay_cut"], false, "{reply}");
    assert_eq!(reply["replay_reached"], 4, "{reply}");

    // A question of another template gets past questions as examples only.
    let reply = ask_json(
        &kg,
        "who directed the movie Heat",
        &["--cache-file", cache_arg],
    );
    if reply["cache_hit"] == true && reply["plan_replayed"] == false {
        let said = reply["cache_use"].as_str().expect("cache_use");
        assert!(
            said.starts_with("plan cache: ")
                && said.contains("offered to the planner as examples (the closest: \"")
                && said.ends_with("the plan was made for this question"),
            "{said}"
        );
        assert!(reply["cache_examples"].as_u64().expect("count") >= 1);
    }
    // Without a cache nothing is said of one.
    let reply = ask_json(&kg, "who directed Heat", &[]);
    assert!(reply["cache_use"].is_null(), "{reply}");
}

#[test]
fn cache_warm_names_what_it_skipped_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pairs = dir.path().join("pairs.jsonl");
    std::fs::write(
        &pairs,
        "{\"question\": \"who directed Heat\", \"answers\": [\"Michael Mann\"]}\n\
         {\"question\": \"who directed Heat\"}\n\
         {\"question\": \"who wrote Heat\", \"answers\": [\"Nobody In This Graph\"]}\n",
    )
    .expect("write");
    let stdout = warm(&sample_kg(), &pairs, &dir.path().join("plans.jsonl"));
    assert!(stdout.contains("skipped      2"), "{stdout}");
    assert!(stdout.contains("skipped items:"), "{stdout}");
    assert!(
        stdout.contains("  line 3: \"who wrote Heat\": no gold answer in the graph"),
        "{stdout}"
    );
    assert!(stdout.contains("  line 2 ("), "{stdout}");
}

#[test]
fn the_schema_offers_a_question_of_the_graphs_own_and_it_is_answered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kg = write_people(dir.path());
    let (mut server, address) = start_ready("kgmesh serve", serve_embedded(&kg, 1));
    let (status, body) = http(address, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "{body}");
    let schema: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    // The most frequent relation (livesIn, twice), asked of one of its heads.
    let example = schema["example_question"].as_str().expect("an example");
    assert!(
        example == "Alice Martin: lives in?" || example == "Bob Stone: lives in?",
        "{example}"
    );
    assert_eq!(
        schema["relation_words"]["http://example.org/p7"], "employer",
        "{body}"
    );
    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(&serde_json::json!({ "question": example }).to_string()),
    );
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let answers = answer_texts(&reply);
    assert!(
        answers == ["Paris"] || answers == ["Lyon"],
        "the example is not answered: {body}"
    );
    server.terminate();
}

/// The KG-Linker's reply of a model that plans with one Cypher query returning the
/// film, the relationship and the director; the other roles get nonsense (and fall
/// back to their rules).
fn cypher_planner(prompt: &str) -> StubReply {
    match prompt_role(prompt) {
        Some("kg-linker") => StubReply::Text(
            "<entities>\nHeat\n</entities>\n<cypher>\nMATCH (m)-[r:directed_by]->(p) \
             WHERE m.name = 'Heat' RETURN p, r, m\n</cypher>\n"
                .to_owned(),
        ),
        _ => StubReply::Text("no idea".to_owned()),
    }
}

#[test]
fn query_rows_holding_relationships_give_their_edges_to_draw() {
    let stub = LlmStub::start(Script::computed(cypher_planner));
    let mut command = serve_embedded(&sample_kg(), 1);
    command
        .env("OPENAI_BASE_URL", stub.base_url())
        .env("OPENAI_API_KEY", "stub")
        .env("KGMESH__LLM__MAX_RETRIES", "0");
    let (mut server, address) = start_ready("kgmesh serve", command);
    let request = serde_json::json!({
        "question": "who directed Heat",
        "options": { "evidence_edges": true, "no_cache": true },
    });
    let (status, body) = http(address, "POST", "/v1/ask", Some(&request.to_string()));
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let query = reply["evidence"]
        .as_array()
        .expect("evidence")
        .iter()
        .find(|line| {
            line["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("Graph Query:")
        })
        .unwrap_or_else(|| panic!("the model's query did not run: {body}"));
    let edges = query["edges"].as_array().expect("edges");
    assert_eq!(edges.len(), 1, "{query}");
    assert_eq!(edges[0]["relation"], "directed_by");
    assert_eq!(edges[0]["head"]["name"], "Heat");
    assert_eq!(edges[0]["tail"]["name"], "Michael Mann");
    assert!(stub.requests() >= 1);
    server.terminate();
}
