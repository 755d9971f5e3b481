//! End-to-end tests of the meter and a server's count: a server outside hx that says
//! `prompt_tokens: 1` for every request must not keep the history from being compacted, and
//! a count the meter believes, on another scale than its own estimate, must not make a prune
//! report an empty history.
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

/// A bash call printing `n` times `a`, the reply counting `prompt` tokens for its request.
fn counted(prompt: u64, r: Reply) -> Reply {
    r.with_usage(prompt, 0, 0).unpaced()
}

#[test]
fn a_prune_reports_the_size_of_the_history_it_leaves() {
    // The server counts each request at about a third of hx's estimate (3 bytes a token), as
    // a tokenizer of 4 bytes a token on a history of long outputs does: the meter believes
    // it, and the fourth request passes 8,000 tokens by that count, while the outputs it
    // clears weigh more by hx's own.
    let script = || {
        vec![
            counted(1_200, Reply::tool_calls(vec![bash("c1", 15_000)])),
            counted(2_400, Reply::tool_calls(vec![bash("c2", 15_000)])),
            counted(3_400, Reply::tool_calls(vec![bash("c3", 15_000)])),
            counted(3_000, Reply::text("done")),
        ]
    };
    let server = FakeServer::start([script(), script()].concat());
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "context_window = 10000\nmodel = \"local-coder\"\n",
    );
    hx.args(["agent", "--json", "make output"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.dump());
    assert!(tool_answer(&reqs[3].body, "c1").starts_with("[output cleared"));
    let item = crate::support::json_lines(&run.stdout)
        .into_iter()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "compaction")
        .map(|e| e["item"].clone())
        .expect("a compaction item");
    assert_eq!(item["step"], "prune", "{item}");
    let (before, after) = (
        item["tokens_before"].as_u64().expect("before"),
        item["tokens_after"].as_u64().expect("after"),
    );
    // What is left is the system prompt, the tools, the task and the cleared lines: about the
    // size of the request that sent them, never nothing.
    let sent = (reqs[3].raw_body.len() / 3) as u64;
    assert!(
        after > 0 && after < before && after.abs_diff(sent) < sent / 4,
        "{before} → {after}, the next request {sent} tokens by its bytes\n{item}"
    );
    // The session and `hx sessions show` say the same.
    let file = hx.session_files().into_iter().next().expect("session");
    let line = crate::support::session_lines(&file)
        .into_iter()
        .find(|l| l["type"] == "compaction")
        .expect("a compaction line");
    assert_eq!(line["tokens_after"], after);
    let shown = hx.run_args(&["sessions", "show", &crate::support::session_id(&file)]);
    let thousands = hx::text::thousands;
    assert!(
        shown.stdout.contains(&format!(
            "── compacted (auto, prune): {} → {} tokens",
            thousands(before),
            thousands(after)
        )),
        "{}",
        shown.dump()
    );
    // The trace of the same run.
    hx.clear_args()
        .args(["agent", "--ephemeral", "make output"]);
    let run = hx.run();
    run.assert_code(0);
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("compacted: "))
        .unwrap_or_else(|| panic!("no compacted line\n{}", run.dump()));
    let left = line
        .split(" → ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .map(|n| n.replace(',', ""))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(left.is_some_and(|n| n > 0), "{line}");
}
