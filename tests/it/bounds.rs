//! End-to-end tests of hx's bounds: everything that comes from outside (the server, the model,
//! hooks) has a limit, and breaking one gives a clear answer instead of unbounded memory, an
//! unbounded wait or a crash. Each test asserts on what hx sends in the next request (or on
//! the error it ends with), through the real binary.

use crate::support::{messages, tool_results, Call, FakeServer, Hx, Reply};

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

/// The line before the last one: every recorded run ends with the line naming its session.
fn before_session_line(stderr: &str) -> &str {
    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.last().is_some_and(|l| l.starts_with("hx: session ")),
        "no session line:\n{stderr}"
    );
    lines.len().checked_sub(2).map_or("", |i| lines[i])
}

/// Ollama's shape sends each call whole in one chunk: a 5 MB argument stays one event instead
/// of half a million fragments.
fn one_chunk_calls(calls: Vec<Call>) -> Reply {
    Reply::tool_calls(calls).ollama()
}

#[test]
fn errors_quote_at_most_200_characters_of_an_argument() {
    // Paths up to the 4096-byte path limit are quoted; names and values have no limit of
    // their own.
    let path = "p".repeat(4000);
    let long = "n".repeat(300_000);
    let args = |v: serde_json::Value| v.to_string();
    let calls = vec![
        Call::new(
            "c0",
            "read_file",
            &args(serde_json::json!({ "path": path })),
        ),
        Call::new(
            "c1",
            "write_file",
            &args(serde_json::json!({"path": path, "content": ""})),
        ),
        Call::new(
            "c2",
            "edit_file",
            &args(serde_json::json!({"path": path, "old_text": "a", "new_text": "b"})),
        ),
        Call::new("c3", &long, "{}"),
        Call::new("c4", &long, "{not json"),
        Call::new(
            "c5",
            "todo_write",
            &args(serde_json::json!({"todos": [{"content": "x", "status": long}]})),
        ),
        Call::new(
            "c6",
            "load_skill",
            &args(serde_json::json!({ "name": long })),
        ),
        Call::new(
            "c7",
            "read_file",
            &args(serde_json::json!({ "path": format!("../{path}") })),
        ),
    ];
    let server = FakeServer::start(vec![one_chunk_calls(calls), Reply::text("done")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results.len(), 8);
    for (i, r) in results.iter().enumerate() {
        assert!(
            r.starts_with("Error: "),
            "call {i}: {}",
            &r[..r.len().min(300)]
        );
        assert!(
            r.chars().count() < 500,
            "call {i}: {} characters: {}",
            r.chars().count(),
            &r[..300]
        );
    }
    let quoted = format!(
        "{}... [3800 characters omitted] ...{}",
        "p".repeat(100),
        "p".repeat(100)
    );
    assert_eq!(
        results[0],
        format!("Error: cannot read {quoted}: File name too long (os error 36)")
    );
    assert!(
        results[3].starts_with("Error: unknown tool nnn"),
        "{}",
        results[3]
    );
    assert!(results[3].contains("nnn... [299800 characters omitted] ...nnn"));
    assert_eq!(
        results[7],
        format!(
            "Error: path escapes workspace: ../{}... [3803 characters omitted] ...{}",
            "p".repeat(97),
            "p".repeat(100)
        )
    );
}

#[test]
fn a_path_longer_than_the_system_allows_is_refused_before_it_is_resolved() {
    // Two million components: resolving them one by one would take hours.
    let deep = "a/".repeat(2_000_000);
    let calls: Vec<Call> = [
        ("read_file", serde_json::json!({ "path": deep })),
        (
            "write_file",
            serde_json::json!({"path": deep, "content": "x"}),
        ),
        (
            "edit_file",
            serde_json::json!({"path": deep, "old_text": "a", "new_text": "b"}),
        ),
        // One 5 MB name: its error used to quote it whole.
        (
            "read_file",
            serde_json::json!({ "path": "p".repeat(5 * 1024 * 1024) }),
        ),
    ]
    .iter()
    .enumerate()
    .map(|(i, (tool, args))| Call::new(&format!("c{i}"), tool, &args.to_string()))
    .collect();
    let server = FakeServer::start(vec![one_chunk_calls(calls), Reply::text("done")]);
    let mut hx = Hx::new(&server);
    // 17 MB of arguments would pass any real window (and be compacted away); this test is
    // about the answers to them.
    hx.write_user_config("config.toml", "context_window = 100000000\n");
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    assert_eq!(
        tool_results(&server.requests()[1].body),
        [
            ("read_file", 4_000_000),
            ("write_file", 4_000_000),
            ("edit_file", 4_000_000),
            ("read_file", 5_242_880)
        ]
        .map(|(t, n)| format!("Error: {t}.path is {n} bytes long; the limit is 4096"))
    );
}

#[test]
fn a_huge_glob_pattern_is_an_error_not_a_crash() {
    let calls = vec![
        Call::new(
            "g0",
            "glob",
            &serde_json::json!({ "pattern": "*".repeat(1 << 20) }).to_string(),
        ),
        Call::new(
            "g1",
            "glob",
            &serde_json::json!({ "pattern": "?".repeat(1001) }).to_string(),
        ),
        Call::new("g2", "glob", r#"{"pattern":"*.txt"}"#),
    ];
    let server = FakeServer::start(vec![one_chunk_calls(calls), Reply::text("done")]);
    let mut hx = Hx::new(&server);
    hx.write_file("a.txt", "").args(["agent", "x"]);
    hx.run().assert_code(0);
    assert_eq!(
        tool_results(&server.requests()[1].body),
        [
            "Error: glob.pattern has 1048576 characters; the limit is 1000",
            "Error: glob.pattern has 1001 characters; the limit is 1000",
            "a.txt",
        ]
    );
}

mod hostile_servers {
    use crate::support::hostile::{Endless, Hostile, JSON_HEAD, SSE_HEAD};
    use crate::support::{Hx, Run};
    use std::time::Duration;

    /// A content delta: each one is data, so it resets the idle and keep-alive timeouts.
    const DELTA: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";

    /// Runs hx against `server` with `network` settings; it must give up, by itself, once.
    fn run(server: &Hostile, network: &str) -> Run {
        let mut hx = Hx::with_base_url(&server.url());
        hx.write_user_config("config.toml", &format!("[network]\n{network}"))
            .args(["agent", "x"]);
        let run = hx.run();
        run.assert_code(1);
        assert_eq!(server.requests(), 1, "not retried\n{}", run.dump());
        assert_eq!(run.stdout, "");
        run
    }

    /// The last line before the session line.
    fn last_line(run: &Run) -> &str {
        super::before_session_line(&run.stderr)
    }

    #[test]
    fn an_endless_event_breaks_the_event_limit() {
        let server = Hostile::start(Endless {
            head: SSE_HEAD,
            prefix: b"data: ".to_vec(),
            repeat: vec![b'x'; 64 * 1024],
            pause: Duration::ZERO,
        });
        let run = run(&server, "max_event_bytes = 1048576\n");
        assert_eq!(
            last_line(&run),
            "hx: a server-sent event is larger than 1 MiB (the limit is [network] max_event_bytes)"
        );
    }

    #[test]
    fn an_endless_stream_of_small_events_breaks_the_response_limit() {
        let server = Hostile::start(Endless {
            head: SSE_HEAD,
            prefix: Vec::new(),
            repeat: DELTA.repeat(1000).into_bytes(),
            pause: Duration::ZERO,
        });
        let run = run(&server, "max_response_bytes = 2097152\n");
        assert_eq!(
            last_line(&run),
            "hx: the response is larger than 2 MiB (the limit is [network] max_response_bytes)"
        );
    }

    #[test]
    fn an_endless_json_body_breaks_the_response_limit() {
        let server = Hostile::start(Endless {
            head: JSON_HEAD,
            prefix: br#"{"choices":[{"message":{"content":""#.to_vec(),
            repeat: vec![b'a'; 64 * 1024],
            pause: Duration::ZERO,
        });
        let run = run(&server, "max_response_bytes = 2097152\n");
        assert_eq!(
            last_line(&run),
            "hx: the response is larger than 2 MiB (the limit is [network] max_response_bytes)"
        );
    }

    #[test]
    fn a_trickle_of_data_cannot_extend_the_response_deadline() {
        // Each event is real data well inside the idle and keep-alive timeouts.
        let server = Hostile::start(Endless {
            head: SSE_HEAD,
            prefix: Vec::new(),
            repeat: DELTA.as_bytes().to_vec(),
            pause: Duration::from_millis(50),
        });
        let run = run(
            &server,
            "idle_timeout_secs = 1\nrequest_timeout_secs = 1\nmax_response_secs = 2\n",
        );
        assert_eq!(
            last_line(&run),
            "hx: no complete response after 2 s (the limit is [network] max_response_secs)"
        );
        assert!(server.written() > 0);
    }
}

#[test]
fn a_response_with_more_than_256_tool_calls_is_refused_and_none_runs() {
    let calls: Vec<Call> = (0..257)
        .map(|i| {
            Call::new(
                &format!("c{i}"),
                "write_file",
                r#"{"path":"x.txt","content":"x"}"#,
            )
        })
        .collect();
    let server = FakeServer::start(vec![
        Reply::tool_calls(calls).unpaced(),
        Reply::text("never"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(
        before_session_line(&run.stderr),
        "hx: the response has more than 256 tool calls (the limit of hx)",
        "{}",
        run.stderr
    );
    assert_eq!(server.requests().len(), 1);
    assert!(!hx.workspace().join("x.txt").exists());
}

/// Tool arguments nested 100,000 deep: serde_json's depth limit (128) makes them an argument
/// error; nothing parses, drops or re-serializes them recursively.
fn deep_arguments() -> String {
    format!(
        r#"{{"pattern":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    )
}

#[test]
fn deeply_nested_tool_arguments_are_an_error_not_a_stack_overflow() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("d1", "glob", &deep_arguments())]).unpaced(),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    // A hook gets the call too: its input holds the arguments as the raw text.
    hx.write_user_config(
        "hooks.json",
        r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"cat > seen.json"}]}]}}"#,
    );
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    let results = tool_results(&server.requests()[1].body);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].starts_with("Error: invalid arguments for glob: recursion limit exceeded"),
        "{}",
        results[0]
    );
    let msgs = messages(&server.requests()[1].body).clone();
    assert_eq!(msgs[2]["tool_calls"][0]["function"]["arguments"], "{}");
    let seen: serde_json::Value =
        serde_json::from_str(&hx.read_file("seen.json")).expect("hook input is JSON");
    assert_eq!(seen["tool_input"], deep_arguments());
}

#[test]
fn a_deeply_nested_chunk_is_an_unreadable_chunk_not_a_crash() {
    let deep = format!(
        r#"data: {{"choices":[{{"delta":{{"tool_calls":[{{"id":"x","function":{{"name":"glob","arguments":{{"a":{}{}}}}}}}]}}}}]}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let reply = || Reply::raw_sse(vec![format!("{deep}\n\n"), "data: [DONE]\n\n".into()]);
    let server = FakeServer::start(vec![reply(), reply()]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[network]\nretries = 1\nretry_base_delay_ms = 5\n",
    )
    .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(
        before_session_line(&run.stderr)
            == "hx: unreadable stream chunk: recursion limit exceeded at line 1 column 209 \
                (after 2 attempts)",
        "{}",
        run.stderr
    );
}
