//! The syntax tree of a parsed query. Write and admin clauses have nodes of their own so
//! that the validator refuses them by what they are, not by what the text contains.

use super::error::Span;

#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// One or more single queries joined by `UNION` (`union_all` says which kind).
    pub parts: Vec<SingleQuery>,
    pub union_all: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SingleQuery {
    pub clauses: Vec<Clause>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Clause {
    Match(MatchClause),
    Unwind(UnwindClause),
    With(WithClause),
    Return(Projection),
    /// A clause that changes the graph or the database, or calls out of it.
    Forbidden(ForbiddenClause),
}

#[derive(Debug, Clone, PartialEq)]
pub struct MatchClause {
    pub optional: bool,
    pub patterns: Vec<PatternPart>,
    pub where_clause: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct UnwindClause {
    pub expr: Expr,
    pub alias: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WithClause {
    pub projection: Projection,
    pub where_clause: Option<Expr>,
    /// `WITH … WHERE … ORDER BY/SKIP/LIMIT`: filter before ordering and limiting (the
    /// standard form filters after them).
    pub where_first: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    pub distinct: bool,
    /// `RETURN *` / `WITH *`: every variable in scope, before `items`.
    pub star: bool,
    pub items: Vec<ProjectionItem>,
    pub order_by: Vec<SortItem>,
    pub skip: Option<Expr>,
    pub limit: Option<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ProjectionItem {
    pub expr: Expr,
    pub alias: Option<String>,
    /// The item's text as written: the column name when there is no alias.
    pub text: String,
}

impl ProjectionItem {
    /// The alias, else a variable's own name (`` `the ship` `` projects `the ship`),
    /// else the expression's text.
    pub fn column_name(&self) -> &str {
        match (&self.alias, &self.expr) {
            (Some(alias), _) => alias,
            (None, Expr::Variable(name, _)) => name,
            (None, _) => &self.text,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SortItem {
    pub expr: Expr,
    pub descending: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenKind {
    Create,
    Merge,
    Set,
    Delete,
    DetachDelete,
    Remove,
    Drop,
    Call,
    LoadCsv,
    Foreach,
    Use,
    /// Index, constraint, user or database administration (`SHOW`, `GRANT`, `ALTER`, …).
    Admin,
}

impl ForbiddenKind {
    pub fn clause_name(self) -> &'static str {
        match self {
            ForbiddenKind::Create => "CREATE",
            ForbiddenKind::Merge => "MERGE",
            ForbiddenKind::Set => "SET",
            ForbiddenKind::Delete => "DELETE",
            ForbiddenKind::DetachDelete => "DETACH DELETE",
            ForbiddenKind::Remove => "REMOVE",
            ForbiddenKind::Drop => "DROP",
            ForbiddenKind::Call => "CALL",
            ForbiddenKind::LoadCsv => "LOAD CSV",
            ForbiddenKind::Foreach => "FOREACH",
            ForbiddenKind::Use => "USE",
            ForbiddenKind::Admin => "administration command",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForbiddenClause {
    pub kind: ForbiddenKind,
    /// For `CALL`: the procedure name, or `{ … }` for a subquery.
    pub detail: Option<String>,
    pub span: Span,
}

/// `p = (a)-[r]->(b)…`
#[derive(Debug, Clone, PartialEq)]
pub struct PatternPart {
    pub path_variable: Option<String>,
    /// `shortestPath(…)` / `allShortestPaths(…)`.
    pub shortest: Option<Shortest>,
    pub start: NodePattern,
    pub chain: Vec<(RelPattern, NodePattern)>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shortest {
    One,
    All,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NodePattern {
    pub variable: Option<String>,
    /// All must hold (`:A:B`).
    pub labels: Vec<String>,
    pub properties: Option<PropertyMap>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub enum PropertyMap {
    Literal(Vec<(String, Expr)>),
    Parameter(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelDirection {
    /// `-[]->`
    Right,
    /// `<-[]-`
    Left,
    /// `-[]-`
    Either,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RelPattern {
    pub variable: Option<String>,
    /// Any of these (`:A|B`); empty for any type.
    pub types: Vec<String>,
    pub direction: RelDirection,
    /// `*min..max`; `None` for a single hop. An absent bound is `None`.
    pub range: Option<VarLength>,
    pub properties: Option<PropertyMap>,
    pub span: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarLength {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryOp {
    Or,
    Xor,
    And,
    Eq,
    Neq,
    Lt,
    Le,
    Gt,
    Ge,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Pow,
    In,
    StartsWith,
    EndsWith,
    Contains,
    RegexMatch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryOp {
    Not,
    Neg,
    Pos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantifier {
    All,
    Any,
    None,
    Single,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Literal(Literal),
    Parameter(String),
    Variable(String, Span),
    Property(Box<Expr>, String, Span),
    Index(Box<Expr>, Box<Expr>),
    Slice(Box<Expr>, Option<Box<Expr>>, Option<Box<Expr>>),
    List(Vec<Expr>),
    Map(Vec<(String, Expr)>),
    /// `n {.name, x: 1, .*}`
    MapProjection(Box<Expr>, Vec<MapProjectionItem>),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    IsNull(Box<Expr>, bool),
    /// `n:Label:Other`
    HasLabels(Box<Expr>, Vec<String>, Span),
    Function(FunctionCall),
    CountStar,
    Case(CaseExpr),
    ListComprehension(Box<ListComprehension>),
    Quantified(Quantifier, Box<ListComprehension>),
    Reduce(Box<ReduceExpr>),
    /// A pattern used as a predicate (`WHERE (a)-[:R]->()`): true when it matches.
    PatternPredicate(Box<PatternPart>),
    /// `EXISTS { … }`, `COUNT { … }`, `COLLECT { … }`.
    Subquery(SubqueryKind, Box<Subquery>),
    /// `[(a)-[:R]->(b) WHERE … | b.name]`
    PatternComprehension(Box<PatternComprehension>),
}

#[derive(Debug, Clone, PartialEq)]
pub enum MapProjectionItem {
    Property(String),
    AllProperties,
    Entry(String, Expr),
    Variable(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubqueryKind {
    Exists,
    Count,
}

/// The body of an `EXISTS { }` / `COUNT { }`: either a full query (`MATCH … RETURN …`)
/// or a bare pattern list with an optional `WHERE`, which is kept as a `MATCH`.
#[derive(Debug, Clone, PartialEq)]
pub struct Subquery {
    pub query: Query,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PatternComprehension {
    pub pattern: PatternPart,
    pub where_clause: Option<Expr>,
    pub map: Expr,
}

#[derive(Debug, Clone, PartialEq)]
pub struct FunctionCall {
    /// Lower-cased, with its namespace (`duration.between`).
    pub name: String,
    pub distinct: bool,
    pub args: Vec<Expr>,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CaseExpr {
    pub subject: Option<Box<Expr>>,
    pub whens: Vec<(Expr, Expr)>,
    pub otherwise: Option<Box<Expr>>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListComprehension {
    pub variable: String,
    pub list: Expr,
    pub predicate: Option<Expr>,
    pub map: Option<Expr>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ReduceExpr {
    pub accumulator: String,
    pub init: Expr,
    pub variable: String,
    pub list: Expr,
    pub expr: Expr,
}

pub const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "collect",
    "stdev",
    "stdevp",
    "percentilecont",
    "percentiledisc",
];

impl Expr {
    /// Whether an aggregate appears in this expression (outside nested subqueries).
    pub fn contains_aggregate(&self) -> bool {
        let mut found = false;
        self.walk(&mut |expr| {
            if let Expr::CountStar = expr {
                found = true;
            }
            if let Expr::Function(call) = expr {
                if AGGREGATES.contains(&call.name.as_str()) {
                    found = true;
                }
            }
        });
        found
    }

    /// Visits this expression and every sub-expression (not entering subqueries, pattern
    /// predicates or comprehensions' bodies, whose scopes differ).
    pub fn walk(&self, visit: &mut dyn FnMut(&Expr)) {
        visit(self);
        match self {
            Expr::Literal(_)
            | Expr::Parameter(_)
            | Expr::Variable(..)
            | Expr::CountStar
            | Expr::PatternPredicate(_)
            | Expr::Subquery(..)
            | Expr::PatternComprehension(_) => {}
            Expr::Property(inner, ..) | Expr::IsNull(inner, _) | Expr::HasLabels(inner, ..) => {
                inner.walk(visit)
            }
            Expr::Unary(_, inner) => inner.walk(visit),
            Expr::Index(a, b) | Expr::Binary(_, a, b) => {
                a.walk(visit);
                b.walk(visit);
            }
            Expr::Slice(a, b, c) => {
                a.walk(visit);
                if let Some(b) = b {
                    b.walk(visit);
                }
                if let Some(c) = c {
                    c.walk(visit);
                }
            }
            Expr::List(items) => items.iter().for_each(|item| item.walk(visit)),
            Expr::Map(entries) => entries.iter().for_each(|(_, item)| item.walk(visit)),
            Expr::MapProjection(base, items) => {
                base.walk(visit);
                for item in items {
                    if let MapProjectionItem::Entry(_, expr) = item {
                        expr.walk(visit);
                    }
                }
            }
            Expr::Function(call) => call.args.iter().for_each(|arg| arg.walk(visit)),
            Expr::Case(case) => {
                if let Some(subject) = &case.subject {
                    subject.walk(visit);
                }
                for (when, then) in &case.whens {
                    when.walk(visit);
                    then.walk(visit);
                }
                if let Some(otherwise) = &case.otherwise {
                    otherwise.walk(visit);
                }
            }
            Expr::ListComprehension(comp) | Expr::Quantified(_, comp) => {
                comp.list.walk(visit);
                if let Some(predicate) = &comp.predicate {
                    predicate.walk(visit);
                }
                if let Some(map) = &comp.map {
                    map.walk(visit);
                }
            }
            Expr::Reduce(reduce) => {
                reduce.init.walk(visit);
                reduce.list.walk(visit);
                reduce.expr.walk(visit);
            }
        }
    }
}
