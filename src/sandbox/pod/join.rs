//! L without a program of its own: hx's forked child joins the pod, starts the command in
//! it and relays signals and the exit status, as `hx __sandbox exec` does from a process it
//! execs. That exec (the loader, the runtime's start, the arguments parsed back) was most of
//! what the pod added to a call: about a millisecond of the 1.5 that
//! `cargo bench --bench sandbox` measured (issue 33).
//!
//! The child of a threaded process may only make async-signal-safe calls until it execs,
//! and L never execs: so everything that allocates is made in hx, before the fork
//! ([`Pod::join`]), and [`Join::run`] makes only syscalls on what was made there.
//!
//! L makes the command's process (C) with `clone(CLONE_VM | CLONE_VFORK)`, not a fork: C
//! runs in L's memory on a stack of its own until it execs what [`Exec`] made ready (see
//! `exec`), so no copy of hx's page tables is made for it and none torn down by its exec.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use super::exec::Exec;
use super::sockets::{cover_csocket, foreign_sockets};
use super::{sys, Pod};
use crate::sandbox::caps::CapDrop;
use crate::sandbox::seccomp::{self, Filter, Sockets};

/// What L exits with when the command never ran (as `env` and `timeout` do).
const FAILED: i32 = 125;
/// What C exits with when its program is not there, and when it is there but cannot be
/// executed (as a shell does).
const NOT_FOUND: i32 = 127;
const NOT_EXECUTABLE: i32 = 126;
/// C's stack: it only enters the sandbox and execs (a few KiB); pages it never touches cost
/// nothing.
const STACK: usize = 256 * 1024;

/// One command's way into the pod, made in hx before the fork.
pub struct Join {
    pod: RawFd,
    flags: libc::c_int,
    sockets: Vec<CString>,
    ruleset: Option<RawFd>,
    caps: CapDrop,
    filter: Option<Arc<Filter>>,
    exec: Exec,
}

impl Pod {
    /// The way into this pod for `cmd`, as it will run (see [`Exec::of`]), which enters
    /// `ruleset` (its Landlock domain) there. Reads `/proc/net/unix` in hx's network
    /// namespace: sockets bound since the pod started, or since the last call, are covered
    /// too.
    pub fn join(&self, ruleset: Option<RawFd>, caps: CapDrop, cmd: &std::process::Command) -> Join {
        let mut flags =
            libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        if !self.network {
            flags |= libc::CLONE_NEWNET;
        }
        let sockets = foreign_sockets(&self.kept, &self.places, false)
            .into_iter()
            .filter_map(|p| CString::new(p.as_os_str().as_bytes()).ok())
            .collect();
        // IP is the pod's own network namespace's business, so IP sockets stay allowed
        // there; the families that namespace does not cut (vsock, ...) are refused with
        // `network = false`.
        let filter = self
            .filter
            .get_or_init(|| {
                let sockets = if self.network {
                    Sockets::All
                } else {
                    Sockets::InNamespace
                };
                seccomp::available()
                    .then(|| Filter::new(sockets))
                    .flatten()
                    .map(Arc::new)
            })
            .clone();
        Join {
            pod: self.pidfd.as_raw_fd(),
            flags,
            sockets,
            ruleset,
            caps,
            filter,
            exec: Exec::of(cmd),
        }
    }
}

