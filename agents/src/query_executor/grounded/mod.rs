//! Grounded Cypher (GraphRAFT, ../shared/notes/ket-rag-and-graphraft.md §B): the
//! question's values are found in the graph, the typed queries that exist around them
//! are enumerated from the schema, and one of them is chosen. Every query is built from
//! the schema's names with the values as parameters, so what runs is valid by
//! construction and nothing a question says reaches the database as query text.
//!
//! Choosing, without a model:
//! - **cold**: candidates are ranked by how much of the question their labels, types
//!   and keys account for, and by whether their shape (count, ranking, filter, limit)
//!   is the one the question's wording asks for;
//! - **learned**: question/answer pairs, without gold queries, teach which shapes the
//!   words of a question call for (GraphRAFT §4.1): every candidate of a training
//!   question runs, those whose answers equal the known ones are right, and a
//!   perceptron learns weights for (question word, shape token) pairs on top of the
//!   cold score ([`learn`]). A new question gets them for whatever values it names, and
//!   a shape verified on a similar training question replays.
//!
//! The query run is the best-ranked one that returns a row, found with at most three
//! round trips to a database server ([`exists`]). With a model, the model picks among the
//! best candidates instead ([`GroundedCypher::choose_with_model`]).

mod enumerate;
mod exists;
mod learn;
pub mod plans;
mod values;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;
use std::sync::Arc;

use async_trait::async_trait;
use kgmesh_models::lexical::text;
use kgmesh_models::parse;
use kgmesh_models::prompts::cypher_choice;
use kgmesh_models::{EmbedError, Embedder, LanguageModel};
use kgmesh_schemas::graph::{GraphSchema, Rows, Value};
use kgmesh_stores::{GraphStore, QueryLimits, StoreResult};

use enumerate::VALUES_MARK;
pub use enumerate::{Candidate, Shape};
use exists::with_rows;
pub use values::{GraphValues, Grounding, LabelInfo, PropertyInfo, PropertyKind};

/// Where candidates run: a [`GraphStore`] (embedded or Bolt), or any read-only Cypher
/// engine in tests.
#[async_trait]
pub trait CypherRunner: Send + Sync {
    async fn run(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows>;

    /// Whether each query is a round trip to a database server, so that asking about
    /// several candidates in one probe saves time ([`exists`]). In-process engines
    /// answer a query as fast as a probe part, and stop at the first candidate found.
    fn remote(&self) -> bool {
        false
    }
}

#[async_trait]
impl<S: GraphStore + ?Sized> CypherRunner for S {
    async fn run(
        &self,
        query: &str,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> StoreResult<Rows> {
        self.cypher(query, params, limits).await
    }

    fn remote(&self) -> bool {
        self.backend() != "embedded"
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Aggregate {
    Count,
    Sum,
    Average,
}

/// "more than 50", "under 10".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Comparison {
    pub greater: bool,
    /// "at least", "or more": the bound itself is in.
    pub inclusive: bool,
    pub value: f64,
}

impl Comparison {
    /// The Cypher operator: `>`, `>=`, `<` or `<=`.
    pub fn operator(&self) -> &'static str {
        match (self.greater, self.inclusive) {
            (true, false) => ">",
            (true, true) => ">=",
            (false, false) => "<",
            (false, true) => "<=",
        }
    }
}

/// What the question's wording asks of the query's shape.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cues {
    /// "how many", "number of", "count".
    pub count: bool,
    /// `Some(true)`: highest first ("top", "most"); `Some(false)`: lowest first.
    pub order: Option<bool>,
    /// A small number the question asks for ("top 5", "three customers").
    pub limit: Option<u32>,
    pub compare: Option<Comparison>,
    /// "between 10 and 20": both bounds in.
    pub range: Option<(f64, f64)>,
    /// "total", "average": how a ranking adds values up.
    pub aggregate: Option<Aggregate>,
    /// Numbers that are values rather than limits: "a reorder level of 30", "zero units".
    pub equals: Vec<f64>,
    /// "not", "no", "without": a flag is false, a property missing.
    pub negated: bool,
    /// "starting with", "begins with": a quoted text is a prefix.
    pub starts: bool,
    /// "ending in", "ends with": a quoted text is a suffix.
    pub ends: bool,
    /// Quoted texts and years that are no value of the graph: what a property may
    /// contain or start with.
    pub literals: Vec<Literal>,
}

/// A text the question quotes, or a year, that no node holds whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Literal {
    pub text: String,
    pub year: bool,
    /// The words before it compare ("after '1997-01-01'", "on or before '…'"): the
    /// Cypher operator, as text compares.
    pub compare: Option<&'static str>,
}

