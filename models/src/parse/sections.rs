//! Finds named sections in a model reply, whatever shape the model chose.
//!
//! Prompts ask for `<name>…</name>` tags. Models also emit code fences around them,
//! forget closing tags, repeat or leave sections empty, answer in JSON, or write
//! `Name: value` headings. All of these are read here, in that order of preference, and
//! every parser of this crate works on the result.

use serde_json::Value;

use super::squash;

/// Sections found in a reply. Names are the canonical names given to [`extract`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sections {
    found: Vec<(&'static str, String)>,
}

/// A section name and the other spellings that mean the same thing.
#[derive(Debug, Clone, Copy)]
pub struct SectionName {
    pub canonical: &'static str,
    pub aliases: &'static [&'static str],
}

impl SectionName {
    fn matches(&self, candidate: &str) -> bool {
        let key = squash(candidate);
        squash(self.canonical) == key || self.aliases.iter().any(|a| squash(a) == key)
    }
}

impl Sections {
    /// Whether the section appeared at all (possibly empty).
    pub fn has(&self, name: &str) -> bool {
        self.found.iter().any(|(n, _)| *n == name)
    }

    /// The body of a section; repeated sections are joined by newlines.
    pub fn text(&self, name: &str) -> Option<String> {
        let parts: Vec<&str> = self
            .found
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, body)| body.as_str())
            .collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.join("\n"))
        }
    }

    /// One item per line: list markers, numbering and quotes removed, blanks and
    /// placeholders ("none", "n/a") dropped, duplicates dropped.
    pub fn lines(&self, name: &str) -> Vec<String> {
        self.text(name)
            .map(|body| clean_lines(&body))
            .unwrap_or_default()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }
}

/// Reads the sections named in `names` from `reply`.
pub fn extract(reply: &str, names: &[SectionName]) -> Sections {
    let text = strip_reasoning(reply);
    let text = strip_fence_lines(&text);
    let tagged = extract_tags(&text, names);
    if !tagged.is_empty() {
        return tagged;
    }
    let json = extract_json(&text, names);
    if !json.is_empty() {
        return json;
    }
    extract_headings(&text, names)
}

/// Reasoning models think aloud in `<think>` blocks, drafts of tags included.
fn strip_reasoning(reply: &str) -> String {
    let lower = reply.to_ascii_lowercase();
    let mut out = String::with_capacity(reply.len());
    let mut cursor = 0;
    while let Some(open) = lower[cursor..].find("<think>").map(|i| i + cursor) {
        out.push_str(&reply[cursor..open]);
        match lower[open..].find("</think>") {
            Some(close) => cursor = open + close + "</think>".len(),
            // An unclosed think block: the answer may still follow; keep the rest.
            None => {
                cursor = open + "<think>".len();
            }
        }
    }
    out.push_str(&reply[cursor..]);
    out
}

