//! End-to-end tests of the base tools through the loop: each call's tool message, exactly as
//! hx sends it in the next request.

use crate::support::{tool_messages, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};

/// Runs one turn with `calls`, then returns the contents of the tool messages hx sent back,
/// in call order, with the finished run's stderr.
fn one_turn(hx: &mut Hx, calls: Vec<(&str, Value)>) -> (Vec<String>, String) {
    let calls: Vec<Call> = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| Call::new(&format!("c{i}"), name, &args.to_string()))
        .collect();
    let n = calls.len();
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("ok")]);
    // `-v`: every hook step and whole result in the trace.
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "-v", "use the tools"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    let tools: Vec<String> = tool_messages(&reqs[1].body)
        .iter()
        .enumerate()
        .map(|(i, m)| {
            assert_eq!(m["tool_call_id"], format!("c{i}"));
            m["content"].as_str().expect("content").to_string()
        })
        .collect();
    assert_eq!(tools.len(), n);
    (tools, run.stderr)
}

#[test]
fn file_tools_success_and_error_paths() {
    let mut hx = Hx::new_offline();
    hx.write_file("lines.txt", "one\ntwo\nthree\nfour\nfive\n")
        .write_file("crlf.txt", "a\r\nb\r\n")
        .write_file("twice.txt", "x x\n");
    std::fs::create_dir_all(hx.workspace().join("dir")).expect("mkdir");
    let (out, stderr) = one_turn(
        &mut hx,
        vec![
            (
                "write_file",
                json!({"path": "sub/new.txt", "content": "hello"}),
            ),
            ("read_file", json!({"path": "sub/new.txt"})),
            (
                "read_file",
                json!({"path": "lines.txt", "offset": 2, "limit": 2}),
            ),
            ("read_file", json!({"path": "missing.txt"})),
            ("read_file", json!({"path": "dir"})),
            (
                "edit_file",
                json!({"path": "crlf.txt", "old_text": "a\nb", "new_text": "A\nB"}),
            ),
            (
                "edit_file",
                json!({"path": "lines.txt", "old_text": "six", "new_text": "6"}),
            ),
            (
                "edit_file",
                json!({"path": "twice.txt", "old_text": "x", "new_text": "y"}),
            ),
            ("read_file", json!({})),
        ],
    );
    assert_eq!(out[0], "Wrote 5 bytes to sub/new.txt");
    assert_eq!(out[1], "hello");
    assert_eq!(out[2], "two\nthree\n... (2 more lines)");
    assert_eq!(out[3], "Error: file not found: missing.txt");
    assert!(
        out[4].starts_with("Error: dir is a directory"),
        "{}",
        out[4]
    );
    assert!(out[5].starts_with("Edited crlf.txt"), "{}", out[5]);
    assert_eq!(out[6], "Error: text not found in lines.txt");
    assert!(
        out[7].starts_with("Error: old_text occurs 2 times in twice.txt"),
        "{}",
        out[7]
    );
    assert_eq!(out[8], "Error: read_file.path is required");
    assert_eq!(hx.read_file("crlf.txt"), "A\r\nB\r\n");
    assert_eq!(hx.read_file("twice.txt"), "x x\n");
    assert!(stderr.contains("[HOOK] PostToolUse write_file output_chars=28\n"));
}

#[test]
fn paths_that_escape_the_workspace_are_refused() {
    let mut hx = Hx::new_offline();
    let outside = hx.workspace().parent().expect("parent").join("outside.txt");
    std::fs::write(&outside, "secret").expect("write outside");
    std::os::unix::fs::symlink(&outside, hx.workspace().join("link.txt")).expect("symlink");
    std::os::unix::fs::symlink(
        hx.workspace().parent().expect("parent"),
        hx.workspace().join("updir"),
    )
    .expect("symlink dir");
    let (out, _) = one_turn(
        &mut hx,
        vec![
            ("read_file", json!({"path": "../outside.txt"})),
            (
                "read_file",
                json!({"path": outside.to_str().expect("utf8")}),
            ),
            ("read_file", json!({"path": "link.txt"})),
            (
                "write_file",
                json!({"path": "updir/outside.txt", "content": "pwned"}),
            ),
            (
                "edit_file",
                json!({"path": "link.txt", "old_text": "secret", "new_text": "x"}),
            ),
            ("glob", json!({"pattern": "../*"})),
        ],
    );
    let want = [
        "../outside.txt",
        outside.to_str().expect("utf8"),
        "link.txt",
        "updir/outside.txt",
        "link.txt",
        "../*",
    ];
    for (got, path) in out.iter().zip(want) {
        assert_eq!(got, &format!("Error: path escapes workspace: {path}"));
    }
    assert_eq!(std::fs::read_to_string(&outside).expect("read"), "secret");
}

#[test]
fn glob_and_bash() {
    let mut hx = Hx::new_offline();
    hx.write_file(".gitignore", "target/\n")
        .write_file("src/main.rs", "")
        .write_file("src/lib/mod.rs", "")
        .write_file("target/out.rs", "")
        .write_file(".git/config.rs", "");
    let (out, stderr) = one_turn(
        &mut hx,
        vec![
            ("glob", json!({"pattern": "**/*.rs"})),
            ("glob", json!({"pattern": "*.md"})),
            ("bash", json!({"command": "echo out; echo err >&2; exit 3"})),
            ("bash", json!({"command": "true"})),
            ("bash", json!({"command": "sleep 5", "timeout": 1})),
            ("bash", json!({"command": "pwd"})),
        ],
    );
    assert_eq!(out[0], "src/lib/mod.rs\nsrc/main.rs");
    assert_eq!(out[1], "(no matches)");
    assert_eq!(out[2], "out\nerr\n[exit code: 3]");
    assert_eq!(out[3], "(no output)");
    assert!(
        out[4].starts_with("Error: command timed out after 1 s"),
        "{}",
        out[4]
    );
    let cwd = hx.workspace().canonicalize().expect("canonical");
    assert_eq!(out[5], format!("{}\n", cwd.display()));
    assert!(stderr.contains("> bash command=echo out; echo err >&2; exit 3\n"));
}
