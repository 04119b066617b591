//! Snapshots (in progress).
