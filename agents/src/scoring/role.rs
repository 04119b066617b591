//! The scoring-retriever role: top-k triplets within L hops of the linked entities.

use std::{sync::Arc, time::Instant};

use kgmesh_schemas::{
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;

use super::{
    core::{score_triples, ScoringConfig},
    question_vectors,
    relevance::{Relevance, TextVectors},
    store_error,
};
use crate::{
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    settings::RetrievalSettings,
};

struct Scoring {
    graph: Arc<dyn GraphStore>,
    vectors_opt: Option<Arc<TextVectors>>,
    top_k: usize,
}

impl Scoring {
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
        let config = ScoringConfig {
            hops: ScoringConfig::default().hops.min(budget.depth.get()),
            top_k: (request.max_evidence.max(1) as usize).min(self.top_k),
            max_triples: (budget.result_rows as usize).max(1) * 20,
            deadline_opt: Some(ctx.deadline()),
            ..ScoringConfig::default()
        };
        let names: Vec<&str> = request
            .entities
            .iter()
            .map(|e| e.entity.name.as_str())
            .collect();
        let relevance = Relevance::new(&request.question, &names, self.vectors_opt.clone()).await;
        let entities: Vec<_> = request.entities.iter().map(|e| e.entity.clone()).collect();
        let triples = score_triples(self.graph.as_ref(), &relevance, &entities, &config)
            .await
            .map_err(store_error)?;
        ctx.record_graph(triples.len() as u64, started.elapsed());
        Ok(RetrieveReply {
            evidence: triples
                .into_iter()
                .map(|(triple, score)| Evidence {
                    source: Role::SCORING_RETRIEVER.to_owned(),
                    score,
                    item: EvidenceItem::Triple(triple),
                })
                .collect(),
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
    Ok(RoleSpec::new(
        Role::well_known(Role::SCORING_RETRIEVER),
        RoleKind::Retriever,
    )
    .op(move |ctx, request: RetrieveRequest| {
        let scoring = scoring.clone();
        async move { scoring.retrieve(ctx, request).await }
    }))
}
