//! End-to-end tests of MCP servers as tools, with the real hx binary, the fake model server,
//! and the suite's own MCP server (`tests/support/mcp_server.rs`, rmcp's server side): what
//! hx offers in the request, what each call answers in the next request, the bounds, the
//! timeout and crash texts, the servers that fail to start, the untrusted project's
//! `.mcp.json`, and that no server process outlives hx.

use std::path::Path;
use std::time::Duration;

use crate::support::calls::call;
use crate::support::mcp::toml_str;
use crate::support::mcp::{lingering_table, pids, server_table};
use crate::support::procs::ends_within;
use crate::support::{
    json_lines, outside_tmp, tool_answer, tool_names, FakeServer, Hx, Reply, BUILT_IN_TOOLS,
};
use serde_json::{json, Value};

/// The `function` object of tool `name` in a request body.
fn function<'a>(body: &'a Value, name: &str) -> &'a Value {
    body["tools"]
        .as_array()
        .and_then(|ts| ts.iter().find(|t| t["function"]["name"] == name))
        .map(|t| &t["function"])
        .unwrap_or_else(|| panic!("no tool {name} in {}", body["tools"]))
}

/// Every pid in `file` stops running soon after hx exited (polled, with a deadline). Kills
/// the survivors before failing, so a failing test leaves nothing behind either.
fn assert_gone(file: &Path) {
    let ps = pids(file);
    assert!(!ps.is_empty(), "no server pid in {}", file.display());
    let alive: Vec<i32> = ps
        .into_iter()
        .filter(|&p| !ends_within(p, Duration::from_secs(10)))
        .collect();
    for &p in &alive {
        // SAFETY: sending a signal to a process this test started through hx.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    assert!(
        alive.is_empty(),
        "MCP server processes still run after hx exited: {alive:?}"
    );
}

#[test]
fn tools_are_offered_after_the_built_in_ones_called_and_answered() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__t__echo", json!({"text": "hi"}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let pid_file = hx.workspace().join("t.pid");
    // A server that outlives its input, with a child: only ending its group ends them.
    let table = lingering_table("t", &pid_file);
    hx.write_user_config("config.toml", &table)
        .args(["agent", "say hi"]);
    let run = hx.run();
    run.assert_success();
    assert_eq!(run.stdout, "done\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    let names = tool_names(&reqs[0].body);
    let mcp: Vec<&str> = names[BUILT_IN_TOOLS.len()..]
        .iter()
        .map(String::as_str)
        .collect();
    assert_eq!(&names[..BUILT_IN_TOOLS.len()], BUILT_IN_TOOLS);
    assert_eq!(
        mcp,
        [
            "mcp__t__echo",
            "mcp__t__exit",
            "mcp__t__fail",
            "mcp__t__grow",
            "mcp__t__huge",
            "mcp__t__picture",
            "mcp__t__sleep",
            "mcp__t__touch"
        ]
    );
    let echo = function(&reqs[0].body, "mcp__t__echo");
    assert_eq!(
        echo["description"],
        "Sends the text back, prefixed with 'echo: '."
    );
    assert_eq!(
        echo["parameters"],
        json!({"type": "object", "properties": {"text": {"type": "string",
            "description": "The text to send back."}}, "required": ["text"]})
    );
    // The same tools, byte for byte, in the next request.
    assert_eq!(reqs[0].body["tools"], reqs[1].body["tools"]);
    assert_eq!(tool_answer(&reqs[1].body, "c1"), "echo: hi");
    assert!(
        run.stderr.contains("> mcp__t__echo text=hi"),
        "{}",
        run.dump()
    );
    assert_gone(&pid_file);
}

