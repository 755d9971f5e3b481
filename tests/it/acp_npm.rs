//! `hx acp` against clients written with the protocol's official TypeScript SDK
//! (`@agentclientprotocol/sdk`, run with tsx; both installed by `npm ci --prefix tests/npm`, as
//! the README's test command and `.ci/run` do). One client (tests/npm/acp_client.mts) initializes,
//! opens a session, prompts with an embedded file, allows a command the guard refuses when asked,
//! cancels a sleeping command, then loads the session in a second hx; another
//! (tests/npm/acp_options_client.mts) authenticates, switches the model option and reads each
//! prompt's token totals. Without the npm tree these tests fail, naming that step: they never
//! pass by skipping.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::{messages, tool_answer, Call, FakeServer, Hx, Reply};

fn npm_file(rel: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/npm/node_modules")
        .join(rel);
    assert!(
        path.is_file(),
        "the npm test packages are not installed ({} is missing): run \
         `npm ci --prefix tests/npm` first, as the README's test command does",
        path.display()
    );
    path
}

const GUARDED: &str = r#"PATH="$PWD/bin:$PATH" sudo noted"#;

#[test]
fn the_typescript_sdk_client_prompts_is_asked_cancels_and_loads() {
    let tsx = npm_file("tsx/dist/cli.mjs");
    npm_file("@agentclientprotocol/sdk/package.json");
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({ "command": GUARDED }).to_string(),
        )]),
        Reply::text("ran it"),
        Reply::tool_calls(vec![Call::new(
            "c2",
            "bash",
            &json!({ "command": "exec sleep 60" }).to_string(),
        )]),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("bin/sudo", "#!/bin/sh\necho \"ran $*\" >> ran.txt\n");
    std::fs::set_permissions(
        hx.workspace().join("bin/sudo"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let workspace = hx.workspace().canonicalize().expect("workspace");
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/npm/acp_client.mts");
    hx.program("node").args([
        tsx.as_os_str(),
        client.as_os_str(),
        std::ffi::OsStr::new(env!("CARGO_BIN_EXE_hx")),
        workspace.as_os_str(),
    ]);
    let run = hx.run();
    run.assert_success();
    let out: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{}", run.dump()));
    let dump = || format!("{out:#}");
    assert_eq!(out["init"]["protocolVersion"], 1, "{}", dump());
    assert_eq!(out["init"]["agentInfo"]["name"], "hx");
    assert_eq!(out["guarded"]["stopReason"], "end_turn", "{}", dump());
    assert_eq!(out["cancelled"]["stopReason"], "cancelled", "{}", dump());
    assert!(out["cancelMs"].as_u64().unwrap() < 1000, "{}", dump());
    assert_eq!(
        (out["firstExit"].as_i64(), out["secondExit"].as_i64()),
        (Some(0), Some(0))
    );
    // The guard's refusal was put to the client, which allowed it once: the command ran.
    let asked = &out["permissions"][0];
    assert_eq!(asked["toolCall"]["toolCallId"], "c1", "{}", dump());
    assert!(asked["toolCall"]["content"][0]["content"]["text"]
        .as_str()
        .unwrap()
        .contains("sudo"));
    assert_eq!(hx.read_file("ran.txt"), "ran noted\n");
    let updates: Vec<&Value> = out["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["update"])
        .collect();
    let kinds: Vec<&str> = updates
        .iter()
        .filter_map(|u| u["sessionUpdate"].as_str())
        .collect();
    for k in [
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ] {
        assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
    }
    let c2_end = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == "c2")
        .expect("the cancelled call answered");
    assert_eq!(c2_end["status"], "failed");
    // What hx sent the model: the prompt with the embedded file, the allowed command's output.
    let reqs = server.completions();
    let task = messages(&reqs[0].body).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        task.starts_with("run the guarded command\n<context ref=\""),
        "{task}"
    );
    assert!(task.contains("embedded context text"), "{task}");
    assert!(
        !tool_answer(&reqs[1].body, "c1").starts_with("Error"),
        "{}",
        tool_answer(&reqs[1].body, "c1")
    );
    // The second hx replayed the session: both prompts, the answer, every call.
    let replayed: Vec<&Value> = out["replayed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["update"])
        .collect();
    let users: Vec<&str> = replayed
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert_eq!(users.len(), 2, "{replayed:?}");
    assert_eq!(users[1], "sleep");
    assert!(replayed
        .iter()
        .any(|u| u["sessionUpdate"] == "agent_message_chunk" && u["content"]["text"] == "ran it"));
    assert!(replayed
        .iter()
        .any(|u| u["sessionUpdate"] == "tool_call" && u["toolCallId"] == "c2"));
}

#[test]
fn the_typescript_sdk_client_switches_the_model_and_reads_the_tokens() {
    let tsx = npm_file("tsx/dist/cli.mjs");
    npm_file("@agentclientprotocol/sdk/package.json");
    let server = FakeServer::start(vec![
        Reply::text("one")
            .with_reasoning(&"r".repeat(20))
            .with_usage(3_000, 2_048, 200),
        Reply::text("two").with_usage(3_300, 3_000, 20),
    ]);
    let mut hx = Hx::new(&server);
    let workspace = hx.workspace().canonicalize().expect("workspace");
    let client = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/npm/acp_options_client.mts");
    hx.program("node").args([
        tsx.as_os_str(),
        client.as_os_str(),
        std::ffi::OsStr::new(env!("CARGO_BIN_EXE_hx")),
        workspace.as_os_str(),
        std::ffi::OsStr::new("deepseek-v4-pro"),
    ]);
    let run = hx.run();
    run.assert_success();
    let out: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{}", run.dump()));
    let dump = || format!("{out:#}");
    assert_eq!(out["init"]["authMethods"][0]["id"], "api-key", "{}", dump());
    assert_eq!(out["authenticated"], json!({}), "{}", dump());
    let model = out["session"]["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["category"] == "model"))
        .unwrap_or_else(|| panic!("no model option: {}", dump()));
    assert_eq!(model["currentValue"], "deepseek-flash", "{}", dump());
    assert!(model["options"]
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o["value"] == "deepseek-v4-pro"));
    let switched = out["switched"]["configOptions"]
        .as_array()
        .and_then(|o| o.iter().find(|o| o["id"] == "model"))
        .unwrap_or_else(|| panic!("no model option: {}", dump()));
    assert_eq!(switched["currentValue"], "deepseek-v4-pro", "{}", dump());
    assert_eq!(out["refused"]["code"], -32602, "{}", dump());
    // The fake server's counts, through the SDK's own parsing of the answer.
    assert_eq!(
        out["first"]["usage"],
        json!({"totalTokens": 3_200, "inputTokens": 3_000, "outputTokens": 200,
               "cachedReadTokens": 2_048, "thoughtTokens": 5}),
        "{}",
        dump()
    );
    assert_eq!(out["second"]["usage"]["inputTokens"], 3_300, "{}", dump());
    assert_eq!(out["exit"], 0, "{}", dump());
    let reqs = server.completions();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body["model"], "deepseek-flash");
    assert_eq!(reqs[1].body["model"], "deepseek-v4-pro");
}
