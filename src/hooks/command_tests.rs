//! Tests of running hook commands and reading their output.

use super::*;
use crate::model::ToolCall;
use crate::session::RunStats;
use crate::tools::ToolResult;
use std::path::PathBuf;
use std::time::Instant;

fn parse(kind: EventKind, stdout: &str) -> (HookOutput, Vec<String>) {
    let mut w = Vec::new();
    (parse_stdout(kind, stdout, &mut w), w)
}

fn pre(stdout: &str) -> HookOutput {
    let (out, w) = parse(EventKind::PreToolUse, stdout);
    assert!(w.is_empty(), "{w:?}");
    out
}

fn specific(fields: Value) -> String {
    json!({"hookSpecificOutput": fields}).to_string()
}

#[test]
fn permission_decisions() {
    let deny = pre(&specific(
        json!({"permissionDecision": "deny", "permissionDecisionReason": "no curl"}),
    ));
    assert_eq!(deny.verdict, Some(Verdict::Block("no curl".into())));
    let deny = pre(&specific(json!({"permissionDecision": "deny"})));
    assert_eq!(
        deny.verdict,
        Some(Verdict::Block("denied by a hook (no reason given)".into()))
    );
    let allow = pre(&specific(json!({"permissionDecision": "allow"})));
    assert_eq!(allow.verdict, Some(Verdict::Allow));
    let ask = pre(&specific(
        json!({"permissionDecision": "ask", "permissionDecisionReason": "really?"}),
    ));
    assert_eq!(
        ask.verdict,
        Some(Verdict::Block(
            "really? (the hook asked for the user's confirmation, and hx agent has no one to \
             ask, so the call is denied)"
                .into()
        ))
    );
    // Only PreToolUse has permissions.
    let (post, _) = parse(
        EventKind::PostToolUse,
        &specific(json!({"permissionDecision": "deny"})),
    );
    assert_eq!(post.verdict, None);
    let (out, w) = parse(
        EventKind::PreToolUse,
        &specific(json!({"permissionDecision": "maybe"})),
    );
    assert_eq!(out.verdict, None);
    assert_eq!(w, ["gave unknown permissionDecision \"maybe\""]);
}

#[test]
fn decision_block_and_approve() {
    let block = json!({"decision": "block", "reason": "tests fail"}).to_string();
    for kind in [
        EventKind::PreToolUse,
        EventKind::PostToolUse,
        EventKind::Stop,
        EventKind::UserPromptSubmit,
    ] {
        let (out, _) = parse(kind, &block);
        assert_eq!(out.verdict, Some(Verdict::Block("tests fail".into())));
    }
    let approve = json!({"decision": "approve"}).to_string();
    assert_eq!(pre(&approve).verdict, Some(Verdict::Allow));
    assert_eq!(parse(EventKind::Stop, &approve).0.verdict, None);
    // permissionDecision is the newer field and wins.
    let both = json!({"decision": "block", "reason": "old",
                      "hookSpecificOutput": {"permissionDecision": "allow"}});
    assert_eq!(pre(&both.to_string()).verdict, Some(Verdict::Allow));
}

