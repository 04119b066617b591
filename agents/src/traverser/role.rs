//! The agentic-traverser role.

use std::sync::Arc;

use kgmesh_models::LanguageModel;
use kgmesh_schemas::{
    messages::{context::EvidenceItem, retrieve::RetrieveReply},
    AgentError, Role,
};
use kgmesh_stores::GraphStore;

use super::core::{traverse, TraverseConfig, TraverseError};
use crate::{
    runtime::{
        evidence, retriever_spec, AgentDeps, RetrieveCall, Retriever, RoleBuildError, RoleSpec,
    },
    scoring::{
        question_vectors,
        relevance::{Relevance, TextVectors},
        store_error,
    },
};

struct Traverser {
    graph: Arc<dyn GraphStore>,
    llm_opt: Option<Arc<dyn LanguageModel>>,
    vectors_opt: Option<Arc<TextVectors>>,
    /// The configured limits; steps, model calls, triplets and the deadline are
    /// narrowed per request.
    limits: TraverseConfig,
}

#[async_trait::async_trait]
impl Retriever for Traverser {
    const ROLE: &'static str = Role::AGENTIC_TRAVERSER;
    const NEEDS_ENTITIES: bool = true;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        // Two model calls per step; never more than the question has left.
        let llm_opt = self
            .llm_opt
            .as_deref()
            .filter(|_| call.budget.check_llm(2).is_ok());
        let config = TraverseConfig {
            max_steps: call.budget.depth.get().min(self.limits.max_steps),
            max_llm_calls: call.budget.llm_calls.min(self.limits.max_llm_calls),
            max_triplets: call.max_evidence().min(self.limits.max_triplets),
            ..self.limits
        };
        let names: Vec<&str> = call
            .request
            .entities
            .iter()
            .map(|e| e.entity.name.as_str())
            .collect();
        let relevance = Relevance::new(&call.request.question, &names, self.vectors_opt.clone())
            .await
            .with_cues(&call.request.cues);
        let start: Vec<_> = call
            .request
            .entities
            .iter()
            .map(|e| e.entity.clone())
            .collect();
        let walked = traverse(
            self.graph.as_ref(),
            &relevance,
            llm_opt,
            &call.request.question,
            &start,
            &config,
            Some(call.ctx.deadline()),
        )
        .await
        .map_err(|TraverseError::Store(error)| store_error(error))?;
        let graph_time = call
            .started
            .elapsed()
            .saturating_sub(std::time::Duration::from_micros(walked.cost.llm_us));
        call.ctx
            .record_graph(walked.triples.len() as u64, graph_time);
        call.ctx.record(&kgmesh_schemas::budget::Cost {
            llm_calls: walked.cost.llm_calls,
            prompt_tokens: walked.cost.prompt_tokens,
            completion_tokens: walked.cost.completion_tokens,
            llm_us: walked.cost.llm_us,
            model_fallbacks: walked.cost.model_fallbacks,
            ..Default::default()
        });
        let mut notes = walked.notes;
        notes.push(format!(
            "agentic traversal: {} steps ({}), relations {:?}",
            walked.steps.len(),
            walked
                .stopped
                .map_or_else(String::new, |stop| stop.to_string()),
            walked
                .steps
                .iter()
                .map(|s| s.relations_chosen.clone())
                .collect::<Vec<_>>()
        ));
        let items = walked
            .triples
            .into_iter()
            .map(|(triple, score)| (EvidenceItem::Triple(triple), score));
        Ok(RetrieveReply {
            evidence: evidence(Self::ROLE, call.max_evidence(), items),
            repair_hints: Vec::new(),
            notes,
        })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let traverser = Arc::new(Traverser {
        graph: deps.require_graph(Role::AGENTIC_TRAVERSER)?,
        llm_opt: deps.llm_for(Role::AGENTIC_TRAVERSER),
        vectors_opt: question_vectors(deps),
        limits: deps.setting::<TraverseConfig>(),
    });
    Ok(retriever_spec(traverser))
}
