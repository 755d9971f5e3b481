//! The pod: one set of namespaces per run (user, mount, PID, IPC, and network when
//! `network = false`) that every command and sandboxed MCP server of the run joins. Inside it
//! the whole tree is read-only but the writable folders, `/tmp` is the run's own, `/run` is
//! hidden, `.git`'s config, hooks and info are read-only, other programs' Unix sockets are
//! covered with `/dev/null`, and `/dev` holds no terminal but the pod's own; its PID namespace
//! ends with hx (see `docs/containment/design.md`).
//!
//! The processes:
//! - `init` (A, hx's own binary re-executed as `hx-pod __sandbox init`, dispatched in `main`
//!   before anything else runs, since hx's threads make `unshare(CLONE_NEWUSER)` fail; in
//!   hx's namespaces) reads the pod's config, forks K, which makes the namespaces and forks B,
//!   pid 1 of the pod. B sets up the mounts, reports `ready` (or the step that failed) and then
//!   only reaps and watches the lifeline: its stdin, a pipe whose write end hx keeps. Any exit
//!   of hx closes it, SIGKILL included; B exits, and the kernel kills everything left in the
//!   PID namespace. A outlives B only to remove the run's folder.
//! - L, per command, is hx's own forked child (`join`): it joins the pod with one `setns` on
//!   B's pidfd, covers sockets made since the last call, starts the command in the pod's PID
//!   namespace (C, made with `clone(CLONE_VM | CLONE_VFORK)`: it drops every capability, sets
//!   `no_new_privs`, enters the call's Landlock domain and execs what `exec` made ready in
//!   hx), relays signals to it and its exit status back. Until issue 33 L was a program of
//!   its own (`hx __sandbox exec`), whose exec was most of a call's cost.

pub(crate) mod exec;
pub mod init;
mod join;
mod launcher;
pub mod sockets;
pub mod sys;

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How long hx waits for a pod to report: a healthy one takes a few milliseconds.
const START_LIMIT: Duration = Duration::from_secs(10);
/// At most this many bytes of config (a few hundred paths of at most 4096 bytes).
const MAX_CONFIG: usize = 1 << 20;

/// What the pod is built of, sent to `hx __sandbox init` on its stdin.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct PodConfig {
    /// Canonical folders bound back writable (the workspace and `sandbox.writable_roots`;
    /// not `/tmp` or `$TMPDIR`, which the pod replaces with its own).
    pub writable: Vec<PathBuf>,
    /// Canonical folders bound back read-only, where the pod would otherwise not show them
    /// (the workspace in `read-only` mode, when it lies in `/tmp`).
    pub read_only: Vec<PathBuf>,
    /// `network = true`: the pod shares hx's network namespace.
    pub network: bool,
    /// The run's own folder on the host: its `tmp` is the pod's `/tmp`, its `shm` `/dev/shm`.
    pub run_dir: PathBuf,
    /// Git folders whose config, hooks and info are made read-only (parents first).
    pub git_dirs: Vec<PathBuf>,
    /// Linked worktrees' own folders, whose `commondir`, `gitdir` and `config.worktree` are
    /// made read-only where they exist.
    #[serde(default)]
    pub git_worktrees: Vec<PathBuf>,
    /// `.git` files (`gitdir: ...`), made read-only.
    #[serde(default)]
    pub git_files: Vec<PathBuf>,
    /// Sockets bound back into the pod (`sandbox.allow_sockets`).
    pub allowed_sockets: Vec<PathBuf>,
    /// Folders scanned for other programs' sockets besides the listed ones' (the user's
    /// `~/.ssh`, `~/.gnupg`, ...: [`sockets::home_places`]).
    #[serde(default)]
    pub places: Vec<sockets::Place>,
    /// The PID namespace's `pid_max`: no pid of the pod reaches it, so it bounds the pod's
    /// processes and threads (`sandbox.max_processes`); `None` leaves the kernel's.
    #[serde(default)]
    pub max_processes: Option<u32>,
    /// Files and folders the agent must not read (`sandbox::deny`), found at the start:
    /// each covered with an empty one that no one may read.
    #[serde(default)]
    pub denied: Vec<PathBuf>,
}

impl PodConfig {
    /// The paths that a command may reach and that the socket sweep leaves alone.
    fn kept(&self) -> Vec<PathBuf> {
        let mut k = self.writable.clone();
        k.extend(self.read_only.iter().cloned());
        k.extend(self.allowed_sockets.iter().cloned());
        k
    }
}

