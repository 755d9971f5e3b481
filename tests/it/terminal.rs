//! End-to-end tests of what reaches the user's terminal: text from outside hx (command output,
//! model text, hook output, server errors, file names) never carries a control sequence to
//! stderr or to a terminal, while the model and a piped stdout get the exact bytes.

use crate::support::hooks::{groups, script, tool_message, user_hooks};
use crate::support::pty::run_on_terminal;
use crate::support::{Call, FakeServer, Hx, Reply, Run};
use serde_json::json;

/// What a command prints: a title change, a screen clear, a C1 control (CSI, U+009B) and a
/// right-to-left override.
const PRINTED: &str = "\x1b]0;pwned\x07title\n\x1b[2Jcleared\n\u{9b}c1 \u{202e}bidi\n";
/// The same text as hx shows it.
const SHOWN: [&str; 3] = [
    "^[]0;pwned^Gtitle",
    "^[[2Jcleared",
    "\\u{9b}c1 \\u{202e}bidi",
];

/// The bytes a terminal acts on: C0 controls but newline and tab, DEL, C1 controls and
/// bidirectional overrides and isolates.
fn controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| {
            (c.is_control() && *c != '\n' && *c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

fn assert_no_controls(stream: &str, run: &Run) {
    assert_eq!(controls(stream), Vec::<char>::new(), "{}", run.dump());
}

/// `printf` arguments that print [`PRINTED`], written without control characters.
const PRINTF: &str =
    r"printf '\033]0;pwned\007title\n\033[2Jcleared\n\302\233c1 \342\200\256bidi\n'";

#[test]
fn a_commands_escape_sequences_reach_the_model_but_not_the_terminal() {
    // The call's own arguments carry an escape too (JSON `\u001b`): the `> bash` line shows it.
    let command = format!("true \x1b[8mhidden; {PRINTF}");
    let args = json!({ "command": command }).to_string();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)])
            .with_content("Looking \x1b[31mred")
            .with_reasoning("thinking \x1b]0;r\x07"),
        Reply::text("answer \x1b[1mbold\x1b[0m"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "-v", "--show-reasoning", "print it"]);
    let run = hx.run();
    run.assert_success();
    assert_eq!(tool_message(&server, 1), PRINTED);
    assert_no_controls(&run.stderr, &run);
    for shown in SHOWN {
        assert!(run.stderr.contains(shown), "{shown}\n{}", run.dump());
    }
    assert!(
        run.stderr
            .contains("> bash command=true ^[[8mhidden; printf"),
        "{}",
        run.dump()
    );
    assert!(run.stderr.contains("Looking ^[[31mred"), "{}", run.dump());
    assert!(run.stderr.contains("thinking ^[]0;r^G"), "{}", run.dump());
    // A piped stdout is read by programs: the answer keeps its exact bytes.
    assert_eq!(run.stdout, "answer \x1b[1mbold\x1b[0m\n");
}

#[test]
fn hook_output_is_shown_escaped_and_given_to_the_model_exactly() {
    let args = json!({ "command": "echo hi" }).to_string();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let failing = script(
        &hx,
        "fail.sh",
        r"printf '\033]0;hook\007oops\n' >&2; exit 1",
    );
    let blocking = script(&hx, "deny.sh", r"printf 'no \033[2Jway' >&2; exit 2");
    user_hooks(
        &hx,
        json!({ "PreToolUse": groups("bash", &[&failing, &blocking], None) }),
    );
    hx.args(["agent", "do it"]);
    let run = hx.run();
    run.assert_success();
    assert_eq!(
        tool_message(&server, 1),
        "Error: blocked by hook: no \x1b[2Jway"
    );
    assert_no_controls(&run.stderr, &run);
    assert!(
        run.stderr.contains("hx: hook failed (exit 1): ")
            && run.stderr.contains(": ^[]0;hook^Goops"),
        "{}",
        run.dump()
    );
    assert!(
        run.stderr
            .contains(r#"PreToolUse blocked bash({"command":"echo hi"}): no ^[[2Jway"#),
        "{}",
        run.dump()
    );
}

#[test]
fn a_server_error_message_is_shown_escaped() {
    let body = json!({"error": {"message": "bad \x1b]0;srv\x07request"}}).to_string();
    let server = FakeServer::start(vec![Reply::status(400, &body)]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert_no_controls(&run.stderr, &run);
    assert!(
        run.stderr.contains("bad ^[]0;srv^Grequest"),
        "{}",
        run.dump()
    );
}

#[test]
fn file_names_in_skill_warnings_are_shown_escaped() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".agents/skills/bad\x1b]0;x\x07name/SKILL.md",
        "no frontmatter\n",
    );
    // `hx context` warns about the file (`hx skills list` shows it as a row instead).
    hx.env_remove("DEEPSEEK_API_KEY").args(["context"]);
    let run = hx.run();
    run.assert_success();
    assert!(
        run.stderr
            .contains("bad^[]0;x^Gname/SKILL.md: no frontmatter"),
        "{}",
        run.dump()
    );
    assert_no_controls(&run.stderr, &run);
}

