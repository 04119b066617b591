//! `kgmesh ask` answers from a graph database over Bolt — a real ArcadeDB server — when
//! given `--store bolt://…` or configured with `graph.backend = "bolt"`, and a database
//! that cannot be reached is a clear error, never an answer from another graph.

#[path = "serve_support/mod.rs"]
mod support;

use kgmesh_testkit::bolt::BoltServer;
use support::*;

/// A configuration file for `server` (the password by environment variable, as in
/// production).
fn bolt_config(dir: &std::path::Path, server: &BoltServer, backend: bool) -> std::path::PathBuf {
    let mut text = format!(
        "[graph]\nbolt_user = \"{}\"\nbolt_password_env = \"KGMESH_TEST_BOLT_PASSWORD\"\n\
         bolt_database = \"{}\"\nquery_timeout_ms = 30000\n",
        server.user(),
        server.database()
    );
    if backend {
        text.push_str(&format!(
            "backend = \"bolt\"\nbolt_uri = \"{}\"\n",
            server.uri()
        ));
    }
    let path = dir.join(if backend { "bolt.toml" } else { "creds.toml" });
    std::fs::write(&path, text).expect("config written");
    path
}

#[test]
fn a_configured_or_named_bolt_database_is_the_graph_that_answers() {
    let server = BoltServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let creds = bolt_config(dir.path(), &server, false);
    let configured = bolt_config(dir.path(), &server, true);
    // A graph of its own, so that an answer from the bundled sample cannot pass.
    let kg = dir.path().join("kb.tsv");
    std::fs::write(
        &kg,
        "Night Shift\tdirected_by\tAda Quill\nNight Shift\tstarred_actors\tBo Lark\n",
    )
    .expect("kg written");
    let mut load = kgmesh();
    load.env("KGMESH_TEST_BOLT_PASSWORD", server.password())
        .args([
            "load",
            "--kg",
            kg.to_str().expect("utf-8"),
            "--into",
            &server.uri(),
        ])
        .args(["--replace", "--config", creds.to_str().expect("utf-8")]);
    let (code, _, stderr) = run(load);
    assert_eq!(code, 0, "load into Bolt: {stderr}\n{}", server.log());

    let ask = |extra: &[&str]| {
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .args(["ask", "who directed Night Shift", "--json"])
            .args(extra);
        run_json(command)
    };
    let uri = server.uri();
    for extra in [
        vec![
            "--store",
            uri.as_str(),
            "--config",
            creds.to_str().expect("utf-8"),
        ],
        vec!["--config", configured.to_str().expect("utf-8")],
    ] {
        let reply = ask(&extra);
        assert_eq!(answer_texts(&reply), ["Ada Quill"], "{extra:?}: {reply}");
        assert_eq!(reply["graph"], server.uri(), "{reply}");
    }
    // `kgmesh cypher` reads the same rows from the database as from the file.
    let query = "MATCH (f)-[r]->(x) RETURN f.name AS film, type(r) AS relation, x.name AS value \
                 ORDER BY relation";
    let rows = |extra: &[&str]| {
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .args(["cypher", query, "--json"])
            .args(extra);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{extra:?}: {stderr}");
        let rows: serde_json::Value = serde_json::from_str(&stdout).expect("JSON rows");
        rows["rows"].clone()
    };
    let from_bolt = rows(&["--config", configured.to_str().expect("utf-8")]);
    let from_file = rows(&["--kg", kg.to_str().expect("utf-8")]);
    assert_eq!(from_bolt, from_file);
    assert_eq!(from_file.as_array().map(Vec::len), Some(2), "{from_file}");
}

#[test]
fn a_bolt_database_that_cannot_be_reached_is_an_error_not_another_graph() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("bolt.toml");
    std::fs::write(
        &config,
        format!("[graph]\nbackend = \"bolt\"\nbolt_uri = \"bolt://127.0.0.1:{port}\"\n"),
    )
    .expect("config written");
    for extra in [
        vec![
            "--config".to_owned(),
            config.to_str().expect("utf-8").to_owned(),
        ],
        vec!["--store".to_owned(), format!("bolt://127.0.0.1:{port}")],
    ] {
        let mut command = kgmesh();
        command.args(["ask", "who directed Heat"]).args(&extra);
        let started = std::time::Instant::now();
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 1, "{extra:?}: {stdout}{stderr}");
        // A refused connection fails at once, not after the query timeout.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(4),
            "{extra:?}: took {:?}",
            started.elapsed()
        );
        assert!(
            stderr.contains(&format!("127.0.0.1:{port}")) && stderr.contains("graph database"),
            "{extra:?}: {stderr}"
        );
        assert!(
            !stdout.contains("Michael Mann"),
            "answered from the sample: {stdout}"
        );
    }
    // Not a Bolt address at all.
    let mut command = kgmesh();
    command.args(["ask", "who directed Heat", "--store", "http://127.0.0.1:1"]);
    let (code, _, stderr) = run(command);
    assert_eq!(code, 1);
    assert!(stderr.contains("bolt://host:port"), "{stderr}");
}
