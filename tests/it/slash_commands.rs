//! Command files and skills a user invokes as `/NAME args` (issue 22), end to end: the
//! message hx sends, the model and tools of that message alone, what `` !`cmd` `` does with
//! and without `hx trust`, and the chat's own commands winning over a file.

use crate::support::pty::Chat;
use crate::support::{
    messages, session_lines, tool_names, tool_results, Call, FakeServer, Hx, Reply,
};
use serde_json::{json, Value};

fn last_user(body: &Value) -> String {
    let msgs = messages(body);
    let last = msgs.last().expect("a message");
    assert_eq!(last["role"], "user", "{last}");
    last["content"].as_str().expect("text").to_string()
}

fn write_home(hx: &Hx, rel: &str, text: &str) {
    let path = hx.home().join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}

#[test]
fn hx_agent_sends_a_commands_body_with_its_arguments() {
    let server = FakeServer::start(vec![Reply::text("Reviewed."), Reply::text("Committed.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/commands/review.md",
        "---\ndescription: Review a file\nargument-hint: [file] [focus]\n---\nReview $1 with a focus on $2.\nAll: $ARGUMENTS\n",
    )
    .write_file(
        ".agents/commands/git/commit.md",
        "Write a commit message.\n",
    );
    // The user's command of the same name loses to the project's.
    write_home(&hx, ".claude/commands/review.md", "The user's review.\n");
    let run = hx.run_args(&["agent", "/review src/a.rs \"error handling\""]);
    run.assert_code(0);
    assert_eq!(run.stdout, "Reviewed.\n");
    assert_eq!(
        last_user(&server.requests()[0].body),
        "Review src/a.rs with a focus on error handling.\nAll: src/a.rs \"error handling\""
    );
    assert!(run.stderr.contains("is shadowed by"), "{}", run.dump());
    // A subfolder's file is dir:name; a body without placeholders gets the words after it.
    let run = hx.run_args(&["agent", "/git:commit the parser fix"]);
    run.assert_code(0);
    assert_eq!(
        last_user(&server.requests()[1].body),
        "Write a commit message.\n\nARGUMENTS: the parser fix"
    );
}

#[test]
fn hx_agent_refuses_an_unknown_name_and_sends_a_double_slash_literally() {
    let server = FakeServer::start(vec![Reply::text("It is.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(".claude/commands/review.md", "Review it.\n");
    let run = hx.run_args(&["agent", "/reveiw src"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains(
            "unknown command /reveiw: no command file or skill of that name; did you mean /review?"
        ),
        "{}",
        run.dump()
    );
    assert!(server.requests().is_empty(), "nothing was sent");
    assert!(hx.session_files().is_empty(), "nothing was recorded");
    let run = hx.run_args(&["agent", "//etc is a folder, right?"]);
    run.assert_code(0);
    assert_eq!(
        last_user(&server.requests()[0].body),
        "/etc is a folder, right?"
    );
}

#[test]
fn shell_spans_run_only_once_the_project_is_trusted() {
    let server = FakeServer::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
        Reply::text("Four."),
    ]);
    let mut hx = Hx::new(&server);
    let body = "Status: !`echo from-the-shell $1`\nFocus on $1.\n";
    hx.write_file(".claude/commands/status.md", body);
    let folder = std::fs::canonicalize(hx.workspace()).expect("canonical");

    // Untrusted: the span stays as text, with one warning saying what to do.
    let run = hx.run_args(&["agent", "/status parser"]);
    run.assert_code(0);
    assert_eq!(
        last_user(&server.requests()[0].body),
        "Status: !`echo from-the-shell $1`\nFocus on parser."
    );
    let warning = format!(
        "hx: warning: command status: its 1 shell command left as text: the project's commands are not trusted; review them, then run `hx trust` in {}",
        folder.display()
    );
    assert_eq!(
        run.stderr.lines().filter(|l| *l == warning).count(),
        1,
        "{}",
        run.dump()
    );

    // `hx trust` shows what the folder runs, and approves it.
    let trust = hx.run_args(&["trust", "--yes"]);
    trust.assert_code(0);
    assert!(
        trust
            .stdout
            .contains("\"status.md\" runs \"echo from-the-shell $1\""),
        "{}",
        trust.dump()
    );
    let run = hx.run_args(&["agent", "/status parser"]);
    run.assert_code(0);
    // The command ran in the workspace, the user's words not put into it.
    assert_eq!(
        last_user(&server.requests()[1].body),
        "Status: from-the-shell\nFocus on parser."
    );
    assert!(!run.stderr.contains("left as text"), "{}", run.dump());

    // The prose may change without asking again; what it runs may not.
    hx.write_file(
        ".claude/commands/status.md",
        "Now: !`echo from-the-shell $1`\nFocus on $1.\n",
    );
    hx.run_args(&["agent", "/status x"]).assert_code(0);
    assert_eq!(
        last_user(&server.requests()[2].body),
        "Now: from-the-shell\nFocus on x."
    );
    hx.write_file(".claude/commands/status.md", "Now: !`echo changed`\n");
    let run = hx.run_args(&["agent", "/status"]);
    run.assert_code(0);
    assert_eq!(
        last_user(&server.requests()[3].body),
        "Now: !`echo changed`"
    );
    assert!(run.stderr.contains("left as text"), "{}", run.dump());
}

#[test]
fn a_users_own_command_runs_its_spans_without_trust() {
    let server = FakeServer::start(vec![Reply::text("Ok.")]);
    let hx = Hx::new(&server);
    write_home(&hx, ".claude/commands/where.md", "In !`pwd`.\n");
    let run = hx.run_args(&["agent", "/where"]);
    run.assert_code(0);
    let here = std::fs::canonicalize(hx.workspace()).expect("canonical");
    assert_eq!(
        last_user(&server.requests()[0].body),
        format!("In {}.", here.display())
    );
}

#[test]
fn a_skill_only_the_user_invokes_is_out_of_the_catalog_and_load_skill_refuses_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "load_skill",
            &json!({"name": "deploy"}).to_string(),
        )]),
        Reply::text("Cannot."),
        Reply::text("Deploying."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".agents/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys to production.\ndisable-model-invocation: true\n---\nRun the deploy steps with $ARGUMENTS kept as written.\n",
    )
    .write_file(
        ".agents/skills/helper/SKILL.md",
        "---\nname: helper\ndescription: Helps the model.\nuser-invocable: false\n---\nHelp.\n",
    );
    let run = hx.run_args(&["agent", "deploy it"]);
    run.assert_code(0);
    let reqs = server.requests();
    let system = messages(&reqs[0].body)[0]["content"]
        .as_str()
        .expect("system");
    assert!(system.contains("- helper: Helps the model."), "{system}");
    assert!(!system.contains("deploy"), "{system}");
    assert_eq!(
        tool_results(&reqs[1].body),
        ["Error: skill deploy is only for the user to invoke (/deploy); it is not in the skills list"]
    );
    // The user invokes it: its block as load_skill gives it, then the words.
    let run = hx.run_args(&["agent", "/deploy staging now"]);
    run.assert_code(0);
    assert_eq!(
        last_user(&server.requests()[2].body),
        "<skill name=\"deploy\">\nRun the deploy steps with $ARGUMENTS kept as written.\n</skill>\n\nstaging now"
    );
    // A skill that is not user-invocable is not a name `/` knows.
    let run = hx.run_args(&["agent", "/helper"]);
    run.assert_code(2);
    assert!(
        run.stderr.contains("unknown command /helper"),
        "{}",
        run.dump()
    );
}

