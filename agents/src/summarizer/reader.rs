//! Reading indexed documents without a model: the answer is a name written in a
//! sentence about the question's entity that says what the question asks.
//!
//! The text retriever's passages are plain prose, so the graph rule in [`super::core`]
//! finds nothing in them. This reader does what an extractive reader does, with no
//! model and no trained span scorer:
//!
//! 1. **The entity asked about.** The names the question writes between brackets or
//!    quotes, else the entities linked in it, else its longest run of words (one or
//!    more not a stop word) that a passage also writes.
//! 2. **Sentences and names.** Each passage is cut into paragraphs (blank lines) and
//!    sentences with the tokenizer documents are indexed with. A *name* is a run of
//!    words that begin with a capital letter or a digit, joined by what joins names
//!    ("of", "the", "de", a glued apostrophe or hyphen, an initial's full stop). A
//!    single capitalized word that opens a sentence is only a weak name ("Behind the
//!    camera …"), used when the sentence holds no other.
//! 3. **Statements.** A sentence is about the entity when it names it, or when its
//!    paragraph opens with it and the sentence does not name it (it says "it" or "the
//!    film"): the paragraph is about the name it opens with. A sentence naming the
//!    entity proposes its other names, less the ones listed beside the entity ("A, B
//!    and X star in it": A and B are X's peers, not what is asked about), plus the name
//!    its paragraph opens with. A sentence of the entity's own paragraph proposes its
//!    names. A fact of the skeleton (`head | relation | tail`) proposes its other end.
//! 4. **What the statement says** is its words outside the names: "behind the camera
//!    for the film was", "directed by". Its score is how well those words meet the
//!    question's own (outside the entity's name): the best word match of the
//!    project's text toolkit, plus the cosine of both texts when an embedder is
//!    configured, which reads "who directed" in "behind the camera".
//! 5. **Answers** are the names of the best statement, and of every statement within
//!    [`SummaryRule::keep_within`] of it, each citing the passages it was read from.
//!    A statement with no word of the question and a cosine under
//!    [`MIN_COSINE`] says nothing the question asks: the reply is "I don't know".
//!
//! 6. **A second read** (`Reading::second_hop`), when no statement explains every
//!    question word: the statements about the names the best ones propose, chained
//!    when the two together explain more of the question ("who directed the films X
//!    starred in": X's film, then its director). Chains are judged by words only.

use kgmesh_models::lexical::text::{
    delimited_names, is_stop_word, relation_stems, stem_similarity, words, words_outside,
};
use kgmesh_schemas::messages::{
    context::{EvidenceItem, Excerpt},
    summarizer::{Answer, SummarizeReply, SummarizeRequest},
};

use super::core::SummaryRule;
use crate::{
    scoring::text::QuestionTerms,
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
    "in", "on", "at", "for", "to", "a", "an", "from", "with",
];

/// One name a sentence writes.
#[derive(Debug, Clone, PartialEq)]
struct Name {
    text: String,
    /// Lower-case alphanumeric words, to compare names.
    words: Vec<String>,
    /// A single capitalized word opening its sentence: maybe a name, maybe not.
    weak: bool,
}

