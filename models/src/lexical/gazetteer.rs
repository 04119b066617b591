//! The one name index of a graph: exact and fuzzy lookup of entity names, and entity
//! mentions found inside a question. Every role of a process shares one instance.
//!
//! Exact matching works on normalized names: a hash map from normalized name to the
//! entities carrying it. Inside a question, every span of up to [`MAX_NAME_TOKENS`] words
//! is looked up and the longest non-overlapping matches win ("Tom Hanks" over "Tom");
//! word boundaries hold by construction. Near-misses ("Tom Hank", "Amelie") are found
//! through a character-trigram posting index: only the names sharing a query's *rarer*
//! trigrams are counted (lists longer than [`COMMON_TRIGRAM`] are skipped while rarer
//! ones exist, lists longer than [`MAX_POSTING`] are not even stored), a short list is
//! re-scored exactly by Dice similarity. A lookup therefore costs the length of a few
//! posting lists, never the number of names, so the index serves millions of names.

use std::collections::HashMap;

use kgmesh_schemas::{
    graph::{Entity, ScoredEntity},
    NodeId,
};

use super::{
    normalize::{glued, is_apostrophe, is_stopword, normalize, tokens},
    text::{delimited_names, edit_distance, is_article, is_stop_word, marked_as_name},
};

/// Names longer than this (in words) are matched only through [`Gazetteer::lookup`].
pub const MAX_NAME_TOKENS: usize = 12;
/// Trigrams shared by more names than this are not indexed: they discriminate nothing
/// and would dominate memory.
pub const MAX_POSTING: usize = 50_000;
/// Posting lists longer than this are not counted when the query has rarer trigrams.
pub const COMMON_TRIGRAM: usize = 20_000;
/// Postings read per fuzzy lookup (rarest lists first) before the rest are left out.
const POSTINGS_BUDGET: usize = 30_000;
/// Candidates re-scored exactly per fuzzy lookup after counting shared rare trigrams.
const SHORTLIST: usize = 200;
/// Dice similarity a fuzzy match inside a question must reach.
const QUESTION_FUZZY_MIN: f32 = 0.8;
/// Dice similarity from which a span is compared letter by letter with a name (a
/// transposed or dropped letter changes several trigrams at once).
const QUESTION_TYPO_DICE: f32 = 0.5;
/// Dice similarity a fuzzy [`Gazetteer::lookup`] candidate must reach.
pub const LOOKUP_FUZZY_MIN: f32 = 0.4;
/// Score of an exact (normalized) match; fuzzy scores stay below it.
pub const EXACT_SCORE: f32 = 1.0;
/// Best score a fuzzy match may have, so that it never ties with an exact one.
const FUZZY_CEILING: f32 = 0.99;
/// A fuzzy candidate may be at most this many characters shorter than the mention
/// ("Al" is no match for "Alfredo James Pacino"), as in ByoKG-RAG's fuzzy index.
const MAX_SHORTER: usize = 4;

/// A span of the question that names graph entities.
#[derive(Debug, Clone, PartialEq)]
pub struct Mention {
    /// Byte range in the question.
    pub start: usize,
    pub end: usize,
    /// The question's text for the span.
    pub text: String,
    /// Every entity with the matched name (several when names are shared), best first.
    pub candidates: Vec<ScoredEntity>,
    /// Exact (normalized) match rather than fuzzy.
    pub exact: bool,
}

/// Name index over a graph's entities; build once, share read-only (`Arc`).
pub struct Gazetteer {
    /// Normalized distinct names.
    names: Vec<Box<str>>,
    /// The entities named `names[i]` are `entities[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    entities: Vec<Entity>,
    exact: HashMap<Box<str>, u32>,
    trigram_counts: Vec<u16>,
    /// Characters of `names[i]`, kept apart so that filtering candidates by length
    /// does not touch every candidate's string.
    name_chars: Vec<u16>,
    postings: HashMap<u64, Vec<u32>>,
}

impl std::fmt::Debug for Gazetteer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gazetteer")
            .field("names", &self.names.len())
            .field("entities", &self.entities.len())
            .finish_non_exhaustive()
    }
}

