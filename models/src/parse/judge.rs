//! Judge replies (CacheRAG Algorithm 3): is the context enough, and if not, follow one
//! relation from some frontier entities (depth) or scan their neighbours (breadth).

use kgmesh_schemas::{
    graph::{Direction, Entity},
    messages::judge::{JudgeReply, Verdict},
};

use super::{extract, match_offered, squash, ParseError, SectionName};

pub const SECTIONS: &[SectionName] = &[
    SectionName {
        canonical: "verdict",
        aliases: &["decision", "result", "judgement", "judgment"],
    },
    SectionName {
        canonical: "relation",
        aliases: &["relations", "follow", "expand relation"],
    },
    SectionName {
        canonical: "direction",
        aliases: &[],
    },
    SectionName {
        canonical: "from",
        aliases: &[
            "entities",
            "frontier",
            "start",
            "from entities",
            "start entities",
        ],
    },
    SectionName {
        canonical: "reason",
        aliases: &["explanation", "why", "reasoning"],
    },
];

/// Reads the judge's decision. `frontier` and `relations` are what the prompt offered;
/// anything else the model names is ignored. A depth expansion whose relation is not
/// offered becomes a breadth scan of the same entities.
pub fn parse(
    reply: &str,
    frontier: &[Entity],
    relations: &[String],
) -> Result<JudgeReply, ParseError> {
    if reply.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let sections = extract(reply, SECTIONS);
    let verdict_text = sections.text("verdict").unwrap_or_else(|| reply.to_owned());
    let kind = verdict_kind(&verdict_text).ok_or(ParseError::Missing("verdict"))?;
    let reason = sections
        .text("reason")
        .unwrap_or_default()
        .trim()
        .to_owned();

    let chosen_frontier = pick_frontier(&sections.lines("from"), frontier);
    let relation = sections
        .lines("relation")
        .iter()
        .find_map(|line| match_offered(line, relations).cloned());
    let direction = sections
        .text("direction")
        .map(|d| parse_direction(&d))
        .unwrap_or(Direction::Both);

    let verdict = match kind {
        VerdictKind::Complete => Verdict::Complete,
        VerdictKind::NextRound => Verdict::NextRound,
        VerdictKind::Breadth => Verdict::ExpandBreadth {
            frontier: chosen_frontier,
        },
        VerdictKind::Depth | VerdictKind::Incomplete => match relation {
            Some(relation) => Verdict::ExpandDepth {
                relation,
                direction,
                frontier: chosen_frontier,
            },
            None if kind == VerdictKind::Depth => Verdict::ExpandBreadth {
                frontier: chosen_frontier,
            },
            None => Verdict::NextRound,
        },
    };
    Ok(JudgeReply { verdict, reason })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VerdictKind {
    Complete,
    Incomplete,
    Depth,
    Breadth,
    NextRound,
}

/// The most specific keyword wins: "INCOMPLETE, expand depth" is a depth expansion.
fn verdict_kind(text: &str) -> Option<VerdictKind> {
    let key = squash(text);
    if key.contains("depth") {
        Some(VerdictKind::Depth)
    } else if key.contains("breadth") || key.contains("scan") {
        Some(VerdictKind::Breadth)
    } else if key.contains("nextround") {
        Some(VerdictKind::NextRound)
    } else if key.contains("incomplete")
        || key.contains("notcomplete")
        || key.contains("insufficient")
    {
        Some(VerdictKind::Incomplete)
    } else if key.contains("complete") || key.contains("sufficient") {
        Some(VerdictKind::Complete)
    } else {
        None
    }
}

fn parse_direction(text: &str) -> Direction {
    let key = squash(text);
    if key.starts_with("in") || key.starts_with("back") || key.starts_with("rev") {
        Direction::In
    } else if key.starts_with("out") || key.starts_with("forw") {
        Direction::Out
    } else {
        Direction::Both
    }
}

/// Named frontier entities, or the whole frontier when none is named (or none matches).
fn pick_frontier(named: &[String], frontier: &[Entity]) -> Vec<Entity> {
    let names: Vec<String> = frontier.iter().map(|e| e.name.clone()).collect();
    let mut chosen: Vec<Entity> = Vec::new();
    for line in named {
        for written in line.split([',', ';']) {
            if let Some(name) = match_offered(written, &names) {
                for entity in frontier.iter().filter(|e| &e.name == name) {
                    if !chosen.contains(entity) {
                        chosen.push(entity.clone());
                    }
                }
            }
        }
    }
    if chosen.is_empty() {
        frontier.to_vec()
    } else {
        chosen
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kgmesh_schemas::NodeId;

    fn frontier() -> Vec<Entity> {
        vec![
            Entity {
                id: NodeId(1),
                name: "Inception".into(),
            },
            Entity {
                id: NodeId(2),
                name: "Christopher Nolan".into(),
            },
        ]
    }

    fn relations() -> Vec<String> {
        vec!["directed_by".into(), "release_year".into()]
    }

    #[test]
    fn complete() {
        let reply = parse(
            "<verdict>COMPLETE</verdict><reason>the director is listed</reason>",
            &frontier(),
            &relations(),
        )
        .unwrap();
        assert_eq!(reply.verdict, Verdict::Complete);
        assert_eq!(reply.reason, "the director is listed");
    }

    #[test]
    fn depth_with_relation_direction_and_entities() {
        let reply = parse(
            "<verdict>EXPAND_DEPTH</verdict>\n<relation>Release Year</relation>\n<direction>outgoing</direction>\n<from>inception</from>",
            &frontier(),
            &relations(),
        )
        .unwrap();
        assert_eq!(
            reply.verdict,
            Verdict::ExpandDepth {
                relation: "release_year".into(),
                direction: Direction::Out,
                frontier: vec![frontier()[0].clone()],
            }
        );
    }

    #[test]
    fn depth_with_an_unknown_relation_scans_breadth() {
        let reply = parse(
            "<verdict>EXPAND_DEPTH</verdict><relation>won_award</relation>",
            &frontier(),
            &relations(),
        )
        .unwrap();
        assert_eq!(
            reply.verdict,
            Verdict::ExpandBreadth {
                frontier: frontier()
            }
        );
    }

    #[test]
    fn incomplete_without_a_plan_goes_to_the_next_round() {
        let reply = parse("The context is INCOMPLETE.", &frontier(), &relations()).unwrap();
        assert_eq!(reply.verdict, Verdict::NextRound);
    }

    #[test]
    fn json_verdicts_and_missing_verdicts() {
        let reply = parse(
            r#"{"verdict": "expand_breadth", "from": ["Christopher Nolan"]}"#,
            &frontier(),
            &relations(),
        )
        .unwrap();
        assert_eq!(
            reply.verdict,
            Verdict::ExpandBreadth {
                frontier: vec![frontier()[1].clone()]
            }
        );
        assert_eq!(
            parse("I am not sure.", &frontier(), &relations()),
            Err(ParseError::Missing("verdict"))
        );
        assert_eq!(
            parse("  ", &frontier(), &relations()),
            Err(ParseError::Empty)
        );
    }
}