const HIGHEST: &[&str] = &[
    "top",
    "most",
    "highest",
    "largest",
    "greatest",
    "biggest",
    "maximum",
    "best",
    "frequently",
    "popular",
];
const LOWEST: &[&str] = &[
    "least", "lowest", "smallest", "minimum", "cheapest", "fewest",
];
const NUMBER_WORDS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
];

fn number(word: &str) -> Option<f64> {
    if let Some(i) = NUMBER_WORDS.iter().position(|w| *w == word) {
        return Some(i as f64 + 1.0);
    }
    word.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// The comparative phrase that ends right before `words[end]` ("after", "no later
/// than"); an "or" before it makes it inclusive ("on or after").
fn bound_before(words: &[String], end: usize) -> Option<text::Comparative> {
    (end.saturating_sub(3)..end).find_map(|k| {
        let (comparative, taken) = text::comparative_at(words, k)?;
        (k + taken == end).then(|| text::Comparative {
            inclusive: comparative.inclusive || (k > 0 && words[k - 1] == "or"),
            ..comparative
        })
    })
}

/// A year the question names, as the start of a date text compares: "after 2012" is
/// `>= '2013'` (`'2012-05-01' > '2012'` holds as text), "in 2012 or before" `< '2013'`,
/// "since" and "before" as written; with no bound, what a date starts with.
fn year_literal(year: &str, bound: Option<text::Comparative>) -> Literal {
    let next = || {
        year.parse::<u32>()
            .map(|y| (y + 1).to_string())
            .unwrap_or_else(|_| year.to_owned())
    };
    let (text, compare) = match bound.map(text::Comparative::operator) {
        Some(">") => (next(), Some(">=")),
        Some("<=") => (next(), Some("<")),
        other => (year.to_owned(), other),
    };
    Literal {
        text,
        year: true,
        compare,
    }
}

/// A number the question wrote, as a query parameter: a whole number stays an integer
/// (`2012`, not `2012.0`), as the graph's own integers are.
pub(crate) fn number_value(n: f64) -> Value {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        Value::Int(n as i64)
    } else {
        Value::Float(n)
    }
}

impl Cues {
    /// Reads the cues from the question's words outside its grounded values.
    pub fn read(words: &[String], grounded: &[bool]) -> Self {
        let free = |i: usize| !grounded.get(i).copied().unwrap_or(false);
        let mut cues = Cues::default();
        let mut used_number = vec![false; words.len()];
        let mut skip = vec![false; words.len() + 2];
        for i in 0..words.len() {
            if !free(i) || skip[i] {
                continue;
            }
            let word = words[i].as_str();
            let next = words.get(i + 1).map(String::as_str);
            // "more than 50", "after 2012", "no more than 4", "at least 5": the phrase
            // bounds the number right after it; its words are no other cue ("no" is
            // no negation there, "most" in "at most" no ranking).
            if let Some((comparative, taken)) = text::comparative_at(words, i) {
                if (i..i + taken).all(free) {
                    for flag in skip.iter_mut().take(i + taken).skip(i + 1) {
                        *flag = true;
                    }
                    if cues.compare.is_none() {
                        for j in i + taken..(i + taken + 2).min(words.len()) {
                            if let Some(value) = number(&words[j]).filter(|_| free(j)) {
                                cues.compare = Some(Comparison {
                                    greater: comparative.greater,
                                    inclusive: comparative.inclusive,
                                    value,
                                });
                                used_number[j] = true;
                                break;
                            }
                        }
                    }
                    continue;
                }
            }
            if (word == "how" && matches!(next, Some("many" | "much")))
                || (word == "number" && next == Some("of"))
                || word == "count"
            {
                cues.count = true;
            }
            if HIGHEST.contains(&word) && cues.order.is_none() {
                cues.order = Some(true);
            }
            // "the top 3 categories with the least products" ranks lowest first.
            if LOWEST.contains(&word) && !(word == "least" && i > 0 && words[i - 1] == "at") {
                cues.order = Some(false);
            }
            if matches!(
                word,
                "not" | "no" | "without" | "never" | "missing" | "lack"
            ) {
                cues.negated = true;
            }
            if matches!(
                word,
                "start" | "starts" | "starting" | "begin" | "begins" | "beginning"
            ) {
                cues.starts = true;
            }
            if matches!(word, "end" | "ends" | "ending") {
                cues.ends = true;
            }
            match word {
                "total" | "sum" => cues.aggregate = Some(Aggregate::Sum),
                "average" | "mean" | "avg" => cues.aggregate = Some(Aggregate::Average),
                _ => {}
            }
            // "between 10 and 20"
            if word == "between" && cues.range.is_none() {
                let bound = |j: usize| words.get(j).filter(|_| free(j)).and_then(|w| number(w));
                if let (Some(low), Some("and"), Some(high)) = (
                    bound(i + 1),
                    words.get(i + 2).map(String::as_str),
                    bound(i + 3),
                ) {
                    cues.range = Some((low.min(high), low.max(high)));
                    used_number[i + 1] = true;
                    used_number[i + 3] = true;
                }
            }
            // "25 or higher", "10 or less", "2010 and later"
            if let (Some(value), Some(comparative)) =
                (number(word), text::trailing_comparative(words, i))
            {
                if cues.compare.is_none() {
                    cues.compare = Some(Comparison {
                        greater: comparative.greater,
                        inclusive: comparative.inclusive,
                        value,
                    });
                    used_number[i] = true;
                    skip[i + 1] = true;
                    skip[i + 2] = true;
                }
            }
        }
        // A number right after "of", "at", "is", "exactly" is a value ("a reorder level
        // of 30"); another small whole number is a row limit ("the first 5").
        for (i, w) in words.iter().enumerate() {
            if !free(i) || used_number[i] {
                continue;
            }
            let Some(n) = number(w).or_else(|| (w == "zero").then_some(0.0)) else {
                continue;
            };
            let after_value_word = i > 0
                && matches!(
                    words[i - 1].as_str(),
                    "of" | "at" | "is" | "exactly" | "equal" | "equals" | "to"
                );
            if after_value_word || n == 0.0 || cues.limit.is_some() {
                cues.equals.push(n);
            } else if (1.0..=100.0).contains(&n) && n.fract() == 0.0 {
                cues.limit = Some(n as u32);
            } else {
                cues.equals.push(n);
            }
        }
        if cues.order.is_some() && cues.count {
            // "the top 3 customers by number of orders" ranks by a count.
            cues.count = false;
            cues.aggregate.get_or_insert(Aggregate::Count);
        }
        cues
    }
}

