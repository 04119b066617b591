//! The one text toolkit: words, stop words, a light stemmer and word similarity, used
//! wherever kgmesh compares a question with the graph (the gazetteer's stop words, the
//! relevance scorer, the plan cache's templates and lexicon, the summarizer), so that
//! masking, linking and scoring read a text the same way.
//!
//! Nothing here knows any benchmark: the stop-word list and the irregular-verb table are
//! plain English.

use std::collections::HashSet;

pub use kgmesh_schemas::relation_text::{
    label_reading, learn_relation_labels, learned_label, local_name, relation_label,
    relation_shown, words,
};

/// English function words that carry no relation meaning (also dropped from relation
/// names such as `directed_by` or `has_genre`).
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being",
    "but", "by", "can", "could", "did", "do", "does", "done", "for", "from", "get", "got", "had",
    "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "me", "my", "name", "names", "of", "on", "one", "or", "our", "s", "she", "so", "some", "tell",
    "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those",
    "to", "too", "us", "was", "we", "were", "what", "when", "where", "which", "while", "who",
    "whom", "whose", "why", "will", "with", "would", "you", "your",
];

/// Irregular English verb forms mapped to their base, so that `wrote` meets `written_by`.
const IRREGULAR: &[(&str, &str)] = &[
    ("wrote", "write"),
    ("written", "write"),
    ("writing", "write"),
    ("writer", "write"),
    ("writers", "write"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("made", "make"),
    ("born", "bear"),
    ("bore", "bear"),
    ("won", "win"),
    ("sang", "sing"),
    ("sung", "sing"),
    ("began", "begin"),
    ("begun", "begin"),
    ("led", "lead"),
    ("fought", "fight"),
    ("taught", "teach"),
    ("built", "build"),
    ("held", "hold"),
    ("left", "leave"),
    ("met", "meet"),
    ("paid", "pay"),
    ("sold", "sell"),
    ("bought", "buy"),
    ("thought", "think"),
    ("brought", "bring"),
    ("found", "find"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("knew", "know"),
    ("known", "know"),
    ("drew", "draw"),
    ("drawn", "draw"),
    ("gave", "give"),
    ("given", "give"),
    ("took", "take"),
    ("taken", "take"),
    ("saw", "see"),
    ("seen", "see"),
    ("went", "go"),
    ("gone", "go"),
    ("died", "die"),
    ("dead", "die"),
    ("death", "die"),
    ("children", "child"),
    ("people", "person"),
    ("men", "man"),
    ("women", "woman"),
];

/// Edits that turn `a` into `b`, letter by letter: insertions, deletions and
/// substitutions (Levenshtein), and with `swaps` also a transposition of two adjacent
/// letters counted as one edit (optimal string alignment).
pub fn edit_distance(a: &str, b: &str, swaps: bool) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // Rows i-2, i-1 and i of the table.
    let mut before: Vec<usize> = Vec::new();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut current = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let substitution = previous[j - 1] + usize::from(a[i - 1] != b[j - 1]);
            let mut best = substitution.min(previous[j] + 1).min(current[j - 1] + 1);
            if swaps && i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(before[j - 2] + 1);
            }
            current[j] = best;
        }
        before = std::mem::replace(&mut previous, current);
    }
    previous[b.len()]
}

pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Whether a lower-case word is an article: "the", "a", "an".
pub fn is_article(word: &str) -> bool {
    matches!(word, "the" | "a" | "an")
}

/// Whether a lower-case word determines the noun phrase it opens: an article, a
/// demonstrative or a possessive pronoun ("*the* films", "*those* films", "*its*
/// director").
pub fn is_determiner(word: &str) -> bool {
    is_article(word)
        || matches!(
            word,
            "this"
                | "that"
                | "these"
                | "those"
                | "its"
                | "his"
                | "her"
                | "their"
                | "our"
                | "my"
                | "your"
        )
}

/// A crude suffix-stripping stemmer: enough to meet `directed`/`director`/`directs`.
pub fn stem(word: &str) -> String {
    if let Some((_, base)) = IRREGULAR.iter().find(|(form, _)| *form == word) {
        return (*base).to_owned();
    }
    // Compounds ending in an irregular form: "screenwriter" is a kind of "writer".
    if let Some((_, base)) = IRREGULAR
        .iter()
        .find(|(form, _)| word.len() >= form.len() + 3 && word.ends_with(form))
    {
        return (*base).to_owned();
    }
    const SUFFIXES: &[&str] = &[
        "ations", "ation", "ings", "ing", "ers", "ies", "ied", "ed", "er", "es", "ly", "s", "e",
    ];
    for suffix in SUFFIXES {
        if let Some(base) = word.strip_suffix(suffix) {
            if base.chars().count() >= 3 {
                let mut base = base.to_owned();
                if *suffix == "ies" || *suffix == "ied" {
                    base.push('y');
                }
                return base;
            }
        }
    }
    word.to_owned()
}

