//! End-to-end tests of project hooks and `hx trust`: untrusted project hooks do not run,
//! trusted ones do, and a change after trusting needs trusting again.

use crate::support::trust::{project_hooks, sha256_hex, sha256_prefix};
use crate::support::{Call, FakeServer, Hx, Reply};
use serde_json::json;

fn server() -> FakeServer {
    FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "call_1",
            "bash",
            r#"{"command":"echo hi"}"#,
        )]),
        Reply::text("done"),
    ])
}

#[test]
fn project_hooks_run_only_while_trusted() {
    let mut hx = Hx::new_offline();
    hx.write_file(".hx/hooks.json", &project_hooks("echo project >> marks"));
    let file = std::fs::canonicalize(hx.workspace().join(".hx/hooks.json")).expect("canonical");
    let file = file.display().to_string();

    // Untrusted: skipped with one warning naming `hx trust`.
    let s = server();
    let run = hx.run_args(&["agent", "--base-url", &s.url(), "do it"]);
    run.assert_success();
    let untrusted = format!(
        "hx: {file}: project hooks skipped: not trusted; review the file, then run `hx trust` to allow it"
    );
    assert_eq!(
        run.stderr.lines().filter(|l| *l == untrusted).count(),
        1,
        "{}",
        run.dump()
    );
    assert!(!hx.workspace().join("marks").exists());

    // Trusted: runs.
    let trust = hx.run_args(&["trust", "--yes"]);
    trust.assert_success();
    let hash = {
        use std::io::Read;
        let mut bytes = Vec::new();
        std::fs::File::open(&file)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .expect("read");
        sha256_prefix(&bytes)
    };
    assert_eq!(
        trust.stdout,
        format!(
            "project hooks {file} (sha256 {hash}):\n  PreToolUse, matcher \"bash\": \"echo project >> marks\"\ntrusted {file}\n"
        )
    );
    let listed = hx.run_args(&["trust", "--list"]);
    assert_eq!(listed.stdout, format!("{hash}  {file}\n"));
    let s = server();
    let run = hx.run_args(&["agent", "--base-url", &s.url(), "do it"]);
    run.assert_success();
    assert!(
        !run.stderr.contains("project hooks skipped"),
        "{}",
        run.dump()
    );
    assert_eq!(hx.read_file("marks"), "project\n");

    // Changed after trusting: skipped again, saying why.
    hx.write_file(".hx/hooks.json", &project_hooks("echo changed >> marks"));
    let s = server();
    let run = hx.run_args(&["agent", "--base-url", &s.url(), "do it"]);
    run.assert_success();
    let changed = format!(
        "hx: {file}: project hooks skipped: changed since trusted; review the file, then run `hx trust` again"
    );
    assert!(run.stderr.lines().any(|l| l == changed), "{}", run.dump());
    assert_eq!(hx.read_file("marks"), "project\n");

    // Revoked: untrusted.
    let revoke = hx.run_args(&["trust", "--revoke"]);
    revoke.assert_success();
    assert_eq!(revoke.stdout, format!("revoked {file}\n"));
    assert_eq!(
        hx.run_args(&["trust", "--list"]).stdout,
        "no trusted files\n"
    );
}

#[test]
fn user_hooks_need_no_trust() {
    let s = server();
    let mut hx = Hx::new(&s);
    hx.write_user_config("hooks.json", &project_hooks("echo user >> marks"));
    let run = hx.args(["agent", "do it"]).run();
    run.assert_success();
    assert_eq!(hx.read_file("marks"), "user\n");
    assert!(!run.stderr.contains("trust"), "{}", run.dump());
}

/// A linked `.hx/hooks.json` is refused: trusting it would approve whatever file it points to,
/// under that file's own path.
#[test]
fn trust_refuses_a_linked_hooks_file() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        "elsewhere/hooks.json",
        &project_hooks("echo linked >> marks"),
    );
    std::fs::create_dir_all(hx.workspace().join(".hx")).expect("mkdir");
    std::os::unix::fs::symlink(
        hx.workspace().join("elsewhere/hooks.json"),
        hx.workspace().join(".hx/hooks.json"),
    )
    .expect("ln");
    let run = hx.run_args(&["trust", "--yes"]);
    run.assert_code(2);
    assert_eq!(run.stdout, "");
    let ws = std::fs::canonicalize(hx.workspace()).expect("canonical workspace");
    assert_eq!(
        run.stderr,
        format!(
            "hx: cannot trust {}/.hx/hooks.json: .hx/hooks.json is a symbolic link, and a link \
             could borrow the approval of the file it points to; make it a real file\n",
            ws.display()
        )
    );
    assert_eq!(
        hx.run_args(&["trust", "--list"]).stdout,
        "no trusted files\n"
    );
}

/// What `hx trust` shows is what will run: a carriage return (or any control character) must
/// not let a command hide its start behind an innocent-looking tail on a terminal.
#[test]
fn trust_shows_commands_escaped_with_event_and_matcher() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".hx/hooks.json",
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash|\u{1b}x", "hooks": [
                {"type": "command", "command": "touch PWNED #\r./scripts/lint.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "./scripts/done.sh\t\u{202e}x"}]}]
        }})
        .to_string(),
    );
    let run = hx.run_args(&["trust", "--yes"]);
    run.assert_success();
    let lines: Vec<&str> = run.stdout.lines().skip(1).take(2).collect();
    assert_eq!(
        lines,
        [
            r#"  PreToolUse, matcher "Bash|^[x": "touch PWNED #^M./scripts/lint.sh""#,
            r#"  Stop: "./scripts/done.sh^I\u{202e}x""#,
        ],
        "{}",
        run.dump()
    );
}