/// Runs `hx agent` on a terminal with `term` as TERM and colour allowed; returns what the
/// terminal received (stdout and stderr share it), newlines as `\n`.
fn on_a_terminal(term: &str) -> (FakeServer, String) {
    let args = json!({ "command": PRINTF }).to_string();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)])
            .with_content("Looking \x1b[31mred\n"),
        Reply::text("answer \x1b]0;title\x07\u{202e}done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.env_remove("NO_COLOR")
        .env("TERM", term)
        .args(["agent", "-v", "look"]);
    let run = run_on_terminal(&hx);
    run.assert_success();
    (server, run.stdout.replace("\r\n", "\n"))
}

#[test]
fn on_a_terminal_the_streamed_answer_is_escaped_and_only_hx_colours() {
    let (server, screen) = on_a_terminal("xterm-256color");
    assert_eq!(tool_message(&server, 1), PRINTED);
    assert!(
        screen.contains("\x1b[2m"),
        "hx dims the preview: {screen:?}"
    );
    // hx's own codes: dim, reset, and the spinner's erase (on a slow machine a request can
    // take long enough for it to show).
    let outside = screen
        .replace("\x1b[2m", "")
        .replace("\x1b[0m", "")
        .replace("\r\x1b[2K", "");
    assert_eq!(controls(&outside), Vec::<char>::new(), "{screen:?}");
    assert!(
        screen.contains("answer ^[]0;title^G\\u{202e}done\n"),
        "{screen:?}"
    );
    assert!(screen.contains("Looking ^[[31mred"), "{screen:?}");
}

#[test]
fn term_dumb_gets_no_escape_codes_at_all() {
    let (_, screen) = on_a_terminal("dumb");
    assert_eq!(controls(&screen), Vec::<char>::new(), "{screen:?}");
    assert!(screen.contains("answer ^[]0;title^G"), "{screen:?}");
}

/// What a terminal shows once `screen` (as the terminal received it, newlines as `\n`) is played:
/// each line after its carriage returns and line erases are applied, colour codes dropped.
fn played(screen: &str) -> Vec<String> {
    screen
        .split('\n')
        .map(|line| {
            let line = line.replace("\x1b[2m", "").replace("\x1b[0m", "");
            // A carriage return (with or without an erase after it) starts the line over;
            // hx only ever writes whole replacements after one.
            let last = line.rsplit('\r').next().unwrap_or_default();
            last.replace("\x1b[2K", "")
        })
        .collect()
}

/// A run where hx waits on the model and on a command, each for longer than the spinner's
/// delay.
fn slow_run() -> Vec<Reply> {
    let args = json!({ "command": "sleep 2; echo slept" }).to_string();
    vec![
        Reply::tool_calls(vec![Call::new("call_1", "bash", &args)])
            .delay(std::time::Duration::from_secs(2)),
        Reply::text("done"),
    ]
}

#[test]
fn on_a_terminal_a_spinner_shows_while_hx_waits_and_is_erased() {
    let server = FakeServer::start(slow_run());
    let mut hx = Hx::new(&server);
    hx.env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .args(["agent", "-v", "wait"]);
    let run = run_on_terminal(&hx);
    run.assert_success();
    let screen = run.stdout.replace("\r\n", "\n");
    for label in ["waiting for the model", "running bash"] {
        assert!(
            screen.contains(label),
            "no spinner for {label:?}: {screen:?}"
        );
    }
    assert!(screen.contains("\r\x1b[2K"), "never erased: {screen:?}");
    // Nothing of it is left on the screen, and the real lines are whole.
    let lines = played(&screen);
    for l in &lines {
        assert!(
            !l.contains("waiting for") && !l.contains("running bash"),
            "left on screen: {l:?}\n{lines:#?}"
        );
    }
    assert!(lines.iter().any(|l| l == "slept"), "{lines:#?}");
    assert!(lines.iter().any(|l| l == "done"), "{lines:#?}");
}

#[test]
fn no_spinner_byte_goes_through_a_pipe_or_under_no_color() {
    let server = FakeServer::start(slow_run());
    let mut hx = Hx::new(&server);
    hx.env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .args(["agent", "wait"]);
    let run = hx.run();
    run.assert_success();
    for stream in [&run.stdout, &run.stderr] {
        assert!(
            !stream.contains('\r') && !stream.contains('\x1b') && !stream.contains("waiting for"),
            "{}",
            run.dump()
        );
    }

    let server = FakeServer::start(slow_run());
    let mut hx = Hx::new(&server);
    hx.env("TERM", "xterm-256color").args(["agent", "wait"]);
    let run = run_on_terminal(&hx);
    run.assert_success();
    let screen = run.stdout.replace("\r\n", "\n");
    assert!(
        !screen.contains("waiting for") && !screen.contains('\r'),
        "NO_COLOR is set: {screen:?}"
    );
}
