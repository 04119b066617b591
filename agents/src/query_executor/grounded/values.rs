//! What the graph holds, read once through Cypher so that any backend serves it: each
//! label's property keys by kind (text, number, flag) and display key, and an index from
//! the words of every text value to the properties that hold it. A question is grounded
//! by finding those words in it: "suppliers in Germany" → `Supplier.country = 'Germany'`
//! (and `Customer.country`, `Order.shipCountry`: the ranker picks among them).

use std::collections::{HashMap, HashSet};

use kgmesh_models::lexical::{text, Gazetteer};
use kgmesh_schemas::graph::{GraphSchema, Value};
use kgmesh_schemas::NodeId;
use kgmesh_stores::{QueryLimits, StoreResult};

use super::CypherRunner;

/// A text key with more distinct values than this is not indexed (free text such as
/// addresses and notes): its values are not the names questions use.
pub const MAX_DISTINCT_VALUES: usize = 20_000;
/// The longest value, in words, looked for in a question.
const MAX_VALUE_WORDS: usize = 8;

/// A property key of one label, and what its values are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyInfo {
    pub key: String,
    pub kind: PropertyKind,
    /// A number stored as text (`"32.38"`): compared and ordered as the text it is.
    pub numeric_text: bool,
    /// Stems of the key's words (`unitPrice` → `unit`, `price`).
    pub stems: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PropertyKind {
    Text,
    Number,
    Flag,
}

#[derive(Debug, Clone)]
pub struct LabelInfo {
    pub name: String,
    pub stems: Vec<String>,
    /// The property that names a node of this label (what answers show).
    pub display: String,
    pub properties: Vec<PropertyInfo>,
}

impl LabelInfo {
    pub fn property(&self, key: &str) -> Option<&PropertyInfo> {
        self.properties.iter().find(|p| p.key == key)
    }
}

/// A value of the graph found in a question.
#[derive(Debug, Clone, PartialEq)]
pub struct Grounding {
    pub label: String,
    pub key: String,
    pub value: Value,
    /// Word positions `[start, end)` of the mention in the question.
    pub span: (usize, usize),
}

/// The labels, keys and text values of a graph.
#[derive(Debug, Default)]
pub struct GraphValues {
    pub labels: Vec<LabelInfo>,
    /// Every value looked for in questions: (label index, key, value as stored).
    indexed: Vec<(usize, String, Value)>,
    /// Joined lower-case words of a value → its places in `indexed`.
    by_words: HashMap<String, Vec<usize>>,
    /// Every distinct value of each text key, by (label index, key), when the key has
    /// at most [`MAX_DISTINCT_VALUES`]: what a quoted text is checked against.
    texts: HashMap<(usize, String), Vec<String>>,
    /// Relationship property keys that hold numbers.
    pub relationship_numbers: Vec<PropertyInfo>,
    /// The toolkit's one name index over `indexed`, each value named by its place
    /// there: near-misses ("Exotic Liquid" for "Exotic Liquids").
    near: Option<Gazetteer>,
}

/// Backticks a label, type or key for Cypher.
pub fn quoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

pub(super) fn stems_of(name: &str) -> Vec<String> {
    text::words(name)
        .into_iter()
        .filter(|w| !text::is_stop_word(w))
        .map(|w| text::stem(&w))
        .collect()
}

