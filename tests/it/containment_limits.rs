//! Item 10 of issue 32, what the kernel enforces: with `network = false` no socket of a family
//! the network namespace does not cut (`AF_VSOCK` reached the VM's host), and a run's
//! processes are bounded (a loop forked 1,500 where `ulimit -u` allowed 96,367 against a
//! `pid_max` of 32,768). The real binary, the fake server, the real kernel; as root and as a
//! throwaway unprivileged user.

use crate::containment::{direct, turn};
use crate::support::confine::skip;
use crate::support::user::as_unprivileged_user;
use crate::support::{Hx, Run};

/// Makes an `AF_VSOCK` socket and connects it to the host (CID 2).
const VSOCK: &str = r#"python3 - <<'PY'
import socket
try:
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
except OSError as e:
    print("refused socket:", e.strerror)
    raise SystemExit
s.settimeout(2)
try:
    s.connect((2, 9999))
    print("CONNECTED")
except OSError as e:
    print("made; connect:", e.strerror)
PY"#;

/// Why vsock cannot show anything here (the kernel has no `AF_VSOCK`: the test would pass
/// whatever the sandbox does); `None` when it can.
fn no_vsock() -> Option<String> {
    // SAFETY: socket and close on integers.
    let fd = unsafe { libc::socket(libc::AF_VSOCK, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Some(format!(
            "this kernel makes no AF_VSOCK socket ({})",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: our own descriptor.
    unsafe { libc::close(fd) };
    None
}

fn vsock(name: &str, mut hx: Hx, run: &dyn Fn(&Hx) -> Run) {
    if let Some(why) = no_vsock() {
        return skip(name, &why);
    }
    hx.write_user_config("config.toml", "[sandbox]\nnetwork = false\n");
    let (out, _) = turn(&mut hx, &[VSOCK], run);
    assert_eq!(out[0], "refused socket: Permission denied\n");
}

#[test]
fn network_false_refuses_vsock() {
    vsock("network_false_refuses_vsock", Hx::new_offline(), &direct);
}

#[test]
fn network_false_refuses_vsock_as_an_unprivileged_user() {
    const NAME: &str = "network_false_refuses_vsock_as_an_unprivileged_user";
    as_unprivileged_user(NAME, |user| {
        let run = |hx: &Hx| user.run(hx);
        vsock(NAME, user.hx(), &run);
    });
}

/// Forks children that wait for the parent to end, until 1,500 or the first refusal.
const FORK: &str = r#"python3 - <<'PY'
import os
r, w = os.pipe()
n, err = 0, ""
try:
    while n < 1500:
        if os.fork() == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        n += 1
except OSError as e:
    err = e.strerror
print("forked", n, err)
PY"#;

/// The count a fork loop reached, from its line.
fn forked(out: &str) -> usize {
    out.strip_prefix("forked ")
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {out}"))
}

fn processes(hx: &mut Hx, run: &dyn Fn(&Hx) -> Run) {
    hx.write_user_config("config.toml", "[sandbox]\nmax_processes = 512\n");
    let (out, _) = turn(hx, &[FORK, "echo still here"], run);
    let n = forked(&out[0]);
    assert!(n < 512, "{}", out[0]);
    assert!(
        out[0].ends_with(" Resource temporarily unavailable\n"),
        "{}",
        out[0]
    );
    // The children ended with their parent: the next command can fork again.
    assert_eq!(out[1], "still here\n");
}

#[test]
fn a_runs_processes_are_bounded() {
    let mut hx = Hx::new_offline();
    processes(&mut hx, &direct);
}

#[test]
fn a_runs_processes_are_bounded_as_an_unprivileged_user() {
    as_unprivileged_user(
        "a_runs_processes_are_bounded_as_an_unprivileged_user",
        |user| {
            let mut hx = user.hx();
            processes(&mut hx, &|hx: &Hx| user.run(hx));
        },
    );
}
