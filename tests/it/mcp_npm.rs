//! hx against the MCP reference servers from npm (`@modelcontextprotocol/server-filesystem`
//! over stdio, `@modelcontextprotocol/server-everything` over streamable HTTP), installed by
//! `npm ci --prefix tests/npm`, which the README's test command and `.ci/run` run first.
//! Without them these tests fail, naming that step: they never pass by skipping.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::mcp::toml_str;
use crate::support::{tool_answer, tool_names, Call, FakeServer, Hx, Reply};

/// The entry point of an installed reference server.
fn npm_server(package: &str) -> PathBuf {
    let modules = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/npm/node_modules");
    // Where the server, run in the sandbox's pod, can see it (see `support::visible`).
    let modules = match modules.is_dir() {
        true => crate::support::visible::outside_pods_tmp(&modules),
        false => modules,
    };
    let path = modules
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "the MCP reference servers are not installed ({} is missing): run \
         `npm ci --prefix tests/npm` first, as the README's test command does",
        path.display()
    );
    path
}

#[test]
fn the_filesystem_server_reads_a_file_over_stdio() {
    let server_js = npm_server("server-filesystem");
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "mcp__fs__read_text_file",
            r#"{"path": "notes.txt"}"#,
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    // The server runs in the workspace (the default cwd), which is the folder it may read.
    let config = format!(
        "[mcp_servers.fs]\ncommand = \"node\"\nargs = [{}, \".\"]\n",
        toml_str(&server_js.display().to_string())
    );
    hx.write_file("notes.txt", "hello from the filesystem server\n")
        .write_user_config("config.toml", &config)
        .args(["agent", "read my notes"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    let names = tool_names(&reqs[0].body);
    assert!(
        names.contains(&"mcp__fs__read_text_file".to_string()),
        "{names:?}"
    );
    for t in reqs[0].body["tools"].as_array().expect("tools") {
        assert_eq!(t["function"]["parameters"]["type"], "object", "{t}");
    }
    assert_eq!(
        tool_answer(&reqs[1].body, "c1"),
        "hello from the filesystem server\n"
    );
}

/// A process of the test's own, killed with its group when dropped.
struct Owned(Child);

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: the group this test started.
        unsafe { libc::killpg(self.0.id() as i32, libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// Starts server-everything's streamable-HTTP transport on a free loopback port; returns it
/// once it says it listens.
fn everything_over_http() -> (Owned, u16) {
    let server_js = npm_server("server-everything");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut child = Command::new("node")
        .arg(&server_js)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start node");
    let stderr = child.stderr.take().expect("stderr");
    let owned = Owned(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening on port") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(30))
        .expect("server-everything did not start listening");
    (owned, port)
}

#[test]
fn the_everything_server_answers_over_streamable_http() {
    let (_node, port) = everything_over_http();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new("c1", "mcp__every__echo", r#"{"message": "hi"}"#),
            Call::new("c2", "mcp__every__get-sum", r#"{"a": 2, "b": 40}"#),
            Call::new("c3", "mcp__every__get-tiny-image", "{}"),
        ]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let config = format!(
        "[mcp_servers.every]\nurl = \"http://127.0.0.1:{port}/mcp\"\nhttp_headers = {{ X-Test = \"1\" }}\n"
    );
    hx.write_user_config("config.toml", &config)
        .args(["agent", "try the server"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    let next = &reqs[1].body;
    assert_eq!(tool_answer(next, "c1"), "Echo: hi");
    assert!(
        tool_answer(next, "c2").contains("42"),
        "{}",
        tool_answer(next, "c2")
    );
    let image = tool_answer(next, "c3");
    assert!(image.contains("[image: image/png, "), "{image}");
}
