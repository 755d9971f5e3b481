//! `hx acp`: the real binary as an Agent Client Protocol agent, driven over its pipes by the
//! test's client (`support::acp`), talking to the fake model server. The messages are read
//! back through the protocol crate's own types, so a field hx names wrongly fails here.

use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    AuthMethod, InitializeResponse, NewSessionResponse, PromptResponse, SessionConfigKind,
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOptions,
    SessionNotification, SetSessionConfigOptionResponse, StopReason, Usage,
};
use serde_json::{json, Value};

use crate::support::acp::{chunks, kinds, Acp, NOT_JSON};
use crate::support::procs::{ends_within, pid_in};
use crate::support::{messages, tool_answer, Call, FakeServer, Hx, Reply};

fn hx_acp(server: &FakeServer) -> Hx {
    let mut hx = Hx::new(server);
    hx.arg("acp");
    hx
}

fn bash(id: &str, command: &str) -> Call {
    Call::new(id, "bash", &json!({ "command": command }).to_string())
}

fn prompt_response(response: &Value) -> PromptResponse {
    serde_json::from_value::<PromptResponse>(response["result"].clone())
        .unwrap_or_else(|e| panic!("not a prompt response ({e}): {response}"))
}

fn stop_reason(response: &Value) -> StopReason {
    prompt_response(response).stop_reason
}

/// The option `id` of `options`, with its current value and its values, as the crate reads it.
fn option(options: &[SessionConfigOption], id: &str) -> (SessionConfigOption, String, Vec<String>) {
    let o = options
        .iter()
        .find(|o| &*o.id.0 == id)
        .unwrap_or_else(|| panic!("no option {id} in {options:?}"))
        .clone();
    let SessionConfigKind::Select(select) = &o.kind else {
        panic!("{id} is not a select: {o:?}")
    };
    let SessionConfigSelectOptions::Ungrouped(values) = &select.options else {
        panic!("{id}'s values are grouped: {o:?}")
    };
    let values = values.iter().map(|v| v.value.0.to_string()).collect();
    let current = select.current_value.0.to_string();
    (o, current, values)
}

fn set_option(acp: &mut Acp, sid: &str, id: &str, value: &str) -> Value {
    acp.call(
        "session/set_config_option",
        json!({"sessionId": sid, "configId": id, "value": value}),
    )
}

/// The options a `session/set_config_option` answered with.
fn options_set(response: &Value) -> Vec<SessionConfigOption> {
    serde_json::from_value::<SetSessionConfigOptionResponse>(response["result"].clone())
        .unwrap_or_else(|e| panic!("not a set_config_option response ({e}): {response}"))
        .config_options
}

/// Every line hx wrote is a JSON-RPC 2.0 message, and every notification a session update
/// the crate reads.
fn assert_protocol_only(seen: &[Value]) {
    for v in seen {
        assert!(
            !v.as_str().is_some_and(|s| s.starts_with(NOT_JSON)),
            "stdout had a line that is not JSON: {v}"
        );
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        if v["method"] == "session/update" {
            serde_json::from_value::<SessionNotification>(v["params"].clone())
                .unwrap_or_else(|e| panic!("not a session notification ({e}): {v}"));
        }
    }
}

