//! Errors of the Cypher pipeline. Every one carries what went wrong in words a model can
//! act on and, where there is one, a repair hint; they convert into
//! [`StoreError`](crate::StoreError) at the store boundary.

use crate::StoreError;

/// A byte range of the query text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Self {
        Self { start, end }
    }

    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// 1-based line and column (in characters) of a byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub offset: usize,
    pub line: usize,
    pub column: usize,
}

impl Position {
    pub fn of(src: &str, offset: usize) -> Self {
        let offset = offset.min(src.len());
        let mut line = 1;
        let mut column = 1;
        for (index, ch) in src.char_indices() {
            if index >= offset {
                break;
            }
            if ch == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        Self {
            offset,
            line,
            column,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not Cypher this parser understands.
    Syntax,
    /// A write, admin or procedure clause: never run.
    Forbidden,
    /// A label, relationship type, property key or variable that does not exist.
    UnknownName,
    /// Valid openCypher outside the supported subset.
    Unsupported,
    /// Over the depth, row or work budget.
    Limit,
    /// Over the time budget.
    Timeout { millis: u64 },
    /// A type error or similar while evaluating.
    Runtime,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CypherError {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    pub position: Option<Position>,
}

impl CypherError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            hint: None,
            position: None,
        }
    }

    pub fn syntax(message: String, span: Span, src: &str) -> Self {
        Self::new(ErrorKind::Syntax, message).at(span, src)
    }

    pub fn at(mut self, span: Span, src: &str) -> Self {
        self.position = Some(Position::of(src, span.start));
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn runtime(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Runtime, message)
    }
}

impl std::fmt::Display for CypherError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(position) = self.position {
            write!(f, "line {}, column {}: ", position.line, position.column)?;
        }
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CypherError {}

impl From<CypherError> for StoreError {
    fn from(error: CypherError) -> Self {
        let reason = match error.position {
            Some(position) => format!(
                "line {}, column {}: {}",
                position.line, position.column, error.message
            ),
            None => error.message.clone(),
        };
        match error.kind {
            ErrorKind::Timeout { millis } => StoreError::Timeout { millis },
            ErrorKind::Limit => StoreError::LimitExceeded {
                detail: match &error.hint {
                    Some(hint) => format!("{reason}; {hint}"),
                    None => reason,
                },
            },
            _ => StoreError::InvalidQuery {
                reason,
                hint: error.hint,
            },
        }
    }
}

pub type CypherResult<T> = Result<T, CypherError>;
