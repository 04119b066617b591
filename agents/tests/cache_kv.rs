//! Two cache-manager replicas share one plan cache through NATS JetStream KV, and the
//! cache survives a restart of the NATS server (JetStream persists to disk); feedback
//! given to one replica reaches the other, verdicts held for confirmation are counted
//! across replicas, and every change is audited in the bucket's audit stream, from
//! which a revert restores a plan both replicas replay.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kgmesh_agents::cache_manager::{
    audit::{self, AuditAction},
    persist::{KvPlanStore, PlanStore},
    role::CacheManager,
    CacheConfig,
};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep},
    messages::cache::{
        CacheEntry, CacheFeedback, CacheFeedbackReply, CacheLookup, CacheStore, Feedback,
        FeedbackOutcome, Isr, Plan, Principal,
    },
    NodeId,
};
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph, GraphStore};
use kgmesh_testkit::nats::NatsServer;

fn entry(question: &str, entity: &str, relation: &str) -> CacheEntry {
    CacheEntry {
        question: question.to_owned(),
        template: String::new(),
        isr: Isr::default(),
        plan: Plan {
            entities: vec![Entity {
                id: NodeId(1),
                name: entity.to_owned(),
            }],
            metapaths: vec![Metapath {
                steps: vec![RelationStep {
                    relation: relation.to_owned(),
                    direction: Direction::Out,
                }],
            }],
            cypher: Vec::new(),
        },
        answers: vec!["x".to_owned()],
        // Verified once already (as `kgmesh cache warm` imports them): replayable.
        hits: 1,
        failures: 0,
    }
}

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("timed out")
}

