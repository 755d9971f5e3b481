//! End-to-end tests of what a command may do to the rest of the machine beyond writing files
//! (issue 19): signal other processes, reach abstract Unix sockets made outside, use the
//! capabilities of a root hx (or any given to it). The real
//! binary, the fake server, the real kernel; as root (CI) and, where the user matters, as
//! `nobody`. A test that needs what this machine lacks (Landlock ABI 6, a PID namespace,
//! `setpriv`) says why on stderr and passes.

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};

use crate::support::confine::{self, as_nobody, is_root, no_scopes, pid_namespace, skip};
use crate::support::hooks::{groups, script, user_hooks};
use crate::support::{tool_results, Call, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};

/// One turn of bash calls, run by `start` (hx itself, or hx through a wrapper), then an answer.
/// Returns each call's result, in call order, and the run; asserts hx answered normally.
fn turn(hx: &mut Hx, commands: &[&str], start: impl FnOnce(&Hx) -> Run) -> (Vec<String>, Run) {
    let calls: Vec<Call> = commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            Call::new(
                &format!("c{i}"),
                "bash",
                &json!({ "command": c }).to_string(),
            )
        })
        .collect();
    let server = FakeServer::start(vec![Reply::tool_calls(calls), Reply::text("done")]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "run the commands"]);
    let run = start(hx);
    run.assert_code(0);
    assert_eq!(run.stdout, "done\n", "{}", run.dump());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    (tool_results(&reqs[1].body), run)
}

fn direct(hx: &Hx) -> Run {
    hx.run()
}

/// hx run as `nobody` through `setpriv` (its folders handed over first).
fn nobody_run(hx: &mut Hx, setpriv: &[String]) -> impl FnOnce(&Hx) -> Run {
    confine::hand_to_nobody(hx);
    let prefix = setpriv.to_vec();
    move |hx: &Hx| confine::run(confine::wrapped(hx, &prefix), hx.time_limit())
}

const KILL_HX: &str = "kill -9 $PPID; echo \"kill: $?\"";

/// The kill reached nothing outside the command: refused (Landlock's signal scope), or, in
/// the run's pod, where `$PPID` is 0 (hx is outside its PID namespace), `kill -9 0` killed
/// only the command's own process group.
fn assert_kill_refused(out: &str) {
    assert!(
        (out.contains("Operation not permitted") && out.contains("kill: 1"))
            || out == "(no output)\n[killed by signal 9 (SIGKILL)]"
            || out == "(no output)\n[killed by signal 15 (SIGTERM)]",
        "{out}"
    );
}

#[test]
fn a_command_cannot_kill_hx() {
    if let Some(why) = no_scopes() {
        return skip("a_command_cannot_kill_hx", &why);
    }
    let mut hx = Hx::new_offline();
    let (out, _) = turn(
        &mut hx,
        &[KILL_HX, "kill -TERM $PPID; echo \"kill: $?\""],
        direct,
    );
    assert_kill_refused(&out[0]);
    assert_kill_refused(&out[1]);
}

/// The same as an unprivileged user, whom the kernel otherwise lets signal every process of
/// their own, hx included.
#[test]
fn a_command_cannot_kill_hx_as_nobody() {
    const NAME: &str = "a_command_cannot_kill_hx_as_nobody";
    if let Some(why) = no_scopes() {
        return skip(NAME, &why);
    }
    let setpriv = match as_nobody() {
        Ok(p) => p,
        Err(why) => return skip(NAME, &why),
    };
    let mut hx = Hx::new_offline();
    let start = nobody_run(&mut hx, &setpriv);
    let (out, _) = turn(&mut hx, &[KILL_HX, "id -u"], start);
    assert_kill_refused(&out[0]);
    assert_eq!(out[1], format!("{}\n", confine::NOBODY));
}

/// A helper that gives the command to run hx another way, or why it cannot be used here.
type Wrapper = fn() -> Result<Vec<String>, String>;

/// The script that runs hx as pid 2 or later of a fresh PID namespace, beside a `sleep` that
/// is not hx's, and says on stderr whether that `sleep` outlived the run. `sh` is the
/// namespace's init, so it survives any `kill -9 -1` from inside; when it exits the kernel
/// ends everything left in the namespace.
const BESIDE_A_VICTIM: &str = "sleep 300 & victim=$!; \"$@\"; rc=$?; \
     if kill -0 \"$victim\" 2>/dev/null; then echo 'victim: alive' >&2; \
     else echo 'victim: dead' >&2; fi; exit $rc";

