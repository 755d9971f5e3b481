//! End-to-end tests of the agent loop and the model client: the real `hx` binary against the
//! fake DeepSeek server, asserting on what hx sends in each request as much as on what it
//! prints.

use crate::support::pty::run_on_terminal;
use crate::support::{
    messages, tool_messages, tool_names, Call, FakeServer, Hx, Reply, Run, BUILT_IN_TOOLS,
};
use serde_json::{json, Value};
use std::io::Write;
use std::time::Duration;

/// Fast retries so the retry tests take milliseconds, not seconds.
const FAST_RETRIES: &str = "[network]\nretry_base_delay_ms = 5\n";

#[test]
fn plain_answer_prints_only_the_answer_on_stdout() {
    let server = FakeServer::start(vec![Reply::text("Hello from the model.")]);
    let mut hx = Hx::new(&server);
    // `-v`: the hook steps too.
    hx.args(["agent", "-v", "say", "hello"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "Hello from the model.\n");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.path, "/chat/completions");
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
    assert_eq!(r.body["model"], "deepseek-flash");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    let msgs = messages(&r.body);
    assert_eq!(msgs.len(), 2);
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1], json!({"role": "user", "content": "say hello"}));
    assert_eq!(tool_names(&r.body), BUILT_IN_TOOLS);

    let cwd = hx.workspace().canonicalize().expect("canonical workspace");
    assert!(
        run.stderr
            .contains(&format!("[HOOK] UserPromptSubmit cwd={}\n", cwd.display())),
        "{}",
        run.stderr
    );
    assert!(run
        .stderr
        .contains("[HOOK] Stop: turns=1, tool_calls=0, blocked=0, prompt_tokens=1200, cache_hit_tokens=1024, completion_tokens=150"),
        "{}", run.stderr);
}

#[test]
fn multi_turn_session_request_by_request() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "call_a",
            "read_file",
            r#"{"path":"a.txt"}"#,
        )])
        .with_reasoning("I should read a.txt first.")
        .with_content("Let me look."),
        Reply::tool_calls(vec![
            Call::new("call_b", "glob", r#"{"pattern":"*.txt"}"#),
            Call::new("call_c", "bash", r#"{"command":"echo hi"}"#),
        ])
        .without_reasoning()
        .with_usage(2000, 1900, 20),
        Reply::text("All done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("a.txt", "hello\n")
        .args(["agent", "-v", "inspect a.txt"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "All done.\n");
    // Interim text of a tool-calling turn is not the answer.
    assert!(run.stderr.contains("Let me look."), "{}", run.stderr);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let m2 = messages(&reqs[1].body);
    assert_eq!(m2.len(), 4);
    assert_eq!(
        m2[2],
        json!({
            "role": "assistant",
            "content": "Let me look.",
            "reasoning_content": "I should read a.txt first.",
            "tool_calls": [{"id": "call_a", "type": "function",
                            "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]
        })
    );
    assert_eq!(
        m2[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "hello\n"})
    );

    let m3 = messages(&reqs[2].body);
    // Append-only: the earlier request is an exact prefix of the next one (prompt cache).
    assert_eq!(&m3[..4], &m2[..]);
    assert_eq!(reqs[0].body["messages"][0], m3[0]);
    assert_eq!(reqs[0].body["tools"], reqs[2].body["tools"]);
    assert_eq!(
        m3[4],
        json!({
            "role": "assistant",
            "content": "",
            "reasoning_content": "",
            "tool_calls": [
                {"id": "call_b", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*.txt\"}"}},
                {"id": "call_c", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"echo hi\"}"}}
            ]
        })
    );
    assert_eq!(
        m3[5],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "a.txt"})
    );
    assert_eq!(m3[6]["tool_call_id"], "call_c");
    assert_eq!(m3[6]["content"], "hi\n");
    assert_eq!(m3.len(), 7);

    for line in [
        "> read_file path=a.txt\n",
        "[HOOK] PreToolUse read_file({\"path\":\"a.txt\"})\n",
        "[HOOK] PostToolUse read_file output_chars=6\n",
        "> bash command=echo hi\n",
        "[HOOK] PreToolUse bash({\"command\":\"echo hi\"})\n",
        "[HOOK] Stop: turns=3, tool_calls=3, blocked=0, prompt_tokens=4400, cache_hit_tokens=3948, completion_tokens=320, cost=$0.000272 cache=89%, duration=",
    ] {
        assert!(run.stderr.contains(line), "missing {line:?} in\n{}", run.stderr);
    }
}

