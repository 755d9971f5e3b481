//! `hx __sandbox exec --pod FD [--ruleset FD] [--net] [--keep PATH]... [--place DEPTH:PATH]...
//! -- PROGRAM ARGS...`:
//! runs one command (or MCP server) in the run's pod (L and C in the module's description).
//! Its own failures print one `hx: sandbox: ...` line and exit 125, as `env` and `timeout`
//! do, since the command never ran.

use std::ffi::{CString, OsString};
use std::io::{self, Write};
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::sockets::{cover_socket, foreign_sockets, Place};
use crate::sandbox::caps::CapDrop;
use crate::sandbox::seccomp::Sockets;

const FAILED: i32 = 125;

struct Args {
    pod: RawFd,
    ruleset: Option<RawFd>,
    net: bool,
    kept: Vec<PathBuf>,
    places: Vec<Place>,
    argv: Vec<OsString>,
}

fn parse(args: &[OsString]) -> Result<Args, String> {
    let mut a = Args {
        pod: -1,
        ruleset: None,
        net: false,
        kept: Vec::new(),
        places: Vec::new(),
        argv: Vec::new(),
    };
    let fd = |v: Option<&OsString>| -> Result<RawFd, String> {
        v.and_then(|v| v.to_str())
            .and_then(|v| v.parse::<RawFd>().ok())
            .filter(|&n| n > 2)
            .ok_or_else(|| "a descriptor number is missing".to_string())
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        match arg.to_str() {
            Some("--pod") => a.pod = fd(it.next())?,
            Some("--ruleset") => a.ruleset = Some(fd(it.next())?),
            Some("--net") => a.net = true,
            Some("--keep") => a
                .kept
                .push(PathBuf::from(it.next().ok_or("--keep needs a path")?)),
            Some("--place") => a.places.push(
                it.next()
                    .and_then(|p| p.to_str())
                    .and_then(Place::parse)
                    .ok_or("--place needs DEPTH:PATH")?,
            ),
            Some("--") => {
                a.argv = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if a.pod < 0 || a.argv.is_empty() {
        return Err("needs --pod and a program".into());
    }
    Ok(a)
}

fn say(what: &str) {
    let _ = writeln!(io::stderr(), "hx: sandbox: {what}");
}

pub fn main(args: &[OsString]) -> i32 {
    let a = match parse(args) {
        Ok(a) => a,
        Err(e) => {
            say(&e);
            return FAILED;
        }
    };
    // In hx's network namespace, before joining the pod's: sockets bound since the pod
    // started (or since the last call) are covered too; other namespaces' only at the start.
    let sockets = foreign_sockets(&a.kept, &a.places, false);
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            say(&format!("cannot read the working folder: {e}"));
            return FAILED;
        }
    };
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if a.net {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: setns and close on integers; this process has one thread.
    let joined = unsafe { libc::setns(a.pod, flags) };
    if joined != 0 {
        say(&format!(
            "cannot enter the run's sandbox: {}",
            io::Error::last_os_error()
        ));
        return FAILED;
    }
    unsafe { libc::close(a.pod) };
    for s in &sockets {
        let _ = cover_socket(s);
    }
    if let Err(e) = std::env::set_current_dir(&cwd) {
        say(&format!(
            "cannot enter {} in the sandbox: {e}",
            cwd.display()
        ));
        return FAILED;
    }
    let argv: Vec<CString> = match a
        .argv
        .iter()
        .map(|s| CString::new(s.as_bytes()))
        .collect::<Result<_, _>>()
    {
        Ok(v) => v,
        Err(_) => {
            say("an argument holds a NUL byte");
            return FAILED;
        }
    };
    let caps = CapDrop::detect();
    // The signals L forwards, and SIGCHLD, are taken synchronously.
    // SAFETY: signal mask calls on this single-threaded process.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::sigaddset(&mut set, *s);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };
    // Built before the fork (it allocates): the filter's architecture and io_uring rules.
    // IP is the pod's own network namespace's business, so IP sockets stay allowed here; the
    // families that namespace does not cut (vsock, ...) are refused with `network = false`.
    let sockets = if a.net {
        Sockets::InNamespace
    } else {
        Sockets::All
    };
    let filter = crate::sandbox::seccomp::available()
        .then(|| crate::sandbox::seccomp::Filter::new(sockets))
        .flatten();
    // A full pod (`sandbox.max_processes`) refuses with EAGAIN; the processes of the command
    // before (a fork loop's children ending with their parent) may still be on their way
    // out, so the next command waits up to a second for room before it fails.
    let mut tries = 0;
    let child = loop {
        // SAFETY: one thread; the child only makes syscalls and execs (or exits).
        let child = unsafe { libc::fork() };
        let e = io::Error::last_os_error();
        if child >= 0 || e.raw_os_error() != Some(libc::EAGAIN) || tries == 50 {
            break (child, e);
        }
        tries += 1;
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (child, fork_error) = child;
    if child < 0 {
        say(&format!("cannot fork: {fork_error}"));
        return FAILED;
    }
    if child == 0 {
        command(&argv, a.ruleset, caps, filter.as_ref());
    }
    if let Some(r) = a.ruleset {
        // SAFETY: our copy of the ruleset; the command has its own.
        unsafe { libc::close(r) };
    }
    // L holds none of the command's pipes, so their end-of-file comes when the command's
    // processes are done with them, as without the pod.
    for fd in 0..3 {
        super::sys::to_null(fd);
    }
    let _ = caps.apply();
    relay(child, &set)
}

/// The signals a caller may send L that the command should get instead.
const FORWARDED: [libc::c_int; 6] = [
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// C: in the pod's PID namespace, in L's process group (so hx's `killpg` of L's group reaches
/// it and what it starts). Never returns.
fn command(
    argv: &[CString],
    ruleset: Option<RawFd>,
    caps: CapDrop,
    filter: Option<&crate::sandbox::seccomp::Filter>,
) -> ! {
    // Not L's state (SIGPIPE ignored by Rust's runtime, the relayed signals blocked): the
    // command starts as any program expects to.
    super::sys::default_signals();
    // SAFETY: plain syscalls in the forked child; on failure it prints one line and exits.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if let Err(e) = crate::sandbox::enter(ruleset, caps, filter) {
            say(&format!("cannot confine the command: {e}"));
            libc::_exit(FAILED);
        }
        if let Some(r) = ruleset {
            libc::close(r);
        }
        let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        libc::execvp(ptrs[0], ptrs.as_ptr());
        let e = io::Error::last_os_error();
        say(&format!("cannot run {}: {e}", argv[0].to_string_lossy()));
        libc::_exit(if e.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        });
    }
}

/// Forwards signals to the command until it exits, then exits the way it did.
fn relay(child: libc::pid_t, set: &libc::sigset_t) -> i32 {
    loop {
        // SAFETY: a siginfo we own; the set holds only blocked signals.
        let sig = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::sigwaitinfo(set, &mut info)
        };
        if sig < 0 {
            continue;
        }
        if sig != libc::SIGCHLD {
            // SAFETY: a signal to our own child.
            unsafe { libc::kill(child, sig) };
            continue;
        }
        let mut status = 0;
        // SAFETY: reaps our one child without blocking.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r != child {
            continue;
        }
        if libc::WIFEXITED(status) {
            return libc::WEXITSTATUS(status);
        }
        if libc::WIFSIGNALED(status) {
            let sig = libc::WTERMSIG(status);
            // SAFETY: dies of the same signal, without a core file of its own.
            unsafe {
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                libc::signal(sig, libc::SIG_DFL);
                let mut only: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut only);
                libc::sigaddset(&mut only, sig);
                libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
                libc::kill(libc::getpid(), sig);
            }
            return 128 + sig;
        }
    }
}
