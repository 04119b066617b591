use std::time::Duration;

use kgmesh_schemas::budget::{Budget, Deadline};
use kgmesh_stores::QueryLimits;

use super::core::{execute, execute_all, limits_from_budget};
use crate::scoring::fixtures::movies;

#[test]
fn limits_take_the_smaller_of_request_and_budget() {
    let mut budget = Budget::with_timeout(Duration::from_secs(60));
    budget.result_rows = 100;
    let limits = limits_from_budget(&budget, Some(500), Some(Duration::from_secs(2)));
    assert_eq!(limits.max_rows, 100);
    assert_eq!(limits.timeout, Duration::from_secs(2));
    budget.deadline = Deadline { unix_ms: 1 };
    assert!(limits_from_budget(&budget, None, None).timeout.is_zero());
}

#[tokio::test]
async fn writes_are_refused_with_a_repair_hint() {
    let graph = movies();
    let refused = execute(
        &graph,
        "CREATE (n:Movie {name: 'x'}) RETURN n",
        &[],
        &QueryLimits::default(),
    )
    .await
    .unwrap_err();
    assert!(!refused.transient);
    assert!(!refused.hint.is_empty());
}

#[tokio::test]
async fn a_passed_deadline_runs_nothing() {
    let graph = movies();
    let limits = QueryLimits {
        timeout: Duration::ZERO,
        ..QueryLimits::default()
    };
    let refused = execute(&graph, "MATCH (n) RETURN n LIMIT 1", &[], &limits)
        .await
        .unwrap_err();
    assert!(refused.transient);
}

#[tokio::test]
async fn a_round_of_queries_yields_hints_not_fake_evidence() {
    let graph = movies();
    let queries = vec![
        "MATCH (n) DETACH DELETE n".to_owned(),
        "MATCH (n) DETACH DELETE n".to_owned(),
        "   ".to_owned(),
    ];
    let executed = execute_all(
        &graph,
        "query-executor",
        &queries,
        &QueryLimits::default(),
        5,
    )
    .await;
    assert!(executed.evidence.is_empty());
    assert_eq!(
        executed.repair_hints.len() + executed.notes.len(),
        1,
        "duplicates and blanks dropped"
    );
}
