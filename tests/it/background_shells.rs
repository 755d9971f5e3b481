//! Background shells end to end: `bash` with `run_in_background`, `bash_output`, `kill_shell`,
//! the note of a shell that ended, and what is left running after hx exits (nothing).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::calls::call;
use crate::support::jsonl::json_lines;
use crate::support::procs::{host_pid, running};
use crate::support::pty::Chat;
use crate::support::{Call, FakeServer, Hx, Reply, Run};

fn background(id: &str, command: &str) -> Call {
    call(
        id,
        "bash",
        json!({ "command": command, "run_in_background": true }),
    )
}

fn bash(id: &str, command: &str) -> Call {
    call(id, "bash", json!({ "command": command }))
}

/// The messages of a request.
fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages")
}

/// The content of the tool message answering `id` in a request.
fn answer<'a>(body: &'a Value, id: &str) -> &'a str {
    messages(body)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {id}"))
}

/// A tiny HTTP server: it writes the port it got to `port`, says `listening`, and prints the
/// path of each request it answers.
const SERVER: &str = r#"
import http.server, os
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"hello from the background\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print("GET", self.path, flush=True)
    def log_message(self, *args):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
with open("port.tmp", "w") as f:
    f.write(str(s.server_port))
os.rename("port.tmp", "port")
print("listening", flush=True)
s.serve_forever()
"#;

