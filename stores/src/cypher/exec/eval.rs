//! Expression evaluation with openCypher's null propagation, integer/float arithmetic
//! and the built-in functions in common use.

use std::cmp::Ordering;

use super::pattern::{new_variables, Matcher};
use super::value::{as_f64, compare, equals, float_to_string, settle, Val};
use super::{run_query, Ctx, Table};
use crate::cypher::ast::*;
use crate::cypher::error::{CypherError, CypherResult, ErrorKind};
use kgmesh_schemas::graph::Value;

/// Names visible to an expression: a row of a table, plus nested scopes (comprehension
/// variables, precomputed aggregates).
pub struct Env<'a> {
    pub names: &'a [String],
    pub values: &'a [Val],
    pub parent: Option<&'a Env<'a>>,
}

impl<'a> Env<'a> {
    pub fn new(names: &'a [String], values: &'a [Val]) -> Self {
        Self {
            names,
            values,
            parent: None,
        }
    }

    pub fn child(&'a self, names: &'a [String], values: &'a [Val]) -> Env<'a> {
        Env {
            names,
            values,
            parent: Some(self),
        }
    }

    pub fn lookup(&self, name: &str) -> Option<&Val> {
        if let Some(index) = self.names.iter().rposition(|candidate| candidate == name) {
            return self.values.get(index);
        }
        self.parent.and_then(|parent| parent.lookup(name))
    }

    /// Every visible name with its value, innermost binding winning.
    pub fn flatten(&self) -> (Vec<String>, Vec<Val>) {
        let (mut names, mut values) = match self.parent {
            Some(parent) => parent.flatten(),
            None => (Vec::new(), Vec::new()),
        };
        for (name, value) in self.names.iter().zip(self.values) {
            match names.iter().position(|existing| existing == name) {
                Some(index) => values[index] = value.clone(),
                None => {
                    names.push(name.clone());
                    values.push(value.clone());
                }
            }
        }
        (names, values)
    }
}

fn type_error(message: String) -> CypherError {
    CypherError::runtime(message)
}

fn truth(value: &Val, what: &str) -> CypherResult<Option<bool>> {
    match value {
        Val::Null => Ok(None),
        Val::Bool(b) => Ok(Some(*b)),
        other => Err(expects(what, "a boolean", other)),
    }
}

/// The error for `got` where `what` expects `expected` ("a number").
fn expects(what: &str, expected: &str, got: &Val) -> CypherError {
    type_error(format!(
        "{what} expects {expected}, got a {}",
        got.type_name()
    ))
}

fn from_truth(value: Option<bool>) -> Val {
    value.map(Val::Bool).unwrap_or(Val::Null)
}

/// The value of variable `name`.
fn variable(env: &Env, name: &str) -> CypherResult<Val> {
    env.lookup(name).cloned().ok_or_else(|| {
        CypherError::new(
            ErrorKind::UnknownName,
            format!("variable `{name}` is not defined"),
        )
    })
}

/// The items of the list `expr` gives, `None` when it is null; `what` names the list's
/// user in the error for anything else.
fn list_of(ctx: &Ctx, expr: &Expr, env: &Env, what: &str) -> CypherResult<Option<Vec<Val>>> {
    match eval(ctx, expr, env)? {
        Val::Null => Ok(None),
        Val::List(items) => Ok(Some(items)),
        other => Err(expects(what, "a list", &other)),
    }
}

/// A quantifier's verdict over items whose predicates were true `trues` times, null
/// `nulls` times and false `falses` times.
fn quantified(quantifier: &Quantifier, trues: usize, nulls: usize, falses: usize) -> Option<bool> {
    // Whether the counts settle it, what they settle it to, and the answer when they do
    // not and no predicate was null.
    let (settled, settled_to, otherwise) = match quantifier {
        Quantifier::All => (falses > 0, false, true),
        Quantifier::Any => (trues > 0, true, false),
        Quantifier::None => (trues > 0, false, true),
        Quantifier::Single => (trues > 1, false, trues == 1),
    };
    if settled {
        Some(settled_to)
    } else if nulls > 0 {
        None
    } else {
        Some(otherwise)
    }
}

pub fn eval(ctx: &Ctx, expr: &Expr, env: &Env) -> CypherResult<Val> {
    match expr {
        Expr::Literal(literal) => Ok(match literal {
            Literal::Null => Val::Null,
            Literal::Bool(b) => Val::Bool(*b),
            Literal::Int(i) => Val::Int(*i),
            Literal::Float(f) => Val::Float(*f),
            Literal::String(s) => Val::Str(s.clone()),
        }),
        Expr::Parameter(name) => ctx.params.get(name).cloned().ok_or_else(|| {
            CypherError::runtime(format!("parameter ${name} is missing"))
                .with_hint("pass it in the query parameters")
        }),
        Expr::Variable(name, _) => variable(env, name),
        Expr::Property(base, key, _) => {
            let base = eval(ctx, base, env)?;
            property(ctx, &base, key)
        }
        Expr::Index(base, index) => {
            let base = eval(ctx, base, env)?;
            let index = eval(ctx, index, env)?;
            match (&base, &index) {
                (Val::Null, _) | (_, Val::Null) => Ok(Val::Null),
                (Val::List(items), Val::Int(i)) => {
                    let len = items.len() as i64;
                    let position = if *i < 0 { len + i } else { *i };
                    Ok(if position >= 0 && position < len {
                        items[position as usize].clone()
                    } else {
                        Val::Null
                    })
                }
                (Val::Map(_) | Val::Node(_) | Val::Rel(_), Val::Str(key)) => {
                    property(ctx, &base, key)
                }
                _ => Err(type_error(format!(
                    "cannot index a {} with a {}",
                    base.type_name(),
                    index.type_name()
                ))),
            }
        }
        Expr::Slice(base, from, to) => {
            let base = eval(ctx, base, env)?;
            let from = match from {
                Some(from) => eval(ctx, from, env)?,
                None => Val::Int(0),
            };
            let to = match to {
                Some(to) => eval(ctx, to, env)?,
                None => Val::Int(i64::MAX),
            };
            match (&base, &from, &to) {
                (Val::Null, _, _) | (_, Val::Null, _) | (_, _, Val::Null) => Ok(Val::Null),
                (Val::List(items), Val::Int(from), Val::Int(to)) => {
                    let len = items.len() as i64;
                    let clamp = |i: i64| -> usize {
                        let position = if i < 0 { len + i } else { i };
                        position.clamp(0, len) as usize
                    };
                    let (from, to) = (clamp(*from), clamp(*to));
                    Ok(Val::List(if from < to {
                        items[from..to].to_vec()
                    } else {
                        Vec::new()
                    }))
                }
                _ => Err(type_error(
                    "list slicing needs a list and integer bounds".into(),
                )),
            }
        }
        Expr::List(items) => Ok(Val::List(
            items
                .iter()
                .map(|item| eval(ctx, item, env))
                .collect::<CypherResult<_>>()?,
        )),
        Expr::Map(entries) => Ok(Val::Map(
            entries
                .iter()
                .map(|(key, value)| Ok((key.clone(), eval(ctx, value, env)?)))
                .collect::<CypherResult<_>>()?,
        )),
        Expr::MapProjection(base, items) => {
            let base_value = eval(ctx, base, env)?;
            if base_value == Val::Null {
                return Ok(Val::Null);
            }
            let mut entries: Vec<(String, Val)> = Vec::new();
            let put = |entries: &mut Vec<(String, Val)>, key: String, value: Val| match entries
                .iter_mut()
                .find(|(existing, _)| *existing == key)
            {
                Some(entry) => entry.1 = value,
                None => entries.push((key, value)),
            };
            for item in items {
                match item {
                    MapProjectionItem::Property(key) => {
                        let value = property(ctx, &base_value, key)?;
                        put(&mut entries, key.clone(), value);
                    }
                    MapProjectionItem::AllProperties => {
                        if let Val::Map(all) = properties_of(ctx, &base_value)? {
                            for (key, value) in all {
                                put(&mut entries, key, value);
                            }
                        }
                    }
                    MapProjectionItem::Entry(key, expr) => {
                        let value = eval(ctx, expr, env)?;
                        put(&mut entries, key.clone(), value);
                    }
                    MapProjectionItem::Variable(name) => {
                        let value = variable(env, name)?;
                        put(&mut entries, name.clone(), value);
                    }
                }
            }
            Ok(Val::Map(entries))
        }
        Expr::Unary(op, inner) => {
            let value = eval(ctx, inner, env)?;
            match op {
                UnaryOp::Not => Ok(from_truth(truth(&value, "NOT")?.map(|b| !b))),
                UnaryOp::Pos => match value {
                    Val::Null | Val::Int(_) | Val::Float(_) => Ok(value),
                    other => Err(expects("unary +", "a number", &other)),
                },
                UnaryOp::Neg => match value {
                    Val::Null => Ok(Val::Null),
                    Val::Int(i) => i
                        .checked_neg()
                        .map(Val::Int)
                        .ok_or_else(|| CypherError::runtime("integer overflow")),
                    Val::Float(f) => Ok(Val::Float(-f)),
                    other => Err(expects("unary -", "a number", &other)),
                },
            }
        }
        Expr::Binary(op, left, right) => binary(ctx, *op, left, right, env),
        Expr::IsNull(inner, negated) => {
            let value = eval(ctx, inner, env)?;
            Ok(Val::Bool((value == Val::Null) != *negated))
        }
        Expr::HasLabels(inner, labels, _) => {
            let value = eval(ctx, inner, env)?;
            match value {
                Val::Null => Ok(Val::Null),
                Val::Node(node) => Ok(Val::Bool(labels.iter().all(|label| {
                    ctx.graph
                        .label_id(label)
                        .is_some_and(|id| ctx.graph.has_label(node, id))
                }))),
                Val::Rel(edge) => Ok(Val::Bool(
                    labels.len() == 1 && ctx.graph.rel_type_name(edge.rel_type) == labels[0],
                )),
                other => Err(type_error(format!("label test on a {}", other.type_name()))),
            }
        }
        Expr::Function(call) => function(ctx, call, env),
        Expr::CountStar => Err(CypherError::runtime(
            "count(*) is only allowed in WITH or RETURN",
        )),
        Expr::Case(case) => {
            let subject = match &case.subject {
                Some(subject) => Some(eval(ctx, subject, env)?),
                None => None,
            };
            for (when, then) in &case.whens {
                let hit = match &subject {
                    Some(subject) => equals(subject, &eval(ctx, when, env)?) == Some(true),
                    None => eval(ctx, when, env)? == Val::Bool(true),
                };
                if hit {
                    return eval(ctx, then, env);
                }
            }
            match &case.otherwise {
                Some(otherwise) => eval(ctx, otherwise, env),
                None => Ok(Val::Null),
            }
        }
        Expr::ListComprehension(comp) => {
            let Some(list) = list_of(ctx, &comp.list, env, "IN")? else {
                return Ok(Val::Null);
            };
            let names = [comp.variable.clone()];
            let mut out = Vec::new();
            for item in list {
                ctx.tick(1)?;
                let values = [item];
                let inner = env.child(&names, &values);
                if let Some(predicate) = &comp.predicate {
                    if eval(ctx, predicate, &inner)? != Val::Bool(true) {
                        continue;
                    }
                }
                out.push(match &comp.map {
                    Some(map) => eval(ctx, map, &inner)?,
                    None => values[0].clone(),
                });
            }
            Ok(Val::List(out))
        }
        Expr::Quantified(quantifier, comp) => {
            let Some(list) = list_of(ctx, &comp.list, env, "IN")? else {
                return Ok(Val::Null);
            };
            let names = [comp.variable.clone()];
            let (mut trues, mut nulls) = (0usize, 0usize);
            let total = list.len();
            for item in list {
                ctx.tick(1)?;
                let values = [item];
                let inner = env.child(&names, &values);
                let verdict = match &comp.predicate {
                    Some(predicate) => {
                        truth(&eval(ctx, predicate, &inner)?, "a quantifier's WHERE")?
                    }
                    None => Some(true),
                };
                match verdict {
                    Some(true) => trues += 1,
                    None => nulls += 1,
                    Some(false) => {}
                }
            }
            let falses = total - trues - nulls;
            Ok(from_truth(quantified(quantifier, trues, nulls, falses)))
        }
        Expr::Reduce(reduce) => {
            let mut accumulator = eval(ctx, &reduce.init, env)?;
            let Some(list) = list_of(ctx, &reduce.list, env, "reduce")? else {
                return Ok(Val::Null);
            };
            let names = [reduce.accumulator.clone(), reduce.variable.clone()];
            for item in list {
                ctx.tick(1)?;
                let values = [accumulator, item];
                let inner = env.child(&names, &values);
                accumulator = eval(ctx, &reduce.expr, &inner)?;
            }
            Ok(accumulator)
        }
        Expr::PatternPredicate(pattern) => {
            let found = pattern_exists(ctx, std::slice::from_ref(pattern.as_ref()), None, env)?;
            Ok(Val::Bool(found))
        }
        Expr::PatternComprehension(comp) => {
            let patterns = std::slice::from_ref(&comp.pattern);
            let mut out = Vec::new();
            each_match(ctx, patterns, comp.where_clause.as_ref(), env, |inner| {
                out.push(eval(ctx, &comp.map, inner)?);
                Ok(true)
            })?;
            Ok(Val::List(out))
        }
        Expr::Subquery(kind, subquery) => {
            let (columns, row) = env.flatten();
            let input = Table {
                columns,
                rows: vec![row],
            };
            let single_match = single_match_body(&subquery.query);
            if let (SubqueryKind::Exists, Some(clause)) = (kind, single_match) {
                // The common shape: stop at the first match.
                return Ok(Val::Bool(pattern_exists(
                    ctx,
                    &clause.patterns,
                    clause.where_clause.as_ref(),
                    env,
                )?));
            }
            let result = run_query(ctx, &subquery.query, input, false)?;
            Ok(match kind {
                SubqueryKind::Exists => Val::Bool(!result.rows.is_empty()),
                SubqueryKind::Count => Val::Int(result.rows.len() as i64),
            })
        }
    }
}

fn single_match_body(query: &Query) -> Option<&MatchClause> {
    match query.parts.as_slice() {
        [single] => match single.clauses.as_slice() {
            [Clause::Match(clause)] if !clause.optional => Some(clause),
            _ => None,
        },
        _ => None,
    }
}

/// Whether the patterns match at least once from the variables in `env`.
fn pattern_exists(
    ctx: &Ctx,
    patterns: &[PatternPart],
    where_clause: Option<&Expr>,
    env: &Env,
) -> CypherResult<bool> {
    let mut found = false;
    each_match(ctx, patterns, where_clause, env, |_| {
        found = true;
        Ok(false)
    })?;
    Ok(found)
}

/// Calls `visit` with the variables of each match of the patterns from the variables in
/// `env` that passes `where_clause`; `visit` returns `false` to stop early.
fn each_match(
    ctx: &Ctx,
    patterns: &[PatternPart],
    where_clause: Option<&Expr>,
    env: &Env,
    mut visit: impl FnMut(&Env) -> CypherResult<bool>,
) -> CypherResult<()> {
    let (columns, row) = env.flatten();
    let mut all_columns = columns.clone();
    all_columns.extend(new_variables(patterns, &columns));
    let mut matcher = Matcher::new(ctx, patterns, &all_columns, env)?;
    let width = all_columns.len();
    matcher.run(ctx, &row, width, &mut |matched| {
        let inner = Env::new(&all_columns, matched);
        if let Some(where_clause) = where_clause {
            if eval(ctx, where_clause, &inner)? != Val::Bool(true) {
                return Ok(true);
            }
        }
        visit(&inner)
    })
}

pub fn property(ctx: &Ctx, base: &Val, key: &str) -> CypherResult<Val> {
    match base {
        Val::Null => Ok(Val::Null),
        Val::Node(node) => Ok(stored(ctx, ctx.graph.node_property(*node, key))),
        Val::Rel(edge) => Ok(stored(ctx, ctx.graph.edge_property(edge, key))),
        Val::Map(entries) => Ok(entries
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.clone())
            .unwrap_or(Val::Null)),
        other => Err(type_error(format!(
            "cannot read property `{key}` of a {}",
            other.type_name()
        ))),
    }
}

