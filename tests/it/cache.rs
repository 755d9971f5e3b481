//! The prompt cache across what hx does between requests, against the fake server's model of
//! DeepSeek's prefix units (`support::prefix_cache`): a request hits only on a whole unit (the
//! end of an earlier request's input, or of its answer).

use crate::support::{is_summary, Call, FakeServer, Hx, Priced, Reply};

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
