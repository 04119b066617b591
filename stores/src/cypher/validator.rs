//! The gate every query passes before any backend runs it: no writes, no admin commands,
//! no procedure calls, only names that exist, and bounded work. Refusals carry a hint
//! naming the closest existing names so that a model can repair its query in one step.

use std::collections::HashMap;

use kgmesh_schemas::graph::GraphSchema;

use super::ast::*;
use super::error::{CypherError, CypherResult, ErrorKind};
use super::graph::PropertyGraph;
use super::lexer::cypher_name;
use crate::QueryLimits;

/// Intermediate rows a query may build (matches, expansions, cartesian products) before it
/// is stopped: a thousand times the result row cap, within fixed bounds.
pub fn work_budget(limits: &QueryLimits) -> u64 {
    (limits.max_rows as u64)
        .saturating_mul(1_000)
        .clamp(100_000, 10_000_000)
}

/// Checks a parsed query against the schema and the limits. Unknown names are reported
/// only when the schema knows some names of that kind (an empty schema checks nothing);
/// a label on a graph that has nodes but no labels at all (a graph of triples) is refused
/// with how to match there instead.
pub fn validate(query: &Query, schema: &GraphSchema, limits: &QueryLimits) -> CypherResult<()> {
    validate_with(query, schema, limits, None)
}

/// [`validate`], with the graph itself consulted for property keys: before a key missing
/// from a (sampled) schema is called unknown, and for the keys of a graph whose schema
/// has no labels to hang them on (a graph of triples, whose nodes answer to `name`).
pub fn validate_with(
    query: &Query,
    schema: &GraphSchema,
    limits: &QueryLimits,
    graph: Option<&dyn PropertyGraph>,
) -> CypherResult<()> {
    let key_exists = |key: &str| graph.is_some_and(|graph| graph.property_key_exists(key));
    let mut all_node_keys: Vec<String> = schema
        .labels
        .iter()
        .flat_map(|label| label.property_keys.iter().cloned())
        .collect();
    all_node_keys.sort();
    all_node_keys.dedup();
    // Without labels the schema holds no node keys: the graph lists its own.
    let graph_keys = match graph {
        Some(graph) if all_node_keys.is_empty() => graph.property_keys(),
        _ => Vec::new(),
    };
    let mut validator = Validator {
        schema,
        limits,
        key_exists: &key_exists,
        graph_keys,
        all_node_keys,
    };
    validator.query(query, &Scope::default(), true)
}

/// What a variable is known to hold, for checking property keys.
#[derive(Debug, Clone, PartialEq)]
enum Binding {
    /// A node with these labels (empty: any).
    Node(Vec<String>),
    Relationship,
    Other,
}

#[derive(Debug, Clone, Default)]
struct Scope {
    vars: HashMap<String, Binding>,
}

impl Scope {
    fn bind(&mut self, name: &str, binding: Binding) {
        match (self.vars.get_mut(name), binding) {
            (Some(Binding::Node(existing)), Binding::Node(labels)) => {
                for label in labels {
                    if !existing.contains(&label) {
                        existing.push(label);
                    }
                }
            }
            (Some(_), _) => {}
            (None, binding) => {
                self.vars.insert(name.to_string(), binding);
            }
        }
    }
}

struct Validator<'a> {
    schema: &'a GraphSchema,
    limits: &'a QueryLimits,
    key_exists: &'a dyn Fn(&str) -> bool,
    /// Every property key the graph has, where it could say (empty otherwise).
    graph_keys: Vec<String>,
    all_node_keys: Vec<String>,
}

impl<'a> Validator<'a> {
    fn query(&mut self, query: &Query, outer: &Scope, top_level: bool) -> CypherResult<()> {
        let mut columns: Option<Vec<String>> = None;
        for part in &query.parts {
            let part_columns = self.single_query(part, outer, top_level)?;
            if top_level && query.parts.len() > 1 {
                if let Some(columns) = &columns {
                    if columns != &part_columns {
                        return Err(CypherError::new(
                            ErrorKind::Syntax,
                            format!(
                                "all parts of a UNION must return the same columns ({} vs {})",
                                columns.join(", "),
                                part_columns.join(", ")
                            ),
                        ));
                    }
                }
                columns = Some(part_columns);
            }
        }
        Ok(())
    }

