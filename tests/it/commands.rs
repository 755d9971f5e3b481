//! The commands people type (issue 23): hx with the chat's options, mistyped commands,
//! completions and the manual page.

use crate::support::pty::Chat;
use crate::support::{messages, FakeServer, Hx, Reply};
use serde_json::json;

#[test]
fn bare_hx_with_continue_goes_on_with_the_newest_session_in_a_chat() {
    let server = FakeServer::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "remember the word kiwi"]);
    hx.run().assert_success();

    hx.clear_args().arg("-c");
    let mut chat = Chat::start(&hx);
    // Where the conversation was: the last exchange, whole.
    for want in [
        "where you were:",
        "you: remember the word kiwi",
        "hx: First answer.",
    ] {
        assert!(chat.seen.contains(want), "{want:?} in:\n{}", chat.seen);
    }
    assert!(chat.say("which word?").contains("Second answer."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = messages(&requests[0].body).clone();
    let second = messages(&requests[1].body).clone();
    // The chat continued the agent's session: its request starts with everything the first
    // one sent, then that answer, then the new message.
    assert_eq!(&second[..first.len()], &first[..]);
    assert_eq!(second[first.len()]["content"], "First answer.");
    assert_eq!(
        second[first.len() + 1],
        json!({"role": "user", "content": "which word?"})
    );
    assert_eq!(hx.session_files().len(), 1);
}

#[test]
fn bare_hx_with_a_model_talks_to_that_model() {
    let server = FakeServer::start(vec![Reply::text("Hi.")]);
    let mut hx = Hx::new(&server);
    hx.args(["-m", "deepseek-v4-pro"]);
    let mut chat = Chat::start(&hx);
    assert!(chat.say("hello").contains("Hi."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests()[0].body["model"], "deepseek-v4-pro");
}

#[test]
fn chat_options_without_a_terminal_say_that_the_chat_needs_one() {
    let hx = Hx::new_offline();
    let run = hx.run_args(&["-c"]);
    run.assert_code(2);
    assert!(run.stderr.contains("needs a terminal"), "{}", run.dump());
}

#[test]
fn a_chat_option_before_a_command_is_refused_not_ignored() {
    let hx = Hx::new_offline();
    let run = hx.run_args(&["-m", "other", "agent", "hi"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains("--model goes after the command"),
        "{}",
        run.dump()
    );
    // -C is hx's own option, allowed before any command.
    let run = hx.run_args(&["-C", ".", "sessions", "list"]);
    run.assert_success();
}

#[test]
fn a_mistyped_subcommand_lists_the_valid_ones_and_sends_nothing_to_the_model() {
    let hx = Hx::new_offline();
    let run = hx.run_args(&["sessions", "frobnicate", "x"]);
    run.assert_code(2);
    assert!(!run.stderr.contains("hx agent"), "{}", run.dump());
    assert!(
        run.stderr
            .contains("the commands of hx sessions are: list, show"),
        "{}",
        run.dump()
    );
    // A first word that is no command at all still gets the hint.
    let run = hx.run_args(&["fix", "the", "bug"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains("run: hx agent \"fix the bug\""),
        "{}",
        run.dump()
    );
}

#[test]
fn completions_are_printed_for_every_shell() {
    let hx = Hx::new_offline();
    for (shell, mark) in [
        ("bash", "complete -F _hx"),
        ("zsh", "#compdef hx"),
        ("fish", "complete -c hx"),
        ("elvish", "edit:completion:arg-completer[hx]"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let run = hx.run_args(&["completions", shell]);
        run.assert_success();
        assert!(run.stdout.contains(mark), "{shell}: {}", run.dump());
        assert!(run.stdout.contains("sessions"), "{shell}");
    }
    let run = hx.run_args(&["completions", "tcsh"]);
    run.assert_code(2);
    assert!(run.stderr.contains("possible values"), "{}", run.dump());
}

#[test]
fn the_manual_page_is_printed_or_written_one_per_command() {
    let hx = Hx::new_offline();
    let run = hx.run_args(&["man"]);
    run.assert_success();
    assert!(run.stdout.contains(".TH hx 1"), "{}", run.dump());
    let dir = hx.workspace().join("man");
    let run = hx.run_args(&["man", "--dir", "man"]);
    run.assert_success();
    for page in ["hx.1", "hx-agent.1", "hx-sessions-list.1"] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(text.contains(".TH"), "{page}: {text}");
    }
}

#[test]
fn chat_help_says_what_max_turns_does_in_a_chat() {
    let hx = Hx::new_offline();
    let run = hx.run_args(&["chat", "--help"]);
    run.assert_success();
    // clap wraps by the terminal's width: read it as words.
    let words = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("hx chat ends that message, says so, and waits for the next one"),
        "{words}"
    );
}

#[test]
fn hx_models_lists_the_servers_models_and_marks_the_configured_one() {
    let server = FakeServer::start(vec![]);
    let hx = Hx::new(&server);
    let run = hx.run_args(&["models"]);
    run.assert_success();
    assert_eq!(
        run.stdout,
        "  model               window  from\n\
         * deepseek-flash   1,048,576  built in\n  \
         deepseek-v4-pro  1,048,576  built in\n",
        "{}",
        run.dump()
    );
    let asked = &server.requests()[0];
    assert_eq!(
        (asked.method.as_str(), asked.path.as_str()),
        ("GET", "/models")
    );
    assert_eq!(asked.header("authorization"), Some("Bearer test-key"));

    let run = hx.run_args(&["models", "--json"]);
    run.assert_success();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["configured"], "deepseek-flash");
    assert_eq!(v["models"], json!(["deepseek-flash", "deepseek-v4-pro"]));

    // Nothing listening: a clear error, exit 1.
    let run = Hx::new_offline().run_args(&["models"]);
    run.assert_code(1);
    assert!(run.stderr.contains("cannot connect to"), "{}", run.dump());
}

#[test]
fn hx_config_says_where_each_value_came_from() {
    let mut hx = Hx::new_offline();
    hx.write_user_config(
        "config.toml",
        "max_turns = 50\n[tools]\noutput_chars = 1234\n[mcp_servers.x]\ncommand = \"srv\"\nenv = { TOKEN = \"hunter2\" }\n",
    )
    .write_file(".hx/config.toml", "guard = false\n")
    .env("HX_MODEL", "from-env");
    let run = hx.run_args(&["config", "--sandbox", "read-only"]);
    run.assert_success();
    let line = |key: &str| {
        run.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{key} = ")))
            .unwrap_or_else(|| panic!("no {key} in\n{}", run.stdout))
            .to_string()
    };
    let user_file = hx.user_config_dir().join("config.toml");
    assert!(line("provider").ends_with("# default"), "{}", run.stdout);
    assert!(
        line("model").contains("\"from-env\"") && line("model").ends_with("# environment HX_MODEL")
    );
    assert!(line("max_turns").ends_with(&format!("# user file {}", user_file.display())));
    assert!(line("sandbox.mode").ends_with("# flag --sandbox"));
    assert!(line("tools.output_chars").contains("1234"));
    // The untrusted project file is not in force: its guard = false is listed apart.
    assert!(line("guard").contains("true") && line("guard").ends_with("# default"));
    assert!(run.stdout.contains("#   guard = false"), "{}", run.stdout);
    // Credentials in a file are not printed.
    assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
    assert!(line("mcp_servers.x.env.TOKEN").contains("\"***\""));

    let run = hx.run_args(&["config", "--json"]);
    run.assert_success();
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let model = v["settings"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["key"] == "model"))
        .expect("model");
    assert_eq!(model["origin"], "environment HX_MODEL");
    assert_eq!(v["ignored"]["settings"][0]["key"], "guard");
}
