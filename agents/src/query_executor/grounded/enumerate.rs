//! The typed queries that exist around a question's grounded values (GraphRAFT §4,
//! extended with the filters, orderings and aggregations people ask for): lookups,
//! 1- and 2-hop paths from a grounded value, paths joining two grounded values, and
//! label-wide filters, rankings and counts. Each is rendered as openCypher whose values
//! are parameters; only labels, types and keys of the schema appear in its text.

use std::collections::HashSet;

use kgmesh_models::lexical::text;
use kgmesh_schemas::graph::{GraphSchema, Value};

use super::values::{
    quoted, stems_of, GraphValues, Grounding, LabelInfo, PropertyInfo, PropertyKind,
};
use super::{Aggregate, Cues};

/// One query that can answer the question.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub cypher: String,
    pub params: Vec<(String, Value)>,
    pub shape: Shape,
    /// Stems of every label, type and key the query uses, what the ranker reads.
    pub stems: Vec<String>,
    /// Groundings it uses (indexes into the question's groundings).
    pub grounded: Vec<usize>,
    /// The label of the nodes it answers with (or groups by).
    pub answer: String,
}

impl Candidate {
    /// The query with its values written in as literals, for a reader or a model to
    /// see; what runs keeps them as parameters.
    pub fn display(&self) -> String {
        let mut out = String::with_capacity(self.cypher.len());
        let mut rest = self.cypher.as_str();
        while let Some(at) = rest.find('$') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let end = after
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            let name = &after[..end];
            match self.params.iter().find(|(p, _)| p == name) {
                Some((_, value)) => out.push_str(&cypher_literal(value)),
                None => {
                    out.push('$');
                    out.push_str(name);
                }
            }
            rest = &after[end..];
        }
        out.push_str(rest);
        out
    }
}

/// `1997-07-04`, `2012`: a text that starts with four digits.
fn starts_with_a_year(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() >= 4
        && bytes[..4].iter().all(u8::is_ascii_digit)
        && bytes.get(4).is_none_or(|b| !b.is_ascii_digit())
}

/// A value as an openCypher literal.
fn cypher_literal(value: &Value) -> String {
    match value {
        Value::String(text) => format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'")),
        other => super::plain_text(other),
    }
}

/// A candidate with its values taken out: what a learned plan remembers and replays.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    /// The query with `$v0…` for values and `$k` for the row limit: equal shapes are the
    /// same query over other values.
    pub signature: String,
    pub hops: u8,
    pub count: bool,
    /// `Some(true)` for highest first.
    pub order: Option<bool>,
    pub limit: bool,
    pub filter: bool,
    pub aggregate: Option<Aggregate>,
}

/// A relationship step from one label to another.
#[derive(Debug, Clone)]
struct Step {
    rel: String,
    outgoing: bool,
    other: String,
}

fn steps(schema: &GraphSchema, from: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut relations: Vec<_> = schema.relations.iter().collect();
    relations.sort_by(|a, b| a.name.cmp(&b.name));
    for relation in relations {
        let mut endpoints: Vec<_> = relation.endpoints.iter().collect();
        endpoints.sort();
        for (head, tail, _) in endpoints {
            if head == from && seen.insert((relation.name.clone(), true, tail.clone())) {
                out.push(Step {
                    rel: relation.name.clone(),
                    outgoing: true,
                    other: tail.clone(),
                });
            }
            if tail == from && seen.insert((relation.name.clone(), false, head.clone())) {
                out.push(Step {
                    rel: relation.name.clone(),
                    outgoing: false,
                    other: head.clone(),
                });
            }
        }
    }
    out
}

fn edge(step: &Step, var: Option<&str>) -> String {
    let name = var.unwrap_or("");
    if step.outgoing {
        format!("-[{name}:{}]->", quoted(&step.rel))
    } else {
        format!("<-[{name}:{}]-", quoted(&step.rel))
    }
}

/// A MATCH pattern ending in the answer variable `x`, its conditions and what it uses.
#[derive(Debug, Clone)]
struct Base {
    pattern: String,
    conditions: Vec<String>,
    params: Vec<(String, Value)>,
    target: String,
    stems: Vec<String>,
    grounded: Vec<usize>,
    hops: u8,
    /// The variable and label that filters apply to: the answer `x`, or the other end
    /// `m` of a step ("suppliers of products under $10").
    filter_on: (&'static str, String),
}

pub(super) struct Enumerator<'a> {
    pub values: &'a GraphValues,
    pub schema: &'a GraphSchema,
    pub groundings: &'a [Grounding],
    pub cues: &'a Cues,
    pub question_stems: &'a [String],
    /// The question asks for its answer label in the plural ("which categories").
    pub plural: bool,
    pub max: usize,
}

