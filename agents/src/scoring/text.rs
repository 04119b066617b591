//! Question relevance without a model: greedy matching of relation-name tokens against
//! the question's content words. Shared by the KG-Linker's LLM-free mode, the traverser,
//! the breadth operator and the scoring retriever, so that every tool ranks the same way.
//! Words, stop words and stems come from the one text toolkit,
//! [`kgmesh_models::lexical::text`].

use std::collections::HashSet;

pub use kgmesh_models::lexical::text::{
    content_stems, entity_mention_mask, inside_a_longer, is_article, is_determiner, is_stop_word,
    marked_as_name, name_positions, names_the_class_of_a_name, names_what_it_reaches,
    participle_not_by_agent, relation_head_stems, relation_head_words, relation_label,
    relation_stems, relation_words, stem, stem_similarity, word_spans, words, writes_a_name,
    PREPOSITIONS,
};

/// Question words that ask for the answer; the content word next to one names what the
/// answer is ("which *years*", "who *directed*").
pub const WH_WORDS: &[&str] = &["what", "when", "where", "which", "who", "whom", "whose"];

/// Question words that by themselves ask for a kind of answer: "*where* is the club
/// that X plays for" asks for a place, "*when* …" for a time, "*who* …" for a person.
/// Opening a question, such a word stands for the answer's class and may name the
/// relation nearest to it by embedding, as the class word after "what"/"which" does
/// (and under the same tests: near enough, and nearer than to any other relation).
pub const ANSWER_TYPE_WORDS: &[&str] = &["when", "where", "who", "whom"];

/// Extra relevance of a relation sequence whose last relation (the one that reaches the
/// answer) matches the question's focus word.
const FOCUS_BONUS: f32 = 0.5;
/// Similarity from which a relation-name token counts as explaining a question word.
pub const CLAIM_MIN: f32 = 0.8;

/// Words by which English says that the answer shares something with the named entity
/// rather than being that something: "films with the *same* director as X", "who
/// *co*-starred with X", "who acted *together* with X", "films that *share* actors with
/// X", "the director of X *also* directed which films". In a relation chain this is a
/// round trip: a relation followed to the shared node and the same relation followed
/// back (SimGRAG's pattern `(X, r, ?v), (?answer, r, ?v)`). Grammar, not any graph's
/// vocabulary: a relation whose own name holds such a word ("shares_border_with")
/// still claims it first.
const SHARED_VALUE_WORDS: &[&str] = &[
    "also", "co", "same", "share", "shared", "shares", "sharing", "together",
];

/// Prefix of the token that stands for a whole relation (its label's embedding, see
/// [`super::relevance`]).
pub const RELATION_TOKEN: &str = "\u{2261}";

/// Prefix of a relation's word that only qualifies it ([`relation_head_stems`]) on a hop
/// walked from subject to object: it explains a question word as any of the relation's
/// words does, but not the word naming the answers' class, for it names what has the
/// relation, not what the hop reaches ("which *ships*" against `ship_type`, "which
/// *orders*" against `order_date`). Walked back, the hop reaches what has the relation,
/// and such a word may name it ("which *airlines*" over `aviation.airline.founders` from
/// a founder, "which *ships*" over `ship_type` from a type), while the words naming what
/// the relation reaches are marked instead ("which *library*" against `home_library`
/// walked back from a library to its readers).
pub const MODIFIER_TOKEN: &str = "\u{2027}";

/// A relation's stems as a hop's tokens; on a hop walked `forward` (subject to object),
/// the words that only qualify the relation marked [`MODIFIER_TOKEN`].
pub fn relation_tokens(relation: &str, forward: bool) -> Vec<String> {
    relation_tokens_holding(relation, forward, &[])
}

/// [`relation_tokens`], where the graph has shown that `holder` (stems of the
/// relation's name) call what has the relation, not what it reaches (see
/// [`of_phrase`]): on a hop walked forward they qualify it too, and on a hop walked back
/// the others do.
pub fn relation_tokens_holding(relation: &str, forward: bool, holder: &[String]) -> Vec<String> {
    let stems = relation_stems(relation);
    let heads = relation_head_stems(relation);
    if !forward {
        // Walked back, the hop reaches what has the relation: the words naming what it
        // reaches forward (a compound's head, the side of an "A of B" name that is not
        // the holder's) name the node the hop leaves, not the answers.
        let reached: Vec<&String> = if !holder.is_empty() {
            stems.iter().filter(|s| !holder.contains(s)).collect()
        } else if heads.len() < stems.len() {
            heads.iter().collect()
        } else {
            Vec::new()
        };
        return stems
            .iter()
            .map(|stem| {
                if reached.contains(&stem) {
                    format!("{MODIFIER_TOKEN}{stem}")
                } else {
                    stem.clone()
                }
            })
            .collect();
    }
    // A participle not before "by" says nothing of what the hop reaches
    // ([`participle_not_by_agent`]): "which *programs*" names no `programmed in`
    // walked forward to languages.
    let participle = participle_not_by_agent(relation);
    stems
        .into_iter()
        .map(|stem| {
            if heads.contains(&stem) && !holder.contains(&stem) && !participle {
                stem
            } else {
                format!("{MODIFIER_TOKEN}{stem}")
            }
        })
        .collect()
}

/// A relation name of the form "A of B" ("original language of film", "member of sports
/// team", "part of series"), as its two sides' words, when both hold a content word.
/// One side calls what the relation reaches and the other what has it, and the words
/// alone do not tell which ("film" has a language; a team has members): the graph's
/// names do (`kg_linker::core::holder_words`).
pub fn of_phrase(relation: &str) -> Option<(String, String)> {
    let all = words(&relation_label(relation));
    let at = all.iter().position(|w| w == "of")?;
    let (before, after) = (all[..at].join(" "), all[at + 1..].join(" "));
    (!content_stems(&before).is_empty() && !content_stems(&after).is_empty())
        .then_some((before, after))
}

/// Prefix of a token standing for a class the nodes a hop reaches are of, read from the
/// graph (`kg_linker::core::classes_held`). The noun naming the answers' class
/// ([`QuestionTerms::answers_class_head`]) is read against them: it is explained by a
/// last hop that reaches nodes of its class, as by a relation named like it ("which
/// *clubs* are from X" over `based in` walked back to clubs), and it names no relation
/// of a hop before the last where the graph says what the hops reach, nor of a hop past
/// nodes of its class (a detour from the clubs based in X through their players to the
/// players' other clubs). The tokens match no question word themselves.
pub const CLASS_TOKEN: &str = "\u{2237}";

/// A token's stem, and whether it is a relation's modifier ([`MODIFIER_TOKEN`]).
fn token_stem(token: &str) -> (&str, bool) {
    match token.strip_prefix(MODIFIER_TOKEN) {
        Some(stem) => (stem, true),
        None => (token, false),
    }
}

/// The token a hop carries when it follows the previous hop's relation back (see
/// [`SHARED_VALUE_WORDS`]); no relation name stems to it.
pub const RETURN_TOKEN: &str = "\u{21a9}";

/// The token the last hop of a sequence carries, reading by words only, when the
/// question opens with "where", the hop walks its relation forward, the words of the
/// relation's name that say what it reaches name a place by the plain English nouns of
/// [`super::answer_type::CLASS_WORDS`] (`is_in_country`, `place of birth`; not
/// `based_in` nor `placed`), and no earlier hop walks the same relation (a round trip
/// back to another place of it explains "where" no better): it explains "where", as the
/// nearest relation by meaning does with an embedder. Without
/// it, "where is the club that X plays for" could not name the hop that reaches the
/// club's country at all, and a detour through other players explaining "club" won.
pub const ASKED_KIND_TOKEN: &str = "\u{2020}";

/// Whether question word `at` of `all`, itself a [`SHARED_VALUE_WORDS`] marker, follows
/// another one, with at most a determiner between ("*share the same*", "*also
/// share*"): the two say once that the answer shares a node with the named entity. A
/// word of an entity's name (`named`) is no marker ("[Two Rode Together] *also* …").
fn continues_shared_marker(all: &[String], at: usize, named: impl Fn(usize) -> bool) -> bool {
    let marker = |back: usize| {
        at.checked_sub(back)
            .is_some_and(|i| !named(i) && SHARED_VALUE_WORDS.contains(&all[i].as_str()))
    };
    let determiner = at.checked_sub(1).is_some_and(|i| is_determiner(&all[i]));
    marker(1) || (determiner && marker(2))
}

/// Whether `word` opens a relative clause ("the club *that* …"), after its head noun.
fn opens_relative_clause(word: &str) -> bool {
    matches!(word, "that" | "whose" | "which" | "who" | "whom")
}

/// Whether question word `at` of `all` names the kind of thing asked for: it follows
/// "what" / "which" ("which *ships*", "what *sex*"), "what are the" / "which were the"
/// ("what are the *films* that …", "what were the release *dates* of …") or "how many"
/// / "how much" ("how many *captains*"), where it is the class of what is counted.
fn asks_for_kind_at(all: &[String], at: usize) -> bool {
    let before = |back: usize| at.checked_sub(back).map_or("", |i| all[i].as_str());
    matches!(before(1), "what" | "which")
        || (before(2) == "how" && matches!(before(1), "many" | "much"))
        || follows_what_are_the(all, at)
}

/// Whether word `at` of `all` follows "what are the" / "which were the" ("what are the
/// *films* that …"): the noun phrase it opens names the answers' class.
pub(crate) fn follows_what_are_the(all: &[String], at: usize) -> bool {
    let before = |back: usize| at.checked_sub(back).map_or("", |i| all[i].as_str());
    before(1) == "the"
        && matches!(before(2), "are" | "were")
        && matches!(before(3), "what" | "which")
}

