//! Stand-in roles on the in-process bus: each answers from a closure, so a test states
//! exactly what every role says and counts what the coordinator asked.

#![allow(dead_code)]

use std::{
    future::Future,
    sync::{
        atomic::{AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use futures::future::BoxFuture;
use kgmesh_bus::{
    typed::{decode_request, encode_reply},
    Bus, Endpoint, LocalBus, Message, ServiceHandle, ServiceSpec,
};
use kgmesh_coordinator::{AllowedRoles, Coordinator, CoordinatorConfig};
use kgmesh_schemas::{
    budget::Cost,
    graph::{Entity, Path, PathStep, ScoredEntity},
    messages::{
        cache::{CacheLookup, CacheLookupReply, CacheStore, CacheStoreReply, Plan},
        context::{Evidence, EvidenceItem},
        judge::{JudgeReply, JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
        summarizer::{Answer, SummarizeReply, SummarizeRequest},
    },
    AgentError, NodeId, Reply, Request, Role, RoleInfo, RoleKind, Rpc,
};

/// Every await in these tests is bounded by this.
pub const TEST_TIMEOUT: Duration = Duration::from_secs(20);

pub async fn bounded<F: Future>(future: F) -> F::Output {
    tokio::time::timeout(TEST_TIMEOUT, future)
        .await
        .expect("the test step did not finish in time")
}

/// Serves `R` for `role` with `handler`; the returned handles keep serving until the
/// bus is dropped.
pub async fn serve<R, F, Fut>(
    bus: &Arc<LocalBus>,
    role: &str,
    kind: RoleKind,
    handler: F,
) -> Box<dyn ServiceHandle>
where
    R: Rpc,
    F: Fn(Request<R>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Reply<R::Reply>> + Send + 'static,
{
    let role = Role::new(role).expect("valid role name");
    let spec = ServiceSpec {
        info: RoleInfo {
            role: role.clone(),
            version: "test".into(),
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
                Ok((content_type, request)) => encode_reply(content_type, &handler(request).await),
                Err((content_type, error)) => {
                    encode_reply::<R::Reply>(content_type, &Reply::err(error))
                }
            }
        })
    };
    bus.serve(spec, Arc::new(bus_handler))
        .await
        .expect("the stand-in role starts")
}

/// A stand-in role that answers every request with an internal error saying `detail`.
pub async fn failing<R: Rpc>(
    bus: &Arc<LocalBus>,
    role: &str,
    kind: RoleKind,
    detail: &'static str,
) -> Box<dyn ServiceHandle> {
    serve::<R, _, _>(bus, role, kind, move |_request| async move {
        Reply::err(AgentError::Internal {
            detail: detail.into(),
        })
    })
    .await
}

pub fn entity(id: u64, name: &str) -> Entity {
    Entity {
        id: NodeId(id),
        name: name.to_owned(),
    }
}

pub fn scored(id: u64, name: &str) -> ScoredEntity {
    ScoredEntity {
        entity: entity(id, name),
        score: 1.0,
    }
}

/// A one-hop path `start -relation-> end` as evidence from `source`.
pub fn hop(source: &str, start: &Entity, relation: &str, end: &Entity, score: f32) -> Evidence {
    Evidence {
        source: source.to_owned(),
        score,
        item: EvidenceItem::Path(Path {
            start: start.clone(),
            steps: vec![PathStep {
                relation: relation.to_owned(),
                inverse: false,
                node: end.clone(),
            }],
        }),
    }
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(counter: &AtomicUsize) -> usize {
    counter.load(Ordering::SeqCst)
}

pub fn bump(counter: &AtomicUsize) -> usize {
    counter.fetch_add(1, Ordering::SeqCst) + 1
}

/// A kg-linker that links entity 1 ("Heat") and proposes one metapath in every round,
/// costing one LLM call and 100 tokens.
pub async fn linker_linking_heat(
    bus: &Arc<LocalBus>,
    calls: Arc<AtomicUsize>,
) -> Box<dyn ServiceHandle> {
    serve::<KgLinkRequest, _, _>(bus, Role::KG_LINKER, RoleKind::Core, move |_request| {
        bump(&calls);
        async move {
            Reply::ok(
                KgLinkReply {
                    linked: vec![scored(1, "Heat")],
                    metapaths: vec![metapath("directed_by")],
                    ..KgLinkReply::default()
                },
                Cost {
                    llm_calls: 1,
                    prompt_tokens: 80,
                    completion_tokens: 20,
                    ..Cost::default()
                },
            )
        }
    })
    .await
}

pub fn metapath(relation: &str) -> kgmesh_schemas::graph::Metapath {
    kgmesh_schemas::graph::Metapath {
        steps: vec![kgmesh_schemas::graph::RelationStep {
            relation: relation.to_owned(),
            direction: kgmesh_schemas::graph::Direction::Out,
        }],
    }
}

/// Evidence that every entity of `request` was directed by Michael Mann.
pub fn directed_by_mann(request: &RetrieveRequest) -> RetrieveReply {
    let evidence = request
        .entities
        .iter()
        .map(|e| {
            hop(
                "paths",
                &e.entity,
                "directed_by",
                &entity(2, "Michael Mann"),
                1.0,
            )
        })
        .collect();
    RetrieveReply {
        evidence,
        ..RetrieveReply::default()
    }
}

/// A retriever answering `Heat -directed_by-> Michael Mann`.
pub async fn path_retriever(bus: &Arc<LocalBus>, role: &str) -> Box<dyn ServiceHandle> {
    serve::<RetrieveRequest, _, _>(bus, role, RoleKind::Retriever, |request| async move {
        Reply::ok(
            directed_by_mann(&request.body),
            Cost {
                graph_rows: 1,
                ..Cost::default()
            },
        )
    })
    .await
}

/// A summarizer that answers with the end of every path in the context (topic
/// entities excluded), citing the evidence index.
pub async fn ends_summarizer(bus: &Arc<LocalBus>) -> Box<dyn ServiceHandle> {
    serve::<SummarizeRequest, _, _>(
        bus,
        Role::SUMMARIZER,
        RoleKind::Core,
        |request| async move {
            let topic: Vec<NodeId> = request.body.topic_entities.iter().map(|e| e.id).collect();
            let mut answers: Vec<Answer> = Vec::new();
            for (index, evidence) in request.body.context.evidence.iter().enumerate() {
                if let EvidenceItem::Path(path) = &evidence.item {
                    let end = path.end();
                    if topic.contains(&end.id) || answers.iter().any(|a| a.text == end.name) {
                        continue;
                    }
                    answers.push(Answer {
                        text: end.name.clone(),
                        entity: Some(end.clone()),
                        score: evidence.score,
                        evidence: vec![index as u32],
                    });
                }
            }
            let explanation = if answers.is_empty() {
                "unknown"
            } else {
                "from paths"
            };
            Reply::ok(
                SummarizeReply {
                    low_confidence: false,
                    answers,
                    explanation: explanation.into(),
                    confidence: None,
                    decline: None,
                },
                Cost::default(),
            )
        },
    )
    .await
}

/// A summarizer that answers "Michael Mann" citing the context lines `evidence`,
/// whatever they hold, with its own `confidence` when given (as the passage reader
/// gives one).
pub async fn mann_summarizer(
    bus: &Arc<LocalBus>,
    evidence: Vec<u32>,
    confidence: Option<f32>,
) -> Box<dyn ServiceHandle> {
    serve::<SummarizeRequest, _, _>(bus, Role::SUMMARIZER, RoleKind::Core, move |_| {
        let evidence = evidence.clone();
        async move {
            Reply::ok(
                SummarizeReply {
                    low_confidence: false,
                    answers: vec![Answer {
                        text: "Michael Mann".into(),
                        entity: None,
                        score: 1.0,
                        evidence,
                    }],
                    explanation: "test".into(),
                    confidence,
                    decline: None,
                },
                Cost::default(),
            )
        }
    })
    .await
}

pub fn coordinator(bus: &Arc<LocalBus>, config: CoordinatorConfig) -> Coordinator {
    let bus: Arc<dyn Bus> = bus.clone();
    Coordinator::new(bus, config)
}

/// Config for tests: short discovery, generous deadlines, and the test retrievers'
/// role names allowed beside the roles the coordinator calls by name.
pub fn test_config() -> CoordinatorConfig {
    CoordinatorConfig {
        discovery_ttl: Duration::from_millis(1),
        discovery_wait: Duration::from_millis(10),
        allowed_roles: AllowedRoles::default().and(&[
            "paths",
            "leaving-retriever",
            "slow-retriever",
            "toy-retriever",
            "broken-retriever",
        ]),
        ..CoordinatorConfig::default()
    }
}

/// A judge saying COMPLETE that records the model calls each request allowed, and
/// reports `fallbacks` model fallbacks in its cost.
pub async fn recording_judge(
    bus: &Arc<LocalBus>,
    allowed: Arc<Mutex<Vec<u32>>>,
    fallbacks: u32,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<JudgeRequest, _, _>(bus, Role::JUDGE, RoleKind::Core, move |request| {
        allowed.lock().unwrap().push(request.meta.budget.llm_calls);
        async move {
            Reply::ok(
                JudgeReply {
                    verdict: Verdict::Complete,
                    reason: "test".into(),
                },
                Cost {
                    model_fallbacks: fallbacks,
                    ..Cost::default()
                },
            )
        }
    })
    .await
}

/// A cache manager replaying `replay` (when given) that records what it is asked to
/// store.
pub async fn cache_manager(
    bus: &Arc<LocalBus>,
    replay: Option<Plan>,
    stored: Arc<Mutex<Vec<CacheStore>>>,
) -> Vec<Box<dyn kgmesh_bus::ServiceHandle>> {
    let lookup = serve::<CacheLookup, _, _>(bus, Role::CACHE_MANAGER, RoleKind::Core, move |_| {
        let replay = replay.clone();
        async move {
            Reply::ok(
                CacheLookupReply {
                    replay,
                    ..CacheLookupReply::default()
                },
                Cost::default(),
            )
        }
    })
    .await;
    let store = serve::<CacheStore, _, _>(bus, Role::CACHE_MANAGER, RoleKind::Core, move |r| {
        stored.lock().unwrap().push(r.body);
        async { Reply::ok(CacheStoreReply { stored: true }, Cost::default()) }
    })
    .await;
    vec![lookup, store]
}