    fn single_query(
        &mut self,
        query: &SingleQuery,
        outer: &Scope,
        top_level: bool,
    ) -> CypherResult<Vec<String>> {
        // Writes are refused before anything else, wherever they are.
        for clause in &query.clauses {
            if let Clause::Forbidden(forbidden) = clause {
                return Err(forbidden_error(forbidden));
            }
        }
        let mut scope = outer.clone();
        let mut columns = Vec::new();
        let clause_count = query.clauses.len();
        for (index, clause) in query.clauses.iter().enumerate() {
            match clause {
                Clause::Match(match_clause) => {
                    self.match_clause(match_clause, &mut scope)?;
                }
                Clause::Unwind(unwind) => {
                    self.expr(&unwind.expr, &scope)?;
                    scope.bind(&unwind.alias, Binding::Other);
                }
                Clause::With(with) => {
                    scope = self.projection(&with.projection, &scope)?;
                    if let Some(where_clause) = &with.where_clause {
                        self.expr(where_clause, &scope)?;
                    }
                }
                Clause::Return(projection) => {
                    if index + 1 != clause_count {
                        return Err(CypherError::new(
                            ErrorKind::Syntax,
                            "RETURN must be the last clause",
                        ));
                    }
                    let projected = self.projection(projection, &scope)?;
                    columns = projection_columns(projection, &scope);
                    scope = projected;
                }
                Clause::Forbidden(forbidden) => return Err(forbidden_error(forbidden)),
            }
        }
        if top_level && !matches!(query.clauses.last(), Some(Clause::Return(_))) {
            return Err(
                CypherError::new(ErrorKind::Syntax, "a query must end with RETURN")
                    .with_hint("add a RETURN clause naming what the query should produce"),
            );
        }
        Ok(columns)
    }

    fn match_clause(&mut self, clause: &MatchClause, scope: &mut Scope) -> CypherResult<()> {
        let bound_before: Vec<String> = scope.vars.keys().cloned().collect();
        for pattern in &clause.patterns {
            self.pattern(pattern, scope)?;
        }
        self.check_cartesian(clause, &bound_before)?;
        if let Some(where_clause) = &clause.where_clause {
            self.expr(where_clause, scope)?;
        }
        Ok(())
    }

    fn pattern(&mut self, pattern: &PatternPart, scope: &mut Scope) -> CypherResult<()> {
        self.node(&pattern.start, scope)?;
        for (rel, node) in &pattern.chain {
            self.relationship(rel, scope)?;
            self.node(node, scope)?;
        }
        if let Some(path) = &pattern.path_variable {
            scope.bind(path, Binding::Other);
        }
        if pattern.shortest.is_some() {
            return Err(CypherError::new(
                ErrorKind::Unsupported,
                "shortestPath/allShortestPaths are not supported in queries",
            )
            .with_hint("use a bounded variable-length pattern such as -[*1..3]- with ORDER BY length(p) LIMIT 1"));
        }
        Ok(())
    }

    /// Checks the keys (with `check_key`) and the values of a pattern's literal property
    /// map.
    fn property_map(
        &mut self,
        map: &Option<PropertyMap>,
        scope: &Scope,
        check_key: impl Fn(&Self, &str) -> CypherResult<()>,
    ) -> CypherResult<()> {
        if let Some(PropertyMap::Literal(entries)) = map {
            for (key, value) in entries {
                check_key(self, key)?;
                self.expr(value, scope)?;
            }
        }
        Ok(())
    }

    fn node(&mut self, node: &NodePattern, scope: &mut Scope) -> CypherResult<()> {
        for label in &node.labels {
            self.check_label(label)?;
        }
        self.property_map(&node.properties, scope, |validator, key| {
            validator.check_node_key(key, &node.labels)
        })?;
        if let Some(variable) = &node.variable {
            if matches!(scope.vars.get(variable), Some(Binding::Relationship)) {
                return Err(CypherError::new(
                    ErrorKind::Syntax,
                    format!("`{variable}` is a relationship and cannot be used as a node"),
                ));
            }
            scope.bind(variable, Binding::Node(node.labels.clone()));
        }
        Ok(())
    }