#[test]
fn a_background_server_answers_a_later_command_and_its_output_reads_in_two_pieces() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![background("c1", "python3 -u server.py")]),
        Reply::tool_calls(vec![call(
            "c2",
            "bash_output",
            json!({"shell_id": "bg1", "wait": 30, "pattern": "^listening"}),
        )]),
        Reply::tool_calls(vec![bash("c3", "curl -sS http://127.0.0.1:$(cat port)/hi")]),
        Reply::tool_calls(vec![call(
            "c4",
            "bash_output",
            json!({"shell_id": "bg1", "wait": 30, "pattern": "GET"}),
        )]),
        Reply::tool_calls(vec![call("c5", "kill_shell", json!({"shell_id": "bg1"}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("server.py", SERVER);
    hx.args(["agent", "start the server and try it"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6, "{}", run.dump());
    let started = answer(&reqs[1].body, "c1");
    assert!(
        started.starts_with("Started background shell bg1."),
        "{started}"
    );
    // The first piece: the line it waited for, and the shell still running.
    let first = answer(&reqs[2].body, "c2");
    assert!(
        first.starts_with("listening\n[bg1 running; 10 bytes of output in /"),
        "{first}"
    );
    // A later command reached the server while it ran.
    assert_eq!(answer(&reqs[3].body, "c3"), "hello from the background\n");
    // The second piece: only what came after the first.
    let second = answer(&reqs[4].body, "c4");
    assert!(
        second.starts_with("GET /hi\n[bg1 running; 18 bytes"),
        "{second}"
    );
    let killed = answer(&reqs[5].body, "c5");
    assert!(
        killed.starts_with("(no new output)\n[bg1 killed;"),
        "{killed}"
    );
    // Told by kill_shell: no end note follows.
    assert!(
        !messages(&reqs[5].body).iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("[background shell"))),
        "{}",
        run.dump()
    );
}

#[test]
fn the_end_note_is_appended_before_the_next_request_and_the_prefix_keeps_hitting() {
    let server = FakeServer::start_cached(vec![
        Reply::tool_calls(vec![background(
            "c1",
            "echo $$ > bg.pid; echo compiling; echo built; exit 4",
        )]),
        // Waits until the background shell is gone (and a moment for hx to see it end).
        Reply::tool_calls(vec![bash(
            "c2",
            "while [ ! -s bg.pid ] || [ -e /proc/$(cat bg.pid) ]; do sleep 0.02; done; sleep 2",
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "build in the background"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", run.dump());
    let last = messages(&reqs[2].body);
    let note = last.last().expect("a message");
    assert_eq!(note["role"], "user", "{}", run.dump());
    assert_eq!(
        note["content"],
        "[background shell bg1 ended: exit code 4] echo $$ > bg.pid; echo compiling; echo \
         built; exit 4\nlast lines:\ncompiling\nbuilt"
    );
    // Right after the answer to the call that ran meanwhile: appended, nothing else moved.
    assert_eq!(last[last.len() - 2]["tool_call_id"], "c2");
    for i in 1..reqs.len() {
        let before = &reqs[i - 1].raw_body;
        let end = before.find(r#"],"stream":"#).expect("messages");
        assert!(reqs[i].raw_body.starts_with(&before[..end]), "request {i}");
    }
    let p = server.cache().priced();
    assert!(p[2].hit > p[1].prompt, "{:?} after {:?}", p[2], p[1]);
    assert!(p[2].prompt - p[2].hit <= 60, "{:?}", p[2]);
}

#[test]
fn a_subagent_s_shell_is_the_parent_s_to_read() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "t1",
            "task",
            json!({"description": "start it", "prompt": "start the watcher"}),
        )]),
        // The subagent starts a shell and answers.
        Reply::tool_calls(vec![background("s1", "echo from the subagent; sleep 300")]),
        Reply::text("started bg1"),
        Reply::tool_calls(vec![call(
            "c2",
            "bash_output",
            json!({"shell_id": "bg1", "wait": 30}),
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "have a subagent start a watcher"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{}", run.dump());
    let read = answer(&reqs[4].body, "c2");
    assert!(
        read.starts_with("from the subagent\n[bg1 running;"),
        "{read}\n{}",
        run.dump()
    );
}

/// A background shell whose command writes its pid to `bg.pid` and sleeps, and a call that
/// waits until the pid is written.
fn sleeper() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![background("c1", "echo $$ > bg.pid; exec sleep 300")]),
        Reply::tool_calls(vec![bash(
            "c2",
            "while [ ! -s bg.pid ]; do sleep 0.01; done",
        )]),
    ]
}

fn sleeper_pid(dir: &Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("bg.pid")).expect("bg.pid");
    host_pid(text.trim().parse().expect("a pid"), dir)
}

/// Polls up to 10 s for `pid` to stop running; kills it and panics when it does not.
fn assert_ends(pid: i32, context: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if running(pid) {
        // SAFETY: ending a process this test started through hx.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("background shell {pid} still running after hx exited\n{context}");
    }
}

#[test]
fn a_background_shell_ends_when_hx_answers_or_fails() {
    for (case, last, code) in [
        ("answer", Reply::text("done"), 0),
        (
            "api error",
            Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
            1,
        ),
    ] {
        let mut replies = sleeper();
        replies.push(last);
        let server = FakeServer::start(replies);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "start a sleeper"]);
        let run = hx.run();
        let pid = sleeper_pid(hx.workspace());
        assert_ends(pid, &format!("{case}\n{}", run.dump()));
        run.assert_code(code);
    }
}

#[test]
fn a_background_shell_ends_on_every_signal() {
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let mut replies = sleeper();
        replies.push(Reply::hang());
        let server = FakeServer::start(replies);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "start a sleeper"]);
        let mut child = hx.spawn();
        if !server.wait_for_requests(3, Duration::from_secs(20)) {
            let _ = child.kill();
            panic!("hx never made its third request");
        }
        let pid = sleeper_pid(hx.workspace());
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let run = Run::wait(child, Duration::from_secs(20));
        assert_ends(pid, &format!("signal {sig}\n{}", run.dump()));
        run.assert_code(code);
    }
}

#[test]
fn keep_background_keeps_a_background_shell_past_hx() {
    let mut replies = sleeper();
    replies.push(Reply::text("done"));
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "[tools]\nkeep_background = true\n");
    hx.args(["agent", "start a sleeper"]);
    let run = hx.run();
    run.assert_success();
    let pid = sleeper_pid(hx.workspace());
    let alive = running(pid);
    // SAFETY: ending the process this test started through hx.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(
        alive,
        "the background shell did not outlive hx\n{}",
        run.dump()
    );
}

