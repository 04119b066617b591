//! The round loop against stand-in roles on the in-process bus.

mod support;

use std::{sync::Arc, time::Duration};

use kgmesh_bus::LocalBus;
use kgmesh_coordinator::CoordinatorError;
use kgmesh_schemas::{
    budget::Cost,
    graph::Direction,
    messages::{
        ask::{AskOptions, AskRequest},
        entity_linker::{LinkReply, LinkRequest, MentionLinks},
        judge::{JudgeReply, JudgeRequest, Verdict},
        kg_linker::{KgLinkReply, KgLinkRequest},
        path_follower::{ExpandReply, ExpandRequest, Expansion},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    Reply, Role, RoleKind,
};
use support::*;

fn ask(question: &str) -> AskRequest {
    AskRequest {
        question: question.to_owned(),
        options: AskOptions::default(),
    }
}

fn judge_says(
    verdict: Verdict,
) -> impl Fn(kgmesh_schemas::Request<JudgeRequest>) -> futures::future::Ready<Reply<JudgeReply>>
       + Send
       + Sync
       + 'static {
    move |_request| {
        futures::future::ready(Reply::ok(
            JudgeReply {
                verdict: verdict.clone(),
                reason: "test".into(),
            },
            Cost::default(),
        ))
    }
}

#[tokio::test]
async fn a_complete_round_answers_with_evidence_and_cost() {
    let bus = Arc::new(LocalBus::new());
    let linker_calls = counter();
    let _linker = linker_linking_heat(&bus, linker_calls.clone()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let _judge = serve(
        &bus,
        Role::JUDGE,
        RoleKind::Core,
        judge_says(Verdict::Complete),
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let reply = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap();

    assert_eq!(reply.answers.len(), 1, "{reply:#?}");
    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert_eq!(reply.answers[0].evidence, vec![0]);
    assert_eq!(
        reply.evidence[0].text,
        "Heat -> directed_by -> Michael Mann"
    );
    assert_eq!(reply.rounds, 1, "COMPLETE ends the rounds");
    assert_eq!(count(&linker_calls), 1);
    assert!(!reply.partial);
    assert_eq!(reply.cost.llm_calls, 1);
    assert_eq!(reply.cost.prompt_tokens + reply.cost.completion_tokens, 100);
    assert_eq!(reply.cost.graph_rows, 1);
    // linker, retriever, judge, summarizer
    assert_eq!(reply.cost.bus_messages, 4);
    assert_eq!(reply.trace_id.as_deref().map(str::len), Some(32));
    let stages: Vec<&str> = reply
        .timings
        .stages
        .iter()
        .map(|(s, _)| s.as_str())
        .collect();
    assert_eq!(
        stages,
        [
            "round1.kg-linker",
            "round1.retrieve",
            "round1.judge",
            "summarizer"
        ]
    );
}

#[tokio::test]
async fn an_exhausted_llm_budget_ends_with_the_best_answer_flagged_partial() {
    let bus = Arc::new(LocalBus::new());
    let linker_calls = counter();
    let _linker = linker_linking_heat(&bus, linker_calls.clone()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    // Never satisfied: without the budget the question would run all its rounds.
    let _judge = serve(
        &bus,
        Role::JUDGE,
        RoleKind::Core,
        judge_says(Verdict::NextRound),
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let mut config = test_config();
    config.budget.llm_calls = 1;
    config.budget.rounds = 4;
    let coordinator = coordinator(&bus, config);
    let mut request = ask("who directed Heat");
    request.options.max_rounds = Some(4);
    let reply = bounded(coordinator.ask(request)).await.unwrap();

    assert!(reply.partial, "{reply:#?}");
    assert_eq!(
        reply.answers[0].text, "Michael Mann",
        "the best answer so far"
    );
    // Round 1 spends the only call; round 2's linker call crosses the limit.
    assert_eq!(count(&linker_calls), 2);
    assert_eq!(reply.rounds, 2);
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("budget exhausted (llm calls)")),
        "{:?}",
        reply.notes
    );
}

#[tokio::test]
async fn a_retriever_that_times_out_leaves_a_note_and_the_question_goes_on() {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let _slow = serve::<RetrieveRequest, _, _>(
        &bus,
        "slow-retriever",
        RoleKind::Retriever,
        |_request| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Reply::ok(RetrieveReply::default(), Cost::default())
        },
    )
    .await;
    let _judge = serve(
        &bus,
        Role::JUDGE,
        RoleKind::Core,
        judge_says(Verdict::Complete),
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let mut config = test_config();
    config.call_timeout = Duration::from_millis(200);
    let coordinator = coordinator(&bus, config);
    let reply = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap();

    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert!(
        !reply.partial,
        "a failing retriever is not an exhausted budget"
    );
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("slow-retriever") && n.contains("timeout")),
        "{:?}",
        reply.notes
    );
}