#[test]
fn errors_timeouts_media_and_huge_results_come_back_bounded() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            call("c1", "mcp__t__fail", json!({})),
            call("c2", "mcp__t__sleep", json!({"ms": 20_000})),
            call("c3", "mcp__t__huge", json!({"chars": 300_000})),
            call("c4", "mcp__t__picture", json!({})),
            call("c5", "mcp__t__echo", json!({"text": "still here"})),
        ]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let table = server_table("t", &[], "tool_timeout_sec = 0.5");
    hx.write_user_config("config.toml", &table)
        .args(["agent", "try them"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    let next = &reqs[1].body;
    assert_eq!(tool_answer(next, "c1"), "Error: the tool failed on purpose");
    assert_eq!(
        tool_answer(next, "c2"),
        "Error: MCP tool mcp__t__sleep timed out after 0.5 s"
    );
    let huge = tool_answer(next, "c3");
    let chars = huge.chars().count();
    assert!(
        (50_000..50_100).contains(&chars),
        "cut to the output cap: {chars}"
    );
    assert!(huge.starts_with("HEADxxx") && huge.ends_with("xxxTAIL"));
    assert!(huge.contains("characters omitted"), "{}", &huge[..200]);
    assert_eq!(
        tool_answer(next, "c4"),
        "a picture follows\n[image: image/png, 8 bytes]"
    );
    // A timed-out call does not break the connection.
    assert_eq!(tool_answer(next, "c5"), "echo: still here");
}

#[test]
fn a_server_that_dies_mid_call_gives_errors_and_one_line() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__t__exit", json!({}))]),
        Reply::tool_calls(vec![call("c2", "mcp__t__echo", json!({"text": "x"}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &server_table("t", &[], ""))
        .args(["agent", "go"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", run.dump());
    let stopped = "Error: MCP server t has stopped; its tools cannot be called in this run";
    assert_eq!(tool_answer(&reqs[1].body, "c1"), stopped);
    assert_eq!(tool_answer(&reqs[2].body, "c2"), stopped);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: MCP server t stopped"))
        .collect();
    assert_eq!(
        lines,
        ["hx: MCP server t stopped: test server: exiting on purpose; its tools answer with errors for the rest of the run"],
        "{}",
        run.dump()
    );
    // Its tools stay listed: the request prefix does not change.
    assert_eq!(reqs[0].body["tools"], reqs[2].body["tools"]);
}

#[test]
fn servers_start_together_and_those_that_fail_are_left_out() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    let dir = hx.workspace().to_path_buf();
    let pid = |n: &str| dir.join(format!("{n}.pid")).display().to_string();
    let config = [
        server_table(
            "slow",
            &[
                ("MCP_TEST_START_DELAY_MS", "300"),
                ("MCP_TEST_NOTIFY_FIRST", "1"),
                ("MCP_TEST_PID_FILE", &pid("slow")),
            ],
            "",
        ),
        server_table(
            "bad",
            &[
                ("MCP_TEST_FAIL_START", "1"),
                ("MCP_TEST_PID_FILE", &pid("bad")),
            ],
            "",
        ),
        server_table(
            "late",
            &[
                ("MCP_TEST_START_DELAY_MS", "30000"),
                ("MCP_TEST_PID_FILE", &pid("late")),
            ],
            "startup_timeout_sec = 0.5",
        ),
        "[mcp_servers.off]\ncommand = \"/nonexistent\"\nenabled = false\n".to_string(),
        "[mcp_servers.missing]\ncommand = \"/nonexistent/server\"\n".to_string(),
    ]
    .concat();
    hx.write_user_config("config.toml", &config)
        .args(["agent", "hi"]);
    let run = hx.run();
    run.assert_success();
    let names = tool_names(&server.requests()[0].body);
    assert!(names.contains(&"mcp__slow__echo".to_string()), "{names:?}");
    let others: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with("mcp__") && !n.starts_with("mcp__slow__"))
        .collect();
    assert!(others.is_empty(), "{others:?}");
    let err = &run.stderr;
    assert!(
        err.contains("hx: MCP server bad failed to start: ")
            && err.contains("  bad stderr: test server: fatal: the database is not reachable"),
        "{}",
        run.dump()
    );
    assert!(
        err.contains(
            "hx: MCP server late failed to start: did not start within 0.5 s (startup_timeout_sec); the run goes on without it"
        ),
        "{}",
        run.dump()
    );
    assert!(
        err.contains(
            "hx: MCP server missing failed to start: cannot start \"/nonexistent/server\""
        ),
        "{}",
        run.dump()
    );
    assert!(!err.contains("MCP server off"), "{}", run.dump());
    for n in ["slow", "late"] {
        assert_gone(&dir.join(format!("{n}.pid")));
    }
}

#[test]
fn a_changed_tool_list_is_offered_at_the_next_turn() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__t__grow", json!({}))]),
        Reply::tool_calls(vec![call("c2", "mcp__t__extra", json!({"tags": ["a"]}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &server_table("t", &[], ""))
        .args(["agent", "grow"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", run.dump());
    assert!(!tool_names(&reqs[0].body).contains(&"mcp__t__extra".to_string()));
    assert_eq!(tool_answer(&reqs[1].body, "c1"), "grown");
    let extra = function(&reqs[1].body, "mcp__t__extra");
    assert_eq!(extra["description"], "A tool that appeared later.");
    assert_eq!(
        extra["parameters"],
        json!({"type": "object", "properties": {"tags": {"type": "array",
            "items": {"type": "string"}}}})
    );
    // Sorted in with the others, not appended.
    let names = tool_names(&reqs[1].body);
    let at = |n: &str| names.iter().position(|x| x == n).unwrap();
    assert!(at("mcp__t__exit") < at("mcp__t__extra") && at("mcp__t__extra") < at("mcp__t__fail"));
    assert_eq!(tool_answer(&reqs[2].body, "c2"), "extra answered");
    assert_eq!(reqs[1].body["tools"], reqs[2].body["tools"]);
    // The tools come before the messages: the request after the change misses the cache.
    assert_eq!(
        run.stderr
            .matches("hx: an MCP server's tools changed: the next request misses the prompt cache")
            .count(),
        1,
        "{}",
        run.dump()
    );
}

#[test]
fn a_tool_list_said_changed_but_listed_the_same_keeps_the_request_s_bytes() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__t__touch", json!({}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &server_table("t", &[], ""))
        .args(["agent", "touch"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    assert_eq!(tool_answer(&reqs[1].body, "c1"), "touched");
    // Listed again, the same: the same tools, the same bytes before the new messages.
    assert_eq!(reqs[0].body["tools"], reqs[1].body["tools"]);
    let prefix = &reqs[0].raw_body[..reqs[0].raw_body.find(r#"],"stream":"#).expect("messages")];
    assert!(reqs[1].raw_body.starts_with(prefix), "{}", run.dump());
    assert!(!run.stderr.contains("tools changed"), "{}", run.dump());
}

#[test]
fn hooks_match_mcp_tools_like_any_tool() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            call("c1", "mcp__t__echo", json!({"text": "a"})),
            call("c2", "bash", json!({"command": "echo b"})),
        ]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let hooks = json!({"hooks": {"PreToolUse": [{"matcher": "mcp__.*", "hooks": [
        {"type": "command", "command": "echo 'no MCP today' >&2; exit 2"}]}]}});
    hx.write_user_config("config.toml", &server_table("t", &[], ""))
        .write_user_config("hooks.json", &hooks.to_string())
        .args(["agent", "go"]);
    let run = hx.run();
    run.assert_success();
    let next = &server.requests()[1].body;
    assert_eq!(
        tool_answer(next, "c1"),
        "Error: blocked by hook: no MCP today"
    );
    assert_eq!(tool_answer(next, "c2"), "b\n");
    assert!(
        run.stderr
            .contains("[HOOK] PreToolUse blocked mcp__t__echo({\"text\":\"a\"}): no MCP today"),
        "{}",
        run.dump()
    );
}

#[test]
fn subagents_get_only_the_servers_that_say_so() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "task", json!({"prompt": "look"}))]),
        Reply::text("sub done"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let config = [
        server_table("main", &[], ""),
        server_table("both", &[], "subagents = true"),
    ]
    .concat();
    hx.write_user_config("config.toml", &config)
        .args(["agent", "delegate"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", run.dump());
    let parent = tool_names(&reqs[0].body);
    assert!(
        parent.contains(&"mcp__main__echo".into()) && parent.contains(&"mcp__both__echo".into())
    );
    let sub = tool_names(&reqs[1].body);
    assert_eq!(sub[..7], BUILT_IN_TOOLS[..7]);
    assert!(
        sub.iter().skip(7).all(|n| n.starts_with("mcp__both__")),
        "{sub:?}"
    );
    assert!(sub.contains(&"mcp__both__echo".into()), "{sub:?}");
}

#[test]
fn a_projects_mcp_json_starts_only_once_trusted() {
    let server = FakeServer::start(vec![
        Reply::text("untrusted run"),
        Reply::tool_calls(vec![call("c1", "mcp__proj__echo", json!({"text": "p"}))]),
        Reply::text("trusted run"),
    ]);
    let mut hx = Hx::new(&server);
    let pid_file = hx.workspace().join("proj.pid");
    let mcp_json = json!({"mcpServers": {"proj": {
        "command": crate::support::mcp::server_path(),
        "env": {"MCP_TEST_PID_FILE": pid_file}
    }}});
    hx.write_file(".mcp.json", &mcp_json.to_string())
        .args(["agent", "hi"]);
    let run = hx.run();
    run.assert_success();
    let file = std::fs::canonicalize(hx.workspace().join(".mcp.json")).expect("canonical");
    let warning = format!(
        "hx: {}: project MCP servers skipped: not trusted; review the file, then run `hx trust` to allow it",
        file.display()
    );
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains(".mcp.json"))
        .collect();
    assert_eq!(warnings, [warning.as_str()], "{}", run.dump());
    let names = tool_names(&server.requests()[0].body);
    assert!(!names.iter().any(|n| n.starts_with("mcp__")), "{names:?}");
    assert!(!pid_file.exists(), "an untrusted server never starts");

    let trust = hx.run_args(&["trust", "--yes"]);
    trust.assert_success();
    assert!(
        trust
            .stdout
            .contains(&format!("project MCP servers {}", file.display())),
        "{}",
        trust.dump()
    );
    let run = hx.run();
    run.assert_success();
    assert!(!run.stderr.contains(".mcp.json"), "{}", run.dump());
    let reqs = server.requests();
    assert_eq!(tool_answer(&reqs[2].body, "c1"), "echo: p");
    assert_gone(&pid_file);
}

#[test]
fn servers_end_when_a_signal_or_an_error_ends_the_run() {
    // keep_background keeps what commands leave running, never the servers.
    let keep = "[tools]\nkeep_background = true\n";
    for (reply, signal, code, extra) in [
        (Reply::hang(), Some(libc::SIGTERM), 143, ""),
        (Reply::hang(), Some(libc::SIGINT), 130, keep),
        (
            Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
            None,
            1,
            "",
        ),
        (Reply::text("done"), None, 0, keep),
    ] {
        let server = FakeServer::start(vec![reply]);
        let mut hx = Hx::new(&server);
        let pid_file = hx.workspace().join("t.pid");
        let table = lingering_table("t", &pid_file);
        hx.write_user_config("config.toml", &format!("{extra}{table}"))
            .args(["agent", "hi"]);
        let child = hx.spawn();
        assert!(server.wait_for_requests(1, Duration::from_secs(30)));
        // The server and its child run in the run's pod: a PID namespace below the test's.
        // (Checked while hx waits for the hanging reply; the other runs end at once.)
        for p in pids(&pid_file).into_iter().filter(|_| signal.is_some()) {
            let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
            let levels = status
                .lines()
                .find_map(|l| l.strip_prefix("NSpid:"))
                .map_or(0, |ns| ns.split_whitespace().count());
            assert_eq!(levels, 2, "pid {p}: {status}");
        }
        if let Some(sig) = signal {
            // SAFETY: sending a signal to our own child process.
            unsafe { libc::kill(child.id() as i32, sig) };
        }
        let run = crate::support::Run::wait(child, Duration::from_secs(30));
        run.assert_code(code);
        assert_gone(&pid_file);
    }
}

#[test]
fn mcp_list_shows_each_server_its_state_start_time_and_tools() {
    let mut hx = Hx::new_offline();
    let pid_file = hx.workspace().join("t.pid");
    let config = [
        lingering_table("t", &pid_file),
        server_table("bad", &[("MCP_TEST_FAIL_START", "1")], ""),
        "[mcp_servers.off]\nurl = \"http://127.0.0.1:9/mcp\"\nenabled = false\n".to_string(),
    ]
    .concat();
    let mcp_json = json!({"mcpServers": {"proj": {"command": "/nonexistent/server"}}});
    hx.write_user_config("config.toml", &config)
        .write_file(".mcp.json", &mcp_json.to_string())
        .env_remove("DEEPSEEK_API_KEY");

    // "bad" failed to start: the listing is printed whole, and the exit code says so.
    let run = hx.run_args(&["mcp", "list", "--json"]);
    run.assert_code(1);
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let by_name = |n: &str| {
        list.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == n))
            .unwrap_or_else(|| panic!("no {n} in {list}"))
            .clone()
    };
    let t = by_name("t");
    assert_eq!(t["state"], "started");
    assert_eq!(t["source"], "config");
    assert!(t["start_ms"].is_u64(), "{t}");
    let tools: Vec<&str> = t["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|x| x["name"].as_str().expect("name"))
        .collect();
    assert_eq!(tools.len(), 8, "{tools:?}");
    assert_eq!(t["tools"][0]["name"], "mcp__t__echo");
    assert_eq!(
        t["tools"][0]["description"],
        "Sends the text back, prefixed with 'echo: '."
    );
    let bad = by_name("bad");
    assert_eq!(bad["state"], "failed");
    assert_eq!(
        bad["why"],
        "it exited with code 1 before the MCP handshake ended: test server: fatal: the \
         database is not reachable"
    );
    assert_eq!(by_name("off")["state"], "disabled");
    let proj = by_name("proj");
    assert_eq!(proj["state"], "untrusted");
    assert!(proj["why"].as_str().expect("why").contains("`hx trust`"));
    assert!(proj["source"]
        .as_str()
        .expect("source")
        .ends_with(".mcp.json"));

    let run = hx.run_args(&["mcp", "list"]);
    run.assert_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let head = lines
        .iter()
        .find(|l| l.starts_with("t: "))
        .expect("a line for t");
    assert!(
        head.starts_with("t: started in ") && head.ends_with(" ms, 8 tools"),
        "{head}"
    );
    for line in [
        "  mcp__t__echo  Sends the text back, prefixed with 'echo: '.",
        "off: disabled",
        "proj: untrusted: review the file, then run `hx trust` to allow it",
    ] {
        assert!(lines.contains(&line), "{line:?} in\n{}", run.stdout);
    }
    assert!(
        lines.iter().any(|l| l.starts_with("bad: failed after ")),
        "{}",
        run.stdout
    );
    assert_gone(&pid_file);
}

#[test]
fn a_bad_server_table_is_a_configuration_error() {
    let mut hx = Hx::new_offline();
    hx.write_user_config(
        "config.toml",
        "[mcp_servers.x]\ncommand = \"a\"\nurl = \"http://h\"\n",
    )
    .args(["agent", "hi"]);
    let run = hx.run();
    run.assert_code(2);
    assert_eq!(
        run.stderr,
        "hx: [mcp_servers.x] give either command or url, not both\n"
    );
}

#[test]
fn in_json_mode_mcp_calls_are_codex_s_mcp_tool_call_items() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            call("c1", "mcp__t__echo", json!({"text": "hi"})),
            call("c2", "mcp__t__fail", json!({})),
        ]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &server_table("t", &[], ""))
        .args(["agent", "--json", "try them"]);
    let run = hx.run();
    run.assert_success();
    let events = json_lines(&run.stdout);
    let item = |kind: &str, call: &str| -> Value {
        events
            .iter()
            .find(|e| e["type"] == kind && e["item"]["call_id"] == call)
            .map(|e| e["item"].clone())
            .unwrap_or_else(|| panic!("no {kind} of {call}\n{}", run.dump()))
    };
    let started = item("item.started", "c1");
    assert_eq!(started["type"], "mcp_tool_call");
    assert_eq!(
        (&started["server"], &started["tool"], &started["status"]),
        (&json!("t"), &json!("echo"), &json!("in_progress"))
    );
    assert_eq!(started["arguments"], json!({"text": "hi"}));
    let echo = item("item.completed", "c1");
    assert_eq!(echo["status"], "completed");
    assert_eq!(
        echo["result"],
        json!({"content": [{"type": "text", "text": "echo: hi"}], "structured_content": null})
    );
    assert_eq!(echo["error"], Value::Null);
    let fail = item("item.completed", "c2");
    assert_eq!(fail["status"], "failed");
    assert_eq!(fail["result"], Value::Null);
    assert_eq!(
        fail["error"]["message"],
        "Error: the tool failed on purpose"
    );
}

/// A `[mcp_servers.NAME]` table whose command is a shell script that records its environment
/// in `out`, then tries to write `escape` (and records whether it could), then becomes the
/// test server: a stand-in for `npx -y` or `python3 -m` running a repository's code.
pub(crate) fn recording_table(name: &str, out: &Path, escape: &Path, extra: &str) -> String {
    let script = "env > \"$OUT\"; \
        if (echo x > \"$ESCAPE\") 2>/dev/null; then echo 'escape: written'; \
        else echo 'escape: refused'; fi >> \"$OUT\"; \
        exec \"$SERVER\"";
    let s = |p: &Path| toml_str(&p.display().to_string());
    format!(
        "[mcp_servers.{name}]\ncommand = \"sh\"\nargs = [\"-c\", {}]\n\
         env = {{ OUT = {}, ESCAPE = {}, SERVER = {}, MY_SETTING = \"on purpose\", \
         SERVER_TOKEN = \"given\" }}\n{extra}\n",
        toml_str(script),
        s(out),
        s(escape),
        s(crate::support::mcp::server_path()),
    )
}

/// Runs one turn calling the recording server's echo, and returns what the server recorded.
fn run_recording_server(hx: &mut Hx) -> Vec<String> {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__rec__echo", json!({"text": "hi"}))]),
        Reply::text("done"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "say hi"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    // The server works where it runs.
    assert_eq!(tool_answer(&reqs[1].body, "c1"), "echo: hi");
    std::fs::read_to_string(hx.workspace().join("server.env"))
        .expect("the server recorded its environment")
        .lines()
        .map(str::to_string)
        .collect()
}

/// A local server is started as a command is: the commands' environment (no API key, no
/// secret of hx's) plus exactly what its `env` table names, and the run's sandbox, which
/// `sandbox = "off"` leaves (the environment stays the commands').
#[test]
fn a_local_server_gets_the_commands_environment_and_sandbox() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("test root").to_path_buf();
    let out = hx.workspace().join("server.env");
    let escape = top.join("escaped");
    hx.env("OTHER_SECRET", "hidden")
        .env("PLAIN_VAR", "kept")
        .write_user_config("config.toml", &recording_table("rec", &out, &escape, ""));
    let lines = run_recording_server(&mut hx);
    let has = |prefix: &str| lines.iter().any(|l| l.starts_with(prefix));
    for secret in ["DEEPSEEK_API_KEY=", "OTHER_SECRET="] {
        assert!(!has(secret), "{secret} reached the server: {lines:?}");
    }
    for given in [
        "MY_SETTING=on purpose",
        "SERVER_TOKEN=given",
        "PLAIN_VAR=kept",
    ] {
        assert!(lines.iter().any(|l| l == given), "{given} in {lines:?}");
    }
    assert_eq!(lines.last().map(String::as_str), Some("escape: refused"));
    assert!(!escape.exists(), "the server wrote outside the workspace");

    let config = recording_table("rec", &out, &escape, "sandbox = \"off\"");
    hx.write_user_config("config.toml", &config).clear_args();
    let lines = run_recording_server(&mut hx);
    assert_eq!(lines.last().map(String::as_str), Some("escape: written"));
    assert!(escape.exists());
    assert!(
        !lines.iter().any(|l| l.starts_with("DEEPSEEK_API_KEY=")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l == "SERVER_TOKEN=given"), "{lines:?}");
}

/// A local server whose program is a script without `#!` runs as `execvp` would run it,
/// through `/bin/sh`: in the run's pod too, where hx's launcher executes the program itself
/// instead of std (`sandbox::pod::exec`).
#[test]
fn a_server_script_without_a_shebang_runs_through_sh() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let script = hx.workspace().join("server-script");
    let server = crate::support::mcp::server_path().display().to_string();
    std::fs::write(&script, format!("exec {}\n", toml_str(&server))).expect("script");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let config = format!(
        "[mcp_servers.rec]\ncommand = {}\n",
        toml_str(&script.display().to_string())
    );
    let fake = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "mcp__rec__echo", json!({"text": "hi"}))]),
        Reply::text("done"),
    ]);
    hx.write_user_config("config.toml", &config)
        .env("DEEPSEEK_BASE_URL", fake.url())
        .args(["agent", "say hi"]);
    let run = hx.run();
    run.assert_success();
    let reqs = fake.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    assert_eq!(
        tool_answer(&reqs[1].body, "c1"),
        "echo: hi",
        "{}",
        run.dump()
    );
}

