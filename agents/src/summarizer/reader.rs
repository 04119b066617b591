//! Reading indexed documents without a model: the answer is a span of the type the
//! question asks for, written in a sentence that says what the question asks.
//!
//! The text retriever's passages are plain prose, so the graph rule in [`super::core`]
//! finds nothing in them. This reader does what an extractive reader does, with no
//! model:
//!
//! 1. **What is asked** ([`answer_type::asked`]): a person for "who", a date for
//!    "when", an amount for "how much", the class word's type for "which company" or
//!    "what is the price of", a thing for a class word the lexicon does not type.
//! 2. **The entity asked about.** The names the question writes between brackets or
//!    quotes, else the entities linked in it, else every run of its words that the
//!    passages write as a name, or before a preposition within one ("Harold Quist" of
//!    "Harold Quist of Tanner Street"), longest first, whatever case the question
//!    writes it in (a date or number is a constraint, not an entity; a single
//!    lower-case word only when the passages never write it in lower case). It may be
//!    none. A file that writes its name whole may refer back to it by a short form
//!    ([`Topic`]).
//! 3. **Sentences and spans.** Each passage is cut into paragraphs (blank lines) and
//!    sentences with the tokenizer documents are indexed with (one ending inside a
//!    quotation ends after its closing quote); a list's item and a table's row are
//!    sentences of their own, a row read under its table's header (its words, and each
//!    cell's column name near the cell). A *name* is a run of words that begin with a
//!    capital letter or a digit, joined by what joins names ("of", "the", "&", a glued
//!    apostrophe or hyphen, an initial's full stop), and ended by a line break or a
//!    column's gap; a possessive's "'s" is not its own, nor a stop word other than an
//!    article that opens the sentence ("When Elsbeth Marrow …"), and a number before
//!    the entity's name does not make it part of a longer one. A term in code quotes,
//!    or in emphasis that capitalized runs would cut short, is one name ("`fold.toml`",
//!    "*Lumicaris brenningi*"). Numbers, amounts and dates are read whole ("$349",
//!    "€1.2 million", "4,500 euros", "Saturday 14 September 2024", "2024-03-12"), a
//!    code or a model's number with its name ("AV-221", "Aurelle 900"). Every name is
//!    typed by its form and by all the places the passages write it
//!    ([`answer_type::NameTypes`]). A sentence's spans are its names less the entity's
//!    and, when it names the entity, less the names listed beside it ("A, B and X star
//!    in it"; commas alone join no list: "Yusra Kell, Firmware team lead"), plus the
//!    name its paragraph opens with; and other readings of them ([`name_variants`],
//!    [`phrases`]): a name's parts at a preposition, a name without the common word
//!    opening it, a number with its unit (the first reading where a measure other than
//!    a count is asked: "5 seconds" for "how long"), runs of lower-case words.
//! 4. **Statements** (`Reading::coverage`): the share of the question's words (a
//!    class word the lexicon does not type too, not the rest of the wh-phrase; rarer
//!    words among the context's sentences weigh more) a sentence writes, a word its
//!    paragraph writes counting [`PASSAGE_SHARE`], the entity's names counting whole
//!    ("Claire Danes" writes nothing of "Claire Skinner"). A sentence *says enough*
//!    when it writes at least [`MIN_COVERAGE`] of the question and one word outside
//!    its names (or the class word asked beside one of its names, naming the entity),
//!    or, with an embedder, reads within cosine [`MIN_COSINE`] of it. The
//!    reader answers only when some sentence about the entity (it, its paragraph or
//!    its file names it) writes at least [`MIN_OPENING_COVERAGE`] of the question and
//!    one word outside its names, or reads that near; then every sentence about it
//!    that says enough, or whose sentence or paragraph names the entity, offers its
//!    spans. With an embedder, a passage word read alike explains a question word
//!    ([`Reading::with_synonyms`]).
//! 5. **Span scores** ([`Reading::spans`], [`super::spans`]): a linear scorer over each
//!    span's features: its statement's coverage and cosine, its type's fit to what is
//!    asked ([`answer_type::fit`]; a year never answers "who", nor a date that writes
//!    no year "which year", and is not offered), the question's words written near it
//!    (nearer counting more), the question's class word beside it, and how it was read;
//!    with an embedder, the summarizer adds how well the span's words read as the kind
//!    of name asked ([`super::typing`]). A name the question writes is no answer. The
//!    best span answers, with the names listed beside it and every span scored within
//!    [`SummaryRule::keep_within`] of it, each with its share of the scorer's softmax
//!    as its score; the explanation quotes its sentence with its `file:offset`. None:
//!    "I don't know", with the reason.
//! 6. **A second read** (`Reading::chains`), when no sentence explains every question
//!    word: the statements about the names the best sentences propose, chained when
//!    the two together explain more of the question ("who heads the team that built
//!    X": the team, then its head). A chain's spans are scored with the rest.
//!
//! The weights and bounds were chosen on the document zoo's development corpora
//! (`minutes`, `emails`), which its measured figures leave out.

use std::collections::{HashMap, HashSet};

use kgmesh_models::lexical::text::{
    content_stems, delimited_names, is_article, is_stop_word, relation_stems, stem,
    stem_similarity, words, words_outside,
};
use kgmesh_schemas::messages::{
    context::{EvidenceItem, Excerpt},
    summarizer::{Answer, SummarizeReply, SummarizeRequest},
};

use super::{
    core::SummaryRule,
    spans::{self, SpanModel, SPAN_FEATURES},
};
use crate::{
    scoring::{
        answer_type::{
            self, AnswerType, Asked, NameTypes, CURRENCY_WORDS, MONTHS, NUMBER_WORDS, WEEKDAYS,
        },
        relevance::SYNONYM_COSINE,
        text::QuestionTerms,
    },
    text_retriever::chunk::{self, Token},
};

/// A statement whose words meet no question word must read at least this near the
/// question (cosine of their embeddings) to answer it. Chosen on MetaQA 1-hop dev
/// over the derived corpus (300 questions, keyword channel, MiniLM): Hits@1 52.3 at
/// 0.3, 53.7 at 0.2, 55.0 with no bound; the questions left unanswered 52, 31, 12.
pub const MIN_COSINE: f32 = 0.2;

/// Names a second read starts from at most (the first statements' candidates).
const MAX_BRIDGES: usize = 10;

/// The channel of skeleton facts (`head | relation | tail`) in [`Excerpt::channel`].
const SKELETON_CHANNEL: &str = "skeleton";

/// Lower-case words that join the capitalized words of one name.
const NAME_JOINERS: &[&str] = &[
    "of", "the", "de", "du", "des", "la", "le", "van", "von", "der", "den", "da", "di", "del", "y",
    "in", "on", "at", "for", "to", "a", "an", "from", "with", "&",
];

/// One name a sentence writes.
#[derive(Debug, Clone, PartialEq)]
struct Name {
    text: String,
    /// Lower-case alphanumeric words, to compare names.
    words: Vec<String>,
    /// A single capitalized word opening its sentence: maybe a name, maybe not.
    weak: bool,
    /// The lower-cased word written right before it ("" at its sentence's start).
    previous: String,
    /// The lower-cased word written right after it when that word ends the phrase
    /// (what follows it is no content word: "the X *team* and …", not "the X *contact*
    /// centre"); "" otherwise.
    next: String,
    /// The content words near it in its sentence ([`NEAR_TOKENS`] each side), lower
    /// case, each with its distance in tokens.
    near: Vec<(String, usize)>,
    /// What it is ([`answer_type`]), from all the places the reading's passages write it.
    kind: AnswerType,
    /// The first name of the list it stands in within its sentence ("A, B and C": A's
    /// position for all three), its own position when it stands in none.
    list: usize,
    /// Its position among its sentence's names.
    position: usize,
    /// The name its paragraph opens with, proposed for a sentence that does not write it.
    opener: bool,
    /// How it was read: a name whole, or another reading ([`name_variants`], [`phrases`]).
    variant: Variant,
    /// Tokens between it and the entity's name in its sentence, when the sentence
    /// writes the entity.
    topic_distance: Option<usize>,
}

/// How a candidate span was read from its sentence.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Variant {
    /// A name, number or date, whole.
    Whole,
    /// A part of a name: either side of a preposition joining it ("Ironbark Assurance"
    /// of "Saskia Brenninkmolen of Ironbark Assurance"), or the name without a common
    /// word opening it.
    Part,
    /// A number with the word after it ("40,000 crowns", "5 seconds").
    WithUnit,
    /// A run of lower-case words ("repeatable migrations").
    Phrase,
    /// A run of lower-case words with its article ("a failed transformer").
    PhraseWithArticle,
}

impl Name {
    fn new(text: String, weak: bool) -> Self {
        Self {
            words: words(&text),
            text,
            weak,
            previous: String::new(),
            next: String::new(),
            near: Vec::new(),
            kind: AnswerType::Thing,
            list: 0,
            position: 0,
            opener: false,
            variant: Variant::Whole,
            topic_distance: None,
        }
    }
}

/// How many tokens on each side of a candidate are its neighbourhood ([`Name::near`]).
const NEAR_TOKENS: usize = 6;

/// A statement says enough of the question to offer its spans when it writes at least
/// this share of it (`Reading::coverage`) and explains at least one of its words outside
/// the names; the other sentences of its paragraph count [`PASSAGE_SHARE`] of a word. A
/// statement whose sentence or paragraph names the entity asked about offers its spans
/// anyway. Chosen on the `minutes` and `emails` corpora (0.3–0.5 and 0.3–0.7 tried).
pub const MIN_COVERAGE: f32 = 0.4;

/// The reader answers at all only when some statement about the entity writes at least
/// this share of the question and one of its words outside the names (or passes the
/// meaning gate): the passages then say something of what is asked, and the spans of
/// the statements that say enough ([`MIN_COVERAGE`]) or name the entity are ranked.
/// The word outside the names does most of this gating; the share only keeps out a
/// sentence that writes next to nothing of a long question. A sentence about the entity
/// often writes none of the question's words ("Behind the camera for the film was …"
/// for "which person directed X") while another writes one of them about something else
/// ("Direction is credited to …"): at [`MIN_COVERAGE`] the reader declined there.
/// Words only, from 0.4 down to 0.3 / 0.2 / 0.1 / 0 (as one bound for both readings):
/// the document zoo answered 63 / 71 / 76 / 81 / 82 of 193 and declined 19 / 16 / 14 /
/// 12 / 12 of its 40 unanswerable questions; the corpus written from MetaQA, never
/// tuned on, read 31.3 / 36.7 / 40.0 / 40.3 / 40.3 % at 1-hop (24.0 → 29.7 % at 2-hop,
/// 9.0 → 19.0 % at 3-hop from 0.4 to 0.1). Set apart from [`MIN_COVERAGE`], which
/// still decides what offers spans, at 0.1: 76 of 193 and 12 of 40 on the zoo, 42.7 /
/// 32.3 / 20.0 % on the MetaQA corpus (a sentence about another product no longer
/// offers its price). With an embedder the meaning gate opens nearly every such
/// reading already.
pub const MIN_OPENING_COVERAGE: f32 = 0.1;
pub const PASSAGE_SHARE: f32 = 0.5;

/// What one sentence (or skeleton fact) says about the entity asked about.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    /// Its words outside the names: what it says.
    pub relation: String,
    candidates: Vec<Name>,
    /// The content stems of its paragraph (what the sentences around it say).
    paragraph: Vec<String>,
    /// Per name of the entity asked about: 2 when the sentence writes it whole, 1 when
    /// only its paragraph does (or the paragraph opens with it), 0 otherwise.
    names: Vec<u8>,
    evidence: u32,
    /// The sentence, for the explanation.
    sentence: String,
    /// Its content stems ([`content_stems`]), what it writes of a question.
    stems: Vec<String>,
    /// The file it was read from.
    file: String,
    citation: String,
}

/// The statements a question's passages make about the entity it asks about.
#[derive(Debug)]
pub(crate) struct Reading {
    topic: Vec<String>,
    /// The question's words outside the entity's name.
    pub question: String,
    /// The stems of the question words a statement can explain (see
    /// [`explainable_words`]).
    asked: Vec<String>,
    pub statements: Vec<Statement>,
    /// Passages and skeleton facts in the context.
    passages: usize,
    facts: usize,
    /// The context's excerpts (evidence line, excerpt), read again for a second hop.
    excerpts: Vec<(u32, Excerpt)>,
    topic_words: Vec<Vec<String>>,
    /// What the question asks for ([`answer_type::asked`]).
    pub wants: Asked,
    /// The question's words, lower case: a candidate the question writes is no answer.
    question_words: Vec<String>,
    /// The type of every name the passages write.
    types: NameTypes,
    /// The words the passages also write in lower case.
    common: HashSet<String>,
    /// The names the passages write ([`PassageNames::written`]).
    written: HashSet<Vec<String>>,
    /// Each passage's file and words, read once for every [`Topic`] the reading looks
    /// for (its entity, then a chain's bridges).
    passage_words: Vec<(String, Vec<String>)>,
    /// Whether some passage names the entity asked about.
    names_topic: bool,
    /// The files whose passages name it.
    topic_files: HashSet<String>,
    /// The question's content stems outside its wh-phrase and the entity's names, each
    /// with its weight (how rare it is among the context's sentences).
    question_stems: Vec<(String, f32)>,
    /// The weight of each of the entity's names (its words' together).
    topic_weights: Vec<f32>,
    /// Per question stem, the passages' stems that read near it by embedding, with
    /// their cosine ([`Reading::with_synonyms`]); empty with words only.
    synonyms: HashMap<String, Vec<(String, f32)>>,
}

/// A question word and a passage word, as written, and their embeddings' cosine.
pub struct Synonym<'a> {
    pub question: &'a str,
    pub passage: &'a str,
    pub cosine: f32,
}

/// Whether the context holds document text (passages or skeleton facts).
pub(crate) fn has_text(request: &SummarizeRequest) -> bool {
    request
        .context
        .evidence
        .iter()
        .any(|e| matches!(e.item, EvidenceItem::Excerpt(_)))
}