/// A question read against the graph.
#[derive(Debug, Clone)]
pub struct Question {
    pub text: String,
    pub groundings: Vec<Grounding>,
    pub cues: Cues,
    /// Content stems outside the grounded values.
    pub stems: Vec<String>,
    /// How many distinct mentions were grounded.
    pub mentions: usize,
    /// The label the question asks for: the first one it names as a noun ("which
    /// *customers* ordered Chai", "the top 3 *categories* by …").
    pub target: Option<String>,
    /// The target is named in the plural.
    pub plural: bool,
}

/// A candidate chosen for a question, and why.
#[derive(Debug, Clone)]
pub struct Choice {
    pub candidate: Candidate,
    pub score: f32,
    /// What learning added to the chosen candidate's cold score, once trained.
    pub learned: Option<f32>,
    pub candidates: usize,
}

/// What [`GroundedCypher::choose_with_model`] chose.
#[derive(Debug, Clone)]
pub struct ModelChoice {
    pub choice: Choice,
    /// The 0-based place, among those offered, of the query the model picked; `None`
    /// when it was not asked (one candidate) or its pick was unusable.
    pub picked: Option<usize>,
    /// Candidates the model was shown.
    pub offered: usize,
    /// Why the LLM-free choice stands in for the model's: a failed call, an unusable
    /// reply.
    pub fallback: Option<String>,
    /// What the model call cost, when one answered.
    pub usage: Option<kgmesh_models::Usage>,
    /// The chosen query's rows, from the run that found it returns a row; `None` when
    /// no candidate tried returned one.
    pub rows: Option<Rows>,
}

/// Candidates a model is shown to choose among.
pub const MODEL_CHOICES: usize = 8;

/// Candidates run at most, best first, to find one that returns a row.
pub const EXISTENCE_TRIES: usize = 10;

/// The grounded-Cypher planner over one graph.
pub struct GroundedCypher {
    values: GraphValues,
    schema: GraphSchema,
    ranker: learn::Ranker,
    embedder: Option<Arc<dyn Embedder>>,
    /// Candidates enumerated at most per question.
    pub max_candidates: usize,
}

/// Values of the graph a question is grounded to at most.
pub const MAX_GROUNDINGS: usize = 16;

/// Candidates a training question runs at most, best ranked first.
pub const LEARN_TRIES: usize = 200;

impl GroundedCypher {
    /// Reads the graph's labels, keys and values.
    pub async fn read<R: CypherRunner + ?Sized>(
        runner: &R,
        schema: GraphSchema,
        limits: &QueryLimits,
    ) -> StoreResult<Self> {
        let values = GraphValues::read(runner, &schema, limits).await?;
        Ok(Self {
            values,
            schema,
            ranker: learn::Ranker::default(),
            embedder: None,
            max_candidates: 5_000,
        })
    }

    pub fn values(&self) -> &GraphValues {
        &self.values
    }

    /// Training questions kept (those with a right candidate).
    pub fn learned_examples(&self) -> usize {
        self.ranker.examples()
    }

