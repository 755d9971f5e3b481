//! Self-tests of the hx runner, using `/bin/sh` in place of hx so they can observe exactly what
//! environment, directory and stdin a run gets, and that hung runs are killed.

use crate::support::{FakeServer, Hx, Run};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn sh(hx: &mut Hx, script: &str) -> Run {
    hx.program("/bin/sh").args(["-c", script]).run()
}

fn env_of(run: &Run) -> Vec<(String, String)> {
    run.stdout
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn get<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// Variables of the test process the runner must scrub (it removes every DEEPSEEK_, HX_ and
/// OPENAI_ one).
const LEAKS: [(&str, &str); 3] = [
    ("DEEPSEEK_LEAK_CHECK", "leak"),
    ("HX_LEAK_CHECK", "leak"),
    ("OPENAI_LEAK_CHECK", "leak"),
];

#[test]
fn run_is_isolated_and_points_at_the_server() {
    // The variables must be in the test process's own environment, but setting them here
    // would change it under every test running beside this one in the binary: a `set_var`
    // races the environment reads of their threads, and a child forked meanwhile (rexpect
    // forks, then execs) can wait forever on the environment lock held at the fork. So the
    // test runs again, alone, in a process of its own started with them.
    if std::env::var_os(LEAKS[0].0).is_none() {
        let name = concat!(module_path!(), "::run_is_isolated_and_points_at_the_server");
        // The harness names tests without the crate.
        let name = name.split_once("::").map_or(name, |(_, rest)| rest);
        let out = Command::new(std::env::current_exe().expect("the test binary"))
            .args(["--exact", name, "--test-threads=1"])
            .envs(LEAKS)
            .output()
            .expect("run the test binary");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("test result: ok. 1 passed"),
            "{}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        return;
    }
    assert!(LEAKS.iter().all(|(k, _)| std::env::var_os(k).is_some()));
    let server = FakeServer::start(vec![]);
    let mut hx = Hx::new(&server);
    let run = sh(&mut hx, "env; echo PWD_IS=$(pwd -P)");
    run.assert_success();
    let env = env_of(&run);
    assert!(
        env.iter().all(|(k, _)| !k.ends_with("_LEAK_CHECK")),
        "{}",
        run.stdout
    );
    let home = hx.home().to_str().expect("utf-8 home").to_string();
    assert_eq!(get(&env, "DEEPSEEK_API_KEY"), Some("test-key"));
    assert_eq!(get(&env, "DEEPSEEK_BASE_URL"), Some(server.url().as_str()));
    assert_eq!(get(&env, "NO_COLOR"), Some("1"));
    assert_eq!(get(&env, "HOME"), Some(home.as_str()));
    assert_eq!(
        get(&env, "XDG_CONFIG_HOME"),
        Some(format!("{home}/.config").as_str())
    );
    assert!(hx.home().join(".config").is_dir());
    let ws = hx.workspace().canonicalize().expect("workspace exists");
    assert_eq!(get(&env, "PWD_IS").map(Path::new), Some(ws.as_path()));
    assert!(
        !ws.starts_with(hx.home()) && !hx.home().starts_with(&ws),
        "HOME and workspace are apart"
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn env_overrides_apply_in_order_after_the_defaults() {
    let mut hx = Hx::new_offline();
    hx.env("DEEPSEEK_MODEL", "deepseek-v4-pro")
        .env_remove("NO_COLOR")
        .env("HX_A", "1")
        .env_remove("HX_A");
    let env = env_of(&sh(&mut hx, "env"));
    assert_eq!(get(&env, "DEEPSEEK_MODEL"), Some("deepseek-v4-pro"));
    assert_eq!(get(&env, "NO_COLOR"), None);
    assert_eq!(get(&env, "HX_A"), None);
}

#[test]
fn offline_base_url_refuses_connections() {
    let hx = Hx::new_offline();
    let addr = hx
        .base_url()
        .strip_prefix("http://")
        .expect("http base url");
    let connect =
        TcpStream::connect_timeout(&addr.parse().expect("socket addr"), Duration::from_secs(2));
    assert!(connect.is_err(), "something listens on {addr}");
}

#[test]
fn stdin_is_fed_then_closed_or_null_by_default() {
    let mut hx = Hx::new_offline();
    assert_eq!(sh(&mut hx, "cat").stdout, "", "no stdin() means /dev/null");
    let mut hx = Hx::new_offline();
    hx.stdin("line one\nlïne two ✓\n");
    assert_eq!(
        sh(&mut hx, "cat; echo EOF").stdout,
        "line one\nlïne two ✓\nEOF\n"
    );
}

#[test]
fn exit_code_and_both_streams_are_captured() {
    let mut hx = Hx::new_offline();
    let run = sh(&mut hx, "echo out; echo err >&2; exit 3");
    run.assert_code(3);
    assert_eq!(
        (run.stdout.as_str(), run.stderr.as_str(), run.signal),
        ("out\n", "err\n", None)
    );
    let failure = catch_unwind(AssertUnwindSafe(|| {
        run.assert_success();
    }))
    .expect_err("assert_success must fail on exit 3");
    let msg = failure
        .downcast_ref::<String>()
        .expect("formatted panic message");
    assert!(
        msg.contains("--- stdout ---\nout\n") && msg.contains("--- stderr ---\nerr\n"),
        "{msg}"
    );
}

#[test]
fn hung_run_is_killed_with_its_children_and_fails() {
    let mut hx = Hx::new_offline();
    // The background sleep inherits stdout: unless the whole group dies, readers would block.
    hx.program("/bin/sh")
        .args(["-c", "echo started; sleep 30 & sleep 30"]);
    let start = Instant::now();
    let run = Run::wait(hx.spawn(), Duration::from_millis(300));
    assert!(run.timed_out && run.code.is_none(), "{}", run.dump());
    assert_eq!(run.signal, Some(9));
    assert_eq!(run.stdout, "started\n");
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "took {:?}",
        start.elapsed()
    );
    hx.timeout(Duration::from_millis(200));
    let failure =
        catch_unwind(AssertUnwindSafe(|| hx.run())).expect_err("run() must panic on timeout");
    let msg = failure
        .downcast_ref::<String>()
        .expect("formatted panic message");
    assert!(msg.contains("did not finish within 200ms"), "{msg}");
}

#[test]
fn spawned_run_can_be_signalled_like_ctrl_c() {
    let mut hx = Hx::new_offline();
    hx.program("/bin/sh").args([
        "-c",
        "trap 'echo interrupted; exit 130' INT; touch ready; while :; do sleep 0.05; done",
    ]);
    let child = hx.spawn();
    let ready = hx.workspace().join("ready");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "script never got ready");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success());
    let run = Run::wait(child, Duration::from_secs(10));
    run.assert_code(130);
    assert_eq!(run.stdout, "interrupted\n");
}

#[test]
fn files_are_written_and_read_relative_to_the_workspace() {
    let mut hx = Hx::new_offline();
    hx.write_file("src/deep/a.txt", "alpha\n")
        .write_file("b.md", "beta");
    assert_eq!(hx.read_file("src/deep/a.txt"), "alpha\n");
    assert_eq!(sh(&mut hx, "cat src/deep/a.txt b.md").stdout, "alpha\nbeta");
    assert!(
        Path::new(env!("CARGO_BIN_EXE_hx")).is_file(),
        "the default program is the built hx"
    );
}
