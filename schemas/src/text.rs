//! One normalization of text, with a policy for each use, so that every part of kgmesh
//! that compares names, mentions or answers agrees on what "the same" means:
//!
//! | policy | case | accents | apostrophes | used by |
//! |---|---|---|---|---|
//! | [`Normalization::Index`] | folded | kept | dropped (`Schindler's` → `schindlers`) | the graph's name index (stores; part of the snapshot format) |
//! | [`Normalization::Answer`] | folded | kept | a separator (`Mother's` → `mother s`) | answer comparison (evaluation) |
//! | [`Normalization::Mention`] | folded | folded (`Amélie` → `amelie`) | dropped inside a word; a possessive `'s` a token of its own | the text toolkit: mentions, questions, scoring |
//!
//! Under every policy, any other character that is neither a letter nor a digit
//! separates words, and words are joined by single spaces.
//!
//! ```
//! use kgmesh_schemas::text::{normalize, Normalization};
//! assert_eq!(normalize("Schindler's  List", Normalization::Index), "schindlers list");
//! assert_eq!(normalize("Schindler's  List", Normalization::Answer), "schindler s list");
//! assert_eq!(normalize("Amélie's List", Normalization::Mention), "amelie s list");
//! ```

use std::ops::Range;

/// Which normalization a comparison needs (see the module's table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Normalization {
    Index,
    Answer,
    Mention,
}

