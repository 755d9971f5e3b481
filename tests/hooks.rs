//! End-to-end tests of user command hooks (hooks.json): each exit path of a hook, as seen in
//! what hx sends to the model next and in the trace.

mod support;

use serde_json::{json, Value};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use support::{Call, FakeServer, Hx, Reply, Run};

/// The user's config dir the runner sets up (`XDG_CONFIG_HOME/hx`).
fn config_dir(hx: &Hx) -> PathBuf {
    hx.home().join(".config").join("hx")
}

/// Writes an executable `/bin/sh` script into the user config dir; returns its path.
fn script(hx: &Hx, name: &str, body: &str) -> String {
    let path = config_dir(hx).join(name);
    std::fs::create_dir_all(config_dir(hx)).expect("mkdir config");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.display().to_string()
}

/// One `{matcher, hooks: [{type: command, ...}]}` group per command.
fn groups(matcher: &str, commands: &[&str], timeout: Option<u64>) -> Value {
    let hooks: Vec<Value> = commands
        .iter()
        .map(|c| match timeout {
            Some(t) => json!({"type": "command", "command": c, "timeout": t}),
            None => json!({"type": "command", "command": c}),
        })
        .collect();
    json!([{"matcher": matcher, "hooks": hooks}])
}

fn user_hooks(hx: &Hx, events: Value) {
    std::fs::create_dir_all(config_dir(hx)).expect("mkdir config");
    let text = serde_json::to_string_pretty(&json!({ "hooks": events })).expect("json");
    std::fs::write(config_dir(hx).join("hooks.json"), text).expect("write hooks.json");
}

/// One bash call, then a final answer.
fn one_call(command: &str) -> FakeServer {
    let args = json!({ "command": command }).to_string();
    FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)]),
        Reply::text("done"),
    ])
}

/// The content of the tool message in request `n` (0-based).
fn tool_message(server: &FakeServer, n: usize) -> String {
    let reqs = server.requests();
    let msgs = reqs[n].body["messages"]
        .as_array()
        .expect("messages")
        .clone();
    let tool = msgs
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .expect("a tool message");
    tool["content"].as_str().expect("content").to_string()
}

fn stop_line(run: &Run) -> String {
    run.stderr
        .lines()
        .find(|l| l.starts_with("[HOOK] Stop: "))
        .unwrap_or_else(|| panic!("no Stop line\n{}", run.dump()))
        .to_string()
}

fn agent(hx: &mut Hx) -> Run {
    hx.args(["agent", "do it"]).run()
}

/// A PreToolUse hook on `bash` printing `json`.
fn pre_json(hx: &Hx, json: &str) {
    let s = script(
        hx,
        "pre.sh",
        &format!("cat >/dev/null\ncat <<'EOF'\n{json}\nEOF"),
    );
    user_hooks(hx, json!({ "PreToolUse": groups("Bash", &[&s], None) }));
}

