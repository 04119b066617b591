//! The scoring-retriever role: top-k triplets within L hops of the linked entities.

use std::sync::Arc;

use kgmesh_schemas::{
    messages::{context::EvidenceItem, retrieve::RetrieveReply},
    AgentError, Role,
};
use kgmesh_stores::GraphStore;

use super::{
    core::{score_triples, ScoringConfig},
    question_vectors,
    relevance::{Relevance, TextVectors},
    store_error,
};
use crate::{
    runtime::{
        evidence, retriever_spec, AgentDeps, RetrieveCall, Retriever, RoleBuildError, RoleSpec,
    },
    settings::RetrievalSettings,
};

struct Scoring {
    graph: Arc<dyn GraphStore>,
    vectors_opt: Option<Arc<TextVectors>>,
    top_k: usize,
}

#[async_trait::async_trait]
impl Retriever for Scoring {
    const ROLE: &'static str = Role::SCORING_RETRIEVER;
    const NEEDS_ENTITIES: bool = true;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        let config = ScoringConfig {
            hops: ScoringConfig::default().hops.min(call.budget.depth.get()),
            top_k: call.max_evidence().min(self.top_k),
            max_triples: (call.budget.result_rows as usize).max(1) * 20,
            deadline_opt: Some(call.ctx.deadline()),
            ..ScoringConfig::default()
        };
        let names: Vec<&str> = call
            .request
            .entities
            .iter()
            .map(|e| e.entity.name.as_str())
            .collect();
        let relevance =
            Relevance::new(&call.request.question, &names, self.vectors_opt.clone()).await;
        let entities: Vec<_> = call
            .request
            .entities
            .iter()
            .map(|e| e.entity.clone())
            .collect();
        let triples = score_triples(self.graph.as_ref(), &relevance, &entities, &config)
            .await
            .map_err(store_error)?;
        call.ctx
            .record_graph(triples.len() as u64, call.started.elapsed());
        let items = triples
            .into_iter()
            .map(|(triple, score)| (EvidenceItem::Triple(triple), score));
        Ok(RetrieveReply {
            evidence: evidence(Self::ROLE, call.max_evidence(), items),
            ..RetrieveReply::default()
        })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let scoring = Arc::new(Scoring {
        graph: deps.require_graph(Role::SCORING_RETRIEVER)?,
        vectors_opt: question_vectors(deps),
        top_k: deps.setting::<RetrievalSettings>().scoring_top_k.max(1),
    });
    Ok(retriever_spec(scoring))
}
