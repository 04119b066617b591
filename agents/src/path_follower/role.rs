//! The path-follower role: `retrieve` (metapaths from the linked entities, shortest
//! paths to linked draft answers) and `expand` (σ_depth / σ_breadth for the judge).

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Instant,
};

use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    messages::{
        context::{Evidence, EvidenceItem},
        path_follower::{ExpandReply, ExpandRequest, Expansion},
        retrieve::RetrieveReply,
    },
    AgentError, NodeId, Role,
};
use kgmesh_stores::GraphStore;

use super::core::{expand_breadth, expand_depth, follow_metapath, shortest_paths, WalkLimits};
use crate::{
    runtime::{
        evidence, retriever_spec, AgentDeps, CallContext, RetrieveCall, Retriever, RoleBuildError,
        RoleSpec,
    },
    scoring::{
        question_vectors,
        relevance::{Relevance, TextVectors},
        store_error,
        text::{marked_as_name, words},
    },
};

/// Edges read per frontier node in a breadth scan before pruning.
const BREADTH_SCAN_CAP: usize = 1_000;

struct PathFollower {
    graph: Arc<dyn GraphStore>,
    vectors_opt: Option<Arc<TextVectors>>,
}

fn entities(scored: &[ScoredEntity]) -> Vec<Entity> {
    scored.iter().map(|s| s.entity.clone()).collect()
}

#[async_trait::async_trait]
impl Retriever for PathFollower {
    const ROLE: &'static str = Role::PATH_FOLLOWER;

    async fn retrieve(&self, call: RetrieveCall) -> Result<RetrieveReply, AgentError> {
        let limits = WalkLimits {
            max_depth: call.budget.depth.get(),
            max_paths: (call.budget.result_rows as usize).clamp(1, WalkLimits::default().max_paths),
            deadline_opt: Some(call.ctx.deadline()),
            ..WalkLimits::default()
        };
        let sources = entities(&call.request.entities);
        let mut reply = RetrieveReply::default();
        let max_evidence = call.max_evidence();
        for (rank, metapath) in call.request.metapaths.iter().enumerate() {
            if metapath.steps.len() > call.budget.depth.get() as usize {
                reply.notes.push(format!(
                    "metapath {rank} has {} steps; the depth call.budget is {}",
                    metapath.steps.len(),
                    call.budget.depth.get()
                ));
            }
            let paths = follow_metapath(self.graph.as_ref(), &sources, metapath, &limits)
                .await
                .map_err(store_error)?;
            let score = 1.0 / (1.0 + rank as f32);
            let items = paths
                .into_iter()
                .map(|path| (EvidenceItem::Path(path), score));
            reply
                .evidence
                .extend(evidence(Self::ROLE, usize::MAX, items));
        }
        let targets = entities(&call.request.draft_answers);
        if !targets.is_empty() {
            let paths = shortest_paths(self.graph.as_ref(), &sources, &targets, &limits)
                .await
                .map_err(store_error)?;
            let items = paths
                .into_iter()
                .map(|path| (EvidenceItem::Path(path), 1.0));
            reply
                .evidence
                .extend(evidence(Self::ROLE, usize::MAX, items));
        }
        if reply.evidence.len() > max_evidence {
            reply.notes.push(format!(
                "{} paths found, {max_evidence} returned",
                reply.evidence.len()
            ));
            cut_keeping_shared_ends(&mut reply.evidence, max_evidence, &call.request.question);
        }
        call.ctx
            .record_graph(reply.evidence.len() as u64, call.started.elapsed());
        Ok(reply)
    }
}

impl PathFollower {
    async fn expand(
        &self,
        ctx: CallContext,
        request: ExpandRequest,
    ) -> Result<ExpandReply, AgentError> {
        ctx.check_deadline()?;
        let started = Instant::now();
        let budget = ctx.budget();
        let expanded = match request.expansion {
            Expansion::Depth {
                relation,
                direction,
            } => {
                if budget.depth_expansions == 0 {
                    return Err(AgentError::BudgetExhausted {
                        limit: kgmesh_schemas::budget::Limit::Depth,
                    });
                }
                let k_degree = budget.breadth.max(1) as usize;
                let max_total =
                    (budget.result_rows as usize).min(k_degree * request.frontier.len().max(1));
                expand_depth(
                    self.graph.as_ref(),
                    &request.frontier,
                    &relation,
                    direction,
                    k_degree,
                    max_total,
                )
                .await
            }
            Expansion::Breadth { k_degree } => {
                let k_degree = k_degree.min(budget.breadth).max(1) as usize;
                let names: Vec<&str> = request.frontier.iter().map(|e| e.name.as_str()).collect();
                let relevance =
                    Relevance::new(&request.question, &names, self.vectors_opt.clone()).await;
                expand_breadth(
                    self.graph.as_ref(),
                    &request.frontier,
                    &relevance,
                    k_degree,
                    BREADTH_SCAN_CAP,
                )
                .await
            }
        }
        .map_err(store_error)?;
        ctx.record_graph(expanded.triples.len() as u64, started.elapsed());
        let items = expanded
            .triples
            .into_iter()
            .map(|(triple, score)| (EvidenceItem::Triple(triple), score));
        Ok(ExpandReply {
            evidence: evidence(Role::PATH_FOLLOWER, usize::MAX, items),
            frontier: expanded.frontier,
        })
    }
}