/// Whether `question` names `name` the way names are written: more than one content
/// word, or (where the question spells it) with a capital letter or inside brackets.
/// A name the question spells differently (accents, apostrophes) counts as written.
pub fn marked_as_name(question: &str, name: &str) -> bool {
    if content_stems(name).len() > 1 {
        return true;
    }
    let lower_question = question.to_lowercase();
    let lower_name = name.trim().to_lowercase();
    // Lower-casing a character may change its length ("Ⱥ" takes 2 bytes, "ⱥ" 3), and
    // two such changes may cancel out in the total: offsets into the lower-cased
    // question are offsets into the question only where no character changed length.
    let same_offsets = question
        .chars()
        .all(|c| c.to_lowercase().map(char::len_utf8).sum::<usize>() == c.len_utf8());
    if lower_name.is_empty() || !same_offsets {
        // Lower-casing changed byte offsets: no spelling to read, so keep it a name.
        return true;
    }
    let mut spelled_at = lower_question.match_indices(&lower_name).peekable();
    if spelled_at.peek().is_none() {
        // Written otherwise than the name index reads it ("Amélie" for "amelie"): no
        // spelling to read, so keep it a name.
        return true;
    }
    spelled_at.any(|(at, _)| {
        let spelled = &question[at..at + lower_name.len()];
        let bracketed = question[..at].trim_end().ends_with('[');
        bracketed || spelled.chars().any(char::is_uppercase)
    })
}

/// Whether `question` writes some name the way names are written: inside brackets, as
/// words joined by underscores (`Francisco_RODRIGUEZ`), or with a capital letter on a
/// word other than the first (`who directed Heat`).
pub fn writes_a_name(question: &str) -> bool {
    if question.contains('[') && question.contains(']') {
        return true;
    }
    question
        .split_whitespace()
        .enumerate()
        .any(|(position, token)| {
            let word = token.trim_matches(|c: char| !c.is_alphanumeric());
            let joined = word
                .split('_')
                .filter(|part| part.chars().any(char::is_alphanumeric))
                .count()
                > 1;
            let capital =
                position > 0 && word != "I" && word.chars().next().is_some_and(char::is_uppercase);
            joined || capital
        })
}

/// The names a question writes between delimiters, as one: inside square brackets or
/// double quotes (`who acted in [Up]`, `who directed "M"`), with the byte range of the
/// text inside, trimmed. Such a text is a name whatever its words are: a name may be a
/// stop word ("Up", "They") or only signs ("$"), which no word match would find.
pub fn delimited_names(question: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = Vec::new();
    let mut open: Option<(char, usize)> = None;
    for (at, c) in question.char_indices() {
        match (open, c) {
            (None, '[' | '"' | '\u{201c}') => open = Some((c, at + c.len_utf8())),
            (Some(('[', start)), ']')
            | (Some(('"', start)), '"')
            | (Some(('\u{201c}', start)), '\u{201d}') => {
                open = None;
                out.extend(trimmed_span(question, start..at));
            }
            _ => {}
        }
    }
    out
}

/// The text of `range` in `question` without its surrounding spaces, with its byte
/// range; `None` when nothing is left.
fn trimmed_span(
    question: &str,
    range: std::ops::Range<usize>,
) -> Option<(std::ops::Range<usize>, &str)> {
    let inner = &question[range.clone()];
    let trimmed = inner.trim();
    let offset = range.start + (inner.len() - inner.trim_start().len());
    (!trimmed.is_empty()).then(|| (offset..offset + trimmed.len(), trimmed))
}

/// Every text a question quotes: what [`delimited_names`] reads, and texts between
/// single quotes (`'Exotic Liquids'`, `'1997-01-01'`). A single quote opens only after
/// a space, a bracket or the start, and closes only before a space, punctuation or the
/// end, so that apostrophes (`Bob's`, `'90s`) quote nothing.
pub fn quoted_texts(question: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    let mut out = delimited_names(question);
    let chars: Vec<(usize, char)> = question.char_indices().collect();
    let mut open: Option<usize> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        if c != '\'' && c != '\u{2018}' && c != '\u{2019}' {
            continue;
        }
        let before = i.checked_sub(1).map(|j| chars[j].1);
        let after = chars.get(i + 1).map(|&(_, c)| c);
        match open {
            None if before.is_none_or(|b| b.is_whitespace() || "([{".contains(b))
                && after.is_some_and(|a| !a.is_whitespace()) =>
            {
                open = Some(at + c.len_utf8());
            }
            Some(start) if after.is_none_or(|a| !a.is_alphanumeric()) => {
                open = None;
                out.extend(trimmed_span(question, start..at));
            }
            _ => {}
        }
    }
    out
}

