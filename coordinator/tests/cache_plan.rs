//! What the coordinator stores in the plan cache: only the metapaths and queries whose
//! evidence the answers cite, never everything it tried.

mod support;

use std::sync::{Arc, Mutex};

use kgmesh_bus::LocalBus;
use kgmesh_schemas::{
    budget::Cost,
    graph::{Direction, Metapath, Path, PathStep, RelationStep},
    messages::{
        ask::{AskOptions, AskRequest},
        cache::{CacheStore, Plan},
        context::{Evidence, EvidenceItem},
        kg_linker::{KgLinkReply, KgLinkRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
        summarizer::{Answer, SummarizeReply, SummarizeRequest},
    },
    Reply, Role, RoleKind,
};
use support::*;

fn step(relation: &str, direction: Direction) -> RelationStep {
    RelationStep {
        relation: relation.to_owned(),
        direction,
    }
}

/// Stands up every role but the retriever and the summarizer: a kg-linker proposing
/// `metapaths` for Heat (as a model's confirmed plan when `model_plan`), a judge saying
/// COMPLETE, and a cache manager that replays `replay` and records what it is asked to
/// store.
async fn roles(
    bus: &Arc<LocalBus>,
    (metapaths, model_plan): (Vec<Metapath>, bool),
    replay: Option<Plan>,
    stored: Arc<Mutex<Vec<CacheStore>>>,
) -> Vec<Box<dyn kgmesh_bus::ServiceHandle>> {
    let linker = serve::<KgLinkRequest, _, _>(bus, Role::KG_LINKER, RoleKind::Core, move |_| {
        let metapaths = metapaths.clone();
        async move {
            Reply::ok(
                KgLinkReply {
                    linked: vec![scored(1, "Heat")],
                    metapaths,
                    model_plan,
                    ..KgLinkReply::default()
                },
                Cost::default(),
            )
        }
    })
    .await;
    let mut handles = vec![linker, recording_judge(bus, Arc::default(), 0).await];
    handles.extend(cache_manager(bus, replay, stored).await);
    handles
}

/// A retriever with one path per requested metapath it knows: `directed_by` reaches
/// Michael Mann, `has_tags` reaches the tag "crime", anything else finds nothing.
async fn retriever(bus: &Arc<LocalBus>) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<RetrieveRequest, _, _>(
        bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        |r| async move {
            let heat = entity(1, "Heat");
            let mut evidence = Vec::new();
            for metapath in &r.body.metapaths {
                let target = match metapath.steps[0].relation.as_str() {
                    "directed_by" => entity(2, "Michael Mann"),
                    "has_tags" => entity(3, "crime"),
                    _ => continue,
                };
                evidence.push(Evidence {
                    source: "paths".into(),
                    score: 1.0,
                    item: EvidenceItem::Path(Path {
                        start: heat.clone(),
                        steps: vec![PathStep {
                            relation: metapath.steps[0].relation.clone(),
                            inverse: false,
                            node: target,
                        }],
                    }),
                });
            }
            Reply::ok(
                RetrieveReply {
                    evidence,
                    ..RetrieveReply::default()
                },
                Cost::default(),
            )
        },
    )
    .await
}

/// A summarizer answering with the end of the first path that reaches Michael Mann,
/// citing only that evidence (none when no path does).
async fn director_summarizer(bus: &Arc<LocalBus>) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<SummarizeRequest, _, _>(bus, Role::SUMMARIZER, RoleKind::Core, |r| async move {
        let answers = r
            .body
            .context
            .evidence
            .iter()
            .enumerate()
            .find_map(|(index, evidence)| match &evidence.item {
                EvidenceItem::Path(path) if path.end().name == "Michael Mann" => Some(Answer {
                    text: path.end().name.clone(),
                    entity: Some(path.end().clone()),
                    score: 1.0,
                    evidence: vec![index as u32],
                }),
                _ => None,
            })
            .into_iter()
            .collect();
        Reply::ok(
            SummarizeReply {
                low_confidence: false,
                answers,
                explanation: "test".into(),
                confidence: None,
                decline: None,
            },
            Cost::default(),
        )
    })
    .await
}

fn ask(question: &str) -> AskRequest {
    AskRequest {
        question: question.to_owned(),
        options: AskOptions::default(),
    }
}

