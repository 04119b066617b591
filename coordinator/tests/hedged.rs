//! A frozen replica (it takes requests and never answers) costs a question one hedge
//! delay, not the call timeout: the call is sent again to the other replica, whose
//! reply wins. Without hedging the same question waits out the timeout.

mod support;

use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use futures::future::BoxFuture;
use kgmesh_bus::{
    Bus, Endpoint, LocalBus, LocalBusOptions, Message, Selection, ServiceHandle, ServiceSpec,
};
use kgmesh_coordinator::{CoordinatorConfig, HedgePolicy};
use kgmesh_schemas::{
    budget::Cost,
    envelope::{headers, CANCEL_OP},
    messages::{
        ask::{AskOptions, AskRequest},
        retrieve::RetrieveRequest,
    },
    Reply, Role, RoleInfo, RoleKind, Rpc,
};
use support::*;

/// Call ids, as the frozen replica saw them.
type CallIds = Arc<Mutex<Vec<String>>>;

/// A path-follower replica that takes retrieve requests and never answers, recording
/// their call ids, and records the call ids of the cancel messages it gets.
async fn frozen_replica(
    bus: &Arc<LocalBus>,
    taken: CallIds,
    cancelled: CallIds,
) -> Box<dyn ServiceHandle> {
    let role = Role::well_known(Role::PATH_FOLLOWER);
    let retrieve = role.subject(RetrieveRequest::OP);
    let spec = ServiceSpec {
        info: RoleInfo {
            role: role.clone(),
            version: "test".into(),
            kind: RoleKind::Retriever,
            ops: vec![RetrieveRequest::OP.to_owned()],
        },
        endpoints: [retrieve.clone(), role.subject(CANCEL_OP)]
            .into_iter()
            .map(|subject| Endpoint {
                subject,
                queue_group: role.queue_group(),
            })
            .collect(),
    };
    let handler = move |subject: String, message: Message| -> BoxFuture<'static, Message> {
        let call_id = message.headers.get(headers::CALL_ID).cloned();
        let record = if subject == retrieve {
            &taken
        } else {
            &cancelled
        };
        record.lock().unwrap().extend(call_id);
        if subject == retrieve {
            Box::pin(std::future::pending())
        } else {
            Box::pin(async { Message::default() })
        }
    };
    bus.serve(spec, Arc::new(handler)).await.expect("serves")
}

/// Two path-follower replicas, the first frozen; each request goes to one at random.
async fn frozen_and_healthy(bus: &Arc<LocalBus>) -> Vec<Box<dyn kgmesh_bus::ServiceHandle>> {
    frozen_and_healthy_recording(bus, CallIds::default(), CallIds::default()).await
}

async fn frozen_and_healthy_recording(
    bus: &Arc<LocalBus>,
    taken: CallIds,
    cancelled: CallIds,
) -> Vec<Box<dyn kgmesh_bus::ServiceHandle>> {
    let frozen = frozen_replica(bus, taken, cancelled).await;
    let healthy = serve::<RetrieveRequest, _, _>(
        bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        |request| async move { Reply::ok(directed_by_mann(&request.body), Cost::default()) },
    )
    .await;
    vec![
        frozen,
        healthy,
        linker_linking_heat(bus, counter()).await,
        ends_summarizer(bus).await,
        recording_judge(bus, Arc::default(), 0).await,
    ]
}

/// A bus that hands each request to a replica at random.
fn random_bus() -> Arc<LocalBus> {
    Arc::new(LocalBus::with_options(LocalBusOptions {
        selection: Selection::Random,
        ..LocalBusOptions::default()
    }))
}

fn config(hedge: bool) -> CoordinatorConfig {
    CoordinatorConfig {
        call_timeout: Duration::from_secs(3),
        hedge: HedgePolicy {
            enabled: hedge,
            min_delay: Duration::from_millis(20),
            max_delay: Duration::from_millis(100),
            first_delay: Duration::from_millis(100),
        },
        ..test_config()
    }
}

fn question() -> AskRequest {
    AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions {
            no_cache: true,
            ..AskOptions::default()
        },
    }
}

#[tokio::test]
async fn a_frozen_replica_costs_one_hedge_delay_not_the_timeout() {
    let bus = random_bus();
    let (taken, cancelled) = (CallIds::default(), CallIds::default());
    let _handles = frozen_and_healthy_recording(&bus, taken.clone(), cancelled.clone()).await;
    let coordinator = coordinator(&bus, config(true));
    // Half the requests go to the frozen replica, at random: ask until it has taken
    // one (eight questions at least, at most 64, so that missing it by chance is
    // 2^-64, not the 2^-8 of a fixed eight).
    for asked in 0..64 {
        if asked >= 8 && !taken.lock().unwrap().is_empty() {
            break;
        }
        let started = Instant::now();
        let reply = bounded(coordinator.ask(question()))
            .await
            .expect("answered");
        let took = started.elapsed();
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert!(reply.degraded.is_empty(), "{:?}", reply.degraded);
        assert!(!reply.partial);
        assert!(
            took < Duration::from_secs(1),
            "a question took {took:?} with a frozen replica"
        );
    }
    // Every call the frozen replica took was hedged, won elsewhere, and cancelled
    // there by its call id.
    let taken = taken.lock().unwrap().clone();
    assert!(!taken.is_empty(), "no request reached the frozen replica");
    let cancelled = cancelled.lock().unwrap().clone();
    for call_id in &taken {
        assert!(
            cancelled.contains(call_id),
            "{call_id} not cancelled: {cancelled:?}"
        );
    }
}

#[tokio::test]
async fn without_hedging_a_frozen_replica_costs_the_timeout() {
    let bus = random_bus();
    let _handles = frozen_and_healthy(&bus).await;
    let coordinator = coordinator(&bus, config(false));
    // Until a question's first request lands on the frozen replica (half of them do, at
    // random: 40 questions miss it by chance once in 2^40).
    for _ in 0..40 {
        let started = Instant::now();
        let reply = bounded(coordinator.ask(question()))
            .await
            .expect("answered");
        if started.elapsed() >= Duration::from_secs(3) {
            assert!(
                reply
                    .degraded
                    .iter()
                    .any(|d| d.role == Role::PATH_FOLLOWER && d.reason == "timeout"),
                "the wait was not reported as a degradation: {:?}",
                reply.degraded
            );
            return;
        }
    }
    panic!("no question of 40 waited for the frozen replica");
}

/// A replica that stops answering discovery (frozen, or killed a moment ago) still
/// counts among the role's recent replicas, so calls to the role stay hedged to the
/// live one.
#[tokio::test]
async fn a_replica_gone_from_discovery_still_counts_for_hedging() {
    let bus = Arc::new(LocalBus::new());
    let first = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let second = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let directory = kgmesh_coordinator::RoleDirectory::new(
        bus.clone(),
        Duration::from_millis(1),
        Duration::from_millis(10),
        kgmesh_coordinator::AllowedRoles::default(),
    );
    let snapshot = bounded(directory.refresh()).await.expect("discovered");
    assert_eq!(snapshot.instances(Role::PATH_FOLLOWER).len(), 2);
    bounded(first.stop(Duration::from_secs(1))).await;
    let snapshot = bounded(directory.refresh()).await.expect("discovered");
    assert_eq!(
        snapshot.instances(Role::PATH_FOLLOWER),
        [second.instance_id().to_owned()]
    );
    assert_eq!(snapshot.recent_replicas(Role::PATH_FOLLOWER), 2);
    // A role only ever seen with one replica is not hedged.
    assert_eq!(snapshot.recent_replicas(Role::SUMMARIZER), 0);
}
