//! Shared test harness: a scripted fake chat-completions server and a runner for the hx binary.
//!
//! Include from an integration test with `mod support;`, or from a benchmark with
//! `#[path = "../tests/support/mod.rs"] mod support;`.
#![allow(dead_code, unused_imports)]

pub mod body;
pub mod hostile;
pub mod mcp;
pub mod procs;
pub mod raw_http;
pub mod reply;
pub mod runner;
pub mod server;

pub use body::{messages, system_prompt, tool_answer, tool_names, BUILT_IN_TOOLS};
pub use procs::ends_within;
pub use reply::{Call, Reply};
pub use runner::{Hx, Run, DEFAULT_TIMEOUT};
pub use server::{FakeServer, Recorded};
