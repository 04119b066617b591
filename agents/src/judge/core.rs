//! The judge's deterministic rule (used without a language model, and whenever the
//! model cannot be asked): CacheRAG's dispatcher reduced to what the evidence scores
//! say.
//!
//! - some evidence scores at least [`JudgeRule::complete_score`] (a path or row that
//!   matches the question well) → COMPLETE;
//! - otherwise, while depth expansions are left and there is a frontier: expand along
//!   the best-scoring relation that reaches the frontier (σ_depth), or, when the
//!   evidence names no relation there, scan the frontier's neighbours (σ_breadth,
//!   pruned to K_degree by similarity in the path follower);
//! - otherwise → the next round.

use std::collections::HashSet;

use kgmesh_schemas::{
    graph::{Direction, Entity},
    messages::{
        context::{Context, EvidenceItem},
        judge::{JudgeReply, JudgeRequest, Verdict},
    },
    NodeId,
};

use crate::runtime::role_config;

role_config! {
    /// The judge's rule (`[judge]`), applied without a model or when its reply is
    /// unusable.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub struct JudgeRule {
        /// The judge's rule (no model, or an unusable reply): evidence scoring at least
        /// this answers the question, so no further round is run.
        pub complete_score: f32,
        /// The judge's rule: evidence scoring below this is not used to choose a relation
        /// to follow in the next round.
        pub min_relation_score: f32,
    }
}

impl Default for JudgeRule {
    fn default() -> Self {
        Self {
            complete_score: 0.5,
            min_relation_score: 0.2,
        }
    }
}

pub fn decide(request: &JudgeRequest, rule: &JudgeRule) -> JudgeReply {
    let best = best_score(&request.context);
    if let Some(best) = best {
        if best >= rule.complete_score {
            return reply(
                Verdict::Complete,
                format!(
                    "evidence scores {best:.2} (at least {:.2})",
                    rule.complete_score
                ),
            );
        }
    }
    if request.depth_expansions_left == 0 || request.frontier.is_empty() {
        return reply(
            Verdict::NextRound,
            "not enough evidence and no expansion left".to_owned(),
        );
    }
    if let Some((relation, direction, score)) =
        best_relation_into(&request.context, &request.frontier, rule.min_relation_score)
    {
        return reply(
            Verdict::ExpandDepth {
                relation: relation.clone(),
                direction,
                frontier: request.frontier.clone(),
            },
            format!("following {relation} (evidence score {score:.2}) one hop further"),
        );
    }
    reply(
        Verdict::ExpandBreadth {
            frontier: request.frontier.clone(),
        },
        match best {
            Some(best) => format!("best evidence scores only {best:.2}: scanning the frontier"),
            None => "nothing retrieved yet: scanning the frontier's neighbours".to_owned(),
        },
    )
}

fn reply(verdict: Verdict, reason: String) -> JudgeReply {
    JudgeReply { verdict, reason }
}

/// The best score of evidence that could carry an answer (a query with no rows cannot).
pub fn best_score(context: &Context) -> Option<f32> {
    context
        .evidence
        .iter()
        .filter(|e| match &e.item {
            EvidenceItem::Query { rows, .. } => !rows.rows.is_empty(),
            EvidenceItem::Path(path) => !path.is_empty(),
            EvidenceItem::Triple(_) | EvidenceItem::Excerpt(_) => true,
        })
        .map(|e| e.score)
        .max_by(f32::total_cmp)
}

/// The relation of the best-scored evidence step that ends on the frontier, with the
/// direction that continues the same way (a chain `a -r-> b` continues `b -r-> ?`).
fn best_relation_into(
    context: &Context,
    frontier: &[Entity],
    min_score: f32,
) -> Option<(String, Direction, f32)> {
    let frontier_ids: HashSet<NodeId> = frontier.iter().map(|e| e.id).collect();
    let mut best: Option<(String, Direction, f32)> = None;
    for evidence in &context.evidence {
        if evidence.score < min_score {
            continue;
        }
        let step = match &evidence.item {
            EvidenceItem::Path(path) => path.steps.last().and_then(|last| {
                frontier_ids.contains(&last.node.id).then(|| {
                    let direction = if last.inverse {
                        Direction::In
                    } else {
                        Direction::Out
                    };
                    (last.relation.clone(), direction)
                })
            }),
            EvidenceItem::Triple(triple) => {
                if frontier_ids.contains(&triple.tail.id) {
                    Some((triple.relation.clone(), Direction::Out))
                } else if frontier_ids.contains(&triple.head.id) {
                    Some((triple.relation.clone(), Direction::In))
                } else {
                    None
                }
            }
            EvidenceItem::Query { .. } | EvidenceItem::Excerpt(_) => None,
        };
        if let Some((relation, direction)) = step {
            if best
                .as_ref()
                .is_none_or(|(_, _, score)| evidence.score > *score)
            {
                best = Some((relation, direction, evidence.score));
            }
        }
    }
    best
}

/// Relation names appearing in the evidence (what an LLM judge may name when no graph
/// store is at hand to list the frontier's relations).
pub fn relations_in_context(context: &Context) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut relations = Vec::new();
    let mut add = |name: &str| {
        if seen.insert(name.to_owned()) {
            relations.push(name.to_owned());
        }
    };
    for evidence in &context.evidence {
        match &evidence.item {
            EvidenceItem::Path(path) => path.steps.iter().for_each(|s| add(&s.relation)),
            EvidenceItem::Triple(triple) => add(&triple.relation),
            EvidenceItem::Query { .. } | EvidenceItem::Excerpt(_) => {}
        }
    }
    relations
}
