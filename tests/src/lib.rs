//! Test harness for kgmesh: starts real servers (nats-server, a Bolt graph database, an
//! OTLP collector) on random ports for one test and stops them when dropped. A missing
//! server binary fails the test with instructions, never skips it. Qdrant, which cannot
//! be installed here, is the one exception: `qdrant_standin` is an in-memory server for
//! Qdrant's gRPC API, built from `qdrant-client`'s generated server traits. [`data`]
//! finds the benchmark data sets without a fixed machine path. [`llm_stub`] is a scripted
//! OpenAI-compatible chat server for driving the model path with a known-broken model.

pub mod bolt;
pub mod data;
pub mod llm_stub;
pub mod nats;
pub mod otlp;
pub mod qdrant_standin;
