//! `GET /metrics` on `kgmesh serve` and on `kgmesh agent`: scraped before and after real
//! work, the counters the work should move have moved, in the Prometheus text format.

mod serve_support;

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    time::{Duration, Instant},
};

use kgmesh_bus::{
    typed::{call, decode_reply, CallError},
    Bus, Message, NatsBus, NatsOptions,
};
use kgmesh_schemas::{
    messages::entity_linker::{LinkMode, LinkRequest},
    AgentError, Budget, Meta, QuestionId, Role, Rpc,
};
use kgmesh_testkit::nats::{free_port, NatsServer};
use serve_support::*;

/// One parsed sample: metric name, labels, value.
#[derive(Debug)]
struct Sample {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
}

/// A scrape, parsed: the samples and the `# HELP` / `# TYPE` names.
#[derive(Debug)]
struct Scrape {
    samples: Vec<Sample>,
    helped: Vec<String>,
    typed: Vec<String>,
}

impl Scrape {
    fn parse(text: &str) -> Self {
        let mut scrape = Scrape {
            samples: Vec::new(),
            helped: Vec::new(),
            typed: Vec::new(),
        };
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                scrape
                    .helped
                    .push(rest.split(' ').next().unwrap_or("").to_owned());
            } else if let Some(rest) = line.strip_prefix("# TYPE ") {
                scrape
                    .typed
                    .push(rest.split(' ').next().unwrap_or("").to_owned());
            } else if !line.trim().is_empty() && !line.starts_with('#') {
                scrape.samples.push(parse_sample(line));
            }
        }
        scrape
    }

    /// The sum of every series of `name` whose labels include `labels`; 0 when none (a
    /// counter that never moved is not exported yet).
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.samples
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|s| s.value)
            .sum()
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.samples.iter().any(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.iter().any(|(lk, lv)| lk == k && lv == v))
        })
    }
}

/// `name{k="v",k2="v2"} value` (label values here never hold quotes or commas).
fn parse_sample(line: &str) -> Sample {
    let (series, value) = line
        .rsplit_once(' ')
        .unwrap_or_else(|| panic!("not a sample line: {line:?}"));
    let value: f64 = value
        .parse()
        .unwrap_or_else(|e| panic!("bad value in {line:?}: {e}"));
    let (name, labels) = match series.split_once('{') {
        None => (series.to_owned(), Vec::new()),
        Some((name, rest)) => {
            let inner = rest
                .strip_suffix('}')
                .unwrap_or_else(|| panic!("unclosed labels in {line:?}"));
            let labels = inner
                .split(',')
                .filter(|pair| !pair.is_empty())
                .map(|pair| {
                    let (key, value) = pair
                        .split_once('=')
                        .unwrap_or_else(|| panic!("bad label {pair:?} in {line:?}"));
                    (key.to_owned(), value.trim_matches('"').to_owned())
                })
                .collect();
            (name.to_owned(), labels)
        }
    };
    Sample {
        name,
        labels,
        value,
    }
}

/// `GET path` with the response's content type: (status, content type, body).
fn get(address: SocketAddr, path: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(STEP_TIMEOUT))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no HTTP head in {response:?}"));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {head:?}"));
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "the metrics body is sent whole"
    );
    (status, content_type, body.to_owned())
}

fn scrape(address: SocketAddr) -> Scrape {
    let (status, content_type, body) = get(address, "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "content type {content_type:?}"
    );
    Scrape::parse(&body)
}

/// Every kgmesh metric a scrape shows is described (help text and type), so names used
/// at call sites and names described at install time agree.
fn assert_described(scrape: &Scrape) {
    for sample in scrape
        .samples
        .iter()
        .filter(|s| s.name.starts_with("kgmesh_"))
    {
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                let base = sample.name.strip_suffix(suffix)?;
                scrape.typed.iter().any(|t| t == base).then_some(base)
            })
            .unwrap_or(&sample.name);
        assert!(
            scrape.helped.iter().any(|h| h == family),
            "{family} has no # HELP line"
        );
        assert!(
            scrape.typed.iter().any(|t| t == family),
            "{family} has no # TYPE line"
        );
    }
}

