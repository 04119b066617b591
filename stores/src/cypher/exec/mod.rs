//! Runs a validated query over a [`PropertyGraph`]: clause by clause over a table of
//! rows, with every unit of work counted against a budget and the deadline checked as it
//! goes, so that no query can hang or exhaust memory.

mod eval;
mod pattern;
pub mod value;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

use kgmesh_schemas::graph::{Rows, Value};
use regex::Regex;

use self::eval::{eval, Env};
use self::pattern::{new_variables, Matcher};
use self::value::{key, order, Key, Val};
use super::ast::*;
use super::error::{CypherError, CypherResult, ErrorKind};
use super::graph::PropertyGraph;
use super::validator::work_budget;
use crate::QueryLimits;

pub use super::ast::AGGREGATES;

/// How often (in work units) the clock is read.
const CLOCK_EVERY: u64 = 256;

pub struct Ctx<'g> {
    pub graph: &'g dyn PropertyGraph,
    pub params: HashMap<String, Val>,
    pub max_depth: u8,
    pub budget: u64,
    deadline: Instant,
    timeout_millis: u64,
    work: Cell<u64>,
    regexes: RefCell<HashMap<String, Regex>>,
}

impl<'g> Ctx<'g> {
    pub fn new(
        graph: &'g dyn PropertyGraph,
        params: &[(String, Value)],
        limits: &QueryLimits,
    ) -> Self {
        Self {
            graph,
            params: params
                .iter()
                .map(|(name, value)| (name.clone(), Val::from_value(value, graph)))
                .collect(),
            max_depth: limits.max_depth,
            budget: work_budget(limits),
            deadline: Instant::now() + limits.timeout,
            timeout_millis: limits.timeout.as_millis() as u64,
            work: Cell::new(0),
            regexes: RefCell::new(HashMap::new()),
        }
    }

    /// Counts work; fails once the budget or the deadline is passed.
    pub fn tick(&self, units: u64) -> CypherResult<()> {
        let before = self.work.get();
        let after = before.saturating_add(units);
        self.work.set(after);
        if after > self.budget {
            return Err(CypherError::new(
                ErrorKind::Limit,
                format!("the query needs more than {} units of work (rows and edges visited)", self.budget),
            )
            .with_hint("anchor the pattern on a specific node (a property map such as {productName: '…'}), connect disconnected patterns, or aggregate earlier"));
        }
        if before / CLOCK_EVERY != after / CLOCK_EVERY && Instant::now() > self.deadline {
            return Err(CypherError::new(
                ErrorKind::Timeout {
                    millis: self.timeout_millis,
                },
                format!(
                    "the query ran past its time budget of {} ms",
                    self.timeout_millis
                ),
            ));
        }
        Ok(())
    }

    pub fn tick_count(&self) -> u64 {
        self.work.get()
    }

    pub fn regex_full_match(&self, pattern: &str, text: &str) -> CypherResult<bool> {
        let mut cache = self.regexes.borrow_mut();
        if !cache.contains_key(pattern) {
            let regex = regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
                .size_limit(1 << 20)
                .build()
                .map_err(|error| {
                    CypherError::runtime(format!("invalid regular expression: {error}"))
                })?;
            cache.insert(pattern.to_string(), regex);
        }
        Ok(cache.get(pattern).is_some_and(|regex| regex.is_match(text)))
    }
}

/// A table of rows: the unit every clause consumes and produces.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Val>>,
}

/// Runs a parsed (and validated) query. The result is cut at `limits.max_rows` rows,
/// with `truncated` set.
pub fn execute(
    graph: &dyn PropertyGraph,
    query: &Query,
    params: &[(String, Value)],
    limits: &QueryLimits,
) -> CypherResult<Rows> {
    let ctx = Ctx::new(graph, params, limits);
    let input = Table {
        columns: Vec::new(),
        rows: vec![Vec::new()],
    };
    let table = run_query(&ctx, query, input, true)?;
    let truncated = table.rows.len() > limits.max_rows;
    let rows = table
        .rows
        .into_iter()
        .take(limits.max_rows)
        .map(|row| row.iter().map(|value| value.to_value(graph)).collect())
        .collect();
    Ok(Rows {
        columns: table.columns,
        rows,
        truncated,
    })
}

pub fn run_query(ctx: &Ctx, query: &Query, input: Table, top_level: bool) -> CypherResult<Table> {
    let mut result: Option<Table> = None;
    for part in &query.parts {
        let table = run_single(ctx, part, input.clone(), top_level)?;
        result = Some(match result {
            None => table,
            Some(mut so_far) => {
                so_far.rows.extend(table.rows);
                so_far
            }
        });
    }
    let mut table = result.unwrap_or_default();
    if query.parts.len() > 1 && !query.union_all {
        distinct_rows(&mut table.rows);
    }
    Ok(table)
}

