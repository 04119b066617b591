//! The cache-manager role through the bus: store a verified plan, find it again for a
//! question about another entity, and survive a restart through the file store.

use std::{sync::Arc, time::Duration};

use kgmesh_bus::LocalBus;
use kgmesh_schemas::{
    graph::{Direction, Entity, Metapath, RelationStep},
    messages::cache::{
        CacheEntry, CacheFeedback, CacheLookup, CacheStore, Feedback, FeedbackOutcome, Isr, Plan,
    },
    Budget, Meta, QuestionId, Role,
};
use kgmesh_stores::{embedded::GraphBuilder, EmbeddedGraph, GraphStore};

use super::{
    core::CacheConfig,
    persist::FilePlanStore,
    role::{spec, CacheManager},
};
use crate::runtime::{start_role, Client};

fn graph() -> Arc<dyn GraphStore> {
    let mut builder = GraphBuilder::new();
    for (head, relation, tail) in [
        ("Heat", "directed_by", "Michael Mann"),
        ("Alien", "directed_by", "Ridley Scott"),
        ("Alien", "release_year", "1979"),
    ] {
        let head = builder.node(head);
        let tail = builder.node(tail);
        builder.add_edge(head, relation, tail);
    }
    let graph: EmbeddedGraph = builder.finish();
    Arc::new(graph)
}

fn verified_entry() -> CacheEntry {
    CacheEntry {
        question: "who directed Heat".to_owned(),
        template: String::new(),
        isr: Isr::default(),
        plan: Plan {
            entities: vec![Entity {
                id: kgmesh_schemas::NodeId(0),
                name: "Heat".to_owned(),
            }],
            metapaths: vec![Metapath {
                steps: vec![RelationStep {
                    relation: "directed_by".to_owned(),
                    direction: Direction::Out,
                }],
            }],
            cypher: Vec::new(),
        },
        answers: vec!["Michael Mann".to_owned()],
        hits: 0,
        failures: 0,
    }
}

async fn within<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("timed out")
}

#[test]
fn a_stored_plan_is_replayed_for_another_entity_and_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plans.jsonl");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let role = Role::well_known(Role::CACHE_MANAGER);
        let meta = Meta::new(QuestionId::new_random(), 0, Budget::default());
        {
            let bus = Arc::new(LocalBus::new());
            let manager = Arc::new(CacheManager::new(
                CacheConfig::default(),
                Some(Arc::new(FilePlanStore::new(&path))),
                Some(graph()),
                None,
            ));
            let handle = within(start_role(bus.clone(), spec(manager)))
                .await
                .unwrap();
            let client = Client::new(bus);
            let (stored, _) = within(client.call(
                &role,
                &meta,
                &CacheStore {
                    entry: verified_entry(),
                },
            ))
            .await
            .unwrap();
            assert!(stored.stored);
            // The same plan verified again changes nothing and is not written again,
            // except when the new verification makes it replayable (hits 0 → 1)...
            let mut again = verified_entry();
            again.hits = 1;
            again.question = "who directed Alien".to_owned();
            again.plan.entities[0].name = "Alien".to_owned();
            let (stored, _) = within(client.call(&role, &meta, &CacheStore { entry: again }))
                .await
                .unwrap();
            assert!(stored.stored);
            let lines = || std::fs::read_to_string(&path).unwrap().lines().count();
            // ... except the confirmation that makes it replayable (hits 0 → 1).
            assert_eq!(lines(), 2);
            let mut changed = verified_entry();
            changed.plan.metapaths[0].steps[0].relation = "release_year".to_owned();
            let (stored, _) = within(client.call(&role, &meta, &CacheStore { entry: changed }))
                .await
                .unwrap();
            // An unconfirmed rival does not displace a confirmed plan.
            assert!(!stored.stored);
            assert_eq!(lines(), 2);
            // Put the directed_by plan back for the replay checks below.
            within(client.call(
                &role,
                &meta,
                &CacheStore {
                    entry: verified_entry(),
                },
            ))
            .await
            .unwrap();
            // A plan without answers is not verified and is refused.
            let mut unverified = verified_entry();
            unverified.answers.clear();
            let (refused, _) = within(client.call(&role, &meta, &CacheStore { entry: unverified }))
                .await
                .unwrap();
            assert!(!refused.stored);
            within(handle.stop(Duration::from_secs(5))).await;
        }
        // A new process: the cache is rebuilt from the file.
        let bus = Arc::new(LocalBus::new());
        let manager = Arc::new(CacheManager::new(
            CacheConfig::default(),
            Some(Arc::new(FilePlanStore::new(&path))),
            Some(graph()),
            None,
        ));
        let handle = within(start_role(bus.clone(), spec(manager)))
            .await
            .unwrap();
        let client = Client::new(bus);
        let lookup = CacheLookup {
            question: "Who directed Alien?".to_owned(),
            entities: Vec::new(),
            k: 5,
        };
        let (found, cost) = within(client.call(&role, &meta, &lookup)).await.unwrap();
        assert_eq!(cost.llm_calls, 0);
        assert_eq!(found.examples.len(), 1);
        // The entry holds the latest question that verified the plan.
        assert_eq!(found.examples[0].question, "who directed Alien");
        let replay = found.replay.expect("same template, another entity: replay");
        assert_eq!(replay.entities.len(), 1);
        assert_eq!(replay.entities[0].name, "Alien");
        assert_eq!(replay.metapaths[0].steps[0].relation, "directed_by");

        let unrelated = CacheLookup {
            question: "when was Alien released".to_owned(),
            entities: Vec::new(),
            k: 5,
        };
        let (found, _) = within(client.call(&role, &meta, &unrelated)).await.unwrap();
        assert!(found.replay.is_none());
        within(handle.stop(Duration::from_secs(5))).await;
    });
}