/// A trusted project's `.mcp.json` may say `"sandbox": "off"` too: `hx trust` shows it, and
/// the server then writes where the user may.
#[test]
fn a_trusted_mcp_json_server_may_leave_the_sandbox() {
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let top = hx.workspace().parent().expect("test root").to_path_buf();
    let escape = top.join("escaped");
    let script = "if (echo x > \"$ESCAPE\") 2>/dev/null; then :; fi; exec \"$SERVER\"";
    let server_json = |sandbox: Option<&str>| {
        let mut s = json!({
            "command": "sh",
            "args": ["-c", script],
            "env": {"ESCAPE": escape, "SERVER": crate::support::mcp::server_path()}
        });
        if let Some(v) = sandbox {
            s["sandbox"] = json!(v);
        }
        json!({"mcpServers": {"rec": s}}).to_string()
    };
    for (sandbox, escaped) in [(None, false), (Some("off"), true)] {
        hx.write_file(".mcp.json", &server_json(sandbox));
        let trust = hx.run_args(&["trust", "--yes"]);
        trust.assert_success();
        assert_eq!(
            trust
                .stdout
                .contains("  sandbox off: it may write wherever you may"),
            escaped,
            "{}",
            trust.dump()
        );
        let _ = std::fs::remove_file(&escape);
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![call("c1", "mcp__rec__echo", json!({"text": "p"}))]),
            Reply::text("done"),
        ]);
        hx.env("DEEPSEEK_BASE_URL", server.url())
            .clear_args()
            .args(["agent", "hi"]);
        let run = hx.run();
        run.assert_success();
        assert_eq!(tool_answer(&server.requests()[1].body, "c1"), "echo: p");
        assert_eq!(escape.exists(), escaped, "{sandbox:?}\n{}", run.dump());
    }
}