fn distinct_rows(rows: &mut Vec<Vec<Val>>) {
    let mut seen: std::collections::HashSet<Vec<Key>> = std::collections::HashSet::new();
    rows.retain(|row| seen.insert(row.iter().map(key).collect()));
}

fn run_single(
    ctx: &Ctx,
    query: &SingleQuery,
    input: Table,
    top_level: bool,
) -> CypherResult<Table> {
    let mut table = input;
    for clause in &query.clauses {
        table = match clause {
            Clause::Match(clause) => run_match(ctx, clause, table)?,
            Clause::Unwind(unwind) => run_unwind(ctx, unwind, table)?,
            Clause::With(with) => project(
                ctx,
                table,
                &with.projection,
                with.where_clause
                    .as_ref()
                    .map(|clause| (clause, with.where_first)),
            )?,
            Clause::Return(projection) => project(ctx, table, projection, None)?,
            Clause::Forbidden(forbidden) => {
                return Err(CypherError::new(
                    ErrorKind::Forbidden,
                    format!(
                        "{} is refused: the graph is read-only",
                        forbidden.kind.clause_name()
                    ),
                ))
            }
        };
    }
    if top_level && !matches!(query.clauses.last(), Some(Clause::Return(_))) {
        return Err(CypherError::new(
            ErrorKind::Syntax,
            "a query must end with RETURN",
        ));
    }
    Ok(table)
}

fn run_match(ctx: &Ctx, clause: &MatchClause, table: Table) -> CypherResult<Table> {
    let mut columns = table.columns.clone();
    columns.extend(new_variables(&clause.patterns, &table.columns));
    let width = columns.len();
    let mut rows = Vec::new();
    for row in &table.rows {
        let env = Env::new(&table.columns, row);
        let mut matcher = Matcher::new(ctx, &clause.patterns, &columns, &env)?;
        let mut matched_any = false;
        matcher.run(ctx, row, width, &mut |matched| {
            if let Some(where_clause) = &clause.where_clause {
                let env = Env::new(&columns, matched);
                match eval(ctx, where_clause, &env)? {
                    Val::Bool(true) => {}
                    Val::Bool(false) | Val::Null => return Ok(true),
                    other => {
                        return Err(CypherError::runtime(format!(
                            "WHERE expects a boolean, got a {}",
                            other.type_name()
                        )))
                    }
                }
            }
            matched_any = true;
            rows.push(matched.to_vec());
            Ok(true)
        })?;
        if clause.optional && !matched_any {
            let mut padded = row.clone();
            padded.resize(width, Val::Null);
            rows.push(padded);
        }
    }
    Ok(Table { columns, rows })
}

fn run_unwind(ctx: &Ctx, unwind: &UnwindClause, table: Table) -> CypherResult<Table> {
    let mut columns = table.columns.clone();
    let replace = columns.iter().position(|column| column == &unwind.alias);
    if replace.is_none() {
        columns.push(unwind.alias.clone());
    }
    let mut rows = Vec::new();
    for row in &table.rows {
        let env = Env::new(&table.columns, row);
        let items = match eval(ctx, &unwind.expr, &env)? {
            Val::Null => Vec::new(),
            Val::List(items) => items,
            other => vec![other],
        };
        ctx.tick(items.len() as u64)?;
        for item in items {
            let mut next = row.clone();
            match replace {
                Some(index) => next[index] = item,
                None => next.push(item),
            }
            rows.push(next);
        }
    }
    Ok(Table { columns, rows })
}

/// Aggregate calls lifted out of an expression, each replaced by a hidden variable.
struct Lifted {
    names: Vec<String>,
    calls: Vec<Expr>,
}

