//! Tokens of openCypher's read subset, each with the byte range it came from so that
//! every error can point at a line and column.

use super::error::{CypherError, Span};

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An unquoted name or keyword; keywords are recognised by the parser, case-insensitively.
    Ident(String),
    /// A `` `quoted` `` name: never a keyword.
    QuotedIdent(String),
    Str(String),
    Int(i64),
    Float(f64),
    Param(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    Dot,
    DotDot,
    Colon,
    Semicolon,
    Pipe,
    Eq,
    Neq,
    Lt,
    Gt,
    Le,
    Ge,
    RegexMatch,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Eof,
}

impl Tok {
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(name) => format!("`{name}`"),
            Tok::QuotedIdent(name) => format!("`{name}`"),
            Tok::Str(_) => "a string".into(),
            Tok::Int(i) => format!("{i}"),
            Tok::Float(f) => format!("{f}"),
            Tok::Param(p) => format!("${p}"),
            Tok::Eof => "the end of the query".into(),
            other => format!("`{}`", punct_text(other)),
        }
    }
}

fn punct_text(tok: &Tok) -> &'static str {
    match tok {
        Tok::LParen => "(",
        Tok::RParen => ")",
        Tok::LBracket => "[",
        Tok::RBracket => "]",
        Tok::LBrace => "{",
        Tok::RBrace => "}",
        Tok::Comma => ",",
        Tok::Dot => ".",
        Tok::DotDot => "..",
        Tok::Colon => ":",
        Tok::Semicolon => ";",
        Tok::Pipe => "|",
        Tok::Eq => "=",
        Tok::Neq => "<>",
        Tok::Lt => "<",
        Tok::Gt => ">",
        Tok::Le => "<=",
        Tok::Ge => ">=",
        Tok::RegexMatch => "=~",
        Tok::Plus => "+",
        Tok::Minus => "-",
        Tok::Star => "*",
        Tok::Slash => "/",
        Tok::Percent => "%",
        Tok::Caret => "^",
        _ => "?",
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

/// Longest query text accepted: bounds lexing and parsing work on hostile input.
pub const MAX_QUERY_BYTES: usize = 64 * 1024;

pub fn lex(src: &str) -> Result<Vec<Token>, CypherError> {
    if src.len() > MAX_QUERY_BYTES {
        return Err(CypherError::syntax(
            format!(
                "query is {} bytes long; at most {MAX_QUERY_BYTES} are accepted",
                src.len()
            ),
            Span::new(0, 0),
            src,
        ));
    }
    let bytes = src.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        let c = bytes[pos];
        if c.is_ascii_whitespace() {
            pos += 1;
            continue;
        }
        if c == b'/' && bytes.get(pos + 1) == Some(&b'/') {
            while pos < bytes.len() && bytes[pos] != b'\n' {
                pos += 1;
            }
            continue;
        }
        if c == b'/' && bytes.get(pos + 1) == Some(&b'*') {
            let start = pos;
            pos += 2;
            loop {
                if pos + 1 >= bytes.len() {
                    return Err(CypherError::syntax(
                        "unterminated /* comment".into(),
                        Span::new(start, start + 2),
                        src,
                    ));
                }
                if bytes[pos] == b'*' && bytes[pos + 1] == b'/' {
                    pos += 2;
                    break;
                }
                pos += 1;
            }
            continue;
        }
        let start = pos;
        let tok = match c {
            b'(' => one(&mut pos, Tok::LParen),
            b')' => one(&mut pos, Tok::RParen),
            b'[' => one(&mut pos, Tok::LBracket),
            b']' => one(&mut pos, Tok::RBracket),
            b'{' => one(&mut pos, Tok::LBrace),
            b'}' => one(&mut pos, Tok::RBrace),
            b',' => one(&mut pos, Tok::Comma),
            b':' => one(&mut pos, Tok::Colon),
            b';' => one(&mut pos, Tok::Semicolon),
            b'|' => one(&mut pos, Tok::Pipe),
            b'+' => one(&mut pos, Tok::Plus),
            b'-' => one(&mut pos, Tok::Minus),
            b'*' => one(&mut pos, Tok::Star),
            b'/' => one(&mut pos, Tok::Slash),
            b'%' => one(&mut pos, Tok::Percent),
            b'^' => one(&mut pos, Tok::Caret),
            b'.' => {
                if bytes.get(pos + 1) == Some(&b'.') {
                    two(&mut pos, Tok::DotDot)
                } else if bytes.get(pos + 1).is_some_and(|b| b.is_ascii_digit()) {
                    number(src, &mut pos)?
                } else {
                    one(&mut pos, Tok::Dot)
                }
            }
            b'=' => {
                if bytes.get(pos + 1) == Some(&b'~') {
                    two(&mut pos, Tok::RegexMatch)
                } else {
                    one(&mut pos, Tok::Eq)
                }
            }
            b'<' => match bytes.get(pos + 1) {
                Some(b'=') => two(&mut pos, Tok::Le),
                Some(b'>') => two(&mut pos, Tok::Neq),
                _ => one(&mut pos, Tok::Lt),
            },
            b'>' => {
                if bytes.get(pos + 1) == Some(&b'=') {
                    two(&mut pos, Tok::Ge)
                } else {
                    one(&mut pos, Tok::Gt)
                }
            }
            b'!' if bytes.get(pos + 1) == Some(&b'=') => two(&mut pos, Tok::Neq),
            b'\'' | b'"' => string(src, &mut pos)?,
            b'`' => Tok::QuotedIdent(quoted_name(src, &mut pos)?),
            b'$' if bytes.get(pos + 1) == Some(&b'`') => {
                pos += 1;
                Tok::Param(quoted_name(src, &mut pos)?)
            }
            b'$' => {
                pos += 1;
                let name_start = pos;
                while pos < bytes.len()
                    && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_')
                {
                    pos += 1;
                }
                if pos == name_start {
                    return Err(CypherError::syntax(
                        "expected a parameter name after `$`".into(),
                        Span::new(start, start + 1),
                        src,
                    ));
                }
                Tok::Param(src[name_start..pos].to_string())
            }
            b'0'..=b'9' => number(src, &mut pos)?,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                while pos < bytes.len()
                    && (bytes[pos].is_ascii_alphanumeric() || bytes[pos] == b'_')
                {
                    pos += 1;
                }
                if pos < bytes.len() && bytes[pos] >= 0x80 {
                    return Err(non_ascii(src, pos));
                }
                Tok::Ident(src[start..pos].to_string())
            }
            c if c >= 0x80 => return Err(non_ascii(src, pos)),
            _ => {
                return Err(CypherError::syntax(
                    format!("unexpected character `{}`", c as char),
                    Span::new(start, start + 1),
                    src,
                ))
            }
        };
        tokens.push(Token {
            tok,
            span: Span::new(start, pos),
        });
    }
    tokens.push(Token {
        tok: Tok::Eof,
        span: Span::new(src.len(), src.len()),
    });
    Ok(tokens)
}

