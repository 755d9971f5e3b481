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
pub(crate) fn turn(
    hx: &mut Hx,
    commands: &[&str],
    start: impl FnOnce(&Hx) -> Run,
) -> (Vec<String>, Run) {
    let calls: Vec<Call> = Call::bash_each(commands);
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

pub(crate) fn direct(hx: &Hx) -> Run {
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
            "test -d /proc/$(cat bg.pid) && echo running; echo \"ppid: $PPID\"",
        ],
        direct,
    );
    assert_eq!(out[0], "started\n");
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
        "  git metadata:     enforced (the git folders found at the start (.git, submodules', \
         worktrees', nested repositories') with config, hooks and info mounted read-only, .git \
         files and worktrees' commondir read-only, a commondir a command makes removed after \
         it)\n",
    ] {
        assert!(run.stdout.contains(line), "{line:?} in\n{}", run.stdout);
    }
    assert!(run.stderr.is_empty(), "{}", run.stderr);
}

// The reproductions of issue 19 (docs/containment/repro/*.sh) against the real binary: each
// attack that worked against the sandbox before the pod must fail now, and what a command
// legitimately does inside the workspace must still work.

/// hx whose workspace lies outside `/tmp` (the pod's `/tmp` is the run's own, so a victim
/// the test puts beside the workspace must not be in the host's), with a victim folder.
fn hx_with_victim() -> (Hx, std::path::PathBuf) {
    let hx = Hx::new_offline_in(&crate::support::outside_tmp());
    let top = hx.workspace().parent().expect("test root").join("victim");
    std::fs::create_dir(&top).expect("victim folder");
    (hx, top)
}

/// Item 4: chmod, chown, touch and setxattr outside the writable roots fail (Landlock has no
/// right for them; the pod's tree is read-only), and each works in the workspace.
#[test]
fn metadata_outside_the_writable_roots_cannot_change() {
    use std::os::unix::fs::MetadataExt;
    let (mut hx, top) = hx_with_victim();
    let f = top.join("file");
    std::fs::write(&f, "data\n").expect("victim");
    std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    let before = std::fs::metadata(&f).expect("stat");
    let (u, g) = (before.uid(), before.gid());
    let setxattr = |p: &str| {
        format!("python3 -c \"import os; os.setxattr('{p}', 'user.hx', b'1')\"; echo \"xattr: $?\"")
    };
    let outside = f.display().to_string();
    let (out, _) = turn(
        &mut hx,
        &[
            &format!("chmod 600 '{outside}'; echo \"chmod: $?\""),
            &format!("chown {u}:{g} '{outside}'; echo \"chown: $?\""),
            &format!("touch -d 2001-01-01 '{outside}'; echo \"touch: $?\""),
            &setxattr(&outside),
            "echo x > f && chmod 600 f && chown $(id -u):$(id -g) f && touch -d 2001-01-01 f && echo inside",
            &setxattr("f"),
        ],
        direct,
    );
    for (o, what) in out[..4].iter().zip(["chmod", "chown", "touch", "xattr"]) {
        assert!(o.contains("Read-only file system"), "{what}: {o}");
        assert!(o.ends_with(&format!("{what}: 1\n")), "{what}: {o}");
    }
    let after = std::fs::metadata(&f).expect("stat");
    assert_eq!(
        (after.mode(), after.uid(), after.gid(), after.mtime()),
        (before.mode(), before.uid(), before.gid(), before.mtime())
    );
    let names = std::process::Command::new("python3")
        .args([
            "-c",
            &format!("import os; print(os.listxattr('{outside}'))"),
        ])
        .output()
        .expect("python3");
    assert_eq!(String::from_utf8_lossy(&names.stdout), "[]\n");
    assert_eq!(out[4], "inside\n");
    assert_eq!(out[5], "xattr: 0\n");
    let inside = std::fs::metadata(hx.workspace().join("f")).expect("stat");
    assert_eq!(inside.mode() & 0o777, 0o600);
}

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Item 6: `.git/config`, `.git/hooks` (missing ones too) and `.git/info` are read-only to
/// commands, and `.git` cannot be moved away and replaced; objects, refs, the index and logs
/// stay writable, so `git commit` works and shows outside.
#[test]
fn git_config_hooks_and_info_are_read_only_but_commits_work() {
    let mut hx = Hx::new_offline();
    let ws = hx.workspace().to_path_buf();
    git(&ws, &["init", "-q", "."]);
    git(&ws, &["config", "user.email", "t@t"]);
    git(&ws, &["config", "user.name", "t"]);
    std::fs::write(ws.join("f"), "hi\n").expect("f");
    git(&ws, &["add", "f"]);
    git(&ws, &["commit", "-qm", "init"]);
    // A missing hooks folder must not be creatable either.
    std::fs::remove_dir_all(ws.join(".git/hooks")).expect("rm hooks");
    let config = std::fs::read_to_string(ws.join(".git/config")).expect("config");
    let (out, _) = turn(
        &mut hx,
        &[
            "git config core.fsmonitor 'touch /tmp/pwned'; echo \"config: $?\"",
            "echo '[core] hooksPath = /tmp/evil' >> .git/config; echo \"append: $?\"",
            "mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit; echo \"hook: $?\"",
            "echo '* filter=evil' > .git/info/attributes; echo \"info: $?\"",
            "mv .git .git-moved && mkdir .git && echo planted > .git/config; echo \"mv: $?\"",
            "echo more >> f && git commit -qam second && git log --oneline | wc -l",
        ],
        direct,
    );
    for (o, what) in out[..5]
        .iter()
        .zip(["config", "append", "hook", "info", "mv"])
    {
        assert!(
            o.contains(&format!("{what}: ")) && !o.ends_with(&format!("{what}: 0\n")),
            "{what}: {o}"
        );
    }
    assert!(out[4].contains("Device or resource busy"), "{}", out[4]);
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).expect("config"),
        config
    );
    assert!(!ws.join(".git/hooks/pre-commit").exists());
    assert!(!ws.join(".git/info/attributes").exists());
    assert!(ws.join(".git/objects").is_dir() && !ws.join(".git-moved").exists());
    assert_eq!(out[5].trim(), "2", "{}", out[5]);
    assert_eq!(git(&ws, &["log", "--oneline"]).lines().count(), 2);
}

