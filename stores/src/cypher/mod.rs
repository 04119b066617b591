//! Read-only openCypher: a parser for the read subset, a validator shared by every graph
//! backend (it refuses writes, admin commands and procedure calls by clause, checks names
//! against the store's schema and answers unknown ones with a repair hint), and an
//! executor over any [`PropertyGraph`], with a row cap and a deadline.
//!
//! LLM-written queries come in through here, so nothing in this module panics on bad input
//! and nothing runs unbounded.
//!
//! ```
//! use kgmesh_stores::cypher::parse;
//! let query = parse("MATCH (p:Product) WHERE p.unitPrice > 10 RETURN p.productName LIMIT 3").unwrap();
//! assert_eq!(query.parts.len(), 1);
//! ```

pub mod ast;
pub mod error;
pub mod lexer;
mod parser;

pub use error::{CypherError, CypherResult, ErrorKind, Position, Span};
pub use lexer::cypher_name;
pub use parser::parse;
pub mod exec;
pub mod graph;
pub mod validator;

pub use exec::execute;
pub use graph::{EdgeRef, MemoryGraph, PropertyGraph};
pub use validator::{validate, validate_with, work_budget};

use kgmesh_schemas::graph::{GraphSchema, Rows, Value};

use crate::{QueryLimits, StoreResult};

/// Parses, validates and runs `text` read-only: the one entry point a store needs.
pub fn run_read_only(
    graph: &dyn PropertyGraph,
    schema: &GraphSchema,
    text: &str,
    params: &[(String, Value)],
    limits: &QueryLimits,
) -> StoreResult<Rows> {
    let query = parse(text)?;
    validate_with(&query, schema, limits, Some(graph))?;
    Ok(execute(graph, &query, params, limits)?)
}

/// Parses and validates without running (what a backend that runs Cypher itself calls
/// before sending a query on).
pub fn check_read_only(
    text: &str,
    schema: &GraphSchema,
    limits: &QueryLimits,
) -> StoreResult<ast::Query> {
    let query = parse(text)?;
    validate(&query, schema, limits)?;
    Ok(query)
}

mod embedded_impl;
pub use embedded_impl::run_on_embedded;
