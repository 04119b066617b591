//! One contract, two buses: every case runs against `LocalBus` and against `NatsBus`
//! on a real nats-server, so the in-process bus cannot drift from NATS's semantics.

use std::{
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use bytes::Bytes;
use futures::future::BoxFuture;
use kgmesh_bus::{
    replica_counts, Bus, BusError, Endpoint, Handler, Headers, LocalBus, Message, NatsBus,
    NatsOptions, ServiceSpec,
};
use kgmesh_schemas::{Role, RoleInfo, RoleKind};
use kgmesh_testkit::nats::NatsServer;

/// Bound on any single await in these tests.
const WAIT: Duration = Duration::from_secs(20);

async fn bounded<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("a bus operation did not finish in time")
}

/// Where the buses of one test come from.
enum Harness {
    Local(LocalBus),
    Nats(NatsServer),
}

impl Harness {
    fn local() -> Self {
        Harness::Local(LocalBus::new())
    }

    fn nats() -> Self {
        Harness::Nats(NatsServer::start())
    }

    /// A handle on the test's bus: the same LocalBus, or a new NATS connection (as a
    /// separate process would have).
    async fn bus(&self) -> Arc<dyn Bus> {
        match self {
            Harness::Local(bus) => Arc::new(bus.clone()),
            Harness::Nats(server) => Arc::new(
                bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
                    .await
                    .expect("cannot connect to the test nats-server"),
            ),
        }
    }
}

fn spec(role: &str, ops: &[&str]) -> ServiceSpec {
    let role = Role::new(role).unwrap();
    ServiceSpec {
        endpoints: ops
            .iter()
            .map(|op| Endpoint {
                subject: role.subject(op),
                queue_group: role.queue_group(),
            })
            .collect(),
        info: RoleInfo {
            role,
            version: "1.0.0".to_owned(),
            kind: RoleKind::Retriever,
            ops: ops.iter().map(|op| (*op).to_owned()).collect(),
        },
    }
}

/// Replies with the request's payload reversed, its `X-Req` header echoed, and
/// `X-Served-By: name`, after `delay`.
fn reverser(name: &'static str, delay: Duration) -> Arc<dyn Handler> {
    Arc::new(
        move |_subject: String, request: Message| -> BoxFuture<'static, Message> {
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                let mut headers = Headers::new();
                headers.insert("X-Served-By".to_owned(), name.to_owned());
                if let Some(value) = request.headers.get("X-Req") {
                    headers.insert("X-Req-Echo".to_owned(), value.clone());
                }
                let mut payload = request.payload.to_vec();
                payload.reverse();
                Message {
                    headers,
                    payload: Bytes::from(payload),
                }
            })
        },
    )
}

fn message(payload: &'static [u8]) -> Message {
    let mut headers = Headers::new();
    headers.insert("X-Req".to_owned(), "question-7".to_owned());
    Message {
        headers,
        payload: Bytes::from_static(payload),
    }
}

async fn request_reply_carries_headers(harness: Harness) {
    let server_bus = harness.bus().await;
    let client_bus = harness.bus().await;
    let spec = spec("alpha", &["reverse"]);
    let subject = spec.endpoints[0].subject.clone();
    let service = bounded(server_bus.serve(spec, reverser("a", Duration::ZERO)))
        .await
        .unwrap();
    let reply = bounded(client_bus.request(&subject, message(b"abc"), WAIT))
        .await
        .unwrap();
    assert_eq!(&reply.payload[..], b"cba");
    assert_eq!(
        reply.headers.get("X-Served-By").map(String::as_str),
        Some("a")
    );
    assert_eq!(
        reply.headers.get("X-Req-Echo").map(String::as_str),
        Some("question-7")
    );
    bounded(service.stop(Duration::from_secs(5))).await;
}

async fn slow_handler_times_out(harness: Harness) {
    let server_bus = harness.bus().await;
    let client_bus = harness.bus().await;
    let spec = spec("slow", &["reverse"]);
    let subject = spec.endpoints[0].subject.clone();
    let service = bounded(server_bus.serve(spec, reverser("slow", Duration::from_secs(3))))
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let error = bounded(client_bus.request(&subject, message(b"x"), Duration::from_millis(200)))
        .await
        .unwrap_err();
    assert!(matches!(error, BusError::TimedOut { .. }), "{error:?}");
    assert!(error.is_retryable());
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the timeout was not honoured: {:?}",
        started.elapsed()
    );
    bounded(service.stop(Duration::from_millis(10))).await;
}

