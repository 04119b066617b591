//! How a relation name reads as words, the one way every part of kgmesh turns a
//! relation into text: the scorers and embedders that match question words against it,
//! the evidence lines people read, the console's example question.
//!
//! A relation's own label wins when the graph gives one (an N-Triples predicate with
//! `rdfs:label "works for"`); otherwise its local name, split into words
//! (`http://example.org/worksFor` → "works for", `dbo:birthPlace` → "birth place",
//! `directed_by` → "directed by"). Matching the whole IRI would let "org" in
//! `http://example.org/` answer "which organization …" for every predicate.
//!
//! Labels are kept per relation name in one table for the process: an IRI names the
//! same predicate in every graph that uses it, so a label learned from one graph is the
//! predicate's label everywhere (a later label for the same IRI replaces the earlier).

use std::{
    collections::HashMap,
    sync::{OnceLock, RwLock},
};

fn table() -> &'static RwLock<HashMap<String, String>> {
    static TABLE: OnceLock<RwLock<HashMap<String, String>>> = OnceLock::new();
    TABLE.get_or_init(|| RwLock::new(HashMap::new()))
}

/// Records relations' own labels (relation name → label), as a graph loader read them.
/// Empty labels are ignored.
pub fn learn_relation_labels<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let mut table = table()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for (relation, label) in labels {
        let label = label.trim();
        if !label.is_empty() {
            table.insert(relation.to_owned(), label.to_owned());
        }
    }
}

/// The label a graph gave `relation`, if any (see [`learn_relation_labels`]).
pub fn learned_label(relation: &str) -> Option<String> {
    table()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(relation)
        .cloned()
}

/// Lowercased alphanumeric words of `text` (splits `snake_case`, `dotted.names` and
/// `camelCase`).
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && previous_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            previous_lower = c.is_lowercase();
            current.extend(c.to_lowercase());
        } else {
            previous_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The local part of a relation name written as an IRI or a prefixed name
/// (`http://dbpedia.org/ontology/birthPlace` → `birthPlace`, `dbo:genre` → `genre`);
/// a plain name is its own local part. A name with spaces is a label, never an IRI:
/// its slashes and colons are words' punctuation (Wikidata's "position played on team /
/// speciality" reads whole, not as "speciality").
pub fn local_name(relation: &str) -> &str {
    if relation.trim().contains(char::is_whitespace) {
        return relation;
    }
    relation
        .rsplit(['/', '#', ':'])
        .find(|part| !part.is_empty())
        .unwrap_or(relation)
}

/// The alternative of a label written as several ("position played on team /
/// speciality", Wikidata's way of giving a property two names) that the relation is
/// read by: the shortest, the plainest name of what the relation reaches (the first of
/// equally short ones). Only a slash with spaces around it separates alternatives
/// ("located in/on" is one name). Reading every alternative at once would let the
/// longer one's describing words ("played", "team") name the relation for any question
/// about playing for a team.
pub fn label_reading(label: &str) -> &str {
    label
        .split(" / ")
        .map(str::trim)
        .filter(|alternative| !alternative.is_empty())
        .min_by_key(|alternative| words(alternative).len())
        .unwrap_or(label)
}

/// A relation as words: its learned label's words, else its local name's
/// (`directed_by` → "directed by", `http://example.org/worksFor` → "works for"), a
/// label of alternatives by [`label_reading`]. What embedders read and what question
/// words are matched against.
pub fn relation_label(relation: &str) -> String {
    match learned_label(relation) {
        Some(label) => words(label_reading(&label)).join(" "),
        None => words(label_reading(local_name(relation))).join(" "),
    }
}

/// A relation as people read it in evidence: its learned label as given; an IRI or a
/// prefixed name by its [`relation_label`]; a plain name (`directed_by`) as written,
/// since that is also how a query names it.
pub fn relation_shown(relation: &str) -> String {
    if let Some(label) = learned_label(relation) {
        return label;
    }
    if local_name(relation) == relation {
        relation.to_owned()
    } else {
        let label = relation_label(relation);
        if label.is_empty() {
            relation.to_owned()
        } else {
            label
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iri_reads_by_its_local_name_and_a_learned_label_wins() {
        assert_eq!(relation_label("directed_by"), "directed by");
        assert_eq!(relation_label("http://example.org/worksFor"), "works for");
        assert_eq!(
            relation_label("http://example.org/onto#birthPlace"),
            "birth place"
        );
        assert_eq!(relation_shown("directed_by"), "directed_by");
        assert_eq!(relation_shown("http://example.org/worksFor"), "works for");
        // Nothing of the IRI's host is read as a word.
        assert!(!relation_label("http://example.org/worksFor").contains("org"));
        // A name with spaces is a label, not an IRI: a colon is punctuation, a slash
        // with spaces around it separates alternatives, read by the shortest; shown
        // whole.
        assert_eq!(
            relation_label("position played on team / speciality"),
            "speciality"
        );
        assert_eq!(relation_label("director / manager"), "director");
        assert_eq!(
            relation_label("located in/on physical feature"),
            "located in on physical feature"
        );
        assert_eq!(relation_label("rank: final"), "rank final");
        assert_eq!(
            relation_shown("position played on team / speciality"),
            "position played on team / speciality"
        );
        learn_relation_labels([("http://test.invalid/p17", "Employer Of")]);
        assert_eq!(relation_label("http://test.invalid/p17"), "employer of");
        assert_eq!(relation_shown("http://test.invalid/p17"), "Employer Of");
        // An empty label teaches nothing.
        learn_relation_labels([("http://test.invalid/p18", "  ")]);
        assert_eq!(relation_label("http://test.invalid/p18"), "p18");
    }
}
