//! The runtime's promises, on the in-process bus and on a real nats-server.

use std::{
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use kgmesh_bus::{typed::CallError, Bus, BusError, LocalBus, NatsBus, NatsOptions};
use kgmesh_schemas::{
    messages::echo::{EchoReply, EchoRequest},
    AgentError, Budget, Deadline, Meta, QuestionId, Role, RoleKind,
};
use kgmesh_testkit::nats::NatsServer;

use super::{start_role, AgentDeps, CallContext, Client, RoleSpec, RuntimeError};

const WAIT: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .expect("did not finish in time")
}

fn meta() -> Meta {
    Meta::new(QuestionId::new_random(), 1, Budget::default())
}

fn role() -> Role {
    Role::new("tester").unwrap()
}

/// A role whose behaviour the request text selects.
fn tester(calls: Arc<AtomicUsize>) -> RoleSpec {
    RoleSpec::new(role(), RoleKind::Core).op(move |ctx: CallContext, request: EchoRequest| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            match request.text.as_str() {
                "panic" => panic!("the handler blew up"),
                "slow" => tokio::time::sleep(Duration::from_millis(700)).await,
                "forever" => tokio::time::sleep(Duration::from_secs(3600)).await,
                "fail" => {
                    return Err(AgentError::InvalidQuery {
                        reason: "no such relation".into(),
                        hint: Some("use directed_by".into()),
                    })
                }
                _ => {}
            }
            ctx.record_graph(12, Duration::from_millis(1));
            ctx.record_llm_call(100, 20, Duration::from_millis(2));
            Ok(EchoReply {
                text: request.text,
                served_by: ctx.served_by(),
            })
        }
    })
}

async fn call(
    client: &Client,
    meta: &Meta,
    text: &str,
) -> Result<(EchoReply, kgmesh_schemas::budget::Cost), CallError> {
    bounded(client.call(&role(), meta, &EchoRequest { text: text.into() })).await
}