/// `kill -9 -1` from a command reaches no process outside it: not hx, not a process beside
/// hx of the same user. Run only inside a PID namespace, so that a regression kills the
/// namespace, never the test runner; `user` (`as_nobody`) runs hx and its neighbour as
/// another user.
fn kill_minus_one(name: &str, user: Option<Wrapper>) {
    if let Some(why) = no_scopes() {
        return skip(name, &why);
    }
    let mut prefix = match pid_namespace() {
        Ok(ns) => ns,
        Err(why) => return skip(name, &format!("no PID namespace to run it in: {why}")),
    };
    let mut hx = Hx::new_offline();
    // The guard refuses `kill -1` in words; the kernel must refuse it without the guard.
    hx.write_user_config("config.toml", "guard = false\n");
    if let Some(user) = user {
        match user() {
            Ok(setpriv) => prefix.extend(setpriv),
            Err(why) => return skip(name, &why),
        }
        confine::hand_to_nobody(&mut hx);
    }
    prefix.extend(["sh", "-c", BESIDE_A_VICTIM, "sh"].map(String::from));
    let (out, run) = turn(
        &mut hx,
        &["kill -9 -1; echo \"kill: $?\"", "echo still here"],
        |hx| confine::run(confine::wrapped(hx, &prefix), hx.time_limit()),
    );
    // In the pod there is nothing else to kill: `No such process`.
    assert!(
        out[0].starts_with("kill: ") || out[0].contains("kill: (-1) - No such process\nkill: 1"),
        "{}",
        out[0]
    );
    assert_eq!(out[1], "still here\n");
    assert!(run.stderr.ends_with("victim: alive\n"), "{}", run.dump());
}

#[test]
fn kill_minus_one_reaches_nothing_outside_the_command() {
    kill_minus_one("kill_minus_one_reaches_nothing_outside_the_command", None);
}

#[test]
fn kill_minus_one_reaches_nothing_outside_the_command_as_nobody() {
    kill_minus_one(
        "kill_minus_one_reaches_nothing_outside_the_command_as_nobody",
        Some(as_nobody),
    );
}

/// A command still controls what it starts: its background jobs, by pid or job number.
#[test]
fn a_command_still_signals_its_own_children() {
    let mut hx = Hx::new_offline();
    let (out, _) = turn(
        &mut hx,
        &["sleep 100 & kill %1 && echo job killed; wait; \
           sleep 100 & p=$!; kill $p && echo pid killed; wait $p; echo \"status $?\"; \
           sh -c 'kill -TERM $$' ; echo \"self $?\""],
        direct,
    );
    assert_eq!(
        out[0],
        "job killed\npid killed\nstatus 143\nTerminated\nself 143\n"
    );
}

/// In the run's pod the commands of one run share its PID namespace and may signal each
/// other (a server started by one call, stopped by the next), and nothing outside it; hx
/// itself ends what is left when the run ends. Without the pod, each command is a Landlock
/// domain of its own, and the signal scope refuses it.
#[test]
fn a_command_may_signal_what_an_earlier_one_left_running_only_in_the_pod() {
    let mut hx = Hx::new_offline();
    let (out, _) = turn(
        &mut hx,
        &[
            "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo started",
            "test -d /proc/$(cat bg.pid) && echo running; grep NSpid /proc/self/status",
        ],
        direct,
    );
    assert_eq!(out[0], "started\n");
    assert!(out[1].starts_with("running\n"), "{}", out[1]);
    let pid: i32 = hx.read_file("bg.pid").trim().parse().expect("pid");
    let in_pod = out[1]
        .lines()
        .nth(1)
        .is_some_and(|l| l.split_whitespace().count() == 2);
    assert!(in_pod, "not in a PID namespace of the run's: {}", out[1]);
    // The pid is the pod's; gone with the pod, whose processes hx ended.
    assert_eq!(
        crate::support::procs::host_pid(pid, hx.workspace()),
        crate::support::procs::GONE
    );

    let mut hx = Hx::new_offline();
    let (out, _) = turn(
        &mut hx,
        &[
            "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo started",
            "kill $(cat bg.pid); echo \"kill: $?\"",
        ],
        direct,
    );
    assert_eq!(out[1], "kill: 0\n");
    if no_scopes().is_none() {
        // Without the pod (no user namespaces), the scope refuses it.
        let mut hx = Hx::new_offline();
        let calls = [
            "sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; echo started",
            "kill $(cat bg.pid); echo \"kill: $?\"",
        ];
        let (out, _) = turn(&mut hx, &calls, |hx| {
            crate::sandbox::run_degraded(hx, false, true)
        });
        assert!(
            out[1].contains("Operation not permitted") && out[1].contains("kill: 1"),
            "{}",
            out[1]
        );
    }
}

