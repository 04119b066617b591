//! Local all-MiniLM-L6-v2.
