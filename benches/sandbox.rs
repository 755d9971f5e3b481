//! What the sandbox adds to a bash call, and what starting a run's pod costs.
//!
//! `cargo bench --bench sandbox` runs the bash tool (the library code hx runs, without the
//! model loop) on `true` three ways, alternating in the same run so that all see the same
//! machine load, and prints the medians and the differences; the target is under 3 ms added
//! (issue 19; issue 13 asked for 2):
//! - off: bash started directly;
//! - Landlock only (where no pod can be made): the child enters the run's ruleset, drops
//!   every capability (about 45 syscalls: the bounding set goes one capability at a time),
//!   then installs the seccomp filter (one prctl);
//! - the pod: hx's forked child (L) reads /proc/net/unix, sweeps its sockets' folders and the
//!   home folder's socket places (`~/.ssh`, `~/.docker`, ...) (both in hx, before the fork),
//!   joins the pod with one setns, starts the command in its PID namespace (a `clone` that
//!   shares L's memory until the exec), where it enters its Landlock domain, drops its
//!   capabilities and installs the seccomp filter. Until issue 33 L was the `hx-pod`
//!   binary, exec'd for each call.
//!
//! It also times starting a pod (the run pays it once, at its start): spawning
//! `hx __sandbox init`, the namespaces, the mounts, and the report read back.

use std::time::{Duration, Instant};

use hx::config::Env;
use hx::sandbox::{Kernel, Plan, Pod, Settings};
use hx::tools::bash::Bash;
use hx::tools::{Tool, ToolContext, Workspace};
use serde_json::json;

const CALLS: usize = 300;
const STARTS: usize = 30;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The real launcher, which the pod runs as its init and each command's launcher (what hx
/// starts when it is installed beside it).
fn hx_program() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_BIN_EXE_hx-pod"))
}

fn run_dir(i: usize) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("hx-bench-{}-{i}", std::process::id()))
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
    // HOME as a run has it: each launcher sweeps its places (`~/.ssh`, ...) for sockets.
    let env: Env = hx::config::process_env()
        .into_iter()
        .filter(|(k, _)| k == "HOME")
        .collect();
    let plan = Plan::new(&Settings::default(), &root, &env, kernel);
    let landlock = plan
        .sandbox()
        .expect("no refusal")
        .expect("the default mode has a sandbox");
    let pod = Pod::start_program(&plan.pod_config(run_dir(0)), hx_program())
        .unwrap_or_else(|e| panic!("no pod here: {e}"));
    let in_pod = plan
        .sandbox_in(Some(pod))
        .expect("no refusal")
        .expect("a sandbox");
    let off = ToolContext::new(ws);
    let on = ToolContext {
        sandbox: Some(landlock.clone()),
        ..off.clone()
    };
    let podded = ToolContext {
        sandbox: Some(in_pod.clone()),
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
    // Warm up every path (page cache, the shell lookup).
    for _ in 0..20 {
        call(&off);
        call(&on);
        call(&podded);
    }
    let (mut t_off, mut t_on, mut t_pod) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..CALLS {
        t_off.push(call(&off));
        t_on.push(call(&on));
        t_pod.push(call(&podded));
    }
    let (m_off, m_on, m_pod) = (median(t_off), median(t_on), median(t_pod));
    println!(
        "bash call, sandbox off:       {:>8.3} ms (median of {CALLS})",
        ms(m_off)
    );
    println!(
        "bash call, Landlock only:     {:>8.3} ms (median of {CALLS})",
        ms(m_on)
    );
    println!(
        "bash call, in the pod:        {:>8.3} ms (median of {CALLS})",
        ms(m_pod)
    );
    println!(
        "added by Landlock only:       {:>8.3} ms (target: under 3 ms)",
        ms(m_on) - ms(m_off)
    );
    println!(
        "added by the pod:             {:>8.3} ms (target: under 3 ms)",
        ms(m_pod) - ms(m_off)
    );
    hx::sandbox::pod::end_all(false);
    let mut starts = Vec::new();
    for i in 1..=STARTS {
        let t = Instant::now();
        let pod = Pod::start_program(&plan.pod_config(run_dir(i)), hx_program())
            .unwrap_or_else(|e| panic!("no pod here: {e}"));
        starts.push(t.elapsed());
        drop(pod);
        hx::sandbox::pod::end_all(false);
    }
    println!(
        "starting a pod:               {:>8.3} ms (median of {STARTS}; a run's start: under 15 ms)",
        ms(median(starts))
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