impl Reading {
    /// The statements of the request's excerpts; `Err` with the reason there are none
    /// about the question's entity.
    pub fn new(request: &SummarizeRequest) -> Result<Self, String> {
        let excerpts: Vec<(u32, &Excerpt)> = request
            .context
            .evidence
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.item {
                EvidenceItem::Excerpt(x) => Some((i as u32, x)),
                _ => None,
            })
            .collect();
        let passages: Vec<(u32, &Excerpt)> = excerpts
            .iter()
            .copied()
            .filter(|(_, x)| x.channel != SKELETON_CHANNEL)
            .collect();
        let names = PassageNames::read(passages.iter().copied());
        let topic = topic_names(request, &names);
        let topic_words: Vec<Vec<String>> = topic.iter().map(|t| words(t)).collect();
        let PassageNames {
            types,
            common,
            written,
        } = names;
        let passage_words: Vec<(String, Vec<String>)> = passages
            .iter()
            .map(|(_, x)| (x.file.clone(), words(&x.text)))
            .collect();
        let forms = Topic::new(topic_words.clone(), &passage_words, &common, &written);
        let mut statements = statements_about(excerpts.iter().copied(), &forms, true, &common);
        for statement in &mut statements {
            for name in &mut statement.candidates {
                name.kind = name_type(&types, name);
            }
        }
        let names: Vec<&str> = topic.iter().map(String::as_str).collect();
        let wants = answer_type::asked(&request.question);
        let asked = explainable_words(&QuestionTerms::new(&request.question, &names), &wants);
        // Read by meaning, class words help: "which movies … act in" reads near "… appear
        // in the movie".
        let question = words_outside(&request.question, &names).join(" ");
        if statements.is_empty() {
            return Err(if topic.is_empty() {
                "the passages hold no sentence with a name to answer with".to_owned()
            } else {
                format!("no passage says anything about {}", quoted_list(&topic))
            });
        }
        let (question_stems, topic_weights) =
            weighted_question(&request.question, &wants, &statements, &topic_words);
        let names_topic = !topic.is_empty()
            && !statements_about(excerpts.iter().copied(), &forms, false, &common).is_empty();
        Ok(Self {
            names_topic,
            topic_files: forms.files,
            question_stems,
            topic_weights,
            topic,
            question,
            asked,
            statements,
            passages: passages.len(),
            facts: excerpts.len() - passages.len(),
            excerpts: excerpts
                .iter()
                .map(|(line, x)| (*line, (*x).clone()))
                .collect(),
            topic_words,
            wants,
            question_words: words(&request.question),
            types,
            common,
            written,
            passage_words,
            synonyms: HashMap::new(),
        })
    }

    /// The question's content words a statement can explain and the content words of
    /// the statements, each once, as written (lower case): what to look up synonyms
    /// among ([`Self::with_synonyms`]).
    pub fn synonym_words(&self) -> (Vec<String>, Vec<String>) {
        let wanted: HashSet<&String> = self
            .question_stems
            .iter()
            .map(|(s, _)| s)
            .chain(&self.asked)
            .collect();
        let mut seen = HashSet::new();
        let question: Vec<String> = self
            .question_words
            .iter()
            .filter(|w| !is_stop_word(w) && wanted.contains(&stem(w)) && seen.insert((*w).clone()))
            .cloned()
            .collect();
        let mut seen = HashSet::new();
        let passage: Vec<String> = self
            .statements
            .iter()
            .flat_map(|s| words(&s.relation))
            .filter(|w| {
                !is_stop_word(w)
                    && w.chars().all(char::is_alphabetic)
                    && !wanted.contains(&stem(w))
                    && seen.insert(w.clone())
            })
            .collect();
        (question, passage)
    }

    /// Reads a question word as written by a statement that writes a word the embedder
    /// reads alike (cosine from [`SYNONYM_COSINE`], the graph reader's bound): "ceo"
    /// by "chief executive", "opposed" by "against". Such a match counts its cosine
    /// where a written word counts 1.
    pub fn with_synonyms<'a>(mut self, pairs: impl IntoIterator<Item = Synonym<'a>>) -> Self {
        for synonym in pairs {
            if synonym.cosine >= SYNONYM_COSINE {
                self.synonyms
                    .entry(stem(synonym.question))
                    .or_default()
                    .push((stem(synonym.passage), synonym.cosine));
            }
        }
        self
    }

    /// How well `stems` write the question stem `q`: the toolkit's stem similarity, or
    /// a synonym's cosine.
    fn best_match(&self, q: &str, stems: &[String]) -> f32 {
        let written = stems
            .iter()
            .map(|s| stem_similarity(s, q))
            .fold(0.0, f32::max);
        let alike = self.synonyms.get(q).map_or(0.0, |near| {
            near.iter()
                .filter(|(p, _)| stems.contains(p))
                .map(|(_, c)| *c)
                .fold(0.0, f32::max)
        });
        written.max(alike)
    }

    /// The answers, each statement scored by its word match plus `cosines[i]` (its
    /// embedding's cosine to the question's) when given.
    #[cfg(test)]
    pub fn answer(
        &self,
        rule: &SummaryRule,
        max_answers: usize,
        cosines: Option<&[f32]>,
    ) -> SummarizeReply {
        self.answer_with(&SpanModel::active(), rule, max_answers, cosines)
            .0
    }

    /// The answer as `model` ranks the spans, with its support: the share of the
    /// question's words that the statement(s) behind the first answer explain
    /// ([`Self::support`]), 0 without one.
    #[cfg(test)]
    pub fn answer_with(
        &self,
        model: &SpanModel,
        rule: &SummaryRule,
        max_answers: usize,
        cosines: Option<&[f32]>,
    ) -> (SummarizeReply, f32) {
        self.answer_spans(self.spans(cosines), model, rule, max_answers, cosines)
    }

    /// The answer as `model` ranks `spans`, this reading's spans ([`Self::spans`]) with
    /// whatever the summarizer added to their features (the kinds by meaning,
    /// [`super::typing`]).
    pub fn answer_spans(
        &self,
        spans: Spans,
        model: &SpanModel,
        rule: &SummaryRule,
        max_answers: usize,
        cosines: Option<&[f32]>,
    ) -> (SummarizeReply, f32) {
        // Some statement must say enough of the question, by its words or its meaning,
        // for any span to answer (the scorer then ranks every statement's spans).
        if !spans.gated || spans.rows.is_empty() {
            return (self.nothing_read(&spans, cosines), 0.0);
        }
        let scores: Vec<f32> = spans
            .rows
            .iter()
            .map(|r| model.score(&r.features))
            .collect();
        let shares = spans::shares(&scores);
        let mut order: Vec<usize> = (0..spans.rows.len()).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
        let top = order[0];
        // The names listed with the first answer in its sentence answer with it ("A, B
        // and C star in it"), names with a name, numbers with a number; so does every
        // span scored within `keep_within` of it.
        let (top_name, top_source) = (spans.name(self, top), spans.rows[top].source);
        let mut keep: Vec<(f32, usize)> = Vec::new();
        for &i in &order {
            let source = spans.rows[i].source;
            let name = spans.name(self, i);
            let listed = source.origin() == top_source.origin()
                && name.variant == Variant::Whole
                && top_name.variant == Variant::Whole
                && name.list == top_name.list
                && name.kind.is_numeric() == top_name.kind.is_numeric();
            if i == top || listed {
                keep.push((shares[top], i));
            } else if scores[i] >= scores[top] - rule.keep_within {
                keep.push((shares[i], i));
            }
        }
        keep.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut answers: Vec<Answer> = Vec::new();
        for (share, i) in keep {
            let lines = spans.lines(self, i);
            gather(
                &mut answers,
                spans.name(self, i),
                share,
                &lines,
                rule,
                max_answers,
            );
        }
        let (support, explanation) = match top_source {
            SpanSource::Chain { chain, .. } => {
                let chain = &spans.chains[chain];
                let first = &self.statements[chain.first];
                (
                    chain.both,
                    format!(
                        "Read in two steps without a language model from {} passage(s) and {} \
                         skeleton fact(s): about {}, \"{}\" ({}); then \"{}\" ({}).",
                        self.passages,
                        self.facts,
                        quoted_list(&self.topic),
                        first.sentence,
                        first.citation,
                        chain.next.sentence,
                        chain.next.citation
                    ),
                )
            }
            SpanSource::One { statement: i, .. } => {
                let first = &self.statements[i];
                (
                    self.share(&spans.matched[i]),
                    format!(
                        "Read without a language model from {} passage(s) and {} skeleton \
                         fact(s): about {}, \"{}\" ({}).",
                        self.passages,
                        self.facts,
                        quoted_list(&self.topic),
                        first.sentence,
                        first.citation
                    ),
                )
            }
        };
        let texts: Vec<&str> = spans.rows.iter().map(|r| r.text.as_str()).collect();
        let features: Vec<&[f32]> = spans.rows.iter().map(|r| r.features.as_slice()).collect();
        let reply = SummarizeReply {
            low_confidence: false,
            answers,
            explanation,
            confidence: model.chance(&scores, &texts, &features),
            decline: None,
        };
        (reply, support)
    }

    /// "I don't know", when no statement offers a span of the kind asked.
    fn nothing_read(&self, spans: &Spans, cosines: Option<&[f32]>) -> SummarizeReply {
        let explanation = if !spans.gated {
            if !self.topic.is_empty() && !self.names_topic {
                format!(
                    "I don't know: no passage names {}, and none says enough of what the \
                     question asks.",
                    quoted_list(&self.topic)
                )
            } else {
                format!(
                    "I don't know: {} passage sentence(s) were read{}, but none says \
                     enough of what the question asks (at least {:.0} % of its words, one \
                     outside its names{}).",
                    self.statements.len(),
                    if self.topic.is_empty() {
                        String::new()
                    } else {
                        format!(" for {}", quoted_list(&self.topic))
                    },
                    100.0 * MIN_OPENING_COVERAGE,
                    if cosines.is_some() {
                        format!(", or reads within cosine {MIN_COSINE} of it")
                    } else {
                        String::new()
                    }
                )
            }
        } else {
            format!(
                "I don't know: passages speak of {}, but nothing they say of it is {} the \
                 question asks for.",
                quoted_list(&self.topic),
                self.wants
                    .kind
                    .map(|k| format!("a {k}, as"))
                    .unwrap_or_else(|| "what".to_owned())
            )
        };
        SummarizeReply {
            low_confidence: false,
            answers: Vec::new(),
            explanation,
            confidence: None,
            decline: None,
        }
    }

    /// Every span the passages offer as an answer, with the scorer's features
    /// ([`spans`](super::spans)): the names of the statements about the entity that
    /// write some of the question, and the names two-sentence chains reach.
    pub fn spans(&self, cosines: Option<&[f32]>) -> Spans {
        // Per statement, how well each question word is matched by its words.
        let matched: Vec<Vec<f32>> = self
            .statements
            .iter()
            .map(|s| self.matches(&[s.relation.as_str()]))
            .collect();
        let n = self.statements.len();
        let coverage: Vec<f32> = self.statements.iter().map(|s| self.coverage(s)).collect();
        let cosine = |i: usize| cosines.and_then(|c| c.get(i)).copied();
        let question_stems: HashSet<String> = self.question_words.iter().map(|q| stem(q)).collect();
        // The word naming the answers' class written beside one of its names, in a
        // sentence or paragraph naming the entity ("in which office does X work": "X,
        // which operates from the Brennick *office*"), stands for a word of the question.
        let class_beside = |i: usize| {
            self.wants.class.is_some()
                && self.statements[i].names.iter().any(|&named| named > 0)
                && self.statements[i].candidates.iter().any(|name| {
                    self.candidate_fit(name, &question_stems)
                        .is_some_and(|fits| fits.class)
                })
        };
        // By words: enough of the question, one word outside its names (or the class
        // word beside a name); by meaning: near enough to the question, writing some of it.
        let writes = |i: usize, min: f32| {
            coverage[i] >= min
                && (self.share(&matched[i]) > 0.0 || self.asked.is_empty() || class_beside(i))
        };
        let by_words: Vec<bool> = (0..n).map(|i| writes(i, MIN_COVERAGE)).collect();
        // Enough to read at all ([`MIN_OPENING_COVERAGE`]).
        let opens: Vec<bool> = (0..n).map(|i| writes(i, MIN_OPENING_COVERAGE)).collect();
        let by_meaning: Vec<bool> = (0..n)
            .map(|i| coverage[i] > 0.0 && cosine(i).is_some_and(|c| c >= MIN_COSINE))
            .collect();
        // When the passages write the entity's name, a sentence should be about it:
        // write it, or stand in a paragraph or a file that does (a document about a
        // cooperative seldom names it in the sentence giving its treasurer).
        let about: Vec<bool> = self
            .statements
            .iter()
            .map(|s| {
                !self.names_topic
                    || s.names.iter().any(|&n| n > 0)
                    || self.topic_files.contains(&s.file)
            })
            .collect();
        let gate: Vec<f32> = (0..n)
            .map(|i| {
                if about[i] && (opens[i] || by_meaning[i]) {
                    coverage[i] + cosine(i).unwrap_or(0.0)
                } else {
                    f32::NEG_INFINITY
                }
            })
            .collect();
        // A question about an entity no passage names reads nothing, not even a chain
        // from sentences about something else.
        let unnamed = !self.topic.is_empty() && !self.names_topic;
        let gated = !unnamed && gate.iter().any(|s| s.is_finite());
        let chains = if gated {
            self.chains(&gate, &matched)
        } else {
            Vec::new()
        };
        // A question about an entity no passage names reads nothing. Otherwise the
        // statements about it that write some of the question offer spans: those that
        // say enough of it (by words or meaning), and those whose sentence or paragraph
        // names the entity; a sentence that does neither, in a file that names it, is
        // not read as saying anything of it.
        let readable: Vec<usize> = if unnamed {
            Vec::new()
        } else {
            (0..n)
                .filter(|&i| {
                    about[i]
                        && coverage[i] > 0.0
                        && (by_words[i]
                            || by_meaning[i]
                            || self.topic.is_empty()
                            || self.statements[i].names.iter().any(|&named| named > 0))
                })
                .collect()
        };
        let mut by_coverage = readable.clone();
        by_coverage.sort_by(|&a, &b| coverage[b].total_cmp(&coverage[a]));
        let rank = |i: usize| {
            by_coverage
                .iter()
                .position(|&j| coverage[j] <= coverage[i])
                .unwrap_or(0) as f32
        };
        let f = |name: &str| spans::feature(name);
        let width = SPAN_FEATURES.len();
        let statement_row = |i: usize, share: f32| {
            let mut row = vec![0.0f32; width];
            row[f("coverage")] = coverage[i];
            row[f("share")] = share;
            row[f("cosine")] = cosine(i).unwrap_or(0.0);
            row[f("by_words")] = f32::from(u8::from(by_words[i]));
            row[f("by_meaning")] = f32::from(u8::from(by_meaning[i]));
            row[f("names_entity")] =
                f32::from(self.statements[i].names.iter().copied().max().unwrap_or(0)) / 2.0;
            row[f("statement_rank")] = 1.0 / (1.0 + rank(i));
            row
        };
        // The question's class word ("which *films*"), by stem.
        let class = self.wants.class.as_deref().map(stem);
        // A quantity asked other than a count ("how long", "how big"): a plain number is
        // read with the unit written after it ("5 seconds", "40,000 crowns"), the bare
        // number being the other reading. A count ("how *many* …") is the number alone,
        // and an amount says its currency itself ("€150 per call").
        let measure = self.wants.kind == Some(AnswerType::Number)
            && !self
                .question_words
                .windows(2)
                .any(|w| w[0] == "how" && w[1] == "many");
        let unit_reading = |row: &mut [f32], name: &Name, offered: &[Name]| {
            if !measure {
                return;
            }
            let with_unit = match name.variant {
                Variant::WithUnit
                    if name.text.rsplit_once(' ').is_some_and(|(number, _)| {
                        answer_type::form_type(number, "") == AnswerType::Number
                    }) =>
                {
                    false
                }
                Variant::Whole if answer_type::form_type(&name.text, "") != AnswerType::Number => {
                    return
                }
                Variant::Whole => offered.iter().any(|other| {
                    other.variant == Variant::WithUnit
                        && other
                            .text
                            .rsplit_once(' ')
                            .is_some_and(|(number, _)| number == name.text)
                }),
                _ => return,
            };
            row[f("with_unit")] = f32::from(u8::from(with_unit));
        };
        let mut rows: Vec<SpanRow> = Vec::new();
        for &i in &readable {
            let statement = &self.statements[i];
            let offered = statement.candidates.len() as f32;
            // The sentence writes the class word asked: it speaks of its paragraph's
            // subject by its class ("… star in *the film*").
            let class_written = class
                .as_ref()
                .is_some_and(|c| statement.stems.iter().any(|s| stem_similarity(s, c) >= 0.8));
            for (c, name) in statement.candidates.iter().enumerate() {
                if let Some(fits) = self.candidate_fit(name, &question_stems) {
                    let mut row = statement_row(i, self.share(&matched[i]));
                    fits.write(&mut row, name, self.wants.kind);
                    unit_reading(&mut row, name, &statement.candidates);
                    row[f("statement_spans")] = 1.0 / offered;
                    row[f("opener_by_class")] = f32::from(u8::from(name.opener && class_written));
                    rows.push(SpanRow {
                        text: name.text.clone(),
                        sentence: statement.sentence.clone(),
                        features: row,
                        source: SpanSource::One {
                            statement: i,
                            name: c,
                        },
                    });
                }
            }
        }
        for (k, chain) in chains.iter().enumerate() {
            for (c, name) in chain.next.candidates.iter().enumerate() {
                if let Some(fits) = self.candidate_fit(name, &question_stems) {
                    let mut row = statement_row(chain.first, chain.both);
                    fits.write(&mut row, name, self.wants.kind);
                    unit_reading(&mut row, name, &chain.next.candidates);
                    row[f("statement_spans")] = 1.0 / chain.next.candidates.len() as f32;
                    row[f("chain")] = 1.0;
                    row[f("chain_gain")] = chain.both - self.share(&matched[chain.first]);
                    rows.push(SpanRow {
                        text: name.text.clone(),
                        sentence: chain.next.sentence.clone(),
                        features: row,
                        source: SpanSource::Chain { chain: k, name: c },
                    });
                }
            }
        }
        // How many rows propose each name.
        let keys: Vec<Vec<String>> = rows.iter().map(|r| words(&r.text)).collect();
        let mut proposed: HashMap<&[String], usize> = HashMap::new();
        for key in &keys {
            *proposed.entry(key.as_slice()).or_default() += 1;
        }
        for (row, key) in rows.iter_mut().zip(&keys) {
            row.features[f("repeated")] = (1.0 + proposed[key.as_slice()] as f32).ln();
        }
        Spans {
            rows,
            chains,
            matched,
            gated,
        }
    }

    /// How much of the question's words `relations` explain, in `[0, 1]`: the scale on
    /// which a passage's statement and a graph path's relations are compared.
    pub fn support(&self, relations: &[&str]) -> f32 {
        self.share(&self.matches(relations))
    }
}

