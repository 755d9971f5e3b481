//! hx: a coding agent for the terminal.
//!
//! The binary (`src/main.rs`) is a thin shell over this library so that tests and benchmarks
//! drive the same code the user runs.

pub mod acp;
pub mod agent;
pub mod agents;
pub mod app;
pub mod chat;
pub mod checkpoint;
pub mod cli;
pub mod commands;
pub mod config;
pub mod context;
pub mod events;
pub mod hooks;
pub mod mcp;
pub mod model;
pub mod notify;
pub mod paths;
pub mod process;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod term;
pub mod text;
pub mod tools;
pub mod trust;
