//! The kg-linker role. With a language model: the project's multi-task prompt and its
//! tolerant parser (one model call), checked and merged with the LLM-free plan. Without
//! one, when the budget has no call left, or when the model fails or its reply is
//! unusable: the LLM-free linker over the graph's names and relations (a fallback is
//! counted in the reply's cost, so the answer says it was degraded).

use std::{collections::HashSet, sync::Arc, time::Instant};

use kgmesh_models::{
    lexical::normalize,
    parse::kg_linker::parse,
    prompts::{kg_linker::build, PromptBudget, Round},
    LanguageModel,
};
use kgmesh_schemas::{
    graph::Metapath,
    messages::kg_linker::{KgLinkReply, KgLinkRequest},
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;

use super::core::{enumerate_metapaths, link_without_llm, LinkerConfig};
use crate::{
    entity_linker::names::SharedNames,
    runtime::{AgentDeps, CallContext, RoleBuildError, RoleSpec},
    scoring::{relevance::TextVectors, store_error, text_vectors},
    settings::RetrievalSettings,
    verbalize::evidence_entities,
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
        // The LLM-free plan is cheap next to a model call, and it is what a model's
        // reply is checked against and merged with: a weak model adds candidates, it
        // never takes away the gazetteer's links or the graph's own paths.
        let started = Instant::now();
        let index = self.names.get(self.graph.as_ref()).await?;
        let free = link_without_llm(
            self.graph.as_ref(),
            &index,
            self.vectors_opt.clone(),
            &request.question,
            &request.cues,
            &self.config,
        )
        .await
        .map_err(store_error)?;
        ctx.record_graph(free.metapaths.len() as u64, started.elapsed());
        let Some(llm) = self
            .llm_opt
            .as_ref()
            .filter(|_| ctx.budget().check_llm(1).is_ok())
        else {
            return Ok(free);
        };
        let why = match self.link_with_llm(&ctx, llm.as_ref(), &request).await {
            Ok(model) => {
                // Which of the model's paths leave the linked entities in this graph.
                let sources: Vec<_> = free.linked.iter().map(|s| s.entity.id).collect();
                let leaving: HashSet<Metapath> = if model.metapaths.is_empty() || sources.is_empty()
                {
                    HashSet::new()
                } else {
                    let started = Instant::now();
                    let found =
                        enumerate_metapaths(self.graph.as_ref(), &sources, &self.config.enumerate)
                            .await
                            .map_err(store_error)?;
                    ctx.record_graph(found.len() as u64, started.elapsed());
                    found.into_iter().collect()
                };
                match merge(
                    model,
                    free.clone(),
                    &request,
                    &leaving,
                    self.config.top_metapaths,
                ) {
                    Ok(merged) => return Ok(merged),
                    Err(why) => why,
                }
            }
            Err(error) => format!("the call failed: {error}"),
        };
        ctx.record_model_fallback(&why);
        Ok(free)
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
        let response = ctx.chat(llm, chat).await.map_err(|e| e.to_string())?;
        ctx.record_llm_call(
            response.usage.prompt_tokens,
            response.usage.completion_tokens,
            response.elapsed,
        );
        let relation_names: Vec<String> = schema.relations.iter().map(|r| r.name.clone()).collect();
        Ok(parse(&response.text, &relation_names))
    }
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let graph = deps.require_graph(Role::KG_LINKER)?;
    let linker = Arc::new(KgLinker {
        names: deps.shared::<SharedNames>(),
        graph,
        llm_opt: deps.llm_for(Role::KG_LINKER),
        vectors_opt: text_vectors(deps),
        config: LinkerConfig {
            top_metapaths: deps.setting::<RetrievalSettings>().top_metapaths.max(1),
            ..LinkerConfig::default()
        },
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::KG_LINKER), RoleKind::Core)
            .op_on(&linker, |linker, ctx, request: KgLinkRequest| async move {
                linker.link(ctx, request).await
            }),
    )
}

/// The model's plan checked and merged with the LLM-free one (`free`):
/// - mentions the model names are kept only when the question (or the evidence so far)
///   contains them; an invented name would link to some unrelated node;
/// - the gazetteer's mentions and linked entities always stay;
/// - the model's relation paths (already checked against the schema) that leave the
///   linked entities in the graph (`leaving`) are the plan: the graph confirms them, and
///   evidence along other paths would only compete with theirs. When none does, the
///   model's paths come first and the LLM-free ones follow, `2 × top` at most;
/// - FINISH counts only once something has been retrieved.
///
/// `Err` (why) when nothing usable is left of the model's reply.
fn merge(
    model: KgLinkReply,
    free: KgLinkReply,
    request: &KgLinkRequest,
    leaving: &HashSet<Metapath>,
    top: usize,
) -> Result<KgLinkReply, String> {
    let question = normalize(&request.question);
    let seen: Vec<String> = evidence_entities(&request.context.evidence)
        .into_iter()
        .map(|entity| normalize(&entity.name))
        .collect();
    let linked: Vec<String> = free
        .linked
        .iter()
        .map(|scored| normalize(&scored.entity.name))
        .collect();
    let contains = |text: &str, name: &str| format!(" {text} ").contains(&format!(" {name} "));
    let named = model.mentions.len();
    let mut grounded = 0;
    let mut mentions = free.mentions;
    for mention in model.mentions {
        let key = normalize(&mention);
        if key.is_empty() || !(contains(&question, &key) || seen.contains(&key)) {
            continue;
        }
        grounded += 1;
        let known = linked.contains(&key) || mentions.iter().any(|m| normalize(m) == key);
        if !known {
            mentions.push(mention);
        }
    }
    let finish = model.finish && !request.context.evidence.is_empty();
    let model_paths = model.metapaths.len();
    // Draft answers alone do not make a reply usable: they are guesses to check.
    if grounded == 0 && model_paths == 0 && model.cypher.is_empty() && !finish {
        return Err(if named > 0 {
            format!("none of the {named} entity name(s) it gave is in the question")
        } else {
            "its reply held no entity, relation path or query".to_owned()
        });
    }
    let confirmed: Vec<Metapath> = model
        .metapaths
        .iter()
        .filter(|metapath| leaving.contains(*metapath))
        .cloned()
        .collect();
    let model_plan = !confirmed.is_empty();
    let metapaths = if confirmed.is_empty() {
        let mut metapaths = model.metapaths;
        for metapath in free.metapaths {
            if !metapaths.contains(&metapath) {
                metapaths.push(metapath);
            }
        }
        metapaths.truncate((2 * top).max(model_paths));
        metapaths
    } else {
        confirmed
    };
    tracing::debug!(
        grounded,
        model_paths,
        "kg-linker merged the model's plan with the LLM-free one"
    );
    Ok(KgLinkReply {
        mentions,
        linked: free.linked,
        metapaths,
        cypher: model.cypher,
        draft_answers: model.draft_answers,
        finish,
        model_plan,
        confidence: if model_plan { None } else { free.confidence },
        reader_plan: !model_plan && free.reader_plan,
        reader_reaches: if model_plan {
            None
        } else {
            free.reader_reaches
        },
        reader_tie: if model_plan { None } else { free.reader_tie },
    })
}