#[test]
fn exit_2_blocks_with_stderr_as_the_reason() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let s = script(&hx, "deny.sh", "echo 'no echo here' >&2\nexit 2");
    user_hooks(&hx, json!({ "PreToolUse": groups("bash", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_success();
    assert_eq!(
        tool_message(&server, 1),
        "Error: blocked by hook: no echo here"
    );
    assert!(
        run.stderr.lines().any(|l| l
            == r#"[HOOK] PreToolUse blocked bash({"command":"echo hi"}): blocked by hook: no echo here"#),
        "{}",
        run.dump()
    );
    assert!(stop_line(&run).starts_with("[HOOK] Stop: turns=2, tool_calls=1, blocked=1,"));
}

#[test]
fn json_deny_blocks_and_ask_is_denied() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    pre_json(
        &hx,
        r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not today"}}"#,
    );
    agent(&mut hx).assert_success();
    assert_eq!(
        tool_message(&server, 1),
        "Error: blocked by hook: not today"
    );

    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    pre_json(
        &hx,
        r#"{"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "sure?"}}"#,
    );
    let run = agent(&mut hx);
    assert_eq!(
        tool_message(&server, 1),
        "Error: blocked by hook: sure? (the hook asked for the user's confirmation, and hx \
         agent has no one to ask, so the call is denied)"
    );
    assert!(stop_line(&run).contains("blocked=1"));
}

#[test]
fn json_allow_skips_the_guard() {
    let server = one_call("sudo true");
    let mut hx = Hx::new(&server);
    pre_json(
        &hx,
        r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#,
    );
    let run = agent(&mut hx);
    run.assert_success();
    // The call ran (sudo itself may fail here; that is fine): it was not refused.
    let content = tool_message(&server, 1);
    assert!(!content.contains("blocked by"), "{content}");
    assert!(!run.stderr.contains("PreToolUse blocked"), "{}", run.dump());
    assert!(stop_line(&run).starts_with("[HOOK] Stop: turns=2, tool_calls=1, blocked=0,"));

    // Without the hook the guard refuses the same call.
    let server = one_call("sudo true");
    let mut hx = Hx::new(&server);
    agent(&mut hx).assert_success();
    assert_eq!(
        tool_message(&server, 1),
        "Error: blocked by guard: privilege escalation (sudo)"
    );
}

#[test]
fn updated_input_replaces_the_arguments() {
    let server = one_call("echo original");
    let mut hx = Hx::new(&server);
    let pre = script(
        &hx,
        "pre.sh",
        r#"cat >/dev/null; echo '{"hookSpecificOutput": {"updatedInput": {"command": "echo changed"}}}'"#,
    );
    let post = script(&hx, "post.sh", "cat > post.json");
    user_hooks(
        &hx,
        json!({ "PreToolUse": groups("bash", &[&pre], None),
                "PostToolUse": groups("bash", &[&post], None) }),
    );
    agent(&mut hx).assert_success();
    let seen: Value = serde_json::from_str(&hx.read_file("post.json")).expect("post.json");
    assert_eq!(seen["tool_input"], json!({"command": "echo changed"}));
}

#[test]
fn additional_context_is_appended_to_the_result() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    pre_json(
        &hx,
        r#"{"hookSpecificOutput": {"additionalContext": "remember the style guide"}}"#,
    );
    agent(&mut hx).assert_success();
    let content = tool_message(&server, 1);
    assert!(
        content.ends_with("\n\nremember the style guide"),
        "{content}"
    );
}

#[test]
fn continue_false_ends_the_run() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    pre_json(&hx, r#"{"continue": false, "stopReason": "budget spent"}"#);
    let run = agent(&mut hx);
    run.assert_code(1);
    assert!(
        run.stderr
            .lines()
            .any(|l| l == "hx: stopped by a hook: budget spent"),
        "{}",
        run.dump()
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn plain_stdout_is_ignored_for_tools_and_context_for_prompts() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let pre = script(&hx, "pre.sh", "echo 'just chatter'");
    let prompt = script(&hx, "prompt.sh", "echo 'branch: main'");
    user_hooks(
        &hx,
        json!({ "PreToolUse": groups("bash", &[&pre], None),
                "UserPromptSubmit": groups("", &[&prompt], None) }),
    );
    agent(&mut hx).assert_success();
    let reqs = server.requests();
    assert_eq!(
        reqs[0].body["messages"][1]["content"],
        "do it\n\nbranch: main"
    );
    let content = tool_message(&server, 1);
    assert!(!content.contains("chatter"), "{content}");
}

#[test]
fn other_exits_fail_the_hook_not_the_run() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "broken.sh",
        "echo 'oops: no config' >&2\necho second >&2\nexit 3",
    );
    user_hooks(&hx, json!({ "PreToolUse": groups("*", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_success();
    let expected = format!("hx: hook failed (exit 3): {s}: oops: no config");
    assert!(run.stderr.lines().any(|l| l == expected), "{}", run.dump());
    assert!(!tool_message(&server, 1).contains("blocked"));
}

#[test]
fn a_hook_past_its_timeout_is_killed_and_does_not_block() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let s = script(&hx, "slow.sh", "sleep 20\nexit 2");
    user_hooks(&hx, json!({ "PreToolUse": groups("bash", &[&s], Some(1)) }));
    let run = agent(&mut hx);
    run.assert_success();
    let expected = format!("hx: hook timed out after 1 s and was killed: {s}");
    assert!(run.stderr.lines().any(|l| l == expected), "{}", run.dump());
    assert!(
        run.elapsed < std::time::Duration::from_secs(10),
        "{:?}",
        run.elapsed
    );
    assert!(!tool_message(&server, 1).contains("blocked"));
}

#[test]
fn hooks_get_the_event_on_stdin_and_the_project_dir() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let cmd = |name: &str| {
        format!("cat > {name}.json; echo \"$HX_PROJECT_DIR|$CLAUDE_PROJECT_DIR|$PWD\" > {name}.env")
    };
    let hooks: Value = [
        "SessionStart",
        "UserPromptSubmit",
        "PreToolUse",
        "PostToolUse",
        "Stop",
    ]
    .iter()
    .map(|e| (e.to_string(), groups("", &[&cmd(e)], None)))
    .collect::<serde_json::Map<_, _>>()
    .into();
    user_hooks(&hx, hooks);
    agent(&mut hx).assert_success();
    let ws = std::fs::canonicalize(hx.workspace()).expect("canonical workspace");
    let ws = ws.display().to_string();
    let read = |name: &str| -> Value {
        serde_json::from_str(&hx.read_file(&format!("{name}.json"))).expect("stdin json")
    };
    let start = read("SessionStart");
    let session = start["session_id"]
        .as_str()
        .expect("session_id")
        .to_string();
    assert_eq!(session.len(), 32);
    assert_eq!(start["cwd"], ws.as_str());
    assert_eq!(start["hook_event_name"], "SessionStart");
    assert_eq!(read("UserPromptSubmit")["prompt"], "do it");
    let pre = read("PreToolUse");
    assert_eq!(pre["session_id"], session.as_str());
    assert_eq!(pre["tool_name"], "bash");
    assert_eq!(pre["tool_input"], json!({"command": "echo hi"}));
    let post = read("PostToolUse");
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_response"], tool_message(&server, 1).as_str());
    assert_eq!(read("Stop")["stop_hook_active"], false);
    assert_eq!(hx.read_file("PreToolUse.env"), format!("{ws}|{ws}|{ws}\n"));
}

#[test]
fn claude_code_matchers_select_tools() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    user_hooks(
        &hx,
        json!({ "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo alias >> hits"}]},
            {"matcher": "ba.*", "hooks": [{"type": "command", "command": "echo regex >> hits"}]},
            {"matcher": "Write|read_file", "hooks": [{"type": "command", "command": "echo miss >> hits"}]}
        ]}),
    );
    agent(&mut hx).assert_success();
    let mut hits: Vec<String> = hx.read_file("hits").lines().map(String::from).collect();
    hits.sort();
    assert_eq!(hits, ["alias", "regex"]);
}

