//! The one normalization under which an answer counts as the gold answer.
//!
//! Benchmarks spell the same entity differently from the KG or from each other
//! (`Club_America` in WC2014, `Once Were Warriors` in MetaQA, `grand_duke_…` in
//! PathQuestion), and a system may print either spelling. Both sides go through
//! [`normalize`] before comparison:
//!
//! 1. Unicode lower case.
//! 2. Underscores become spaces (`Club_America` = `Club America`).
//! 3. Every other character that is neither a letter nor a digit becomes a space
//!    (apostrophes, hyphens, dots, commas, brackets: `Some Mother's Son` =
//!    `some mother s son`, `1._FC_Nuernberg` = `1 fc nuernberg`).
//! 4. Runs of white space collapse to one space; the ends are trimmed.
//!
//! Articles are *kept*: in a movie KG `Heat` and `The Heat` are different films, so
//! dropping them would count wrong answers as right. Diacritics are kept too
//! (`Müller` ≠ `Muller`); the bundled benchmarks are ASCII.

pub use kgmesh_schemas::text::contains_phrase;
use kgmesh_schemas::text::{self, Normalization};

/// The comparison form of an answer or a line of evidence ([`Normalization::Answer`]).
pub fn normalize(text: &str) -> String {
    text::normalize(text, Normalization::Answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_punctuation_underscores_and_spaces_are_ignored() {
        assert_eq!(normalize("Club_America"), "club america");
        assert_eq!(normalize("  Club   America "), "club america");
        assert_eq!(normalize("Some Mother's Son"), "some mother s son");
        assert_eq!(normalize("1._FC_Nuernberg"), "1 fc nuernberg");
        assert_eq!(
            normalize("Louise_of_Hesse-Kassel"),
            "louise of hesse kassel"
        );
        assert_eq!(normalize("ÉMILE"), "émile");
        assert_eq!(normalize("?!"), "");
    }

    #[test]
    fn articles_are_significant() {
        assert_ne!(normalize("The Heat"), normalize("Heat"));
    }

    #[test]
    fn phrases_match_on_word_boundaries_only() {
        let line = normalize("Temuera Morrison --starred_actors--> River Queen (2005)");
        assert!(contains_phrase(&line, &normalize("River Queen")));
        assert!(contains_phrase(&line, &normalize("temuera_morrison")));
        assert!(contains_phrase(&line, "2005"));
        assert!(!contains_phrase(&line, "queens"));
        assert!(!contains_phrase(&line, "ueen"));
        assert!(!contains_phrase(&line, ""));
        assert!(contains_phrase("é é x", "é x"));
    }
}
