//! Question patterns: the graph shape a question describes, with the question's own
//! words on its edges (SimGRAG §4.1); the LLM-free builder; and the reading of a
//! model-written pattern.
//!
//! Without a model the question is cut around its named entities into *relation
//! phrases*: runs of adjacent content words ("films directed", "languages", "mom").
//! With one named entity the phrases form a chain from it outwards, in the order the
//! sentence's structure gives them ([`chain_order`]); the last node is the answer. The
//! first phrase holding a shared-value word ("the *same* director", "*co*-starred") is
//! a round trip: the relation to the shared node and back to the answer. With several
//! named entities the pattern is a star: each entity joined to the answer by the phrase
//! nearest to it ("plays at *position* P at the *club* C"). What the graph's relations
//! say of each phrase shapes the rest (see [`pattern_without_model`]): a run of class
//! words only ("*which films* did X direct") names the answer's class, not a relation,
//! unless its letters name one.

use std::{
    collections::{HashMap, HashSet},
    fmt,
};

use kgmesh_models::parse::pattern::{is_unknown, PatternTriple};

use crate::scoring::text::{
    inside_a_longer, is_article, name_positions, names_the_class_of_a_name, word_spans, words,
    QuestionTerms, PREPOSITIONS,
};

/// A pattern node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternNode {
    /// A named entity of the question (its name as linked).
    Known(String),
    /// Something the question does not name (the answer, a node on the way).
    Unknown,
}

/// A pattern edge between two pattern nodes; its direction is not significant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternEdge {
    pub from: usize,
    pub to: usize,
    /// The question's words for the relation; `None` when it has none.
    pub phrase: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    pub nodes: Vec<PatternNode>,
    pub edges: Vec<PatternEdge>,
    /// The node the question asks for.
    pub answer: usize,
}

impl Pattern {
    /// The pattern edges (index, and the node reached) from `from` to the answer, in
    /// walking order; empty when the answer is not connected to it.
    pub fn route(&self, from: usize) -> Vec<(usize, usize)> {
        let mut previous: Vec<Option<(usize, usize)>> = vec![None; self.nodes.len()];
        let mut seen = vec![false; self.nodes.len()];
        seen[from] = true;
        let mut queue = std::collections::VecDeque::from([from]);
        while let Some(v) = queue.pop_front() {
            for (e, edge) in self.edges.iter().enumerate() {
                let other = match (edge.from == v, edge.to == v) {
                    (true, _) => edge.to,
                    (_, true) => edge.from,
                    _ => continue,
                };
                if !seen[other] {
                    seen[other] = true;
                    previous[other] = Some((e, v));
                    queue.push_back(other);
                }
            }
        }
        let mut route = Vec::new();
        let mut at = self.answer;
        while at != from {
            let Some((edge, back)) = previous[at] else {
                return Vec::new();
            };
            route.push((edge, at));
            at = back;
        }
        route.reverse();
        route
    }
}

impl fmt::Display for Pattern {
    /// `(Tom Hanks) -[movies starring]- (?1) -[directed]- (?answer)`, one edge per
    /// clause, separated by `; `.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let node = |v: usize| match &self.nodes[v] {
            PatternNode::Known(name) => format!("({name})"),
            PatternNode::Unknown if v == self.answer => "(?answer)".to_owned(),
            PatternNode::Unknown => format!("(?{v})"),
        };
        for (i, edge) in self.edges.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(
                f,
                "{} -[{}]- {}",
                node(edge.from),
                edge.phrase.as_deref().unwrap_or("?"),
                node(edge.to)
            )?;
        }
        Ok(())
    }
}

/// A relation phrase: question words (indices into the question's terms) standing next
/// to each other in the sentence.
#[derive(Debug, Clone)]
struct Run {
    terms: Vec<usize>,
}

/// The relation nearest to a phrase.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhraseNearest {
    /// Its index among the caller's relations.
    pub relation: usize,
    /// How near, in `[0, 1]` (by letters or meaning).
    pub similarity: f32,
    /// How near the nearest relation by letters alone is.
    pub letters: f32,
    /// No other relation is as near.
    pub alone: bool,
}