/// What one sentence (or skeleton fact) says about the entity asked about.
#[derive(Debug, Clone)]
pub(crate) struct Statement {
    /// Its words outside the names: what it says.
    pub relation: String,
    candidates: Vec<Name>,
    evidence: u32,
    /// The sentence, for the explanation.
    sentence: String,
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
        let topic = topic_names(request, &excerpts);
        if topic.is_empty() {
            return Err("no name of the question is written in the passages".to_owned());
        }
        let topic_words: Vec<Vec<String>> = topic.iter().map(|t| words(t)).collect();
        let statements = statements_about(excerpts.iter().copied(), &topic_words);
        let names: Vec<&str> = topic.iter().map(String::as_str).collect();
        let asked = explainable_words(&QuestionTerms::new(&request.question, &names));
        // Read by meaning, class words help: "which movies … act in" reads near "… appear
        // in the movie".
        let question = words_outside(&request.question, &names).join(" ");
        if statements.is_empty() {
            return Err(format!(
                "no passage says anything about {}",
                quoted_list(&topic)
            ));
        }
        Ok(Self {
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
        })
    }

    /// The answers, each statement scored by its word match plus `cosines[i]` (its
    /// embedding's cosine to the question's) when given.
    pub fn answer(
        &self,
        rule: &SummaryRule,
        max_answers: usize,
        cosines: Option<&[f32]>,
    ) -> SummarizeReply {
        // Per statement, how well each question word is matched by its words.
        let matched: Vec<Vec<f32>> = self
            .statements
            .iter()
            .map(|s| self.matches(&[s.relation.as_str()]))
            .collect();
        let scores: Vec<f32> = matched
            .iter()
            .enumerate()
            .map(|(i, matched)| {
                let lexical = self.share(matched);
                let cosine = cosines.and_then(|c| c.get(i)).copied();
                match cosine {
                    Some(cosine) if lexical > 0.0 || cosine >= MIN_COSINE => lexical + cosine,
                    None if lexical > 0.0 => lexical,
                    _ => f32::NEG_INFINITY,
                }
            })
            .collect();
        let Some(best) = scores
            .iter()
            .copied()
            .filter(|s| s.is_finite())
            .reduce(f32::max)
        else {
            return SummarizeReply {
                low_confidence: false,
                answers: Vec::new(),
                explanation: format!(
                    "I don't know: {} passage line(s) speak of {}, but none says what the \
                     question asks (no word of it, and {}).",
                    self.statements.len(),
                    quoted_list(&self.topic),
                    if cosines.is_some() {
                        format!("none reads within cosine {MIN_COSINE} of it")
                    } else {
                        "no embedder to read them by meaning".to_owned()
                    }
                ),
            };
        };
        if let Some(reply) = self.second_hop(rule, max_answers, &scores, &matched) {
            return reply;
        }
        // Candidates in order of statement score, then of evidence.
        let mut order: Vec<usize> = (0..self.statements.len())
            .filter(|&i| scores[i] >= best - rule.keep_within)
            .collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
        let mut answers: Vec<Answer> = Vec::new();
        for &i in &order {
            let statement = &self.statements[i];
            for name in &statement.candidates {
                gather(
                    &mut answers,
                    name,
                    scores[i],
                    &[statement.evidence],
                    rule,
                    max_answers,
                );
            }
        }
        let first = &self.statements[order[0]];
        SummarizeReply {
            low_confidence: false,
            answers,
            explanation: format!(
                "Read without a language model from {} passage(s) and {} skeleton fact(s): \
                 about {}, \"{}\" ({}).",
                self.passages,
                self.facts,
                quoted_list(&self.topic),
                first.sentence,
                first.citation
            ),
        }
    }
}

