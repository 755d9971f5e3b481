//! `hx chat` end to end, in a real pseudo-terminal against the fake server: what each message
//! sends, Ctrl-C during a turn, the commands, leaving, the history file, and the session it
//! leaves for `hx agent -c`.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::support::calls::bash_printing;
use crate::support::procs::pid_in;
use crate::support::pty::{Chat, PROMPT};
use crate::support::{
    ends_within, messages, session_lines, tool_messages, Call, FakeServer, Hx, Reply,
};
use serde_json::{json, Value};

fn chat_hx(server: &FakeServer) -> Hx {
    let mut hx = Hx::new(server);
    hx.arg("chat");
    hx
}

fn body(server: &FakeServer, i: usize) -> Value {
    server.requests()[i].body.clone()
}

#[test]
fn two_messages_continue_one_conversation() {
    let server = FakeServer::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    assert!(chat.say("hello there").contains("First answer."));
    assert!(chat.say("and one more thing").contains("Second answer."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let first = messages(&requests[0].body).clone();
    let second = messages(&requests[1].body).clone();
    // The second request is the first one, exactly, then the answer and the new message.
    assert_eq!(&second[..first.len()], &first[..]);
    assert_eq!(second.len(), first.len() + 2);
    assert_eq!(second[first.len()]["role"], "assistant");
    assert_eq!(second[first.len()]["content"], "First answer.");
    assert_eq!(
        second[first.len() + 1],
        json!({"role": "user", "content": "and one more thing"})
    );
    // One session holds both.
    assert_eq!(hx.session_files().len(), 1);
}

#[test]
fn a_turn_keeps_the_prompt_up_marked_busy_while_hx_waits_for_the_model() {
    let server = FakeServer::start(vec![
        Reply::text("Slow answer.").delay(Duration::from_millis(1500))
    ]);
    let mut hx = chat_hx(&server);
    // Colour allowed, as on a person's terminal.
    hx.env_remove("NO_COLOR");
    let mut chat = Chat::start(&hx);
    chat.type_line("take your time");
    // The prompt stays up for messages to the running turn; it has the bottom line, so the
    // spinner keeps off it (`hx agent` shows one: terminal.rs).
    chat.expect("..> ");
    let rest = chat.expect(PROMPT);
    assert!(rest.contains("Slow answer."), "{rest}");
    assert!(!rest.contains("waiting for the model"), "{rest}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn ctrl_c_during_a_long_command_cancels_the_turn_not_the_program() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"echo $$ > pid.txt; sleep 30"}"#,
        )]),
        Reply::text("Fine, stopped."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.type_line("run the long thing");
    let pid_file = hx.workspace().join("pid.txt");
    let pid = pid_in(&pid_file, Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the command never started\n{}", chat.seen));
    chat.ctrl('c');
    chat.expect("hx: interrupted");
    chat.expect(PROMPT);
    // The command's shell (the leader of its process group) is gone, and its group with it.
    assert!(
        ends_within(pid, Duration::from_secs(10)),
        "the command still runs"
    );
    // Its other members (the `sleep`) are killed too; each is gone once hx has reaped it, so
    // the group is watched for a while rather than asked once.
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: kill with signal 0 only asks whether the group exists.
    while unsafe { libc::kill(-pid, 0) } == 0 {
        assert!(
            Instant::now() < deadline,
            "the command's process group is still there"
        );
        std::thread::sleep(Duration::from_millis(10));
    }

    assert!(chat.say("what now?").contains("Fine, stopped."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let next = body(&server, 1);
    let msgs = messages(&next);
    let n = msgs.len();
    assert_eq!(msgs[n - 3]["tool_calls"][0]["id"], "c1");
    assert_eq!(
        msgs[n - 2],
        json!({"role": "tool", "tool_call_id": "c1", "content": "Error: interrupted by the user"})
    );
    assert_eq!(msgs[n - 1], json!({"role": "user", "content": "what now?"}));
    // The answer is on record too, so a resumed session sends the same.
    let file = &hx.session_files()[0];
    assert!(session_lines(file)
        .iter()
        .any(|l| l["type"] == "message"
            && l["message"]["content"] == "Error: interrupted by the user"));
}

#[test]
fn new_starts_a_fresh_history() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("first");
    assert!(chat.say("/new").contains("hx: new session"));
    chat.say("second");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let msgs = messages(&body(&server, 1)).clone();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(msgs[0]["role"], "system");
    assert_eq!(msgs[1], json!({"role": "user", "content": "second"}));
    assert_eq!(hx.session_files().len(), 2);
}

#[test]
fn an_unknown_command_sends_nothing() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    let shown = chat.say("/frobnicate the thing");
    assert!(
        shown.contains("unknown command /frobnicate: no command file or skill of that name"),
        "{shown}"
    );
    assert!(shown.contains("/help lists them"), "{shown}");
    assert!(server.requests().is_empty());
    chat.say("a real message");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert!(!requests[0].raw_body.contains("frobnicate"));
}

#[test]
fn model_switches_the_next_request_and_is_recorded() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("first");
    assert!(chat
        .say("/model other-model")
        .contains("model: other-model"));
    chat.say("second");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_ne!(body(&server, 0)["model"], "other-model");
    assert_eq!(body(&server, 1)["model"], "other-model");
    let file = &hx.session_files()[0];
    assert!(session_lines(file)
        .iter()
        .any(|l| l["type"] == "model" && l["model"] == "other-model"));
}

#[test]
fn ctrl_d_exits_0_with_the_session_line() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    // Bare hx, on a terminal, is the same conversation.
    let hx = Hx::new(&server);
    let mut chat = Chat::start(&hx);
    chat.say("hello");
    chat.ctrl('d');
    let id = hx.session_files()[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    // By its short id: the last 8 characters.
    chat.expect(&format!("hx: session {} ", &id[id.len() - 8..]));
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn ctrl_c_at_the_prompt_says_how_to_leave_and_twice_leaves() {
    let server = FakeServer::start(vec![]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.ctrl('c');
    chat.expect("press Ctrl-C again, Ctrl-D or type /exit to leave");
    chat.expect(PROMPT);
    chat.ctrl('c');
    assert_eq!(chat.exit_code(), 0);
    // Nothing was said: no session is left for -c to find.
    assert!(hx.session_files().is_empty());
}

#[test]
fn sigterm_at_the_prompt_ends_with_143_and_the_session_line() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("hello");
    chat.signal(rexpect::process::Signal::SIGTERM);
    chat.expect("hx: terminated by SIGTERM");
    chat.expect("hx: session ");
    assert_eq!(chat.exit_code(), 143);
    let lines = session_lines(&hx.session_files()[0]);
    let end = lines.last().expect("lines");
    assert_eq!(end["type"], "end");
    assert_eq!(end["outcome"], "interrupted");
}

#[test]
fn a_chat_whose_only_message_never_reached_the_model_leaves_no_session_on_sigterm() {
    // Nothing answers at the server's address: the message fails unreached, as with no key.
    let mut hx = Hx::new_offline();
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    chat.say("hello");
    chat.signal(rexpect::process::Signal::SIGTERM);
    chat.expect("hx: terminated by SIGTERM");
    assert_eq!(chat.exit_code(), 143);
    // As after Ctrl-D: nothing in it to go on with, so nothing for -c to find.
    assert!(hx.session_files().is_empty(), "{:?}", hx.session_files());
}

#[test]
fn max_cost_holds_for_the_whole_conversation_across_effort_and_model_switches() {
    let server = FakeServer::start(vec![Reply::text("First."), Reply::text("never asked")]);
    let mut hx = Hx::new(&server);
    hx.args(["chat", "--max-cost", "0.0001"]);
    let mut chat = Chat::start(&hx);
    assert!(chat.say("first").contains("First."));
    // Another effort or model goes on with the same purse: the first message's cost counts.
    chat.say("/effort high");
    // A model without a price would leave the limit unreachable: the switch is refused.
    let refused = chat.say("/model local-model");
    assert!(
        refused.contains("hx: --max-cost needs the price of model local-model")
            && refused.contains("[pricing.\"local-model\"]")
            && !refused.contains("model: local-model"),
        "{refused}"
    );
    chat.say("/model deepseek-v4-pro");
    let shown = chat.say("second");
    assert!(shown.contains("passed --max-cost $0.0001"), "{shown}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn the_history_file_is_written_outside_the_project() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("remember this line");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let history = hx.home().join(".local/state/hx/history");
    let text = std::fs::read_to_string(&history).expect("the history file");
    assert!(text.contains("remember this line"), "{text}");
    let mode = std::fs::metadata(&history)
        .expect("stat")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    // The workspace holds nothing hx wrote.
    let left: Vec<_> = std::fs::read_dir(hx.workspace())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn hx_agent_c_continues_an_interactive_session() {
    let server = FakeServer::start(vec![
        Reply::text("Chat answer."),
        Reply::text("One-shot answer."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("from the chat");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let run = hx.run_args(&["agent", "-c", "and from a script"]);
    run.assert_success();
    assert_eq!(run.stdout, "One-shot answer.\n");
    let first = messages(&body(&server, 0)).clone();
    let second = messages(&body(&server, 1)).clone();
    assert_eq!(&second[..first.len()], &first[..]);
    assert_eq!(second[first.len()]["content"], "Chat answer.");
    assert_eq!(
        second.last(),
        Some(&json!({"role": "user", "content": "and from a script"}))
    );
    assert_eq!(hx.session_files().len(), 1);
}

#[test]
fn bare_hx_without_a_terminal_prints_usage_and_exits_2() {
    let run = Hx::new_offline().run();
    run.assert_code(2);
    assert!(run.stderr.contains("Usage: hx"), "{}", run.dump());
    assert!(run.stdout.is_empty());
}

#[test]
fn a_hooks_file_that_is_not_valid_ends_the_chat_before_any_request() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let mut hx = chat_hx(&server);
    hx.write_user_config("hooks.json", r#"{"hooks": {"NoSuchEvent": []}}"#);
    let mut chat = Chat::spawn(&hx);
    // The agent is built while the prompt is up: the error may come before or after it.
    chat.expect("NoSuchEvent");
    assert_eq!(chat.exit_code(), 2);
    assert!(server.requests().is_empty());
}

#[test]
fn skills_found_while_the_prompt_is_up_complete_with_tab() {
    let server = FakeServer::start(vec![Reply::text("Answer.")]);
    let mut hx = chat_hx(&server);
    hx.write_file(
        ".agents/skills/sync-upstream/SKILL.md",
        "---\nname: sync-upstream\ndescription: Use when asked to sync with upstream.\n---\nSteps.\n",
    );
    let mut chat = Chat::start(&hx);
    // /skills waits for the catalog, so Tab has the names after it.
    chat.say("/skills");
    chat.keys("/sync\tnow\r");
    // The completion redraws the line, prompt and all, so the prompt to wait for is the one
    // after the answer: a Ctrl-D typed while the turn still runs is lost, and hx stays.
    chat.expect("Answer.");
    chat.expect(PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let msgs = messages(&body(&server, 0)).clone();
    // The skill is loaded for the model, the words after it (`slash_commands`).
    assert_eq!(
        msgs.last(),
        Some(
            &json!({"role": "user", "content": "<skill name=\"sync-upstream\">\nSteps.\n</skill>\n\nnow"})
        )
    );
}

#[test]
fn a_pasted_block_and_continued_lines_are_one_message_each() {
    let server = FakeServer::start(vec![Reply::text("One."), Reply::text("Two.")]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    // Bracketed paste, as a terminal sends it: the newlines inside do not send anything.
    chat.p
        .send("\x1b[200~first line\rsecond line\x1b[201~")
        .expect("paste");
    chat.type_line("");
    chat.expect("One.");
    chat.expect(PROMPT);
    // A trailing backslash asks for another line, and is not part of the message.
    chat.type_line("third \\");
    chat.type_line("fourth");
    chat.expect("Two.");
    chat.expect(PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = |i: usize| messages(&requests[i].body).last().cloned();
    assert_eq!(
        last(0),
        Some(json!({"role": "user", "content": "first line\nsecond line"}))
    );
    assert_eq!(
        last(1),
        Some(json!({"role": "user", "content": "third \nfourth"}))
    );
}

#[test]
fn resume_lists_the_sessions_and_switches_to_the_one_picked() {
    let server = FakeServer::start(vec![
        Reply::text("One."),
        Reply::text("Two."),
        Reply::text("Three."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("first");
    chat.say("/new");
    chat.say("second");
    chat.type_line("/resume");
    // The session the chat is in is left out: the first one is the only one listed.
    let listed = chat.expect("Resume which?");
    // One request, "1 turn".
    assert_eq!(listed.matches(" 1 turn ").count(), 1, "{listed}");
    assert!(chat.say("1").contains("hx: resumed session"));
    chat.say("third");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let first = messages(&body(&server, 0)).clone();
    let third = messages(&body(&server, 2)).clone();
    assert_eq!(&third[..first.len()], &first[..]);
    assert_eq!(third[first.len()]["content"], "One.");
    assert_eq!(
        third.last(),
        Some(&json!({"role": "user", "content": "third"}))
    );
    assert_eq!(hx.session_files().len(), 2);
}

#[test]
fn compact_summarises_the_conversation_and_the_next_message_goes_on_from_it() {
    let server = FakeServer::start(vec![
        Reply::text("First answer."),
        Reply::text("Goal: greet. Progress: greeted."),
        Reply::text("Second answer."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    assert!(chat.say("hello there").contains("First answer."));
    let shown = chat.say("/compact");
    assert!(shown.contains("compacted:"), "{shown}");
    assert!(chat.say("and now?").contains("Second answer."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request ends with hx's instruction; the next request starts from its answer.
    assert!(
        crate::support::is_summary(&requests[1].body),
        "{}",
        requests[1].body
    );
    let next = messages(&requests[2].body);
    let text = serde_json::to_string(next).expect("json");
    assert!(text.contains("Goal: greet. Progress: greeted."), "{text}");
    assert!(
        !text.contains("First answer."),
        "the old history was replaced: {text}"
    );
    assert_eq!(
        next.last().expect("a message"),
        &json!({"role": "user", "content": "and now?"})
    );
}

#[test]
fn a_window_the_server_named_holds_for_the_next_message() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash_printing("c1", 6_000)]),
        Reply::deepseek_overflow(9_000),
        Reply::text("SUM"),
        Reply::text("First done."),
        Reply::tool_calls(vec![bash_printing("c2", 40_000)]),
        Reply::text("SUM2"),
        Reply::text("Second done."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    assert!(chat.say("look").contains("First done."));
    // The window is the server's 9,000 tokens now, not the configured 1,048,576: the 40 KB
    // output is compacted away before it is sent, not refused by the server a second time.
    chat.say("look more");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let reqs = server.requests();
    let after_c2 = reqs
        .iter()
        .position(|r| {
            tool_messages(&r.body)
                .iter()
                .any(|m| m["tool_call_id"] == "c2")
        })
        .expect("a request after the c2 result");
    let sent = reqs[after_c2].body.to_string().len();
    assert!(sent < 9_000 * 3, "{sent} bytes sent after the 40 KB output");
    let files = hx.session_files();
    let lines = session_lines(&files[0]);
    let triggers: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "compaction")
        .map(|l| &l["trigger"])
        .collect();
    assert_eq!(triggers, [&json!("overflow"), &json!("auto")], "{lines:?}");
}

#[test]
fn no_project_doc_leaves_agents_md_out_of_the_chat_s_system_prompt() {
    let system = |extra: &[&str]| {
        let server = FakeServer::start(vec![Reply::text("Hi.")]);
        let mut hx = chat_hx(&server);
        hx.args(extra);
        std::fs::write(
            hx.workspace().join("AGENTS.md"),
            "Always use tabs, marker-6471.\n",
        )
        .expect("write AGENTS.md");
        let mut chat = Chat::start(&hx);
        assert!(chat.say("hello").contains("Hi."));
        chat.ctrl('d');
        assert_eq!(chat.exit_code(), 0);
        messages(&body(&server, 0))[0]["content"]
            .as_str()
            .expect("a system prompt")
            .to_string()
    };
    assert!(system(&[]).contains("marker-6471"));
    assert!(!system(&["--no-project-doc"]).contains("marker-6471"));
}

#[test]
fn context_counts_the_mcp_tools_the_next_message_offers() {
    let server = FakeServer::start(vec![Reply::text("Hi.")]);
    let mut hx = chat_hx(&server);
    hx.write_user_config(
        "config.toml",
        &crate::support::mcp::server_table("t", &[], ""),
    );
    let mut chat = Chat::start(&hx);
    // Before the first message no server has started: built-in tools only.
    let before = chat.say("/context");
    assert!(before.contains("tools: bash,"), "{before}");
    assert!(!before.contains("mcp__t__echo"), "{before}");
    assert!(chat.say("hello").contains("Hi."));
    let after = chat.say("/context");
    assert!(after.contains("mcp__t__echo"), "{after}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert!(crate::support::tool_names(&body(&server, 0)).contains(&"mcp__t__echo".to_string()));
}

#[test]
fn each_messages_stop_line_has_that_messages_figures() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"echo one"}"#)]),
        Reply::text("First."),
        Reply::tool_calls(vec![Call::new("c2", "bash", r#"{"command":"echo two"}"#)]),
        Reply::text("Second."),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    let first = chat.say("first");
    assert!(
        first.contains("[HOOK] Stop: turns=2, tool_calls=1,"),
        "{first}"
    );
    let second = chat.say("second");
    // Not the session's 4 and 2 so far.
    assert!(
        second.contains("[HOOK] Stop: turns=2, tool_calls=1,"),
        "{second}"
    );
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn context_gives_tokens_against_the_window() {
    let server = FakeServer::start(vec![Reply::text(&"long answer ".repeat(2000))]);
    let mut hx = chat_hx(&server);
    hx.write_user_config("config.toml", "context_window = 50000\n");
    let mut chat = Chat::start(&hx);
    let tokens = |text: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with("next request: about "))
            .unwrap_or_else(|| panic!("no size line in {text}"));
        assert!(line.contains("tokens of the 50,000-token window"), "{line}");
        line["next request: about ".len()..]
            .split_whitespace()
            .next()
            .and_then(|n| n.replace(',', "").parse().ok())
            .unwrap_or_else(|| panic!("no count in {line}"))
    };
    let before = tokens(&chat.say("/context"));
    assert!(before > 500, "the system prompt and tools alone: {before}");
    chat.say("hello");
    let after = tokens(&chat.say("/context"));
    // The answer's 24,000 characters are in the next request now.
    assert!(after > before + 6_000, "{before} -> {after}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn the_banner_names_the_provider_and_comes_after_the_start_up_warnings() {
    let server = FakeServer::start(vec![]);
    let mut hx = chat_hx(&server);
    hx.write_file(".agents/skills/broken/SKILL.md", "no frontmatter here\n");
    let chat = Chat::start(&hx);
    let seen = chat.seen.clone();
    // (The terminal reader shows the banner's dots as two Latin-1 characters.)
    let banner = seen
        .find("hx chat ")
        .unwrap_or_else(|| panic!("no banner in {seen}"));
    let line = seen[banner..].lines().next().unwrap_or_default();
    for part in [" deepseek-flash ", " deepseek ", &server.url()] {
        assert!(line.contains(part), "{part:?} in {line}");
    }
    let warning = seen
        .find("broken")
        .unwrap_or_else(|| panic!("no warning about the broken skill in {seen}"));
    assert!(warning < banner, "{seen}");
    let mut chat = chat;
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn a_second_tab_lists_the_candidates() {
    let server = FakeServer::start(vec![]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    // /clear, /compact and /context share "/c".
    chat.keys("/c\t\t");
    chat.expect("/clear");
    chat.expect("/compact");
    chat.expect("/context");
    chat.expect("hx> /c");
    // The line still holds what was common to them: the list was shown, nothing picked, so
    // typing the rest makes /context.
    chat.keys("ontext\r");
    chat.expect("next request: about");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn model_alone_offers_the_providers_models() {
    let server = FakeServer::start(vec![]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    let shown = chat.say("/model");
    assert!(
        shown.contains("model: deepseek-flash (provider deepseek)"),
        "{shown}"
    );
    assert!(shown.contains("the provider offers"), "{shown}");
    assert!(shown.contains("* deepseek-flash"), "{shown}");
    assert!(shown.contains("  deepseek-v4-pro"), "{shown}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert!(server
        .requests()
        .iter()
        .any(|r| r.method == "GET" && r.path == "/models"));
}

#[test]
fn each_turn_ends_with_the_context_the_cost_and_the_cache_and_usage_breaks_it_down() {
    let server = FakeServer::start(vec![
        Reply::text("First answer.").with_usage(1_000_000, 900_000, 10_000),
        Reply::text("Second answer.").with_usage(1_000_000, 500_000, 10_000),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    let first = chat.say("hello there");
    // 0.9 * $0.003 + 0.1 * $0.15 + 0.01 * $0.6, off-peak. (The terminal's reader shows the
    // separators byte by byte, so the parts are matched.)
    for part in [
        "context 1,010,000 of 1,048,576 tokens ",
        " turn $0.0237 ",
        " session $0.0237 ",
        " cache 90%",
    ] {
        assert!(first.contains(part), "{part:?} in {first}");
    }
    let second = chat.say("and again");
    // 0.5 * $0.003 + 0.5 * $0.15 + 0.01 * $0.6 = $0.0825.
    for part in [" turn $0.0825 ", " session $0.1062 ", " cache 50%"] {
        assert!(second.contains(part), "{part:?} in {second}");
    }
    let usage = chat.say("/usage");
    assert!(usage.contains("cost: $0.1062"), "{usage}");
    assert!(
        usage.contains(
            "deepseek-flash: prompt tokens 2000000, cache hits 1400000, completion tokens \
             20000, cost $0.1062"
        ),
        "{usage}"
    );
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

/// `/new` lets go of the old session's pod: what its commands left running ends then, not
/// only when hx exits (the new session gets a pod of its own).
#[test]
fn new_ends_what_the_old_sessions_commands_left_running() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"sleep 300 >/dev/null 2>&1 & echo $! > bg.pid"}"#,
        )]),
        Reply::text("started"),
    ]);
    let hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("start it");
    let pid = pid_in(&hx.workspace().join("bg.pid"), Duration::from_secs(20))
        .unwrap_or_else(|| panic!("the command never ran\n{}", chat.seen));
    assert!(crate::support::procs::running(pid), "{}", chat.seen);
    assert!(
        chat.say("/new").contains("hx: new session"),
        "{}",
        chat.seen
    );
    assert!(
        ends_within(pid, Duration::from_secs(10)),
        "the old session's sleep still runs\n{}",
        chat.seen
    );
}

/// `/usage` after a resume says each figure's scope: the totals of every run of the session,
/// and this run's, with the lines per model (this run's requests) under this run.
#[test]
fn usage_after_a_resume_shows_every_run_and_this_run_apart() {
    let server = FakeServer::start(vec![
        Reply::text("First answer.").with_usage(1_000, 0, 10),
        Reply::text("Second answer.").with_usage(2_000, 1_000, 20),
    ]);
    let mut hx = chat_hx(&server);
    let mut chat = Chat::start(&hx);
    chat.say("first");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    hx.arg("-c");
    let mut chat = Chat::start(&hx);
    chat.say("second");
    let shown = chat.say("/usage").replace("\r\n", "\n");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let (every, this) = shown
        .split_once("this run (since it was resumed):\n")
        .unwrap_or_else(|| panic!("two scopes in {shown}"));
    let every = every
        .split_once("this session, every run:\n")
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("the session's scope in {shown}"));
    assert!(every.contains("  requests: 2, "), "{shown}");
    assert!(every.contains("  prompt tokens: 3000, "), "{shown}");
    assert!(!every.contains("by model"), "{shown}");
    assert!(this.contains("  requests: 1, "), "{shown}");
    assert!(this.contains("  prompt tokens: 2000, "), "{shown}");
    assert!(
        this.contains(
            "  by model:\n    deepseek-flash: prompt tokens 2000, cache hits 1000, completion tokens 20,"
        ),
        "{shown}"
    );
}