    /// Writes the kept training questions as JSON, for [`GroundedCypher::load_learned`].
    pub fn save_learned(&self, writer: impl std::io::Write) -> serde_json::Result<()> {
        serde_json::to_writer(writer, &self.ranker.save(self.fingerprint()))
    }

    /// The graph's labels with their property keys, and its relationship number keys,
    /// in one line: what learned plans are tied to.
    fn fingerprint(&self) -> String {
        let mut labels: Vec<String> = self
            .values
            .labels
            .iter()
            .map(|label| {
                let mut keys: Vec<&str> = label.properties.iter().map(|p| p.key.as_str()).collect();
                keys.sort_unstable();
                format!("{}({})", label.name, keys.join(","))
            })
            .collect();
        labels.sort();
        let mut numbers: Vec<&str> = self
            .values
            .relationship_numbers
            .iter()
            .map(|p| p.key.as_str())
            .collect();
        numbers.sort_unstable();
        format!("{} [{}]", labels.join(" "), numbers.join(","))
    }

    /// Adds training questions saved by [`GroundedCypher::save_learned`] and fits the
    /// learned ranking on all kept ones. Returns how many were added.
    pub fn load_learned(&mut self, reader: impl std::io::Read) -> Result<usize, String> {
        let saved: learn::Saved = serde_json::from_reader(std::io::BufReader::new(reader))
            .map_err(|error| format!("not a file of learned plans: {error}"))?;
        let added = self.ranker.load(saved, &self.fingerprint())?;
        self.fit();
        Ok(added)
    }

    /// Trains the learned ranking on the kept training questions.
    pub fn fit(&mut self) {
        self.ranker.fit(learn::EPOCHS);
    }

    /// Embeds the graph's category values with `embedder`, and keeps it to embed the
    /// words of questions: [`GroundedCypher::read_question`] then grounds values named
    /// in other words ("German suppliers" → `country = 'Germany'`). Returns how many
    /// values were embedded.
    pub async fn use_embedder(&mut self, embedder: Arc<dyn Embedder>) -> Result<usize, EmbedError> {
        let embedded = self.values.embed_categories(embedder.as_ref()).await?;
        self.embedder = Some(embedder);
        Ok(embedded)
    }

