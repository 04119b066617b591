//! Path follower (ByoKG-RAG §3.3) and the bounded expansion operators (CacheRAG §4.3).

pub mod core;
pub mod role;

#[cfg(test)]
mod tests;
