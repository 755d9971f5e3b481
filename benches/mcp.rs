//! What an MCP call costs beyond the server's own time, and whether servers start together.
//!
//! `cargo build --release --example mcp_test_server && cargo bench --bench mcp` runs the
//! library code hx runs (the MCP tool and the server manager, without the model loop)
//! against the test suite's MCP server:
//!
//! - a call that sleeps 10 ms in the server, which says how long the sleep really took: the
//!   median of (call time − the server's own time) is what one call adds (JSON-RPC both ways
//!   over the pipes, rmcp on both ends, the result made text). Target: under 1 ms. Also an
//!   `echo` call, whose own time in the server is a few microseconds.
//! - three servers that take 100, 200 and 300 ms to start, started together, against the
//!   300 ms one alone, alternating, medians of 7 each. Target: about the same.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hx::mcp::config::{Planned, PlannedServer, ServerConfig, ServerFile};
use hx::mcp::Mcp;
use hx::tools::{Tool, ToolContext, Workspace};
use serde_json::json;

const CALLS: usize = 500;
const STARTS: usize = 7;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The test server, built in release (or, failing that, debug) mode.
fn server() -> PathBuf {
    let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("examples/mcp_test_server"))
        .find(|p| p.is_file())
        .expect("build the test server first: cargo build --release --example mcp_test_server")
}

fn planned(name: &str, delay_ms: u64, ws: &std::path::Path) -> PlannedServer {
    let file = ServerFile {
        command: Some(server().display().to_string()),
        env: BTreeMap::from([("MCP_TEST_START_DELAY_MS".into(), delay_ms.to_string())]),
        ..ServerFile::default()
    };
    PlannedServer {
        config: ServerConfig::from_file(name, &file, ws, None),
        plan: Planned::Start,
    }
}

fn main() {
    println!("MCP test server: {}", server().display());
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = Workspace::new(tmp.path()).expect("workspace");
    let root = ws.root().to_path_buf();
    let cx = ToolContext::new(ws);
    let warn: hx::mcp::Warn = std::sync::Arc::new(|w: &hx::text::Warning| eprintln!("{w}"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // One call's overhead.
    let mcp = Mcp::new(
        vec![planned("b", 0, &root)],
        Default::default(),
        Default::default(),
        warn.clone(),
    );
    let tools = rt.block_on(async {
        mcp.start().await;
        mcp.source(false).current().await.1
    });
    let tool = |name: &str| -> Arc<dyn Tool> {
        tools
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.clone())
            .expect("tool")
    };
    let (echo, sleep) = (tool("mcp__b__echo"), tool("mcp__b__sleep"));
    let call = |t: &Arc<dyn Tool>, args: serde_json::Value| {
        let start = Instant::now();
        let r = rt.block_on(t.call(args, &cx));
        (start.elapsed(), r.content)
    };
    let time = |t: &Arc<dyn Tool>, args: serde_json::Value, expect: &str| {
        let (took, content) = call(t, args);
        assert_eq!(content, expect);
        took
    };
    let echo_args = json!({"text": "hi"});
    for _ in 0..50 {
        time(&echo, echo_args.clone(), "echo: hi");
    }
    let echo_times: Vec<Duration> = (0..CALLS)
        .map(|_| time(&echo, echo_args.clone(), "echo: hi"))
        .collect();
    let overheads: Vec<Duration> = (0..CALLS / 5)
        .map(|_| {
            let (took, content) = call(&sleep, json!({"ms": 10, "precise": true}));
            let own: u64 = content
                .strip_prefix("slept 10 ms in ")
                .and_then(|r| r.strip_suffix(" us"))
                .and_then(|us| us.parse().ok())
                .unwrap_or_else(|| panic!("unexpected answer {content:?}"));
            took.saturating_sub(Duration::from_micros(own))
        })
        .collect();
    println!(
        "call beyond the server's time:   {:>8.3} ms (median of {}, 10 ms calls; target: under 1 ms)",
        ms(median(overheads)),
        CALLS / 5
    );
    println!(
        "echo call, server time ~0:       {:>8.3} ms (median of {CALLS})",
        ms(median(echo_times))
    );
    drop(mcp);

    // Three servers at once against the slowest alone.
    let start = |servers: Vec<PlannedServer>| {
        let mcp = Mcp::new(
            servers,
            Default::default(),
            Default::default(),
            warn.clone(),
        );
        let began = Instant::now();
        rt.block_on(mcp.start());
        let took = began.elapsed();
        let started = mcp.status().iter().filter(|s| s.state == "started").count();
        drop(mcp);
        (took, started)
    };
    let (mut together, mut alone) = (Vec::new(), Vec::new());
    for _ in 0..STARTS {
        let (t, n) = start(vec![
            planned("s100", 100, &root),
            planned("s200", 200, &root),
            planned("s300", 300, &root),
        ]);
        assert_eq!(n, 3);
        together.push(t);
        let (t, n) = start(vec![planned("s300", 300, &root)]);
        assert_eq!(n, 1);
        alone.push(t);
    }
    println!(
        "start 100+200+300 ms servers:    {:>8.1} ms (median of {STARTS})",
        ms(median(together))
    );
    println!(
        "start the 300 ms server alone:   {:>8.1} ms (median of {STARTS}; together should be about this)",
        ms(median(alone))
    );
    hx::process::cleanup::end_all();
}