impl Reading {
    /// A second read, when one statement cannot say all the question asks: from the
    /// names the best statements about the entity propose (the films an actor is in),
    /// the statements about those names (who directed each film). A chain answers
    /// only when its two statements together explain more question words than any
    /// statement alone, the second explaining one the first does not; a name that
    /// leads back to the entity itself is no answer.
    fn second_hop(
        &self,
        rule: &SummaryRule,
        max_answers: usize,
        scores: &[f32],
        lexical: &[Vec<f32>],
    ) -> Option<SummarizeReply> {
        if self.asked.len() < 2 {
            return None;
        }
        let share = |m: &[f32]| self.share(m);
        let best_one = (0..self.statements.len())
            .filter(|&i| scores[i].is_finite())
            .map(|i| share(&lexical[i]))
            .fold(0.0, f32::max);
        if best_one >= 1.0 {
            return None;
        }
        // The names to read on from, best statements first.
        let mut first: Vec<usize> = (0..self.statements.len())
            .filter(|&i| share(&lexical[i]) > 0.0)
            .collect();
        first.sort_by(|&a, &b| share(&lexical[b]).total_cmp(&share(&lexical[a])));
        let mut bridges: Vec<(usize, &Name)> = Vec::new();
        for &i in &first {
            for name in &self.statements[i].candidates {
                if bridges.len() < MAX_BRIDGES
                    && !bridges.iter().any(|(_, b)| b.words == name.words)
                {
                    bridges.push((i, name));
                }
            }
        }
        // (score, first statement, second statement), for every chain that explains more.
        let mut chains: Vec<(f32, usize, Statement)> = Vec::new();
        for (i, bridge) in bridges {
            let about = statements_about(
                self.excerpts.iter().map(|(line, x)| (*line, x)),
                std::slice::from_ref(&bridge.words),
            );
            for mut next in about {
                next.candidates
                    .retain(|c| !self.topic_words.contains(&c.words));
                if next.candidates.is_empty() {
                    continue;
                }
                let second = self.matches(&[next.relation.as_str()]);
                let adds = second.iter().zip(&lexical[i]).any(|(b, a)| *b > *a);
                let both = share(
                    &self.matches(&[self.statements[i].relation.as_str(), next.relation.as_str()]),
                );
                if adds && both > best_one + f32::EPSILON {
                    chains.push((both, i, next));
                }
            }
        }
        let best = chains.iter().map(|c| c.0).fold(f32::NEG_INFINITY, f32::max);
        if !best.is_finite() {
            return None;
        }
        chains.retain(|c| c.0 >= best - rule.keep_within);
        chains.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut answers: Vec<Answer> = Vec::new();
        for (score, i, next) in &chains {
            let lines = [self.statements[*i].evidence, next.evidence];
            for name in &next.candidates {
                gather(&mut answers, name, *score, &lines, rule, max_answers);
            }
        }
        let (_, i, next) = &chains[0];
        let first = &self.statements[*i];
        Some(SummarizeReply {
            low_confidence: false,
            answers,
            explanation: format!(
                "Read in two steps without a language model from {} passage(s) and {} skeleton \
                 fact(s): about {}, \"{}\" ({}); then \"{}\" ({}).",
                self.passages,
                self.facts,
                quoted_list(&self.topic),
                first.sentence,
                first.citation,
                next.sentence,
                next.citation
            ),
        })
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
            .map(|q| {
                stems
                    .iter()
                    .map(|s| stem_similarity(s, q))
                    .fold(0.0, f32::max)
            })
            .collect()
    }
}

/// The question words a statement's words can explain: not an opening wh-word ("who",
/// "when"), which names what is asked by meaning only, and not a class word ("the film
/// X", "which movies"), which names no relation (every statement about a film says "the
/// film").
fn explainable_words(terms: &QuestionTerms) -> Vec<String> {
    terms
        .stems()
        .iter()
        .enumerate()
        .filter(|(i, _)| !terms.asks_a_kind(*i) && !terms.names_a_class(*i))
        .map(|(_, stem)| stem.clone())
        .collect()
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
fn topic_names(request: &SummarizeRequest, excerpts: &[(u32, &Excerpt)]) -> Vec<String> {
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
    // The longest run of question words a passage writes, one of them not a stop word.
    let question = words(&request.question);
    let texts: Vec<Vec<String>> = excerpts.iter().map(|(_, x)| words(&x.text)).collect();
    for len in (1..question.len()).rev() {
        for start in 0..=question.len() - len {
            let run = &question[start..start + len];
            if run.iter().all(|w| is_stop_word(w)) {
                continue;
            }
            if texts.iter().any(|t| t.windows(len).any(|w| w == run)) {
                return vec![run.join(" ")];
            }
        }
    }
    Vec::new()
}

/// The statements the excerpts make about the names `topic`.
fn statements_about<'a>(
    excerpts: impl IntoIterator<Item = (u32, &'a Excerpt)>,
    topic: &[Vec<String>],
) -> Vec<Statement> {
    let mut statements = Vec::new();
    for (line, excerpt) in excerpts {
        if excerpt.channel == SKELETON_CHANNEL {
            statements.extend(fact_statement(line, excerpt, topic));
        } else {
            statements.extend(passage_statements(line, excerpt, topic));
        }
    }
    statements
}

/// Whether `name` is one of the `topic` names, word for word.
fn names_topic(name: &Name, topic: &[Vec<String>]) -> bool {
    topic.iter().any(|t| !t.is_empty() && name.words == *t)
}

/// A skeleton fact about the entity: its other end, what the relation says.
fn fact_statement(line: u32, excerpt: &Excerpt, topic: &[Vec<String>]) -> Option<Statement> {
    let mut parts = excerpt.text.splitn(3, " | ");
    let (head, relation, tail) = (parts.next()?, parts.next()?, parts.next()?);
    let name = |text: &str| Name {
        text: text.trim().to_owned(),
        words: words(text),
        weak: false,
    };
    let (head, tail) = (name(head), name(tail));
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
        evidence: line,
        sentence: excerpt.text.clone(),
        citation: excerpt.citation(),
    })
}