/// The spans of one question ([`Reading::spans`]).
pub struct Spans {
    pub rows: Vec<SpanRow>,
    chains: Vec<Chain>,
    /// Per statement, how well each question word is matched by its words.
    matched: Vec<Vec<f32>>,
    /// Some statement passes the words or the meaning gate: without one, the reader
    /// answers nothing, whatever the spans.
    pub gated: bool,
}

/// One row of [`Spans`].
pub struct SpanRow {
    pub text: String,
    /// The sentence it is read from (a chain's: the second statement's).
    pub sentence: String,
    pub features: Vec<f32>,
    source: SpanSource,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum SpanSource {
    One { statement: usize, name: usize },
    Chain { chain: usize, name: usize },
}

impl SpanSource {
    /// What it is read from, whatever the name: a statement, or a chain.
    fn origin(self) -> (bool, usize) {
        match self {
            Self::One { statement, .. } => (false, statement),
            Self::Chain { chain, .. } => (true, chain),
        }
    }
}

impl Spans {
    fn name<'a>(&'a self, reading: &'a Reading, i: usize) -> &'a Name {
        match self.rows[i].source {
            SpanSource::One { statement, name } => &reading.statements[statement].candidates[name],
            SpanSource::Chain { chain, name } => &self.chains[chain].next.candidates[name],
        }
    }

    /// The evidence lines row `i` cites.
    fn lines(&self, reading: &Reading, i: usize) -> Vec<u32> {
        match self.rows[i].source {
            SpanSource::One { statement, .. } => vec![reading.statements[statement].evidence],
            SpanSource::Chain { chain, .. } => {
                let chain = &self.chains[chain];
                vec![
                    reading.statements[chain.first].evidence,
                    chain.next.evidence,
                ]
            }
        }
    }
}

/// Two statements read one after the other: about the entity, then about a name the
/// first proposes.
struct Chain {
    first: usize,
    next: Statement,
    /// The share of the question both explain together.
    both: f32,
}

/// What a candidate's neighbourhood and type say of it ([`Reading::candidate_fit`]).
struct Fits {
    fit: f32,
    near: f32,
    class: bool,
}

impl Fits {
    fn write(&self, row: &mut [f32], name: &Name, asked: Option<AnswerType>) {
        let f = spans::feature;
        row[f("type_fit")] = self.fit;
        row[f("type_exact")] = f32::from(u8::from(asked == Some(name.kind)));
        row[f("near")] = self.near;
        row[f("class_near")] = f32::from(u8::from(self.class));
        row[f("weak")] = f32::from(u8::from(name.weak));
        row[f("listed")] = f32::from(u8::from(name.list != name.position && !name.opener));
        row[f("opener")] = f32::from(u8::from(name.opener));
        row[f("numeric")] = f32::from(u8::from(name.kind.is_numeric()));
        row[f("part")] = f32::from(u8::from(name.variant == Variant::Part));
        row[f("with_unit")] = f32::from(u8::from(name.variant == Variant::WithUnit));
        let phrase = matches!(name.variant, Variant::Phrase | Variant::PhraseWithArticle);
        row[f("phrase")] = f32::from(u8::from(phrase));
        row[f("phrase_article")] = f32::from(u8::from(name.variant == Variant::PhraseWithArticle));
        row[f("entity_near")] = name
            .topic_distance
            .map_or(0.0, |d| 1.0 / (1.0 + d as f32 / 3.0));
        row[f("first_name")] = f32::from(u8::from(name.position == 0 && !name.opener));
    }
}

impl Reading {
    /// The two-statement chains, when one statement cannot say all the question asks:
    /// from the names the statements that pass a gate (`gate` finite) propose (the films
    /// an actor is in), the statements about those names (who directed each film). A
    /// chain counts only when its two statements together explain more question words
    /// than any statement alone, the second explaining one the first does not; a name
    /// that leads back to the entity itself is no answer.
    fn chains(&self, gate: &[f32], lexical: &[Vec<f32>]) -> Vec<Chain> {
        if self.asked.len() < 2 {
            return Vec::new();
        }
        let share = |m: &[f32]| self.share(m);
        let best_one = (0..self.statements.len())
            .filter(|&i| gate[i].is_finite())
            .map(|i| share(&lexical[i]))
            .fold(0.0, f32::max);
        if best_one >= 1.0 {
            return Vec::new();
        }
        // The names to read on from, best statements first.
        let mut first: Vec<usize> = (0..self.statements.len())
            .filter(|&i| gate[i].is_finite() && share(&lexical[i]) > 0.0)
            .collect();
        first.sort_by(|&a, &b| share(&lexical[b]).total_cmp(&share(&lexical[a])));
        let mut bridges: Vec<(usize, &Name)> = Vec::new();
        for &i in &first {
            // Names lead on, whole or in part; a number with its unit or a run of
            // lower-case words does not.
            let names = self.statements[i]
                .candidates
                .iter()
                .filter(|c| matches!(c.variant, Variant::Whole | Variant::Part));
            for name in names {
                if bridges.len() < MAX_BRIDGES
                    && !bridges.iter().any(|(_, b)| b.words == name.words)
                {
                    bridges.push((i, name));
                }
            }
        }
        let mut chains: Vec<Chain> = Vec::new();
        let excerpts = || self.excerpts.iter().map(|(line, x)| (*line, x));
        for (i, bridge) in bridges {
            let bridge = Topic::new(
                vec![bridge.words.clone()],
                &self.passage_words,
                &self.common,
                &self.written,
            );
            let about = statements_about(excerpts(), &bridge, false, &self.common);
            for mut next in about {
                next.candidates
                    .retain(|c| !self.topic_words.contains(&c.words));
                for name in &mut next.candidates {
                    name.kind = name_type(&self.types, name);
                }
                if next.candidates.is_empty() {
                    continue;
                }
                let second = self.matches(&[next.relation.as_str()]);
                let adds = second.iter().zip(&lexical[i]).any(|(b, a)| *b > *a);
                let both = share(
                    &self.matches(&[self.statements[i].relation.as_str(), next.relation.as_str()]),
                );
                if adds && both > best_one + f32::EPSILON {
                    chains.push(Chain {
                        first: i,
                        next,
                        both,
                    });
                }
            }
        }
        chains
    }

    /// How a candidate fits as an answer; `None` for a name the question writes itself,
    /// or one whose type cannot be what is asked (a year for "who").
    /// `question_stems`: the stems of the question's words.
    fn candidate_fit(&self, name: &Name, question_stems: &HashSet<String>) -> Option<Fits> {
        // A run of lower-case words answers only a question that asks for a thing, and
        // not with the question's own words ("film" for "which films").
        let phrase = matches!(name.variant, Variant::Phrase | Variant::PhraseWithArticle);
        if phrase
            && (!matches!(self.wants.kind, None | Some(AnswerType::Thing))
                || content_stems(&name.text)
                    .iter()
                    .all(|w| question_stems.contains(w)))
        {
            return None;
        }
        let written = !name.words.is_empty()
            && self
                .question_words
                .windows(name.words.len())
                .any(|w| w == name.words.as_slice());
        if written {
            return None;
        }
        let fit = match self.wants.kind {
            // A date answers "which year" only when it writes one ("Monday" does not).
            Some(AnswerType::Year)
                if name.kind == AnswerType::Date
                    && !name
                        .words
                        .iter()
                        .any(|w| answer_type::form_type(w, "") == AnswerType::Year) =>
            {
                0.0
            }
            Some(kind) => answer_type::fit(kind, name.kind),
            None => 0.5,
        };
        if fit == 0.0 {
            return None;
        }
        // Each question word's best match near the candidate, nearer counting more.
        let near: Vec<(String, f32)> = name
            .near
            .iter()
            .map(|(w, d)| (stem(w), 1.0 / (1.0 + *d as f32 / 3.0)))
            .collect();
        let near = self.asked.iter().map(|q| {
            near.iter()
                .map(|(w, weight)| stem_similarity(w, q) * weight)
                .fold(0.0, f32::max)
        });
        let near = near.sum::<f32>() / self.asked.len().max(1) as f32;
        let class = self.wants.class.as_deref().is_some_and(|class| {
            let class = stem(class);
            name.near
                .iter()
                .any(|(w, d)| *d <= 3 && stem_similarity(&stem(w), &class) >= 0.8)
        });
        Some(Fits { fit, near, class })
    }

    /// How much of the question a statement writes, in `[0, 1]`: each question word
    /// (outside the wh-phrase) weighted by its rarity among the context's sentences,
    /// matched by the statement's sentence, or at [`PASSAGE_SHARE`] by its paragraph.
    fn coverage(&self, statement: &Statement) -> f32 {
        let sentence = statement.stems.as_slice();
        let passage = statement.paragraph.as_slice();
        let best = |q: &str, stems: &[String]| self.best_match(q, stems);
        let total: f32 = self.question_stems.iter().map(|(_, w)| w).sum::<f32>()
            + self.topic_weights.iter().sum::<f32>();
        if total <= 0.0 {
            return 0.0;
        }
        // The entity's names count whole: "Claire Danes" writes none of "Claire Skinner".
        let names: f32 = self
            .topic_weights
            .iter()
            .zip(&statement.names)
            .map(|(w, named)| match named {
                2 => *w,
                1 => PASSAGE_SHARE * w,
                _ => 0.0,
            })
            .sum();
        let words: f32 = self
            .question_stems
            .iter()
            .map(|(q, w)| w * best(q, sentence).max(PASSAGE_SHARE * best(q, passage)))
            .sum();
        (names + words) / total
    }

    /// How much of the question words matched as `matched` ([`Self::matches`]) say:
    /// the matches averaged, in `[0, 1]`.
    fn share(&self, matched: &[f32]) -> f32 {
        matched.iter().sum::<f32>() / self.asked.len().max(1) as f32
    }

    /// Per explainable question word, its best match among the words of `relations`
    /// (the toolkit's stem similarity).
    fn matches(&self, relations: &[&str]) -> Vec<f32> {
        let stems: Vec<String> = relations.iter().flat_map(|r| relation_stems(r)).collect();
        self.asked
            .iter()
            .map(|q| self.best_match(q, &stems))
            .collect()
    }
}

/// The question words a statement's words can explain: not an opening wh-word ("who",
/// "when"), which names what is asked by meaning only, and not a class word ("the film
/// X", "which movies"), which names no relation (every statement about a film says "the
/// film").
fn explainable_words(terms: &QuestionTerms, wants: &Asked) -> Vec<String> {
    terms
        .stems()
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            !terms.asks_a_kind(*i)
                && !terms.names_a_class(*i)
                && !wants.phrase.contains(&terms.position(*i))
        })
        .map(|(_, stem)| stem.clone())
        .collect()
}

