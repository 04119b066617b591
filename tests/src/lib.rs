//! Test harness for kgmesh: starts real servers (nats-server, a Bolt graph database, an
//! OTLP collector) on random ports for one test and stops them when dropped. A missing
//! server binary fails the test with instructions, never skips it.

pub mod bolt;
pub mod nats;