/// A question's content words, ready to be matched against relation names and entity
/// names.
#[derive(Debug, Clone, Default)]
pub struct QuestionTerms {
    /// One stem per content word occurrence, in question order: "directed by the
    /// director of" keeps both, so a path may follow `directed_by` twice.
    stems: Vec<String>,
    /// The lowercased word behind each stem (what an embedder reads).
    raw: Vec<String>,
    /// Index into `stems` of the word naming the answer, if the question has one.
    focus: Option<usize>,
    /// Index into `stems` of the opening wh-word that asks for a kind of answer
    /// ([`ANSWER_TYPE_WORDS`]), if any.
    asked: Option<usize>,
    /// Per stem: the word names a class rather than a relation: the answer's when it
    /// follows "what"/"which" ("which films", "what sex"), or a named entity's when it
    /// stands in apposition before the name ("the film Heat").
    determined: Vec<bool>,
    /// Per stem: the word directly follows "what"/"which" or "how many" (the answer's
    /// class, one of the cases of `determined`).
    answers_class: Vec<bool>,
    /// Per stem: the word names the class of a node the question's other words reach
    /// by a relation: it heads a relative clause ("the *director* that directed X") or
    /// directly follows "what"/"which" ("which *screenwriter* wrote X").
    names_a_node: Vec<bool>,
    /// Per stem: the word is what a have-clause says its subject has, where a class
    /// word before it names that subject ("which *team* has a *player* from C", "a
    /// *department* that has an *employee* in Berlin"): a node one hop past the
    /// subject, so not the node a sequence's last hop reaches.
    possessed: Vec<bool>,
    /// Per stem: where its relation stands in the chain from the named entity outwards
    /// (see [`chain_order`]); `None` when the question names no single entity.
    order: Vec<Option<u16>>,
    /// Per stem: the word says the answer shares a node with the named entity
    /// ([`SHARED_VALUE_WORDS`]), so a hop that walks the previous relation back may
    /// claim it.
    shared: Vec<bool>,
    /// Per stem: the word is a link of a possessive or "of" chain ("X 's *mother* 's
    /// *heir*", "the *son* of …"): each such word is one hop of the chain, whether or
    /// not a relation's name says so.
    linked: Vec<bool>,
    /// Per stem: the word says something of the node a possessive chain names, so the
    /// answer lies beyond that node ([`predicate_words`]: "what does X's kid *do* for a
    /// *living*", "what *killed* X's father").
    predicate: Vec<bool>,
    /// The verb whose subject the asking "who" is, in a question naming one entity
    /// ("who *acted* in the films written by X"): it says how the answers relate to
    /// what the rest of the question names, so where another word names a hop it
    /// stands for a hop of its own, whether or not a relation's name says so
    /// ([`Self::sequence_fit`]).
    asker_verb: Option<usize>,
    /// Per stem: the word says what class the named entity is ("the *film* [Heat]",
    /// "what kind of *film* is [Heat]"): the node the question starts from, which no
    /// hop reaches, so no relation is claimed by it, however its name reads.
    entity_class: Vec<bool>,
    /// The first and last of the words naming the answers' class
    /// ([`Self::answer_class_phrase`]).
    class_run: Option<(usize, usize)>,
    /// See [`Self::answers_class_head`].
    class_head: Option<usize>,
    /// Per stem: the index of its word among the question's [`words`].
    positions: Vec<usize>,
}

/// What past verified plans say about the sequence being scored: `hop_word[h][i]` is the
/// learned confidence that question word `i` expresses hop `h`'s relation step, and
/// `strength[i]` word `i`'s strongest learned association with any step.
#[derive(Debug, Clone, Copy)]
pub struct LearnedCues<'a> {
    pub hop_word: &'a [Vec<f32>],
    pub strength: &'a [f32],
}

/// A question word whose strongest learned association reaches this names a relation:
/// a sequence that leaves it unexplained loses [`UNEXPLAINED_PENALTY`] times it, and the
/// embedder's guess of what the word means no longer counts
/// ([`super::relevance::Relevance`]). The plan cache's lexicon reaches it for a word
/// seen at least twice, always with the same step (2 / (2 + 2)).
pub(crate) const STRONG_CUE: f32 = 0.5;
const UNEXPLAINED_PENALTY: f32 = 0.5;
/// What a hop standing for a chain link no relation's name explains costs (a hop that
/// explains nothing costs [`UNMATCHED_PENALTY`]), and what such a link that no hop
/// stands for costs.
const WILDCARD_COST: f32 = 0.25;
/// What the word naming the answers' class adds where the graph says the answers are of
/// that class ([`CLASS_TOKEN`]): as much as a relation's word matching it exactly.
const CLASS_CREDIT: f32 = 1.0;
/// What a hop that explains no question word costs.
const UNMATCHED_PENALTY: f32 = 0.5;
/// Credit for each further question word a relation's name explains beyond the one it
/// claims (`plays_in_club` for "the *club* that X *plays* for", where
/// `plays_for_country` explains "plays" alone): a tie-breaker between sequences that
/// explain the same words otherwise.
const FURTHER_WORD_CREDIT: f32 = 0.1;
/// Credit for each pair of hops whose words stand in the question's chain order (and
/// debit for each pair in the opposite order). Applied with or without learned cues
/// since 2026-11-25 (MetaQA 3-hop dev, cold: 70.2 → 74.2 %, 2-hop 90.2 → 90.0 %).
const ORDER_BONUS: f32 = 0.25;

/// How a relation sequence reads against the question ([`QuestionTerms::sequence_fit`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SequenceFit {
    /// [`QuestionTerms::sequence_score_open`]'s score: higher is better.
    pub score: f32,
    /// Hops that explain no question word and stand for no link of a possessive or
    /// "of" chain: the sequence was chosen for what it reaches, not for what the
    /// question says.
    pub unexplained_hops: usize,
}

/// Whether `word` reads as an English plural by its ending ("books", "cities"; not
/// "class", "bus", "sex").
pub fn looks_plural(word: &str) -> bool {
    let word = word.to_lowercase();
    word.chars().count() > 3
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
}

/// Words that, right after the words naming the answers' class, say those words ended
/// with a noun ("which record label *is* …", "which drug company *did* …").
const AUXILIARIES: &[&str] = &[
    "is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "will",
    "would",
];

/// Among the question's content words (`content`: position in `all`, stem), the one
/// heading the run of words `(first, last)` that name the answers' class: the first
/// plural of the run ("which *nurses* work …", "which research *groups* are …": a
/// compound's modifiers are singular; not a plural-looking last word before a
/// preposition), else its one word, else its last where a copula or auxiliary follows
/// the run ("which record *label* is …"), else its first ("which *band* plays …": a
/// singular noun and its verb). None for an attribute ("what *types* are the films …")
/// or a verb ("what *caused* the …").
fn class_head(
    all: &[String],
    content: &[(usize, String)],
    (first, last): (usize, usize),
) -> Option<usize> {
    let after = all.get(content[last].0 + 1).map(String::as_str);
    // "what *types* are the films …": the word names an attribute of the nodes the
    // phrase after it describes, whose values are no class of the graph's.
    // "what *caused* the …": a verb, whose object follows it. A relative pronoun opens
    // no such phrase ("what are the *films* that …").
    let at = content[first].0;
    if after.is_some_and(|w| is_determiner(w) && !opens_relative_clause(w))
        || (at > 0
            && all[at - 1] == "what"
            && matches!(after, Some("is" | "are" | "was" | "were"))
            && all
                .get(content[last].0 + 2)
                .is_some_and(|w| is_determiner(w)))
    {
        return None;
    }
    // A plural is the noun unless it ends the run before another kind of word ("which
    // band *plays* at …" is a noun and its verb).
    let noun_plural = |k: usize| {
        let after_word = all.get(content[k].0 + 1).map(String::as_str);
        looks_plural(&all[content[k].0])
            && (k == first || k < last || after_word.is_none_or(|w| AUXILIARIES.contains(&w)))
    };
    // After "what are the" the run is a noun phrase, ended by its head ("what were the
    // release *dates* of …").
    if follows_what_are_the(all, at) && looks_plural(&all[content[last].0]) {
        return Some(last);
    }
    if let Some(plural) = (first..=last).find(|&k| noun_plural(k)) {
        return Some(plural);
    }
    if first == last || after.is_none_or(|w| AUXILIARIES.contains(&w)) {
        Some(last)
    } else {
        Some(first)
    }
}

/// Marks the token standing for a whole relation ([`RELATION_TOKEN`]) on a hop that walks
/// the relation from its object to its subject.
pub(crate) const AGAINST_TOKEN: char = '\u{2190}';

/// Whether two hops' tokens name the same relation, whichever way each walks it.
pub(crate) fn same_relation(a: &[String], b: &[String]) -> bool {
    let own =
        |t: &&String| *t != RETURN_TOKEN && *t != ASKED_KIND_TOKEN && !t.starts_with(CLASS_TOKEN);
    // Only a relation's token ([`RELATION_TOKEN`]) ever ends in the mark.
    a.iter()
        .filter(own)
        .map(|t| t.trim_end_matches(AGAINST_TOKEN))
        .eq(b
            .iter()
            .filter(own)
            .map(|t| t.trim_end_matches(AGAINST_TOKEN)))
}

/// Which of `all` (the question's words; the named entity at `at`, `len` words long)
/// say something of the node its possessive chain names, rather than name that node:
/// the answer is then what they reach from it, one hop past the chain. Read from the
/// clause's shape alone, in three forms: with "do" as the auxiliary before the name,
/// the words after the chain's last link are the clause's verb and what follows it
/// ("what does X 's kid *do* for a *living*", "what does X 's employer *make*"); with
/// "be", a participle after the last link and what follows it ("what is X 's kid
/// *working* on"); a single word between the opening wh-word and the name is the verb
/// whose subject the wh-word is ("what *killed* the X 's father").
fn predicate_words(all: &[String], at: usize, len: usize) -> Vec<bool> {
    let mut marks = vec![false; all.len()];
    let end = at + len;
    if all.get(end).map(String::as_str) != Some("s")
        || !all.first().is_some_and(|w| WH_WORDS.contains(&w.as_str()))
    {
        return marks;
    }
    let Some(last_s) = (end..all.len()).rev().find(|&i| all[i] == "s") else {
        return marks;
    };
    let link = (last_s + 1..all.len()).find(|&i| !is_stop_word(&all[i]));
    let before = if at > 0 && is_article(&all[at - 1]) {
        at - 1
    } else {
        at
    };
    // One word between the wh-word and the name: the verb of the wh-word.
    if before == 2 && !is_stop_word(&all[1]) {
        marks[1] = true;
    }
    let Some(link) = link else { return marks };
    let auxiliary = before.checked_sub(1).map(|i| all[i].as_str());
    let from = match auxiliary {
        Some("do" | "does" | "did") => Some(link + 1),
        Some("is" | "are" | "was" | "were") => {
            (link + 1..all.len()).find(|&i| all[i].len() > 4 && all[i].ends_with("ing"))
        }
        _ => None,
    };
    for i in from.into_iter().flat_map(|from| from..all.len()) {
        marks[i] = !is_stop_word(&all[i]);
    }
    marks
}

/// The order in which a question's words name the hops of a relation chain that starts
/// at its one named entity, from the sentence structure alone: first the words of a
/// possessive chain after the name ("X 's mother 's father"), then the words before the
/// name from the nearest outwards ("the birthplace of the father of X", "films
/// directed by X"), then any other words after it ("… X were released in which
/// years"). `all` are the question's words, `at` and `len` the name's span in it.
/// Returns one key per word (lower = nearer the entity in the chain).
pub fn chain_order(all: &[String], at: usize, len: usize) -> Vec<Option<u16>> {
    let mut order = vec![None; all.len()];
    let mut next: u16 = 0;
    // The possessive chain: `s` after the name, then words up to the next `s`.
    let mut i = at + len;
    let mut chain_end = i;
    while all.get(i).is_some_and(|w| w == "s") {
        i += 1;
        while i < all.len() && all[i] != "s" {
            order[i] = Some(next);
            next += 1;
            i += 1;
        }
        chain_end = i;
    }
    for slot in order[..at].iter_mut().rev() {
        *slot = Some(next);
        next += 1;
    }
    for slot in order.iter_mut().skip(chain_end).filter(|o| o.is_none()) {
        *slot = Some(next);
        next += 1;
    }
    for slot in &mut order[at..at + len] {
        *slot = None;
    }
    order
}

