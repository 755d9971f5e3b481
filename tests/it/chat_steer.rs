//! Messages typed while a turn runs in `hx chat`, in a real pseudo-terminal against the fake
//! server: Enter steers the running turn (the line arrives in its next request, after the
//! answers of the calls in flight), Tab queues the next turn, Up on an empty prompt takes the
//! last queued message back to edit or drop.

use crate::support::pty::{Chat, PROMPT};
use crate::support::{messages, session_lines, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};
use std::time::Duration;

/// A bash call that takes a while, with a word the trace shows when it starts.
fn slow_call(id: &str) -> Reply {
    Reply::tool_calls(vec![Call::new(
        id,
        "bash",
        r#"{"command":"sleep 3 # slow-call"}"#,
    )])
}

fn chat(server: &FakeServer) -> (Hx, Chat) {
    let mut hx = Hx::new(server);
    hx.arg("chat");
    let chat = Chat::start(&hx);
    (hx, chat)
}

fn body(server: &FakeServer, i: usize) -> Value {
    server.requests()[i].body.clone()
}

/// The user messages of request `i`.
fn users(server: &FakeServer, i: usize) -> Vec<Value> {
    messages(&body(server, i))
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect()
}

#[test]
fn a_steer_typed_during_a_call_follows_that_calls_answer_in_the_next_request() {
    let server = FakeServer::start(vec![slow_call("c1"), Reply::text("Done, README too.")]);
    let (hx, mut chat) = chat(&server);
    chat.type_line("fix the build");
    // The call runs: the line typed now is for the running turn.
    chat.expect("slow-call");
    chat.type_line("also check the README");
    chat.expect("steer queued");
    let rest = chat.expect(PROMPT);
    assert!(rest.contains("Done, README too."), "{rest}");
    assert!(rest.contains("steer: also check the README"), "{rest}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one turn of two requests");
    let first = messages(&requests[0].body).clone();
    let second = messages(&requests[1].body).clone();
    // The request before is a prefix of the next: the steer is appended, after the call's
    // answer, never between the call and its answer.
    assert_eq!(&second[..first.len()], &first[..]);
    let n = second.len();
    assert_eq!(n, first.len() + 3, "{second:#?}");
    assert_eq!(second[n - 3]["tool_calls"][0]["id"], "c1");
    assert_eq!(second[n - 2]["role"], "tool");
    assert_eq!(second[n - 2]["tool_call_id"], "c1");
    assert_eq!(
        second[n - 1],
        json!({"role": "user", "content": "also check the README"})
    );
    // The session holds it as the user's message, so a resumed session sends the same.
    let file = &hx.session_files()[0];
    assert!(session_lines(file).iter().any(|l| l["type"] == "message"
        && l["message"]["role"] == "user"
        && l["message"]["content"] == "also check the README"));
}

#[test]
fn tab_queues_the_next_turn_which_the_running_turn_never_sees() {
    let server = FakeServer::start(vec![
        slow_call("c1"),
        Reply::text("First done."),
        Reply::text("Second done."),
    ]);
    let (_hx, mut chat) = chat(&server);
    chat.type_line("first task");
    chat.expect("slow-call");
    chat.keys("second task\t");
    chat.expect("queued for the next turn");
    chat.expect("First done.");
    chat.expect("sending what was queued: second task");
    chat.expect("Second done.");
    chat.expect(PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    assert_eq!(server.requests().len(), 3);
    assert_eq!(users(&server, 1), vec![json!("first task")]);
    assert_eq!(
        users(&server, 2),
        vec![json!("first task"), json!("second task")]
    );
    // The next turn goes on from the whole of the first.
    let before = messages(&body(&server, 1)).clone();
    let next = messages(&body(&server, 2)).clone();
    assert_eq!(&next[..before.len()], &before[..]);
    assert_eq!(next[before.len()]["content"], "First done.");
    assert_eq!(
        next[before.len() + 1],
        json!({"role": "user", "content": "second task"})
    );
}

#[test]
fn up_takes_a_queued_steer_back_to_edit_and_ctrl_c_on_it_drops_it() {
    let server = FakeServer::start(vec![slow_call("c1"), Reply::text("Noted.")]);
    let (_hx, mut chat) = chat(&server);
    chat.type_line("start");
    chat.expect("slow-call");
    chat.type_line("words to drop");
    chat.expect("steer queued");
    // Up on the empty prompt: the steer is back in the line; Ctrl-C there clears it.
    chat.keys("\x1b[A");
    chat.expect("words to drop");
    chat.ctrl('c');
    chat.type_line("words to edit");
    chat.expect("steer queued");
    chat.keys("\x1b[A");
    chat.expect("words to edit");
    chat.type_line(", edited");
    chat.expect("steer queued");
    let rest = chat.expect(PROMPT);
    assert!(rest.contains("Noted."), "{rest}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);

    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        users(&server, 1),
        vec![json!("start"), json!("words to edit, edited")]
    );
}

#[test]
fn a_steer_the_turn_ended_without_sending_goes_as_the_next_message() {
    let server = FakeServer::start(vec![
        Reply::text("All done.").delay(Duration::from_secs(3)),
        Reply::text("Then this too."),
    ]);
    let (_hx, mut chat) = chat(&server);
    chat.type_line("go");
    // The turn's one request is out (its answer held back a while): a steer typed now has
    // no request of this turn left to go in.
    assert!(server.wait_for_requests(1, Duration::from_secs(20)));
    chat.type_line("one more thing");
    chat.expect("steer queued");
    chat.expect("All done.");
    let rest = chat.expect("Then this too.");
    assert!(rest.contains("hx: sending what was queued"), "{rest}");
    chat.expect(PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(users(&server, 0), vec![json!("go")]);
    assert_eq!(
        users(&server, 1),
        vec![json!("go"), json!("one more thing")]
    );
}

#[test]
fn after_new_a_steer_reaches_the_new_sessions_turn() {
    let server = FakeServer::start(vec![
        Reply::text("Old."),
        slow_call("c1"),
        Reply::text("New, steered."),
    ]);
    let (_hx, mut chat) = chat(&server);
    assert!(chat.say("old session").contains("Old."));
    assert!(chat.say("/new").contains("hx: new session"));
    chat.type_line("fresh start");
    chat.expect("slow-call");
    chat.type_line("and this");
    chat.expect("steer queued");
    chat.expect("New, steered.");
    chat.expect(PROMPT);
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert_eq!(server.requests().len(), 3);
    assert_eq!(
        users(&server, 2),
        vec![json!("fresh start"), json!("and this")]
    );
}