    fn relationship(&mut self, rel: &RelPattern, scope: &mut Scope) -> CypherResult<()> {
        for rel_type in &rel.types {
            self.check_relation(rel_type)?;
        }
        self.property_map(&rel.properties, scope, Self::check_relationship_key)?;
        if let Some(range) = rel.range {
            let max_depth = u64::from(self.limits.max_depth);
            let min = range.min.unwrap_or(1);
            if let Some(max) = range.max {
                if max > max_depth {
                    return Err(CypherError::new(
                        ErrorKind::Limit,
                        format!("variable-length relationship *{}..{max} is longer than the depth budget of {max_depth} hops", min),
                    )
                    .with_hint(format!("use at most *{}..{max_depth}", min.min(max_depth))));
                }
                if min > max {
                    return Err(CypherError::new(
                        ErrorKind::Syntax,
                        format!("variable-length relationship *{min}..{max} has its lower bound above its upper bound"),
                    ));
                }
            }
            if min > max_depth {
                return Err(CypherError::new(
                    ErrorKind::Limit,
                    format!("variable-length relationship needs at least {min} hops, over the depth budget of {max_depth}"),
                ));
            }
            if range.max.is_none() {
                let bounded = VarLength {
                    min: Some(min),
                    max: Some(max_depth),
                };
                return Err(CypherError::new(
                    ErrorKind::Unsupported,
                    format!(
                        "the variable-length relationship {} has no upper bound: unbounded patterns are refused",
                        rel_pattern_text(rel, range)
                    ),
                )
                .with_hint(format!(
                    "give it an upper bound of at most {max_depth} hops, e.g. {}",
                    rel_pattern_text(rel, bounded)
                )));
            }
        }
        if let Some(variable) = &rel.variable {
            if matches!(scope.vars.get(variable), Some(Binding::Node(_))) {
                return Err(CypherError::new(
                    ErrorKind::Syntax,
                    format!("`{variable}` is a node and cannot be used as a relationship"),
                ));
            }
            let binding = if rel.range.is_some() {
                Binding::Other
            } else {
                Binding::Relationship
            };
            scope.bind(variable, binding);
        }
        Ok(())
    }

    /// Refuses a MATCH whose disconnected patterns multiply beyond the work budget.
    fn check_cartesian(&self, clause: &MatchClause, bound_before: &[String]) -> CypherResult<()> {
        if clause.patterns.len() < 2 || self.schema.labels.is_empty() {
            return Ok(());
        }
        // Group patterns into connected components by shared variables.
        let variables: Vec<Vec<String>> = clause.patterns.iter().map(pattern_variables).collect();
        let count = clause.patterns.len();
        let mut component: Vec<usize> = (0..count).collect();
        for first in 0..count {
            for second in first + 1..count {
                if variables[first]
                    .iter()
                    .any(|name| variables[second].contains(name))
                {
                    let (from, to) = (component[second], component[first]);
                    for slot in component.iter_mut() {
                        if *slot == from {
                            *slot = to;
                        }
                    }
                }
            }
        }
        let mut estimate: u64 = 1;
        let mut components = component.clone();
        components.sort_unstable();
        components.dedup();
        if components.len() < 2 {
            return Ok(());
        }
        for id in components {
            let members: Vec<usize> = (0..count).filter(|index| component[*index] == id).collect();
            let anchored = members.iter().any(|index| {
                variables[*index]
                    .iter()
                    .any(|name| bound_before.contains(name))
            });
            if anchored {
                continue;
            }
            let smallest = members
                .iter()
                .map(|index| self.pattern_estimate(&clause.patterns[*index]))
                .min()
                .unwrap_or(1);
            estimate = estimate.saturating_mul(smallest.max(1));
        }
        let budget = work_budget(self.limits);
        if estimate > budget {
            return Err(CypherError::new(
                ErrorKind::Limit,
                format!(
                    "the MATCH combines disconnected patterns into a cartesian product of about {estimate} rows, over the work budget of {budget}"
                ),
            )
            .with_hint("connect the patterns through a shared variable or relationship, or match them in separate WITH steps with LIMIT"));
        }
        Ok(())
    }

