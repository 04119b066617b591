//! Observability shared by every kgmesh process: log/trace subscriber setup, optional OTLP
//! export, and W3C trace-context propagation between the bus envelope ([`Meta`]) and spans, so
//! one question is one trace across processes.
//!
//! [`Meta`]: kgmesh_schemas::Meta
