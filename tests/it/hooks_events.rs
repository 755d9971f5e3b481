//! End-to-end tests of user command hooks (hooks.json): what hooks receive, which run, how
//! they run together, Stop hooks that keep the loop going, and broken files.

use crate::support::hooks::*;
use crate::support::{FakeServer, Hx, Reply};
use serde_json::{json, Value};

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
    // The id of the session this run recorded.
    let recorded = hx.session_files();
    assert!(
        recorded.iter().any(|f| f
            .file_name()
            .is_some_and(|n| *n == *format!("{session}.jsonl"))),
        "no session file named {session}: {recorded:?}"
    );
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

/// The user relies on their hooks: a broken file stops the run, it does not turn them off.
#[test]
fn a_broken_hooks_file_stops_the_run_before_the_first_request() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    hx.write_user_config("hooks.json", "{ not json");
    let path = hx.user_config_dir().join("hooks.json");
    let run = agent(&mut hx);
    run.assert_code(2);
    assert!(server.requests().is_empty());
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.dump());
    assert!(
        lines[0].starts_with(&format!("hx: {}: not valid JSON (", path.display())),
        "{}",
        run.dump()
    );
}

#[test]
fn every_hook_run_is_one_trace_line_and_verbose_shows_what_it_said() {
    let run_with = |verbose: bool| {
        let server = one_call("echo hi");
        let mut hx = Hx::new(&server);
        let lint = script(
            &hx,
            "lint.sh",
            "echo 'lint: ok'\necho 'lint warnings: 0' >&2\n",
        );
        let start = script(&hx, "start.sh", "echo 'Remember the release is frozen.'\n");
        user_hooks(
            &hx,
            json!({
                "PostToolUse": groups("bash", &[&lint], None),
                "SessionStart": groups("", &[&start], None),
            }),
        );
        if verbose {
            hx.arg("agent").arg("-v").arg("go");
        } else {
            hx.arg("agent").arg("go");
        }
        let run = hx.run();
        run.assert_success();
        run
    };
    let run = run_with(false);
    let post = run
        .stderr
        .lines()
        .find(|l| l.starts_with("hook PostToolUse: ") && l.contains("lint.sh"))
        .unwrap_or_else(|| panic!("no line for the PostToolUse hook:\n{}", run.stderr));
    assert!(
        post.contains(" · exit 0 · ") && post.ends_with(" ms"),
        "{post}"
    );
    let start = run
        .stderr
        .lines()
        .find(|l| l.starts_with("hook SessionStart: "))
        .unwrap_or_else(|| panic!("no line for the SessionStart hook:\n{}", run.stderr));
    assert!(
        start.contains("its output went into the task (31 chars)"),
        "{start}"
    );
    assert!(!run.stderr.contains("lint: ok"), "{}", run.stderr);

    let run = run_with(true);
    assert!(run.stderr.contains("  | lint: ok"), "{}", run.stderr);
    assert!(
        run.stderr.contains("  | lint warnings: 0"),
        "{}",
        run.stderr
    );
}
