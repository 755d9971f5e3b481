//! What the sandbox adds to a bash call.
//!
//! `cargo bench --bench sandbox` runs the bash tool (the library code hx runs, without the
//! model loop) on `true`, alternating sandbox on and off in the same run so that both see the
//! same machine load, and prints the medians and their difference; the target is under 3 ms
//! added (issue 19; issue 13 asked for 2). The ruleset and the seccomp program are built once
//! per run, so what a call adds is entering the ruleset, dropping every capability (about 45
//! syscalls in the child: the bounding set goes one capability at a time), installing the
//! seccomp filter (one prctl) and the kernel's checks.

use std::time::{Duration, Instant};

use hx::config::Env;
use hx::sandbox::{Kernel, Plan, Settings};
use hx::tools::bash::Bash;
use hx::tools::{Tool, ToolContext, Workspace};
use serde_json::json;

const CALLS: usize = 300;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = Workspace::new(tmp.path()).expect("workspace");
    let root = ws.root().to_path_buf();
    let kernel = Kernel::detect();
    // What is measured depends on it: the scopes need ABI 6, the ruleset any Landlock.
    match kernel.why_missing() {
        None => println!("landlock: ABI {}", kernel.abi()),
        Some(why) => println!("landlock: none ({why}); only the capabilities are dropped"),
    }
    let plan = Plan::new(&Settings::default(), &root, &Env::new(), kernel);
    let sandbox = plan
        .sandbox()
        .expect("no refusal")
        .expect("the default mode has a sandbox");
    let off = ToolContext::new(ws);
    let on = ToolContext {
        sandbox: Some(sandbox.clone()),
        ..off.clone()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let args = json!({"command": "true"});
    let call = |cx: &ToolContext| {
        let start = Instant::now();
        let r = rt.block_on(Bash.call(args.clone(), cx));
        assert_eq!(r.content, "(no output)");
        start.elapsed()
    };
    // Warm up both paths (page cache, the shell lookup).
    for _ in 0..20 {
        call(&off);
        call(&on);
    }
    let (mut t_off, mut t_on) = (Vec::new(), Vec::new());
    for _ in 0..CALLS {
        t_off.push(call(&off));
        t_on.push(call(&on));
    }
    let (m_off, m_on) = (median(t_off), median(t_on));
    println!(
        "bash call, sandbox off:       {:>8.3} ms (median of {CALLS})",
        ms(m_off)
    );
    println!(
        "bash call, sandbox on:        {:>8.3} ms (median of {CALLS})",
        ms(m_on)
    );
    println!(
        "added by the sandbox:         {:>8.3} ms (target: under 3 ms)",
        ms(m_on) - ms(m_off)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