/// A running pod, held by the run's [`super::Sandbox`].
#[derive(Debug)]
pub struct Pod {
    pidfd: OwnedFd,
    /// Pid 1 of the pod, as hx sees it.
    pid: libc::pid_t,
    /// The write end of the lifeline; `None` once hx let go of it.
    lifeline: Mutex<Option<ChildStdin>>,
    /// The read end of the report pipe, on which pid 1 answers `stop`; `None` once an answer
    /// came too late to be paired with its question.
    answers: Mutex<Option<ChildStdout>>,
    run_dir: PathBuf,
    network: bool,
    kept: Vec<PathBuf>,
    places: Vec<sockets::Place>,
    /// The commands' seccomp filter in this pod, built at the first command.
    filter: std::sync::OnceLock<Option<Arc<crate::sandbox::seccomp::Filter>>>,
}

/// The pods of this process, for [`end_all`] at exit.
static PODS: Mutex<Vec<Weak<Pod>>> = Mutex::new(Vec::new());

/// `[tools] keep_background`: a pod let go of (its run's agent dropped: the end of a run, or
/// of a session in `hx chat`) is detached rather than ended.
static KEEP: AtomicBool = AtomicBool::new(false);

/// Says what a pod that is let go of does: detach (`keep_background`) or end. Set once per
/// process, before the runtime starts.
pub fn keep_on_exit(keep: bool) {
    KEEP.store(keep, Ordering::Relaxed);
}

impl Pod {
    /// Starts a pod and waits for its report. The error says which step failed (for the
    /// warning that names what the run lacks).
    pub fn start(config: &PodConfig) -> Result<Arc<Pod>, String> {
        let exe = std::env::current_exe()
            .map_err(|e| format!("cannot find hx's own program to start the sandbox: {e}"))?;
        // The small launcher installed beside hx when it is there (each command execs it),
        // else hx itself, which dispatches `__sandbox` the same way.
        let small = exe.with_file_name("hx-pod");
        let exe = if small.is_file() { small } else { exe };
        Pod::start_program(config, exe)
    }

