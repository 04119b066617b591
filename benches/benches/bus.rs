//! Request/reply round-trip latency on the two buses: the in-process `LocalBus` and
//! `NatsBus` over loopback to a real nats-server (started by the testkit), with 1 KiB
//! and 64 KiB payloads. The server side answers with the payload it got, so each round
//! trip moves the payload both ways.
//!
//! Then the same round trip as a role call, in each wire format: a summarizer request
//! whose evidence takes about 1 KiB or 64 KiB in bincode is encoded, sent over NATS,
//! decoded by the serving side, answered, and the reply decoded (`typed_call/bincode`
//! against `typed_call/json`, same run), which is what choosing JSON for an agent
//! from outside kgmesh costs per message.
//!
//! `cargo bench -p kgmesh-benches --bench bus`

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kgmesh_bus::{
    typed::{call, decode_request, encode_reply},
    Bus, Endpoint, Handler, Headers, LocalBus, Message, NatsBus, NatsOptions, ServiceSpec,
};
use kgmesh_schemas::{
    budget::Cost,
    codec,
    graph::{Entity, Triple},
    messages::{
        context::{Context, Evidence, EvidenceItem},
        summarizer::{SummarizeReply, SummarizeRequest},
    },
    Budget, ContentType, Meta, NodeId, QuestionId, Reply as WireReply, Role, RoleInfo, RoleKind,
    Rpc,
};
use kgmesh_testkit::nats::NatsServer;

const SIZES: [(usize, &str); 2] = [(1024, "1KiB"), (64 * 1024, "64KiB")];
const TIMEOUT: Duration = Duration::from_secs(10);

type Reply = Pin<Box<dyn Future<Output = Message> + Send>>;

fn echo_handler() -> Arc<dyn Handler> {
    Arc::new(|_subject: String, request: Message| -> Reply { Box::pin(async move { request }) })
}

fn spec() -> ServiceSpec {
    let role = Role::new("bench-echo").expect("valid role name");
    ServiceSpec {
        endpoints: vec![Endpoint {
            subject: role.subject("echo"),
            queue_group: role.queue_group(),
        }],
        info: RoleInfo {
            role,
            version: "1.0.0".to_owned(),
            kind: RoleKind::Core,
            ops: vec!["echo".to_owned()],
        },
    }
}

fn message(size: usize) -> Message {
    let mut headers = Headers::new();
    headers.insert(
        "Content-Type".to_owned(),
        "application/x-kgmesh-bincode".to_owned(),
    );
    headers.insert("Kgmesh-Schema".to_owned(), "1".to_owned());
    Message {
        headers,
        payload: vec![0x5a; size].into(),
    }
}