/// The nearest relation of each phrase.
pub type PhraseRelations = HashMap<String, PhraseNearest>;

/// From this similarity a phrase names its nearest relation (the synonym threshold of
/// the KG-Linker and the summarizer; a relation word shared by its letters scores 0.6
/// to 1).
pub const NAMES_A_RELATION: f32 = crate::scoring::relevance::SYNONYM_COSINE;

/// Every relation phrase the LLM-free builder may use for `question`: the caller tells
/// [`pattern_without_model`] which relation each one is nearest to.
pub fn run_phrases(question: &str, names: &[&str]) -> Vec<String> {
    let terms = QuestionTerms::new(question, names);
    all_runs(&terms, &name_positions(&words(question), names))
        .iter()
        .map(|run| phrase(&terms, run))
        .collect()
}

/// The pattern of `question` whose named entities are `names` (distinct names as
/// linked), with at most `max_edges` edges; `None` when it names no entity.
/// `relations` gives the nearest relation of each phrase of [`run_phrases`].
///
/// Phrases are shaped by what the graph's relations say of them:
/// - a phrase of class words only names the answer's class ("which *films* did X
///   direct") unless it is near a relation ("what *languages* are the films of X in",
///   where the graph has `in_language`); in a chain, a class word right before the
///   name ("the *actor* X") is that name's class and never a hop;
/// - a class phrase naming the relation of the hop before it is that hop ("when was X
///   *released*, which *year*": `release_year` once), when both name it and no other
///   relation as nearly;
/// - a phrase near no relation joins the next one in the chain ("who is *listed* as
///   *screenwriter*"), unless it is the only one.
pub fn pattern_without_model(
    question: &str,
    names: &[&str],
    max_edges: usize,
    relations: &PhraseRelations,
) -> Option<Pattern> {
    if names.is_empty() || max_edges == 0 {
        return None;
    }
    let terms = QuestionTerms::new(question, names);
    let all = words(question);
    let in_names = name_positions(&all, names);
    let near = |run: &Run| relations.get(&phrase(&terms, run)).copied();
    let mut runs = all_runs(&terms, &in_names);
    // In a chain, a class word right before the name is the name's own class, as is
    // the class a question asks a kind of ("what kind of *film* is X"); in a star it
    // is the best word there is for the relation that reaches that name ("at the
    // *club* X").
    // Likewise the head of a relative clause around the name is the class of the node
    // the clause reaches ("where is the *football club* that X plays for").
    let around_the_name = relative_clause_around(&all, &in_names);
    if names.len() == 1 {
        runs.retain(|run| {
            let end = last(&terms, run);
            !(class_only(&terms, run)
                && (in_names.contains(&(end + 1))
                    || names_the_class_of_a_name(&all, end, &in_names)))
                && around_the_name != Some(end + 1)
        });
    }
    // Class words name a relation by their letters only: by meaning, "movies" is near
    // `starred_actors` (as for the KG-Linker's and summarizer's class words). An asking
    // wh-word names one by meaning when it asks about the head of a relative clause
    // around the name ("*where* is the club that X plays for": the club's place); else
    // the clause's own words name the last relation ("where was X born").
    let keep = |run: &Run| {
        let asking = run.terms.iter().any(|&t| terms.asks_a_kind(t));
        if asking {
            return around_the_name.is_some()
                && near(run).is_some_and(|n| n.alone && n.similarity > 0.0);
        }
        !class_only(&terms, run) || near(run).is_some_and(|n| n.letters >= NAMES_A_RELATION)
    };
    if runs.iter().any(keep) {
        runs.retain(keep);
    }
    if names.len() == 1 {
        return Some(chain(&terms, &all, names[0], runs, max_edges, &near));
    }
    // A star: each entity joined to the answer by the phrase nearest to it.
    let spans: Vec<Option<(usize, usize)>> = names
        .iter()
        .map(|name| word_spans(&all, &words(name)).first().copied())
        .collect();
    let mut nodes = vec![PatternNode::Unknown];
    let mut edges = Vec::new();
    let mut taken = vec![false; runs.len()];
    for (name, span) in names.iter().zip(&spans).take(max_edges) {
        nodes.push(PatternNode::Known((*name).to_owned()));
        let nearest = span.and_then(|(at, end)| {
            runs.iter()
                .enumerate()
                .filter(|(r, _)| !taken[*r])
                .map(|(r, run)| {
                    let first = terms.position(run.terms[0]);
                    let last = terms.position(*run.terms.last().unwrap_or(&run.terms[0]));
                    // Words between, then words before the name first ("for *club* C").
                    let (gap, after) = if last < at {
                        (at - last, false)
                    } else {
                        (first.saturating_sub(end) + 1, true)
                    };
                    (gap, after, r)
                })
                .min()
                .map(|(_, _, r)| r)
        });
        if let Some(r) = nearest {
            taken[r] = true;
        }
        edges.push(PatternEdge {
            from: nodes.len() - 1,
            to: 0,
            phrase: nearest.map(|r| phrase(&terms, &runs[r])),
        });
    }
    Some(Pattern {
        nodes,
        edges,
        answer: 0,
    })
}

