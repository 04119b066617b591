//! Entity linker (ByoKG-RAG §3.2).

pub mod core;
pub mod names;
pub mod role;

#[cfg(test)]
mod tests;