/// The role around `manager` on `bus`, holding the verified plan of "who directed Heat".
async fn serve_with_a_verified_plan(
    bus: Arc<LocalBus>,
    manager: Arc<CacheManager>,
) -> (crate::runtime::RoleHandle, Client) {
    let handle = within(start_role(bus.clone(), spec(manager)))
        .await
        .unwrap();
    let client = Client::new(bus);
    let mut entry = verified_entry();
    entry.hits = 1;
    let meta = Meta::new(QuestionId::new_random(), 0, Budget::default());
    let (stored, _) = within(client.call(
        &Role::well_known(Role::CACHE_MANAGER),
        &meta,
        &CacheStore { entry },
    ))
    .await
    .unwrap();
    assert!(stored.stored);
    (handle, client)
}

#[test]
fn feedback_over_the_bus_holds_then_drops_a_verified_plan_in_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plans.jsonl");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let role = Role::well_known(Role::CACHE_MANAGER);
        let meta = Meta::new(QuestionId::new_random(), 0, Budget::default());
        let bus = Arc::new(LocalBus::new());
        let manager = Arc::new(CacheManager::new(
            CacheConfig::default(),
            Some(Arc::new(FilePlanStore::new(&path))),
            Some(graph()),
            None,
        ));
        let (handle, client) = serve_with_a_verified_plan(bus, manager.clone()).await;
        let incorrect = |name: &str, admin: bool| CacheFeedback {
            question: "Who directed Alien?".to_owned(),
            verdict: Feedback::Incorrect,
            principal: kgmesh_schemas::messages::cache::Principal {
                name: name.to_owned(),
                admin,
            },
        };
        // One principal, twice: held (the plan has a verified success), counted once.
        for _ in 0..2 {
            let (held, _) = within(client.call(&role, &meta, &incorrect("ann", false)))
                .await
                .unwrap();
            assert_eq!(held.outcome, FeedbackOutcome::Pending, "{held:?}");
            assert_eq!(held.confirmations.map(|c| c.have), Some(1));
        }
        assert!(!manager.is_empty());
        // An admin removes it.
        let (first, _) = within(client.call(&role, &meta, &incorrect("ann", false)))
            .await
            .unwrap();
        let (second, _) = within(client.call(&role, &meta, &incorrect("ops", true)))
            .await
            .unwrap();
        assert_eq!(second.outcome, FeedbackOutcome::Dropped, "{second:?}");
        assert_eq!(second.key, first.key);
        assert!(manager.is_empty());
        let log = std::fs::read_to_string(&path).unwrap();
        assert!(
            log.lines().last().is_some_and(|l| l.contains("\"del\"")),
            "{log}"
        );
        // A blank question is a bad request, not a silent no-op.
        let blank = CacheFeedback {
            question: "  ".to_owned(),
            verdict: Feedback::Correct,
            principal: kgmesh_schemas::messages::cache::Principal::anonymous(),
        };
        let error = within(client.call(&role, &meta, &blank)).await.unwrap_err();
        assert!(error.to_string().contains("no question"), "{error}");
        within(handle.stop(Duration::from_secs(5))).await;
    });
}

/// A stand-in embedder that puts every text in one direction: every template is as
/// near as an embedding can be, so BM25 and the lexicon's checks decide.
struct OneDirection;

#[async_trait::async_trait]
impl kgmesh_models::Embedder for OneDirection {
    fn name(&self) -> &str {
        "one direction"
    }

    fn dim(&self) -> usize {
        2
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }
}