async fn connect(url: &str) -> async_nats::Client {
    within(async_nats::connect(url))
        .await
        .expect("connect to nats-server")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_share_entries_and_survive_a_server_restart() {
    let mut server = NatsServer::start();
    let url = server.url();
    let store_a: Arc<dyn PlanStore> = Arc::new(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
    let store_b = Arc::new(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
    let replica_a = CacheManager::new(CacheConfig::default(), Some(store_a.clone()), None, None);
    let replica_b = Arc::new(CacheManager::new(
        CacheConfig::default(),
        Some(store_b.clone()),
        None,
        None,
    ));

    // Replica B follows changes made elsewhere.
    let mut watch = within(store_b.watch()).await.unwrap();
    let follower = replica_b.clone();
    let watcher = tokio::spawn(async move {
        let mut applied = 0;
        while let Some(Ok(change)) = watch.next().await {
            follower.apply_remote(&change.key, KvPlanStore::decode(&change));
            applied += 1;
            if applied == 20 {
                break;
            }
        }
        applied
    });

    // Concurrent writers of different entries lose nothing.
    let relations = [
        "directed_by",
        "written_by",
        "starred_actors",
        "release_year",
        "has_genre",
    ];
    let mut writes = Vec::new();
    for i in 0..20 {
        let relation = relations[i % relations.len()];
        let question = format!("question {i} about Heat via {relation}");
        let replica = if i % 2 == 0 { &replica_a } else { &*replica_b };
        writes.push(replica.store(CacheStore {
            entry: entry(&question, "Heat", relation),
        }));
    }
    for result in within(futures::future::join_all(writes)).await {
        assert!(result.unwrap().stored);
    }
    assert_eq!(within(store_a.load_all()).await.unwrap().len(), 20);
    assert_eq!(
        within(watcher).await.unwrap(),
        20,
        "replica B saw every write"
    );
    assert_eq!(replica_b.len(), 20);

    // A third replica started after a server restart loads the shared cache.
    server.restart();
    let store_c = Arc::new(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
    let replica_c = CacheManager::new(CacheConfig::default(), Some(store_c), None, None);
    let ctx = kgmesh_agents::runtime::CallContext::for_test("cache-manager");
    let found = within(replica_c.lookup(
        &ctx,
        CacheLookup {
            question: "question 3 about Alien via release_year".to_owned(),
            entities: vec![Entity {
                id: NodeId(9),
                name: "Alien".to_owned(),
            }],
            k: 5,
        },
    ))
    .await
    .unwrap();
    assert_eq!(replica_c.len(), 20);
    let replay = found.replay.expect("same template after restart");
    assert_eq!(replay.metapaths[0].steps[0].relation, "release_year");
    assert_eq!(replay.entities[0].name, "Alien");
}

fn graph() -> Arc<dyn GraphStore> {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in [
        ("Heat", "directed_by", "Michael Mann"),
        ("Heat", "starred_actors", "Al Pacino"),
        ("Alien", "directed_by", "Ridley Scott"),
        ("Alien", "starred_actors", "Sigourney Weaver"),
        ("Ronin", "directed_by", "John Frankenheimer"),
        ("Ronin", "starred_actors", "Robert De Niro"),
    ] {
        let head = builder.node(head);
        let tail = builder.node(tail);
        builder.add_edge(head, relation, tail);
    }
    let graph: EmbeddedGraph = builder.finish();
    Arc::new(graph)
}

/// Polls `check` every 20 ms until it holds; fails after 10 s.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn replayed_relation(replica: &CacheManager, question: &str) -> Option<String> {
    let ctx = kgmesh_agents::runtime::CallContext::for_test("cache-manager");
    let lookup = CacheLookup {
        question: question.to_owned(),
        entities: Vec::new(),
        k: 5,
    };
    within(replica.lookup(&ctx, lookup))
        .await
        .unwrap()
        .replay
        .map(|plan| plan.metapaths[0].steps[0].relation.clone())
}

async fn feedback(replica: &CacheManager, question: &str, verdict: Feedback) -> FeedbackOutcome {
    feedback_as(replica, &Principal::anonymous(), question, verdict)
        .await
        .outcome
}

async fn feedback_as(
    replica: &CacheManager,
    principal: &Principal,
    question: &str,
    verdict: Feedback,
) -> CacheFeedbackReply {
    let ctx = kgmesh_agents::runtime::CallContext::for_test("cache-manager");
    let request = CacheFeedback {
        question: question.to_owned(),
        verdict,
        principal: principal.clone(),
    };
    within(replica.feedback(&ctx, request)).await.unwrap()
}

fn user(name: &str, admin: bool) -> Principal {
    Principal {
        name: name.to_owned(),
        admin,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_to_either_replica_is_held_counted_audited_and_reverted() {
    let server = NatsServer::start();
    let url = server.url();
    let store_a = Arc::new(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
    let replica = |store: Arc<KvPlanStore>| {
        CacheManager::new(CacheConfig::default(), Some(store), Some(graph()), None)
    };
    let replica_a = replica(store_a.clone());
    let replica_b = replica(Arc::new(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    ));
    // Both load the (empty) shared cache and start following it.
    assert_eq!(
        replayed_relation(&replica_a, "who directed Alien").await,
        None
    );
    assert_eq!(
        replayed_relation(&replica_b, "who directed Alien").await,
        None
    );

    // A wrong plan, verified once, reaches replica B.
    let mut wrong = entry("who directed Heat", "Heat", "starred_actors");
    wrong.plan.entities[0].id = NodeId(0);
    let stored = within(replica_a.store(CacheStore { entry: wrong }))
        .await
        .unwrap();
    assert!(stored.stored);
    let mut replayed_on_b = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while replayed_on_b.is_none() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "B never saw the plan"
        );
        replayed_on_b = replayed_relation(&replica_b, "who directed Alien").await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(replayed_on_b.as_deref(), Some("starred_actors"));

    // "Wrong" from one principal, on both replicas: held, counted once across them.
    for replica in [&replica_a, &replica_b] {
        let reply = feedback_as(
            replica,
            &Principal::anonymous(),
            "who directed Alien",
            Feedback::Incorrect,
        )
        .await;
        assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
        let confirmations = reply.confirmations.unwrap();
        assert_eq!((confirmations.have, confirmations.need), (1, Some(3)));
    }
    let reply = feedback_as(
        &replica_a,
        &user("alice", false),
        "who directed Ronin",
        Feedback::Incorrect,
    )
    .await;
    assert_eq!(reply.confirmations.clone().unwrap().have, 2, "{reply:?}");
    let key = reply.key.expect("a template key");
    assert!(replica_b.get(&key).is_some(), "still held");
    // The third distinct principal, on the other replica, removes it for both.
    let reply = feedback_as(
        &replica_b,
        &user("bob", false),
        "who directed Heat",
        Feedback::Incorrect,
    )
    .await;
    assert_eq!(reply.outcome, FeedbackOutcome::Dropped, "{reply:?}");
    eventually("A drops the plan", || replica_a.get(&key).is_none()).await;
    assert_eq!(
        replayed_relation(&replica_a, "who directed Alien").await,
        None
    );

    // A correction for the template that now has no plan is learned, and A replays it.
    assert_eq!(
        feedback(
            &replica_b,
            "who directed Ronin",
            Feedback::Answers(vec!["John Frankenheimer".to_owned()])
        )
        .await,
        FeedbackOutcome::Learned
    );
    eventually("A learns the corrected plan", || {
        replica_a
            .get(&key)
            .is_some_and(|e| e.plan.metapaths[0].steps[0].relation == "directed_by")
    })
    .await;

    // The attack: one principal "corrects" the director with an actor, three times.
    for _ in 0..3 {
        let reply = feedback_as(
            &replica_a,
            &user("mallory", false),
            "who directed Heat",
            Feedback::Answers(vec!["Al Pacino".to_owned()]),
        )
        .await;
        assert_eq!(reply.outcome, FeedbackOutcome::Pending, "{reply:?}");
        let confirmations = reply.confirmations.unwrap();
        assert_eq!((confirmations.have, confirmations.need), (1, None));
        assert!(confirmations.flagged.is_some());
    }
    assert_eq!(
        replayed_relation(&replica_b, "who directed Alien")
            .await
            .as_deref(),
        Some("directed_by")
    );

    // An admin applies it alone; both replicas replay it.
    let reply = feedback_as(
        &replica_b,
        &user("ops", true),
        "who directed Heat",
        Feedback::Answers(vec!["Al Pacino".to_owned()]),
    )
    .await;
    assert_eq!(reply.outcome, FeedbackOutcome::Learned, "{reply:?}");
    eventually("A replays the admin's plan", || {
        replica_a
            .get(&key)
            .is_some_and(|e| e.plan.metapaths[0].steps[0].relation == "starred_actors")
    })
    .await;

    // The audit stream holds every change, newest first.
    let history = within(store_a.history(Some(&key), 50)).await.unwrap();
    let actions: Vec<(AuditAction, &str)> = history
        .iter()
        .map(|e| (e.action, e.principal.name.as_str()))
        .collect();
    assert_eq!(
        actions,
        [
            (AuditAction::Learned, "ops"),
            (AuditAction::Held, "mallory"),
            (AuditAction::Learned, "anonymous"),
            (AuditAction::Removed, "bob"),
            (AuditAction::Held, "alice"),
            (AuditAction::Held, "anonymous"),
            (AuditAction::Stored, "verified-run"),
        ],
        "{history:#?}"
    );
    assert!(history.windows(2).all(|w| w[0].id > w[1].id));

    // Reverting the admin's change restores the director's plan on both replicas.
    let reverted = within(audit::revert(
        store_a.as_ref(),
        history[0].id,
        &Principal::local(),
    ))
    .await
    .unwrap();
    assert_eq!(reverted.action, AuditAction::Reverted);
    for replica in [&replica_a, &replica_b] {
        eventually("the revert reaches the replica", || {
            replica
                .get(&key)
                .is_some_and(|e| e.plan.metapaths[0].steps[0].relation == "directed_by")
        })
        .await;
        assert_eq!(
            replayed_relation(replica, "who directed Alien")
                .await
                .as_deref(),
            Some("directed_by")
        );
    }
    let newest = within(store_a.history(None, 1)).await.unwrap();
    assert_eq!(newest[0].id, reverted.id);
    assert_eq!(newest[0].principal, Principal::local());
}
