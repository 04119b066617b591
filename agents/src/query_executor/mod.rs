//! Query executor (ByoKG-RAG §3.4, GraphRAFT).

pub mod core;
pub mod grounded;
pub mod planner;
pub mod role;

#[cfg(test)]
mod tests;