/// A label, relationship type, property key or variable as Cypher text: bare when the
/// lexer reads it as one plain name (`ORDERS`, `name`), else back-quoted with inner
/// backquotes doubled (`` `http://example.org/operatedBy` ``, `` `unit price` ``), so
/// that a name shown in a hint can be pasted into a query as it stands.
pub fn cypher_name(name: &str) -> std::borrow::Cow<'_, str> {
    let mut bytes = name.bytes();
    let plain = bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        std::borrow::Cow::Borrowed(name)
    } else {
        std::borrow::Cow::Owned(format!("`{}`", name.replace('`', "``")))
    }
}

/// Reads a `` `back-quoted name` `` starting at `*pos` (on its opening backquote);
/// a doubled backquote inside stands for one.
fn quoted_name(src: &str, pos: &mut usize) -> Result<String, CypherError> {
    let bytes = src.as_bytes();
    let start = *pos;
    *pos += 1;
    let name_start = *pos;
    let mut name = String::new();
    loop {
        match bytes.get(*pos) {
            None => {
                return Err(CypherError::syntax(
                    "unterminated `quoted name`".into(),
                    Span::new(start, name_start),
                    src,
                ))
            }
            Some(b'`') if bytes.get(*pos + 1) == Some(&b'`') => {
                name.push('`');
                *pos += 2;
            }
            Some(b'`') => {
                *pos += 1;
                return Ok(name);
            }
            Some(_) => {
                let ch = next_char(src, *pos);
                name.push(ch);
                *pos += ch.len_utf8();
            }
        }
    }
}

/// A one-character token.
fn one(pos: &mut usize, tok: Tok) -> Tok {
    *pos += 1;
    tok
}

/// A two-character token.
fn two(pos: &mut usize, tok: Tok) -> Tok {
    *pos += 2;
    tok
}

fn next_char(src: &str, pos: usize) -> char {
    src[pos..].chars().next().unwrap_or('\u{FFFD}')
}

/// Unquoted names are ASCII: a Cyrillic `А` that looks like a Latin `A` in a keyword or a
/// label is refused here, where it can be named, instead of surfacing later as a puzzling
/// "unknown label".
fn non_ascii(src: &str, pos: usize) -> CypherError {
    let ch = next_char(src, pos);
    CypherError::syntax(
        format!(
            "non-ASCII character `{ch}` (U+{:04X}) outside a string; names that are not plain ASCII must be `back-quoted` (is it a look-alike of a Latin letter?)",
            ch as u32
        ),
        Span::new(pos, pos + ch.len_utf8()),
        src,
    )
}

