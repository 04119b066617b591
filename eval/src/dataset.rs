//! Question sets in the formats of the public KGQA benchmarks, read into one shape.
//! Lines are parsed by [`crate::qa`], which `kgmesh cache warm --import` reads
//! files with too; this module adds what only evaluation needs (MetaQA's bracket
//! option, hop counts from folder names, ids, answers deduplicated after normalization).
//!
//! - MetaQA: `question<TAB>answer1|answer2`, the topic entity in `[brackets]`; the hop
//!   count comes from the folder name (`1-hop`, `2-hop`, `3-hop`) when it says so.
//! - IRN (PathQuestion, WC2014): `question<TAB>answer(s)<TAB>gold path…`. PathQuestion
//!   writes the answer as `name(alias1/alias2/)`, the list in parentheses being every
//!   entity the gold path reaches; WC2014 writes one answer in the second field and
//!   every valid answer as `A/B/` in the fourth. The hop count is the number of relations
//!   of the gold path; a path made of several `*`-joined parts is a conjunction.
//! - JSONL: one object per line, `{"question": "…", "answers": ["…"]}` with optional
//!   `id`, `hops` and `type`.

use std::{
    fmt,
    path::{Path, PathBuf},
};

use crate::qa::{self, QaFormat};
use rand::{rngs::StdRng, seq::index::sample, SeedableRng};
use serde::{Deserialize, Serialize};

/// The question-file formats `kgmesh eval` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum DatasetKind {
    Metaqa,
    Pathquestion,
    Wc2014,
    Jsonl,
    /// `{"question", "cypher"}` pairs, scored by execution (grounded Cypher).
    Text2cypher,
}

impl DatasetKind {
    /// The line format of the kind's files.
    pub fn line_format(self) -> QaFormat {
        match self {
            DatasetKind::Metaqa => QaFormat::Metaqa,
            DatasetKind::Pathquestion | DatasetKind::Wc2014 => QaFormat::Irn,
            DatasetKind::Jsonl | DatasetKind::Text2cypher => QaFormat::Jsonl,
        }
    }
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DatasetKind::Metaqa => "metaqa",
            DatasetKind::Pathquestion => "pathquestion",
            DatasetKind::Wc2014 => "wc2014",
            DatasetKind::Jsonl => "jsonl",
            DatasetKind::Text2cypher => "text2cypher",
        })
    }
}

/// What to do with MetaQA's `[topic entity]` brackets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Brackets {
    /// Ask the question as published, brackets included (a topic-entity hint).
    #[default]
    Keep,
    /// Remove the brackets but keep the entity's name, so that linking has to find it.
    Strip,
}

/// One question with its gold answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Stable across runs of the same file: `<label>:<line>`.
    pub id: String,
    /// The text sent to the system.
    pub question: String,
    /// Every acceptable answer (aliases and all members of the answer set), deduplicated
    /// after normalization.
    pub answers: Vec<String>,
    /// Relations between the topic entity and the answer, when the dataset says.
    pub hops: Option<u8>,
    /// Question type when the dataset says (`path`, `conjunction`, or JSONL's `type`).
    pub kind: Option<String>,
    /// Which file (or file group) the question comes from, e.g. `metaqa/2-hop`.
    pub source: String,
    /// The type of answer asked for, when the dataset says (JSONL's `asks`).
    pub asks: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {problem}")]
    Malformed {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error("{path} holds no questions")]
    Empty { path: PathBuf },
}

/// How to read one questions file.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    pub kind: DatasetKind,
    pub brackets: Brackets,
    /// Overrides the label derived from the file's path.
    pub label: Option<String>,
}

