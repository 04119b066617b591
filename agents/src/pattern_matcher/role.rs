//! The pattern-matcher role: a retriever answering `retrieve` with the subgraphs
//! closest to the question's pattern.

use std::{sync::Arc, time::Instant};

use kgmesh_schemas::{
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;
use tokio::sync::OnceCell;

use super::core::{match_question, MatchLimits};
use crate::{
    kg_linker::core::graph_relations,
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    scoring::{relevance::TextVectors, store_error, text_vectors},
};

struct PatternMatcher {
    graph: Arc<dyn GraphStore>,
    /// Word embeddings for relation phrases, when the process has an embedder.
    vectors_opt: Option<Arc<TextVectors>>,
    /// The graph's relation names, read once.
    relations: OnceCell<Arc<[String]>>,
}

impl PatternMatcher {
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
        let relations = self
            .relations
            .get_or_init(|| graph_relations(self.graph.as_ref()))
            .await
            .clone();
        let max_evidence = request.max_evidence.max(1) as usize;
        let limits = MatchLimits {
            max_edges: usize::from(budget.depth.get()),
            k: max_evidence.min(MatchLimits::default().k),
            max_edges_read: (budget.result_rows as usize)
                .saturating_mul(50)
                .clamp(1, MatchLimits::default().max_edges_read),
            deadline_opt: Some(ctx.deadline()),
            ..MatchLimits::default()
        };
        let matched = match_question(
            self.graph.as_ref(),
            self.vectors_opt.as_deref(),
            &relations,
            &request.question,
            &request.entities,
            &limits,
        )
        .await
        .map_err(store_error)?;
        ctx.record_graph(matched.edges_read as u64, started.elapsed());
        Ok(RetrieveReply {
            evidence: matched
                .paths
                .into_iter()
                .take(max_evidence)
                .map(|(path, distance)| Evidence {
                    source: Role::PATTERN_MATCHER.to_owned(),
                    score: 1.0 / (1.0 + distance),
                    item: EvidenceItem::Path(path),
                })
                .collect(),
            repair_hints: Vec::new(),
            notes: matched.notes,
        })
    }
}

/// The role's factory (see [`crate::runtime::registry`]). Embedded mode starts it only
/// when `retrieval.pattern_matcher` asks for it; `kgmesh agent --role pattern-matcher`
/// always does.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let matcher = Arc::new(PatternMatcher {
        graph: deps.require_graph(Role::PATTERN_MATCHER)?,
        vectors_opt: text_vectors(deps),
        relations: OnceCell::new(),
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::PATTERN_MATCHER), RoleKind::Retriever).op(
            move |ctx, request: RetrieveRequest| {
                let matcher = matcher.clone();
                async move { matcher.retrieve(ctx, request).await }
            },
        ),
    )
}