/// The question's content stems outside its wh-phrase, each weighted by its inverse
/// frequency among the statements' sentences (a word no sentence writes weighs most).
fn weighted_question(
    question: &str,
    wants: &Asked,
    statements: &[Statement],
    topic: &[Vec<String>],
) -> (Vec<(String, f32)>, Vec<f32>) {
    let sentences: Vec<HashSet<&String>> = statements
        .iter()
        .map(|s| s.stems.iter().collect())
        .collect();
    let n = sentences.len() as f32;
    let weight = |stem: &String| {
        let df = sentences.iter().filter(|s| s.contains(stem)).count() as f32;
        ((n + 1.0) / (df + 0.5)).ln().max(0.1)
    };
    // Each name of the entity weighs as its content words together.
    let topic_weights: Vec<f32> = topic
        .iter()
        .map(|t| {
            t.iter()
                .filter(|w| !is_stop_word(w))
                .map(|w| weight(&stem(w)))
                .sum::<f32>()
                .max(0.1)
        })
        .collect();
    let all = words(question);
    let mut inside: HashSet<usize> = HashSet::new();
    for t in topic.iter().filter(|t| !t.is_empty()) {
        for start in 0..all.len().saturating_sub(t.len() - 1) {
            if all[start..start + t.len()] == **t {
                inside.extend(start..start + t.len());
            }
        }
    }
    let mut out: Vec<(String, f32)> = Vec::new();
    for (at, word) in all.iter().enumerate() {
        if inside.contains(&at) {
            continue;
        }
        // A class word the lexicon does not type ("which *genres*") says what the
        // sentence should write; one naming a type ("what *year*", "which *company*")
        // is met by the answer's type, and the rest of the wh-phrase ("how many")
        // says nothing a sentence writes.
        let class =
            wants.class.as_deref() == Some(word.as_str()) && wants.kind == Some(AnswerType::Thing);
        if is_stop_word(word) || (wants.phrase.contains(&at) && !class) {
            continue;
        }
        let stem = stem(word);
        if out.iter().any(|(s, _)| *s == stem) {
            continue;
        }
        let w = weight(&stem);
        out.push((stem, w));
    }
    (out, topic_weights)
}

/// A candidate's type: a number with its unit is of its number's type ("40,000
/// crowns" an amount as "40,000" is, "5 seconds" a number).
fn name_type(types: &NameTypes, name: &Name) -> AnswerType {
    match name.text.rsplit_once(' ') {
        Some((number, _)) if name.variant == Variant::WithUnit => {
            match answer_type::form_type(&name.text, &name.previous) {
                AnswerType::Amount => AnswerType::Amount,
                _ => types.type_of(number, &name.previous),
            }
        }
        _ => types.type_of(&name.text, &name.previous),
    }
}

/// The type of `text` as the reader types a candidate among the request's passages
/// (its form, and what the passages write around it): for measuring the typing.
pub fn type_in_context(request: &SummarizeRequest, text: &str) -> AnswerType {
    let passages = request
        .context
        .evidence
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match &e.item {
            EvidenceItem::Excerpt(x) if x.channel != SKELETON_CHANNEL => Some((i as u32, x)),
            _ => None,
        });
    PassageNames::read(passages).types.type_of(text, "")
}

/// What the passages write as names, read in one pass: the type of every name from all
/// the places it is written, the names that are not a sentence's weak opener and what
/// stands in them before a preposition (what a question's words may name), and the
/// words also written in lower case (common words, not names).
struct PassageNames {
    types: NameTypes,
    written: HashSet<Vec<String>>,
    common: HashSet<String>,
}

impl PassageNames {
    fn read<'a>(passages: impl IntoIterator<Item = (u32, &'a Excerpt)>) -> Self {
        let mut out = Self {
            types: NameTypes::default(),
            written: HashSet::new(),
            common: HashSet::new(),
        };
        for (_, excerpt) in passages {
            let text = excerpt.text.as_str();
            if text.len() >= u32::MAX as usize {
                continue;
            }
            let tokens = chunk::tokenize(text);
            out.common.extend(
                tokens
                    .iter()
                    .map(|t| token_text(text, t))
                    .filter(|w| w.chars().next().is_some_and(char::is_lowercase))
                    .map(str::to_owned),
            );
            for sentence in split_sentences(text, &tokens) {
                for (_, name) in names_in(text, &tokens, &sentence, &[]) {
                    out.types.add(&name.text, &name.previous, &name.next);
                    if !name.weak {
                        // What stands before a preposition in it names too: "Harold
                        // Quist" of "Harold Quist of Tanner Street" (not what follows,
                        // "the Annual General Meeting" of "Minutes of the …").
                        let head = name
                            .words
                            .split(|w| PART_JOINERS.contains(&w.as_str()))
                            .next()
                            .unwrap_or_default();
                        if !head.is_empty() && head.len() < name.words.len() {
                            out.written.insert(head.to_vec());
                        }
                        out.written.insert(name.words);
                    }
                }
            }
        }
        out
    }
}

/// Adds `name` as an answer citing `lines`, or, when it is one already, adds the lines
/// its evidence lacks (up to `rule.max_citations`); at most `max_answers` answers.
fn gather(
    answers: &mut Vec<Answer>,
    name: &Name,
    score: f32,
    lines: &[u32],
    rule: &SummaryRule,
    max_answers: usize,
) {
    match answers.iter().position(|a| words(&a.text) == name.words) {
        Some(known) => {
            let answer = &mut answers[known];
            for &line in lines {
                if !answer.evidence.contains(&line) && answer.evidence.len() < rule.max_citations {
                    answer.evidence.push(line);
                }
            }
        }
        None if answers.len() < max_answers => {
            let mut evidence: Vec<u32> = Vec::with_capacity(lines.len());
            for &line in lines {
                if !evidence.contains(&line) {
                    evidence.push(line);
                }
            }
            answers.push(Answer {
                text: name.text.clone(),
                entity: None,
                score,
                evidence,
            });
        }
        None => {}
    }
}

fn quoted_list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names the question asks about (see the module documentation).
fn topic_names(request: &SummarizeRequest, names: &PassageNames) -> Vec<String> {
    let delimited: Vec<String> = delimited_names(&request.question)
        .into_iter()
        .map(|(_, name)| name.to_owned())
        .collect();
    if !delimited.is_empty() {
        return delimited;
    }
    if !request.topic_entities.is_empty() {
        return request
            .topic_entities
            .iter()
            .map(|e| e.name.clone())
            .collect();
    }
    // The runs of question words the passages write as names, longest first: every
    // name the question writes ("when did Omar Haddad join Veltra": both).
    let question = words(&request.question);
    let (written, common) = (&names.written, &names.common);
    // The wh-phrase's words ("which *company*") say what is asked, not of what; a
    // single word the question writes in lower case is a name only when no other is.
    let mut taken = vec![false; question.len()];
    for at in answer_type::asked(&request.question).phrase {
        if let Some(t) = taken.get_mut(at) {
            *t = true;
        }
    }
    let capitalized_in_question: HashSet<String> = request
        .question
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| {
            w.chars()
                .next()
                .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
        })
        .map(str::to_lowercase)
        .collect();
    let mut found = Vec::new();
    let mut lower = Vec::new();
    for len in (1..=question.len()).rev() {
        for start in 0..=question.len() - len {
            let run = &question[start..start + len];
            if taken[start..start + len].iter().any(|t| *t)
                || run.iter().all(|w| is_stop_word(w))
                || !written.contains(run)
            {
                continue;
            }
            // A date or number in the question constrains the answer; it is not what
            // the question is about ("the March 2023 share offer").
            if answer_type::form_type(&run.join(" "), "").is_numeric() {
                continue;
            }
            if len == 1 && !capitalized_in_question.contains(&run[0]) {
                if !common.contains(&run[0]) {
                    lower.push(run[0].clone());
                }
                continue;
            }
            taken[start..start + len].iter_mut().for_each(|t| *t = true);
            found.push(run.join(" "));
        }
    }
    if found.is_empty() {
        found = lower;
    }
    found
}

/// The statements the excerpts make about the names `topic`; with `every_sentence`,
/// every other sentence too.
fn statements_about<'a>(
    excerpts: impl IntoIterator<Item = (u32, &'a Excerpt)>,
    topic: &Topic,
    every_sentence: bool,
    common: &HashSet<String>,
) -> Vec<Statement> {
    let mut statements = Vec::new();
    for (line, excerpt) in excerpts {
        if excerpt.channel == SKELETON_CHANNEL {
            statements.extend(fact_statement(line, excerpt, &topic.names));
        } else {
            statements.extend(passage_statements(
                line,
                excerpt,
                topic,
                every_sentence,
                common,
            ));
        }
    }
    statements
}

/// Whether `name` is one of the `topic` names, word for word.
fn names_topic(name: &Name, topic: &[Vec<String>]) -> bool {
    topic.iter().any(|t| !t.is_empty() && name.words == *t)
}

/// The entity a reading is about, as passages write it: its names whole, and, in a
/// file that writes one of them whole, the short forms a text refers back to it with
/// ("Halvard Brenning" then "Brenning returned to Tallmark"; "Renata Osei-Vail" then
/// "Osei-Vail was born in …").
struct Topic {
    names: Vec<Vec<String>>,
    /// Per name, its short forms: each run of its first or of its last words that is
    /// no stop word, not only words the passages also write in lower case (common
    /// words: "Optics" of "Ferrisline Optics" when they write "optics"), no other
    /// name's short form, and in no other name the passages write ("Aerolith" of
    /// "Aerolith S2" where they also write "Aerolith Console").
    short: Vec<Vec<Vec<String>>>,
    /// The files whose passages write one of its names whole, in any case.
    files: HashSet<String>,
}

impl Topic {
    /// `passages`: each passage's file and words.
    fn new(
        names: Vec<Vec<String>>,
        passages: &[(String, Vec<String>)],
        common: &HashSet<String>,
        written: &HashSet<Vec<String>>,
    ) -> Self {
        let files: HashSet<String> = passages
            .iter()
            .filter(|(_, all)| {
                names
                    .iter()
                    .any(|t| !t.is_empty() && all.windows(t.len()).any(|w| w == t.as_slice()))
            })
            .map(|(file, _)| file.clone())
            .collect();
        let runs = |name: &Vec<String>| -> Vec<Vec<String>> {
            // Without the stop words around it ("the Aerolith S2"): the name itself,
            // then the runs of its first or last words.
            let first = name.iter().position(|w| !is_stop_word(w)).unwrap_or(0);
            let last = name
                .iter()
                .rposition(|w| !is_stop_word(w))
                .map_or(0, |l| l + 1);
            let core = &name[first..last.max(first)];
            let bare = (core.len() < name.len()).then(|| core.to_vec());
            bare.into_iter()
                .chain((1..core.len()).flat_map(|k| [core[..k].to_vec(), core[k..].to_vec()]))
                .filter(|run| {
                    !run.iter().all(|w| is_stop_word(w))
                        && !run.iter().all(|w| common.contains(w))
                        && !answer_type::form_type(&run.join(" "), "").is_numeric()
                })
                .collect()
        };
        let all: Vec<Vec<Vec<String>>> = names.iter().map(runs).collect();
        let short = all
            .iter()
            .enumerate()
            .map(|(i, forms)| {
                forms
                    .iter()
                    .filter(|f| {
                        let in_another = |n: &Vec<String>| {
                            n != *f
                                && n.windows(f.len()).any(|w| w == f.as_slice())
                                && !writes_form(n, &names)
                        };
                        !names.contains(f)
                            && !all
                                .iter()
                                .enumerate()
                                .any(|(j, other)| j != i && other.contains(f))
                            && !written.iter().any(in_another)
                    })
                    .cloned()
                    .collect()
            })
            .collect();
        Self {
            names,
            short,
            files,
        }
    }

    /// Per name, the forms a passage of `file` may write it in.
    fn forms(&self, file: &str) -> Vec<Vec<Vec<String>>> {
        let refers_back = self.files.contains(file);
        self.names
            .iter()
            .zip(&self.short)
            .map(|(name, short)| {
                let mut forms = vec![name.clone()];
                if refers_back {
                    forms.extend(short.iter().cloned());
                }
                forms
            })
            .collect()
    }
}

/// Whether `name` writes the entity in one of its `forms`, or with middle names or
/// initials added ("Halvard Emil Brenning" for "Halvard Brenning").
fn writes_form(name: &[String], forms: &[Vec<String>]) -> bool {
    forms.iter().any(|f| {
        !f.is_empty()
            && (name == f.as_slice()
                || (f.len() >= 2
                    && name.len() > f.len()
                    && name.len() <= f.len() + 2
                    && name.first() == f.first()
                    && name.last() == f.last()))
    })
}

/// A skeleton fact about the entity: its other end, what the relation says.
fn fact_statement(line: u32, excerpt: &Excerpt, topic: &[Vec<String>]) -> Option<Statement> {
    let mut parts = excerpt.text.splitn(3, " | ");
    let (head, relation, tail) = (parts.next()?, parts.next()?, parts.next()?);
    let name = |text: &str| {
        let mut name = Name::new(text.trim().to_owned(), false);
        name.kind = answer_type::form_type(&name.text, "");
        name
    };
    let (head, tail) = (name(head), name(tail));
    let names = topic
        .iter()
        .map(|t| u8::from(*t == head.words || *t == tail.words) * 2)
        .collect();
    let other = if names_topic(&head, topic) {
        tail
    } else if names_topic(&tail, topic) {
        head
    } else {
        return None;
    };
    Some(Statement {
        relation: words(relation).join(" "),
        candidates: vec![other],
        paragraph: Vec::new(),
        names,
        evidence: line,
        sentence: excerpt.text.clone(),
        stems: content_stems(&excerpt.text),
        file: excerpt.file.clone(),
        citation: excerpt.citation(),
    })
}

/// One sentence of a passage: its token range and whether it opens a paragraph.
struct Sentence {
    tokens: std::ops::Range<usize>,
    opens_paragraph: bool,
}

