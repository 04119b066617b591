//! Question patterns: the graph shape a question describes, with the question's own
//! words on its edges (SimGRAG §4.1), and the LLM-free builder.
//!
//! Without a model the question is cut around its named entities into *relation
//! phrases*: runs of adjacent content words ("films directed", "languages spoken",
//! "mom"). With one named entity the phrases form a chain from it outwards, in the order
//! the sentence's structure gives them ([`chain_order`]); the last node is the answer. A phrase holding a shared-value word ("the *same*
//! director", "*co*-starred") is a round trip: the relation to the shared node and back
//! to the answer. With several named entities the pattern is a star: each entity joined
//! to the answer by the phrase nearest to it ("plays *position* P for *club* C").
//! A run made only of class words ("*which films* did X direct") names the answer's
//! class, not a relation, and is left out unless it is the question's only phrase.

use std::{collections::HashSet, fmt};

use crate::scoring::text::{inside_a_longer, word_spans, words, QuestionTerms};

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

/// The phrases of `question` made only of class words ("what *languages* …", "which
/// *films* …"): the caller says which of them name a relation of its graph (see
/// [`pattern_without_model`]).
pub fn class_phrases(question: &str, names: &[&str]) -> Vec<String> {
    let terms = QuestionTerms::new(question, names);
    all_runs(&terms, &name_positions(&words(question), names))
        .iter()
        .filter(|run| class_only(&terms, run))
        .map(|run| phrase(&terms, run))
        .collect()
}

/// The pattern of `question` whose named entities are `names` (distinct names as
/// linked), with at most `max_edges` edges; `None` when it names no entity.
///
/// A phrase of class words only names the answer's class ("which *films* did X
/// direct") unless it is one of `relation_classes`, the class phrases the caller found
/// near a relation of its graph ("what *languages* are the films of X in", where the
/// graph has `in_language`), or the question's only phrase.
pub fn pattern_without_model(
    question: &str,
    names: &[&str],
    max_edges: usize,
    relation_classes: &[String],
) -> Option<Pattern> {
    if names.is_empty() || max_edges == 0 {
        return None;
    }
    let terms = QuestionTerms::new(question, names);
    let all = words(question);
    let runs = runs(&terms, &name_positions(&all, names), relation_classes);
    if names.len() == 1 {
        return Some(chain(&terms, &all, names[0], runs, max_edges));
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
            Some(run)
                if terms.position(*run.terms.last().unwrap_or(&i)) + 1 == terms.position(i) =>
            {
                run.terms.push(i)
            }
            _ => runs.push(Run { terms: vec![i] }),
        }
    }
    runs
}

fn class_only(terms: &QuestionTerms, run: &Run) -> bool {
    run.terms.iter().all(|&i| terms.names_a_class(i))
}

/// Positions of the words of the entities' names in the question (a one-word name a
/// question also uses as a plain word, "position *midfielder*", is still the name).
fn name_positions(all: &[String], names: &[&str]) -> HashSet<usize> {
    names
        .iter()
        .flat_map(|name| word_spans(all, &words(name)))
        .flat_map(|(at, end)| at..end)
        .collect()
}

/// The runs that name relations (see [`pattern_without_model`]).
fn runs(terms: &QuestionTerms, in_names: &HashSet<usize>, relation_classes: &[String]) -> Vec<Run> {
    let mut runs = all_runs(terms, in_names);
    let names_relation =
        |run: &Run| !class_only(terms, run) || relation_classes.contains(&phrase(terms, run));
    if runs.iter().any(names_relation) {
        runs.retain(names_relation);
    }
    runs
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

/// The order of `runs` along a chain from the name written at `span` of `all`:
/// 1. a possessive chain after the name, in order ("X 's *mother* 's *father*");
/// 2. the other words after the name that name relations: the name is their clause's
///    subject or object ("which films did X *direct*", "the club that X *plays for*");
/// 3. the words before the name, nearest first ("the *films directed* by the
///    *director* of X");
/// 4. class words after the name last: they ask for the answer ("… X were in which
///    *genres*").
///
/// Without a written name, from the end of the sentence.
fn chain_order(
    terms: &QuestionTerms,
    all: &[String],
    span: Option<(usize, usize)>,
    runs: &mut [Run],
) {
    let first = |run: &Run| terms.position(run.terms[0]);
    let last = |run: &Run| terms.position(*run.terms.last().unwrap_or(&run.terms[0]));
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
        next = last(&runs[r]) + 1;
    }
    let key = |(r, run): (usize, &Run)| -> (u8, usize) {
        if let Some(rank) = possessive.iter().position(|&p| p == r) {
            (0, rank)
        } else if first(run) >= end && !class_only(terms, run) {
            (1, first(run))
        } else if last(run) < at {
            (2, at - last(run))
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

fn chain(
    terms: &QuestionTerms,
    all: &[String],
    name: &str,
    mut runs: Vec<Run>,
    max_edges: usize,
) -> Pattern {
    let spans = word_spans(all, &words(name));
    let span = spans
        .iter()
        .copied()
        .find(|&span| !inside_a_longer(span, &spans));
    chain_order(terms, all, span, &mut runs);
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
        let round_trip = run.terms.iter().any(|&i| terms.marks_shared_value(i));
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
