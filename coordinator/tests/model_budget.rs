//! What the coordinator does with model budgets and degraded roles: a replayed plan
//! leaves the judge its rule (the model's calls go to the summarizer), so does the last
//! of several rounds (a second round costs the KG-Linker's call alone), a role that
//! answered without its model marks the answer degraded, and a failed role keeps the
//! plan out of the cache.

mod support;

use std::sync::{Arc, Mutex};

use kgmesh_bus::LocalBus;
use kgmesh_coordinator::CoordinatorConfig;
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskRequest, Degradation},
        cache::Plan,
        judge::{JudgeReply, JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
    },
    Reply, Role, RoleKind,
};
use support::*;

fn question() -> AskRequest {
    AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions::default(),
    }
}

#[tokio::test]
async fn a_replayed_plan_leaves_the_judge_no_model_call() {
    let bus = Arc::new(LocalBus::new());
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let stored = Arc::new(Mutex::new(Vec::new()));
    let replay = Plan {
        entities: vec![entity(1, "Heat")],
        metapaths: vec![metapath("directed_by")],
        cypher: Vec::new(),
    };
    let _handles = (
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "paths").await,
        ends_summarizer(&bus).await,
        recording_judge(&bus, allowed.clone(), 0).await,
        cache_manager(&bus, Some(replay), stored).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(question()))
        .await
        .expect("answered");
    assert!(reply.plan_replayed, "{reply:?}");
    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert_eq!(
        *allowed.lock().unwrap(),
        [0],
        "the judge's budget on a replay"
    );
    assert!(reply.degraded.is_empty(), "{:?}", reply.degraded);
}

#[tokio::test]
async fn the_last_of_several_rounds_leaves_the_judge_its_rule() {
    let bus = Arc::new(LocalBus::new());
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let stored = Arc::new(Mutex::new(Vec::new()));
    let linker_calls = counter();
    let calls = linker_calls.clone();
    // Each round plans a path the last did not, so round 2 retrieves and judges again.
    let _linker = serve::<KgLinkRequest, _, _>(&bus, Role::KG_LINKER, RoleKind::Core, move |_| {
        let relation = if bump(&calls) == 1 {
            "directed_by"
        } else {
            "written_by"
        };
        async move {
            Reply::ok(
                KgLinkReply {
                    linked: vec![scored(1, "Heat")],
                    metapaths: vec![metapath(relation)],
                    ..KgLinkReply::default()
                },
                Cost::default(),
            )
        }
    })
    .await;
    let budgets = allowed.clone();
    let _judge = serve::<JudgeRequest, _, _>(&bus, Role::JUDGE, RoleKind::Core, move |request| {
        budgets.lock().unwrap().push(request.meta.budget.llm_calls);
        async move {
            Reply::ok(
                JudgeReply {
                    verdict: Verdict::NextRound,
                    reason: "test".into(),
                },
                Cost::default(),
            )
        }
    })
    .await;
    let _handles = (
        path_retriever(&bus, "paths").await,
        ends_summarizer(&bus).await,
        cache_manager(&bus, None, stored).await,
    );
    let mut request = question();
    request.options.max_rounds = Some(2);
    let reply = bounded(coordinator(&bus, test_config()).ask(request))
        .await
        .expect("answered");
    assert_eq!(reply.rounds, 2, "{reply:?}");
    assert_eq!(count(&linker_calls), 2);
    let allowed = allowed.lock().unwrap().clone();
    assert_eq!(allowed.len(), 2, "one judge call a round: {allowed:?}");
    assert!(
        allowed[0] > 0,
        "round 1's judge may ask its model: {allowed:?}"
    );
    assert_eq!(allowed[1], 0, "round 2's judge uses its rule: {allowed:?}");
    assert!(reply.degraded.is_empty(), "{:?}", reply.degraded);
}

#[tokio::test]
async fn a_cold_question_gives_the_judge_its_model_and_a_fallback_is_degraded() {
    let bus = Arc::new(LocalBus::new());
    let allowed = Arc::new(Mutex::new(Vec::new()));
    let stored = Arc::new(Mutex::new(Vec::new()));
    let _handles = (
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "paths").await,
        ends_summarizer(&bus).await,
        recording_judge(&bus, allowed.clone(), 1).await,
        cache_manager(&bus, None, stored.clone()).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(question()))
        .await
        .expect("answered");
    assert!(!reply.plan_replayed);
    assert!(
        allowed.lock().unwrap()[0] > 0,
        "{:?}",
        allowed.lock().unwrap()
    );
    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert_eq!(
        reply.degraded,
        [Degradation {
            role: Role::JUDGE.into(),
            reason: Degradation::MODEL_FALLBACK.into(),
            round: 1,
        }]
    );
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("judge answered without its language model")),
        "{:?}",
        reply.notes
    );
    // A fallback changes no plan: the answer's plan is still offered to the cache, but
    // as the rule's verdict only (no verified success): an example, never replayed,
    // and removable by any one principal's feedback.
    assert_eq!(stored.lock().unwrap().len(), 1);
    assert_eq!(stored.lock().unwrap()[0].entry.hits, 0);
}

