//! Harness overhead and memory, measured on the real binary against the fake server.
//!
//! `cargo bench --bench agent_loop` prints:
//! - hx's own CPU time per turn over a 40-turn tool session (user + system time of the hx
//!   process divided by turns; the fake server runs in this process, so it is not counted),
//!   and the wall time per turn, which also includes the fake server and loopback HTTP;
//! - the peak RSS of a run whose bash call prints 30 MB;
//! - the CPU and wall time of a whole single-turn run (process start to exit);
//! - the wall time a single-turn run adds to a model that answers after 300 ms, with
//!   checkpoints on and off (the message's checkpoint is taken while the request is out).
//!
//! Figures are medians over several runs.

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::procs::{median, wait_with_usage};
use support::{Call, FakeServer, Hx, Reply};

const TURNS: usize = 40;
const RUNS: usize = 9;

// The child is reaped by `wait4` (which also reports its usage), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run_hx(hx: &Hx) -> (i32, Duration, i64, Duration) {
    let start = Instant::now();
    let child = hx
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hx");
    let (code, cpu, rss) = wait_with_usage(child.id());
    (code, cpu, rss, start.elapsed())
}

fn session(ephemeral: bool) -> (Duration, Duration) {
    let mut replies: Vec<Reply> = (0..TURNS - 1)
        .map(|i| {
            // A file of its own each turn: the same call again and again is a loop, which
            // the guard of repeats ends (exit 3) long before turn 40.
            Reply::tool_calls(vec![Call::new(
                &format!("call_{i}"),
                "read_file",
                &format!(r#"{{"path":"notes{i}.txt"}}"#),
            )])
            .unpaced()
        })
        .collect();
    replies.push(Reply::text("done").unpaced());
    let server = FakeServer::start(replies);
    let mut hx = Hx::new(&server);
    for i in 0..TURNS - 1 {
        hx.write_file(&format!("notes{i}.txt"), &"a line of notes\n".repeat(50));
    }
    hx.arg("agent");
    if ephemeral {
        hx.arg("--ephemeral");
    }
    hx.arg("read the notes");
    let (code, cpu, _, wall) = run_hx(&hx);
    assert_eq!(code, 0, "40-turn session failed");
    assert_eq!(server.requests().len(), TURNS);
    (cpu / TURNS as u32, wall / TURNS as u32)
}

/// One plain answer: the cost of starting hx and making one request.
fn single_turn() -> (Duration, Duration) {
    let server = FakeServer::start(vec![Reply::text("hi").unpaced()]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "say hi"]);
    let (code, cpu, _, wall) = run_hx(&hx);
    assert_eq!(code, 0, "single-turn run failed");
    (cpu, wall)
}

/// A single-turn run against a model that answers after `MODEL_MS`, as a real one does, with
/// checkpoints on or off: the wall time hx adds to the model's. The message's checkpoint is
/// taken while its first request is out, so with a model this slow it should add nothing.
const MODEL_MS: u64 = 300;

fn single_turn_slow(checkpoints: bool) -> Duration {
    let server = FakeServer::start(vec![Reply::text("hi")
        .unpaced()
        .delay(Duration::from_millis(MODEL_MS))]);
    let mut hx = Hx::new(&server);
    if !checkpoints {
        hx.write_user_config("config.toml", "[checkpoints]\nenabled = false\n");
    }
    hx.args(["agent", "say hi"]);
    let (code, _, _, wall) = run_hx(&hx);
    assert_eq!(code, 0, "single-turn run failed");
    wall.saturating_sub(Duration::from_millis(MODEL_MS))
}

fn big_output() -> i64 {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "big",
            "bash",
            r#"{"command":"head -c 30000000 /dev/zero | tr '\\0' x"}"#,
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "print a lot"]);
    let (code, _, rss, _) = run_hx(&hx);
    assert_eq!(code, 0, "30 MB run failed");
    let sent = &server.requests()[1].body["messages"][3]["content"];
    assert!(
        sent.as_str()
            .is_some_and(|s| s.contains("characters omitted")),
        "the 30 MB output was not capped"
    );
    rss
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: keep that quick.
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        1
    };
    // Recorded (the default) and --ephemeral runs alternate, so both see the same machine.
    let mut cpu = Vec::new();
    let mut wall = Vec::new();
    let mut eph_cpu = Vec::new();
    let mut eph_wall = Vec::new();
    for _ in 0..runs {
        let (c, w) = session(false);
        cpu.push(c);
        wall.push(w);
        let (c, w) = session(true);
        eph_cpu.push(c);
        eph_wall.push(w);
    }
    let rss: Vec<i64> = (0..runs).map(|_| big_output()).collect();
    let (one_cpu, one_wall): (Vec<Duration>, Vec<Duration>) =
        (0..runs).map(|_| single_turn()).unzip();
    let (slow_on, slow_off): (Vec<Duration>, Vec<Duration>) = (0..runs)
        .map(|_| (single_turn_slow(true), single_turn_slow(false)))
        .unzip();
    println!(
        "agent_loop/single-turn run (start, one request, exit): hx CPU median {:.2} ms, wall median {:.2} ms ({runs} runs)",
        median(one_cpu).as_secs_f64() * 1e3,
        median(one_wall).as_secs_f64() * 1e3,
    );
    println!(
        "agent_loop/single-turn run, the model answering after {MODEL_MS} ms: wall beyond the model's median {:.2} ms with checkpoints, {:.2} ms without ({runs} runs)",
        median(slow_on).as_secs_f64() * 1e3,
        median(slow_off).as_secs_f64() * 1e3,
    );
    println!(
        "agent_loop/40-turn session: hx CPU per turn median {:.3} ms (min {:.3}), wall per turn median {:.3} ms ({runs} runs)",
        median(cpu.clone()).as_secs_f64() * 1e3,
        cpu.iter().min().expect("runs").as_secs_f64() * 1e3,
        median(wall.clone()).as_secs_f64() * 1e3,
    );
    let (rec, eph) = (median(wall.clone()), median(eph_wall));
    println!(
        "agent_loop/40-turn session, recording cost: wall per turn median {:.3} ms recorded vs {:.3} ms --ephemeral ({:+.1} %); hx CPU per turn {:.3} vs {:.3} ms",
        rec.as_secs_f64() * 1e3,
        eph.as_secs_f64() * 1e3,
        (rec.as_secs_f64() / eph.as_secs_f64() - 1.0) * 100.0,
        median(cpu.clone()).as_secs_f64() * 1e3,
        median(eph_cpu).as_secs_f64() * 1e3,
    );
    println!(
        "agent_loop/bash printing 30 MB: peak RSS median {:.1} MiB ({runs} runs)",
        median(rss) as f64 / 1024.0
    );
}
