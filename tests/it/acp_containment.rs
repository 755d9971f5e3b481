//! `hx acp` and the sandbox (issue 32). Item 5: with a client that writes files for the
//! agent, hx checks the path and the editor then writes it by name; a process the model left
//! running swaps a folder on the way for a link (`renameat2(RENAME_EXCHANGE)`) in between,
//! and the write must still not land outside the workspace. Item 10: a permission question's
//! title cannot hide the end of a command behind a run of spaces. The real binary, the test's
//! client, the fake model server; as root and as a throwaway unprivileged user.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::acp::Acp;
use crate::support::user::as_unprivileged_user;
use crate::support::{outside_tmp, tool_answer, Call, FakeServer, Hx, Reply};

/// The model's background process: when `go` appears in the workspace it exchanges the
/// folder `d` with `l`, a link to a folder outside, then says so in `swapped` (seen whole
/// once it exists: a CI run read it empty between its creation and its write).
const SWAPPER: &str = r#"
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
deadline = time.time() + 60
while not os.path.exists("go") and time.time() < deadline:
    time.sleep(0.001)
if libc.renameat2(-100, b"d", -100, b"l", 2) != 0:
    said = "failed: " + os.strerror(ctypes.get_errno())
else:
    said = "swapped"
# Renamed into place: the test reads it as soon as it exists.
with open("swapped.tmp", "w") as f:
    f.write(said)
os.rename("swapped.tmp", "swapped")
"#;