fn bench_bus(
    c: &mut Criterion,
    name: &str,
    runtime: &tokio::runtime::Runtime,
    client: Arc<dyn Bus>,
) {
    let subject = spec().endpoints[0].subject.clone();
    let mut group = c.benchmark_group(format!("bus_round_trip/{name}"));
    for (size, label) in SIZES {
        let request = message(size);
        group.throughput(Throughput::Bytes(2 * size as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(label),
            &request,
            |b, request| {
                b.iter(|| {
                    runtime.block_on(async {
                        let reply = client
                            .request(&subject, request.clone(), TIMEOUT)
                            .await
                            .expect("round trip failed");
                        assert_eq!(reply.payload.len(), size);
                    })
                })
            },
        );
    }
    group.finish();
}

/// A summarizer request whose bincode encoding is about `size` bytes: triples of
/// MetaQA-like names.
fn summarize_request(size: usize) -> SummarizeRequest {
    let entity = |id: u64, name: &str| Entity {
        id: NodeId(id),
        name: name.to_owned(),
    };
    let mut request = SummarizeRequest {
        question: "what genres are the movies directed by the Heat director".to_owned(),
        context: Context::default(),
        topic_entities: vec![entity(1, "Heat")],
        max_answers: 10,
        cues: Vec::new(),
        plan: Vec::new(),
        preferred: Vec::new(),
    };
    let mut id = 2;
    while codec::encode(ContentType::Bincode, &request)
        .expect("encodes")
        .len()
        < size
    {
        request.context.evidence.push(Evidence {
            source: "path-follower".to_owned(),
            score: 0.75,
            item: EvidenceItem::Triple(Triple {
                head: entity(id, "The Insider"),
                relation: "has_genre".to_owned(),
                tail: entity(id + 1, "Drama"),
            }),
        });
        id += 2;
    }
    request
}

/// Decodes a summarizer request in whatever format it came, answers in the same.
fn summarizer_handler() -> Arc<dyn Handler> {
    Arc::new(|_subject: String, message: Message| -> Reply {
        Box::pin(async move {
            match decode_request::<SummarizeRequest>(&message) {
                Ok((content_type, request)) => {
                    let reply = SummarizeReply {
                        low_confidence: false,
                        answers: Vec::new(),
                        explanation: format!("{} lines", request.body.context.evidence.len()),
                        confidence: None,
                        decline: None,
                    };
                    encode_reply(content_type, &WireReply::ok(reply, Cost::default()))
                }
                Err((content_type, error)) => {
                    encode_reply::<SummarizeReply>(content_type, &WireReply::err(error))
                }
            }
        })
    })
}

fn typed_round_trips(c: &mut Criterion, runtime: &tokio::runtime::Runtime, url: &str) {
    let role = Role::new("bench-summarizer").expect("valid role name");
    let spec = ServiceSpec {
        endpoints: vec![Endpoint {
            subject: role.subject(SummarizeRequest::OP),
            queue_group: role.queue_group(),
        }],
        info: RoleInfo {
            role: role.clone(),
            version: "1.0.0".to_owned(),
            kind: RoleKind::Core,
            ops: vec![SummarizeRequest::OP.to_owned()],
        },
    };
    let (server_bus, client_bus) = runtime.block_on(async {
        let connect = || NatsBus::connect(url, NatsOptions::default());
        (
            connect().await.expect("connect server side"),
            connect().await.expect("connect client side"),
        )
    });
    let service = runtime
        .block_on(server_bus.serve(spec, summarizer_handler()))
        .expect("serve on NATS");
    for (size, label) in SIZES {
        let request = summarize_request(size);
        let mut group = c.benchmark_group(format!("typed_call/{label}"));
        for (codec, name) in [
            (ContentType::Bincode, "bincode"),
            (ContentType::Json, "json"),
        ] {
            let encoded = codec::encode(codec, &request).expect("encodes").len();
            eprintln!("typed_call/{label}/{name}: request body {encoded} bytes");
            group.bench_function(name, |b| {
                b.iter(|| {
                    runtime.block_on(async {
                        let meta = Meta::new(QuestionId::new_random(), 1, Budget::default());
                        let (reply, _) =
                            call(&client_bus, &role, meta, request.clone(), TIMEOUT, codec)
                                .await
                                .expect("typed round trip failed");
                        assert!(reply.explanation.ends_with("lines"));
                    })
                })
            });
        }
        group.finish();
    }
    runtime.block_on(service.stop(Duration::from_secs(1)));
}

fn round_trips(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");

    let local = LocalBus::new();
    let local_service = runtime
        .block_on(local.serve(spec(), echo_handler()))
        .expect("serve on LocalBus");
    bench_bus(c, "local", &runtime, Arc::new(local.clone()));
    runtime.block_on(local_service.stop(Duration::from_secs(1)));

    let server = NatsServer::start();
    let (server_bus, client_bus) = runtime.block_on(async {
        let url = server.url();
        let connect = || NatsBus::connect(&url, NatsOptions::default());
        (
            connect().await.expect("connect server side"),
            connect().await.expect("connect client side"),
        )
    });
    let nats_service = runtime
        .block_on(server_bus.serve(spec(), echo_handler()))
        .expect("serve on NATS");
    bench_bus(c, "nats", &runtime, Arc::new(client_bus));
    runtime.block_on(nats_service.stop(Duration::from_secs(1)));
    typed_round_trips(c, &runtime, &server.url());
    drop(server);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    targets = round_trips
}
criterion_main!(benches);
