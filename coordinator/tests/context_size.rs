//! A context too large for one bus message still reaches the summarizer: cut to its
//! best-scored evidence, said in the reply's notes, and the answer's citations still
//! name the right lines of the whole context.

mod support;

use std::sync::Arc;

use kgmesh_bus::{LocalBus, LocalBusOptions};
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        ask::{AskOptions, AskRequest},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    Reply, Role, RoleKind,
};
use support::*;

/// A retriever that returns 400 weak lines about padding nodes and one strong line
/// `Heat -directed_by-> Michael Mann`, last.
async fn verbose_retriever(bus: &Arc<LocalBus>) -> Box<dyn kgmesh_bus::ServiceHandle> {
    serve::<RetrieveRequest, _, _>(
        bus,
        Role::PATH_FOLLOWER,
        RoleKind::Retriever,
        |r| async move {
            let heat = r.body.entities[0].entity.clone();
            let mut evidence: Vec<_> = (0..400u64)
                .map(|i| {
                    let padding = entity(
                        1_000 + i,
                        &format!("padding node number {i} {}", "x".repeat(40)),
                    );
                    hop(
                        "paths",
                        &padding,
                        "related_to",
                        &entity(5_000 + i, "elsewhere"),
                        0.1,
                    )
                })
                .collect();
            evidence.push(hop(
                "paths",
                &heat,
                "directed_by",
                &entity(2, "Michael Mann"),
                1.0,
            ));
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

#[tokio::test]
async fn a_context_larger_than_a_message_is_cut_to_its_best_lines_and_said() {
    // 16 KiB messages: the 401 lines (about 40 KiB) cannot travel whole.
    let bus = Arc::new(LocalBus::with_options(LocalBusOptions {
        max_payload: 16 * 1024,
        ..LocalBusOptions::default()
    }));
    let _handles = (
        linker_linking_heat(&bus, counter()).await,
        verbose_retriever(&bus).await,
        ends_summarizer(&bus).await,
    );
    let reply = bounded(coordinator(&bus, test_config()).ask(AskRequest {
        question: "who directed Heat".into(),
        options: AskOptions::default(),
    }))
    .await
    .expect("answered");
    // No judge runs in this test (missing); the summarizer must not have failed.
    assert!(
        reply.degraded.iter().all(|d| d.role != "summarizer"),
        "{:?}",
        reply.degraded
    );
    let answer = reply
        .answers
        .iter()
        .find(|a| a.text == "Michael Mann")
        .unwrap_or_else(|| panic!("{:?}", reply.answers));
    let cited = answer.evidence[0] as usize;
    assert!(
        reply.evidence[cited].text.contains("Michael Mann"),
        "the citation names the whole context's line: {:?}",
        reply.evidence[cited]
    );
    assert!(
        reply
            .notes
            .iter()
            .any(|n| n.contains("summarizer: the context was cut")),
        "{:?}",
        reply.notes
    );
}
