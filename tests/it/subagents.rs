//! End-to-end tests of the `task` subagent and `todo_write`, request by request.

use std::time::Duration;

use crate::support::{
    messages, tool_messages, tool_names, tool_results, Call, FakeServer, Hx, Reply, BUILT_IN_TOOLS,
};
use serde_json::{json, Value};

fn task_call(id: &str, prompt: &str) -> Call {
    Call::new(
        id,
        "task",
        &json!({"description": "look around", "prompt": prompt}).to_string(),
    )
}

#[test]
fn subagent_gets_a_fresh_context_and_only_its_answer_comes_back() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("t1", "List the text files.")]),
        Reply::tool_calls(vec![Call::new("g1", "glob", r#"{"pattern":"*.txt"}"#)]),
        Reply::text("There is one file: a.txt."),
        Reply::text("The child found a.txt."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("a.txt", "x")
        .write_file(
            ".agents/skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: Ship it\n---\nSteps.\n",
        )
        .args(["agent", "-v", "what files are there?"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "The child found a.txt.\n");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let child = &reqs[1].body;
    assert_eq!(tool_names(child), BUILT_IN_TOOLS[..7]);
    let cm = messages(child);
    assert_eq!(cm.len(), 2);
    assert_eq!(
        cm[1],
        json!({"role": "user", "content": "List the text files."})
    );
    assert_ne!(cm[0], reqs[0].body["messages"][0], "own system prompt");
    let parent_system = reqs[0].body["messages"][0]["content"]
        .as_str()
        .expect("system");
    assert!(
        parent_system.contains("- deploy: Ship it"),
        "{parent_system}"
    );
    let child_system = cm[0]["content"].as_str().expect("system");
    for absent in ["load_skill", "deploy", "skills", "Ship it"] {
        assert!(
            !child_system.contains(absent),
            "{absent:?} in {child_system}"
        );
    }
    // The child's second request continues the child's own conversation.
    assert_eq!(messages(&reqs[2].body)[3]["content"], "a.txt");

    let parent = messages(&reqs[3].body);
    assert_eq!(parent.len(), 4, "no child messages leak into the parent");
    assert_eq!(
        parent[3],
        json!({"role": "tool", "tool_call_id": "t1", "content": "There is one file: a.txt."})
    );
    assert!(
        !reqs[3].raw_body.contains("g1"),
        "the child's calls never enter the parent's messages"
    );

    for line in [
        "> task description=look around prompt=List the text files.\n",
        "  [task 1] > glob pattern=*.txt\n",
        "  [task 1] [HOOK] PreToolUse glob({\"pattern\":\"*.txt\"})\n",
        "  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=1, blocked=0",
        "[HOOK] Stop: turns=2, tool_calls=1, blocked=0",
    ] {
        assert!(
            run.stderr.contains(line),
            "missing {line:?} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn two_tasks_in_one_turn_run_concurrently_and_answer_in_call_order() {
    let slow = |text: &str| Reply::text(text).delay(Duration::from_millis(700));
    let server = FakeServer::start(vec![
        // A plain call between them: the two tasks still run at the same time.
        Reply::tool_calls(vec![
            task_call("first", "Job A"),
            Call::new("between", "glob", r#"{"pattern":"*"}"#),
            task_call("second", "Job B"),
        ]),
        slow("report one"),
        slow("report two"),
        Reply::text("both done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "do two jobs"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let (a, b) = (&reqs[1], &reqs[2]);
    // Overlap: the second child asked before the first got its (delayed) answer.
    let a_done = a.finished.expect("first child finished");
    assert!(b.arrived < a_done, "children ran one after the other");
    // Replies are served in arrival order; map each back to the job that asked.
    let answer_for = |job: &str| {
        if messages(&a.body)[1]["content"] == job {
            "report one"
        } else {
            "report two"
        }
    };
    let tools = tool_messages(&reqs[3].body);
    assert_eq!(tools[0]["tool_call_id"], "first");
    assert_eq!(tools[0]["content"], answer_for("Job A"));
    assert_eq!(tools[1]["tool_call_id"], "between");
    assert_eq!(tools[1]["content"], "(no matches)");
    assert_eq!(tools[2]["tool_call_id"], "second");
    assert_eq!(tools[2]["content"], answer_for("Job B"));
}

#[test]
fn subagent_turn_limit_failure_and_guard() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("t1", "Loop forever.")]),
        Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"sudo id"}"#)])
            .with_content("Trying sudo."),
        Reply::tool_calls(vec![Call::new("c2", "glob", r#"{"pattern":"*"}"#)])
            .with_content("Still going."),
        Reply::tool_calls(vec![task_call("t2", "Fail.")]),
        Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
        Reply::text("parent carries on"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "subagent_max_turns = 2\n")
        .args(["agent", "-v", "x"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "parent carries on\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    assert_eq!(
        messages(&reqs[2].body)[3]["content"],
        "Error: blocked by guard: privilege escalation (sudo)"
    );
    assert_eq!(
        messages(&reqs[3].body)[3]["content"],
        "The subagent stopped after 2 turns without a final answer.\nIts last message:\nStill going."
    );
    assert_eq!(
        messages(&reqs[5].body)[5]["content"],
        format!(
            "Error: subagent failed: API error 401: Unauthorized: bad key (the key in \
             DEEPSEEK_API_KEY was refused by provider deepseek at {})",
            server.url()
        )
    );
    assert!(run
        .stderr
        .contains("  [task 1] [HOOK] PreToolUse blocked bash({\"command\":\"sudo id\"}) (guard): privilege escalation (sudo)\n"),
        "{}", run.stderr);
    assert!(run
        .stderr
        .contains("  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=2, blocked=1"));
    assert!(run
        .stderr
        .contains("[HOOK] Stop: turns=3, tool_calls=2, blocked=0"));
}

#[test]
fn todo_write_validates_renders_and_reminds_after_the_tool_messages() {
    let todos = json!({"todos": [
        {"content": "Read", "status": "completed"},
        {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Test", "status": "pending"}
    ]})
    .to_string();
    // Another pattern each time: the same call three times in a row would be pointed out.
    let glob = |id: &str| {
        let pattern = json!({ "pattern": format!("{id}*") }).to_string();
        Reply::tool_calls(vec![Call::new(id, "glob", &pattern)])
    };
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new(
                "bad",
                "todo_write",
                r#"{"todos":[{"content":"A","status":"done"}]}"#,
            ),
            Call::new("good", "todo_write", &todos),
        ]),
        glob("g1"),
        glob("g2"),
        glob("g3"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "plan"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    let m1 = messages(&reqs[1].body);
    assert_eq!(
        m1[3]["content"],
        "Error: todo 1 has unknown status 'done' (use pending, in_progress or completed)"
    );
    assert_eq!(
        m1[4]["content"],
        "[x] Read\n[>] Fix\n[ ] Test\n(1/3 completed)"
    );
    assert!(run
        .stderr
        .contains("[x] Read\n[>] Fixing\n[ ] Test\n(1/3 completed)\n"));
    // Turns 2 and 3 add no reminder; turn 4 (the third without an update) does, after its
    // tool message.
    for r in &reqs[1..4] {
        assert!(!r.raw_body.contains("<reminder>"));
    }
    let m4 = messages(&reqs[4].body);
    let n = m4.len();
    assert_eq!(m4[n - 2]["role"], "tool");
    assert_eq!(m4[n - 2]["tool_call_id"], "g3");
    assert_eq!(
        m4[n - 1],
        json!({"role": "user", "content": "<reminder>Update your todos.</reminder>"})
    );
}

#[test]
fn ctrl_c_stops_a_running_subagent_and_its_command() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("t1", "Wait a long time.")]),
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            r#"{"command":"echo $$ > child.pid; sleep 30"}"#,
        )]),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "delegate"]);
    let child = hx.spawn();
    let pid_file = hx.workspace().join("child.pid");
    let shell = crate::support::procs::pid_in(&pid_file, Duration::from_secs(20))
        .expect("the command never started");
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = crate::support::Run::wait(child, Duration::from_secs(20));
    run.assert_code(130);
    assert!(
        crate::support::ends_within(shell, Duration::from_secs(10)),
        "the subagent's shell {shell} outlived hx"
    );
}

#[test]
fn an_empty_subagent_answer_is_no_summary() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("t1", "Say nothing.")]),
        Reply::text(""),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    assert_eq!(
        messages(&server.requests()[2].body)[3]["content"],
        "(no summary)"
    );
}

#[test]
fn todo_refusals_end_to_end() {
    let many: Vec<Value> = (0..21)
        .map(|i| json!({"content": format!("t{i}"), "status": "pending"}))
        .collect();
    let call = |id: &str, args: Value| Call::new(id, "todo_write", &args.to_string());
    let as_string = json!([{"content": "From a string", "status": "in_progress"}]).to_string();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            call("many", json!({ "todos": many })),
            call(
                "two",
                json!({"todos": [
                {"content": "a", "status": "in_progress"},
                {"content": "b", "status": "in_progress"}]}),
            ),
            call(
                "empty",
                json!({"todos": [{"content": " ", "status": "pending"}]}),
            ),
            call("string", json!({ "todos": as_string })),
        ]),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "plan"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let contents = tool_results(&reqs[1].body);
    assert_eq!(
        contents,
        [
            "Error: too many todos (21); keep the list to at most 20 items",
            "Error: 2 todos are in_progress; only one may be in progress at a time",
            "Error: todo 1 has empty content",
            "[>] From a string\n(0/1 completed)",
        ]
    );
}