/// `hx mcp list` says where each local server runs: in the run's sandbox (its mode), or
/// outside it and why; an HTTP server has no process, and no sandbox.
#[test]
fn mcp_list_shows_each_local_servers_sandbox() {
    let mut hx = Hx::new_offline();
    let config = [
        server_table("on", &[], ""),
        server_table("free", &[], "sandbox = \"off\""),
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nenabled = false\n".to_string(),
    ]
    .concat();
    hx.write_user_config("config.toml", &config)
        .env_remove("DEEPSEEK_API_KEY");
    let list = |hx: &Hx| -> Value {
        let run = hx.run_args(&["mcp", "list", "--json"]);
        run.assert_success();
        serde_json::from_str(&run.stdout).expect("JSON")
    };
    let field = |list: &Value, name: &str, key: &str| -> Value {
        list.as_array()
            .and_then(|a| a.iter().find(|s| s["name"] == name))
            .unwrap_or_else(|| panic!("no {name} in {list}"))[key]
            .clone()
    };
    let v = list(&hx);
    assert_eq!(field(&v, "on", "sandbox"), "workspace-write");
    assert_eq!(field(&v, "on", "sandbox_off"), Value::Null);
    assert_eq!(field(&v, "free", "sandbox"), "off");
    assert_eq!(
        field(&v, "free", "sandbox_off"),
        "its configuration says sandbox = \"off\""
    );
    assert_eq!(field(&v, "web", "sandbox"), Value::Null);

    let run = hx.run_args(&["mcp", "list"]);
    run.assert_success();
    let server = crate::support::mcp::server_path().display().to_string();
    for line in [
        format!("  config · sandbox: workspace-write · {server}"),
        format!("  config · sandbox: off (its configuration says sandbox = \"off\") · {server}"),
        "  config · http://127.0.0.1:9/mcp".to_string(),
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "{line:?} in\n{}",
            run.stdout
        );
    }

    hx.write_user_config("config.toml", &format!("sandbox = \"read-only\"\n{config}"));
    assert_eq!(field(&list(&hx), "on", "sandbox"), "read-only");
    hx.write_user_config("config.toml", &format!("sandbox = \"off\"\n{config}"));
    let v = list(&hx);
    assert_eq!(field(&v, "on", "sandbox"), "off");
    assert_eq!(
        field(&v, "on", "sandbox_off"),
        "the run has no sandbox (see hx sandbox)"
    );
}