/// Which of a question's mentions (spans a name index found in it) name the entities
/// it asks about:
/// - when some are written as names ([`marked_as_name`]), only those: a one-word
///   mention in lower case beside them is a relation cue ("the *writer* of \[Heat\]",
///   where a graph also holds a tag "writer");
/// - when none is, but the question writes a name ([`writes_a_name`]), none: what it
///   names is not in the graph, and the plain words around it ("a man or a woman",
///   "the child of …") would only answer a question about something else;
/// - otherwise all of them.
pub fn entity_mention_mask(question: &str, mentions: &[&str]) -> Vec<bool> {
    let spans = written_name_spans(question);
    let all = words(question);
    let marked: Vec<bool> = mentions
        .iter()
        .map(|mention| {
            marked_as_name(question, mention) && !only_part_of_a_name(&all, &spans, mention)
        })
        .collect();
    if marked.contains(&true) {
        marked
    } else if writes_a_name(question) {
        vec![false; mentions.len()]
    } else {
        vec![true; mentions.len()]
    }
}

/// The word spans (`[start, end)` in [`words`] of the question) of the names it writes
/// as one: inside brackets, or words joined by underscores (`Arthur_BOKA`).
fn written_name_spans(question: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut at = 0;
    let mut open: Option<usize> = None;
    for token in question.split_whitespace() {
        let count = words(token).len();
        if token.contains('[') {
            open = Some(at);
        }
        let joined = token
            .split('_')
            .filter(|part| part.chars().any(char::is_alphanumeric))
            .count()
            > 1;
        if joined && count > 1 {
            spans.push((at, at + count));
        }
        at += count;
        if token.contains(']') {
            if let Some(start) = open.take() {
                if at > start {
                    spans.push((start, at));
                }
            }
        }
    }
    spans
}

/// Whether every place the question spells `mention` lies inside a longer name it
/// writes as one: "Arthur" in `Arthur_BOKA` or in "[Arthur Boka]" is part of a name the
/// graph does not hold, not the film "Arthur".
fn only_part_of_a_name(all: &[String], spans: &[(usize, usize)], mention: &str) -> bool {
    let places = word_spans(all, &words(mention));
    !places.is_empty() && places.iter().all(|&place| inside_a_longer(place, spans))
}

/// Positions in `all` of the words of every place one of `names` stands in it (a
/// one-word name a text also uses as a plain word, "position *midfielder*", is still
/// the name there).
pub fn name_positions(all: &[String], names: &[&str]) -> HashSet<usize> {
    names
        .iter()
        .flat_map(|name| word_spans(all, &words(name)))
        .flat_map(|(start, end)| start..end)
        .collect()
}

/// The [`words`] of `text` outside every place one of `names` stands in it, in order
/// ("what kind of movie is [Heat]" with "Heat": "what kind of movie is").
pub fn words_outside(text: &str, names: &[&str]) -> Vec<String> {
    words_outside_but(text, names, |_, _, _| false)
}

/// The [`words_outside`] `names` that can say what `text` asks of them: less a word
/// that names the class of a named entity ([`names_the_class_of_a_name`]): "what kind
/// of movie is [Heat]" with "Heat" gives "what kind of is", since "movie" says what
/// Heat is, not what is asked of it.
pub fn words_asking(text: &str, names: &[&str]) -> Vec<String> {
    words_outside_but(text, names, names_the_class_of_a_name)
}

/// The [`words`] of `text` outside every place one of `names` stands in it, in order,
/// less those `drop` picks (given all the words, a word's position and the positions
/// inside names).
fn words_outside_but(
    text: &str,
    names: &[&str],
    drop: impl Fn(&[String], usize, &HashSet<usize>) -> bool,
) -> Vec<String> {
    let all = words(text);
    let inside = name_positions(&all, names);
    let kept: Vec<bool> = (0..all.len())
        .map(|at| !inside.contains(&at) && !drop(&all, at, &inside))
        .collect();
    all.into_iter()
        .zip(kept)
        .filter_map(|(word, keep)| keep.then_some(word))
        .collect()
}

