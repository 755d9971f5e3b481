//! End-to-end tests of the bound on what hooks say: a hook's block reason, context and stop
//! reason reach the model cut like tool output (head and tail, with the same marker), and every
//! tool message, hook additions included, is bounded by the output cap.

mod hooks_util;
mod support;

use hooks_util::*;
use serde_json::json;
use support::Hx;

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