#[tokio::test]
async fn a_failing_retriever_leaves_a_note() {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let _broken = failing::<RetrieveRequest>(
        &bus,
        "broken-retriever",
        RoleKind::Retriever,
        "index corrupt",
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let reply = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap();
    assert_eq!(reply.answers[0].text, "Michael Mann");
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("broken-retriever") && n.contains("index corrupt")),
        "{:?}",
        reply.notes
    );
}

#[tokio::test]
async fn finish_from_the_kg_linker_ends_the_rounds() {
    let bus = Arc::new(LocalBus::new());
    let calls = counter();
    let linker_calls = calls.clone();
    let _linker =
        serve::<KgLinkRequest, _, _>(&bus, Role::KG_LINKER, RoleKind::Core, move |request| {
            let call = bump(&linker_calls);
            async move {
                // Something new every round, so only FINISH can stop it.
                let reply = KgLinkReply {
                    linked: vec![scored(call as u64, &format!("e{call}"))],
                    finish: call == 2,
                    ..KgLinkReply::default()
                };
                assert_eq!(request.meta.round as usize, call);
                Reply::ok(reply, Cost::default())
            }
        })
        .await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let _judge = serve(
        &bus,
        Role::JUDGE,
        RoleKind::Core,
        judge_says(Verdict::NextRound),
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let mut request = ask("who directed Heat");
    request.options.max_rounds = Some(5);
    let reply = bounded(coordinator.ask(request)).await.unwrap();
    assert_eq!(count(&calls), 2);
    assert_eq!(reply.rounds, 2);
    assert!(!reply.partial);
}

#[tokio::test]
async fn a_linker_with_nothing_new_ends_the_rounds() {
    let bus = Arc::new(LocalBus::new());
    let linker_calls = counter();
    let _linker = linker_linking_heat(&bus, linker_calls.clone()).await;
    let retrieve_calls = counter();
    let retrieves = retrieve_calls.clone();
    let _paths =
        serve::<RetrieveRequest, _, _>(&bus, Role::PATH_FOLLOWER, RoleKind::Retriever, move |_r| {
            bump(&retrieves);
            async { Reply::ok(RetrieveReply::default(), Cost::default()) }
        })
        .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let mut request = ask("who directed Heat");
    request.options.max_rounds = Some(5);
    let reply = bounded(coordinator.ask(request)).await.unwrap();
    assert_eq!(count(&linker_calls), 2, "round 2 repeats round 1: stop");
    assert_eq!(
        count(&retrieve_calls),
        1,
        "nothing new is not retrieved again"
    );
    assert!(reply.answers.is_empty());
    assert_eq!(reply.explanation, "unknown");
}

#[tokio::test]
async fn a_toy_retriever_that_announces_itself_is_used() {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    // A strategy the coordinator has never heard of.
    let _toy = serve::<RetrieveRequest, _, _>(
        &bus,
        "toy-retriever",
        RoleKind::Retriever,
        |request| async move {
            let heat = &request.body.entities[0].entity;
            Reply::ok(
                RetrieveReply {
                    evidence: vec![hop(
                        "toy",
                        heat,
                        "starred_actors",
                        &entity(3, "Al Pacino"),
                        0.5,
                    )],
                    ..RetrieveReply::default()
                },
                Cost::default(),
            )
        },
    )
    .await;
    let _judge = serve(
        &bus,
        Role::JUDGE,
        RoleKind::Core,
        judge_says(Verdict::Complete),
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let reply = bounded(coordinator.ask(ask("who is in Heat")))
        .await
        .unwrap();
    let texts: Vec<&str> = reply.evidence.iter().map(|e| e.text.as_str()).collect();
    assert!(
        texts.contains(&"Heat -> starred_actors -> Al Pacino"),
        "{texts:?}"
    );
    assert!(reply.evidence.iter().any(|e| e.source == "toy"));
    // Merged in role-name order: path-follower before toy-retriever.
    assert_eq!(reply.evidence[0].source, "paths");
}

#[tokio::test]
async fn judge_expansions_grow_the_context_within_the_depth_budget() {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = path_retriever(&bus, Role::PATH_FOLLOWER).await;
    let expand_calls = counter();
    let expands = expand_calls.clone();
    let _expand = serve::<ExpandRequest, _, _>(
        &bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        move |request| {
            let call = bump(&expands) as u64;
            async move {
                assert!(matches!(request.body.expansion, Expansion::Depth { .. }));
                let start = request.body.frontier[0].clone();
                let next = entity(100 + call, &format!("film{call}"));
                Reply::ok(
                    ExpandReply {
                        evidence: vec![hop("expand", &start, "directed_by", &next, 0.7)],
                        frontier: vec![next],
                    },
                    Cost::default(),
                )
            }
        },
    )
    .await;
    // Always wants to go deeper: the budget must stop it.
    let _judge =
        serve::<JudgeRequest, _, _>(&bus, Role::JUDGE, RoleKind::Core, |request| async move {
            Reply::ok(
                JudgeReply {
                    verdict: Verdict::ExpandDepth {
                        relation: "directed_by".into(),
                        direction: Direction::In,
                        frontier: request.body.frontier.clone(),
                    },
                    reason: "deeper".into(),
                },
                Cost::default(),
            )
        })
        .await;
    let _summarizer = ends_summarizer(&bus).await;

    let mut config = test_config();
    config.budget.depth_expansions = 2;
    config.budget.rounds = 1;
    let coordinator = coordinator(&bus, config);
    let reply = bounded(coordinator.ask(ask("what did the director of Heat direct")))
        .await
        .unwrap();
    assert_eq!(count(&expand_calls), 2, "K_depth = 2 expansions, no more");
    let texts: Vec<&str> = reply.evidence.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "Heat -> directed_by -> Michael Mann",
            "Michael Mann -> directed_by -> film1",
            "film1 -> directed_by -> film2"
        ]
    );
    assert!(reply
        .notes
        .iter()
        .any(|n| n.contains("more expansion than the budget allows")));
}