/// Whether word `at` of `all` names the class of the entity whose name (at positions
/// `inside`) follows it, in a question that asks for a subdivision of that class:
/// "what kind of *film* is [Heat]", "which type of *movie* was [Heat]". The question
/// asks which kind; that Heat is a film says nothing about which relation holds the
/// answer. By grammar: a wh-word, a noun, "of", this word, a copula, then the name,
/// itself the subject ("what type of *religion* is [X]'s spouse" asks the spouse's
/// religion: "religion" is the answer's class there).
pub fn names_the_class_of_a_name(all: &[String], at: usize, inside: &HashSet<usize>) -> bool {
    let word = |i: usize| all.get(i).map_or("", String::as_str);
    let name_start = at + 2;
    let name_end = (name_start..all.len())
        .find(|i| !inside.contains(i))
        .unwrap_or(all.len());
    at >= 3
        && matches!(word(at - 3), "what" | "which")
        && word(at - 1) == "of"
        && !is_stop_word(word(at))
        && !is_stop_word(word(at - 2))
        && !inside.contains(&at)
        && matches!(word(at + 1), "is" | "was" | "are" | "were")
        && name_end > name_start
        && word(name_end) != "s"
}

/// Every place the word sequence `name` stands in `all`, as `[start, end)` spans of
/// word indices (none for an empty name).
pub fn word_spans(all: &[String], name: &[String]) -> Vec<(usize, usize)> {
    if name.is_empty() || name.len() > all.len() {
        return Vec::new();
    }
    (0..=all.len() - name.len())
        .filter(|&at| all[at..at + name.len()] == name[..])
        .map(|at| (at, at + name.len()))
        .collect()
}

/// Whether `span` lies inside a longer one of `spans` ("Business" inside "The
/// Business").
pub fn inside_a_longer((start, end): (usize, usize), spans: &[(usize, usize)]) -> bool {
    spans
        .iter()
        .any(|&(s, e)| s <= start && end <= e && e - s > end - start)
}

/// Keywords of a text, in order, without duplicates: its words less stop words and
/// one-letter words (a lone digit stays). Unlike [`content_stems`], not stemmed: they
/// index documents by the words they are written with.
pub fn keywords(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(text)
        .into_iter()
        .filter(|w| {
            (w.chars().count() > 1 || w.chars().all(|c| c.is_numeric())) && !is_stop_word(w)
        })
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// Content stems of a text, in order, without stop words or duplicates.
pub fn content_stems(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    words(text)
        .into_iter()
        .filter(|w| !is_stop_word(w))
        .map(|w| stem(&w))
        .filter(|s| seen.insert(s.clone()))
        .collect()
}

/// How alike two stems are, in `[0, 1]`. One beginning the other is alike, where the
/// shorter has four letters or more, or three and the longer at most two more ("act"
/// and "actor"): a three-letter stem begins too many words ("come" is no "composer",
/// nor "home" a "homeland"; on the domain zoo "come from" named `composer` and
/// "hometown" `home library`).
pub fn stem_similarity(a: &str, b: &str) -> f32 {
    if a == b {
        return 1.0;
    }
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if short.len() >= 3 && long.starts_with(short) && (short.len() > 3 || long.len() <= 5) {
        return 0.8;
    }
    // The head of an English compound is its last part ("filmmaker" is a "maker").
    if short.len() >= 4 && long.len() >= short.len() + 3 && long.ends_with(short) {
        return 0.8;
    }
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    if common >= 4 {
        return 0.6;
    }
    0.0
}

/// The words of a relation name as [`relation_label`] reads it: `directed_by` →
/// `directed by`, `hasGenre` → `has genre`, `dbo:birthPlace` → `birth place`, a
/// predicate with its own `rdfs:label` → that label's words.
pub fn relation_words(relation: &str) -> Vec<String> {
    words(&relation_label(relation))
}

/// The stems of a relation's words ([`content_stems`] of its [`relation_label`]): what
/// question words are matched against, never the whole IRI.
pub fn relation_stems(relation: &str) -> Vec<String> {
    content_stems(&relation_label(relation))
}

/// The stems of the words of a relation's name that say what it reaches (its head),
/// less those that only qualify it:
/// - the segments of a dotted id before its last (`aviation.airline.hubs`: "aviation"
///   and "airline" name the subject's domain and type);
/// - in a name of content words alone, every word but the last, as English compounds
///   end in their head ("*ship* type" is a type, "*order* date" a date).
///
/// Any other name's words all count ("country for sport", "place of birth", "directed
/// by"): whether what follows "of" names what has the relation ("original language of
/// film") or what it reaches ("part of series"), the words alone do not tell.
pub fn relation_head_stems(relation: &str) -> Vec<String> {
    content_stems(&relation_head_words(relation).join(" "))
}

/// The words behind [`relation_head_stems`], lowercased and not stemmed (`placed` is no
/// `place`).
pub fn relation_head_words(relation: &str) -> Vec<String> {
    let all = relation_reading_words(relation);
    let kept: &[String] = if all.len() > 1 && all.iter().all(|w| !is_stop_word(w)) {
        &all[all.len() - 1..]
    } else {
        &all
    };
    kept.iter().filter(|w| !is_stop_word(w)).cloned().collect()
}

/// The words a relation's name is read by, lowercased: a learned label's, else the local
/// name's (a dotted id's last segment; a label with spaces read by its shortest
/// alternative).
fn relation_reading_words(relation: &str) -> Vec<String> {
    let label = match learned_label(relation) {
        Some(label) => label_reading(&label).to_owned(),
        None => {
            let local = local_name(relation);
            if local.contains(char::is_whitespace) {
                label_reading(local).to_owned()
            } else {
                local.rsplit('.').next().unwrap_or(local).to_owned()
            }
        }
    };
    words(&label)
}

/// Whether a relation's name is a past participle and a preposition other than "by"
/// (`programmed in`, `based on`, `graduated from`, `headquartered in`; an irregular
/// participle of the stemmer's table too, `taught in`, `written in`): what it
/// reaches is no doer of the verb, so a noun sharing the verb's stem names what has
/// the relation as often as what it reaches (a *program* is `programmed in` a
/// language, a *graduate* `graduated from` a university). After "by" (`directed by`)
/// it reaches the doer, whom such a noun names (the *director*).
pub fn participle_not_by_agent(relation: &str) -> bool {
    match relation_reading_words(relation).as_slice() {
        [verb, preposition] => {
            (verb.len() > 4 && verb.ends_with("ed") || irregular_participle(verb))
                && preposition != "by"
                && PREPOSITIONS.contains(&preposition.as_str())
        }
        _ => false,
    }
}

/// Whether `word` is a verb's irregular past form in [`IRREGULAR`] ("taught",
/// "written", "held"), not a noun or an "-ing" form the table also holds.
fn irregular_participle(word: &str) -> bool {
    IRREGULAR.iter().any(|(form, base)| {
        *form == word
            && !word.ends_with("ing")
            && !word.ends_with("er")
            && !word.ends_with("ers")
            && !matches!(*base, "child" | "person" | "man" | "woman")
            && word != "death"
            && word != "dead"
    })
}

/// Prepositions: a name after one is its object ("the films acted *by* X").
pub const PREPOSITIONS: &[&str] = &[
    "about", "as", "at", "by", "for", "from", "in", "into", "of", "on", "to", "with",
];

/// Whether a relation's name may say what the relation reaches. A name ending in "of" or
/// "for" says what its subject is or does to what it reaches (`captain of`, `member of`,
/// `version of`, `plays for`): the club a player captains or plays for is no captain or
/// player, the software a version is of no version. Other names may name it: a passive
/// agent its role (the `directed by` of a film is its director), a compound its head
/// (`home stadium`, `plays in club`), and a participle before "in" or "at" what reaches
/// a place (`based in`, `located in`).
pub fn names_what_it_reaches(relation: &str) -> bool {
    relation_reading_words(relation)
        .last()
        .is_none_or(|last| !matches!(last.as_str(), "of" | "for"))
}

/// How a comparative phrase bounds the number or date after it: "after 2012" is
/// `> 2012`, "since 2012" `>= 2012`, "no more than 5" `<= 5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comparative {
    /// Above the bound (`>`, `>=`), not below it.
    pub greater: bool,
    /// The bound itself is in (`>=`, `<=`).
    pub inclusive: bool,
}

