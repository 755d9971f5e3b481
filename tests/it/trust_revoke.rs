//! End-to-end tests of `hx trust --revoke`: it withdraws the project's approvals, those of
//! files that are gone included. An approval left behind for a deleted `.mcp.json` would
//! trust the same content again, without asking, the day a branch or a pull brings it back.

use std::path::Path;

use crate::support::Hx;
use serde_json::json;

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .expect("canonical path")
        .display()
        .to_string()
}

fn mcp_json() -> String {
    json!({"mcpServers": {"proj": {"command": "/nonexistent/server"}}}).to_string()
}

/// What `hx trust` (no `--yes`, stdin not a terminal) says of the project's `.mcp.json`: the
/// line naming it, which ends in `already trusted` when it would not ask.
fn mcp_line(hx: &Hx) -> String {
    let run = hx.run_args(&["trust"]);
    run.stdout
        .lines()
        .find(|l| l.starts_with("project MCP servers "))
        .unwrap_or_else(|| panic!("no .mcp.json line\n{}", run.dump()))
        .to_string()
}

#[test]
fn revoke_withdraws_the_approval_of_a_file_that_is_gone() {
    let mut hx = Hx::new_offline();
    hx.write_file(".hx/config.toml", "max_turns = 9\n")
        .write_file(".mcp.json", &mcp_json());
    let config = canonical(&hx.workspace().join(".hx/config.toml"));
    let mcp = canonical(&hx.workspace().join(".mcp.json"));
    hx.run_args(&["trust", "--yes"]).assert_success();
    assert!(mcp_line(&hx).ends_with(": already trusted"));

    std::fs::remove_file(hx.workspace().join(".mcp.json")).expect("rm");
    let revoked = hx.run_args(&["trust", "--revoke"]);
    revoked.assert_success();
    assert_eq!(
        revoked.stdout,
        format!("revoked {config}\nrevoked {mcp} (the file is gone)\n"),
        "{}",
        revoked.dump()
    );
    assert_eq!(
        hx.run_args(&["trust", "--list"]).stdout,
        "no trusted files\n"
    );

    // The same content again is a file to review, not one already trusted.
    hx.write_file(".mcp.json", &mcp_json());
    let line = mcp_line(&hx);
    assert!(
        line.starts_with(&format!("project MCP servers {mcp} (sha256 ")),
        "{line}"
    );
    assert!(line.ends_with("):"), "{line}");
}

#[test]
fn revoke_finds_approvals_of_a_project_with_no_file_left_from_a_subfolder() {
    let mut hx = Hx::new_offline();
    hx.write_file(".hx/hooks.json", "{}")
        .write_file(".mcp.json", &mcp_json());
    let hooks = canonical(&hx.workspace().join(".hx/hooks.json"));
    let mcp = canonical(&hx.workspace().join(".mcp.json"));
    hx.run_args(&["trust", "--yes"]).assert_success();
    // The whole `.hx` folder goes too: its approval is still this project's.
    std::fs::remove_dir_all(hx.workspace().join(".hx")).expect("rm -r");
    std::fs::remove_file(hx.workspace().join(".mcp.json")).expect("rm");

    hx.current_dir_rel("src/deep");
    let revoked = hx.run_args(&["trust", "--revoke"]);
    revoked.assert_success();
    assert_eq!(
        revoked.stdout,
        format!("revoked {hooks} (the file is gone)\nrevoked {mcp} (the file is gone)\n"),
        "{}",
        revoked.dump()
    );
    assert_eq!(
        hx.run_args(&["trust", "--list"]).stdout,
        "no trusted files\n"
    );

    // Nothing there and nothing approved: nothing to revoke, as before.
    let again = hx.run_args(&["trust", "--revoke"]);
    again.assert_code(2);
    assert_eq!(again.stdout, "");
    assert!(
        again.stderr.starts_with("hx: nothing to revoke: "),
        "{}",
        again.dump()
    );
}

/// From a folder whose own `.mcp.json` is gone, the one further up counts for runs here now,
/// and the gone one would again if it came back: both approvals go. Another folder's stays.
#[test]
fn revoke_withdraws_what_counts_here_now_or_would_if_it_came_back() {
    let mut hx = Hx::new_offline();
    hx.write_file(".mcp.json", &mcp_json())
        .write_file("inner/.mcp.json", &mcp_json())
        .write_file("other/.mcp.json", &mcp_json());
    let outer = canonical(&hx.workspace().join(".mcp.json"));
    let inner = canonical(&hx.workspace().join("inner/.mcp.json"));
    let other = canonical(&hx.workspace().join("other/.mcp.json"));
    for dir in [".", "inner", "other"] {
        hx.current_dir_rel(dir);
        hx.run_args(&["trust", "--yes"]).assert_success();
    }
    std::fs::remove_file(hx.workspace().join("inner/.mcp.json")).expect("rm");

    hx.current_dir_rel("inner");
    let revoked = hx.run_args(&["trust", "--revoke"]);
    revoked.assert_success();
    assert_eq!(
        revoked.stdout,
        format!("revoked {inner} (the file is gone)\nrevoked {outer}\n"),
        "{}",
        revoked.dump()
    );
    let listed = hx.run_args(&["trust", "--list"]);
    let kept: Vec<&str> = listed.stdout.lines().collect();
    assert_eq!(kept.len(), 1, "{}", listed.dump());
    assert!(
        kept[0].ends_with(&format!("  {other}")),
        "{}",
        listed.dump()
    );
}