impl Enumerator<'_> {
    pub fn run(&self) -> Vec<Candidate> {
        let mut out = Vec::new();
        for base in self.bases() {
            self.finish(&base, &mut out);
            if out.len() >= self.max {
                out.truncate(self.max);
                break;
            }
        }
        out
    }

    fn label(&self, name: &str) -> Option<&LabelInfo> {
        self.values.label(name)
    }

    fn mentioned(&self, stems: &[String]) -> bool {
        stems.iter().any(|s| {
            self.question_stems
                .iter()
                .any(|q| text::stem_similarity(q, s) >= 0.8)
        })
    }

    fn bases(&self) -> Vec<Base> {
        let mut bases = Vec::new();
        // Keep one grounding per (label, key, span): the first value holder is enough.
        for (i, g) in self.groundings.iter().enumerate() {
            let Some(label) = self.label(&g.label) else {
                continue;
            };
            let param = format!("v{i}");
            let condition_on = |var: &str| format!("{var}.{} = ${param}", quoted(&g.key));
            let mut own = label.stems.clone();
            own.extend(stems_of(&g.key));
            bases.push(Base {
                pattern: format!("(x:{})", quoted(&label.name)),
                conditions: vec![condition_on("x")],
                params: vec![(param.clone(), g.value.clone())],
                target: label.name.clone(),
                stems: own.clone(),
                grounded: vec![i],
                hops: 0,
                filter_on: ("x", String::new()),
            });
            for first in steps(self.schema, &label.name) {
                let Some(other) = self.label(&first.other) else {
                    continue;
                };
                let mut stems = own.clone();
                stems.extend(stems_of(&first.rel));
                stems.extend(other.stems.iter().cloned());
                bases.push(Base {
                    pattern: format!(
                        "(n:{}){}(x:{})",
                        quoted(&label.name),
                        edge(&first, Some("r")),
                        quoted(&other.name)
                    ),
                    conditions: vec![condition_on("n")],
                    params: vec![(param.clone(), g.value.clone())],
                    target: other.name.clone(),
                    stems: stems.clone(),
                    grounded: vec![i],
                    hops: 1,
                    filter_on: ("x", String::new()),
                });
                for second in steps(self.schema, &other.name) {
                    if second.rel == first.rel && second.outgoing != first.outgoing {
                        continue; // straight back where it came from
                    }
                    let Some(last) = self.label(&second.other) else {
                        continue;
                    };
                    let mut stems = stems.clone();
                    stems.extend(stems_of(&second.rel));
                    stems.extend(last.stems.iter().cloned());
                    bases.push(Base {
                        pattern: format!(
                            "(n:{}){}(y:{}){}(x:{})",
                            quoted(&label.name),
                            edge(&first, None),
                            quoted(&other.name),
                            edge(&second, Some("r")),
                            quoted(&last.name)
                        ),
                        conditions: vec![condition_on("n")],
                        params: vec![(param.clone(), g.value.clone())],
                        target: last.name.clone(),
                        stems,
                        grounded: vec![i],
                        hops: 2,
                        filter_on: ("x", String::new()),
                    });
                }
            }
        }
        // Two grounded values: one node holding both, or a node between them.
        for (i, a) in self.groundings.iter().enumerate() {
            for (j, b) in self.groundings.iter().enumerate().skip(i + 1) {
                if a.span == b.span {
                    continue;
                }
                let (Some(la), Some(lb)) = (self.label(&a.label), self.label(&b.label)) else {
                    continue;
                };
                let params = vec![
                    (format!("v{i}"), a.value.clone()),
                    (format!("v{j}"), b.value.clone()),
                ];
                if la.name == lb.name {
                    let mut stems = la.stems.clone();
                    stems.extend(stems_of(&a.key));
                    stems.extend(stems_of(&b.key));
                    bases.push(Base {
                        pattern: format!("(x:{})", quoted(&la.name)),
                        conditions: vec![
                            format!("x.{} = $v{i}", quoted(&a.key)),
                            format!("x.{} = $v{j}", quoted(&b.key)),
                        ],
                        params: params.clone(),
                        target: la.name.clone(),
                        stems,
                        grounded: vec![i, j],
                        hops: 0,
                        filter_on: ("x", String::new()),
                    });
                }
                for first in steps(self.schema, &la.name) {
                    for second in steps(self.schema, &first.other) {
                        if second.other != lb.name {
                            continue;
                        }
                        let Some(middle) = self.label(&first.other) else {
                            continue;
                        };
                        let mut stems = la.stems.clone();
                        stems.extend(stems_of(&a.key));
                        stems.extend(stems_of(&first.rel));
                        stems.extend(middle.stems.iter().cloned());
                        stems.extend(stems_of(&second.rel));
                        stems.extend(lb.stems.iter().cloned());
                        stems.extend(stems_of(&b.key));
                        bases.push(Base {
                            pattern: format!(
                                "(n:{}){}(x:{}){}(m:{})",
                                quoted(&la.name),
                                edge(&first, None),
                                quoted(&middle.name),
                                edge(&second, None),
                                quoted(&lb.name)
                            ),
                            conditions: vec![
                                format!("n.{} = $v{i}", quoted(&a.key)),
                                format!("m.{} = $v{j}", quoted(&b.key)),
                            ],
                            params: params.clone(),
                            target: middle.name.clone(),
                            stems,
                            grounded: vec![i, j],
                            hops: 2,
                            filter_on: ("x", String::new()),
                        });
                    }
                }
            }
        }
        // No grounded value needed: every node of a label the question names.
        for label in &self.values.labels {
            if !self.mentioned(&label.stems) {
                continue;
            }
            bases.push(Base {
                pattern: format!("(x:{})", quoted(&label.name)),
                conditions: Vec::new(),
                params: Vec::new(),
                target: label.name.clone(),
                stems: label.stems.clone(),
                grounded: Vec::new(),
                hops: 0,
                filter_on: ("x", String::new()),
            });
            // …and those a step away from another label it names, filtered there.
            for step in steps(self.schema, &label.name) {
                let Some(other) = self.label(&step.other) else {
                    continue;
                };
                if other.name == label.name || !self.mentioned(&other.stems) {
                    continue;
                }
                let mut stems = label.stems.clone();
                stems.extend(stems_of(&step.rel));
                stems.extend(other.stems.iter().cloned());
                bases.push(Base {
                    pattern: format!(
                        "(x:{}){}(m:{})",
                        quoted(&label.name),
                        edge(&step, Some("r")),
                        quoted(&other.name)
                    ),
                    conditions: Vec::new(),
                    params: Vec::new(),
                    target: label.name.clone(),
                    stems,
                    grounded: Vec::new(),
                    hops: 1,
                    filter_on: ("m", other.name.clone()),
                });
            }
            // …or two steps away ("customers who ordered products under $10").
            for first in steps(self.schema, &label.name) {
                let Some(middle) = self.label(&first.other) else {
                    continue;
                };
                for second in steps(self.schema, &middle.name) {
                    if second.rel == first.rel && second.outgoing != first.outgoing {
                        continue;
                    }
                    let Some(far) = self.label(&second.other) else {
                        continue;
                    };
                    if far.name == label.name || !self.mentioned(&far.stems) {
                        continue;
                    }
                    let mut stems = label.stems.clone();
                    stems.extend(stems_of(&first.rel));
                    stems.extend(middle.stems.iter().cloned());
                    stems.extend(stems_of(&second.rel));
                    stems.extend(far.stems.iter().cloned());
                    bases.push(Base {
                        pattern: format!(
                            "(x:{}){}(y:{}){}(m:{})",
                            quoted(&label.name),
                            edge(&first, None),
                            quoted(&middle.name),
                            edge(&second, Some("r")),
                            quoted(&far.name)
                        ),
                        conditions: Vec::new(),
                        params: Vec::new(),
                        target: label.name.clone(),
                        stems,
                        grounded: Vec::new(),
                        hops: 2,
                        filter_on: ("m", far.name.clone()),
                    });
                }
            }
        }
        bases
    }

    /// The conditions the question's cues ask for on `var` of `label`: a comparison
    /// with its number, a flag it names, a property it says is missing, a quoted
    /// text or a year a property starts with or contains.
    fn filters(&self, var: &str, label: &LabelInfo) -> Vec<Filter> {
        let cues = self.cues;
        let mut out = Vec::new();
        if let Some(comparison) = cues.compare {
            let (op, value) = (comparison.operator(), comparison.value);
            for property in label
                .properties
                .iter()
                .filter(|p| p.kind == PropertyKind::Number && p.key != label.display)
            {
                // Compared as the graph stores it: numbers kept as text compare as text.
                let bound = if property.numeric_text {
                    Value::String(super::plain_text(&Value::Float(value)))
                } else {
                    super::number_value(value)
                };
                out.push(Filter {
                    condition: format!("{var}.{} {op} $x", quoted(&property.key)),
                    stems: property.stems.clone(),
                    params: vec![("x".to_owned(), bound)],
                });
            }
        }
        if let Some((low, high)) = cues.range {
            for property in label
                .properties
                .iter()
                .filter(|p| p.kind == PropertyKind::Number && p.key != label.display)
            {
                let bound = |value: f64| {
                    if property.numeric_text {
                        Value::String(super::plain_text(&Value::Float(value)))
                    } else {
                        super::number_value(value)
                    }
                };
                let key = quoted(&property.key);
                out.push(Filter {
                    condition: format!("{var}.{key} >= $lo AND {var}.{key} <= $hi"),
                    stems: property.stems.clone(),
                    params: vec![
                        ("lo".to_owned(), bound(low)),
                        ("hi".to_owned(), bound(high)),
                    ],
                });
            }
        }
        for (i, value) in cues.equals.iter().enumerate() {
            for property in label
                .properties
                .iter()
                .filter(|p| p.kind == PropertyKind::Number && p.key != label.display)
            {
                let bound = if property.numeric_text {
                    Value::String(super::plain_text(&Value::Float(*value)))
                } else {
                    super::number_value(*value)
                };
                out.push(Filter {
                    condition: format!("{var}.{} = $e{i}", quoted(&property.key)),
                    stems: property.stems.clone(),
                    params: vec![(format!("e{i}"), bound)],
                });
            }
        }
        for property in &label.properties {
            if !self.mentioned(&property.stems) {
                continue;
            }
            if property.kind == PropertyKind::Flag {
                out.push(Filter {
                    condition: format!("{var}.{} = {}", quoted(&property.key), !cues.negated),
                    stems: property.stems.clone(),
                    params: Vec::new(),
                });
            } else {
                // "without a home page": missing; "with a fax number listed": present.
                let test = if cues.negated {
                    "IS NULL"
                } else {
                    "IS NOT NULL"
                };
                out.push(Filter {
                    condition: format!("{var}.{} {test}", quoted(&property.key)),
                    stems: property.stems.clone(),
                    params: Vec::new(),
                });
            }
        }
        for (i, literal) in cues.literals.iter().enumerate() {
            let op = if let Some(op) = literal.compare {
                op
            } else if literal.year || cues.starts {
                "STARTS WITH"
            } else if cues.ends {
                "ENDS WITH"
            } else {
                "CONTAINS"
            };
            // Only on keys some stored value of which passes: a quoted 'bottles' is
            // looked for in the key that holds it, not in every text key.
            // A year compared ("after 2012") bounds dates, not every text ('Heat' >
            // '2013' as text): only keys some value of which starts with a year.
            let dated = |key: &str| {
                !(literal.year && literal.compare.is_some())
                    || self
                        .values
                        .any_text_where(&label.name, key, starts_with_a_year)
                        != Some(false)
            };
            for property in label.properties.iter().filter(|p| {
                p.kind == PropertyKind::Text
                    && self.values.any_text(&label.name, &p.key, op, &literal.text) != Some(false)
                    && dated(&p.key)
            }) {
                out.push(Filter {
                    condition: format!("{var}.{} {op} $s{i}", quoted(&property.key)),
                    stems: property.stems.clone(),
                    params: vec![(format!("s{i}"), Value::String(literal.text.clone()))],
                });
            }
        }
        out
    }

    /// Turns a base into the queries the cues ask for: with no filter or one of
    /// [`Enumerator::filters`], the answer's name or one of its properties, a count, a
    /// ranking by a number, or a grouped count or sum.
    fn finish(&self, base: &Base, out: &mut Vec<Candidate>) {
        let Some(target) = self.label(&base.target) else {
            return;
        };
        let cues = self.cues;
        let (filter_var, filter_label) = if base.filter_on.1.is_empty() {
            ("x", target)
        } else {
            match self.label(&base.filter_on.1) {
                Some(label) => (base.filter_on.0, label),
                None => return,
            }
        };
        let mut filters = vec![None];
        let single = self.filters(filter_var, filter_label);
        // Two conditions on the nodes of a label ("discontinued products with zero units
        // in stock"), among those the question's cues back (not mere presence tests),
        // on different keys.
        let mut pairs = Vec::new();
        if base.hops == 0 || base.filter_on.0 == "m" {
            let backed: Vec<&Filter> = single
                .iter()
                .filter(|f| !f.condition.ends_with("IS NOT NULL"))
                .collect();
            for (i, a) in backed.iter().enumerate() {
                for b in &backed[i + 1..] {
                    if a.stems == b.stems
                        || a.params.first().map(|p| &p.0) == b.params.first().map(|p| &p.0)
                            && !a.params.is_empty()
                    {
                        continue;
                    }
                    let mut stems = a.stems.clone();
                    stems.extend(b.stems.iter().cloned());
                    pairs.push(Filter {
                        condition: format!("{} AND {}", a.condition, b.condition),
                        stems,
                        params: a.params.iter().chain(&b.params).cloned().collect(),
                    });
                }
            }
        }
        filters.extend(single.into_iter().map(Some));
        filters.extend(pairs.into_iter().map(Some));
        if base.filter_on.0 == "m" && cues.compare.is_some() {
            // "categories with more than 5 products": a condition on a count.
            self.having(base, target, out);
        }
        let limit = cues
            .limit
            .map(|k| format!(" LIMIT {k}"))
            .unwrap_or_default();
        let display = quoted(&target.display);
        // A ranking returns as many as asked, else one for a singular answer ("which
        // supplier has the most products") and all for a plural one.
        let top = match cues.limit {
            Some(k) => format!(" LIMIT {k}"),
            None if self.plural => String::new(),
            None => " LIMIT 1".to_owned(),
        };
        for filter in &filters {
            let far = base.filter_on.0 == "m";
            let mut conditions: Vec<&str> = base.conditions.iter().map(String::as_str).collect();
            let mut params = base.params.clone();
            let mut stems = base.stems.clone();
            if let Some(filter) = filter {
                conditions.push(&filter.condition);
                params.extend(filter.params.iter().cloned());
                stems.extend(filter.stems.iter().cloned());
            }
            let filtered = filter.is_some();
            let head = |extra: Option<&str>| {
                let all: Vec<&str> = conditions.iter().copied().chain(extra).collect();
                if all.is_empty() {
                    format!("MATCH {}", base.pattern)
                } else {
                    format!("MATCH {} WHERE {}", base.pattern, all.join(" AND "))
                }
            };
            let mut push = |cypher: String, extra: &[String], shape: Shape| {
                let mut all = stems.clone();
                let mut answer = base.target.clone();
                for stem in extra {
                    match stem.strip_prefix(FAR_MARK) {
                        Some(label) => answer = label.to_owned(),
                        None => all.push(stem.clone()),
                    }
                }
                out.push(Candidate {
                    cypher,
                    params: params.clone(),
                    shape,
                    stems: all,
                    grounded: base.grounded.clone(),
                    answer,
                });
            };
            let shape = |cypher: &str, count, order, limit, aggregate| Shape {
                signature: signature(cypher, cues),
                hops: base.hops,
                count,
                order,
                limit,
                filter: filtered,
                aggregate,
            };

            if far {
                // The answers ranked by how many of the far nodes (passing the filter)
                // they reach: "the categories with the most suppliers".
                if let Some(highest) = cues.order {
                    let direction = if highest { "DESC" } else { "ASC" };
                    let cypher = format!(
                        "{} RETURN x.{display} AS answer, count(DISTINCT m) AS value ORDER BY value {direction}{top}",
                        head(None)
                    );
                    let counted =
                        shape(&cypher, false, Some(highest), true, Some(Aggregate::Count));
                    push(cypher, &[], counted);
                    // …or by a sum of what the last step carries: "the customers who
                    // ordered the most units of products" (one step away is `grouped`'s).
                    if base.hops == 2 {
                        self.far_sums(base, target, highest, &top, &head, &mut push, &shape);
                    }
                }
                if filter.is_none() {
                    continue; // the plain listing is the grounded bases' job
                }
            }
            // The answer's name, or another property: any when unfiltered (a learned
            // plan may return one the question does not name), else those it names.
            let mut projections = vec![(display.clone(), Vec::new())];
            for property in &target.properties {
                // A flag is a condition on the nodes of a listing, not its answer.
                let flag_listing = property.kind == PropertyKind::Flag && base.grounded.is_empty();
                if property.key != target.display
                    && !flag_listing
                    && (filter.is_none() || self.mentioned(&property.stems))
                {
                    projections.push((quoted(&property.key), property.stems.clone()));
                }
            }
            for (projection, extra) in &projections {
                let cypher = format!(
                    "{} RETURN DISTINCT x.{projection} AS answer{limit}",
                    head(None)
                );
                let shape = shape(&cypher, false, None, cues.limit.is_some(), None);
                push(cypher, extra, shape);
            }
            if cues.count {
                let cypher = format!("{} RETURN count(DISTINCT x) AS answer", head(None));
                let shape = shape(&cypher, true, None, false, None);
                push(cypher, &[], shape);
            }
            // One number over all the answers: "the average unit price of products in
            // Beverages", "the total units Vins et alcools Chevalier ordered", "the
            // highest discount given" — of the answers' numbers or the last step's.
            let scalar = match (cues.aggregate, cues.order) {
                (Some(Aggregate::Sum), _) => Some(("sum", Some(Aggregate::Sum), None)),
                (Some(Aggregate::Average), _) => Some(("avg", Some(Aggregate::Average), None)),
                (_, Some(highest)) if cues.limit.is_none() && !far => {
                    Some((if highest { "max" } else { "min" }, None, Some(highest)))
                }
                _ => None,
            };
            if let Some((function, aggregate, order)) = scalar {
                let mut sources: Vec<(String, &PropertyInfo)> = target
                    .properties
                    .iter()
                    .filter(|p| p.kind == PropertyKind::Number && p.key != target.display)
                    .map(|p| (number_of("x", p), p))
                    .collect();
                if base.pattern.contains("[r:") {
                    sources.extend(
                        self.values
                            .relationship_numbers
                            .iter()
                            .map(|p| (number_of("r", p), p)),
                    );
                }
                for (source, property) in &sources {
                    let cypher = format!("{} RETURN {function}({source}) AS answer", head(None));
                    let shaped = shape(&cypher, false, order, false, aggregate);
                    push(cypher, &property.stems, shaped);
                }
            }
            let Some(highest) = cues.order else {
                continue;
            };
            let direction = if highest { "DESC" } else { "ASC" };
            for property in target
                .properties
                .iter()
                .filter(|p| p.kind == PropertyKind::Number)
            {
                let key = quoted(&property.key);
                let present = format!("x.{key} IS NOT NULL");
                let cypher = format!(
                    "{} RETURN DISTINCT x.{display} AS answer, x.{key} AS value ORDER BY value {direction}{top}",
                    head(Some(&present))
                );
                let shape_named = shape(&cypher, false, Some(highest), true, None);
                push(cypher, &property.stems, shape_named);
                // The values themselves: "the three highest freight values".
                let cypher = format!(
                    "{} RETURN x.{key} AS answer ORDER BY answer {direction}{top}",
                    head(Some(&present))
                );
                let shape_values = shape(&cypher, false, Some(highest), true, None);
                let mut extra = property.stems.clone();
                extra.push(VALUES_MARK.to_owned());
                push(cypher, &extra, shape_values);
            }
            if !base.grounded.is_empty() {
                // The answers ranked by their links one step further: "the products
                // most ordered in the Seafood category".
                for step in steps(self.schema, &target.name) {
                    let Some(other) = self.label(&step.other) else {
                        continue;
                    };
                    let mut extra = stems_of(&step.rel);
                    extra.extend(other.stems.iter().cloned());
                    let further = format!(
                        "{} RETURN x.{display} AS answer, count(*) AS value ORDER BY value {direction}{top}",
                        head(None).replacen(
                            &base.pattern,
                            &format!(
                                "{}{}(o:{})",
                                base.pattern,
                                edge(&step, Some("s")),
                                quoted(&other.name)
                            ),
                            1
                        )
                    );
                    let shape_further =
                        shape(&further, false, Some(highest), true, Some(Aggregate::Count));
                    push(further.clone(), &extra, shape_further);
                    // …or the nodes one step further ranked by how many paths reach them:
                    // "the customers who ordered the most Seafood products".
                    let far = further.replacen(
                        &format!("RETURN x.{display} AS answer"),
                        &format!("RETURN o.{} AS answer", quoted(&other.display)),
                        1,
                    );
                    let mut far_stems = extra.clone();
                    far_stems.push(format!("{FAR_MARK}{}", other.name));
                    let shape_far = shape(&far, false, Some(highest), true, Some(Aggregate::Count));
                    push(far, &far_stems, shape_far);
                }
            }
            if !base.grounded.is_empty() {
                // Values of a property the question names, ranked by how many answers
                // hold them: "the top 3 ship cities of Ernst Handel's orders".
                for property in &target.properties {
                    if property.kind != PropertyKind::Text || !self.mentioned(&property.stems) {
                        continue;
                    }
                    let key = quoted(&property.key);
                    let present = format!("x.{key} IS NOT NULL");
                    let cypher = format!(
                        "{} RETURN x.{key} AS answer, count(*) AS value ORDER BY value {direction}{top}",
                        head(Some(&present))
                    );
                    let shape = shape(&cypher, false, Some(highest), true, Some(Aggregate::Count));
                    push(cypher, &property.stems, shape);
                }
            }
            if base.hops > 0 && !base.grounded.is_empty() {
                // The answers ranked by how many paths from the grounded value reach
                // them: "the products customers from Germany order most".
                let cypher = format!(
                    "{} RETURN x.{display} AS answer, count(*) AS value ORDER BY value {direction}{top}",
                    head(None)
                );
                let shape = shape(&cypher, false, Some(highest), true, Some(Aggregate::Count));
                push(cypher, &[], shape);
            }
            if base.grounded.is_empty() && base.hops == 0 {
                let filter_condition = filter.as_ref().map(|f| f.condition.as_str());
                self.grouped(target, highest, &top, filter_condition, &mut push, &shape);
            }
        }
    }

    /// The answers of a two-step base ranked by a sum (or average) of the far node's
    /// numbers or the last relationship's, along every path.
    #[allow(clippy::too_many_arguments)]
    fn far_sums(
        &self,
        base: &Base,
        target: &LabelInfo,
        highest: bool,
        top: &str,
        head: &impl Fn(Option<&str>) -> String,
        push: &mut impl FnMut(String, &[String], Shape),
        shape: &impl Fn(&str, bool, Option<bool>, bool, Option<Aggregate>) -> Shape,
    ) {
        let Some(far) = self.label(&base.filter_on.1) else {
            return;
        };
        let (function, aggregate) = match self.cues.aggregate {
            Some(Aggregate::Average) => ("avg", Aggregate::Average),
            _ => ("sum", Aggregate::Sum),
        };
        let direction = if highest { "DESC" } else { "ASC" };
        let display = quoted(&target.display);
        let sources = far
            .properties
            .iter()
            .filter(|p| p.kind == PropertyKind::Number)
            .map(|p| (number_of("m", p), p))
            .chain(
                self.values
                    .relationship_numbers
                    .iter()
                    .map(|p| (number_of("r", p), p)),
            );
        for (source, property) in sources {
            let present = format!("{source} IS NOT NULL");
            let cypher = format!(
                "{} RETURN x.{display} AS answer, {function}({source}) AS value ORDER BY value {direction}{top}",
                head(Some(&present))
            );
            let shaped = shape(&cypher, false, Some(highest), true, Some(aggregate));
            push(cypher, &property.stems, shaped);
        }
    }

    /// Nodes of the base's label whose count of neighbours passes the question's
    /// comparison.
    fn having(&self, base: &Base, target: &LabelInfo, out: &mut Vec<Candidate>) {
        let Some(comparison) = self.cues.compare else {
            return;
        };
        let (op, value) = (comparison.operator(), comparison.value);
        let limit = self
            .cues
            .limit
            .map(|k| format!(" LIMIT {k}"))
            .unwrap_or_default();
        let cypher = format!(
            "MATCH {} WITH x, count(DISTINCT m) AS value WHERE value {op} $x RETURN x.{} AS answer{limit}",
            base.pattern,
            quoted(&target.display)
        );
        out.push(Candidate {
            shape: Shape {
                signature: signature(&cypher, self.cues),
                hops: base.hops,
                count: false,
                order: None,
                limit: self.cues.limit.is_some(),
                filter: true,
                aggregate: Some(Aggregate::Count),
            },
            cypher,
            params: vec![("x".to_owned(), super::number_value(value))],
            stems: base.stems.clone(),
            grounded: Vec::new(),
            answer: target.name.clone(),
        });
    }

    /// The label's nodes ranked by what lies one step away (a count of neighbours, or
    /// a sum or average of their numbers), or the values of a text property the
    /// question names ranked by how many nodes hold them.
    fn grouped(
        &self,
        target: &LabelInfo,
        highest: bool,
        top: &str,
        filter: Option<&str>,
        push: &mut impl FnMut(String, &[String], Shape),
        shape: &impl Fn(&str, bool, Option<bool>, bool, Option<Aggregate>) -> Shape,
    ) {
        let direction = if highest { "DESC" } else { "ASC" };
        let display = quoted(&target.display);
        let filter_and = filter.map(|f| format!("{f} AND ")).unwrap_or_default();
        let filter_where = filter.map(|f| format!(" WHERE {f}")).unwrap_or_default();
        for property in &target.properties {
            if property.kind != PropertyKind::Text || !self.mentioned(&property.stems) {
                continue;
            }
            let key = quoted(&property.key);
            let cypher = format!(
                "MATCH (x:{}) WHERE {filter_and}x.{key} IS NOT NULL RETURN x.{key} AS answer, count(x) AS value ORDER BY value {direction}{top}",
                quoted(&target.name)
            );
            let shaped = shape(&cypher, false, Some(highest), true, Some(Aggregate::Count));
            push(cypher, &property.stems, shaped);
        }
        for step in steps(self.schema, &target.name) {
            let Some(other) = self.label(&step.other) else {
                continue;
            };
            let pattern = format!(
                "(x:{}){}(m:{})",
                quoted(&target.name),
                edge(&step, Some("r")),
                quoted(&other.name)
            );
            let mut stems = stems_of(&step.rel);
            stems.extend(other.stems.iter().cloned());
            let cypher = format!(
                "MATCH {pattern}{filter_where} RETURN x.{display} AS answer, count(DISTINCT m) AS value ORDER BY value {direction}{top}"
            );
            let shaped = shape(&cypher, false, Some(highest), true, Some(Aggregate::Count));
            push(cypher, &stems, shaped);
            // Single relationships ranked by a number they carry: "the orders with the
            // highest quantity of a single product".
            for property in &self.values.relationship_numbers {
                let key = quoted(&property.key);
                let cypher = format!(
                    "MATCH {pattern} WHERE {filter_and}r.{key} IS NOT NULL RETURN x.{display} AS answer, r.{key} AS value ORDER BY value {direction}{top}"
                );
                let mut all = stems.clone();
                all.extend(property.stems.iter().cloned());
                let shaped = shape(&cypher, false, Some(highest), true, None);
                push(cypher, &all, shaped);
            }
            // Sums rank too when no word says "total" ("the orders with the most units").
            let aggregate = match self.cues.aggregate {
                Some(Aggregate::Count) | None => Aggregate::Sum,
                Some(other) => other,
            };
            let function = match aggregate {
                Aggregate::Sum => "sum",
                Aggregate::Average => "avg",
                Aggregate::Count => continue,
            };
            let mut sources: Vec<(String, Vec<String>)> = other
                .properties
                .iter()
                .filter(|p| p.kind == PropertyKind::Number)
                .map(|p| (number_of("m", p), p.stems.clone()))
                .collect();
            sources.extend(
                self.values
                    .relationship_numbers
                    .iter()
                    .map(|p| (number_of("r", p), p.stems.clone())),
            );
            for (source, source_stems) in sources {
                let cypher = format!(
                    "MATCH {pattern} WHERE {filter_and}{source} IS NOT NULL RETURN x.{display} AS answer, {function}({source}) AS value ORDER BY value {direction}{top}"
                );
                let mut all = stems.clone();
                all.extend(source_stems);
                let shaped = shape(&cypher, false, Some(highest), true, Some(aggregate));
                push(cypher, &all, shaped);
            }
        }
    }
}