    /// Rows a pattern can start from: its smallest labelled node, or every node.
    fn pattern_estimate(&self, pattern: &PatternPart) -> u64 {
        std::iter::once(&pattern.start)
            .chain(pattern.chain.iter().map(|(_, node)| node))
            .map(|node| {
                if node.properties.is_some() {
                    return 1;
                }
                node.labels
                    .iter()
                    .filter_map(|label| self.schema.label(label).map(|l| l.count))
                    .min()
                    .unwrap_or(self.schema.node_count)
            })
            .min()
            .unwrap_or(self.schema.node_count)
    }

    /// Returns the scope after the projection.
    fn projection(&mut self, projection: &Projection, scope: &Scope) -> CypherResult<Scope> {
        for item in &projection.items {
            self.expr(&item.expr, scope)?;
        }
        let mut projected = Scope::default();
        if projection.star {
            projected = scope.clone();
        }
        for item in &projection.items {
            let binding = match &item.expr {
                Expr::Variable(name, _) => scope.vars.get(name).cloned().unwrap_or(Binding::Other),
                _ => Binding::Other,
            };
            projected
                .vars
                .insert(item.column_name().to_string(), binding);
        }
        // ORDER BY sees the projected names and, before aggregation, the old ones too.
        let mut order_scope = scope.clone();
        for (name, binding) in &projected.vars {
            order_scope.vars.insert(name.clone(), binding.clone());
        }
        for sort in &projection.order_by {
            self.expr(&sort.expr, &order_scope)?;
        }
        for bound in [&projection.skip, &projection.limit].into_iter().flatten() {
            self.expr(bound, &Scope::default())?;
        }
        Ok(projected)
    }

    fn expr(&mut self, expr: &Expr, scope: &Scope) -> CypherResult<()> {
        match expr {
            Expr::Literal(_) | Expr::Parameter(_) | Expr::CountStar => Ok(()),
            Expr::Variable(name, _) => {
                if scope.vars.contains_key(name) {
                    Ok(())
                } else {
                    let mut names: Vec<&str> = scope.vars.keys().map(String::as_str).collect();
                    names.sort_unstable();
                    let hint = if names.is_empty() {
                        "no variables are defined at this point".to_string()
                    } else {
                        let close = closest(name, names.iter().copied());
                        match close.first() {
                            Some(best) => format!(
                                "did you mean `{best}`? variables in scope: {}",
                                names.join(", ")
                            ),
                            None => format!("variables in scope: {}", names.join(", ")),
                        }
                    };
                    Err(CypherError::new(
                        ErrorKind::UnknownName,
                        format!("variable `{name}` is not defined"),
                    )
                    .with_hint(hint))
                }
            }
            Expr::Property(base, key, _) => {
                self.expr(base, scope)?;
                if let Expr::Variable(name, _) = base.as_ref() {
                    match scope.vars.get(name) {
                        Some(Binding::Node(labels)) => self.check_node_key(key, labels)?,
                        Some(Binding::Relationship) => self.check_relationship_key(key)?,
                        _ => {}
                    }
                }
                Ok(())
            }
            Expr::HasLabels(base, labels, _) => {
                self.expr(base, scope)?;
                for label in labels {
                    self.check_label(label)?;
                }
                Ok(())
            }
            Expr::Index(a, b) | Expr::Binary(_, a, b) => {
                self.expr(a, scope)?;
                self.expr(b, scope)
            }
            Expr::Slice(a, b, c) => {
                self.expr(a, scope)?;
                for bound in [b, c].into_iter().flatten() {
                    self.expr(bound, scope)?;
                }
                Ok(())
            }
            Expr::Unary(_, inner) | Expr::IsNull(inner, _) => self.expr(inner, scope),
            Expr::List(items) => items.iter().try_for_each(|item| self.expr(item, scope)),
            Expr::Map(entries) => entries
                .iter()
                .try_for_each(|(_, item)| self.expr(item, scope)),
            Expr::MapProjection(base, items) => {
                self.expr(base, scope)?;
                for item in items {
                    match item {
                        MapProjectionItem::Entry(_, value) => self.expr(value, scope)?,
                        MapProjectionItem::Variable(name) => {
                            self.expr(&Expr::Variable(name.clone(), Default::default()), scope)?
                        }
                        MapProjectionItem::Property(key) => {
                            if let Expr::Variable(name, _) = base.as_ref() {
                                if let Some(Binding::Node(labels)) = scope.vars.get(name) {
                                    self.check_node_key(key, labels)?;
                                }
                            }
                        }
                        MapProjectionItem::AllProperties => {}
                    }
                }
                Ok(())
            }
            Expr::Function(call) => {
                check_function(call)?;
                call.args.iter().try_for_each(|arg| self.expr(arg, scope))
            }
            Expr::Case(case) => {
                if let Some(subject) = &case.subject {
                    self.expr(subject, scope)?;
                }
                for (when, then) in &case.whens {
                    self.expr(when, scope)?;
                    self.expr(then, scope)?;
                }
                if let Some(otherwise) = &case.otherwise {
                    self.expr(otherwise, scope)?;
                }
                Ok(())
            }
            Expr::ListComprehension(comp) | Expr::Quantified(_, comp) => {
                self.expr(&comp.list, scope)?;
                let mut inner = scope.clone();
                inner.vars.insert(comp.variable.clone(), Binding::Other);
                if let Some(predicate) = &comp.predicate {
                    self.expr(predicate, &inner)?;
                }
                if let Some(map) = &comp.map {
                    self.expr(map, &inner)?;
                }
                Ok(())
            }
            Expr::Reduce(reduce) => {
                self.expr(&reduce.init, scope)?;
                self.expr(&reduce.list, scope)?;
                let mut inner = scope.clone();
                inner
                    .vars
                    .insert(reduce.accumulator.clone(), Binding::Other);
                inner.vars.insert(reduce.variable.clone(), Binding::Other);
                self.expr(&reduce.expr, &inner)
            }
            Expr::PatternPredicate(pattern) => {
                let mut inner = scope.clone();
                self.pattern(pattern, &mut inner)
            }
            Expr::PatternComprehension(comp) => {
                let mut inner = scope.clone();
                self.pattern(&comp.pattern, &mut inner)?;
                if let Some(where_clause) = &comp.where_clause {
                    self.expr(where_clause, &inner)?;
                }
                self.expr(&comp.map, &inner)
            }
            Expr::Subquery(_, subquery) => self.query(&subquery.query, scope, false),
        }
    }