#[test]
fn identical_commands_run_once_per_event() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    user_hooks(
        &hx,
        json!({ "PreToolUse": [
            {"matcher": "bash", "hooks": [{"type": "command", "command": "echo x >> count"},
                                          {"type": "command", "command": "echo x >> count"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "echo x >> count"}]}
        ]}),
    );
    agent(&mut hx).assert_success();
    assert_eq!(hx.read_file("count"), "x\n");
}

#[test]
fn matching_hooks_run_concurrently() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let body = |n: &str| format!("date +%s.%N > {n}.start; sleep 1; date +%s.%N > {n}.end");
    let (a, b) = (
        script(&hx, "a.sh", &body("a")),
        script(&hx, "b.sh", &body("b")),
    );
    user_hooks(
        &hx,
        json!({ "PreToolUse": groups("bash", &[&a, &b], None) }),
    );
    agent(&mut hx).assert_success();
    let t = |f: &str| -> f64 { hx.read_file(f).trim().parse().expect("timestamp") };
    // Each started before the other ended: they overlapped.
    assert!(t("a.start") < t("b.end") && t("b.start") < t("a.end"));
}

#[test]
fn stop_block_keeps_going_at_most_8_times() {
    let mut replies: Vec<Reply> = (1..=12)
        .map(|i| Reply::text(&format!("answer {i}")))
        .collect();
    replies.insert(0, Reply::text("answer 0"));
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "stop.sh",
        r#"cat >> stop.jsonl; echo >> stop.jsonl; echo '{"decision": "block", "reason": "run the tests first"}'"#,
    );
    user_hooks(&hx, json!({ "Stop": groups("", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_success();
    assert_eq!(server.requests().len(), 9);
    assert_eq!(run.stdout, "answer 8\n");
    let stops = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[HOOK] Stop: "))
        .count();
    assert_eq!(stops, 9);
    let second = &server.requests()[1].body["messages"];
    let last = second
        .as_array()
        .and_then(|m| m.last())
        .expect("last message");
    assert_eq!(
        last,
        &json!({"role": "user", "content": "run the tests first"})
    );
    let active: Vec<bool> = hx
        .read_file("stop.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("json")["stop_hook_active"] == true)
        .collect();
    assert_eq!(
        active,
        [false, true, true, true, true, true, true, true, true]
    );
}

#[test]
fn a_broken_hooks_file_warns_and_the_run_goes_on() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    std::fs::create_dir_all(config_dir(&hx)).expect("mkdir");
    let path = config_dir(&hx).join("hooks.json");
    std::fs::write(&path, "{ not json").expect("write");
    let run = agent(&mut hx);
    run.assert_success();
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with(&format!("hx: {}: ", path.display())))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.dump());
    assert!(warnings[0].contains("not valid JSON"), "{}", warnings[0]);
    assert!(
        warnings[0].ends_with("its hooks are skipped"),
        "{}",
        warnings[0]
    );
}
