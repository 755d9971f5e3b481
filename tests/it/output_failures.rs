//! End-to-end tests of how a failed run reads to a program: `turn.failed`'s `error` in
//! `--json` (its message, kind and HTTP status) and the exit code beside it, for each way a
//! run ends without an answer that an adapter must tell apart.

use crate::support::calls::{bash_printing, call};
use crate::support::hooks::{groups, script, user_hooks};
use crate::support::{session_lines, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};

/// No retry: the server's first refusal is the run's end.
const NO_RETRIES: &str = "[network]\nretries = 0\n";

/// The run's last event, which must be its `turn.failed`.
fn turn_failed(run: &Run) -> Value {
    let last = run.stdout.lines().last().unwrap_or_default();
    let event: Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {last:?}\n{}", run.dump()));
    assert_eq!(event["type"], "turn.failed", "{}", run.dump());
    event
}

/// `hx agent --json` against a server that answers with `replies`, retries off.
fn json_run(replies: Vec<Reply>, args: &[&str]) -> (Hx, Run) {
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", NO_RETRIES)
        .args(["agent", "--json"])
        .args(args);
    let run = hx.run();
    (hx, run)
}

/// The `end` line of the run's session file.
fn session_end(hx: &Hx) -> Value {
    let files = hx.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let lines = session_lines(&files[0]);
    lines
        .into_iter()
        .rfind(|l| l["type"] == "end")
        .expect("an end line")
}

#[test]
fn a_rate_limit_is_a_turn_failed_of_kind_rate_limit_with_its_status() {
    let (hx, run) = json_run(
        vec![Reply::status(
            429,
            r#"{"error":{"message":"Rate limit reached"}}"#,
        )],
        &["go"],
    );
    run.assert_code(1);
    // The whole line, in this key order: what an adapter's parser reads.
    assert_eq!(
        run.stdout.lines().last(),
        Some(
            r#"{"type":"turn.failed","error":{"message":"API error 429: Too Many Requests: Rate limit reached","kind":"rate_limit","status":429},"usage":{"input_tokens":0,"cached_input_tokens":0,"output_tokens":0}}"#
        ),
        "{}",
        run.dump()
    );
    assert_eq!(
        run.stderr,
        "hx: API error 429: Too Many Requests: Rate limit reached\n"
    );
    // The session's end line says the same.
    let end = session_end(&hx);
    assert_eq!(
        (&end["outcome"], &end["kind"]),
        (&json!("error"), &json!("rate_limit"))
    );
}

#[test]
fn each_refusal_has_the_kind_its_status_and_words_give() {
    let cases = [
        (
            402,
            r#"{"error":{"message":"Insufficient Balance","type":"unknown_error"}}"#,
            "API error 402: Payment Required: Insufficient Balance",
            "quota",
        ),
        (
            503,
            r#"{"error":{"message":"Server overloaded"}}"#,
            "API error 503: Service Unavailable: Server overloaded",
            "overloaded",
        ),
        (
            500,
            r#"{"error":{"message":"oops"}}"#,
            "API error 500: Internal Server Error: oops",
            "server",
        ),
        (
            404,
            r#"{"error":{"message":"model 'x' not found"}}"#,
            "API error 404: Not Found: model 'x' not found",
            "not_found",
        ),
        (
            400,
            r#"{"error":{"message":"Model Not Exist","type":"invalid_request_error"}}"#,
            "API error 400: Bad Request: Model Not Exist",
            "not_found",
        ),
        (
            422,
            r#"{"error":{"message":"bad tools"}}"#,
            "API error 422: Unprocessable Entity: bad tools",
            "bad_request",
        ),
    ];
    for (status, body, message, kind) in cases {
        let (_hx, run) = json_run(vec![Reply::status(status, body)], &["go"]);
        run.assert_code(1);
        assert_eq!(
            turn_failed(&run)["error"],
            json!({"message": message, "kind": kind, "status": status}),
            "{}",
            run.dump()
        );
    }
}