#[tokio::test]
async fn mentions_are_linked_once_and_draft_answers_become_targets() {
    let bus = Arc::new(LocalBus::new());
    let _linker = serve::<KgLinkRequest, _, _>(
        &bus,
        Role::KG_LINKER,
        RoleKind::Core,
        |request| async move {
            // Round 2 adds a mention; the first one must not be linked again.
            let mut mentions = vec!["Heat".to_owned()];
            if request.meta.round == 2 {
                mentions.push("Al Pacino".to_owned());
            }
            Reply::ok(
                KgLinkReply {
                    mentions,
                    draft_answers: vec!["Michael Mann".into()],
                    ..KgLinkReply::default()
                },
                Cost::default(),
            )
        },
    )
    .await;
    let linked_batches = Arc::new(parking_lot_free::Batches::default());
    let batches = linked_batches.clone();
    let _entity_linker =
        serve::<LinkRequest, _, _>(&bus, Role::ENTITY_LINKER, RoleKind::Core, move |request| {
            batches.push(request.body.mentions.clone());
            async move {
                let links = request
                    .body
                    .mentions
                    .iter()
                    .map(|mention| MentionLinks {
                        mention: mention.clone(),
                        candidates: vec![match mention.as_str() {
                            "Heat" => scored(1, "Heat"),
                            "Michael Mann" => scored(2, "Michael Mann"),
                            _ => scored(3, "Al Pacino"),
                        }],
                    })
                    .collect();
                Reply::ok(LinkReply { links }, Cost::default())
            }
        })
        .await;
    let requests = Arc::new(parking_lot_free::Batches::default());
    let seen = requests.clone();
    let _paths = serve::<RetrieveRequest, _, _>(
        &bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        move |request| {
            let entities: Vec<String> = request
                .body
                .entities
                .iter()
                .map(|e| e.entity.name.clone())
                .collect();
            let drafts: Vec<String> = request
                .body
                .draft_answers
                .iter()
                .map(|e| e.entity.name.clone())
                .collect();
            seen.push(
                entities
                    .into_iter()
                    .chain(std::iter::once("|".to_owned()))
                    .chain(drafts)
                    .collect(),
            );
            async { Reply::ok(RetrieveReply::default(), Cost::default()) }
        },
    )
    .await;
    let _summarizer = ends_summarizer(&bus).await;

    let coordinator = coordinator(&bus, test_config());
    let reply = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap();
    assert_eq!(reply.rounds, 2);
    assert_eq!(
        linked_batches.take(),
        vec![
            vec!["Heat".to_owned(), "Michael Mann".to_owned()],
            vec!["Al Pacino".to_owned()]
        ]
    );
    assert_eq!(
        requests.take(),
        vec![
            vec!["Heat".to_owned(), "|".to_owned(), "Michael Mann".to_owned()],
            vec![
                "Heat".to_owned(),
                "Al Pacino".to_owned(),
                "|".to_owned(),
                "Michael Mann".to_owned()
            ],
        ]
    );
}