/// The statements of one passage about the entity; with `every_sentence`, the
/// passage's other sentences too.
fn passage_statements(
    line: u32,
    excerpt: &Excerpt,
    topic: &Topic,
    every_sentence: bool,
    common: &HashSet<String>,
) -> Vec<Statement> {
    // Per name of the entity, the forms this passage may write it in; all of them, to
    // find them in its sentences.
    let forms = topic.forms(&excerpt.file);
    let every_form: Vec<Vec<String>> = forms.iter().flatten().cloned().collect();
    let is_topic = |name: &Name| forms.iter().any(|f| writes_form(&name.words, f));
    let topic = every_form.as_slice();
    let text = excerpt.text.as_str();
    if text.len() >= u32::MAX as usize {
        return Vec::new();
    }
    let tokens = chunk::tokenize(text);
    if tokens.is_empty() {
        return Vec::new();
    }
    let sentences = split_sentences(text, &tokens);
    // Per sentence, its names; the content stems of its paragraph, and which of the
    // entity's names its paragraph writes.
    let sentence_names: Vec<_> = sentences
        .iter()
        .map(|sentence| names_in(text, &tokens, sentence, topic))
        .collect();
    let writes = |names: &[(std::ops::Range<usize>, Name)], t: &[Vec<String>]| {
        names.iter().any(|(_, n)| writes_form(&n.words, t))
    };
    let mut paragraphs: Vec<(Vec<String>, Vec<bool>)> = Vec::with_capacity(sentences.len());
    let mut start = 0;
    for end in 1..=sentences.len() {
        if end == sentences.len() || sentences[end].opens_paragraph {
            let first = &sentences[start].tokens;
            let last = &sentences[end - 1].tokens;
            let stems = content_stems(&slice(text, &tokens, first.start..last.end));
            let named: Vec<bool> = forms
                .iter()
                .map(|t| {
                    sentence_names[start..end]
                        .iter()
                        .any(|names| writes(names, t))
                })
                .collect();
            paragraphs.extend(std::iter::repeat_n((stems, named), end - start));
            start = end;
        }
    }
    let mut out = Vec::new();
    // The name the current paragraph opens with.
    let mut subject: Option<Name> = None;
    // Whether an earlier sentence of the current paragraph names the entity.
    let mut named_before = false;
    for (n, sentence) in sentences.iter().enumerate() {
        let names = sentence_names[n].clone();
        if sentence.opens_paragraph {
            // The name the paragraph opens with, maybe after an article ("The").
            let opening = sentence.tokens.start;
            let article = is_stop_word(&token_text(text, &tokens[opening]).to_lowercase());
            subject = names
                .first()
                .filter(|(range, name)| {
                    !name.weak
                        && (range.start == opening || (article && range.start == opening + 1))
                })
                .map(|(_, name)| name.clone());
        }
        if sentence.opens_paragraph {
            named_before = false;
        }
        let subject_is_topic = subject.as_ref().is_some_and(is_topic);
        let topic_at: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, (_, name))| is_topic(name))
            .map(|(i, _)| i)
            .collect();
        // A sentence about the entity names it, opens a paragraph about it, or follows
        // one of its paragraph's sentences that names it ("It was …").
        let about = !topic_at.is_empty() || subject_is_topic || (named_before && every_sentence);
        named_before |= !topic_at.is_empty();
        if !about && !every_sentence {
            continue;
        }
        let mut candidates: Vec<Name> = Vec::new();
        if !topic_at.is_empty() {
            let peers = listed_with(text, &tokens, &names, &topic_at);
            candidates.extend(
                names
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, name))| {
                        !topic_at.contains(i) && !peers.contains(i) && !is_topic(name)
                    })
                    .map(|(_, (_, name))| name.clone()),
            );
            if let Some(subject) = subject.as_ref().filter(|_| !subject_is_topic) {
                if !candidates.iter().any(|c| c.words == subject.words) {
                    let mut opener = subject.clone();
                    opener.opener = true;
                    candidates.push(opener);
                }
            }
        } else {
            candidates.extend(names.iter().map(|(_, name)| name.clone()));
        }
        if candidates.iter().any(|c| !c.weak) {
            candidates.retain(|c| !c.weak);
        }
        // A lone capitalized word opening its sentence that the passages also write
        // in lower case is a common word ("Removed: …", "**Decision:** …"), not a
        // name. Elsewhere such a word may well be one ("its genre is Drama").
        candidates.retain(|c| !(c.weak && c.words.len() == 1 && common.contains(&c.words[0])));
        // How far each candidate is written from the entity's name, in tokens.
        let topic_ranges: Vec<&std::ops::Range<usize>> =
            topic_at.iter().map(|&i| &names[i].0).collect();
        for c in &mut candidates {
            if let Some((r, _)) = names.get(c.position).filter(|_| !c.opener) {
                c.topic_distance = topic_ranges
                    .iter()
                    .map(|t| {
                        if t.end <= r.start {
                            r.start - t.end
                        } else {
                            t.start.saturating_sub(r.end)
                        }
                    })
                    .min();
            }
        }
        let mut variants: Vec<Name> = Vec::new();
        for c in candidates.iter().filter(|c| !c.opener) {
            if let Some((r, _)) = names.get(c.position) {
                variants.extend(name_variants(text, &tokens, &sentence.tokens, r, c, common));
            }
        }
        variants.extend(phrases(text, &tokens, &sentence.tokens, &names));
        for v in variants {
            if !candidates.iter().any(|c| c.words == v.words) {
                candidates.push(v);
            }
        }
        if candidates.is_empty() {
            continue;
        }
        // A table's row is read under its header: a cell's column names what it is
        // ("| Product | Price |" over "| Aerolith S2 | $89 |").
        let header = table_header(text, &tokens, &sentences, n);
        if let Some(header) = &header {
            for c in candidates.iter_mut().filter(|c| !c.opener) {
                let Some((r, _)) = names.get(c.position) else {
                    continue;
                };
                let column = tokens[sentence.tokens.start..r.start]
                    .iter()
                    .filter(|t| token_text(text, t) == "|")
                    .count();
                if let Some(cell) = column.checked_sub(1).and_then(|k| header.cells.get(k)) {
                    c.near.extend(
                        words(cell)
                            .into_iter()
                            .filter(|w| !is_stop_word(w))
                            .map(|w| (w, 1)),
                    );
                }
            }
        }
        // What the sentence says: its words outside every name it writes, and outside
        // the "and" of a list of names.
        let mut relation: Vec<String> = Vec::new();
        let mut at = sentence.tokens.start;
        for (range, _) in names.iter().filter(|(_, name)| !name.weak) {
            let gap = words(&slice(text, &tokens, at..range.start));
            let joins_a_list = at > sentence.tokens.start
                && matches!(gap.as_slice(), [w] if w == "and" || w == "or");
            if !joins_a_list {
                relation.extend(gap);
            }
            at = range.end;
        }
        relation.extend(words(&slice(text, &tokens, at..sentence.tokens.end)));
        let bytes = chunk::bytes_of(&tokens, &sentence.tokens);
        let mut written = text[bytes.clone()].to_owned();
        if let Some(header) = &header {
            relation.extend(words(&header.line));
            written = format!("{} … {written}", header.line);
        }
        out.push(Statement {
            relation: relation.join(" "),
            candidates,
            paragraph: paragraphs[n].0.clone(),
            names: forms
                .iter()
                .zip(&paragraphs[n].1)
                .map(|(t, in_paragraph)| {
                    if writes(&names, t) {
                        2
                    } else {
                        u8::from(
                            *in_paragraph
                                || subject.as_ref().is_some_and(|s| writes_form(&s.words, t)),
                        )
                    }
                })
                .collect(),
            evidence: line,
            stems: content_stems(&written),
            sentence: written,
            file: excerpt.file.clone(),
            citation: format!("{}:{}", excerpt.file, excerpt.offset + bytes.start as u64),
        });
    }
    out
}

/// The text of a token range (empty for an empty range).
fn slice(text: &str, tokens: &[Token], range: std::ops::Range<usize>) -> String {
    if range.is_empty() {
        return String::new();
    }
    text[chunk::bytes_of(tokens, &range)].to_owned()
}

/// The passage's sentences, an initial's full stop ("Samuel L. Jackson") not ending
/// one, each marked when a blank line (or the passage's start) comes before it. A line
/// that opens a list's item ("- ", "* ", "1. ") or a table's row ("| …") starts a
/// sentence of its own: each says its own thing ("- Yusra Kell, Firmware team lead").
/// A sentence ending inside a quotation ends after its closing quote.
fn split_sentences(text: &str, tokens: &[Token]) -> Vec<Sentence> {
    let mut out: Vec<Sentence> = Vec::new();
    // The lines that open an item or a row, and the ends inside quotations, first;
    // then the tokenizer's sentences within each piece (its cap on a sentence's length
    // counted from the piece's start).
    // A sentence that ends inside a quotation ("… no sea." He also …) ends there too.
    let quoted_end = |i: usize| {
        i >= 2
            && matches!(
                token_text(text, &tokens[i - 1]),
                "\"" | "\u{201d}" | "'" | "\u{2019}"
            )
            && matches!(token_text(text, &tokens[i - 2]), "." | "!" | "?")
            && glued(&tokens[i - 2], &tokens[i - 1])
            && !glued(&tokens[i - 1], &tokens[i])
            && token_text(text, &tokens[i]).starts_with(char::is_uppercase)
    };
    let mut pieces: Vec<std::ops::Range<usize>> = Vec::new();
    let mut start = 0;
    for i in 1..tokens.len() {
        let gap = &text[tokens[i - 1].end as usize..tokens[i].start as usize];
        let line = &text[tokens[i].start as usize..];
        if (gap.contains('\n') && opens_item(line)) || opens_row(text, tokens, i) || quoted_end(i) {
            pieces.push(start..i);
            start = i;
        }
    }
    pieces.push(start..tokens.len());
    let items = pieces
        .into_iter()
        .flat_map(|piece| chunk::sentences(tokens, piece));
    for range in items {
        let opens_paragraph = match range.start.checked_sub(1) {
            None => true,
            Some(previous) => {
                let gap = &text[tokens[previous].end as usize..tokens[range.start].start as usize];
                gap.matches('\n').count() >= 2
            }
        };
        if let Some(last) = out.last_mut() {
            let end = last.tokens.end;
            let initial = end >= 2
                && &text[tokens[end - 1].start as usize..tokens[end - 1].end as usize] == "."
                && is_initial(&text[tokens[end - 2].start as usize..tokens[end - 2].end as usize]);
            if initial && !opens_paragraph {
                last.tokens.end = range.end;
                continue;
            }
        }
        out.push(Sentence {
            tokens: range,
            opens_paragraph,
        });
    }
    out
}

/// The header a table's row is read under ([`table_header`]).
struct Header {
    /// The header row as written.
    line: String,
    /// Its cells' text, first column first.
    cells: Vec<String>,
}

/// The header of sentence `n` when it is a table's row below one: the first of the
/// rows it stands among, when a rule row ("|---|---|") follows that first row.
fn table_header(text: &str, tokens: &[Token], sentences: &[Sentence], n: usize) -> Option<Header> {
    let written = |k: usize| slice(text, tokens, sentences[k].tokens.clone());
    let is_row = |k: usize| opens_row(text, tokens, sentences[k].tokens.start);
    let rule = |k: usize| {
        written(k)
            .chars()
            .all(|c| matches!(c, '|' | '-' | ':' | ' ' | '\t'))
    };
    if !is_row(n) || rule(n) {
        return None;
    }
    let mut first = n;
    while first > 0 && is_row(first - 1) {
        first -= 1;
    }
    if first + 1 >= n || !rule(first + 1) {
        return None;
    }
    let line = written(first);
    let cells = line
        .split('|')
        .skip(1)
        .map(|cell| cell.trim().to_owned())
        .collect();
    Some(Header { line, cells })
}

/// Whether token `i` opens a table's row: a "|" opening the passage or a line.
fn opens_row(text: &str, tokens: &[Token], i: usize) -> bool {
    token_text(text, &tokens[i]) == "|"
        && (i == 0 || text[tokens[i - 1].end as usize..tokens[i].start as usize].contains('\n'))
}

/// Whether a line starting with `line` opens a list's item: a bullet ("-", "*", "+",
/// "•") or a number with "." or ")", then a space.
fn opens_item(line: &str) -> bool {
    let marker = if line.starts_with(['-', '*', '+', '•']) {
        line.chars().next().map_or(0, char::len_utf8)
    } else {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 3 || !line[digits..].starts_with(['.', ')']) {
            return false;
        }
        digits + 1
    };
    line[marker..].starts_with([' ', '\t'])
}

/// One capital letter: an initial.
fn is_initial(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(char::is_uppercase) && chars.next().is_none()
}

fn token_text<'a>(text: &'a str, token: &Token) -> &'a str {
    &text[token.start as usize..token.end as usize]
}

/// Whether a token starts a name: a capital letter or a digit.
fn capitalized(word: &str) -> bool {
    word.chars()
        .next()
        .is_some_and(|c| c.is_uppercase() || c.is_ascii_digit())
}

/// Whether what stands between tokens `a` and `b` ends a name: a line break or a
/// column's gap (a tab, two spaces): "ROAD RESURFACING\nThe Town Manager",
/// "BK-131552    Product".
fn ends_name(text: &str, a: &Token, b: &Token) -> bool {
    let gap = &text[a.end as usize..b.start as usize];
    gap.contains(['\n', '\t']) || gap.contains("  ")
}

/// No space between two tokens.
fn glued(a: &Token, b: &Token) -> bool {
    a.end == b.start
}

/// Where the entity's names stand in a sentence, as token ranges: word for word,
/// whatever their letters' case.
fn topic_spans(
    text: &str,
    tokens: &[Token],
    sentence: std::ops::Range<usize>,
    topic: &[Vec<String>],
) -> Vec<std::ops::Range<usize>> {
    // Each word of the sentence, with the token it comes from.
    let mut flat: Vec<(String, usize)> = Vec::new();
    for t in sentence.clone() {
        flat.extend(
            words(token_text(text, &tokens[t]))
                .into_iter()
                .map(|w| (w, t)),
        );
    }
    let sentence_start = sentence.start;
    let word_at = |t: usize| token_text(text, &tokens[t]);
    let is_word = |t: usize| word_at(t).chars().next().is_some_and(char::is_alphanumeric);
    // Not a part of a longer name: "Simon" in "Brett Simon", "Salt" in "Great Salt
    // Lake". A stop word opening the sentence may stand before it ("The Monsters"), and
    // a number, which opens no name ("In 2023 Lumora Water Trust turned twelve").
    // A line break or a column's gap ends a name, as in [`names_in`].
    let apart = |a: usize, b: usize| ends_name(text, &tokens[a], &tokens[b]);
    let whole = |range: &std::ops::Range<usize>| {
        let after = range.end < sentence.end
            && !apart(range.end - 1, range.end)
            && is_word(range.end)
            && (capitalized(word_at(range.end))
                || glued(&tokens[range.end - 1], &tokens[range.end]));
        let before = range.start > sentence_start && {
            let t = range.start - 1;
            !apart(t, range.start)
                && is_word(t)
                && word_at(t).starts_with(char::is_uppercase)
                && !(t == sentence_start && is_stop_word(&word_at(t).to_lowercase()))
        };
        !after && !before
    };
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for name in topic.iter().filter(|n| !n.is_empty()) {
        for start in 0..flat.len().saturating_sub(name.len() - 1) {
            let found = flat[start..start + name.len()]
                .iter()
                .zip(name)
                .all(|((w, _), n)| w == n);
            let range = flat[start].1..flat[start + name.len() - 1].1 + 1;
            if found
                && whole(&range)
                && !out
                    .iter()
                    .any(|r| r.start < range.end && range.start < r.end)
            {
                out.push(range);
            }
        }
    }
    out.sort_by_key(|r| r.start);
    out
}