#[test]
fn a_similar_questions_plan_is_replayed_and_feedback_on_its_answer_reaches_it() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let role = Role::well_known(Role::CACHE_MANAGER);
        let meta = Meta::new(QuestionId::new_random(), 0, Budget::default());
        let bus = Arc::new(LocalBus::new());
        let manager = Arc::new(
            CacheManager::new(
                CacheConfig {
                    // One stored plan makes BM25 shares small; the default (0.95)
                    // is calibrated on caches of hundreds.
                    near_replay_min: 0.75,
                    ..CacheConfig::default()
                },
                None,
                Some(graph()),
                None,
            )
            .with_embedder(Some(Arc::new(OneDirection))),
        );
        let (handle, client) = serve_with_a_verified_plan(bus, manager.clone()).await;
        // A wording never stored: "directed" spells the plan's one step.
        let asked = "who really directed Alien";
        let lookup = CacheLookup {
            question: asked.to_owned(),
            entities: Vec::new(),
            k: 5,
        };
        let (found, _) = within(client.call(&role, &meta, &lookup)).await.unwrap();
        let replay = found.replay.expect("the similar template's plan");
        assert_eq!(replay.entities[0].name, "Alien");
        assert_eq!(replay.metapaths[0].steps[0].relation, "directed_by");
        let similarity = found.replay_similarity.expect("marked as a near replay");
        assert!((0.75..=1.0).contains(&similarity), "{similarity}");
        // As near by embedding and BM25, but no word of it accounts for the step.
        let other = CacheLookup {
            question: "who released Alien".to_owned(),
            entities: Vec::new(),
            k: 5,
        };
        let (found, _) = within(client.call(&role, &meta, &other)).await.unwrap();
        assert_eq!(found.replay, None, "{found:?}");
        // "That answer was wrong" is about the plan that gave it.
        let incorrect = |name: &str| CacheFeedback {
            question: asked.to_owned(),
            verdict: Feedback::Incorrect,
            principal: kgmesh_schemas::messages::cache::Principal {
                name: name.to_owned(),
                admin: false,
            },
        };
        // Held until three distinct principals agree (the plan has a verified success).
        for (name, have) in [("ann", 1), ("ann", 1), ("bo", 2)] {
            let (held, _) = within(client.call(&role, &meta, &incorrect(name)))
                .await
                .unwrap();
            assert_eq!(held.outcome, FeedbackOutcome::Pending, "{held:?}");
            assert_eq!(held.confirmations.map(|c| c.have), Some(have));
        }
        let (third, _) = within(client.call(&role, &meta, &incorrect("cy")))
            .await
            .unwrap();
        assert_eq!(third.outcome, FeedbackOutcome::Dropped, "{third:?}");
        assert!(manager.is_empty());
        within(handle.stop(Duration::from_secs(5))).await;
    });
}

/// An embedder whose first call answers at once and whose later calls wait until the
/// test opens the gate.
struct GatedEmbedder {
    calls: std::sync::atomic::AtomicUsize,
    gate: tokio::sync::Semaphore,
}

#[async_trait::async_trait]
impl kgmesh_models::Embedder for GatedEmbedder {
    fn name(&self) -> &str {
        "gated"
    }

    fn dim(&self) -> usize {
        2
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, kgmesh_models::EmbedError> {
        if self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) > 0 {
            self.gate.acquire().await.expect("gate open").forget();
        }
        Ok(texts.iter().map(|_| vec![1.0, 0.0]).collect())
    }
}

#[test]
fn a_lookup_does_not_wait_for_a_whole_warmed_cache_to_be_embedded() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let embedder = Arc::new(GatedEmbedder {
            calls: Default::default(),
            gate: tokio::sync::Semaphore::new(0),
        });
        let manager = CacheManager::new(CacheConfig::default(), None, Some(graph()), None)
            .with_embedder(Some(embedder.clone()));
        // 200 templates: more than one batch of the embedder.
        let words = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
        ];
        for i in 0..200 {
            let mut entry = verified_entry();
            entry.hits = 1;
            entry.question = format!(
                "who directed Heat {} {} {}",
                words[i % 7],
                words[(i / 7) % 7],
                words[(i / 49) % 7]
            );
            let stored = within(manager.store(CacheStore { entry })).await.unwrap();
            assert!(stored.stored, "template {i}");
        }
        assert_eq!(manager.unembedded(), 200);
        // The first lookup embeds one batch itself and leaves the rest to a background
        // task, whose embedder calls wait: a lookup that waited for every template
        // would not return.
        let ctx = crate::runtime::CallContext::for_test(Role::CACHE_MANAGER);
        let lookup = CacheLookup {
            question: "who really directed Alien".to_owned(),
            entities: Vec::new(),
            k: 5,
        };
        within(manager.lookup(&ctx, lookup)).await.unwrap();
        let left = manager.unembedded();
        assert!(0 < left && left < 200, "{left} templates left unembedded");
        // Opened, the background task embeds the rest.
        embedder.gate.add_permits(100);
        within(async {
            while manager.unembedded() > 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
    });
}