impl Lifted {
    fn lift(&mut self, expr: &Expr) -> Expr {
        if is_aggregate_call(expr) {
            if let Some(index) = self.calls.iter().position(|call| call == expr) {
                return Expr::Variable(self.names[index].clone(), Default::default());
            }
            let name = format!(" aggregate {}", self.calls.len());
            self.names.push(name.clone());
            self.calls.push(expr.clone());
            return Expr::Variable(name, Default::default());
        }
        let lift = |this: &mut Self, inner: &Expr| Box::new(this.lift(inner));
        match expr {
            Expr::Property(base, key, span) => Expr::Property(lift(self, base), key.clone(), *span),
            Expr::Index(a, b) => Expr::Index(lift(self, a), lift(self, b)),
            Expr::Binary(op, a, b) => Expr::Binary(*op, lift(self, a), lift(self, b)),
            Expr::Unary(op, a) => Expr::Unary(*op, lift(self, a)),
            Expr::IsNull(a, negated) => Expr::IsNull(lift(self, a), *negated),
            Expr::List(items) => Expr::List(items.iter().map(|item| self.lift(item)).collect()),
            Expr::Map(entries) => Expr::Map(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), self.lift(v)))
                    .collect(),
            ),
            Expr::Function(call) => Expr::Function(FunctionCall {
                name: call.name.clone(),
                distinct: call.distinct,
                args: call.args.iter().map(|arg| self.lift(arg)).collect(),
                span: call.span,
            }),
            Expr::Case(case) => Expr::Case(CaseExpr {
                subject: case.subject.as_ref().map(|subject| lift(self, subject)),
                whens: case
                    .whens
                    .iter()
                    .map(|(w, t)| (self.lift(w), self.lift(t)))
                    .collect(),
                otherwise: case
                    .otherwise
                    .as_ref()
                    .map(|otherwise| lift(self, otherwise)),
            }),
            other => other.clone(),
        }
    }
}

fn is_aggregate_call(expr: &Expr) -> bool {
    match expr {
        Expr::CountStar => true,
        Expr::Function(call) => AGGREGATES.contains(&call.name.as_str()),
        _ => false,
    }
}

fn check_bool(value: Val, what: &str) -> CypherResult<bool> {
    match value {
        Val::Bool(b) => Ok(b),
        Val::Null => Ok(false),
        other => Err(CypherError::runtime(format!(
            "{what} expects a boolean, got a {}",
            other.type_name()
        ))),
    }
}

fn count_arg(ctx: &Ctx, expr: &Option<Expr>, what: &str) -> CypherResult<Option<usize>> {
    let Some(expr) = expr else {
        return Ok(None);
    };
    let env_names: [String; 0] = [];
    let env = Env::new(&env_names, &[]);
    match eval(ctx, expr, &env)? {
        Val::Int(i) if i >= 0 => Ok(Some(i as usize)),
        Val::Float(f) if f >= 0.0 && f.fract() == 0.0 => Ok(Some(f as usize)),
        other => Err(CypherError::runtime(format!(
            "{what} expects a non-negative integer, got {}",
            eval::to_string(&other)
        ))),
    }
}

/// An output row, the input row it came from, and its group's aggregate values.
type Projected = (Vec<Val>, usize, Vec<Val>);

