//! The `summarizer` role: the final answers and the evidence lines each rests on.
//!
//! With a language model (and budget for one call) it asks the model with the
//! summarizer prompt and links the answers back to graph entities in the evidence;
//! without one, or when the question's budget is spent, it applies the deterministic
//! rule in [`core`]. When the evidence does not answer the question it says it does
//! not know (no answers, an explanation) rather than guessing.

pub mod core;

use std::{sync::Arc, time::Instant};

use kgmesh_models::{parse, prompts, LanguageModel};
use kgmesh_schemas::{
    messages::summarizer::{SummarizeReply, SummarizeRequest},
    AgentError, Role, RoleKind,
};

use self::core::{entity_named, summarize, SummaryRule};
use crate::runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec};

/// Context shown to the model, in tokens.
const CONTEXT_TOKENS: usize = 4_000;

/// The role's factory: uses the language model when the process has one.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let summarizer = Arc::new(Summarizer {
        llm: deps.llm.clone(),
        rule: SummaryRule::default(),
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::SUMMARIZER), RoleKind::Core).op(
            move |ctx: CallContext, request: SummarizeRequest| {
                let summarizer = summarizer.clone();
                async move { summarizer.summarize(&ctx, request).await }
            },
        ),
    )
}

pub struct Summarizer {
    pub llm: Option<Arc<dyn LanguageModel>>,
    pub rule: SummaryRule,
}

impl Summarizer {
    pub async fn summarize(
        &self,
        ctx: &CallContext,
        request: SummarizeRequest,
    ) -> Result<SummarizeReply, AgentError> {
        let Some(llm) = &self.llm else {
            return Ok(summarize(&request, &self.rule));
        };
        // Nothing retrieved: there is nothing for a model to read either.
        if request.context.evidence.is_empty() || ctx.budget().check_llm(1).is_err() {
            return Ok(summarize(&request, &self.rule));
        }
        let chat = prompts::summarizer::build(&request, CONTEXT_TOKENS);
        let started = Instant::now();
        match llm.chat(chat).await {
            Ok(response) => {
                ctx.record_llm_call(
                    response.usage.prompt_tokens,
                    response.usage.completion_tokens,
                    started.elapsed(),
                );
                let mut reply = parse::summarizer::parse(
                    &response.text,
                    request.context.evidence.len(),
                    usize::from(request.max_answers.max(1)),
                );
                for answer in &mut reply.answers {
                    if answer.entity.is_none() {
                        answer.entity =
                            entity_named(&request.context, &answer.text, &answer.evidence);
                    }
                }
                Ok(reply)
            }
            Err(error) => {
                tracing::warn!(%error, "summarizer model call failed; using the rule");
                let mut reply = summarize(&request, &self.rule);
                reply.explanation = format!(
                    "{} (the language model was unavailable: {error})",
                    reply.explanation
                );
                Ok(reply)
            }
        }
    }
}

#[cfg(test)]
mod tests;
