//! Claude Code's own place for hooks, `.claude/settings.json`, read as `.hx/hooks.json` is
//! (a project's only after `hx trust`), and the `Notification` and `SessionEnd` events.

use serde_json::{json, Value};

use crate::support::{Call, FakeServer, Hx, Reply};

/// A settings file as Claude Code writes it: its own keys, and hooks that append the JSON
/// they read to `FILE` in the workspace.
fn settings(events: &[&str], file: &str) -> String {
    let mut hooks = serde_json::Map::new();
    for e in events {
        let group = json!([{"hooks": [{"type": "command", "command": format!("cat >> {file}; echo >> {file}")}]}]);
        hooks.insert((*e).to_string(), group);
    }
    json!({"permissions": {"allow": ["Bash(ls:*)"]}, "hooks": hooks}).to_string()
}

/// [`settings`] as the user's own, `~/.claude/settings.json` (trusted: no `hx trust` needed).
fn user_settings(hx: &Hx, events: &[&str], file: &str) {
    let user = hx.home().join(".claude");
    std::fs::create_dir_all(&user).expect("mkdir");
    std::fs::write(user.join("settings.json"), settings(events, file)).expect("write");
}

fn lines(hx: &Hx, file: &str) -> Vec<Value> {
    std::fs::read_to_string(hx.workspace().join(file))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("hook input is JSON"))
        .collect()
}

#[test]
fn project_claude_settings_hooks_run_only_after_trust() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".claude/settings.json",
        &settings(&["SessionEnd", "UserPromptSubmit"], "ran.jsonl"),
    );
    let server = FakeServer::start(vec![Reply::text("one"), Reply::text("two")]);
    let run = hx.run_args(&["agent", "--base-url", &server.url(), "first"]);
    run.assert_success();
    assert!(lines(&hx, "ran.jsonl").is_empty(), "{}", run.dump());
    assert!(
        run.stderr
            .contains("Claude Code settings (hooks) skipped: not trusted"),
        "{}",
        run.dump()
    );

    let trust = hx.run_args(&["trust", "--yes"]);
    trust.assert_success();
    assert!(
        trust.stdout.contains("SessionEnd: \"cat >> ran.jsonl"),
        "{}",
        trust.stdout
    );
    let run = hx.run_args(&["agent", "--base-url", &server.url(), "second"]);
    run.assert_success();
    let ran = lines(&hx, "ran.jsonl");
    let names: Vec<&str> = ran
        .iter()
        .map(|l| l["hook_event_name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(names, ["UserPromptSubmit", "SessionEnd"], "{}", run.dump());
    assert_eq!(ran[0]["prompt"], "second");
    assert_eq!(ran[1]["reason"], "other");
}

#[test]
fn a_settings_file_without_hooks_needs_no_trust() {
    let mut hx = Hx::new_offline();
    hx.write_file(".claude/settings.json", r#"{"permissions": {"allow": []}}"#);
    let server = FakeServer::start(vec![Reply::text("one")]);
    let run = hx.run_args(&["agent", "--base-url", &server.url(), "go"]);
    run.assert_success();
    assert!(!run.stderr.contains("skipped"), "{}", run.dump());
}

#[test]
fn the_users_claude_settings_hooks_run_and_hear_the_permission_prompt() {
    let command = r#"PATH="$PWD/bin:$PATH" sudo noted"#;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({ "command": command }).to_string(),
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    user_settings(&hx, &["Notification"], "notified.jsonl");
    hx.arg("chat");
    let mut chat = crate::support::pty::Chat::start(&hx);
    chat.type_line("do it");
    chat.expect("Run it? [y] once");
    let heard = lines(&hx, "notified.jsonl");
    assert_eq!(heard.len(), 1, "{}", chat.seen);
    assert_eq!(heard[0]["hook_event_name"], "Notification");
    assert_eq!(heard[0]["notification_type"], "permission_prompt");
    assert!(heard[0]["message"]
        .as_str()
        .is_some_and(|m| m.contains("sudo noted")));
    chat.type_line("n");
    chat.expect("Done.");
    chat.expect(crate::support::pty::PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    // The refusal reached the model as the guard's error.
    assert!(server.requests()[1].body.to_string().contains("sudo"));
}

/// `/new` and `/resume` end the session the chat was in: its SessionEnd hooks hear `clear`
/// and `other`; a session that never held a message ends without a word.
#[test]
fn new_and_resume_in_the_chat_end_the_session_for_its_hooks() {
    let server = FakeServer::start(vec![
        Reply::text("first answer"),
        Reply::text("second answer"),
    ]);
    let mut hx = Hx::new(&server);
    user_settings(&hx, &["SessionEnd"], "ended.jsonl");
    hx.arg("chat");
    let mut chat = crate::support::pty::Chat::start(&hx);
    chat.type_line("one");
    chat.expect("first answer");
    chat.expect(crate::support::pty::PROMPT);
    chat.type_line("/new");
    chat.expect("new session");
    chat.expect(crate::support::pty::PROMPT);
    let reasons = |hx: &Hx| -> Vec<String> {
        lines(hx, "ended.jsonl")
            .iter()
            .map(|l| l["reason"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(reasons(&hx), ["clear"], "{}", chat.seen);
    // A second /new: the new session holds nothing yet, so nothing ends.
    chat.type_line("/new");
    chat.expect("new session");
    chat.expect(crate::support::pty::PROMPT);
    assert_eq!(reasons(&hx), ["clear"], "{}", chat.seen);
    chat.type_line("two");
    chat.expect("second answer");
    chat.expect(crate::support::pty::PROMPT);
    let first = hx
        .session_files()
        .into_iter()
        .map(|f| crate::support::session_id(&f))
        .find(|id| {
            lines(&hx, "ended.jsonl")
                .first()
                .is_some_and(|l| l["session_id"] == id.as_str())
        })
        .expect("the first session's file");
    chat.type_line(&format!("/resume {first}"));
    chat.expect(crate::support::pty::PROMPT);
    assert_eq!(reasons(&hx), ["clear", "other"], "{}", chat.seen);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(reasons(&hx), ["clear", "other", "prompt_input_exit"]);
}

/// A chat ended by SIGTERM or SIGHUP ends its session for the hooks too (`other`); one that
/// never held a message has none to end.
#[test]
fn a_chat_ended_by_a_signal_ends_the_session_for_its_hooks() {
    for sig in [
        rexpect::process::Signal::SIGTERM,
        rexpect::process::Signal::SIGHUP,
    ] {
        let server = FakeServer::start(vec![Reply::text("first answer")]);
        let mut hx = Hx::new(&server);
        user_settings(&hx, &["SessionEnd"], "ended.jsonl");
        hx.arg("chat");
        let mut chat = crate::support::pty::Chat::start(&hx);
        chat.type_line("one");
        chat.expect("first answer");
        chat.expect(crate::support::pty::PROMPT);
        chat.signal(sig);
        chat.expect("terminated by");
        let seen = chat.seen.clone();
        let code = chat.exit_code();
        assert!(code == 143 || code == 129, "{sig:?}: {code}");
        let ended = lines(&hx, "ended.jsonl");
        assert_eq!(ended.len(), 1, "{sig:?}: {seen}");
        assert_eq!(ended[0]["reason"], "other", "{sig:?}");
    }
}
