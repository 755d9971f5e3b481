//! End-to-end tests of sessions: every run recorded, continued with -c or -r, repaired after
//! a crash, listed and shown; asserted on the requests the fake server records and on the
//! session files themselves.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::procs::pid_in;
use crate::support::{messages, Call, FakeServer, Hx, Reply};
use hx::session::record;
use serde_json::{json, Value};

fn only_session(hx: &Hx) -> PathBuf {
    let files = hx.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

use crate::support::{session_id as id_of, short_id as short};

/// The session line every recorded run ends with.
fn session_line_id(stderr: &str) -> String {
    let line = stderr
        .lines()
        .rev()
        .find(|l| l.starts_with("hx: session "))
        .unwrap_or_else(|| panic!("no session line in:\n{stderr}"));
    line["hx: session ".len()..]
        .split_whitespace()
        .next()
        .expect("id")
        .to_string()
}

#[test]
fn continue_sends_the_recorded_conversation_plus_the_new_message() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"echo hi"}"#)]),
        Reply::text("First answer."),
        Reply::text("Second answer."),
        Reply::text("Third answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "first task"]);
    let first = hx.run();
    first.assert_code(0);
    let file = only_session(&hx);
    assert_eq!(session_line_id(&first.stderr), short(&id_of(&file)));
    assert!(
        first
            .stderr
            .contains(&format!("hx agent -r {}", short(&id_of(&file)))),
        "{}",
        first.stderr
    );

    hx.clear_args().args(["agent", "-c", "second task"]);
    let second = hx.run();
    second.assert_code(0);
    assert_eq!(second.stdout, "Second answer.\n");
    // Still one session: -c continues it.
    assert_eq!(only_session(&hx), file);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let last_of_first = messages(&reqs[1].body);
    let resumed = messages(&reqs[2].body);
    let n = last_of_first.len();
    assert_eq!(resumed.len(), n + 2, "{resumed:#?}");
    // Byte for byte what the first run last sent: the prefix cache hits.
    assert_eq!(&resumed[..n], &last_of_first[..]);
    assert_eq!(resumed[n]["role"], "assistant");
    assert_eq!(resumed[n]["content"], "First answer.");
    assert_eq!(
        resumed[n + 1],
        json!({"role": "user", "content": "second task"})
    );
    assert_eq!(reqs[2].body["tools"], reqs[1].body["tools"]);
    assert_eq!(reqs[2].body["model"], reqs[1].body["model"]);

    // -r with a prefix of the id continues the same session.
    let id = id_of(&file);
    hx.clear_args()
        .args(["agent", "-r", &id[..id.len() - 4], "third"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let third = messages(&reqs[3].body);
    assert_eq!(third.len(), resumed.len() + 2);
    assert_eq!(&third[..resumed.len()], &resumed[..]);

    let loaded = record::read(&file).expect("the session reads back");
    assert_eq!(loaded.runs, 3);
    assert_eq!(loaded.last_outcome.as_deref(), Some("answered"));
    assert_eq!(loaded.totals.turns, 4);
}

#[test]
fn a_session_killed_during_a_command_is_repaired_on_resume() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new(
                "c1",
                "bash",
                r#"{"command":"echo $$ > shell.pid; sleep 30"}"#,
            ),
            Call::new("c2", "glob", r#"{"pattern":"*"}"#),
        ]),
        Reply::text("Resumed."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "long job"]);
    let mut child = hx.spawn();
    let pid_file = hx.workspace().join("shell.pid");
    let shell = pid_in(&pid_file, Duration::from_secs(20)).expect("the command never started");
    child.kill().expect("SIGKILL hx");
    let _ = child.wait();
    // SIGKILL leaves no chance to clean up: end the command's group here.
    // SAFETY: signalling the process group of a command this test started.
    unsafe { libc::killpg(shell, libc::SIGKILL) };

    hx.clear_args().args(["agent", "-c", "go on"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("2 tool call(s) had no result"),
        "{}",
        run.stderr
    );
    let reqs = server.requests();
    let m = messages(&reqs[1].body);
    let not_run = "Error: not run: the session ended before this call finished";
    assert_eq!(m.len(), 6, "{m:#?}");
    assert_eq!(m[2]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        m[3],
        json!({"role": "tool", "tool_call_id": "c1", "content": not_run})
    );
    assert_eq!(
        m[4],
        json!({"role": "tool", "tool_call_id": "c2", "content": not_run})
    );
    assert_eq!(m[5], json!({"role": "user", "content": "go on"}));
    // The answers are on record now: a later read needs no repair.
    let loaded = record::read(&only_session(&hx)).expect("read");
    let mut msgs = loaded.messages.clone();
    assert_eq!(record::repair(&mut msgs, "x").0, 0);
}

