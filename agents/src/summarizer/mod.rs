//! The `summarizer` role: the final answers and the evidence lines each rests on.
//!
//! With a language model (and budget for one call) it asks the model with the
//! summarizer prompt and links the answers back to graph entities in the evidence;
//! without one, or when the question's budget is spent, it applies the deterministic
//! rule in [`core`]. When the evidence does not answer the question it says it does
//! not know (no answers, an explanation) rather than guessing.
//!
//! A model reply is checked before it is used: answers the evidence does not contain
//! are dropped, and a reply left with none, or a failed call, is replaced by the rule's
//! answers when the rule finds any. The fallback is counted in the reply's cost, so
//! the answer says it was degraded.

pub mod core;
mod profile;
pub mod reader;
pub mod spans;
pub mod typing;

use kgmesh_schemas::{text::contains_phrase, NodeId};
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use kgmesh_models::{
    lexical::{gazetteer::spelled_as, text::words_asking},
    parse, prompts, LanguageModel,
};
use kgmesh_schemas::{
    graph::{Metapath, Path},
    messages::{
        context::EvidenceItem,
        summarizer::{Answer, Decline, SummarizeReply, SummarizeRequest},
    },
    AgentError, Role, RoleKind,
};
use kgmesh_stores::GraphStore;

use self::{
    core::{
        entity_named, path_evidence, summarize, summarize_scored, SummaryRule, EXPLAINED_TIE,
        TIE_BREAK_BONUS,
    },
    profile::Profiles,
    reader::Reading,
    spans::SpanModel,
};
use crate::{
    kg_linker::core::{graph_relations, metapath_text},
    runtime::{
        AgentDeps, CallContext, ConfigSection, Need, Needs, RoleBuildError, RoleDescriptor,
        RoleSpec,
    },
    scoring::answer_type,
    scoring::{
        relevance::{cosine, fit_scores, Relevance, TextVectors, SYNONYM_COSINE},
        text::{relation_label, QuestionTerms, SequenceFit},
        text_vectors,
    },
    verbalize::verbalize_evidence,
};

/// The role, as the registry runs it.
pub const DESCRIPTOR: RoleDescriptor = RoleDescriptor {
    name: Role::SUMMARIZER,
    kind: RoleKind::Core,
    summary: "final answers citing their evidence; says when it does not know",
    smoke_test: false,
    uses_model: true,
    needs: Needs {
        graph: Need::Optional,
        ..Needs::NOTHING
    },
    config: Some(ConfigSection {
        section: "summarizer",
        keys: SummaryRule::KEYS,
    }),
    build: role,
};

/// Context shown to the model, in tokens.
const CONTEXT_TOKENS: usize = 4_000;

/// Answers whose declared classes [`other_class_lines`] reads at most.
const CLASS_NODES: usize = 200;

/// How many times [`Summarizer::set_aside`] applies its set-asides at most.
const SET_ASIDE_PASSES: usize = 3;

/// The role's factory: uses the language model when the process has one.
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let summarizer = Arc::new(Summarizer {
        llm: deps.llm_for(Role::SUMMARIZER),
        rule: deps.setting::<SummaryRule>(),
        vectors_opt: text_vectors(deps),
        graph_opt: deps.graph.clone(),
    });
    Ok(
        RoleSpec::new(Role::well_known(Role::SUMMARIZER), RoleKind::Core).op_on(
            &summarizer,
            |summarizer, ctx, request: SummarizeRequest| async move {
                summarizer.summarize(&ctx, request).await
            },
        ),
    )
}

pub struct Summarizer {
    pub llm: Option<Arc<dyn LanguageModel>>,
    pub rule: SummaryRule,
    /// Word embeddings for judging which path explains the question, as the KG-Linker
    /// ranks relation sequences; lexical without them.
    pub vectors_opt: Option<Arc<TextVectors>>,
    /// The graph, for its relation names (what a question word is matched against).
    pub graph_opt: Option<Arc<dyn GraphStore>>,
}

impl Summarizer {
    pub async fn summarize(
        &self,
        ctx: &CallContext,
        request: SummarizeRequest,
    ) -> Result<SummarizeReply, AgentError> {
        let Some(llm) = &self.llm else {
            return Ok(self.rule_reply(&request).await);
        };
        // Nothing retrieved: there is nothing for a model to read either.
        if request.context.evidence.is_empty() || ctx.budget().check_llm(1).is_err() {
            return Ok(self.rule_reply(&request).await);
        }
        let evidence_tokens = prompts::context::fit_evidence(
            llm.context_tokens(),
            prompts::summarizer::COMPLETION_TOKENS,
            CONTEXT_TOKENS,
        );
        let chat = prompts::summarizer::build(&request, evidence_tokens);
        let started = Instant::now();
        let why = match ctx.chat(llm.as_ref(), chat).await {
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
                let named = reply.answers.len();
                // A copy of the prompt's format example is no answer, whatever the
                // evidence holds.
                reply
                    .answers
                    .retain(|answer| !prompts::summarizer::is_example_answer(&answer.text));
                let copied = named - reply.answers.len();
                keep_grounded(&request, &mut reply);
                if reply.answers.iter().any(|a| names_a_topic(&request, a)) {
                    // A question's own entity answers it only where a path comes back
                    // to it ("X's spouse's spouse"), which the rule reads; a small model
                    // often just repeats the name it was asked about.
                    let rule = self.rule_reply(&request).await;
                    reply.answers.retain(|answer| {
                        !names_a_topic(&request, answer)
                            || rule.answers.iter().any(|r| same_answer(r, answer))
                    });
                }
                if !reply.answers.is_empty() {
                    return Ok(reply);
                }
                let rule = self.rule_reply(&request).await;
                if rule.answers.is_empty() {
                    // The model and the rule agree that the evidence does not answer.
                    return Ok(reply);
                }
                if named == 0 {
                    "its reply named no answer".to_owned()
                } else if copied == named {
                    "it copied the prompt's example answers".to_owned()
                } else {
                    format!(
                        "none of the {named} answer(s) it named is in the evidence and other \
                         than the question's own entities"
                    )
                }
            }
            Err(error) => format!("the call failed: {error}"),
        };
        ctx.record_model_fallback(&why);
        let mut reply = self.rule_reply(&request).await;
        reply.explanation = format!(
            "{} (answered without the language model: {why})",
            reply.explanation
        );
        Ok(reply)
    }
}