/// Opens every terminal device it finds (and `argv[1]`), reading what arrives for 0.3 s.
const OPEN_TERMINALS: &str = r#"import glob, os, select, sys
paths = [sys.argv[1]] + sorted(glob.glob('/dev/pts/[0-9]*')) + ['/dev/tty', '/dev/console'] \
    + sorted(glob.glob('/dev/tty[0-9]*'))[:8] + sorted(glob.glob('/dev/ttyS*'))[:2] \
    + sorted(glob.glob('/dev/vcs*'))[:2]
for p in dict.fromkeys(paths):
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as e:
        print('refused', p, e.strerror); continue
    got = b''
    if select.select([fd], [], [], 0.3)[0]:
        try: got = os.read(fd, 64)
        except OSError: pass
    print('OPENED', p, got)
"#;

/// Item 1: no command may open a terminal device: not another terminal's `/dev/pts/N` (a
/// pseudo-terminal the test holds open and "types" into), not `/dev/tty*`, not the console.
#[test]
fn a_command_cannot_open_the_users_terminals() {
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two descriptors we own; no name, termios or winsize.
    let r = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    let mut name = [0u8; 128];
    // SAFETY: ptsname_r writes a NUL-terminated name into our buffer.
    let r = unsafe { libc::ptsname_r(master, name.as_mut_ptr().cast(), name.len()) };
    assert_eq!(r, 0, "ptsname");
    let victim = std::ffi::CStr::from_bytes_until_nul(&name)
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let typing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let typist = {
        let typing = typing.clone();
        std::thread::spawn(move || {
            while typing.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: writing a constant buffer to our own master.
                unsafe { libc::write(master, b"KEYSTROKE\n".as_ptr().cast(), 10) };
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
    };
    let attack = format!("python3 - '{victim}' <<'PY'\n{OPEN_TERMINALS}PY");
    let mut hx = Hx::new_offline();
    let (out, _) = turn(
        &mut hx,
        &[&attack, "ls /dev", "script -qc 'tty' /dev/null"],
        direct,
    );
    typing.store(false, std::sync::atomic::Ordering::Relaxed);
    let _ = typist.join();
    // SAFETY: closing our own descriptors.
    unsafe {
        libc::close(master);
        libc::close(slave);
    }
    assert!(!out[0].contains("OPENED"), "{}", out[0]);
    assert!(out[0].contains(&format!("refused {victim} ")), "{}", out[0]);
    assert!(!out[0].contains("KEYSTROKE"), "{}", out[0]);
    let devices: Vec<&str> = out[1].lines().collect();
    assert!(
        !devices
            .iter()
            .any(|d| d.starts_with("tty") && *d != "tty" || *d == "console"),
        "{devices:?}"
    );
}

/// The processes whose command line holds `token`, each pid seen over `span` of continuous
/// scanning: a fork chain renews its pid faster than one pass over /proc reads it.
fn seen_with(token: &str, span: std::time::Duration) -> std::collections::BTreeSet<i32> {
    let mut seen = std::collections::BTreeSet::new();
    let end = std::time::Instant::now() + span;
    while std::time::Instant::now() < end {
        for p in with_token(token) {
            seen.insert(p);
        }
    }
    seen
}

fn with_token(token: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(token))
        })
        .collect()
}