/// A property read from the graph; null when it is missing.
pub fn stored(ctx: &Ctx, value: Option<Value>) -> Val {
    value
        .map(|value| Val::from_value(&value, ctx.graph))
        .unwrap_or(Val::Null)
}

fn properties_of(ctx: &Ctx, value: &Val) -> CypherResult<Val> {
    let graph = ctx.graph;
    let convert = |props: Vec<(String, Value)>| {
        let mut entries: Vec<(String, Val)> = props
            .into_iter()
            .map(|(key, value)| (key, Val::from_value(&value, graph)))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        Val::Map(entries)
    };
    match value {
        Val::Null => Ok(Val::Null),
        Val::Node(node) => Ok(convert(graph.node_properties(*node))),
        Val::Rel(edge) => Ok(convert(graph.edge_properties(edge))),
        Val::Map(_) => Ok(value.clone()),
        other => Err(type_error(format!(
            "properties() of a {}",
            other.type_name()
        ))),
    }
}

fn binary(ctx: &Ctx, op: BinaryOp, left: &Expr, right: &Expr, env: &Env) -> CypherResult<Val> {
    // AND / OR short-circuit where the answer is already known, as three-valued logic allows.
    match op {
        BinaryOp::And => return short_circuit(ctx, left, right, env, "AND", false),
        BinaryOp::Or => return short_circuit(ctx, left, right, env, "OR", true),
        BinaryOp::Xor => {
            let a = truth(&eval(ctx, left, env)?, "XOR")?;
            let b = truth(&eval(ctx, right, env)?, "XOR")?;
            return Ok(from_truth(match (a, b) {
                (Some(a), Some(b)) => Some(a != b),
                _ => None,
            }));
        }
        _ => {}
    }
    let a = eval(ctx, left, env)?;
    let b = eval(ctx, right, env)?;
    apply_binary(ctx, op, a, b)
}

