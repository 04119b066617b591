//! Two cache-manager replicas share one plan cache through NATS JetStream KV, and the
//! cache survives a restart of the NATS server (JetStream persists to disk); feedback
//! given to one replica reaches the other.

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kgmesh_agents::cache_manager::{
    persist::{KvPlanStore, PlanStore},
    role::CacheManager,
    CacheConfig,
};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep},
    messages::cache::{
        CacheEntry, CacheFeedback, CacheLookup, CacheStore, Feedback, FeedbackOutcome, Isr, Plan,
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
    let ctx = kgmesh_agents::runtime::CallContext::for_test("cache-manager");
    let request = CacheFeedback {
        question: question.to_owned(),
        verdict,
        principal: kgmesh_schemas::messages::cache::Principal::anonymous(),
    };
    within(replica.feedback(&ctx, request))
        .await
        .unwrap()
        .outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feedback_to_one_replica_demotes_drops_and_teaches_the_other() {
    let server = NatsServer::start();
    let url = server.url();
    let replica = |store: KvPlanStore| {
        CacheManager::new(
            CacheConfig::default(),
            Some(Arc::new(store)),
            Some(graph()),
            None,
        )
    };
    let replica_a = replica(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
    let replica_b = replica(
        within(KvPlanStore::open(connect(&url).await, "kgmesh-plans"))
            .await
            .unwrap(),
    );
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

    // Replica A hears it was wrong: demoted (one success, one failure).
    let ctx = kgmesh_agents::runtime::CallContext::for_test("cache-manager");
    let reply = within(replica_a.feedback(
        &ctx,
        CacheFeedback {
            question: "who directed Alien".to_owned(),
            verdict: Feedback::Incorrect,
            principal: kgmesh_schemas::messages::cache::Principal::anonymous(),
        },
    ))
    .await
    .unwrap();
    assert_eq!(reply.outcome, FeedbackOutcome::Demoted, "{reply:?}");
    let key = reply.key.expect("a template key");
    // B mirrors the counts exactly, so its own feedback continues from them.
    eventually("B holds the demotion", || {
        replica_b
            .get(&key)
            .is_some_and(|e| (e.hits, e.failures) == (1, 1))
    })
    .await;
    assert_eq!(
        feedback(&replica_b, "who directed Ronin", Feedback::Incorrect).await,
        FeedbackOutcome::Dropped
    );
    // A no longer replays the plan B dropped, and neither does B.
    eventually("A drops the plan", || replica_a.get(&key).is_none()).await;
    assert_eq!(
        replayed_relation(&replica_a, "who directed Alien").await,
        None
    );
    assert_eq!(
        replayed_relation(&replica_b, "who directed Alien").await,
        None
    );

    // A correction given to B becomes the plan A replays.
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
        replica_a.get(&key).is_some_and(|e| {
            e.plan.metapaths[0].steps[0].relation == "directed_by" && e.failures == 0
        })
    })
    .await;
    assert_eq!(
        replayed_relation(&replica_a, "who directed Alien")
            .await
            .as_deref(),
        Some("directed_by")
    );
}