/// Stops and kills whatever carries `token` for 3 s, so a failing test leaves no chain.
fn reap_token(token: &str) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < end {
        for p in with_token(token) {
            // SAFETY: signals to processes this test started (their command line has its token).
            unsafe {
                libc::kill(p, libc::SIGSTOP);
                libc::kill(p, libc::SIGKILL);
            }
        }
    }
}

/// A fork chain in which each generation calls setsid, forks and exits.
fn chain(token: &str) -> String {
    format!(
        "python3 -c 'import os\nwhile True:\n    if os.fork(): os._exit(0)\n    os.setsid()' {token} >/dev/null 2>&1 &"
    )
}

/// Item 3: nothing a command started outlives hx, however it forked: a setsid fork chain is
/// gone one second after hx answered, and one second after hx was killed with SIGKILL during
/// the command.
#[test]
fn a_fork_chain_does_not_outlive_hx_on_any_exit() {
    let token = format!("hx-ct-chain-{}-{}", std::process::id(), fastrand::u32(..));
    let a = format!("{token}-a");
    let mut hx = Hx::new_offline();
    let (out, _) = turn(&mut hx, &[&format!("{} echo started", chain(&a))], direct);
    assert_eq!(out[0], "started\n");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let left = seen_with(&a, std::time::Duration::from_secs(1));
    reap_token(&a);
    assert!(
        left.is_empty(),
        "{} chain pids alive 1 s after hx answered",
        left.len()
    );

    let b = format!("{token}-b");
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({ "command": format!("{} sleep 60", chain(&b)) }).to_string(),
        )]),
        Reply::text("never"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "go"]);
    let mut child = hx.spawn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while with_token(&b).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!with_token(&b).is_empty(), "the chain never started");
    child.kill().expect("SIGKILL hx");
    let _ = child.wait();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let left = seen_with(&b, std::time::Duration::from_secs(1));
    reap_token(&b);
    assert!(
        left.is_empty(),
        "{} chain pids alive 1 s after SIGKILL of hx",
        left.len()
    );
}

/// Tries every way out to loopback servers outside on `argv[1]` (TCP, Fast Open, MPTCP, UDP to
/// the next port, IPv6), then a loopback server of its own.
const NETWORK_ATTACK: &str = r#"import socket, sys, threading
port = int(sys.argv[1])
def attempt(what, f):
    try: f(); print("SENT", what)
    except OSError as e: print("refused", what, e.strerror)
def plain():
    s = socket.socket(); s.settimeout(1); s.connect(("127.0.0.1", port)); s.sendall(b"plain")
def tfo():
    s = socket.socket(); s.settimeout(1); s.sendto(b"fastopen", socket.MSG_FASTOPEN, ("127.0.0.1", port))
def mptcp():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262); s.settimeout(1); s.connect(("127.0.0.1", port)); s.sendall(b"mptcp")
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b"udp", ("127.0.0.1", port + 1))
def v6():
    s = socket.socket(socket.AF_INET6); s.settimeout(1); s.connect(("::1", port)); s.sendall(b"ipv6")
for w, f in [("connect", plain), ("fastopen", tfo), ("mptcp", mptcp), ("udp", udp), ("ipv6", v6)]: attempt(w, f)
def inside():
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
    threading.Thread(target=lambda: srv.accept()[0].sendall(b"ok"), daemon=True).start()
    c = socket.socket(); c.settimeout(1); c.connect(srv.getsockname()); assert c.recv(2) == b"ok"
