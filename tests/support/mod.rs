//! Shared test harness: a scripted fake chat-completions server, a runner for the hx binary,
//! hx on a pseudo-terminal (`pty`), hook scripts (`hooks`), and readers of what hx sent.
//!
//! The integration tests (`tests/it/main.rs`) and the benchmarks include it by path:
//! `#[path = "../support/mod.rs"] mod support;`, `#[path = "../tests/support/mod.rs"] mod
//! support;`.
#![allow(dead_code, unused_imports)]

pub mod acp;
pub mod body;
pub mod calls;
pub mod confine;
pub mod hooks;
pub mod hostile;
pub mod jsonl;
pub mod mcp;
pub mod prefix_cache;
pub mod procs;
pub mod pty;
pub mod raw_http;
pub mod reply;
pub mod runner;
pub mod server;
pub mod trust;
pub mod user;
pub mod visible;
pub mod windows;

pub use body::{
    is_summary, messages, system_prompt, tool_answer, tool_messages, tool_names, tool_results,
    BUILT_IN_TOOLS,
};
pub use jsonl::{json_lines, session_id, session_lines, short_id};
pub use prefix_cache::{PrefixCache, Priced};
pub use procs::ends_within;
pub use reply::{Call, Reply};
pub use runner::{outside_tmp, Hx, Run, DEFAULT_TIMEOUT};
pub use server::{FakeServer, Recorded};
