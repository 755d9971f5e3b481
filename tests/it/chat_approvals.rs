//! Approvals in `hx chat`, in a real pseudo-terminal: a command the guard would refuse is put
//! to the user (`y` once, `a` always for the session, `n` or Enter refuses), the answer is
//! recorded in the session, and a hook's block is never put to anyone.
//!
//! The command is `sudo`, which the guard refuses, run through a harmless `sudo` of the
//! test's own on PATH that only notes it ran.

use std::time::Duration;

use crate::support::pty::Chat;
use crate::support::{session_lines, tool_answer, Call, FakeServer, Hx, Reply};
use serde_json::Value;

const COMMAND: &str = r#"PATH="$PWD/bin:$PATH" sudo noted"#;
const QUESTION: &str = "Run it? [y] once, [a] always in this session, [N] no: ";

fn call(id: &str) -> Call {
    Call::new(
        id,
        "bash",
        &serde_json::json!({ "command": COMMAND }).to_string(),
    )
}

fn workspace(server: &FakeServer) -> Hx {
    let mut hx = Hx::new(server);
    hx.arg("chat");
    hx.write_file("bin/sudo", "#!/bin/sh\necho \"ran $*\" >> ran.txt\n");
    let script = hx.workspace().join("bin/sudo");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    hx
}

/// The tool message answering `id` in the request `i`.
fn tool_result(server: &FakeServer, i: usize, id: &str) -> String {
    tool_answer(&server.requests()[i].body, id).to_string()
}

fn approvals(hx: &Hx) -> Vec<Value> {
    session_lines(&hx.session_files()[0])
        .into_iter()
        .filter(|l| l["type"] == "approval")
        .collect()
}

fn ran(hx: &Hx) -> String {
    std::fs::read_to_string(hx.workspace().join("ran.txt")).unwrap_or_default()
}

#[test]
fn y_runs_the_command_once() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1")]),
        Reply::text("Done."),
    ]);
    let hx = workspace(&server);
    let mut chat = Chat::start(&hx);
    chat.type_line("do it");
    let shown = chat.expect(QUESTION);
    assert!(
        shown.contains("the guard would refuse this command: privilege escalation (sudo)"),
        "{shown}"
    );
    assert!(shown.contains(COMMAND), "{shown}");
    assert!(chat.say("y").contains("Done."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    assert_eq!(ran(&hx), "ran noted\n");
    assert!(!tool_result(&server, 1, "c1").starts_with("Error:"));
    let a = approvals(&hx);
    assert_eq!(a.len(), 1);
    assert_eq!(a[0]["answer"], "once");
    assert_eq!(a[0]["command"], COMMAND);
    assert_eq!(a[0]["call_id"], "c1");
}

#[test]
fn a_allows_the_same_command_for_the_rest_of_the_session() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1")]),
        Reply::tool_calls(vec![call("c2")]),
        Reply::text("Done."),
    ]);
    let hx = workspace(&server);
    let mut chat = Chat::start(&hx);
    chat.type_line("do it twice");
    chat.expect(QUESTION);
    let after = chat.say("a");
    assert!(after.contains("Done."), "{after}");
    assert!(!after.contains(QUESTION), "asked again:\n{after}");
    assert!(after.contains("hx: allowed for this session"), "{after}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    assert_eq!(ran(&hx), "ran noted\nran noted\n");
    assert!(!tool_result(&server, 2, "c2").starts_with("Error:"));
    let answers: Vec<Value> = approvals(&hx).iter().map(|a| a["answer"].clone()).collect();
    assert_eq!(answers, vec!["always", "allowed"]);
}

#[test]
fn n_and_enter_refuse_as_the_guard_would() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1")]),
        Reply::tool_calls(vec![call("c2")]),
        Reply::text("Done."),
    ]);
    let hx = workspace(&server);
    let mut chat = Chat::start(&hx);
    chat.type_line("try twice");
    chat.expect(QUESTION);
    chat.type_line("n");
    chat.expect(QUESTION);
    // Enter alone is no.
    assert!(chat.say("").contains("Done."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    assert_eq!(ran(&hx), "");
    for (i, id) in [(1, "c1"), (2, "c2")] {
        assert_eq!(
            tool_result(&server, i, id),
            "Error: blocked by guard: privilege escalation (sudo)"
        );
    }
    let answers: Vec<Value> = approvals(&hx).iter().map(|a| a["answer"].clone()).collect();
    assert_eq!(answers, vec!["refused", "refused"]);
}

#[test]
fn a_hooks_block_is_never_put_to_the_user() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1")]),
        Reply::text("Done."),
    ]);
    let mut hx = workspace(&server);
    hx.write_user_config(
        "hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "bash",
            "hooks": [{"type": "command", "command": "echo 'not in this repo' >&2; exit 2"}]}]}}"#,
    );
    let mut chat = Chat::start(&hx);
    let shown = chat.say("do it");
    assert!(shown.contains("Done."), "{shown}");
    assert!(!shown.contains(QUESTION), "{shown}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(
        tool_result(&server, 1, "c1"),
        "Error: blocked by hook: not in this repo"
    );
    assert_eq!(ran(&hx), "");
    assert!(approvals(&hx).is_empty());
}

#[test]
fn the_spinner_keeps_off_the_question() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1")]),
        Reply::text("Done."),
    ]);
    let mut hx = workspace(&server);
    // Colour allowed: the spinner of the call waiting for the answer is on.
    hx.env_remove("NO_COLOR");
    let mut chat = Chat::start(&hx);
    chat.type_line("do it");
    chat.expect(QUESTION);
    // Longer than the spinner's delay: by then it would have drawn over the question.
    let meanwhile = chat.read_for(Duration::from_millis(1600));
    assert!(
        !meanwhile.contains("running bash"),
        "the spinner overwrote the question: {meanwhile:?}"
    );
    assert!(chat.say("n").contains("Done."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(
        tool_result(&server, 1, "c1"),
        "Error: blocked by guard: privilege escalation (sudo)"
    );
}