#[tokio::test]
async fn a_failed_retriever_is_degraded_and_nothing_is_learned() {
    let bus = Arc::new(LocalBus::new());
    let stored = Arc::new(Mutex::new(Vec::new()));
    let broken = failing::<kgmesh_schemas::messages::retrieve::RetrieveRequest>(
        &bus,
        "broken-retriever",
        RoleKind::Retriever,
        "disk on fire",
    )
    .await;
    let _handles = (
        broken,
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "paths").await,
        ends_summarizer(&bus).await,
        recording_judge(&bus, Arc::default(), 0).await,
        cache_manager(&bus, None, stored.clone()).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(question()))
        .await
        .expect("answered");
    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert_eq!(
        reply.degraded,
        [Degradation {
            role: "broken-retriever".into(),
            reason: Degradation::FAILED.into(),
            round: 1,
        }]
    );
    assert!(
        stored.lock().unwrap().is_empty(),
        "no plan from a degraded run"
    );
    // The question's life lists every call, the failed one with its error's kind.
    let calls: Vec<(u8, &str, &str, &str)> = reply
        .calls
        .iter()
        .map(|c| (c.round, c.role.as_str(), c.op.as_str(), c.outcome.as_str()))
        .collect();
    for expected in [
        (1, "kg-linker", "link", "ok"),
        (1, "broken-retriever", "retrieve", "internal"),
        (1, "paths", "retrieve", "ok"),
        (1, "summarizer", "summarize", "ok"),
    ] {
        assert!(calls.contains(&expected), "{expected:?} not in {calls:?}");
    }
    let failed = reply
        .calls
        .iter()
        .find(|c| c.role == "broken-retriever")
        .unwrap();
    assert!(failed.cost.is_none(), "{failed:?}");
    assert!(reply
        .calls
        .iter()
        .filter(|c| c.outcome == "ok")
        .all(|c| c.cost.is_some()));
    assert_eq!(reply.topic_entities[0].name, "Heat");
}

#[tokio::test]
async fn a_retriever_that_left_the_bus_is_reported_missing() {
    let bus = Arc::new(LocalBus::new());
    let stored = Arc::new(Mutex::new(Vec::new()));
    let leaving = path_retriever(&bus, "leaving-retriever").await;
    let _handles = (
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "paths").await,
        ends_summarizer(&bus).await,
        recording_judge(&bus, Arc::default(), 0).await,
        cache_manager(&bus, None, stored.clone()).await,
    );
    let coordinator = coordinator(&bus, test_config());
    let first = bounded(coordinator.ask(question()))
        .await
        .expect("answered");
    assert!(first.degraded.is_empty(), "{:?}", first.degraded);
    assert_eq!(stored.lock().unwrap().len(), 1);

    leaving.stop(std::time::Duration::from_secs(1)).await;
    bounded(coordinator.directory().refresh())
        .await
        .expect("discovery");
    let later = bounded(coordinator.ask(question()))
        .await
        .expect("answered");
    assert_eq!(later.answers[0].text, "Michael Mann");
    assert_eq!(
        later.degraded,
        [Degradation {
            role: "leaving-retriever".into(),
            reason: Degradation::MISSING.into(),
            round: 1,
        }]
    );
    assert!(
        later.notes.iter().any(|n| n.contains("leaving-retriever")),
        "{:?}",
        later.notes
    );
    assert_eq!(
        stored.lock().unwrap().len(),
        1,
        "nothing learned without it"
    );
}

#[tokio::test]
async fn a_failed_summarizer_makes_the_answer_partial() {
    let bus = Arc::new(LocalBus::new());
    let broken = failing::<kgmesh_schemas::messages::summarizer::SummarizeRequest>(
        &bus,
        Role::SUMMARIZER,
        RoleKind::Core,
        "out of memory",
    )
    .await;
    let _handles = (
        broken,
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "paths").await,
        recording_judge(&bus, Arc::default(), 0).await,
        cache_manager(&bus, None, Arc::default()).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(question()))
        .await
        .expect("a reply, not an error");
    assert!(reply.answers.is_empty());
    assert!(reply.partial, "a dead summarizer is no complete answer");
    assert_eq!(reply.degraded[0].role, Role::SUMMARIZER);
    assert_eq!(reply.degraded[0].reason, Degradation::FAILED);
}