#[test]
fn chat_lists_a_running_shell_stops_it_and_the_model_hears_of_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![background(
            "c1",
            "echo $$ > bg.pid; echo watching; exec sleep 300",
        )]),
        Reply::tool_calls(vec![bash(
            "c2",
            "while [ ! -s bg.pid ]; do sleep 0.01; done",
        )]),
        Reply::text("Started."),
        Reply::text("It was stopped."),
    ]);
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    let shown = chat.say("start a watcher");
    assert!(shown.contains("Started."), "{shown}");
    // The status line after the turn counts it.
    assert!(shown.contains("1 shell running"), "{shown}");
    let pid = sleeper_pid(hx.workspace());
    let listed = chat.say("/shells");
    assert!(
        listed.contains(
            "bg1 running: echo $$ > bg.pid; echo watching; exec sleep 300 (9 bytes of output)"
        ),
        "{listed}"
    );
    let killed = chat.say("/shells kill bg1");
    assert!(killed.contains("hx: bg1 killed"), "{killed}");
    assert_ends(pid, &chat.seen);
    assert!(chat.say("what happened?").contains("It was stopped."));
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let msgs = messages(&reqs[3].body);
    let n = msgs.len();
    // The user's message, then the note of the shell that ended since: both appended.
    assert_eq!(
        msgs[n - 2],
        json!({"role": "user", "content": "what happened?"})
    );
    assert_eq!(
        msgs[n - 1]["content"],
        "[background shell bg1 ended: killed by signal 9 (SIGKILL)] echo $$ > bg.pid; echo \
         watching; exec sleep 300\nlast lines:\nwatching"
    );
    assert_eq!(msgs[n - 3]["content"], "Started.");
    assert_eq!(&msgs[..n - 3], &messages(&reqs[2].body)[..]);
}

#[test]
fn json_tells_the_start_a_read_and_the_end_as_items() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![background(
            "c1",
            "echo $$ > bg.pid; echo hi; while [ ! -e go ]; do sleep 0.02; done; exit 2",
        )]),
        Reply::tool_calls(vec![call(
            "c2",
            "bash_output",
            json!({"shell_id": "bg1", "wait": 30, "pattern": "hi"}),
        )]),
        Reply::tool_calls(vec![bash(
            "c3",
            "touch go; while [ -e /proc/$(cat bg.pid) ]; do sleep 0.02; done; sleep 2",
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "run it"]);
    let run = hx.run();
    run.assert_success();
    let items: Vec<Value> = json_lines(&run.stdout)
        .into_iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| e["item"].clone())
        .filter(|i| {
            !["reasoning", "agent_message", "file_change"]
                .contains(&i["type"].as_str().unwrap_or(""))
        })
        .collect();
    let kinds: Vec<&str> = items
        .iter()
        .map(|i| i["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        kinds,
        [
            "command_execution",
            "tool_call",
            "command_execution",
            "note"
        ],
        "{}",
        run.stdout
    );
    assert_eq!(
        (
            &items[0]["status"],
            &items[0]["exit_code"],
            &items[0]["shell_id"]
        ),
        (&json!("completed"), &Value::Null, &json!("bg1"))
    );
    assert!(
        items[1]["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("hi\n[bg1 running; ")),
        "{}",
        items[1]
    );
    // The read returned on the line, before the exit: the note tells the end.
    assert_eq!(
        items[3]["text"],
        "[background shell bg1 ended: exit code 2] echo $$ > bg.pid; echo hi; while [ ! -e go \
         ]; do sleep 0.02; done; exit 2\nlast lines:\nhi"
    );
    // The last request ends with the same note.
    let reqs = server.requests();
    let last = messages(&reqs[3].body);
    assert_eq!(last.last().expect("a message")["content"], items[3]["text"]);
}
