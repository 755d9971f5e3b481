//! A long run against a 128,000-token window: 300 tool turns, each reading a 50 KB file, each
//! with a paragraph of the model's own text, so both compaction steps come up (pruning for the
//! outputs, a summary once the model's own messages fill the room).
//!
//! `cargo bench --bench context` prints the compactions of each step, the largest request (its
//! bytes, and its tokens by the fake server's count of 4 bytes a token, which stands in for a
//! tokenizer and anchors hx's estimate, as a real server's `prompt_tokens` does), and the wall
//! time per turn, median of the runs. It fails if any request passes the window by that count
//! or the run does not finish.

#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use support::{Call, FakeServer, Hx, Reply};

const WINDOW: usize = 128_000;
const TURNS: usize = 300;
const OUTPUT_BYTES: usize = 50_000;
const RUNS: usize = 3;

/// What one run measured.
struct Figures {
    requests: usize,
    prunes: usize,
    summaries: usize,
    /// The largest request: bytes, hx's estimate (bytes / 3), the fake's count (bytes / 4).
    largest: usize,
    wall: Duration,
}

fn run(turns: usize) -> Figures {
    let main = Arc::new(AtomicUsize::new(0));
    let counter = main.clone();
    let paragraph = "I read the file and compared it with what the tests expect; the next step \
                     is to look at the following module and check its error handling. "
        .repeat(7);
    let server = FakeServer::start_with(move |req| {
        // A server's count: about 4 bytes a token, like a real tokenizer on code and prose.
        let tokens = (req.raw_body.len() / 4) as u64;
        if support::body::is_summary(&req.body) {
            let summary = "Goal: review every module. Progress: modules 1 to N read. Next \
                           step: the next module. "
                .repeat(20);
            return Reply::text(&summary).with_usage(tokens, 0, 600).unpaced();
        }
        let n = counter.fetch_add(1, Ordering::SeqCst);
        if n >= turns {
            return Reply::text("done").with_usage(tokens, 0, 10).unpaced();
        }
        // A file of its own each turn: the same call five times in a row is a loop, which
        // hx stops.
        Reply::tool_calls(vec![Call::new(
            &format!("c{n}"),
            "read_file",
            &format!(r#"{{"path":"big{n}.txt"}}"#),
        )])
        .with_content(&paragraph)
        .with_usage(tokens, 0, 300)
        .unpaced()
    });
    let mut hx = Hx::new(&server);
    let line = "fn example(input: &str) -> Result<usize, String> { Ok(input.len()) }\n";
    let mut text = line.repeat(OUTPUT_BYTES / line.len() + 1);
    text.truncate(OUTPUT_BYTES);
    for n in 0..turns {
        hx.write_file(&format!("big{n}.txt"), &text);
    }
    hx.write_user_config("config.toml", &format!("context_window = {WINDOW}\n"));
    hx.timeout(Duration::from_secs(600));
    hx.args(["agent", "--max-turns", "1000", "review every module"]);
    let started = Instant::now();
    let out = hx.run();
    let wall = started.elapsed();
    assert_eq!(out.code, Some(0), "the run failed:\n{}", out.stderr);
    let reqs = server.requests();
    let main_requests = reqs
        .iter()
        .filter(|r| !support::body::is_summary(&r.body))
        .count();
    assert_eq!(main_requests, turns + 1, "every turn made");
    let largest = reqs.iter().map(|r| r.raw_body.len()).max().unwrap_or(0);
    // The window is counted in the server's tokens.
    for r in &reqs {
        assert!(
            r.raw_body.len() / 4 <= WINDOW,
            "a request of {} bytes ({} tokens by the server's count) passes the window",
            r.raw_body.len(),
            r.raw_body.len() / 4
        );
    }
    let count = |what: &str| out.stderr.lines().filter(|l| l.contains(what)).count();
    Figures {
        requests: reqs.len(),
        prunes: count("old tool outputs)"),
        summaries: count("(summarised;"),
        largest,
        wall,
    }
}

fn main() {
    // `cargo test --benches` runs this without --bench: keep that quick.
    let bench = std::env::args().any(|a| a == "--bench");
    let (runs, turns) = if bench { (RUNS, TURNS) } else { (1, 30) };
    let mut all: Vec<Figures> = (0..runs).map(|_| run(turns)).collect();
    all.sort_by_key(|f| f.wall);
    let f = &all[all.len() / 2];
    println!(
        "context/{turns} turns of {} KB outputs, {WINDOW}-token window: {} requests, \
         compactions: {} prune + {} summary; largest request {} bytes, {} tokens by the \
         server's count; wall {:.2} ms per turn (median of {runs})",
        OUTPUT_BYTES / 1000,
        f.requests,
        f.prunes,
        f.summaries,
        f.largest,
        f.largest / 4,
        f.wall.as_secs_f64() * 1e3 / turns as f64,
    );
}