attempt("inside-loopback", inside)
"#;

/// Item 7: with `network = false` no IPv4 or IPv6 traffic leaves a command, UDP, TCP Fast
/// Open and MPTCP included, and loopback servers outside are unreachable; a loopback server
/// of the command's own still works.
#[test]
fn network_false_lets_nothing_out_but_keeps_loopback_inside() {
    use std::io::Read;
    let tcp4 = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = tcp4.local_addr().expect("addr").port();
    let tcp6 = std::net::TcpListener::bind(("::1", port)).ok();
    let udp = std::net::UdpSocket::bind(("127.0.0.1", port + 1)).ok();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut watchers = Vec::new();
    for l in std::iter::once(tcp4).chain(tcp6) {
        l.set_nonblocking(true).expect("nonblocking");
        let (got, done) = (got.clone(), done.clone());
        watchers.push(std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut c, _)) => {
                        let _ = c.set_read_timeout(Some(std::time::Duration::from_millis(500)));
                        let mut b = [0u8; 64];
                        let n = c.read(&mut b).unwrap_or(0);
                        got.lock().unwrap().push(format!(
                            "tcp accepted: {:?}",
                            String::from_utf8_lossy(&b[..n])
                        ));
                    }
                    Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
                }
            }
        }));
    }
    if let Some(u) = udp {
        u.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .expect("timeout");
        let (got, done) = (got.clone(), done.clone());
        watchers.push(std::thread::spawn(move || {
            let mut b = [0u8; 64];
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(n) = u.recv(&mut b) {
                    got.lock()
                        .unwrap()
                        .push(format!("udp: {:?}", String::from_utf8_lossy(&b[..n])));
                }
            }
        }));
    }
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "[sandbox]\nnetwork = false\n");
    let attack = format!("python3 - {port} <<'PY'\n{NETWORK_ATTACK}PY");
    let (out, _) = turn(&mut hx, &[&attack], direct);
    std::thread::sleep(std::time::Duration::from_millis(300));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in watchers {
        let _ = w.join();
    }
    let got = got.lock().unwrap().clone();
    assert!(got.is_empty(), "reached outside: {got:?}\n{}", out[0]);
    // A datagram is sent into the pod's own network namespace, where no one listens: the
    // listener outside (checked above) got nothing.
    for w in ["connect", "fastopen", "mptcp", "ipv6"] {
        assert!(out[0].contains(&format!("refused {w} ")), "{w}: {}", out[0]);
    }
    assert!(out[0].contains("SENT inside-loopback"), "{}", out[0]);
}

/// Serves `hello` on a pathname Unix socket at `path` until the test ends.
fn serve_unix(path: &std::path::Path) -> std::os::unix::net::UnixListener {
    use std::io::Write;
    let l = std::os::unix::net::UnixListener::bind(path)
        .unwrap_or_else(|e| panic!("bind {}: {e}", path.display()));
    let serving = l.try_clone().expect("clone");
    std::thread::spawn(move || {
        for mut c in serving.incoming().flatten() {
            let _ = c.write_all(b"hello");
        }
    });
    l
}

fn unix_connect(path: &std::path::Path) -> String {
    format!(
        "python3 -c \"import socket\ns = socket.socket(socket.AF_UNIX); s.settimeout(1)\ntry:\n    s.connect('{}'); print('CONNECTED', s.recv(5))\nexcept OSError as e:\n    print('refused', e.strerror)\"",
        path.display()
    )
}

