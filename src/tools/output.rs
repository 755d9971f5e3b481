//! Bounded tool output (stub).