#[test]
fn a_refused_key_is_kind_auth_with_status_401() {
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )]);
    let mut hx = Hx::new(&server);
    // Not retried anyway: no config needed.
    hx.args(["agent", "--json", "go"]);
    let run = hx.run();
    run.assert_code(1);
    let message = format!(
        "API error 401: Unauthorized: bad key (the key in DEEPSEEK_API_KEY was refused by \
         provider deepseek at {})",
        server.url()
    );
    assert_eq!(
        turn_failed(&run)["error"],
        json!({"message": message, "kind": "auth", "status": 401})
    );
}

#[test]
fn an_unreachable_server_is_kind_network_without_a_status() {
    let mut hx = Hx::new_offline();
    let url = hx.base_url().to_string();
    hx.write_user_config("config.toml", NO_RETRIES)
        .args(["agent", "--json", "go"]);
    let run = hx.run();
    run.assert_code(1);
    let error = &turn_failed(&run)["error"];
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "cannot connect to {url}/chat/completions: connection refused"
        )),
        "{}",
        run.dump()
    );
    assert_eq!(
        *error,
        json!({"message": message, "kind": "network", "status": null})
    );
    // The same words on stderr, the one line this mode writes there.
    assert_eq!(run.stderr, format!("hx: {message}\n"));
}

#[test]
fn a_second_overflow_is_kind_context_overflow_with_the_server_s_status() {
    let (_hx, run) = json_run(
        vec![
            Reply::tool_calls(vec![bash_printing("c1", 6_000)]),
            Reply::deepseek_overflow(9_000),
            Reply::text("SUM"),
            Reply::deepseek_overflow(9_000),
        ],
        &["look"],
    );
    run.assert_code(1);
    let error = &turn_failed(&run)["error"];
    assert_eq!(
        (&error["kind"], &error["status"]),
        (&json!("context_overflow"), &json!(400)),
        "{}",
        run.dump()
    );
    assert!(
        error["message"].as_str().is_some_and(|m| m.starts_with(
            "API error 400: Bad Request: This model's maximum context length is 9000 tokens."
        )),
        "{}",
        run.dump()
    );
}

#[test]
fn the_limits_the_user_set_are_kinds_max_turns_and_max_cost_with_exit_code_3() {
    let (_hx, run) = json_run(
        vec![Reply::tool_calls(vec![call(
            "c1",
            "glob",
            json!({"pattern": "*"}),
        )])],
        &["--max-turns", "1", "loop"],
    );
    run.assert_code(3);
    assert_eq!(
        turn_failed(&run)["error"],
        json!({
            "message": "stopped after 1 turn (--max-turns) without a final answer",
            "kind": "max_turns",
            "status": null,
        }),
        "{}",
        run.dump()
    );

    // Each request: 0.1 * $0.15 + 0.001 * $0.6 = $0.0156; the second passes $0.02.
    let costly = || {
        Reply::tool_calls(vec![call("c", "bash", json!({"command": "true"}))])
            .with_usage(100_000, 0, 1_000)
    };
    let (hx, run) = json_run(
        vec![costly(), costly(), Reply::text("never asked")],
        &["--max-cost", "0.02", "go"],
    );
    run.assert_code(3);
    let event = turn_failed(&run);
    assert_eq!(
        event["error"],
        json!({
            "message": "stopped: the run cost $0.0312 and passed --max-cost $0.0200",
            "kind": "max_cost",
            "status": null,
        }),
        "{}",
        run.dump()
    );
    assert_eq!(event["usage"]["cost"], 0.0312);
    let end = session_end(&hx);
    assert_eq!(
        (&end["outcome"], &end["kind"]),
        (&json!("max_cost"), &json!("max_cost"))
    );
}

#[test]
fn a_hook_that_stops_the_run_is_kind_hook() {
    let server = FakeServer::start(vec![Reply::text("never asked")]);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "start.sh",
        r#"echo '{"continue": false, "stopReason": "not today"}'"#,
    );
    user_hooks(&hx, json!({ "SessionStart": groups("", &[&s], None) }));
    hx.args(["agent", "--json", "go"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(
        turn_failed(&run)["error"],
        json!({"message": "stopped by a hook: not today", "kind": "hook", "status": null}),
        "{}",
        run.dump()
    );
    assert_eq!(server.requests().len(), 0);
}