fn project(
    ctx: &Ctx,
    table: Table,
    projection: &Projection,
    where_clause: Option<(&Expr, bool)>,
) -> CypherResult<Table> {
    let mut items: Vec<(Expr, String)> = Vec::new();
    if projection.star {
        for column in &table.columns {
            if !column.starts_with(' ') {
                items.push((
                    Expr::Variable(column.clone(), Default::default()),
                    column.clone(),
                ));
            }
        }
    }
    for item in &projection.items {
        items.push((item.expr.clone(), item.column_name().to_string()));
    }
    let columns: Vec<String> = items.iter().map(|(_, name)| name.clone()).collect();
    let aggregating = items.iter().any(|(expr, _)| expr.contains_aggregate());

    // Each output row with the context ORDER BY may look at: the input row it came from
    // and, when aggregating, the aggregate values of its group.
    let mut out: Vec<Projected> = Vec::new();
    let mut lifted = Lifted {
        names: Vec::new(),
        calls: Vec::new(),
    };
    let mut order_exprs: Vec<Expr> = projection
        .order_by
        .iter()
        .map(|sort| sort.expr.clone())
        .collect();
    // With no input rows, ORDER BY still evaluates against an empty row.
    let empty_row: Vec<Val> = vec![Val::Null; table.columns.len()];
    if !aggregating {
        for (index, row) in table.rows.iter().enumerate() {
            ctx.tick(1)?;
            let env = Env::new(&table.columns, row);
            let values = items
                .iter()
                .map(|(expr, _)| eval(ctx, expr, &env))
                .collect::<CypherResult<Vec<_>>>()?;
            out.push((values, index, Vec::new()));
        }
    } else {
        let rewritten: Vec<Expr> = items.iter().map(|(expr, _)| lifted.lift(expr)).collect();
        order_exprs = order_exprs.iter().map(|expr| lifted.lift(expr)).collect();
        let key_items: Vec<usize> = (0..items.len())
            .filter(|i| !items[*i].0.contains_aggregate())
            .collect();
        let mut group_of: HashMap<Vec<Key>, usize> = HashMap::new();
        let mut groups: Vec<(Vec<Val>, Vec<usize>)> = Vec::new();
        for (index, row) in table.rows.iter().enumerate() {
            ctx.tick(1)?;
            let env = Env::new(&table.columns, row);
            let key_values = key_items
                .iter()
                .map(|i| eval(ctx, &items[*i].0, &env))
                .collect::<CypherResult<Vec<_>>>()?;
            let group_key: Vec<Key> = key_values.iter().map(key).collect();
            match group_of.get(&group_key) {
                Some(group) => groups[*group].1.push(index),
                None => {
                    group_of.insert(group_key, groups.len());
                    groups.push((key_values, vec![index]));
                }
            }
        }
        if groups.is_empty() && key_items.is_empty() {
            groups.push((Vec::new(), Vec::new()));
        }
        for (key_values, members) in groups {
            let aggregates = lifted
                .calls
                .iter()
                .map(|call| aggregate(ctx, call, &table, &members))
                .collect::<CypherResult<Vec<_>>>()?;
            let representative = members.first().copied();
            let row = representative.map(|i| &table.rows[i]).unwrap_or(&empty_row);
            let base = Env::new(&table.columns, row);
            let env = base.child(&lifted.names, &aggregates);
            let mut values = Vec::with_capacity(items.len());
            let mut next_key = key_values.into_iter();
            for (i, expr) in rewritten.iter().enumerate() {
                if key_items.contains(&i) {
                    values.push(next_key.next().unwrap_or(Val::Null));
                } else {
                    values.push(eval(ctx, expr, &env)?);
                }
            }
            out.push((values, representative.unwrap_or(usize::MAX), aggregates));
        }
    }

    if projection.distinct {
        let mut seen: std::collections::HashSet<Vec<Key>> = std::collections::HashSet::new();
        out.retain(|(values, _, _)| seen.insert(values.iter().map(key).collect()));
    }

    let filter = |out: &mut Vec<Projected>, predicate: &Expr| -> CypherResult<()> {
        let mut kept = Vec::with_capacity(out.len());
        for entry in out.drain(..) {
            let env = Env::new(&columns, &entry.0);
            if check_bool(eval(ctx, predicate, &env)?, "WHERE")? {
                kept.push(entry);
            }
        }
        *out = kept;
        Ok(())
    };
    if let Some((predicate, true)) = where_clause {
        filter(&mut out, predicate)?;
    }

    if !projection.order_by.is_empty() {
        let mut keyed: Vec<(Vec<Val>, Projected)> = Vec::with_capacity(out.len());
        for entry in out.drain(..) {
            ctx.tick(1)?;
            let row = table.rows.get(entry.1).unwrap_or(&empty_row);
            let base = Env::new(&table.columns, row);
            let with_aggregates = base.child(&lifted.names, &entry.2);
            let env = with_aggregates.child(&columns, &entry.0);
            let sort_keys = order_exprs
                .iter()
                .map(|expr| eval(ctx, expr, &env))
                .collect::<CypherResult<Vec<_>>>()?;
            keyed.push((sort_keys, entry));
        }
        keyed.sort_by(|(a, _), (b, _)| {
            for (index, sort) in projection.order_by.iter().enumerate() {
                let ordering = order(&a[index], &b[index]);
                let ordering = if sort.descending {
                    ordering.reverse()
                } else {
                    ordering
                };
                if ordering != std::cmp::Ordering::Equal {
                    return ordering;
                }
            }
            std::cmp::Ordering::Equal
        });
        out = keyed.into_iter().map(|(_, entry)| entry).collect();
    }

    let skip = count_arg(ctx, &projection.skip, "SKIP")?.unwrap_or(0);
    let limit = count_arg(ctx, &projection.limit, "LIMIT")?;
    let mut out: Vec<Projected> = out.into_iter().skip(skip).collect();
    if let Some(limit) = limit {
        out.truncate(limit);
    }
    if let Some((predicate, false)) = where_clause {
        filter(&mut out, predicate)?;
    }
    Ok(Table {
        columns,
        rows: out.into_iter().map(|(values, _, _)| values).collect(),
    })
}