fn wait_for(path: &Path, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while !path.exists() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// hx in a workspace outside `/tmp` (its victim folder beside it), answering from `server`;
/// the caller says how hx is run (`acp`, or a client that starts it).
fn hx_beside_a_victim(hx: &mut Hx, server: &FakeServer) -> std::path::PathBuf {
    let outside = hx.workspace().parent().expect("test root").join("outside");
    std::fs::create_dir(&outside).expect("victim folder");
    hx.env("DEEPSEEK_BASE_URL", server.url());
    hx.write_file("swap.py", SWAPPER);
    std::fs::create_dir(hx.workspace().join("d")).expect("d");
    std::os::unix::fs::symlink(&outside, hx.workspace().join("l")).expect("l");
    outside
}

/// The editor's side: a write request arrives, the client lets the model's process act (it
/// creates `go` and waits for the swap), then writes by name, following links, as an editor
/// does. The write must land in the workspace.
fn editor_write_race(mut hx: Hx, start: impl FnOnce(&Hx) -> Acp) {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({"command": "nohup python3 swap.py >/dev/null 2>&1 & echo started"}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "c2",
            "write_file",
            &json!({"path": "d/notes.txt", "content": "the agent's\n"}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let outside = hx_beside_a_victim(&mut hx, &server);
    hx.arg("acp");
    let ws = hx.workspace().to_path_buf();
    let mut acp = start(&hx);
    acp.initialize_with(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let sid = acp.new_session(&ws);
    let id = acp.prompt(&sid, "write the notes");
    let write = acp.wait_for("a write", |v| v["method"] == "fs/write_text_file");
    std::fs::write(ws.join("go"), "").expect("go");
    // Time for the swap, had the model's process been free to run.
    let swapped = wait_for(&ws.join("swapped"), Duration::from_secs(2));
    let path = write["params"]["path"].as_str().expect("path").to_string();
    let content = write["params"]["content"].as_str().expect("content");
    std::fs::write(&path, content).expect("the editor's write");
    acp.answer(&write["id"], json!({}));
    let answer = acp.response(id);
    assert_eq!(answer["result"]["stopReason"], "end_turn", "{answer}");
    assert!(
        std::fs::read_dir(&outside)
            .expect("outside")
            .next()
            .is_none(),
        "the editor's write landed outside the workspace (swapped during the write: {swapped})"
    );
    assert!(
        !swapped,
        "the model's process ran during the editor's write"
    );
    let reqs = server.completions();
    assert_eq!(
        tool_answer(&reqs[2].body, "c2"),
        "Wrote 12 bytes to d/notes.txt"
    );
    // Once the write was answered the process went on: it was stopped, not killed.
    assert!(
        wait_for(&ws.join("swapped"), Duration::from_secs(10)),
        "the model's process never ran again"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("swapped")).expect("swapped"),
        "swapped"
    );
    // The note is in the real folder, whatever its name now.
    let real = if ws.join("d").is_symlink() { "l" } else { "d" };
    assert_eq!(
        std::fs::read_to_string(ws.join(real).join("notes.txt")).expect("notes"),
        "the agent's\n"
    );
}

#[test]
fn an_editors_write_does_not_land_outside_when_a_folder_is_swapped_for_a_link() {
    let hx = Hx::new_offline_in(&outside_tmp());
    editor_write_race(hx, Acp::start);
}

#[test]
fn an_editors_write_does_not_land_outside_when_a_folder_is_swapped_for_a_link_as_a_user() {
    as_unprivileged_user(
        "an_editors_write_does_not_land_outside_when_a_folder_is_swapped_for_a_link_as_a_user",
        |user| {
            let hx = user.hx();
            editor_write_race(hx, |hx| {
                user.hand_over(hx);
                let mut cmd: Command = hx.command();
                user.as_user(&mut cmd);
                Acp::start_command(cmd)
            });
        },
    );
}

/// The same race with an editor written against the protocol's official TypeScript SDK
/// (tests/npm/acp_write_client.mts, run with tsx): its write lands in the workspace, and the
/// model's process did not run while it wrote.
#[test]
fn an_sdk_editors_write_does_not_land_outside_when_a_folder_is_swapped_for_a_link() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/npm");
    let tsx = root.join("node_modules/tsx/dist/cli.mjs");
    assert!(
        tsx.is_file(),
        "the npm test packages are not installed: run `npm ci --prefix tests/npm` first"
    );
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({"command": "nohup python3 swap.py >/dev/null 2>&1 & echo started"}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "c2",
            "write_file",
            &json!({"path": "d/notes.txt", "content": "the agent's\n"}).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let outside = hx_beside_a_victim(&mut hx, &server);
    let ws = hx.workspace().canonicalize().expect("workspace");
    hx.program("node").args([
        tsx.as_os_str(),
        root.join("acp_write_client.mts").as_os_str(),
        std::ffi::OsStr::new(env!("CARGO_BIN_EXE_hx")),
        ws.as_os_str(),
    ]);
    let run = hx.run();
    run.assert_success();
    let out: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("the client printed no JSON ({e}):\n{}", run.dump()));
    assert_eq!(out["answer"]["stopReason"], "end_turn", "{out:#}");
    assert_eq!(out["writes"].as_array().map(Vec::len), Some(1), "{out:#}");
    assert_eq!(out["writes"][0]["swappedDuringWrite"], false, "{out:#}");
    assert!(
        std::fs::read_dir(&outside)
            .expect("outside")
            .next()
            .is_none(),
        "the editor's write landed outside the workspace: {out:#}"
    );
    // hx ended with the client, and its pod with it, maybe before the process ran again
    // (the test above sees it go on); the note is in the real folder, whatever its name now.
    let real = if ws.join("d").is_symlink() { "l" } else { "d" };
    assert_eq!(
        std::fs::read_to_string(ws.join(real).join("notes.txt")).expect("notes"),
        "the agent's\n"
    );
}

/// The permission question for a command the guard refuses: its title leads with the guard's
/// reason and shows the command with its runs of blanks collapsed, so 150 spaces after `ls -la`
/// do not push `; cd ~ && rm -rf .` out of sight.
#[test]
fn a_permission_title_cannot_hide_the_command_behind_spaces() {
    let command = format!("ls -la{}; cd ~ && rm -rf .", " ".repeat(150));
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({ "command": command }).to_string(),
        )]),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.arg("acp");
    let mut acp = Acp::start(&hx);
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let id = acp.prompt(&sid, "list");
    let ask = acp.wait_for("a permission request", |v| {
        v["method"] == "session/request_permission"
    });
    let call: &Value = &ask["params"]["toolCall"];
    let title = call["title"].as_str().expect("title");
    let text = call["content"][0]["content"]["text"]
        .as_str()
        .expect("content");
    let reason = text
        .strip_prefix("The guard would refuse this command: ")
        .and_then(|t| t.split("\n\n").next())
        .expect("the guard's reason");
    assert!(!title.contains("  "), "{title:?}");
    assert_eq!(
        title,
        format!("{reason}: ls -la ; cd ~ && rm -rf ."),
        "{title:?}"
    );
    acp.answer(
        &ask["id"],
        json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}),
    );
    assert_eq!(acp.response(id)["result"]["stopReason"], "end_turn");
}
