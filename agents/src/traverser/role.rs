//! The agentic-traverser role.

use std::{sync::Arc, time::Instant};

use kgmesh_models::LanguageModel;
use kgmesh_schemas::{
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;

use super::core::{traverse, TraverseConfig, TraverseError};
use crate::{
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
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

impl Traverser {
    async fn retrieve(
        &self,
        ctx: CallContext,
        request: RetrieveRequest,
    ) -> Result<RetrieveReply, AgentError> {
        ctx.check_deadline()?;
        if request.entities.is_empty() {
            return Ok(RetrieveReply::default());
        }
        let started = Instant::now();
        let budget = ctx.budget();
        // Two model calls per step; never more than the question has left.
        let llm_opt = self
            .llm_opt
            .as_deref()
            .filter(|_| budget.check_llm(2).is_ok());
        let config = TraverseConfig {
            max_steps: budget.depth.get().min(self.limits.max_steps),
            max_llm_calls: budget.llm_calls.min(self.limits.max_llm_calls),
            max_triplets: (request.max_evidence.max(1) as usize).min(self.limits.max_triplets),
            ..self.limits
        };
        let names: Vec<&str> = request
            .entities
            .iter()
            .map(|e| e.entity.name.as_str())
            .collect();
        let relevance = Relevance::new(&request.question, &names, self.vectors_opt.clone())
            .await
            .with_cues(&request.cues);
        let start: Vec<_> = request.entities.iter().map(|e| e.entity.clone()).collect();
        let walked = traverse(
            self.graph.as_ref(),
            &relevance,
            llm_opt,
            &request.question,
            &start,
            &config,
            Some(ctx.deadline()),
        )
        .await
        .map_err(|TraverseError::Store(error)| store_error(error))?;
        let graph_time = started
            .elapsed()
            .saturating_sub(std::time::Duration::from_micros(walked.cost.llm_us));
        ctx.record_graph(walked.triples.len() as u64, graph_time);
        ctx.record(&kgmesh_schemas::budget::Cost {
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
        let max_evidence = request.max_evidence.max(1) as usize;
        Ok(RetrieveReply {
            evidence: walked
                .triples
                .into_iter()
                .take(max_evidence)
                .map(|(triple, score)| Evidence {
                    source: Role::AGENTIC_TRAVERSER.to_owned(),
                    score,
                    item: EvidenceItem::Triple(triple),
                })
                .collect(),
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
    Ok(RoleSpec::new(
        Role::well_known(Role::AGENTIC_TRAVERSER),
        RoleKind::Retriever,
    )
    .op(move |ctx, request: RetrieveRequest| {
        let traverser = traverser.clone();
        async move { traverser.retrieve(ctx, request).await }
    }))
}