impl Gazetteer {
    /// Indexes `(id, display name)` pairs under [`name_key`]; blank names are skipped.
    pub fn build(entries: impl IntoIterator<Item = (NodeId, String)>) -> Self {
        let mut names: Vec<Box<str>> = Vec::new();
        let mut exact: HashMap<Box<str>, u32> = HashMap::new();
        let mut trigram_counts: Vec<u16> = Vec::new();
        let mut name_chars: Vec<u16> = Vec::new();
        let mut postings: HashMap<u64, Vec<u32>> = HashMap::new();
        // (name index, entity), grouped by name below.
        let mut owned: Vec<(u32, Entity)> = Vec::new();
        for (id, name) in entries {
            let key = name_key(&name);
            if key.is_empty() {
                continue;
            }
            let entity = Entity { id, name };
            if let Some(&index) = exact.get(key.as_str()) {
                owned.push((index, entity));
                continue;
            }
            let index = names.len() as u32;
            let grams = trigrams(&key);
            for gram in &grams {
                postings.entry(*gram).or_default().push(index);
            }
            trigram_counts.push(grams.len().min(u16::MAX as usize) as u16);
            name_chars.push(key.chars().count().min(u16::MAX as usize) as u16);
            // Also known with its possessive glued on, as "Schindlers List" is typed
            // (only a name with an apostrophe can read differently).
            if entity.name.chars().any(is_apostrophe) {
                let typed = glued(&entity.name);
                if typed != key {
                    exact.entry(typed.into_boxed_str()).or_insert(index);
                }
            }
            let key = key.into_boxed_str();
            exact.insert(key.clone(), index);
            names.push(key);
            owned.push((index, entity));
        }
        postings.retain(|_, list| list.len() <= MAX_POSTING);
        postings.values_mut().for_each(|list| list.shrink_to_fit());
        // Counting sort by name index; entities of one name keep their input order.
        let mut offsets = vec![0u32; names.len() + 1];
        for (index, _) in &owned {
            offsets[*index as usize + 1] += 1;
        }
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let mut slots: Vec<Option<Entity>> = vec![None; owned.len()];
        let mut next = offsets.clone();
        for (index, entity) in owned {
            let slot = &mut next[index as usize];
            slots[*slot as usize] = Some(entity);
            *slot += 1;
        }
        let entities = slots.into_iter().flatten().collect();
        Self {
            names,
            offsets,
            entities,
            exact,
            trigram_counts,
            name_chars,
            postings,
        }
    }

    /// Distinct normalized names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Every indexed entity, grouped by normalized name.
    pub fn entities(&self) -> &[Entity] {
        &self.entities
    }

    /// Whether some entity's normalized name is `normalized` (already normalized).
    pub fn contains_normalized(&self, normalized: &str) -> bool {
        self.exact.contains_key(normalized)
    }

    /// Entities whose normalized name is `normalized` (already normalized).
    pub fn named_normalized(&self, normalized: &str) -> &[Entity] {
        self.exact
            .get(normalized)
            .map(|&index| self.entities_of(index))
            .unwrap_or(&[])
    }

    /// Entities whose name normalizes like `text` (see [`name_key`]).
    pub fn named(&self, text: &str) -> &[Entity] {
        self.named_normalized(&name_key(text))
    }

    fn entities_of(&self, index: u32) -> &[Entity] {
        let start = self.offsets[index as usize] as usize;
        let end = self.offsets[index as usize + 1] as usize;
        &self.entities[start..end]
    }

    /// Entity mentions in a question, sorted by position. A name the question writes
    /// between brackets or quotes ([`Self::delimited_mentions`]) comes first; elsewhere
    /// spans covering more words win, and among equally long ones exact beats fuzzy,
    /// then higher similarity, then earlier.
    pub fn find_mentions(&self, question: &str) -> Vec<Mention> {
        self.find_mentions_with(question, false)
    }