async fn runtime_contract(bus: Arc<dyn Bus>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let handle = bounded(start_role(bus.clone(), tester(calls.clone())))
        .await
        .unwrap();
    assert_eq!(handle.info().ops, vec!["echo".to_owned()]);
    let client = Client::new(bus.clone()).with_timeout(Duration::from_secs(5));

    // The handler's recorded cost comes back with the runtime's additions.
    let (reply, cost) = call(&client, &meta(), "hello").await.unwrap();
    assert_eq!(reply.text, "hello");
    assert!(reply.served_by.ends_with(handle.instance_id()));
    assert_eq!(cost.graph_rows, 12);
    assert_eq!(cost.llm_calls, 1);
    assert_eq!(cost.prompt_tokens, 100);
    assert_eq!(cost.bus_messages, 1);
    assert_eq!(cost.llm_us, 2_000);
    assert_eq!(cost.store_us, 1_000);
    assert!(cost.elapsed_us > 0, "{cost:?}");

    // Typed agent errors cross the wire as they are.
    let error = call(&client, &meta(), "fail").await.unwrap_err();
    assert!(
        matches!(&error, CallError::Agent { error: AgentError::InvalidQuery { hint: Some(h), .. }, .. } if h == "use directed_by"),
        "{error:?}"
    );

    // A panic becomes an Internal error reply and the role keeps serving.
    let error = call(&client, &meta(), "panic").await.unwrap_err();
    assert!(
        matches!(&error, CallError::Agent { error: AgentError::Internal { detail }, .. } if detail.contains("blew up")),
        "{error:?}"
    );
    assert_eq!(
        call(&client, &meta(), "after").await.unwrap().0.text,
        "after"
    );

    // The question's deadline is enforced while the handler runs...
    let mut short = meta();
    short.budget.deadline = Deadline::after(Duration::from_millis(300));
    let error = call(&client, &short, "forever").await.unwrap_err();
    assert!(
        matches!(
            &error,
            CallError::Agent {
                error: AgentError::Timeout { .. },
                ..
            }
        ),
        "{error:?}"
    );
    // ...and a request whose deadline already passed is not sent at all.
    let before = calls.load(Ordering::SeqCst);
    let mut past = meta();
    past.budget.deadline = Deadline { unix_ms: 1 };
    let error = call(&client, &past, "hello").await.unwrap_err();
    assert!(
        matches!(&error, CallError::Bus(BusError::TimedOut { .. })),
        "{error:?}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), before);

    // Stopping drains a call in flight, then the role is gone.
    let in_flight = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, &meta(), "slow").await })
    };
    bounded(async {
        while calls.load(Ordering::SeqCst) == before {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    bounded(handle.stop(Duration::from_secs(10))).await;
    let (reply, _) = bounded(in_flight)
        .await
        .unwrap()
        .expect("in-flight call lost");
    assert_eq!(reply.text, "slow");
    let error = call(&client.clone().with_retries(0), &meta(), "late")
        .await
        .unwrap_err();
    assert!(
        matches!(&error, CallError::Bus(BusError::NoResponders { .. })),
        "{error:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_on_the_local_bus() {
    runtime_contract(Arc::new(LocalBus::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_on_nats() {
    let server = NatsServer::start();
    let bus = bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
        .await
        .unwrap();
    runtime_contract(Arc::new(bus)).await;
}

/// Inside an actix system (actix-web, `kgmesh ask`) the actor runs on the caller's arbiter.
#[actix::test]
async fn runtime_inside_an_actix_system() {
    runtime_contract(Arc::new(LocalBus::new())).await;
}

#[tokio::test]
async fn client_retries_until_a_replica_appears() {
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
    let starter = {
        let bus = bus.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            start_role(bus, tester(Arc::new(AtomicUsize::new(0)))).await
        })
    };
    let client = Client {
        retries: 6,
        backoff: Duration::from_millis(40),
        ..Client::new(bus.clone())
    };
    let (reply, _) = call(&client, &meta(), "late riser").await.unwrap();
    assert_eq!(reply.text, "late riser");
    let handle = bounded(starter).await.unwrap().unwrap();
    bounded(handle.stop(Duration::from_secs(5))).await;
}

#[tokio::test]
async fn invalid_specs_are_refused() {
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
    let empty = RoleSpec::new(role(), RoleKind::Core);
    let error = bounded(start_role(bus.clone(), empty)).await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::InvalidRole(text) if text.contains("at least one")),
        "{error}"
    );

    let twice = tester(Arc::new(AtomicUsize::new(0))).op(
        |_ctx: CallContext, request: EchoRequest| async move {
            Ok(EchoReply {
                text: request.text,
                served_by: String::new(),
            })
        },
    );
    let error = bounded(start_role(bus.clone(), twice)).await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::InvalidRole(text) if text.contains("twice")),
        "{error}"
    );

    let bad_version = tester(Arc::new(AtomicUsize::new(0))).version("one");
    let error = bounded(start_role(bus, bad_version)).await.unwrap_err();
    assert!(
        matches!(&error, RuntimeError::InvalidRole(text) if text.contains("semantic")),
        "{error}"
    );
}

#[test]
fn only_the_listed_roles_get_the_language_model() {
    let bus = Arc::new(LocalBus::new());
    let model: Arc<dyn kgmesh_models::LanguageModel> =
        Arc::new(crate::testing::ScriptedModel::always(Ok("")));
    let deps = AgentDeps::new(bus).with_llm(model);
    assert!(
        deps.llm_for(Role::AGENTIC_TRAVERSER).is_some(),
        "every role by default"
    );
    let deps = deps.with_llm_roles(vec![Role::SUMMARIZER.to_owned()]);
    assert!(deps.llm_for(Role::SUMMARIZER).is_some());
    assert!(deps.llm_for(Role::AGENTIC_TRAVERSER).is_none());
    assert!(AgentDeps::new(Arc::new(LocalBus::new()))
        .with_llm_roles(vec![Role::SUMMARIZER.to_owned()])
        .llm_for(Role::SUMMARIZER)
        .is_none());
}

#[tokio::test]
async fn a_request_beyond_the_in_flight_limit_is_refused_at_once_as_overloaded() {
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
    let calls = Arc::new(AtomicUsize::new(0));
    let options = super::StartOptions {
        max_in_flight: Some(1),
        ..super::StartOptions::default()
    };
    let handle = bounded(super::start_role_with(
        bus.clone(),
        tester(calls.clone()),
        options,
    ))
    .await
    .unwrap();
    let client = Client::new(bus.clone()).with_retries(0);
    let busy = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, &meta(), "slow").await })
    };
    // The slow request holds the only permit.
    while calls.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = std::time::Instant::now();
    let refused = call(&client, &meta(), "quick").await.unwrap_err();
    assert!(
        matches!(
            &refused,
            CallError::Agent {
                error: AgentError::Overloaded { in_flight: 1 },
                ..
            }
        ),
        "{refused:?}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "not at once"
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the refused request never ran"
    );
    assert!(
        bounded(busy).await.unwrap().is_ok(),
        "the admitted request is served"
    );
    // Once the permit is back, requests are served again.
    assert!(call(&client, &meta(), "again").await.is_ok());
    bounded(handle.stop(Duration::from_secs(5))).await;
}

