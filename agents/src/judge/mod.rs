//! The `judge` role (CacheRAG's dispatcher, Algorithm 3): is the retrieved context
//! enough to answer, and if not, which bounded expansion would help: σ_depth along one
//! relation from the frontier, σ_breadth around it, or another round.
//!
//! With a language model (and budget for one call) it asks the model with the judge
//! prompt; without one, or when the model fails or answers unparseably, it applies the
//! deterministic rule in [`core`]. A model failure is never passed off as a verdict:
//! the reason says the rule decided and why.

pub mod core;

use std::{sync::Arc, time::Instant};

use kgmesh_models::{parse, prompts, LanguageModel};
use kgmesh_schemas::{
    graph::Direction,
    messages::judge::{JudgeReply, JudgeRequest},
    AgentError, Role, RoleKind,
};
use kgmesh_stores::{GraphStore, NeighborQuery};

use self::core::{decide, relations_in_context, JudgeRule};
use crate::runtime::{
    AgentDeps, CallContext, ConfigSection, Need, Needs, RoleBuildError, RoleDescriptor, RoleSpec,
};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::JUDGE,
    kind: RoleKind::Core,
    summary: "decides COMPLETE or a bounded depth/breadth expansion (CacheRAG dispatcher)",
    smoke_test: false,
    uses_model: true,
    needs: Needs {
        graph: Need::Optional,
        ..Needs::NOTHING
    },
    config: Some(ConfigSection {
        section: "judge",
        keys: JudgeRule::KEYS,
    }),
    build: role,
};

/// Context shown to the model, in tokens (the rest of the prompt is small).
const CONTEXT_TOKENS: usize = 3_000;
/// Edges read per frontier node when listing the relations a model may name.
const RELATION_FANOUT: usize = 200;

/// The role's factory: uses the language model and graph when the process has them.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let judge = Arc::new(Judge {
        llm: deps.llm_for(Role::JUDGE),
        graph: deps.graph.clone(),
        rule: deps.setting::<JudgeRule>(),
    });
    Ok(RoleSpec::new(Role::well_known(Role::JUDGE), RoleKind::Core)
        .op_on(&judge, |judge, ctx, request: JudgeRequest| async move {
            judge.judge(&ctx, request).await
        }))
}

pub struct Judge {
    pub llm: Option<Arc<dyn LanguageModel>>,
    pub graph: Option<Arc<dyn GraphStore>>,
    pub rule: JudgeRule,
}

impl Judge {
    pub async fn judge(
        &self,
        ctx: &CallContext,
        request: JudgeRequest,
    ) -> Result<JudgeReply, AgentError> {
        let Some(llm) = &self.llm else {
            return Ok(decide(&request, &self.rule));
        };
        if ctx.budget().check_llm(1).is_err() {
            let mut reply = decide(&request, &self.rule);
            reply.reason = format!("no model budget left; rule: {}", reply.reason);
            return Ok(reply);
        }
        let relations = self.frontier_relations(ctx, &request).await;
        let evidence_tokens = prompts::context::fit_evidence(
            llm.context_tokens(),
            prompts::judge::COMPLETION_TOKENS,
            CONTEXT_TOKENS,
        );
        let chat = prompts::judge::build(&request, &relations, evidence_tokens);
        let started = Instant::now();
        let outcome = ctx.chat(llm.as_ref(), chat).await;
        match outcome {
            Ok(response) => {
                ctx.record_llm_call(
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    started.elapsed(),
                );
                match parse::judge::parse(&response.text, &request.frontier, &relations) {
                    Ok(reply) => Ok(reply),
                    Err(error) => {
                        ctx.record_model_fallback(&format!("unparseable verdict: {error}"));
                        let mut reply = decide(&request, &self.rule);
                        reply.reason =
                            format!("model reply unusable ({error}); rule: {}", reply.reason);
                        Ok(reply)
                    }
                }
            }
            Err(error) => {
                ctx.record_model_fallback(&format!("the call failed: {error}"));
                let mut reply = decide(&request, &self.rule);
                reply.reason = format!("model unavailable ({error}); rule: {}", reply.reason);
                Ok(reply)
            }
        }
    }

    /// The relations a depth expansion may follow: those around the frontier in the
    /// graph when there is one, else those already in the evidence.
    async fn frontier_relations(&self, ctx: &CallContext, request: &JudgeRequest) -> Vec<String> {
        let from_context = relations_in_context(&request.context);
        let (Some(graph), false) = (&self.graph, request.frontier.is_empty()) else {
            return from_context;
        };
        let ids: Vec<_> = request.frontier.iter().map(|e| e.id).collect();
        let query = NeighborQuery {
            direction: Direction::Both,
            relations: None,
            fanout_cap: RELATION_FANOUT,
        };
        let started = Instant::now();
        match graph.neighbors(&ids, &query).await {
            Ok(neighborhood) => {
                ctx.record_graph(neighborhood.triples.len() as u64, started.elapsed());
                let mut relations: Vec<String> = Vec::new();
                for triple in &neighborhood.triples {
                    if !relations.contains(&triple.relation) {
                        relations.push(triple.relation.clone());
                    }
                }
                relations
            }
            Err(error) => {
                tracing::warn!(%error, "cannot list the frontier's relations");
                from_context
            }
        }
    }
}

#[cfg(test)]
mod tests;
