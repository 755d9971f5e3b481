//! What small models do that hx must not make worse: the same call over and over (`[loop]`),
//! and tool calls written as text in the answer. Each against the fake server in the shapes
//! of llama.cpp's server, vLLM and Ollama, asserting on what the next request holds.

use crate::small_window::Server;
use crate::support::calls::call;
use crate::support::{json_lines, messages, session_lines, Call, FakeServer, Hx, Recorded, Reply};
use serde_json::{json, Value};

const NOTICE: &str = "[hx: the same call again] ";
const CORRECTION: &str = "[hx: a tool call written as text] ";

/// The same `glob` each time; a new id each turn, as a model gives.
fn same_glob(n: usize) -> Call {
    call(&format!("g{n}"), "glob", json!({"pattern": "*.txt"}))
}

/// Asserts that each request sends the one before it unchanged, then more (the prompt
/// cache's prefix).
fn each_extends_the_last(reqs: &[Recorded]) {
    for pair in reqs.windows(2) {
        let (a, b) = (messages(&pair[0].body), messages(&pair[1].body));
        assert!(a.len() < b.len());
        assert_eq!(&b[..a.len()], &a[..], "not an extension");
    }
}

/// The content of a request's last message, and its role.
fn last(r: &Recorded) -> (&str, &str) {
    let m = messages(&r.body).last().expect("a message");
    (
        m["role"].as_str().unwrap_or(""),
        m["content"].as_str().unwrap_or(""),
    )
}

#[test]
fn the_same_call_again_is_pointed_out_then_ends_the_run_with_its_own_kind() {
    for s in Server::ALL {
        let mut replies: Vec<Reply> = (1..=5)
            .map(|n| s.shape(Reply::tool_calls(vec![same_glob(n)])))
            .collect();
        replies.push(s.shape(Reply::text("never asked")));
        let server = FakeServer::start(replies);
        let mut hx = s.hx(&server);
        hx.write_file("a.txt", "x");
        hx.args(["agent", "find the text files"]);
        let run = hx.run();
        run.assert_code(3);
        let reqs = server.completions();
        assert_eq!(reqs.len(), 5, "{s:?}: {}", run.stderr);
        each_extends_the_last(&reqs);
        // Two calls are no loop.
        for (i, r) in reqs[..3].iter().enumerate() {
            assert_eq!(last(r).0, if i == 0 { "user" } else { "tool" }, "{s:?}");
        }
        // The third and the fourth are told, after their results.
        for (r, n, left) in [
            (&reqs[3], 3, "2 more such calls"),
            (&reqs[4], 4, "1 more such call "),
        ] {
            let m = messages(&r.body);
            assert_eq!(m[m.len() - 2]["role"], "tool", "{s:?}");
            let (role, text) = last(r);
            assert_eq!(role, "user");
            assert!(
                text.starts_with(&format!(
                    "{NOTICE}You have called glob with the same arguments {n} times in a row"
                )) && text.contains(left),
                "{s:?}: {text}"
            );
        }
        assert!(
            run.stderr.contains(
                "hx: the model called glob 3 times in a row with the same arguments and result; \
                 it is told so ([loop] repeats)"
            ),
            "{s:?}: {}",
            run.stderr
        );
        let stopped = "stopped: the model called glob 5 times in a row with the same arguments \
                       and result, and went on after it was told ([loop] stop_after)";
        assert!(
            run.stderr.contains(&format!("hx: {stopped}")),
            "{s:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("tool_calls=5, blocked=0")
                && run.stderr.contains(", loop_notices=2"),
            "{s:?}: {}",
            run.stderr
        );
        // The session ends with the fifth call's answer: `-c` can go on from it.
        let file = hx.session_files().into_iter().next().expect("a session");
        let lines = session_lines(&file);
        let end = lines.iter().find(|l| l["type"] == "end").expect("end");
        assert_eq!(
            (&end["outcome"], &end["kind"]),
            (&json!("loop"), &json!("loop"))
        );
        let messages: Vec<&Value> = lines.iter().filter(|l| l["type"] == "message").collect();
        assert_eq!(
            messages.last().expect("messages")["message"]["role"],
            "tool",
            "{s:?}"
        );
    }
}