#[test]
fn request_options_beyond_their_bounds_are_refused_all_at_once() {
    let bus = Arc::new(LocalBus::new());
    let coordinator = coordinator(&bus, test_config());
    let asking = |options: AskOptions| AskRequest {
        question: "who directed Heat".into(),
        options,
    };
    let error = coordinator
        .validate(&asking(AskOptions {
            max_rounds: Some(200),
            timeout_ms: Some(1_000_000_000_000),
            max_answers: Some(0),
            no_cache: false,
            evidence_edges: false,
        }))
        .unwrap_err();
    let message = error.to_string();
    for expected in [
        "options.max_rounds = 200",
        "options.timeout_ms = 1000000000000",
        "options.max_answers = 0",
    ] {
        assert!(message.contains(expected), "{message}");
    }
    assert_eq!(error.kind(), "invalid_question");
    let within = AskOptions {
        max_rounds: Some(kgmesh_coordinator::MAX_ROUNDS),
        timeout_ms: Some(kgmesh_coordinator::MAX_TIMEOUT_MS),
        max_answers: Some(kgmesh_coordinator::MAX_ANSWERS),
        no_cache: true,
        evidence_edges: true,
    };
    coordinator
        .validate(&asking(within))
        .expect("the bounds themselves are allowed");
}

/// A KG-Linker that links Heat and plans `directed_by` with the given confidence, and
/// records the model calls each request may make.
async fn confident_linker(
    bus: &Arc<LocalBus>,
    confidence: f32,
    budgets: Arc<Mutex<Vec<u32>>>,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    planning_linker(bus, "directed_by", confidence, budgets).await
}

/// A KG-Linker that links Heat and plans `relation` with the given confidence.
async fn planning_linker(
    bus: &Arc<LocalBus>,
    relation: &'static str,
    confidence: f32,
    budgets: Arc<Mutex<Vec<u32>>>,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    let reply = KgLinkReply {
        linked: vec![scored(1, "Heat")],
        metapaths: vec![metapath(relation)],
        confidence: Some(confidence),
        ..KgLinkReply::default()
    };
    replying_linker(bus, reply, budgets).await
}

/// A KG-Linker that gives `reply` to every request, and records the model calls each
/// request may make.
async fn replying_linker(
    bus: &Arc<LocalBus>,
    reply: KgLinkReply,
    budgets: Arc<Mutex<Vec<u32>>>,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    linker_spending(bus, reply, budgets, false).await
}

/// [`replying_linker`], spending one model call on a request that may make one when
/// `spends`.
async fn linker_spending(
    bus: &Arc<LocalBus>,
    reply: KgLinkReply,
    budgets: Arc<Mutex<Vec<u32>>>,
    spends: bool,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<KgLinkRequest, _, _>(bus, Role::KG_LINKER, RoleKind::Core, move |request| {
        let may = request.meta.budget.llm_calls;
        budgets.lock().unwrap().push(may);
        let reply = reply.clone();
        let spent = Cost {
            llm_calls: if spends { may.min(1) } else { 0 },
            ..Cost::default()
        };
        async move { Reply::ok(reply, spent) }
    })
    .await
}