/// Cuts `evidence` to `max` items in its order (best-ranked metapaths first), except
/// that up to half of the budget is kept for paths ending where paths from several
/// distinct question entities end: a question naming several entities asks for what
/// they lead to together ("who plays position P for club C"), and the few players of
/// C that play P must not be cut off by the many other players of P. Only entities the
/// question names word for word, and writes as a name (capitalized, in brackets, or of
/// several words), count: not a fuzzy link's guesses, nor a title that is a plain word
/// of the question ("fall"); nodes sharing a name (the film and the tag "heat") count
/// as one.
fn cut_keeping_shared_ends(evidence: &mut Vec<Evidence>, max: usize, question: &str) {
    if evidence.len() <= max {
        return;
    }
    let question_words = words(question);
    let named = |name: &str| {
        let name_words = words(name);
        !name_words.is_empty()
            && question_words
                .windows(name_words.len())
                .any(|window| window == name_words.as_slice())
            && marked_as_name(question, name)
    };
    let mut starts_by_end: HashMap<NodeId, HashSet<String>> = HashMap::new();
    for item in evidence.iter() {
        if let EvidenceItem::Path(path) = &item.item {
            if named(&path.start.name) {
                starts_by_end
                    .entry(path.end().id)
                    .or_default()
                    .insert(path.start.name.to_lowercase());
            }
        }
    }
    let shared = |item: &Evidence| match &item.item {
        EvidenceItem::Path(path) => starts_by_end
            .get(&path.end().id)
            .is_some_and(|starts| starts.len() > 1),
        _ => false,
    };
    let mut keep = vec![false; evidence.len()];
    let mut kept = 0;
    for (index, item) in evidence.iter().enumerate() {
        if kept >= max / 2 {
            break;
        }
        if shared(item) {
            keep[index] = true;
            kept += 1;
        }
    }
    for flag in keep.iter_mut() {
        if kept >= max {
            break;
        }
        if !*flag {
            *flag = true;
            kept += 1;
        }
    }
    let mut flags = keep.into_iter();
    evidence.retain(|_| flags.next().unwrap_or(false));
}

/// The role's factory (see [`super::DESCRIPTOR`]).
pub fn role(deps: &AgentDeps) -> Result<RoleSpec, RoleBuildError> {
    let follower = Arc::new(PathFollower {
        graph: deps.require_graph(Role::PATH_FOLLOWER)?,
        vectors_opt: question_vectors(deps),
    });
    Ok(retriever_spec(follower.clone()).op_on(
        &follower,
        |follower, ctx, request: ExpandRequest| async move { follower.expand(ctx, request).await },
    ))
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::graph::{Path, PathStep};

    use super::*;

    fn path(start: (u64, &str), end: (u64, &str)) -> Evidence {
        Evidence {
            source: Role::PATH_FOLLOWER.to_owned(),
            score: 1.0,
            item: EvidenceItem::Path(Path {
                start: Entity {
                    id: NodeId(start.0),
                    name: start.1.to_owned(),
                },
                steps: vec![PathStep {
                    relation: "r".to_owned(),
                    inverse: true,
                    node: Entity {
                        id: NodeId(end.0),
                        name: end.1.to_owned(),
                    },
                }],
            }),
        }
    }

    fn ends(evidence: &[Evidence]) -> Vec<u64> {
        evidence
            .iter()
            .filter_map(|e| match &e.item {
                EvidenceItem::Path(p) => Some(p.end().id.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_cut_keeps_what_two_named_entities_lead_to() {
        // Ten players of the position, then the club's two; player 107 plays both.
        let mut evidence: Vec<Evidence> = (100..110)
            .map(|p| path((1, "Midfielder"), (p, "player")))
            .chain([107, 200].map(|p| path((2, "Cruz_Azul_FC"), (p, "player"))))
            .collect();
        cut_keeping_shared_ends(&mut evidence, 4, "who plays Midfielder for Cruz_Azul_FC");
        assert_eq!(evidence.len(), 4);
        assert_eq!(ends(&evidence), [100, 101, 107, 107], "order kept");
    }

    #[test]
    fn a_plain_word_or_a_fuzzy_guess_is_no_named_entity() {
        // "Fall" is a title and a plain word of the question; "The Baby" is not in it.
        let mut evidence: Vec<Evidence> = (100..104)
            .map(|p| path((1, "The Babadook"), (p, "genre")))
            .chain([103].map(|p| path((2, "Fall"), (p, "genre"))))
            .chain([103].map(|p| path((3, "The Baby"), (p, "genre"))))
            .collect();
        cut_keeping_shared_ends(
            &mut evidence,
            3,
            "what genre does [The Babadook] fall under",
        );
        assert_eq!(
            ends(&evidence),
            [100, 101, 102],
            "the first three, as ranked"
        );
    }
}