/// Runs of adjacent content words outside the entities' names, in sentence order.
fn all_runs(terms: &QuestionTerms, in_names: &HashSet<usize>) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for i in (0..terms.stems().len()).filter(|&i| !in_names.contains(&terms.position(i))) {
        match runs.last_mut() {
            // An asking wh-word is a phrase of its own ("*who* directed X").
            Some(run)
                if terms.position(*run.terms.last().unwrap_or(&i)) + 1 == terms.position(i)
                    && !run.terms.iter().any(|&t| terms.asks_a_kind(t)) =>
            {
                run.terms.push(i)
            }
            _ => runs.push(Run { terms: vec![i] }),
        }
    }
    runs
}

/// Words that open a relative clause ("the club *that* X plays for").
const RELATIVE_PRONOUNS: &[&str] = &["that", "which", "who", "whom", "whose"];

/// The position of the relative pronoun opening a clause that holds a named entity:
/// the last such word before the first name's first word (the question's opening
/// wh-word is no relative pronoun).
fn relative_clause_around(all: &[String], in_names: &HashSet<usize>) -> Option<usize> {
    let first_name = (0..all.len()).find(|p| in_names.contains(p))?;
    (1..first_name)
        .rev()
        .find(|&p| RELATIVE_PRONOUNS.contains(&all[p].as_str()))
}

fn class_only(terms: &QuestionTerms, run: &Run) -> bool {
    run.terms.iter().all(|&i| terms.names_a_class(i))
}

/// The words of a run, shared-value markers left out (they shape the pattern instead).
fn phrase(terms: &QuestionTerms, run: &Run) -> String {
    let words: Vec<&str> = run
        .terms
        .iter()
        .filter(|&&i| !terms.marks_shared_value(i))
        .map(|&i| terms.raw_words()[i].as_str())
        .collect();
    words.join(" ")
}

/// The position of a run's last word.
fn last(terms: &QuestionTerms, run: &Run) -> usize {
    terms.position(*run.terms.last().unwrap_or(&run.terms[0]))
}