    fn check_label(&self, label: &str) -> CypherResult<()> {
        if self.schema.label(label).is_some() {
            return Ok(());
        }
        if self.schema.labels.is_empty() {
            if self.schema.node_count == 0 {
                // Nothing is known about this graph's nodes: nothing to check against.
                return Ok(());
            }
            return Err(CypherError::new(
                ErrorKind::UnknownName,
                format!("label :{} does not exist", cypher_name(label)),
            )
            .with_hint(self.no_labels_hint()));
        }
        let names: Vec<&str> = self.schema.labels.iter().map(|l| l.name.as_str()).collect();
        let close = closest(label, names.iter().copied());
        let mut hint = match close.first() {
            Some(best) => format!("did you mean :{}?", cypher_name(best)),
            None => String::new(),
        };
        push_sentence(
            &mut hint,
            &format!("existing labels: {}", name_list(names.iter().copied(), ":")),
        );
        Err(CypherError::new(
            ErrorKind::UnknownName,
            format!("label :{} does not exist", cypher_name(label)),
        )
        .with_hint(hint))
    }

    /// What to match by on a graph whose nodes have no labels (a graph of triples): its
    /// most common relationship, or a node's name, with names taken from the graph.
    fn no_labels_hint(&self) -> String {
        let mut hint = "this graph has no node labels (loaded from triples): match by relationship or by name instead".to_owned();
        let Some(relation) = self.schema.relations.first() else {
            hint.push_str(", e.g. MATCH (s {name: '…'})-[r]->(o) RETURN type(r), o.name");
            return hint;
        };
        let rel_type = cypher_name(&relation.name);
        let head = relation
            .examples
            .iter()
            .find_map(|example| example.split_once(&format!(" -[{}]-> ", relation.name)))
            .map(|(head, _)| head.trim())
            .filter(|head| !head.is_empty())
            .unwrap_or("…");
        hint.push_str(&format!(
            ", e.g. MATCH (s)-[:{rel_type}]->(o) RETURN s.name, o.name LIMIT 10, or MATCH (s {{name: {}}})-[r]->(o) RETURN type(r), o.name",
            string_literal(head)
        ));
        hint
    }