#[tokio::test]
async fn missing_required_roles_and_bad_questions_are_refused() {
    let bus = Arc::new(LocalBus::new());
    let _summarizer = ends_summarizer(&bus).await;
    let coordinator = coordinator(&bus, test_config());
    let error = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        CoordinatorError::MissingRoles(vec![Role::KG_LINKER.to_owned()])
    );
    let error = bounded(coordinator.ask(ask("   "))).await.unwrap_err();
    assert!(matches!(error, CoordinatorError::InvalidQuestion(_)));
    let long = "x".repeat(coordinator.config().max_question_chars + 1);
    let error = bounded(coordinator.ask(ask(&long))).await.unwrap_err();
    assert!(matches!(error, CoordinatorError::InvalidQuestion(_)));
}

#[tokio::test]
async fn a_question_past_its_deadline_still_gets_the_summarizer() {
    let bus = Arc::new(LocalBus::new());
    let _linker = linker_linking_heat(&bus, counter()).await;
    let _paths = serve::<RetrieveRequest, _, _>(
        &bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        |request| async move {
            // Answers, but only after the question's deadline.
            tokio::time::sleep(Duration::from_millis(400)).await;
            Reply::ok(directed_by_mann(&request.body), Cost::default())
        },
    )
    .await;
    let summaries = counter();
    let summarized = summaries.clone();
    let _summarizer = serve::<kgmesh_schemas::messages::summarizer::SummarizeRequest, _, _>(
        &bus,
        Role::SUMMARIZER,
        RoleKind::Core,
        move |request| {
            bump(&summarized);
            async move {
                assert_eq!(
                    request.meta.budget.llm_calls, 0,
                    "no model calls past the deadline"
                );
                Reply::ok(Default::default(), Cost::default())
            }
        },
    )
    .await;
    let coordinator = coordinator(&bus, test_config());
    let mut request = ask("who directed Heat");
    request.options.timeout_ms = Some(150);
    let reply = bounded(coordinator.ask(request)).await.unwrap();
    assert!(reply.partial);
    assert_eq!(count(&summaries), 1);
    assert!(
        reply.notes.iter().any(|n| n.contains("deadline")),
        "{:?}",
        reply.notes
    );
}

/// A tiny thread-safe recorder (std only).
mod parking_lot_free {
    use std::sync::Mutex;

    #[derive(Default)]
    pub struct Batches(Mutex<Vec<Vec<String>>>);

    impl Batches {
        pub fn push(&self, batch: Vec<String>) {
            self.0.lock().expect("not poisoned").push(batch);
        }

        pub fn take(&self) -> Vec<Vec<String>> {
            std::mem::take(&mut *self.0.lock().expect("not poisoned"))
        }
    }
}
