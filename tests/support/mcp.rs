//! The test suite's MCP server (`tests/support/mcp_server.rs`, built as the example
//! `mcp_test_server`) and config snippets that start it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The test server's binary, which `cargo test` builds with the tests (examples are built
/// with them). Before a run of the test binary alone (`cargo test --test it mcp::`), build
/// it: `cargo build --example mcp_test_server` (`cargo test --example` would build it as a
/// test harness instead).
/// Building it from here with a nested cargo rebuilt the dependencies each time, with
/// another feature set, for a minute or more.
pub fn server_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        // target/<profile>/deps/<test binary> → target/<profile>/examples/
        let path = exe
            .parent()
            .and_then(Path::parent)
            .expect("test binary in target/<profile>/deps")
            .join("examples")
            .join("mcp_test_server");
        assert!(
            path.is_file(),
            "the MCP test server is not built ({}): run `cargo test`, which builds it, or \
             `cargo build --example mcp_test_server` before `cargo test --test it`",
            path.display()
        );
        super::visible::outside_pods_tmp(&path)
    })
}

/// A `[mcp_servers.NAME]` table starting the test server, with `extra` lines (TOML) and
/// `env` for the server (see the server's doc for the variables it reads).
pub fn server_table(name: &str, env: &[(&str, &str)], extra: &str) -> String {
    let env: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{k} = {}", toml_str(v)))
        .collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nenv = {{ {} }}\n{extra}\n",
        toml_str(&server_path().display().to_string()),
        env.join(", ")
    )
}

/// `s` as a TOML string (JSON's quoting is TOML's for these).
pub fn toml_str(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A table starting the test server as a careless server runs: with a `sleep` child, writing
/// both pids to `pid_file`, and outliving its input (only ending its group ends it).
pub fn lingering_table(name: &str, pid_file: &Path) -> String {
    server_table(
        name,
        &[
            ("MCP_TEST_PID_FILE", &pid_file.display().to_string()),
            ("MCP_TEST_LINGER", "1"),
        ],
        "",
    )
}

/// The pids a server wrote to its pid file (one line each), none while there is no file.
pub fn pids(file: &Path) -> Vec<i32> {
    // The server and its child work in the folder the file is in (the workspace), where
    // their pids as the pod numbers them are found (see `host_pid`).
    let dir = file.parent().unwrap_or(Path::new("/"));
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .map(|p| super::procs::host_pid(p, dir))
        .collect()
}