/// The names of a sentence, with their token ranges, in order; the entity's own
/// (`topic`) are found word for word first.
fn names_in(
    text: &str,
    tokens: &[Token],
    sentence: &Sentence,
    topic: &[Vec<String>],
) -> Vec<(std::ops::Range<usize>, Name)> {
    let range = sentence.tokens.clone();
    let topics = topic_spans(text, tokens, range.clone(), topic);
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        if let Some(span) = topics.iter().find(|r| r.start == i) {
            out.push((
                span.clone(),
                Name::new(slice(text, tokens, span.clone()), false),
            ));
            i = span.end;
            continue;
        }
        if !capitalized(token_text(text, &tokens[i])) {
            i += 1;
            continue;
        }
        let start = i;
        let mut end = i + 1;
        loop {
            if end >= range.end || topics.iter().any(|r| r.start == end) {
                break;
            }
            let next = &tokens[end];
            let word = token_text(text, next);
            let alnum = word.chars().next().is_some_and(char::is_alphanumeric);
            let previous = &tokens[end - 1];
            if ends_name(text, previous, next) {
                break;
            }
            if glued(previous, next) {
                // "O'Connell", "Salome's", "S.W.A.T.", "9.99": glued signs and what
                // they glue; a sign that ends the sentence is not the name's.
                let joins = matches!(word, "'" | "\u{2019}" | "-" | "." | "&" | "/");
                let continues = end + 1 < range.end && glued(next, &tokens[end + 1]);
                let initial = word == "." && is_initial(token_text(text, previous));
                if alnum || (joins && (continues || initial)) {
                    end += 1;
                    continue;
                }
                break;
            }
            if alnum && capitalized(word) {
                end += 1;
                continue;
            }
            // A joining word, when a capitalized word follows it; not after a lone
            // word opening a sentence within a paragraph ("Tags for X include …"),
            // where that word is more often a common word than a name's first.
            let lone_opener = start == range.start && end - start == 1 && !sentence.opens_paragraph;
            // Nor after a number ("1994 from Tarsk" is a year and a place).
            let number = token_text(text, &tokens[start]).starts_with(|c: char| c.is_ascii_digit());
            if NAME_JOINERS.contains(&word) && !lone_opener && !number {
                let mut ahead = end + 1;
                while ahead < range.end && NAME_JOINERS.contains(&token_text(text, &tokens[ahead]))
                {
                    ahead += 1;
                }
                // A number after "in" or "of" is a date or a count, not the name's.
                let name_follows = ahead < range.end
                    && !text[tokens[end - 1].end as usize..tokens[ahead].start as usize]
                        .contains('\n')
                    && capitalized(token_text(text, &tokens[ahead]))
                    && !token_text(text, &tokens[ahead]).starts_with(|c: char| c.is_ascii_digit())
                    && !topics.iter().any(|r| (end..=ahead).contains(&r.start));
                if name_follows {
                    end = ahead + 1;
                    continue;
                }
            }
            break;
        }
        i = end;
        // A possessive's "'s" is not the name's ("Delsaux's years").
        if end >= start + 3
            && matches!(token_text(text, &tokens[end - 2]), "'" | "\u{2019}")
            && token_text(text, &tokens[end - 1]) == "s"
        {
            end -= 2;
        }
        // A name opens its sentence when only markup stands before it, or when it
        // opens a line ("## New", "- **Fixed:** …", a table's first cell).
        let opens = tokens[range.start..start]
            .iter()
            .rposition(|t| token_text(text, t).starts_with(char::is_alphanumeric))
            .is_none_or(|k| {
                text[tokens[range.start + k].end as usize..tokens[start].start as usize]
                    .contains('\n')
            });
        // A stop word capitalized because it opens the sentence, other than an
        // article, opens no name: "When Elsbeth Marrow founded …", "In 2023 …".
        // What follows it no longer opens the sentence.
        let mut start = start;
        let first = token_text(text, &tokens[start]).to_lowercase();
        let opens = if opens
            && end - start > 1
            && is_stop_word(&first)
            && !is_article(&first)
            && !glued(&tokens[start], &tokens[start + 1])
        {
            start += 1;
            while start + 1 < end && NAME_JOINERS.contains(&token_text(text, &tokens[start])) {
                start += 1;
            }
            false
        } else {
            opens
        };
        let name_text = slice(text, tokens, start..end);
        let name_words = words(&name_text);
        // A sentence's opening stop word is no name, nor a contraction of one ("They'd").
        let stop_opener = opens
            && name_words.first().is_some_and(|w| is_stop_word(w))
            && !slice(text, tokens, start + 1..end)
                .split_whitespace()
                .any(capitalized);
        if name_words.is_empty() || stop_opener {
            continue;
        }
        let weak = opens && end - start == 1 && !name_words[0].chars().all(|c| c.is_ascii_digit());
        out.push((start..end, Name::new(name_text, weak)));
    }
    // Numbers, amounts and dates, which a capital letter does not mark ("$349", "4,500
    // euros"), replace the names they overlap, except the entity's own.
    let overlaps =
        |a: &std::ops::Range<usize>, b: &std::ops::Range<usize>| a.start < b.end && b.start < a.end;
    // A number glued to the letters of a name before it is part of a code ("AV-221",
    // "Form EX-9"), and a plain number after a name's words part of a model's or a
    // version's name ("Aurelle 900", "Brackenfold 3.0"); a year or a date is not.
    let numbers: Vec<std::ops::Range<usize>> = numeric_spans(text, tokens, range.clone())
        .into_iter()
        .filter(|n| {
            !out.iter().any(|(r, _): &(std::ops::Range<usize>, Name)| {
                r.start < n.start
                    && n.start < r.end
                    && n.end <= r.end
                    && (glued(&tokens[n.start - 1], &tokens[n.start])
                        || answer_type::form_type(&slice(text, tokens, n.clone()), "")
                            == AnswerType::Number)
            })
        })
        .collect();
    out.retain(|(r, name)| names_topic(name, topic) || !numbers.iter().any(|n| overlaps(n, r)));
    for number in numbers {
        if !out.iter().any(|(r, _)| overlaps(r, &number)) {
            let name = Name::new(slice(text, tokens, number.clone()), false);
            out.push((number, name));
        }
    }
    // A term the text marks as one, in code quotes or emphasis ("`fold.toml`",
    // "*Lumicaris brenningi*"), is one name though it writes lower case, and replaces
    // the names within it ([`marked_spans`]); never across a name's edge.
    for marked in marked_spans(text, tokens, range.clone()) {
        let crosses = |r: &std::ops::Range<usize>| {
            overlaps(r, &marked) && !(marked.start <= r.start && r.end <= marked.end)
        };
        if topics.iter().any(|t| overlaps(t, &marked))
            || out.iter().any(|(r, _)| *r == marked || crosses(r))
        {
            continue;
        }
        out.retain(|(r, _)| !overlaps(r, &marked));
        let name = Name::new(slice(text, tokens, marked.clone()), false);
        if !name.words.is_empty() {
            out.push((marked, name));
        }
    }
    out.sort_by_key(|(r, _)| r.start);
    for i in 0..out.len() {
        out[i].1.position = i;
        out[i].1.list = if i > 0 && list_join(text, tokens, &out[i - 1].0, &out[i].0).is_some() {
            out[i - 1].1.list
        } else {
            i
        };
    }
    for (r, name) in &mut out {
        describe(text, tokens, &range, r, name);
    }
    out
}

/// The most tokens a marked term ([`marked_spans`]) holds.
const MAX_MARKED_TOKENS: usize = 12;

/// The token ranges a sentence marks as terms: between code quotes ("`fold.toml`"), or
/// between emphasis marks when the first word is capitalized and a later one is not
/// ("*Lumicaris brenningi*"; "*Nine Harbours*" is a name already). The marks are glued
/// to the term, the closing one as long as the opening one.
fn marked_spans(
    text: &str,
    tokens: &[Token],
    range: std::ops::Range<usize>,
) -> Vec<std::ops::Range<usize>> {
    let t = |i: usize| token_text(text, &tokens[i]);
    // The end of the run of `mark` glued together from `i`.
    let run_end = |i: usize, mark: &str| {
        let mut j = i + 1;
        while j < range.end && t(j) == mark && glued(&tokens[j - 1], &tokens[j]) {
            j += 1;
        }
        j
    };
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let mark = t(i);
        if mark != "`" && mark != "*" {
            i += 1;
            continue;
        }
        let open = run_end(i, mark);
        if open >= range.end || !glued(&tokens[open - 1], &tokens[open]) {
            i = open;
            continue;
        }
        let limit = (open + MAX_MARKED_TOKENS).min(range.end);
        let close = (open + 1..limit).find(|&k| {
            t(k) == mark && glued(&tokens[k - 1], &tokens[k]) && run_end(k, mark) - k == open - i
        });
        match close {
            Some(k) => {
                // Emphasis only where the capitalized runs that make names would cut
                // the term short ("*Lumicaris brenningi*", not "**New:**").
                let lower = (open + 1..k).any(|j| t(j).starts_with(char::is_lowercase));
                if mark == "`" || (capitalized(t(open)) && lower) {
                    out.push(open..k);
                }
                i = run_end(k, mark);
            }
            None => i = open,
        }
    }
    out
}

/// Prepositions at which a name is also read as its parts.
const PART_JOINERS: &[&str] = &["of", "in", "at", "for", "from", "with", "on"];

/// The longest run of lower-case words read as one candidate ([`phrases`]).
const PHRASE_WORDS: usize = 3;

/// Other spans a sentence's name, written at tokens `r`, may answer with: the parts of
/// a name joined by a preposition ("Saskia Brenninkmolen of Ironbark Assurance": both),
/// and a number with the lower-case word after it, which says what it counts ("40,000
/// crowns", "5 seconds").
fn name_variants(
    text: &str,
    tokens: &[Token],
    sentence: &std::ops::Range<usize>,
    r: &std::ops::Range<usize>,
    name: &Name,
    common: &HashSet<String>,
) -> Vec<Name> {
    let t = |i: usize| token_text(text, &tokens[i]);
    let mut ranges: Vec<(std::ops::Range<usize>, Variant)> = Vec::new();
    // A first word that is a stop word, or that the passages also write in lower case,
    // may be a common word capitalized where it opens a sentence or a list item ("When
    // Elsbeth Marrow …", "Dropped the …"), wherever the name stands.
    let first = t(r.start).to_lowercase();
    if r.end - r.start > 1 && (is_stop_word(&first) || common.contains(&first)) {
        let mut start = r.start + 1;
        while start < r.end && NAME_JOINERS.contains(&t(start)) {
            start += 1;
        }
        ranges.push((start..r.end, Variant::Part));
    }
    let mut start = r.start;
    for j in r.start..r.end {
        if j > start && PART_JOINERS.contains(&t(j)) {
            ranges.push((start..j, Variant::Part));
            start = j + 1;
            while start < r.end && NAME_JOINERS.contains(&t(start)) {
                start += 1;
            }
        }
    }
    if start > r.start && start < r.end {
        ranges.push((start..r.end, Variant::Part));
    }
    let numeric = answer_type::form_type(&name.text, "").is_numeric();
    if numeric && r.end < sentence.end {
        let unit = t(r.end);
        if unit.chars().all(|c| c.is_alphabetic() && c.is_lowercase()) && !is_stop_word(unit) {
            ranges.push((r.start..r.end + 1, Variant::WithUnit));
        }
    }
    ranges
        .into_iter()
        .filter(|(range, _)| !range.is_empty())
        .map(|(range, variant)| {
            let mut v = Name::new(slice(text, tokens, range.clone()), false);
            v.position = name.position;
            v.list = name.list;
            v.topic_distance = name.topic_distance;
            v.variant = variant;
            describe(text, tokens, sentence, &range, &mut v);
            v
        })
        .filter(|v| !v.words.is_empty())
        .collect()
}

/// The runs of lower-case content words of a sentence outside its names (at most
/// [`PHRASE_WORDS`]), each also with the article before it: what a "what" question
/// may be answered with ("a failed transformer", "repeatable migrations").
fn phrases(
    text: &str,
    tokens: &[Token],
    sentence: &std::ops::Range<usize>,
    names: &[(std::ops::Range<usize>, Name)],
) -> Vec<Name> {
    let t = |i: usize| token_text(text, &tokens[i]);
    let in_name = |i: usize| names.iter().any(|(r, _)| r.contains(&i));
    let content = |i: usize| {
        let w = t(i);
        !in_name(i) && w.chars().all(|c| c.is_alphabetic() && c.is_lowercase()) && !is_stop_word(w)
    };
    let mut out = Vec::new();
    let mut i = sentence.start;
    while i < sentence.end {
        if !content(i) {
            i += 1;
            continue;
        }
        let start = i;
        while i < sentence.end
            && content(i)
            && i - start < PHRASE_WORDS
            && (i == start
                || !text[tokens[i - 1].end as usize..tokens[i].start as usize].contains('\n'))
        {
            i += 1;
        }
        let mut ranges = vec![(start..i, Variant::Phrase)];
        if start > sentence.start && is_article(&t(start - 1).to_lowercase()) {
            ranges.push((start - 1..i, Variant::PhraseWithArticle));
        }
        for (range, variant) in ranges {
            let mut v = Name::new(slice(text, tokens, range.clone()), false);
            v.position = usize::MAX;
            v.list = usize::MAX;
            v.variant = variant;
            describe(text, tokens, sentence, &range, &mut v);
            out.push(v);
        }
    }
    out
}

/// Fills in what `name`, written at tokens `r` of the sentence `sentence`, has around
/// it: the words right before and after it and the content words near it.
fn describe(
    text: &str,
    tokens: &[Token],
    sentence: &std::ops::Range<usize>,
    r: &std::ops::Range<usize>,
    name: &mut Name,
) {
    name.previous = match r.start.checked_sub(1) {
        Some(t) if t >= sentence.start => token_text(text, &tokens[t]).to_lowercase(),
        _ => String::new(),
    };
    let word_at = |t: usize| {
        if t < sentence.end {
            token_text(text, &tokens[t]).to_lowercase()
        } else {
            String::new()
        }
    };
    let after_next = word_at(r.end + 1);
    name.next = if after_next.chars().next().is_some_and(char::is_alphanumeric)
        && !is_stop_word(&after_next)
    {
        String::new()
    } else {
        word_at(r.end)
    };
    let before = r.start.saturating_sub(NEAR_TOKENS).max(sentence.start)..r.start;
    let after = r.end..(r.end + NEAR_TOKENS).min(sentence.end);
    let distance = |t: usize| {
        if t < r.start {
            r.start - t
        } else {
            t + 1 - r.end
        }
    };
    name.near = before
        .chain(after)
        .map(|t| (token_text(text, &tokens[t]).to_lowercase(), distance(t)))
        .filter(|(w, _)| w.chars().next().is_some_and(char::is_alphanumeric) && !is_stop_word(w))
        .collect();
}