impl GraphValues {
    /// Reads every label's keys and text values (one `DISTINCT` query per key).
    pub async fn read<R: CypherRunner + ?Sized>(
        runner: &R,
        schema: &GraphSchema,
        limits: &QueryLimits,
    ) -> StoreResult<Self> {
        let limits = QueryLimits {
            max_rows: MAX_DISTINCT_VALUES + 1,
            ..*limits
        };
        let mut values = GraphValues::default();
        // Sorted, so that backends listing names in other orders enumerate alike.
        let mut labels: Vec<_> = schema.labels.iter().collect();
        labels.sort_by(|a, b| a.name.cmp(&b.name));
        for label in labels {
            let mut properties = Vec::new();
            let mut distinct_text: Vec<(String, usize)> = Vec::new();
            let label_index = values.labels.len();
            let mut keys: Vec<&String> = label.property_keys.iter().collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let query = format!(
                    "MATCH (n:{}) WHERE n.{k} IS NOT NULL RETURN DISTINCT n.{k} AS v",
                    quoted(&label.name),
                    k = quoted(key)
                );
                let rows = runner.run(&query, &[], &limits).await?;
                let column: Vec<&Value> = rows.rows.iter().filter_map(|r| r.first()).collect();
                let Some((kind, numeric_text)) = kind_of(&column) else {
                    continue;
                };
                if kind == PropertyKind::Text || numeric_text {
                    distinct_text.push((key.clone(), column.len()));
                    if !rows.truncated && kind == PropertyKind::Text {
                        let texts = column
                            .iter()
                            .filter_map(|v| match v {
                                Value::String(s) => Some(s.clone()),
                                _ => None,
                            })
                            .collect();
                        values.texts.insert((label_index, key.clone()), texts);
                    }
                    if !rows.truncated {
                        for value in column {
                            let Value::String(text_value) = value else {
                                continue;
                            };
                            let words = text::words(text_value);
                            if !indexable(&words) {
                                continue;
                            }
                            values
                                .by_words
                                .entry(words.join(" "))
                                .or_default()
                                .push(values.indexed.len());
                            values
                                .indexed
                                .push((label_index, key.clone(), value.clone()));
                        }
                    }
                }
                properties.push(PropertyInfo {
                    key: key.clone(),
                    kind,
                    numeric_text,
                    stems: stems_of(key),
                });
            }
            let display = display_key(&distinct_text).unwrap_or_else(|| {
                properties
                    .first()
                    .map(|p| p.key.clone())
                    .unwrap_or_else(|| "name".to_owned())
            });
            values.labels.push(LabelInfo {
                name: label.name.clone(),
                stems: stems_of(&label.name),
                display,
                properties,
            });
        }
        let mut relationship_keys: Vec<&String> =
            schema.relationship_property_keys.iter().collect();
        relationship_keys.sort();
        relationship_keys.dedup();
        for key in relationship_keys {
            let query = format!(
                "MATCH ()-[r]->() WHERE r.{k} IS NOT NULL RETURN r.{k} AS v LIMIT 200",
                k = quoted(key)
            );
            let rows = runner.run(&query, &[], &limits).await?;
            let column: Vec<&Value> = rows.rows.iter().filter_map(|r| r.first()).collect();
            if let Some((PropertyKind::Number, numeric_text)) = kind_of(&column) {
                values.relationship_numbers.push(PropertyInfo {
                    key: key.clone(),
                    kind: PropertyKind::Number,
                    numeric_text,
                    stems: stems_of(key),
                });
            }
        }
        values.near = Some(Gazetteer::build(
            values
                .indexed
                .iter()
                .enumerate()
                .filter_map(|(i, (_, _, value))| match value {
                    Value::String(text) => Some((NodeId(i as u64), text.clone())),
                    _ => None,
                }),
        ));
        Ok(values)
    }

    /// How many values are looked for in questions.
    pub fn indexed_values(&self) -> usize {
        self.indexed.len()
    }

    pub fn label(&self, name: &str) -> Option<&LabelInfo> {
        self.labels.iter().find(|l| l.name == name)
    }

    /// Whether some stored value of a text key passes `value <op> text`, with Cypher's
    /// case-sensitive string semantics; `None` when the key's values were too many to
    /// keep (the condition is then not known to be empty).
    pub fn any_text(&self, label: &str, key: &str, op: &str, text: &str) -> Option<bool> {
        let index = self.labels.iter().position(|l| l.name == label)?;
        let values = self.texts.get(&(index, key.to_owned()))?;
        let test = |v: &String| match op {
            "CONTAINS" => v.contains(text),
            "STARTS WITH" => v.starts_with(text),
            "ENDS WITH" => v.ends_with(text),
            "=" => v == text,
            "<>" => v != text,
            "<" => v.as_str() < text,
            "<=" => v.as_str() <= text,
            ">" => v.as_str() > text,
            ">=" => v.as_str() >= text,
            _ => true,
        };
        Some(values.iter().any(test))
    }

    /// The graph's values named in a question, longest mentions first; a mention inside
    /// a longer one is not reported. Values are matched on their whole words, so only
    /// values stored in the graph are ever returned, never text of the question.
    pub fn ground(&self, question: &str) -> Vec<Grounding> {
        let words = text::words(question);
        let mut taken = vec![false; words.len()];
        let mut found = Vec::new();
        for width in (1..=MAX_VALUE_WORDS.min(words.len())).rev() {
            for start in 0..=words.len() - width {
                let end = start + width;
                if taken[start..end].iter().any(|t| *t) {
                    continue;
                }
                let Some(holders) = self.by_words.get(&words[start..end].join(" ")) else {
                    continue;
                };
                taken[start..end].iter_mut().for_each(|t| *t = true);
                self.push_holders(holders.iter().copied(), (start, end), &mut found);
            }
        }
        // Near-misses of values, where no value was found whole.
        let Some(near) = &self.near else {
            return found;
        };
        for mention in near
            .find_mentions(question)
            .into_iter()
            .filter(|m| !m.exact)
        {
            let start = text::words(&question[..mention.start]).len();
            let end = start + text::words(&mention.text).len();
            if end > words.len() || start == end || taken[start..end].iter().any(|t| *t) {
                continue;
            }
            taken[start..end].iter_mut().for_each(|t| *t = true);
            let places = mention.candidates.iter().map(|c| c.entity.id.0 as usize);
            self.push_holders(places, (start, end), &mut found);
        }
        found
    }

    /// The values at `places` of `indexed` as groundings of the mention at `span`, one
    /// per (label, key): the first value holder is enough.
    fn push_holders(
        &self,
        places: impl Iterator<Item = usize>,
        span: (usize, usize),
        found: &mut Vec<Grounding>,
    ) {
        let mut seen = HashSet::new();
        for (label, key, value) in places.filter_map(|i| self.indexed.get(i)) {
            if seen.insert((*label, key.as_str())) {
                found.push(Grounding {
                    label: self.labels[*label].name.clone(),
                    key: key.clone(),
                    value: value.clone(),
                    span,
                });
            }
        }
    }
}

