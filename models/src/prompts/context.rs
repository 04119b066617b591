//! Retrieved evidence as lines a model reads and cites (`E1: …`), within a token budget.

use kgmesh_schemas::{
    graph::{Path, Rows, Triple},
    messages::context::{Context, EvidenceItem},
    render::{self, Style},
};

use super::quote;
use crate::tokens::estimate_tokens;

/// How a model reads evidence: [`render`]'s prompt style with this crate's quoting.
const PROMPT: Style = Style::prompt(quote);

/// `Tom Hanks -[acted_in]-> Big`
pub fn verbalize_triple(triple: &Triple) -> String {
    render::triple_line(triple, &PROMPT)
}

/// `Tom Hanks <-[starred_actors]- Big -[release_year]-> 1988`
pub fn verbalize_path(path: &Path) -> String {
    render::path_line(path, &PROMPT)
}

/// `query "…" returned (c1, c2): [a, b] [c, d] …more rows`
pub fn verbalize_rows(cypher: &str, rows: &Rows) -> String {
    render::rows_text(cypher, rows, &PROMPT)
}

/// One evidence item as a model reads it.
pub fn verbalize(item: &EvidenceItem) -> String {
    render::line(item, &PROMPT)
}

/// Room left for a prompt's instructions, question and names besides its evidence, in
/// tokens (a generous allowance: the fixed text of the longest prompt is about half).
const INSTRUCTION_TOKENS: usize = 600;

/// The evidence budget of a prompt (estimated tokens): `budget`, cut to what fits in a
/// model context of `context_tokens` beside `completion_tokens` of reply and the
/// instructions. The estimate (four characters a token) runs low on graph text: names
/// and arrows tokenize finer, and prompts of 4,000 estimated evidence tokens measured
/// 5,400 to 6,300 with a real tokenizer, so only 60 % of the room is filled.
pub fn fit_evidence(context_tokens: Option<usize>, completion_tokens: u32, budget: usize) -> usize {
    match context_tokens {
        Some(window) => {
            let room = window.saturating_sub(completion_tokens as usize + INSTRUCTION_TOKENS);
            budget.min(room * 3 / 5)
        }
        None => budget,
    }
}

/// Evidence lines labelled `E<index+1>`, the best-scored kept when the budget is short,
/// shown in their original order so labels stay stable across prompts. Scores are
/// compared after dividing by each source's best ([`Context::normalized_scores`]):
/// retrievers score on their own scales, and one with large raw scores would otherwise
/// fill the prompt alone.
pub fn evidence_block(context: &Context, budget_tokens: usize) -> String {
    if context.evidence.is_empty() {
        return "(no graph context yet)\n".to_owned();
    }
    let lines: Vec<String> = context
        .evidence
        .iter()
        .enumerate()
        .map(|(i, e)| format!("E{}: {}\n", i + 1, verbalize(&e.item)))
        .collect();
    let scores = context.normalized_scores();
    let mut by_score: Vec<usize> = (0..lines.len()).collect();
    by_score.sort_by(|&a, &b| {
        scores[b]
            .partial_cmp(&scores[a])
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.cmp(&b))
    });
    let mut keep = vec![false; lines.len()];
    let mut used = 0u64;
    for index in by_score {
        let cost = estimate_tokens(&lines[index]);
        if used + cost > budget_tokens as u64 {
            continue;
        }
        used += cost;
        keep[index] = true;
    }
    let mut out = String::new();
    for (index, line) in lines.iter().enumerate() {
        if keep[index] {
            out.push_str(line);
        }
    }
    let hidden = keep.iter().filter(|k| !**k).count();
    if hidden > 0 {
        out.push_str(&format!("({hidden} lower-scored lines not shown)\n"));
    }
    out
}

/// Notes about failures (a refused query, a timed-out retriever); never evidence.
pub fn notes_block(context: &Context) -> String {
    context
        .notes
        .iter()
        .take(10)
        .map(|n| format!("- {}\n", quote(n)))
        .collect()
}

#[cfg(test)]
mod fit_tests {
    use super::fit_evidence;

    #[test]
    fn evidence_fits_the_models_window() {
        // Unknown window: the role's own budget.
        assert_eq!(fit_evidence(None, 400, 4_000), 4_000);
        // A 4,096-token server (scripts/local-llm): well under what overflowed it.
        let fitted = fit_evidence(Some(4_096), 400, 4_000);
        assert_eq!(fitted, (4_096 - 400 - 600) * 3 / 5);
        assert!(fitted * 3 / 2 + 600 + 400 <= 4_096, "{fitted}");
        // A large window leaves the role's budget as it is; a tiny one leaves nothing.
        assert_eq!(fit_evidence(Some(128_000), 400, 4_000), 4_000);
        assert_eq!(fit_evidence(Some(512), 400, 4_000), 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::{
        graph::{Entity, PathStep},
        messages::context::Evidence,
        NodeId,
    };

    fn entity(id: u64, name: &str) -> Entity {
        Entity {
            id: NodeId(id),
            name: name.into(),
        }
    }

    fn triple_evidence(score: f32, head: &str, tail: &str) -> Evidence {
        Evidence {
            source: "test".into(),
            score,
            item: EvidenceItem::Triple(Triple {
                head: entity(1, head),
                relation: "directed_by".into(),
                tail: entity(2, tail),
            }),
        }
    }

    #[test]
    fn paths_show_inverse_steps() {
        let path = Path {
            start: entity(1, "Tom Hanks"),
            steps: vec![
                PathStep {
                    relation: "starred_actors".into(),
                    inverse: true,
                    node: entity(2, "Big"),
                },
                PathStep {
                    relation: "release_year".into(),
                    inverse: false,
                    node: entity(3, "1988"),
                },
            ],
        };
        assert_eq!(
            verbalize_path(&path),
            "Tom Hanks <-[starred_actors]- Big -[release_year]-> 1988"
        );
    }

    #[test]
    fn the_budget_keeps_the_best_scored_lines_with_their_labels() {
        let context = Context {
            evidence: vec![
                triple_evidence(0.1, "Low", "Score"),
                triple_evidence(0.9, "Inception", "Christopher Nolan"),
            ],
            notes: vec![],
        };
        let block = evidence_block(&context, 14);
        assert!(
            block.contains("E2: Inception -[directed_by]-> Christopher Nolan"),
            "{block}"
        );
        assert!(!block.contains("E1:"), "{block}");
        assert!(block.contains("1 lower-scored lines not shown"));
    }

    #[test]
    fn each_sources_best_lines_compete_on_its_own_scale() {
        let mut path_line = triple_evidence(0.3, "Heat", "Michael Mann");
        path_line.source = "path-follower".into();
        let context = Context {
            evidence: vec![
                triple_evidence(40.0, "Big", "Penny Marshall"),
                triple_evidence(20.0, "Low", "Score"),
                path_line,
            ],
            notes: vec![],
        };
        // Room for two lines: each source's best, not the two of the larger scale.
        let block = evidence_block(&context, 24);
        assert!(block.contains("E1: Big"), "{block}");
        assert!(block.contains("E3: Heat"), "{block}");
        assert!(!block.contains("E2:"), "{block}");
    }

    #[test]
    fn names_cannot_open_tags() {
        let text = verbalize_triple(&Triple {
            head: entity(1, "</answers>"),
            relation: "r".into(),
            tail: entity(2, "x"),
        });
        assert_eq!(text, "‹/answers> -[r]-> x");
    }
}
