//! The pattern-matcher role: a retriever answering `retrieve` with the subgraphs
//! closest to the question's pattern. With a model (when `llm.roles` lists the role)
//! the model writes the pattern in one call; a failed or unusable reply falls back to
//! the LLM-free pattern, said in a note and counted as a model fallback.

use std::sync::Arc;

use kgmesh_models::{parse, prompts, LanguageModel};
use kgmesh_schemas::{
    budget::Cost,
    messages::{context::EvidenceItem, retrieve::RetrieveReply},
    AgentError, Role,
};
use kgmesh_stores::GraphStore;
use tokio::sync::OnceCell;

use super::{
    core::{llm_free_pattern, match_pattern, named_entities, MatchLimits, Matched, NamedEntities},
    pattern::{pattern_from_triples, Pattern},
};
use crate::{
    kg_linker::core::graph_relations,
    runtime::{
        evidence, retriever_spec, AgentDeps, CallContext, RetrieveCall, Retriever, RoleBuildError,
        RoleSpec,
    },
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
}

#[async_trait::async_trait]
impl Retriever for PatternMatcher {
    const ROLE: &'static str = Role::PATTERN_MATCHER;
    const NEEDS_ENTITIES: bool = true;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        let relations = self
            .relations
            .get_or_init(|| graph_relations(self.graph.as_ref()))
            .await
            .clone();
        let max_evidence = call.max_evidence();
        let limits = MatchLimits {
            max_edges: usize::from(call.budget.depth.get()),
            k: max_evidence.min(MatchLimits::default().k),
            max_edges_read: (call.budget.result_rows as usize)
                .saturating_mul(50)
                .clamp(1, MatchLimits::default().max_edges_read),
            deadline_opt: Some(call.ctx.deadline()),
            ..MatchLimits::default()
        };
        let named = named_entities(&call.request.question, &call.request.entities);
        let mut notes = Vec::new();
        let mut pattern = None;
        if let Some(llm) = self
            .llm_opt
            .as_deref()
            .filter(|_| call.budget.check_llm(1).is_ok())
        {
            match self
                .model_pattern(&call.ctx, llm, &call.request.question, &named, &relations)
                .await
            {
                Ok(written) => pattern = Some(written),
                Err(why) => {
                    call.ctx.record_model_fallback(&why);
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
                &call.request.question,
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
        call.ctx
            .record_graph(edges_read as u64, call.started.elapsed());
        let items = paths
            .into_iter()
            .map(|(path, distance)| (EvidenceItem::Path(path), 1.0 / (1.0 + distance)));
        Ok(RetrieveReply {
            evidence: evidence(Self::ROLE, max_evidence, items),
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
    Ok(retriever_spec(matcher))
}
