//! Pattern matcher (SimGRAG): the question as a graph pattern, matched to the top-k
//! subgraphs by graph semantic distance, as a retriever on the bus.
//!
//! [`pattern`] builds the pattern (LLM-free: relation phrases cut around the named
//! entities), [`search`] is the paper's pruned top-k subgraph search over a small
//! graph read around the named entities, [`core`] ties them together and [`role`] serves
//! it.

pub mod core;
pub mod pattern;
pub mod role;
pub mod search;

#[cfg(test)]
mod tests;