#[test]
fn initialize_says_what_hx_can_do() {
    let server = FakeServer::start(vec![]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    let r = acp.result(
        "initialize",
        json!({"protocolVersion": 7, "clientCapabilities": {"fs": {"readTextFile": true}}}),
    );
    let init: InitializeResponse = serde_json::from_value(r).expect("initialize response");
    assert_eq!(
        init.protocol_version,
        agent_client_protocol::schema::ProtocolVersion::V1
    );
    let caps = &init.agent_capabilities;
    assert!(caps.load_session);
    assert!(caps.prompt_capabilities.embedded_context);
    assert!(!caps.prompt_capabilities.image);
    assert!(caps.mcp_capabilities.http);
    // One method, of the schema's default kind (`agent`, which the ACP registry requires),
    // saying where the key comes from.
    let [AuthMethod::Agent(method)] = init.auth_methods.as_slice() else {
        panic!("auth methods: {:?}", init.auth_methods)
    };
    assert_eq!(&*method.id.0, "api-key");
    assert!(method.name.contains("DEEPSEEK_API_KEY"), "{method:?}");
    let description = method.description.as_deref().unwrap_or_default();
    assert!(
        description.contains("DEEPSEEK_API_KEY") && description.contains("config.toml"),
        "{description}"
    );
    let info = init.agent_info.expect("agent info");
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("hx", env!("CARGO_PKG_VERSION"))
    );
    // An older version than hx speaks is answered with the one it does, for the client to
    // decide on, never echoed back.
    let mut acp = Acp::start(&hx);
    let r = acp.result(
        "initialize",
        json!({"protocolVersion": 0, "clientCapabilities": {}}),
    );
    assert_eq!(r["protocolVersion"], 1, "{r}");
}

#[test]
fn a_write_to_a_fifo_does_not_stop_the_agent() {
    // The diff shown for a write reads the file first: a FIFO there must not block hx.
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "w1",
            "write_file",
            r#"{"path": "pipe", "content": "x"}"#,
        )]),
        Reply::text("done"),
    ]);
    let hx = hx_acp(&server);
    let fifo = hx.workspace().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(made, "mkfifo");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "write to the pipe");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    // The write itself replaces the FIFO with a file, atomically, as any write does.
    let reqs = server.completions();
    assert_eq!(reqs.len(), 2);
    assert_eq!(tool_answer(&reqs[1].body, "w1"), "Wrote 1 bytes to pipe");
}

#[test]
fn a_prompt_streams_its_run_and_ends_its_turn() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            bash("c1", "echo hello from bash"),
            Call::new(
                "c2",
                "write_file",
                &json!({"path": "notes.txt", "content": "new text\n"}).to_string(),
            ),
            Call::new(
                "c3",
                "todo_write",
                &json!({"todos": [{"content": "write notes", "status": "in_progress"}]})
                    .to_string(),
            ),
        ])
        .with_content("Let me look."),
        Reply::text("All done."),
    ]);
    let mut hx = hx_acp(&server);
    hx.write_file("notes.txt", "old text\n");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "write the notes");
    let r = acp.response(id);
    assert_eq!(stop_reason(&r), StopReason::EndTurn, "{r}");
    let updates = acp.updates(&sid);
    let k = kinds(&updates);
    assert!(k.contains(&"agent_thought_chunk".to_string()), "{k:?}");
    assert_eq!(
        chunks(&updates, "agent_message_chunk"),
        "Let me look.All done."
    );
    let call = |id: &str, kind: &str| -> Vec<Value> {
        updates
            .iter()
            .filter(|u| u["sessionUpdate"] == kind && u["toolCallId"] == id)
            .cloned()
            .collect()
    };
    let started = &call("c1", "tool_call")[0];
    assert_eq!(started["kind"], "execute", "{started}");
    assert_eq!(started["title"], "echo hello from bash");
    assert_eq!(started["rawInput"]["command"], "echo hello from bash");
    let ended = &call("c1", "tool_call_update")[0];
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(
        ended["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("hello from bash")),
        "{ended}"
    );
    let write = &call("c2", "tool_call")[0];
    assert_eq!(write["kind"], "edit", "{write}");
    assert_eq!(
        write["locations"][0]["path"],
        hx.workspace()
            .canonicalize()
            .unwrap()
            .join("notes.txt")
            .display()
            .to_string()
    );
    let diff = &call("c2", "tool_call_update")[0]["content"][0];
    assert_eq!(diff["type"], "diff", "{diff}");
    assert_eq!(
        (diff["oldText"].as_str(), diff["newText"].as_str()),
        (Some("old text\n"), Some("new text\n"))
    );
    let plan = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "plan")
        .expect("a plan");
    assert_eq!(
        plan["entries"],
        json!([{"content": "write notes", "priority": "medium", "status": "in_progress"}])
    );
    assert!(
        updates.iter().any(|u| u["sessionUpdate"] == "usage_update"),
        "{k:?}"
    );
    // What hx sent the model: the prompt as the task, the results after it.
    let reqs = server.completions();
    assert_eq!(reqs.len(), 2);
    let first = messages(&reqs[0].body);
    assert_eq!(first.last().unwrap()["content"], "write the notes");
    assert!(tool_answer(&reqs[1].body, "c1").contains("hello from bash"));
    let (code, seen, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_protocol_only(&seen);
}

