//! The chaos suite, short form (run in CI): a real nats-server, `kgmesh serve --nats`
//! and two `kgmesh agent` replicas of each role on the sample KG. The same questions
//! are asked without faults, with one replica of every role frozen (SIGSTOP), and with
//! one replica of every role killed (SIGKILL). Every answer must be the fault-free one
//! or be flagged (`degraded` / `partial`), and no question may take a second: a frozen
//! or dead replica costs a hedge delay (`crate::hedge` of the coordinator), not the
//! call timeout.

mod serve_support;

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use kgmesh_testkit::nats::NatsServer;
use serve_support::*;

const ROLES: [&str; 6] = [
    "kg-linker",
    "entity-linker",
    "path-follower",
    "agentic-traverser",
    "judge",
    "summarizer",
];

const QUESTIONS: [&str; 6] = [
    "who directed Heat",
    "what films did Michael Mann direct",
    "who starred in the films directed by Michael Mann",
    "what genre is Collateral",
    "who wrote The Insider",
    "when was Heat released",
];

/// The bound on one question under a single fault (the target).
const MAX_LATENCY: Duration = Duration::from_secs(1);

/// Lexical matching: this suite is about faults, and it starts a dozen processes.
fn lexical(mut command: std::process::Command) -> std::process::Command {
    command.env("KGMESH__EMBEDDER__KIND", "none");
    command
}

struct Asked {
    answers: Vec<String>,
    flagged: bool,
    took: Duration,
}

fn ask(address: SocketAddr, question: &str) -> Asked {
    let body = serde_json::json!({ "question": question, "options": { "no_cache": true } });
    let started = Instant::now();
    let (status, text) = http(address, "POST", "/v1/ask", Some(&body.to_string()));
    let took = started.elapsed();
    assert_eq!(status, 200, "{question}: {text}");
    let reply: serde_json::Value = serde_json::from_str(&text).expect("JSON reply");
    let flagged = reply["partial"] == true
        || reply["degraded"]
            .as_array()
            .is_some_and(|degraded| !degraded.is_empty());
    Asked {
        answers: answer_texts(&reply),
        flagged,
        took,
    }
}

/// Waits until `/v1/agents` lists two replicas of every role.
fn wait_for_replicas(address: SocketAddr, processes: &mut [Process]) {
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        let (_, body) = http(address, "GET", "/v1/agents", None);
        let agents: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let twice = ROLES.iter().all(|role| {
            agents["roles"].as_array().is_some_and(|roles| {
                roles
                    .iter()
                    .any(|r| r["role"] == *role && r["replicas"].as_u64() == Some(2))
            })
        });
        if twice {
            return;
        }
        for process in processes.iter_mut() {
            assert!(process.is_running(), "{} exited", process.name);
        }
        assert!(
            Instant::now() < deadline,
            "two replicas of every role never appeared: {body}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Asks every question; checks each against the fault-free answers. Returns the
/// slowest question's time and how many answers were flagged.
fn ask_all_and_compare(
    fault: &str,
    address: SocketAddr,
    reference: &[Vec<String>],
) -> (Duration, usize) {
    let mut slowest = Duration::ZERO;
    let mut flagged = 0;
    for (question, expected) in QUESTIONS.iter().zip(reference) {
        let asked = ask(address, question);
        slowest = slowest.max(asked.took);
        flagged += usize::from(asked.flagged);
        assert!(
            &asked.answers == expected || asked.flagged,
            "{fault}: {question:?} changed from {expected:?} to {:?} without a flag",
            asked.answers
        );
        assert!(
            asked.took < MAX_LATENCY,
            "{fault}: {question:?} took {:?}",
            asked.took
        );
    }
    eprintln!(
        "{fault}: {} questions, slowest {slowest:?}, {flagged} flagged",
        QUESTIONS.len()
    );
    (slowest, flagged)
}

#[test]
fn frozen_and_killed_replicas_cost_no_wrong_answer_and_no_stall() {
    let nats = NatsServer::start();
    let twice: Vec<&str> = ROLES.iter().chain(ROLES.iter()).copied().collect();
    // Replica i and i + ROLES.len() serve the same role.
    let mut agents = spawn_agents(&nats.url(), &twice, &sample_kg(), lexical);
    let (_server, address) = spawn_serve_nats(&nats.url(), lexical);
    wait_for_roles(address, &ROLES, &mut agents);
    wait_for_replicas(address, &mut agents);

    // Fault-free: the reference answers, and each role's latencies for the hedges.
    let reference: Vec<Vec<String>> = QUESTIONS
        .iter()
        .map(|question| ask(address, question))
        .map(|asked| {
            assert!(!asked.flagged, "flagged without a fault");
            asked.answers
        })
        .collect();
    assert!(
        reference
            .iter()
            .filter(|answers| !answers.is_empty())
            .count()
            >= 4,
        "the cluster answers too little to compare: {reference:?}"
    );
    ask_all_and_compare("no fault", address, &reference);

    // One replica of every role frozen: it holds the requests it gets.
    for agent in &agents[..ROLES.len()] {
        agent.signal("STOP");
    }
    let (_, flagged) = ask_all_and_compare("one replica of each role frozen", address, &reference);
    assert_eq!(
        flagged, 0,
        "a frozen replica with a live twin degrades nothing"
    );
    for agent in &agents[..ROLES.len()] {
        agent.signal("CONT");
    }

    // One replica of every role killed.
    for agent in &mut agents[..ROLES.len()] {
        agent.signal("KILL");
    }
    ask_all_and_compare("one replica of each role killed", address, &reference);
}