impl Summarizer {
    /// The deterministic rule's reply, paths judged with word embeddings when the
    /// process has an embedder: ties the question's words cannot break are broken by
    /// what the paths found, and a best path far from the question by meaning ends in
    /// "I don't know" ([`profile`]); answers on a path the question's words do not name
    /// (a hop no word explains) are flagged `low_confidence`. When the graph's evidence
    /// names no answer and the context holds document text, the passages are read
    /// without a model ([`reader`]); when they answer nothing either, the reply gives
    /// both reasons.
    pub async fn rule_reply(&self, request: &SummarizeRequest) -> SummarizeReply {
        let reply = self.graph_rule_reply(request).await;
        if !reader::has_text(request) {
            return reply;
        }
        let (mut read, supports) = self.read_passages(request, &reply).await;
        if let Some(first) = reply.answers.first() {
            // Graph and documents both answer: one scale, the share of the question's
            // words the evidence behind each first answer explains; the graph keeps ties.
            // A graph answer whose form cannot be what is asked (a year for "who") is
            // no answer beside documents.
            let wants = answer_type::asked(&request.question).kind;
            let form = answer_type::form_type(&first.text, "");
            let misfit = wants.filter(|&kind| answer_type::fit(kind, form) == 0.0);
            return match supports {
                Some((text, graph))
                    if !read.answers.is_empty() && (text > graph || misfit.is_some()) =>
                {
                    read.explanation = match misfit {
                        Some(kind) => format!(
                            "{} The graph's answer \"{}\" is a {form}, not the {kind} the \
                             question asks for.",
                            read.explanation, first.text
                        ),
                        None => format!(
                            "{} The documents explain more of the question ({:.0} % of its \
                             words) than the graph's answer ({:.0} %).",
                            read.explanation,
                            100.0 * text,
                            100.0 * graph
                        ),
                    };
                    read
                }
                _ => match misfit {
                    Some(kind) => SummarizeReply {
                        low_confidence: false,
                        answers: Vec::new(),
                        explanation: format!(
                            "I don't know: the graph's answer \"{}\" is a {form}, not the \
                             {kind} the question asks for. The documents: {}",
                            first.text,
                            read.explanation
                                .strip_prefix("I don't know: ")
                                .unwrap_or(&read.explanation)
                        ),
                        confidence: None,
                        decline: None,
                    },
                    None => reply,
                },
            };
        }
        if read.answers.is_empty() && !reply.explanation.is_empty() {
            let why = read
                .explanation
                .strip_prefix("I don't know: ")
                .unwrap_or(&read.explanation);
            read.explanation = format!("{} The documents: {why}", reply.explanation);
        }
        read
    }

    /// The passages' answer without a model ([`reader`]), statements read against the
    /// question by embedding when the process has an embedder; "I don't know" with the
    /// reason when none answers.
    /// With the passages' answer, when there is one: its support and the support of
    /// the graph's first answer (`graph`, its paths' relations) on the same scale
    /// ([`Reading::support`]).
    async fn read_passages(
        &self,
        request: &SummarizeRequest,
        graph: &SummarizeReply,
    ) -> (SummarizeReply, Option<(f32, f32)>) {
        let reading = match Reading::new(request) {
            Ok(reading) => reading,
            Err(why) => {
                let reply = SummarizeReply {
                    low_confidence: false,
                    answers: Vec::new(),
                    explanation: format!("I don't know: {why}."),
                    confidence: None,
                    decline: None,
                };
                return (reply, None);
            }
        };
        let max_answers = usize::from(request.max_answers.max(1));
        let (reading, cosines, failed) = self.embedded(reading).await;
        let mut spans = reading.spans(cosines.as_deref());
        let model = SpanModel::active();
        let untyped = match failed {
            None => self.typed_by_meaning(&reading, &model, &mut spans).await,
            Some(_) => None,
        };
        let (mut reply, support) =
            reading.answer_spans(spans, &model, &self.rule, max_answers, cosines.as_deref());
        if let Some(error) = failed {
            reply.explanation = format!(
                "{} (read by words only: the embedder failed: {error})",
                reply.explanation
            );
        }
        if let Some(error) = untyped {
            reply.explanation = format!(
                "{} (names typed by their form only: the embedder failed: {error})",
                reply.explanation
            );
        }
        // The graph's first answer, by the relations of the paths it cites.
        let graph_support = graph.answers.first().map(|answer| {
            answer
                .evidence
                .iter()
                .filter_map(
                    |&line| match &request.context.evidence.get(line as usize)?.item {
                        EvidenceItem::Path(path) => {
                            let relations: Vec<&str> =
                                path.steps.iter().map(|s| s.relation.as_str()).collect();
                            Some(reading.support(&relations))
                        }
                        _ => None,
                    },
                )
                .fold(0.0, f32::max)
        });
        (reply, graph_support.map(|graph| (support, graph)))
    }

    /// The reading with what the process's embedder adds, when it has one: each
    /// passage statement's cosine to the question, and the passages' words that read
    /// like a question word ([`Reading::with_synonyms`]); with the embedder's error
    /// when it failed (read by words only then).
    async fn embedded(&self, reading: Reading) -> (Reading, Option<Vec<f32>>, Option<String>) {
        let Some(vectors) = &self.vectors_opt else {
            return (reading, None, None);
        };
        if reading.question.is_empty() {
            return (reading, None, None);
        }
        let (question_words, passage_words) = reading.synonym_words();
        let mut texts = vec![reading.question.clone()];
        texts.extend(reading.statements.iter().map(|s| s.relation.clone()));
        let words_at = texts.len();
        texts.extend(question_words.iter().cloned());
        texts.extend(passage_words.iter().cloned());
        match vectors.vectors(&texts).await {
            Ok(found) => {
                let cosines = found[1..words_at]
                    .iter()
                    .map(|v| cosine(&found[0], v))
                    .collect();
                let (asked, written) = found[words_at..].split_at(question_words.len());
                let pairs = question_words.iter().zip(asked).flat_map(|(q, qv)| {
                    passage_words
                        .iter()
                        .zip(written)
                        .map(move |(p, pv)| reader::Synonym {
                            question: q,
                            passage: p,
                            cosine: cosine(qv, pv),
                        })
                });
                (reading.with_synonyms(pairs), Some(cosines), None)
            }
            Err(error) => {
                tracing::warn!(%error, "passage statements not embedded; read by words only");
                (reading, None, Some(error.to_string()))
            }
        }
    }