#[test]
fn the_session_is_recorded_and_hx_agent_continues_it() {
    let server = FakeServer::start(vec![Reply::text("first answer"), Reply::text("second")]);
    let mut hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "remember the word kiwi");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let (code, _, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let files = hx.session_files();
    assert_eq!(files.len(), 1);
    assert_eq!(crate::support::session_id(&files[0]), sid);
    hx.clear_args().args(["agent", "-c", "what was the word?"]);
    hx.run().assert_success();
    let body = &server.completions()[1].body;
    let texts: Vec<String> = messages(body)
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("remember the word kiwi")),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.contains("first answer")),
        "{texts:?}"
    );
}

#[test]
fn session_load_replays_the_history_then_goes_on() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", "echo replayed")]),
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "run it");
    acp.response(id);
    acp.finish();
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let r = acp.call(
        "session/load",
        json!({"sessionId": sid, "cwd": hx.workspace(), "mcpServers": []}),
    );
    assert!(r.get("error").is_none(), "{r}");
    let updates = acp.updates(&sid);
    assert_eq!(chunks(&updates, "user_message_chunk"), "run it");
    assert_eq!(chunks(&updates, "agent_message_chunk"), "first answer");
    let k = kinds(&updates);
    let at = |kind: &str| k.iter().position(|x| x == kind).unwrap_or(usize::MAX);
    assert!(at("user_message_chunk") < at("tool_call"), "{k:?}");
    assert!(at("tool_call") < at("tool_call_update"), "{k:?}");
    assert!(at("tool_call_update") < at("agent_message_chunk"), "{k:?}");
    let id = acp.prompt(&sid, "and now?");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let body = &server.completions()[2].body;
    assert!(tool_answer(body, "c1").contains("replayed"));
    assert_eq!(messages(body).last().unwrap()["content"], "and now?");
    let missing = acp.call(
        "session/load",
        json!({"sessionId": "0190aaaa-0000-7000-8000-000000000000", "cwd": hx.workspace(), "mcpServers": []}),
    );
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[test]
fn cancel_kills_the_running_command_and_answers_cancelled_within_a_second() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", "echo $$ > pid.txt; exec sleep 60")]),
        Reply::text("still here"),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "sleep");
    let pid = pid_in(&hx.workspace().join("pid.txt"), Duration::from_secs(20)).expect("pid");
    // A second prompt while the first runs waits for it (issue 34); a cancel ends both.
    let second = acp.prompt(&sid, "and this");
    let asked = Instant::now();
    acp.notify("session/cancel", json!({"sessionId": sid}));
    let r = acp.response(id);
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(stop_reason(&r), StopReason::Cancelled, "{r}");
    let queued = acp.response(second);
    assert_eq!(stop_reason(&queued), StopReason::Cancelled, "{queued}");
    assert!(
        ends_within(pid, Duration::from_secs(2)),
        "the command still runs"
    );
    let updates = acp.updates(&sid);
    let ended = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "c1")
        .expect("the open call answered");
    assert_eq!(ended["status"], "failed");
    // The session goes on: the model is told the call was interrupted.
    let id = acp.prompt(&sid, "go on");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let body = &server.completions()[1].body;
    assert!(tool_answer(body, "c1").contains("interrupted"), "{body}");
    let (code, seen, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_protocol_only(&seen);
}