    /// [`Self::find_mentions`], also taking a span for a name it misspells by a typing
    /// slip ([`is_typo_of`]: "Marta Okonkow", "peat cuters" for "The Peat Cutters"),
    /// which trigram similarity alone misses. For a question none of whose names is
    /// written as the graph spells it. An inexact span counts only where the question
    /// writes it as a name ([`marked_as_name`]: capitalized, bracketed, or more than
    /// one content word): a single lower-case word near a name ("professional" for
    /// "The Professionals") is an ordinary word, and a question about something the
    /// graph does not hold must not be answered about that name.
    pub fn find_misspelled_mentions(&self, question: &str) -> Vec<Mention> {
        let mut mentions = self.find_mentions_with(question, true);
        mentions.retain(|m| m.exact || marked_as_name(question, &m.text));
        mentions
    }

    fn find_mentions_with(&self, question: &str, typos: bool) -> Vec<Mention> {
        let words = tokens(question);
        let mut mentions = self.delimited_mentions(question);
        let mut taken = covered(&words, &mentions);
        // (start, length, name index, score, exact)
        let mut found: Vec<(usize, usize, u32, f32, bool)> = Vec::new();
        for start in 0..words.len() {
            let mut key = String::new();
            for length in 1..=MAX_NAME_TOKENS.min(words.len() - start) {
                if length > 1 {
                    key.push(' ');
                }
                key.push_str(&words[start + length - 1].0);
                if length == 1 && is_stopword(&key) {
                    continue;
                }
                if let Some(&index) = self.exact.get(key.as_str()) {
                    found.push((start, length, index, EXACT_SCORE, true));
                    continue;
                }
                // Fuzzy candidates: short spans that neither start nor end on a stop-word,
                // but for a misspelt name's article ("The Matrx" for "The Matrix": the
                // word alone shares too few trigrams with the name to be compared).
                let last = &words[start + length - 1].0;
                let first = &words[start].0;
                if length <= 6
                    && (!is_stopword(first) || (typos && length > 1 && is_article(first)))
                    && !is_stopword(last)
                    && key.chars().count() >= 5
                {
                    if let Some((index, score)) = self.best_fuzzy(&key, length, typos) {
                        found.push((start, length, index, score, false));
                    }
                }
            }
        }
        found.sort_by(|a, b| {
            b.1.cmp(&a.1)
                .then(b.4.cmp(&a.4))
                .then(b.3.total_cmp(&a.3))
                .then(a.0.cmp(&b.0))
        });
        let spans = found
            .into_iter()
            .map(|(start, length, index, score, exact)| (start, length, (index, score, exact)));
        for (start, length, (index, score, exact)) in take_apart(spans, &mut taken) {
            mentions.push(self.mention(question, &words, start, length, index, score, exact));
        }
        mentions.sort_by_key(|m| m.start);
        mentions
    }

    /// The names `text` writes that name nodes exactly, normalized: first those it
    /// writes between brackets or quotes ([`Self::delimited_mentions`], as written),
    /// then spans of up to `max_words` words (the longest at each word), kept longest
    /// first and leftmost, none overlapping another. A single stop word and a span
    /// shorter than `min_chars` characters are passed over: a graph that has a node
    /// called "The" should not link every question to it. The KG-Linker's mentions;
    /// [`Self::find_mentions`] also finds names written inexactly.
    pub fn exact_mentions(&self, text: &str, max_words: usize, min_chars: usize) -> Vec<String> {
        let delimited = self.delimited_mentions(text);
        let tokens = tokens(text);
        let words: Vec<&str> = tokens.iter().map(|(word, _)| word.as_str()).collect();
        let mut taken = covered(&tokens, &delimited);
        let mut found: Vec<(usize, usize, ())> = Vec::new();
        for start in 0..words.len() {
            for length in (1..=max_words.min(words.len() - start)).rev() {
                let candidate = words[start..start + length].join(" ");
                if candidate.chars().count() < min_chars {
                    continue;
                }
                if length == 1 && is_stop_word(&candidate) {
                    continue;
                }
                if self.contains_normalized(&candidate) {
                    found.push((start, length, ()));
                    break;
                }
            }
        }
        found.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut kept: Vec<(usize, usize)> = take_apart(found, &mut taken)
            .into_iter()
            .map(|(start, length, ())| (start, length))
            .collect();
        kept.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        delimited
            .into_iter()
            .map(|mention| mention.text)
            .chain(
                kept.into_iter()
                    .map(|(start, length)| words[start..start + length].join(" ")),
            )
            .collect()
    }

