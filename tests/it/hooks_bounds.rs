//! End-to-end tests of the bound on what hooks say: a hook's block reason, context and stop
//! reason reach the model cut like tool output (head and tail, with the same marker), and every
//! tool message, hook additions included, is bounded by the output cap.

use crate::support::hooks::*;
use crate::support::{messages, FakeServer, Hx, Reply};
use serde_json::json;

/// The default `[tools] output_chars`.
const CAP: usize = 50_000;
/// What a cut text may exceed the cap by: its marker line and a short prefix.
const CUT_ROOM: usize = 256;

/// Shell that prints `n` copies of the character `c` (no newline).
fn print_n(n: usize, c: char) -> String {
    format!("head -c {n} /dev/zero | tr '\\0' '{c}'")
}

fn assert_bounded(what: &str, text: &str, limit: usize) {
    let n = text.chars().count();
    assert!(n <= limit, "{what}: {n} characters, more than {limit}");
    assert!(
        text.contains("characters omitted] ..."),
        "{what} has no cut marker: {}",
        &text[..text.len().min(300)]
    );
}

#[test]
fn megabytes_from_session_start_prompt_and_pre_tool_use_hooks_are_cut() {
    let server = one_call("echo hi");
    let mut hx = Hx::new(&server);
    let start = script(&hx, "start.sh", &print_n(5_000_000, 's'));
    let prompt = script(&hx, "prompt.sh", &print_n(5_000_000, 'u'));
    let deny = script(
        &hx,
        "deny.sh",
        &format!("{} >&2\nexit 2", print_n(5_000_000, 'd')),
    );
    user_hooks(
        &hx,
        json!({
            "SessionStart": groups("", &[&start], None),
            "UserPromptSubmit": groups("", &[&prompt], None),
            "PreToolUse": groups("bash", &[&deny], None),
        }),
    );
    let run = agent(&mut hx);
    run.assert_success();

    let first = &server.requests()[0].body;
    let task = messages(first)[1]["content"]
        .as_str()
        .expect("task")
        .to_string();
    assert!(task.starts_with("do it\n\nsss"), "{}", &task[..100]);
    assert_bounded(
        "first user message",
        &task,
        "do it\n\n".len() + CAP + CUT_ROOM,
    );
    assert!(task.contains('u'), "the prompt hook's context is kept too");

    let result = tool_message(&server, 1);
    assert!(
        result.starts_with("Error: blocked by hook: ddd"),
        "{}",
        &result[..100]
    );
    assert_bounded("blocked call's result", &result, CAP + CUT_ROOM);
    // The trace line of the blocked call is bounded the same way.
    let blocked = run
        .stderr
        .lines()
        .find(|l| l.contains("PreToolUse blocked"))
        .expect("blocked line");
    assert!(blocked.len() < CAP + 200, "{} bytes", blocked.len());
}

#[test]
fn post_tool_use_context_and_stop_reason_are_cut() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![crate::support::Call::new(
            "call_1",
            "bash",
            r#"{"command":"echo hi"}"#,
        )]),
        Reply::text("first answer"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    // JSON whose context is nearly the 1 MiB a hook's stdout may use.
    let big = |c: char| format!("\"$({})\"", print_n(900_000, c));
    let post = script(
        &hx,
        "post.sh",
        &format!(
            "cat >/dev/null\nprintf '{{\"additionalContext\": \"%s\"}}' {}",
            big('c')
        ),
    );
    let stop = script(
        &hx,
        "stop.sh",
        &format!(
            "cat >/dev/null\n[ -e stopped ] && exit 0\ntouch stopped\nprintf '{{\"decision\": \"block\", \"reason\": \"%s\"}}' {}",
            big('r')
        ),
    );
    user_hooks(
        &hx,
        json!({
            "PostToolUse": groups("bash", &[&post], None),
            "Stop": groups("", &[&stop], None),
        }),
    );
    let run = agent(&mut hx);
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        3,
        "{}",
        &run.stderr[..run.stderr.len().min(3000)]
    );

    let result = tool_message(&server, 1);
    assert!(result.starts_with("hi\n\nccc"), "{}", &result[..100]);
    assert_bounded("result with hook context", &result, CAP + CUT_ROOM);

    let msgs = messages(&reqs[2].body);
    let reason = msgs.last().expect("a message");
    assert_eq!(reason["role"], "user");
    let reason = reason["content"].as_str().expect("reason");
    assert!(reason.starts_with("rrr"));
    assert_bounded("Stop hook's reason", reason, CAP + CUT_ROOM);
}

#[test]
fn every_tool_message_is_bounded_hook_additions_included() {
    // Neither part alone reaches the cap; together they would.
    let server = one_call(&print_n(40_000, 'o'));
    let mut hx = Hx::new(&server);
    let post = script(
        &hx,
        "post.sh",
        &format!(
            "cat >/dev/null\nprintf '{{\"additionalContext\": \"%s\"}}' \"$({})\"",
            print_n(40_000, 'c')
        ),
    );
    user_hooks(
        &hx,
        json!({ "PostToolUse": groups("bash", &[&post], None) }),
    );
    let run = agent(&mut hx);
    run.assert_success();
    let result = tool_message(&server, 1);
    assert!(result.starts_with("ooo"));
    assert!(result.ends_with("ccc"));
    assert_bounded("output plus context", &result, CAP + CUT_ROOM);
    // The trace counts what the model was sent.
    assert!(
        run.stderr.contains(&format!(
            "[HOOK] PostToolUse bash output_chars={}\n",
            result.chars().count()
        )),
        "{}",
        run.stderr
    );
}