impl Comparative {
    /// The openCypher operator: `>`, `>=`, `<` or `<=`.
    pub fn operator(self) -> &'static str {
        match (self.greater, self.inclusive) {
            (true, false) => ">",
            (true, true) => ">=",
            (false, false) => "<",
            (false, true) => "<=",
        }
    }
}

const fn cmp(greater: bool, inclusive: bool) -> Comparative {
    Comparative { greater, inclusive }
}

/// Phrases that put a bound before a number or a date, longest first so that "no more
/// than" is read before "more than", and "more than" before "more".
const COMPARATIVES: &[(&[&str], Comparative)] = &[
    (&["no", "more", "than"], cmp(false, true)),
    (&["not", "more", "than"], cmp(false, true)),
    (&["no", "less", "than"], cmp(true, true)),
    (&["not", "less", "than"], cmp(true, true)),
    (&["no", "fewer", "than"], cmp(true, true)),
    (&["no", "later", "than"], cmp(false, true)),
    (&["no", "earlier", "than"], cmp(true, true)),
    (&["at", "least"], cmp(true, true)),
    (&["at", "most"], cmp(false, true)),
    (&["later", "than"], cmp(true, false)),
    (&["earlier", "than"], cmp(false, false)),
    (&["more"], cmp(true, false)),
    (&["greater"], cmp(true, false)),
    (&["higher"], cmp(true, false)),
    (&["larger"], cmp(true, false)),
    (&["over"], cmp(true, false)),
    (&["above"], cmp(true, false)),
    (&["exceeding"], cmp(true, false)),
    (&["exceeds"], cmp(true, false)),
    (&["after"], cmp(true, false)),
    (&["since"], cmp(true, true)),
    (&["less"], cmp(false, false)),
    (&["fewer"], cmp(false, false)),
    (&["lower"], cmp(false, false)),
    (&["below"], cmp(false, false)),
    (&["under"], cmp(false, false)),
    (&["cheaper"], cmp(false, false)),
    (&["before"], cmp(false, false)),
    (&["until"], cmp(false, true)),
];

