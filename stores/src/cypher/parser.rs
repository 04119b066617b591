//! Recursive-descent parser for openCypher's read subset (plus the write and admin
//! clauses, which it turns into [`Clause::Forbidden`] nodes for the validator to refuse).

use super::ast::*;
use super::error::{CypherError, CypherResult, ErrorKind, Span};
use super::lexer::{lex, Tok, Token};

/// Deepest syntax tree accepted; keeps hostile input from exhausting the stack in the
/// parser, the validator, the executor and the tree's own drop. A bracket or a subquery
/// costs [`NESTING_COST`], each operator of a chain (`a + b + c`, `n.a.b`) costs one.
pub const MAX_NESTING: usize = 200;
pub const NESTING_COST: usize = 4;
/// Most relationships in one pattern.
pub const MAX_PATTERN_HOPS: usize = 32;

/// Parses one query (an optional trailing `;` is allowed, a second statement is not).
pub fn parse(src: &str) -> CypherResult<Query> {
    let tokens = lex(src)?;
    let mut parser = Parser {
        src,
        tokens,
        pos: 0,
        depth: 0,
    };
    let query = parser.query()?;
    if parser.peek() == &Tok::Semicolon {
        parser.advance();
    }
    if parser.peek() != &Tok::Eof {
        let span = parser.span();
        let message = if parser.tokens[parser.pos - 1].tok == Tok::Semicolon {
            "only one statement is accepted per query".to_string()
        } else {
            format!(
                "unexpected {} after the end of the query",
                parser.peek().describe()
            )
        };
        return Err(CypherError::syntax(message, span, src));
    }
    Ok(query)
}

const CLAUSE_KEYWORDS: &[&str] = &[
    "MATCH",
    "OPTIONAL",
    "WITH",
    "RETURN",
    "UNWIND",
    "UNION",
    "CREATE",
    "MERGE",
    "SET",
    "DELETE",
    "DETACH",
    "REMOVE",
    "DROP",
    "CALL",
    "LOAD",
    "FOREACH",
    "USE",
    "SHOW",
    "GRANT",
    "REVOKE",
    "DENY",
    "ALTER",
    "RENAME",
    "START",
    "STOP",
    "TERMINATE",
    "ENABLE",
];

/// Words that cannot name a variable (so that `RETURN` after an expression is an error
/// that says so rather than an unknown variable).
const RESERVED: &[&str] = &[
    "MATCH",
    "OPTIONAL",
    "WITH",
    "RETURN",
    "UNWIND",
    "UNION",
    "WHERE",
    "ORDER",
    "BY",
    "SKIP",
    "LIMIT",
    "AS",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "IN",
    "IS",
    "DISTINCT",
    "CREATE",
    "MERGE",
    "SET",
    "DELETE",
    "DETACH",
    "REMOVE",
    "CALL",
    "THEN",
    "ELSE",
    "END",
    "WHEN",
    "ASC",
    "DESC",
    "ASCENDING",
    "DESCENDING",
    "STARTS",
    "ENDS",
    "CONTAINS",
];

