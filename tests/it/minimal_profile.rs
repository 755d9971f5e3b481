//! The minimal tool profile end to end (`--tools minimal`, `[tools] profile = "minimal"`): the
//! two tools the first request offers, a bash whose state carries over between calls, each
//! command of str_replace_editor, the sandbox around the shell, and the shell gone when hx
//! exits. Each asserts on what hx sends in the next request, and on the disk.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::calls::call;
use crate::support::procs::{host_pid, running, GONE};
use crate::support::{outside_tmp, tool_results, Call, FakeServer, Hx, Reply, Run};

fn bash(id: &str, command: &str) -> Call {
    call(id, "bash", json!({ "command": command }))
}

fn editor(id: &str, args: Value) -> Call {
    call(id, "str_replace_editor", args)
}

/// The content of the tool message answering `id` in a request.
fn answer(body: &Value, id: &str) -> String {
    body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {id}"))
        .to_string()
}

/// Each tool offered: its name and its argument names, sorted.
fn offered(body: &Value) -> Vec<(String, Vec<String>)> {
    body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| {
            let f = &t["function"];
            let mut args: Vec<String> = f["parameters"]["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .cloned()
                .collect();
            args.sort();
            (f["name"].as_str().expect("name").to_string(), args)
        })
        .collect()
}

/// One turn of `calls` under the minimal profile, then an answer: the results in call order.
fn minimal_turn(hx: &mut Hx, calls: Vec<Call>) -> (Vec<String>, Run) {
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "--tools", "minimal", "do it"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    (tool_results(&reqs[1].body), run)
}

#[test]
fn the_first_request_offers_exactly_bash_and_str_replace_editor_by_flag_or_config() {
    let expected = vec![
        ("bash".to_string(), vec!["command".into(), "restart".into()]),
        (
            "str_replace_editor".to_string(),
            [
                "command",
                "file_text",
                "insert_line",
                "new_str",
                "old_str",
                "path",
                "view_range",
            ]
            .map(String::from)
            .to_vec(),
        ),
    ];
    for by_config in [false, true] {
        let server = FakeServer::start(vec![Reply::text("done")]);
        let mut hx = Hx::new(&server);
        // A skill, which the default profile would list in the system prompt.
        hx.write_file(
            ".claude/skills/probe/SKILL.md",
            "---\nname: probe\ndescription: a probe skill\n---\nbody\n",
        );
        if by_config {
            hx.write_user_config("config.toml", "[tools]\nprofile = \"minimal\"\n");
            hx.args(["agent", "hi"]);
        } else {
            hx.args(["agent", "--tools", "minimal", "hi"]);
        }
        let run = hx.run();
        run.assert_success();
        let reqs = server.requests();
        assert_eq!(offered(&reqs[0].body), expected, "{}", run.dump());
        let system = reqs[0].body["messages"][0]["content"]
            .as_str()
            .expect("system prompt");
        for absent in [
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "todo_write",
            "load_skill",
            "subagent",
            "probe",
            "bash_output",
        ] {
            assert!(!system.contains(absent), "{absent} in:\n{system}");
        }
        assert!(system.contains("str_replace_editor"), "{system}");
    }
}

#[test]
fn the_shell_keeps_its_folder_variables_and_functions_between_calls() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash(
            "c1",
            "mkdir -p sub && cd sub && export HX_X=41 && f() { echo \"fn $1\"; }",
        )]),
        Reply::tool_calls(vec![bash(
            "c2",
            "basename \"$PWD\"; echo $((HX_X + 1)); f ok",
        )]),
        Reply::tool_calls(vec![bash("c3", "echo partial; false")]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--tools", "minimal", "do it"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.dump());
    assert_eq!(answer(&reqs[1].body, "c1"), "(no output)");
    assert_eq!(answer(&reqs[2].body, "c2"), "sub\n42\nfn ok\n");
    assert_eq!(answer(&reqs[3].body, "c3"), "partial\n[exit code: 1]");
}