#[test]
fn parallel_calls_bad_arguments_and_unknown_tools_each_get_one_answer_in_order() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new("c1", "read_file", r#"{"path": "#),
            Call::new("c2", "frobnicate", r#"{}"#),
            Call::new(
                "c3",
                "todo_write",
                r#"{"todos":[{"content":"Ship","status":"pending"}]}"#,
            ),
            Call::new("c4", "read_file", r#"[1,2]"#),
        ]),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    let m = messages(&reqs[1].body);
    let tools = tool_messages(&reqs[1].body);
    let ids: Vec<&str> = tools
        .iter()
        .map(|t| t["tool_call_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["c1", "c2", "c3", "c4"]);
    // Arguments that are not a JSON object go back as `{}`: local servers parse them.
    let sent: Vec<&str> = m[2]["tool_calls"]
        .as_array()
        .expect("tool calls")
        .iter()
        .map(|c| c["function"]["arguments"].as_str().expect("arguments"))
        .collect();
    assert_eq!(sent[0], "{}");
    assert_eq!(sent[3], "{}");
    assert_eq!(
        sent[2],
        r#"{"todos":[{"content":"Ship","status":"pending"}]}"#
    );
    let content = |i: usize| tools[i]["content"].as_str().expect("content").to_string();
    assert!(
        content(0).starts_with("Error: invalid arguments for read_file: "),
        "{}",
        content(0)
    );
    assert_eq!(content(1), "Error: unknown tool frobnicate");
    assert_eq!(content(2), "[ ] Ship\n(0/1 completed)");
    assert_eq!(
        content(3),
        "Error: invalid arguments for read_file: expected a JSON object"
    );
    assert!(run
        .stderr
        .contains("[HOOK] Stop: turns=2, tool_calls=4, blocked=0"));
}

#[test]
fn rate_limit_is_retried_with_the_same_request() {
    let server = FakeServer::start(vec![
        Reply::status(429, r#"{"error":{"message":"Rate limit reached"}}"#)
            .with_header("Retry-After", "0"),
        Reply::status(503, r#"{"error":{"message":"busy"}}"#),
        Reply::text("finally"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", FAST_RETRIES)
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "finally\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[0].raw_body, reqs[1].raw_body);
    assert_eq!(reqs[1].raw_body, reqs[2].raw_body);
    assert!(run.stderr.contains("API error 429"), "{}", run.stderr);
    assert!(run.stderr.contains("retry 1/4"), "{}", run.stderr);
}

#[test]
fn server_errors_give_up_after_four_retries() {
    let replies = (0..6)
        .map(|_| Reply::status(500, r#"{"error":{"message":"boom"}}"#))
        .collect();
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", FAST_RETRIES)
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 5);
    assert!(run.stderr.contains("hx: API error 500"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[test]
fn unauthorized_is_not_retried_and_says_why() {
    let server = FakeServer::start(vec![
        Reply::status(
            401,
            r#"{"error":{"message":"Authentication Fails, Your api key is invalid","type":"authentication_error"}}"#,
        ),
        Reply::text("never"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 1);
    assert!(
        run.stderr.contains(&format!(
            "hx: API error 401: Unauthorized: Authentication Fails, Your api key is invalid \
             (the key in DEEPSEEK_API_KEY was refused by provider deepseek at {})\n",
            server.url()
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("panicked"));
}

#[test]
fn insufficient_balance_is_not_retried() {
    let server = FakeServer::start(vec![Reply::status(
        402,
        r#"{"error":{"message":"Insufficient Balance"}}"#,
    )]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 1);
    assert!(run.stderr.contains("402") && run.stderr.contains("Insufficient Balance"));
}

#[test]
fn missing_key_is_reported_before_any_request() {
    let server = FakeServer::start(vec![Reply::text("never")]);
    let mut hx = Hx::new(&server);
    hx.env_remove("DEEPSEEK_API_KEY").args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(run.stderr.contains("DEEPSEEK_API_KEY"), "{}", run.stderr);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn stream_cut_mid_answer_is_retried_without_doubling_output() {
    let server = FakeServer::start(vec![
        Reply::text("A partial answer that will be cut").cut_after_events(4),
        Reply::text("The whole answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", FAST_RETRIES)
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "The whole answer.\n");
    assert_eq!(server.requests().len(), 2);
    assert!(
        run.stderr
            .contains("stream ended before the response was complete"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_response_the_server_gave_up_on_is_retried() {
    let server = FakeServer::start(vec![
        Reply::text("Half an ans").finish_reason("insufficient_system_resource"),
        Reply::text("A whole answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", FAST_RETRIES)
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "A whole answer.\n");
    assert_eq!(server.requests().len(), 2);
    assert!(
        run.stderr.contains("(insufficient_system_resource)"),
        "{}",
        run.stderr
    );
}

#[test]
fn keep_alives_and_server_variants_are_understood() {
    // Each call its own arguments: six identical calls in a row would be a loop ([loop]).
    let call = |id: &str| {
        Call::new(
            id,
            "todo_write",
            &json!({"todos": [{"content": "A", "status": "completed", "activeForm": id}]})
                .to_string(),
        )
    };
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("k1")]).keep_alives(5),
        Reply::tool_calls(vec![call("o1"), call("o2")]).ollama(),
        Reply::tool_calls(vec![call("u1")]).openai_usage(),
        Reply::tool_calls(vec![call("n1")]).no_trailing_blank_line(),
        Reply::tool_calls(vec![call("d1")])
            .no_done()
            .finish_reason("end_turn"),
        Reply::text("variants ok").finish_reason("length"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "variants ok\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    let last = messages(&reqs[5].body);
    let ids: Vec<&str> = tool_messages(&reqs[5].body)
        .iter()
        .map(|m| m["tool_call_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, ["k1", "o1", "o2", "u1", "n1", "d1"]);
    for m in last.iter().filter(|m| m["role"] == "assistant") {
        let args = m["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .expect("args");
        let v: Value = serde_json::from_str(args).expect("arguments are whole JSON");
        assert_eq!(v["todos"][0]["content"], "A");
    }
}

#[test]
fn error_event_inside_a_200_stream_fails_the_run() {
    let server = FakeServer::start(vec![Reply::stream_error(
        json!({"message": "content policy violation", "type": "invalid_request_error"}),
    )]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(
        run.stderr
            .contains("hx: API error in stream: content policy violation"),
        "{}",
        run.stderr
    );
}

#[test]
fn max_turns_stops_with_exit_code_3() {
    let call = || Reply::tool_calls(vec![Call::new("c", "glob", r#"{"pattern":"*"}"#)]);
    let server = FakeServer::start(vec![call(), call(), call()]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--max-turns", "2", "loop"]);
    let run = hx.run();
    run.assert_code(3);
    assert_eq!(server.requests().len(), 2);
    assert!(
        run.stderr.contains("stopped after 2 turns"),
        "{}",
        run.stderr
    );
    assert!(run
        .stderr
        .contains("[HOOK] Stop: turns=2, tool_calls=2, blocked=0"));
    assert_eq!(run.stdout, "");
}

#[test]
fn task_from_stdin_and_appended_stdin() {
    let server = FakeServer::start(vec![Reply::text("a"), Reply::text("b")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent"]).stdin("fix the bug\n");
    hx.run().assert_code(0);
    let mut hx2 = Hx::new(&server);
    hx2.args(["agent", "summarize", "this"])
        .stdin("line one\nline two\n");
    hx2.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs[0].body["messages"][1]["content"], "fix the bug");
    assert_eq!(
        reqs[1].body["messages"][1]["content"],
        "summarize this\n\n<stdin>\nline one\nline two\n</stdin>"
    );
}

/// hx started with a stdin pipe the test holds: `feed` gets the pipe's end (drop it to close
/// it); the run is collected after, with a generous deadline.
fn with_held_stdin(hx: &Hx, feed: impl FnOnce(std::process::ChildStdin)) -> Run {
    use std::process::Stdio;
    let mut cmd = hx.command();
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn hx");
    let pipe = child.stdin.take().expect("stdin pipe");
    feed(pipe);
    let run = Run::wait(child, Duration::from_secs(30));
    assert!(!run.timed_out, "hx waited on stdin\n{}", run.dump());
    run
}

#[test]
fn a_stdin_nobody_writes_to_is_left_after_a_while_beside_words() {
    let server = FakeServer::start(vec![Reply::text("ok"), Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "summarize", "this"]);
    let (tx, rx) = std::sync::mpsc::channel();
    // Held open and never written to until hx has answered, as a harness's stdin is.
    let run = with_held_stdin(&hx, |pipe| {
        std::thread::spawn(move || {
            let _ = rx.recv();
            drop(pipe);
        });
    });
    let _ = tx.send(());
    run.assert_code(0);
    assert_eq!(
        server.requests()[0].body["messages"][1]["content"],
        "summarize this"
    );
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.contains("stdin"))
            .collect::<Vec<_>>(),
        [
            "hx: nothing came on stdin in 3 s: the task is the words alone (--no-stdin or \
             < /dev/null skips the wait)"
        ],
        "{}",
        run.dump()
    );

    // Once it has begun, stdin is read to its end, however long that takes.
    let mut hx = Hx::new(&server);
    hx.args(["agent", "summarize", "this"]);
    let run = with_held_stdin(&hx, |mut pipe| {
        std::thread::spawn(move || {
            let _ = pipe.write_all(b"line one\n");
            std::thread::sleep(Duration::from_secs(4));
            let _ = pipe.write_all(b"line two\n");
        });
    });
    run.assert_code(0);
    assert_eq!(
        server.requests()[1].body["messages"][1]["content"],
        "summarize this\n\n<stdin>\nline one\nline two\n</stdin>"
    );
    assert!(!run.stderr.contains("stdin"), "{}", run.dump());
}

#[test]
fn empty_task_is_a_usage_error() {
    let server = FakeServer::start(vec![]);
    let mut hx = Hx::new(&server);
    hx.args(["agent"]).stdin("  \n");
    let run = hx.run();
    run.assert_code(2);
    assert!(run.stderr.contains("no task given"), "{}", run.stderr);
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn custom_provider_from_project_config_sends_no_key() {
    let server = FakeServer::start(vec![Reply::text("local").without_reasoning()]);
    let mut hx = Hx::new(&server);
    let config = format!(
        "provider = \"local\"\n[providers.local]\nbase_url = \"{}/v1\"\nmodel = \"qwen3-coder\"\n",
        server.url()
    );
    hx.write_file(".hx/config.toml", &config)
        .args(["agent", "x"]);
    hx.run_args(&["trust", "--yes"]).assert_success();
    let run = hx.run();
    run.assert_code(0);
    let r = &server.completions()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.body["model"], "qwen3-coder");
}

/// The presets of local servers send no key, even with every key variable set, and no
/// effort unless one is set for them.
#[test]
fn local_server_presets_send_no_key() {
    for provider in ["llamacpp", "vllm"] {
        let server = FakeServer::start(vec![Reply::text("local").without_reasoning()]);
        let mut hx = Hx::new(&server);
        hx.env("OPENAI_API_KEY", "sk-openai").args([
            "agent",
            "--provider",
            provider,
            "-m",
            "qwen2.5-coder",
            "--base-url",
            &format!("{}/v1", server.url()),
            "x",
        ]);
        let run = hx.run();
        run.assert_code(0);
        let r = &server.completions()[0];
        assert_eq!(r.path, "/v1/chat/completions", "{provider}");
        assert_eq!(r.header("authorization"), None, "{provider}");
        assert_eq!(r.body["model"], "qwen2.5-coder", "{provider}");
        assert!(r.body.get("reasoning_effort").is_none(), "{provider}");
        assert!(run.stdout.contains("local"), "{provider}: {}", run.dump());
    }
}

#[test]
fn flags_beat_environment_and_files() {
    let server = FakeServer::start(vec![Reply::text("x")]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "model = \"from-file\"\n")
        .env("HX_MODEL", "from-env")
        .args(["agent", "--model", "from-flag", "x"]);
    hx.run().assert_code(0);
    assert_eq!(server.completions()[0].body["model"], "from-flag");
}

#[test]
fn bad_config_file_is_a_usage_error_naming_the_file() {
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "max_turns = \"many\"\n")
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("/.config/hx/config.toml") && run.stderr.contains("line 1"),
        "{}",
        run.stderr
    );
}

#[test]
fn help_and_version() {
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--help"]);
    let run = hx.run();
    run.assert_code(0);
    for s in [
        "--max-turns",
        "--provider",
        "DEEPSEEK_API_KEY",
        "Exit codes",
    ] {
        assert!(run.stdout.contains(s), "help lacks {s}");
    }
    let mut hx = Hx::new_offline();
    hx.arg("--version");
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, format!("hx {}\n", env!("CARGO_PKG_VERSION")));
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--bogus"]);
    hx.run().assert_code(2);
}

#[test]
fn ctrl_c_exits_130_and_kills_the_running_command() {
    let server = FakeServer::start(vec![Reply::tool_calls(vec![Call::new(
        "c1",
        "bash",
        r#"{"command":"echo $$ > shell.pid; sleep 30"}"#,
    )])]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "wait"]);
    let child = hx.spawn();
    let pid_file = hx.workspace().join("shell.pid");
    let shell = crate::support::procs::pid_in(&pid_file, std::time::Duration::from_secs(20))
        .expect("the command never started");
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = crate::support::Run::wait(child, std::time::Duration::from_secs(20));
    run.assert_code(130);
    assert!(run.stderr.contains("hx: interrupted"), "{}", run.stderr);
    // The Stop line has the figures so far: the call was made, though it never finished.
    assert!(
        run.stderr
            .contains("[HOOK] Stop: turns=1, tool_calls=1, blocked=0,"),
        "{}",
        run.stderr
    );
    // The command's process group was killed with the run.
    assert!(
        crate::support::ends_within(shell, std::time::Duration::from_secs(10)),
        "the shell {shell} outlived hx"
    );
}

#[test]
fn on_a_terminal_the_answer_streams_once_and_interim_text_is_not_repeated() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("c1", "glob", r#"{"pattern":"*"}"#)])
            .with_content("Looking around first."),
        Reply::text("The streamed final answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    let run = run_on_terminal(&hx);
    run.assert_code(0);
    // stdout and stderr share the terminal here; each text must appear exactly once.
    let screen = run.stdout.replace("\r\n", "\n");
    assert_eq!(
        screen.matches("The streamed final answer.").count(),
        1,
        "{screen}"
    );
    assert_eq!(
        screen.matches("Looking around first.").count(),
        1,
        "{screen}"
    );
    assert!(screen.contains("The streamed final answer.\n"), "{screen}");
}

#[test]
fn a_silent_server_times_out_and_keep_alives_alone_do_not_hold_a_request() {
    let server = FakeServer::start(vec![
        Reply::hang(),
        Reply::text("late")
            .keep_alives(40)
            .event_delay(std::time::Duration::from_millis(100)),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[network]\nretries = 1\nretry_base_delay_ms = 5\nidle_timeout_secs = 1\nrequest_timeout_secs = 2\n",
    )
    .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 2);
    assert!(
        run.stderr
            .contains("no bytes from the server for 1 s; retry 1/1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("hx: no data for 2 s (only keep-alives) (after 2 attempts)\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "");
}

#[test]
fn reasoning_is_shown_only_when_asked() {
    let reply = || Reply::text("answer").with_reasoning("Pondering the question deeply.");
    let server = FakeServer::start(vec![reply(), reply()]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let quiet = hx.run();
    quiet.assert_code(0);
    assert!(!quiet.stderr.contains("Pondering"), "{}", quiet.stderr);
    let loud = hx
        .clear_args()
        .args(["agent", "--show-reasoning", "x"])
        .run();
    loud.assert_code(0);
    assert!(
        loud.stderr.contains("Pondering the question deeply.\n"),
        "{}",
        loud.stderr
    );
    assert_eq!(loud.stdout, "answer\n");
}

#[test]
fn client_errors_are_never_retried() {
    for status in [400, 404, 422] {
        let server = FakeServer::start(vec![
            Reply::status(status, r#"{"error":{"message":"nope"}}"#),
            Reply::text("never"),
        ]);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "x"]);
        let run = hx.run();
        run.assert_code(1);
        assert_eq!(server.requests().len(), 1, "status {status}");
        assert!(
            run.stderr.contains(&format!("hx: API error {status}: ")),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn the_user_config_file_is_read_from_xdg_config_home() {
    let server = FakeServer::start(vec![Reply::text("x"), Reply::text("y")]);
    let mut hx = Hx::new(&server);
    let xdg = hx.home().join("xdg");
    std::fs::create_dir_all(xdg.join("hx")).expect("mkdir");
    std::fs::write(xdg.join("hx/config.toml"), "model = \"user-model\"\n").expect("write");
    hx.env("XDG_CONFIG_HOME", &xdg).args(["agent", "x"]);
    hx.run().assert_code(0);
    // The project file, once trusted, wins over the user file.
    hx.write_file(".hx/config.toml", "model = \"project-model\"\n");
    hx.run_args(&["trust", "--yes"]).assert_success();
    hx.run().assert_code(0);
    let reqs = server.completions();
    assert_eq!(reqs[0].body["model"], "user-model");
    assert_eq!(reqs[1].body["model"], "project-model");
}

#[test]
fn colour_only_on_a_terminal_and_never_under_no_color() {
    let reply = || Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"echo hi"}"#)]);
    let server = FakeServer::start(vec![reply(), Reply::text("a"), reply(), Reply::text("b")]);
    let mut hx = Hx::new(&server);
    // TERM=dumb, as some CI runners set it, would rightly turn colour off.
    hx.env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        // `-v`: the result is shown, dimmed.
        .args(["agent", "-v", "look"]);
    let coloured = run_on_terminal(&hx);
    coloured.assert_code(0);
    assert!(coloured.stdout.contains("\x1b[2m"), "{:?}", coloured.stdout);
    hx.env("NO_COLOR", "1");
    let plain = run_on_terminal(&hx);
    plain.assert_code(0);
    assert!(!plain.stdout.contains('\x1b'), "{:?}", plain.stdout);
}
