//! Request/reply round-trip latency on the two buses: the in-process `LocalBus` and
//! `NatsBus` over loopback to a real nats-server (started by the testkit), with 1 KiB
//! and 64 KiB payloads. The server side answers with the payload it got, so each round
//! trip moves the payload both ways.
//!
//! `cargo bench -p kgmesh-benches --bench bus`

use std::{future::Future, pin::Pin, sync::Arc, time::Duration};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kgmesh_bus::{
    Bus, Endpoint, Handler, Headers, LocalBus, Message, NatsBus, NatsOptions, ServiceSpec,
};
use kgmesh_schemas::{Role, RoleInfo, RoleKind};
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
