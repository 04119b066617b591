//! Validated, read-only Cypher (ByoKG-RAG §3.4, GraphRAFT): every query is parsed and
//! checked against the graph's schema before it reaches any backend, then run with the
//! question's row and time budgets. A refused or failing query becomes a repair hint
//! for the next KG-Linker call, never an error message posing as evidence.

use std::time::Duration;

use kgmesh_schemas::{
    budget::Budget,
    graph::{Rows, Value},
    messages::context::{Evidence, EvidenceItem},
};
use kgmesh_stores::{cypher::check_read_only, GraphStore, QueryLimits, StoreError};

/// Limits for one query from what the question has left: at most `requested_rows`
/// rows and the smaller of `requested_timeout` and the time to the deadline.
pub fn limits_from_budget(
    budget: &Budget,
    requested_rows: Option<u32>,
    requested_timeout: Option<Duration>,
) -> QueryLimits {
    let defaults = QueryLimits::default();
    let rows = requested_rows
        .map(|r| r.min(budget.result_rows))
        .unwrap_or(budget.result_rows);
    let remaining = budget.deadline.remaining();
    let timeout = requested_timeout.unwrap_or(defaults.timeout).min(remaining);
    QueryLimits {
        max_rows: rows as usize,
        timeout,
        max_depth: budget.depth.get(),
    }
}

/// Why a query gave no rows, in words a model can act on.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub reason: String,
    pub hint: String,
    /// The store failed (timeout, unavailable), not the query.
    pub transient: bool,
}

/// Parses, validates against the schema and runs one query.
pub async fn execute(
    store: &dyn GraphStore,
    cypher: &str,
    params: &[(String, Value)],
    limits: &QueryLimits,
) -> Result<Rows, Refusal> {
    if limits.timeout.is_zero() {
        return Err(Refusal {
            reason: "the question's deadline has passed".to_owned(),
            hint: "no time left to run queries".to_owned(),
            transient: true,
        });
    }
    let schema = store.schema().await.map_err(refusal)?;
    check_read_only(cypher, &schema, limits).map_err(refusal)?;
    match tokio::time::timeout(limits.timeout, store.cypher(cypher, params, limits)).await {
        Ok(result) => result.map_err(refusal),
        Err(_) => Err(refusal(StoreError::Timeout {
            millis: limits.timeout.as_millis() as u64,
        })),
    }
}

fn refusal(error: StoreError) -> Refusal {
    match error {
        StoreError::InvalidQuery { reason, hint } => Refusal {
            hint: hint.unwrap_or_else(|| {
                "write one read-only MATCH … RETURN query using only the schema's labels, relationship types and properties".to_owned()
            }),
            reason,
            transient: false,
        },
        StoreError::LimitExceeded { detail } => Refusal {
            reason: detail,
            hint: "narrow the query: anchor it on a named entity, add a LIMIT, use shorter patterns".to_owned(),
            transient: false,
        },
        StoreError::Timeout { millis } => Refusal {
            reason: format!("the query ran out of time after {millis} ms"),
            hint: "narrow the query: anchor it on a named entity and avoid unbounded patterns".to_owned(),
            transient: true,
        },
        other => Refusal {
            reason: other.to_string(),
            hint: "the graph store failed; try a simpler query or rely on paths".to_owned(),
            transient: true,
        },
    }
}

/// What running a round's queries gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Executed {
    pub evidence: Vec<Evidence>,
    pub repair_hints: Vec<String>,
    pub notes: Vec<String>,
}

/// Runs each query (de-duplicated, in order); rows become evidence, refusals repair
/// hints, store failures notes. Queries with no rows are reported as hints too, since
/// an empty result usually means a wrong name or direction.
pub async fn execute_all(
    store: &dyn GraphStore,
    source: &str,
    queries: &[String],
    limits: &QueryLimits,
    max_queries: usize,
) -> Executed {
    let mut out = Executed::default();
    let mut seen = std::collections::HashSet::new();
    for cypher in queries
        .iter()
        .map(|q| q.trim())
        .filter(|q| !q.is_empty() && seen.insert(q.to_owned()))
        .take(max_queries)
    {
        match execute(store, cypher, &[], limits).await {
            Ok(rows) if rows.rows.is_empty() => out.repair_hints.push(format!(
                "The query `{cypher}` returned no rows: check entity names (they must match the graph exactly) and relationship directions."
            )),
            Ok(rows) => out.evidence.push(Evidence {
                source: source.to_owned(),
                score: 1.0,
                item: EvidenceItem::Query {
                    cypher: cypher.to_owned(),
                    rows,
                    grounded: false,
                },
            }),
            Err(refused) if refused.transient => out
                .notes
                .push(format!("query `{cypher}` failed: {}", refused.reason)),
            Err(refused) => out.repair_hints.push(format!(
                "The query `{cypher}` was refused: {}. {}",
                refused.reason, refused.hint
            )),
        }
    }
    out
}