    /// The spans the passage reader ranks for `request`, with their features
    /// ([`Reading::spans`]); `None` when no passage says anything about its entity.
    /// For training the span scorer (`kgmesh eval --span-examples`).
    pub async fn passage_spans(&self, request: &SummarizeRequest) -> Option<reader::Spans> {
        let reading = Reading::new(request).ok()?;
        let (reading, cosines, _) = self.embedded(reading).await;
        let mut spans = reading.spans(cosines.as_deref());
        self.typed_by_meaning(&reading, &SpanModel::active(), &mut spans)
            .await;
        Some(spans)
    }

    /// With an embedder, when the question asks for a person, an organization or a
    /// place: how well each span reads as that kind by meaning ([`typing`], the span
    /// feature `type_meaning`); the embedder's error when it failed (the feature stays 0).
    /// Only the spans `model` scores within the feature's reach of the best are typed:
    /// the others could not come first whatever their kind, and embedding them would
    /// triple the embedder's work on a question.
    async fn typed_by_meaning(
        &self,
        reading: &Reading,
        model: &SpanModel,
        spans: &mut reader::Spans,
    ) -> Option<String> {
        let vectors = self.vectors_opt.as_ref()?;
        if !typing::typed_by_meaning(reading.wants.kind) || spans.rows.is_empty() {
            return None;
        }
        let at = spans::feature("type_meaning");
        let scores: Vec<f32> = spans
            .rows
            .iter()
            .map(|r| model.score(&r.features))
            .collect();
        let best = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let reach = model.reach(at);
        let mut texts: Vec<String> = spans
            .rows
            .iter()
            .zip(&scores)
            .filter(|(_, &score)| score >= best - reach)
            .map(|(r, _)| r.text.clone())
            .collect();
        texts.sort();
        texts.dedup();
        match typing::shares_of_kind(vectors, reading.wants.kind, &texts).await {
            Ok(Some(shares)) => {
                for row in &mut spans.rows {
                    if let Ok(i) = texts.binary_search(&row.text) {
                        row.features[at] = typing::fit_of_kind(shares[i]);
                    }
                }
                None
            }
            Ok(None) => None,
            Err(error) => {
                tracing::warn!(%error, "spans not typed by meaning; read by their form only");
                Some(error.to_string())
            }
        }
    }

    /// `relevance` as the KG-Linker reads the question by the graph
    /// ([`crate::kg_linker::core::read_by_the_graph`]), so that the paths are judged as
    /// they were planned; as it is where the process has no graph.
    async fn read_by_the_graph(
        &self,
        request: &SummarizeRequest,
        relevance: Relevance,
        vectors_opt: Option<&TextVectors>,
    ) -> Relevance {
        let Some(graph) = &self.graph_opt else {
            return relevance;
        };
        let ids: Vec<NodeId> = request.topic_entities.iter().map(|e| e.id).collect();
        crate::kg_linker::core::read_by_the_graph(graph.as_ref(), relevance, &ids, vectors_opt)
            .await
    }

    /// For each evidence line and each of its hops, the classes the graph says the node
    /// it reaches there is of ([`crate::kg_linker::core::classes_held`]: the node's own
    /// declared classes, and what the relations pointing to the nodes the lines along the
    /// same relations reach there call most of them), which the question's class word is
    /// read against ([`Relevance::metapath_fits_ending`]), given each line's relation
    /// sequence as text and its path. None without the process's graph or a class word
    /// in the question `relevance` reads.
    async fn end_classes(
        &self,
        (texts, line_paths): (&[String], &[Option<&Path>]),
        relevance: &Relevance,
    ) -> Vec<Vec<Vec<String>>> {
        let Some(graph) = &self.graph_opt else {
            return Vec::new();
        };
        if relevance.terms().answers_class_head().is_none() {
            return Vec::new();
        }
        let nodes: Vec<NodeId> = line_paths
            .iter()
            .flat_map(|path| path.iter().flat_map(|p| &p.steps))
            .map(|step| step.node.id)
            .collect();
        let types = crate::kg_linker::core::node_types(graph.as_ref(), &nodes).await;
        let mut alike: HashMap<(&str, usize), Vec<NodeId>> = HashMap::new();
        for (text, path) in texts.iter().zip(line_paths) {
            for (hop, step) in path.iter().flat_map(|p| p.steps.iter().enumerate()) {
                alike
                    .entry((text.as_str(), hop))
                    .or_default()
                    .push(step.node.id);
            }
        }
        texts
            .iter()
            .zip(line_paths)
            .map(|(text, path)| {
                path.iter()
                    .flat_map(|p| p.steps.iter().enumerate())
                    .map(|(hop, step)| {
                        crate::kg_linker::core::classes_held(
                            &types,
                            &alike[&(text.as_str(), hop)],
                            Some(step.node.id),
                            relevance.holder_words(),
                        )
                    })
                    .collect()
            })
            .collect()
    }

