//! Summarizer replies: final answers, each with the evidence lines it rests on.
//!
//! The prompt labels evidence lines `E1`, `E2`, … (1-based, as people count); answers
//! cite them as `Answer [E1, E3]`. Citations come back as 0-based indices into the
//! request's evidence, out-of-range ones dropped.

use kgmesh_schemas::messages::summarizer::{Answer, SummarizeReply};
use serde_json::Value;

use super::{extract, kg_linker::is_non_answer, sections::clean_item, SectionName};

pub const SECTIONS: &[SectionName] = &[
    SectionName {
        canonical: "answers",
        aliases: &["answer", "final answers", "final answer"],
    },
    SectionName {
        canonical: "explanation",
        aliases: &["reason", "reasoning", "rationale", "why"],
    },
];

/// Reads the answers (best first, at most `max_answers`) and the explanation.
pub fn parse(reply: &str, evidence_count: usize, max_answers: usize) -> SummarizeReply {
    let sections = extract(reply, SECTIONS);
    let mut answers: Vec<Answer> = Vec::new();
    if let Some(body) = sections.text("answers") {
        for line in body.lines() {
            let Some((text, cited)) = parse_answer_line(line, evidence_count) else {
                continue;
            };
            if let Some(existing) = answers
                .iter_mut()
                .find(|a| a.text.eq_ignore_ascii_case(&text))
            {
                for index in cited {
                    if !existing.evidence.contains(&index) {
                        existing.evidence.push(index);
                    }
                }
                continue;
            }
            if answers.len() >= max_answers {
                break;
            }
            let rank = answers.len();
            answers.push(Answer {
                text,
                entity: None,
                score: 1.0 / (1.0 + rank as f32),
                evidence: cited,
            });
        }
    }
    SummarizeReply {
        low_confidence: false,
        answers,
        explanation: sections
            .text("explanation")
            .unwrap_or_default()
            .trim()
            .to_owned(),
        confidence: None,
        decline: None,
    }
}

fn parse_answer_line(line: &str, evidence_count: usize) -> Option<(String, Vec<u32>)> {
    let trimmed = line.trim();
    if trimmed.starts_with('{') {
        return json_answer(trimmed, evidence_count);
    }
    let (text, citation) = split_citation(trimmed);
    let text = clean_item(text);
    let text = text
        .trim_end_matches(['|', ':', '-', ',', '—'])
        .trim()
        .to_owned();
    if text.is_empty() || is_non_answer(&text) || text.chars().count() > 200 {
        return None;
    }
    Some((
        text,
        citation
            .map(|c| cited_indices(c, evidence_count))
            .unwrap_or_default(),
    ))
}

/// Splits `Paris [E1, E3]`, `Paris (E2)`, `Paris | evidence: 1, 3` into text and citation.
fn split_citation(line: &str) -> (&str, Option<&str>) {
    let line = line.trim_end_matches(['.', ' ']);
    for (open, close) in [('[', ']'), ('(', ')')] {
        if line.ends_with(close) {
            if let Some(start) = line.rfind(open) {
                let inside = &line[start + open.len_utf8()..line.len() - close.len_utf8()];
                if looks_like_citation(inside) {
                    return (&line[..start], Some(inside));
                }
                // Square brackets were asked for citations only: a model that cites a
                // relation name instead ("1981 [release_year]") still gave the answer.
                if open == '[' && start > 0 {
                    return (&line[..start], None);
                }
            }
        }
    }
    if let Some(bar) = line.rfind('|') {
        let tail = &line[bar + 1..];
        if looks_like_citation(tail) {
            return (&line[..bar], Some(tail));
        }
    }
    (line, None)
}

/// Only evidence labels, numbers, separators and the words people put around them.
fn looks_like_citation(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    let stripped = ["evidence", "lines", "line", "sources", "source", "see"]
        .iter()
        .fold(lower, |acc, word| acc.replace(word, ""));
    stripped.chars().any(|c| c.is_ascii_digit())
        && stripped.chars().all(|c| {
            c.is_ascii_digit() || matches!(c, 'e' | ',' | ' ' | ':' | ';' | '#' | '&' | '-')
        })
}