/// Similarity of a relation token (a stem) to question word `index`, beyond the lexical
/// one (e.g. from word embeddings); the higher of both counts.
pub type ExtraSimilarity<'a> = &'a dyn Fn(&str, usize) -> f32;

impl QuestionTerms {
    /// Content words of `question`, minus the words of the given entity names (words of
    /// an entity mention say nothing about which relation is asked for).
    ///
    /// A graph may hold entities named by plain words ("director", "language" as tags),
    /// so a question's relation word can also be a weak entity mention. When the
    /// question names an entity in a way that marks a name (several words, a capital
    /// letter, brackets), a one-word mention written in lower case is taken for a
    /// relation cue and its word is kept.
    pub fn new(question: &str, entity_names: &[&str]) -> Self {
        let strong: Vec<&str> = entity_names
            .iter()
            .copied()
            .filter(|name| marked_as_name(question, name))
            .collect();
        let excluded_names: &[&str] = if strong.is_empty() {
            entity_names
        } else {
            &strong
        };
        let all = words(question);
        // A name written in the question leaves out the words where it stands ("for
        // *club* [Club Brugge KV]" keeps the first "club"); a name linked from other
        // words leaves out its words wherever they stand.
        let mut excluded: HashSet<String> = HashSet::new();
        let mut inside_names: HashSet<usize> = HashSet::new();
        for name in excluded_names {
            let spans = word_spans(&all, &words(name));
            if spans.is_empty() {
                excluded.extend(content_stems(name));
            }
            inside_names.extend(spans.into_iter().flat_map(|(at, end)| at..end));
        }
        let shared_word = |w: &str| SHARED_VALUE_WORDS.contains(&w);
        let asks_a_kind = |i: usize| i == 0 && ANSWER_TYPE_WORDS.contains(&all[0].as_str());
        // (position in `all`, stem) of every content word, of every word that marks a
        // shared value (some of them are stop words elsewhere), and of an opening
        // wh-word that asks for a kind of answer. A marker that only continues the one
        // before it ("films that *share the same* director") is that one marker: one
        // node is shared, so one round trip.
        let content: Vec<(usize, String)> = all
            .iter()
            .enumerate()
            .filter(|(i, w)| {
                !(shared_word(w)
                    && continues_shared_marker(&all, *i, |j| inside_names.contains(&j)))
            })
            .filter(|(i, w)| !is_stop_word(w) || shared_word(w) || asks_a_kind(*i))
            .filter(|(i, _)| !inside_names.contains(i))
            .map(|(i, w)| (i, stem(w)))
            .filter(|(_, s)| !excluded.contains(s))
            .collect();
        let raw = content.iter().map(|(i, _)| all[*i].clone()).collect();
        // Entity names as word sequences, to find the word set in apposition before one.
        let name_words: Vec<Vec<String>> = excluded_names
            .iter()
            .map(|name| words(name))
            .filter(|w| !w.is_empty())
            .collect();
        let names_entity_at = |at: usize| {
            name_words
                .iter()
                .any(|name| all.get(at..at + name.len()) == Some(name.as_slice()))
        };
        // The chain order of each content word, when the question names one entity.
        // (A shorter name inside a longer one is the same mention.)
        let mut spans: Vec<(usize, usize)> = name_words
            .iter()
            .flat_map(|name| word_spans(&all, name))
            .map(|(at, end)| (at, end - at))
            .collect();
        spans.sort_by_key(|&(at, len)| (at, std::cmp::Reverse(len)));
        let mut covered = 0;
        spans.retain(|&(at, len)| {
            let outside = at >= covered;
            covered = covered.max(at + len);
            outside
        });
        let order = match spans.as_slice() {
            [(at, len)] => {
                let keys = chain_order(&all, *at, *len);
                content.iter().map(|&(i, _)| keys[i]).collect()
            }
            _ => vec![None; content.len()],
        };
        let predicate: Vec<bool> = match spans.as_slice() {
            [(at, len)] => {
                let marks = predicate_words(&all, *at, *len);
                content.iter().map(|&(i, _)| marks[i]).collect()
            }
            _ => vec![false; content.len()],
        };
        let answers_class: Vec<bool> = content
            .iter()
            .map(|&(i, _)| asks_a_kind(i) || asks_for_kind_at(&all, i))
            .collect();
        // With two names or more the question joins conditions ("who plays at position
        // F for country C"), and the verb is each condition's.
        let asker_verb = (spans.len() == 1
            && all.first().map(String::as_str) == Some("who")
            && all
                .get(1)
                .is_some_and(|w| !AUXILIARIES.contains(&w.as_str()) && !is_stop_word(w)))
        .then(|| content.iter().position(|&(i, _)| i == 1))
        .flatten();
        let asked = content.iter().position(|&(i, _)| asks_a_kind(i));
        // The run of words naming the answers' class: the first such word (no asking
        // wh-word) and the words right after it.
        let class_run = (0..content.len())
            .find(|&k| answers_class[k] && Some(k) != asked)
            .map(|first| {
                let mut last = first;
                while last + 1 < content.len() && content[last + 1].0 == content[last].0 + 1 {
                    last += 1;
                }
                (first, last)
            });
        let class_head = class_run.and_then(|run| class_head(&all, &content, run));
        // The answer's class word ("which *screenwriter*", not an asking wh-word) or
        // the head of a relative clause ("the *director* that …").
        let names_a_node: Vec<bool> = content
            .iter()
            .zip(&answers_class)
            .map(|(&(i, _), &class)| {
                let next = all.get(i + 1).map_or("", String::as_str);
                (class && !asks_a_kind(i)) || opens_relative_clause(next)
            })
            .collect();
        // What a have-clause says its subject has, when a class word before it names
        // that subject ("which *team* has a *player* from C", "a *club* that has a
        // *player* …").
        let after_have =
            |at: usize| at > 0 && matches!(all[at - 1].as_str(), "has" | "have" | "had" | "having");
        let possessed = content
            .iter()
            .map(|&(i, _)| {
                let had = after_have(i)
                    || (i > 0 && matches!(all[i - 1].as_str(), "a" | "an") && after_have(i - 1));
                had && !shared_word(&all[i])
                    && content
                        .iter()
                        .zip(&names_a_node)
                        .any(|(&(at, _), &node)| node && at < i)
            })
            .collect();
        let entity_class: Vec<bool> = content
            .iter()
            .map(|&(i, _)| {
                let previous = if i > 0 { all[i - 1].as_str() } else { "" };
                (is_article(previous) && names_entity_at(i + 1))
                    || names_the_class_of_a_name(&all, i, &inside_names)
            })
            .collect();
        let determined = content
            .iter()
            .map(|&(i, _)| {
                let previous = if i > 0 { all[i - 1].as_str() } else { "" };
                let next = all.get(i + 1).map_or("", String::as_str);
                let after_next = all.get(i + 2).map_or("", String::as_str);
                asks_a_kind(i)
                    || asks_for_kind_at(&all, i)
                    || (is_article(previous) && names_entity_at(i + 1))
                    // The head noun of a relative clause: "the movies *that* share
                    // actors with X", "films *whose* directors …", "the movies
                    // *written by* X".
                    || opens_relative_clause(next)
                    // A word between the article and that head noun says what kind
                    // of it: "the *football* club that X plays for".
                    || (is_article(previous)
                        && !is_stop_word(next)
                        && opens_relative_clause(after_next))
                    || (after_next == "by" && !is_stop_word(next))
                    // The class of the entity named after it: "what kind of *film* is
                    // [Heat]".
                    || names_the_class_of_a_name(&all, i, &inside_names)
            })
            .collect();
        let linked: Vec<bool> = content
            .iter()
            .map(|&(i, _)| {
                let previous = if i > 0 { all[i - 1].as_str() } else { "" };
                let next = all.get(i + 1).map_or("", String::as_str);
                (previous == "s" || next == "of") && !asks_a_kind(i)
            })
            .collect();
        // A marker inside an entity's name ("[Two Rode Together]") marks nothing.
        let shared = content
            .iter()
            .map(|&(i, _)| {
                shared_word(&all[i]) && !spans.iter().any(|&(at, len)| (at..at + len).contains(&i))
            })
            .collect();
        let focus = all
            .iter()
            .position(|w| WH_WORDS.contains(&w.as_str()))
            .and_then(|wh| {
                // The first content word after the wh-word; a wh-word at the end of the
                // question ("… starred who") points back to the word before it.
                content
                    .iter()
                    .position(|(i, _)| *i > wh)
                    .or_else(|| content.iter().rposition(|(i, _)| *i < wh))
            })
            .filter(|&index| Some(index) != asked)
            // A chain link that a predicate follows names the node the answer is
            // reached from, not the answer: the predicate's word names it.
            .map(|index| match predicate.iter().position(|&p| p) {
                Some(said) if linked.get(index).copied().unwrap_or(false) => said,
                _ => index,
            });
        Self {
            positions: content.iter().map(|(i, _)| *i).collect(),
            stems: content.into_iter().map(|(_, s)| s).collect(),
            raw,
            focus,
            asked,
            determined,
            answers_class,
            names_a_node,
            possessed,
            order,
            shared,
            linked,
            predicate,
            asker_verb,
            entity_class,
            class_run,
            class_head,
        }
    }

    pub fn stems(&self) -> &[String] {
        &self.stems
    }

    /// The lowercased question word behind each of [`Self::stems`].
    pub fn raw_words(&self) -> &[String] {
        &self.raw
    }

    /// The stem of the word naming the answer ("years" in "released in which years").
    pub fn focus(&self) -> Option<&str> {
        self.focus_index().map(|i| self.stems[i].as_str())
    }

    /// Whether question word `index` names a class: it directly follows "what" or
    /// "which" ("which films", the answer's class), stands between an article and an
    /// entity name ("the film Heat", that entity's class), or heads a relative clause
    /// ("the movies that …", "films whose …", "the movies written by …", a node of the
    /// chain). Such a word names no relation by meaning, only by its letters, except
    /// right after "what"/"which" ([`Self::names_the_answers_class`]).
    pub fn names_a_class(&self, index: usize) -> bool {
        self.determined.get(index).copied().unwrap_or(false)
    }