/// A project's hooks are written relative to the project (the folder holding `.hx`), so they
/// must run there even when hx starts in a subfolder: a guard script that is not found there
/// fails, and a failed hook lets the call through.
#[test]
fn project_hooks_run_in_the_project_folder_from_a_subfolder() {
    use std::os::unix::fs::PermissionsExt;
    let s = server();
    let mut hx = Hx::new(&s);
    hx.write_file(".hx/hooks.json", &project_hooks("./scripts/deny.sh"));
    hx.write_file(
        "scripts/deny.sh",
        "#!/bin/sh\necho \"$HX_PROJECT_DIR|$CLAUDE_PROJECT_DIR|$PWD\" > \"$HX_PROJECT_DIR/hook.env\"\n\
         echo 'not from here' >&2\nexit 2\n",
    );
    let script = hx.workspace().join("scripts/deny.sh");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    std::fs::create_dir_all(hx.workspace().join("sub")).expect("mkdir sub");
    hx.current_dir_rel("sub");
    hx.run_args(&["trust", "--yes"]).assert_success();

    let run = hx.args(["agent", "do it"]).run();
    run.assert_success();
    let last = s.requests()[1].body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .expect("last message");
    assert_eq!(
        last["content"],
        "Error: blocked by hook: not from here",
        "{}",
        run.dump()
    );
    let ws = std::fs::canonicalize(hx.workspace()).expect("canonical workspace");
    let ws = ws.display().to_string();
    assert_eq!(hx.read_file("hook.env"), format!("{ws}|{ws}|{ws}\n"));
}

/// Hooks files that are not valid, each with a part of the error hx must name. Each one would
/// otherwise lose a hook without a word: the whole file, or one entry of it.
const INVALID: [(&str, &str); 5] = [
    (r#"{"hooks": {"PreToolUse": ["#, "not valid JSON"),
    (
        r#"{"hooks": {"PreToolUse": [{"matcher": "ba(sh", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
        "PreToolUse[0]: invalid matcher regex \"ba(sh\"",
    ),
    (
        r#"{"hooks": {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "comand": "./guard.sh"}]}]}}"#,
        "PreToolUse[0].hooks[0]: \"command\" must be a non-empty string",
    ),
    (
        r#"{"hooks": {"PreToolCall": [{"hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#,
        "unknown hook event \"PreToolCall\"",
    ),
    (
        r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "./done.sh", "timeout": "10"}]}]}}"#,
        "Stop[0].hooks[0]: \"timeout\" must be seconds",
    ),
];

#[test]
fn trust_refuses_an_invalid_hooks_file() {
    for (content, error) in INVALID {
        let mut hx = Hx::new_offline();
        hx.write_file(".hx/hooks.json", content);
        let file = std::fs::canonicalize(hx.workspace().join(".hx/hooks.json")).expect("canonical");
        let run = hx.run_args(&["trust", "--yes"]);
        run.assert_code(2);
        assert_eq!(run.stdout, "", "{content}");
        let start = format!("hx: cannot trust {}: {error}", file.display());
        assert!(run.stderr.starts_with(&start), "{start}\n{}", run.dump());
        assert_eq!(
            hx.run_args(&["trust", "--list"]).stdout,
            "no trusted files\n"
        );
    }
}

/// The user relies on their own hooks: a run never starts without them.
#[test]
fn an_invalid_user_hooks_file_stops_the_run_before_the_first_request() {
    for (content, error) in INVALID {
        let s = server();
        let mut hx = Hx::new(&s);
        hx.write_user_config("hooks.json", content);
        let run = hx.args(["agent", "do it"]).run();
        run.assert_code(2);
        assert!(s.requests().is_empty(), "{content}");
        let file = hx.user_config_dir().join("hooks.json");
        let start = format!("hx: {}: {error}", file.display());
        assert!(run.stderr.starts_with(&start), "{start}\n{}", run.dump());
        assert_eq!(run.stdout, "");
    }
}

/// A project hooks file that was trusted (by an hx that read it differently) but is not valid
/// now stops the run too: the user approved those hooks and relies on them.
#[test]
fn an_invalid_trusted_project_hooks_file_stops_the_run() {
    let (content, error) = INVALID[3];
    let s = server();
    let mut hx = Hx::new(&s);
    hx.write_file(".hx/hooks.json", content);
    let file = std::fs::canonicalize(hx.workspace().join(".hx/hooks.json")).expect("canonical");
    let store = json!({ file.display().to_string(): sha256_hex(content.as_bytes()) });
    hx.write_user_config("trusted.json", &store.to_string());
    let run = hx.args(["agent", "do it"]).run();
    run.assert_code(2);
    assert!(s.requests().is_empty());
    let start = format!("hx: {}: {error}", file.display());
    assert!(run.stderr.starts_with(&start), "{start}\n{}", run.dump());
}
