//! The kg-linker role. With a language model: the project's multi-task prompt and its
//! tolerant parser (one model call). Without one, or when the model fails or the
//! budget has no call left: the LLM-free linker over the graph's names and relations.

use std::{sync::Arc, time::Instant};

use kgmesh_models::{
    parse::kg_linker::parse,
    prompts::{kg_linker::build, PromptBudget, Round},
    LanguageModel,
};
use kgmesh_schemas::{
    messages::kg_linker::{KgLinkReply, KgLinkRequest},
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;

use super::core::{link_without_llm, LinkerConfig};
use crate::{
    entity_linker::names::SharedNames,
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    scoring::{relevance::TextVectors, store_error, text_vectors},
};

struct KgLinker {
    graph: Arc<dyn GraphStore>,
    names: Arc<SharedNames>,
    llm_opt: Option<Arc<dyn LanguageModel>>,
    vectors_opt: Option<Arc<TextVectors>>,
    config: LinkerConfig,
}

impl KgLinker {
    async fn link(
        &self,
        ctx: CallContext,
        request: KgLinkRequest,
    ) -> Result<KgLinkReply, AgentError> {
        ctx.check_deadline()?;
        if let Some(llm) = self
            .llm_opt
            .as_ref()
            .filter(|_| ctx.budget().check_llm(1).is_ok())
        {
            match self.link_with_llm(&ctx, llm.as_ref(), &request).await {
                Ok(reply) => return Ok(reply),
                Err(error) => {
                    tracing::warn!(%error, "kg-linker model call failed; linking without a model")
                }
            }
        }
        let started = Instant::now();
        let index = self.names.get(self.graph.as_ref()).await?;
        let reply = link_without_llm(
            self.graph.as_ref(),
            &index,
            self.vectors_opt.clone(),
            &request.question,
            &request.cues,
            &self.config,
        )
        .await
        .map_err(store_error)?;
        ctx.record_graph(reply.metapaths.len() as u64, started.elapsed());
        Ok(reply)
    }

    async fn link_with_llm(
        &self,
        ctx: &CallContext,
        llm: &dyn LanguageModel,
        request: &KgLinkRequest,
    ) -> Result<KgLinkReply, String> {
        let schema = self.graph.schema().await.map_err(|e| e.to_string())?;
        let round = if ctx.round() <= 1 {
            Round::First
        } else {
            Round::Later
        };
        let chat = build(request, &schema, round, &PromptBudget::default());
        let response = llm.chat(chat).await.map_err(|e| e.to_string())?;
        ctx.record_llm_call(
            response.usage.prompt_tokens,
            response.usage.completion_tokens,
            response.elapsed,
        );
        let relation_names: Vec<String> = schema.relations.iter().map(|r| r.name.clone()).collect();
        Ok(parse(&response.text, &relation_names))
    }
}

/// The role's factory (see [`crate::runtime::registry`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let graph = deps.require_graph(Role::KG_LINKER)?;
    let linker = Arc::new(KgLinker {
        names: deps.names.clone(),
        graph,
        llm_opt: deps.llm.clone(),
        vectors_opt: text_vectors(deps),
        config: LinkerConfig {
            top_metapaths: deps.retrieval.top_metapaths.max(1),
            ..LinkerConfig::default()
        },
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::KG_LINKER), RoleKind::Core).op(
            move |ctx, request: KgLinkRequest| {
                let linker = linker.clone();
                async move { linker.link(ctx, request).await }
            },
        ),
    )
}
