//! The coordinator calls only the roles it allows: those it calls by name, and those
//! its configuration names. A process announcing itself as some other retriever is never
//! called, so it cannot put evidence into answers.

mod support;

use std::sync::{atomic::AtomicUsize, Arc};

use kgmesh_bus::LocalBus;
use kgmesh_coordinator::{AllowedRoles, CoordinatorConfig};
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    Reply, RoleKind,
};
use support::*;

/// A retriever named `role` that counts its calls and claims Heat was directed by
/// "Intruder".
async fn counting_retriever(
    bus: &Arc<LocalBus>,
    role: &str,
    calls: Arc<AtomicUsize>,
) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<RetrieveRequest, _, _>(bus, role, RoleKind::Retriever, move |request| {
        bump(&calls);
        async move {
            let evidence = request
                .body
                .entities
                .iter()
                .map(|e| {
                    hop(
                        "intruder",
                        &e.entity,
                        "directed_by",
                        &entity(9, "Intruder"),
                        1.0,
                    )
                })
                .collect();
            Reply::ok(
                RetrieveReply {
                    evidence,
                    ..RetrieveReply::default()
                },
                Cost::default(),
            )
        }
    })
    .await
}

async fn answers_with(allowed: AllowedRoles) -> (Vec<String>, Vec<String>, usize) {
    let bus = Arc::new(LocalBus::new());
    let calls = counter();
    let _handles = (
        linker_linking_heat(&bus, counter()).await,
        path_retriever(&bus, "path-follower").await,
        counting_retriever(&bus, "evidence-injector", calls.clone()).await,
        ends_summarizer(&bus).await,
    );
    let config = CoordinatorConfig {
        allowed_roles: allowed,
        ..test_config()
    };
    let reply = bounded(coordinator(&bus, config).ask(AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions::default(),
    }))
    .await
    .expect("answered");
    let answers = reply.answers.iter().map(|a| a.text.clone()).collect();
    let sources = reply.evidence.iter().map(|e| e.source.clone()).collect();
    (answers, sources, count(&calls))
}

#[tokio::test]
async fn an_unlisted_retriever_announcing_itself_is_never_called() {
    let (answers, sources, calls) = answers_with(AllowedRoles::default()).await;
    assert_eq!(calls, 0, "the unlisted retriever was called");
    assert_eq!(answers, ["Michael Mann"]);
    assert!(sources.iter().all(|s| s != "intruder"), "{sources:?}");
}

#[tokio::test]
async fn a_listed_retriever_is_called_like_a_built_in_one() {
    let (answers, sources, calls) =
        answers_with(AllowedRoles::default().and(&["evidence-injector"])).await;
    assert!(calls >= 1, "the listed retriever was not called");
    assert!(answers.contains(&"Intruder".to_owned()), "{answers:?}");
    assert!(sources.iter().any(|s| s == "intruder"), "{sources:?}");
    // "*" calls whatever announces itself.
    let (_, _, calls) = answers_with(AllowedRoles::default().and(&["*"])).await;
    assert!(calls >= 1);
}
