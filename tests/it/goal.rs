//! A goal the run checks: `hx agent --until CMD` and `/goal CMD` in the chat. After each
//! answer CMD runs in the sandbox; its failure is the next user message, until it passes
//! (exit 0), or a budget or the round limit ends the run (exit 3).

use serde_json::Value;

use crate::support::pty::Chat;
use crate::support::{json_lines, messages, Call, FakeServer, Hx, Reply};

/// Fails, saying why, until the model has made `done.txt` in the workspace.
const CHECK: &str = "test -f done.txt || { echo 'done.txt is missing'; exit 4; }";

/// The last message of request `i`: what hx sent after the previous answer.
fn last_message(server: &FakeServer, i: usize) -> Value {
    let body = server.requests()[i].body.clone();
    messages(&body).last().expect("a message").clone()
}

/// An answer, the check's failure sent back, the fix, and the answer that passes.
fn fixing_server() -> FakeServer {
    FakeServer::start(vec![
        Reply::text("All done."),
        Reply::tool_calls(Call::bash_each(&["touch done.txt"])),
        Reply::text("Made done.txt."),
    ])
}

#[test]
fn until_sends_the_failed_check_back_and_exits_0_once_it_passes() {
    let server = fixing_server();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--until", CHECK, "make done.txt"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "Made done.txt.\n");
    assert_eq!(server.requests().len(), 3);
    // The first answer did not end the run: the check's output is the next user message.
    let sent = last_message(&server, 1);
    assert_eq!(sent["role"], "user");
    let text = sent["content"].as_str().expect("text");
    assert!(text.starts_with("[hx: the goal check failed] "), "{text}");
    assert!(
        text.contains("done.txt is missing\n[exit code: 4]"),
        "{text}"
    );
    assert!(text.contains("round 1 of 10"), "{text}");
    // The trace shows each round.
    assert!(
        run.stderr.contains("· failed, exit 4 · round 1 of 10"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("· passed · round 2 of 10"),
        "{}",
        run.stderr
    );
}

#[test]
fn until_rounds_are_goal_check_items_in_json() {
    let server = fixing_server();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "--until", CHECK, "make done.txt"]);
    let run = hx.run();
    run.assert_code(0);
    let checks: Vec<Value> = json_lines(&run.stdout)
        .into_iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "goal_check")
        .map(|e| e["item"].clone())
        .collect();
    assert_eq!(checks.len(), 2, "{}", run.stdout);
    assert_eq!(checks[0]["round"], 1);
    assert_eq!(checks[0]["passed"], false);
    assert_eq!(checks[0]["status"], "failed");
    assert_eq!(checks[0]["exit_code"], 4);
    assert_eq!(checks[0]["command"], CHECK);
    assert!(checks[0]["aggregated_output"]
        .as_str()
        .is_some_and(|o| o.contains("done.txt is missing")));
    assert_eq!(checks[1]["round"], 2);
    assert_eq!(checks[1]["passed"], true);
    assert_eq!(checks[1]["exit_code"], 0);
    let last = json_lines(&run.stdout).pop().expect("events");
    assert_eq!(last["type"], "turn.completed");
}

#[test]
fn until_exits_3_when_the_turn_budget_ends_before_the_check_passes() {
    let server = FakeServer::start(vec![
        Reply::text("Done."),
        Reply::text("Really done."),
        Reply::text("unused"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args([
        "agent",
        "--max-turns",
        "2",
        "--until",
        CHECK,
        "make done.txt",
    ]);
    let run = hx.run();
    run.assert_code(3);
    // --max-turns counts the whole run: the second round's failure is not sent.
    assert_eq!(server.requests().len(), 2);
    let sent = last_message(&server, 1);
    assert!(sent["content"]
        .as_str()
        .is_some_and(|t| t.contains("done.txt is missing")));
    assert!(
        run.stderr.contains("stopped after 2 turns"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("round 2 of 10"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
}

#[test]
fn until_exits_3_after_its_last_round() {
    let server = FakeServer::start((0..10).map(|i| Reply::text(&format!("try {i}"))).collect());
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "--until", "echo nope; exit 1", "go"]);
    let run = hx.run();
    run.assert_code(3);
    assert_eq!(server.requests().len(), 10);
    let last = json_lines(&run.stdout).pop().expect("events");
    assert_eq!(last["type"], "turn.failed");
    assert_eq!(last["error"]["kind"], "goal_unmet", "{last}");
    assert!(last["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("still failed after 10 rounds")));
}

#[test]
fn until_refuses_a_blank_command() {
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--until", " ", "go"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("give a command to run"),
        "{}",
        run.stderr
    );
}

#[test]
fn goal_in_the_chat_checks_each_answer() {
    let server = fixing_server();
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    let shown = chat.say(&format!("/goal {CHECK}"));
    assert!(shown.contains("goal: each answer must pass"), "{shown}");
    let shown = chat.say("make done.txt");
    assert!(shown.contains("Made done.txt."), "{shown}");
    assert!(shown.contains("round 1 of 10"), "{shown}");
    chat.say("/goal off");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests().len(), 3);
    let sent = last_message(&server, 1);
    assert!(sent["content"]
        .as_str()
        .is_some_and(|t| t.contains("done.txt is missing")));
}
