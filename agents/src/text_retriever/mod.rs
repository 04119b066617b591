//! The text retriever (KET-RAG): documents indexed as chunks and passages with a
//! keyword bipartite graph and a KG skeleton read from the most central chunks
//! ([`build`], [`skeleton`]), searched through an entity channel and a keyword channel
//! ([`retrieve`]); [`role`] serves it on the bus.

pub mod build;
pub mod chunk;
pub mod retrieve;
pub mod role;
pub mod skeleton;
#[cfg(test)]
mod tests;
