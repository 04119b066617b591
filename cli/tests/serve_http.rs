//! `kgmesh serve --embedded`: the HTTP API, its limits and its JSON errors, on a random
//! port.

mod serve_support;

use serve_support::*;

fn start_server(extra_env: &[(&str, &str)]) -> (Process, std::net::SocketAddr) {
    let mut command = serve_embedded(&sample_kg(), 2);
    for (key, value) in extra_env {
        command.env(key, value);
    }
    let mut server = Process::spawn("kgmesh serve", command);
    let address = server.listening_address();
    (server, address)
}

#[test]
fn the_api_answers_and_reports_its_roles() {
    let (_server, address) = start_server(&[]);
    let (status, body) = http(address, "GET", "/healthz", None);
    assert_eq!(status, 200, "{body}");
    let ready: serde_json::Value = serde_json::from_str(&wait_for_ok(address, "/readyz")).unwrap();
    assert_eq!(ready["ready"], true);

    let (status, body) = http(address, "GET", "/v1/agents", None);
    assert_eq!(status, 200, "{body}");
    let agents: serde_json::Value = serde_json::from_str(&body).unwrap();
    let roles: Vec<&str> = agents["roles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["role"].as_str().unwrap())
        .collect();
    for role in ["kg-linker", "judge", "summarizer"] {
        assert!(roles.contains(&role), "{role} missing from {roles:?}");
    }

    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(r#"{"question": "who directed Heat", "options": {"max_rounds": 2}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(reply["answers"][0]["text"], "Michael Mann", "{body}");
    assert_eq!(reply["partial"], false);
    // The reply names the graph that answered.
    assert!(
        reply["graph"]
            .as_str()
            .is_some_and(|g| g.ends_with("kg.tsv")),
        "{body}"
    );
    assert_eq!(reply["trace_id"].as_str().map(str::len), Some(32));
    assert!(reply["cost"]["bus_messages"].as_u64().unwrap() >= 3);

    // The roles' request counts are current: the question above was counted.
    let (status, body) = http(address, "GET", "/v1/agents", None);
    assert_eq!(status, 200, "{body}");
    let agents: serde_json::Value = serde_json::from_str(&body).unwrap();
    let requests = |role: &str| {
        agents["roles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["role"] == role)
            .and_then(|r| r["requests"].as_u64())
            .unwrap_or_else(|| panic!("{role}: {body}"))
    };
    for role in ["kg-linker", "summarizer"] {
        assert!(requests(role) >= 1, "{role} counted no request: {body}");
    }
}

#[test]
fn bad_requests_get_json_errors() {
    let (_server, address) = start_server(&[
        ("KGMESH__HTTP__MAX_BODY_BYTES", "2048"),
        ("KGMESH__HTTP__MAX_QUESTION_CHARS", "100"),
    ]);
    let kind = |body: &str| -> String {
        let value: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
        value["error"]["kind"]
            .as_str()
            .expect("error.kind")
            .to_owned()
    };

    let (status, body) = http(address, "POST", "/v1/ask", Some("{not json"));
    assert_eq!(status, 400, "{body}");
    assert_eq!(kind(&body), "invalid_json");

    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(r#"{"question": "x", "colour": 1}"#),
    );
    assert_eq!(status, 400, "unknown fields are refused: {body}");

    let (status, body) = http(address, "POST", "/v1/ask", Some(r#"{"question": "   "}"#));
    assert_eq!(status, 400, "{body}");
    assert_eq!(kind(&body), "invalid_question");

    let long = format!(r#"{{"question": "{}"}}"#, "a".repeat(500));
    let (status, body) = http(address, "POST", "/v1/ask", Some(&long));
    assert_eq!(status, 400, "{body}");
    assert_eq!(kind(&body), "invalid_question");

    let huge = format!(r#"{{"question": "{}"}}"#, "a".repeat(10_000));
    let (status, body) = http(address, "POST", "/v1/ask", Some(&huge));
    assert_eq!(status, 413, "{body}");
    assert_eq!(kind(&body), "body_too_large");

    let (status, body) = http_raw(address, "POST", "/v1/ask", "text/plain", b"who", true);
    assert_eq!(status, 415, "{body}");
    assert!(
        body.contains("application/json"),
        "say what is expected: {body}"
    );

    // A known path asked with the wrong method is a 405 naming the right one.
    let (status, body) = http(address, "GET", "/v1/ask", None);
    assert_eq!(status, 405, "{body}");
    assert_eq!(kind(&body), "method_not_allowed");
    assert!(body.contains("POST"), "{body}");

    let (status, body) = http(address, "GET", "/v2/nothing", None);
    assert_eq!(status, 404, "{body}");
    assert_eq!(kind(&body), "not_found");
}

#[test]
fn cypher_over_http_returns_rows_and_explains_refusals() {
    let tokens = admin_tokens();
    let (_server, address) = start_server(&[
        ("KGMESH__HTTP__TOKENS_ENV", TOKENS_VAR),
        (TOKENS_VAR, tokens.as_str()),
    ]);
    wait_for_ok(address, "/readyz");
    let (status, body) = http_as(
        address,
        ADMIN_TOKEN,
        "POST",
        "/v1/cypher",
        Some(
            r#"{"query": "MATCH (f)-[:directed_by]->(d {name: $who}) RETURN f.name AS film ORDER BY film",
                "params": {"who": "Michael Mann"}}"#,
        ),
    );
    assert_eq!(status, 200, "{body}");
    let rows: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(rows["columns"][0], "film", "{body}");
    let films: Vec<&str> = rows["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row[0].as_str().unwrap_or(""))
        .collect();
    assert!(
        films.contains(&"Heat") && films.contains(&"Collateral"),
        "{body}"
    );

    let error = |body: &str| -> (String, String) {
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        (
            value["error"]["kind"].as_str().unwrap_or("").to_owned(),
            value["error"]["message"].as_str().unwrap_or("").to_owned(),
        )
    };
    let (status, body) = http_as(
        address,
        ADMIN_TOKEN,
        "POST",
        "/v1/cypher",
        Some(r#"{"query": "MATCH (n) DETACH DELETE n"}"#),
    );
    assert_eq!(status, 400, "{body}");
    let (kind, message) = error(&body);
    assert_eq!(kind, "invalid_query");
    assert!(
        message.contains("read-only") && message.contains("hint:"),
        "{message}"
    );
    // Nothing was deleted.
    let (status, body) = http_as(
        address,
        ADMIN_TOKEN,
        "POST",
        "/v1/cypher",
        Some(r#"{"query": "MATCH (n) RETURN count(n) AS nodes"}"#),
    );
    assert_eq!(status, 200, "{body}");
    let count: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert!(count["rows"][0][0].as_u64().unwrap_or(0) > 10, "{body}");

    for bad in [
        r#"{"query": "   "}"#,
        r#"{"query": "MATCH (n) RETURN n", "max_rows": 0}"#,
        r#"{"query": "MATCH (n) RETURN n", "colour": 1}"#,
    ] {
        let (status, body) = http_as(address, ADMIN_TOKEN, "POST", "/v1/cypher", Some(bad));
        assert_eq!(status, 400, "{bad}: {body}");
    }
}