#[test]
fn a_model_error_keeps_the_turn_and_the_session_continues() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("g1", "glob", r#"{"pattern":"*"}"#)]),
        Reply::status(400, r#"{"error":{"message":"bad things"}}"#),
        Reply::text("Recovered."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(
        run.stderr.contains("[HOOK] Stop: turns=2, tool_calls=1"),
        "{}",
        run.stderr
    );
    let err_at = run.stderr.find("API error 400").expect("the error");
    let stop_at = run.stderr.find("[HOOK] Stop:").expect("the Stop line");
    assert!(stop_at < err_at, "Stop line first:\n{}", run.stderr);
    session_line_id(&run.stderr);

    let file = only_session(&hx);
    let loaded = record::read(&file).expect("read");
    assert_eq!(loaded.last_outcome.as_deref(), Some("error"));
    assert_eq!(loaded.messages.len(), 4, "the tool turn is kept");

    hx.clear_args().args(["agent", "-c", "try again"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let failed = messages(&reqs[1].body);
    let resumed = messages(&reqs[2].body);
    assert_eq!(&resumed[..failed.len()], &failed[..]);
    assert_eq!(
        resumed[failed.len()],
        json!({"role": "user", "content": "try again"})
    );
}

#[test]
fn files_are_private_and_ephemeral_runs_write_nothing() {
    let server = FakeServer::start(vec![Reply::text("a"), Reply::text("b")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--ephemeral", "one"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(hx.session_files().is_empty());
    assert!(!run.stderr.contains("hx: session"), "{}", run.stderr);

    hx.clear_args().args(["agent", "two"]);
    hx.run().assert_code(0);
    let file = only_session(&hx);
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().expect("folder")), 0o700);
    let text = std::fs::read_to_string(&file).expect("read");
    assert!(!text.contains("test-key"), "the API key is never written");
    let header: Value = serde_json::from_str(text.lines().next().expect("header")).expect("json");
    for key in [
        "version",
        "id",
        "workspace",
        "model",
        "provider",
        "base_url",
        "hx_version",
        "started_at",
    ] {
        assert!(!header[key].is_null(), "header lacks {key}: {header}");
    }
}

#[test]
fn sessions_false_in_config_records_nothing() {
    let server = FakeServer::start(vec![Reply::text("a")]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "sessions = false\n");
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    assert!(hx.session_files().is_empty());
}

#[test]
fn a_torn_last_line_is_skipped_and_the_session_goes_on() {
    let server = FakeServer::start(vec![Reply::text("a"), Reply::text("b")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    let file = only_session(&hx);
    let mut bytes = std::fs::read(&file).expect("read");
    bytes.extend_from_slice(br#"{"type":"message","message":{"role":"us"#);
    std::fs::write(&file, &bytes).expect("tear");

    hx.clear_args().args(["agent", "-c", "two"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(run.stderr.contains("is incomplete"), "{}", run.stderr);
    let loaded = record::read(&file).expect("whole again");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.messages.len(), 5);
}

#[test]
fn a_subagent_records_its_own_session_linked_to_the_parent() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "t1",
            "task",
            r#"{"description":"look","prompt":"List files."}"#,
        )]),
        Reply::text("child answer"),
        Reply::text("parent answer"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "delegate"]);
    let run = hx.run();
    run.assert_code(0);
    let files = hx.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let headers: Vec<record::Header> = files
        .iter()
        .map(|f| record::read_header(f).expect("header"))
        .collect();
    let parent = headers
        .iter()
        .find(|h| h.parent_id.is_none())
        .expect("parent");
    let child = headers
        .iter()
        .find(|h| h.parent_id.is_some())
        .expect("child");
    assert_eq!(child.parent_id.as_deref(), Some(parent.id.as_str()));
    assert_eq!(child.parent_call_id.as_deref(), Some("t1"));
    // Only the parent is named at the end, and -c continues the parent.
    assert_eq!(session_line_id(&run.stderr), short(&parent.id));

    // The transcript nests the subagent under its call.
    hx.clear_args().args(["sessions", "show", &parent.id]);
    let show = hx.run();
    show.assert_code(0);
    let call_at = show.stdout.find("> task").expect("the call");
    let child_at = show
        .stdout
        .find(&format!("session {} ({})", short(&child.id), child.id))
        .expect("the child transcript");
    assert!(call_at < child_at, "{}", show.stdout);
    assert!(show.stdout.contains("user: delegate"), "{}", show.stdout);
    assert!(
        show.stdout.contains("assistant: child answer"),
        "{}",
        show.stdout
    );
}

#[test]
fn two_runs_at_once_write_two_whole_sessions() {
    let slow = |tag: &str| {
        FakeServer::start(vec![
            Reply::tool_calls(vec![Call::new(
                "c1",
                "bash",
                &json!({ "command": format!("echo {tag}") }).to_string(),
            )])
            .delay(Duration::from_millis(150)),
            Reply::tool_calls(vec![Call::new(
                "c2",
                "bash",
                &json!({ "command": format!("echo {tag}-2") }).to_string(),
            )])
            .delay(Duration::from_millis(150)),
            Reply::text(&format!("{tag} done")).delay(Duration::from_millis(150)),
        ])
    };
    let (a, b) = (slow("alpha"), slow("beta"));
    let mut hx = Hx::new(&a);
    hx.args(["agent", "task alpha"]);
    let first = hx.spawn();
    hx.env("DEEPSEEK_BASE_URL", b.url())
        .clear_args()
        .args(["agent", "task beta"]);
    let second = hx.spawn();
    crate::support::Run::wait(first, Duration::from_secs(30)).assert_code(0);
    crate::support::Run::wait(second, Duration::from_secs(30)).assert_code(0);
    let files = hx.session_files();
    assert_eq!(files.len(), 2);
    for f in files {
        let loaded = record::read(&f).expect("whole");
        assert!(loaded.warnings.is_empty());
        let first_task = match &loaded.messages[1] {
            hx::model::Message::User(t) => t.clone(),
            m => panic!("{m:?}"),
        };
        let tag = first_task.trim_start_matches("task ");
        assert_eq!(loaded.messages.len(), 7);
        for m in &loaded.messages[2..] {
            let text = format!("{m:?}");
            let other = if tag == "alpha" { "beta" } else { "alpha" };
            assert!(!text.contains(other), "{tag}'s session holds {text}");
        }
    }
}

#[test]
fn continue_keeps_the_model_unless_a_flag_changes_it() {
    let server = FakeServer::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--model", "first-model", "one"]);
    hx.run().assert_code(0);
    hx.clear_args()
        .env("HX_MODEL", "env-model")
        .args(["agent", "-c", "two"]);
    hx.run().assert_code(0);
    hx.clear_args()
        .args(["agent", "-c", "--model", "other-model", "three"]);
    hx.run().assert_code(0);
    let reqs = server.completions();
    assert_eq!(reqs[1].body["model"], "first-model");
    assert_eq!(reqs[2].body["model"], "other-model");
    let loaded = record::read(&only_session(&hx)).expect("read");
    assert_eq!(loaded.model, "other-model", "the change is recorded");
}

#[test]
fn resume_errors_are_clear() {
    let mut hx = Hx::new_offline();
    hx.args(["agent", "-c", "x"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("no session to continue"),
        "{}",
        run.stderr
    );

    hx.clear_args().args(["agent", "-r", "nope", "x"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(run.stderr.contains("no session \"nope\""), "{}", run.stderr);

    // A damaged file names itself and the line.
    let server = FakeServer::start(vec![Reply::text("a")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    let file = only_session(&hx);
    let text = std::fs::read_to_string(&file).expect("read");
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "garbage";
    std::fs::write(&file, format!("{}\n", lines.join("\n"))).expect("write");
    hx.clear_args().args(["agent", "-c", "two"]);
    let run = hx.run();
    // -c skips what it cannot read; -r names the damage.
    run.assert_code(1);
    hx.clear_args().args(["agent", "-r", &id_of(&file), "two"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(
        run.stderr.contains(&file.display().to_string()) && run.stderr.contains("line 3"),
        "{}",
        run.stderr
    );
}

#[test]
fn sessions_list_and_show() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"printf 'l1\\nl2\\nl3\\nl4\\nl5\\nl6\\nl7\\n'"}"#,
        )]),
        Reply::text("Done."),
        Reply::text("Other."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "first line of task\nsecond line"]);
    hx.run().assert_code(0);
    hx.clear_args().args(["agent", "another task"]);
    hx.run().assert_code(0);
    let files = hx.session_files();
    assert_eq!(files.len(), 2);

    hx.clear_args().args(["sessions", "list"]);
    let list = hx.run();
    list.assert_code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    // Newest first.
    assert!(
        lines[0].starts_with(&format!("{}  ", short(&id_of(&files[1])))),
        "{}",
        list.stdout
    );
    assert!(lines[0].contains("another task"));
    assert!(lines[1].contains("first line of task"));
    assert!(!lines[1].contains("second line"));
    assert!(lines[1].contains("turns=2") && lines[1].contains("answered"));

    hx.clear_args().args(["sessions", "list", "--json"]);
    let json = hx.run();
    let v: Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(v.as_array().expect("array").len(), 2);
    assert_eq!(v[1]["turns"], 2);
    assert_eq!(v[1]["tool_calls"], 1);

    hx.clear_args()
        .args(["sessions", "show", &id_of(&files[0])]);
    let show = hx.run();
    show.assert_code(0);
    for want in [
        "user: first line of task",
        "> bash",
        "l1",
        "l7",
        "… (2 lines)",
        "assistant: Done.",
        "end: answered",
    ] {
        assert!(show.stdout.contains(want), "{want:?} in:\n{}", show.stdout);
    }
    assert!(!show.stdout.contains("| l4"), "{}", show.stdout);

    hx.clear_args()
        .args(["sessions", "show", "--json", &id_of(&files[0])]);
    let raw = hx.run();
    raw.assert_code(0);
    assert_eq!(
        raw.stdout,
        std::fs::read_to_string(&files[0]).expect("file")
    );
}

#[test]
fn switching_provider_on_resume_adapts_the_reasoning_field() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("g1", "glob", r#"{"pattern":"*"}"#)]),
        Reply::text("first"),
        Reply::text("second"),
    ]);
    let mut hx = Hx::new(&server);
    let url = server.url();
    hx.env("OPENAI_API_KEY", "k").args([
        "agent",
        "--provider",
        "openai",
        "--model",
        "gpt-x",
        "--base-url",
        &url,
        "one",
    ]);
    hx.run().assert_code(0);
    hx.clear_args()
        .args(["agent", "-c", "--provider", "deepseek", "two"]);
    hx.run().assert_code(0);
    let reqs = server.completions();
    let assistant = |body: &Value| -> Vec<Value> {
        messages(body)
            .iter()
            .filter(|m| m["role"] == "assistant")
            .cloned()
            .collect()
    };
    // OpenAI is never sent the field; DeepSeek needs it on every assistant message.
    assert!(assistant(&reqs[1].body)
        .iter()
        .all(|m| m.get("reasoning_content").is_none()));
    let resumed = assistant(&reqs[2].body);
    assert_eq!(resumed.len(), 2);
    assert!(
        resumed.iter().all(|m| m["reasoning_content"] == ""),
        "{resumed:#?}"
    );
    assert_eq!(reqs[2].body["model"], "deepseek-flash");
}

#[test]
fn a_session_another_run_is_writing_cannot_be_continued() {
    let server = FakeServer::start(vec![Reply::text("first"), Reply::hang()]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    // A second run continues it and waits for the model...
    hx.clear_args().args(["agent", "-c", "two"]);
    let mut waiting = hx.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the second run never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    // ...so a third cannot continue it at the same time, and changes nothing.
    let before = std::fs::read(only_session(&hx)).expect("read");
    hx.clear_args().args(["agent", "-c", "three"]);
    let third = hx.run();
    third.assert_code(1);
    assert!(
        third
            .stderr
            .contains("another hx is running in this session"),
        "{}",
        third.stderr
    );
    assert_eq!(std::fs::read(only_session(&hx)).expect("read"), before);
    assert_eq!(server.requests().len(), 2);
    let _ = waiting.kill();
    let _ = waiting.wait();
}

#[test]
fn sessions_show_puts_each_result_under_its_own_call() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new("c1", "bash", r#"{"command":"echo AAA"}"#),
            Call::new("c2", "bash", r#"{"command":"echo BBB"}"#),
        ]),
        Reply::text("Both ran."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "run two"]);
    hx.run().assert_success();
    let id = id_of(&only_session(&hx));
    let show = hx.run_args(&["sessions", "show", &id]);
    show.assert_success();
    let lines: Vec<&str> = show.stdout.lines().map(str::trim).collect();
    let at = |want: &str| {
        lines
            .iter()
            .position(|l| l.contains(want))
            .unwrap_or_else(|| panic!("{want:?} in:\n{}", show.stdout))
    };
    let (call_a, out_a, call_b, out_b) = (
        at("echo AAA\"}"),
        at("| AAA"),
        at("echo BBB\"}"),
        at("| BBB"),
    );
    assert!(
        call_a < out_a && out_a < call_b && call_b < out_b,
        "{}",
        show.stdout
    );
    assert!(at("assistant: Both ran.") > out_b);
}