/// Item 5: a command reaches no pathname socket of a program hx did not start in the
/// sandbox: not one outside the workspace, not one in `/tmp` (tmux, X11, ssh-agent), not one
/// in `/run` (D-Bus, Docker, the user's runtime folder), and not one bound after the run
/// began; one it makes in the workspace still works.
#[test]
fn other_programs_unix_sockets_cannot_be_reached() {
    let (mut hx, top) = hx_with_victim();
    let home = top.join("home.sock");
    let tmux = tempfile::Builder::new()
        .prefix("hx-ct-tmux-")
        .tempdir_in("/tmp")
        .expect("tmux-like folder");
    let tmux_sock = tmux.path().join("default");
    let run_sock = std::path::PathBuf::from(format!("/run/hx-ct-{}.sock", std::process::id()));
    let _listeners = [serve_unix(&home), serve_unix(&tmux_sock)];
    let run_listener = std::os::unix::net::UnixListener::bind(&run_sock).ok();
    let late = top.join("late.sock");
    // The late socket is bound while the run goes on: after the first command says so, and
    // before the next one connects (the per-call sweep must find it).
    let (go, bound) = (hx.workspace().join("go"), hx.workspace().join("bound"));
    let binder = {
        let (late, go, bound) = (late.clone(), go.clone(), bound.clone());
        std::thread::spawn(move || {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !go.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            let l = serve_unix(&late);
            std::fs::write(&bound, "").expect("bound");
            l
        })
    };
    let own = "python3 -c \"import socket\na = socket.socket(socket.AF_UNIX); a.bind('own.sock'); a.listen()\nb = socket.socket(socket.AF_UNIX); b.connect('own.sock'); print('own: connected')\"";
    let wait = "touch go; while [ ! -e bound ]; do sleep 0.02; done; echo bound";
    let mut calls = vec![
        unix_connect(&home),
        unix_connect(&tmux_sock),
        wait.to_string(),
        unix_connect(&late),
        own.to_string(),
    ];
    if run_listener.is_some() {
        calls.push(unix_connect(&run_sock));
    }
    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
    let (out, _) = turn(&mut hx, &calls, direct);
    let _late = binder.join().expect("binder");
    let _ = std::fs::remove_file(&run_sock);
    for (i, what) in [(0, "outside"), (1, "in /tmp"), (3, "bound later")] {
        assert!(out[i].starts_with("refused"), "{what}: {}", out[i]);
    }
    assert_eq!(out[2], "bound\n");
    assert_eq!(out[4], "own: connected\n");
    if run_listener.is_some() {
        assert!(out[5].starts_with("refused"), "in /run: {}", out[5]);
    }
    // With the sandbox off, the same connect works: the refusals above are the pod's.
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "sandbox = \"off\"\n");
    let (out, _) = turn(&mut hx, &[&unix_connect(&home)], direct);
    assert!(out[0].starts_with("CONNECTED"), "{}", out[0]);
}

/// The processes below `root`, by parent links in /proc.
fn descendants(root: i32) -> Vec<i32> {
    let mut parent = std::collections::BTreeMap::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        if let Some(pp) = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .and_then(|v| v.trim().parse::<i32>().ok())
        {
            parent.insert(p, pp);
        }
    }
    let below = |mut p: i32| {
        for _ in 0..64 {
            match parent.get(&p) {
                Some(&pp) if pp == root => return true,
                Some(&pp) if pp > 1 => p = pp,
                _ => return false,
            }
        }
        false
    };
    parent.keys().copied().filter(|&p| below(p)).collect()
}

/// A pod whose pid 1 died during the run (here killed from outside, as the OOM killer
/// would) takes the command running in it along, and the next command fails with an error
/// that says so instead of running unconfined.
#[test]
fn a_pod_that_died_fails_the_next_command_clearly() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "c1",
            "bash",
            &json!({ "command": "touch started; sleep 60" }).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new(
            "c2",
            "bash",
            &json!({ "command": "echo ran" }).to_string(),
        )]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "go"]);
    let child = hx.spawn();
    let started = hx.workspace().join("started");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !started.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // The pod's pid 1: a process of hx's whose innermost pid is 1.
    let init = descendants(child.id() as i32).into_iter().find(|p| {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("NSpid:"))
            .is_some_and(|ns| {
                let ids: Vec<&str> = ns.split_whitespace().collect();
                ids.len() == 2 && ids[1] == "1"
            })
    });
    let init = init.expect("the pod's pid 1");
    // SAFETY: killing a process of the hx this test started.
    unsafe { libc::kill(init, libc::SIGKILL) };
    let run = crate::support::Run::wait(child, std::time::Duration::from_secs(30));
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3, "{}", run.dump());
    let first = tool_results(&reqs[1].body);
    assert_eq!(first[0], "(no output)\n[killed by signal 9 (SIGKILL)]");
    let results = tool_results(&reqs[2].body);
    let second = results.last().expect("c2's result");
    assert!(
        second.contains("the run's sandbox (its pod of namespaces) has exited")
            && !second.contains("ran"),
        "{second}"
    );
}

