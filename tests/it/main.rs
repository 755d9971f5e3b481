//! The integration tests, as one test binary (ripgrep's layout): each file here is a module
//! of it, so tokio, reqwest and rmcp are linked into one binary instead of one per file.
//!
//! The tests run as threads of this one process: none may change what the process shares
//! (its environment, current folder, signal handling, umask), since that would change it
//! under the tests of every other module too.
//!
//! One module's tests: `cargo test --test it mcp::`. A run of `it` alone does not build the
//! suite's MCP server (`cargo test` does): `cargo build --example mcp_test_server` first.

#[path = "../support/mod.rs"]
mod support;

mod acp;
mod acp_containment;
mod acp_npm;
mod agent;
mod background_shells;
mod bounds;
mod cache;
mod chat;
mod chat_approvals;
mod chat_steer;
mod checkpoints;
mod checkpoints_kept;
mod commands;
mod containment;
mod containment_git;
mod containment_host;
mod containment_limits;
mod containment_network;
mod containment_socket_places;
mod containment_sockets;
mod containment_unprivileged;
mod context;
mod context_instructions;
mod context_meter;
mod cost;
mod deny_read;
mod effort;
mod exit_cleanup;
mod fake_server;
mod fake_server_http;
mod fs_race;
mod goal;
mod guard;
mod harbor;
mod harness_runner;
mod hooks;
mod hooks_bounds;
mod hooks_claude;
mod hooks_events;
mod hooks_trust;
mod layers;
mod mcp;
mod mcp_npm;
mod minimal_profile;
mod notify;
mod output;
mod output_failures;
mod output_skills;
mod panic_guard;
mod portable;
mod project_trust;
mod redirects;
mod sandbox;
mod session_ids;
mod sessions;
mod sessions_export;
mod shell_env;
mod skills;
mod skills_eval;
mod skills_links;
mod skills_props;
mod slash_commands;
mod small_models;
mod small_window;
mod subagent_types;
mod subagents;
mod terminal;
mod tool_registration;
mod tools;
mod trust_revoke;
mod window;
mod workspace_props;
