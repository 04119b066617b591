//! KG-Linker replies: entity mentions, relation paths, openCypher, draft answers, FINISH.

use kgmesh_schemas::{
    budget::MAX_DEPTH,
    graph::{Direction, Metapath, RelationStep},
    messages::kg_linker::KgLinkReply,
};

use super::{extract, is_finish, match_offered, sections::clean_item, squash, SectionName};

pub const SECTIONS: &[SectionName] = &[
    SectionName {
        canonical: "entities",
        aliases: &[
            "entity",
            "topic entities",
            "mentions",
            "next entities",
            "question entities",
        ],
    },
    SectionName {
        canonical: "paths",
        aliases: &[
            "path",
            "relation paths",
            "relationship paths",
            "metapaths",
            "relations",
        ],
    },
    SectionName {
        canonical: "cypher",
        aliases: &["opencypher", "cypher query", "query", "graph query"],
    },
    SectionName {
        canonical: "answers",
        aliases: &["answer", "draft answers", "draft answer"],
    },
    SectionName {
        canonical: "status",
        aliases: &["task completion", "completion", "finish", "done"],
    },
];

/// Longest text kept as a mention or an answer: anything longer is prose, not a name.
const MAX_ITEM_CHARS: usize = 200;

/// Reads a KG-Linker reply. `relation_names` are the graph's relations: paths naming
/// anything else are dropped (pass an empty slice to keep every path as written).
pub fn parse(reply: &str, relation_names: &[String]) -> KgLinkReply {
    let sections = extract(reply, SECTIONS);
    let mut finish = sections
        .text("status")
        .map(|status| {
            let key = squash(&status);
            key.contains("finish") && !key.contains("notfinish")
        })
        .unwrap_or(false);
    if sections.is_empty() && is_finish(reply) {
        finish = true;
    }

    let mut mentions = Vec::new();
    for line in sections.lines("entities") {
        if is_finish(&line) {
            finish = true;
        } else if line.chars().count() <= MAX_ITEM_CHARS {
            mentions.push(line);
        }
    }

    let mut metapaths: Vec<Metapath> = Vec::new();
    if let Some(body) = sections.text("paths") {
        for line in body.lines() {
            for path in parse_path_line(line, relation_names) {
                if !metapaths.contains(&path) {
                    metapaths.push(path);
                }
            }
        }
    }

    let cypher = sections
        .text("cypher")
        .map(|body| split_queries(&body))
        .unwrap_or_default();

    let draft_answers = sections
        .lines("answers")
        .into_iter()
        .filter(|a| a.chars().count() <= MAX_ITEM_CHARS && !is_finish(a) && !is_non_answer(a))
        .collect();

    KgLinkReply {
        mentions,
        linked: Vec::new(),
        metapaths,
        cypher,
        draft_answers,
        finish,
        model_plan: false,
        confidence: None,
        reader_plan: false,
        reader_reaches: None,
        reader_tie: None,
    }
}

/// "I don't know" and friends are not answers.
pub(crate) fn is_non_answer(text: &str) -> bool {
    let key = squash(text);
    matches!(
        key.as_str(),
        "unknown" | "idontknow" | "notknown" | "cannotbedetermined" | "noanswer" | "notavailable"
    ) || key.starts_with("idontknow")
        || key.starts_with("icannot")
        || key.starts_with("thecontextdoesnot")
}

/// One line may hold one path (`a -> b`), a Cypher-style pattern
/// (`(m)-[:a]->(p)<-[:b]-(x)`), or several single-relation paths separated by commas.
pub fn parse_path_line(line: &str, relation_names: &[String]) -> Vec<Metapath> {
    let line = clean_item(line);
    if line.is_empty() {
        return Vec::new();
    }
    if line.contains("[:") {
        return pattern_path(&line, relation_names).into_iter().collect();
    }
    let arrows = ["->", "→", "=>", "⇒"];
    if arrows.iter().any(|a| line.contains(a)) {
        let mut normalized = line.clone();
        for arrow in arrows {
            normalized = normalized.replace(arrow, "\u{1}");
        }
        let tokens: Vec<&str> = normalized.split('\u{1}').collect();
        return steps_to_path(&tokens, relation_names).into_iter().collect();
    }
    line.split([',', ';', '|'])
        .filter_map(|token| steps_to_path(&[token], relation_names))
        .collect()
}

