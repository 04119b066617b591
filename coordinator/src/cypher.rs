//! What the query executor on the bus answers for people outside a question: one
//! read-only openCypher query (`POST /v1/cypher`) and the graph's schema
//! (`GET /v1/schema`), the same in embedded and distributed mode (the query executor
//! holds the graph, and validates a query before it runs it).

use std::time::Duration;

use kgmesh_schemas::{
    graph::{GraphSchema, Rows},
    messages::query_executor::{QueryRequest, SchemaRequest},
    Meta, QuestionId, Role, Rpc,
};

use crate::{calls::send, Coordinator, CoordinatorError};

/// Longest query text accepted.
pub const MAX_QUERY_CHARS: usize = 10_000;

impl Coordinator {
    /// Runs `request` on a query executor: its rows, or the executor's error (a refused
    /// query is `AgentError::InvalidQuery` with the reason and a repair hint).
    pub async fn cypher(&self, request: QueryRequest) -> Result<Rows, CoordinatorError> {
        if request.cypher.trim().is_empty() {
            return Err(CoordinatorError::InvalidQuestion(
                "the query is empty".into(),
            ));
        }
        if request.cypher.chars().count() > MAX_QUERY_CHARS {
            return Err(CoordinatorError::InvalidQuestion(format!(
                "the query is longer than {MAX_QUERY_CHARS} characters"
            )));
        }
        // The call waits as long as the query may run, and at least the usual call.
        let timeout = self
            .config()
            .call_timeout
            .max(Duration::from_millis(u64::from(request.timeout_ms) + 1_000));
        let reply = self.call_query_executor(request, timeout).await?;
        reply.outcome.map_err(|error| CoordinatorError::RoleFailed {
            role: Role::QUERY_EXECUTOR.to_owned(),
            error,
        })
    }

    /// The graph's labels and relations with their counts, as the query executor reads
    /// them from its store.
    pub async fn schema(&self) -> Result<GraphSchema, CoordinatorError> {
        let reply = self
            .call_query_executor(SchemaRequest {}, self.config().call_timeout)
            .await?;
        Ok(reply.schema)
    }

    /// One call to a query executor outside any question, waiting up to `timeout`.
    async fn call_query_executor<R: Rpc + Clone>(
        &self,
        request: R,
        timeout: Duration,
    ) -> Result<R::Reply, CoordinatorError> {
        let codec = self.require_role(Role::QUERY_EXECUTOR, R::OP).await?;
        let mut budget = self.config().budget;
        budget.deadline = kgmesh_schemas::Deadline::after(timeout);
        let role = Role::well_known(Role::QUERY_EXECUTOR);
        let (reply, _cost) = send(
            self.bus().as_ref(),
            (&role, codec),
            Meta::new(QuestionId::new_random(), 0, budget),
            request,
            timeout,
            self.config().retries,
            None,
        )
        .await
        .map_err(|error| CoordinatorError::RoleFailed {
            role: role.to_string(),
            error: error.to_agent_error(&role.subject(R::OP)),
        })?;
        Ok(reply)
    }
}