#[test]
fn every_editor_command_answers_as_the_reference_does() {
    let mut hx = Hx::new_offline();
    hx.write_file("a.txt", "one\ntwo\nthree\n");
    hx.write_file("m.txt", "x\nx\n");
    hx.write_file("sub/b.txt", "b\n");
    hx.write_file("sub/deeper/c.txt", "c\n");
    hx.write_file(".hidden/h.txt", "h\n");
    let ws = hx.workspace().canonicalize().expect("workspace");
    let p = |rel: &str| ws.join(rel).display().to_string();
    let a = p("a.txt");
    let calls = vec![
        editor("v1", json!({"command": "view", "path": a})),
        editor(
            "v2",
            json!({"command": "view", "path": a, "view_range": [2, -1]}),
        ),
        editor(
            "v3",
            json!({"command": "view", "path": ws.display().to_string()}),
        ),
        editor(
            "c1",
            json!({"command": "create", "path": p("new/n.txt"), "file_text": "n\n"}),
        ),
        editor(
            "c2",
            json!({"command": "create", "path": a, "file_text": "no"}),
        ),
        editor(
            "s1",
            json!({"command": "str_replace", "path": a, "old_str": "two", "new_str": "TWO"}),
        ),
        editor(
            "s2",
            json!({"command": "str_replace", "path": a, "old_str": "four", "new_str": "4"}),
        ),
        editor(
            "s3",
            json!({"command": "str_replace", "path": p("m.txt"), "old_str": "x", "new_str": "y"}),
        ),
        editor(
            "i1",
            json!({"command": "insert", "path": a, "insert_line": 0, "new_str": "zero"}),
        ),
        editor("u1", json!({"command": "undo_edit", "path": a})),
        editor(
            "o1",
            json!({"command": "create", "path": p("../outside.txt"), "file_text": "x"}),
        ),
        editor("o2", json!({"command": "view", "path": "a.txt"})),
    ];
    let (out, run) = minimal_turn(&mut hx, calls);
    let numbered = |lines: &[(usize, &str)]| -> String {
        lines.iter().map(|(n, l)| format!("{n:6}\t{l}\n")).collect()
    };
    assert_eq!(
        out[0],
        format!(
            "Here's the result of running `cat -n` on {a}:\n{}",
            numbered(&[(1, "one"), (2, "two"), (3, "three")])
        ),
        "{}",
        run.dump()
    );
    assert_eq!(
        out[1],
        format!(
            "Here's the result of running `cat -n` on {a}:\n{}",
            numbered(&[(2, "two"), (3, "three")])
        )
    );
    let listed: Vec<&str> = out[2].lines().skip(1).collect();
    let root = ws.display().to_string();
    assert_eq!(
        listed,
        [
            root.clone(),
            p("a.txt"),
            p("m.txt"),
            p("sub"),
            p("sub/b.txt"),
            p("sub/deeper"),
        ],
        "{}",
        out[2]
    );
    assert_eq!(
        out[3],
        format!("File created successfully at: {}", p("new/n.txt"))
    );
    assert!(
        out[4].starts_with("Error: ") && out[4].contains("already exists"),
        "{}",
        out[4]
    );
    assert_eq!(
        out[5],
        format!(
            "The file {a} has been edited. Here's the result of running `cat -n` on a snippet \
             of {a}:\n{}\nReview the changes and make sure they are as expected. Edit the file \
             again if necessary.",
            numbered(&[(1, "one"), (2, "TWO"), (3, "three")])
        )
    );
    assert!(
        out[6].starts_with("Error: No replacement was performed: old_str four did not appear"),
        "{}",
        out[6]
    );
    assert!(out[7].contains("old_str occurs 2 times"), "{}", out[7]);
    assert!(out[7].contains("lines 1, 2"), "{}", out[7]);
    assert!(
        out[8].contains(&numbered(&[(1, "zero"), (2, "one")])),
        "{}",
        out[8]
    );
    assert!(
        out[9].starts_with(&format!("Last edit to {a} undone successfully.")),
        "{}",
        out[9]
    );
    assert!(
        out[10].starts_with("Error: path escapes workspace"),
        "{}",
        out[10]
    );
    assert!(
        out[11].starts_with("Error: the path a.txt is not absolute"),
        "{}",
        out[11]
    );
    // The disk: the replacement kept, the insertion undone, the refused files untouched.
    assert_eq!(hx.read_file("a.txt"), "one\nTWO\nthree\n");
    assert_eq!(hx.read_file("m.txt"), "x\nx\n");
    assert_eq!(hx.read_file("new/n.txt"), "n\n");
    assert!(!ws.parent().expect("root").join("outside.txt").exists());
}