/// A stem no question has, marking candidates that answer with the values of the
/// property they rank by rather than the nodes holding them (a small cost when cold).
pub(super) const VALUES_MARK: &str = "\u{1}values";

/// Marks, in the extra stems handed to a candidate, that it answers with the nodes of
/// the label after the mark (one step past the base's answer) rather than the base's.
pub(super) const FAR_MARK: &str = "\u{1}far";

/// A number property of `var` as Cypher adds it up: numbers kept as text converted.
fn number_of(var: &str, property: &PropertyInfo) -> String {
    if property.numeric_text {
        format!("toFloat({var}.{})", quoted(&property.key))
    } else {
        format!("{var}.{}", quoted(&property.key))
    }
}

/// A condition a question's cues add.
#[derive(Debug, Clone)]
struct Filter {
    condition: String,
    stems: Vec<String>,
    params: Vec<(String, Value)>,
}

/// The query with its row limit written as `$k` and every value parameter as `$v`, so
/// that "top 3" and "top 5" questions, and questions grounding other values, share a
/// shape.
fn signature(cypher: &str, cues: &Cues) -> String {
    let limited = match cues.limit {
        Some(k) => cypher.replace(&format!("LIMIT {k}"), "LIMIT $k"),
        None => cypher.replace("LIMIT 1", "LIMIT $k"),
    };
    let mut out = String::with_capacity(limited.len());
    let mut chars = limited.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '$' && chars.peek() == Some(&'v') {
            out.push('v');
            chars.next();
            while chars.peek().is_some_and(|d| d.is_ascii_digit()) {
                chars.next();
            }
        }
    }
    out
}
