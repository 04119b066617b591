//! Coordinator overhead per question: every role is an instant stand-in, so all the
//! time measured is the coordinator's own (round loop, budget accounting, context
//! merging, encoding) plus the bus. Prints p50/p99/mean.
//!
//! ```text
//! cargo run --release -p kgmesh-coordinator --example overhead                 # in-process bus
//! cargo run --release -p kgmesh-coordinator --example overhead -- --nats       # real nats-server
//! cargo run --release -p kgmesh-coordinator --example overhead -- --trace      # tracing off vs on
//! ```
//!
//! `--trace` measures the cost of tracing in one run, in-process, alternating three
//! set-ups: tracing off (the stderr log at `warn`, as a process without an OTLP endpoint
//! runs), the OpenTelemetry layer with a batch exporter that drops spans (the cost of
//! making spans), and the same layer exporting over OTLP/gRPC to a real collector
//! (rotel). It prints questions/s for each and the ratios to "off". The stand-ins open
//! an agent span per request, parented by the request's trace context, as the agent
//! runtime does.
//!
//! The stand-ins answer like a 2-hop MetaQA question would: one linked entity, one
//! metapath, three retrievers returning 40 paths and 30 triples, a judge that says
//! COMPLETE, a summarizer that cites the paths' ends.

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use kgmesh_bus::{
    typed::{decode_request, encode_reply},
    Bus, Endpoint, LocalBus, Message, NatsBus, NatsOptions, ServiceHandle, ServiceSpec,
};
use kgmesh_coordinator::{AllowedRoles, Coordinator, CoordinatorConfig};
use kgmesh_schemas::{
    budget::Cost,
    graph::{Direction, Entity, Metapath, Path, PathStep, RelationStep, ScoredEntity, Triple},
    messages::{
        ask::{AskOptions, AskRequest},
        context::{Evidence, EvidenceItem},
        judge::{JudgeReply, JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
        summarizer::{Answer, SummarizeReply, SummarizeRequest},
    },
    NodeId, Reply, Request, Role, RoleInfo, RoleKind, Rpc,
};
use tracing::Instrument;

async fn serve<R, F, Fut>(
    bus: &Arc<dyn Bus>,
    role: &str,
    kind: RoleKind,
    handler: F,
) -> Box<dyn ServiceHandle>
where
    R: Rpc,
    F: Fn(Request<R>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Reply<R::Reply>> + Send + 'static,
{
    let role = Role::new(role).expect("valid role");
    let spec = ServiceSpec {
        info: RoleInfo {
            role: role.clone(),
            version: "0.1.0".into(),
            kind,
            ops: vec![R::OP.to_owned()],
        },
        endpoints: vec![Endpoint {
            subject: role.subject(R::OP),
            queue_group: role.queue_group(),
        }],
    };
    let handler = Arc::new(handler);
    let bus_handler = move |_subject: String, message: Message| -> BoxFuture<'static, Message> {
        let handler = handler.clone();
        Box::pin(async move {
            match decode_request::<R>(&message) {
                Ok((content_type, request)) => {
                    let span = tracing::info_span!(
                        "agent.call",
                        otel.name = format!("{} {}", R::DEFAULT_ROLE, R::OP),
                        kgmesh.op = R::OP,
                        kgmesh.question_id = %request.meta.question_id,
                        kgmesh.round = request.meta.round,
                    );
                    kgmesh_telemetry::set_parent(&span, &request.meta.trace);
                    let reply = handler(request).instrument(span).await;
                    encode_reply(content_type, &reply)
                }
                Err((content_type, error)) => {
                    encode_reply::<R::Reply>(content_type, &Reply::err(error))
                }
            }
        })
    };
    bus.serve(spec, Arc::new(bus_handler))
        .await
        .expect("stand-in starts")
}

fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.to_owned(),
    }
}

fn paths(from: &Entity, count: u64, base: u64) -> Vec<Evidence> {
    (0..count)
        .map(|i| Evidence {
            source: "path-follower".into(),
            score: 0.9,
            item: EvidenceItem::Path(Path {
                start: from.clone(),
                steps: vec![
                    PathStep {
                        relation: "directed_by".into(),
                        inverse: true,
                        node: entity(base + i, &format!("Film {i}")),
                    },
                    PathStep {
                        relation: "in_language".into(),
                        inverse: false,
                        node: entity(base + 1000 + i % 7, &format!("Language {}", i % 7)),
                    },
                ],
            }),
        })
        .collect()
}