#[tokio::test]
async fn only_the_metapaths_behind_the_answer_are_cached() {
    let bus = Arc::new(LocalBus::new());
    let stored = Arc::new(Mutex::new(Vec::new()));
    let tried = vec![
        Metapath {
            steps: vec![step("has_tags", Direction::Out)],
        },
        Metapath {
            steps: vec![step("written_by", Direction::Out)],
        },
        Metapath {
            steps: vec![step("directed_by", Direction::Out)],
        },
    ];
    let _roles = roles(&bus, (tried, false), None, stored.clone()).await;
    let _retriever = retriever(&bus).await;
    let _summarizer = director_summarizer(&bus).await;

    let reply = bounded(coordinator(&bus, test_config()).ask(ask("who directed Heat")))
        .await
        .unwrap();
    assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:#?}");
    assert_eq!(
        reply.evidence.len(),
        2,
        "both found metapaths left evidence"
    );

    let stored = stored.lock().unwrap();
    assert_eq!(stored.len(), 1, "one verified plan stored");
    let plan = &stored[0].entry.plan;
    assert_eq!(
        plan.metapaths,
        vec![Metapath {
            steps: vec![step("directed_by", Direction::Out)]
        }],
        "the metapath that found nothing and the one whose evidence no answer cites are dropped"
    );
    assert_eq!(plan.entities, vec![entity(1, "Heat")]);
    assert_eq!(stored[0].entry.answers, vec!["Michael Mann"]);
}

#[tokio::test]
async fn an_answer_citing_no_tried_piece_stores_nothing() {
    let bus = Arc::new(LocalBus::new());
    let stored = Arc::new(Mutex::new(Vec::new()));
    // The retriever finds nothing for this metapath, so the answer below cites
    // evidence that no tried metapath produced and no topic entity starts.
    let tried = vec![Metapath {
        steps: vec![step("written_by", Direction::Out)],
    }];
    let _roles = roles(&bus, (tried, false), None, stored.clone()).await;
    let _retriever = retriever(&bus).await;
    let _summarizer = mann_summarizer(&bus, vec![7], None).await;

    let reply = bounded(coordinator(&bus, test_config()).ask(ask("who directed Heat")))
        .await
        .unwrap();
    assert_eq!(reply.answers.len(), 1);
    assert!(
        stored.lock().unwrap().is_empty(),
        "nothing replayable produced the answer"
    );
}

/// Runs "who directed Heat" with a kg-linker proposing `directed_by` (a model's plan
/// when `model_plan`) and a cache that replays `replay`, and returns the plan the
/// summarizer was told to trust.
async fn plan_sent_to_the_summarizer(model_plan: bool, replay: Option<Plan>) -> Vec<Metapath> {
    let bus = Arc::new(LocalBus::new());
    let directed_by = Metapath {
        steps: vec![step("directed_by", Direction::Out)],
    };
    let _roles = roles(
        &bus,
        (vec![directed_by], model_plan),
        replay,
        Arc::default(),
    )
    .await;
    let _retriever = retriever(&bus).await;
    let told = Arc::new(Mutex::new(Vec::new()));
    let seen = told.clone();
    let summarizer =
        serve::<SummarizeRequest, _, _>(&bus, Role::SUMMARIZER, RoleKind::Core, move |r| {
            *seen.lock().unwrap() = r.body.plan.clone();
            async { Reply::ok(SummarizeReply::default(), Cost::default()) }
        })
        .await;
    bounded(coordinator(&bus, test_config()).ask(ask("who directed Heat")))
        .await
        .unwrap();
    drop(summarizer);
    let told = told.lock().unwrap().clone();
    told
}

#[tokio::test]
async fn the_summarizer_trusts_a_models_confirmed_plan_and_a_replayed_one_only() {
    let directed_by = Metapath {
        steps: vec![step("directed_by", Direction::Out)],
    };
    assert_eq!(plan_sent_to_the_summarizer(false, None).await, vec![]);
    assert_eq!(
        plan_sent_to_the_summarizer(true, None).await,
        vec![directed_by.clone()]
    );
    let has_tags = Metapath {
        steps: vec![step("has_tags", Direction::Out)],
    };
    let replayed = Plan {
        entities: vec![entity(1, "Heat")],
        metapaths: vec![has_tags.clone()],
        cypher: Vec::new(),
    };
    assert_eq!(
        plan_sent_to_the_summarizer(false, Some(replayed)).await,
        vec![has_tags]
    );
}
