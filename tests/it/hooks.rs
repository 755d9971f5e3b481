//! End-to-end tests of user command hooks (hooks.json): each exit path of a hook, as seen in
//! what hx sends to the model next and in the trace.

use crate::support::hooks::*;
use crate::support::{FakeServer, Hx, Reply};
use serde_json::{json, Value};

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
        run.stderr
            .lines()
            .any(|l| l == r#"[HOOK] PreToolUse blocked bash({"command":"echo hi"}): no echo here"#),
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
    // It really ran: either sudo exists here and succeeded, or the shell reported its failure.
    assert!(
        content == "(no output)" || content.contains("[exit code:"),
        "{content}"
    );
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
fn post_tool_use_context_is_counted_in_output_chars() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "post.sh",
        r#"echo '{"hookSpecificOutput": {"additionalContext": "checked by post"}}'"#,
    );
    user_hooks(&hx, json!({ "PostToolUse": groups("bash", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_success();
    let content = tool_message(&server, 1);
    assert_eq!(content, "hi\n\nchecked by post");
    let line = format!(
        "[HOOK] PostToolUse bash output_chars={}\n",
        content.chars().count()
    );
    assert!(run.stderr.contains(&line), "{}", run.dump());
}

/// Claude Code adds a SessionStart hook's plain stdout as context, as for UserPromptSubmit,
/// so a hook written for it (`git branch --show-current`-style) works unchanged.
#[test]
fn session_start_plain_stdout_is_context() {
    let server = FakeServer::start(vec![Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    let s = script(&hx, "start.sh", "echo 'Branch: main'");
    user_hooks(&hx, json!({ "SessionStart": groups("", &[&s], None) }));
    agent(&mut hx).assert_success();
    assert_eq!(
        server.requests()[0].body["messages"][1],
        json!({"role": "user", "content": "do it\n\nBranch: main"})
    );
}

#[test]
fn session_start_adds_context_or_stops_before_any_request() {
    let server = FakeServer::start(vec![Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "start.sh",
        r#"echo '{"hookSpecificOutput": {"additionalContext": "Branch: main"}}'"#,
    );
    user_hooks(&hx, json!({ "SessionStart": groups("", &[&s], None) }));
    agent(&mut hx).assert_success();
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "do it\n\nBranch: main"
    );

    let server = FakeServer::start(vec![Reply::text("never")]);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "start.sh",
        r#"echo '{"continue": false, "stopReason": "maintenance window"}'"#,
    );
    user_hooks(&hx, json!({ "SessionStart": groups("", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_code(1);
    assert!(
        run.stderr
            .contains("hx: stopped by a hook: maintenance window"),
        "{}",
        run.dump()
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn user_prompt_submit_block_refuses_the_prompt() {
    let server = FakeServer::start(vec![Reply::text("never")]);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "prompt.sh",
        r#"echo '{"decision": "block", "reason": "no tasks on Fridays"}'"#,
    );
    user_hooks(&hx, json!({ "UserPromptSubmit": groups("", &[&s], None) }));
    let run = agent(&mut hx);
    run.assert_code(1);
    assert!(
        run.stderr
            .contains("hx: stopped by a hook: prompt refused by a hook: no tasks on Fridays\n"),
        "{}",
        run.dump()
    );
    assert_eq!(server.requests().len(), 0);
}