/// The most requests a role with `workers` workers had in its handler at once, over
/// two concurrent requests whose handler blocks its thread (CPU-bound work).
async fn most_at_once(workers: usize) -> usize {
    let bus: Arc<dyn Bus> = Arc::new(LocalBus::new());
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (now, peak) = (inside.clone(), most.clone());
    let spec =
        RoleSpec::new(role(), RoleKind::Core).op(move |ctx: CallContext, request: EchoRequest| {
            let (now, peak) = (now.clone(), peak.clone());
            async move {
                let current = now.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(current, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(300));
                now.fetch_sub(1, Ordering::SeqCst);
                Ok(EchoReply {
                    text: request.text,
                    served_by: ctx.served_by(),
                })
            }
        });
    let options = super::StartOptions {
        workers,
        ..super::StartOptions::default()
    };
    let handle = bounded(super::start_role_with(bus.clone(), spec, options))
        .await
        .unwrap();
    let client = Client::new(bus.clone());
    let calls: Vec<_> = (0..2)
        .map(|i| {
            let client = client.clone();
            tokio::spawn(async move { call(&client, &meta(), &format!("work {i}")).await })
        })
        .collect();
    for call in calls {
        assert!(bounded(call).await.unwrap().is_ok());
    }
    bounded(handle.stop(Duration::from_secs(5))).await;
    most.load(Ordering::SeqCst)
}

#[tokio::test]
async fn workers_serve_cpu_bound_requests_side_by_side() {
    assert_eq!(
        most_at_once(1).await,
        1,
        "one worker serves one blocking call at a time"
    );
    assert_eq!(most_at_once(2).await, 2, "two workers serve two at once");
}

/// A cancel message naming a call stops that call's work on the instance running it
/// (the loser of a hedged call), on the in-process bus and on a real nats-server;
/// another call's work goes on.
async fn cancel_contract(bus: Arc<dyn Bus>) {
    use kgmesh_bus::typed::{call_to, cancel, Target};
    use kgmesh_schemas::ContentType;

    let handle = bounded(start_role(
        bus.clone(),
        tester(Arc::new(AtomicUsize::new(0))),
    ))
    .await
    .unwrap();
    let instance = handle.bus_instance_id().to_owned();
    let start = |call_id: &'static str, text: &'static str| {
        let bus = bus.clone();
        tokio::spawn(async move {
            let role = role();
            let target = Target {
                call_id: Some(call_id),
                ..Target::role(&role, ContentType::Bincode)
            };
            let request = EchoRequest { text: text.into() };
            call_to(bus.as_ref(), target, meta(), request, WAIT).await
        })
    };
    let forever = start("call-1", "forever");
    let slow = start("call-2", "slow");
    tokio::time::sleep(Duration::from_millis(200)).await;
    bounded(cancel(bus.as_ref(), &role(), &instance, "call-1"))
        .await
        .unwrap();
    let error = bounded(forever).await.unwrap().unwrap_err();
    assert!(
        matches!(&error, CallError::Agent { error: AgentError::Unavailable { detail }, .. } if detail.contains("cancelled")),
        "{error:?}"
    );
    // The other call was not touched, and a cancel of a finished call is harmless.
    let (reply, _) = bounded(slow).await.unwrap().unwrap();
    assert_eq!(reply.text, "slow");
    bounded(cancel(bus.as_ref(), &role(), &instance, "call-2"))
        .await
        .unwrap();
    bounded(handle.stop(Duration::from_secs(5))).await;
}

#[tokio::test]
async fn a_cancel_stops_a_call_on_the_local_bus() {
    cancel_contract(Arc::new(LocalBus::new())).await;
}

#[tokio::test]
async fn a_cancel_stops_a_call_on_nats() {
    let server = NatsServer::start();
    let bus = bounded(NatsBus::connect(&server.url(), NatsOptions::default()))
        .await
        .unwrap();
    cancel_contract(Arc::new(bus)).await;
}
