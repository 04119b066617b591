//! `POST /v1/feedback` through `kgmesh serve --embedded` with a plan cache file: feedback
//! by the question id of a reply confirms the plan that answered; one caller's
//! corrections and "wrong" verdicts against it are held (the attack of three identical
//! corrections leaves the plan answering); a correction teaches a template with no
//! plan; malformed bodies are refused and change nothing.

mod serve_support;

use std::{net::SocketAddr, path::Path};

use serve_support::*;

/// A token with the `feedback` scope and no `admin`: one principal, `curator`, whose
/// corrections of a cached plan are held until others confirm them.
const CURATOR_TOKEN: &str = "test-curator-token-3b9e51d2c7a04f86";

fn start_server(cache_file: &Path) -> (Process, SocketAddr) {
    let mut command = serve_embedded(&sample_kg(), 1);
    command.env("KGMESH__CACHE__PATH", cache_file);
    let tokens = format!(
        "{}[[tokens]]\nname = \"curator\"\ntoken = \"{CURATOR_TOKEN}\"\nscopes = [\"ask\", \"feedback\"]\n",
        admin_tokens()
    );
    let command = with_tokens(command, &tokens);
    start_ready("kgmesh serve", command)
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn ask(address: SocketAddr, question: &str) -> serde_json::Value {
    let body = serde_json::json!({ "question": question }).to_string();
    let (status, reply) = http_as(address, ADMIN_TOKEN, "POST", "/v1/ask", Some(&body));
    assert_eq!(status, 200, "{reply}");
    json(&reply)
}

/// Feedback as `curator`, a principal without the `admin` scope.
fn feedback(address: SocketAddr, body: serde_json::Value) -> (u16, serde_json::Value) {
    let (status, reply) = http_as(
        address,
        CURATOR_TOKEN,
        "POST",
        "/v1/feedback",
        Some(&body.to_string()),
    );
    (status, json(&reply))
}

#[test]
fn feedback_confirms_holds_one_callers_corrections_and_teaches() {
    let dir = tempfile::tempdir().unwrap();
    let cache_file = dir.path().join("plans.jsonl");
    let (mut server, address) = start_server(&cache_file);
    let cache = || std::fs::read_to_string(&cache_file).unwrap_or_default();

    let heat = ask(address, "who directed Heat");
    assert_eq!(heat["answers"][0]["text"], "Michael Mann", "{heat}");
    let heat_id = heat["question_id"]
        .as_str()
        .expect("question_id")
        .to_owned();
    let before = cache();
    assert_eq!(
        before.lines().count(),
        1,
        "the answer's plan is cached: {before}"
    );

    // Malformed bodies: 400 with a clear message, and the cache untouched.
    let malformed = [
        (
            "{not json".to_owned(),
            "invalid_json",
            "",
        ),
        (
            serde_json::json!({"question_id": heat_id, "correct": "yes"}).to_string(),
            "invalid_json",
            "",
        ),
        (
            serde_json::json!({"question_id": heat_id, "correct": true, "colour": 1}).to_string(),
            "invalid_json",
            "colour",
        ),
        (
            serde_json::json!({"question_id": heat_id}).to_string(),
            "invalid_feedback",
            "correct",
        ),
        (
            serde_json::json!({"correct": true}).to_string(),
            "invalid_feedback",
            "question_id",
        ),
        (
            serde_json::json!({"question_id": heat_id, "question": "who directed Heat", "correct": true})
                .to_string(),
            "invalid_feedback",
            "not both",
        ),
        (
            serde_json::json!({"question_id": heat_id, "correct": true, "answers": ["Michael Mann"]})
                .to_string(),
            "invalid_feedback",
            "not both",
        ),
        (
            serde_json::json!({"question_id": heat_id, "answers": [" "]}).to_string(),
            "invalid_feedback",
            "answers",
        ),
    ];
    for (body, kind, mentions) in malformed {
        let (status, reply) = http_as(address, ADMIN_TOKEN, "POST", "/v1/feedback", Some(&body));
        assert_eq!(status, 400, "{body} -> {reply}");
        let reply = json(&reply);
        assert_eq!(reply["error"]["kind"], kind, "{body} -> {reply}");
        let message = reply["error"]["message"].as_str().unwrap();
        assert!(message.contains(mentions), "{body} -> {message}");
    }
    let (status, reply) = feedback(
        address,
        serde_json::json!({"question_id": "00000000-0000-0000-0000-000000000000", "correct": false}),
    );
    assert_eq!(status, 404, "{reply}");
    assert_eq!(reply["error"]["kind"], "unknown_question");
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`question`"),
        "{reply}"
    );
    assert_eq!(cache(), before, "refused feedback changed the cache");

    // Right: the plan (judged by rule only) is confirmed and from now on replayed.
    let (status, reply) = feedback(
        address,
        serde_json::json!({"question_id": heat_id, "correct": true}),
    );
    assert_eq!(status, 200, "{reply}");
    assert_eq!(reply["outcome"], "confirmed", "{reply}");
    assert_eq!(reply["question"], "who directed Heat");
    assert_eq!(reply["question_id"], heat_id.as_str());
    let key = reply["key"].as_str().expect("key").to_owned();
    assert_eq!(cache().lines().count(), 2, "the confirmation is written");
    let collateral = ask(address, "who directed Collateral");
    assert_eq!(collateral["cache_hit"], true, "{collateral}");
    assert_eq!(collateral["answers"][0]["text"], "Michael Mann");

    // The attack: "who directed Heat" corrected to an actor, three times by the same
    // caller (a token with the feedback scope). The actor's plan explains no word of "who directed": held
    // for an admin, and every user still gets the director.
    for _ in 0..3 {
        let (status, reply) = feedback(
            address,
            serde_json::json!({"question": "who directed Heat", "answers": ["Al Pacino"]}),
        );
        assert_eq!(
            (status, reply["outcome"].as_str()),
            (200, Some("pending")),
            "{reply}"
        );
        assert_eq!(reply["confirmations"]["have"], 1, "{reply}");
        assert_eq!(reply["confirmations"]["need"], serde_json::Value::Null);
        let flagged = reply["confirmations"]["flagged"]
            .as_str()
            .unwrap_or_default();
        assert!(flagged.contains("starred_actors"), "{reply}");
    }
    let collateral = ask(address, "who directed Collateral");
    assert_eq!(collateral["cache_hit"], true, "{collateral}");
    assert_eq!(
        collateral["answers"][0]["text"], "Michael Mann",
        "{collateral}"
    );
    assert_eq!(collateral["answers"].as_array().map(Vec::len), Some(1));

    // Wrong, twice from the same caller: a plan with a verified success is not removed
    // by one principal; the verdict is held, counted once.
    for question in ["who directed Collateral", "who directed The Insider"] {
        let (status, reply) = feedback(
            address,
            serde_json::json!({"question": question, "correct": false}),
        );
        assert_eq!(
            (status, reply["outcome"].as_str()),
            (200, Some("pending")),
            "{reply}"
        );
        assert_eq!(reply["key"], key.as_str(), "one template, one plan");
        assert_eq!(reply["confirmations"]["have"], 1, "{reply}");
        assert_eq!(reply["confirmations"]["need"], 3, "{reply}");
    }
    let insider = ask(address, "who directed The Insider");
    assert_eq!(insider["cache_hit"], true, "{insider}");
    assert_eq!(insider["answers"][0]["text"], "Michael Mann", "{insider}");
    // The held verdicts are kept beside the cache file, and audited there.
    let held = std::fs::read_to_string(cache_file.with_extension("pending.json")).unwrap();
    assert!(held.contains("curator") && held.contains(&key), "{held}");
    let audit = std::fs::read_to_string(cache_file.with_extension("audit.jsonl")).unwrap();
    let actions: Vec<String> = audit
        .lines()
        .map(|line| json(line)["action"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        actions,
        ["stored", "confirmed", "held", "held"],
        "one held entry per new verdict: {audit}"
    );

    // A correction for a template with no plan: verified against the graph, learned,
    // and replayed for the next question of that shape.
    let (status, reply) = feedback(
        address,
        serde_json::json!({"question": "what language is Heat in", "answers": ["English"]}),
    );
    assert_eq!(
        (status, reply["outcome"].as_str()),
        (200, Some("learned")),
        "{reply}"
    );
    let collateral = ask(address, "what language is Collateral in");
    assert_eq!(collateral["cache_hit"], true, "{collateral}");
    assert_eq!(collateral["answers"][0]["text"], "English", "{collateral}");
    // Answers the graph does not hold change nothing.
    let before = cache();
    let (status, reply) = feedback(
        address,
        serde_json::json!({"question": "what language is Heat in", "answers": ["Klingon"]}),
    );
    assert_eq!(
        (status, reply["outcome"].as_str()),
        (200, Some("not_verified")),
        "{reply}"
    );
    assert_eq!(cache(), before);

    let (status, metrics) = http(address, "GET", "/metrics", None);
    assert_eq!(status, 200);
    for line in [
        "kgmesh_feedback_total{outcome=\"confirmed\"} 1",
        "kgmesh_feedback_total{outcome=\"pending\"} 5",
        "kgmesh_feedback_total{outcome=\"learned\"} 1",
        "kgmesh_feedback_total{outcome=\"unknown_question\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing from /metrics");
    }
    let status = server.terminate();
    assert!(status.success(), "{status:?}");
}
