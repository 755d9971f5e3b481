//! End-to-end tests of how hx exits, and what it leaves behind: nothing. Background processes a
//! command starts (`&`, `nohup`, `setsid`) may run while hx runs, and are gone once hx exits,
//! whether it answered or was stopped by SIGINT, SIGTERM or SIGHUP; each of those signals also
//! kills the running command and prints the Stop line with the figures so far.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::support::hooks::{groups, script, user_hooks};
use crate::support::procs::{host_pid, pid_in, running, state};
use crate::support::{Call, FakeServer, Hx, Reply, Run};
use serde_json::json;

/// Starts three background sleepers, each writing its pid first, in the three ways a command
/// can leave something running: a plain `&` (same group), `nohup` (ignores SIGHUP) and
/// `setsid` (its own session, out of the command's group). Returns when all pids are written.
const BACKGROUND: &str = "\
setsid sh -c 'echo $$ > setsid.pid; exec sleep 300' >/dev/null 2>&1 &
nohup sh -c 'echo $$ > nohup.pid; exec sleep 300' >/dev/null 2>&1 &
sh -c 'echo $$ > plain.pid; exec sleep 300' >/dev/null 2>&1 &
for f in setsid.pid nohup.pid plain.pid; do while [ ! -s $f ]; do sleep 0.01; done; done
echo started";

const PID_FILES: [&str; 3] = ["setsid.pid", "nohup.pid", "plain.pid"];

fn bash(id: &str, command: &str) -> Call {
    Call::new(id, "bash", &json!({ "command": command }).to_string())
}

/// The pid a command wrote to `file`, as the test sees it (see `host_pid`).
fn read_pid(dir: &Path, file: &str) -> i32 {
    let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let pid = text
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    host_pid(pid, dir)
}

/// Polls up to 10 s for every pid to stop running; on failure kills the survivors (so a
/// failing test leaves nothing behind either) and panics naming them.
fn assert_all_end(pids: &[(&str, i32)], context: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while pids.iter().any(|(_, p)| running(*p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let alive: Vec<_> = pids.iter().filter(|(_, p)| running(*p)).collect();
    for (_, p) in &alive {
        // SAFETY: sending a signal to a process this test started through hx.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    assert!(
        alive.is_empty(),
        "still running after hx exited: {alive:?}\n{context}"
    );
}

fn pids(dir: &Path) -> Vec<(&'static str, i32)> {
    PID_FILES.iter().map(|f| (*f, read_pid(dir, f))).collect()
}

#[test]
fn background_processes_end_when_hx_answers() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", BACKGROUND)]),
        // A later call still finds them running: they live as long as the run. It looks in
        // /proc: `kill -0` is a signal, which the sandbox refuses across commands.
        Reply::tool_calls(vec![bash(
            "c2",
            "for f in setsid.pid nohup.pid plain.pid; do test -d /proc/$(cat $f) && echo alive; done",
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "start a server"]);
    let run = hx.run();
    let pids = pids(hx.workspace());
    assert_all_end(&pids, &run.dump());
    run.assert_success();
    let reqs = server.requests();
    let last = reqs[2].body["messages"].as_array().expect("messages");
    assert_eq!(
        last.last().expect("tool message")["content"],
        "alive\nalive\nalive\n"
    );
}

#[test]
fn background_processes_end_on_the_other_exit_paths() {
    // Max turns (3), an API error (1), a hook stopping the run (1).
    for (case, second, code) in [
        ("max turns", None, 3),
        (
            "api error",
            Some(Reply::status(401, r#"{"error":{"message":"bad key"}}"#)),
            1,
        ),
        ("hook stop", None, 1),
    ] {
        let mut replies = vec![Reply::tool_calls(vec![bash("c1", BACKGROUND)])];
        replies.extend(second);
        let server = FakeServer::start(replies);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "start a server"]);
        match case {
            "max turns" => {
                hx.args(["--max-turns", "1"]);
            }
            "hook stop" => {
                let stop = r#"{"continue": false, "stopReason": "enough"}"#;
                let s = script(&hx, "stop.sh", &format!("echo '{stop}'"));
                user_hooks(&hx, json!({ "PostToolUse": groups("bash", &[&s], None) }));
            }
            _ => {}
        }
        let run = hx.run();
        let pids = pids(hx.workspace());
        assert_all_end(&pids, &format!("{case}\n{}", run.dump()));
        run.assert_code(code);
    }
}

#[test]
fn what_hooks_start_in_the_background_ends_too() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    let s = script(
        &hx,
        "start.sh",
        "sh -c 'echo $$ > hook.pid; exec sleep 300' >/dev/null 2>&1 </dev/null &\n\
         while [ ! -s hook.pid ]; do sleep 0.01; done",
    );
    user_hooks(
        &hx,
        json!({ "SessionStart": [{"hooks": [{"type": "command", "command": s}]}] }),
    );
    hx.args(["agent", "hi"]);
    let run = hx.run();
    let pid = read_pid(hx.workspace(), "hook.pid");
    assert_all_end(&[("hook.pid", pid)], &run.dump());
    run.assert_success();
}

#[test]
fn keep_background_leaves_them_running() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", BACKGROUND)]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "[tools]\nkeep_background = true\n");
    hx.args(["agent", "start a server"]);
    let run = hx.run();
    run.assert_success();
    let pids = pids(hx.workspace());
    let alive: Vec<_> = pids.iter().filter(|(_, p)| running(*p)).cloned().collect();
    for (_, p) in &pids {
        // SAFETY: ending the processes this test started through hx.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    assert_eq!(alive, pids, "{}", run.dump());
}

/// Waits until request `n` (1-based count) reached the server.
fn wait_for_request(server: &FakeServer, n: usize, child: &mut std::process::Child) {
    if !server.wait_for_requests(n, Duration::from_secs(20)) {
        let _ = child.kill();
        panic!("hx never made request {n}");
    }
}

fn send(child: &std::process::Child, sig: i32) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A signal while hx waits for the model: background processes of an earlier call end, the
/// exit code is 128 + the signal, and the Stop line shows the figures so far.
fn signal_while_waiting(sig: i32, code: i32, message: &str) {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", BACKGROUND)]),
        Reply::hang(),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "start a server"]);
    let mut child = hx.spawn();
    wait_for_request(&server, 2, &mut child);
    let pids = pids(hx.workspace());
    send(&child, sig);
    let run = Run::wait(child, Duration::from_secs(20));
    assert_all_end(&pids, &run.dump());
    run.assert_code(code);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let n = lines.len();
    assert!(n >= 3, "{}", run.dump());
    assert!(
        lines[n - 3].starts_with(
            "[HOOK] Stop: turns=2, tool_calls=1, blocked=0, prompt_tokens=1200, cache_hit_tokens=1024, completion_tokens=150, cost=$0.000119 cache=85%, duration="
        ),
        "{}",
        run.dump()
    );
    assert_eq!(lines[n - 2], message);
    // The session is named last, with how to continue it.
    assert!(lines[n - 1].starts_with("hx: session "), "{}", run.dump());
}