/// AND (`decisive` false) or OR (`decisive` true): either side being `decisive` settles
/// it, the right side unread when the left one does; both the other way round give the
/// other answer; anything else is null.
fn short_circuit(
    ctx: &Ctx,
    left: &Expr,
    right: &Expr,
    env: &Env,
    name: &str,
    decisive: bool,
) -> CypherResult<Val> {
    let a = truth(&eval(ctx, left, env)?, name)?;
    if a == Some(decisive) {
        return Ok(Val::Bool(decisive));
    }
    let b = truth(&eval(ctx, right, env)?, name)?;
    Ok(from_truth(match (a, b) {
        (_, Some(b)) if b == decisive => Some(decisive),
        (Some(a), Some(b)) if a != decisive && b != decisive => Some(!decisive),
        _ => None,
    }))
}

pub fn apply_binary(ctx: &Ctx, op: BinaryOp, a: Val, b: Val) -> CypherResult<Val> {
    match op {
        BinaryOp::Eq => Ok(from_truth(equals(&a, &b))),
        BinaryOp::Neq => Ok(from_truth(equals(&a, &b).map(|eq| !eq))),
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
            if a == Val::Null || b == Val::Null {
                return Ok(Val::Null);
            }
            Ok(from_truth(compare(&a, &b).map(|ordering| match op {
                BinaryOp::Lt => ordering == Ordering::Less,
                BinaryOp::Le => ordering != Ordering::Greater,
                BinaryOp::Gt => ordering == Ordering::Greater,
                _ => ordering != Ordering::Less,
            })))
        }
        BinaryOp::In => match b {
            Val::Null => Ok(Val::Null),
            Val::List(items) => Ok(from_truth(settle(
                items.iter().map(|item| equals(&a, item)),
                true,
            ))),
            other => Err(expects("IN", "a list on its right", &other)),
        },
        BinaryOp::StartsWith | BinaryOp::EndsWith | BinaryOp::Contains => match (&a, &b) {
            (Val::Str(s), Val::Str(t)) => Ok(Val::Bool(match op {
                BinaryOp::StartsWith => s.starts_with(t.as_str()),
                BinaryOp::EndsWith => s.ends_with(t.as_str()),
                _ => s.contains(t.as_str()),
            })),
            _ => Ok(Val::Null),
        },
        BinaryOp::RegexMatch => match (&a, &b) {
            (Val::Str(s), Val::Str(pattern)) => Ok(Val::Bool(ctx.regex_full_match(pattern, s)?)),
            _ => Ok(Val::Null),
        },
        BinaryOp::Add => {
            // Concatenation can double a value per step (`reduce(s = 'x', i IN … | s + s)`):
            // charge for the size of what it builds.
            let size = |value: &Val| match value {
                Val::Str(s) => s.len() as u64 / 16,
                Val::List(items) => items.len() as u64,
                _ => 0,
            };
            ctx.tick(size(&a) + size(&b))?;
            add(a, b)
        }
        BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div | BinaryOp::Mod | BinaryOp::Pow => {
            arithmetic(op, a, b)
        }
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => {
            Err(CypherError::runtime("boolean operator out of place"))
        }
    }
}