    /// The graph rule's reply (see [`Self::rule_reply`]).
    async fn graph_rule_reply(&self, request: &SummarizeRequest) -> SummarizeReply {
        let (_, metapaths, lines) = path_evidence(request);
        let names: Vec<&str> = request
            .topic_entities
            .iter()
            .map(|e| e.name.as_str())
            .collect();
        let references: Vec<&Metapath> = metapaths.iter().collect();
        let texts: Vec<String> = metapaths.iter().map(metapath_text).collect();
        // The question's words choose among the paths, read by meaning too, unless
        // something else chose: a plan the evidence follows (a model's, a replayed
        // verified one) or a query written from the question. What the plan cache's
        // lexicon learned the question's words to mean (its cues) takes part in the
        // reading (a strong cue outranks the embedder's, see `Relevance`), but does not
        // choose alone: a cache warmed with a few QA pairs holds a cue for nearly every
        // word, each learned from one or two plans, and the paths it favours are still
        // set aside when their ends cannot be what is asked.
        let chosen_elsewhere = metapaths.iter().any(|m| request.plan.contains(m))
            || request
                .context
                .evidence
                .iter()
                .any(|e| matches!(e.item, EvidenceItem::Query { grounded: true, .. }));
        let cued = !request.cues.is_empty();
        // Each line's path (a query row has none), and the name it ends at.
        let line_paths: Vec<Option<&Path>> = lines
            .iter()
            .map(
                |&line| match &request.context.evidence[line as usize].item {
                    EvidenceItem::Path(path) => Some(path),
                    _ => None,
                },
            )
            .collect();
        let ends: Vec<String> = line_paths
            .iter()
            .map(|path| path.map_or_else(String::new, |p| p.end().name.clone()))
            .collect();
        let asking = words_asking(&request.question, &names).join(" ");
        if !chosen_elsewhere {
            if let Some(reply) = nothing_of_the_form_asked(request, &asking, &ends) {
                return reply;
            }
        }
        let Some(vectors) = &self.vectors_opt else {
            if chosen_elsewhere {
                return summarize(request, &self.rule);
            }
            // The lexical scores `summarize` would rank by, with their hops.
            let relevance = Relevance::lexical(&request.question, &names).with_cues(&request.cues);
            let relevance = self.read_by_the_graph(request, relevance, None).await;
            let end_classes = self.end_classes((&texts, &line_paths), &relevance).await;
            let fits = relevance
                .metapath_fits_ending(&references, &texts, &end_classes)
                .await;
            let mut scores = fit_scores(&fits);
            prefer_among_tied(&metapaths, &request.preferred, &mut scores);
            let set_aside = self
                .set_aside(
                    &asking,
                    (&texts, &line_paths, &ends),
                    &fits,
                    relevance.holder_words(),
                    &mut scores,
                )
                .await;
            let mut reply = summarize_scored(request, &self.rule, Some(&scores));
            flag_unexplained(&mut reply, unexplained_best(&texts, &fits, &scores));
            say_set_aside(&mut reply, set_aside);
            return reply;
        };
        let relevance = Relevance::for_metapaths(&request.question, &names, Some(vectors.clone()))
            .with_cues(&request.cues);
        let relations = match &self.graph_opt {
            Some(graph) => graph_relations(graph.as_ref()).await,
            None => Arc::from(Vec::new()),
        };
        // The graph's relations come with the graph's reading.
        let relevance = self
            .read_by_the_graph(request, relevance, Some(vectors))
            .await;
        let end_classes = self.end_classes((&texts, &line_paths), &relevance).await;
        let fits = relevance
            .metapath_fits_ending(&references, &texts, &end_classes)
            .await;
        let mut scores = fit_scores(&fits);
        if chosen_elsewhere {
            return summarize_scored(request, &self.rule, Some(&scores));
        }
        let profiles = Profiles::new(&asking, &texts, &ends);
        // The learned reader's choice among the KG-Linker's tied plans comes before
        // the profiles' (it was trained to choose among such paths).
        prefer_among_tied(&metapaths, &request.preferred, &mut scores);
        if let Err(error) = profiles.break_tie(vectors, &mut scores).await {
            tracing::warn!(%error, "path profiles not embedded; ties left to evidence order");
        }
        let set_aside = self
            .set_aside(
                &asking,
                (&texts, &line_paths, &ends),
                &fits,
                relevance.holder_words(),
                &mut scores,
            )
            .await;
        // Verified plans taught what the cued words mean: a path they explain is not
        // far from the question for reading far from it by meaning.
        let far = if cued {
            None
        } else {
            self.far_from_question(vectors, &profiles, &texts, &scores)
                .await
        };
        let asked_class = match &far {
            Some(_) => answer_class_in_graph(vectors, &request.question, &names, &relations).await,
            None => None,
        };
        let mut reply = summarize_scored(request, &self.rule, Some(&scores));
        flag_unexplained(&mut reply, unexplained_best(&texts, &fits, &scores));
        say_set_aside(&mut reply, set_aside);
        if let (Some(far), false) = (far, reply.answers.is_empty()) {
            let lead = if reply.low_confidence {
                "Also,"
            } else {
                "Low confidence:"
            };
            reply.low_confidence = true;
            match asked_class {
                Some(class) => {
                    reply.explanation = format!(
                        "{} {lead} {far}; answered because what the question asks for \
                         (\"{class}\") reads near a relation of the graph.",
                        reply.explanation
                    );
                }
                // Far by meaning, the answers stand only if the coordinator, which
                // estimates their chance, finds them likely enough.
                None => {
                    reply.explanation = format!("{} {lead} {far}.", reply.explanation);
                    reply.decline = Some(Decline {
                        below: self.rule.far_answer_min_confidence,
                        why: far,
                    });
                }
            }
        }
        reply
    }