async fn start_stand_ins(bus: &Arc<dyn Bus>) -> Vec<Box<dyn ServiceHandle>> {
    let mut handles = Vec::new();
    handles.push(
        serve::<KgLinkRequest, _, _>(bus, Role::KG_LINKER, RoleKind::Core, |_r| async {
            Reply::ok(
                KgLinkReply {
                    linked: vec![ScoredEntity {
                        entity: entity(1, "Joel Zwick"),
                        score: 1.0,
                    }],
                    metapaths: vec![Metapath {
                        steps: vec![
                            RelationStep {
                                relation: "directed_by".into(),
                                direction: Direction::In,
                            },
                            RelationStep {
                                relation: "in_language".into(),
                                direction: Direction::Out,
                            },
                        ],
                    }],
                    ..KgLinkReply::default()
                },
                Cost {
                    llm_calls: 1,
                    prompt_tokens: 900,
                    completion_tokens: 60,
                    ..Cost::default()
                },
            )
        })
        .await,
    );
    handles.push(
        serve::<RetrieveRequest, _, _>(
            bus,
            Role::PATH_FOLLOWER,
            RoleKind::Retriever,
            |r| async move {
                let from = r.body.entities[0].entity.clone();
                Reply::ok(
                    RetrieveReply {
                        evidence: paths(&from, 40, 100),
                        ..Default::default()
                    },
                    Cost::default(),
                )
            },
        )
        .await,
    );
    handles.push(
        serve::<RetrieveRequest, _, _>(
            bus,
            Role::SCORING_RETRIEVER,
            RoleKind::Retriever,
            |r| async move {
                let from = r.body.entities[0].entity.clone();
                let evidence = (0..30)
                    .map(|i| Evidence {
                        source: "scoring-retriever".into(),
                        score: 0.4,
                        item: EvidenceItem::Triple(Triple {
                            head: entity(100 + i, &format!("Film {i}")),
                            relation: "directed_by".into(),
                            tail: from.clone(),
                        }),
                    })
                    .collect();
                Reply::ok(
                    RetrieveReply {
                        evidence,
                        ..Default::default()
                    },
                    Cost::default(),
                )
            },
        )
        .await,
    );
    handles.push(
        serve::<RetrieveRequest, _, _>(
            bus,
            Role::AGENTIC_TRAVERSER,
            RoleKind::Retriever,
            |r| async move {
                let from = r.body.entities[0].entity.clone();
                Reply::ok(
                    RetrieveReply {
                        evidence: paths(&from, 10, 100),
                        ..Default::default()
                    },
                    Cost::default(),
                )
            },
        )
        .await,
    );
    handles.push(
        serve::<JudgeRequest, _, _>(bus, Role::JUDGE, RoleKind::Core, |_r| async {
            Reply::ok(
                JudgeReply {
                    verdict: Verdict::Complete,
                    reason: "bench".into(),
                },
                Cost::default(),
            )
        })
        .await,
    );
    handles.push(
        serve::<SummarizeRequest, _, _>(bus, Role::SUMMARIZER, RoleKind::Core, |r| async move {
            let answers = r
                .body
                .context
                .evidence
                .iter()
                .enumerate()
                .take(3)
                .filter_map(|(i, e)| match &e.item {
                    EvidenceItem::Path(p) => Some(Answer {
                        text: p.end().name.clone(),
                        entity: Some(p.end().clone()),
                        score: e.score,
                        evidence: vec![i as u32],
                    }),
                    _ => None,
                })
                .collect();
            Reply::ok(
                SummarizeReply {
                    low_confidence: false,
                    answers,
                    explanation: "bench".into(),
                    confidence: None,
                    decline: None,
                },
                Cost::default(),
            )
        })
        .await,
    );
    handles
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

async fn measure(
    label: &str,
    agents_bus: Arc<dyn Bus>,
    coordinator_bus: Arc<dyn Bus>,
    questions: usize,
) -> f64 {
    let _handles = start_stand_ins(&agents_bus).await;
    let config = CoordinatorConfig {
        allowed_roles: AllowedRoles::default()
            .and(&[Role::SCORING_RETRIEVER, Role::AGENTIC_TRAVERSER]),
        ..CoordinatorConfig::default()
    };
    let coordinator = Coordinator::new(coordinator_bus, config);
    let request = AskRequest {
        question: "what languages are the films directed by Joel Zwick in".into(),
        options: AskOptions::default(),
    };
    // Warm-up: discovery, connections, allocator.
    for _ in 0..50 {
        coordinator.ask(request.clone()).await.expect("answers");
    }
    let mut micros = Vec::with_capacity(questions);
    let mut evidence = 0;
    let mut bus_messages = 0;
    for _ in 0..questions {
        let started = Instant::now();
        let reply = coordinator.ask(request.clone()).await.expect("answers");
        micros.push(started.elapsed().as_secs_f64() * 1e6);
        evidence = reply.evidence.len();
        bus_messages = reply.cost.bus_messages;
    }
    let rate = questions as f64 / (micros.iter().sum::<f64>() / 1e6);
    if label.is_empty() {
        return rate;
    }
    micros.sort_by(f64::total_cmp);
    let mean = micros.iter().sum::<f64>() / micros.len() as f64;
    println!(
        "{label}: {questions} questions, {evidence} evidence lines and {bus_messages} bus calls each: \
         p50 {:.3} ms, p99 {:.3} ms, mean {:.3} ms",
        percentile(&micros, 0.5) / 1000.0,
        percentile(&micros, 0.99) / 1000.0,
        mean / 1000.0
    );
    rate
}

/// A span exporter that drops every batch: what is left is the cost of making spans.
#[derive(Debug)]
struct DropSpans;

impl opentelemetry_sdk::trace::SpanExporter for DropSpans {
    async fn export(
        &self,
        _batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        Ok(())
    }
}

/// Questions/s of `questions` questions under `built`'s subscriber, on a runtime of
/// its own (the subscriber is the thread's default, so the runtime has one thread).
fn questions_per_second(built: kgmesh_telemetry::Built, questions: usize) -> f64 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let dispatch = tracing::Dispatch::new(built.subscriber);
    let rate = tracing::dispatcher::with_default(&dispatch, || {
        runtime.block_on(async {
            let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
            measure("", bus.clone(), bus, questions).await
        })
    });
    let mut guard = built.guard;
    guard.shutdown();
    rate
}

