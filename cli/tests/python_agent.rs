//! An agent from outside the repository: the Python retriever of
//! `examples/python-retriever` (nats-py, JSON on the wire) joins `kgmesh serve --nats`
//! and the built-in roles on a real nats-server, and its evidence answers a question
//! the graph cannot; without `bus.allowed_roles` naming it, it is never called.
//!
//! Needs python3 with nats-py (`scripts/setup.d/60-python-agent.sh` installs it, as
//! `scripts/test` does); `KGMESH_PYTHON` names another interpreter.

mod serve_support;

use std::{net::SocketAddr, process::Command};

use kgmesh_testkit::nats::NatsServer;
use serve_support::*;

const QUESTION: &str = "what was the box office of Heat";

fn python() -> String {
    let python = std::env::var("KGMESH_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let found = Command::new(&python)
        .args(["-c", "import nats.micro"])
        .status()
        .is_ok_and(|status| status.success());
    assert!(
        found,
        "{python} cannot import nats-py: run scripts/setup.d/60-python-agent.sh \
         (python3 -m pip install nats-py==2.9.0) or set KGMESH_PYTHON"
    );
    python
}

fn ask(address: SocketAddr) -> serde_json::Value {
    let body = serde_json::json!({ "question": QUESTION, "options": { "no_cache": true } });
    let (status, text) = http(address, "POST", "/v1/ask", Some(&body.to_string()));
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).expect("JSON reply")
}

/// The cluster with the Python retriever on the bus, the coordinator allowing `allowed`;
/// the reply to [`QUESTION`] and how `/v1/agents` lists the Python agent.
fn run_cluster(allowed: &str) -> (serde_json::Value, Option<serde_json::Value>) {
    let nats = NatsServer::start();
    let example = repo_root().join("examples/python-retriever");
    let mut roles = vec![
        "kg-linker",
        "entity-linker",
        "path-follower",
        "judge",
        "summarizer",
    ];
    let mut processes = spawn_agents(&nats.url(), &roles, &sample_kg(), |command| command);
    let mut agent = Command::new(python());
    agent
        .arg(example.join("csv_retriever.py"))
        .args(["--nats", &nats.url(), "--csv"])
        .arg(example.join("facts.csv"));
    processes.push(Process::spawn("csv_retriever.py", agent));
    let (_server, address) = spawn_serve_nats(&nats.url(), |mut command| {
        command.env("KGMESH__BUS__ALLOWED_ROLES", allowed);
        command
    });

    // The Python agent is waited for only when it is allowed (a refused one is never
    // listed); then a refused agent gets time to announce itself too, so that refusing
    // it is what keeps it out, not its start-up time.
    if allowed != "[]" {
        roles.push("csv-retriever");
    }
    wait_for_roles(address, &roles, &mut processes);
    std::thread::sleep(std::time::Duration::from_millis(1_500));
    let reply = ask(address);
    let (_, body) = http(address, "GET", "/v1/agents", None);
    let agents: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let listed = agents["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .find(|r| r["role"] == "csv-retriever")
        .cloned();
    (reply, listed)
}

#[test]
fn a_python_retriever_speaking_json_answers_what_the_graph_cannot() {
    let (reply, listed) = run_cluster(r#"["csv-retriever"]"#);
    assert_eq!(answer_texts(&reply), ["187 million dollars"], "{reply}");
    let cited = reply["answers"][0]["evidence"][0]
        .as_u64()
        .expect("a cited line") as usize;
    assert_eq!(
        reply["evidence"][cited]["source"], "csv-retriever",
        "{reply}"
    );
    let listed = listed.expect("the Python agent is listed");
    assert_eq!(listed["codec"], "json", "{listed}");
    assert_eq!(listed["kind"], "retriever", "{listed}");
}

#[test]
fn an_unlisted_python_retriever_is_never_called() {
    let (reply, listed) = run_cluster("[]");
    assert!(listed.is_none(), "a refused role is not listed: {listed:?}");
    assert!(
        reply["evidence"]
            .as_array()
            .expect("evidence")
            .iter()
            .all(|line| line["source"] != "csv-retriever"),
        "{reply}"
    );
    assert_ne!(
        answer_texts(&reply).first().map(String::as_str),
        Some("187 million dollars")
    );
}