    /// [`Pod::start`] with `exe` as hx's program (`hx __sandbox ...`): for a benchmark, whose
    /// own program is not hx.
    pub fn start_program(config: &PodConfig, exe: PathBuf) -> Result<Arc<Pod>, String> {
        make_run_dir(&config.run_dir)
            .map_err(|e| format!("cannot make {}: {e}", config.run_dir.display()))?;
        let exe = launcher::Held::open(&exe, &config.writable, &config.run_dir).map_err(|e| {
            let _ = std::fs::remove_dir_all(&config.run_dir);
            format!("cannot open hx's launcher {}: {e}", exe.display())
        })?;
        let body = serde_json::to_vec(config).map_err(|e| e.to_string())?;
        let mut cmd = std::process::Command::new(exe.path());
        cmd.args(["__sandbox", "init"])
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: setsid only: the pod must not get the terminal's signals (Ctrl-C is hx's).
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let fail = |e: String| {
            let _ = std::fs::remove_dir_all(&config.run_dir);
            e
        };
        let mut child = cmd
            .spawn()
            .map_err(|e| fail(format!("cannot start the sandbox: {e}")))?;
        let mut stdin = child.stdin.take().expect("piped");
        let mut stdout = child.stdout.take().expect("piped");
        let sent = stdin
            .write_all(format!("{}\n", body.len()).as_bytes())
            .and_then(|_| stdin.write_all(&body));
        if let Err(e) = sent {
            return Err(fail(format!("cannot configure the sandbox: {e}")));
        }
        let report = read_report(&mut stdout).map_err(fail)?;
        let pidfd = sys::pidfd_open(report)
            .map_err(|e| fail(format!("cannot hold the sandbox's process: {e}")))?;
        let pod = Arc::new(Pod {
            pidfd,
            pid: report,
            lifeline: Mutex::new(Some(stdin)),
            answers: Mutex::new(Some(stdout)),
            run_dir: config.run_dir.clone(),
            network: config.network,
            kept: config.kept(),
            places: config.places.clone(),
            filter: std::sync::OnceLock::new(),
        });
        let mut pods = PODS.lock().unwrap_or_else(|p| p.into_inner());
        pods.retain(|p| p.strong_count() > 0);
        pods.push(Arc::downgrade(&pod));
        Ok(pod)
    }

    /// Why the next command cannot run in the pod (it has exited); `None` while it is up.
    pub fn gone(&self) -> Option<String> {
        sys::exited(&self.pidfd).then(|| {
            "the run's sandbox (its pod of namespaces) has exited, so no command can run in it; \
             start hx again"
                .to_string()
        })
    }

    /// The pod's own `devpts`, seen from hx (through pid 1's root), for the commands' rule:
    /// a pseudo-terminal of the pod's is no terminal of the user's, so `script` may open one.
    pub fn devpts(&self) -> PathBuf {
        PathBuf::from(format!("/proc/{}/root/dev/pts", self.pid))
    }

    /// The run's own folder (its `tmp` is the commands' `/tmp`).
    pub fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// Whether `path`, a file that exists on the host, is out of the commands' sight: it lies
    /// under the host's `/tmp`, which the pod replaces with the run's own, and under no folder
    /// bound back there (the workspace, the writable roots, an allowed socket).
    pub fn hides(&self, path: &Path) -> bool {
        let Ok(real) = path.canonicalize() else {
            return false;
        };
        let tmp = Path::new("/tmp")
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from("/tmp"));
        real.starts_with(&tmp) && !self.kept.iter().any(|k| real.starts_with(k))
    }

    /// Ends the pod now: the lifeline closed, pid 1 killed (the kernel kills the rest), the
    /// run's folder removed.
    fn end(&self) {
        self.lifeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        sys::pidfd_kill(&self.pidfd, libc::SIGKILL);
        // Removed once pid 1 is gone, and its mounts with it: removing the folder while
        // they stand made the kernel detach them there, waiting out an RCU grace period
        // (26 ms of a 30 ms run, strace -T), where pid 1's end takes a fraction of one.
        sys::exited_within(&self.pidfd, END_WAIT_MS);
        let _ = std::fs::remove_dir_all(&self.run_dir);
    }

    /// Stops every process of the pod until the answer is dropped: pid 1 sends them `SIGSTOP`
    /// and says when `/proc` shows them all stopped. Between the two, nothing in the pod
    /// changes the workspace: hx checks a path and an editor writes it (`hx acp`) with no
    /// command swapping a folder for a link in between. The error says why they may still run.
    pub fn stop(&self) -> Result<Stopped<'_>, String> {
        let mut lifeline = self.lifeline.lock().unwrap_or_else(|p| p.into_inner());
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        let (Some(l), Some(a)) = (lifeline.as_mut(), answers.as_mut()) else {
            return Err("the run's sandbox was let go of".into());
        };
        l.write_all(b"stop\n")
            .map_err(|e| format!("cannot reach the run's sandbox: {e}"))?;
        // B tries for 2 s; a little more for the answer to come.
        match read_line(a, STOP_WAIT) {
            Ok(line) if line == "stopped" => Ok(Stopped { pod: self }),
            Ok(_) => {
                let _ = l.write_all(b"cont\n");
                Err("the run's processes did not all stop".into())
            }
            Err(e) => {
                // A late `stopped` would be read as the next answer: this pod answers no more.
                answers.take();
                let _ = l.write_all(b"cont\n");
                Err(e)
            }
        }
    }

    /// Lets the pod live on after hx (`keep_background`): it ends when its last process does.
    fn detach(&self) {
        if let Some(mut l) = self
            .lifeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = l.write_all(b"detach\n");
        }
    }
}

/// How long [`Pod::stop`] waits for pid 1's answer.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// The pod's processes, stopped until this is dropped (see [`Pod::stop`]).
#[must_use]
pub struct Stopped<'a> {
    pod: &'a Pod,
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        if let Some(l) = self
            .pod
            .lifeline
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            let _ = l.write_all(b"cont\n");
        }
    }
}

/// Stops the processes of every pod of this process until the guard is dropped (see
/// [`Pod::stop`]): a command of another session of `hx acp` could swap a folder too. The
/// error says which could not be stopped; those that were are let go again.
pub fn stop_all() -> Result<StoppedAll, String> {
    let pods: Vec<Arc<Pod>> = PODS
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    for (i, p) in pods.iter().enumerate() {
        if p.gone().is_some() {
            continue;
        }
        if let Err(e) = p.stop().map(std::mem::forget) {
            for q in &pods[..i] {
                drop(Stopped { pod: q });
            }
            return Err(e);
        }
    }
    Ok(StoppedAll(pods))
}

/// The pods [`stop_all`] stopped, let go on drop.
#[must_use]
pub struct StoppedAll(Vec<Arc<Pod>>);

impl Drop for StoppedAll {
    fn drop(&mut self) {
        for p in &self.0 {
            drop(Stopped { pod: p });
        }
    }
}