fn aggregate(ctx: &Ctx, call: &Expr, table: &Table, members: &[usize]) -> CypherResult<Val> {
    let call = match call {
        Expr::CountStar => return Ok(Val::Int(members.len() as i64)),
        Expr::Function(call) => call,
        _ => return Err(CypherError::runtime("not an aggregate")),
    };
    let Some(arg) = call.args.first() else {
        return Err(CypherError::new(
            ErrorKind::Syntax,
            format!("{}() needs an argument", call.name),
        ));
    };
    if arg.contains_aggregate() {
        return Err(CypherError::new(
            ErrorKind::Syntax,
            "aggregate functions cannot be nested",
        ));
    }
    let mut values = Vec::with_capacity(members.len());
    for index in members {
        ctx.tick(1)?;
        let env = Env::new(&table.columns, &table.rows[*index]);
        let value = eval(ctx, arg, &env)?;
        if value != Val::Null {
            values.push(value);
        }
    }
    if call.distinct {
        let mut seen: std::collections::HashSet<Key> = std::collections::HashSet::new();
        values.retain(|value| seen.insert(key(value)));
    }
    let numbers = |name: &str| -> CypherResult<Vec<f64>> {
        values
            .iter()
            .map(|value| match value {
                Val::Int(i) => Ok(*i as f64),
                Val::Float(f) => Ok(*f),
                other => Err(CypherError::runtime(format!(
                    "{name}() expects numbers, got a {}",
                    other.type_name()
                ))),
            })
            .collect()
    };
    match call.name.as_str() {
        "count" => Ok(Val::Int(values.len() as i64)),
        "collect" => Ok(Val::List(values)),
        "sum" => {
            if values.iter().all(|value| matches!(value, Val::Int(_))) {
                let mut total: i64 = 0;
                for value in &values {
                    if let Val::Int(i) = value {
                        total = total
                            .checked_add(*i)
                            .ok_or_else(|| CypherError::runtime("integer overflow in sum()"))?;
                    }
                }
                Ok(Val::Int(total))
            } else {
                Ok(Val::Float(numbers("sum")?.iter().sum()))
            }
        }
        "avg" => {
            let numbers = numbers("avg")?;
            if numbers.is_empty() {
                Ok(Val::Null)
            } else {
                Ok(Val::Float(
                    numbers.iter().sum::<f64>() / numbers.len() as f64,
                ))
            }
        }
        "min" | "max" => {
            let best = values.into_iter().reduce(|a, b| {
                let ordering = order(&a, &b);
                let keep_a = if call.name == "min" {
                    ordering != std::cmp::Ordering::Greater
                } else {
                    ordering != std::cmp::Ordering::Less
                };
                if keep_a {
                    a
                } else {
                    b
                }
            });
            Ok(best.unwrap_or(Val::Null))
        }
        "stdev" | "stdevp" => {
            let numbers = numbers(&call.name)?;
            let n = numbers.len() as f64;
            let sample = call.name == "stdev";
            if numbers.is_empty() || (sample && numbers.len() < 2) {
                return Ok(Val::Float(0.0));
            }
            let mean = numbers.iter().sum::<f64>() / n;
            let squares: f64 = numbers.iter().map(|x| (x - mean) * (x - mean)).sum();
            Ok(Val::Float(
                (squares / if sample { n - 1.0 } else { n }).sqrt(),
            ))
        }
        "percentilecont" | "percentiledisc" => {
            let percentile = match call.args.get(1) {
                Some(expr) => {
                    let names: [String; 0] = [];
                    match eval(ctx, expr, &Env::new(&names, &[]))? {
                        Val::Int(i) => i as f64,
                        Val::Float(f) => f,
                        _ => return Err(CypherError::runtime("percentile must be a number")),
                    }
                }
                None => {
                    return Err(CypherError::new(
                        ErrorKind::Syntax,
                        format!("{}() takes 2 arguments", call.name),
                    ))
                }
            };
            if !(0.0..=1.0).contains(&percentile) {
                return Err(CypherError::runtime(
                    "percentile must be between 0.0 and 1.0",
                ));
            }
            let mut numbers = numbers(&call.name)?;
            if numbers.is_empty() {
                return Ok(Val::Null);
            }
            numbers.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            if call.name == "percentiledisc" {
                let index = ((percentile * numbers.len() as f64).ceil() as usize).saturating_sub(1);
                Ok(Val::Float(numbers[index.min(numbers.len() - 1)]))
            } else {
                let position = percentile * (numbers.len() - 1) as f64;
                let lower = position.floor() as usize;
                let upper = position.ceil() as usize;
                let fraction = position - lower as f64;
                Ok(Val::Float(
                    numbers[lower] + (numbers[upper] - numbers[lower]) * fraction,
                ))
            }
        }
        other => Err(CypherError::new(
            ErrorKind::UnknownName,
            format!("unknown aggregate {other}()"),
        )),
    }
}
