//! The line formats of question files.
//!
//! - MetaQA: `question<TAB>answer1|answer2`, the topic entity in `[brackets]`.
//! - IRN (PathQuestion, WC2014): `question<TAB>answer(s)<TAB>gold path…`. PathQuestion
//!   writes the answer as `name(alias1/alias2/)`, the list in parentheses being every
//!   entity the gold path reaches; WC2014 writes one answer in the second field and
//!   every valid answer as `A/B/` in the fourth. The hop count is the number of relations
//!   of the gold path; a path made of several `*`-joined parts is a conjunction, and the
//!   first node of each part is a topic entity.
//! - JSONL: one object per line, `{"question": "…", "answers": ["…"]}` with optional
//!   `id`, `hops`, `type` and `topic`.

use std::fmt;

use serde::Deserialize;

/// The line formats of a question file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QaFormat {
    /// Decided by the first non-empty line (see [`detect`]).
    Auto,
    /// `question<TAB>answer1|answer2`, the topic entity in `[brackets]`.
    Metaqa,
    /// `question<TAB>answer(s)<TAB>gold path[<TAB>…]` (PathQuestion, WC2014).
    Irn,
    /// `{"question": "…", "answers": ["…"]}` per line.
    Jsonl,
}

impl QaFormat {
    /// The format itself, or for [`QaFormat::Auto`] the one `text` is written in.
    pub fn resolve(self, text: &str) -> QaFormat {
        match self {
            QaFormat::Auto => detect(text),
            known => known,
        }
    }
}

impl fmt::Display for QaFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            QaFormat::Auto => "auto",
            QaFormat::Metaqa => "metaqa",
            QaFormat::Irn => "irn",
            QaFormat::Jsonl => "jsonl",
        })
    }
}

/// The format of `text`, from its first non-empty line: JSON lines when it starts with
/// `{`, IRN when it has at least three tab-separated fields and the third (the gold
/// path) contains `#`, MetaQA otherwise. Never [`QaFormat::Auto`].
pub fn detect(text: &str) -> QaFormat {
    let Some(first) = text.lines().map(str::trim).find(|line| !line.is_empty()) else {
        return QaFormat::Metaqa;
    };
    if first.starts_with('{') {
        QaFormat::Jsonl
    } else if first
        .split('\t')
        .nth(2)
        .is_some_and(|gold_path| gold_path.contains('#'))
    {
        QaFormat::Irn
    } else {
        QaFormat::Metaqa
    }
}

/// One question line, read as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QaRecord {
    /// JSONL's `id`, when given.
    pub id: Option<String>,
    /// The question as written: MetaQA's `[brackets]` are kept.
    pub question: String,
    /// Every acceptable answer (aliases and all members of the answer set), in the
    /// order written, without exact duplicates. Never empty.
    pub answers: Vec<String>,
    /// Topic entities the line names: MetaQA's first `[bracketed]` name, the first node
    /// of each part of an IRN gold path (two for a WC2014 conjunction), JSONL's `topic`
    /// (else its first `[bracketed]` name). Empty when the line names none.
    pub topics: Vec<String>,
    /// Relations between the topic entity and the answer: from an IRN gold path or
    /// JSONL's `hops`.
    pub hops: Option<u8>,
    /// Question type: `path` or `conjunction` for IRN, JSONL's `type`.
    pub kind: Option<String>,
    /// JSONL's `asks`: the type of answer asked for, when the file says.
    pub asks: Option<String>,
}

/// Every non-empty line of `text` with its 1-based line number, parsed in `format`
/// ([`QaFormat::Auto`]: the format of the first non-empty line, for the whole text).
/// Callers decide what an unreadable line means: an error, or a line skipped.
pub fn read_lines(
    text: &str,
    format: QaFormat,
) -> impl Iterator<Item = (usize, Result<QaRecord, String>)> + '_ {
    let format = format.resolve(text);
    text.lines().enumerate().filter_map(move |(index, raw)| {
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            return None;
        }
        Some((index + 1, parse_line(line, format)))
    })
}