/// The order of `runs` along a chain from the name written at `span` of `all`:
/// 1. a possessive chain after the name, in order ("X 's *mother* 's *father*");
/// 2. the words after the name when the name is their clause's subject or object
///    ("which films did X *direct*", "the club that X *plays for*");
/// 3. the words before the name, nearest first ("the *films directed* by the
///    *director* of X"), but the asked-for class after "what"/"which";
/// 4. the words after a name that is a preposition's object ("the films acted by X
///    *were released* in …", "do players from C *play for*");
/// 5. class words asking for the answer: after "what"/"which", or after the name
///    ("… X were in which *genres*").
///
/// Without a written name, from the end of the sentence.
fn chain_order(
    terms: &QuestionTerms,
    all: &[String],
    span: Option<(usize, usize)>,
    runs: &mut [Run],
) {
    let first = |run: &Run| terms.position(run.terms[0]);
    let Some((at, end)) = span else {
        runs.sort_by_key(|run| std::cmp::Reverse(first(run)));
        return;
    };
    let mut possessive: Vec<usize> = Vec::new();
    let mut next = end;
    while all.get(next).is_some_and(|w| w == "s") {
        let Some(r) = (0..runs.len()).find(|&r| first(&runs[r]) > next && !possessive.contains(&r))
        else {
            break;
        };
        possessive.push(r);
        next = last(terms, &runs[r]) + 1;
    }
    // The word that governs the name, past an article and the name's own class word.
    let governor = all[..at]
        .iter()
        .rev()
        .find(|w| !is_article(w) && !is_class_word(terms, all, w))
        .map(String::as_str);
    // A preposition makes a following name its object inside a noun phrase ("the films
    // acted *by* X were released …"): the words after such a name belong to the sentence
    // around that noun phrase, not to the name.
    let after_object = governor.is_some_and(|w| PREPOSITIONS.contains(&w));
    let asks = |run: &Run| {
        class_only(terms, run)
            && (first(run) >= end
                || first(run)
                    .checked_sub(1)
                    .is_some_and(|p| matches!(all[p].as_str(), "what" | "which")))
    };
    let key = |(r, run): (usize, &Run)| -> (u8, usize) {
        if let Some(rank) = possessive.iter().position(|&p| p == r) {
            (0, rank)
        } else if asks(run) {
            (4, first(run))
        } else if first(run) >= end && !after_object {
            (1, first(run))
        } else if last(terms, run) < at {
            (2, at - last(terms, run))
        } else {
            (3, first(run))
        }
    };
    let mut keyed: Vec<((u8, usize), Run)> = runs
        .iter()
        .enumerate()
        .map(|(r, run)| (key((r, run)), run.clone()))
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    for (slot, (_, run)) in runs.iter_mut().zip(keyed) {
        *slot = run;
    }
}

/// Whether `word` (a word before the name) is a class word of the question.
fn is_class_word(terms: &QuestionTerms, all: &[String], word: &str) -> bool {
    (0..terms.stems().len()).any(|i| terms.names_a_class(i) && all[terms.position(i)] == word)
}

/// Whether two phrases are nearest to one relation, each with no other as near.
fn same_relation(a: Option<PhraseNearest>, b: Option<PhraseNearest>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.alone && b.alone && a.relation == b.relation,
        _ => false,
    }
}

fn chain(
    terms: &QuestionTerms,
    all: &[String],
    name: &str,
    mut runs: Vec<Run>,
    max_edges: usize,
    near: &dyn Fn(&Run) -> Option<PhraseNearest>,
) -> Pattern {
    let spans = word_spans(all, &words(name));
    let span = spans
        .iter()
        .copied()
        .find(|&span| !inside_a_longer(span, &spans));
    chain_order(terms, all, span, &mut runs);
    let names_relation = |run: &Run| near(run).is_some_and(|n| n.similarity >= NAMES_A_RELATION);
    // A class phrase naming the relation of the hop before it is that hop.
    let mut merged: Vec<Run> = Vec::new();
    for run in runs {
        match merged.last_mut() {
            Some(previous)
                if class_only(terms, &run)
                    && names_relation(&run)
                    && names_relation(previous)
                    && same_relation(near(previous), near(&run)) =>
            {
                previous.terms.extend(run.terms)
            }
            _ => merged.push(run),
        }
    }
    let runs = merged;
    let mut nodes = vec![PatternNode::Known(name.to_owned())];
    let mut edges = Vec::new();
    let mut push = |nodes: &mut Vec<PatternNode>, phrase: Option<String>| {
        let from = nodes.len() - 1;
        nodes.push(PatternNode::Unknown);
        edges.push(PatternEdge {
            from,
            to: nodes.len() - 1,
            phrase,
        });
    };
    let mut budget = max_edges;
    for run in &runs {
        let text = phrase(terms, run);
        let text = (!text.is_empty()).then_some(text);
        // "films that *share* actors with X": the first hop goes to the shared node and
        // comes back; later ("the director of X *also* directed") the return is the hop.
        let round_trip = nodes.len() == 1 && run.terms.iter().any(|&i| terms.marks_shared_value(i));
        let needed = if round_trip { 2 } else { 1 };
        if budget < needed {
            break;
        }
        budget -= needed;
        push(&mut nodes, text.clone());
        if round_trip {
            push(&mut nodes, text);
        }
    }
    if nodes.len() == 1 {
        push(&mut nodes, None);
    }
    let answer = nodes.len() - 1;
    Pattern {
        nodes,
        edges,
        answer,
    }
}