/// Whether a value's words can be looked for in questions: not only stop words, and a
/// bare number only when it is long enough to be an identifier rather than a count.
fn indexable(words: &[String]) -> bool {
    if words.is_empty() || words.len() > MAX_VALUE_WORDS {
        return false;
    }
    if words.iter().all(|w| text::is_stop_word(w)) {
        return false;
    }
    if words.len() == 1 {
        let word = &words[0];
        if word.chars().all(|c| c.is_ascii_digit()) {
            return word.len() >= 5;
        }
        return word.chars().count() >= 2;
    }
    true
}

/// What a key's values are, and whether numbers are stored as text.
fn kind_of(column: &[&Value]) -> Option<(PropertyKind, bool)> {
    let (mut text, mut numeric_text, mut number, mut flag) = (0, 0, 0, 0);
    for value in column {
        match value {
            Value::String(s) => {
                text += 1;
                if s.trim().parse::<f64>().is_ok_and(f64::is_finite) {
                    numeric_text += 1;
                }
            }
            Value::Int(_) | Value::Float(_) => number += 1,
            Value::Bool(_) => flag += 1,
            _ => {}
        }
    }
    let most = text.max(number).max(flag);
    if most == 0 {
        None
    } else if most == number {
        Some((PropertyKind::Number, false))
    } else if most == flag {
        Some((PropertyKind::Flag, false))
    } else if numeric_text == text {
        Some((PropertyKind::Number, true))
    } else {
        Some((PropertyKind::Text, false))
    }
}

/// The text key that names nodes: one called a name (`name`, else `productName`) that tells
/// nodes apart about as well as any text key does, else the text key with the most
/// distinct values (`orderID`, not the `shipName` that orders share). Ties go to the
/// key listed first.
fn display_key(distinct: &[(String, usize)]) -> Option<String> {
    let most = distinct.iter().map(|(_, count)| *count).max()?;
    let first_max = |keys: &mut dyn Iterator<Item = &(String, usize)>| {
        keys.fold(None::<&(String, usize)>, |best, entry| match best {
            Some(b) if b.1 >= entry.1 => Some(b),
            _ => Some(entry),
        })
        .map(|(key, _)| key.clone())
    };
    let names = || {
        distinct
            .iter()
            .filter(move |(key, count)| key.to_lowercase().ends_with("name") && count * 2 >= most)
    };
    // `name` itself first (what the loaders write), so every backend picks the same.
    first_max(&mut names().filter(|(key, _)| key == "name"))
        .or_else(|| first_max(&mut names()))
        .or_else(|| first_max(&mut distinct.iter()))
}