/// One line from pid 1, within `limit`.
fn read_line(out: &mut ChildStdout, limit: Duration) -> Result<String, String> {
    let deadline = Instant::now() + limit;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the run's sandbox did not answer in time".into());
        }
        let mut p = libc::pollfd {
            fd: out.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one pollfd we own.
        if unsafe { libc::poll(&mut p, 1, ms) } <= 0 {
            continue;
        }
        match out.read(&mut byte) {
            Ok(0) => return Err("the run's sandbox has exited".into()),
            Ok(_) if byte[0] == b'\n' => return Ok(String::from_utf8_lossy(&line).into_owned()),
            Ok(_) if line.len() < 256 => line.push(byte[0]),
            Ok(_) => return Err("the run's sandbox answered too long a line".into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read the run's sandbox: {e}")),
        }
    }
}

/// Whether a PID namespace has a `pid_max` of its own here (Linux 6.14 and later), which
/// `sandbox.max_processes` needs; read from the kernel's release.
pub fn own_pid_max() -> bool {
    // SAFETY: uname fills a zeroed plain-data struct we own.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return false;
    }
    let release: String = u
        .release
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8 as char)
        .collect();
    release_at_least(&release, (6, 14))
}

/// Whether a kernel release (`6.18.44-fc-v1300`) is at least `major.minor`.
fn release_at_least(release: &str, want: (u32, u32)) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|n| n.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    (major, minor) >= want
}

/// Whether a pod could be made here, without making one (for `hx sandbox`): a forked child
/// tries the namespaces and exits. The error names what failed.
pub fn probe() -> Result<(), String> {
    let flags = libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    // SAFETY: the child makes one syscall and exits; nothing else runs there.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: unshare and _exit in the forked child.
        unsafe {
            let code = if libc::unshare(flags) == 0 {
                0
            } else {
                *libc::__errno_location() & 0x7f
            };
            libc::_exit(code);
        }
    }
    let mut status = 0;
    // SAFETY: waits for our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    match libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)) {
        Some(0) => Ok(()),
        Some(e) => Err(format!("unshare: {}", io::Error::from_raw_os_error(e))),
        None => Err("unshare: the probe did not exit".into()),
    }
}

/// A pod nothing holds any more (its run's sandbox is gone) ends, or detaches when the
/// process keeps background processes.
impl Drop for Pod {
    fn drop(&mut self) {
        if KEEP.load(Ordering::Relaxed) {
            self.detach();
        } else {
            self.end();
        }
    }
}

/// Ends (or, with `keep_background`, detaches) every pod of this process still held: at its
/// exit.
pub fn end_all(keep_background: bool) {
    let pods = std::mem::take(&mut *PODS.lock().unwrap_or_else(|p| p.into_inner()));
    for p in pods.iter().filter_map(Weak::upgrade) {
        if keep_background {
            p.detach();
        } else {
            p.end();
        }
    }
}

/// How long ending a pod waits for its pid 1 to be gone before removing the run's folder
/// (a killed process ends in well under a millisecond unless the machine is stalled).
const END_WAIT_MS: libc::c_int = 1_000;

/// In the run's folder: the empty file and folder mounted over denied ones.
pub(crate) const DENIED_FILE: &str = "denied";
pub(crate) const DENIED_DIR: &str = "denied.d";

/// The run's folder: owner-only, with `tmp` and `shm` open to every user of the pod (which
/// has only one).
fn make_run_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    for sub in ["tmp", "shm"] {
        let p = dir.join(sub);
        std::fs::create_dir(&p)?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o1777))?;
    }
    // What a denied file or folder is covered with: an empty file of mode 0 (commands have
    // no capability to read past it: `Permission denied`), an empty folder (mode 0 would
    // keep the run's folder from being removed by an unprivileged hx, which must list it).
    std::fs::File::create(dir.join(DENIED_FILE))?;
    std::fs::set_permissions(
        dir.join(DENIED_FILE),
        std::fs::Permissions::from_mode(0o000),
    )?;
    std::fs::DirBuilder::new()
        .mode(0o555)
        .create(dir.join(DENIED_DIR))?;
    Ok(())
}

