//! Request and reply types of every role. Each request type implements [`Rpc`], which
//! names its operation and its reply type, so a typed client cannot send a request to
//! the wrong subject or expect the wrong reply.

pub mod ask;
pub mod cache;
pub mod context;
pub mod echo;
pub mod entity_linker;
pub mod judge;
pub mod kg_linker;
pub mod path_follower;
pub mod query_executor;
pub mod retrieve;
pub mod summarizer;
pub mod traverser;

use serde::{de::DeserializeOwned, Serialize};

/// A request type: the operation it is served on and the reply it gets.
pub trait Rpc: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Operation name, the last token of the subject.
    const OP: &'static str;
    /// The role that serves this operation unless the caller names another (retrievers
    /// share one request type across many roles).
    const DEFAULT_ROLE: &'static str;
    /// The request changes nothing (it only reads): sending it twice, to two
    /// replicas, is harmless. Calls of such operations may be hedged.
    const READ_ONLY: bool = true;
    type Reply: Serialize + DeserializeOwned + Send + Sync + 'static;
}
