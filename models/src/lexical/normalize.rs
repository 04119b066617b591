//! One normalization for names and questions, so "Schindler's List", "schindlers list"
//! and "SCHINDLER’S  LIST!" compare equal: the toolkit's policy
//! ([`Normalization::Mention`]) of the one normalization every part of kgmesh uses.

pub use kgmesh_schemas::text::is_apostrophe;
use kgmesh_schemas::text::{self, Normalization};

/// Question words that are no function words but still name nothing when they stand
/// alone ("which films *share* actors", "*show* me"): with the toolkit's stop words
/// ([`super::text::STOP_WORDS`]), the words a one-word name is never matched on.
const NEVER_NAMES_ALONE: &[&str] = &[
    "after", "before", "during", "each", "find", "give", "here", "no", "not", "other", "same",
    "share", "shared", "shares", "show", "up",
];

/// Words that carry no identity on their own. A name that is only one of these (a film
/// called "It") is never matched by itself inside a question: it would match everywhere.
pub fn is_stopword(token: &str) -> bool {
    super::text::is_stop_word(token) || NEVER_NAMES_ALONE.binary_search(&token).is_ok()
}

/// [`Normalization::Mention`]: lower case, accents folded, apostrophes dropped,
/// every other non-alphanumeric character a separator, single spaces.
/// A possessive `'s` ends the word it follows and is a token of its own: "Heat's genre"
/// reads `heat s genre`, so the name "Heat" is found in it (and "Schindler's List" is
/// `schindler s list`; the name index also knows it as `schindlers list`, see
/// [`glued`]).
pub fn normalize(text: &str) -> String {
    text::normalize(text, Normalization::Mention)
}

/// [`normalize`] with a possessive `'s` glued to its word, as a name is typed when the
/// apostrophe is left out ("Schindlers List").
pub fn glued(text: &str) -> String {
    text::tokens(text, false)
        .into_iter()
        .map(|(token, _)| token)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Normalized tokens with the byte range each covers in `text`.
pub fn tokens(text: &str) -> Vec<(String, std::ops::Range<usize>)> {
    text::tokens(text, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_stop_words_are_sorted_for_binary_search() {
        let mut sorted = NEVER_NAMES_ALONE.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, NEVER_NAMES_ALONE);
        assert!(is_stopword("the") && is_stopword("share") && !is_stopword("heat"));
    }

    #[test]
    fn case_punctuation_apostrophes_and_accents() {
        assert_eq!(normalize("Schindler's List"), "schindler s list");
        assert_eq!(normalize("  SCHINDLER’S   LIST!! "), "schindler s list");
        assert_eq!(normalize("Amélie (2001)"), "amelie 2001");
        assert_eq!(normalize("Straße"), "strasse");
        assert_eq!(normalize("AC/DC"), "ac dc");
        assert_eq!(normalize("東京 タワー"), "東京 タワー");
        assert_eq!(normalize("..."), "");
    }

    #[test]
    fn a_possessive_is_its_own_token() {
        assert_eq!(normalize("what is Heat's genre"), "what is heat s genre");
        assert_eq!(normalize("Bob Tanaka’s manager"), "bob tanaka s manager");
        assert_eq!(glued("Schindler's List"), "schindlers list");
        // Other apostrophes still join: names, contractions, a trailing one.
        assert_eq!(
            normalize("O'Brien doesn't know Takeshis'"),
            "obrien doesnt know takeshis"
        );
    }

    #[test]
    fn token_ranges_point_into_the_original() {
        let text = "Who directed [Amélie]?";
        let tokens = tokens(text);
        let (token, range) = &tokens[2];
        assert_eq!(token, "amelie");
        assert_eq!(&text[range.clone()], "Amélie");
    }
}