/// The numbers, amounts and dates of a sentence, as token ranges: "$349", "€1.2
/// million", "4,500 euros", "40%", "12 March 2024", "March 12, 2024", "2024-03-12",
/// "twenty-five".
fn numeric_spans(
    text: &str,
    tokens: &[Token],
    range: std::ops::Range<usize>,
) -> Vec<std::ops::Range<usize>> {
    let t = |i: usize| token_text(text, &tokens[i]);
    let digit = |i: usize| t(i).chars().next().is_some_and(|c| c.is_ascii_digit());
    let month = |i: usize| capitalized(t(i)) && MONTHS.contains(&t(i).to_lowercase().as_str());
    // "Saturday 14 September", "Mon, 15 Jul 2024": a weekday opens the date after it.
    let weekday = |i: usize| {
        capitalized(t(i))
            && WEEKDAYS.contains(&t(i).to_lowercase().as_str())
            && (i + 1..(i + 3).min(range.end)).any(|j| digit(j) || month(j))
    };
    let number_word = |i: usize| {
        let w = t(i).to_lowercase();
        w != "one" && NUMBER_WORDS.contains(&w.as_str())
    };
    // Past the signs and letters glued to a number: "4,500", "3.5m", "1st", "40%".
    let glued_run = |mut end: usize| {
        while end < range.end && glued(&tokens[end - 1], &tokens[end]) {
            let w = t(end);
            let sign = matches!(w, "," | "." | "-" | "/");
            let number_follows =
                end + 1 < range.end && glued(&tokens[end], &tokens[end + 1]) && digit(end + 1);
            if w.chars().all(char::is_alphanumeric) || w == "%" || (sign && number_follows) {
                end += 1;
            } else {
                break;
            }
        }
        end
    };
    let mut out = Vec::new();
    let mut i = range.start;
    while i < range.end {
        let currency = matches!(t(i), "$" | "€" | "£" | "¥" | "₹")
            && i + 1 < range.end
            && glued(&tokens[i], &tokens[i + 1])
            && digit(i + 1);
        if !(currency || digit(i) || month(i) || number_word(i) || weekday(i)) {
            i += 1;
            continue;
        }
        let start = i;
        let mut has_month = month(i) || weekday(i);
        let mut seen_month = month(i);
        let mut end = glued_run(i + 1);
        if weekday(i) && end < range.end && t(end) == "," {
            end += 1;
        }
        while end < range.end {
            let w = t(end).to_lowercase();
            let scale = matches!(
                w.as_str(),
                "million" | "billion" | "thousand" | "hundred" | "bn" | "percent"
            );
            if scale || CURRENCY_WORDS.contains(&w.as_str()) || number_word(end) {
                end = glued_run(end + 1);
            } else if month(end) && !seen_month {
                has_month = true;
                seen_month = true;
                end = glued_run(end + 1);
            } else if has_month && digit(end) {
                end = glued_run(end + 1);
            } else if has_month
                && t(end) == ","
                && end + 1 < range.end
                && digit(end + 1)
                && t(end + 1).len() == 4
            {
                end = glued_run(end + 2);
            } else {
                break;
            }
        }
        if has_month && (end == start + 1 || (weekday(start) && end == start + 2)) {
            // A month's name alone ("in March") is left to the names.
            i += 1;
            continue;
        }
        out.push(start..end);
        i = end;
    }
    out
}

/// How the names at token ranges `a` and `b` (in this order) are joined when they may
/// stand in one list: `Some(true)` by "and", "or", "&" (maybe after a comma),
/// `Some(false)` by a comma alone, `None` when anything else stands between them.
fn list_join(
    text: &str,
    tokens: &[Token],
    a: &std::ops::Range<usize>,
    b: &std::ops::Range<usize>,
) -> Option<bool> {
    let between: Vec<&str> = (a.end..b.start)
        .map(|t| token_text(text, &tokens[t]))
        .collect();
    match between.as_slice() {
        [","] => Some(false),
        ["and"] | ["or"] | ["&"] | [",", "and"] | [",", "or"] => Some(true),
        _ => None,
    }
}

