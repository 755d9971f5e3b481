//! End-to-end tests of hx's bounds: everything that comes from outside (the server, the model,
//! hooks) has a limit, and breaking one gives a clear answer instead of unbounded memory, an
//! unbounded wait or a crash. Each test asserts on what hx sends in the next request (or on
//! the error it ends with), through the real binary.

mod support;

use support::{messages, Call, FakeServer, Hx, Reply};

#[test]
fn token_counts_that_would_overflow_saturate() {
    let big = u64::MAX / 2 + 1;
    let call = Call::new("c1", "glob", r#"{"pattern":"*.none"}"#);
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call]).with_usage(big, 0, 1),
        Reply::text("done").with_usage(big, 0, 1),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains(&format!(
            "[HOOK] Stop: turns=2, tool_calls=1, blocked=0, prompt_tokens={}, cache_hit_tokens=0, completion_tokens=2",
            u64::MAX
        )),
        "{}",
        run.stderr
    );
    assert_eq!(messages(&server.requests()[1].body).len(), 4);
}