fn pattern_path(line: &str, relation_names: &[String]) -> Option<Metapath> {
    let mut steps = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find("[:") {
        let before = &rest[..open];
        let after = &rest[open + 2..];
        let close = after.find(']').unwrap_or(after.len());
        let inside = &after[..close];
        let name_end = inside.find(['*', '{', ' ', '|']).unwrap_or(inside.len());
        let name = inside[..name_end].trim_matches('`');
        let direction = if before.trim_end().ends_with("<-") {
            Direction::In
        } else {
            Direction::Out
        };
        let relation = resolve_relation(name, relation_names)?;
        steps.push(RelationStep {
            relation,
            direction,
        });
        rest = &after[close.min(after.len())..];
    }
    finish_path(steps)
}

/// Relation tokens in order; tokens that name no relation are allowed only at the ends
/// (models like to write the start entity or a `?` there).
fn steps_to_path(tokens: &[&str], relation_names: &[String]) -> Option<Metapath> {
    let resolved: Vec<Option<RelationStep>> = tokens
        .iter()
        .map(|token| {
            let (name, direction) = split_direction(token);
            resolve_relation(&name, relation_names).map(|relation| RelationStep {
                relation,
                direction,
            })
        })
        .collect();
    let first = resolved.iter().position(Option::is_some)?;
    let last = resolved.iter().rposition(Option::is_some)?;
    if resolved[first..=last].iter().any(Option::is_none) {
        return None;
    }
    finish_path(resolved[first..=last].iter().flatten().cloned().collect())
}

fn finish_path(steps: Vec<RelationStep>) -> Option<Metapath> {
    if steps.is_empty() || steps.len() > MAX_DEPTH as usize {
        return None;
    }
    Some(Metapath { steps })
}

/// `~r`, `^r`, `<-r`, `r^-1`, `inverse(r)`, `r (inverse)` follow `r` tail → head.
fn split_direction(token: &str) -> (String, Direction) {
    let mut name = clean_item(token);
    let mut direction = Direction::Out;
    for prefix in ["~", "^", "<-", "!"] {
        if let Some(stripped) = name.strip_prefix(prefix) {
            name = stripped.trim().to_owned();
            direction = Direction::In;
        }
    }
    for suffix in [
        "^-1",
        "⁻¹",
        "(inverse)",
        "(reverse)",
        "(reversed)",
        "(incoming)",
    ] {
        if let Some(stripped) = name.strip_suffix(suffix) {
            name = stripped.trim().to_owned();
            direction = Direction::In;
        }
    }
    for wrapper in ["inverse(", "reverse("] {
        if name.to_ascii_lowercase().starts_with(wrapper) && name.ends_with(')') {
            name = name[wrapper.len()..name.len() - 1].trim().to_owned();
            direction = Direction::In;
        }
    }
    let name = name
        .trim_matches(|c: char| c == ':' || c == '`' || c == '"' || c == '\'' || c.is_whitespace());
    (name.to_owned(), direction)
}

fn resolve_relation(written: &str, relation_names: &[String]) -> Option<String> {
    let written = written.trim().trim_matches('`');
    if written.is_empty() || written == "?" {
        return None;
    }
    if relation_names.is_empty() {
        // Without a schema, keep what looks like a relation name: one token, no prose.
        let plausible = !written.contains(' ') && written.chars().count() <= 100;
        return plausible.then(|| written.to_owned());
    }
    match_offered(written, relation_names).cloned()
}

/// Splits a Cypher body into statements: on `;`, or on blank lines that start a new
/// `MATCH`. Anything without `RETURN` is prose, not a query.
pub fn split_queries(body: &str) -> Vec<String> {
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut saw_blank = false;
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            saw_blank = true;
            continue;
        }
        let starts_statement = {
            let upper = trimmed.to_ascii_uppercase();
            upper.starts_with("MATCH") || upper.starts_with("OPTIONAL MATCH")
        };
        if saw_blank && starts_statement && !current.trim().is_empty() {
            chunks.push(std::mem::take(&mut current));
        }
        saw_blank = false;
        if !current.is_empty() {
            current.push('\n');
        }
        current.push_str(trimmed);
    }
    chunks.push(current);
    let mut queries: Vec<String> = Vec::new();
    for chunk in chunks {
        for statement in chunk.split(';') {
            let statement = drop_leading_prose(statement.trim().trim_matches('`').trim());
            let upper = statement.to_ascii_uppercase();
            if upper.contains("RETURN") && !queries.iter().any(|q| q == statement) {
                queries.push(statement.to_owned());
            }
        }
    }
    queries
}