    /// The embedder questions are read with, if any ([`GroundedCypher::use_embedder`]).
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref()
    }

    /// A question read against the graph: [`GroundedCypher::question`], and with an
    /// embedder ([`GroundedCypher::use_embedder`]) the question's other words matched
    /// to category values too. A failed embedding leaves the whole-word and near
    /// matches, and says so in the log.
    pub async fn read_question(&self, text: &str) -> Question {
        let mut groundings = self.values.ground(text);
        if let Some(embedder) = self
            .embedder
            .as_ref()
            .filter(|_| self.values.has_categories())
        {
            let phrases = self.values.free_phrases(text, &groundings);
            if !phrases.is_empty() {
                let texts: Vec<String> = phrases.iter().map(|(_, p)| p.clone()).collect();
                match embedder.embed(&texts).await {
                    Ok(vectors) => {
                        groundings.extend(self.values.ground_semantic(&phrases, &vectors))
                    }
                    Err(error) => tracing::warn!(
                        %error,
                        "grounded Cypher: question words not embedded; whole and near matches only"
                    ),
                }
            }
        }
        self.question_from(text, groundings)
    }

    /// A question read against the graph by whole words and near misses only.
    pub fn question(&self, text: &str) -> Question {
        self.question_from(text, self.values.ground(text))
    }

    fn question_from(&self, text: &str, mut groundings: Vec<Grounding>) -> Question {
        // Pairs of groundings multiply candidates: a question naming dozens of values
        // (or a pasted list) keeps its longest mentions.
        groundings.truncate(MAX_GROUNDINGS);
        let words = text::words(text);
        let mut grounded = vec![false; words.len()];
        let mut spans = BTreeSet::new();
        for g in &groundings {
            spans.insert(g.span);
            for flag in &mut grounded[g.span.0..g.span.1.min(words.len())] {
                *flag = true;
            }
        }
        // Quoted texts are values, not counts or limits ("'1997-06-01'").
        let mut blocked = grounded.clone();
        for (start, end) in values::quoted_word_spans(text) {
            for flag in blocked.iter_mut().take(end).skip(start) {
                *flag = true;
            }
        }
        let mut cues = Cues::read(&words, &blocked);
        let held: Vec<String> = groundings
            .iter()
            .map(|g| plain_text(&g.value).to_lowercase())
            .collect();
        for (range, quoted) in text::quoted_texts(text) {
            let quoted = quoted.trim();
            // A quoted key ("a 'unitPrice' over 10") names a property, not a text.
            let names_a_key = self.values.labels.iter().any(|label| {
                label
                    .properties
                    .iter()
                    .any(|p| text::words(&p.key) == text::words(quoted))
            });
            if !quoted.is_empty() && !names_a_key && !held.contains(&quoted.to_lowercase()) {
                let before = text::words(&text[..range.start]);
                let compare = bound_before(&before, before.len()).map(text::Comparative::operator);
                cues.literals.push(Literal {
                    text: quoted.to_owned(),
                    year: false,
                    compare,
                });
            }
        }
        for (i, word) in words.iter().enumerate() {
            let year = word.len() == 4
                && word
                    .parse::<u32>()
                    .is_ok_and(|y| (1800..=2100).contains(&y));
            if year && !grounded[i] && !cues.literals.iter().any(|l| l.text.contains(word.as_str()))
            {
                let bound =
                    bound_before(&words, i).or_else(|| text::trailing_comparative(&words, i));
                cues.literals.push(year_literal(word, bound));
            }
        }
        let mut stems = Vec::new();
        for (i, word) in words.iter().enumerate() {
            if grounded[i] || text::is_stop_word(word) {
                continue;
            }
            let stem = text::stem(word);
            if !stems.contains(&stem) {
                stems.push(stem);
            }
        }
        let named = words.iter().enumerate().find_map(|(i, word)| {
            if grounded[i] {
                return None;
            }
            self.values.labels.iter().find_map(|label| {
                let noun = text::words(&label.name).pop()?;
                let plural = match noun.strip_suffix('y') {
                    Some(stem) => format!("{stem}ies"),
                    None => format!("{noun}s"),
                };
                if *word == noun {
                    Some((label.name.clone(), false))
                } else if *word == plural {
                    Some((label.name.clone(), true))
                } else {
                    None
                }
            })
        });
        let plural = named.as_ref().is_some_and(|(_, plural)| *plural);
        let target = named.map(|(label, _)| label);
        Question {
            text: text.to_owned(),
            groundings,
            cues,
            stems,
            mentions: spans.len(),
            target,
            plural,
        }
    }

    /// Every candidate, best first by the cold ranking, with its score.
    pub fn ranked(&self, question: &Question) -> Vec<(Candidate, f32)> {
        let candidates = enumerate::Enumerator {
            values: &self.values,
            schema: &self.schema,
            groundings: &question.groundings,
            cues: &question.cues,
            question_stems: &question.stems,
            plural: question.plural,
            max: self.max_candidates,
        }
        .run();
        let mut scored: Vec<(Candidate, f32)> = candidates
            .into_iter()
            .map(|c| {
                let score = cold_score(&c, question);
                (c, score)
            })
            .collect();
        // Stable: ties go to the candidate enumerated first, the simpler one. Names are
        // enumerated in sorted order, so every backend chooses alike.
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored
    }

    /// `ranked`'s candidates by cold score plus what learning adds, best first (ties
    /// in `ranked`'s order): (index in `ranked`, learned part, total).
    fn rescored(&self, question: &Question, ranked: &[(Candidate, f32)]) -> Vec<(usize, f32, f32)> {
        let similarities = if self.ranker.trained() {
            self.ranker.similarities(question)
        } else {
            Vec::new()
        };
        let mut scored: Vec<(usize, f32, f32)> = ranked
            .iter()
            .enumerate()
            .map(|(i, (candidate, cold))| {
                let learned = self.ranker.score(question, candidate)
                    + self.ranker.replay(&similarities, candidate);
                (i, learned, cold + learned)
            })
            .collect();
        scored.sort_by(|a, b| b.2.total_cmp(&a.2));
        scored
    }

    fn choice(
        &self,
        ranked: &[(Candidate, f32)],
        (index, learned, score): (usize, f32, f32),
    ) -> Choice {
        Choice {
            candidate: ranked[index].0.clone(),
            score,
            learned: self.ranker.trained().then_some(learned),
            candidates: ranked.len(),
        }
    }

    /// The best of `ranked` by cold score plus what learning adds, among those that
    /// return a row (GraphRAFT's queries that provably exist in the database): of the
    /// first `tries`, the best runs; if it has no row, the others run in order, or on
    /// a database server one probe first finds which of them do ([`exists`]). The
    /// chosen one's rows are kept. When none of them
    /// returns a row, the best one stands, with its rows.
    ///
    /// With `learned` false, the cold ranking alone orders them (what a cold
    /// evaluation scores).
    pub async fn choose_existing<R: CypherRunner + ?Sized>(
        &self,
        runner: &R,
        question: &Question,
        ranked: &[(Candidate, f32)],
        learned: bool,
        tries: usize,
        limits: &QueryLimits,
    ) -> Option<(Choice, Option<Rows>)> {
        let scored = if learned {
            self.rescored(question, ranked)
        } else {
            ranked
                .iter()
                .enumerate()
                .map(|(i, (_, cold))| (i, 0.0, *cold))
                .collect()
        };
        let best = *scored.first()?;
        let (found, first_rows) = with_rows(runner, ranked, &scored, 1, tries, limits).await;
        Some(match found.into_iter().next() {
            Some((entry, rows)) => (self.choice(ranked, entry), Some(rows)),
            None => (self.choice(ranked, best), first_rows),
        })
    }

    /// The candidate to run among `ranked` (what [`GroundedCypher::ranked`] gave for
    /// this question): the best by cold score plus what learning adds.
    pub fn choose(&self, question: &Question, ranked: &[(Candidate, f32)]) -> Option<Choice> {
        let best = *self.rescored(question, ranked).first()?;
        Some(self.choice(ranked, best))
    }

    /// A model picks among the `shown` best candidates of the LLM-free ranking that
    /// return a row (GraphRAFT's constrained choice; of the first `shown` +
    /// [`EXISTENCE_TRIES`], else the `shown` best when none does): it sees them as
    /// openCypher with their values written in and replies with a number, which the
    /// server is held to where it can be ([`kgmesh_models::openai::ChoiceConstraint`]).
    /// A failed call or an unusable reply falls back to the first of them (the
    /// LLM-free choice, unless only candidates past the first 10 return a row), and
    /// says why.
    pub async fn choose_with_model<R: CypherRunner + ?Sized>(
        &self,
        llm: &dyn LanguageModel,
        runner: &R,
        question: &Question,
        ranked: &[(Candidate, f32)],
        shown: usize,
        limits: &QueryLimits,
    ) -> Option<ModelChoice> {
        let scored = self.rescored(question, ranked);
        let shown = shown.max(1);
        let (found, _) = with_rows(
            runner,
            ranked,
            &scored,
            shown,
            shown + EXISTENCE_TRIES,
            limits,
        )
        .await;
        let (mut offered, mut rows): (Vec<(usize, f32, f32)>, Vec<Rows>) =
            found.into_iter().unzip();
        if offered.is_empty() {
            offered = scored.iter().take(shown).copied().collect();
        }
        let best = *offered.first()?;
        // The rows of the k-th offered query, taken once it is the one chosen.
        let mut rows_of = |k: usize| (k < rows.len()).then(|| rows.swap_remove(k));
        if offered.len() < 2 {
            return Some(ModelChoice {
                choice: self.choice(ranked, best),
                picked: None,
                offered: offered.len(),
                fallback: None,
                usage: None,
                rows: rows_of(0),
            });
        }
        let queries: Vec<String> = offered
            .iter()
            .map(|(i, _, _)| ranked[*i].0.display())
            .collect();
        let request = cypher_choice::build(&question.text, &queries);
        let fallback = |why: String, rows: Option<Rows>| {
            tracing::warn!(reason = %why, "grounded Cypher: the model's pick is unusable; the LLM-free choice stands");
            ModelChoice {
                choice: self.choice(ranked, best),
                picked: None,
                offered: offered.len(),
                fallback: Some(why),
                usage: None,
                rows,
            }
        };
        let reply = match llm.chat(request).await {
            Ok(reply) => reply,
            Err(error) => {
                return Some(fallback(
                    format!("the model call failed: {error}"),
                    rows_of(0),
                ))
            }
        };
        match parse::cypher_choice::parse(&reply.text, offered.len()) {
            Ok(k) => Some(ModelChoice {
                choice: self.choice(ranked, offered[k]),
                picked: Some(k),
                offered: offered.len(),
                fallback: None,
                usage: Some(reply.usage),
                rows: rows_of(k),
            }),
            Err(error) => Some(ModelChoice {
                usage: Some(reply.usage),
                ..fallback(format!("unusable model reply: {error}"), rows_of(0))
            }),
        }
    }

    /// Runs the best-ranked candidates (at most [`LEARN_TRIES`]) of a question with known
    /// answers and keeps it for [`GroundedCypher::fit`] when one of them gives those
    /// answers. Returns the right candidates, best-ranked first (empty: none was right,
    /// nothing kept).
    pub async fn learn<R: CypherRunner + ?Sized>(
        &mut self,
        runner: &R,
        question: &str,
        reference: &Reference,
        limits: &QueryLimits,
    ) -> StoreResult<Vec<Candidate>> {
        let question = self.read_question(question).await;
        let mut tried = Vec::new();
        for (candidate, cold) in self.ranked(&question).into_iter().take(LEARN_TRIES) {
            let right = match runner
                .run(&candidate.cypher, &candidate.params, limits)
                .await
            {
                Ok(rows) => reference.matches(&self.answer_column(&rows)),
                Err(_) => false,
            };
            tried.push((candidate, cold, right));
        }
        self.ranker.add(&question, &tried, None);
        Ok(tried
            .into_iter()
            .filter(|(_, _, right)| *right)
            .map(|(candidate, _, _)| candidate)
            .collect())
    }

    /// Keeps a question verified earlier (a grounded Cypher plan of the plan cache)
    /// without running anything: its best-ranked candidates (at most [`LEARN_TRIES`])
    /// are enumerated again, and those whose query, values written in, is one of
    /// `verified` are the right ones. Returns whether any was (a plan learned on
    /// other values or by other code matches none, and is not kept). With a `key`
    /// (the plan's key in the plan store), what was kept under that key is replaced.
    /// Call [`GroundedCypher::fit`] after adding.
    pub async fn learn_verified(
        &mut self,
        question: &str,
        verified: &[String],
        key: Option<&str>,
    ) -> bool {
        let question = self.read_question(question).await;
        let tried: Vec<(Candidate, f32, bool)> = self
            .ranked(&question)
            .into_iter()
            .take(LEARN_TRIES)
            .map(|(candidate, cold)| {
                let right = verified.contains(&candidate.display());
                (candidate, cold, right)
            })
            .collect();
        let any = tried.iter().any(|(_, _, right)| *right);
        self.ranker.add(&question, &tried, key);
        any
    }

    /// Stops learning from the plan kept under `key` (deleted from the plan store);
    /// whether one was kept. Call [`GroundedCypher::fit`] after.
    pub fn forget(&mut self, key: &str) -> bool {
        self.ranker.forget(key)
    }

    /// The first column of a result as comparable texts: a node by its display name.
    pub fn answer_column(&self, rows: &Rows) -> Vec<String> {
        rows.rows
            .iter()
            .filter_map(|row| row.first())
            .map(|value| self.answer_text(value))
            .collect()
    }

    fn answer_text(&self, value: &Value) -> String {
        match value {
            Value::Node(node) => {
                let display = node
                    .labels
                    .iter()
                    .find_map(|l| self.values.label(l))
                    .map(|l| l.display.as_str())
                    .unwrap_or("name");
                node.properties
                    .iter()
                    .find(|(k, _)| k == display)
                    .map(|(_, v)| self.answer_text(v))
                    .unwrap_or_else(|| format!("#{}", node.id.0))
            }
            other => plain_text(other),
        }
    }
}