fn chat(hx: &mut Hx) -> Chat {
    hx.arg("chat");
    Chat::start(hx)
}

#[test]
fn a_commands_model_and_tools_hold_for_its_message_only() {
    let server = FakeServer::start(vec![Reply::text("Looked."), Reply::text("Plain.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/commands/look.md",
        "---\ndescription: Look around\nmodel: deepseek-v4-flash\nallowed-tools: Read, Bash(git status:*), WebFetch\n---\nLook at $ARGUMENTS.\n",
    );
    let mut chat = chat(&mut hx);
    let shown = chat.say("/look the tests");
    assert!(shown.contains("Looked."), "{shown}");
    assert!(
        shown.contains("command look: tool WebFetch: hx has no such tool, left out"),
        "{shown}"
    );
    assert!(chat.say("and now plainly").contains("Plain."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let reqs = server.requests();
    let (first, second) = (&reqs[0].body, &reqs[1].body);
    assert_eq!(last_user(first), "Look at the tests.");
    assert_eq!(first["model"], "deepseek-v4-flash");
    let mut tools = tool_names(first);
    tools.sort();
    assert_eq!(tools, ["bash", "read_file"]);
    // The next message: the configured model, every tool, the same history before it.
    assert_ne!(second["model"], "deepseek-v4-flash");
    assert!(tool_names(second).len() > 2, "{:?}", tool_names(second));
    for t in ["task", "load_skill", "write_file"] {
        assert!(tool_names(second).iter().any(|n| n == t), "{t}");
    }
    let (m1, m2) = (messages(first), messages(second));
    assert_eq!(&m2[..m1.len()], &m1[..]);
    // The session is the conversation's, on its own model: `-c` goes on with that one, not
    // with the model of the command its first message happened to be.
    let header = &session_lines(&hx.session_files()[0])[0];
    assert_eq!(header["model"], "deepseek-flash");
}

#[test]
fn hx_agent_gives_a_commands_message_its_model_as_model_would_and_only_its_tools() {
    let server = FakeServer::start(vec![Reply::text("Looked.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/commands/look.md",
        "---\nmodel: deepseek-reasoner\nallowed-tools: [Read, Glob]\n---\nLook at $ARGUMENTS.\n",
    );
    let run = hx.run_args(&["agent", "/look the tests"]);
    run.assert_code(0);
    let reqs = server.requests();
    let body = &reqs[0].body;
    assert_eq!(last_user(body), "Look at the tests.");
    // A retired name is its successor, thinking as it did, with the line saying so.
    assert_eq!(body["model"], "deepseek-flash", "{}", run.dump());
    assert!(
        run.stderr
            .contains("deepseek-reasoner was retired on 2026-07-24: using deepseek-flash"),
        "{}",
        run.dump()
    );
    let mut tools = tool_names(body);
    tools.sort();
    assert_eq!(tools, ["glob", "read_file"]);
}

#[test]
fn a_skill_invoked_in_the_chat_is_loaded_with_the_words_after_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "load_skill",
            &json!({"name": "sync-upstream"}).to_string(),
        )]),
        Reply::text("Syncing."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".agents/skills/sync-upstream/SKILL.md",
        "---\nname: sync-upstream\ndescription: Use when asked to sync with upstream.\n---\nSteps.\n",
    );
    let mut chat = chat(&mut hx);
    chat.say("/sync-upstream now");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(
        last_user(&server.requests()[0].body),
        "<skill name=\"sync-upstream\">\nSteps.\n</skill>\n\nnow"
    );
    // The model asking for it again is told it is there, not given the body twice.
    assert_eq!(
        tool_results(&server.requests()[1].body),
        ["Skill sync-upstream is already loaded above in this conversation; follow those instructions."]
    );
}

#[test]
fn the_chats_own_command_wins_over_a_file_with_a_warning_and_help_lists_the_files() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(".claude/commands/help.md", "Not the help.\n")
        .write_file(
            ".claude/commands/review.md",
            "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1.\n",
        );
    let file = std::fs::canonicalize(hx.workspace())
        .expect("canonical")
        .join(".claude/commands/help.md");
    let mut chat = chat(&mut hx);
    let shown = chat.say("/help");
    let warning = format!(
        "hx: warning: command file {} is hidden by hx chat's own /help",
        file.display()
    );
    assert!(chat.seen.contains(&warning), "{}", chat.seen);
    assert!(shown.contains("/exit"), "{shown}");
    assert!(shown.contains("/review <file>"), "{shown}");
    assert!(shown.contains("Review a file"), "{shown}");
    assert!(server.requests().is_empty(), "/help sends nothing");
    // Tab completes the one name that fits, and the line shows its argument hint after it.
    chat.keys("/rev\t");
    chat.expect("hx> /review <file>");
    chat.keys("a.rs\r");
    chat.expect("Answer.");
    chat.expect(crate::support::pty::PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(last_user(&server.requests()[0].body), "Review a.rs.");
}

#[test]
fn hx_commands_lists_and_shows_what_a_run_would_find() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".claude/commands/git/commit.md",
        "---\ndescription: Create a git commit\nargument-hint: [message]\nallowed-tools: Bash(git add:*), Bash(git commit:*), Read\nmodel: sonnet\n---\nStatus: !`git status`\nCommit: $ARGUMENTS\n",
    )
    .write_file(".claude/commands/huge.md", &"x".repeat(200 * 1024));
    let list = hx.run_args(&["commands", "list"]);
    list.assert_code(0);
    let row = list
        .stdout
        .lines()
        .find(|l| l.starts_with("/git:commit "))
        .unwrap_or_else(|| panic!("{}", list.dump()));
    for part in [
        "project",
        "[message]",
        "(configured)",
        "bash,read_file",
        "2 notes",
    ] {
        assert!(row.contains(part), "{part:?} in {row}");
    }
    assert!(
        list.stdout
            .contains("not read: the file is 200 KiB, more than 128 KiB"),
        "{}",
        list.dump()
    );
    let json = hx.run_args(&["commands", "list", "--json"]);
    json.assert_code(0);
    let v: Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(v["commands"][0]["name"], "git:commit");
    assert_eq!(v["commands"][0]["tools"], json!(["bash", "read_file"]));
    assert_eq!(v["not_read"].as_array().map(Vec::len), Some(1));
    let show = hx.run_args(&["commands", "show", "/git:commit"]);
    show.assert_code(0);
    for line in [
        "name: /git:commit",
        "arguments: [message]",
        "runs: git status (once the project's commands are trusted)",
        "note: tools Bash(git add:*), Bash(git commit:*): hx cannot limit bash to some commands, gives it whole",
        "note: model sonnet is Claude's; the configured model is used",
        "Commit: $ARGUMENTS",
    ] {
        assert!(show.stdout.contains(line), "{line:?} in\n{}", show.dump());
    }
    let missing = hx.run_args(&["commands", "show", "git:comit"]);
    missing.assert_code(1);
    assert!(
        missing.stderr.contains("did you mean git:commit?"),
        "{}",
        missing.dump()
    );
}