#[tokio::test]
async fn the_cascade_asks_the_model_only_below_its_threshold() {
    // Confident: one run, no role may call the model. Unsure: a run without the model,
    // then one with it, whose answer is kept.
    for (confidence, runs) in [(0.9, 1), (0.5, 2)] {
        let bus = Arc::new(LocalBus::new());
        let judged = Arc::new(Mutex::new(Vec::new()));
        let linked = Arc::new(Mutex::new(Vec::new()));
        let _handles = (
            confident_linker(&bus, confidence, linked.clone()).await,
            path_retriever(&bus, "paths").await,
            ends_summarizer(&bus).await,
            recording_judge(&bus, judged.clone(), 0).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let config = CoordinatorConfig {
            cascade_below: Some(0.8),
            ..test_config()
        };
        let reply = bounded(coordinator(&bus, config).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert_eq!(reply.confidence, Some(confidence));
        let linked = linked.lock().unwrap().clone();
        let judged = judged.lock().unwrap().clone();
        assert_eq!(linked.len(), runs, "confidence {confidence}: {linked:?}");
        assert_eq!(linked[0], 0, "the first run may not call the model");
        assert_eq!(judged[0], 0, "the first run may not call the model");
        if runs == 2 {
            assert!(linked[1] > 0 && judged[1] > 0, "{linked:?} {judged:?}");
        }
        let said = reply.notes.join(" ");
        let expected = if runs == 1 {
            "answered without the model"
        } else {
            "so the model was asked"
        };
        assert!(said.contains(expected), "{said}");
        assert!(reply.degraded.is_empty(), "{:?}", reply.degraded);
    }
}

#[tokio::test]
async fn a_question_the_cascade_sends_on_asks_for_the_kg_linkers_plan_alone_unless_given_more() {
    // The question may make 3 model calls, one kept for the summarizer. Sent on by the
    // cascade with `cascade_calls` 1, the KG-Linker may make the one call and spends
    // it, so the judge (and the summarizer) may make none; with the whole budget the
    // run is the one asked without the cascade: 2 for the KG-Linker, then 1 for the judge.
    for (cascade_calls, linker_may, judge_may) in [(1, 1, 0), (3, 2, 1)] {
        let bus = Arc::new(LocalBus::new());
        let judged = Arc::new(Mutex::new(Vec::new()));
        let linked = Arc::new(Mutex::new(Vec::new()));
        let reply = KgLinkReply {
            linked: vec![scored(1, "Heat")],
            metapaths: vec![metapath("directed_by")],
            confidence: Some(0.5),
            ..KgLinkReply::default()
        };
        let _handles = (
            linker_spending(&bus, reply, linked.clone(), true).await,
            path_retriever(&bus, "paths").await,
            ends_summarizer(&bus).await,
            recording_judge(&bus, judged.clone(), 0).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let mut config = CoordinatorConfig {
            cascade_below: Some(0.8),
            cascade_calls,
            summarizer_llm_calls: 1,
            ..test_config()
        };
        config.budget.llm_calls = 3;
        let reply = bounded(coordinator(&bus, config).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        let linked = linked.lock().unwrap().clone();
        let judged = judged.lock().unwrap().clone();
        assert_eq!(linked, vec![0, linker_may], "cascade_calls {cascade_calls}");
        assert_eq!(judged, vec![0, judge_may], "cascade_calls {cascade_calls}");
        let said = reply.notes.join(" ");
        let calls = if cascade_calls == 1 {
            "1 call)"
        } else {
            "3 calls)"
        };
        assert!(
            said.contains(&format!("so the model was asked (at most {calls}")),
            "{said}"
        );
        assert_eq!(reply.cost.llm_calls, 1, "{:?}", reply.cost);
    }
}

#[tokio::test]
async fn the_summarizers_own_confidence_stands_and_one_outside_0_to_1_is_ignored() {
    // The plan's chance is 0.9; the summarizer read the answer from passages and says
    // 0.3. A summarizer's 1.7 is no chance: the plan's estimate stands then.
    for (said, expected) in [(0.3, 0.3), (1.7, 0.9)] {
        let bus = Arc::new(LocalBus::new());
        let _handles = (
            confident_linker(&bus, 0.9, Arc::new(Mutex::new(Vec::new()))).await,
            path_retriever(&bus, "paths").await,
            mann_summarizer(&bus, Vec::new(), Some(said)).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let reply = bounded(coordinator(&bus, test_config()).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert_eq!(reply.confidence, Some(expected), "{said}: {reply:?}");
    }
}

/// The test configuration with an answer calibration that reads one signal only: 0.2
/// when it is set, 0.9 otherwise.
fn calibrated_by(signal: &str) -> CoordinatorConfig {
    let at = kgmesh_coordinator::confidence::SIGNALS
        .iter()
        .position(|s| *s == signal)
        .unwrap_or_else(|| panic!("no calibration signal {signal}"));
    CoordinatorConfig {
        answer_calibration: Some(kgmesh_coordinator::confidence::AnswerCalibration::new(
            move |signals| if signals[at] > 0.5 { 0.2 } else { 0.9 },
        )),
        ..test_config()
    }
}

/// The test configuration with an answer calibration that says 0.9 for an answer on
/// the plan and 0.2 for one off it.
fn on_plan_or_not() -> CoordinatorConfig {
    calibrated_by("off_plan")
}

#[tokio::test]
async fn the_calibration_reads_whether_the_answer_lies_on_the_plan_it_estimated() {
    // The retriever finds `Heat -directed_by-> Michael Mann` whatever is planned: the
    // answer follows a `directed_by` plan and not a `written_by` one. The calibration
    // here says 0.9 on the plan and 0.2 off it, so the reply shows that it read so.
    for (relation, followed, expected) in [("directed_by", true, 0.9), ("written_by", false, 0.2)] {
        let bus = Arc::new(LocalBus::new());
        let _handles = (
            planning_linker(&bus, relation, 0.7, Arc::new(Mutex::new(Vec::new()))).await,
            path_retriever(&bus, "paths").await,
            ends_summarizer(&bus).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let reply = bounded(coordinator(&bus, on_plan_or_not()).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert_eq!(reply.plan_followed, Some(followed), "{relation}: {reply:?}");
        assert_eq!(reply.confidence, Some(expected), "{relation}: {reply:?}");
    }
}

#[tokio::test]
async fn the_calibration_reads_whether_a_second_reading_reaches_the_answer() {
    // The KG-Linker plans `directed_by` and says what the learned reader's own first
    // plan reaches: Michael Mann (node 2), another node, or nothing it could list. The
    // calibration here says 0.2 when the readings disagree and 0.9 otherwise.
    use kgmesh_schemas::NodeId;
    let cases = [
        (Some(vec![NodeId(2), NodeId(5)]), Some(true), 0.9),
        (Some(vec![NodeId(5)]), Some(false), 0.2),
        (None, None, 0.9),
    ];
    for (reaches, agree, expected) in cases {
        let bus = Arc::new(LocalBus::new());
        let plan = KgLinkReply {
            linked: vec![scored(1, "Heat")],
            metapaths: vec![metapath("directed_by")],
            confidence: Some(0.7),
            reader_reaches: reaches.clone(),
            ..KgLinkReply::default()
        };
        let _handles = (
            replying_linker(&bus, plan, Arc::new(Mutex::new(Vec::new()))).await,
            path_retriever(&bus, "paths").await,
            ends_summarizer(&bus).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let reply = bounded(coordinator(&bus, calibrated_by("readings_disagree")).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert_eq!(reply.readings_agree, agree, "{reaches:?}: {reply:?}");
        assert_eq!(reply.confidence, Some(expected), "{reaches:?}: {reply:?}");
    }
}

#[tokio::test]
async fn an_answer_from_rows_is_neither_on_nor_off_the_plan_and_one_from_an_edge_is_read_from_the_question(
) {
    // An answer on a query's rows rests on no path: the plan's chance says nothing about
    // it either way, so it is read as before the signal (on the plan). A lone edge
    // `Heat -directed_by-> Michael Mann` is walked from Heat, the question's entity:
    // on a `directed_by` plan, off a `written_by` one.
    use kgmesh_schemas::{
        graph::{Rows, Triple, Value},
        messages::{
            context::{Evidence, EvidenceItem},
            retrieve::{RetrieveReply, RetrieveRequest},
        },
    };
    let rows = EvidenceItem::Query {
        cypher: "MATCH (m {name: 'Heat'}) RETURN m.director".into(),
        rows: Rows {
            columns: vec!["m.director".into()],
            rows: vec![vec![Value::String("Michael Mann".into())]],
            truncated: false,
        },
        grounded: true,
    };
    let edge = EvidenceItem::Triple(Triple {
        head: entity(1, "Heat"),
        relation: "directed_by".into(),
        tail: entity(2, "Michael Mann"),
    });
    let cases = [
        (rows, "written_by", None, 0.9),
        (edge.clone(), "directed_by", Some(true), 0.9),
        (edge, "written_by", Some(false), 0.2),
    ];
    for (item, planned, followed, expected) in cases {
        let bus = Arc::new(LocalBus::new());
        let _handles = (
            planning_linker(&bus, planned, 0.7, Arc::new(Mutex::new(Vec::new()))).await,
            serve::<RetrieveRequest, _, _>(&bus, "paths", RoleKind::Retriever, move |_| {
                let item = item.clone();
                async move {
                    Reply::ok(
                        RetrieveReply {
                            evidence: vec![Evidence {
                                source: "paths".into(),
                                score: 1.0,
                                item,
                            }],
                            ..RetrieveReply::default()
                        },
                        Cost::default(),
                    )
                }
            })
            .await,
            mann_summarizer(&bus, vec![0], None).await,
            cache_manager(&bus, None, Arc::new(Mutex::new(Vec::new()))).await,
        );
        let reply = bounded(coordinator(&bus, on_plan_or_not()).ask(question()))
            .await
            .expect("answered");
        assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
        assert_eq!(reply.plan_followed, followed, "{planned}: {reply:?}");
        assert_eq!(reply.confidence, Some(expected), "{planned}: {reply:?}");
    }
}