/// A value as answers compare it: numbers equal whatever their type ("12", 12, 12.0).
pub fn plain_text(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => number_text(*f),
        Value::String(s) => {
            let trimmed = s.trim();
            match trimmed.parse::<f64>() {
                Ok(f) if f.is_finite() && !trimmed.is_empty() => number_text(f),
                _ => trimmed.to_owned(),
            }
        }
        Value::List(items) => items.iter().map(plain_text).collect::<Vec<_>>().join(", "),
        other => other.to_json().to_string(),
    }
}

fn number_text(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        let rounded = format!("{f:.4}");
        rounded
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
    }
}

/// What a right answer is, from a query known to be right.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    pub answers: Vec<String>,
    /// The query orders its rows: answers compare in order.
    pub ordered: bool,
    /// The query limits rows without ordering them, so which rows come back is the
    /// engine's choice: any as many of these (the rows without the limit) are right.
    pub unlimited: Option<Vec<String>>,
    /// The query orders by a value rows may share: tied rows come in any order.
    pub ties: Option<Ties>,
}

/// What an ordered reference is ordered by, where rows may tie.
#[derive(Debug, Clone, PartialEq)]
pub struct Ties {
    /// The value each answer is ordered by.
    pub keys: Vec<String>,
    /// The query limits its rows: every (key, answer) row without the limit, so that a
    /// row tied with the last kept one may stand in for it.
    pub beyond: Option<Vec<(String, String)>>,
}