/// Reads `pid N` then `ready` (or `error WHAT`) from the pod's report pipe, within
/// [`START_LIMIT`]; returns pid 1's pid as hx sees it.
fn read_report(out: &mut std::process::ChildStdout) -> Result<libc::pid_t, String> {
    let deadline = Instant::now() + START_LIMIT;
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(r) = parse_report(&text) {
            return r;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err("the sandbox did not start in time".into());
        }
        let mut p = libc::pollfd {
            fd: out.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one pollfd we own.
        if unsafe { libc::poll(&mut p, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("cannot read the sandbox's report: {e}"));
        }
        if p.revents == 0 {
            continue;
        }
        match out.read(&mut buf) {
            Ok(0) => {
                return parse_report(&text)
                    .unwrap_or_else(|| Err("the sandbox exited before it was ready".into()))
            }
            Ok(n) if text.len() < 64 * 1024 => text.push_str(&String::from_utf8_lossy(&buf[..n])),
            Ok(_) => return Err("the sandbox's report is too long".into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("cannot read the sandbox's report: {e}")),
        }
    }
}

/// The outcome once the report has one: an `error` line wins; else both `pid N` (from K)
/// and `ready` (from B), which may come in either order.
fn parse_report(text: &str) -> Option<Result<libc::pid_t, String>> {
    let mut pid = None;
    let mut ready = false;
    for line in text.lines() {
        if let Some(e) = line.strip_prefix("error ") {
            return Some(Err(e.to_string()));
        }
        if let Some(p) = line.strip_prefix("pid ") {
            pid = p.trim().parse::<libc::pid_t>().ok();
        }
        ready |= line == "ready";
    }
    if ready {
        pid.map(Ok)
    } else {
        None
    }
}

/// A read-only `/dev/null` mounted over what `target` is open on.
pub(crate) fn attach_null(target: &OwnedFd) -> io::Result<()> {
    // Allocates nothing: a forked child of hx covers sockets with it (see `join`).
    let null = sys::open_cpath(c"/dev/null", false)?;
    let tree = sys::clone_tree(&null, false)?;
    sys::set_attr_fd(&tree, sys::MOUNT_ATTR_RDONLY, false)?;
    sys::attach(tree, target)
}

/// `hx __sandbox ...`: run before anything else in `main`. Returns the exit code.
pub fn main(args: &[OsString]) -> i32 {
    match args.first().and_then(|a| a.to_str()) {
        Some("init") => init::main(),
        _ => {
            let _ = writeln!(
                io::stderr(),
                "hx: __sandbox is hx's own way of starting its sandbox, not a command"
            );
            2
        }
    }
}

/// Reads the config sent on `fd`: a decimal length line, then that many bytes of JSON. Byte
/// by byte up to the newline, so nothing past it (the lifeline) is consumed.
fn read_config(fd: RawFd) -> Result<PodConfig, String> {
    let mut len = String::new();
    loop {
        let mut b = [0u8; 1];
        // SAFETY: one byte into a buffer we own.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("read config: {e}"));
        }
        if n == 0 || len.len() > 12 {
            return Err("read config: no length".into());
        }
        if b[0] == b'\n' {
            break;
        }
        len.push(b[0] as char);
    }
    let len: usize = len.parse().map_err(|_| "read config: bad length")?;
    if len > MAX_CONFIG {
        return Err("read config: too long".into());
    }
    let mut body = vec![0u8; len];
    let mut got = 0;
    while got < len {
        // SAFETY: into the rest of a buffer we own.
        let n = unsafe { libc::read(fd, body[got..].as_mut_ptr().cast(), len - got) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("read config: {e}"));
        }
        if n == 0 {
            return Err("read config: cut short".into());
        }
        got += n as usize;
    }
    serde_json::from_slice(&body).map_err(|e| format!("read config: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_is_compared_by_major_then_minor() {
        assert!(release_at_least("6.18.44-fc-v1300", (6, 14)));
        assert!(release_at_least("6.14", (6, 14)));
        assert!(release_at_least("7.0.1", (6, 14)));
        assert!(!release_at_least("6.8.0-45-generic", (6, 14)));
        assert!(!release_at_least("5.15.0", (6, 14)));
        assert!(!release_at_least("", (6, 14)));
    }

    #[test]
    fn a_report_needs_a_pid_and_ready_and_an_error_wins() {
        assert_eq!(parse_report("pid 42\n"), None);
        assert_eq!(parse_report("pid 42\nready\n"), Some(Ok(42)));
        assert_eq!(
            parse_report("pid 42\nerror mount proc: EPERM\n"),
            Some(Err("mount proc: EPERM".into()))
        );
        assert_eq!(
            parse_report("error unshare: Operation not permitted\n"),
            Some(Err("unshare: Operation not permitted".into()))
        );
        assert_eq!(parse_report("ready\n"), None);
        assert_eq!(parse_report("ready\npid 7\n"), Some(Ok(7)));
    }
}