/// One sentence of a passage: its token range and whether it opens a paragraph.
struct Sentence {
    tokens: std::ops::Range<usize>,
    opens_paragraph: bool,
}

/// The statements of one passage about the entity.
fn passage_statements(line: u32, excerpt: &Excerpt, topic: &[Vec<String>]) -> Vec<Statement> {
    let text = excerpt.text.as_str();
    if text.len() >= u32::MAX as usize {
        return Vec::new();
    }
    let tokens = chunk::tokenize(text);
    if tokens.is_empty() {
        return Vec::new();
    }
    let sentences = split_sentences(text, &tokens);
    let mut out = Vec::new();
    // The name the current paragraph opens with.
    let mut subject: Option<Name> = None;
    for sentence in &sentences {
        let names = names_in(text, &tokens, sentence, topic);
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
        let subject_is_topic = subject.as_ref().is_some_and(|s| names_topic(s, topic));
        let topic_at: Vec<usize> = names
            .iter()
            .enumerate()
            .filter(|(_, (_, name))| names_topic(name, topic))
            .map(|(i, _)| i)
            .collect();
        let mut candidates: Vec<Name> = Vec::new();
        if !topic_at.is_empty() {
            let peers = listed_with(text, &tokens, &names, &topic_at);
            candidates.extend(
                names
                    .iter()
                    .enumerate()
                    .filter(|(i, (_, name))| {
                        !topic_at.contains(i) && !peers.contains(i) && !names_topic(name, topic)
                    })
                    .map(|(_, (_, name))| name.clone()),
            );
            if let Some(subject) = subject.as_ref().filter(|_| !subject_is_topic) {
                if !candidates.iter().any(|c| c.words == subject.words) {
                    candidates.push(subject.clone());
                }
            }
        } else if subject_is_topic {
            candidates.extend(names.iter().map(|(_, name)| name.clone()));
        } else {
            continue;
        }
        if candidates.iter().any(|c| !c.weak) {
            candidates.retain(|c| !c.weak);
        }
        if candidates.is_empty() {
            continue;
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
        out.push(Statement {
            relation: relation.join(" "),
            candidates,
            evidence: line,
            sentence: text[bytes.clone()].to_owned(),
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
/// one, each marked when a blank line (or the passage's start) comes before it.
fn split_sentences(text: &str, tokens: &[Token]) -> Vec<Sentence> {
    let mut out: Vec<Sentence> = Vec::new();
    for range in chunk::sentences(tokens, 0..tokens.len()) {
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
    // Lake". A stop word opening the sentence may stand before it ("The Monsters").
    let whole = |range: &std::ops::Range<usize>| {
        let after = range.end < sentence.end
            && is_word(range.end)
            && (capitalized(word_at(range.end))
                || glued(&tokens[range.end - 1], &tokens[range.end]));
        let before = range.start > sentence_start && {
            let t = range.start - 1;
            is_word(t)
                && capitalized(word_at(t))
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
            let name_text = slice(text, tokens, span.clone());
            out.push((
                span.clone(),
                Name {
                    words: words(&name_text),
                    text: name_text,
                    weak: false,
                },
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
            if NAME_JOINERS.contains(&word) && !lone_opener {
                let mut ahead = end + 1;
                while ahead < range.end && NAME_JOINERS.contains(&token_text(text, &tokens[ahead]))
                {
                    ahead += 1;
                }
                let name_follows = ahead < range.end
                    && capitalized(token_text(text, &tokens[ahead]))
                    && !topics.iter().any(|r| r.start == ahead);
                if name_follows {
                    end = ahead + 1;
                    continue;
                }
            }
            break;
        }
        i = end;
        let name_text = slice(text, tokens, start..end);
        let name_words = words(&name_text);
        let opens = start == range.start;
        if name_words.is_empty() || (opens && end - start == 1 && is_stop_word(&name_words[0])) {
            continue;
        }
        let weak = opens && end - start == 1 && !name_words[0].chars().all(|c| c.is_ascii_digit());
        out.push((
            start..end,
            Name {
                text: name_text,
                weak,
                words: name_words,
            },
        ));
    }
    out
}

/// The names listed with the ones at `at` ("A, B and X"): what stands between two
/// neighbours is only a comma, "and", "or", "&" or "," and "and".
fn listed_with(
    text: &str,
    tokens: &[Token],
    names: &[(std::ops::Range<usize>, Name)],
    at: &[usize],
) -> Vec<usize> {
    let joined = |a: usize, b: usize| {
        let between: Vec<&str> = (names[a].0.end..names[b].0.start)
            .map(|t| token_text(text, &tokens[t]))
            .collect();
        matches!(
            between.as_slice(),
            [","] | ["and"] | ["or"] | ["&"] | [",", "and"] | [",", "or"]
        )
    };
    let mut out = Vec::new();
    for &i in at {
        let mut j = i;
        while j > 0 && joined(j - 1, j) {
            j -= 1;
            out.push(j);
        }
        let mut j = i;
        while j + 1 < names.len() && joined(j, j + 1) {
            j += 1;
            out.push(j);
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
    fn a_sentence_naming_the_entity_answers_with_its_paragraphs_subject_not_its_peers() {
        let reply = read("which films did [Tomas Berg] star in", None);
        // "Anna Lind, Tomas Berg and Ingrid Solberg star in the film": the film, not the
        // names listed beside the actor.
        assert_eq!(texts(&reply), ["Salt Road"], "{reply:?}");
    }

    #[test]
    fn without_a_word_of_the_question_only_meaning_chooses_the_sentence() {
        // "Behind the camera" shares no word with "made"; lexically nothing answers.
        let reply = read("who made [Salt Road]", None);
        assert!(reply.answers.is_empty(), "{reply:?}");
        assert!(
            reply.explanation.starts_with("I don't know"),
            "{}",
            reply.explanation
        );
        let made = request("who made [Salt Road]", vec![passage(1, HARBOUR)]);
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
        // Tomas Berg stars in Salt Road; Salt Road was directed by Per Aas.
        let text = "Salt Road was released in 2001. Anna Lind and Tomas Berg star in the \
            film. The film was directed by Per Aas.\n\nHarbour Lights premiered in 1987. \
            The film was directed by Ingrid Solberg.";
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
        let blue = request("who directed [Blue Hour]", vec![passage(0, HARBOUR)]);
        let why = Reading::new(&blue).expect_err("nothing about Blue Hour");
        assert!(why.contains("\"Blue Hour\""), "{why}");
        // Without brackets, the longest run of question words a passage writes.
        let reply = answer_to("who directed salt road", HARBOUR);
        assert!(
            reply.explanation.contains("\"salt road\""),
            "{}",
            reply.explanation
        );
    }
}