fn cited_indices(text: &str, evidence_count: usize) -> Vec<u32> {
    let mut out = Vec::new();
    for number in text
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
    {
        let Ok(label) = number.parse::<u64>() else {
            continue;
        };
        if label >= 1 && (label as usize) <= evidence_count {
            let index = (label - 1) as u32;
            if !out.contains(&index) {
                out.push(index);
            }
        }
    }
    out
}

/// `{"answer": "Paris", "evidence": ["E1", 3]}` from replies that chose JSON.
fn json_answer(line: &str, evidence_count: usize) -> Option<(String, Vec<u32>)> {
    let value: Value = serde_json::from_str(line).ok()?;
    let text = ["answer", "text", "name", "value"]
        .iter()
        .find_map(|key| value.get(*key).and_then(Value::as_str))?
        .trim()
        .to_owned();
    if text.is_empty() || is_non_answer(&text) {
        return None;
    }
    let citation = ["evidence", "citations", "lines", "sources"]
        .iter()
        .find_map(|key| value.get(*key))
        .map(|v| match v {
            Value::Array(items) => items
                .iter()
                .map(|i| match i {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_default();
    Some((text, cited_indices(&citation, evidence_count)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_with_citations_become_zero_based_indices() {
        let reply = "<answers>\nChristopher Nolan [E1, E3]\nEmma Thomas (E2)\n</answers>\n<explanation>Both produced it.</explanation>";
        let parsed = parse(reply, 3, 10);
        assert_eq!(parsed.answers.len(), 2);
        assert_eq!(parsed.answers[0].text, "Christopher Nolan");
        assert_eq!(parsed.answers[0].evidence, vec![0, 2]);
        assert_eq!(parsed.answers[1].text, "Emma Thomas");
        assert_eq!(parsed.answers[1].evidence, vec![1]);
        assert!(parsed.answers[0].score > parsed.answers[1].score);
        assert_eq!(parsed.explanation, "Both produced it.");
    }

    #[test]
    fn out_of_range_citations_and_non_answers_are_dropped() {
        let parsed = parse("<answers>\n1999 [E9]\nI don't know\n</answers>", 2, 10);
        assert_eq!(parsed.answers.len(), 1);
        assert_eq!(parsed.answers[0].text, "1999");
        assert!(parsed.answers[0].evidence.is_empty());
    }

    #[test]
    fn bracketed_non_citations_are_cut_from_the_answer() {
        let parsed = parse("<answers>\n1981 [release_year]\n</answers>", 4, 5);
        assert_eq!(parsed.answers[0].text, "1981");
        assert!(parsed.answers[0].evidence.is_empty());
    }

    #[test]
    fn titles_with_parentheses_are_not_citations() {
        let parsed = parse(
            "<answers>\nSolaris (1972) [E1]\nHeat (film)\n</answers>",
            1,
            10,
        );
        assert_eq!(parsed.answers[0].text, "Solaris (1972)");
        assert_eq!(parsed.answers[0].evidence, vec![0]);
        assert_eq!(parsed.answers[1].text, "Heat (film)");
    }

    #[test]
    fn json_answers_pipes_and_the_answer_cap() {
        let reply = "{\"answers\": [{\"answer\": \"Paris\", \"evidence\": [\"E2\"]}, {\"answer\": \"Lyon\", \"evidence\": [1]}]}";
        let parsed = parse(reply, 2, 1);
        assert_eq!(parsed.answers.len(), 1);
        assert_eq!(parsed.answers[0].text, "Paris");
        assert_eq!(parsed.answers[0].evidence, vec![1]);
        let piped = parse("<answers>Paris | evidence: E1, E2</answers>", 2, 5);
        assert_eq!(piped.answers[0].text, "Paris");
        assert_eq!(piped.answers[0].evidence, vec![0, 1]);
    }
}