/// Issue 34: a prompt sent while the session's last one runs is queued, not refused: it is
/// answered when its own turn ends, and its request holds the first one's whole exchange
/// before it, appended, so the prefix of the request before is unchanged.
#[test]
fn a_prompt_sent_while_one_runs_waits_for_it_and_follows_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", "sleep 1; echo slept")]),
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let first = acp.prompt(&sid, "one");
    let second = acp.prompt(&sid, "two");
    assert_eq!(stop_reason(&acp.response(first)), StopReason::EndTurn);
    assert_eq!(stop_reason(&acp.response(second)), StopReason::EndTurn);
    let requests = server.completions();
    assert_eq!(requests.len(), 3, "one request each, and the tool's");
    let before = messages(&requests[1].body);
    let after = messages(&requests[2].body);
    assert_eq!(&after[..before.len()], &before[..], "the prefix changed");
    assert_eq!(after[before.len()]["content"], "first answer");
    assert_eq!(after[before.len() + 1]["content"], "two");
    assert_eq!(after.len(), before.len() + 2);
    assert!(tool_answer(&requests[1].body, "c1").contains("slept"));
    let (code, seen, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_protocol_only(&seen);
}

#[test]
fn the_turn_limit_is_max_turn_requests() {
    let server = FakeServer::start(vec![Reply::tool_calls(vec![bash("c1", "true")])]);
    let mut hx = hx_acp(&server);
    hx.arg("--max-turns=1");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "loop");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::MaxTurnRequests);
}

#[test]
fn the_guard_asks_the_client_and_a_rejection_is_the_calls_refusal() {
    let command = "sudo ls";
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", command)]),
        Reply::text("ok"),
        Reply::tool_calls(vec![bash("c2", "echo allowed && true")]),
        Reply::text("ok"),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "do it");
    let ask = acp.wait_for("a permission request", |v| {
        v["method"] == "session/request_permission"
    });
    assert_eq!(ask["params"]["sessionId"], sid.as_str());
    assert_eq!(ask["params"]["toolCall"]["toolCallId"], "c1");
    let options: Vec<&str> = ask["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject_once"]);
    acp.answer(
        &ask["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}),
    );
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let refused = tool_answer(&server.completions()[1].body, "c1").to_string();
    assert!(refused.starts_with("Error"), "{refused}");
    let updates = acp.updates(&sid);
    let ended = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "c1")
        .expect("c1 ended");
    assert_eq!(ended["status"], "failed");
}