/// Reads every question of `path`.
pub fn read_file(path: &Path, options: &ReadOptions) -> Result<Vec<Question>, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DatasetError::Io {
        path: path.to_owned(),
        source,
    })?;
    let label = options.label.clone().unwrap_or_else(|| source_label(path));
    let questions = parse(&text, path, &label, options)?;
    if questions.is_empty() {
        return Err(DatasetError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(questions)
}

/// Parses the text of a questions file; `path` only names it in errors.
pub fn parse(
    text: &str,
    path: &Path,
    label: &str,
    options: &ReadOptions,
) -> Result<Vec<Question>, DatasetError> {
    let folder_hops = hops_from_path(path);
    let mut questions = Vec::new();
    for (line_number, record) in qa::read_lines(text, options.kind.line_format()) {
        let record = record.map_err(|problem| DatasetError::Malformed {
            path: path.to_owned(),
            line: line_number,
            problem,
        })?;
        let (question, hops) = match options.kind {
            DatasetKind::Metaqa => {
                let question = match options.brackets {
                    Brackets::Keep => record.question,
                    Brackets::Strip => record.question.replace(['[', ']'], ""),
                };
                (question, folder_hops)
            }
            DatasetKind::Pathquestion
            | DatasetKind::Wc2014
            | DatasetKind::Jsonl
            | DatasetKind::Text2cypher => (record.question, record.hops),
        };
        let id = record
            .id
            .unwrap_or_else(|| format!("{label}:{line_number}"));
        questions.push(Question {
            id,
            question,
            answers: dedupe_answers(record.answers),
            hops,
            kind: record.kind,
            source: label.to_owned(),
            asks: record.asks,
        });
    }
    Ok(questions)
}

fn dedupe_answers(answers: Vec<String>) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    answers
        .into_iter()
        .filter(|answer| seen.insert(super::normalize::normalize(answer)))
        .collect()
}

/// `…/metaqa/2-hop/dev.txt` → `metaqa/2-hop`; `…/wc2014-2h/dev.txt` → `wc2014-2h`.
pub fn source_label(path: &Path) -> String {
    let parent_name = |p: &Path| {
        p.parent()
            .and_then(Path::file_name)
            .map(|n| n.to_string_lossy().into_owned())
    };
    let file_stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "questions".to_owned());
    match parent_name(path) {
        Some(parent) if hops_from_folder(&parent).is_some() => {
            match path.parent().and_then(parent_name) {
                Some(grandparent) => format!("{grandparent}/{parent}"),
                None => parent,
            }
        }
        Some(parent) if !parent.is_empty() && parent != "." => parent,
        _ => file_stem,
    }
}

fn hops_from_path(path: &Path) -> Option<u8> {
    path.parent()
        .and_then(Path::file_name)
        .and_then(|name| hops_from_folder(&name.to_string_lossy()))
}

/// `2-hop` → 2.
fn hops_from_folder(name: &str) -> Option<u8> {
    let digits = name.strip_suffix("-hop")?;
    digits.parse().ok().filter(|hops| (1..=9).contains(hops))
}