fn add(a: Val, b: Val) -> CypherResult<Val> {
    match (a, b) {
        (Val::Null, _) | (_, Val::Null) => Ok(Val::Null),
        (Val::List(mut x), Val::List(y)) => {
            x.extend(y);
            Ok(Val::List(x))
        }
        (Val::List(mut x), y) => {
            x.push(y);
            Ok(Val::List(x))
        }
        (x, Val::List(mut y)) => {
            y.insert(0, x);
            Ok(Val::List(y))
        }
        (Val::Str(x), Val::Str(y)) => Ok(Val::Str(x + &y)),
        (Val::Str(x), y @ (Val::Int(_) | Val::Float(_) | Val::Bool(_))) => {
            Ok(Val::Str(x + &to_string(&y)))
        }
        (x @ (Val::Int(_) | Val::Float(_) | Val::Bool(_)), Val::Str(y)) => {
            Ok(Val::Str(to_string(&x) + &y))
        }
        (a, b) => arithmetic(BinaryOp::Add, a, b),
    }
}

fn arithmetic(op: BinaryOp, a: Val, b: Val) -> CypherResult<Val> {
    match (&a, &b) {
        (Val::Null, _) | (_, Val::Null) => Ok(Val::Null),
        (Val::Int(x), Val::Int(y)) => {
            let (x, y) = (*x, *y);
            let result = match op {
                BinaryOp::Add => x.checked_add(y),
                BinaryOp::Sub => x.checked_sub(y),
                BinaryOp::Mul => x.checked_mul(y),
                BinaryOp::Div => {
                    if y == 0 {
                        return Err(CypherError::runtime("division by zero"));
                    }
                    x.checked_div(y)
                }
                BinaryOp::Mod => {
                    if y == 0 {
                        return Err(CypherError::runtime("division by zero"));
                    }
                    x.checked_rem(y)
                }
                _ => return Ok(Val::Float((x as f64).powf(y as f64))),
            };
            result
                .map(Val::Int)
                .ok_or_else(|| CypherError::runtime("integer overflow"))
        }
        (Val::Int(_) | Val::Float(_), Val::Int(_) | Val::Float(_)) => {
            let (x, y) = (as_f64(&a), as_f64(&b));
            Ok(Val::Float(match op {
                BinaryOp::Add => x + y,
                BinaryOp::Sub => x - y,
                BinaryOp::Mul => x * y,
                BinaryOp::Div => x / y,
                BinaryOp::Mod => x % y,
                _ => x.powf(y),
            }))
        }
        _ => Err(type_error(format!(
            "cannot apply {} to a {} and a {}",
            op_symbol(op),
            a.type_name(),
            b.type_name()
        ))),
    }
}

