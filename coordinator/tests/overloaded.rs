//! An agent answering `Overloaded` is asked again (another replica may take the
//! request), within the call's retries; the answer is the same as without the refusal.

mod support;

use std::sync::Arc;

use kgmesh_bus::LocalBus;
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskRequest},
        retrieve::RetrieveRequest,
    },
    AgentError, Reply, Role, RoleKind,
};
use support::*;

#[tokio::test]
async fn an_overloaded_retriever_is_asked_again() {
    let bus = Arc::new(LocalBus::new());
    let calls = counter();
    let seen = calls.clone();
    let retriever = serve::<RetrieveRequest, _, _>(
        &bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        move |request| {
            let first = bump(&seen) == 1;
            async move {
                if first {
                    return Reply::err(AgentError::Overloaded { in_flight: 8 });
                }
                Reply::ok(directed_by_mann(&request.body), Cost::default())
            }
        },
    )
    .await;
    let _handles = (
        retriever,
        linker_linking_heat(&bus, counter()).await,
        ends_summarizer(&bus).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions::default(),
    }))
    .await
    .expect("answered");
    assert_eq!(reply.answers[0].text, "Michael Mann", "{reply:?}");
    assert!(count(&calls) >= 2, "the refused call was not asked again");
    assert!(
        reply.degraded.iter().all(|d| d.role != Role::PATH_FOLLOWER),
        "{:?}",
        reply.degraded
    );
}