#[test]
fn the_shell_runs_in_the_sandbox_like_the_default_bash() {
    const NOTE: &str = "[sandbox] hx's sandbox refused the write to ";
    let mut hx = Hx::new_offline_in(&outside_tmp());
    let ws = hx.workspace().to_path_buf();
    let top = ws.parent().expect("test root").to_path_buf();
    let (out, run) = minimal_turn(
        &mut hx,
        vec![
            bash("c1", "touch ../outside"),
            bash("c2", "echo in > inside.txt && cat inside.txt"),
        ],
    );
    assert!(
        (out[0].contains("Permission denied") || out[0].contains("Read-only file system"))
            && out[0].ends_with("[exit code: 1]"),
        "{}\n{}",
        out[0],
        run.dump()
    );
    assert!(
        out[0].contains(&format!("{NOTE}{}:", top.join("outside").display())),
        "{}",
        out[0]
    );
    assert_eq!(out[1], "in\n");
    assert!(!top.join("outside").exists());
}

/// Polls up to 10 s for `pid` to stop running; kills it and panics when it does not.
fn assert_ends(pid: i32, context: &str) {
    assert_ne!(pid, GONE, "the shell was not found running\n{context}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    if running(pid) {
        // SAFETY: ending a process this test started through hx.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("the persistent shell {pid} still runs after hx exited\n{context}");
    }
}

/// The shell's pid as this process sees it, from what `echo $$ > shell.pid` wrote.
fn shell_pid(dir: &Path) -> i32 {
    let text = std::fs::read_to_string(dir.join("shell.pid")).expect("shell.pid");
    host_pid(text.trim().parse().expect("a pid"), dir)
}

#[test]
fn the_shell_ends_on_every_signal() {
    for (sig, code) in [
        (libc::SIGINT, 130),
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
    ] {
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![bash("c1", "echo $$ > shell.pid")]),
            Reply::hang(),
        ]);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "--tools", "minimal", "start the shell"]);
        let mut child = hx.spawn();
        if !server.wait_for_requests(2, Duration::from_secs(20)) {
            let _ = child.kill();
            panic!("hx never made its second request");
        }
        let pid = shell_pid(hx.workspace());
        // SAFETY: sending a signal to our own child process.
        unsafe { libc::kill(child.id() as i32, sig) };
        let run = Run::wait(child, Duration::from_secs(20));
        assert_ends(pid, &format!("signal {sig}\n{}", run.dump()));
        run.assert_code(code);
    }
}

/// With the sandbox off `$$` is the shell's own pid, read after hx is gone, whether hx
/// answered or failed.
#[test]
fn the_shell_ends_when_hx_answers_or_fails() {
    for (case, last, code) in [
        ("answer", Reply::text("done"), 0),
        (
            "api error",
            Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
            1,
        ),
    ] {
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![bash("c1", "echo $$ > shell.pid")]),
            Reply::tool_calls(vec![bash("c2", "echo still here")]),
            last,
        ]);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "--tools", "minimal", "--sandbox", "off", "go"]);
        let run = hx.run();
        run.assert_code(code);
        let reqs = server.requests();
        assert_eq!(
            answer(&reqs[2].body, "c2"),
            "still here\n",
            "{}",
            run.dump()
        );
        let text = std::fs::read_to_string(hx.workspace().join("shell.pid")).expect("shell.pid");
        let pid: i32 = text.trim().parse().expect("a pid");
        assert_ends(pid, &format!("{case}\n{}", run.dump()));
    }
}

/// `keep_background` keeps background shells past hx, not this one: a command still running
/// in it when hx is stopped ends with it (its stdin closing would not end it).
#[test]
fn a_command_running_in_the_shell_ends_with_hx_even_with_keep_background() {
    let server = FakeServer::start(vec![Reply::tool_calls(vec![bash(
        "c1",
        "echo $$ > shell.pid.tmp && mv shell.pid.tmp shell.pid && sleep 300",
    )])]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "[tools]\nkeep_background = true\n");
    hx.args(["agent", "--tools", "minimal", "go"]);
    let mut child = hx.spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !hx.workspace().join("shell.pid").exists() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the command never wrote shell.pid");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = shell_pid(hx.workspace());
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let run = Run::wait(child, Duration::from_secs(20));
    assert_ends(pid, &run.dump());
    run.assert_code(143);
}

/// The guard reads the persistent shell's commands as it reads the default bash's.
#[test]
fn the_guard_refuses_in_the_persistent_shell_too() {
    let mut hx = Hx::new_offline();
    let (out, run) = minimal_turn(
        &mut hx,
        vec![bash("c1", "sudo touch refused.txt"), bash("c2", "echo ok")],
    );
    assert_eq!(
        out[0],
        "Error: blocked by guard: privilege escalation (sudo)",
        "{}",
        run.dump()
    );
    assert_eq!(out[1], "ok\n");
    assert!(!hx.workspace().join("refused.txt").exists());
}