#[test]
fn in_json_a_loop_is_turn_failed_of_kind_loop_with_exit_3() {
    let s = Server::Vllm;
    let replies = (1..=5)
        .map(|n| s.shape(Reply::tool_calls(vec![same_glob(n)])))
        .collect();
    let server = FakeServer::start(replies);
    let mut hx = s.hx(&server);
    hx.args(["agent", "--json", "find the text files"]);
    let run = hx.run();
    run.assert_code(3);
    let events = json_lines(&run.stdout);
    let failed = events.last().expect("events");
    assert_eq!(failed["type"], "turn.failed", "{failed}");
    assert_eq!(failed["error"]["kind"], "loop");
    assert_eq!(failed["error"]["status"], Value::Null);
    assert!(
        failed["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("went on after it was told ([loop] stop_after)")),
        "{failed}"
    );
    // The notices are lines for the user, as warnings are: `error` items.
    let notices = events
        .iter()
        .filter(|e| {
            e["item"]["type"] == "error"
                && e["item"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("the model called glob "))
        })
        .count();
    assert_eq!(notices, 2);
}

#[test]
fn the_loop_settings_turn_the_notice_and_the_end_off() {
    let s = Server::LlamaCpp;
    for (tables, notices, code) in [
        ("[loop]\nrepeats = 0\n", 0, 0),
        ("[loop]\nstop_after = 0\n", 4, 0),
        ("[loop]\nrepeats = 5\nstop_after = 1\n", 1, 3),
    ] {
        let mut replies: Vec<Reply> = (1..=6)
            .map(|n| s.shape(Reply::tool_calls(vec![same_glob(n)])))
            .collect();
        replies.push(s.shape(Reply::text("done")));
        let server = FakeServer::start(replies);
        let mut hx = s.hx_with(&server, tables);
        hx.args(["agent", "find the text files"]);
        let run = hx.run();
        run.assert_code(code);
        let reqs = server.completions();
        assert_eq!(reqs.len(), if code == 0 { 7 } else { 6 }, "{tables}");
        let sent = messages(&reqs[reqs.len() - 1].body)
            .iter()
            .filter(|m| m["content"].as_str().is_some_and(|c| c.starts_with(NOTICE)))
            .count();
        // The last call of a run that ends is told nothing: no request follows it.
        assert_eq!(sent, notices, "{tables}: {}", run.stderr);
    }
    // `hx config` shows where each came from.
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "[loop]\nstop_after = 4\n");
    hx.args(["config"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stdout.contains("loop.repeats = 3")
            && run.stdout.contains("# default")
            && run.stdout.contains("loop.stop_after = 4"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_subagent_that_loops_ends_and_its_parent_is_told_why() {
    let s = Server::Ollama;
    let task = call(
        "t1",
        "task",
        json!({"description": "find files", "prompt": "List the text files."}),
    );
    let mut replies = vec![s.shape(Reply::tool_calls(vec![task]))];
    replies.extend((1..=5).map(|n| s.shape(Reply::tool_calls(vec![same_glob(n)]))));
    replies.push(s.shape(Reply::text("The subagent looped.")));
    let server = FakeServer::start(replies);
    let mut hx = s.hx(&server);
    hx.args(["agent", "what files are there?"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.completions();
    assert_eq!(reqs.len(), 7, "{}", run.stderr);
    let answer = crate::support::tool_answer(&reqs[6].body, "t1");
    assert!(
        answer.starts_with("Error: subagent stopped: the model called glob 5 times in a row"),
        "{answer}"
    );
    assert!(
        run.stderr
            .contains("  [task 1] hx: the model called glob 3 times in a row"),
        "{}",
        run.stderr
    );
}

/// A call of `glob` as small models write it in their answer, in each server's case: Qwen2.5-
/// Coder's bare JSON and fenced JSON, and its template's tags left unparsed.
fn written(s: Server) -> String {
    let call = r#"{"name": "glob", "arguments": {"pattern": "*.txt"}}"#;
    match s {
        Server::LlamaCpp => call.to_string(),
        Server::Ollama => format!("```json\n{call}\n```"),
        Server::Vllm => format!("<tool_call>\n{call}\n</tool_call>"),
    }
}

#[test]
fn a_call_written_as_text_is_not_run_and_the_model_is_told_so_once() {
    for s in Server::ALL {
        let server = FakeServer::start(vec![
            s.shape(Reply::text(&written(s))),
            s.shape(Reply::tool_calls(vec![same_glob(1)])),
            s.shape(Reply::text("There is a.txt.")),
        ]);
        let mut hx = s.hx(&server);
        hx.write_file("a.txt", "x");
        hx.args(["agent", "find the text files"]);
        let run = hx.run();
        run.assert_code(0);
        assert_eq!(run.stdout, "There is a.txt.\n", "{s:?}: {}", run.stderr);
        let reqs = server.completions();
        assert_eq!(reqs.len(), 3, "{s:?}");
        each_extends_the_last(&reqs);
        // The text as the model wrote it, then the correction; nothing ran.
        let m = messages(&reqs[1].body);
        assert_eq!(m.len(), 4, "{s:?}");
        assert_eq!(
            (&m[2]["role"], &m[2]["content"]),
            (&json!("assistant"), &json!(written(s)))
        );
        assert!(m[2].get("tool_calls").is_none(), "{s:?}: {}", m[2]);
        let (role, text) = last(&reqs[1]);
        assert_eq!(role, "user");
        assert!(
            text.starts_with(&format!(
                "{CORRECTION}Your last reply was a call of glob written as text, so nothing ran"
            )),
            "{s:?}: {text}"
        );
        // A server that parses the template's tags takes calls written so: JSON bare or in a
        // fence is told to use the template's format, never told off tags; tags the server
        // left as text are pointed to the tool-calling interface.
        if matches!(s, Server::Vllm) {
            assert!(
                text.contains("The server did not take those tags as a call"),
                "{s:?}: {text}"
            );
        } else {
            assert!(
                text.contains("in exactly the format your instructions give for tool calls")
                    && !text.contains("tags"),
                "{s:?}: {text}"
            );
        }
        assert!(
            run.stderr.contains(
                "hx: the model wrote a call of glob as text instead of calling it: not run; it \
                 is told so (1 of 2)"
            ) && run.stderr.contains("tool_calls=1, blocked=0")
                && run.stderr.contains(", text_calls=1"),
            "{s:?}: {}",
            run.stderr
        );
    }
}

#[test]
fn after_two_corrections_the_text_is_taken_as_the_answer() {
    let s = Server::Ollama;
    let text = written(s);
    let server = FakeServer::start(vec![
        s.shape(Reply::text(&text)),
        s.shape(Reply::text(&text)),
        s.shape(Reply::text(&text)),
        s.shape(Reply::text("never asked")),
    ]);
    let mut hx = s.hx(&server);
    hx.args(["agent", "--json", "find the text files"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(server.completions().len(), 3);
    let events = json_lines(&run.stdout);
    let items: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| &e["item"])
        .collect();
    let notices: Vec<&str> = items
        .iter()
        .filter(|i| i["type"] == "error")
        .filter_map(|i| i["message"].as_str())
        .collect();
    assert_eq!(notices.len(), 3, "{notices:?}");
    assert!(notices[0].ends_with("(1 of 2)") && notices[1].ends_with("(2 of 2)"));
    assert!(
        notices[2].contains("as text again; taken as its answer"),
        "{}",
        notices[2]
    );
    // The last agent message is the answer, as ever.
    let answer = items
        .iter()
        .rev()
        .find(|i| i["type"] == "agent_message")
        .expect("an answer");
    assert_eq!(answer["text"], json!(text));
    assert_eq!(events.last().expect("events")["type"], "turn.completed");
}