    /// [`Self::focus`]'s index, unless the word calls the named entity what it is ("when
    /// was the *film* X released"): then no word names the answer.
    fn focus_index(&self) -> Option<usize> {
        self.focus
            .filter(|&i| !self.entity_class.get(i).copied().unwrap_or(false))
    }

    /// The words read as naming the named entity's class ("the *film* Heat"), each with
    /// its index among [`Self::stems`].
    pub fn entity_class_words(&self) -> Vec<(usize, &str)> {
        (0..self.raw.len())
            .filter(|&i| self.entity_class.get(i).copied().unwrap_or(false))
            .map(|i| (i, self.raw[i].as_str()))
            .collect()
    }

    /// Reads word `index` as not naming the entity's class after all: the graph says
    /// the entity is of another class ("the boss of the *department* X works in", where
    /// X is a doctor and the department is what X works in).
    pub fn not_entity_class(&mut self, index: usize) {
        if let Some(flag) = self.entity_class.get_mut(index) {
            *flag = false;
        }
    }

    /// Whether question word `index` directly follows "what", "which" or "how many"
    /// ("what *sex*", "which *team*", "how many *films*") or is an opening wh-word
    /// asking for a kind of answer ("*where* is …"): the answer's class (for a count,
    /// the class of what is counted), which a relation may be named after.
    pub fn names_the_answers_class(&self, index: usize) -> bool {
        self.answers_class.get(index).copied().unwrap_or(false)
    }

    /// Whether question word `index` is the one noun naming the answers' class ("which
    /// *films*", the last of a longer class phrase: "which record *label*", "what side
    /// *effects*", where the words before it qualify it), not an asking wh-word.
    pub(crate) fn is_the_answers_class_noun(&self, index: usize) -> bool {
        self.answers_class_head() == Some(index)
    }

    /// Whether a token of a hop explains question word `index`, by its letters or by
    /// `extra_opt` (an embedding), as much as a claim needs ([`CLAIM_MIN`]).
    fn names_word(
        &self,
        tokens: &[String],
        index: usize,
        extra_opt: Option<ExtraSimilarity<'_>>,
    ) -> bool {
        tokens.iter().any(|token| {
            let extra = extra_opt.map_or(0.0, |extra| extra(token, index));
            self.token_similarity(token, index).max(extra) >= CLAIM_MIN
        })
    }

    /// How alike a hop's token and question word `index` are by their letters: an
    /// asking wh-word names a relation by meaning only (0), and a class word a relation
    /// by its head only (0 against a modifier, [`MODIFIER_TOKEN`]).
    fn token_similarity(&self, token: &str, index: usize) -> f32 {
        if token.starts_with(CLASS_TOKEN) {
            // Read apart, by `sequence_fit`.
            return 0.0;
        }
        let (stem, modifier) = token_stem(token);
        if Some(index) == self.asked || (modifier && self.is_the_answers_class_noun(index)) {
            0.0
        } else {
            stem_similarity(stem, &self.stems[index])
        }
    }

    /// Whether the question opens with "where": it asks for a place
    /// ([`ASKED_KIND_TOKEN`]).
    pub fn asks_where(&self) -> bool {
        self.asked.is_some_and(|asked| self.raw[asked] == "where")
    }

    /// Whether the question opens with "where" or "when": the wh-word and the clause's
    /// verb ask for one hop together ("where does X 's father *work*"), so the verb
    /// stands for no hop of its own.
    fn asks_adverbially(&self) -> bool {
        self.asked
            .is_some_and(|asked| matches!(self.raw[asked].as_str(), "where" | "when"))
    }

    /// Whether question word `index` is the opening wh-word that asks for a kind of
    /// answer ("*where* is …"); it names a relation by meaning only.
    pub fn asks_a_kind(&self, index: usize) -> bool {
        self.asked == Some(index)
    }

    /// Whether question word `index` says the answer shares a node with the named
    /// entity ([`SHARED_VALUE_WORDS`]).
    pub fn marks_shared_value(&self, index: usize) -> bool {
        self.shared.get(index).copied().unwrap_or(false)
    }

    pub fn is_empty(&self) -> bool {
        self.stems.is_empty()
    }

    /// The words naming the answer's class, as one phrase: the content words right
    /// after "what"/"which", up to the first other word ("which *professional football
    /// team* has …", "what *movies* can …"). Read whole by an embedder, the phrase
    /// means what its head noun means, not what its first modifier does.
    pub fn answer_class_phrase(&self) -> Option<String> {
        let (first, last) = self.class_run?;
        Some(self.raw[first..=last].join(" "))
    }

    /// The index of the noun that heads the words naming the answers' class ("which
    /// *clubs*", "which research *groups*", "which record *label* is …"), if the
    /// question names one ([`class_head`]).
    pub fn answers_class_head(&self) -> Option<usize> {
        self.class_head
    }

    /// Where question word `index` stands among the question's [`words`].
    pub fn position(&self, index: usize) -> usize {
        self.positions[index]
    }

    /// Best similarity of any word of `text` with any question word, and which question
    /// word it was; words in `used` are skipped.
    pub fn best_match(&self, text: &str, used: &[bool]) -> Option<(f32, usize)> {
        self.best_token_match(&content_stems(text), used, None)
            .map(|(score, _, index)| (score, index))
    }

    /// [`Self::best_match`] for a relation, read by its words ([`relation_stems`]: its
    /// label or local name, never the rest of an IRI).
    pub fn best_relation_match(&self, relation: &str, used: &[bool]) -> Option<(f32, usize)> {
        self.best_token_match(&relation_stems(relation), used, None)
            .map(|(score, _, index)| (score, index))
    }

    /// Like [`Self::best_match`] over pre-computed stems; also says which token matched.
    fn best_token_match(
        &self,
        tokens: &[String],
        used: &[bool],
        extra_opt: Option<ExtraSimilarity<'_>>,
    ) -> Option<(f32, usize, usize)> {
        let mut best: Option<(f32, usize, usize)> = None;
        for (token_index, token) in tokens.iter().enumerate() {
            for index in 0..self.stems.len() {
                if used.get(index).copied().unwrap_or(false) {
                    continue;
                }
                let similarity = if token == RETURN_TOKEN {
                    if self.marks_shared_value(index) {
                        1.0
                    } else {
                        0.0
                    }
                } else if token == ASKED_KIND_TOKEN {
                    if Some(index) == self.asked {
                        1.0
                    } else {
                        0.0
                    }
                } else {
                    let lexical = self.token_similarity(token, index);
                    match extra_opt {
                        Some(extra) if !self.marks_shared_value(index) => {
                            lexical.max(extra(token, index))
                        }
                        _ => lexical,
                    }
                };
                // Among words as alike, the one nearest the entity in the question's
                // chain ([`chain_order`]): hops are matched from the entity outwards,
                // so of two `children` hops for "the *kid* of X's *offspring*" the
                // first takes "offspring".
                let chain_key = |i: usize| self.order.get(i).copied().flatten().unwrap_or(u16::MAX);
                let nearer = |other: usize| chain_key(index) < chain_key(other);
                if similarity > 0.0
                    && best.is_none_or(|(score, _, other)| {
                        similarity > score || (similarity == score && nearer(other))
                    })
                {
                    best = Some((similarity, token_index, index));
                }
            }
        }
        best
    }

    /// Relevance of a single text (relation or entity name) to the question, in `[0, 1]`.
    pub fn text_score(&self, text: &str) -> f32 {
        self.best_match(text, &[]).map(|(s, _)| s).unwrap_or(0.0)
    }