fn op_symbol(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "+",
        BinaryOp::Sub => "-",
        BinaryOp::Mul => "*",
        BinaryOp::Div => "/",
        BinaryOp::Mod => "%",
        BinaryOp::Pow => "^",
        _ => "an operator",
    }
}

pub fn to_string(value: &Val) -> String {
    match value {
        Val::Null => "null".into(),
        Val::Bool(b) => b.to_string(),
        Val::Int(i) => i.to_string(),
        Val::Float(f) => float_to_string(*f),
        Val::Str(s) => s.clone(),
        Val::List(items) => format!(
            "[{}]",
            items.iter().map(to_string).collect::<Vec<_>>().join(", ")
        ),
        Val::Map(entries) => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(key, value)| format!("{key}: {}", to_string(value)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Val::Node(node) => format!("node({node})"),
        Val::Rel(edge) => format!("relationship({})", edge.id),
        Val::Path(nodes, _) => format!("path(length {})", nodes.len().saturating_sub(1)),
    }
}

fn arity(call: &FunctionCall, min: usize, max: usize) -> CypherResult<()> {
    if call.args.len() < min || call.args.len() > max {
        let expected = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(CypherError::new(
            ErrorKind::Syntax,
            format!(
                "{}() takes {expected} argument(s), got {}",
                call.name,
                call.args.len()
            ),
        ));
    }
    Ok(())
}

fn string_arg(value: &Val, function: &str) -> CypherResult<Option<String>> {
    match value {
        Val::Null => Ok(None),
        Val::Str(s) => Ok(Some(s.clone())),
        other => Err(expects(&format!("{function}()"), "a string", other)),
    }
}

fn int_arg(value: &Val, function: &str) -> CypherResult<Option<i64>> {
    match value {
        Val::Null => Ok(None),
        Val::Int(i) => Ok(Some(*i)),
        Val::Float(f) if f.fract() == 0.0 => Ok(Some(*f as i64)),
        other => Err(expects(&format!("{function}()"), "an integer", other)),
    }
}

fn number_arg(value: &Val, function: &str) -> CypherResult<Option<f64>> {
    match value {
        Val::Null => Ok(None),
        Val::Int(i) => Ok(Some(*i as f64)),
        Val::Float(f) => Ok(Some(*f)),
        other => Err(expects(&format!("{function}()"), "a number", other)),
    }
}

/// Java's `Math.round` (half up), which `round()` follows.
fn round_half_up(value: f64) -> f64 {
    (value + 0.5).floor()
}

fn function(ctx: &Ctx, call: &FunctionCall, env: &Env) -> CypherResult<Val> {
    let name = call.name.as_str();
    if super::AGGREGATES.contains(&name) {
        return Err(CypherError::runtime(format!(
            "aggregate {name}() is only allowed in WITH or RETURN"
        )));
    }
    if name == "exists" {
        arity(call, 1, 1)?;
        // `exists(n.prop)` is the old spelling of `n.prop IS NOT NULL`.
        return match &call.args[0] {
            Expr::PatternPredicate(_) => eval(ctx, &call.args[0], env),
            arg => Ok(Val::Bool(eval(ctx, arg, env)? != Val::Null)),
        };
    }
    if name == "coalesce" {
        for arg in &call.args {
            let value = eval(ctx, arg, env)?;
            if value != Val::Null {
                return Ok(value);
            }
        }
        return Ok(Val::Null);
    }
    let args: Vec<Val> = call
        .args
        .iter()
        .map(|arg| eval(ctx, arg, env))
        .collect::<CypherResult<_>>()?;
    let graph = ctx.graph;
    let first = args.first().cloned().unwrap_or(Val::Null);
    match name {
        "tolower" | "lower" | "toupper" | "upper" | "trim" | "ltrim" | "rtrim" | "reverse" if !matches!(first, Val::List(_)) => {
            arity(call, 1, 1)?;
            let Some(s) = string_arg(&first, name)? else {
                return Ok(Val::Null);
            };
            Ok(Val::Str(match name {
                "tolower" | "lower" => s.to_lowercase(),
                "toupper" | "upper" => s.to_uppercase(),
                "trim" => s.trim().to_string(),
                "ltrim" => s.trim_start().to_string(),
                "rtrim" => s.trim_end().to_string(),
                _ => s.chars().rev().collect(),
            }))
        }
        "reverse" => {
            let Val::List(mut items) = first else {
                return Ok(Val::Null);
            };
            items.reverse();
            Ok(Val::List(items))
        }
        "size" | "length" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Str(s) => Ok(Val::Int(s.chars().count() as i64)),
                Val::List(items) => Ok(Val::Int(items.len() as i64)),
                Val::Map(entries) => Ok(Val::Int(entries.len() as i64)),
                Val::Path(_, edges) => Ok(Val::Int(edges.len() as i64)),
                other => Err(type_error(format!("{name}() of a {}", other.type_name()))),
            }
        }
        "tostring" | "tostringornull" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Str(_) | Val::Int(_) | Val::Float(_) | Val::Bool(_) => Ok(Val::Str(to_string(&first))),
                other if name == "tostring" => Err(type_error(format!("toString() of a {}", other.type_name()))),
                _ => Ok(Val::Null),
            }
        }
        "tointeger" | "toint" | "tointegerornull" => {
            arity(call, 1, 1)?;
            Ok(match first {
                Val::Int(i) => Val::Int(i),
                Val::Float(f) if f.is_finite() => Val::Int(f.trunc() as i64),
                Val::Bool(b) => Val::Int(i64::from(b)),
                Val::Str(s) => {
                    let trimmed = s.trim();
                    match trimmed.parse::<i64>() {
                        Ok(i) => Val::Int(i),
                        Err(_) => trimmed
                            .parse::<f64>()
                            .ok()
                            .filter(|f| f.is_finite())
                            .map(|f| Val::Int(f.trunc() as i64))
                            .unwrap_or(Val::Null),
                    }
                }
                Val::Null => Val::Null,
                other if name != "tointegerornull" => {
                    return Err(type_error(format!("toInteger() of a {}", other.type_name())))
                }
                _ => Val::Null,
            })
        }
        "tofloat" | "tofloatornull" => {
            arity(call, 1, 1)?;
            Ok(match first {
                Val::Int(i) => Val::Float(i as f64),
                Val::Float(f) => Val::Float(f),
                Val::Str(s) => s.trim().parse::<f64>().map(Val::Float).unwrap_or(Val::Null),
                Val::Null => Val::Null,
                other if name == "tofloat" => return Err(type_error(format!("toFloat() of a {}", other.type_name()))),
                _ => Val::Null,
            })
        }
        "toboolean" => {
            arity(call, 1, 1)?;
            Ok(match first {
                Val::Bool(b) => Val::Bool(b),
                Val::Str(s) => match s.trim().to_lowercase().as_str() {
                    "true" => Val::Bool(true),
                    "false" => Val::Bool(false),
                    _ => Val::Null,
                },
                Val::Int(i) => Val::Bool(i != 0),
                _ => Val::Null,
            })
        }
        "id" | "elementid" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Node(node) => {
                    let id = graph.node_id(node).0 as i64;
                    Ok(if name == "id" { Val::Int(id) } else { Val::Str(id.to_string()) })
                }
                Val::Rel(edge) => Ok(if name == "id" {
                    Val::Int(edge.id as i64)
                } else {
                    Val::Str(edge.id.to_string())
                }),
                other => Err(type_error(format!("{name}() of a {}", other.type_name()))),
            }
        }
        "labels" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Node(node) => Ok(Val::List(
                    graph
                        .node_labels(node)
                        .into_iter()
                        .map(|label| Val::Str(graph.label_name(label).to_string()))
                        .collect(),
                )),
                other => Err(type_error(format!("labels() of a {}", other.type_name()))),
            }
        }
        "type" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Rel(edge) => Ok(Val::Str(graph.rel_type_name(edge.rel_type).to_string())),
                other => Err(type_error(format!("type() of a {}", other.type_name()))),
            }
        }
        "keys" => {
            arity(call, 1, 1)?;
            match properties_of(ctx, &first)? {
                Val::Map(entries) => Ok(Val::List(entries.into_iter().map(|(key, _)| Val::Str(key)).collect())),
                _ => Ok(Val::Null),
            }
        }
        "properties" => {
            arity(call, 1, 1)?;
            properties_of(ctx, &first)
        }
        "startnode" | "endnode" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Rel(edge) => Ok(Val::Node(if name == "startnode" { edge.start } else { edge.end })),
                other => Err(type_error(format!("{name}() of a {}", other.type_name()))),
            }
        }
        "nodes" | "relationships" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::Path(nodes, edges) => Ok(Val::List(if name == "nodes" {
                    nodes.into_iter().map(Val::Node).collect()
                } else {
                    edges.into_iter().map(Val::Rel).collect()
                })),
                other => Err(type_error(format!("{name}() of a {}", other.type_name()))),
            }
        }
        "head" | "last" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::List(items) => Ok(if name == "head" { items.first() } else { items.last() }
                    .cloned()
                    .unwrap_or(Val::Null)),
                other => Err(type_error(format!("{name}() of a {}", other.type_name()))),
            }
        }
        "tail" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::List(items) => Ok(Val::List(items.into_iter().skip(1).collect())),
                other => Err(type_error(format!("tail() of a {}", other.type_name()))),
            }
        }
        "isempty" => {
            arity(call, 1, 1)?;
            match first {
                Val::Null => Ok(Val::Null),
                Val::List(items) => Ok(Val::Bool(items.is_empty())),
                Val::Str(s) => Ok(Val::Bool(s.is_empty())),
                Val::Map(entries) => Ok(Val::Bool(entries.is_empty())),
                other => Err(type_error(format!("isEmpty() of a {}", other.type_name()))),
            }
        }
        "range" => {
            arity(call, 2, 3)?;
            let (Some(from), Some(to)) = (int_arg(&args[0], name)?, int_arg(&args[1], name)?) else {
                return Ok(Val::Null);
            };
            let step = match args.get(2) {
                Some(step) => int_arg(step, name)?.unwrap_or(1),
                None => 1,
            };
            if step == 0 {
                return Err(CypherError::runtime("range() step cannot be 0"));
            }
            let count = if (step > 0 && to >= from) || (step < 0 && to <= from) {
                ((to as i128 - from as i128) / step as i128 + 1) as u128
            } else {
                0
            };
            if count > ctx.budget as u128 {
                return Err(CypherError::new(ErrorKind::Limit, format!("range() of {count} elements is over the work budget")));
            }
            ctx.tick(count as u64)?;
            let mut items = Vec::with_capacity(count as usize);
            let mut value = from;
            for _ in 0..count {
                items.push(Val::Int(value));
                value = value.saturating_add(step);
            }
            Ok(Val::List(items))
        }
        "substring" => {
            arity(call, 2, 3)?;
            let Some(s) = string_arg(&args[0], name)? else {
                return Ok(Val::Null);
            };
            let start = int_arg(&args[1], name)?.unwrap_or(0).max(0) as usize;
            let length = match args.get(2) {
                Some(length) => int_arg(length, name)?.unwrap_or(i64::MAX).max(0) as usize,
                None => usize::MAX,
            };
            Ok(Val::Str(s.chars().skip(start).take(length).collect()))
        }
        "left" | "right" => {
            arity(call, 2, 2)?;
            let Some(s) = string_arg(&args[0], name)? else {
                return Ok(Val::Null);
            };
            let count = int_arg(&args[1], name)?.unwrap_or(0).max(0) as usize;
            let chars: Vec<char> = s.chars().collect();
            Ok(Val::Str(if name == "left" {
                chars.iter().take(count).collect()
            } else {
                chars[chars.len().saturating_sub(count)..].iter().collect()
            }))
        }
        "replace" => {
            arity(call, 3, 3)?;
            match (string_arg(&args[0], name)?, string_arg(&args[1], name)?, string_arg(&args[2], name)?) {
                (Some(s), Some(from), Some(to)) => {
                    if from.is_empty() {
                        return Ok(Val::Str(s));
                    }
                    Ok(Val::Str(s.replace(&from, &to)))
                }
                _ => Ok(Val::Null),
            }
        }
        "split" => {
            arity(call, 2, 2)?;
            match (string_arg(&args[0], name)?, string_arg(&args[1], name)?) {
                (Some(s), Some(separator)) => Ok(Val::List(if separator.is_empty() {
                    s.chars().map(|c| Val::Str(c.to_string())).collect()
                } else {
                    s.split(separator.as_str()).map(|part| Val::Str(part.to_string())).collect()
                })),
                _ => Ok(Val::Null),
            }
        }
        "round" => {
            arity(call, 1, 3)?;
            let Some(value) = number_arg(&first, name)? else {
                return Ok(Val::Null);
            };
            match args.get(1) {
                None => Ok(Val::Float(round_half_up(value))),
                Some(precision) => {
                    let Some(precision) = int_arg(precision, name)? else {
                        return Ok(Val::Null);
                    };
                    let precision = precision.clamp(0, 15) as i32;
                    let factor = 10f64.powi(precision);
                    // Half away from zero, as BigDecimal's HALF_UP.
                    let scaled = value * factor;
                    let rounded = scaled.abs() + 0.5;
                    let rounded = rounded.floor().copysign(scaled);
                    Ok(Val::Float(rounded / factor))
                }
            }
        }
        "abs" => {
            arity(call, 1, 1)?;
            match first {
                Val::Int(i) => Ok(Val::Int(i.checked_abs().ok_or_else(|| CypherError::runtime("integer overflow"))?)),
                Val::Float(f) => Ok(Val::Float(f.abs())),
                Val::Null => Ok(Val::Null),
                other => Err(type_error(format!("abs() of a {}", other.type_name()))),
            }
        }
        "sign" => {
            arity(call, 1, 1)?;
            match first {
                Val::Int(i) => Ok(Val::Int(i.signum())),
                Val::Float(f) => Ok(Val::Int(if f > 0.0 { 1 } else if f < 0.0 { -1 } else { 0 })),
                Val::Null => Ok(Val::Null),
                other => Err(type_error(format!("sign() of a {}", other.type_name()))),
            }
        }
        "ceil" | "floor" | "sqrt" | "exp" | "log" | "log10" => {
            arity(call, 1, 1)?;
            let Some(value) = number_arg(&first, name)? else {
                return Ok(Val::Null);
            };
            Ok(Val::Float(match name {
                "ceil" => value.ceil(),
                "floor" => value.floor(),
                "sqrt" => value.sqrt(),
                "exp" => value.exp(),
                "log" => value.ln(),
                _ => value.log10(),
            }))
        }
        "pi" => Ok(Val::Float(std::f64::consts::PI)),
        "e" => Ok(Val::Float(std::f64::consts::E)),
        "rand" => {
            // Deterministic within a query; good enough for `ORDER BY rand()` sampling.
            let seed = ctx.tick_count().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11;
            Ok(Val::Float(seed as f64 / (1u64 << 53) as f64))
        }
        "timestamp" => Ok(Val::Int(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0),
        )),
        "date" | "datetime" | "localdatetime" | "duration" | "duration.between" | "duration.indays"
        | "duration.inmonths" | "duration.inseconds" => Err(CypherError::new(
            ErrorKind::Unsupported,
            format!("{name}() is not supported: temporal values are not available"),
        )
        .with_hint("dates are stored as strings such as '1997-05-01 00:00:00.000'; compare or slice the strings (o.orderDate >= '1997-01-01', substring(o.orderDate, 0, 4))")),
        other => Err(CypherError::new(ErrorKind::UnknownName, format!("unknown function {other}()"))),
    }
}