fn trace_overhead(questions: usize) {
    let collector = kgmesh_testkit::otlp::OtlpCollector::start();
    let settings = kgmesh_telemetry::Settings::new("kgmesh-overhead");
    let setups = ["off", "spans, dropped", "spans, OTLP/gRPC to rotel"];
    let mut rates = vec![Vec::new(); setups.len()];
    for repetition in 0..3 {
        for (index, setup) in setups.iter().enumerate() {
            let built = match index {
                0 => kgmesh_telemetry::build_with_provider(&settings, None),
                1 => kgmesh_telemetry::build_with_provider(
                    &settings,
                    Some(
                        opentelemetry_sdk::trace::SdkTracerProvider::builder()
                            .with_batch_exporter(DropSpans)
                            .build(),
                    ),
                ),
                _ => {
                    let mut exporting = settings.clone();
                    exporting.otlp_endpoint = Some(collector.grpc_endpoint());
                    exporting.otlp_protocol = Some("grpc".into());
                    kgmesh_telemetry::build(&exporting)
                }
            }
            .expect("subscriber");
            let rate = questions_per_second(built, questions);
            println!("  run {}: {setup}: {rate:.0} questions/s", repetition + 1);
            rates[index].push(rate);
        }
    }
    let exported = collector.spans().len();
    // The median of the runs, so one disturbed run does not decide.
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let off = median(&rates[0]);
    println!("tracing overhead, {questions} questions per run, median of 3 runs:");
    for (setup, rates) in setups.iter().zip(&rates) {
        let rate = median(rates);
        println!(
            "  {setup:<28} {rate:>8.0} questions/s  ratio to off {:.3}",
            rate / off
        );
    }
    println!("  (the collector received {exported} spans)");
}

fn main() {
    let nats = std::env::args().any(|a| a == "--nats");
    let trace = std::env::args().any(|a| a == "--trace");
    let questions: usize = std::env::var("QUESTIONS")
        .ok()
        .and_then(|q| q.parse().ok())
        .unwrap_or(2000);
    if trace {
        trace_overhead(questions);
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(run(nats, questions));
}

async fn run(nats: bool, questions: usize) {
    if nats {
        let server = kgmesh_testkit::nats::NatsServer::start();
        let connect = |name: &str| NatsOptions {
            client_name: Some(name.to_owned()),
            connect_timeout: Duration::from_secs(5),
            ..NatsOptions::default()
        };
        let agents: Arc<dyn Bus> = Arc::new(
            NatsBus::connect(&server.url(), connect("agents"))
                .await
                .expect("nats"),
        );
        let coordinator: Arc<dyn Bus> = Arc::new(
            NatsBus::connect(&server.url(), connect("coordinator"))
                .await
                .expect("nats"),
        );
        measure("nats", agents, coordinator, questions).await;
    } else {
        let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
        measure("in-process", bus.clone(), bus, questions).await;
    }
}