    /// The names a question writes between brackets or double quotes
    /// ([`delimited_names`]) that name nodes exactly. Such a name is linked whatever its
    /// words (a stop word such as "Up", or only signs such as "$"), and to the nodes
    /// spelled as written when some are ("+1", not the film "1" that normalizes alike).
    pub fn delimited_mentions(&self, question: &str) -> Vec<Mention> {
        delimited_names(question)
            .into_iter()
            .filter_map(|(range, text)| {
                let index = *self.exact.get(name_key(text).as_str())?;
                let mut candidates: Vec<ScoredEntity> = self.scored(index, EXACT_SCORE).collect();
                if candidates.iter().any(|c| spelled_as(&c.entity.name, text)) {
                    candidates.retain(|c| spelled_as(&c.entity.name, text));
                }
                Some(Mention {
                    start: range.start,
                    end: range.end,
                    text: text.to_owned(),
                    candidates,
                    exact: true,
                })
            })
            .collect()
    }

    /// The `top_k` best entities for a mention written by someone else (a model, a
    /// user): exact normalized matches first (score 1; byte-identical names before
    /// merely normalized ones, then by id), then fuzzy matches by trigram Dice
    /// similarity (at least [`LOOKUP_FUZZY_MIN`], below 1).
    pub fn lookup(&self, mention: &str, top_k: usize) -> Vec<ScoredEntity> {
        let key = name_key(mention);
        if key.is_empty() || top_k == 0 {
            return Vec::new();
        }
        let mut out: Vec<ScoredEntity> = Vec::new();
        let exact_index = self.exact.get(key.as_str()).copied();
        if let Some(index) = exact_index {
            let mut hits: Vec<&Entity> = self.entities_of(index).iter().collect();
            hits.sort_by_key(|e| (e.name != mention, e.id));
            out.extend(hits.into_iter().take(top_k).map(|entity| ScoredEntity {
                entity: entity.clone(),
                score: EXACT_SCORE,
            }));
        }
        if out.len() < top_k {
            'names: for (index, score) in self.fuzzy_candidates(&key, top_k, LOOKUP_FUZZY_MIN) {
                if Some(index) == exact_index {
                    continue;
                }
                for entity in self.entities_of(index) {
                    if out.len() >= top_k {
                        break 'names;
                    }
                    out.push(ScoredEntity {
                        entity: entity.clone(),
                        score,
                    });
                }
            }
        }
        out
    }

    fn best_fuzzy(&self, key: &str, span_tokens: usize, typos: bool) -> Option<(u32, f32)> {
        let floor = if typos {
            QUESTION_TYPO_DICE
        } else {
            QUESTION_FUZZY_MIN
        };
        self.fuzzy_candidates(key, 5, floor)
            .into_iter()
            .find(|(index, score)| {
                let name = &self.names[*index as usize];
                // Equal word counts: a span with an extra word ("tom hanks act") is not a
                // misspelling of the shorter name. A name's leading stop word may be
                // left out ("peat cuters" for "the peat cutters").
                let words = name.split(' ').count();
                let trimmed = match name.split_once(' ') {
                    Some((first, rest))
                        if typos && words == span_tokens + 1 && is_stopword(first) =>
                    {
                        rest
                    }
                    _ if words == span_tokens => &name[..],
                    _ => return false,
                };
                *score >= QUESTION_FUZZY_MIN || (typos && is_typo_of(key, trimmed))
            })
    }

    /// Names sharing trigrams with `key`, best first by Dice similarity (capped below
    /// [`EXACT_SCORE`]), at least `min_score`, at most `top_k`. Shared trigrams are
    /// counted over the query's rarer posting lists only; a short list of the best
    /// counts is then re-scored exactly.
    fn fuzzy_candidates(&self, key: &str, top_k: usize, min_score: f32) -> Vec<(u32, f32)> {
        let grams = trigrams(key);
        if grams.is_empty() || top_k == 0 {
            return Vec::new();
        }
        let mut lists: Vec<&[u32]> = grams
            .iter()
            .filter_map(|g| self.postings.get(g))
            .map(Vec::as_slice)
            .collect();
        if lists.is_empty() {
            return Vec::new();
        }
        lists.sort_by_key(|l| l.len());
        // Rarest lists first, until the postings read reach a budget (but always two
        // lists when there are two); lists past COMMON_TRIGRAM only when nothing rarer
        // exists.
        let mut counted = 0usize;
        let mut read = 0usize;
        for list in &lists {
            let common = list.len() > COMMON_TRIGRAM;
            if counted > 0 && (common || (counted >= 2 && read + list.len() > POSTINGS_BUDGET)) {
                break;
            }
            counted += 1;
            read += list.len();
        }
        // Query trigrams not counted (skipped, or not indexed at all): a name may share
        // each of them, which bounds how good its count can get.
        let uncounted = (grams.len() - counted) as f32;
        // Sorting the concatenated lists counts shared trigrams with sequential memory
        // access; a hash map per lookup was several times slower at millions of names.
        let mut hits: Vec<u32> = Vec::with_capacity(read);
        for list in &lists[..counted] {
            hits.extend_from_slice(list);
        }
        hits.sort_unstable();
        let query_count = grams.len() as f32;
        let key_chars = key.chars().count();
        let mut shortlist: Vec<(u32, f32)> = Vec::new();
        let mut at = 0;
        while at < hits.len() {
            let index = hits[at];
            let mut end = at + 1;
            while end < hits.len() && hits[end] == index {
                end += 1;
            }
            let common = (end - at) as f32;
            at = end;
            if self.name_chars[index as usize] as usize + MAX_SHORTER < key_chars {
                continue;
            }
            let total = query_count + self.trigram_counts[index as usize] as f32;
            if 2.0 * (common + uncounted) / total >= min_score {
                shortlist.push((index, 2.0 * common / total));
            }
        }
        let by_count = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        let keep = SHORTLIST.max(top_k);
        if shortlist.len() > keep {
            shortlist.select_nth_unstable_by(keep, by_count);
            shortlist.truncate(keep);
        }
        let mut scored: Vec<(u32, f32)> = shortlist
            .into_iter()
            .map(|(index, _)| {
                let other = trigrams(&self.names[index as usize]);
                let common = sorted_intersection(&grams, &other);
                let dice = 2.0 * common as f32 / (grams.len() + other.len()) as f32;
                (index, dice.min(FUZZY_CEILING))
            })
            .filter(|(_, score)| *score >= min_score && *score > 0.0)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(top_k);
        scored
    }

    fn scored(&self, index: u32, score: f32) -> impl Iterator<Item = ScoredEntity> + '_ {
        self.entities_of(index)
            .iter()
            .map(move |entity| ScoredEntity {
                entity: entity.clone(),
                score,
            })
    }

    #[allow(clippy::too_many_arguments)]
    fn mention(
        &self,
        question: &str,
        words: &[(String, std::ops::Range<usize>)],
        start: usize,
        length: usize,
        index: u32,
        score: f32,
        exact: bool,
    ) -> Mention {
        let first = words[start].1.start;
        let last = words[start + length - 1].1.end;
        let text = &question[first..last];
        // Nodes named exactly as the question writes the name come first ("Olga
        // Kurylenko" the actor before the tag "olga kurylenko").
        let mut candidates: Vec<ScoredEntity> = self.scored(index, score).collect();
        candidates.sort_by_key(|c| c.entity.name != text);
        Mention {
            start: first,
            end: last,
            text: text.to_owned(),
            candidates,
            exact,
        }
    }
}

