//! KG-Linker (ByoKG-RAG §3.1).

pub mod core;
pub mod reader;
pub mod role;

#[cfg(test)]
mod tests;
