//! CacheRAG's intermediate semantic representation: the topic entity, the constraints in
//! the user's own words, a domain and an aspect (the cache's two index levels).

use kgmesh_schemas::messages::cache::Isr;

use super::{extract, sections::clean_item, ParseError, SectionName};

pub const SECTIONS: &[SectionName] = &[
    SectionName {
        canonical: "entity",
        aliases: &[
            "entities",
            "topic entity",
            "topic entities",
            "main entity",
            "topic_entities",
        ],
    },
    SectionName {
        canonical: "constraints",
        aliases: &["constraint", "conditions"],
    },
    SectionName {
        canonical: "domain",
        aliases: &["domain hint"],
    },
    SectionName {
        canonical: "aspect",
        aliases: &["aspect attribute", "intent"],
    },
];

pub fn parse(reply: &str) -> Result<Isr, ParseError> {
    if reply.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    let sections = extract(reply, SECTIONS);
    if sections.is_empty() {
        return Err(ParseError::Missing("entity"));
    }
    Ok(Isr {
        topic_entities: list(&sections.lines("entity")),
        constraints: list(&sections.lines("constraints")),
        domain: label(sections.text("domain")),
        aspect: label(sections.text("aspect")),
    })
}

/// Models write lists one per line, or as `[a, b]` on one line.
fn list(lines: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in lines {
        let bracketed = line.starts_with('[') && line.ends_with(']');
        let items: Vec<String> = if bracketed {
            line[1..line.len() - 1].split(',').map(clean_item).collect()
        } else {
            vec![line.clone()]
        };
        for item in items {
            if !item.is_empty() && !out.iter().any(|o| o.eq_ignore_ascii_case(&item)) {
                out.push(item);
            }
        }
    }
    out
}

/// Domain and aspect are index keys: one short lower-case phrase.
fn label(text: Option<String>) -> String {
    let text = text.unwrap_or_default();
    let first = text
        .lines()
        .map(clean_item)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    first
        .to_lowercase()
        .split_whitespace()
        .take(4)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tagged_isr() {
        let isr = parse(
            "<entity>Christopher Nolan</entity>\n<constraints>\nother films\nnominated for Best Picture\n</constraints>\n\
             <domain>Movies</domain>\n<aspect>Award</aspect>",
        )
        .unwrap();
        assert_eq!(isr.topic_entities, vec!["Christopher Nolan"]);
        assert_eq!(
            isr.constraints,
            vec!["other films", "nominated for Best Picture"]
        );
        assert_eq!(isr.domain, "movies");
        assert_eq!(isr.aspect, "award");
    }

    #[test]
    fn paper_style_headings_with_bracketed_lists() {
        let isr = parse(
            "- Main entity: J.K. Rowling\n- Constraints: [magic, latest novel]\n- Domain: books",
        )
        .unwrap();
        assert_eq!(isr.topic_entities, vec!["J.K. Rowling"]);
        assert_eq!(isr.constraints, vec!["magic", "latest novel"]);
        assert_eq!(isr.domain, "books");
        assert_eq!(isr.aspect, "");
    }

    #[test]
    fn nothing_usable_is_an_error() {
        assert_eq!(parse(""), Err(ParseError::Empty));
        assert_eq!(
            parse("I cannot help with that."),
            Err(ParseError::Missing("entity"))
        );
    }
}
