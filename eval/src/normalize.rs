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

/// The comparison form of an answer or a line of evidence.
pub fn normalize(text: &str) -> String {
    let mut normalized = String::with_capacity(text.len());
    let mut pending_space = false;
    for character in text.chars() {
        if character.is_alphanumeric() {
            if pending_space && !normalized.is_empty() {
                normalized.push(' ');
            }
            pending_space = false;
            normalized.extend(character.to_lowercase());
        } else {
            pending_space = true;
        }
    }
    normalized
}

/// Whether normalized `needle` occurs in normalized `haystack` as whole words
/// (`river queen` is in `tracker river queen` but `queen` is not in `queens`).
pub fn contains_phrase(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let mut search_from = 0;
    while let Some(offset) = haystack[search_from..].find(needle) {
        let start = search_from + offset;
        let end = start + needle.len();
        let starts_on_word = start == 0 || haystack.as_bytes()[start - 1] == b' ';
        let ends_on_word = end == haystack.len() || haystack.as_bytes()[end] == b' ';
        if starts_on_word && ends_on_word {
            return true;
        }
        // Step past the first character of this match (which may be several bytes).
        search_from = start
            + haystack[start..]
                .chars()
                .next()
                .map(char::len_utf8)
                .unwrap_or(1);
    }
    false
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