fn python_connect(name: &str) -> String {
    format!(
        "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('\\0{name}'); print('connected')\""
    )
}

/// An abstract Unix socket someone else listens on (a desktop's X server or D-Bus, a tool's
/// control socket) cannot be connected to; one the command makes itself still works.
#[test]
fn an_abstract_socket_made_outside_cannot_be_reached() {
    if let Some(why) = no_scopes() {
        return skip("an_abstract_socket_made_outside_cannot_be_reached", &why);
    }
    let name = format!("hx-containment-{}", std::process::id());
    let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract name");
    let _listener = UnixListener::bind_addr(&addr).expect("listen");
    let own = format!(
        "python3 -c \"import socket\na = socket.socket(socket.AF_UNIX); a.bind('\\0{name}-own'); a.listen()\n\
         b = socket.socket(socket.AF_UNIX); b.connect('\\0{name}-own'); print('own: connected')\""
    );
    let mut hx = Hx::new_offline();
    let (out, _) = turn(&mut hx, &[&python_connect(&name), &own], direct);
    assert!(
        out[0].contains("PermissionError") && !out[0].contains("\nconnected"),
        "{}",
        out[0]
    );
    assert_eq!(out[1], "own: connected\n");
    // With the sandbox off nothing stands between them: the check above is the sandbox's.
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut hx, &[&python_connect(&name)], direct);
    assert_eq!(out[0], "connected\n");
}

const CAPS: &str = "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status";
const RAW: &str = "python3 -c \"import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print('raw socket')\"";

fn caps(status: &str, name: &str) -> u64 {
    let line = status
        .lines()
        .find(|l| l.starts_with(&format!("{name}:")))
        .unwrap_or_else(|| panic!("no {name} in {status}"));
    u64::from_str_radix(line[name.len() + 1..].trim(), 16).expect("hex")
}

fn assert_no_caps(status: &str) {
    for set in ["CapInh", "CapPrm", "CapEff", "CapAmb"] {
        assert_eq!(caps(status, set), 0, "{set} in\n{status}");
    }
}

fn assert_raw_refused(out: &str) {
    assert!(
        out.contains("PermissionError") && !out.contains("raw socket\n"),
        "{out}"
    );
}