    fn check_relation(&self, rel_type: &str) -> CypherResult<()> {
        if self.schema.relations.is_empty() || self.schema.relation(rel_type).is_some() {
            return Ok(());
        }
        let names: Vec<&str> = self
            .schema
            .relations
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        let close = closest(rel_type, names.iter().copied());
        let mut hint = String::new();
        if let Some(best) = close.first() {
            hint = format!("did you mean :{}?", cypher_name(best));
            if let Some(example) = self.schema.relation(best).and_then(relation_example) {
                hint.push(' ');
                hint.push_str(&example);
            }
        }
        let shapes: Vec<String> = self
            .schema
            .relations
            .iter()
            .map(|relation| {
                relation_example(relation)
                    .unwrap_or_else(|| format!("[:{}]", cypher_name(&relation.name)))
            })
            .collect();
        push_sentence(
            &mut hint,
            &format!("existing relationships: {}", shapes.join(", ")),
        );
        Err(CypherError::new(
            ErrorKind::UnknownName,
            format!("relationship :{} does not exist", cypher_name(rel_type)),
        )
        .with_hint(hint))
    }

    fn check_node_key(&self, key: &str, labels: &[String]) -> CypherResult<()> {
        // A schema without labels has no node keys: the graph's own list stands in.
        let graph_wide = self.all_node_keys.is_empty();
        if graph_wide && self.graph_keys.is_empty() {
            return Ok(());
        }
        let known: Vec<&LabelSchemaRef> = labels
            .iter()
            .filter_map(|label| self.schema.label(label))
            .collect();
        let candidates: Vec<&str> = if graph_wide {
            self.graph_keys.iter().map(String::as_str).collect()
        } else if known.is_empty() {
            self.all_node_keys.iter().map(String::as_str).collect()
        } else {
            known
                .iter()
                .flat_map(|label| label.property_keys.iter().map(String::as_str))
                .collect()
        };
        if candidates.contains(&key) || (known.is_empty() && (self.key_exists)(key)) {
            return Ok(());
        }
        if (self.key_exists)(key) && known.iter().any(|label| label.count > SAMPLED_LABEL_SIZE) {
            // The schema was sampled and the key exists somewhere: do not refuse.
            return Ok(());
        }
        let owner = if known.is_empty() {
            "any node".to_string()
        } else {
            name_list(known.iter().map(|label| label.name.as_str()), ":")
        };
        let close = closest(key, candidates.iter().copied());
        let mut hint = match close.first() {
            Some(best) => format!("did you mean .{}?", cypher_name(best)),
            None => String::new(),
        };
        let mut listed: Vec<&str> = candidates.clone();
        listed.sort_unstable();
        listed.dedup();
        push_sentence(
            &mut hint,
            &format!(
                "properties of {owner}: {}",
                name_list(listed.into_iter(), "")
            ),
        );
        Err(CypherError::new(
            ErrorKind::UnknownName,
            format!("property .{} does not exist on {owner}", cypher_name(key)),
        )
        .with_hint(hint))
    }

    fn check_relationship_key(&self, key: &str) -> CypherResult<()> {
        let keys = &self.schema.relationship_property_keys;
        let sampled = self
            .schema
            .relations
            .iter()
            .any(|relation| relation.count > SAMPLED_LABEL_SIZE);
        if self.schema.relations.is_empty()
            || keys.iter().any(|k| k == key)
            || (sampled && (self.key_exists)(key))
        {
            return Ok(());
        }
        let close = closest(key, keys.iter().map(String::as_str));
        let mut hint = match close.first() {
            Some(best) => format!("did you mean .{}?", cypher_name(best)),
            None => String::new(),
        };
        if keys.is_empty() {
            push_sentence(&mut hint, "relationships have no properties in this graph");
        } else {
            push_sentence(
                &mut hint,
                &format!(
                    "relationship properties: {}",
                    name_list(keys.iter().map(String::as_str), "")
                ),
            );
        }
        Err(CypherError::new(
            ErrorKind::UnknownName,
            format!("relationship property .{} does not exist", cypher_name(key)),
        )
        .with_hint(hint))
    }
}