/// Words after a number that bound it ("25 or more", "2010 and later"), inclusive.
const TRAILING: &[(&str, bool)] = &[
    ("more", true),
    ("higher", true),
    ("greater", true),
    ("above", true),
    ("later", true),
    ("after", true),
    ("less", false),
    ("fewer", false),
    ("lower", false),
    ("below", false),
    ("earlier", false),
    ("before", false),
];

/// The comparative phrase that starts at `words[at]`, and how many words it takes
/// (a "than" right after a one-word comparative is taken with it: "more than").
pub fn comparative_at(words: &[String], at: usize) -> Option<(Comparative, usize)> {
    COMPARATIVES.iter().find_map(|(phrase, comparative)| {
        let end = at + phrase.len();
        let matches = words
            .get(at..end)
            .is_some_and(|found| found.iter().zip(phrase.iter()).all(|(w, p)| w == p));
        if !matches {
            return None;
        }
        let than = phrase.len() == 1 && words.get(end).is_some_and(|w| w == "than");
        Some((*comparative, phrase.len() + usize::from(than)))
    })
}

/// The bound that "or more", "or earlier", "and above" put on the number at
/// `words[at]`: inclusive, in the direction the word says.
pub fn trailing_comparative(words: &[String], at: usize) -> Option<Comparative> {
    let joiner = words.get(at + 1)?;
    if joiner != "or" && joiner != "and" {
        return None;
    }
    let word = words.get(at + 2)?;
    TRAILING
        .iter()
        .find(|(w, _)| w == word)
        .map(|(_, greater)| cmp(*greater, true))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_participle_before_a_preposition_other_than_by() {
        for relation in [
            "programmed_in",
            "based on",
            "http://example.org/uni/graduatedFrom",
            "headquarteredIn",
            "taughtIn",
            "written in",
        ] {
            assert!(participle_not_by_agent(relation), "{relation}");
        }
        for relation in [
            "directed_by",
            "influenced by",
            "home_stadium",
            "set_in",
            "plays_for",
            "locatedInBuilding",
            "operating system",
            "writer of",
            "people in",
        ] {
            assert!(!participle_not_by_agent(relation), "{relation}");
        }
    }

    #[test]
    fn edit_distance_counts_letter_edits_and_swaps_when_asked() {
        assert_eq!(edit_distance("kitten", "sitting", false), 3);
        assert_eq!(edit_distance("", "abc", false), 3);
        assert_eq!(edit_distance("abc", "abc", true), 0);
        assert_eq!(edit_distance("okonkow", "okonkwo", false), 2);
        assert_eq!(edit_distance("okonkow", "okonkwo", true), 1);
        assert_eq!(edit_distance("ca", "abc", true), 3);
    }

    use super::*;

    fn words_of(text: &str) -> Vec<String> {
        words(text)
    }

    #[test]
    fn comparatives_bound_the_number_after_them() {
        let cases: &[(&str, &str, usize)] = &[
            ("after 2012", ">", 1),
            ("since 2012", ">=", 1),
            ("before 2012", "<", 1),
            ("until 2012", "<=", 1),
            ("more than 50", ">", 2),
            ("less than 10", "<", 2),
            ("fewer than 3", "<", 2),
            ("at least 5", ">=", 2),
            ("at most 5", "<=", 2),
            ("over 20", ">", 1),
            ("under 20", "<", 1),
            ("no more than 4", "<=", 3),
            ("not less than 4", ">=", 3),
            ("later than 1999", ">", 2),
            ("no later than 1999", "<=", 3),
        ];
        for (text, operator, taken) in cases {
            let words = words_of(text);
            let found = comparative_at(&words, 0).map(|(c, n)| (c.operator(), n));
            assert_eq!(found, Some((*operator, *taken)), "{text}");
        }
        // Only at the phrase's start, and only whole words.
        assert_eq!(comparative_at(&words_of("the most popular"), 0), None);
        assert_eq!(comparative_at(&words_of("moreover 5"), 0), None);
        assert_eq!(comparative_at(&words_of("a b"), 5), None);
    }

    #[test]
    fn trailing_words_bound_the_number_before_them_inclusively() {
        let words = words_of("25 or more units, 1990 or earlier, 10 and above, 5 or so");
        let at = |n: &str| words.iter().position(|w| w == n).unwrap();
        let op = |n: &str| trailing_comparative(&words, at(n)).map(Comparative::operator);
        assert_eq!(op("25"), Some(">="));
        assert_eq!(op("1990"), Some("<="));
        assert_eq!(op("10"), Some(">="));
        assert_eq!(op("5"), None);
    }

    #[test]
    fn a_question_whose_lower_case_shifts_its_offsets_keeps_a_name_a_name() {
        // "Ⱥ" grows by a byte when lower-cased and "\u{A7DC}" shrinks by one: the
        // lengths agree, the offsets do not (this used to slice inside a character).
        let question = "\u{23A}$\u{A7DC}";
        assert_eq!(question.to_lowercase().len(), question.len());
        assert!(marked_as_name(question, "$"));
        // Where no character changes length, the spelling is read as before.
        assert!(!marked_as_name("who directed heat", "heat"));
        assert!(marked_as_name("who directed Heat", "heat"));
    }

    #[test]
    fn articles_are_determiners_and_a_noun_is_neither() {
        for article in ["the", "a", "an"] {
            assert!(is_article(article) && is_determiner(article), "{article}");
        }
        assert!(is_determiner("those") && !is_article("those"));
        assert!(is_determiner("its") && !is_article("its"));
        assert!(!is_determiner("film") && !is_article("The"));
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        let mut sorted = STOP_WORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOP_WORDS);
    }

    #[test]
    fn words_outside_names_leave_out_every_place_a_name_stands() {
        assert_eq!(
            words_outside(
                "what kind of movie is [Rocket Science]",
                &["Rocket Science"]
            ),
            ["what", "kind", "of", "movie", "is"]
        );
        // Every place, any case; a name the text does not hold changes nothing.
        assert_eq!(
            words_outside("Heat or heat, said Al", &["heat", "Michael Mann"]),
            ["or", "said", "al"]
        );
        assert!(words_outside("Heat", &["Heat"]).is_empty());
    }

    #[test]
    fn a_word_naming_a_named_entitys_class_asks_nothing() {
        assert_eq!(
            words_asking(
                "what kind of movie is [Rocket Science]",
                &["Rocket Science"]
            ),
            ["what", "kind", "of", "is"]
        );
        assert_eq!(
            words_asking("Which breed of dog was Rex?", &["Rex"]),
            ["which", "breed", "of", "was"]
        );
        // The class word of the answer, or of no name, stays.
        for (text, name) in [
            ("what genre is [Heat]", "Heat"),
            ("what kind of movie is it", "Heat"),
            ("the director of film is [Heat]", "Heat"),
            ("what films of Tom are [Heat]", "Tom"),
            ("what type of religion is [Ana]'s other half", "Ana"),
        ] {
            assert_eq!(
                words_asking(text, &[name]),
                words_outside(text, &[name]),
                "{text}"
            );
        }
    }

    #[test]
    fn single_quotes_quote_a_text_but_apostrophes_do_not() {
        fn texts(q: &str) -> Vec<&str> {
            quoted_texts(q)
                .into_iter()
                .map(|(range, text)| {
                    assert_eq!(&q[range], text);
                    text
                })
                .collect()
        }
        assert_eq!(
            texts("orders shipped after '1997-01-01' to 'Bob's Diner', says \"M\""),
            ["M", "1997-01-01", "Bob's Diner"]
        );
        assert!(texts("who is Bob's mom in the '90s").is_empty());
        assert_eq!(texts("names starting with 'C'."), ["C"]);
    }

    #[test]
    fn delimited_names_are_read_between_brackets_and_quotes() {
        fn names(q: &str) -> Vec<&str> {
            delimited_names(q)
                .into_iter()
                .map(|(range, text)| {
                    assert_eq!(&q[range], text);
                    text
                })
                .collect()
        }
        assert_eq!(names("who acted in [ Up ]"), ["Up"]);
        assert_eq!(names("did \"M\" and [$] share a director"), ["M", "$"]);
        assert_eq!(names("who directed \u{201c}If....\u{201d}"), ["If...."]);
        // Unclosed and empty delimiters name nothing.
        assert!(names("who acted in [Up").is_empty());
        assert!(names("who acted in [ ] or \"\"").is_empty());
    }

    #[test]
    fn words_split_snake_dotted_and_camel_case() {
        assert_eq!(words("directed_by"), vec!["directed", "by"]);
        assert_eq!(
            words("people.person.placeOfBirth"),
            vec!["people", "person", "place", "of", "birth"]
        );
    }

    #[test]
    fn relation_words_read_the_local_name_of_an_iri() {
        assert_eq!(relation_words("directed_by"), vec!["directed", "by"]);
        assert_eq!(relation_words("hasGenre"), vec!["has", "genre"]);
        assert_eq!(
            relation_words("http://dbpedia.org/ontology/birthPlace"),
            vec!["birth", "place"]
        );
        assert_eq!(relation_words("dbo:genre"), vec!["genre"]);
    }

    #[test]
    fn names_are_told_by_how_they_are_written() {
        assert!(writes_a_name("who directed [heat]"));
        assert!(writes_a_name(
            "which country does Francisco_RODRIGUEZ play in ?"
        ));
        assert!(writes_a_name(
            "is sviatoslav_ii_of_kiev 's dad a man or a woman ?"
        ));
        assert!(writes_a_name("who is Bob's manager"));
        assert!(!writes_a_name("Which films are about time travel?"));
        assert!(!writes_a_name("what movies did I like"));
    }

    #[test]
    fn mentions_of_written_names_are_the_entities() {
        let question = "the director of [Inkheart] was";
        assert_eq!(
            entity_mention_mask(question, &["Inkheart", "director"]),
            [true, false]
        );
        // The name is not in the graph: the plain words are no stand-in for it.
        let question = "is sviatoslav_ii_of_kiev 's dad a man or a woman ?";
        assert_eq!(
            entity_mention_mask(question, &["man", "woman"]),
            [false, false]
        );
        // No name written: the plain words are all the question has.
        assert_eq!(
            entity_mention_mask("which films are about time travel", &["time travel"]),
            [true]
        );
    }

    #[test]
    fn inflections_meet() {
        assert_eq!(stem_similarity(&stem("directed"), &stem("direct")), 1.0);
        assert!(stem_similarity(&stem("acted"), &stem("actors")) >= 0.8);
        assert_eq!(stem("wrote"), stem("written"));
        assert_eq!(stem("screenwriters"), stem("written"));
        assert_eq!(stem_similarity("filmmak", "mak"), 0.0);
        assert_eq!(stem_similarity("playwright", "wright"), 0.8);
        assert_eq!(stem_similarity("genre", "year"), 0.0);
        // A three-letter stem begins too many words: it meets a word two letters
        // longer at most ("act" an "actor"), not "come" a "composer".
        assert_eq!(stem_similarity(&stem("come"), &stem("composer")), 0.0);
        assert_eq!(stem_similarity(&stem("home"), &stem("homeland")), 0.0);
        assert!(stem_similarity(&stem("run"), &stem("runner")) >= 0.8);
    }

    #[test]
    fn part_of_a_written_name_is_not_that_name() {
        let mask = |question: &str| entity_mention_mask(question, &["arthur"]);
        assert_eq!(mask("which country does Arthur_BOKA play in"), [false]);
        assert_eq!(mask("who directed [Arthur Boka]"), [false]);
        assert_eq!(mask("who directed [Arthur]"), [true]);
        assert_eq!(mask("who directed Arthur"), [true]);
        // Written whole elsewhere in the question, it is named there.
        assert_eq!(mask("is Arthur_BOKA in Arthur"), [true]);
    }

    #[test]
    fn a_relation_ending_in_of_or_for_does_not_say_what_it_reaches() {
        for relation in [
            "plays_for",
            "http://example.org/league#captainOf",
            "member of",
            "people.person.version_of",
        ] {
            assert!(!names_what_it_reaches(relation), "{relation}");
        }
        for relation in [
            "directed_by",
            "home_stadium",
            "plays_in_club",
            "based in",
            "aviation.airline.hubs",
            "original language of film",
        ] {
            assert!(names_what_it_reaches(relation), "{relation}");
        }
    }

    #[test]
    fn a_relations_head_is_its_last_segment_and_a_compounds_last_word() {
        let heads = |relation: &str| relation_head_stems(relation);
        // A dotted id's segments before its last name the subject's domain and type.
        assert_eq!(heads("aviation.airline.hubs"), [stem("hubs")]);
        assert_eq!(
            heads("people.person.place_of_birth"),
            relation_stems("place_of_birth")
        );
        // A compound of content words ends in its head.
        assert_eq!(heads("ship_type"), [stem("type")]);
        assert_eq!(
            heads("http://example.org/league#homeStadium"),
            [stem("stadium")]
        );
        // One word, or a name with function words: every word counts.
        assert_eq!(heads("screenwriter"), [stem("screenwriter")]);
        assert_eq!(
            heads("country for sport"),
            relation_stems("country for sport")
        );
        assert_eq!(heads("directed_by"), [stem("directed")]);
        assert_eq!(heads("part of series"), relation_stems("part of series"));
        // A label of alternatives is read by its shortest, as relation_label reads it.
        assert_eq!(
            heads("position played on team / speciality"),
            [stem("speciality")]
        );
    }
}