    /// Sets aside the paths that cannot answer the question: those whose answers the graph
    /// declares of another class than the one asked ([`other_class_lines`], on the
    /// process's graph when it has one), those naming their start's class
    /// ([`class_lines`]), those whose answers the relations pointing to them call another
    /// kind of name than the one asked ([`other_kind_lines`], on the process's graph,
    /// reading a relation's words as `holders` says, see
    /// [`crate::kg_linker::core::holder_words`]) and those whose answers' form cannot be
    /// what is asked ([`misfit_lines`]). Each set aside goes below every other path
    /// ([`demote`]) when the best-scored path is in it; setting one aside may bring
    /// another's path first, so they are applied until none moves anything (at most
    /// [`SET_ASIDE_PASSES`] times). Each reads `asking`, the question's words outside its
    /// entities' names ([`words_asking`]), so that a name's words are not taken for what is
    /// asked. `paths` holds each evidence line's relation sequence as text, its path and
    /// the name it ends at.
    async fn set_aside(
        &self,
        asking: &str,
        paths: (&[String], &[Option<&Path>], &[String]),
        fits: &[SequenceFit],
        holders: &HashMap<String, Vec<String>>,
        scores: &mut [f32],
    ) -> Vec<SetAside> {
        let (texts, line_paths, ends) = paths;
        let mut gates: Vec<(SetAside, Vec<bool>)> = Vec::new();
        if let Some(graph) = &self.graph_opt {
            let end_ids: Vec<Option<NodeId>> =
                line_paths.iter().map(|p| p.map(|p| p.end().id)).collect();
            gates.extend(other_class_lines(graph.as_ref(), asking, &end_ids).await);
            gates.extend(
                other_kind_lines(
                    graph.as_ref(),
                    asking,
                    (texts, line_paths),
                    holders,
                    self.vectors_opt.as_deref(),
                )
                .await,
            );
        }
        let last: Vec<Option<(&str, bool)>> = line_paths
            .iter()
            .map(|p| {
                p.and_then(|p| p.steps.last())
                    .map(|step| (step.relation.as_str(), step.inverse))
            })
            .collect();
        gates.extend(class_lines(&last, fits));
        gates.extend(misfit_lines(asking, ends));
        let mut done: Vec<SetAside> = Vec::new();
        for _ in 0..SET_ASIDE_PASSES {
            let mut moved = false;
            for (why, aside) in &gates {
                // A class the graph declares tells one answer from another reached
                // alike (the nurses among a department's staff).
                let by_line = matches!(why, SetAside::OtherClass(_));
                if demote(texts, scores, aside, by_line) {
                    moved = true;
                    if !done.contains(why) {
                        done.push(why.clone());
                    }
                }
            }
            if !moved {
                break;
            }
        }
        done
    }

    /// Why the path that explains the question best (the first in evidence order of the
    /// best-scored) is far from it by meaning ([`SummaryRule::abstain_found_cosine`]),
    /// or `None` when it is not.
    async fn far_from_question(
        &self,
        vectors: &TextVectors,
        profiles: &Profiles<'_>,
        texts: &[String],
        scores: &[f32],
    ) -> Option<String> {
        let (found_min, relations_min) = (
            self.rule.abstain_found_cosine,
            self.rule.abstain_relations_cosine,
        );
        if found_min <= 0.0 || relations_min <= 0.0 {
            return None;
        }
        let index = best_path(scores)?;
        let nearness = match profiles
            .nearness_below(vectors, &texts[index], relations_min)
            .await
        {
            Ok(Some(nearness)) => nearness,
            Ok(None) => return None,
            Err(error) => {
                tracing::warn!(%error, "path profile not embedded; answering without it");
                return None;
            }
        };
        (nearness.found < found_min).then(|| {
            format!(
                "the path that best explains the question ({}) is far from its words by \
                 meaning (cosine {:.2} to what it found, under {found_min}, and {:.2} to \
                 its relations, under {relations_min})",
                texts[index], nearness.found, nearness.relations
            )
        })
    }
}

/// Paths set aside as no answer to the question, and why.
#[derive(Debug, Clone, PartialEq)]
enum SetAside {
    /// What they end at cannot be of the type asked: the type asked and their answers'
    /// form.
    Form {
        asked: answer_type::AnswerType,
        form: answer_type::AnswerType,
    },
    /// What they end at is called (by the relations pointing to it) a kind of name the
    /// question does not ask for: the kind asked and theirs.
    Kind {
        asked: answer_type::AnswerType,
        kind: answer_type::AnswerType,
    },
    /// They end by naming their start's class over this type relation, which no word of
    /// the question asks for.
    Class(String),
    /// The graph declares their answers to be of other classes than the one the
    /// question names, which others' answers are.
    OtherClass(String),
}

/// Ranks below every other line each line of the relation sequences whose every line
/// `aside` marks (with `by_line`, each line `aside` marks, whatever its sequence's other
/// lines), when one of them is among the best-scored lines (tied with the best,
/// [`EXPLAINED_TIE`]: the answers are then chosen among those lines by their support, and
/// an answer reached along several such sequences would win on it) and a line not set
/// aside remains. Whether anything moved.
fn demote(texts: &[String], scores: &mut [f32], aside: &[bool], by_line: bool) -> bool {
    let mut sequence_aside: HashMap<&str, bool> = HashMap::new();
    for (text, &line_aside) in texts.iter().zip(aside) {
        *sequence_aside.entry(text.as_str()).or_insert(true) &= line_aside;
    }
    let is_aside: Vec<bool> = texts
        .iter()
        .zip(aside)
        .map(|(text, &line_aside)| {
            if by_line {
                line_aside
            } else {
                sequence_aside.get(text.as_str()).copied().unwrap_or(false)
            }
        })
        .collect();
    let Some(best) = scores.iter().copied().reduce(f32::max) else {
        return false;
    };
    let best_aside = scores
        .iter()
        .zip(&is_aside)
        .any(|(&score, &aside)| aside && score >= best - EXPLAINED_TIE);
    if !best_aside || is_aside.iter().all(|&aside| aside) {
        return false;
    }
    let floor = scores.iter().copied().fold(f32::INFINITY, f32::min) - 1.0;
    for (score, _) in scores.iter_mut().zip(&is_aside).filter(|(_, &a)| a) {
        *score = floor;
    }
    true
}