/// Most edges a model-written pattern may have.
pub const MAX_MODEL_EDGES: usize = 6;

/// The pattern a model wrote as `triples` (SimGRAG's segmentation), for a question whose
/// linked entities are `names`. A written node is the named entity whose words it
/// holds (or that holds its words); `UNKNOWN …` nodes are unknown, one per distinct
/// label. The answer is the unknown node farthest from the named entities (the last
/// written of those). Refused, with the reason: no triple names a linked entity, a node
/// that is neither unknown nor a linked entity, no unknown node, a pattern in pieces, or
/// more than [`MAX_MODEL_EDGES`] edges.
pub fn pattern_from_triples(triples: &[PatternTriple], names: &[&str]) -> Result<Pattern, String> {
    let name_words: Vec<Vec<String>> = names.iter().map(|n| words(n)).collect();
    let mut keys: Vec<String> = Vec::new();
    let mut nodes: Vec<PatternNode> = Vec::new();
    let mut node_of = |label: &str| -> Result<usize, String> {
        let label_words = words(label);
        let (key, node) = if is_unknown(label) {
            (format!("?{}", label_words.join(" ")), PatternNode::Unknown)
        } else {
            let named = name_words.iter().position(|name| {
                !name.is_empty()
                    && !label_words.is_empty()
                    && (!word_spans(&label_words, name).is_empty()
                        || !word_spans(name, &label_words).is_empty())
            });
            match named {
                Some(i) => (
                    format!("={}", names[i]),
                    PatternNode::Known(names[i].to_owned()),
                ),
                None => return Err(format!("it names {label:?}, which is no linked entity")),
            }
        };
        match keys.iter().position(|k| *k == key) {
            Some(at) => Ok(at),
            None => {
                keys.push(key);
                nodes.push(node);
                Ok(nodes.len() - 1)
            }
        }
    };
    let mut edges = Vec::new();
    for triple in triples {
        let from = node_of(&triple.head)?;
        let to = node_of(&triple.tail)?;
        if from == to {
            continue;
        }
        let phrase = (!is_unknown(&triple.relation)).then(|| triple.relation.trim().to_owned());
        edges.push(PatternEdge { from, to, phrase });
    }
    if edges.is_empty() {
        return Err("it has no triple between two different nodes".to_owned());
    }
    if edges.len() > MAX_MODEL_EDGES {
        return Err(format!(
            "it has {} edges, more than {MAX_MODEL_EDGES}",
            edges.len()
        ));
    }
    // Hops from the named entities.
    let mut hops: Vec<Option<usize>> = nodes
        .iter()
        .map(|n| matches!(n, PatternNode::Known(_)).then_some(0))
        .collect();
    if hops.iter().all(Option::is_none) {
        return Err("it names none of the question's linked entities".to_owned());
    }
    let mut changed = true;
    while changed {
        changed = false;
        for edge in &edges {
            for (a, b) in [(edge.from, edge.to), (edge.to, edge.from)] {
                if let Some(h) = hops[a] {
                    if hops[b].is_none_or(|old| old > h + 1) {
                        hops[b] = Some(h + 1);
                        changed = true;
                    }
                }
            }
        }
    }
    if hops.iter().any(Option::is_none) {
        return Err("it is in pieces not all joined to a named entity".to_owned());
    }
    let answer = (0..nodes.len())
        .filter(|&v| nodes[v] == PatternNode::Unknown)
        .max_by_key(|&v| (hops[v], v))
        .ok_or_else(|| "it has no unknown node to answer with".to_owned())?;
    Ok(Pattern {
        nodes,
        edges,
        answer,
    })
}