/// Code fences carry no meaning here; their content does.
fn strip_fence_lines(text: &str) -> String {
    text.lines()
        .filter(|line| !line.trim_start().starts_with("```"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(Debug)]
struct Tag {
    start: usize,
    end: usize,
    /// Index into the section names; `None` for tags of unknown names.
    name: Option<usize>,
    closing: bool,
}

fn scan_tags(text: &str, names: &[SectionName]) -> Vec<Tag> {
    let bytes = text.as_bytes();
    let mut tags = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'<' {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        let closing = j < bytes.len() && bytes[j] == b'/';
        if closing {
            j += 1;
        }
        let name_start = j;
        while j < bytes.len()
            && (bytes[j].is_ascii_alphanumeric()
                || bytes[j] == b'_'
                || bytes[j] == b'-'
                || bytes[j] == b' ')
        {
            j += 1;
            if j - name_start > 40 {
                break;
            }
        }
        if j < bytes.len() && bytes[j] == b'>' && j > name_start {
            let raw = &text[name_start..j];
            let name = names.iter().position(|n| n.matches(raw.trim()));
            if !raw.trim().is_empty() {
                tags.push(Tag {
                    start: i,
                    end: j + 1,
                    name,
                    closing,
                });
            }
            i = j + 1;
        } else {
            i += 1;
        }
    }
    tags
}

fn extract_tags(text: &str, names: &[SectionName]) -> Sections {
    let tags = scan_tags(text, names);
    let mut sections = Sections::default();
    for (index, tag) in tags.iter().enumerate() {
        let Some(name) = tag.name else { continue };
        if tag.closing {
            continue;
        }
        // The body ends at this section's closing tag, or, when the model forgot it, at
        // the next known tag of any kind, or at the end of the reply.
        let end = tags[index + 1..]
            .iter()
            .find(|next| next.name.is_some())
            .map(|next| next.start)
            .unwrap_or(text.len());
        let body = text[tag.end..end].trim();
        sections
            .found
            .push((names[name].canonical, body.to_owned()));
    }
    sections
}

/// The first JSON object in the reply whose keys name sections.
fn extract_json(text: &str, names: &[SectionName]) -> Sections {
    let mut sections = Sections::default();
    // A bounded number of starts keeps long brace-heavy replies linear enough.
    for (start, _) in text.match_indices('{').take(16) {
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        let Some(Ok(Value::Object(map))) = stream.next() else {
            continue;
        };
        for (key, value) in &map {
            if let Some(name) = names.iter().find(|n| n.matches(key)) {
                sections.found.push((name.canonical, json_body(value)));
            }
        }
        if !sections.is_empty() {
            return sections;
        }
    }
    sections
}

fn json_body(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(json_body).collect::<Vec<_>>().join("\n"),
        Value::Bool(_) | Value::Number(_) => value.to_string(),
        Value::Object(_) => value.to_string(),
    }
}

/// `Name: value` or `**Name**:` or `### Name` headings, each section running to the next.
fn extract_headings(text: &str, names: &[SectionName]) -> Sections {
    let mut sections = Sections::default();
    let mut current: Option<(&'static str, Vec<String>)> = None;
    for line in text.lines() {
        if let Some((name, rest)) = heading(line, names) {
            if let Some((done, body)) = current.take() {
                sections
                    .found
                    .push((done, body.join("\n").trim().to_owned()));
            }
            current = Some((name, vec![rest]));
        } else if let Some((_, body)) = current.as_mut() {
            body.push(line.to_owned());
        }
    }
    if let Some((done, body)) = current {
        sections
            .found
            .push((done, body.join("\n").trim().to_owned()));
    }
    sections
}

fn heading(line: &str, names: &[SectionName]) -> Option<(&'static str, String)> {
    let trimmed = line
        .trim()
        .trim_start_matches(['#', '-', '*', ' '])
        .trim_start();
    let (label, rest) = match trimmed.find(':') {
        Some(colon) => (&trimmed[..colon], trimmed[colon + 1..].to_owned()),
        None if line.trim_start().starts_with('#') => (trimmed, String::new()),
        None => return None,
    };
    let label = label.trim_matches(['*', '_', ' ']);
    if label.is_empty() || label.len() > 40 {
        return None;
    }
    names.iter().find(|n| n.matches(label)).map(|n| {
        (
            n.canonical,
            rest.trim().trim_start_matches(['*', '_']).trim().to_owned(),
        )
    })
}

/// Splits a body into clean items.
pub fn clean_lines(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for raw in body.lines() {
        let item = clean_item(raw);
        if item.is_empty() || is_placeholder(&item) {
            continue;
        }
        if !out.iter().any(|seen| seen.eq_ignore_ascii_case(&item)) {
            out.push(item);
        }
    }
    out
}

/// Removes list markers (`-`, `*`, `•`, `1.`, `2)`), surrounding quotes and backticks.
pub fn clean_item(raw: &str) -> String {
    let mut item = raw.trim();
    loop {
        let before = item;
        item = item.trim_start_matches(['-', '*', '•', '·']).trim_start();
        let digits = item.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && digits < 4 {
            let rest = &item[digits..];
            if let Some(stripped) = rest.strip_prefix(['.', ')']) {
                if stripped.starts_with(' ') || stripped.is_empty() {
                    item = stripped.trim_start();
                }
            }
        }
        if item == before {
            break;
        }
    }
    let item = item.trim_end_matches([',', ';']).trim();
    let item = strip_pair(item, '"', '"');
    let item = strip_pair(item, '\'', '\'');
    let item = strip_pair(item, '`', '`');
    let item = strip_pair(item, '“', '”');
    item.trim().to_owned()
}

fn strip_pair(item: &str, open: char, close: char) -> &str {
    if item.chars().count() >= 2 && item.starts_with(open) && item.ends_with(close) {
        &item[open.len_utf8()..item.len() - close.len_utf8()]
    } else {
        item
    }
}

fn is_placeholder(item: &str) -> bool {
    matches!(
        item.to_ascii_lowercase().as_str(),
        "none" | "n/a" | "na" | "null" | "empty" | "[]" | "-" | "..." | "…" | "nothing"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: &[SectionName] = &[
        SectionName {
            canonical: "entities",
            aliases: &["entity"],
        },
        SectionName {
            canonical: "paths",
            aliases: &["relation paths"],
        },
        SectionName {
            canonical: "answers",
            aliases: &["answer"],
        },
    ];

    #[test]
    fn reads_well_formed_tags() {
        let s = extract(
            "<entities>\nTom Hanks\n</entities>\n<paths>\nstarred_actors\n</paths>",
            NAMES,
        );
        assert_eq!(s.lines("entities"), vec!["Tom Hanks"]);
        assert_eq!(s.lines("paths"), vec!["starred_actors"]);
        assert!(!s.has("answers"));
    }

    #[test]
    fn a_missing_closing_tag_ends_at_the_next_section() {
        let s = extract(
            "<entities>\nTom Hanks\n<paths>\nstarred_actors\n</paths>\n<answers>Big",
            NAMES,
        );
        assert_eq!(s.lines("entities"), vec!["Tom Hanks"]);
        assert_eq!(s.lines("paths"), vec!["starred_actors"]);
        assert_eq!(s.lines("answers"), vec!["Big"]);
    }

    #[test]
    fn fences_prose_duplicates_and_empty_sections() {
        let reply = "Sure! Here you go:\n```xml\n<entities>\n- \"Tom Hanks\"\n</entities>\n```\n\
                     <entities>Tom Hanks\nMeg Ryan</entities><answers></answers>\nHope this helps.";
        let s = extract(reply, NAMES);
        assert_eq!(s.lines("entities"), vec!["Tom Hanks", "Meg Ryan"]);
        assert!(s.has("answers"));
        assert!(s.lines("answers").is_empty());
    }

    #[test]
    fn json_instead_of_tags() {
        let reply =
            "```json\n{\"entities\": [\"Tom Hanks\"], \"Answer\": \"Big\", \"other\": 3}\n```";
        let s = extract(reply, NAMES);
        assert_eq!(s.lines("entities"), vec!["Tom Hanks"]);
        assert_eq!(s.lines("answers"), vec!["Big"]);
    }

    #[test]
    fn headings_instead_of_tags() {
        let reply = "**Entities:** Tom Hanks\n\n### Relation paths\n1. starred_actors\n2) directed_by\nAnswer: Big";
        let s = extract(reply, NAMES);
        assert_eq!(s.lines("entities"), vec!["Tom Hanks"]);
        assert_eq!(s.lines("paths"), vec!["starred_actors", "directed_by"]);
        assert_eq!(s.lines("answers"), vec!["Big"]);
    }

    #[test]
    fn think_blocks_are_ignored() {
        let s = extract(
            "<think><entities>wrong</entities></think><entities>right</entities>",
            NAMES,
        );
        assert_eq!(s.lines("entities"), vec!["right"]);
    }

    #[test]
    fn unknown_tags_do_not_end_a_section() {
        let s = extract("<entities>AT<T> Park</entities>", NAMES);
        assert_eq!(s.lines("entities"), vec!["AT<T> Park"]);
    }

    #[test]
    fn placeholders_and_markers_are_dropped() {
        assert_eq!(
            clean_lines("- none\n* N/A\n1. Paris\n2. paris\n"),
            vec!["Paris"]
        );
        assert_eq!(clean_item("`MATCH (n) RETURN n`"), "MATCH (n) RETURN n");
        assert_eq!(clean_item("2001: A Space Odyssey"), "2001: A Space Odyssey");
        assert_eq!(clean_item("1984"), "1984");
    }
}
