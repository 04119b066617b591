//! Feedback through the coordinator: a question named by the id of its reply (or by its
//! text) and the verdict reach the cache manager; unknown ids, missing roles and a
//! failing cache manager are typed errors.

mod support;

use std::sync::{Arc, Mutex};

use kgmesh_bus::LocalBus;
use kgmesh_coordinator::{CoordinatorConfig, CoordinatorError, FeedbackRequest, FeedbackSubject};
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskRequest},
        cache::{CacheFeedback, CacheFeedbackReply, Feedback, FeedbackOutcome, Principal},
    },
    AgentError, Reply, Role, RoleKind,
};
use support::*;

/// A cache manager that records the feedback it gets and answers `Demoted`.
async fn cache_manager(
    bus: &Arc<LocalBus>,
    received: Arc<Mutex<Vec<CacheFeedback>>>,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<CacheFeedback, _, _>(bus, Role::CACHE_MANAGER, RoleKind::Core, move |request| {
        received.lock().unwrap().push(request.body);
        async {
            Reply::ok(
                CacheFeedbackReply {
                    outcome: FeedbackOutcome::Demoted,
                    key: Some("p0000000000000001".into()),
                    detail: "1 success and 1 failure".into(),
                    confirmations: None,
                },
                Cost::default(),
            )
        }
    })
    .await
}

async fn answering_roles(bus: &Arc<LocalBus>) -> Vec<Box<dyn kgmesh_bus::ServiceHandle>> {
    vec![
        linker_linking_heat(bus, counter()).await,
        path_retriever(bus, Role::PATH_FOLLOWER).await,
        ends_summarizer(bus).await,
    ]
}

fn ask(question: &str) -> AskRequest {
    AskRequest {
        question: question.into(),
        options: AskOptions::default(),
    }
}

#[tokio::test]
async fn feedback_by_question_id_reaches_the_cache_manager_with_the_question() {
    let bus = Arc::new(LocalBus::new());
    let _roles = answering_roles(&bus).await;
    let received = Arc::new(Mutex::new(Vec::new()));
    let _cache = cache_manager(&bus, received.clone()).await;
    let coordinator = coordinator(&bus, test_config());
    let reply = bounded(coordinator.ask(ask("  who directed Heat ")))
        .await
        .unwrap();

    let feedback = bounded(coordinator.feedback(FeedbackRequest {
        subject: FeedbackSubject::QuestionId(reply.question_id.clone()),
        verdict: Feedback::Incorrect,
        principal: Principal::anonymous(),
    }))
    .await
    .unwrap();
    assert_eq!(feedback.outcome, FeedbackOutcome::Demoted);
    assert_eq!(feedback.question, "who directed Heat");
    assert_eq!(
        feedback.question_id.as_deref(),
        Some(reply.question_id.as_str())
    );
    assert_eq!(feedback.key.as_deref(), Some("p0000000000000001"));
    assert_eq!(
        received.lock().unwrap().as_slice(),
        [CacheFeedback {
            question: "who directed Heat".into(),
            verdict: Feedback::Incorrect,
            principal: Principal::anonymous(),
        }]
    );

    // By text: no id needed (another replica may have answered it).
    let answers = Feedback::Answers(vec!["Michael Mann".into()]);
    let feedback = bounded(coordinator.feedback(FeedbackRequest {
        subject: FeedbackSubject::Question("who directed Alien".into()),
        verdict: answers.clone(),
        principal: Principal::anonymous(),
    }))
    .await
    .unwrap();
    assert_eq!(feedback.question_id, None);
    assert_eq!(received.lock().unwrap()[1].verdict, answers);
}

#[tokio::test]
async fn unknown_ids_and_bad_questions_are_refused_before_the_cache_manager() {
    let bus = Arc::new(LocalBus::new());
    let _roles = answering_roles(&bus).await;
    let received = Arc::new(Mutex::new(Vec::new()));
    let _cache = cache_manager(&bus, received.clone()).await;
    let coordinator = coordinator(
        &bus,
        CoordinatorConfig {
            recent_questions: 1,
            ..test_config()
        },
    );
    let first = bounded(coordinator.ask(ask("who directed Heat")))
        .await
        .unwrap();
    let second = bounded(coordinator.ask(ask("who directed Alien")))
        .await
        .unwrap();
    assert_eq!(
        coordinator
            .recent_questions()
            .get(&second.question_id)
            .as_deref(),
        Some("who directed Alien")
    );
    // Only the last question is remembered.
    for id in [first.question_id.as_str(), "no-such-id"] {
        let error = bounded(coordinator.feedback(FeedbackRequest {
            subject: FeedbackSubject::QuestionId(id.into()),
            verdict: Feedback::Correct,
            principal: Principal::anonymous(),
        }))
        .await
        .unwrap_err();
        assert!(
            matches!(&error, CoordinatorError::UnknownQuestion(message) if message.contains(id)),
            "{error}"
        );
        assert_eq!(error.kind(), "unknown_question");
    }
    for subject in [
        FeedbackSubject::Question("   ".into()),
        FeedbackSubject::QuestionId(" ".into()),
    ] {
        let error = bounded(coordinator.feedback(FeedbackRequest {
            subject,
            verdict: Feedback::Correct,
            principal: Principal::anonymous(),
        }))
        .await
        .unwrap_err();
        assert!(
            matches!(error, CoordinatorError::InvalidQuestion(_)),
            "{error}"
        );
    }
    assert!(received.lock().unwrap().is_empty());
}

#[tokio::test]
async fn no_cache_manager_or_a_failing_one_is_an_error() {
    let bus = Arc::new(LocalBus::new());
    let _roles = answering_roles(&bus).await;
    let coordinator = coordinator(&bus, test_config());
    let request = || FeedbackRequest {
        subject: FeedbackSubject::Question("who directed Heat".into()),
        verdict: Feedback::Correct,
        principal: Principal::anonymous(),
    };
    let error = bounded(coordinator.feedback(request())).await.unwrap_err();
    assert_eq!(
        error,
        CoordinatorError::MissingRoles(vec![Role::CACHE_MANAGER.to_owned()])
    );

    let _cache =
        serve::<CacheFeedback, _, _>(&bus, Role::CACHE_MANAGER, RoleKind::Core, |_| async {
            Reply::err(AgentError::Unavailable {
                detail: "plan cache store: refused".into(),
            })
        })
        .await;
    let error = bounded(coordinator.feedback(request())).await.unwrap_err();
    assert!(
        matches!(
            &error,
            CoordinatorError::RoleFailed {
                error: AgentError::Unavailable { .. },
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("refused"), "{error}");
}