async fn nobody_serving_is_no_responders(harness: Harness) {
    let client_bus = harness.bus().await;
    let started = std::time::Instant::now();
    let error = bounded(client_bus.request(
        &Role::new("ghost").unwrap().subject("reverse"),
        message(b"x"),
        Duration::from_secs(5),
    ))
    .await
    .unwrap_err();
    assert!(matches!(error, BusError::NoResponders { .. }), "{error:?}");
    // No responders is known at once; it must not wait for the timeout.
    assert!(started.elapsed() < Duration::from_secs(4));
}

async fn queue_group_spreads_between_servers(harness: Harness) {
    let bus_a = harness.bus().await;
    let bus_b = harness.bus().await;
    let client_bus = harness.bus().await;
    let spec = spec("spread", &["reverse"]);
    let subject = spec.endpoints[0].subject.clone();
    let service_a = bounded(bus_a.serve(spec.clone(), reverser("a", Duration::ZERO)))
        .await
        .unwrap();
    let service_b = bounded(bus_b.serve(spec, reverser("b", Duration::ZERO)))
        .await
        .unwrap();
    let (mut by_a, mut by_b) = (0, 0);
    for _ in 0..100 {
        let reply = bounded(client_bus.request(&subject, message(b"ab"), WAIT))
            .await
            .unwrap();
        match reply.headers.get("X-Served-By").map(String::as_str) {
            Some("a") => by_a += 1,
            Some("b") => by_b += 1,
            other => panic!("unexpected server {other:?}"),
        }
    }
    // Exactly one member of the group answers each request...
    assert_eq!(by_a + by_b, 100);
    // ...and both take a real share (NATS picks at random: 10 of 100 is far in the tail).
    assert!(by_a >= 10 && by_b >= 10, "a served {by_a}, b served {by_b}");
    bounded(service_a.stop(Duration::from_secs(5))).await;
    bounded(service_b.stop(Duration::from_secs(5))).await;
}

async fn oversized_payload_is_refused(harness: Harness) {
    let server_bus = harness.bus().await;
    let client_bus = harness.bus().await;
    let spec = spec("big", &["reverse"]);
    let subject = spec.endpoints[0].subject.clone();
    let service = bounded(server_bus.serve(spec, reverser("a", Duration::ZERO)))
        .await
        .unwrap();
    let limit = client_bus.max_payload();
    assert!(limit >= 64 * 1024, "limit {limit} is too small for kgmesh");
    let too_big = Message {
        headers: Headers::new(),
        payload: Bytes::from(vec![7u8; limit + 1]),
    };
    let error = bounded(client_bus.request(&subject, too_big, WAIT))
        .await
        .unwrap_err();
    assert!(
        matches!(error, BusError::PayloadTooLarge { size, limit: l } if size == limit + 1 && l == limit),
        "{error:?}"
    );
    let error = bounded(client_bus.publish(
        &subject,
        Message {
            headers: Headers::new(),
            payload: Bytes::from(vec![7u8; limit + 1]),
        },
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(error, BusError::PayloadTooLarge { .. }),
        "{error:?}"
    );
    // A payload at the limit's scale that fits still goes through.
    let fits = Message {
        headers: Headers::new(),
        payload: Bytes::from(vec![1u8; 64 * 1024]),
    };
    let reply = bounded(client_bus.request(&subject, fits, WAIT))
        .await
        .unwrap();
    assert_eq!(reply.payload.len(), 64 * 1024);
    bounded(service.stop(Duration::from_secs(5))).await;
}

async fn discover_lists_instances_with_replica_counts(harness: Harness) {
    let bus_a = harness.bus().await;
    let bus_b = harness.bus().await;
    let bus_c = harness.bus().await;
    let client_bus = harness.bus().await;
    let alpha = spec("alpha", &["reverse", "expand"]);
    let subject = alpha.endpoints[0].subject.clone();
    let alpha_1 = bounded(bus_a.serve(alpha.clone(), reverser("a1", Duration::ZERO)))
        .await
        .unwrap();
    let alpha_2 = bounded(bus_b.serve(alpha, reverser("a2", Duration::ZERO)))
        .await
        .unwrap();
    let beta = bounded(bus_c.serve(spec("beta", &["reverse"]), reverser("b", Duration::ZERO)))
        .await
        .unwrap();
    for _ in 0..6 {
        bounded(client_bus.request(&subject, message(b"q"), WAIT))
            .await
            .unwrap();
    }
    let instances = bounded(client_bus.discover(Duration::from_millis(500)))
        .await
        .unwrap();
    let counts = replica_counts(&instances);
    assert_eq!(counts.get("alpha"), Some(&2), "{instances:?}");
    assert_eq!(counts.get("beta"), Some(&1), "{instances:?}");
    assert_eq!(counts.len(), 2, "{instances:?}");
    let alpha_instances: Vec<_> = instances
        .iter()
        .filter(|i| i.info.role.as_str() == "alpha")
        .collect();
    for instance in &alpha_instances {
        assert_eq!(instance.info.kind, RoleKind::Retriever);
        assert_eq!(instance.info.version, "1.0.0");
        let mut ops = instance.info.ops.clone();
        ops.sort();
        assert_eq!(ops, vec!["expand".to_owned(), "reverse".to_owned()]);
    }
    let served: u64 = alpha_instances.iter().map(|i| i.requests).sum();
    assert_eq!(served, 6, "{instances:?}");
    let mut ids: Vec<&str> = instances.iter().map(|i| i.instance_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&alpha_1.instance_id()));

    // A stopped instance leaves the listing.
    bounded(alpha_2.stop(Duration::from_secs(5))).await;
    let instances = bounded(client_bus.discover(Duration::from_millis(500)))
        .await
        .unwrap();
    assert_eq!(replica_counts(&instances).get("alpha"), Some(&1));
    bounded(alpha_1.stop(Duration::from_secs(5))).await;
    bounded(beta.stop(Duration::from_secs(5))).await;
}