#[test]
fn updated_input_context_and_continue() {
    let out = pre(&specific(
        json!({"updatedInput": {"command": "echo safe"}, "additionalContext": "ctx"}),
    ));
    assert_eq!(out.updated_input, Some(json!({"command": "echo safe"})));
    assert_eq!(out.additional_context.as_deref(), Some("ctx"));
    let out = pre(r#"  {"additionalContext": "top level"}  "#);
    assert_eq!(out.additional_context.as_deref(), Some("top level"));
    let (out, w) = parse(
        EventKind::PreToolUse,
        &specific(json!({"updatedInput": "rm"})),
    );
    assert_eq!(out.updated_input, None);
    assert_eq!(w, ["gave an updatedInput that is not an object"]);

    let (out, _) = parse(
        EventKind::Stop,
        r#"{"continue": false, "stopReason": "enough"}"#,
    );
    assert_eq!(out.stop_run.as_deref(), Some("enough"));
    let (out, _) = parse(EventKind::Stop, r#"{"continue": false}"#);
    assert_eq!(out.stop_run.as_deref(), Some("a hook said continue: false"));
    let (out, _) = parse(EventKind::Stop, r#"{"continue": true}"#);
    assert_eq!(out, HookOutput::default());
}

#[test]
fn plain_and_invalid_stdout() {
    for kind in [EventKind::UserPromptSubmit, EventKind::SessionStart] {
        let (out, w) = parse(kind, "  branch: main\n");
        assert_eq!(out.additional_context.as_deref(), Some("branch: main"));
        assert!(w.is_empty());
    }
    let (out, _) = parse(EventKind::Stop, "branch: main");
    assert_eq!(out, HookOutput::default());
    assert_eq!(pre("just text"), HookOutput::default());
    assert_eq!(pre(""), HookOutput::default());
    for bad in ["{nope", "{\"a\": 1} trailing", "{\"decision\": "] {
        let (out, w) = parse(EventKind::PreToolUse, bad);
        assert_eq!(out, HookOutput::default());
        assert_eq!(w.len(), 1);
        assert!(w[0].starts_with("printed invalid JSON ("), "{}", w[0]);
    }
}

fn ran(exit: Exit, stdout: &str, stderr: &str) -> Ran {
    Ran {
        exit,
        stdout: stdout.into(),
        stderr: stderr.into(),
    }
}

#[test]
fn exit_codes() {
    let k = EventKind::PreToolUse;
    // What the user is shown of each line.
    let interpret = |k, r: &Ran, c| {
        let (out, lines) = interpret(k, r, c);
        (
            out,
            lines.iter().map(ToString::to_string).collect::<Vec<_>>(),
        )
    };
    let (out, lines) = interpret(k, &ran(Exit::Code(2), "{}", "\n  not here \n"), "c");
    assert_eq!(out.verdict, Some(Verdict::Block("not here".into())));
    assert!(lines.is_empty());
    let (out, _) = interpret(k, &ran(Exit::Code(2), "", ""), "c");
    assert_eq!(
        out.verdict,
        Some(Verdict::Block(
            "the hook exited with code 2 and gave no reason".into()
        ))
    );
    let (out, lines) = interpret(
        k,
        &ran(Exit::Code(1), "{\"decision\":\"block\"}", "\nboom\nmore"),
        "./h.sh\narg",
    );
    assert_eq!(out, HookOutput::default());
    assert_eq!(lines, ["hx: hook failed (exit 1): ./h.sh arg: boom"]);
    let (_, lines) = interpret(k, &ran(Exit::Code(3), "", ""), "c");
    assert_eq!(lines, ["hx: hook failed (exit 3): c"]);
    let (_, lines) = interpret(k, &ran(Exit::Signal(9), "", ""), "c");
    assert_eq!(lines, ["hx: hook failed (signal 9): c"]);
    let (_, lines) = interpret(k, &ran(Exit::TimedOut(Duration::from_secs(1)), "", ""), "c");
    assert_eq!(lines, ["hx: hook timed out after 1 s and was killed: c"]);
    let (_, lines) = interpret(k, &ran(Exit::NotStarted("nope".into()), "", ""), "c");
    assert_eq!(lines, ["hx: hook failed (cannot start: nope): c"]);
    let (_, lines) = interpret(k, &ran(Exit::Code(0), "{bad", ""), "c");
    assert_eq!(lines.len(), 1);
    assert!(
        lines[0].starts_with("hx: hook printed invalid JSON ("),
        "{}",
        lines[0]
    );
    assert!(
        lines[0].ends_with("its output is ignored: c"),
        "{}",
        lines[0]
    );
}

fn cx() -> HookContext {
    HookContext {
        cwd: PathBuf::from("/w"),
        scope: Default::default(),
        session_id: "s1".into(),
        ..HookContext::default()
    }
}

#[test]
fn input_json_per_event() {
    let call = ToolCall {
        id: "c1".into(),
        name: "bash".into(),
        arguments: "{not json".into(),
    };
    let v = input_json(
        &HookEvent::PreToolUse {
            call: &call,
            args: None,
        },
        &cx(),
    );
    assert_eq!(
        v,
        json!({"session_id": "s1", "cwd": "/w", "hook_event_name": "PreToolUse",
               "tool_name": "bash", "tool_input": "{not json"})
    );
    let parsable = ToolCall {
        arguments: r#"{"command": "rm"}"#.into(),
        ..call.clone()
    };
    let v = input_json(
        &HookEvent::PreToolUse {
            call: &parsable,
            args: None,
        },
        &cx(),
    );
    assert_eq!(v["tool_input"], json!({"command": "rm"}));
    let args = json!({"command": "ls"});
    let result = ToolResult::ok("a\nb");
    let post = HookEvent::PostToolUse {
        call: &call,
        args: Some(&args),
        result: &result,
    };
    assert_eq!(input_json(&post, &cx())["tool_input"], args);
    assert_eq!(input_json(&post, &cx())["tool_response"], "a\nb");
    let stats = RunStats::default();
    let stop = HookEvent::Stop {
        stats: &stats,
        stop_hook_active: true,
    };
    assert_eq!(input_json(&stop, &cx())["stop_hook_active"], true);
    let prompt = HookEvent::UserPromptSubmit { prompt: "hi" };
    assert_eq!(input_json(&prompt, &cx())["prompt"], "hi");
    let v = input_json(&HookEvent::SessionStart, &cx());
    assert_eq!(v.as_object().map(|o| o.len()), Some(3));
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

#[test]
fn run_feeds_stdin_sets_env_and_captures() {
    let dir = tempfile::tempdir().expect("tempdir");
    let r = rt().block_on(run(
        &Ok("/bin/sh".into()),
        "cat; echo \" $HX_PROJECT_DIR $CLAUDE_PROJECT_DIR $(pwd)\"; echo err >&2; exit 2",
        b"{\"x\":1}",
        dir.path(),
        Duration::from_secs(10),
    ));
    let d = dir.path().display();
    assert_eq!(r.exit, Exit::Code(2));
    assert_eq!(r.stdout, format!("{{\"x\":1}} {d} {d} {d}\n"));
    assert_eq!(r.stderr, "err\n");
}

#[test]
fn run_times_out_and_kills_the_group() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start = Instant::now();
    // The background sleep holds the pipes too; the whole group must go.
    let r = rt().block_on(run(
        &Ok("/bin/sh".into()),
        "sleep 30 & sleep 30",
        b"",
        dir.path(),
        Duration::from_millis(300),
    ));
    assert_eq!(r.exit, Exit::TimedOut(Duration::from_millis(300)));
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn run_bounds_output_and_survives_unread_stdin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big_input = vec![b'x'; 4 * 1024 * 1024];
    let r = rt().block_on(run(
        &Ok("/bin/sh".into()),
        "head -c 3000000 /dev/zero",
        &big_input,
        dir.path(),
        Duration::from_secs(20),
    ));
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.stdout.len(), MAX_OUTPUT);
}

#[test]
fn a_finished_hook_is_not_held_by_a_child_that_keeps_stdin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big_input = vec![b'x'; 1024 * 1024];
    let start = Instant::now();
    // The background sleep keeps stdin (explicitly: a background job of a script gets
    // /dev/null otherwise) and never reads it; its output goes elsewhere.
    let r = rt().block_on(run(
        &Ok("/bin/sh".into()),
        "sleep 3 <&0 >/dev/null 2>&1 & echo done",
        &big_input,
        dir.path(),
        Duration::from_secs(20),
    ));
    assert_eq!(r.exit, Exit::Code(0));
    assert_eq!(r.stdout, "done\n");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}