/// Parses one line; the error says what is wrong with it.
pub fn parse_line(line: &str, format: QaFormat) -> Result<QaRecord, String> {
    let mut record = match format {
        QaFormat::Auto => return parse_line(line, detect(line)),
        QaFormat::Metaqa => parse_metaqa(line)?,
        QaFormat::Irn => parse_irn(line)?,
        QaFormat::Jsonl => parse_jsonl(line)?,
    };
    let mut seen = std::collections::HashSet::new();
    record.answers.retain(|answer| seen.insert(answer.clone()));
    Ok(record)
}

fn parse_metaqa(line: &str) -> Result<QaRecord, String> {
    let (question, answers) = line
        .split_once('\t')
        .ok_or_else(|| "expected `question<TAB>answer1|answer2`".to_owned())?;
    let question = non_empty_question(question)?;
    let answers: Vec<String> = answers
        .split('|')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
        .collect();
    if answers.is_empty() {
        return Err("no answers".to_owned());
    }
    Ok(QaRecord {
        id: None,
        topics: bracketed(question).into_iter().collect(),
        question: question.to_owned(),
        answers,
        hops: None,
        kind: None,
        asks: None,
    })
}

fn parse_irn(line: &str) -> Result<QaRecord, String> {
    let fields: Vec<&str> = line.split('\t').collect();
    if fields.len() < 3 {
        return Err(format!(
            "expected at least 3 tab-separated fields (question, answer, gold path), found {}",
            fields.len()
        ));
    }
    let question = non_empty_question(fields[0])?;
    let mut answers = parse_irn_answer_field(fields[1])?;
    // WC2014 lists every valid answer, slash-terminated, in the fourth field.
    if let Some(all_answers) = fields.get(3) {
        answers.extend(split_slash_list(all_answers));
    }
    let gold_path = fields[2];
    let (hops, kind) = gold_path_shape(gold_path)?;
    let mut topics: Vec<String> = Vec::new();
    for part in gold_path.split('*') {
        let head = part.split('#').next().unwrap_or_default().trim();
        if !head.is_empty() && !topics.iter().any(|topic| topic == head) {
            topics.push(head.to_owned());
        }
    }
    Ok(QaRecord {
        id: None,
        question: question.to_owned(),
        answers,
        topics,
        hops: Some(hops),
        kind: Some(kind.to_owned()),
        asks: None,
    })
}

/// `name(alias1/alias2/)` → [name, alias1, alias2]; `name` → [name]; `A/B/` → [A, B].
pub fn parse_irn_answer_field(field: &str) -> Result<Vec<String>, String> {
    let field = field.trim();
    if field.is_empty() {
        return Err("empty answer field".to_owned());
    }
    let mut answers = Vec::new();
    match field.find('(') {
        Some(open) if field.ends_with(')') => {
            let head = field[..open].trim();
            if !head.is_empty() {
                answers.push(head.to_owned());
            }
            answers.extend(split_slash_list(&field[open + 1..field.len() - 1]));
        }
        Some(_) => return Err(format!("unbalanced parentheses in answer `{field}`")),
        None => answers.extend(split_slash_list(field)),
    }
    if answers.is_empty() {
        return Err(format!("no answer in `{field}`"));
    }
    Ok(answers)
}

fn split_slash_list(list: &str) -> impl Iterator<Item = String> + '_ {
    list.split('/')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_owned)
}

