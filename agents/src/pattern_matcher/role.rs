//! The pattern-matcher role: a retriever answering `retrieve` with the subgraphs
//! closest to the question's pattern. With a model (when `llm.roles` lists the role)
//! the model writes the pattern in one call; a failed or unusable reply falls back to
//! the LLM-free pattern, said in a note and counted as a model fallback.

use std::{sync::Arc, time::Instant};

use kgmesh_models::{parse, prompts, LanguageModel};
use kgmesh_schemas::{
    budget::Cost,
    messages::{
        context::{Evidence, EvidenceItem},
        retrieve::{RetrieveReply, RetrieveRequest},
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;
use tokio::sync::OnceCell;

use super::{
    core::{llm_free_pattern, match_pattern, named_entities, MatchLimits, Matched, NamedEntities},
    pattern::{pattern_from_triples, Pattern},
};
use crate::{
    kg_linker::core::graph_relations,
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    scoring::{relevance::TextVectors, store_error, text_vectors},
};

struct PatternMatcher {
    graph: Arc<dyn GraphStore>,
    /// Writes the question's pattern when the role may use the model (`llm.roles`).
    llm_opt: Option<Arc<dyn LanguageModel>>,
    /// Word embeddings for relation phrases, when the process has an embedder.
    vectors_opt: Option<Arc<TextVectors>>,
    /// The graph's relation names, read once.
    relations: OnceCell<Arc<[String]>>,
}

impl PatternMatcher {
    /// The pattern the model writes for `question` (one call), or why it is unusable.
    async fn model_pattern(
        &self,
        ctx: &CallContext,
        llm: &dyn LanguageModel,
        question: &str,
        named: &NamedEntities,
        relations: &[String],
    ) -> Result<Pattern, String> {
        let names: Vec<String> = named.iter().map(|(name, _)| name.clone()).collect();
        let prompt = prompts::pattern::pattern(question, &names, relations);
        let reply = ctx.chat(llm, prompt).await.map_err(|e| e.to_string())?;
        ctx.record(&Cost {
            llm_calls: 1,
            prompt_tokens: reply.usage.prompt_tokens,
            completion_tokens: reply.usage.completion_tokens,
            llm_us: reply.elapsed.as_micros() as u64,
            ..Cost::default()
        });
        let triples = parse::pattern::parse(&reply.text).map_err(|e| e.to_string())?;
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        pattern_from_triples(&triples, &names)
    }

    /// The closest subgraphs to `pattern`; its notes go to `notes`.
    async fn matched(
        &self,
        pattern: Pattern,
        named: &NamedEntities,
        relations: &[String],
        limits: &MatchLimits,
        notes: &mut Vec<String>,
    ) -> Result<Matched, AgentError> {
        let mut matched = match_pattern(
            self.graph.as_ref(),
            self.vectors_opt.as_deref(),
            relations,
            pattern,
            named,
            limits,
        )
        .await
        .map_err(store_error)?;
        notes.append(&mut matched.notes);
        Ok(matched)
    }

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
        let named = named_entities(&request.question, &request.entities);
        let mut notes = Vec::new();
        let mut pattern = None;
        if let Some(llm) = self
            .llm_opt
            .as_deref()
            .filter(|_| budget.check_llm(1).is_ok())
        {
            match self
                .model_pattern(&ctx, llm, &request.question, &named, &relations)
                .await
            {
                Ok(written) => pattern = Some(written),
                Err(why) => {
                    ctx.record_model_fallback(&why);
                    notes.push(format!(
                        "pattern matcher: the model's pattern is unusable ({why}); the LLM-free pattern is used"
                    ));
                }
            }
        }
        let mut edges_read = 0;
        let mut paths = Vec::new();
        if let Some(written) = pattern {
            let matched = self
                .matched(written, &named, &relations, &limits, &mut notes)
                .await?;
            edges_read += matched.edges_read;
            paths = matched.paths;
            if paths.is_empty() {
                notes.push(
                    "pattern matcher: the model's pattern matched nothing close; the LLM-free pattern is tried too"
                        .to_owned(),
                );
            }
        }
        if paths.is_empty() {
            let Some(own) = llm_free_pattern(
                &request.question,
                &named,
                &relations,
                self.vectors_opt.as_deref(),
                limits.max_edges,
            )
            .await
            else {
                notes.push("pattern matcher: the question names no linked entity".to_owned());
                return Ok(RetrieveReply {
                    notes,
                    ..RetrieveReply::default()
                });
            };
            let matched = self
                .matched(own, &named, &relations, &limits, &mut notes)
                .await?;
            edges_read += matched.edges_read;
            paths = matched.paths;
        }
        ctx.record_graph(edges_read as u64, started.elapsed());
        Ok(RetrieveReply {
            evidence: paths
                .into_iter()
                .take(max_evidence)
                .map(|(path, distance)| Evidence {
                    source: Role::PATTERN_MATCHER.to_owned(),
                    score: 1.0 / (1.0 + distance),
                    item: EvidenceItem::Path(path),
                })
                .collect(),
            repair_hints: Vec::new(),
            notes,
        })
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]). Embedded mode starts it only
/// when `retrieval.pattern_matcher` asks for it; `kgmesh agent --role pattern-matcher`
/// always does.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let matcher = Arc::new(PatternMatcher {
        graph: deps.require_graph(Role::PATTERN_MATCHER)?,
        llm_opt: deps.llm_for(Role::PATTERN_MATCHER),
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