/// The lines whose answer the graph declares (over a type relation, see
/// [`crate::reader::types`]) to be of other classes than the one the question's wh-phrase
/// names, when another line's answer is declared of that class: "which *nurses* work in
/// X" is not answered by the department's doctors, nor "how many *nurses* …" by counting
/// them. Only on a graph with type relations, and only where the class word is one of a
/// declared class's words (stems): classes named unlike the question's word decide
/// nothing. `asking`: the question's words outside its entities' names.
async fn other_class_lines(
    graph: &dyn GraphStore,
    asking: &str,
    end_ids: &[Option<NodeId>],
) -> Option<(SetAside, Vec<bool>)> {
    let asked = answer_type::asked(asking);
    // "how many *nurses* …": what a count counts is a class too.
    let counted = || {
        let at = *asked.phrase.get(2)?;
        (asked.kind == Some(answer_type::AnswerType::Number))
            .then(|| kgmesh_models::lexical::text::words(asking).get(at).cloned())
            .flatten()
    };
    let class = asked.class.clone().or_else(counted)?;
    if !graph_relations(graph)
        .await
        .iter()
        .any(|r| crate::reader::types::is_type_relation(r))
    {
        return None;
    }
    let class_stem = kgmesh_models::lexical::text::stem(&class);
    let mut nodes: Vec<NodeId> = end_ids.iter().flatten().copied().collect();
    nodes.sort_unstable();
    nodes.dedup();
    nodes.truncate(CLASS_NODES);
    let query = kgmesh_stores::NeighborQuery {
        direction: kgmesh_schemas::graph::Direction::Out,
        relations: None,
        fanout_cap: crate::reader::TYPE_FANOUT,
    };
    let edges = match graph.neighbor_edges(&nodes, &query).await {
        Ok(edges) => edges,
        Err(error) => {
            tracing::warn!(%error, "answers' classes not read; paths kept as ranked");
            return None;
        }
    };
    let types = crate::reader::types::NodeTypes::from_edges(&edges);
    // Per line: whether its answer is declared of the class asked, `None` if undeclared.
    let of_class: Vec<Option<bool>> = end_ids
        .iter()
        .map(|id| {
            let id = (*id)?;
            types
                .has_declared(id)
                .then(|| types.declared(id).any(|s| s == class_stem))
        })
        .collect();
    if !of_class.contains(&Some(true)) {
        return None;
    }
    let aside = of_class.iter().map(|c| *c == Some(false)).collect();
    Some((SetAside::OtherClass(class), aside))
}

/// The lines whose answers are of another kind of name than the one asked, as the
/// relations pointing to them call them ([`crate::kg_linker::core::kinds_held`], read
/// over the ends of every line along the same relations): "where does X's spouse work"
/// is not answered by the spouse (a person), nor "who …" by a place. Only where the
/// wh-phrase's own words ask for a person or a place
/// ([`answer_type::asked_by_wh_phrase`]; a date's or year's form says more than a
/// relation's name).
async fn other_kind_lines(
    graph: &dyn GraphStore,
    asking: &str,
    (texts, line_paths): (&[String], &[Option<&Path>]),
    holders: &HashMap<String, Vec<String>>,
    vectors: Option<&TextVectors>,
) -> Option<(SetAside, Vec<bool>)> {
    let asked = answer_type::asked_by_wh_phrase(asking)?;
    let mut ends: HashMap<&str, Vec<NodeId>> = HashMap::new();
    for (text, path) in texts.iter().zip(line_paths) {
        if let Some(path) = path.filter(|p| !p.steps.is_empty()) {
            let group = ends.entry(text.as_str()).or_default();
            if group.len() < crate::kg_linker::core::CLASS_SAMPLE {
                group.push(path.end().id);
            }
        }
    }
    let nodes: Vec<NodeId> = ends.values().flatten().copied().collect();
    if nodes.is_empty() {
        return None;
    }
    let types = crate::kg_linker::core::node_types(graph, &nodes).await;
    let by_meaning = match vectors {
        Some(vectors) => kinds_of_classes_by_meaning(vectors, &types, &nodes).await,
        None => HashMap::new(),
    };
    // Read by meaning only where some declared class's name is typed at all.
    let typed_any = by_meaning.values().any(|kinds| !kinds.is_empty());
    let mut kind_of: HashMap<&str, answer_type::AnswerType> = HashMap::new();
    for (text, group) in &ends {
        // A class the graph declares says what its nodes are; read by meaning, its name
        // is typed whether or not a word list knows it ("building"), and the names of
        // the relations pointing to them only guess ("taught in" is no teacher). The
        // relations' names themselves are not read by meaning: they say how a node is
        // reached, not what it is (`nationality`).
        let kinds = if typed_any && group.iter().all(|n| by_meaning.contains_key(n)) {
            kinds_held_by_meaning(group, &by_meaning)
        } else {
            crate::kg_linker::core::kinds_held(&types, group, holders)
        };
        if crate::kg_linker::core::kinds_misfit(asked, &kinds) {
            kind_of.insert(text, kinds[0]);
        }
    }
    let aside: Vec<bool> = texts
        .iter()
        .map(|t| kind_of.contains_key(t.as_str()))
        .collect();
    let kind = texts
        .iter()
        .find_map(|t| kind_of.get(t.as_str()).copied())?;
    Some((SetAside::Kind { asked, kind }, aside))
}

/// The kinds by meaning ([`typing::kinds_by_meaning`]) of the names of the classes each
/// of `nodes` that declares one is declared of
/// ([`crate::reader::types::NodeTypes::class_texts`]), every such node present even where
/// no name is typed. Empty when none declares a class, or when the names cannot be
/// embedded (noted).
async fn kinds_of_classes_by_meaning(
    vectors: &TextVectors,
    types: &crate::reader::types::NodeTypes,
    nodes: &[NodeId],
) -> HashMap<NodeId, Vec<answer_type::AnswerType>> {
    let declared: Vec<(NodeId, Vec<String>)> = nodes
        .iter()
        .filter(|&&node| types.has_declared(node))
        .map(|&node| (node, types.class_texts(node, None)))
        .collect();
    let mut texts: Vec<String> = declared.iter().flat_map(|(_, t)| t.clone()).collect();
    texts.sort();
    texts.dedup();
    let kinds = match typing::kinds_by_meaning(vectors, &texts).await {
        Ok(kinds) => kinds,
        Err(error) => {
            tracing::warn!(%error, "class names not typed by meaning; paths kept as ranked");
            return HashMap::new();
        }
    };
    let kind_of: HashMap<&str, answer_type::AnswerType> = texts
        .iter()
        .zip(kinds)
        .filter_map(|(text, kind)| Some((text.as_str(), kind?)))
        .collect();
    declared
        .into_iter()
        .map(|(node, names)| {
            let mut kinds: Vec<answer_type::AnswerType> = names
                .iter()
                .filter_map(|name| kind_of.get(name.as_str()).copied())
                .collect();
            kinds.sort_by_key(|kind| kind.name());
            kinds.dedup();
            (node, kinds)
        })
        .collect()
}