/// `text` normalized by `policy`.
pub fn normalize(text: &str, policy: Normalization) -> String {
    match policy {
        Normalization::Index => words_joined(text, |c| c == '\'' || c == '\u{2019}'),
        Normalization::Answer => words_joined(text, |_| false),
        Normalization::Mention => tokens(text, true)
            .into_iter()
            .map(|(token, _)| token)
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Lower-cased alphanumeric runs joined by single spaces; `dropped` characters vanish
/// without separating.
fn words_joined(text: &str, dropped: impl Fn(char) -> bool) -> String {
    let mut normalized = String::with_capacity(text.len());
    let mut pending_space = false;
    for character in text.chars() {
        if dropped(character) {
            continue;
        }
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

/// The characters read as apostrophes under [`Normalization::Mention`] (dropped inside
/// a word, ending it before a possessive `s`).
pub fn is_apostrophe(c: char) -> bool {
    matches!(c, '\'' | '’' | 'ʼ' | '`' | '´')
}

/// The tokens of [`Normalization::Mention`], each with the byte range it covers in
/// `text`. With `split_possessive`, a possessive `'s` ends the word it follows and is
/// a token of its own ("Heat's genre" reads `heat s genre`); without, it is glued to
/// its word (`heats genre`), as a name is typed when the apostrophe is left out.
pub fn tokens(text: &str, split_possessive: bool) -> Vec<(String, Range<usize>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (at, &(offset, c)) in chars.iter().enumerate() {
        if is_apostrophe(c) {
            let possessive = matches!(chars.get(at + 1), Some((_, 's' | 'S')))
                && !chars
                    .get(at + 2)
                    .is_some_and(|(_, next)| next.is_alphanumeric());
            if split_possessive && possessive && !current.is_empty() {
                out.push((std::mem::take(&mut current), start..offset));
            }
            continue;
        }
        let mut produced = false;
        for folded in fold(c) {
            for lower in folded.to_lowercase() {
                if lower.is_alphanumeric() {
                    if current.is_empty() {
                        start = offset;
                    }
                    current.push(lower);
                    produced = true;
                }
            }
        }
        if !produced && !current.is_empty() {
            out.push((std::mem::take(&mut current), start..offset));
        }
    }
    if !current.is_empty() {
        out.push((current, start..text.len()));
    }
    out
}

/// Folds the accented Latin letters common in names to their base letters.
fn fold(c: char) -> impl Iterator<Item = char> {
    let folded: &str = match c {
        'À'..='Å' | 'à'..='å' | 'Ā' | 'ā' | 'Ă' | 'ă' | 'Ą' | 'ą' => "a",
        'Ç' | 'ç' | 'Ć' | 'ć' | 'Č' | 'č' => "c",
        'Ď' | 'ď' | 'Đ' | 'đ' => "d",
        'È'..='Ë' | 'è'..='ë' | 'Ē' | 'ē' | 'Ė' | 'ė' | 'Ę' | 'ę' | 'Ě' | 'ě' => "e",
        'Ğ' | 'ğ' => "g",
        'Ì'..='Ï' | 'ì'..='ï' | 'Ī' | 'ī' | 'İ' | 'ı' => "i",
        'Ł' | 'ł' => "l",
        'Ñ' | 'ñ' | 'Ń' | 'ń' | 'Ň' | 'ň' => "n",
        'Ò'..='Ö' | 'Ø' | 'ò'..='ö' | 'ø' | 'Ō' | 'ō' | 'Ő' | 'ő' => "o",
        'Ř' | 'ř' => "r",
        'Ś' | 'ś' | 'Š' | 'š' | 'Ş' | 'ş' => "s",
        'Ť' | 'ť' | 'Ţ' | 'ţ' => "t",
        'Ù'..='Ü' | 'ù'..='ü' | 'Ū' | 'ū' | 'Ů' | 'ů' | 'Ű' | 'ű' => "u",
        'Ý' | 'ý' | 'ÿ' | 'Ÿ' => "y",
        'Ź' | 'ź' | 'Ż' | 'ż' | 'Ž' | 'ž' => "z",
        'ß' => "ss",
        'Æ' | 'æ' => "ae",
        'Œ' | 'œ' => "oe",
        _ => "",
    };
    let keep = folded.is_empty();
    folded.chars().chain(keep.then_some(c))
}

/// Whether `needle` occurs in `haystack` as whole words: neither end of the place it
/// stands in touches a letter or digit (`river queen` is in `tracker river queen`, but
/// `queen` is not in `queens`). Compare texts normalized the same way.
pub fn contains_phrase(haystack: &str, needle: &str) -> bool {
    if needle.is_empty() {
        return false;
    }
    let mut search_from = 0;
    while let Some(offset) = haystack[search_from..].find(needle) {
        let start = search_from + offset;
        let end = start + needle.len();
        let before = haystack[..start].chars().next_back();
        let after = haystack[end..].chars().next();
        if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
            return true;
        }
        // Step past the first character of this match (which may be several bytes).
        search_from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_index_drops_apostrophes_and_keeps_accents() {
        let index = |text| normalize(text, Normalization::Index);
        assert_eq!(index("  Richard_Brooks "), "richard brooks");
        assert_eq!(index("Spider-Man: Homecoming"), "spider man homecoming");
        assert_eq!(index("Schindler’s List"), "schindlers list");
        assert_eq!(index("Amélie"), "amélie");
    }

    #[test]
    fn answers_compare_with_every_punctuation_a_separator() {
        let answer = |text| normalize(text, Normalization::Answer);
        assert_eq!(answer("Club_America"), "club america");
        assert_eq!(answer("Some Mother's Son"), "some mother s son");
        assert_eq!(answer("1._FC_Nuernberg"), "1 fc nuernberg");
        assert_eq!(answer("ÉMILE"), "émile");
        assert_eq!(answer("?!"), "");
        assert_ne!(answer("The Heat"), answer("Heat"));
    }

    #[test]
    fn mentions_fold_accents_and_split_possessives() {
        let mention = |text| normalize(text, Normalization::Mention);
        assert_eq!(mention("  SCHINDLER’S   LIST!! "), "schindler s list");
        assert_eq!(mention("Amélie (2001)"), "amelie 2001");
        assert_eq!(mention("Straße"), "strasse");
        assert_eq!(mention("東京 タワー"), "東京 タワー");
        let glued: Vec<String> = tokens("Schindler's List", false)
            .into_iter()
            .map(|(token, _)| token)
            .collect();
        assert_eq!(glued, ["schindlers", "list"]);
    }

    #[test]
    fn phrases_match_on_word_boundaries_only() {
        let line = normalize(
            "Temuera Morrison --starred_actors--> River Queen (2005)",
            Normalization::Answer,
        );
        assert!(contains_phrase(&line, "river queen"));
        assert!(contains_phrase(&line, "2005"));
        assert!(!contains_phrase(&line, "queens"));
        assert!(!contains_phrase(&line, "ueen"));
        assert!(!contains_phrase(&line, ""));
        assert!(contains_phrase("é é x", "é x"));
        assert!(contains_phrase("who -> directed -> heat.", "heat"));
    }
}