/// Labels larger than this may have had their property keys sampled.
const SAMPLED_LABEL_SIZE: u64 = 10_000;

type LabelSchemaRef = kgmesh_schemas::graph::LabelSchema;

/// A relationship pattern's brackets as Cypher text, with `range` as its length
/// (`[r:KNOWS*1..3]`; properties left out).
fn rel_pattern_text(rel: &RelPattern, range: VarLength) -> String {
    let mut text = String::from("[");
    if let Some(variable) = &rel.variable {
        text.push_str(&cypher_name(variable));
    }
    if !rel.types.is_empty() {
        text.push(':');
        let types: Vec<String> = rel
            .types
            .iter()
            .map(|t| cypher_name(t).into_owned())
            .collect();
        text.push_str(&types.join("|"));
    }
    text.push('*');
    match (range.min, range.max) {
        (Some(min), Some(max)) if min == max => text.push_str(&min.to_string()),
        (min, max) => {
            if let Some(min) = min {
                text.push_str(&min.to_string());
            }
            if min.is_some() || max.is_some() {
                text.push_str("..");
            }
            if let Some(max) = max {
                text.push_str(&max.to_string());
            }
        }
    }
    text.push(']');
    text
}

fn push_sentence(hint: &mut String, sentence: &str) {
    if !hint.is_empty() {
        hint.push_str("; ");
    }
    hint.push_str(sentence);
}

/// `(:Head)-[:TYPE]->(:Tail)` for the relation's most frequent endpoints, as Cypher text
/// (an endpoint without a label is `()`).
fn relation_example(relation: &kgmesh_schemas::graph::RelationSchema) -> Option<String> {
    let node = |label: &str| {
        if label.is_empty() {
            "()".to_owned()
        } else {
            format!("(:{})", cypher_name(label))
        }
    };
    relation.endpoints.first().map(|(head, tail, _)| {
        format!(
            "{}-[:{}]->{}",
            node(head),
            cypher_name(&relation.name),
            node(tail)
        )
    })
}

