//! The prompt cache across what hx does between requests, against the fake server's model of
//! DeepSeek's prefix units (`support::prefix_cache`): a request hits only on a whole unit (the
//! end of an earlier request's input, or of its answer).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::{is_summary, messages, Call, FakeServer, Hx, Priced, Reply};

fn miss(p: &Priced) -> u64 {
    p.prompt - p.hit
}

#[test]
fn a_tool_turn_and_a_resumed_session_miss_only_what_is_new() {
    let server = FakeServer::start_cached(vec![
        Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"echo hi"}"#)]),
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "say hi"]);
    hx.run().assert_code(0);
    hx.clear_args().args(["agent", "-c", "and again"]);
    let run = hx.run();
    run.assert_code(0);
    let p = server.cache().priced();
    assert_eq!(p.len(), 3, "{}", run.stderr);
    assert_eq!(p[0].hit, 0, "nothing is cached yet");
    // After the call: the request before it and the model's answer hit; the tool message
    // misses. After `-c`: everything up to the last answer hits; the new task misses.
    for (i, r) in p.iter().enumerate().skip(1) {
        assert!(
            r.hit > p[i - 1].prompt,
            "request {i}: {r:?} after {:?}",
            p[i - 1]
        );
        assert!(
            miss(r) <= 30,
            "request {i} misses {} tokens: {r:?}",
            miss(r)
        );
    }
    // Byte for byte: each request starts with the messages of the one before (the reasoning
    // of the tool-calling turn sent back as it came).
    let reqs = server.requests();
    for i in 1..reqs.len() {
        let before = &reqs[i - 1].raw_body;
        let end = before.find(r#"],"stream":"#).expect("messages");
        assert!(reqs[i].raw_body.starts_with(&before[..end]), "request {i}");
    }
}

#[test]
fn a_summary_request_hits_on_everything_before_its_instruction() {
    let server = FakeServer::start_cached(vec![
        Reply::tool_calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(15_000))
            .unpaced(),
        Reply::tool_calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(15_000))
            .unpaced(),
        Reply::text("SUMMARY: two echoes done."),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "context_window = 20000\ncompact_at = 0.5\n");
    hx.args(["agent", "echo twice"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert!(is_summary(&reqs[2].body), "{}", run.stderr);
    let s = server.cache().priced()[2];
    assert!(s.summary);
    // Its misses: the last call's result and the instruction.
    assert!(
        s.hit * 100 >= s.prompt * 90,
        "the summary request hit {} of {} tokens",
        s.hit,
        s.prompt
    );
}

/// The messages of a request as sent, up to the end of its last message.
fn sent_messages(raw_body: &str) -> &str {
    let end = raw_body.find(r#"],"stream":"#).expect("messages");
    &raw_body[..end]
}

#[test]
fn a_summary_request_in_a_small_window_is_the_last_request_plus_the_instruction() {
    // A 20,000-token window: compaction at 16,000 by the limit, and a summary request must
    // leave the 4,000 past it for its answer, so it fits whole only when compaction starts
    // the instruction and a turn before the limit. Each turn reads a 3,000-byte file: a few
    // hundred tokens each, so a run of 30 compacts.
    let turns = Arc::new(AtomicUsize::new(0));
    let n = turns.clone();
    let server = FakeServer::start_cached_with(move |req| {
        if is_summary(&req.body) {
            return Reply::text("SUMMARY: the module was read again and again.").unpaced();
        }
        let k = n.fetch_add(1, Ordering::SeqCst);
        if k >= 30 {
            return Reply::text("done").unpaced();
        }
        // A file of its own each turn: the same call five times in a row is a loop.
        let args = format!(r#"{{"path":"module{k}.txt"}}"#);
        let call = Call::new(&format!("r{k}"), "read_file", &args);
        Reply::tool_calls(vec![call]).with_content("next").unpaced()
    });
    let mut hx = Hx::new(&server);
    for k in 0..30 {
        hx.write_file(
            &format!("module{k}.txt"),
            &"fn f() -> u8 { 1 }\n".repeat(150),
        );
    }
    hx.write_user_config("config.toml", "context_window = 20000\n");
    hx.args(["agent", "--max-turns", "100", "read the module"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    let priced = server.cache().priced();
    let summaries: Vec<usize> = (1..reqs.len())
        .filter(|&i| is_summary(&reqs[i].body))
        .collect();
    assert!(!summaries.is_empty(), "no summary:\n{}", run.stderr);
    for &i in &summaries {
        let (before, summary) = (&reqs[i - 1], &reqs[i]);
        // Byte for byte the request before it, then what the turn added (the answer and the
        // file it read, whole) and the instruction.
        assert!(
            summary
                .raw_body
                .starts_with(sent_messages(&before.raw_body)),
            "summary request {i} rewrote the request before it"
        );
        let (a, b) = (messages(&before.body), messages(&summary.body));
        assert_eq!(b.len(), a.len() + 3, "request {i}");
        let read = b[a.len() + 1]["content"].as_str().unwrap_or("");
        assert!(
            read.matches("fn f()").count() == 150 && !read.contains("hx cut this output"),
            "request {i}: the file is not whole: {read}"
        );
        let p = priced[i];
        assert!(
            p.hit * 100 >= p.prompt * 90,
            "summary request {i} hit {} of {} tokens",
            p.hit,
            p.prompt
        );
        // The run used the window up to the room its answer leaves, not up to 12,000 (which
        // twice the summary's budget of 4,000 would leave): requests as large as the limit
        // allows are what make most of their tokens hits.
        assert!(
            (12_000..=16_000).contains(&p.prompt),
            "summary request {i}: {} tokens",
            p.prompt
        );
    }
}

#[test]
fn a_subagent_s_requests_extend_each_other() {
    let server = FakeServer::start_cached(vec![
        Reply::tool_calls(vec![Call::new(
            "t1",
            "task",
            r#"{"description":"look around","prompt":"list the files"}"#,
        )]),
        // The subagent: a call, then its answer.
        Reply::tool_calls(vec![Call::new("s1", "bash", r#"{"command":"echo sub"}"#)]),
        Reply::text("the files are a and b"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    let run = hx.run();
    run.assert_code(0);
    let p = server.cache().priced();
    assert_eq!(p.len(), 4, "{}", run.stderr);
    // The subagent's second request hits on its first and its answer.
    assert!(p[2].hit > p[1].prompt, "{:?} after {:?}", p[2], p[1]);
    assert!(miss(&p[2]) <= 30, "{:?}", p[2]);
    // The main agent's next request hits on its own first one and its answer.
    assert!(p[3].hit > p[0].prompt, "{:?} after {:?}", p[3], p[0]);
}