/// At most `limit` questions: the first ones, or a seeded random sample kept in file
/// order (the same seed draws the same questions on every machine).
pub fn select(questions: Vec<Question>, limit: Option<usize>, seed: Option<u64>) -> Vec<Question> {
    let total = questions.len();
    match (limit, seed) {
        (None, _) => questions,
        (Some(limit), _) if limit >= total => questions,
        (Some(limit), None) => questions.into_iter().take(limit).collect(),
        (Some(limit), Some(seed)) => {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut picked = sample(&mut rng, total, limit).into_vec();
            picked.sort_unstable();
            let mut keep = vec![false; total];
            for index in picked {
                keep[index] = true;
            }
            questions
                .into_iter()
                .zip(keep)
                .filter_map(|(question, keep)| keep.then_some(question))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(kind: DatasetKind, brackets: Brackets) -> ReadOptions {
        ReadOptions {
            kind,
            brackets,
            label: None,
        }
    }

    #[test]
    fn metaqa_lines_keep_or_strip_brackets_and_take_hops_from_the_folder() {
        let text =
            "what movies did [Temuera Morrison] act in\tOnce Were Warriors|Tracker|River Queen\n\n";
        let path = Path::new("/data/metaqa/2-hop/dev.txt");
        let kept = parse(
            text,
            path,
            "metaqa/2-hop",
            &options(DatasetKind::Metaqa, Brackets::Keep),
        )
        .unwrap();
        assert_eq!(kept.len(), 1);
        assert_eq!(
            kept[0].question,
            "what movies did [Temuera Morrison] act in"
        );
        assert_eq!(
            kept[0].answers,
            ["Once Were Warriors", "Tracker", "River Queen"]
        );
        assert_eq!(kept[0].hops, Some(2));
        assert_eq!(kept[0].id, "metaqa/2-hop:1");
        let stripped = parse(
            text,
            path,
            "x",
            &options(DatasetKind::Metaqa, Brackets::Strip),
        )
        .unwrap();
        assert_eq!(
            stripped[0].question,
            "what movies did Temuera Morrison act in"
        );
        assert_eq!(source_label(path), "metaqa/2-hop");
        assert_eq!(hops_from_path(Path::new("/q/dev.txt")), None);
    }

    #[test]
    fn pathquestion_answers_include_every_alias_in_parentheses() {
        let line = "is x 's parent a man or a woman ?\tfemale(male/female/)\tx#parents#y#gender#female#<end>#female";
        let questions = parse(
            line,
            Path::new("pathquestion-2h/dev.txt"),
            "pq",
            &options(DatasetKind::Pathquestion, Brackets::Keep),
        )
        .unwrap();
        assert_eq!(questions[0].answers, ["female", "male"]);
        assert_eq!(questions[0].hops, Some(2));
        assert_eq!(questions[0].kind.as_deref(), Some("path"));
    }

    #[test]
    fn wc2014_reads_the_answer_list_and_conjunctions() {
        let two_hop = "name a club with a player from Greece ?\tPAOK_FC\tGreece#plays_for_country_inverse#D_S#plays_in_club#PAOK_FC\tPanathinaikos_FC/PAOK_FC/\tD_S#plays_in_club#PAOK_FC///PAOK_FC#is_in_country#Greece";
        let conj = "who plays at position Goalkeeper for club U ?\tKIM\tGoalkeeper#plays_position_inverse#KIM#<end>#KIM*U#plays_in_club_inverse#KIM#<end>#KIM\tKIM/\tKIM#plays_in_club#U\tGoalkeeper/U";
        let questions = parse(
            &format!("{two_hop}\n{conj}\n"),
            Path::new("wc/dev.txt"),
            "wc",
            &options(DatasetKind::Wc2014, Brackets::Keep),
        )
        .unwrap();
        assert_eq!(questions[0].answers, ["PAOK_FC", "Panathinaikos_FC"]);
        assert_eq!(questions[0].hops, Some(2));
        assert_eq!(questions[1].answers, ["KIM"]);
        assert_eq!(questions[1].hops, Some(1));
        assert_eq!(questions[1].kind.as_deref(), Some("conjunction"));
        assert_eq!(questions[1].id, "wc:2");
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let error = parse(
            "ok question\ta\nno tab here\n",
            Path::new("m/1-hop/dev.txt"),
            "m",
            &options(DatasetKind::Metaqa, Brackets::Keep),
        )
        .unwrap_err();
        let text = error.to_string();
        assert!(text.contains("m/1-hop/dev.txt:2"), "{text}");
        let error = parse(
            "q\ta\tnot-a-path\n",
            Path::new("p"),
            "p",
            &options(DatasetKind::Pathquestion, Brackets::Keep),
        )
        .unwrap_err();
        assert!(error.to_string().contains("p:1"), "{error}");
        let error = parse(
            r#"{"question": "q", "answers": []}"#,
            Path::new("j"),
            "j",
            &options(DatasetKind::Jsonl, Brackets::Keep),
        )
        .unwrap_err();
        assert!(error.to_string().contains("no answers"), "{error}");
    }

    #[test]
    fn jsonl_reads_optional_fields() {
        let text = r#"{"question": "who directed Heat?", "answers": ["Michael Mann"], "type": "director", "hops": 1}
{"id": "q7", "question": "b?", "answers": ["x", "X"]}"#;
        let questions = parse(
            text,
            Path::new("q.jsonl"),
            "q",
            &options(DatasetKind::Jsonl, Brackets::Keep),
        )
        .unwrap();
        assert_eq!(questions[0].kind.as_deref(), Some("director"));
        assert_eq!(questions[0].hops, Some(1));
        assert_eq!(questions[1].id, "q7");
        assert_eq!(
            questions[1].answers,
            ["x"],
            "aliases equal after normalization"
        );
    }

    #[test]
    fn seeded_samples_are_reproducible_and_keep_file_order() {
        let questions: Vec<Question> = (0..100)
            .map(|i| Question {
                id: i.to_string(),
                question: format!("q{i}"),
                answers: vec!["a".into()],
                hops: None,
                kind: None,
                source: "s".into(),
                asks: None,
            })
            .collect();
        let a = select(questions.clone(), Some(10), Some(7));
        let b = select(questions.clone(), Some(10), Some(7));
        let c = select(questions.clone(), Some(10), Some(8));
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 10);
        let ids: Vec<usize> = a.iter().map(|q| q.id.parse().unwrap()).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(select(questions.clone(), Some(3), None)[2].id, "2");
        assert_eq!(select(questions, Some(500), Some(1)).len(), 100);
    }
}
