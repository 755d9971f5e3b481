//! A word when hx needs you: after a turn that took longer than `notify_after_secs`, or when
//! an approval waits, the terminal gets OSC 9 (in tmux's passthrough inside tmux) or BEL, and
//! the `notify` command its JSON; `notifications = "off"` stops both, and a run without a
//! terminal writes no such bytes.

use serde_json::Value;

use crate::support::pty::{run_on_terminal, Chat};
use crate::support::{Call, FakeServer, Hx, Reply};

/// Writes the JSON it is given as its last argument to `notified.json` in the workspace.
const NOTIFY: &str = r#"notify = ["sh", "-c", "printf '%s' \"$1\" > notified.json", "notify"]"#;

/// hx agent on a terminal that shows OSC 9 (WezTerm), outside tmux, with `config`.
fn agent_on_wezterm(server: &FakeServer, config: &str) -> Hx {
    let mut hx = Hx::new(server);
    hx.write_user_config("config.toml", config)
        .env("TERM_PROGRAM", "WezTerm")
        .env_remove("TMUX")
        .args(["agent", "finish it"]);
    hx
}

fn notified(hx: &Hx) -> Option<Value> {
    let text = std::fs::read_to_string(hx.workspace().join("notified.json")).ok()?;
    Some(serde_json::from_str(&text).expect("the notify command got JSON"))
}

#[test]
fn a_turn_past_the_threshold_ends_with_osc9_and_the_notify_command() {
    let server = FakeServer::start(vec![Reply::text("All done.")]);
    let hx = agent_on_wezterm(&server, &format!("notify_after_secs = 0\n{NOTIFY}\n"));
    let run = run_on_terminal(&hx);
    run.assert_success();
    assert!(
        run.stdout.contains("\x1b]9;hx: done: All done.\x07"),
        "{:?}",
        run.stdout
    );
    let json = notified(&hx).expect("the notify command ran");
    assert_eq!(json["type"], "agent-turn-complete");
    assert_eq!(json["last-assistant-message"], "All done.");
    assert_eq!(json["input-messages"][0], "finish it");
    assert_eq!(json["failed"], false);
    assert!(json["thread-id"].as_str().is_some_and(|s| !s.is_empty()));
}

#[test]
fn inside_tmux_osc9_goes_through_its_passthrough() {
    let server = FakeServer::start(vec![Reply::text("All done.")]);
    let mut hx = agent_on_wezterm(&server, "notify_after_secs = 0\n");
    hx.env("TMUX", "/tmp/tmux-0/default,1,0")
        .env("TERM_PROGRAM", "tmux");
    let run = run_on_terminal(&hx);
    run.assert_success();
    assert!(
        run.stdout
            .contains("\x1bPtmux;\x1b\x1b]9;hx: done: All done.\x07\x1b\\"),
        "{:?}",
        run.stdout
    );
}

#[test]
fn elsewhere_it_is_a_bel() {
    let server = FakeServer::start(vec![Reply::text("All done.")]);
    let mut hx = agent_on_wezterm(&server, "notify_after_secs = 0\n");
    hx.env_remove("TERM_PROGRAM");
    let run = run_on_terminal(&hx);
    run.assert_success();
    assert!(run.stdout.contains('\x07'), "{:?}", run.stdout);
    assert!(!run.stdout.contains("]9;"), "{:?}", run.stdout);
}

#[test]
fn a_quick_turn_or_notifications_off_say_nothing() {
    // The default threshold (5 s) is far above a turn against the fake server.
    let server = FakeServer::start(vec![Reply::text("All done.")]);
    let hx = agent_on_wezterm(&server, &format!("{NOTIFY}\n"));
    let run = run_on_terminal(&hx);
    run.assert_success();
    assert!(!run.stdout.contains('\x07'), "{:?}", run.stdout);
    assert!(notified(&hx).is_none());
    // Off: neither the terminal nor the command, however long the turn.
    let server = FakeServer::start(vec![Reply::text("All done.")]);
    let hx = agent_on_wezterm(
        &server,
        &format!("notifications = \"off\"\nnotify_after_secs = 0\n{NOTIFY}\n"),
    );
    let run = run_on_terminal(&hx);
    run.assert_success();
    assert!(!run.stdout.contains('\x07'), "{:?}", run.stdout);
    assert!(notified(&hx).is_none());
}

#[test]
fn without_a_terminal_only_the_command_is_told() {
    let server = FakeServer::start(vec![Reply::status(500, "down")]);
    let hx = agent_on_wezterm(
        &server,
        &format!("notify_after_secs = 0\n{NOTIFY}\n[network]\nretries = 0\n"),
    );
    let run = hx.run();
    run.assert_code(1);
    assert!(!run.stderr.contains('\x07'), "{:?}", run.stderr);
    assert!(!run.stdout.contains('\x07'), "{:?}", run.stdout);
    let json = notified(&hx).expect("the notify command ran");
    assert_eq!(json["failed"], true);
    assert!(json["last-assistant-message"]
        .as_str()
        .is_some_and(|m| m.contains("500")));
}

#[test]
fn a_waiting_approval_is_told_in_the_chat() {
    let command = r#"PATH="$PWD/bin:$PATH" sudo noted"#;
    let call = Call::new(
        "c1",
        "bash",
        &serde_json::json!({ "command": command }).to_string(),
    );
    let server = FakeServer::start(vec![Reply::tool_calls(vec![call]), Reply::text("Done.")]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &format!("notify_after_secs = 0\n{NOTIFY}\n"))
        .env("TERM_PROGRAM", "WezTerm")
        .env_remove("TMUX")
        .arg("chat");
    let mut chat = Chat::start_raw(&hx);
    chat.type_line("do it");
    let shown = chat.expect("Run it? [y] once");
    assert!(
        shown.contains("\x1b]9;hx: waiting for your approval: PATH="),
        "{shown:?}"
    );
    let json = notified(&hx).expect("the notify command ran");
    assert_eq!(json["type"], "approval-requested");
    assert_eq!(json["command"], command);
    chat.type_line("n");
    // The turn's end is told too, once it ends.
    let shown = chat.expect("\x1b]9;hx: done: Done.\x07");
    assert!(shown.contains("Done."), "{shown:?}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    // The model heard the refusal: the approval changed nothing of what it is sent.
    assert_eq!(server.requests().len(), 2);
}