impl Ties {
    /// `predicted` in the reference's order, up to the order of tied rows.
    fn matches(&self, answers: &[String], predicted: &[String]) -> bool {
        if predicted.len() != answers.len() || self.keys.len() != answers.len() {
            return false;
        }
        let sorted = |items: &[String]| {
            let mut items = items.to_vec();
            items.sort();
            items
        };
        let mut start = 0;
        while start < answers.len() {
            let key = &self.keys[start];
            let end = (start..answers.len())
                .find(|&i| &self.keys[i] != key)
                .unwrap_or(answers.len());
            let got = sorted(&predicted[start..end]);
            let fits = match &self.beyond {
                Some(rows) if end == answers.len() => {
                    // The last run was cut by the limit: any rows of its key will do,
                    // each as often as the unlimited rows hold it.
                    let mut pool: Vec<&String> = rows
                        .iter()
                        .filter(|(k, _)| k == key)
                        .map(|(_, answer)| answer)
                        .collect();
                    got.iter().all(|answer| {
                        pool.iter()
                            .position(|p| *p == answer)
                            .map(|at| pool.swap_remove(at))
                            .is_some()
                    })
                }
                _ => got == sorted(&answers[start..end]),
            };
            if !fits {
                return false;
            }
            start = end;
        }
        true
    }
}