/// The spans `(start, length, _)`, in the order given, that overlap no word already
/// `taken` nor a span kept before them; each kept span's words become taken.
fn take_apart<T>(
    spans: impl IntoIterator<Item = (usize, usize, T)>,
    taken: &mut [bool],
) -> Vec<(usize, usize, T)> {
    spans
        .into_iter()
        .filter(|&(start, length, _)| {
            let words = &mut taken[start..start + length];
            if words.iter().any(|t| *t) {
                return false;
            }
            words.iter_mut().for_each(|t| *t = true);
            true
        })
        .collect()
}

/// Which of `tokens` (from [`tokens`]) lie in one of `mentions`' byte ranges.
pub fn covered(tokens: &[(String, std::ops::Range<usize>)], mentions: &[Mention]) -> Vec<bool> {
    tokens
        .iter()
        .map(|(_, range)| {
            mentions
                .iter()
                .any(|m| range.start < m.end && m.start < range.end)
        })
        .collect()
}

/// The key a name is indexed and looked up under: its [`normalize`]d form, or, for a
/// name made only of signs ("$"), the name itself, trimmed and in lower case.
pub fn name_key(text: &str) -> String {
    let key = normalize(text);
    if key.is_empty() {
        text.trim().to_lowercase()
    } else {
        key
    }
}

