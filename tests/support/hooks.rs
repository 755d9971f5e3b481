//! Shared helpers of the hooks end-to-end tests: hook scripts and hooks.json in the temp
//! HOME's config dir, one-call fake servers, and readers of what hx sent back.
#![allow(dead_code)]

use super::{tool_messages, Call, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;

/// Writes an executable `/bin/sh` script into the user config dir; returns its path.
pub fn script(hx: &Hx, name: &str, body: &str) -> String {
    let path = hx.user_config_dir().join(name);
    std::fs::create_dir_all(hx.user_config_dir()).expect("mkdir config");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// One `{matcher, hooks: [{type: command, ...}]}` group per command.
pub fn groups(matcher: &str, commands: &[&str], timeout: Option<u64>) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| match timeout {
            Some(t) => json!({"type": "command", "command": c, "timeout": t}),
            None => json!({"type": "command", "command": c}),
        })
        .collect();
    json!([{"matcher": matcher, "hooks": hooks}])
}

pub fn user_hooks(hx: &Hx, events: Value) {
    std::fs::create_dir_all(hx.user_config_dir()).expect("mkdir config");
    let text = serde_json::to_string_pretty(&json!({ "hooks": events })).expect("json");
    std::fs::write(hx.user_config_dir().join("hooks.json"), text).expect("write hooks.json");
}

/// One bash call, then a final answer.
pub fn one_call(command: &str) -> FakeServer {
    let args = json!({ "command": command }).to_string();
    FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)]),
        Reply::text("done"),
    ])
}

/// The content of the (last) tool message in chat request `n` (0-based).
pub fn tool_message(server: &FakeServer, n: usize) -> String {
    let reqs = server.completions();
    let tools = tool_messages(&reqs[n].body);
    let tool = tools.last().expect("a tool message");
    tool["content"].as_str().expect("content").to_string()
}

pub fn stop_line(run: &Run) -> String {
    run.stderr
        .lines()
        .find(|l| l.starts_with("[HOOK] Stop: "))
        .unwrap_or_else(|| panic!("no Stop line\n{}", run.dump()))
        .to_string()
}

pub fn agent(hx: &mut Hx) -> Run {
    hx.args(["agent", "do it"]).run()
}

/// A PreToolUse hook on `bash` printing `json`.
pub fn pre_json(hx: &Hx, json: &str) {
    let s = script(
        hx,
        "pre.sh",
        &format!("cat >/dev/null\ncat <<'EOF'\n{json}\nEOF"),
    );
    user_hooks(hx, json!({ "PreToolUse": groups("Bash", &[&s], None) }));
}