    /// Relevance of a relation sequence (in path order, the last relation reaching the
    /// answer). Each relation claims the best question word not yet claimed, and each
    /// further token of its name one more word it explains (so `release_year` takes both
    /// "released" and "years", and a second `release_year` finds nothing left);
    /// relations that match nothing cost a penalty, so that paths no longer than the
    /// question asks for rank first. A last relation that matches the question's focus
    /// word earns a bonus: "films that share directors with X were released in which
    /// years" ends in `release_year`, not in `directed_by`.
    pub fn sequence_score<'a>(&self, relations: impl IntoIterator<Item = &'a str>) -> f32 {
        let relations: Vec<Vec<String>> = relations.into_iter().map(content_stems).collect();
        self.sequence_score_stems(&relations)
    }

    /// [`Self::sequence_score`] over each relation's [`content_stems`], computed once by a
    /// caller that scores many sequences over few relations.
    pub fn sequence_score_stems(&self, relations: &[Vec<String>]) -> f32 {
        self.sequence_score_with(relations, None)
    }

    /// [`Self::sequence_score_stems`] with a further similarity of relation tokens to
    /// question words (synonyms a stemmer cannot see: "types" and `has_genre`).
    pub fn sequence_score_with(
        &self,
        relations: &[Vec<String>],
        extra_opt: Option<ExtraSimilarity<'_>>,
    ) -> f32 {
        self.sequence_score_learned(relations, extra_opt, None)
    }

    /// [`Self::sequence_score_with`] plus what past verified plans taught (the plan
    /// cache's lexicon): a hop may claim a question word its relation step was learned
    /// with, as it claims a word its name matches; a word the lexicon strongly ties to
    /// some relation but no hop explains costs a penalty (the question asks for a hop
    /// the sequence lacks). With or without the lexicon, hops whose words follow the
    /// question's chain order ("X 's mother 's father": `parent` then `parent`, "the
    /// kid of X 's darling": the spouse first, "the languages of the films whose actors
    /// …": `starred_actors` before `in_language`) earn a bonus.
    pub fn sequence_score_learned(
        &self,
        relations: &[Vec<String>],
        extra_opt: Option<ExtraSimilarity<'_>>,
        learned_opt: Option<LearnedCues<'_>>,
    ) -> f32 {
        self.sequence_score_open(relations, extra_opt, learned_opt, None)
    }

    /// [`Self::sequence_score_learned`], where `unknown[i]` says that no relation of
    /// the graph explains question word `i` (by its letters, an embedding or a learned
    /// cue): such a word that is a link of a possessive or "of" chain ("X 's mother 's
    /// *heir* 's child", "the *son* of mom of X") is still one hop of the chain, and a
    /// hop that explains nothing may stand for it.
    pub fn sequence_score_open(
        &self,
        relations: &[Vec<String>],
        extra_opt: Option<ExtraSimilarity<'_>>,
        learned_opt: Option<LearnedCues<'_>>,
        unknown: Option<&[bool]>,
    ) -> f32 {
        self.sequence_fit(relations, extra_opt, learned_opt, unknown, None)
            .score
    }

    /// [`Self::sequence_score_open`], and how many of the sequence's hops no question
    /// word explains. Where `first_hop_forward` says which way the first hop leaves
    /// the named entity, a word naming the entity's class ("the *screenwriter* X") may
    /// be claimed only by a first hop walked back from it: the entity is then what the
    /// relation reaches, and relations are named by what they reach (`screenwriter`
    /// from a film). Walked forward, the entity has the relation, and the words of
    /// its name that call the entity what it is say nothing of the hop ("the *film*
    /// X" against `original language of film`); nor does any later hop reach it.
    pub fn sequence_fit(
        &self,
        relations: &[Vec<String>],
        extra_opt: Option<ExtraSimilarity<'_>>,
        learned_opt: Option<LearnedCues<'_>>,
        unknown: Option<&[bool]>,
        first_hop_forward: Option<bool>,
    ) -> SequenceFit {
        let mut used = vec![false; self.stems.len()];
        let mut claimed: Vec<Option<usize>> = vec![None; relations.len()];
        let mut explained = vec![false; relations.len()];
        let mut total = 0.0;
        // What the graph says the nodes each hop reaches are called ([`CLASS_TOKEN`]s):
        // whether they are what the word naming the answers' class calls them, `None`
        // where it says nothing. That word names no relation of a hop past nodes that
        // are: "which research *groups* are based in X" is not asking for the members
        // of the groups based in X, over `member of group`.
        let class_head = self.answers_class_head();
        let of_class: Vec<Option<bool>> = relations
            .iter()
            .map(|tokens| {
                let head = class_head?;
                let mut classes = tokens
                    .iter()
                    .filter_map(|t| t.strip_prefix(CLASS_TOKEN))
                    .peekable();
                classes.peek()?;
                Some(classes.any(|class| stem_similarity(class, &self.stems[head]) >= CLAIM_MIN))
            })
            .collect();
        let classes_known = of_class.iter().any(Option::is_some);
        // A class word naming a node and the words of the relation that reaches it
        // speak of one hop: "who is the director that directed X" and "which
        // screenwriter wrote X" ask for X's director and writer. A relation the
        // sequence walks more than once may not claim such a class word, or "director"
        // and "directed" would each claim a `directed_by` hop of a round trip to the
        // director's other films. Nor may the last hop claim what a have-clause says
        // the answer has: "which team has a *player* from C" asks for the players'
        // teams, one hop past the players.
        for (hop, tokens) in relations.iter().enumerate() {
            let last_hop = hop + 1 == relations.len();
            // The answers are of the class the question names: the word is explained as
            // a relation's name explains one, before the hop claims a word of its own.
            // The hop is explained by it only where its relation is named like it too
            // (`genre` reaching genres for "which *genres*"), not where it merely
            // reaches nodes of that class.
            // A walk past nodes of the class earns nothing for reaching more of them,
            // and a relation walked twice is not named by the class word (see below).
            let repeated = relations
                .iter()
                .enumerate()
                .any(|(other, same)| other != hop && same_relation(same, tokens));
            // A hop walking the previous one back returns to nodes of the kind the walk
            // left, and the word naming the answers' class is not its to claim: "which
            // films did X direct" is not a walk from X's films to their language and
            // back to every film in it, whose way back, `original language of film`,
            // reaches films. A relation word it may still claim ("the films written by
            // the screenwriter of X").
            let returns = tokens.iter().any(|t| t == RETURN_TOKEN);
            let past_class = of_class[..hop].contains(&Some(true));
            let mut named_by_class = false;
            if let Some(head) = class_head.filter(|&head| {
                last_hop && of_class[hop] == Some(true) && !past_class && !used[head]
            }) {
                named_by_class = !repeated && self.names_word(tokens, head, extra_opt);
                used[head] = true;
                total += CLASS_CREDIT;
                if named_by_class {
                    explained[hop] = true;
                    claimed[hop] = Some(head);
                }
            }
            let blocks_class = first_hop_forward.is_some_and(|forward| hop > 0 || forward);
            // Nor does it name a hop before the last where the graph says what they reach.
            let blocks_head = past_class || (classes_known && !last_hop);
            let unclaimable = |used: &[bool]| -> Vec<bool> {
                used.iter()
                    .enumerate()
                    .map(|(i, &used)| {
                        used || (blocks_class && self.entity_class.get(i).copied().unwrap_or(false))
                            || ((blocks_head || returns) && Some(i) == class_head)
                    })
                    .collect()
            };
            let lexical = if repeated || (last_hop && self.possessed.iter().any(|&p| p)) {
                let unclaimable: Vec<bool> = unclaimable(&used)
                    .into_iter()
                    .zip(&self.names_a_node)
                    .zip(&self.possessed)
                    .map(|((used, class), possessed)| {
                        used || (repeated && *class) || (last_hop && *possessed)
                    })
                    .collect();
                self.best_token_match(tokens, &unclaimable, extra_opt)
            } else {
                self.best_token_match(tokens, &unclaimable(&used), extra_opt)
            };
            let cued = learned_opt.and_then(|learned| {
                let row = learned.hop_word.get(hop)?;
                let blocked = unclaimable(&used);
                row.iter()
                    .enumerate()
                    .filter(|&(index, &weight)| {
                        weight > 0.0 && !blocked.get(index).copied().unwrap_or(false)
                    })
                    .max_by(|a, b| a.1.total_cmp(b.1).then(b.0.cmp(&a.0)))
                    .map(|(index, &weight)| (weight, index))
            });
            // The learned word wins only where it beats the name's own match.
            let best = match (lexical, cued) {
                (Some((score, _, _)), Some((weight, index))) if weight > score => {
                    Some((weight, None, index))
                }
                (Some((score, token_index, index)), _) => Some((score, Some(token_index), index)),
                (None, Some((weight, index))) => Some((weight, None, index)),
                (None, None) => None,
            };
            match best {
                Some((score, token_index, index)) => {
                    used[index] = true;
                    if !named_by_class {
                        claimed[hop] = Some(index);
                    }
                    total += score;
                    if score >= 0.5 {
                        explained[hop] = true;
                    } else if !named_by_class {
                        total -= UNMATCHED_PENALTY;
                    }
                    let claimed_at = self.positions[index];
                    for (other, token) in tokens.iter().enumerate() {
                        if Some(other) == token_index {
                            continue;
                        }
                        // The token standing for the whole relation explains no other
                        // link of a possessive or "of" chain than the one the hop
                        // claimed: "the *kid* of X's *children*" are two `children`
                        // hops, "the *release date* of X" one `release_year` hop.
                        let blocked = unclaimable(&used);
                        let free: Vec<bool> = if token.starts_with(RELATION_TOKEN) {
                            (0..used.len())
                                .map(|i| {
                                    blocked[i]
                                        || (self.linked[i]
                                            && self.positions[i].abs_diff(claimed_at) != 1)
                                })
                                .collect()
                        } else {
                            blocked
                        };
                        if let Some((similarity, _, index)) =
                            self.best_token_match(std::slice::from_ref(token), &free, extra_opt)
                        {
                            if similarity >= CLAIM_MIN {
                                used[index] = true;
                                total += FURTHER_WORD_CREDIT;
                            }
                        }
                    }
                }
                None if named_by_class => {}
                None => total -= UNMATCHED_PENALTY,
            }
        }
        // A hop no word explains stands for a chain link no relation of the graph
        // explains ("X 's mother 's *heir* 's child": `parents`, some relation,
        // `children`): the links left over go to such hops in chain order, at a smaller
        // cost than a hop that stands for nothing. Without this the chain's length is
        // lost with its unknown word, and the shorter sequence wins. A word some
        // relation explains ("X 's father 's *cause* of death") is never such a link:
        // a sequence that leaves it unexplained lacks that relation.
        // Outside such chains, where words already name two hops or more ("who *acted*
        // in the movies directed by the director of X"), a word no relation explains
        // stands for a hop the same way, unless it sits beside a word that names a hop:
        // it qualifies that word then ("play *professional* in", "film *co*-writers").
        // So does the verb of an asking "who" where a word names one hop ("who *acted*
        // in the movies written by X"); where none does, the verb is all the question
        // says of the one relation ("who *runs* X"), and no hop is explained.
        let named_chain = explained.iter().filter(|e| **e).count() >= 2;
        let named_hop = explained.contains(&true);
        let beside_named =
            |i: usize| (i > 0 && used[i - 1]) || used.get(i + 1).copied().unwrap_or(false);
        let mut open: Vec<usize> = (0..self.stems.len())
            .filter(|&i| {
                !used[i]
                    && unknown.is_some_and(|unknown| unknown.get(i).copied().unwrap_or(false))
                    && (self.linked.get(i).copied().unwrap_or(false)
                        || (self.predicate.get(i).copied().unwrap_or(false)
                            && !self.asks_adverbially())
                        || ((named_chain || (named_hop && self.asker_verb == Some(i)))
                            && !beside_named(i)))
                    && !self.names_a_class(i)
                    && !self.marks_shared_value(i)
            })
            .collect();
        open.sort_by_key(|&i| (self.order.get(i).copied().flatten(), i));
        let mut open = open.into_iter();
        // A hop walking the previous one back returns to where the chain was: it
        // stands for no link ("the *type* of religion of X": not the religion's other
        // believers).
        for ((slot, _), explained) in claimed
            .iter_mut()
            .zip(relations)
            .zip(explained.iter_mut())
            .filter(|((slot, tokens), _)| {
                slot.is_none() && !tokens.iter().any(|t| t == RETURN_TOKEN)
            })
        {
            let Some(word) = open.next() else { break };
            *slot = Some(word);
            *explained = true;
            used[word] = true;
            total += UNMATCHED_PENALTY - WILDCARD_COST;
        }
        // A link no hop stands for costs as much: the sequence is a hop short ("the
        // *son* of mom of X" is not answered by the mother).
        total -= WILDCARD_COST * open.count() as f32;
        if let Some(last) = relations.last() {
            // The word naming the answer, or the wh-word asking for its kind.
            let reaches = |focus_index: usize| {
                let learned_focus = learned_opt
                    .and_then(|learned| learned.hop_word.get(relations.len() - 1))
                    .and_then(|row| row.get(focus_index))
                    .is_some_and(|&weight| weight >= STRONG_CUE);
                // What the graph calls the answers is the word naming them.
                let of_its_class =
                    Some(focus_index) == class_head && of_class.last() == Some(&Some(true));
                learned_focus || of_its_class || self.names_word(last, focus_index, extra_opt)
            };
            if self
                .focus_index()
                .into_iter()
                .chain(self.asked)
                .any(reaches)
            {
                total += FOCUS_BONUS;
            }
        }
        if let Some(learned) = learned_opt {
            for (index, &strength) in learned.strength.iter().enumerate() {
                if strength >= STRONG_CUE && !used.get(index).copied().unwrap_or(true) {
                    total -= UNEXPLAINED_PENALTY * strength;
                }
            }
        }
        {
            let keys: Vec<u16> = claimed
                .iter()
                .filter_map(|index| index.and_then(|i| self.order.get(i).copied().flatten()))
                .collect();
            if keys.len() == claimed.len() {
                for (a, first) in keys.iter().enumerate() {
                    for second in &keys[a + 1..] {
                        total += if first < second {
                            ORDER_BONUS
                        } else {
                            -ORDER_BONUS
                        };
                    }
                }
            }
        }
        SequenceFit {
            score: total,
            unexplained_hops: explained.iter().filter(|e| !**e).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals_read_by_their_ending() {
        for word in ["books", "Cities", "albums", "releases"] {
            assert!(looks_plural(word), "{word}");
        }
        for word in ["sex", "faith", "class", "bus", "status", "gas"] {
            assert!(!looks_plural(word), "{word}");
        }
    }

    #[test]
    fn chain_order_reads_possessives_first_then_outwards_from_the_name() {
        let keys = |question: &str, at: usize, len: usize| -> Vec<(String, u16)> {
            let all = words(question);
            chain_order(&all, at, len)
                .into_iter()
                .zip(&all)
                .filter(|(_, w)| !is_stop_word(w))
                .filter_map(|(key, w)| key.map(|k| (w.clone(), k)))
                .collect()
        };
        let ranked = |pairs: Vec<(String, u16)>| {
            let mut pairs = pairs;
            pairs.sort_by_key(|(_, k)| *k);
            pairs.into_iter().map(|(w, _)| w).collect::<Vec<_>>()
        };
        // "the kid of X 's mom 's darling": mom, darling, then kid.
        assert_eq!(
            ranked(keys("the kid of ada 's mom 's darling", 3, 1)),
            ["mom", "darling", "kid"]
        );
        // A relative clause: the words before the name from the nearest outwards, then
        // the words after it.
        assert_eq!(
            ranked(keys(
                "the films acted by Sharon Tate were released in which years",
                4,
                2
            )),
            ["acted", "films", "released", "years"]
        );
        // The name's own words get no key.
        assert!(keys("who directed Heat", 2, 1)
            .iter()
            .all(|(w, _)| w != "heat"));
    }

    #[test]
    fn a_lower_case_word_beside_a_named_entity_stays_a_relation_cue() {
        let terms = QuestionTerms::new("the director of [Inkheart] was", &["Inkheart", "director"]);
        assert_eq!(terms.stems(), &[stem("director")]);
        // Alone, the same mention is the entity the question is about.
        let terms = QuestionTerms::new("which films are about director", &["director"]);
        assert_eq!(terms.stems(), &[stem("films")]);
    }

    #[test]
    fn a_word_outside_a_written_name_counts_though_the_name_holds_it() {
        let terms = QuestionTerms::new(
            "who plays at position Goalkeeper for club Club_Brugge_KV",
            &["Goalkeeper", "Club_Brugge_KV"],
        );
        // The opening "who" asks for a kind of answer and is kept too.
        assert_eq!(
            terms.stems(),
            &[stem("who"), stem("plays"), stem("position"), stem("club")]
        );
        assert!(terms.asks_a_kind(0));
    }

    #[test]
    fn entity_words_do_not_count() {
        let terms = QuestionTerms::new("what movies did [The Director] direct", &["The Director"]);
        assert_eq!(terms.stems(), &[stem("movies"), stem("direct")]);
    }

    #[test]
    fn the_sequence_the_question_describes_ranks_first() {
        let terms = QuestionTerms::new(
            "what are the languages spoken in the films directed by Joel Zwick",
            &["Joel Zwick"],
        );
        let right = terms.sequence_score(["directed_by", "in_language"]);
        let one_hop = terms.sequence_score(["directed_by"]);
        let repeated = terms.sequence_score(["directed_by", "directed_by"]);
        let unrelated = terms.sequence_score(["starred_actors", "has_genre"]);
        assert!(right > one_hop, "{right} vs {one_hop}");
        assert!(one_hop > repeated, "{one_hop} vs {repeated}");
        assert!(repeated > unrelated, "{repeated} vs {unrelated}");
    }

    /// Stems of each relation, the return token on the hops that walk back.
    fn hops(relations: &[(&str, bool)]) -> Vec<Vec<String>> {
        relations
            .iter()
            .map(|&(relation, back)| {
                let mut tokens = content_stems(relation);
                if back {
                    tokens.push(RETURN_TOKEN.to_owned());
                }
                tokens
            })
            .collect()
    }

    #[test]
    fn a_shared_value_is_a_round_trip_unless_a_relation_names_the_word() {
        let round_trip = hops(&[("directed_by", false), ("directed_by", true)]);
        let one_hop = hops(&[("directed_by", false)]);
        for question in [
            "which films have the same director as Heat",
            "who co-directed films with Michael Mann",
            "the director of Heat also directed which films",
        ] {
            let terms = QuestionTerms::new(question, &["Heat", "Michael Mann"]);
            let (trip, one) = (
                terms.sequence_score_stems(&round_trip),
                terms.sequence_score_stems(&one_hop),
            );
            assert!(trip > one, "{question}: {trip} vs {one}");
        }
        // Without a marker, walking back explains nothing.
        let terms = QuestionTerms::new("who directed Heat", &["Heat"]);
        assert!(terms.sequence_score_stems(&one_hop) > terms.sequence_score_stems(&round_trip));
        // A marker inside the entity's name marks nothing.
        let terms = QuestionTerms::new("who directed Two Rode Together", &["Two Rode Together"]);
        assert!(terms.sequence_score_stems(&one_hop) > terms.sequence_score_stems(&round_trip));
        // A relation named by the word claims it first: the neighbours, not theirs.
        let terms = QuestionTerms::new("which countries share a border with France", &["France"]);
        let border = |back| hops(&[("shares_border_with", false), ("shares_border_with", back)]);
        let one = terms.sequence_score_stems(&hops(&[("shares_border_with", false)]));
        assert!(one > terms.sequence_score_stems(&border(true)));
    }

    #[test]
    fn the_named_entitys_class_word_names_only_a_relation_that_reaches_the_entity() {
        let fit = |terms: &QuestionTerms, relations: &[(&str, bool)]| {
            let stems: Vec<Vec<String>> = relations
                .iter()
                .map(|&(relation, forward)| relation_tokens(relation, forward))
                .collect();
            let first_forward = relations.first().map(|&(_, forward)| forward);
            terms
                .sequence_fit(&stems, None, None, None, first_forward)
                .score
        };
        // "film" calls Heat what it is; leaving Heat forward over a relation whose
        // name holds "film" is not what the question asks.
        let terms = QuestionTerms::new("when was the film Heat released", &["Heat"]);
        let released = fit(&terms, &[("publication_date_of_release", true)]);
        let language = fit(&terms, &[("original_language_of_film", true)]);
        assert!(released > language, "{released} vs {language}");
        // Without directions (the old reading) the class word claims the relation.
        let stems = |r: &str| vec![relation_tokens(r, true)];
        assert!(
            terms
                .sequence_fit(&stems("original_language_of_film"), None, None, None, None)
                .score
                > language
        );
        // Walked back to the entity, the relation reaches it: "the screenwriter X" is
        // X as the films' `screenwriter`, so the class word explains that hop.
        let terms = QuestionTerms::new(
            "who are the actors of the screenwriter Don MacPherson",
            &["Don MacPherson"],
        );
        let through_films = fit(&terms, &[("screenwriter", false), ("cast_member", true)]);
        let other_way = fit(&terms, &[("screenwriter", true), ("cast_member", true)]);
        assert!(through_films > other_way, "{through_films} vs {other_way}");
        // No hop after the first reaches the entity.
        let terms = QuestionTerms::new("what language is the film Heat in", &["Heat"]);
        let one = fit(&terms, &[("original_language_of_film", true)]);
        let back_and_forth = fit(
            &terms,
            &[
                ("director", true),
                ("director", false),
                ("original_language_of_film", true),
            ],
        );
        assert!(one > back_and_forth, "{one} vs {back_and_forth}");
    }

    #[test]
    fn walking_back_claims_no_class_word() {
        // Leaving X's films forward over `original language of film` and walking it back
        // reaches films again; "films" names what has the relation (the graph's names
        // tell, `holder`), so the way back would explain it.
        let holder = vec!["film".to_owned()];
        let mut back = relation_tokens_holding("original language of film", false, &holder);
        back.push(RETURN_TOKEN.to_owned());
        let detour = vec![
            relation_tokens("director", false),
            relation_tokens_holding("original language of film", true, &holder),
            back,
        ];
        let direct = vec![relation_tokens("director", false)];
        let terms = QuestionTerms::new(
            "which films did Theo Angelopoulos direct",
            &["Theo Angelopoulos"],
        );
        let fit = |stems: &[Vec<String>]| {
            terms
                .sequence_fit(stems, None, None, None, Some(false))
                .score
        };
        assert!(
            fit(&direct) > fit(&detour),
            "{} vs {}",
            fit(&direct),
            fit(&detour)
        );
    }

    #[test]
    fn markers_written_together_are_one_round_trip() {
        let round_trip = hops(&[("directed_by", false), ("directed_by", true)]);
        // Back to the films, then out again to their other directors.
        let there_and_back_twice = hops(&[
            ("directed_by", false),
            ("directed_by", true),
            ("directed_by", true),
        ]);
        for question in [
            "which films share the same director of Heat",
            "the director of Heat also shares directing which films",
        ] {
            let terms = QuestionTerms::new(question, &["Heat"]);
            let shared = (0..terms.stems().len())
                .filter(|&i| terms.marks_shared_value(i))
                .count();
            assert_eq!(shared, 1, "{question}: {:?}", terms.raw_words());
            let (trip, twice) = (
                terms.sequence_score_stems(&round_trip),
                terms.sequence_score_stems(&there_and_back_twice),
            );
            assert!(trip > twice, "{question}: {trip} vs {twice}");
        }
        // Markers apart are two: "the same director as the films X also starred in".
        let terms = QuestionTerms::new(
            "which films have the same director as the films Pacino also starred in",
            &["Pacino"],
        );
        let shared = (0..terms.stems().len())
            .filter(|&i| terms.marks_shared_value(i))
            .count();
        assert_eq!(shared, 2);
        // A marker ending the entity's name does not make the next word part of it.
        let terms = QuestionTerms::new(
            "the director of Two Rode Together also directed which films",
            &["Two Rode Together"],
        );
        assert!(terms.raw_words().iter().any(|w| w == "also"));
    }

    #[test]
    fn a_fit_counts_the_hops_no_question_word_explains() {
        let terms = QuestionTerms::new("who directed the films written by Nolan", &["Nolan"]);
        let fit = |relations: &[&str]| {
            let relations: Vec<Vec<String>> = relations.iter().map(|r| content_stems(r)).collect();
            terms.sequence_fit(&relations, None, None, None, None)
        };
        assert_eq!(fit(&["written_by", "directed_by"]).unexplained_hops, 0);
        assert_eq!(fit(&["written_by", "has_genre"]).unexplained_hops, 1);
        let guess = fit(&["has_genre"]);
        assert_eq!(guess.unexplained_hops, 1);
        // The score is the one `sequence_score_open` gives.
        let relations = vec![content_stems("has_genre")];
        assert_eq!(
            guess.score,
            terms.sequence_score_open(&relations, None, None, None)
        );
        // A chain link no relation explains, which a hop stands for, is explained by
        // the chain: "X 's child 's *heir*" is two hops whatever the heir is.
        let terms = QuestionTerms::new("who is ada 's child 's heir", &["ada"]);
        let relations = vec![content_stems("children"), content_stems("spouse")];
        let unknown: Vec<bool> = terms.stems().iter().map(|s| *s == stem("heir")).collect();
        let fit = terms.sequence_fit(&relations, None, None, Some(&unknown), None);
        assert_eq!(fit.unexplained_hops, 0, "{fit:?}");
        assert_eq!(
            terms
                .sequence_fit(&relations, None, None, None, None)
                .unexplained_hops,
            1
        );
    }

    #[test]
    fn a_class_word_is_one_hop_with_the_relation_that_reaches_it() {
        // "director" heads the clause "that directed Heat": X's director, not a round
        // trip (or a detour) on which the two words each claim a `directed_by` hop.
        let terms = QuestionTerms::new("who is the director that directed Heat", &["Heat"]);
        let score = |relations: &[(&str, bool)]| terms.sequence_score_stems(&hops(relations));
        let one_hop = score(&[("directed_by", false)]);
        let round_trip = score(&[("directed_by", false), ("directed_by", true)]);
        let detour = score(&[
            ("directed_by", false),
            ("written_by", false),
            ("directed_by", false),
        ]);
        assert!(one_hop > round_trip, "{one_hop} vs {round_trip}");
        assert!(one_hop > detour, "{one_hop} vs {detour}");
        // The same for the class word after "which".
        let terms = QuestionTerms::new("which screenwriter wrote the script for Heat", &["Heat"]);
        let one_hop = terms.sequence_score_stems(&hops(&[("written_by", false)]));
        let round_trip =
            terms.sequence_score_stems(&hops(&[("written_by", false), ("written_by", true)]));
        assert!(one_hop > round_trip, "{one_hop} vs {round_trip}");
        // Where the head's relation is walked once, the head claims it as before: the
        // club of "a soccer club that has a player from Spain" is one more hop.
        let terms = QuestionTerms::new(
            "name a soccer club that has a player from Spain",
            &["Spain"],
        );
        let two_hops = terms.sequence_score(["plays_for_country", "plays_in_club"]);
        let players = terms.sequence_score(["plays_for_country"]);
        assert!(two_hops > players, "{two_hops} vs {players}");
    }

    #[test]
    fn the_answers_class_is_read_as_one_phrase() {
        let class = |question: &str, name: &str| {
            QuestionTerms::new(question, &[name]).answer_class_phrase()
        };
        assert_eq!(
            class(
                "which professional football team has a player from Spain",
                "Spain"
            )
            .as_deref(),
            Some("professional football team")
        );
        assert_eq!(
            class("what movies can be described by [noir]", "noir").as_deref(),
            Some("movies")
        );
        // A name ends the phrase; an asking wh-word is no class.
        assert_eq!(
            class("which films Tom Hanks starred in", "Tom Hanks").as_deref(),
            Some("films")
        );
        assert_eq!(class("who directed Heat", "Heat"), None);
        assert_eq!(class("where is Heat set", "Heat"), None);
        // What a count counts is the class of the answers it counts.
        assert_eq!(
            class("how many books did Marta Okonkwo write", "Marta Okonkwo").as_deref(),
            Some("books")
        );
        assert_eq!(
            class("how many did Marta Okonkwo write", "Marta Okonkwo"),
            None
        );
    }

    #[test]
    fn the_noun_heading_the_answers_class_is_its_first_plural_or_its_last_before_a_verb() {
        let head = |question: &str, name: &str| {
            let terms = QuestionTerms::new(question, &[name]);
            terms
                .answers_class_head()
                .map(|i| terms.raw_words()[i].clone())
        };
        let cases = [
            (
                "which nurses work in Valley Cardiology",
                "Valley Cardiology",
                Some("nurses"),
            ),
            (
                "which research groups are based in Marlowe Tower",
                "Marlowe Tower",
                Some("groups"),
            ),
            (
                "which record label is Ada Quennell behind",
                "Ada Quennell",
                Some("label"),
            ),
            ("which band plays at the Old Mill", "Old Mill", Some("band")),
            (
                "which films did Michael Mann direct",
                "Michael Mann",
                Some("films"),
            ),
            (
                "how many books did Marta Okonkwo write",
                "Marta Okonkwo",
                Some("books"),
            ),
            // "what are the X": the plural after the copula and article, heading a
            // relative clause too.
            (
                "what are the films that have the same actor of The Tin Star",
                "The Tin Star",
                Some("films"),
            ),
            (
                "what were the release dates of the films directed by Michael Mann",
                "Michael Mann",
                Some("dates"),
            ),
            // An attribute of the nodes after it, and an asking wh-word: no class.
            (
                "what types are the films directed by Michael Mann",
                "Michael Mann",
                None,
            ),
            ("who directed Heat", "Heat", None),
            ("what caused the death of Ada Lind", "Ada Lind", None),
        ];
        for (question, name, expected) in cases {
            assert_eq!(head(question, name).as_deref(), expected, "{question}");
        }
    }

    #[test]
    fn a_relations_head_walked_back_names_the_node_left_not_the_answers() {
        // `home_library` is had by readers and reaches a library: walked back from
        // the library it reaches readers, which "which library" does not ask for.
        let back = relation_tokens("home_library", false);
        assert!(
            back.contains(&format!("{MODIFIER_TOKEN}{}", stem("library"))),
            "{back:?}"
        );
        assert!(relation_tokens("home_library", true).contains(&stem("library")));
        let terms = QuestionTerms::new("which library is in Port Kell", &["Port Kell"]);
        let score = |relations: &[(&str, bool)]| {
            let tokens: Vec<Vec<String>> = relations
                .iter()
                .map(|&(relation, forward)| relation_tokens(relation, forward))
                .collect();
            terms.sequence_fit(&tokens, None, None, None, None).score
        };
        let located = score(&[("located_in", false)]);
        let readers = score(&[("located_in", false), ("home_library", false)]);
        assert!(located > readers, "{located} vs {readers}");
        // Walked forward it reaches a library, and the word names it.
        let terms = QuestionTerms::new("which library does Marta use", &["Marta"]);
        let tokens = vec![relation_tokens("home_library", true)];
        assert!(
            terms
                .sequence_fit(&tokens, None, None, None, None)
                .unexplained_hops
                == 0
        );
    }

    #[test]
    fn the_class_of_what_a_hop_reaches_explains_the_class_word_once() {
        let terms = QuestionTerms::new("Which clubs are from Tessport?", &["Tessport"]);
        let with = |relations: &[(&str, bool, &[&str])]| -> f32 {
            let tokens: Vec<Vec<String>> = relations
                .iter()
                .map(|&(relation, forward, classes)| {
                    let mut tokens = relation_tokens(relation, forward);
                    tokens.extend(classes.iter().map(|c| format!("{CLASS_TOKEN}{}", stem(c))));
                    tokens
                })
                .collect();
            terms.sequence_fit(&tokens, None, None, None, None).score
        };
        let club: &[&str] = &["club"];
        let player: &[&str] = &["captain"];
        // The clubs based in Tessport, against a detour through their players to the
        // players' other clubs, on which "clubs" names the last hop.
        let based = with(&[("based_in", false, club)]);
        let detour = with(&[
            ("based_in", false, club),
            ("former_club", false, player),
            ("current_club", true, club),
        ]);
        assert!(based > detour, "{based} vs {detour}");
        // Without what the graph says of the nodes reached, the detour wins.
        let based = with(&[("based_in", false, &[])]);
        let detour = with(&[
            ("based_in", false, &[]),
            ("former_club", false, &[]),
            ("current_club", true, &[]),
        ]);
        assert!(detour > based, "{based} vs {detour}");
    }

    #[test]
    fn the_class_a_question_asks_a_kind_of_names_no_relation() {
        // "film" is Heat's class: it names no relation by meaning (MiniLM puts it
        // nearest `directed by`), as in "who directed the film Heat".
        let word = |terms: &QuestionTerms, word: &str| {
            terms
                .raw_words()
                .iter()
                .position(|w| w == word)
                .expect("the word")
        };
        let terms = QuestionTerms::new("what kind of film is Heat", &["Heat"]);
        assert!(terms.names_a_class(word(&terms, "film")));
        // The subject here is the sequel, no name: the rule leaves "film" as it was.
        let terms = QuestionTerms::new("what kind of film is Heat's sequel", &["Heat"]);
        assert!(!terms.names_a_class(word(&terms, "film")));
        // A word between the article and a relative clause's head noun says what kind
        // of node it is ("sport" is not what "football" asks for); a word elsewhere
        // keeps its reading.
        let terms = QuestionTerms::new(
            "where is the football club that Joel_MATIP plays for",
            &["Joel_MATIP"],
        );
        assert!(terms.names_a_class(word(&terms, "club")));
        assert!(terms.names_a_class(word(&terms, "football")));
        let terms = QuestionTerms::new("where does Joel_MATIP play football", &["Joel_MATIP"]);
        assert!(!terms.names_a_class(word(&terms, "football")));
    }

    #[test]
    fn what_a_have_clause_says_the_answer_has_is_a_hop_before_it() {
        // "player" names `player_nationality`, "orchestra" no relation: the players
        // from Austria are the orchestras' members, not the orchestras.
        // Asked for the players themselves (`false`), one hop.
        for (question, members_asked) in [
            ("which orchestra has a player from Austria", true),
            ("name an orchestra that has a player from Austria", true),
            ("which orchestras have players from Austria", true),
            ("which player is from Austria", false),
            ("who has a player from Austria", false),
            ("which orchestra player is from Austria", false),
        ] {
            let terms = QuestionTerms::new(question, &["Austria"]);
            let two = terms.sequence_score(["player_nationality", "member_of"]);
            let one = terms.sequence_score(["player_nationality"]);
            assert_eq!(two > one, members_asked, "{question}: {two} vs {one}");
        }
    }

    #[test]
    fn hops_take_words_as_alike_in_the_chains_order() {
        // "the child of X's child's parent": the chain is child, parent, child; both
        // "child" words match `children` alike, and the first hop takes the one
        // nearest the name, so the order bonus goes to the sequence the chain spells.
        let terms = QuestionTerms::new("the child of ada 's child 's parent", &["ada"]);
        let chain = terms.sequence_score(["children", "parents", "children"]);
        let other = terms.sequence_score(["children", "children", "parents"]);
        assert!(chain > other, "{chain} vs {other}");
    }

    #[test]
    fn a_relations_label_explains_one_link_of_a_chain() {
        // Each relation's stems plus the token standing for its whole label; the label
        // names `word` as an embedding would.
        let score = |terms: &QuestionTerms, relations: &[&str], label: &str, word: &str| {
            let relations: Vec<Vec<String>> = relations
                .iter()
                .map(|r| {
                    let mut tokens = content_stems(r);
                    tokens.push(format!("{RELATION_TOKEN}{r}"));
                    tokens
                })
                .collect();
            let extra = |token: &str, index: usize| {
                let named = token.strip_prefix(RELATION_TOKEN) == Some(label);
                if named && terms.raw_words()[index] == word {
                    0.8
                } else {
                    0.0
                }
            };
            terms.sequence_score_with(&relations, Some(&extra))
        };
        // "kid" and "children" are two links, two `children` hops.
        let terms = QuestionTerms::new("what is the kid of ada 's children 's parents", &["ada"]);
        let three = score(
            &terms,
            &["children", "parents", "children"],
            "children",
            "kid",
        );
        let two = score(&terms, &["children", "parents"], "children", "kid");
        assert!(three > two, "{three} vs {two}");
        // "release date" is one link: one `release_year` hop explains both words.
        let terms = QuestionTerms::new("what was the release date of Heat", &["Heat"]);
        let one = score(&terms, &["release_year"], "release_year", "date");
        let twice = score(
            &terms,
            &["release_year", "release_year"],
            "release_year",
            "date",
        );
        assert!(one > twice, "{one} vs {twice}");
    }

    #[test]
    fn what_a_clause_says_of_a_possessive_chains_node_is_read_as_its_predicate() {
        let marked = |question: &str| {
            let all = words(question);
            let at = all.iter().position(|w| w == "ada").unwrap();
            let marks = predicate_words(&all, at, 1);
            all.iter()
                .zip(marks)
                .filter(|(_, m)| *m)
                .map(|(w, _)| w.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(marked("what does Ada's kid do for a living"), ["living"]);
        assert_eq!(marked("what does Ada's employer make"), ["make"]);
        assert_eq!(marked("what is Ada's kid working on"), ["working"]);
        assert_eq!(marked("what killed the Ada's father"), ["killed"]);
        // The chain's node is what is asked: no predicate.
        assert!(marked("what is Ada's phone number").is_empty());
        assert!(marked("who is Ada's kid").is_empty());
        assert!(marked("which country is Ada's label based in").is_empty());
        assert!(marked("what films did Ada direct").is_empty());
    }

    /// `relations` scored against `question` (naming `entity`), knowing that
    /// `unknown_word` is no relation's word, and not knowing it.
    fn open_scores(
        question: &str,
        entity: &str,
        unknown_word: &str,
        relations: &[&str],
    ) -> (f32, f32) {
        let terms = QuestionTerms::new(question, &[entity]);
        let unknown: Vec<bool> = terms
            .stems()
            .iter()
            .map(|s| *s == stem(unknown_word))
            .collect();
        let relations: Vec<Vec<String>> = relations.iter().map(|r| content_stems(r)).collect();
        (
            terms.sequence_score_open(&relations, None, None, Some(&unknown)),
            terms.sequence_score_open(&relations, None, None, None),
        )
    }

    #[test]
    fn a_predicate_no_relation_explains_stands_for_a_hop_past_the_possessive_chain() {
        let score = |question: &str, unknown_word: &str, relations: &[&str]| {
            open_scores(question, "Ada", unknown_word, relations).0
        };
        // "working" is no relation's word: the child is not the answer, what the child
        // works at is.
        for (question, word) in [
            ("what is Ada's child working on", "working"),
            ("what does Ada's child do for a living", "living"),
        ] {
            let past = score(question, word, &["children", "profession"]);
            let at = score(question, word, &["children"]);
            assert!(past > at, "{question}: {past} vs {at}");
        }
        // Asked by "where", the verb and the wh-word name one hop together.
        let question = "where does Ada's father work";
        let one = score(question, "work", &["parents", "employer"]);
        let two = score(question, "work", &["parents", "employer", "located_in"]);
        assert!(one > two, "{one} vs {two}");
    }

    #[test]
    fn a_word_no_relation_explains_stands_for_the_hop_a_named_chain_lacks() {
        let score = |question: &str, unknown_word: &str, relations: &[&str]| {
            open_scores(question, "Tern", unknown_word, relations)
        };
        let three = ["founder", "written_by", "maintained_by"];
        let two = ["founder", "written_by"];
        // Two hops named by words ("founder", "written"), and a verb no relation of the
        // graph explains ("looks after"): it stands for the third hop.
        let question = "who looks after the projects written by the founder of Tern";
        let (longer, longer_blind) = score(question, "looks", &three);
        let (shorter, shorter_blind) = score(question, "looks", &two);
        assert!(longer > shorter, "{longer} vs {shorter}");
        // Without knowing which words no relation explains, the shorter chain wins.
        assert!(shorter_blind > longer_blind);
        // A word beside one that names a hop qualifies it ("written *professionally*",
        // "play *professional* in"): it stands for no hop of its own.
        let question = "which projects were written professionally by the founder of Tern";
        let (longer, _) = score(question, "professionally", &three);
        let (shorter, _) = score(question, "professionally", &two);
        assert!(shorter > longer, "{shorter} vs {longer}");
    }

    #[test]
    fn the_verb_of_an_asking_who_stands_for_a_hop_no_relation_names() {
        let score = |question: &str, unknown_word: &str, relations: &[&str]| {
            open_scores(question, "Ada", unknown_word, relations)
        };
        // "acted" is no relation's word (`cast_member`): the answers are one hop past
        // the films Ada wrote, not the films.
        let question = "who acted in the films written by Ada";
        let (past, past_blind) = score(question, "acted", &["screenwriter", "cast_member"]);
        let (films, films_blind) = score(question, "acted", &["screenwriter"]);
        assert!(past > films, "{past} vs {films}");
        // Without knowing which words no relation explains, the films win.
        assert!(films_blind > past_blind);
        // An auxiliary after "who" is no verb of the answers ("who is ...").
        let question = "who is the screenwriter of Ada";
        let (one, _) = score(question, "is", &["screenwriter"]);
        let (two, _) = score(question, "is", &["screenwriter", "cast_member"]);
        assert!(one > two, "{one} vs {two}");
        // Beside a word that names a hop, the verb qualifies it ("wrote the lyrics").
        let question = "who wrote the lyrics to Ada";
        let (one, _) = score(question, "wrote", &["lyrics_by"]);
        let (two, _) = score(question, "wrote", &["lyrics_by", "member_of"]);
        assert!(one > two, "{one} vs {two}");
        // Where no word names a hop, the verb is all the question says of the one
        // relation: it is not taken as explaining it.
        let terms = QuestionTerms::new("who runs the Ada department", &["Ada"]);
        let unknown: Vec<bool> = terms.stems().iter().map(|s| *s == stem("runs")).collect();
        let fit = terms.sequence_fit(&[content_stems("head")], None, None, Some(&unknown), None);
        assert_eq!(fit.unexplained_hops, 1, "{fit:?}");
    }

    #[test]
    fn a_chain_link_no_relation_explains_is_still_a_hop() {
        let question = "what is the ada 's mother 's heir 's child";
        let terms = QuestionTerms::new(question, &["ada"]);
        // "heir" is explained by no relation of the graph; "mother" and "child" are.
        let unknown: Vec<bool> = terms.stems().iter().map(|s| *s == stem("heir")).collect();
        let score = |relations: &[&str], unknown: Option<&[bool]>| {
            let relations: Vec<Vec<String>> = relations.iter().map(|r| content_stems(r)).collect();
            let extra = |token: &str, index: usize| {
                // "mother" names `parents`, as an embedding would.
                if token == "parent" && terms.raw_words()[index] == "mother" {
                    0.8
                } else {
                    0.0
                }
            };
            terms.sequence_score_open(&relations, Some(&extra), None, unknown)
        };
        let three = ["parents", "spouse", "children"];
        let two = ["parents", "children"];
        assert!(
            score(&three, Some(&unknown)) > score(&two, Some(&unknown)),
            "{} vs {}",
            score(&three, Some(&unknown)),
            score(&two, Some(&unknown))
        );
        // Without knowing which words no relation explains, the shorter chain wins.
        assert!(score(&two, None) > score(&three, None));
        // A link no hop stands for costs: "the *son* of mom of X" is not the mother.
        let terms = QuestionTerms::new("the son of mom of ada", &["ada"]);
        let unknown: Vec<bool> = terms.stems().iter().map(|s| *s == stem("son")).collect();
        let score = |relations: &[&str]| {
            let relations: Vec<Vec<String>> = relations.iter().map(|r| content_stems(r)).collect();
            terms.sequence_score_open(&relations, None, None, Some(&unknown))
        };
        assert!(score(&["mom", "children"]) > score(&["mom"]));
        // A word some relation explains is no open link: "X 's father 's cause of
        // death" lacks `cause_of_death`, not a hop.
        let terms = QuestionTerms::new("what is ada 's father 's cause of death", &["ada"]);
        let known = vec![false; terms.stems().len()];
        let score = |relations: &[&str]| {
            let relations: Vec<Vec<String>> = relations.iter().map(|r| content_stems(r)).collect();
            terms.sequence_score_open(&relations, None, None, Some(&known))
        };
        assert!(
            score(&["father", "cause_of_death"]) > score(&["father", "father", "place_of_death"])
        );
        // A hop that walks the previous one back stands for no link: "the *type* of
        // religion of X 's daughter" is the religion, not its other believers.
        let terms = QuestionTerms::new("the type of religion of ada 's daughter", &["ada"]);
        let unknown: Vec<bool> = terms.stems().iter().map(|s| *s == stem("type")).collect();
        let score = |relations: &[(&str, bool)]| {
            terms.sequence_score_open(&hops(relations), None, None, Some(&unknown))
        };
        assert!(
            score(&[("daughter", false), ("religion", false)])
                > score(&[("daughter", false), ("religion", false), ("religion", true)])
        );
    }

    #[test]
    fn hops_in_the_questions_chain_order_rank_first_without_learned_cues() {
        let terms = QuestionTerms::new("the father of ada 's mother", &["ada"]);
        let right = terms.sequence_score(["mother", "father"]);
        let reversed = terms.sequence_score(["father", "mother"]);
        assert!(right > reversed, "{right} vs {reversed}");
    }
}
