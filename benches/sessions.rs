//! Resuming a long session, measured on the real binary against the fake server.
//!
//! `cargo bench --bench sessions` writes a session of 10,000 messages (about 50 MB), then runs
//! `hx agent -r ID "next"` several times (hx reads and checks the file, builds and sends a
//! 50 MB request, records the answer, exits) and prints medians of:
//! - hx's CPU time (user + system) for the whole run: its own time, whatever the fake server
//!   in this process spends reading and parsing the request;
//! - hx's peak RSS, and its ratio to the file's size.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use hx::model::{Message, ToolCall};
use hx::session::{store, Header, Session, Store};
use support::{FakeServer, Hx, Reply};

const MESSAGES: usize = 10_000;
const RUNS: usize = 5;
/// Characters of each tool result: 10,000 messages of which half are results come to ~50 MB.
const RESULT_CHARS: usize = 10_000;

fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[v.len() / 2]
}

/// Writes the session into the store hx will read for `workspace`; returns its id and size.
fn write_session(home: &Path, workspace: &Path) -> (String, u64) {
    let root = home.join(".local/state/hx/sessions");
    let ws = workspace.canonicalize().expect("workspace");
    let store = Store::new(&root, &ws);
    let id = store::new_id();
    let header = Header {
        id: id.clone(),
        workspace: ws.display().to_string(),
        model: support::reply::MODEL.into(),
        provider: "deepseek".into(),
        base_url: "http://127.0.0.1:9".into(),
        hx_version: "bench".into(),
        started_at: store::now_rfc3339(),
        ..Header::default()
    };
    let mut s = Session::new(header, Some(store.create(&id).expect("create")));
    s.push(Message::System("You are hx.".into()));
    s.push(Message::User("start".into()));
    let line = "x".repeat(99) + "\n";
    let result = line.repeat(RESULT_CHARS / 100);
    let mut i = 0;
    while s.messages().len() + 2 <= MESSAGES {
        s.push(Message::Assistant {
            content: String::new(),
            reasoning: Some("thinking about the next step".into()),
            tool_calls: vec![ToolCall {
                id: format!("call_{i}"),
                name: "read_file".into(),
                arguments: format!("{{\"path\":\"file_{i}.txt\"}}"),
            }],
        });
        s.push(Message::Tool {
            tool_call_id: format!("call_{i}"),
            content: result.clone(),
        });
        i += 1;
    }
    s.end(hx::session::EndOutcome::Answered, None, None);
    s.close();
    let size = std::fs::metadata(store.path_of(&id)).expect("size").len();
    (id, size)
}

/// Runs hx to its exit through a fresh copy of this program (see `launcher`); returns hx's
/// CPU time (user + system) and peak RSS in KiB.
fn resume_once(hx: &Hx, server: &FakeServer) -> (Duration, i64) {
    let before = server.requests().len();
    let target = hx.command();
    let mut cmd = std::process::Command::new(std::env::current_exe().expect("this bench"));
    cmd.arg(LAUNCH)
        .arg(target.get_program())
        .args(target.get_args());
    if let Some(dir) = target.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (k, v) in target.get_envs() {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.stderr(Stdio::null()).output().expect("launcher");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut f = text
        .split_whitespace()
        .map(|x| x.parse::<i64>().expect("figure"));
    let (code, cpu_us, rss) = (
        f.next().expect("code"),
        f.next().expect("cpu"),
        f.next().expect("rss"),
    );
    assert_eq!(code, 0, "hx failed");
    let reqs = server.requests();
    assert_eq!(reqs.len(), before + 1);
    assert!(
        reqs[before].body["messages"]
            .as_array()
            .expect("messages")
            .len()
            >= MESSAGES
    );
    assert!(
        reqs[before].raw_body.len() > 50_000_000,
        "the whole history was sent, not a compacted one"
    );
    (Duration::from_micros(cpu_us as u64), rss)
}

const LAUNCH: &str = "--launch-and-measure";

/// The launcher: runs argv[2..] and prints its exit code, CPU time in µs and peak RSS in KiB.
/// Measured from a fresh, small process because a child's peak RSS counts the memory of the
/// process it was forked from until it execs, and the bench itself holds the fake server's
/// copies of every 50 MB request.
#[allow(clippy::zombie_processes)]
fn launcher(args: &[String]) {
    let child = std::process::Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    let us = |t: libc::timeval| t.tv_sec * 1_000_000 + t.tv_usec;
    println!(
        "{} {} {}",
        libc::WEXITSTATUS(status),
        us(usage.ru_utime) + us(usage.ru_stime),
        usage.ru_maxrss
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some(LAUNCH) {
        return launcher(&args[2..]);
    }
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        1
    };
    let server = FakeServer::start((0..runs).map(|_| Reply::text("ok").unpaced()).collect());
    let mut hx = Hx::new(&server);
    let (id, size) = write_session(hx.home(), hx.workspace());
    // A window that holds the whole history: this measures resuming it, not compacting it.
    hx.write_user_config("config.toml", "context_window = 100000000\n");
    hx.args(["agent", "-r", &id, "next"]);
    let mut cpu = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..runs {
        let (t, r) = resume_once(&hx, &server);
        cpu.push(t);
        rss.push(r);
    }
    let rss = median(rss) as f64 * 1024.0;
    println!(
        "sessions/resume {MESSAGES} messages ({:.1} MB file), one request, exit: hx CPU median {:.1} ms; peak RSS median {:.1} MiB = {:.2}x the file ({runs} runs)",
        size as f64 / 1e6,
        median(cpu).as_secs_f64() * 1e3,
        rss / (1024.0 * 1024.0),
        rss / size as f64,
    );
}