impl Join {
    /// Runs in hx's forked child, after std set up its descriptors and working folder.
    /// Never returns: the command's process execs the command, and L relays and exits.
    ///
    /// # Safety
    /// Only in the child of a fork, before exec.
    pub unsafe fn run(&self) -> io::Result<()> {
        // The working folder by its path: joining a mount namespace moves it to the root.
        let mut cwd = [0u8; libc::PATH_MAX as usize + 1];
        if libc::getcwd(cwd.as_mut_ptr().cast(), cwd.len()).is_null() {
            fail(b"cannot read the working folder");
        }
        if libc::setns(self.pod, self.flags) != 0 {
            fail(b"cannot enter the run's sandbox");
        }
        for s in &self.sockets {
            let _ = cover_csocket(s);
        }
        if libc::chdir(cwd.as_ptr().cast()) != 0 {
            fail(b"cannot enter the working folder in the sandbox");
        }
        // hx's handlers (they would write to hx's descriptors) have no place here. Before C
        // exists: setting SIGCHLD's action to its default (ignore) discards a pending one,
        // blocked or not, so after C a fast command's end could be lost and L wait forever.
        sys::all_default();
        // The signals hx sends L that the command should get, and SIGCHLD, are taken
        // synchronously by the relay.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in FORWARDED.iter().chain(&[libc::SIGCHLD]) {
            libc::sigaddset(&mut set, *s);
        }
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        // C's stack, with a page below it that faults instead of running into L's memory.
        let stack = libc::mmap(
            std::ptr::null_mut(),
            STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED || libc::mprotect(stack, 4096, libc::PROT_NONE) != 0 {
            fail(b"cannot map the command's stack");
        }
        // A full pod (`sandbox.max_processes`) refuses with EAGAIN; the processes of the
        // command before may still be on their way out, so this waits up to a second.
        let mut tries = 0;
        let child = loop {
            // L waits (CLONE_VFORK) until C has executed its program or exited: only then
            // may L touch the memory they share again.
            let child = libc::clone(
                command,
                stack.cast::<u8>().add(STACK).cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (self as *const Join).cast_mut().cast(),
            );
            if child >= 0 || sys::errno() != libc::EAGAIN || tries == 50 {
                break child;
            }
            tries += 1;
            let pause = libc::timespec {
                tv_sec: 0,
                tv_nsec: 20_000_000,
            };
            libc::nanosleep(&pause, std::ptr::null_mut());
        };
        if child < 0 {
            fail(b"cannot fork");
        }
        // L holds none of the command's pipes (their end-of-file comes when the command's
        // processes are done with them) and none of hx's descriptors: std's pipe for an
        // exec error among them, whose end-of-file tells hx the command started.
        // close_range is Linux 5.9 (a pod needs 5.12), but a container's seccomp profile
        // may refuse it: then one close per possible descriptor.
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            let mut limit: libc::rlimit = std::mem::zeroed();
            let most = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
                limit.rlim_cur.min(1 << 20) as libc::c_int
            } else {
                1 << 16
            };
            for fd in 3..most {
                libc::close(fd);
            }
        }
        for fd in 0..3 {
            sys::to_null(fd);
        }
        // L is a copy of hx's memory (the API key among it) until the command ends: no
        // process of the user's may read it through ptrace or /proc.
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
        let _ = self.caps.apply();
        libc::_exit(relay(child, &set))
    }
}

/// C: in the pod's PID namespace and L's process group (hx's `killpg` of L's group reaches
/// it), on its own stack in L's memory. Not L's state: the command starts as programs
/// expect: every handler is at its default already (L reset them all before the clone, so
/// none is ignored either), and the mask L blocked for its relay is cleared. Never returns:
/// it execs the command, or exits.
extern "C" fn command(join: *mut libc::c_void) -> libc::c_int {
    // SAFETY: the `Join` L passed to clone, which outlives C's run here (L waits for C's
    // exec); only syscalls on what hx made before the fork.
    unsafe {
        let join = &*(join as *const Join);
        sys::unblock_all();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        if crate::sandbox::enter(join.ruleset, join.caps, join.filter.as_deref()).is_err() {
            fail(b"cannot confine the command");
        }
        let errno = join.exec.run();
        let code = match errno {
            libc::ENOENT => NOT_FOUND,
            _ => NOT_EXECUTABLE,
        };
        say(
            &[b"hx: sandbox: cannot execute ", join.exec.program()],
            errno,
            code,
        )
    }
}

/// One `hx: sandbox: WHAT (os error N)` line on stderr, then exit 125: the command never ran.
unsafe fn fail(what: &[u8]) -> ! {
    say(&[b"hx: sandbox: ", what], sys::errno(), FAILED)
}

/// `parts`, then ` (os error ERRNO)`, on stderr as one line, then exit `code`. Formats the
/// number on the stack, since a forked child of hx may not allocate.
unsafe fn say(parts: &[&[u8]], errno: libc::c_int, code: i32) -> ! {
    let mut digits = [0u8; 12];
    let mut at = digits.len();
    let mut n = errno.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for part in parts
        .iter()
        .copied()
        .chain([b" (os error ".as_slice(), &digits[at..], b")\n"])
    {
        sys::write_all(2, part);
    }
    libc::_exit(code)
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