#[test]
fn bad_lines_get_json_rpc_errors_and_hx_keeps_reading() {
    let server = FakeServer::start(vec![]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    // Before initialize.
    let early = acp.call("session/new", json!({"cwd": "/", "mcpServers": []}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
    acp.send_raw(b"this is not json\n");
    let parse = acp.wait_for("a parse error", |v| v["error"]["code"] == -32700);
    assert_eq!(parse["id"], Value::Null);
    acp.initialize();
    let unknown = acp.call("session/fly", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let bad = acp.call("session/new", json!({"cwd": 5}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap()
            .contains("session/new"),
        "{bad}"
    );
    let relative = acp.call("session/new", json!({"cwd": "relative", "mcpServers": []}));
    assert_eq!(relative["error"]["code"], -32602, "{relative}");
    let nobody = acp.call(
        "session/prompt",
        json!({"sessionId": "nope", "prompt": Acp::prompt_text("hi")}),
    );
    assert_eq!(nobody["error"]["code"], -32602, "{nobody}");
    let auth = acp.call("authenticate", json!({"methodId": "x"}));
    assert!(auth.get("error").is_some(), "{auth}");
    // A line over the documented bound: an error, and the next line is read.
    let mut long = vec![b'x'; (64 << 20) + 10];
    long.push(b'\n');
    acp.send_raw(&long);
    drop(long);
    let too_long = acp.wait_for("the long line's error", |v| {
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("64 MiB"))
    });
    assert_eq!(too_long["id"], Value::Null);
    acp.initialize();
    let (code, seen, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_protocol_only(&seen);
}

#[test]
fn a_missing_key_is_an_error_naming_the_variable() {
    let server = FakeServer::start(vec![]);
    let mut hx = hx_acp(&server);
    hx.env_remove("DEEPSEEK_API_KEY");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let r = acp.call(
        "session/new",
        json!({"cwd": hx.workspace(), "mcpServers": []}),
    );
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DEEPSEEK_API_KEY"),
        "{r}"
    );
}

#[test]
fn sessions_in_one_process_are_independent() {
    let server = FakeServer::start(vec![Reply::text("one"), Reply::text("two")]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let a = acp.new_session(hx.workspace());
    let b = acp.new_session(hx.workspace());
    assert_ne!(a, b);
    let id = acp.prompt(&a, "to a");
    acp.response(id);
    let id = acp.prompt(&b, "to b");
    acp.response(id);
    assert_eq!(chunks(&acp.updates(&a), "agent_message_chunk"), "one");
    assert_eq!(chunks(&acp.updates(&b), "agent_message_chunk"), "two");
    let second: Vec<String> = messages(&server.completions()[1].body)
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(!second.iter().any(|t| t.contains("to a")), "{second:?}");
    let (code, _, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_eq!(hx.session_files().len(), 2);
}

#[test]
fn eof_during_a_prompt_ends_hx_and_what_it_started() {
    let server = FakeServer::start(vec![Reply::tool_calls(vec![bash(
        "c1",
        "echo $$ > pid.txt; exec sleep 60",
    )])]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    acp.prompt(&sid, "sleep");
    let pid = pid_in(&hx.workspace().join("pid.txt"), Duration::from_secs(20)).expect("pid");
    let began = Instant::now();
    let (code, _, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        began.elapsed() < Duration::from_secs(5),
        "{:?}",
        began.elapsed()
    );
    assert!(
        ends_within(pid, Duration::from_secs(2)),
        "the command outlived hx"
    );
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    assert!(lines.iter().any(|l| l["type"] == "end"), "{lines:?}");
}

#[test]
fn the_file_tools_go_through_the_clients_file_system_when_it_offers_one() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "read_file",
            &json!({"path": "buffer.txt"}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "c2",
            "write_file",
            &json!({"path": "out.txt", "content": "written by hx\n"}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "c3",
            "read_file",
            &json!({"path": "../outside.txt"}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let mut hx = hx_acp(&server);
    hx.write_file("buffer.txt", "on disk\n");
    let root = hx.workspace().canonicalize().unwrap();
    let mut acp = Acp::start(&hx);
    acp.initialize_with(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "edit in the editor");
    let read = acp.wait_for("a read", |v| v["method"] == "fs/read_text_file");
    assert_eq!(read["params"]["sessionId"], sid.as_str());
    assert_eq!(
        read["params"]["path"],
        root.join("buffer.txt").display().to_string()
    );
    acp.answer(&read["id"], json!({"content": "unsaved buffer\n"}));
    let write = acp.wait_for("a write", |v| v["method"] == "fs/write_text_file");
    assert_eq!(
        write["params"]["path"],
        root.join("out.txt").display().to_string()
    );
    assert_eq!(write["params"]["content"], "written by hx\n");
    acp.answer(&write["id"], json!({}));
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let reqs = server.completions();
    assert!(
        tool_answer(&reqs[1].body, "c1").contains("unsaved buffer"),
        "{}",
        tool_answer(&reqs[1].body, "c1")
    );
    assert!(tool_answer(&reqs[2].body, "c2").starts_with("Wrote 14 bytes"));
    // The editor wrote it, not hx; a path outside the workspace never reaches the editor.
    assert!(!hx.workspace().join("out.txt").exists());
    assert!(tool_answer(&reqs[3].body, "c3").starts_with("Error"));
    let reads = acp
        .seen
        .iter()
        .filter(|v| v["method"] == "fs/read_text_file")
        .count();
    assert_eq!(reads, 1);
}

#[test]
fn a_hook_that_stops_the_prompt_is_a_refusal() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", "true")]),
        Reply::text("never"),
    ]);
    let hx = hx_acp(&server);
    crate::support::hooks::pre_json(&hx, r#"{"continue": false, "stopReason": "enough"}"#);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "go");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::Refusal);
    assert_eq!(server.completions().len(), 1);
}

/// Nothing but protocol messages on stdout through a session with everything that writes:
/// tool calls, a user hook printing on its stdout and stderr, an MCP server the client named,
/// and a compaction after the server's overflow error.
#[test]
fn stdout_holds_only_protocol_messages_through_hooks_mcp_and_compaction() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            crate::support::calls::bash_printing("c1", 6_000),
            Call::new(
                "c2",
                "mcp__t__echo",
                r#"{"text": "from the client's server"}"#,
            ),
        ]),
        Reply::deepseek_overflow(9_000),
        Reply::text("SUM"),
        Reply::text("All done."),
    ]);
    let hx = hx_acp(&server);
    let noisy = crate::support::hooks::script(
        &hx,
        "noisy.sh",
        "cat >/dev/null\necho 'HOOK STDOUT NOISE'\necho 'hook stderr noise' >&2",
    );
    crate::support::hooks::user_hooks(
        &hx,
        json!({"PreToolUse": crate::support::hooks::groups("", &[&noisy], None)}),
    );
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let server_bin = crate::support::mcp::server_path();
    let r = acp.result(
        "session/new",
        json!({"cwd": hx.workspace(), "mcpServers": [
            {"name": "t", "command": server_bin, "args": [], "env": []}
        ]}),
    );
    let sid = r["sessionId"].as_str().unwrap().to_string();
    let id = acp.prompt(&sid, "do everything");
    let r = acp.response(id);
    assert_eq!(
        stop_reason(&r),
        StopReason::EndTurn,
        "{r}\n{}",
        acp.stderr()
    );
    let reqs = server.completions();
    let with_echo = reqs.iter().find(|r| {
        r.body
            .to_string()
            .contains("echo: from the client's server")
    });
    assert!(
        with_echo.is_some(),
        "the client's MCP server was not called"
    );
    let (code, seen, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_protocol_only(&seen);
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    assert!(
        lines.iter().any(|l| l["type"] == "compaction"),
        "no compaction: {lines:?}"
    );
}

#[test]
fn an_agent_that_cannot_be_built_fails_the_prompt_and_leaves_no_session() {
    let server = FakeServer::start(vec![Reply::text("never")]);
    let mut hx = hx_acp(&server);
    hx.write_user_config("hooks.json", "{ not json");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    // session/new answers before the agent is built; its first prompt says what failed.
    let sid = acp.new_session(hx.workspace());
    let r = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": Acp::prompt_text("hi")}),
    );
    assert_eq!(r["error"]["code"], -32603, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("hooks"),
        "{r}"
    );
    // A session nobody prompted leaves nothing for `hx agent -c` to find either.
    let _ = acp.new_session(hx.workspace());
    let (code, _, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert!(server.completions().is_empty());
    assert!(hx.session_files().is_empty(), "{:?}", hx.session_files());
}

#[test]
fn authenticate_says_whether_the_key_is_set() {
    let server = FakeServer::start(vec![]);
    let mut hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let ok = acp.result("authenticate", json!({"methodId": "api-key"}));
    assert_eq!(ok, json!({}));
    let unknown = acp.call("authenticate", json!({"methodId": "oauth"}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    hx.env_remove("DEEPSEEK_API_KEY");
    let mut acp = Acp::start(&hx);
    let init = acp.initialize();
    // Listed without the key too: a client (or the registry's check) learns where it goes.
    assert_eq!(init["authMethods"][0]["id"], "api-key", "{init}");
    let missing = acp.call("authenticate", json!({"methodId": "api-key"}));
    assert_eq!(missing["error"]["code"], -32000, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DEEPSEEK_API_KEY is not set"),
        "{missing}"
    );
}

#[test]
fn the_model_option_switches_the_next_prompts_model() {
    let server = FakeServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let r = acp.result(
        "session/new",
        json!({"cwd": hx.workspace(), "mcpServers": []}),
    );
    let session: NewSessionResponse = serde_json::from_value(r).expect("new session response");
    let sid = session.session_id.0.to_string();
    let options = session.config_options.expect("config options");
    let (model, current, values) = option(&options, "model");
    assert_eq!(model.category, Some(SessionConfigOptionCategory::Model));
    // The configured model, the fake server's list (GET /models), the retired names.
    assert_eq!(current, "deepseek-flash");
    assert_eq!(
        values,
        [
            "deepseek-flash",
            "deepseek-v4-pro",
            "deepseek-chat",
            "deepseek-reasoner"
        ]
    );
    let (effort, current, values) = option(&options, "effort");
    assert_eq!(
        effort.category,
        Some(SessionConfigOptionCategory::ThoughtLevel)
    );
    assert_eq!(current, "default");
    assert_eq!(values, ["default", "off", "low", "high", "max"]);

    let id = acp.prompt(&sid, "first");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let set = set_option(&mut acp, &sid, "model", "deepseek-v4-pro");
    assert_eq!(option(&options_set(&set), "model").1, "deepseek-v4-pro");
    let set = set_option(&mut acp, &sid, "effort", "max");
    let now = options_set(&set);
    assert_eq!(option(&now, "effort").1, "max");
    assert_eq!(option(&now, "model").1, "deepseek-v4-pro");
    // What is not offered is refused, saying what was asked and what would do.
    let refused = set_option(&mut acp, &sid, "model", "gpt-nope");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("gpt-nope") && message.contains("deepseek-v4-pro"),
        "{message}"
    );
    let refused = set_option(&mut acp, &sid, "temperature", "hot");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("\"temperature\""));
    let refused = set_option(&mut acp, &sid, "effort", "extreme");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let refused = set_option(&mut acp, "nope", "model", "deepseek-v4-pro");
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let id = acp.prompt(&sid, "second");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    let reqs = server.completions();
    assert_eq!(reqs[0].body["model"], "deepseek-flash");
    assert_eq!(reqs[1].body["model"], "deepseek-v4-pro");
    assert_eq!(reqs[1].body["reasoning_effort"], "max", "{}", reqs[1].body);
    // The conversation went on: the second request carries the first exchange.
    let texts: Vec<String> = messages(&reqs[1].body)
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("first")), "{texts:?}");

    // A retired DeepSeek name: the model that answers it now, said on stderr, as in chat.
    let set = set_option(&mut acp, &sid, "model", "deepseek-chat");
    assert_eq!(option(&options_set(&set), "model").1, "deepseek-chat");
    let id = acp.prompt(&sid, "third");
    assert_eq!(stop_reason(&acp.response(id)), StopReason::EndTurn);
    assert_eq!(server.completions()[2].body["model"], "deepseek-flash");
    let (code, seen, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert_protocol_only(&seen);
    assert!(
        stderr.contains("deepseek-chat was retired on 2026-07-24: using deepseek-flash"),
        "{stderr}"
    );
    // Recorded as /model and /effort record them, so `hx agent -c` goes on with them.
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    let switches: Vec<(String, String)> = lines
        .iter()
        .filter(|l| l["type"] == "model" || l["type"] == "effort")
        .map(|l| {
            let v = if l["type"] == "model" {
                &l["model"]
            } else {
                &l["effort"]
            };
            (
                l["type"].as_str().unwrap().to_string(),
                v.as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        switches,
        [
            ("model".to_string(), "deepseek-v4-pro".to_string()),
            ("effort".to_string(), "max".to_string()),
            ("model".to_string(), "deepseek-flash".to_string()),
        ],
        "{lines:?}"
    );
    // Loaded again, the session offers what it was left with.
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let loaded = acp.result(
        "session/load",
        json!({"sessionId": sid, "cwd": hx.workspace(), "mcpServers": []}),
    );
    let options: Vec<SessionConfigOption> =
        serde_json::from_value(loaded["configOptions"].clone()).expect("config options");
    assert_eq!(option(&options, "model").1, "deepseek-flash");
    assert_eq!(option(&options, "effort").1, "max");
}

#[test]
fn the_prompt_answer_carries_the_prompts_token_totals() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", "true")])
            .with_reasoning(&"r".repeat(40))
            .with_usage(1_000, 600, 80),
        Reply::text("done")
            .with_reasoning(&"r".repeat(20))
            .with_usage(1_400, 1_000, 40),
        Reply::text("again")
            .without_reasoning()
            .with_usage(2_000, 1_500, 10),
    ]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "two requests");
    let r = acp.response(id);
    // Both requests of the prompt, as the fake server reported them: input with the cached
    // part, output with the thinking (the fake server counts 4 reasoning characters a token).
    let usage = prompt_response(&r)
        .usage
        .unwrap_or_else(|| panic!("no usage: {r}"));
    assert_eq!(
        usage,
        Usage::new(2_520, 2_400, 120)
            .cached_read_tokens(1_600)
            .thought_tokens(15)
    );
    assert_eq!(r["result"]["usage"]["inputTokens"], 2_400, "{r}");
    // Each prompt its own totals, not the session's.
    let id = acp.prompt(&sid, "one request");
    let r = acp.response(id);
    let usage = prompt_response(&r)
        .usage
        .unwrap_or_else(|| panic!("no usage: {r}"));
    assert_eq!(
        usage,
        Usage::new(2_010, 2_000, 10).cached_read_tokens(1_500)
    );
    let (code, seen, _) = acp.finish();
    assert_eq!(code, Some(0));
    assert_protocol_only(&seen);
}

/// integrations/acp/agent.json, the ACP registry entry, says what the crate says (its README
/// tells where each field comes from), runs `hx acp`, and has only fields the registry knows.
#[test]
fn the_registry_entry_follows_the_crate() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("integrations/acp/agent.json");
    let text = std::fs::read_to_string(&path).expect("agent.json");
    let entry: Value = serde_json::from_str(&text).expect("agent.json is JSON");
    assert_eq!(entry["id"], "hx");
    assert_eq!(entry["name"], "hx");
    assert_eq!(entry["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(entry["description"], env!("CARGO_PKG_DESCRIPTION"));
    assert_eq!(entry["license"], env!("CARGO_PKG_LICENSE"));
    let registry_fields = [
        "id",
        "name",
        "version",
        "description",
        "repository",
        "website",
        "authors",
        "license",
        "license_url",
        "icon",
        "distribution",
    ];
    for key in entry.as_object().expect("an object").keys() {
        assert!(
            registry_fields.contains(&key.as_str()),
            "{key} is no registry field"
        );
    }
    assert_eq!(
        entry["distribution"]["local"],
        json!({"cmd": "hx", "args": ["acp"]})
    );
}

/// A client that writes `initialize` and `session/new` and then closes its input gets both
/// answers before hx exits: every request read before the end of the input is answered (it
/// used to exit without answering `session/new`).
#[test]
fn requests_read_before_the_end_of_input_are_answered() {
    let server = FakeServer::start(vec![Reply::text("never asked")]);
    let hx = hx_acp(&server);
    let mut acp = Acp::start(&hx);
    let init = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let new = acp.request(
        "session/new",
        json!({"cwd": hx.workspace(), "mcpServers": []}),
    );
    let (code, seen, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    let answer = |id: i64| {
        seen.iter()
            .find(|v| crate::support::acp::is_response(v, id))
            .unwrap_or_else(|| panic!("no answer to request {id} in {seen:#?}\n{stderr}"))
            .clone()
    };
    serde_json::from_value::<InitializeResponse>(answer(init)["result"].clone())
        .expect("an initialize response");
    let session = serde_json::from_value::<NewSessionResponse>(answer(new)["result"].clone())
        .unwrap_or_else(|e| panic!("not a session/new response ({e}): {seen:#?}"));
    assert!(!session.session_id.0.is_empty());
}