/// Hop count and type of an IRN gold path: `e#r#e#r#e[#<end>#e]`, conjunctions joined
/// by `*`. A conjunction's hop count is that of its longest part.
pub fn gold_path_shape(path: &str) -> Result<(u8, &'static str), String> {
    let parts: Vec<&str> = path.split('*').map(str::trim).collect();
    let mut hops = 0u8;
    for part in &parts {
        let tokens: Vec<&str> = part.split('#').collect();
        if tokens.len() < 3 || tokens.len().is_multiple_of(2) {
            return Err(format!(
                "gold path `{part}` is not `entity#relation#entity…`"
            ));
        }
        let relations = tokens
            .iter()
            .skip(1)
            .step_by(2)
            .filter(|relation| **relation != "<end>")
            .count();
        hops = hops.max(u8::try_from(relations).unwrap_or(u8::MAX));
    }
    let kind = if parts.len() > 1 {
        "conjunction"
    } else {
        "path"
    };
    Ok((hops, kind))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonLine {
    #[serde(default)]
    id: Option<String>,
    question: String,
    answers: Vec<serde_json::Value>,
    #[serde(default)]
    hops: Option<u8>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    topic: Option<String>,
    /// How the answers follow from the graph (the domain zoo's gold paths, see
    /// `scripts/zoo-check`): read by checks, never by the reader.
    #[serde(default)]
    #[allow(dead_code)]
    gold: Option<serde_json::Value>,
    /// The type of answer asked for (the document zoo's `person`, `date`, …): read by
    /// the evaluation's answer-typing figures, never by the reader.
    #[serde(default)]
    asks: Option<String>,
    /// Where the answers are written (the document zoo's quotes): read by checks.
    #[serde(default)]
    #[allow(dead_code)]
    evidence: Option<serde_json::Value>,
}

/// JSONL's `type` of a question the graph cannot answer: its `answers` are empty, and
/// the right reply is "I don't know".
pub const UNANSWERABLE: &str = "unanswerable";

fn parse_jsonl(line: &str) -> Result<QaRecord, String> {
    let parsed: JsonLine = serde_json::from_str(line).map_err(|error| error.to_string())?;
    let question = non_empty_question(&parsed.question)?;
    let mut answers = Vec::with_capacity(parsed.answers.len());
    for value in parsed.answers {
        let answer = match value {
            serde_json::Value::String(text) => text.trim().to_owned(),
            serde_json::Value::Number(number) => number.to_string(),
            other => return Err(format!("answers must be strings or numbers, found {other}")),
        };
        if !answer.is_empty() {
            answers.push(answer);
        }
    }
    if answers.is_empty() && parsed.kind.as_deref() != Some(UNANSWERABLE) {
        return Err(format!(
            "no answers (a question the graph cannot answer says \"type\": \"{UNANSWERABLE}\")"
        ));
    }
    let topic = parsed
        .topic
        .map(|topic| topic.trim().to_owned())
        .filter(|topic| !topic.is_empty())
        .or_else(|| bracketed(question));
    Ok(QaRecord {
        id: parsed.id,
        question: question.to_owned(),
        answers,
        topics: topic.into_iter().collect(),
        hops: parsed.hops,
        kind: parsed.kind,
        asks: parsed.asks,
    })
}

fn non_empty_question(question: &str) -> Result<&str, String> {
    let question = question.trim();
    if question.is_empty() {
        return Err("empty question".to_owned());
    }
    Ok(question)
}

/// The first `[bracketed]` span of a question.
fn bracketed(question: &str) -> Option<String> {
    let start = question.find('[')?;
    let end = start + question[start..].find(']')?;
    let name = question[start + 1..end].trim();
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATHQUESTION: &str = "is x 's parent a man or a woman ?\tfemale(male/female/)\tx#parents#y#gender#female#<end>#female";
    const WC2014_2H: &str = "name a club with a player from Greece ?\tPAOK_FC\tGreece#plays_for_country_inverse#D_S#plays_in_club#PAOK_FC\tPanathinaikos_FC/PAOK_FC/\tD_S#plays_in_club#PAOK_FC///PAOK_FC#is_in_country#Greece";
    const WC2014_CONJ: &str = "who plays at position Goalkeeper for club U ?\tKIM\tGoalkeeper#plays_position_inverse#KIM#<end>#KIM*U#plays_in_club_inverse#KIM#<end>#KIM\tKIM/\tKIM#plays_in_club#U\tGoalkeeper/U";

    #[test]
    fn pathquestion_answers_include_every_alias_and_the_path_head_is_the_topic() {
        let record = parse_line(PATHQUESTION, QaFormat::Irn).unwrap();
        assert_eq!(record.question, "is x 's parent a man or a woman ?");
        assert_eq!(record.answers, ["female", "male"]);
        assert_eq!(record.topics, ["x"]);
        assert_eq!(record.hops, Some(2));
        assert_eq!(record.kind.as_deref(), Some("path"));
    }

    #[test]
    fn wc2014_reads_the_answer_list_and_both_topics_of_a_conjunction() {
        let two_hop = parse_line(WC2014_2H, QaFormat::Irn).unwrap();
        assert_eq!(two_hop.answers, ["PAOK_FC", "Panathinaikos_FC"]);
        assert_eq!(two_hop.topics, ["Greece"]);
        assert_eq!(two_hop.hops, Some(2));
        let conj = parse_line(WC2014_CONJ, QaFormat::Irn).unwrap();
        assert_eq!(conj.answers, ["KIM"]);
        assert_eq!(conj.topics, ["Goalkeeper", "U"]);
        assert_eq!(conj.hops, Some(1));
        assert_eq!(conj.kind.as_deref(), Some("conjunction"));
    }

    #[test]
    fn irn_answer_fields_in_every_spelling() {
        assert_eq!(
            parse_irn_answer_field("male(male/)").unwrap(),
            ["male", "male"]
        );
        assert_eq!(parse_irn_answer_field("Mexico").unwrap(), ["Mexico"]);
        assert_eq!(parse_irn_answer_field("A/B/").unwrap(), ["A", "B"]);
        assert!(parse_irn_answer_field("male(male/").is_err());
        assert!(parse_irn_answer_field(" ").is_err());
        assert!(parse_irn_answer_field("()").is_err());
    }

    #[test]
    fn the_first_line_decides_the_format() {
        let metaqa = "who directed [Heat]\tMichael Mann\n";
        assert_eq!(detect(metaqa), QaFormat::Metaqa);
        assert_eq!(detect(&format!("\n\n{PATHQUESTION}\n")), QaFormat::Irn);
        assert_eq!(detect(WC2014_2H), QaFormat::Irn);
        assert_eq!(detect(WC2014_CONJ), QaFormat::Irn);
        assert_eq!(
            detect(r#"{"question": "q", "answers": ["a"]}"#),
            QaFormat::Jsonl
        );
        // Three fields without a gold path are MetaQA with a stray tab, not IRN.
        assert_eq!(detect("q\ta\tb\n"), QaFormat::Metaqa);
        assert_eq!(detect(""), QaFormat::Metaqa);
        assert_eq!(QaFormat::Auto.resolve(WC2014_CONJ), QaFormat::Irn);
        assert_eq!(QaFormat::Jsonl.resolve(metaqa), QaFormat::Jsonl);

        let text = format!("{PATHQUESTION}\r\n\n{WC2014_CONJ}\nnot irn\n");
        let lines: Vec<(usize, Result<QaRecord, String>)> =
            read_lines(&text, QaFormat::Auto).collect();
        let numbers: Vec<usize> = lines.iter().map(|(line, _)| *line).collect();
        assert_eq!(numbers, [1, 3, 4]);
        assert_eq!(lines[0].1.as_ref().unwrap().topics, ["x"]);
        assert_eq!(lines[1].1.as_ref().unwrap().topics, ["Goalkeeper", "U"]);
        let error = lines[2].1.as_ref().unwrap_err();
        assert!(error.contains("at least 3 tab-separated fields"), "{error}");
    }

    #[test]
    fn metaqa_keeps_the_brackets_and_names_the_topic() {
        let record = parse_line(
            "what movies did [Temuera Morrison] act in\tOnce Were Warriors| Tracker |",
            QaFormat::Metaqa,
        )
        .unwrap();
        assert_eq!(record.question, "what movies did [Temuera Morrison] act in");
        assert_eq!(record.answers, ["Once Were Warriors", "Tracker"]);
        assert_eq!(record.topics, ["Temuera Morrison"]);
        assert_eq!(
            parse_line("no tab", QaFormat::Metaqa).unwrap_err(),
            "expected `question<TAB>answer1|answer2`"
        );
        assert_eq!(
            parse_line(" \ta", QaFormat::Metaqa).unwrap_err(),
            "empty question"
        );
        assert_eq!(
            parse_line("q\t|", QaFormat::Metaqa).unwrap_err(),
            "no answers"
        );
    }

    #[test]
    fn jsonl_reads_optional_fields_and_rejects_unknown_ones() {
        let record = parse_line(
            r#"{"id": "q7", "question": " who directed [Heat]? ", "answers": ["Michael Mann", 1995, "Michael Mann"], "hops": 1, "type": "director"}"#,
            QaFormat::Jsonl,
        )
        .unwrap();
        assert_eq!(record.id.as_deref(), Some("q7"));
        assert_eq!(record.question, "who directed [Heat]?");
        assert_eq!(record.answers, ["Michael Mann", "1995"]);
        assert_eq!(record.topics, ["Heat"]);
        assert_eq!(
            (record.hops, record.kind.as_deref()),
            (Some(1), Some("director"))
        );
        let explicit = parse_line(
            r#"{"question": "who directed [Heat]?", "answers": ["M"], "topic": "Heat (1995)"}"#,
            QaFormat::Auto,
        )
        .unwrap();
        assert_eq!(explicit.topics, ["Heat (1995)"]);
        let unknown = parse_line(
            r#"{"question": "q", "answers": ["a"], "answer": "a"}"#,
            QaFormat::Jsonl,
        )
        .unwrap_err();
        assert!(unknown.contains("unknown field `answer`"), "{unknown}");
        let nested =
            parse_line(r#"{"question": "q", "answers": [["a"]]}"#, QaFormat::Jsonl).unwrap_err();
        assert!(nested.contains("strings or numbers"), "{nested}");
        let empty =
            parse_line(r#"{"question": "q", "answers": [" "]}"#, QaFormat::Jsonl).unwrap_err();
        assert!(empty.starts_with("no answers"), "{empty}");
    }

    #[test]
    fn jsonl_reads_the_type_asked_and_reads_past_quoted_evidence() {
        let record = parse_line(
            r#"{"question": "who designed it", "answers": ["Omar Haddad"], "type": "single", "asks": "person", "evidence": [{"file": "docs/a.md", "quote": "Omar Haddad designed it"}]}"#,
            QaFormat::Jsonl,
        )
        .unwrap();
        assert_eq!(record.asks.as_deref(), Some("person"));
        assert_eq!(record.kind.as_deref(), Some("single"));
        let plain = parse_line(r#"{"question": "q", "answers": ["a"]}"#, QaFormat::Jsonl).unwrap();
        assert_eq!(plain.asks, None);
    }

    #[test]
    fn jsonl_unanswerable_questions_have_no_answers_and_gold_paths_are_read_past() {
        let record = parse_line(
            r#"{"question": "when was X born", "answers": [], "type": "unanswerable", "hops": 0}"#,
            QaFormat::Jsonl,
        )
        .unwrap();
        assert!(record.answers.is_empty());
        let with_gold = parse_line(
            r#"{"question": "who wrote Y", "answers": ["Z"], "gold": {"paths": [["Y", "written_by"]]}}"#,
            QaFormat::Jsonl,
        )
        .unwrap();
        assert_eq!(with_gold.answers, ["Z"]);
        let (pairs, bad) = crate::import::parse_pairs(
            "{\"question\": \"when was X born\", \"answers\": [], \"type\": \"unanswerable\"}\n",
            QaFormat::Jsonl,
        );
        assert!(pairs.is_empty() && bad.is_empty(), "{pairs:?} {bad:?}");
    }
}