/// The kinds (`by_meaning`, see [`kinds_of_classes_by_meaning`]) at least half of `group`
/// reads as ("building" is a place, though no word list says so).
fn kinds_held_by_meaning(
    group: &[NodeId],
    by_meaning: &HashMap<NodeId, Vec<answer_type::AnswerType>>,
) -> Vec<answer_type::AnswerType> {
    let mut count: HashMap<answer_type::AnswerType, usize> = HashMap::new();
    for kind in group
        .iter()
        .filter_map(|node| by_meaning.get(node))
        .flatten()
    {
        *count.entry(*kind).or_default() += 1;
    }
    let mut kinds: Vec<answer_type::AnswerType> = count
        .into_iter()
        .filter(|&(_, n)| 2 * n >= group.len())
        .map(|(kind, _)| kind)
        .collect();
    kinds.sort_by_key(|kind| kind.name());
    kinds
}

/// The lines that end by naming their start's class over a type relation (`is_a`,
/// `instance of`, `rdf:type`, `ship_type`, see [`crate::reader::types::is_type_relation`])
/// with a hop no question word explains: "who makes Migrastat" is not answered
/// "medication", nor "which ships does X operate" by ship types. A question whose words
/// name the relation ("what type of ship …") keeps it.
fn class_lines(
    last: &[Option<(&str, bool)>],
    fits: &[SequenceFit],
) -> Option<(SetAside, Vec<bool>)> {
    let aside: Vec<bool> = last
        .iter()
        .zip(fits)
        .map(|(step, fit)| {
            step.is_some_and(|(relation, inverse)| {
                !inverse
                    && fit.unexplained_hops > 0
                    && crate::reader::types::is_type_relation(relation)
            })
        })
        .collect();
    let relation = aside
        .iter()
        .zip(last)
        .find(|(a, _)| **a)
        .and_then(|(_, step)| step.map(|(r, _)| r.to_owned()))?;
    Some((SetAside::Class(relation), aside))
}

/// The lines whose answer has a form that cannot answer what the question asks: a
/// number, year, date or amount where its wh-word asks for a person or place ("who",
/// "where", "which city"), a name where it asks for a date or year. The form is read from
/// the answer alone ([`answer_type::form_type`]), and only numbers are told from names by
/// it: "who founded X" over `founded_by` and `founded_year`, which its words explain
/// alike, is not answered "1995". Counts and amounts are left alone: a count is answered
/// by the size of a set of names. `asking`: the question's words outside its entities'
/// names.
fn misfit_lines(asking: &str, ends: &[String]) -> Option<(SetAside, Vec<bool>)> {
    let asked = answer_type::asked_by_form(asking)?;
    // A name's form tells a person from a place poorly: only numbers against names.
    let aside: Vec<bool> = ends
        .iter()
        .map(|end| !end.is_empty() && answer_type::form_misfits(asked, end))
        .collect();
    // Named by the first line set aside's form.
    let first = ends.iter().zip(&aside).find(|(_, a)| **a)?.0;
    let form = answer_type::form_type(first, "");
    Some((SetAside::Form { asked, form }, aside))
}

/// "I don't know" when the question asks for what a name's form can rule out (a date or
/// year, a person or place: [`answer_type::asked_by_form`]) and nothing the evidence
/// holds can be one: every path ends ([`path_evidence`]'s `ends`, as names) at the other
/// form, and so does every edge's node across from one the question names. "When was X
/// born" over a graph holding no date for anything near X is not answered with X's
/// birthplace. The KG-Linker plans first along a metapath that reaches the asked form
/// when one does, so a graph that holds the answer brings it into the evidence.
fn nothing_of_the_form_asked(
    request: &SummarizeRequest,
    asking: &str,
    ends: &[String],
) -> Option<SummarizeReply> {
    let asked = answer_type::asked_by_form(asking)?;
    let found: Vec<&str> = ends
        .iter()
        .filter(|end| !end.is_empty())
        .map(String::as_str)
        .collect();
    if found.is_empty() {
        return None;
    }
    // An edge answers only from a node the question names.
    let topic: HashSet<NodeId> = request.topic_entities.iter().map(|e| e.id).collect();
    let nodes: Vec<&str> = request
        .context
        .evidence
        .iter()
        .filter_map(|e| match &e.item {
            EvidenceItem::Triple(t) if topic.contains(&t.head.id) => Some(t.tail.name.as_str()),
            EvidenceItem::Triple(t) if topic.contains(&t.tail.id) => Some(t.head.name.as_str()),
            _ => None,
        })
        .collect();
    let everything = || found.iter().chain(&nodes);
    if !everything().all(|name| answer_type::form_misfits(asked, name)) {
        return None;
    }
    // What was found instead: names, numbers (a count where a date is asked), or both.
    let numeric = |name: &&str| answer_type::form_type(name, "").is_numeric();
    let other = match (everything().any(numeric), everything().all(numeric)) {
        (_, true) => "number",
        (false, _) => "name",
        (true, false) => "name or a number",
    };
    Some(SummarizeReply {
        low_confidence: false,
        answers: Vec::new(),
        explanation: format!(
            "I don't know: the question asks for {}, and everything found is a {other}.",
            asked.with_article()
        ),
        confidence: None,
        decline: None,
    })
}