struct Parser<'a> {
    src: &'a str,
    tokens: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Tok {
        &self.tokens[self.pos].tok
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        let index = (self.pos + ahead).min(self.tokens.len() - 1);
        &self.tokens[index].tok
    }

    fn span(&self) -> Span {
        self.tokens[self.pos].span
    }

    fn prev_end(&self) -> usize {
        if self.pos == 0 {
            0
        } else {
            self.tokens[self.pos - 1].span.end
        }
    }

    fn advance(&mut self) -> Token {
        let token = self.tokens[self.pos].clone();
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        token
    }

    fn error<T>(&self, message: impl Into<String>) -> CypherResult<T> {
        Err(CypherError::syntax(message.into(), self.span(), self.src))
    }

    fn expected<T>(&self, what: &str) -> CypherResult<T> {
        self.error(format!("expected {what}, found {}", self.peek().describe()))
    }

    fn is_keyword_at(&self, ahead: usize, word: &str) -> bool {
        matches!(self.peek_at(ahead), Tok::Ident(name) if name.eq_ignore_ascii_case(word))
    }

    fn is_keyword(&self, word: &str) -> bool {
        self.is_keyword_at(0, word)
    }

    /// Steps past the next token when `wanted` (whether it is the one looked for) holds.
    fn eat_if(&mut self, wanted: bool) -> bool {
        if wanted {
            self.advance();
        }
        wanted
    }

    fn eat_keyword(&mut self, word: &str) -> bool {
        self.eat_if(self.is_keyword(word))
    }

    fn expect_keyword(&mut self, word: &str) -> CypherResult<()> {
        if self.eat_keyword(word) {
            Ok(())
        } else {
            self.expected(&format!("`{word}`"))
        }
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        self.eat_if(self.peek() == tok)
    }

    fn expect(&mut self, tok: &Tok) -> CypherResult<()> {
        if self.eat(tok) {
            Ok(())
        } else {
            self.expected(&tok.describe())
        }
    }

    fn enter(&mut self) -> CypherResult<()> {
        self.grow(NESTING_COST)
    }

    fn leave(&mut self) {
        self.depth -= NESTING_COST;
    }

    fn grow(&mut self, cost: usize) -> CypherResult<()> {
        self.depth += cost;
        if self.depth > MAX_NESTING {
            return Err(CypherError::new(
                ErrorKind::Limit,
                "expression nests deeper than the parser allows (too many nested brackets or chained operators)",
            )
            .at(self.span(), self.src));
        }
        Ok(())
    }

    /// One more link of an operator chain; `links` is given back when the chain ends.
    fn link(&mut self, links: &mut usize) -> CypherResult<()> {
        *links += 1;
        self.grow(1)
    }

    /// One or more `item`s separated by commas.
    fn comma_list<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> CypherResult<T>,
    ) -> CypherResult<Vec<T>> {
        let mut items = vec![item(self)?];
        while self.eat(&Tok::Comma) {
            items.push(item(self)?);
        }
        Ok(items)
    }

    /// The expression after `keyword`, if the keyword comes next.
    fn expr_after(&mut self, keyword: &str) -> CypherResult<Option<Expr>> {
        if self.eat_keyword(keyword) {
            Ok(Some(self.expr()?))
        } else {
            Ok(None)
        }
    }

    /// A name: an identifier (keywords included, as openCypher allows them as names after
    /// `:` or `.`) or a back-quoted name.
    fn symbolic_name(&mut self, what: &str) -> CypherResult<String> {
        match self.peek().clone() {
            Tok::Ident(name) | Tok::QuotedIdent(name) => {
                self.advance();
                Ok(name)
            }
            _ => self.expected(what),
        }
    }

    fn variable_name(&mut self) -> CypherResult<String> {
        match self.peek().clone() {
            Tok::Ident(name) if !is_reserved(&name) => {
                self.advance();
                Ok(name)
            }
            Tok::QuotedIdent(name) => {
                self.advance();
                Ok(name)
            }
            _ => self.expected("a variable name"),
        }
    }

    // ---------------------------------------------------------------- clauses

    fn query(&mut self) -> CypherResult<Query> {
        if self.is_keyword("EXPLAIN") || self.is_keyword("PROFILE") {
            return Err(CypherError::new(
                ErrorKind::Unsupported,
                "EXPLAIN and PROFILE are not supported; send the query itself",
            )
            .at(self.span(), self.src));
        }
        let mut parts = vec![self.single_query()?];
        let mut union_all = None;
        while self.eat_keyword("UNION") {
            let all = self.eat_keyword("ALL");
            if union_all.is_some_and(|previous| previous != all) {
                return self.error("UNION and UNION ALL cannot be mixed");
            }
            union_all = Some(all);
            parts.push(self.single_query()?);
        }
        Ok(Query {
            parts,
            union_all: union_all.unwrap_or(false),
        })
    }

    fn single_query(&mut self) -> CypherResult<SingleQuery> {
        let mut clauses = Vec::new();
        loop {
            let start = self.span();
            if self.is_keyword("MATCH") || self.is_keyword("OPTIONAL") {
                let optional = self.eat_keyword("OPTIONAL");
                self.expect_keyword("MATCH")?;
                let patterns = self.pattern_list()?;
                let where_clause = self.expr_after("WHERE")?;
                clauses.push(Clause::Match(MatchClause {
                    optional,
                    patterns,
                    where_clause,
                    span: start.to(Span::new(start.start, self.prev_end())),
                }));
            } else if self.eat_keyword("UNWIND") {
                let expr = self.expr()?;
                self.expect_keyword("AS")?;
                let alias = self.variable_name()?;
                clauses.push(Clause::Unwind(UnwindClause {
                    expr,
                    alias,
                    span: Span::new(start.start, self.prev_end()),
                }));
            } else if self.eat_keyword("WITH") {
                let mut projection = self.projection(start)?;
                let mut where_clause = None;
                let mut where_first = false;
                if self.eat_keyword("WHERE") {
                    where_clause = Some(self.expr()?);
                    // Accept ORDER BY / SKIP / LIMIT after WHERE as well (models write both);
                    // then the filter comes first, as written.
                    if projection.order_by.is_empty()
                        && projection.skip.is_none()
                        && projection.limit.is_none()
                    {
                        self.projection_tail(&mut projection)?;
                        where_first = !projection.order_by.is_empty()
                            || projection.skip.is_some()
                            || projection.limit.is_some();
                    }
                }
                clauses.push(Clause::With(WithClause {
                    projection,
                    where_clause,
                    where_first,
                }));
            } else if self.eat_keyword("RETURN") {
                let projection = self.projection(start)?;
                clauses.push(Clause::Return(projection));
                break;
            } else if let Some(kind) = self.forbidden_kind() {
                clauses.push(Clause::Forbidden(self.forbidden_clause(kind, start)?));
            } else if self.peek() == &Tok::Eof
                || self.peek() == &Tok::Semicolon
                || self.peek() == &Tok::RBrace
                || self.is_keyword("UNION")
            {
                break;
            } else {
                return self.expected("a clause (MATCH, OPTIONAL MATCH, WITH, UNWIND or RETURN)");
            }
        }
        if clauses.is_empty() {
            return self.expected("a query");
        }
        Ok(SingleQuery { clauses })
    }

    fn forbidden_kind(&self) -> Option<ForbiddenKind> {
        let Tok::Ident(word) = self.peek() else {
            return None;
        };
        let word = word.to_ascii_uppercase();
        Some(match word.as_str() {
            "CREATE" => ForbiddenKind::Create,
            "MERGE" => ForbiddenKind::Merge,
            "SET" => ForbiddenKind::Set,
            "DELETE" => ForbiddenKind::Delete,
            "DETACH" => ForbiddenKind::DetachDelete,
            "REMOVE" => ForbiddenKind::Remove,
            "DROP" => ForbiddenKind::Drop,
            "CALL" => ForbiddenKind::Call,
            "LOAD" => ForbiddenKind::LoadCsv,
            "FOREACH" => ForbiddenKind::Foreach,
            "USE" => ForbiddenKind::Use,
            "SHOW" | "GRANT" | "REVOKE" | "DENY" | "ALTER" | "RENAME" | "START" | "STOP"
            | "TERMINATE" | "ENABLE" => ForbiddenKind::Admin,
            _ => return None,
        })
    }

    /// Records a forbidden clause and skips its body: it will never run, so its inside
    /// only needs to be delimited, up to the next clause at the same bracket depth.
    fn forbidden_clause(
        &mut self,
        kind: ForbiddenKind,
        start: Span,
    ) -> CypherResult<ForbiddenClause> {
        self.advance();
        let mut detail = None;
        if kind == ForbiddenKind::Call {
            if self.peek() == &Tok::LBrace {
                detail = Some("{ subquery }".to_string());
            } else {
                let mut name = String::new();
                while let Tok::Ident(part) | Tok::QuotedIdent(part) = self.peek().clone() {
                    name.push_str(&part);
                    self.advance();
                    if !self.eat(&Tok::Dot) {
                        break;
                    }
                    name.push('.');
                }
                if !name.is_empty() {
                    detail = Some(name);
                }
            }
        }
        let mut depth = 0usize;
        loop {
            match self.peek() {
                Tok::Eof => break,
                Tok::Semicolon if depth == 0 => break,
                Tok::LParen | Tok::LBracket | Tok::LBrace => depth += 1,
                Tok::RParen | Tok::RBracket | Tok::RBrace => {
                    if depth == 0 {
                        break;
                    }
                    depth -= 1;
                }
                Tok::Ident(word) if depth == 0 => {
                    let upper = word.to_ascii_uppercase();
                    if CLAUSE_KEYWORDS.contains(&upper.as_str()) {
                        break;
                    }
                }
                _ => {}
            }
            self.advance();
        }
        Ok(ForbiddenClause {
            kind,
            detail,
            span: Span::new(start.start, self.prev_end()),
        })
    }

    fn projection(&mut self, start: Span) -> CypherResult<Projection> {
        let distinct = self.eat_keyword("DISTINCT");
        let mut star = false;
        let mut items = Vec::new();
        if self.eat(&Tok::Star) {
            star = true;
            if !self.eat(&Tok::Comma) {
                return self.finish_projection(distinct, star, items, start);
            }
        }
        items = self.comma_list(|parser| {
            let item_start = parser.span().start;
            let expr = parser.expr()?;
            let text = parser.src[item_start..parser.prev_end()].trim().to_string();
            let alias = if parser.eat_keyword("AS") {
                Some(parser.symbolic_name("a name after AS")?)
            } else {
                None
            };
            Ok(ProjectionItem { expr, alias, text })
        })?;
        self.finish_projection(distinct, star, items, start)
    }

    fn finish_projection(
        &mut self,
        distinct: bool,
        star: bool,
        items: Vec<ProjectionItem>,
        start: Span,
    ) -> CypherResult<Projection> {
        let mut projection = Projection {
            distinct,
            star,
            items,
            order_by: Vec::new(),
            skip: None,
            limit: None,
            span: start,
        };
        self.projection_tail(&mut projection)?;
        projection.span = Span::new(start.start, self.prev_end());
        Ok(projection)
    }

    fn projection_tail(&mut self, projection: &mut Projection) -> CypherResult<()> {
        if self.is_keyword("ORDER") {
            self.advance();
            self.expect_keyword("BY")?;
            let order_by = self.comma_list(|parser| {
                let expr = parser.expr()?;
                let descending = if parser.eat_keyword("DESC") || parser.eat_keyword("DESCENDING") {
                    true
                } else {
                    if !parser.eat_keyword("ASC") {
                        parser.eat_keyword("ASCENDING");
                    }
                    false
                };
                Ok(SortItem { expr, descending })
            })?;
            projection.order_by.extend(order_by);
        }
        if self.eat_keyword("SKIP") || self.eat_keyword("OFFSET") {
            projection.skip = Some(self.expr()?);
        }
        if self.eat_keyword("LIMIT") {
            projection.limit = Some(self.expr()?);
        }
        Ok(())
    }

    // ---------------------------------------------------------------- patterns

    fn pattern_list(&mut self) -> CypherResult<Vec<PatternPart>> {
        self.comma_list(Self::pattern_part)
    }

    fn pattern_part(&mut self) -> CypherResult<PatternPart> {
        let start = self.span();
        let mut path_variable = None;
        if matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_)) && self.peek_at(1) == &Tok::Eq
        {
            path_variable = Some(self.variable_name()?);
            self.advance();
        }
        let mut shortest = None;
        if self.is_keyword("shortestPath") || self.is_keyword("allShortestPaths") {
            shortest = Some(if self.is_keyword("shortestPath") {
                Shortest::One
            } else {
                Shortest::All
            });
            self.advance();
            self.expect(&Tok::LParen)?;
        }
        let (node, chain) = self.pattern_element()?;
        if shortest.is_some() {
            self.expect(&Tok::RParen)?;
        }
        Ok(PatternPart {
            path_variable,
            shortest,
            start: node,
            chain,
            span: Span::new(start.start, self.prev_end()),
        })
    }

    fn pattern_element(&mut self) -> CypherResult<(NodePattern, Vec<(RelPattern, NodePattern)>)> {
        let start = self.node_pattern()?;
        let chain = self.rel_chain()?;
        Ok((start, chain))
    }

    /// Whether a relationship (`-` or `<-`) comes next.
    fn at_rel(&self) -> bool {
        self.peek() == &Tok::Minus || (self.peek() == &Tok::Lt && self.peek_at(1) == &Tok::Minus)
    }

    /// The relationships and nodes that follow a pattern's first node.
    fn rel_chain(&mut self) -> CypherResult<Vec<(RelPattern, NodePattern)>> {
        let mut chain = Vec::new();
        while self.at_rel() {
            if chain.len() >= MAX_PATTERN_HOPS {
                return self.error(format!(
                    "a pattern may have at most {MAX_PATTERN_HOPS} relationships"
                ));
            }
            let rel = self.rel_pattern()?;
            let node = self.node_pattern()?;
            chain.push((rel, node));
        }
        Ok(chain)
    }

    fn node_pattern(&mut self) -> CypherResult<NodePattern> {
        let start = self.span();
        self.expect(&Tok::LParen)?;
        let mut variable = None;
        if matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_)) {
            variable = Some(self.variable_name()?);
        }
        let labels = self.label_list()?;
        let properties = self.property_map_opt()?;
        if self.peek() != &Tok::RParen {
            if self.is_keyword("WHERE") {
                return self.error(
                    "a WHERE inside a node pattern is not supported; move it after the MATCH",
                );
            }
            return self.expected("`)` closing the node pattern");
        }
        self.advance();
        Ok(NodePattern {
            variable,
            labels,
            properties,
            span: Span::new(start.start, self.prev_end()),
        })
    }

    fn label_list(&mut self) -> CypherResult<Vec<String>> {
        let mut labels = Vec::new();
        while self.eat(&Tok::Colon) {
            labels.push(self.symbolic_name("a label name")?);
            if self.peek() == &Tok::Pipe {
                return self.error(
                    "label alternatives (`:A|B`) are not supported on nodes; use WHERE n:A OR n:B",
                );
            }
            if self.peek() == &Tok::Plus {
                return self
                    .error("`+` between labels: labels are names, not strings to concatenate");
            }
        }
        Ok(labels)
    }

    fn property_map_opt(&mut self) -> CypherResult<Option<PropertyMap>> {
        match self.peek().clone() {
            Tok::LBrace => Ok(Some(PropertyMap::Literal(self.map_entries()?))),
            Tok::Param(name) => {
                self.advance();
                Ok(Some(PropertyMap::Parameter(name)))
            }
            _ => Ok(None),
        }
    }

    fn rel_pattern(&mut self) -> CypherResult<RelPattern> {
        let start = self.span();
        let left = self.eat(&Tok::Lt);
        self.expect(&Tok::Minus)?;
        let mut variable = None;
        let mut types = Vec::new();
        let mut range = None;
        let mut properties = None;
        if self.eat(&Tok::LBracket) {
            if matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_)) {
                variable = Some(self.variable_name()?);
            }
            if self.eat(&Tok::Colon) {
                types.push(self.symbolic_name("a relationship type")?);
                while self.eat(&Tok::Pipe) {
                    self.eat(&Tok::Colon);
                    types.push(self.symbolic_name("a relationship type")?);
                }
                if self.peek() == &Tok::Plus {
                    return self.error("`+` between relationship types: types are names, not strings to concatenate");
                }
            }
            if self.eat(&Tok::Star) {
                range = Some(self.range()?);
            }
            properties = self.property_map_opt()?;
            if !self.eat(&Tok::RBracket) {
                return self.expected("`]` closing the relationship pattern");
            }
        }
        self.expect(&Tok::Minus)?;
        let right = self.eat(&Tok::Gt);
        let direction = match (left, right) {
            (true, false) => RelDirection::Left,
            (false, true) => RelDirection::Right,
            (false, false) => RelDirection::Either,
            (true, true) => {
                return Err(CypherError::syntax(
                    "a relationship cannot point both ways (`<-…->`)".into(),
                    start,
                    self.src,
                ))
            }
        };
        Ok(RelPattern {
            variable,
            types,
            direction,
            range,
            properties,
            span: Span::new(start.start, self.prev_end()),
        })
    }

    fn range(&mut self) -> CypherResult<VarLength> {
        let mut min = None;
        let mut max = None;
        if let Tok::Int(value) = self.peek().clone() {
            self.advance();
            min = Some(non_negative(value));
        }
        if self.eat(&Tok::DotDot) {
            if let Tok::Int(value) = self.peek().clone() {
                self.advance();
                max = Some(non_negative(value));
            }
        } else if min.is_some() {
            // `*3` means exactly three hops.
            max = min;
        }
        Ok(VarLength { min, max })
    }

    // ---------------------------------------------------------------- expressions

    pub fn expr(&mut self) -> CypherResult<Expr> {
        self.enter()?;
        let result = self.or_expr();
        self.leave();
        result
    }

    /// A left-associative chain `operand (op operand)*` whose operator `eat_op` consumes
    /// and names; each link is counted once its operator is eaten.
    fn eaten_chain(
        &mut self,
        eat_op: fn(&mut Self) -> Option<BinaryOp>,
        operand: fn(&mut Self) -> CypherResult<Expr>,
    ) -> CypherResult<Expr> {
        let mut left = operand(self)?;
        let mut links = 0;
        while let Some(op) = eat_op(self) {
            self.link(&mut links)?;
            let right = operand(self)?;
            left = Expr::Binary(op, Box::new(left), Box::new(right));
        }
        self.depth -= links;
        Ok(left)
    }

    /// A left-associative chain `operand (op operand)*` whose operator is the token
    /// `operator` names; each link is counted before its operator is looked at, and
    /// `combine` joins the chain so far with the next operand.
    fn token_chain(
        &mut self,
        operator: fn(&Tok) -> Option<BinaryOp>,
        operand: fn(&mut Self) -> CypherResult<Expr>,
        combine: fn(BinaryOp, Expr, Expr) -> Expr,
    ) -> CypherResult<Expr> {
        let mut left = operand(self)?;
        let mut links = 0;
        loop {
            self.link(&mut links)?;
            let Some(op) = operator(self.peek()) else {
                break;
            };
            self.advance();
            let right = operand(self)?;
            left = combine(op, left, right);
        }
        self.depth -= links;
        Ok(left)
    }

    fn or_expr(&mut self) -> CypherResult<Expr> {
        self.eaten_chain(
            |parser| parser.eat_keyword("OR").then_some(BinaryOp::Or),
            Self::xor_expr,
        )
    }

    fn xor_expr(&mut self) -> CypherResult<Expr> {
        self.eaten_chain(
            |parser| parser.eat_keyword("XOR").then_some(BinaryOp::Xor),
            Self::and_expr,
        )
    }

    fn and_expr(&mut self) -> CypherResult<Expr> {
        self.eaten_chain(
            |parser| parser.eat_keyword("AND").then_some(BinaryOp::And),
            Self::not_expr,
        )
    }

    fn not_expr(&mut self) -> CypherResult<Expr> {
        if self.eat_keyword("NOT") {
            self.enter()?;
            let inner = self.not_expr();
            self.leave();
            return Ok(Expr::Unary(UnaryOp::Not, Box::new(inner?)));
        }
        self.comparison()
    }

    fn comparison(&mut self) -> CypherResult<Expr> {
        self.token_chain(
            |tok| match tok {
                Tok::Eq => Some(BinaryOp::Eq),
                Tok::Neq => Some(BinaryOp::Neq),
                Tok::Lt => Some(BinaryOp::Lt),
                Tok::Le => Some(BinaryOp::Le),
                Tok::Gt => Some(BinaryOp::Gt),
                Tok::Ge => Some(BinaryOp::Ge),
                Tok::RegexMatch => Some(BinaryOp::RegexMatch),
                _ => None,
            },
            Self::predicate_expr,
            chain_comparison,
        )
    }

    fn predicate_expr(&mut self) -> CypherResult<Expr> {
        let mut left = self.additive()?;
        let mut links = 0;
        loop {
            self.link(&mut links)?;
            // The operator and how many words it takes.
            let word_op = if self.is_keyword("IN") {
                Some((BinaryOp::In, 1))
            } else if self.is_keyword("STARTS") && self.is_keyword_at(1, "WITH") {
                Some((BinaryOp::StartsWith, 2))
            } else if self.is_keyword("ENDS") && self.is_keyword_at(1, "WITH") {
                Some((BinaryOp::EndsWith, 2))
            } else if self.is_keyword("CONTAINS") {
                Some((BinaryOp::Contains, 1))
            } else {
                None
            };
            if let Some((op, words)) = word_op {
                for _ in 0..words {
                    self.advance();
                }
                let right = self.additive()?;
                left = binary(op, left, right);
            } else if self.is_keyword("IS") {
                self.advance();
                let negated = self.eat_keyword("NOT");
                self.expect_keyword("NULL")?;
                left = Expr::IsNull(Box::new(left), negated);
            } else {
                break;
            }
        }
        self.depth -= links;
        Ok(left)
    }

    fn additive(&mut self) -> CypherResult<Expr> {
        self.token_chain(
            |tok| match tok {
                Tok::Plus => Some(BinaryOp::Add),
                Tok::Minus => Some(BinaryOp::Sub),
                _ => None,
            },
            Self::multiplicative,
            binary,
        )
    }

    fn multiplicative(&mut self) -> CypherResult<Expr> {
        self.token_chain(
            |tok| match tok {
                Tok::Star => Some(BinaryOp::Mul),
                Tok::Slash => Some(BinaryOp::Div),
                Tok::Percent => Some(BinaryOp::Mod),
                _ => None,
            },
            Self::power,
            binary,
        )
    }

    fn power(&mut self) -> CypherResult<Expr> {
        self.eaten_chain(
            |parser| parser.eat(&Tok::Caret).then_some(BinaryOp::Pow),
            Self::unary,
        )
    }

    fn unary(&mut self) -> CypherResult<Expr> {
        let op = match self.peek() {
            Tok::Minus => Some(UnaryOp::Neg),
            Tok::Plus => Some(UnaryOp::Pos),
            _ => None,
        };
        if let Some(op) = op {
            self.advance();
            self.enter()?;
            let inner = self.unary();
            self.leave();
            let inner = inner?;
            // Fold `-9223372036854775808`-style literals so they stay integers.
            if op == UnaryOp::Neg {
                match inner {
                    Expr::Literal(Literal::Int(value)) => {
                        return Ok(Expr::Literal(Literal::Int(-value)))
                    }
                    Expr::Literal(Literal::Float(value)) => {
                        return Ok(Expr::Literal(Literal::Float(-value)))
                    }
                    inner => return Ok(Expr::Unary(op, Box::new(inner))),
                }
            }
            return Ok(Expr::Unary(op, Box::new(inner)));
        }
        self.postfix()
    }

    fn postfix(&mut self) -> CypherResult<Expr> {
        let mut expr = self.atom()?;
        let mut links = 0;
        loop {
            self.link(&mut links)?;
            match self.peek() {
                Tok::Dot => {
                    self.advance();
                    let span = self.span();
                    let key = self.symbolic_name("a property name after `.`")?;
                    expr = Expr::Property(Box::new(expr), key, span);
                }
                Tok::LBracket => {
                    self.advance();
                    if self.eat(&Tok::DotDot) {
                        let to = self.slice_end()?;
                        expr = Expr::Slice(Box::new(expr), None, to);
                        continue;
                    }
                    let index = self.expr()?;
                    if self.eat(&Tok::DotDot) {
                        let to = self.slice_end()?;
                        expr = Expr::Slice(Box::new(expr), Some(Box::new(index)), to);
                    } else {
                        self.expect(&Tok::RBracket)?;
                        expr = Expr::Index(Box::new(expr), Box::new(index));
                    }
                }
                Tok::Colon if matches!(expr, Expr::Variable(..)) => {
                    let span = self.span();
                    let labels = self.label_list()?;
                    expr = Expr::HasLabels(Box::new(expr), labels, span);
                }
                Tok::LBrace if matches!(expr, Expr::Variable(..)) => {
                    expr = self.map_projection(expr)?;
                }
                _ => break,
            }
        }
        self.depth -= links;
        Ok(expr)
    }

    /// The `| expr` that ends a REDUCE or a pattern comprehension, up to and including the
    /// `close` bracket.
    fn piped(&mut self, close: &Tok) -> CypherResult<Expr> {
        self.expect(&Tok::Pipe)?;
        let expr = self.expr()?;
        self.expect(close)?;
        Ok(expr)
    }

    /// The end of a slice after its `..`, up to and including the `]`.
    fn slice_end(&mut self) -> CypherResult<Option<Box<Expr>>> {
        let to = if self.peek() == &Tok::RBracket {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        self.expect(&Tok::RBracket)?;
        Ok(to)
    }

    fn map_projection(&mut self, base: Expr) -> CypherResult<Expr> {
        self.expect(&Tok::LBrace)?;
        let mut items = Vec::new();
        if !self.eat(&Tok::RBrace) {
            items = self.comma_list(|parser| {
                if parser.eat(&Tok::Dot) {
                    if parser.eat(&Tok::Star) {
                        Ok(MapProjectionItem::AllProperties)
                    } else {
                        Ok(MapProjectionItem::Property(
                            parser.symbolic_name("a property name")?,
                        ))
                    }
                } else {
                    let name = parser.symbolic_name("a map key")?;
                    if parser.eat(&Tok::Colon) {
                        Ok(MapProjectionItem::Entry(name, parser.expr()?))
                    } else {
                        Ok(MapProjectionItem::Variable(name))
                    }
                }
            })?;
            self.expect(&Tok::RBrace)?;
        }
        Ok(Expr::MapProjection(Box::new(base), items))
    }

    fn map_entries(&mut self) -> CypherResult<Vec<(String, Expr)>> {
        self.expect(&Tok::LBrace)?;
        if self.eat(&Tok::RBrace) {
            return Ok(Vec::new());
        }
        let entries = self.comma_list(|parser| {
            let key = match parser.peek().clone() {
                Tok::Str(key) => {
                    parser.advance();
                    key
                }
                _ => parser.symbolic_name("a map key")?,
            };
            parser.expect(&Tok::Colon)?;
            Ok((key, parser.expr()?))
        })?;
        if !self.eat(&Tok::RBrace) {
            return self.expected("`,` or `}` in the map");
        }
        Ok(entries)
    }

    fn atom(&mut self) -> CypherResult<Expr> {
        let start = self.span();
        match self.peek().clone() {
            Tok::Int(value) => {
                self.advance();
                Ok(Expr::Literal(Literal::Int(value)))
            }
            Tok::Float(value) => {
                self.advance();
                Ok(Expr::Literal(Literal::Float(value)))
            }
            Tok::Str(value) => {
                self.advance();
                Ok(Expr::Literal(Literal::String(value)))
            }
            Tok::Param(name) => {
                self.advance();
                Ok(Expr::Parameter(name))
            }
            Tok::LBrace => Ok(Expr::Map(self.map_entries()?)),
            Tok::LBracket => self.list_like(),
            Tok::LParen => self.paren_or_pattern(),
            Tok::QuotedIdent(name) => {
                self.advance();
                Ok(Expr::Variable(name, start))
            }
            Tok::Ident(name) => self.ident_atom(name, start),
            _ => self.expected("an expression"),
        }
    }

    fn ident_atom(&mut self, name: String, start: Span) -> CypherResult<Expr> {
        let upper = name.to_ascii_uppercase();
        match upper.as_str() {
            "NULL" => {
                self.advance();
                return Ok(Expr::Literal(Literal::Null));
            }
            "TRUE" => {
                self.advance();
                return Ok(Expr::Literal(Literal::Bool(true)));
            }
            "FALSE" => {
                self.advance();
                return Ok(Expr::Literal(Literal::Bool(false)));
            }
            "CASE" => return self.case_expr(),
            "EXISTS" | "COUNT" if self.peek_at(1) == &Tok::LBrace => {
                self.advance();
                let kind = if upper == "EXISTS" {
                    SubqueryKind::Exists
                } else {
                    SubqueryKind::Count
                };
                return self.subquery(kind);
            }
            "COLLECT" if self.peek_at(1) == &Tok::LBrace => {
                return Err(CypherError::new(
                    ErrorKind::Unsupported,
                    "COLLECT { } subqueries are not supported; use collect() in a WITH",
                )
                .at(start, self.src));
            }
            "ALL" | "ANY" | "NONE" | "SINGLE"
                if self.peek_at(1) == &Tok::LParen
                    && matches!(self.peek_at(2), Tok::Ident(_) | Tok::QuotedIdent(_))
                    && self.is_keyword_at(3, "IN") =>
            {
                self.advance();
                self.advance();
                let quantifier = match upper.as_str() {
                    "ALL" => Quantifier::All,
                    "ANY" => Quantifier::Any,
                    "NONE" => Quantifier::None,
                    _ => Quantifier::Single,
                };
                let comprehension = self.comprehension_body(false)?;
                self.expect(&Tok::RParen)?;
                return Ok(Expr::Quantified(quantifier, Box::new(comprehension)));
            }
            "REDUCE" if self.peek_at(1) == &Tok::LParen => {
                self.advance();
                self.advance();
                let accumulator = self.variable_name()?;
                self.expect(&Tok::Eq)?;
                let init = self.expr()?;
                self.expect(&Tok::Comma)?;
                let variable = self.variable_name()?;
                self.expect_keyword("IN")?;
                let list = self.expr()?;
                let expr = self.piped(&Tok::RParen)?;
                return Ok(Expr::Reduce(Box::new(ReduceExpr {
                    accumulator,
                    init,
                    variable,
                    list,
                    expr,
                })));
            }
            _ => {}
        }
        // A function call, possibly namespaced (`duration.between(…)`).
        let mut ahead = 1;
        while self.peek_at(ahead) == &Tok::Dot && matches!(self.peek_at(ahead + 1), Tok::Ident(_)) {
            ahead += 2;
        }
        if self.peek_at(ahead) == &Tok::LParen {
            let mut full_name = String::new();
            for index in 0..ahead {
                match self.peek_at(index) {
                    Tok::Ident(part) => full_name.push_str(part),
                    _ => full_name.push('.'),
                }
            }
            for _ in 0..ahead {
                self.advance();
            }
            return self.function_call(full_name, start);
        }
        if is_reserved(&name) {
            return self.expected("an expression");
        }
        self.advance();
        Ok(Expr::Variable(name, start))
    }

    fn function_call(&mut self, name: String, start: Span) -> CypherResult<Expr> {
        self.expect(&Tok::LParen)?;
        let lower = name.to_ascii_lowercase();
        if lower == "count" && self.peek() == &Tok::Star {
            self.advance();
            self.expect(&Tok::RParen)?;
            return Ok(Expr::CountStar);
        }
        let distinct = self.eat_keyword("DISTINCT");
        let mut args = Vec::new();
        if !self.eat(&Tok::RParen) {
            args = self.comma_list(Self::expr)?;
            if !self.eat(&Tok::RParen) {
                return self.expected("`,` or `)` in the function call");
            }
        }
        Ok(Expr::Function(FunctionCall {
            name: lower,
            distinct,
            args,
            span: Span::new(start.start, self.prev_end()),
        }))
    }

    fn case_expr(&mut self) -> CypherResult<Expr> {
        self.advance();
        let subject = if self.is_keyword("WHEN") {
            None
        } else {
            Some(Box::new(self.expr()?))
        };
        let mut whens = Vec::new();
        while self.eat_keyword("WHEN") {
            let when = self.expr()?;
            self.expect_keyword("THEN")?;
            let then = self.expr()?;
            whens.push((when, then));
        }
        if whens.is_empty() {
            return self.expected("`WHEN` in CASE");
        }
        let otherwise = self.expr_after("ELSE")?.map(Box::new);
        self.expect_keyword("END")?;
        Ok(Expr::Case(CaseExpr {
            subject,
            whens,
            otherwise,
        }))
    }

    fn subquery(&mut self, kind: SubqueryKind) -> CypherResult<Expr> {
        self.expect(&Tok::LBrace)?;
        self.enter()?;
        let starts_with_clause = [
            "MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN", "CALL", "CREATE", "MERGE", "SET",
            "DELETE", "DETACH", "REMOVE", "FOREACH", "LOAD", "USE", "DROP",
        ]
        .iter()
        .any(|word| self.is_keyword(word));
        let query = if starts_with_clause {
            self.query()
        } else {
            let start = self.span();
            self.pattern_list().and_then(|patterns| {
                let where_clause = self.expr_after("WHERE")?;
                Ok(Query {
                    parts: vec![SingleQuery {
                        clauses: vec![Clause::Match(MatchClause {
                            optional: false,
                            patterns,
                            where_clause,
                            span: Span::new(start.start, self.prev_end()),
                        })],
                    }],
                    union_all: false,
                })
            })
        };
        self.leave();
        let query = query?;
        if !self.eat(&Tok::RBrace) {
            return self.expected("`}` closing the subquery");
        }
        Ok(Expr::Subquery(kind, Box::new(Subquery { query })))
    }

    fn list_like(&mut self) -> CypherResult<Expr> {
        self.expect(&Tok::LBracket)?;
        // `[x IN list WHERE … | …]`
        if matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_)) && self.is_keyword_at(1, "IN")
        {
            let comprehension = self.comprehension_body(true)?;
            self.expect(&Tok::RBracket)?;
            return Ok(Expr::ListComprehension(Box::new(comprehension)));
        }
        // `[(a)-->(b) WHERE … | b.name]`
        if self.peek() == &Tok::LParen
            || (matches!(self.peek(), Tok::Ident(_) | Tok::QuotedIdent(_))
                && self.peek_at(1) == &Tok::Eq)
        {
            let saved = self.pos;
            if let Ok(pattern) = self.pattern_part() {
                if !pattern.chain.is_empty()
                    && (self.is_keyword("WHERE") || self.peek() == &Tok::Pipe)
                {
                    let where_clause = self.expr_after("WHERE")?;
                    let map = self.piped(&Tok::RBracket)?;
                    return Ok(Expr::PatternComprehension(Box::new(PatternComprehension {
                        pattern,
                        where_clause,
                        map,
                    })));
                }
            }
            self.pos = saved;
        }
        let mut items = Vec::new();
        if !self.eat(&Tok::RBracket) {
            items = self.comma_list(Self::expr)?;
            if !self.eat(&Tok::RBracket) {
                return self.expected("`,` or `]` in the list");
            }
        }
        Ok(Expr::List(items))
    }

    fn comprehension_body(&mut self, allow_map: bool) -> CypherResult<ListComprehension> {
        let variable = self.variable_name()?;
        self.expect_keyword("IN")?;
        let list = self.expr()?;
        let predicate = self.expr_after("WHERE")?;
        let map = if allow_map && self.eat(&Tok::Pipe) {
            Some(self.expr()?)
        } else {
            None
        };
        Ok(ListComprehension {
            variable,
            list,
            predicate,
            map,
        })
    }

    fn paren_or_pattern(&mut self) -> CypherResult<Expr> {
        let saved = self.pos;
        if let Ok(node) = self.node_pattern() {
            if self.at_rel() {
                let after_node = self.pos;
                let rel_ok = self.rel_pattern().is_ok() && self.peek() == &Tok::LParen;
                self.pos = after_node;
                if rel_ok {
                    let chain = self.rel_chain()?;
                    let span = Span::new(node.span.start, self.prev_end());
                    return Ok(Expr::PatternPredicate(Box::new(PatternPart {
                        path_variable: None,
                        shortest: None,
                        start: node,
                        chain,
                        span,
                    })));
                }
            }
        }
        self.pos = saved;
        self.advance();
        let inner = self.expr()?;
        if !self.eat(&Tok::RParen) {
            return self.expected("`)`");
        }
        Ok(inner)
    }
}

fn is_reserved(name: &str) -> bool {
    RESERVED.iter().any(|word| word.eq_ignore_ascii_case(name))
}

fn binary(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    Expr::Binary(op, Box::new(left), Box::new(right))
}

/// Joins a comparison to the chain before it: `a < b < c` means `a < b AND b < c`.
fn chain_comparison(op: BinaryOp, left: Expr, right: Expr) -> Expr {
    match left {
        Expr::Binary(prev_op, prev_left, prev_right)
            if is_comparison(prev_op) && is_comparison(op) =>
        {
            let middle = (*prev_right).clone();
            Expr::Binary(
                BinaryOp::And,
                Box::new(Expr::Binary(prev_op, prev_left, prev_right)),
                Box::new(binary(op, middle, right)),
            )
        }
        left => binary(op, left, right),
    }
}

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Eq | BinaryOp::Neq | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
    )
}

fn non_negative(value: i64) -> u64 {
    value.max(0) as u64
}
