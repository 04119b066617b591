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

/// `kgmesh load --kg KG --into` the server, replacing what it held.
fn load_into(server: &BoltServer, kg: &std::path::Path, creds: &std::path::Path) {
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
    load_into(&server, &kg, &creds);

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

/// `kgmesh index --text … --into bolt://…`: the skeleton joins the curated graph's nodes
/// by name, writes only what changed, and a replaced file's facts leave the database.
#[test]
fn a_text_skeleton_in_a_bolt_database_follows_the_index_and_joins_the_curated_graph() {
    let server = BoltServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let creds = bolt_config(dir.path(), &server, false);
    let configured = bolt_config(dir.path(), &server, true);
    let kg = dir.path().join("kb.tsv");
    std::fs::write(&kg, "Night Shift\tdirected_by\tAda Quill\n").expect("kg written");
    load_into(&server, &kg, &creds);

    // Known triples stand for a model's facts: each is kept while a chunk writes both ends.
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("docs folder");
    std::fs::write(
        docs.join("a.md"),
        "Night Shift premiered in 1990. Ada Quill directed it, and Ivo Brandt scored it.\n",
    )
    .expect("a.md");
    std::fs::write(
        docs.join("b.md"),
        "Salt Road was shot near Bergen in 2001.\n",
    )
    .expect("b.md");
    let facts = dir.path().join("facts.tsv");
    std::fs::write(
        &facts,
        "Night Shift\tscored_by\tIvo Brandt\nSalt Road\tshot_in\tBergen\n\
         Night Shift\tdirected_by\tAda Quill\n",
    )
    .expect("facts written");
    let index_dir = dir.path().join("notes-index");
    let index = || {
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .env("KGMESH__EMBEDDER__KIND", "none")
            .args(["index", "--text", docs.to_str().expect("utf-8")])
            .args(["--into", &server.uri(), "--index-dir"])
            .arg(&index_dir)
            .args(["--skeleton-from", facts.to_str().expect("utf-8")])
            .args(["--config", creds.to_str().expect("utf-8")]);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{stdout}\n{stderr}\n{}", server.log());
        stdout
            .lines()
            .find(|l| l.starts_with("graph "))
            .unwrap_or_else(|| panic!("no graph line: {stdout}"))
            .to_owned()
    };
    let rows = |query: &str| {
        let mut command = kgmesh();
        command
            .env("KGMESH_TEST_BOLT_PASSWORD", server.password())
            .args(["cypher", query, "--json"])
            .args(["--config", configured.to_str().expect("utf-8")]);
        let (code, stdout, stderr) = run(command);
        assert_eq!(code, 0, "{query}: {stderr}");
        let rows: serde_json::Value = serde_json::from_str(&stdout).expect("JSON rows");
        rows["rows"].clone()
    };
    let facts_query = "MATCH (a)-[r]->(b) RETURN a.name AS head, type(r) AS relation, \
                       b.name AS tail, r.kgmesh_skeleton AS tag ORDER BY relation, head";
    let names_query = "MATCH (n) RETURN n.name AS name ORDER BY name";

    let first = index();
    assert!(
        first.contains("tagged kgmesh_skeleton = \"notes-index\": 2 facts created, 0 removed, 0 kept, 1 held by the graph already; 3 nodes created, 0 removed"),
        "{first}"
    );
    assert_eq!(
        rows(facts_query),
        serde_json::json!([
            ["Night Shift", "directed_by", "Ada Quill", null],
            ["Night Shift", "scored_by", "Ivo Brandt", "notes-index"],
            ["Salt Road", "shot_in", "Bergen", "notes-index"]
        ])
    );
    // One node per name: the skeleton reuses the curated graph's "Night Shift".
    let names = serde_json::json!([
        ["Ada Quill"],
        ["Bergen"],
        ["Ivo Brandt"],
        ["Night Shift"],
        ["Salt Road"]
    ]);
    assert_eq!(rows(names_query), names);

    // Again, unchanged: nothing is written.
    let again = index();
    assert!(
        again.contains(": 0 facts created, 0 removed, 2 kept"),
        "{again}"
    );
    assert_eq!(rows(names_query), names);

    // b.md no longer writes Bergen: its fact and the nodes only it used leave.
    std::fs::write(docs.join("b.md"), "Salt Road was shot in 2001.\n").expect("b.md");
    let replaced = index();
    assert!(
        replaced.contains(": 0 facts created, 1 removed, 1 kept, 1 held by the graph already; 0 nodes created, 2 removed"),
        "{replaced}"
    );
    assert_eq!(
        rows(facts_query),
        serde_json::json!([
            ["Night Shift", "directed_by", "Ada Quill", null],
            ["Night Shift", "scored_by", "Ivo Brandt", "notes-index"]
        ])
    );
    assert_eq!(
        rows(names_query),
        serde_json::json!([["Ada Quill"], ["Ivo Brandt"], ["Night Shift"]])
    );
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
