//! Throughput of the bounded head+tail accumulator every tool's output goes through: 30 MB of
//! output pushed in 64 KiB-ish pieces, as bash and read_file push it. Prints the median and
//! minimum time and the throughput. Run with `cargo bench --bench bounded_output`.
//!
//! This used to be a timed assertion in a unit test (`tools::output`); the correctness part
//! stays there, the speed is measured here.

use std::time::{Duration, Instant};

use hx::tools::output::BoundedText;

const TOTAL: usize = 30_000_000;
const RUNS: usize = 15;

/// Pushes `TOTAL` bytes of multibyte text through a 50,000-character accumulator.
fn push_30_mb(chunk: &str) -> Duration {
    let start = Instant::now();
    let mut b = BoundedText::new(50_000);
    let mut total = 0;
    while total < TOTAL {
        b.push(chunk);
        total += chunk.len();
    }
    let out = b.finish();
    let elapsed = start.elapsed();
    assert!(out.contains("characters omitted"));
    elapsed
}

fn main() {
    // `cargo test --benches` runs this with --bench absent: keep that quick.
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        1
    };
    let chunk = "line of output ✓\n".repeat(4096);
    let mut times: Vec<Duration> = (0..runs).map(|_| push_30_mb(&chunk)).collect();
    times.sort();
    let median = times[runs / 2];
    println!(
        "bounded_output/30 MB through a 50,000-character cap: median {:.1} ms, min {:.1} ms, {:.0} MB/s ({runs} runs)",
        median.as_secs_f64() * 1e3,
        times[0].as_secs_f64() * 1e3,
        TOTAL as f64 / 1e6 / median.as_secs_f64(),
    );
}