#[test]
fn sigint_while_waiting_ends_everything() {
    signal_while_waiting(libc::SIGINT, 130, "hx: interrupted");
}

#[test]
fn sigterm_while_waiting_ends_everything() {
    signal_while_waiting(libc::SIGTERM, 143, "hx: terminated by SIGTERM");
}

#[test]
fn sighup_while_waiting_ends_everything() {
    signal_while_waiting(libc::SIGHUP, 129, "hx: terminated by SIGHUP");
}

#[test]
fn sigquit_while_waiting_ends_everything() {
    signal_while_waiting(libc::SIGQUIT, 131, "hx: terminated by SIGQUIT");
}

/// A signal while a command runs: the command, what it started in the background before, and
/// hx all end.
fn signal_during_a_command(sig: i32, code: i32) {
    let command = format!("{BACKGROUND}\necho $$ > shell.pid; sleep 300");
    let server = FakeServer::start(vec![Reply::tool_calls(vec![bash("c1", &command)])]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "wait"]);
    let mut child = hx.spawn();
    let Some(shell) = pid_in(&hx.workspace().join("shell.pid"), Duration::from_secs(20)) else {
        let _ = child.kill();
        panic!("the command never started");
    };
    let mut pids = pids(hx.workspace());
    pids.push(("shell.pid", shell));
    send(&child, sig);
    let run = Run::wait(child, Duration::from_secs(20));
    assert_all_end(&pids, &run.dump());
    run.assert_code(code);
    assert!(
        run.stderr
            .contains("[HOOK] Stop: turns=1, tool_calls=1, blocked=0,"),
        "{}",
        run.dump()
    );
}

#[test]
fn sigint_during_a_command() {
    signal_during_a_command(libc::SIGINT, 130);
}

#[test]
fn sigterm_during_a_command() {
    signal_during_a_command(libc::SIGTERM, 143);
}

#[test]
fn sighup_during_a_command() {
    signal_during_a_command(libc::SIGHUP, 129);
}

#[test]
fn orphans_that_end_during_the_run_are_reaped() {
    // The orphan is re-parented to hx and exits at once; hx must reap it, not keep a zombie.
    let command = "sh -c 'echo $$ > orphan.pid; exec sleep 0.1' >/dev/null 2>&1 & \
                   while [ ! -s orphan.pid ]; do sleep 0.01; done";
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![bash("c1", command)]),
        Reply::hang(),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    let mut child = hx.spawn();
    wait_for_request(&server, 2, &mut child);
    let pid = read_pid(hx.workspace(), "orphan.pid");
    let deadline = Instant::now() + Duration::from_secs(10);
    while state(pid).is_some() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = state(pid);
    send(&child, libc::SIGTERM);
    let run = Run::wait(child, Duration::from_secs(20));
    assert_eq!(left, None, "pid {pid} not reaped\n{}", run.dump());
}

#[test]
fn an_unwritable_stderr_loses_the_message_not_the_exit_code() {
    let hx = Hx::new_offline();
    let mut cmd = hx.command();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    // No task: a usage error, reported on stderr, which cannot take it.
    let status = cmd
        .arg("agent")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(full)
        .status()
        .expect("run hx");
    assert_eq!(status.code(), Some(2), "{status:?}");
}