/// Names as Cypher text (back-quoted where they are not plain identifiers), each after
/// `prefix`, comma-separated.
fn name_list<'n>(names: impl Iterator<Item = &'n str>, prefix: &str) -> String {
    names
        .map(|name| format!("{prefix}{}", cypher_name(name)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `text` as a single-quoted Cypher string literal.
fn string_literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn forbidden_error(clause: &ForbiddenClause) -> CypherError {
    let message = match (clause.kind, &clause.detail) {
        (ForbiddenKind::Call, Some(name)) => {
            format!("CALL {name} is refused: procedure calls and CALL subqueries are not allowed")
        }
        (ForbiddenKind::Call, None) => {
            "CALL is refused: procedure calls are not allowed".to_string()
        }
        (ForbiddenKind::Admin, _) | (ForbiddenKind::Drop, _) | (ForbiddenKind::Use, _) => {
            format!(
                "{} is refused: administration commands are not allowed",
                clause.kind.clause_name()
            )
        }
        (kind, _) => format!("{} is refused: the graph is read-only", kind.clause_name()),
    };
    CypherError::new(ErrorKind::Forbidden, message)
        .with_hint("only read queries are run: MATCH / OPTIONAL MATCH / WITH / UNWIND / RETURN")
}

/// Functions the executor implements (aggregates included): the [`AGGREGATES`], then
/// the others.
pub const KNOWN_FUNCTIONS: &[&str] =
    &concat::<{ AGGREGATES.len() + SCALAR_FUNCTIONS.len() }>(AGGREGATES, SCALAR_FUNCTIONS);

/// `first` followed by `second`, as an array of `N`, their total length.
const fn concat<const N: usize>(
    first: &[&'static str],
    second: &[&'static str],
) -> [&'static str; N] {
    let mut all = [""; N];
    let mut index = 0;
    while index < first.len() {
        all[index] = first[index];
        index += 1;
    }
    while index < N {
        all[index] = second[index - first.len()];
        index += 1;
    }
    all
}

/// The functions the executor implements besides the aggregates.
const SCALAR_FUNCTIONS: &[&str] = &[
    "tolower",
    "toupper",
    "lower",
    "upper",
    "trim",
    "ltrim",
    "rtrim",
    "size",
    "length",
    "coalesce",
    "tostring",
    "tointeger",
    "toint",
    "tofloat",
    "toboolean",
    "tostringornull",
    "tointegerornull",
    "tofloatornull",
    "id",
    "elementid",
    "labels",
    "type",
    "round",
    "abs",
    "ceil",
    "floor",
    "sign",
    "sqrt",
    "exp",
    "log",
    "log10",
    "rand",
    "nodes",
    "relationships",
    "head",
    "last",
    "tail",
    "range",
    "reverse",
    "keys",
    "properties",
    "substring",
    "left",
    "right",
    "replace",
    "split",
    "startnode",
    "endnode",
    "exists",
    "isempty",
    "date",
    "datetime",
    "localdatetime",
    "duration",
    "duration.between",
    "duration.indays",
    "duration.inmonths",
    "duration.inseconds",
    "timestamp",
    "pi",
    "e",
    "valuetype",
];

fn check_function(call: &FunctionCall) -> CypherResult<()> {
    if KNOWN_FUNCTIONS.contains(&call.name.as_str()) {
        return Ok(());
    }
    if call.name.contains('.') {
        return Err(CypherError::new(
            ErrorKind::Forbidden,
            format!(
                "function {}() is refused: only built-in functions may be called",
                call.name
            ),
        )
        .with_hint(
            "plugin functions (apoc.*, gds.*, db.*) are not available; use built-in functions",
        ));
    }
    let close = closest(&call.name, KNOWN_FUNCTIONS.iter().copied());
    let hint = match close.first() {
        Some(best) => format!("did you mean {best}()?"),
        None => "see the openCypher built-in functions".to_string(),
    };
    Err(CypherError::new(
        ErrorKind::UnknownName,
        format!("unknown function {}()", call.name),
    )
    .with_hint(hint))
}

fn projection_columns(projection: &Projection, scope: &Scope) -> Vec<String> {
    let mut columns = Vec::new();
    if projection.star {
        let mut names: Vec<String> = scope.vars.keys().cloned().collect();
        names.sort();
        columns.extend(names);
    }
    columns.extend(
        projection
            .items
            .iter()
            .map(|item| item.column_name().to_string()),
    );
    columns
}

fn pattern_variables(pattern: &PatternPart) -> Vec<String> {
    let mut names = Vec::new();
    names.extend(pattern.path_variable.clone());
    names.extend(pattern.start.variable.clone());
    for (rel, node) in &pattern.chain {
        names.extend(rel.variable.clone());
        names.extend(node.variable.clone());
    }
    names
}

/// The names closest to `wanted`: a case-insensitive match first, then by edit distance
/// (close enough to be a plausible typo), best first, at most three. A name that is an
/// IRI (`http://example.org/operatedBy`) is also compared by its local name, the part a
/// user types.
pub fn closest<'n>(wanted: &str, names: impl Iterator<Item = &'n str>) -> Vec<&'n str> {
    let wanted_lower = wanted.to_lowercase();
    let score = |lower: &str| -> Option<usize> {
        if lower == wanted_lower {
            return Some(0);
        }
        let distance = edit_distance(&wanted_lower, lower) + 1;
        let allowed = (wanted_lower.chars().count().max(lower.chars().count()) / 3).max(1) + 1;
        let contains = lower.contains(&wanted_lower) || wanted_lower.contains(lower);
        if distance <= allowed {
            Some(distance)
        } else if contains && wanted_lower.len() >= 3 && lower.len() >= 3 {
            Some(allowed + 1)
        } else {
            None
        }
    };
    let mut scored: Vec<(usize, &'n str)> = names
        .filter_map(|name| {
            let lower = name.to_lowercase();
            let whole = score(&lower);
            let local = local_name(&lower)
                .filter(|local| !local.is_empty() && local.len() < lower.len())
                .and_then(score);
            match (whole, local) {
                (Some(a), Some(b)) => Some((a.min(b), name)),
                (a, b) => a.or(b).map(|s| (s, name)),
            }
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, name)| name).collect()
}

/// The local name of an IRI: what follows its last `#` or `/` (`None` for other names).
fn local_name(name: &str) -> Option<&str> {
    if !name.contains("://") && !name.starts_with("urn:") {
        return None;
    }
    name.rsplit(['#', '/']).next()
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}