#[test]
fn a_commands_shell_span_runs_in_the_runs_sandbox() {
    let server = FakeServer::start(vec![Reply::text("Ok.")]);
    let mut hx = Hx::new_offline_in(&crate::support::outside_tmp());
    hx.env("DEEPSEEK_BASE_URL", server.url());
    write_home(
        &hx,
        ".claude/commands/escape.md",
        "Result: !`touch ../outside-by-span; echo in > inside-by-span && cat inside-by-span`\n",
    );
    let run = hx.run_args(&["agent", "/escape"]);
    run.assert_code(0);
    let message = last_user(&server.requests()[0].body);
    let outside = hx
        .workspace()
        .parent()
        .expect("test root")
        .join("outside-by-span");
    assert!(!outside.exists(), "the span wrote outside the workspace");
    // The pod's read-only mounts answer first; Landlock, where no pod could be made.
    assert!(
        message.contains("Read-only file system") || message.contains("Permission denied"),
        "{message}"
    );
    assert!(message.ends_with("in"), "{message}");
    assert_eq!(hx.read_file("inside-by-span"), "in\n");
}

/// A run started with `/NAME args` sends the body, but is listed by what was typed: in `hx
/// sessions list`, in `/resume`'s list and in the recap of `hx chat -c`.
#[test]
fn a_run_started_with_a_slash_is_listed_by_what_was_typed() {
    let server = FakeServer::start(vec![
        Reply::text("Reviewed."),
        Reply::text("Synced."),
        Reply::text("Again."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/commands/review.md",
        "## Context\nReview $ARGUMENTS.\n",
    )
    .write_file(
        ".agents/skills/sync-upstream/SKILL.md",
        "---\nname: sync-upstream\ndescription: Use when asked to sync with upstream.\n---\nSteps.\n",
    );
    hx.run_args(&["agent", "/review src/a.rs"]).assert_code(0);
    assert_eq!(
        last_user(&server.requests()[0].body),
        "## Context\nReview src/a.rs."
    );
    hx.run_args(&["agent", "/sync-upstream now"]).assert_code(0);
    let list = hx.run_args(&["sessions", "list"]);
    list.assert_code(0);
    let lines: Vec<&str> = list.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", list.stdout);
    assert!(lines[0].ends_with(" /sync-upstream now"), "{}", list.stdout);
    assert!(lines[1].ends_with(" /review src/a.rs"), "{}", list.stdout);

    hx.args(["chat", "-c"]);
    let mut chat = Chat::start(&hx);
    assert!(
        chat.seen.contains("you: /sync-upstream now\r\n"),
        "{}",
        chat.seen
    );
    assert!(!chat.seen.contains("<skill"), "{}", chat.seen);
    chat.type_line("/resume");
    let listed = chat.expect("Resume which?");
    assert!(listed.contains("  /review src/a.rs"), "{listed}");
    assert!(!listed.contains("## Context"), "{listed}");
    // Enter picks none.
    chat.say("");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

/// `/rewind` in the chat puts a message sent for `/NAME args` back as typed, so Enter
/// invokes it again (the same body goes out), rather than the body as a message of its own.
#[test]
fn a_chat_rewind_puts_back_the_slash_as_typed() {
    let server = FakeServer::start(vec![Reply::text("Reviewed."), Reply::text("Again.")]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/commands/review.md",
        "## Context\nReview $ARGUMENTS.\n",
    );
    let mut chat = chat(&mut hx);
    assert!(chat.say("/review src/a.rs").contains("Reviewed."));
    chat.type_line("/rewind");
    chat.expect("before message  /review src/a.rs");
    chat.expect("rewind to");
    chat.type_line("1");
    chat.expect("rewound to checkpoint 1");
    chat.expect("/review src/a.rs");
    chat.type_line("");
    chat.expect("Again.");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(last_user(&reqs[1].body), "## Context\nReview src/a.rs.");
    assert_eq!(messages(&reqs[1].body), messages(&reqs[0].body));
}
