//! The vocabulary of kgmesh: every message that crosses the bus, the envelope it travels
//! in, the budgets a question may spend, and the errors that may come back instead of an
//! answer.
//!
//! Nothing here does I/O. The bus moves bytes, the agents compute; this crate is the one
//! place where both agree on what the bytes mean, so a change to the wire is a change to
//! this crate (and to its golden-bytes test).
//!
//! ```
//! use kgmesh_schemas::{codec, ContentType, messages::echo::EchoRequest};
//! let bytes = codec::encode(ContentType::Bincode, &EchoRequest { text: "hi".into() }).unwrap();
//! let back: EchoRequest = codec::decode(ContentType::Bincode, &bytes).unwrap();
//! assert_eq!(back.text, "hi");
//! ```

pub mod budget;
pub mod codec;
pub mod envelope;
pub mod error;
pub mod graph;
pub mod ids;
#[cfg(feature = "json-schema")]
pub mod json_schema;
pub mod messages;
pub mod relation_text;
pub mod render;
pub mod subjects;
pub mod text;

pub use budget::{Budget, BudgetError, Deadline, Depth};
pub use codec::{CodecError, ContentType};
pub use envelope::{Meta, Reply, Request, TraceContext, SCHEMA_VERSION};
pub use error::AgentError;
pub use ids::{NodeId, QuestionId};
pub use messages::Rpc;
pub use subjects::{Role, RoleInfo, RoleKind};
