//! End-to-end test of the meter's distrust of a server's count: a server outside hx that says
//! `prompt_tokens: 1` for every request must not keep the history from being compacted.
//!
//! The same run as `tests/context.rs`'s pruning test (a `context_window` of 10,000, so
//! compaction at 8,000 tokens, and three large tool outputs), but every reply counts 1 prompt
//! token. Believed, that count would make each next request 1 token plus what was appended
//! since, never near the limit.

use crate::support::{tool_answer, Call, FakeServer, Hx, Reply};
use serde_json::json;

/// A reply that says its request was 1 token, streamed without pauses.
fn counting_one(r: Reply) -> Reply {
    r.with_usage(1, 0, 0).unpaced()
}

/// A bash call printing `n` times `a`.
fn bash(id: &str, n: usize) -> Call {
    let cmd = format!("head -c {n} /dev/zero | tr '\\0' a");
    Call::new(id, "bash", &json!({ "command": cmd }).to_string())
}

#[test]
fn a_server_counting_one_token_does_not_switch_compaction_off() {
    let server = FakeServer::start(vec![
        counting_one(Reply::tool_calls(vec![bash("c1", 6_000)])),
        counting_one(Reply::tool_calls(vec![bash("c2", 6_000)])),
        counting_one(Reply::tool_calls(vec![bash("c3", 9_000)])),
        counting_one(Reply::tool_calls(vec![Call::new(
            "c4",
            "bash",
            r#"{"command":"echo small"}"#,
        )])),
        counting_one(Reply::text("done")),
        counting_one(Reply::text("again")),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "context_window = 10000\nmodel = \"local-coder\"\n",
    );
    hx.args(["agent", "-v", "make output"]);
    let run = hx.run();
    run.assert_code(0);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{}", run.dump());
    // The fourth request would hold 21,000 bytes of tool output (7,000 tokens) beside the
    // system prompt and the tools: past 8,000 tokens, so the older outputs were cleared.
    let cleared = "[output cleared to save context: 6,000 chars of bash; run it again if needed]";
    for id in ["c1", "c2"] {
        let answer = tool_answer(&reqs[3].body, id);
        assert!(
            answer == cleared,
            "{id} was sent whole ({} chars): not compacted\n{}",
            answer.len(),
            run.stderr
        );
    }
    assert_eq!(tool_answer(&reqs[3].body, "c3"), "a".repeat(9_000));
    assert!(
        run.stderr.contains("[HOOK] PreCompact auto tokens=") && run.stderr.contains("compacted: "),
        "{}",
        run.dump()
    );
}