/// Where hx can make no user namespace (simulated with a seccomp filter in the process that
/// becomes hx), the commands still run under Landlock and without capabilities, the one
/// warning names exactly what only the pod enforces, `hx sandbox` says the same, and
/// `sandbox.required` refuses to run before any request.
#[test]
fn without_user_namespaces_the_run_names_what_is_missing_and_required_refuses() {
    if let Some(why) = no_scopes() {
        return skip(
            "without_user_namespaces_the_run_names_what_is_missing_and_required_refuses",
            &why,
        );
    }
    let (mut hx, top) = hx_with_victim();
    let f = top.join("file");
    std::fs::write(&f, "x").expect("victim");
    let (out, run) = turn(
        &mut hx,
        &[
            &format!("echo y > '{}'; echo \"write: $?\"", f.display()),
            KILL_HX,
            "grep CapEff /proc/self/status",
        ],
        |hx| crate::sandbox::run_degraded(hx, false, true),
    );
    assert!(
        out[0].contains("Permission denied") && out[0].contains("write: 1"),
        "{}",
        out[0]
    );
    assert_kill_refused(&out[1]);
    assert_eq!(out[2], "CapEff:\t0000000000000000\n");
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning:"))
        .collect();
    assert_eq!(
        warnings,
        [
            "hx: warning: the sandbox is partial: hx cannot make its pod of namespaces here \
          (unshare: Operation not permitted (os error 1)), so it cannot enforce all of \
          workspace-write: hiding the terminals (/dev/pts, /dev/tty*, /dev/console) (needs user \
          namespaces); ending what commands started when hx is killed (needs user namespaces); \
          refusing chmod, chown, touch and xattrs outside the writable folders (needs user \
          namespaces); hiding other programs' Unix sockets (tmux, D-Bus, ssh-agent, Docker) \
          (needs user namespaces); keeping .git/config, hooks and info read-only (needs user \
          namespaces) (set sandbox.required = true to refuse to run instead)"
        ],
        "{}",
        run.dump()
    );

    hx.clear_args()
        .env_remove("DEEPSEEK_API_KEY")
        .args(["sandbox", "--json"]);
    let run = crate::sandbox::run_degraded(&hx, false, true);
    run.assert_code(0);
    let v: Value = serde_json::from_str(&run.stdout).expect("json");
    for name in ["terminals", "metadata", "pathname_sockets", "git_metadata"] {
        assert_eq!(v["protections"][name]["status"], "missing", "{name}: {v}");
    }
    assert_eq!(v["protections"]["leftovers"]["status"], "partial", "{v}");
    for name in ["writes", "signals", "abstract_sockets", "capabilities"] {
        assert_eq!(v["protections"][name]["status"], "enforced", "{name}: {v}");
    }

    hx.write_user_config("config.toml", "[sandbox]\nrequired = true\n");
    let server = FakeServer::start(vec![Reply::text("never")]);
    hx.clear_args()
        .env("DEEPSEEK_API_KEY", "test-key")
        .env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "write"]);
    let run = crate::sandbox::run_degraded(&hx, false, true);
    run.assert_code(2);
    assert!(server.requests().is_empty());
    assert!(
        run.stderr.starts_with(
            "hx: sandbox.required is set, but hx cannot make its pod of namespaces here"
        ),
        "{}",
        run.stderr
    );
}

/// The pod needs no privilege: as `nobody`, hx makes it too (no warning), the command runs in
/// its PID namespace, metadata outside is refused, and `/dev/pts` is the pod's own.
#[test]
fn the_pod_holds_for_an_unprivileged_user() {
    const NAME: &str = "the_pod_holds_for_an_unprivileged_user";
    let setpriv = match as_nobody() {
        Ok(p) => p,
        Err(why) => return skip(NAME, &why),
    };
    let (mut hx, top) = hx_with_victim();
    let f = top.join("file");
    std::fs::write(&f, "x").expect("victim");
    let start = nobody_run(&mut hx, &setpriv);
    let (out, run) = turn(
        &mut hx,
        &[
            &format!("chmod 600 '{}'; echo \"chmod: $?\"", f.display()),
            "echo \"ppid: $PPID\"; id -u",
            "ls /dev/pts",
        ],
        start,
    );
    assert!(
        out[0].contains("Read-only file system") && out[0].ends_with("chmod: 1\n"),
        "{}",
        out[0]
    );
    let lines: Vec<&str> = out[1].lines().collect();
    // The parent (the launcher) is outside the pod's PID namespace.
    assert_eq!(lines[0], "ppid: 0", "{}", out[1]);
    assert_eq!(lines[1], confine::NOBODY.to_string());
    assert_eq!(out[2], "ptmx\n");
    assert!(!run.stderr.contains("warning"), "{}", run.dump());
}

