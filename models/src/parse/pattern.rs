//! Pattern replies (SimGRAG §4.1): triples of a question's pattern. Accepted shapes, one
//! triple per line inside `<triples>` or anywhere in the reply: `head | relation |
//! tail`, `(head, relation, tail)` with or without quotes (the paper's Python tuples),
//! `["head", "relation", "tail"]`, and a JSON object whose `triples` is a list of such
//! arrays. `UNKNOWN <kind> <n>` and `?x` are unknown nodes or relations.

use super::{extract, sections::clean_item, ParseError, SectionName};

pub const SECTIONS: &[SectionName] = &[SectionName {
    canonical: "triples",
    aliases: &["pattern", "graph", "facts"],
}];

/// One triple as the model wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternTriple {
    pub head: String,
    pub relation: String,
    pub tail: String,
}

/// Whether a written node or relation stands for something the question does not name.
pub fn is_unknown(label: &str) -> bool {
    let label = label.trim();
    label.starts_with('?')
        || label
            .get(..7)
            .is_some_and(|head| head.eq_ignore_ascii_case("unknown"))
}

/// The triples of a pattern reply; an error when there are none.
pub fn parse(reply: &str) -> Result<Vec<PatternTriple>, ParseError> {
    if reply.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let sections = extract(reply, SECTIONS);
    // The tagged section first; a JSON section is read from the reply itself (the
    // section reader flattens its arrays).
    let mut triples = sections
        .text("triples")
        .map(|body| triples_in(&body))
        .unwrap_or_default();
    if triples.is_empty() {
        triples = triples_in(reply);
    }
    if triples.is_empty() {
        return Err(ParseError::Missing("triples"));
    }
    Ok(triples)
}

/// Tuples and arrays (several may share a line, as in JSON); else lines with two bars.
fn triples_in(body: &str) -> Vec<PatternTriple> {
    let mut triples: Vec<PatternTriple> = bracketed(body)
        .iter()
        .filter_map(|group| triple_of(&fields(group)))
        .collect();
    if triples.is_empty() {
        triples = body
            .lines()
            .filter_map(|line| triple_of(&line.split('|').map(clean_item).collect::<Vec<_>>()))
            .collect();
    }
    triples
}

fn triple_of(parts: &[String]) -> Option<PatternTriple> {
    match parts {
        [head, relation, tail] if !head.is_empty() && !relation.is_empty() && !tail.is_empty() => {
            Some(PatternTriple {
                head: head.clone(),
                relation: relation.clone(),
                tail: tail.clone(),
            })
        }
        _ => None,
    }
}

/// The innermost `(…)` and `[…]` groups of `text`, outside double quotes (a single
/// quote is also an apostrophe: "Some Mother's Son").
fn bracketed(text: &str) -> Vec<String> {
    let mut groups = Vec::new();
    let mut current: Option<String> = None;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '(' | '[' if !quoted => {
                current = Some(String::new());
                continue;
            }
            ')' | ']' if !quoted => {
                if let Some(group) = current.take() {
                    groups.push(group);
                }
                continue;
            }
            _ => {}
        }
        if let Some(group) = current.as_mut() {
            group.push(c);
        }
    }
    groups
}

/// The fields of a group: split at commas outside double quotes, each cleaned of its
/// quotes.
fn fields(group: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    for c in group.chars() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                parts.push(clean_item(&field));
                field.clear();
                continue;
            }
            _ => {}
        }
        field.push(c);
    }
    parts.push(clean_item(&field));
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(head: &str, relation: &str, tail: &str) -> PatternTriple {
        PatternTriple {
            head: head.into(),
            relation: relation.into(),
            tail: tail.into(),
        }
    }

    #[test]
    fn reads_bars_tuples_arrays_and_json() {
        let bars = "<triples>\nHeat | directed by | UNKNOWN director 1\n</triples>";
        assert_eq!(
            parse(bars).unwrap(),
            vec![t("Heat", "directed by", "UNKNOWN director 1")]
        );
        let tuples = r#"{"divided": ["x"], "triples": [("Heat", "directed by", "UNKNOWN director 1"), ('UNKNOWN director 1', 'born in', "UNKNOWN city 2")]}"#;
        assert_eq!(
            parse(tuples).unwrap(),
            vec![
                t("Heat", "directed by", "UNKNOWN director 1"),
                t("UNKNOWN director 1", "born in", "UNKNOWN city 2")
            ]
        );
        let json = r#"```json
{"triples": [["Crouching Tiger, Hidden Dragon", "language", "UNKNOWN language 1"]]}
```"#;
        assert_eq!(
            parse(json).unwrap(),
            vec![t(
                "Crouching Tiger, Hidden Dragon",
                "language",
                "UNKNOWN language 1"
            )]
        );
        let bare = "Here is the pattern:\n(Some Mother's Son, directed by, UNKNOWN director 1)";
        assert_eq!(
            parse(bare).unwrap(),
            vec![t("Some Mother's Son", "directed by", "UNKNOWN director 1")]
        );
    }

    #[test]
    fn nothing_usable_is_an_error() {
        assert_eq!(parse("  "), Err(ParseError::Empty));
        assert_eq!(
            parse("I cannot help with that."),
            Err(ParseError::Missing("triples"))
        );
        assert_eq!(
            parse("<triples>\nHeat | directed\n</triples>"),
            Err(ParseError::Missing("triples"))
        );
        assert!(is_unknown("UNKNOWN person 1") && is_unknown("?x") && is_unknown("unknown"));
        assert!(!is_unknown("Heat"));
    }
}
