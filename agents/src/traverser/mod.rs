//! Agentic traverser (ByoKG-RAG Algorithm 1).

pub mod core;
pub mod role;

#[cfg(test)]
mod tests;
