//! The query-executor role: `retrieve` runs the round's Cypher as evidence or repair
//! hints, and on a property graph, in the first round, a query grounded in the question
//! ([`super::planner`]); `query` runs one query for whoever asks (rows or a typed
//! refusal); `schema` describes the graph (labels, relations, counts).

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use kgmesh_schemas::{
    messages::{
        query_executor::{QueryReply, QueryRequest, SchemaReply, SchemaRequest},
        retrieve::RetrieveReply,
    },
    AgentError, Role,
};
use kgmesh_stores::GraphStore;

use super::core::{execute, execute_all, limits_from_budget};
use super::planner::GroundedRetriever;
use crate::{
    cache_manager::persist::SharedPlanStore,
    runtime::{
        retriever_spec, AgentDeps, CallContext, RetrieveCall, Retriever, RoleBuildError, RoleSpec,
    },
    settings::RetrievalSettings,
};

/// Queries run per request at most.
const MAX_QUERIES: usize = 5;

struct QueryExecutor {
    graph: Arc<dyn GraphStore>,
    grounded: Arc<GroundedRetriever>,
}

#[async_trait::async_trait]
impl Retriever for QueryExecutor {
    const ROLE: &'static str = Role::QUERY_EXECUTOR;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        // The question's own query, once: later rounds would write the same one. It
        // records its own rows and store time.
        let (grounded, grounded_notes) = if call.ctx.round() <= 1 {
            self.grounded
                .retrieve(&call.ctx, &call.request.question)
                .await
        } else {
            (Vec::new(), Vec::new())
        };
        let started = Instant::now();
        let limits = limits_from_budget(call.ctx.budget(), None, None);
        let mut executed = execute_all(
            self.graph.as_ref(),
            Role::QUERY_EXECUTOR,
            &call.request.cypher,
            &limits,
            MAX_QUERIES,
        )
        .await;
        let rows: usize = executed
            .evidence
            .iter()
            .map(|e| match &e.item {
                kgmesh_schemas::messages::context::EvidenceItem::Query { rows, .. } => {
                    rows.rows.len()
                }
                _ => 0,
            })
            .sum();
        call.ctx.record_graph(rows as u64, started.elapsed());
        executed.evidence.splice(0..0, grounded);
        executed.notes.extend(grounded_notes);
        Ok(RetrieveReply {
            evidence: executed.evidence,
            repair_hints: executed.repair_hints,
            notes: executed.notes,
        })
    }
}

impl QueryExecutor {
    async fn query(
        &self,
        ctx: CallContext,
        request: QueryRequest,
    ) -> Result<QueryReply, AgentError> {
        ctx.check_deadline()?;
        let started = Instant::now();
        let timeout =
            (request.timeout_ms > 0).then(|| Duration::from_millis(request.timeout_ms as u64));
        let rows_opt = (request.max_rows > 0).then_some(request.max_rows);
        let limits = limits_from_budget(ctx.budget(), rows_opt, timeout);
        let outcome = execute(
            self.graph.as_ref(),
            &request.cypher,
            &request.params,
            &limits,
        )
        .await
        .map_err(|refused| {
            if refused.transient {
                AgentError::Unavailable {
                    detail: refused.reason,
                }
            } else {
                AgentError::InvalidQuery {
                    reason: refused.reason,
                    hint: Some(refused.hint),
                }
            }
        });
        let rows = outcome.as_ref().map(|r| r.rows.len()).unwrap_or(0);
        ctx.record_graph(rows as u64, started.elapsed());
        Ok(QueryReply { outcome })
    }

    async fn schema(&self, ctx: CallContext) -> Result<SchemaReply, AgentError> {
        ctx.check_deadline()?;
        let started = Instant::now();
        let schema = self
            .graph
            .schema()
            .await
            .map_err(|error| AgentError::Unavailable {
                detail: format!("the graph's schema could not be read: {error}"),
            })?;
        ctx.record_graph(0, started.elapsed());
        Ok(SchemaReply {
            schema: (*schema).clone(),
        })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let graph = deps.require_graph(Role::QUERY_EXECUTOR)?;
    let grounded = Arc::new(GroundedRetriever::new(
        graph.clone(),
        deps.get::<SharedPlanStore>().cloned(),
        deps.llm_for(Role::QUERY_EXECUTOR),
        deps.embedder.clone(),
        deps.setting::<RetrievalSettings>().grounded_cypher,
    ));
    // Read the graph's values before the first question asks for them.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let grounded = grounded.clone();
        runtime.spawn(async move { grounded.follow_plans().await });
    }
    let executor = Arc::new(QueryExecutor { graph, grounded });
    Ok(retriever_spec(executor.clone())
        .op_on(&executor, |executor, ctx, request: QueryRequest| async move {
            executor.query(ctx, request).await
        })
        .op_on(&executor, |executor, ctx, _request: SchemaRequest| async move {
            executor.schema(ctx).await
        }))
}