#[test]
fn serve_metrics_move_after_a_question() {
    let (mut server, address) =
        start_ready("kgmesh serve --embedded", serve_embedded(&sample_kg(), 1));

    let before = scrape(address);
    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(r#"{"question": "who directed Heat", "options": {"max_rounds": 2}}"#),
    );
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON reply");
    assert_eq!(reply["answers"][0]["text"], "Michael Mann", "{body}");
    let after = scrape(address);

    let moved =
        |name: &str, labels: &[(&str, &str)]| after.sum(name, labels) - before.sum(name, labels);
    assert_eq!(
        moved("kgmesh_questions_total", &[("outcome", "answered")]),
        1.0
    );
    assert_eq!(moved("kgmesh_questions_total", &[]), 1.0);
    assert_eq!(moved("kgmesh_question_duration_seconds_count", &[]), 1.0);
    assert_eq!(moved("kgmesh_question_rounds_count", &[]), 1.0);
    let rounds = reply["rounds"].as_f64().expect("rounds");
    assert_eq!(moved("kgmesh_question_rounds_sum", &[]), rounds);
    assert_eq!(moved("kgmesh_round_duration_seconds_count", &[]), rounds);
    assert!(moved("kgmesh_question_duration_seconds_sum", &[]) > 0.0);
    assert!(after.sum("kgmesh_questions_in_flight", &[]) == 0.0);
    // The answer's second reading is counted by whether it reaches the answer.
    let reaches = match reply["readings_agree"].as_bool() {
        Some(true) => "yes",
        Some(false) => "no",
        None => panic!("no second reading was read: {body}"),
    };
    assert_eq!(
        moved("kgmesh_second_readings_total", &[("reaches", reaches)]),
        1.0
    );
    assert_eq!(moved("kgmesh_second_readings_total", &[]), 1.0);

    // Every role the coordinator called served and timed the request in this process.
    for role in ["kg-linker", "summarizer"] {
        let labels = [("role", role), ("outcome", "ok")];
        assert!(
            moved("kgmesh_role_requests_total", &labels) >= 1.0,
            "{role}: {:?}",
            after
                .samples
                .iter()
                .filter(|s| s.name == "kgmesh_role_requests_total")
                .collect::<Vec<_>>()
        );
        assert!(moved("kgmesh_role_request_duration_seconds_count", &labels) >= 1.0);
        // The coordinator's side of the same calls.
        assert!(moved("kgmesh_role_calls_total", &labels) >= 1.0, "{role}");
        assert!(moved("kgmesh_role_call_duration_seconds_count", &labels) >= 1.0);
    }
    // Histogram buckets are cumulative: +Inf holds every observation.
    assert_eq!(
        after.sum(
            "kgmesh_role_request_duration_seconds_bucket",
            &[("role", "summarizer"), ("le", "+Inf")]
        ),
        after.sum(
            "kgmesh_role_request_duration_seconds_count",
            &[("role", "summarizer")]
        )
    );
    assert_eq!(moved("kgmesh_plan_cache_lookups_total", &[]), 1.0);
    assert!(after.sum("kgmesh_role_replicas", &[("role", "kg-linker")]) >= 1.0);
    assert_described(&after);

    // A refused question counts as an error.
    let (status, body) = http(address, "POST", "/v1/ask", Some(r#"{"question": "   "}"#));
    assert_eq!(status, 400, "{body}");
    let refused = scrape(address);
    assert_eq!(
        refused.sum("kgmesh_questions_total", &[("outcome", "error")])
            - after.sum("kgmesh_questions_total", &[("outcome", "error")]),
        1.0
    );
    assert!(server.is_running());
}

/// Polls `GET path` on `port` until 200 or [`STEP_TIMEOUT`].
fn wait_for_port(port: u16, path: &str, agent: &mut Process) -> SocketAddr {
    let address: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let deadline = Instant::now() + STEP_TIMEOUT;
    loop {
        if TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
            && get(address, path).0 == 200
        {
            return address;
        }
        assert!(agent.is_running(), "{} exited", agent.name);
        assert!(
            Instant::now() < deadline,
            "{path} on port {port} never answered 200"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn agent_metrics_count_the_requests_its_role_serves() {
    let nats = NatsServer::start();
    let port = free_port();
    let mut command = kgmesh();
    command
        .args([
            "agent",
            "--role",
            "entity-linker",
            "--nats",
            &nats.url(),
            "--kg",
        ])
        .arg(sample_kg())
        .env(
            "KGMESH__TELEMETRY__METRICS_LISTEN",
            format!("127.0.0.1:{port}"),
        );
    let mut agent = Process::spawn("kgmesh agent --role entity-linker", command);
    let metrics_address = wait_for_port(port, "/readyz", &mut agent);

    let before = scrape(metrics_address);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let role = Role::well_known(Role::ENTITY_LINKER);
    let (links, undecodable) = runtime.block_on(async {
        let bus = tokio::time::timeout(
            STEP_TIMEOUT,
            NatsBus::connect(&nats.url(), NatsOptions::default()),
        )
        .await
        .expect("connect in time")
        .expect("connect to nats-server");
        let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
        let request = LinkRequest {
            mentions: vec!["Heat".to_owned(), "Al Pacino".to_owned()],
            top_m: 3,
            mode: LinkMode::Fuzzy,
        };
        let (links, _cost) = call::<LinkRequest>(
            &bus,
            &role,
            meta,
            request,
            STEP_TIMEOUT,
            kgmesh_schemas::ContentType::Bincode,
        )
        .await
        .expect("the entity linker answers");
        // A payload without the envelope's headers is refused with a typed error.
        let refused = bus
            .request(
                &role.subject(LinkRequest::OP),
                Message::default(),
                STEP_TIMEOUT,
            )
            .await
            .expect("a typed error reply");
        (links, refused)
    });
    assert_eq!(links.links.len(), 2);
    let subject = role.subject(LinkRequest::OP);
    assert!(
        matches!(
            decode_reply::<LinkRequest>(&role, &subject, &undecodable),
            Err(CallError::Agent {
                error: AgentError::UnsupportedVersion { .. },
                ..
            })
        ),
        "{undecodable:?}"
    );
    let after = scrape(metrics_address);

    let op = LinkRequest::OP;
    let moved = |labels: &[(&str, &str)]| {
        after.sum("kgmesh_role_requests_total", labels)
            - before.sum("kgmesh_role_requests_total", labels)
    };
    assert_eq!(
        moved(&[("role", "entity-linker"), ("op", op), ("outcome", "ok")]),
        1.0,
        "{after:?}"
    );
    assert_eq!(
        moved(&[
            ("role", "entity-linker"),
            ("op", op),
            ("outcome", "unsupported_version")
        ]),
        1.0
    );
    assert!(after.has(
        "kgmesh_role_request_duration_seconds_count",
        &[("role", "entity-linker"), ("op", op), ("outcome", "ok")]
    ));
    assert_described(&after);

    // The coordinator on the same bus sees the replica, and counts a question it cannot
    // answer (required roles missing) as an error.
    let (mut server, address) = spawn_serve_nats(&nats.url(), |command| command);
    let deadline = Instant::now() + STEP_TIMEOUT;
    let seen = loop {
        let _ = http(address, "GET", "/readyz", None);
        let seen = scrape(address);
        if seen.sum("kgmesh_role_replicas", &[("role", "entity-linker")]) == 1.0 {
            break seen;
        }
        assert!(server.is_running(), "kgmesh serve exited");
        assert!(
            Instant::now() < deadline,
            "the replica never showed: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(r#"{"question": "who directed Heat"}"#),
    );
    assert_eq!(status, 503, "{body}");
    let after_question = scrape(address);
    assert_eq!(
        after_question.sum("kgmesh_questions_total", &[("outcome", "error")])
            - seen.sum("kgmesh_questions_total", &[("outcome", "error")]),
        1.0
    );
    assert!(agent.is_running());
}

#[test]
fn a_model_fallback_is_counted_as_a_degraded_question() {
    let stub = kgmesh_testkit::llm_stub::LlmStub::start(kgmesh_testkit::llm_stub::Script::text(
        "no idea, sorry",
    ));
    let mut command = serve_embedded(&sample_kg(), 1);
    command
        .env("OPENAI_BASE_URL", stub.base_url())
        .env("OPENAI_API_KEY", "stub");
    let (mut server, address) = start_ready("kgmesh serve --embedded (stub model)", command);

    let before = scrape(address);
    let (status, body) = http(
        address,
        "POST",
        "/v1/ask",
        Some(r#"{"question": "who directed Heat"}"#),
    );
    assert_eq!(status, 200, "{body}");
    let reply: serde_json::Value = serde_json::from_str(&body).expect("JSON reply");
    assert_eq!(reply["answers"][0]["text"], "Michael Mann", "{body}");
    let after = scrape(address);
    let moved = |labels: &[(&str, &str)]| {
        after.sum("kgmesh_degraded_total", labels) - before.sum("kgmesh_degraded_total", labels)
    };
    for role in ["kg-linker", "summarizer"] {
        assert_eq!(
            moved(&[("role", role), ("reason", "model_fallback")]),
            1.0,
            "{role}: {after:?}"
        );
    }
    let flagged = reply["degraded"].as_array().expect("degraded").len();
    assert_eq!(moved(&[]), flagged as f64, "{body}");
    assert_described(&after);
    assert!(server.is_running());
}
