//! Distributed end to end: a real nats-server, `kgmesh serve --nats` and one
//! `kgmesh agent --role R` process per role, answering MetaQA dev questions over HTTP
//! with the same answers as the embedded mode (every role in one process).

mod serve_support;

use std::net::SocketAddr;

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

#[test]
fn nats_deployment_answers_like_the_embedded_mode() {
    let kb = metaqa_slice().join("kb.tsv");
    let mut questions = Vec::new();
    for (hops, count) in [("1-hop", 4), ("2-hop", 3), ("3-hop", 3)] {
        questions.extend(read_questions(
            &metaqa_slice().join(format!("{hops}/dev.txt")),
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
    let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
    let mut agents = spawn_agents(&nats.url(), &roles, &kb, |command| command);
    let (_server, address) = spawn_serve_nats(&nats.url(), |command| command);
    // Ready once every role has announced itself.
    wait_for_roles(address, &roles, &mut agents);

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
    // The web console and the schema it shows work behind NATS too: the query executor
    // agent describes the graph it holds.
    let (status, page) = http(address, "GET", "/", None);
    assert_eq!(status, 200);
    assert!(page.contains("/console/console.js"), "{page}");
    let directed_by = std::fs::read_to_string(&kb)
        .expect("kb.tsv")
        .lines()
        .filter(|line| line.split('\t').nth(1) == Some("directed_by"))
        .count() as u64;
    let (status, body) = http(address, "GET", "/v1/schema", None);
    assert_eq!(status, 200, "{body}");
    let schema: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert!(
        // The MetaQA slice: 8,681 lines of kb.tsv, one edge each.
        schema["edge_count"].as_u64() == Some(8_681),
        "{body:.300}"
    );
    assert!(
        schema["relations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "directed_by" && r["count"].as_u64() == Some(directed_by)),
        "{body:.300}"
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
    let login = |command| with_login(command, "kgmesh:cluster-s3cret");
    let mut agents = spawn_agents(&nats.url(), &roles, &kg, login);
    let (_server, address) = spawn_serve_nats(&nats.url(), login);
    wait_for_roles(address, &roles, &mut agents);
    let reply = ask(address, "who directed Heat");
    assert_eq!(answer_texts(&reply), ["Michael Mann"], "{reply}");
}
