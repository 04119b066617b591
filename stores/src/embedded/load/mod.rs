//! Loaders (in progress).
