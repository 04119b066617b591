//! What the graph holds, read once through Cypher so that any backend serves it: each
//! label's property keys by kind (text, number, flag) and display key, and an index from
//! the words of every text value to the properties that hold it. A question is grounded
//! by finding those words in it: "suppliers in Germany" → `Supplier.country = 'Germany'`
//! (and `Customer.country`, `Order.shipCountry`: the ranker picks among them).

use std::collections::{HashMap, HashSet};

use kgmesh_models::lexical::{text, Gazetteer};
use kgmesh_models::{cosine, EmbedError, Embedder};
use kgmesh_schemas::graph::{GraphSchema, Value};
use kgmesh_schemas::NodeId;
use kgmesh_stores::{QueryLimits, StoreResult};

use super::CypherRunner;

/// A text key with at most this many distinct values holds categories (countries,
/// cities, category names, job titles): what a question may name in other words
/// ("German" for Germany, "drinks" for Beverages). Its values are embedded for
/// [`GraphValues::ground_semantic`]; names of single things are matched whole or near.
pub const SEMANTIC_MAX_DISTINCT: usize = 100;
/// The cosine (all-MiniLM-L6-v2) a question word must reach with a category value to
/// stand for it, and its lead over the next value. Chosen on 32 words probed against
/// Northwind values: demonyms and hypernyms reach 0.62–0.90 ("mexican" → Mexico 0.76,
/// "drinks" → Beverages 0.90), question words that name no value stay under 0.45
/// ("expensive", "shipped", "discount"). On the text2cypher dev pairs the match fires
/// on no question (they name values exactly or quote them).
pub const SEMANTIC_MIN: f32 = 0.6;
pub const SEMANTIC_LEAD: f32 = 0.05;
/// Words of a phrase looked up by embedding at most.
const SEMANTIC_WORDS: usize = 2;

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
    /// Category values with their embeddings, once [`GraphValues::embed_categories`]
    /// ran: each distinct text with its places in `indexed`.
    categories: Vec<Category>,
    /// Stems of every label and key: a question word naming the schema ("city",
    /// "suppliers") is no value.
    schema_stems: HashSet<String>,
}