/// A server that fails because the sandbox refused a write (npx's cache in `~/.npm`) gets a
/// line saying what the user can do, after the end of its stderr.
#[test]
fn a_server_failing_on_a_refused_write_says_how_to_allow_it() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let cache = hx.home().join(".npm");
    let config = format!(
        "[mcp_servers.npx]\ncommand = \"sh\"\nargs = [\"-c\", \"mkdir {} && exec true\"]\n",
        cache.display()
    );
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .write_user_config("config.toml", &config)
        .args(["agent", "hi"]);
    let run = hx.run();
    run.assert_success();
    assert!(!cache.exists());
    let lines: Vec<&str> = run.stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("hx: MCP server npx failed to start: "))
        .unwrap_or_else(|| panic!("{}", run.dump()));
    assert!(
        lines[at + 1].contains("Permission denied")
            || lines[at + 1].contains("Read-only file system"),
        "{}",
        run.dump()
    );
    assert_eq!(
        lines[at + 2],
        "  npx runs in hx's sandbox, which refuses writes outside the workspace, the temporary \
         folder and sandbox.writable_roots: add the folder it writes there (npx's cache: \
         ~/.npm), or give its table sandbox = \"off\"",
        "{}",
        run.dump()
    );
}

/// A server kept under the host's `/tmp` is not there in the sandbox, whose `/tmp` is the
/// run's own: the program's own error (here the launcher's "No such file") does not say why,
/// so hx says it and what to do; with `sandbox = "off"` the same server starts.
#[test]
fn a_server_under_the_hosts_tmp_says_the_sandbox_has_its_own() {
    let dir = tempfile::Builder::new()
        .prefix("hx-mcp-tmp-")
        .tempdir_in("/tmp")
        .expect("a folder in /tmp");
    let script = dir.path().join("server.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}'\n",
            crate::support::mcp::server_path().display()
        ),
    )
    .expect("write the script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let table = |extra: &str| {
        format!(
            "[mcp_servers.kept]\ncommand = {}\n{extra}\n",
            toml_str(&script.display().to_string())
        )
    };
    let mut hx = Hx::new_offline_in(&outside_tmp());
    hx.write_user_config("config.toml", &table(""));
    let run = hx.run_args(&["mcp", "list"]);
    run.assert_code(1);
    let hint = format!(
        "  kept runs in hx's sandbox, whose /tmp is the run's own: {} in the host's /tmp is not \
         there; move it out of /tmp (into the workspace, say), or give its table sandbox = \"off\"",
        script.display()
    );
    assert!(
        run.stderr.contains("hx: MCP server kept failed to start: ")
            && run.stderr.lines().any(|l| l == hint),
        "{hint:?} in\n{}",
        run.dump()
    );

    hx.write_user_config("config.toml", &table("sandbox = \"off\""));
    let run = hx.run_args(&["mcp", "list"]);
    run.assert_success();
    assert!(
        !run.stderr.contains("failed to start") && run.stdout.contains("mcp__kept__echo"),
        "{}",
        run.dump()
    );
}