const CLAUSES: &[&str] = &["MATCH", "OPTIONAL", "WITH", "UNWIND", "CALL", "RETURN"];

/// Lines before the first clause keyword ("Here is the query:") are not Cypher.
fn drop_leading_prose(statement: &str) -> &str {
    let mut offset = 0;
    for line in statement.split_inclusive('\n') {
        let upper = line.trim_start().to_ascii_uppercase();
        if CLAUSES.iter().any(|c| upper.starts_with(c)) {
            return statement[offset..].trim();
        }
        offset += line.len();
    }
    statement
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relations() -> Vec<String> {
        [
            "directed_by",
            "release_year",
            "starred_actors",
            "written_by",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    fn path(steps: &[(&str, Direction)]) -> Metapath {
        Metapath {
            steps: steps
                .iter()
                .map(|(r, d)| RelationStep {
                    relation: r.to_string(),
                    direction: *d,
                })
                .collect(),
        }
    }

    #[test]
    fn reads_all_four_artifacts() {
        let reply = "<entities>\nInception\n</entities>\n<paths>\ndirected_by\ndirected_by -> ~directed_by\n</paths>\n\
                     <cypher>\nMATCH (m {name: 'Inception'})-[:directed_by]->(p)\nRETURN p.name\n</cypher>\n\
                     <answers>\nChristopher Nolan\n</answers>";
        let parsed = parse(reply, &relations());
        assert_eq!(parsed.mentions, vec!["Inception"]);
        assert_eq!(
            parsed.metapaths,
            vec![
                path(&[("directed_by", Direction::Out)]),
                path(&[
                    ("directed_by", Direction::Out),
                    ("directed_by", Direction::In)
                ]),
            ]
        );
        assert_eq!(
            parsed.cypher,
            vec!["MATCH (m {name: 'Inception'})-[:directed_by]->(p)\nRETURN p.name"]
        );
        assert_eq!(parsed.draft_answers, vec!["Christopher Nolan"]);
        assert!(!parsed.finish);
    }

    #[test]
    fn made_up_relations_are_dropped_and_spelling_is_fixed() {
        let reply = "<paths>\nDirected By -> Release_Year\nnominated_for\nInception -> directed_by -> ?\n</paths>";
        let parsed = parse(reply, &relations());
        assert_eq!(
            parsed.metapaths,
            vec![
                path(&[
                    ("directed_by", Direction::Out),
                    ("release_year", Direction::Out)
                ]),
                path(&[("directed_by", Direction::Out)]),
            ]
        );
    }

    #[test]
    fn cypher_patterns_and_comma_lists_are_paths() {
        let lines = parse_path_line(
            "(m:Movie)<-[:starred_actors]-(a)-[:written_by*1..2]->(w)",
            &relations(),
        );
        assert_eq!(
            lines,
            vec![path(&[
                ("starred_actors", Direction::In),
                ("written_by", Direction::Out)
            ])]
        );
        let list = parse_path_line("directed_by, written_by", &relations());
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn paths_longer_than_the_depth_limit_are_dropped() {
        let parsed = parse(
            "<paths>directed_by -> directed_by -> directed_by -> directed_by</paths>",
            &relations(),
        );
        assert!(parsed.metapaths.is_empty());
    }

    #[test]
    fn finish_in_entities_or_status() {
        assert!(parse("<entities>\nFINISH\n</entities>", &relations()).finish);
        assert!(parse("<status>FINISH</status>", &relations()).finish);
        assert!(parse("FINISH", &relations()).finish);
        assert!(!parse("<status>CONTINUE</status>", &relations()).finish);
        let parsed = parse("<entities>FINISH\nInception</entities>", &relations());
        assert_eq!(parsed.mentions, vec!["Inception"]);
    }

    #[test]
    fn several_queries_and_prose_in_the_cypher_section() {
        let body =
            "Here is the query:\nMATCH (a) RETURN a;\nMATCH (b)\nRETURN b\n\nMATCH (c) RETURN c";
        assert_eq!(
            split_queries(body),
            vec![
                "MATCH (a) RETURN a",
                "MATCH (b)\nRETURN b",
                "MATCH (c) RETURN c"
            ]
        );
    }

    #[test]
    fn non_answers_are_dropped() {
        let parsed = parse("<answers>\nI don't know\nUnknown\nParis\n</answers>", &[]);
        assert_eq!(parsed.draft_answers, vec!["Paris"]);
    }
}
