//! Agentic traversal replies (ByoKG-RAG Algorithm 1): which relations to follow from the
//! current entities, and which reached entities to explore next.

use super::{extract, is_finish, match_offered, sections::clean_lines, squash, SectionName};

pub const RELATION_SECTIONS: &[SectionName] = &[SectionName {
    canonical: "selected",
    aliases: &["select", "selection", "selected relations", "relations"],
}];

pub const ENTITY_SECTIONS: &[SectionName] = &[SectionName {
    canonical: "next-entities",
    aliases: &["next entities", "entities", "selected entities", "next"],
}];

/// The offered relations the model chose, in its order. Without a tagged section every
/// line of the reply is tried, and a line that merely mentions one offered relation
/// ("1. directed_by (the director)") counts.
pub fn parse_relation_selection(reply: &str, offered: &[String]) -> Vec<String> {
    let sections = extract(reply, RELATION_SECTIONS);
    let lines = if sections.has("selected") {
        sections.lines("selected")
    } else {
        clean_lines(reply)
    };
    let mut chosen: Vec<String> = Vec::new();
    for line in &lines {
        for item in line.split([',', ';']) {
            if let Some(relation) =
                match_offered(item, offered).or_else(|| mentioned(line, offered))
            {
                if !chosen.contains(relation) {
                    chosen.push(relation.clone());
                }
            }
        }
    }
    chosen
}

/// The longest offered name contained in a line (ignoring case and separators).
fn mentioned<'a>(line: &str, offered: &'a [String]) -> Option<&'a String> {
    let key = squash(line);
    offered
        .iter()
        .filter(|o| {
            let name = squash(o);
            !name.is_empty() && key.contains(&name)
        })
        .max_by_key(|o| squash(o).len())
}

/// What to do after a traversal step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntitySelection {
    /// The context already answers the question.
    Finish,
    /// Explore these (offered) entities next, most important first; empty stops too.
    Explore(Vec<String>),
}

/// Reads the next-entity choice. Entities are matched against `offered` (the names
/// reached so far) so the traverser can map them back to graph ids.
pub fn parse_entity_selection(reply: &str, offered: &[String]) -> EntitySelection {
    let sections = extract(reply, ENTITY_SECTIONS);
    let lines = if sections.has("next-entities") {
        sections.lines("next-entities")
    } else {
        clean_lines(reply)
    };
    if lines.iter().any(|l| is_finish(l)) {
        return EntitySelection::Finish;
    }
    let mut chosen: Vec<String> = Vec::new();
    for line in lines {
        let picked = if offered.is_empty() {
            Some(line)
        } else {
            match_offered(&line, offered).cloned()
        };
        if let Some(name) = picked {
            if !chosen.contains(&name) {
                chosen.push(name);
            }
        }
    }
    EntitySelection::Explore(chosen)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn relations_from_tags_are_checked_against_the_offer() {
        let reply = "<selected>\nDirected_By\nmade_up\nrelease_year\n</selected>";
        assert_eq!(
            parse_relation_selection(
                reply,
                &offered(&["directed_by", "release_year", "has_genre"])
            ),
            vec!["directed_by", "release_year"]
        );
    }

    #[test]
    fn relations_from_untagged_prose() {
        let reply = "The relevant relations are:\n1. directed_by (who made it)\n2. has_genre";
        assert_eq!(
            parse_relation_selection(reply, &offered(&["directed_by", "has_genre", "has_tags"])),
            vec!["directed_by", "has_genre"]
        );
    }

    #[test]
    fn finish_or_entities() {
        assert_eq!(
            parse_entity_selection(
                "<next-entities>\nFINISH\n</next-entities>",
                &offered(&["A"])
            ),
            EntitySelection::Finish
        );
        assert_eq!(
            parse_entity_selection(
                "<next-entities>\nchristopher nolan\nNobody\n",
                &offered(&["Christopher Nolan"])
            ),
            EntitySelection::Explore(vec!["Christopher Nolan".into()])
        );
    }
}