/// Whether a node's name is `written` as the question writes it, letter case aside.
pub fn spelled_as(name: &str, written: &str) -> bool {
    name.trim().to_lowercase() == written.trim().to_lowercase()
}

/// Whether `written` is `name` with a typing slip: at most one edit (a letter added,
/// dropped, changed, or two swapped) per six letters of the name, two at most, and the
/// first letter kept. Short names (under five letters) need an exact match.
pub fn is_typo_of(written: &str, name: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (written.chars().collect(), name.chars().collect());
    if b.len() < 5 || a.first() != b.first() {
        return false;
    }
    let allowed = (b.len() / 6).clamp(1, 2);
    if a.len().abs_diff(b.len()) > allowed {
        return false;
    }
    (1..=allowed).contains(&edit_distance(written, name, true))
}

/// Distinct character trigrams of ` key ` (padded so word starts and ends count),
/// sorted; each packs three chars losslessly into a `u64`.
fn trigrams(key: &str) -> Vec<u64> {
    let chars: Vec<char> = std::iter::once(' ')
        .chain(key.chars())
        .chain(std::iter::once(' '))
        .collect();
    let mut grams: Vec<u64> = chars
        .windows(3)
        .map(|w| ((w[0] as u64) << 42) | ((w[1] as u64) << 21) | (w[2] as u64))
        .collect();
    grams.sort_unstable();
    grams.dedup();
    grams
}