/// The names listed with the ones at `at` ("A, B and X"): neighbours joined by a
/// comma, "and", "or", "&" or "," and "and", one of them at least by a conjunction.
/// Names joined by commas alone are no list: "Yusra Kell, Firmware team lead" says
/// who leads the team.
fn listed_with(
    text: &str,
    tokens: &[Token],
    names: &[(std::ops::Range<usize>, Name)],
    at: &[usize],
) -> Vec<usize> {
    let join = |a: usize, b: usize| list_join(text, tokens, &names[a].0, &names[b].0);
    let mut out = Vec::new();
    for &i in at {
        let (mut first, mut last) = (i, i);
        let mut conjunction = false;
        while let Some(by) = first.checked_sub(1).and_then(|j| join(j, first)) {
            conjunction |= by;
            first -= 1;
        }
        while let Some(by) = (last + 1 < names.len())
            .then(|| join(last, last + 1))
            .flatten()
        {
            conjunction |= by;
            last += 1;
        }
        if conjunction {
            out.extend((first..=last).filter(|&j| j != i));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use kgmesh_schemas::messages::context::{Context, Evidence};

    use super::*;

    fn passage(id: usize, text: &str) -> Evidence {
        excerpt(id, text, "keyword")
    }

    fn excerpt(id: usize, text: &str, channel: &str) -> Evidence {
        Evidence {
            source: "text-retriever".into(),
            score: 1.0,
            item: EvidenceItem::Excerpt(Excerpt {
                id: format!("p{id}"),
                file: "films.txt".into(),
                offset: 100 * id as u64,
                len: text.len() as u32,
                text: text.into(),
                channel: channel.into(),
            }),
        }
    }

    fn request(question: &str, evidence: Vec<Evidence>) -> SummarizeRequest {
        SummarizeRequest {
            question: question.into(),
            context: Context {
                evidence,
                notes: Vec::new(),
            },
            topic_entities: Vec::new(),
            max_answers: 10,
            cues: Vec::new(),
            plan: Vec::new(),
            preferred: Vec::new(),
        }
    }

    const HARBOUR: &str = "Harbour Lights premiered in 1987. The film was directed by Ingrid \
        Solberg. Its cast includes Tomas Berg, Anna Lind and Samuel L. Jackson. It is in \
        Norwegian.\n\nSalt Road was released in 2001. Anna Lind, Tomas Berg and Ingrid \
        Solberg star in the film. Behind the camera for Salt Road was Per Aas.";

    /// The reader's reply to `question` over one passage, without an embedder.
    fn answer_to(question: &str, text: &str) -> SummarizeReply {
        Reading::new(&request(question, vec![passage(0, text)]))
            .expect("statements")
            .answer(&SummaryRule::default(), 10, None)
    }

    fn read(question: &str, cosines: Option<&[f32]>) -> SummarizeReply {
        let request = request(
            question,
            vec![passage(0, "Nothing here."), passage(1, HARBOUR)],
        );
        Reading::new(&request)
            .expect("statements")
            .answer(&SummaryRule::default(), 10, cosines)
    }

    fn texts(reply: &SummarizeReply) -> Vec<&str> {
        reply.answers.iter().map(|a| a.text.as_str()).collect()
    }

    #[test]
    fn a_sentence_of_the_entitys_paragraph_answers_by_its_words() {
        let reply = read("who directed [Harbour Lights]", None);
        assert_eq!(texts(&reply), ["Ingrid Solberg"], "{reply:?}");
        assert_eq!(reply.answers[0].evidence, [1]);
        assert!(
            reply.explanation.contains("films.txt:1"),
            "{}",
            reply.explanation
        );
        assert!(
            reply.explanation.contains("directed by"),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn every_name_listed_answers_and_an_initial_stays_in_its_name() {
        let reply = read("who is in the cast of [Harbour Lights]", None);
        assert_eq!(
            texts(&reply),
            ["Tomas Berg", "Anna Lind", "Samuel L. Jackson"],
            "{reply:?}"
        );
    }

    #[test]
    fn a_file_that_names_the_entity_whole_may_refer_back_to_it_by_a_short_form() {
        let text = "Renata Osei-Vail is a chemist. She studied at Tallmark University.\n\n\
            Osei-Vail was born in Velmora, a river town.";
        let reply = answer_to("where was Renata Osei-Vail born", text);
        assert_eq!(texts(&reply), ["Velmora"], "{reply:?}");
        // Middle names do not hide the entity: the dates beside it are about it.
        let text = "Halvard Brenning\n\nInes Brenning was born on 2 May 1960. \
            Halvard Emil Brenning (born 4 June 1931) was a marine biologist.";
        let reply = answer_to("when was Halvard Brenning born", text);
        assert_eq!(texts(&reply), ["4 June 1931"], "{reply:?}");
        // A short form another name of the passages shares refers to no one in
        // particular: "Aerolith" of "Aerolith S2" where they also write "Aerolith Hub".
        let text = "The Aerolith S2 is a sensor. The Aerolith Hub was designed in Vessbridge.\n\n\
            Aerolith devices were designed in Carrow.";
        let reply = answer_to("where was the Aerolith S2 designed", text);
        assert!(!texts(&reply).contains(&"Carrow"), "{reply:?}");
    }

    #[test]
    fn a_lone_capitalized_common_word_is_no_name() {
        // "New" opens its line, and the passages write "new" too: a heading's word,
        // not who made the command.
        let text =
            "Changes in 5.0\n- **New:** the plan command, created for the migration step.\n\n\
            Ilse Varga made the plan command. Everything new is listed here.";
        let reply = answer_to("who created the plan command for the migration step", text);
        assert_eq!(texts(&reply), ["Ilse Varga"], "{reply:?}");
    }

    #[test]
    fn a_word_read_alike_by_the_embedder_explains_a_question_word() {
        let text = "Rafael Ostrander is the chief executive of Coldwater. \
            Greta Holmqvist is the founder of Coldwater.";
        let asked = request("who is the ceo of [Coldwater]", vec![passage(0, text)]);
        let reading = Reading::new(&asked).expect("statements");
        let (question, passage) = reading.synonym_words();
        assert_eq!(question, ["ceo"]);
        assert!(passage.contains(&"executive".to_owned()), "{passage:?}");
        // By words alone "ceo" is written nowhere: each sentence explains as much.
        let plain = reading.answer(&SummaryRule::default(), 1, None);
        let alike = |cosine: f32| {
            Reading::new(&asked)
                .expect("statements")
                .with_synonyms([Synonym {
                    question: "ceo",
                    passage: "executive",
                    cosine,
                }])
                .answer(&SummaryRule::default(), 1, None)
        };
        let near = alike(0.73);
        assert_eq!(
            texts(&near),
            ["Rafael Ostrander"],
            "{near:?} (by words: {plain:?})"
        );
        // Under the synonym bound the embedder says nothing.
        assert_eq!(texts(&alike(0.3)), texts(&plain));
    }

    #[test]
    fn a_sentence_naming_the_entity_answers_with_its_paragraphs_subject_not_its_peers() {
        let reply = read("which films did [Tomas Berg] star in", None);
        // "Anna Lind, Tomas Berg and Ingrid Solberg star in the film": the film, not the
        // names listed beside the actor.
        assert_eq!(texts(&reply), ["Salt Road"], "{reply:?}");
    }

    #[test]
    fn without_a_word_of_the_question_only_meaning_chooses_the_sentence() {
        // "Behind the camera" shares no word with "made"; lexically nothing answers.
        let salt_road = "Salt Road was released in 2001. Anna Lind, Tomas Berg and Ingrid \
            Solberg star in the film. Behind the camera for Salt Road was Per Aas.";
        let reply = answer_to("who made [Salt Road]", salt_road);
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert!(
            reply.explanation.starts_with("I don't know"),
            "{}",
            reply.explanation
        );
        let made = request("who made [Salt Road]", vec![passage(1, salt_road)]);
        let reading = Reading::new(&made).expect("statements");
        let relations: Vec<&str> = reading
            .statements
            .iter()
            .map(|s| s.relation.as_str())
            .collect();
        assert_eq!(
            relations,
            [
                "was released in",
                "star in the film",
                "behind the camera for was"
            ],
            "{reading:?}"
        );
        // An embedder that reads the third nearest answers with its name; one that finds
        // every statement far answers nothing.
        let near = reading.answer(&SummaryRule::default(), 10, Some(&[0.1, 0.2, 0.6]));
        assert_eq!(texts(&near), ["Per Aas"], "{near:?}");
        let far = reading.answer(&SummaryRule::default(), 10, Some(&[0.1, 0.15, 0.18]));
        assert!(far.answers.is_empty(), "{far:?}");
        assert!(
            far.explanation.contains("cosine 0.2"),
            "{}",
            far.explanation
        );
    }

    #[test]
    fn a_sentence_opening_with_a_lone_common_word_keeps_the_name_after_it() {
        let text = "Tides was released in 1990. Tags for Tides include Harbour Lights.";
        let reply = answer_to("what is [Tides] tagged with", text);
        assert_eq!(texts(&reply), ["Harbour Lights"], "{reply:?}");
    }

    #[test]
    fn a_name_inside_a_longer_name_is_not_the_entity() {
        let text = "Brett Simon directed After the Fox in 1966.\n\nSimon premiered in 2004. \
            The film was directed by Eddy Terstall.";
        let reply = answer_to("who directed the film [Simon]", text);
        assert_eq!(texts(&reply), ["Eddy Terstall"], "{reply:?}");
    }

    #[test]
    fn a_class_word_of_the_question_says_nothing_of_what_is_asked() {
        // "the film" is in both sentences; only "released" says what is asked.
        let text = "Tides is a film directed by Per Aas. It was released in 1990.";
        let reply = answer_to("what year was the film [Tides] released", text);
        assert_eq!(texts(&reply), ["1990"], "{reply:?}");
    }

    #[test]
    fn two_statements_chained_answer_what_neither_says_alone() {
        // Tomas Berg stars in Salt Road; Salt Road was directed by Per Aas; no sentence
        // or paragraph says both.
        let text = "Anna Lind and Tomas Berg star in Salt Road.\n\nSalt Road was directed \
            by Per Aas.\n\nHarbour Lights was directed by Ingrid Solberg.";
        let reply = answer_to("who directed the films [Tomas Berg] starred in", text);
        assert_eq!(texts(&reply), ["Per Aas"], "{reply:?}");
        assert!(
            reply.explanation.contains("two steps"),
            "{}",
            reply.explanation
        );
        // One statement that says it all needs no second one.
        let reply = answer_to("who directed [Salt Road]", text);
        assert_eq!(texts(&reply), ["Per Aas"], "{reply:?}");
        assert!(
            !reply.explanation.contains("two steps"),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn a_skeleton_fact_answers_with_its_other_end() {
        let facts = request(
            "who directed [Harbour Lights]",
            vec![
                excerpt(0, "Harbour Lights | starring | Anna Lind", "skeleton"),
                excerpt(1, "Ingrid Solberg | directed | Harbour Lights", "skeleton"),
            ],
        );
        let reply =
            Reading::new(&facts)
                .expect("statements")
                .answer(&SummaryRule::default(), 10, None);
        assert_eq!(texts(&reply), ["Ingrid Solberg"], "{reply:?}");
        assert_eq!(reply.answers[0].evidence, [1]);
    }

    #[test]
    fn passages_that_never_name_the_entity_are_a_reason_not_an_answer() {
        let reply = answer_to("who directed [Blue Hour]", HARBOUR);
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert!(
            reply.explanation.contains("no passage names \"Blue Hour\""),
            "{}",
            reply.explanation
        );
        // Not even through a chain: sentences that say all of the question's other
        // words lead from the team to its head, but none names Ashes.
        let team = "The Harbour team built the Tern engine. The Harbour team is led by \
            Ines Castellane.";
        let reply = answer_to(
            "who leads the team that built the Tern engine for [Ashes]",
            team,
        );
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert!(
            reply.explanation.contains("no passage names \"Ashes\""),
            "{}",
            reply.explanation
        );
        // Without brackets, the runs of question words the passages write as names,
        // whatever case the question writes them in.
        let reply = answer_to("who directed salt road", HARBOUR);
        assert!(
            reply.explanation.contains("\"salt road\""),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn the_answer_is_of_the_type_the_question_asks() {
        // Years, places and people in one sentence: "who" takes the person, "when"
        // the date, "how much" the amount, "where" the place.
        let text = "The Sparrow engine first flew in 1994 from Tarsk. Its designer was Omar \
            Haddad, chief engineer at Brannock Aero. Each engine cost $349,000 to build.";
        let first = |question: &str| {
            texts(&answer_to(question, text))
                .first()
                .map(|t| t.to_string())
        };
        assert_eq!(
            first("who designed the Sparrow engine").as_deref(),
            Some("Omar Haddad")
        );
        assert_eq!(
            first("when did the Sparrow engine first fly").as_deref(),
            Some("1994")
        );
        assert_eq!(
            first("how much did a Sparrow engine cost to build").as_deref(),
            Some("$349,000")
        );
        assert_eq!(
            first("where did the Sparrow engine first fly from").as_deref(),
            Some("Tarsk")
        );
    }

    #[test]
    fn the_entity_asked_about_is_a_name_the_passages_write_not_the_first_words() {
        // No brackets, several names: both are read, and neither answers.
        let text = "Omar Haddad joined Brannock Aero in 2019. He left Veltra Labs in 2018.";
        let reply = answer_to("when did omar haddad join Brannock Aero", text);
        assert_eq!(texts(&reply), ["2019"], "{reply:?}");
        assert!(
            reply.explanation.contains("\"omar haddad\"")
                && reply.explanation.contains("\"brannock aero\""),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn a_question_the_passages_do_not_answer_gets_i_dont_know() {
        // The engine is there, its price is not (another product's is).
        let text = "The Sparrow engine first flew in 1994.\n\nThe Kite airframe costs $12,000.";
        let reply = answer_to("how much does the Sparrow engine cost", text);
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert!(
            reply.explanation.starts_with("I don't know"),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn a_sentence_about_the_entity_is_read_though_another_writes_what_is_asked() {
        // The film's own sentence writes none of the question's words ("behind the
        // camera" for "directed"); another film's sentence writes "direction", which
        // alone says too little of the question to offer its name.
        let text = "Zombies of Mora Tau hit theaters in 1957. Behind the camera for the film \
            was Edward Cahn.\n\nLe Havre is a 2011 film. Direction is credited to Aki \
            Kaurismaki.";
        let reply = answer_to("which person directed Zombies of Mora Tau", text);
        assert_eq!(
            reply.answers.first().map(|a| a.text.as_str()),
            Some("Edward Cahn"),
            "{reply:?}"
        );
        assert!(
            !reply.answers.iter().any(|a| a.text.contains("Kaurismaki")),
            "{reply:?}"
        );
    }

    #[test]
    fn a_name_before_the_noun_ending_its_phrase_names_a_unit() {
        let text = "Tickets go to Customer Care first. Most calls reach our Customer Care \
            agents. They work from the Quenford contact centre.";
        let request = request("who answers calls", vec![passage(0, text)]);
        assert_eq!(
            type_in_context(&request, "Customer Care"),
            AnswerType::Organization
        );
        // "contact" does not end its phrase: Quenford premodifies "contact centre".
        assert_ne!(
            type_in_context(&request, "Quenford"),
            AnswerType::Organization
        );
    }

    /// The spans offered for `question` over one passage.
    fn offered(question: &str, text: &str) -> Vec<String> {
        Reading::new(&request(question, vec![passage(0, text)]))
            .expect("statements")
            .spans(None)
            .rows
            .into_iter()
            .map(|r| r.text)
            .collect()
    }

    #[test]
    fn codes_are_read_whole_and_a_line_break_or_a_column_gap_ends_a_name() {
        let text = "Replace the valve with part AV-221 for the Aurelle 900.\n\nSUMMARY \
            NOTES\nThe Aurelle 900 ships from Port Casimir.\nTicket BK-131552    Product Aurelle 900";
        let spans = offered("what part fixes the Aurelle 900", text);
        assert!(spans.iter().any(|s| s == "AV-221"), "{spans:?}");
        assert!(!spans.iter().any(|s| s == "221"), "{spans:?}");
        assert!(!spans.iter().any(|s| s.contains('\n')), "{spans:?}");
        assert!(!spans.iter().any(|s| s.contains("  ")), "{spans:?}");
    }

    #[test]
    fn a_name_joined_by_a_preposition_offers_its_parts_and_a_number_its_unit() {
        let text = "The leak in Quillmoth was found by Saskia Brenninkmolen of Ironbark \
            Assurance. Quillmoth paid a bounty of 40,000 crowns. When Elsbeth Marrow \
            founded Quillmoth it had two staff.";
        let spans = offered("who found the leak in Quillmoth", text);
        for part in ["Saskia Brenninkmolen", "Ironbark Assurance"] {
            assert!(spans.iter().any(|s| s == part), "{part}: {spans:?}");
        }
        let spans = offered("how big was the bounty Quillmoth paid", text);
        assert!(spans.iter().any(|s| s == "40,000 crowns"), "{spans:?}");
        let spans = offered("who founded Quillmoth", text);
        assert!(spans.iter().any(|s| s == "Elsbeth Marrow"), "{spans:?}");
    }

    #[test]
    fn runs_of_lower_case_words_answer_only_what_questions() {
        let text = "The Kestle Farm array stopped in January because of a failed transformer.";
        let spans = offered("why did the Kestle Farm array stop in January", text);
        assert!(
            spans.iter().any(|s| s == "a failed transformer"),
            "{spans:?}"
        );
        assert!(spans.iter().any(|s| s == "failed transformer"), "{spans:?}");
        let spans = offered("who stopped the Kestle Farm array in January", text);
        assert!(
            !spans.iter().any(|s| s.contains("transformer")),
            "{spans:?}"
        );
    }

    #[test]
    fn the_span_scorer_in_use_chooses_among_the_spans() {
        let request = request("who directed [Harbour Lights]", vec![passage(0, HARBOUR)]);
        let reading = Reading::new(&request).expect("statements");
        let (reply, support) =
            reading.answer_with(&SpanModel::bundled(), &SummaryRule::default(), 10, None);
        assert_eq!(texts(&reply)[0], "Ingrid Solberg", "{reply:?}");
        assert!(support > 0.0);
        // The answer's score is its share among the spans.
        assert!(reply.answers[0].score > 0.0 && reply.answers[0].score <= 1.0);
        // Weights that prefer a name standing in a list take the cast instead.
        let mut listed = SpanModel::bundled().as_ref().clone();
        listed.weights = vec![0.0; SPAN_FEATURES.len()];
        listed.weights[spans::feature("listed")] = 100.0;
        let (reply, _) = reading.answer_with(&listed, &SummaryRule::default(), 10, None);
        assert!(
            ["Anna Lind", "Samuel L. Jackson", "Tomas Berg"].contains(&texts(&reply)[0]),
            "{reply:?}"
        );
    }

    #[test]
    fn amounts_and_dates_are_read_whole() {
        let text = "Veltra raised \u{20ac}1.2 million on Saturday 14 September 2024. It spent \
            4,500 euros on 2024-03-12.";
        let names = |question: &str| {
            texts(&answer_to(question, text))
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names("how much did Veltra raise"), ["\u{20ac}1.2 million"]);
        assert_eq!(
            names("when did Veltra raise the money"),
            ["Saturday 14 September 2024"]
        );
        assert_eq!(names("how much did Veltra spend"), ["4,500 euros"]);
    }

    #[test]
    fn a_number_or_an_opening_stop_word_is_no_part_of_the_name_beside_it() {
        // "In 2023 Lumora Water Trust …" names the Trust (a number before a name does not
        // make it part of a longer one), so the sentence after it is about the Trust; and
        // "When" is not the founder's first name.
        let text = "In 2023 Lumora Water Trust turned twelve. When Elsbeth Marrow founded the \
            Trust in Port Alvane in 2011, it had two rigs.\n\n\
            Project manager Jomo Varga joined Lumora in 2016.";
        let reply = answer_to("Who founded Lumora Water Trust?", text);
        assert_eq!(texts(&reply).first(), Some(&"Elsbeth Marrow"), "{reply:?}");
    }

    #[test]
    fn the_class_word_beside_a_name_says_enough_of_the_question() {
        // "work" is written nowhere; "office", the class asked (a place, not an
        // officer), stands beside Brennick in a sentence naming the centre.
        let text = "The Security Operations Centre, which operates from the Brennick office \
            around the clock, assigns an incident lead.\n\n\
            The Travel Desk is coordinated by Dario Fenwell.";
        let reply = answer_to(
            "In which office does the Security Operations Centre work?",
            text,
        );
        assert_eq!(texts(&reply), ["Brennick"], "{reply:?}");
    }

    #[test]
    fn a_measure_is_read_with_its_unit_and_a_count_without() {
        let text = "To pair a sensor, hold its button for 5 seconds until the light \
            blinks. The Aerolith hub supports 64 sensors.";
        assert_eq!(
            texts(&answer_to(
                "How long do I hold the button on a sensor?",
                text
            )),
            ["5 seconds"]
        );
        assert_eq!(
            texts(&answer_to(
                "How many sensors does the Aerolith hub support?",
                text
            )),
            ["64"]
        );
    }

    #[test]
    fn each_item_of_a_list_is_read_on_its_own_and_commas_alone_join_no_list() {
        let text = "Attendees:\n- Mirela Dorn, Payments team lead\n- Osric Vale, Search \
                    team lead\n- Tamsin Hale, designer";
        let reply = answer_to("Who leads the Search team?", text);
        assert_eq!(texts(&reply).first(), Some(&"Osric Vale"), "{reply:?}");
        assert!(
            reply
                .explanation
                .contains("\"- Osric Vale, Search team lead\""),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn a_tables_row_is_read_under_its_header() {
        let text = "| Line | Approved for 2025 | Spent to 30 June |\n|---|---|---|\n\
                    | Kestrel rollout | €410,000 | €120,000 |\n\
                    | Project Wren | €2.5 million | €700,000 |\n\
                    | Field trials | €90,000 | €15,000 |";
        let approved = answer_to("How much was approved for Project Wren?", text);
        assert_eq!(
            texts(&approved).first(),
            Some(&"€2.5 million"),
            "{approved:?}"
        );
        let spent = answer_to("How much had been spent on Project Wren by 30 June?", text);
        assert_eq!(texts(&spent).first(), Some(&"€700,000"), "{spent:?}");
        assert!(
            spent
                .explanation
                .contains("| Project Wren | €2.5 million | €700,000 |"),
            "{}",
            spent.explanation
        );
    }

    #[test]
    fn a_name_the_passages_write_only_within_a_longer_one_is_asked_about() {
        let text = "Nell Hart of Mill Lane complained on 9 March 2024 about the bus route.\n\n\
                    RESIDENTS\nEdwin Marsh of Copper Street complained on 3 March 2024 that \
                    the street had not been gritted.";
        let reply = answer_to("When did Edwin Marsh complain?", text);
        assert_eq!(texts(&reply), ["3 March 2024"], "{reply:?}");
        assert!(
            reply.explanation.contains("about \"edwin marsh\""),
            "{}",
            reply.explanation
        );
    }

    #[test]
    fn a_date_that_writes_no_year_does_not_answer_which_year() {
        let text = "Quorn Labs, founded by Ada Pike, said on Monday that it would hire forty \
                    engineers.";
        let reply = answer_to("In what year was Quorn Labs founded?", text);
        assert!(reply.answers.is_empty(), "{reply:?}");
        let dated = answer_to(
            "In what year was Quorn Labs founded?",
            "Quorn Labs was founded on 4 May 2011 by Ada Pike.",
        );
        assert_eq!(texts(&dated), ["4 May 2011"], "{dated:?}");
    }

    #[test]
    fn a_term_in_code_quotes_or_emphasis_is_one_name() {
        let code = answer_to(
            "What file does Pellworth read its settings from?",
            "Since version 2.0, Pellworth reads its settings from `pell.conf` instead of \
             environment variables.",
        );
        assert_eq!(texts(&code).first(), Some(&"pell.conf"), "{code:?}");
        let emphasis = answer_to(
            "Which sea snail did Ines Vale describe?",
            "In 1961 Ines Vale described *Nerita vallensis*, a small sea snail of the \
             northern coast.",
        );
        assert_eq!(
            texts(&emphasis).first(),
            Some(&"Nerita vallensis"),
            "{emphasis:?}"
        );
    }

    #[test]
    fn broken_lists_tables_and_marks_are_read_without_fault() {
        let texts = [
            "|",
            "||\n|\n|---|",
            "`",
            "**",
            "* \n- \n1. \n12) x",
            "| A | B |\n|---|\n| `x` | *Yves z* |\n| Ana Ruiz |",
            "Kestrel `unclosed code *Emph and more",
            "• Ünïcödé Ärger – item\n• ‘Quoted Name’ for Kestrel\n• 1) €5 fee",
            "Kestrel ** ** `` * * | | -",
        ];
        for text in texts {
            let request = request("Who runs Kestrel?", vec![passage(0, text)]);
            if let Ok(reading) = Reading::new(&request) {
                let reply = reading.answer(&SummaryRule::default(), 3, None);
                assert!(reply.answers.len() <= 3, "{text:?}: {reply:?}");
                assert!(
                    reply.answers.iter().all(|a| !a.text.trim().is_empty()),
                    "{text:?}: {reply:?}"
                );
            }
        }
    }

    #[test]
    fn a_sentence_ending_inside_a_quotation_ends_there() {
        let text = "Omar Tell ran the harbour lab, a time he called \"years of forms.\" He \
                    also wrote the novel Grey Harbour.";
        let reply = answer_to("Which novel did Omar Tell write?", text);
        assert_eq!(texts(&reply).first(), Some(&"Grey Harbour"), "{reply:?}");
        assert!(
            reply
                .explanation
                .contains("\"He also wrote the novel Grey Harbour.\""),
            "{}",
            reply.explanation
        );
    }
}