/// As root (CI), a command runs with no capability at all: no raw sockets past the network
/// rules, no `chown` to another owner, no reading hx's memory (hx is not dumpable, so that
/// takes `CAP_SYS_PTRACE`). Hooks are the user's own commands and keep theirs, and with the
/// sandbox off commands keep them too.
#[test]
fn a_root_hx_runs_commands_without_capabilities() {
    const NAME: &str = "a_root_hx_runs_commands_without_capabilities";
    if !is_root() {
        return skip(
            NAME,
            "hx does not run as root here, so it has no capabilities to keep",
        );
    }
    let mut hx = Hx::new_offline();
    let hook = script(
        &hx,
        "caps.sh",
        &format!("cat >/dev/null; {CAPS} > \"$HOME/hook_caps\""),
    );
    user_hooks(&hx, json!({ "PreToolUse": groups("Bash", &[&hook], None) }));
    let (out, _) = turn(
        &mut hx,
        &[
            CAPS,
            RAW,
            "touch mine && chown 1:1 mine; echo \"chown: $?\"",
            "head -c 1 /proc/$PPID/mem; echo \"mem: $?\"",
            "tr '\\0' '\\n' < /proc/$PPID/environ; echo \"environ: $?\"",
        ],
        direct,
    );
    assert_no_caps(&out[0]);
    assert_eq!(caps(&out[0], "CapBnd"), 0, "{}", out[0]);
    assert_raw_refused(&out[1]);
    // In the pod uid 1 does not even exist (`Invalid argument`), and hx is not in its PID
    // namespace (`$PPID` is 0: no such file).
    assert!(
        (out[2].contains("Operation not permitted") || out[2].contains("Invalid argument"))
            && out[2].contains("chown: 1"),
        "{}",
        out[2]
    );
    let refused = |o: &str| o.contains("Permission denied") || o.contains("No such file");
    assert!(refused(&out[3]) && out[3].contains("mem: 1"), "{}", out[3]);
    assert!(
        refused(&out[4]) && out[4].ends_with("environ: 1\n"),
        "{}",
        out[4]
    );
    let hook_caps = std::fs::read_to_string(hx.home().join("hook_caps")).expect("the hook ran");
    assert_ne!(caps(&hook_caps, "CapEff"), 0, "{hook_caps}");

    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut hx, &[CAPS], direct);
    assert_ne!(caps(&out[0], "CapEff"), 0, "{}", out[0]);
}

/// An unprivileged hx that was given a capability (here `CAP_NET_RAW`, as an ambient one, the
/// way a wrapper grants it) does not pass it on to commands.
#[test]
fn an_unprivileged_hx_passes_no_capability_on() {
    const NAME: &str = "an_unprivileged_hx_passes_no_capability_on";
    let setpriv = match as_nobody() {
        Ok(p) => p,
        Err(why) => return skip(NAME, &why),
    };
    let mut granted = setpriv.clone();
    granted.extend(["--inh-caps=+net_raw", "--ambient-caps=+net_raw"].map(String::from));
    let mut hx = Hx::new_offline();
    let start = nobody_run(&mut hx, &granted);
    let (out, _) = turn(&mut hx, &[CAPS, RAW, "id -u"], start);
    assert_no_caps(&out[0]);
    assert_raw_refused(&out[1]);
    assert_eq!(out[2], format!("{}\n", confine::NOBODY));
}

/// `hx sandbox` lists each protection with whether this kernel enforces it; on a kernel with
/// Landlock ABI 6 or later, all of them are.
#[test]
fn hx_sandbox_lists_each_protection() {
    if let Some(why) = no_scopes() {
        return skip("hx_sandbox_lists_each_protection", &why);
    }
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY")
        .write_user_config("config.toml", "[sandbox]\nnetwork = false\n")
        .args(["sandbox", "--json"]);
    let run = hx.run();
    run.assert_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    for name in [
        "writes",
        "network",
        "signals",
        "abstract_sockets",
        "capabilities",
        "terminals",
        "leftovers",
        "metadata",
        "pathname_sockets",
        "git_metadata",
    ] {
        assert_eq!(v["protections"][name]["status"], "enforced", "{name}: {v}");
        assert!(v["protections"][name]["by"].is_string(), "{name}: {v}");
    }
    assert_eq!(v["enforcement"], "full");

    hx.clear_args().args(["sandbox"]);
    let run = hx.run();
    run.assert_code(0);
    for line in [
        "network:  none: a network namespace of the run's, with only loopback\n",
        "  writes:           enforced (read-only mounts outside the writable folders)\n",
        "  network:          enforced (a network namespace of the run's, with only loopback)\n",
        "  signals:          enforced (the run's PID namespace)\n",
        "  abstract sockets: enforced (the run's network namespace)\n",
        "  capabilities:     enforced (every capability dropped before the command starts)\n",
        "  terminals:        enforced (a /dev of the run's own, without the host's terminals)\n",
        "  leftovers:        enforced (the run's PID namespace, which ends with hx)\n",
        "  metadata:         enforced (read-only mounts outside the writable folders)\n",
        "  pathname sockets: enforced (a /tmp of the run's own, /run hidden, /dev/null over \
         other programs' sockets)\n",
        "  git metadata:     enforced (.git's config, hooks and info mounted read-only)\n",
    ] {
        assert!(run.stdout.contains(line), "{line:?} in\n{}", run.stdout);
    }
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}
