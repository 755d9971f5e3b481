//! A client of `hx acp` for the tests: hx's stdin and stdout as the protocol's pipes, every
//! line hx writes read on a thread (a line that is not JSON is kept as such, for the tests
//! that check nothing else reaches stdout).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::runner::Hx;

/// How long a test waits for one message.
pub const WAIT: Duration = Duration::from_secs(30);

pub struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    /// Everything hx wrote so far, in order.
    pub seen: Vec<Value>,
    /// How many of `seen` the waits have looked at.
    cursor: usize,
    next_id: i64,
    stderr: Arc<Mutex<Vec<u8>>>,
}

/// A stdout line that was not JSON, as the reader keeps it.
pub const NOT_JSON: &str = "not json: ";

impl Acp {
    /// Starts `hx acp` with the prepared command of `hx` (its args must start with `acp`).
    pub fn start(hx: &Hx) -> Acp {
        Acp::start_command(hx.command())
    }

    /// Starts `hx acp` as `cmd` says (another user's hx, say): hx's prepared command, changed.
    pub fn start_command(mut cmd: std::process::Command) -> Acp {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn hx acp");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v = serde_json::from_str(&line)
                    .unwrap_or_else(|_| Value::String(format!("{NOT_JSON}{line}")));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let sink = stderr.clone();
        let mut pipe = child.stderr.take().expect("stderr");
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buf) {
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        Acp {
            stdin: child.stdin.take(),
            child,
            rx,
            seen: Vec::new(),
            cursor: 0,
            next_id: 100,
            stderr,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let pipe = self.stdin.as_mut().expect("stdin open");
        pipe.write_all(bytes).expect("write to hx");
        pipe.flush().expect("flush");
    }

    pub fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.send_raw(line.as_bytes());
    }

    /// Sends a request; its id.
    pub fn request(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers a request of hx's.
    pub fn answer(&mut self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// The next message not looked at yet that `pred` takes; panics after [`WAIT`].
    pub fn wait_for(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + WAIT;
        loop {
            while self.cursor < self.seen.len() {
                let v = &self.seen[self.cursor];
                self.cursor += 1;
                if pred(v) {
                    return v.clone();
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(v) => self.seen.push(v),
                Err(_) => panic!(
                    "no {what} within {WAIT:?}; seen: {:#?}\nstderr: {}",
                    self.seen,
                    self.stderr()
                ),
            }
        }
    }

    /// The response to request `id` (result or error), from wherever it is in the stream.
    pub fn response(&mut self, id: i64) -> Value {
        let found = self.seen.iter().find(|v| is_response(v, id)).cloned();
        if let Some(v) = found {
            return v;
        }
        self.wait_for(&format!("response {id}"), |v| is_response(v, id))
    }

    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params);
        assert!(
            r.get("error").is_none(),
            "{method} failed: {r}\n{}",
            self.stderr()
        );
        r["result"].clone()
    }

    pub fn initialize(&mut self) -> Value {
        self.initialize_with(json!({}))
    }

    /// Initializes as a client with these capabilities.
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        self.result(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities}),
        )
    }

    pub fn new_session(&mut self, cwd: &std::path::Path) -> String {
        let r = self.result("session/new", json!({"cwd": cwd, "mcpServers": []}));
        r["sessionId"].as_str().expect("sessionId").to_string()
    }

    pub fn prompt_text(text: &str) -> Value {
        json!([{"type": "text", "text": text}])
    }

    /// Sends a prompt; the request's id.
    pub fn prompt(&mut self, session: &str, text: &str) -> i64 {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": Self::prompt_text(text)}),
        )
    }

    /// The `update` of every `session/update` of `session` seen so far.
    pub fn updates(&self, session: &str) -> Vec<Value> {
        self.seen
            .iter()
            .filter(|v| v["method"] == "session/update" && v["params"]["sessionId"] == session)
            .map(|v| v["params"]["update"].clone())
            .collect()
    }

    /// Closes stdin and waits for hx to exit: its exit code.
    pub fn finish(mut self) -> (Option<i32>, Vec<Value>, String) {
        drop(self.stdin.take());
        let deadline = Instant::now() + WAIT;
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break Some(s);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        while let Ok(v) = self.rx.recv_timeout(Duration::from_millis(500)) {
            self.seen.push(v);
        }
        let stderr = self.stderr();
        (
            status.and_then(|s| s.code()),
            std::mem::take(&mut self.seen),
            stderr,
        )
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn is_response(v: &Value, id: i64) -> bool {
    v["id"] == id && v.get("method").is_none()
}

/// The `sessionUpdate` kinds of `updates`, in order, consecutive chunks of one kind once.
pub fn kinds(updates: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for u in updates {
        let k = u["sessionUpdate"].as_str().unwrap_or("?").to_string();
        if k.ends_with("_chunk") && out.last() == Some(&k) {
            continue;
        }
        out.push(k);
    }
    out
}

/// The text of the chunks of `kind`, joined.
pub fn chunks(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}