/// Says in `reply` what [`Summarizer::set_aside`] set aside.
fn say_set_aside(reply: &mut SummarizeReply, set_aside: Vec<SetAside>) {
    for aside in set_aside {
        let why = match aside {
            SetAside::Form { asked, form } => format!(
                "Paths whose answers are each {} were set aside: the question asks for {}.",
                form.with_article(),
                asked.with_article()
            ),
            SetAside::Kind { asked, kind } => format!(
                "Paths whose answers the graph calls {} were set aside: the \
                 question asks for {}.",
                kind.with_article(),
                asked.with_article()
            ),
            SetAside::Class(relation) => format!(
                "Paths ending at a class over `{relation}` were set aside: no word of the \
                 question asks for one."
            ),
            SetAside::OtherClass(class) => format!(
                "Paths whose answers the graph declares to be of another class were set \
                 aside: the question asks for {class}."
            ),
        };
        reply.explanation = format!("{} {why}", reply.explanation);
    }
}

/// The words naming the answer's class in `question` ("what *movies* …", "which
/// *professional football team* …", read as one phrase), when they read near one of
/// the graph's `relations` (cosine from [`SYNONYM_COSINE`], the bound from which a
/// word names a relation): the question asks for a kind of thing the graph holds.
/// "what movies can be described by X" over a film graph ("movies" is 0.52 from
/// `starred actors` with MiniLM) is about that graph even when no word of it is near
/// the relation its answers lie on; "which football club …" (0.23) is not.
async fn answer_class_in_graph(
    vectors: &TextVectors,
    question: &str,
    names: &[&str],
    relations: &[String],
) -> Option<String> {
    let class = QuestionTerms::new(question, names).answer_class_phrase()?;
    if relations.is_empty() {
        return None;
    }
    let mut inputs = vec![class.clone()];
    inputs.extend(relations.iter().map(|r| relation_label(r)));
    let vectors = match vectors.vectors(&inputs).await {
        Ok(vectors) => vectors,
        Err(error) => {
            tracing::warn!(%error, "answer class not embedded; read as outside the graph");
            return None;
        }
    };
    vectors[1..]
        .iter()
        .any(|label| cosine(&vectors[0], label) >= SYNONYM_COSINE)
        .then_some(class)
}

/// The path that explains the question best: the first in evidence order of the
/// best-scored.
fn best_path(scores: &[f32]) -> Option<usize> {
    let best = scores.iter().copied().reduce(f32::max)?;
    scores.iter().position(|&s| s >= best - EXPLAINED_TIE)
}

/// Raises the lines of the `preferred` relation paths (`SummarizeRequest::preferred`)
/// by [`TIE_BREAK_BONUS`] where they are tied with the best ([`EXPLAINED_TIE`]) and
/// some other line is too, so that they alone explain the question; only where every
/// line tied with them has as many hops (the preference was chosen among paths of its
/// length). Whether any moved.
fn prefer_among_tied(metapaths: &[Metapath], preferred: &[Metapath], scores: &mut [f32]) -> bool {
    let Some(best) = scores.iter().copied().reduce(f32::max) else {
        return false;
    };
    let tied = |score: f32| score >= best - EXPLAINED_TIE;
    let raised: Vec<bool> = metapaths
        .iter()
        .zip(scores.iter())
        .map(|(metapath, &score)| tied(score) && preferred.contains(metapath))
        .collect();
    let Some(length) = metapaths
        .iter()
        .zip(&raised)
        .find_map(|(metapath, &raise)| raise.then_some(metapath.steps.len()))
    else {
        return false;
    };
    let others: Vec<&Metapath> = metapaths
        .iter()
        .zip(scores.iter())
        .filter(|(metapath, &score)| tied(score) && !preferred.contains(metapath))
        .map(|(metapath, _)| metapath)
        .collect();
    if others.is_empty() || others.iter().any(|m| m.steps.len() != length) {
        return false;
    }
    for (score, raise) in scores.iter_mut().zip(raised) {
        if raise {
            *score += TIE_BREAK_BONUS;
        }
    }
    true
}

/// The relation sequence of the best path ([`best_path`] by `scores`), when the
/// question's words do not explain it: a hop claims no word and stands for no chain
/// link, or its score is below zero.
fn unexplained_best<'a>(
    texts: &'a [String],
    fits: &[SequenceFit],
    scores: &[f32],
) -> Option<&'a str> {
    let index = best_path(scores)?;
    let fit = fits.get(index)?;
    (fit.unexplained_hops > 0 || fit.score < 0.0).then(|| texts[index].as_str())
}

/// Flags `reply`'s answers as low-confidence when they follow `path`, a path the
/// question's words do not name.
fn flag_unexplained(reply: &mut SummarizeReply, path: Option<&str>) {
    let Some(path) = path.filter(|_| !reply.answers.is_empty()) else {
        return;
    };
    reply.low_confidence = true;
    reply.explanation = format!(
        "{} Low confidence: the question's words do not name every relation of the path \
         these answers follow ({path}).",
        reply.explanation
    );
}

/// Keeps the model's answers that the evidence supports: an entity of the context by
/// that name, or the text inside an evidence line (a literal value, a query row).
/// A name the model invented is no answer.
fn keep_grounded(request: &SummarizeRequest, reply: &mut SummarizeReply) {
    let lines: Vec<String> = verbalize_evidence(&request.context.evidence)
        .into_iter()
        .map(|line| line.to_lowercase())
        .collect();
    reply.answers.retain_mut(|answer| {
        if answer.entity.is_none() {
            answer.entity = entity_named(&request.context, &answer.text, &answer.evidence);
        }
        let wanted = answer.text.trim().to_lowercase();
        answer.entity.is_some()
            || (!wanted.is_empty() && lines.iter().any(|line| contains_phrase(line, &wanted)))
    });
}

/// Whether `answer` names one of the question's own entities.
fn names_a_topic(request: &SummarizeRequest, answer: &Answer) -> bool {
    request.topic_entities.iter().any(|topic| {
        answer.entity.as_ref().is_some_and(|e| e.id == topic.id)
            || spelled_as(&topic.name, &answer.text)
    })
}

/// Whether two answers name the same thing (the same entity, or the same text).
fn same_answer(a: &Answer, b: &Answer) -> bool {
    match (&a.entity, &b.entity) {
        (Some(x), Some(y)) => x.id == y.id,
        _ => spelled_as(&a.text, &b.text),
    }
}

/// `phrase` occurs in `line` with no letter or digit glued to either end.
#[cfg(test)]
mod tests;