/// Without Landlock the pod still confines writes (read-only mounts, with the note that says
/// so), and the one warning names only what needs Landlock there: abstract sockets, with the
/// network shared.
#[test]
fn without_landlock_the_pod_still_confines_writes() {
    let (mut hx, top) = hx_with_victim();
    let (out, run) = turn(
        &mut hx,
        &[&format!("touch '{}'", top.join("new").display())],
        |hx| crate::sandbox::run_degraded(hx, true, false),
    );
    assert!(out[0].contains("Read-only file system"), "{}", out[0]);
    assert!(
        out[0].contains("[sandbox] hx's sandbox refused the write to"),
        "{}",
        out[0]
    );
    assert!(!top.join("new").exists());
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning:"))
        .collect();
    assert_eq!(
        warnings,
        ["hx: warning: the sandbox is partial: this kernel has no Landlock (it needs Linux 5.13 \
          or later built with CONFIG_SECURITY_LANDLOCK), so hx cannot enforce all of \
          workspace-write: refusing connections to abstract Unix sockets made outside the \
          command (needs Landlock) (set sandbox.required = true to refuse to run instead)"],
        "{}",
        run.dump()
    );
}

/// A command cannot undo the pod's read-only mounts: not by unmounting or remounting them,
/// not by binding the home folder elsewhere, not from a nested user namespace of its own
/// (where they are locked). `docs/containment/repro/escape-mounts.py` tries each.
#[test]
fn the_pods_mounts_cannot_be_undone_from_inside() {
    let script = crate::support::visible::outside_pods_tmp(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/containment/repro/escape-mounts.py"),
    );
    let mut hx = Hx::new_offline();
    hx.write_file(".git/config", "[core]\n");
    let (out, _) = turn(
        &mut hx,
        &[&format!("python3 '{}'", script.display())],
        direct,
    );
    assert!(!out[0].contains("ESCAPED"), "{}", out[0]);
    for attempt in [
        "refused umount .git/config",
        "refused remount .git/config rw",
        "refused remount / rw",
        "refused bind ~",
    ] {
        assert!(out[0].contains(attempt), "{attempt}: {}", out[0]);
    }
    // The nested namespace gets no further than its id maps: Landlock refuses the write to
    // /proc/self/setgroups (where Landlock is missing, the locked mounts refuse the rest).
    assert!(
        out[0].contains("PermissionError") || out[0].contains("refused nested: "),
        "{}",
        out[0]
    );
}

/// `sandbox.allow_sockets`: a socket the user allows on purpose is reachable in the pod (and
/// its variable passed), while the others stay hidden.
#[test]
fn an_allowed_socket_is_reachable_in_the_pod() {
    let (mut hx, top) = hx_with_victim();
    let allowed = top.join("agent.sock");
    let other = top.join("other.sock");
    let _listeners = [serve_unix(&allowed), serve_unix(&other)];
    hx.write_user_config(
        "config.toml",
        &format!("[sandbox]\nallow_sockets = [\"{}\"]\n", allowed.display()),
    )
    .env("SSH_AUTH_SOCK", &allowed);
    let calls = [
        unix_connect(&allowed),
        unix_connect(&other),
        "echo \"agent=$SSH_AUTH_SOCK\"".to_string(),
    ];
    let calls: Vec<&str> = calls.iter().map(String::as_str).collect();
    let (out, _) = turn(&mut hx, &calls, direct);
    assert!(out[0].starts_with("CONNECTED"), "allowed: {}", out[0]);
    assert!(out[1].starts_with("refused"), "not allowed: {}", out[1]);
    assert_eq!(out[2], format!("agent={}\n", allowed.display()));
}
