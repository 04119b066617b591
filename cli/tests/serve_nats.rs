//! Distributed end to end: a real nats-server, `kgmesh serve --nats` and one
//! `kgmesh agent --role R` process per role, answering MetaQA dev questions over HTTP
//! with the same answers as the embedded mode (every role in one process).

mod serve_support;

use std::{collections::BTreeSet, net::SocketAddr};

use kgmesh_testkit::nats::NatsServer;
use serve_support::*;

/// Roles whose state would make two runs differ are left out (the plan cache).
const LEFT_OUT: [&str; 2] = ["echo", "cache-manager"];

fn ask(address: SocketAddr, question: &str) -> serde_json::Value {
    let body = serde_json::json!({ "question": question, "options": { "no_cache": true } });
    let (status, text) = http(address, "POST", "/v1/ask", Some(&body.to_string()));
    assert_eq!(status, 200, "{question}: {text}");
    serde_json::from_str(&text).expect("JSON reply")
}

fn role_names(address: SocketAddr) -> BTreeSet<String> {
    let (status, body) = http(address, "GET", "/v1/agents", None);
    assert_eq!(status, 200, "{body}");
    let agents: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    agents["roles"]
        .as_array()
        .expect("roles")
        .iter()
        .map(|r| r["role"].as_str().expect("role").to_owned())
        .collect()
}

#[test]
fn nats_deployment_answers_like_the_embedded_mode() {
    let kb = data_dir().join("metaqa/kb.tsv");
    let mut questions = Vec::new();
    for (hops, count) in [("1-hop", 4), ("2-hop", 3), ("3-hop", 3)] {
        questions.extend(read_questions(
            &data_dir().join(format!("metaqa/{hops}/dev.txt")),
            count,
        ));
    }

    // Embedded: the reference answers, and the roles this build runs.
    let (embedded, embedded_address) =
        start_ready("kgmesh serve --embedded", serve_embedded(&kb, 1));
    let roles: Vec<String> = role_names(embedded_address)
        .into_iter()
        .filter(|role| !LEFT_OUT.contains(&role.as_str()))
        .collect();
    let expected: Vec<Vec<String>> = questions
        .iter()
        .map(|(question, _)| answer_texts(&ask(embedded_address, question)))
        .collect();
    drop(embedded);

    // Distributed: one process per role on a real NATS.
    let nats = NatsServer::start();
    let mut agents = Vec::new();
    for role in &roles {
        let mut command = kgmesh();
        command.args(["agent", "--role", role, "--nats", &nats.url(), "--kg"]);
        command.arg(&kb);
        agents.push(Process::spawn(
            &format!("kgmesh agent --role {role}"),
            command,
        ));
    }
    let mut command = kgmesh();
    command.args([
        "serve",
        "--nats",
        &nats.url(),
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
    ]);
    let mut server = Process::spawn("kgmesh serve --nats", command);
    let address = server.listening_address();

    // Ready once every role has announced itself.
    let deadline = std::time::Instant::now() + STEP_TIMEOUT;
    loop {
        let (status, _) = http(address, "GET", "/readyz", None);
        let present = role_names(address);
        if status == 200 && roles.iter().all(|r| present.contains(r)) {
            break;
        }
        for agent in &mut agents {
            assert!(agent.is_running(), "{} exited", agent.name);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "roles never all appeared: want {roles:?}, have {present:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }

    let mut correct = 0;
    for ((question, gold), expected) in questions.iter().zip(&expected) {
        let reply = ask(address, question);
        let got = answer_texts(&reply);
        assert_eq!(
            &got, expected,
            "{question}: NATS and embedded answers differ"
        );
        assert!(reply["cost"]["bus_messages"].as_u64().expect("cost") >= 3);
        if got.first().is_some_and(|top| gold.contains(top)) {
            correct += 1;
        }
    }
    // The distributed mode is not only consistent but useful.
    assert!(
        correct * 2 >= questions.len(),
        "only {correct} of {} questions answered correctly",
        questions.len()
    );
}

/// `command` logging in to the test's nats-server with `login` over TLS, the way a
/// deployment's configuration would say it: the variable holding the login and the
/// certificate authority of the server's certificate.
fn with_login(mut command: std::process::Command, login: &str) -> std::process::Command {
    command
        .env(
            "KGMESH__BUS__NATS_CREDENTIALS_ENV",
            "KGMESH_TEST_NATS_LOGIN",
        )
        .env("KGMESH_TEST_NATS_LOGIN", login)
        .env(
            "KGMESH__BUS__NATS_TLS_CA_FILE",
            kgmesh_testkit::nats::tls_fixture("ca.pem"),
        );
    command
}

#[test]
fn a_cluster_behind_nats_passwords_and_tls_answers_and_a_wrong_password_fails_fast() {
    let cert = kgmesh_testkit::nats::tls_fixture("server.pem");
    let key = kgmesh_testkit::nats::tls_fixture("server-key.pem");
    let nats = NatsServer::start_with(&[
        "--user",
        "kgmesh",
        "--pass",
        "cluster-s3cret",
        "--tls",
        "--tlscert",
        cert.to_str().unwrap(),
        "--tlskey",
        key.to_str().unwrap(),
    ]);
    let kg = sample_kg();

    // A wrong password ends the agent at once, saying the login was refused.
    let started = std::time::Instant::now();
    let mut command = with_login(kgmesh(), "kgmesh:not-the-password");
    command.args(["agent", "--role", "judge", "--nats", &nats.url()]);
    let (status, _, stderr) = run(command);
    assert_ne!(status, 0, "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    assert!(stderr.contains("refused the login"), "{stderr}");
    assert!(!stderr.contains("not-the-password"), "{stderr}");

    let roles = [
        "kg-linker",
        "entity-linker",
        "path-follower",
        "judge",
        "summarizer",
    ];
    let mut agents = Vec::new();
    for role in roles {
        let mut command = with_login(kgmesh(), "kgmesh:cluster-s3cret");
        command.args(["agent", "--role", role, "--nats", &nats.url(), "--kg"]);
        command.arg(&kg);
        agents.push(Process::spawn(
            &format!("kgmesh agent --role {role}"),
            command,
        ));
    }
    let mut command = with_login(kgmesh(), "kgmesh:cluster-s3cret");
    command.args([
        "serve",
        "--nats",
        &nats.url(),
        "--listen",
        "127.0.0.1:0",
        "--workers",
        "1",
    ]);
    let mut server = Process::spawn("kgmesh serve --nats", command);
    let address = server.listening_address();
    let deadline = std::time::Instant::now() + STEP_TIMEOUT;
    loop {
        let present = role_names(address);
        if roles.iter().all(|r| present.contains(*r)) {
            break;
        }
        for agent in &mut agents {
            assert!(agent.is_running(), "{} exited", agent.name);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "roles never all appeared: have {present:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let reply = ask(address, "who directed Heat");
    assert_eq!(answer_texts(&reply), ["Michael Mann"], "{reply}");
}