async fn stop_drains_in_flight_requests(harness: Harness) {
    let server_bus = harness.bus().await;
    let client_bus = harness.bus().await;
    let spec = spec("drain", &["reverse"]);
    let subject = spec.endpoints[0].subject.clone();
    let started = Arc::new(AtomicUsize::new(0));
    let started_in_handler = started.clone();
    let slow: Arc<dyn Handler> = Arc::new(
        move |subject: String, request: Message| -> BoxFuture<'static, Message> {
            started_in_handler.fetch_add(1, Ordering::SeqCst);
            reverser("slow", Duration::from_millis(600)).handle(subject, request)
        },
    );
    let service = bounded(server_bus.serve(spec, slow)).await.unwrap();
    let in_flight = {
        let client_bus = client_bus.clone();
        let subject = subject.clone();
        tokio::spawn(async move { client_bus.request(&subject, message(b"xyz"), WAIT).await })
    };
    // Stop only once the handler is running.
    bounded(async {
        while started.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    bounded(service.stop(Duration::from_secs(10))).await;
    let reply = bounded(in_flight)
        .await
        .unwrap()
        .expect("in-flight request was dropped");
    assert_eq!(&reply.payload[..], b"zyx");
    let error = bounded(client_bus.request(&subject, message(b"late"), Duration::from_secs(2)))
        .await
        .unwrap_err();
    assert!(matches!(error, BusError::NoResponders { .. }), "{error:?}");
}

macro_rules! contract_suite {
    ($name:ident, $harness:expr) => {
        mod $name {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn request_reply_carries_headers() {
                super::request_reply_carries_headers($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn slow_handler_times_out() {
                super::slow_handler_times_out($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn nobody_serving_is_no_responders() {
                super::nobody_serving_is_no_responders($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn queue_group_spreads_between_servers() {
                super::queue_group_spreads_between_servers($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn oversized_payload_is_refused() {
                super::oversized_payload_is_refused($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn discover_lists_instances_with_replica_counts() {
                super::discover_lists_instances_with_replica_counts($harness).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stop_drains_in_flight_requests() {
                super::stop_drains_in_flight_requests($harness).await;
            }
        }
    };
}

contract_suite!(local, Harness::local());
contract_suite!(nats, Harness::nats());

#[tokio::test]
async fn unreachable_nats_is_a_clear_error() {
    let port = kgmesh_testkit::nats::free_port();
    let options = NatsOptions {
        connect_timeout: Duration::from_secs(2),
        ..NatsOptions::default()
    };
    let error = bounded(NatsBus::connect(
        &format!("nats://127.0.0.1:{port}"),
        options,
    ))
    .await
    .unwrap_err();
    assert!(error.to_string().contains("cannot connect"), "{error}");
}

#[tokio::test]
async fn local_bus_random_selection_spreads_too() {
    let bus = LocalBus::with_options(kgmesh_bus::LocalBusOptions {
        selection: kgmesh_bus::Selection::Random,
        ..Default::default()
    });
    let harness = Harness::Local(bus);
    queue_group_spreads_between_servers(harness).await;
}