#[derive(Debug)]
struct Category {
    text: String,
    places: Vec<usize>,
    vector: Vec<f32>,
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
        values.schema_stems = values
            .labels
            .iter()
            .flat_map(|l| {
                l.stems
                    .iter()
                    .chain(l.properties.iter().flat_map(|p| p.stems.iter()))
            })
            .chain(
                values
                    .relationship_numbers
                    .iter()
                    .flat_map(|p| p.stems.iter()),
            )
            .cloned()
            .collect();
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
        self.any_text_where(label, key, |v| match op {
            "CONTAINS" => v.contains(text),
            "STARTS WITH" => v.starts_with(text),
            "ENDS WITH" => v.ends_with(text),
            "=" => v == text,
            "<>" => v != text,
            "<" => v < text,
            "<=" => v <= text,
            ">" => v > text,
            ">=" => v >= text,
            _ => true,
        })
    }

    /// Whether some stored text value of `label`.`key` passes `test`; `None` when the
    /// key's values were not kept.
    pub fn any_text_where(
        &self,
        label: &str,
        key: &str,
        test: impl Fn(&str) -> bool,
    ) -> Option<bool> {
        let index = self.labels.iter().position(|l| l.name == label)?;
        let values = self.texts.get(&(index, key.to_owned()))?;
        Some(values.iter().any(|v| test(v)))
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

    /// Embeds the values of category keys (at most [`SEMANTIC_MAX_DISTINCT`] distinct
    /// values; codes left out) for [`GraphValues::ground_semantic`]. Returns how many
    /// were embedded.
    pub async fn embed_categories(&mut self, embedder: &dyn Embedder) -> Result<usize, EmbedError> {
        let mut places: Vec<(String, Vec<usize>)> = Vec::new();
        let mut at: HashMap<String, usize> = HashMap::new();
        let mut keys: Vec<&(usize, String)> = self
            .texts
            .iter()
            .filter(|(_, texts)| texts.len() <= SEMANTIC_MAX_DISTINCT)
            .map(|(key, _)| key)
            .collect();
        keys.sort();
        for (label, key) in keys {
            for value in &self.texts[&(*label, key.clone())] {
                let words = text::words(value);
                // Codes ("ID", "EC1 4SD") sit near unrelated words in embedding space
                // ("identify" → ID): they are matched by their words only.
                let letters = value.chars().filter(|c| c.is_alphabetic()).count();
                if letters < 3 || words.iter().any(|w| w.chars().any(|c| c.is_ascii_digit())) {
                    continue;
                }
                let Some(holders) = self.by_words.get(&words.join(" ")) else {
                    continue;
                };
                let mine = holders.iter().copied().filter(|&i| {
                    let (l, k, _) = &self.indexed[i];
                    l == label && k == key
                });
                let slot = *at.entry(words.join(" ")).or_insert_with(|| {
                    places.push((value.clone(), Vec::new()));
                    places.len() - 1
                });
                places[slot].1.extend(mine);
            }
        }
        let texts: Vec<String> = places.iter().map(|(text, _)| text.clone()).collect();
        let vectors = if texts.is_empty() {
            Vec::new()
        } else {
            embedder.embed(&texts).await?
        };
        self.categories = places
            .into_iter()
            .zip(vectors)
            .map(|((text, places), vector)| Category {
                text,
                places,
                vector,
            })
            .collect();
        Ok(self.categories.len())
    }

    /// Whether category values were embedded ([`GraphValues::embed_categories`]).
    pub fn has_categories(&self) -> bool {
        !self.categories.is_empty()
    }

    /// The phrases of a question that [`GraphValues::ground_semantic`] looks up: runs of
    /// one or two words outside the mentions `found` and quoted texts, none a stop
    /// word, a number or a word of the schema's labels and keys.
    pub fn free_phrases(
        &self,
        question: &str,
        found: &[Grounding],
    ) -> Vec<((usize, usize), String)> {
        let words = text::words(question);
        let mut free: Vec<bool> = words
            .iter()
            .map(|w| {
                !text::is_stop_word(w)
                    && !w.chars().all(|c| c.is_ascii_digit())
                    && !self.schema_stems.contains(&text::stem(w))
            })
            .collect();
        for g in found {
            for flag in free.iter_mut().take(g.span.1).skip(g.span.0) {
                *flag = false;
            }
        }
        // A quoted text is meant as written ("described as 'boxes'").
        for (start, end) in quoted_word_spans(question) {
            for flag in free.iter_mut().take(end).skip(start) {
                *flag = false;
            }
        }
        let mut phrases = Vec::new();
        for width in 1..=SEMANTIC_WORDS {
            for start in 0..words.len().saturating_sub(width - 1) {
                let end = start + width;
                if free[start..end].iter().all(|f| *f) {
                    phrases.push(((start, end), words[start..end].join(" ")));
                }
            }
        }
        phrases
    }

    /// Category values named in other words: each phrase (from
    /// [`GraphValues::free_phrases`], with its embedding) whose cosine with a category
    /// value reaches [`SEMANTIC_MIN`], [`SEMANTIC_LEAD`] ahead of the next value's,
    /// grounds that value; longer phrases first, none overlapping another.
    pub fn ground_semantic(
        &self,
        phrases: &[((usize, usize), String)],
        vectors: &[Vec<f32>],
    ) -> Vec<Grounding> {
        let mut found = Vec::new();
        let mut order: Vec<usize> = (0..phrases.len().min(vectors.len())).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(phrases[i].0 .1 - phrases[i].0 .0));
        let mut taken: Vec<(usize, usize)> = Vec::new();
        for i in order {
            let span = phrases[i].0;
            if taken.iter().any(|t| t.0 < span.1 && span.0 < t.1) {
                continue;
            }
            let (mut best, mut second) = ((f32::MIN, 0usize), f32::MIN);
            for (c, category) in self.categories.iter().enumerate() {
                let similarity = cosine(&vectors[i], &category.vector);
                if similarity > best.0 {
                    second = best.0;
                    best = (similarity, c);
                } else if similarity > second {
                    second = similarity;
                }
            }
            if best.0 < SEMANTIC_MIN || best.0 - second < SEMANTIC_LEAD {
                continue;
            }
            let category = &self.categories[best.1];
            tracing::debug!(phrase = %phrases[i].1, value = %category.text, cosine = best.0, "grounded by embedding");
            taken.push(span);
            self.push_holders(category.places.iter().copied(), span, &mut found);
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

/// The word positions `[start, end)` of each quoted text of `question`, as
/// [`text::words`] counts them.
pub(super) fn quoted_word_spans(question: &str) -> Vec<(usize, usize)> {
    text::quoted_texts(question)
        .into_iter()
        .map(|(range, _)| {
            let start = text::words(&question[..range.start]).len();
            (start, start + text::words(&question[range]).len())
        })
        .collect()
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