fn string(src: &str, pos: &mut usize) -> Result<Tok, CypherError> {
    let bytes = src.as_bytes();
    let quote = bytes[*pos];
    let start = *pos;
    *pos += 1;
    let mut out = String::new();
    loop {
        let Some(&b) = bytes.get(*pos) else {
            return Err(CypherError::syntax(
                "unterminated string literal".into(),
                Span::new(start, start + 1),
                src,
            ));
        };
        if b == quote {
            *pos += 1;
            return Ok(Tok::Str(out));
        }
        if b == b'\\' {
            let Some(&esc) = bytes.get(*pos + 1) else {
                return Err(CypherError::syntax(
                    "unterminated string literal".into(),
                    Span::new(start, start + 1),
                    src,
                ));
            };
            *pos += 2;
            match esc {
                b'n' => out.push('\n'),
                b't' => out.push('\t'),
                b'r' => out.push('\r'),
                b'b' => out.push('\u{8}'),
                b'f' => out.push('\u{c}'),
                b'0' => out.push('\0'),
                b'\\' => out.push('\\'),
                b'\'' => out.push('\''),
                b'"' => out.push('"'),
                b'u' | b'U' => {
                    let len = if esc == b'u' { 4 } else { 8 };
                    let hex = src.get(*pos..*pos + len).unwrap_or("");
                    let ch = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32);
                    match ch {
                        Some(ch) if hex.len() == len => {
                            out.push(ch);
                            *pos += len;
                        }
                        _ => {
                            return Err(CypherError::syntax(
                                "invalid unicode escape in string".into(),
                                Span::new(*pos - 2, *pos),
                                src,
                            ))
                        }
                    }
                }
                _ => {
                    // Regular expressions keep their backslashes (`'\\d'` and `'\d'` alike).
                    out.push('\\');
                    let ch = next_char(src, *pos - 1);
                    out.push(ch);
                    *pos += ch.len_utf8() - 1;
                }
            }
            continue;
        }
        let ch = next_char(src, *pos);
        out.push(ch);
        *pos += ch.len_utf8();
    }
}

fn number(src: &str, pos: &mut usize) -> Result<Tok, CypherError> {
    let bytes = src.as_bytes();
    let start = *pos;
    if bytes[*pos] == b'0' && matches!(bytes.get(*pos + 1), Some(b'x') | Some(b'X')) {
        *pos += 2;
        let digits_start = *pos;
        while *pos < bytes.len() && bytes[*pos].is_ascii_hexdigit() {
            *pos += 1;
        }
        return i64::from_str_radix(&src[digits_start..*pos], 16)
            .map(Tok::Int)
            .map_err(|_| {
                CypherError::syntax(
                    "invalid hexadecimal integer".into(),
                    Span::new(start, *pos),
                    src,
                )
            });
    }
    while *pos < bytes.len() && bytes[*pos].is_ascii_digit() {
        *pos += 1;
    }
    let mut is_float = false;
    // `1..3` is a range, not the float `1.` followed by `.3`.
    if *pos < bytes.len()
        && bytes[*pos] == b'.'
        && bytes.get(*pos + 1).is_some_and(|b| b.is_ascii_digit())
    {
        is_float = true;
        *pos += 1;
        while *pos < bytes.len() && bytes[*pos].is_ascii_digit() {
            *pos += 1;
        }
    }
    if *pos < bytes.len() && (bytes[*pos] == b'e' || bytes[*pos] == b'E') {
        let mut look = *pos + 1;
        if look < bytes.len() && (bytes[look] == b'+' || bytes[look] == b'-') {
            look += 1;
        }
        if look < bytes.len() && bytes[look].is_ascii_digit() {
            is_float = true;
            *pos = look;
            while *pos < bytes.len() && bytes[*pos].is_ascii_digit() {
                *pos += 1;
            }
        }
    }
    if *pos < bytes.len() && (bytes[*pos].is_ascii_alphabetic() || bytes[*pos] == b'_') {
        return Err(CypherError::syntax(
            "a number runs into a name".into(),
            Span::new(start, *pos + 1),
            src,
        ));
    }
    let text = &src[start..*pos];
    if is_float {
        text.parse::<f64>()
            .map(Tok::Float)
            .map_err(|_| CypherError::syntax("invalid number".into(), Span::new(start, *pos), src))
    } else {
        text.parse::<i64>().map(Tok::Int).map_err(|_| {
            CypherError::syntax(
                "integer literal is out of range".into(),
                Span::new(start, *pos),
                src,
            )
        })
    }
}