/// A server that exits at once (`sh -c 'echo oops >&2; exit 1'`) is noticed at once: the
/// failure names its exit and the end of its stderr, and neither `hx mcp list` nor a run
/// waits on its processes when it ends (it waited 2 s for a pod that could not end while a
/// dead server of it was left unreaped).
#[test]
fn a_server_that_exits_at_once_fails_at_once_with_its_stderr() {
    let config =
        "[mcp_servers.crash]\ncommand = \"sh\"\nargs = [\"-c\", \"echo oops >&2; exit 1\"]\n";
    let server = FakeServer::start(vec![Reply::text("done"); 3]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", config);
    for _ in 0..3 {
        let began = std::time::Instant::now();
        let run = hx.run_args(&["mcp", "list", "--json"]);
        let took = began.elapsed();
        run.assert_code(1);
        let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
        assert_eq!(list[0]["state"], "failed", "{}", run.dump());
        assert_eq!(
            list[0]["why"],
            "it exited with code 1 before the MCP handshake ended: oops",
            "{}",
            run.dump()
        );
        assert!(
            took < Duration::from_millis(1500),
            "{took:?}\n{}",
            run.dump()
        );
    }
    for _ in 0..3 {
        let began = std::time::Instant::now();
        let run = hx.run_args(&["agent", "hi"]);
        let took = began.elapsed();
        run.assert_success();
        assert!(
            run.stderr.contains(
                "hx: MCP server crash failed to start: it exited with code 1 before the MCP \
                 handshake ended; the run goes on without it\n  crash stderr: oops\n"
            ),
            "{}",
            run.dump()
        );
        assert!(
            took < Duration::from_millis(1500),
            "{took:?}\n{}",
            run.dump()
        );
    }
}