#[cfg(test)]
mod tests {
    use kgmesh_models::LlmError;
    use kgmesh_schemas::{graph::Direction, Role};

    use super::*;
    use crate::{
        entity_linker::core::build_name_index,
        scoring::fixtures::movies,
        testing::{block_on, ScriptedModel},
    };

    const QUESTION: &str = "Who starred in the films of Michael Mann?";

    /// The role's reply to [`QUESTION`] with `model` (or none), and the call's context.
    fn link_with(model: Option<ScriptedModel>) -> (KgLinkReply, CallContext) {
        block_on(async {
            let graph = Arc::new(movies());
            let index = build_name_index(graph.as_ref()).await.unwrap();
            let linker = KgLinker {
                graph,
                names: Arc::new(SharedNames::ready(Arc::new(index))),
                llm_opt: model.map(|m| Arc::new(m) as Arc<dyn LanguageModel>),
                vectors_opt: None,
                config: LinkerConfig::default(),
            };
            let ctx = CallContext::for_test(Role::KG_LINKER);
            let request = KgLinkRequest {
                question: QUESTION.into(),
                context: Default::default(),
                repair_hints: Vec::new(),
                examples: Vec::new(),
                cues: Vec::new(),
            };
            let reply = linker.link(ctx.clone(), request).await.unwrap();
            (reply, ctx)
        })
    }

    #[test]
    fn an_unusable_model_reply_gives_the_llm_free_plan_and_is_counted() {
        let (free, _) = link_with(None);
        assert!(!free.metapaths.is_empty());
        for model_reply in [
            Ok(""),
            Ok("Sure! Here is a great movie night plan for you."),
            // Names that are not in the question, and a relation the graph lacks.
            Ok("<entities>\nRobert Redford\n</entities>\n<paths>\nplays_for\n</paths>"),
            Err(LlmError::Malformed("no choices".into())),
        ] {
            let shown = format!("{model_reply:?}");
            let (reply, ctx) = link_with(Some(ScriptedModel::always(model_reply)));
            assert_eq!(reply, free, "model reply {shown}");
            assert_eq!(ctx.cost().model_fallbacks, 1, "model reply {shown}");
        }
    }

    #[test]
    fn a_model_path_the_graph_confirms_is_the_plan() {
        let (free, _) = link_with(None);
        let (reply, ctx) = link_with(Some(ScriptedModel::always(Ok(
            "<entities>\nMichael Mann\n</entities>\n\
             <paths>\n~directed_by -> starred_actors\nplays_for\n</paths>",
        ))));
        assert_eq!(ctx.cost().model_fallbacks, 0);
        assert_eq!(reply.linked, free.linked);
        let steps: Vec<(&str, Direction)> = reply
            .metapaths
            .iter()
            .flat_map(|m| m.steps.iter().map(|s| (s.relation.as_str(), s.direction)))
            .collect();
        assert_eq!(
            steps,
            [
                ("directed_by", Direction::In),
                ("starred_actors", Direction::Out)
            ],
            "only the confirmed path: {:?}",
            reply.metapaths
        );
    }

    /// A path the graph does not confirm from the linked entities (`directed_by` is
    /// followed from films, not from directors) is tried, with the graph's own after it.
    #[test]
    fn a_usable_model_plan_leads_and_the_graphs_own_plan_follows() {
        let (free, _) = link_with(None);
        let (reply, ctx) = link_with(Some(ScriptedModel::always(Ok(
            "<entities>\nMichael Mann\nRobert Redford\n</entities>\n\
             <paths>\ndirected_by\n</paths>",
        ))));
        assert_eq!(ctx.cost().model_fallbacks, 0);
        assert_eq!(ctx.cost().llm_calls, 1);
        // The invented name is dropped; the gazetteer's link stays.
        assert_eq!(reply.mentions, free.mentions);
        assert_eq!(reply.linked, free.linked);
        assert_eq!(reply.metapaths[0].steps.len(), 1);
        assert_eq!(reply.metapaths[0].steps[0].relation, "directed_by");
        assert_eq!(reply.metapaths[0].steps[0].direction, Direction::Out);
        for metapath in &free.metapaths {
            assert!(reply.metapaths.contains(metapath), "{metapath:?} kept");
        }
    }
}
