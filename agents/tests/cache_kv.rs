//! Two cache-manager replicas share one plan cache through NATS JetStream KV, and the
//! cache survives a restart of the NATS server (JetStream persists to disk).

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kgmesh_agents::cache_manager::{
    persist::{KvPlanStore, PlanStore},
    role::CacheManager,
    CacheConfig,
};
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep},
    messages::cache::{CacheEntry, CacheLookup, CacheStore, Isr, Plan},
    NodeId,
};
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