/// Elements two sorted, de-duplicated slices share.
fn sorted_intersection(a: &[u64], b: &[u64]) -> usize {
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    common
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_slips_are_typos_other_names_are_not() {
        assert!(is_typo_of("marta okonkow", "marta okonkwo"));
        assert!(is_typo_of("peat cuters", "peat cutters"));
        assert!(is_typo_of("harbor stret library", "harbor street library"));
        assert!(
            !is_typo_of("marta okonkwo", "marta okonkwo"),
            "equal is no typo"
        );
        assert!(
            !is_typo_of("lima", "lina"),
            "short names need an exact match"
        );
        assert!(
            !is_typo_of("karta okonkwo", "marta okonkwo"),
            "first letter kept"
        );
        assert!(
            !is_typo_of("port bolt", "port kell"),
            "one edit per six letters"
        );
    }

    fn gazetteer() -> Gazetteer {
        let names = [
            "Tom Hanks",
            "Tom",
            "Big",
            "The Green Mile",
            "Green",
            "Heat",
            "Schindler's List",
            "Amélie",
            "It",
            "Meg Ryan",
            "Sleepless in Seattle",
            "1993",
        ];
        Gazetteer::build(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (NodeId(i as u64), n.to_string())),
        )
    }

    fn texts(mentions: &[Mention]) -> Vec<&str> {
        mentions.iter().map(|m| m.text.as_str()).collect()
    }

    #[test]
    fn a_delimited_name_is_linked_whatever_its_words_and_as_spelled() {
        let names = ["Up", "Up!", "They", "$", "1", "+1", "Heat", "heat"];
        let g = Gazetteer::build(
            names
                .iter()
                .enumerate()
                .map(|(i, n)| (NodeId(i as u64), n.to_string())),
        );
        let linked = |q: &str| -> Vec<Vec<String>> {
            g.find_mentions(q)
                .into_iter()
                .map(|m| m.candidates.into_iter().map(|c| c.entity.name).collect())
                .collect()
        };
        // Stop words and signs are names inside brackets or quotes, and nowhere else.
        assert_eq!(linked("who acted in [They]"), [["They"]]);
        assert!(linked("who acted in they").is_empty());
        assert_eq!(linked("who acted in \"$\""), [["$"]]);
        // Names that read alike: the one spelled as written.
        assert_eq!(linked("who wrote [Up]"), [["Up"]]);
        assert_eq!(linked("who wrote [Up!]"), [["Up!"]]);
        assert_eq!(linked("when was [+1] released"), [["+1"]]);
        // Spelled alike but for letter case: namesakes, both kept.
        assert_eq!(linked("[HEAT] has which tags"), [["Heat", "heat"]]);
        // A delimited text no node is named is no mention as a whole; its words are
        // matched as anywhere else (and read as part of a longer name downstream).
        let texts: Vec<String> = g
            .find_mentions("did [Heat 2] beat Heat")
            .into_iter()
            .map(|m| m.text)
            .collect();
        assert_eq!(texts, ["Heat", "Heat"]);
        assert_eq!(g.named("$").len(), 1);
        assert_eq!(g.lookup("$", 3).len(), 1);
    }

    #[test]
    fn longest_matches_win_and_word_boundaries_hold() {
        let g = gazetteer();
        let mentions = g.find_mentions("Did tom hanks act in The Green Mile or near a heater?");
        assert_eq!(texts(&mentions), vec!["tom hanks", "The Green Mile"]);
        assert!(mentions.iter().all(|m| m.exact));
        assert_eq!(mentions[0].candidates[0].entity.name, "Tom Hanks");
    }

    #[test]
    fn punctuation_case_accents_and_brackets_do_not_matter() {
        let g = gazetteer();
        let mentions = g.find_mentions("who directed [SCHINDLERS LIST] and amelie in 1993?");
        assert_eq!(texts(&mentions), vec!["SCHINDLERS LIST", "amelie", "1993"]);
        assert_eq!(mentions[1].candidates[0].entity.name, "Amélie");
    }

    #[test]
    fn a_possessive_ends_the_name_it_follows() {
        let g = gazetteer();
        let mentions = g.find_mentions("what is Heat's genre, and Tom Hanks’s?");
        assert_eq!(texts(&mentions), vec!["Heat", "Tom Hanks"]);
        assert!(mentions.iter().all(|m| m.exact));
        // A name with a possessive in it is found written either way.
        for question in [
            "who directed Schindler's List",
            "who directed schindlers list",
        ] {
            let mentions = g.find_mentions(question);
            assert_eq!(mentions.len(), 1, "{question}");
            assert_eq!(mentions[0].candidates[0].entity.name, "Schindler's List");
            assert!(mentions[0].exact, "{question}");
        }
    }

    #[test]
    fn stopword_names_are_not_matched_alone() {
        let g = gazetteer();
        assert!(g.find_mentions("what is it about").is_empty());
        assert_eq!(g.lookup("it", 3)[0].entity.name, "It");
    }

    #[test]
    fn near_misses_are_found_fuzzily() {
        let g = gazetteer();
        let mentions = g.find_mentions("films with Tom Hank and Meg Ryann in Sleepless in Seatle");
        assert_eq!(
            texts(&mentions),
            vec!["Tom Hank", "Meg Ryann", "Sleepless in Seatle"]
        );
        assert!(mentions.iter().all(|m| !m.exact));
        assert_eq!(
            mentions[2].candidates[0].entity.name,
            "Sleepless in Seattle"
        );
        assert!(mentions[0].candidates[0].score < 1.0);
    }

    #[test]
    fn lookup_puts_the_exact_name_first_then_similar_ones() {
        let g = gazetteer();
        let found = g.lookup("tom hanks", 3);
        assert_eq!(found[0].entity.name, "Tom Hanks");
        assert_eq!(found[0].score, 1.0);
        let fuzzy = g.lookup("Sleepless Seattle", 2);
        assert_eq!(fuzzy[0].entity.name, "Sleepless in Seattle");
        assert!(g.lookup("zzzz qqqq", 3).is_empty());
    }

    #[test]
    fn shared_names_return_every_entity() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "Heat".to_string()),
            (NodeId(2), "heat".to_string()),
        ]);
        let mentions = g.find_mentions("Who directed Heat?");
        assert_eq!(mentions[0].candidates.len(), 2);
        assert_eq!(g.len(), 1);
    }
    #[test]
    fn byte_identical_names_rank_before_merely_normalized_ones() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "heat".to_string()),
            (NodeId(2), "Heat".to_string()),
            (NodeId(3), "Heath".to_string()),
        ]);
        let found = g.lookup("Heat", 3);
        assert_eq!(found[0].entity.id, NodeId(2));
        assert_eq!(found[1].entity.id, NodeId(1));
        assert_eq!(found[2].entity.name, "Heath");
        assert!(found[2].score < EXACT_SCORE);
        assert_eq!(g.lookup("Heat", 1).len(), 1);
        assert!(g.lookup("Heat", 0).is_empty());
    }

    #[test]
    fn names_much_shorter_than_the_mention_are_not_fuzzy_matches() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "Al".to_string()),
            (NodeId(2), "Al Pacino".to_string()),
        ]);
        let found = g.lookup("Alfredo James Pacino", 5);
        assert!(found.iter().all(|c| c.entity.name != "Al"), "{found:?}");
    }

    #[test]
    fn misspellings_are_found_among_many_names_sharing_common_trigrams() {
        // 60,000 names share the trigrams of "entity", more than COMMON_TRIGRAM and
        // MAX_POSTING: they are skipped, the rarer trigrams still find the right names.
        let mut entries: Vec<(NodeId, String)> = (0..60_000u64)
            .map(|i| (NodeId(i), format!("entity {i}")))
            .collect();
        entries.push((NodeId(70_000), "Michael Mann".to_string()));
        entries.push((NodeId(70_001), "Entity Framework".to_string()));
        let g = Gazetteer::build(entries);
        assert_eq!(g.lookup("Micheal Man", 1)[0].entity.name, "Michael Mann");
        assert_eq!(g.lookup("entity 4711", 1)[0].entity.id, NodeId(4711));
        let near = g.lookup("entiti 4711", 3);
        assert!(near.iter().any(|c| c.entity.id == NodeId(4711)), "{near:?}");
        assert!(near.iter().all(|c| c.score < EXACT_SCORE));
        assert_eq!(g.lookup("Entity Framwork", 1)[0].entity.id, NodeId(70_001));
    }

    #[test]
    fn a_misspelt_name_is_found_with_its_article() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "The Matrix".to_string()),
            (NodeId(2), "Heat".to_string()),
        ]);
        let found = g.find_misspelled_mentions("who directed The Matrx");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].candidates[0].entity.name, "The Matrix");
        assert!(!found[0].exact);
        // Written in lower case, one content word is an ordinary word, not a name.
        assert!(g
            .find_misspelled_mentions("who directed the matrx")
            .is_empty());
    }

    #[test]
    fn entities_are_grouped_by_name_and_all_kept() {
        let g = Gazetteer::build(vec![
            (NodeId(1), "Heat".to_string()),
            (NodeId(2), "Big".to_string()),
            (NodeId(3), "heat".to_string()),
            (NodeId(4), "!!!".to_string()),
            (NodeId(5), "  ".to_string()),
        ]);
        // A name of signs only is kept under itself; a blank one is not.
        assert_eq!(g.entities().len(), 4);
        assert_eq!(g.named("!!!")[0].id, NodeId(4));
        let named: Vec<NodeId> = g.named("HEAT").iter().map(|e| e.id).collect();
        assert_eq!(named, vec![NodeId(1), NodeId(3)]);
        assert!(g.contains_normalized("big"));
        assert!(g.named_normalized("cold").is_empty());
    }
}