impl Reference {
    /// Whether `predicted` (a first column) gives the same answers: in order when the
    /// reference orders (tied rows in any order), as sets otherwise (written queries
    /// add or leave out DISTINCT for the same wording).
    pub fn matches(&self, predicted: &[String]) -> bool {
        if self.ordered {
            return match &self.ties {
                Some(ties) => ties.matches(&self.answers, predicted),
                None => predicted == self.answers.as_slice(),
            };
        }
        let predicted: BTreeSet<&String> = predicted.iter().collect();
        let answers: BTreeSet<&String> = self.answers.iter().collect();
        match &self.unlimited {
            Some(all) => {
                // As many distinct answers as the limited rows hold at least (they may
                // repeat one), no more than the rows, all among the unlimited ones.
                let all: BTreeSet<&String> = all.iter().collect();
                !predicted.is_empty()
                    && predicted.len() >= answers.len()
                    && predicted.len() <= self.answers.len()
                    && predicted.is_subset(&all)
            }
            None => predicted == answers,
        }
    }
}

/// Whether a result holds an answer: a row with some value (an average over no rows
/// is one row of null).
pub fn has_rows(rows: &Rows) -> bool {
    rows.rows
        .iter()
        .any(|row| row.iter().any(|value| !matches!(value, Value::Null)))
}

/// Whether a graph is a property graph that grounded Cypher can serve: its nodes have
/// labels, or properties besides their names. A graph of triples (unlabelled nodes
/// with a name each) is served by the relation-path retrievers alone.
pub fn is_property_graph(schema: &GraphSchema) -> bool {
    schema
        .labels
        .iter()
        .any(|label| !label.name.is_empty() || label.property_keys.iter().any(|k| k != "name"))
}

/// How well a candidate fits a question without any learned plan.
fn cold_score(candidate: &Candidate, question: &Question) -> f32 {
    let best = |stem: &str, pool: &[String]| {
        pool.iter()
            .map(|p| text::stem_similarity(stem, p))
            .fold(0.0f32, f32::max)
    };
    let cover: f32 = question
        .stems
        .iter()
        .map(|q| best(q, &candidate.stems))
        .sum();
    let mut own: Vec<String> = candidate
        .stems
        .iter()
        .filter(|s| s.as_str() != VALUES_MARK)
        .cloned()
        .collect();
    own.sort();
    own.dedup();
    let waste: f32 = own.iter().map(|c| 1.0 - best(c, &question.stems)).sum();
    let cues = &question.cues;
    let shape = &candidate.shape;
    let mut fit = 0.0;
    if cues.count != shape.count {
        fit -= 3.0;
    }
    if cues.order.is_some() != shape.order.is_some() {
        fit -= 3.0;
    } else if cues.order != shape.order {
        fit -= 1.0;
    }
    if cues.limit.is_some() && !shape.limit {
        fit -= 1.0;
    }
    if cues.compare.is_some() && !shape.filter {
        fit -= 2.0;
    }
    if cues.range.is_some() && !candidate.params.iter().any(|(p, _)| p == "lo") {
        fit -= 2.0;
    }
    let adds_up = |a: Option<Aggregate>| matches!(a, Some(Aggregate::Sum | Aggregate::Average));
    if adds_up(cues.aggregate) != adds_up(shape.aggregate) {
        fit -= 1.5;
    }
    let used: BTreeSet<(usize, usize)> = candidate
        .grounded
        .iter()
        .filter_map(|&i| question.groundings.get(i).map(|g| g.span))
        .collect();
    fit += 2.0 * used.len() as f32;
    fit -= 2.0 * question.mentions.saturating_sub(used.len()) as f32;
    fit -= 0.3 * f32::from(shape.hops);
    // A quoted text or a value the question gives, left unused.
    let uses = |prefix: char, n: usize| {
        (0..n)
            .filter(|i| {
                let name = format!("{prefix}{i}");
                candidate.params.iter().any(|(p, _)| *p == name)
            })
            .count()
    };
    let literals = cues.literals.len();
    fit -= 2.0 * literals.saturating_sub(uses('s', literals)) as f32;
    let equals = cues.equals.len();
    fit -= 1.0 * equals.saturating_sub(uses('e', equals)) as f32;
    if candidate.stems.iter().any(|s| s == VALUES_MARK) {
        fit -= 0.5;
    }
    if question.target.as_deref() == Some(candidate.answer.as_str()) {
        fit += 2.5;
    }
    cover - 0.5 * waste + fit
}
