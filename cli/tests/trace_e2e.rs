//! One trace per question across processes: a real nats-server, a real OTLP collector
//! (rotel), `kgmesh serve --nats` exporting over gRPC and one `kgmesh agent --role R`
//! process per role exporting over HTTP/protobuf. After one question over HTTP, the
//! collector must hold spans from at least five services in the answer's trace, and
//! every agent span must hang under a span of that trace.

mod serve_support;

use std::{
    collections::{BTreeSet, HashMap},
    process::Command,
    time::Duration,
};

use kgmesh_testkit::{
    nats::NatsServer,
    otlp::{CollectedSpan, OtlpCollector},
};
use serve_support::*;

/// The roles of a question's life that answer without a model.
const ROLES: [&str; 7] = [
    "kg-linker",
    "entity-linker",
    "path-follower",
    "query-executor",
    "agentic-traverser",
    "judge",
    "summarizer",
];

const SPAN_TIMEOUT: Duration = Duration::from_secs(30);

fn exporting(mut command: Command, endpoint: &str, protocol: &str) -> Command {
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_SDK_DISABLED")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment=trace-e2e",
        )
        // Nothing leaves on the exporter's schedule during a test: spans arrive only
        // because a process flushes them when it stops.
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000");
    command
}

fn describe(spans: &[CollectedSpan]) -> String {
    spans
        .iter()
        .map(|s| {
            format!(
                "{} {} trace={} id={} parent={:?}",
                s.service_name, s.name, s.trace_id, s.span_id, s.parent_span_id
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn one_question_is_one_trace_across_processes() {
    let collector = OtlpCollector::start();
    let nats = NatsServer::start();
    let kg = sample_kg();

    let mut agents = spawn_agents(&nats.url(), &ROLES, &kg, |command| {
        exporting(command, &collector.http_endpoint(), "http/protobuf")
    });
    let (mut server, address) = spawn_serve_nats(&nats.url(), |command| {
        exporting(command, &collector.grpc_endpoint(), "grpc")
    });
    wait_for_roles(address, &ROLES, &mut agents);

    // An upstream caller's context: the question joins the caller's trace.
    let upstream_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let upstream_span = "00f067aa0ba902b7";
    let body = r#"{"question": "who directed Heat", "options": {"no_cache": true}}"#;
    let (status, text) = http_with_headers(
        address,
        "/v1/ask",
        body,
        &[(
            "traceparent",
            &format!("00-{upstream_trace}-{upstream_span}-01"),
        )],
    );
    assert_eq!(status, 200, "{text}");
    let reply: serde_json::Value = serde_json::from_str(&text).expect("JSON reply");
    let trace_id = reply["trace_id"]
        .as_str()
        .expect("the answer carries its trace id")
        .to_owned();
    assert_eq!(
        trace_id, upstream_trace,
        "the question joins the caller's trace"
    );
    let question_id = reply["question_id"]
        .as_str()
        .expect("question id")
        .to_owned();

    // Stop every process as an orchestrator would; each flushes its spans on the way
    // out (the exporters' schedule is too slow to have sent anything yet).
    let status = server.terminate();
    assert!(status.success(), "kgmesh serve exited with {status}");
    for agent in &mut agents {
        let status = agent.terminate();
        assert!(status.success(), "{} exited with {status}", agent.name);
    }
    // Wait until five or more services have spans in the trace and the coordinator's
    // question span has arrived.
    let in_trace = |spans: &[CollectedSpan]| -> Vec<CollectedSpan> {
        spans
            .iter()
            .filter(|s| s.trace_id == trace_id)
            .cloned()
            .collect()
    };
    let waited = collector.wait_for(SPAN_TIMEOUT, |spans| {
        let ours = in_trace(spans);
        let services: BTreeSet<&str> = ours.iter().map(|s| s.service_name.as_str()).collect();
        services.len() >= 6 && ours.iter().any(|s| s.name == "question")
    });
    let spans = match waited {
        Ok(spans) => in_trace(&spans),
        Err(spans) => panic!(
            "the collector did not receive the trace {trace_id} from enough services \
             within {SPAN_TIMEOUT:?}; received:\n{}",
            describe(&spans)
        ),
    };

    let services: BTreeSet<&str> = spans.iter().map(|s| s.service_name.as_str()).collect();
    assert!(services.contains("kgmesh-serve"), "{services:?}");
    let agent_services: BTreeSet<&str> = services
        .iter()
        .copied()
        .filter(|s| *s != "kgmesh-serve")
        .collect();
    assert!(
        agent_services.len() >= 5,
        "agent services in the trace: {agent_services:?}\n{}",
        describe(&spans)
    );
    for service in &agent_services {
        let role = service.strip_prefix("kgmesh-").expect("kgmesh-<role>");
        assert!(ROLES.contains(&role), "unexpected service {service}");
    }

    let by_id: HashMap<&str, &CollectedSpan> =
        spans.iter().map(|s| (s.span_id.as_str(), s)).collect();

    // The coordinator's question span is the child of the caller's span.
    let question = spans
        .iter()
        .find(|s| s.name == "question")
        .expect("question span");
    assert_eq!(question.service_name, "kgmesh-serve");
    assert_eq!(question.parent_span_id.as_deref(), Some(upstream_span));
    assert_eq!(
        question.attribute("kgmesh.question_id"),
        Some(question_id.as_str())
    );
    assert_eq!(
        question.attribute("deployment.environment"),
        None,
        "resource attributes stay on the resource"
    );

    // Rounds hang under the question.
    let rounds: Vec<&CollectedSpan> = spans.iter().filter(|s| s.name == "round").collect();
    assert!(!rounds.is_empty(), "no round span:\n{}", describe(&spans));
    for round in &rounds {
        assert_eq!(
            round.parent_span_id.as_deref(),
            Some(question.span_id.as_str())
        );
        assert!(round.attribute("kgmesh.round").is_some());
    }

    // Every agent span is the child of a coordinator span of this trace (a call or
    // retrieve span of the coordinator), named `<role> <op>`, with its attributes.
    let agent_spans: Vec<&CollectedSpan> = spans
        .iter()
        .filter(|s| s.service_name != "kgmesh-serve" && s.attribute("kgmesh.op").is_some())
        .collect();
    assert!(agent_spans.len() >= 5, "{}", describe(&spans));
    for span in &agent_spans {
        let parent_id = span
            .parent_span_id
            .as_deref()
            .unwrap_or_else(|| panic!("agent span without a parent: {span:?}"));
        let parent = by_id.get(parent_id).unwrap_or_else(|| {
            panic!(
                "the parent {parent_id} of {} {} is not in the trace:\n{}",
                span.service_name,
                span.name,
                describe(&spans)
            )
        });
        let role = span.attribute("kgmesh.role").expect("role attribute");
        assert_eq!(span.service_name, format!("kgmesh-{role}"));
        let op = span.attribute("kgmesh.op").expect("op attribute");
        assert_eq!(span.name, format!("{role} {op}"));
        assert_eq!(
            span.attribute("kgmesh.question_id"),
            Some(question_id.as_str())
        );
        assert!(span.attribute("kgmesh.budget.llm_calls_left").is_some());
        assert_eq!(
            parent.service_name, "kgmesh-serve",
            "{span:?} under {parent:?}"
        );
        assert_eq!(
            parent.attribute("kgmesh.role"),
            Some(role),
            "{span:?} under {parent:?}"
        );
    }

    // Transport libraries' own spans are not exported.
    let all = collector.spans();
    for span in &all {
        for noisy in ["h2", "tonic", "hyper", "tower", "reqwest", "async_nats"] {
            assert_ne!(
                span.attribute("target")
                    .map(|t| t.split("::").next().unwrap_or(t)),
                Some(noisy),
                "transport span exported: {span:?}"
            );
        }
    }

    drop(server);
    drop(agents);
}

/// A POST with extra headers (the support module's client sends none).
fn http_with_headers(
    address: std::net::SocketAddr,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream =
        std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(STEP_TIMEOUT))
        .expect("timeout");
    stream
        .set_write_timeout(Some(STEP_TIMEOUT))
        .expect("timeout");
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("write");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {text:?}"));
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    assert!(
        !head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked"),
        "unexpected chunked reply"
    );
    (status, rest.to_owned())
}

/// `kgmesh ask --json` quotes the exported trace id, and its spans reach the collector
/// although the process exits long before the batch exporter's first scheduled send:
/// the exit flushes them.
#[test]
fn ask_json_prints_the_exported_trace_id_and_flushes_on_exit() {
    let collector = OtlpCollector::start();
    let mut command = kgmesh();
    command.args(["ask", "who directed Heat", "--json", "--kg"]);
    command.arg(sample_kg());
    let command = exporting(command, &collector.http_endpoint(), "http/protobuf");
    let (code, stdout, stderr) = run(command);
    assert_eq!(code, 0, "{stderr}");
    let reply: serde_json::Value = serde_json::from_str(&stdout).expect("JSON reply");
    let trace_id = reply["trace_id"].as_str().expect("trace id").to_owned();
    assert_eq!(trace_id.len(), 32);

    let spans = collector
        .wait_for(SPAN_TIMEOUT, |spans| {
            spans
                .iter()
                .any(|s| s.name == "question" && s.trace_id == trace_id)
        })
        .unwrap_or_else(|spans| {
            panic!(
                "no question span with trace id {trace_id}:\n{}",
                describe(&spans)
            )
        });
    let ours: Vec<&CollectedSpan> = spans.iter().filter(|s| s.trace_id == trace_id).collect();
    assert!(ours.iter().all(|s| s.service_name == "kgmesh"), "{ours:?}");
    let ids: BTreeSet<&str> = ours.iter().map(|s| s.span_id.as_str()).collect();
    let agent_spans: Vec<&&CollectedSpan> = ours
        .iter()
        .filter(|s| s.attribute("kgmesh.instance_id").is_some())
        .collect();
    assert!(agent_spans.len() >= 3, "{}", describe(&spans));
    let question = ours
        .iter()
        .find(|s| s.name == "question")
        .expect("question");
    assert_eq!(
        question.parent_span_id, None,
        "a question asked here starts its trace"
    );
    for span in ours.iter().filter(|s| s.name != "question") {
        let parent = span.parent_span_id.as_deref().expect("a parent");
        assert!(
            ids.contains(parent),
            "{span:?} has a parent outside the trace"
        );
    }
}
