//! Ending what hx started. A command may leave processes behind on purpose (`server &`) or
//! escape its process group (`setsid`, a double fork): they may run on while hx runs, but
//! when hx exits, on any path, none of them is left.
//!
//! hx makes itself a child subreaper ([`become_subreaper`]), so every orphan of its commands
//! is re-parented to hx instead of to init: all of them stay hx's descendants, found through
//! /proc. Orphans that end during the run are reaped here ([`reap_orphans`]). The children hx
//! spawned itself belong to tokio, which waits for each by pid: they are registered
//! ([`spawn_registered`]) and never reaped here while the runtime may still want them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use libc::pid_t;

struct Registry {
    /// Children spawned through `Launch` whose exit status tokio has not handed back yet.
    owned: BTreeSet<pid_t>,
    /// Whether anything was ever spawned: with nothing started there is nothing to sweep,
    /// and a plain answer pays no /proc scan.
    started_any: bool,
    /// Children forked for hx's own work that ends by itself and runs nothing (see
    /// [`let_go`]): never killed or waited for.
    let_go: BTreeSet<pid_t>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    owned: BTreeSet::new(),
    started_any: false,
    let_go: BTreeSet::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// How long [`end_all`] waits for what it killed to die (a process in uninterruptible sleep
/// dies only when its I/O ends).
const END_WAIT: Duration = Duration::from_secs(2);

/// Makes orphans of hx's descendants hx's children (Linux; elsewhere a no-op). Call once,
/// before anything is spawned.
pub fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_CHILD_SUBREAPER only sets a flag on this process.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Spawns under the registry's lock, so [`reap_orphans`] can never mistake the new child for
/// an orphan between its fork and its registration.
pub(super) fn spawn_registered(
    cmd: &mut tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    let mut reg = registry();
    let child = cmd.spawn()?;
    reg.started_any = true;
    if let Some(pid) = child.id().and_then(|id| pid_t::try_from(id).ok()) {
        reg.owned.insert(pid);
    }
    Ok(child)
}

/// Tokio reaped `pid`: from now on a zombie child with that number is an orphan.
pub(super) fn collected(pid: pid_t) {
    registry().owned.remove(&pid);
}

/// Reaps hx's zombie children that it did not spawn itself: orphans of its commands that
/// ended. Call on SIGCHLD.
pub fn reap_orphans() {
    let reg = registry();
    if !reg.started_any || !has_zombie_child() {
        return;
    }
    let me = std::process::id() as pid_t;
    for p in scan() {
        if p.ppid == me && p.state == 'Z' && !reg.owned.contains(&p.pid) {
            reap(p.pid);
        }
    }
}

/// Leaves the child `pid` alone at the end: one forked only to wait in the kernel for hx
/// (closing an inotify instance), which runs no code of anyone's and exits by itself.
/// Killing it would not end it sooner, and waiting for it is what it was forked to spare.
pub fn let_go(pid: pid_t) {
    registry().let_go.insert(pid);
}

/// Kills everything hx started that is still running — its process groups, what left them,
/// orphans re-parented to hx — waits for it to die, and reaps it. For the very end of the
/// process, once no runtime waits for a child any more.
pub fn end_all() {
    if !registry().started_any {
        return;
    }
    let me = std::process::id() as pid_t;
    // SAFETY: getpgrp cannot fail.
    let own_group = unsafe { libc::getpgrp() };
    let deadline = Instant::now() + END_WAIT;
    let let_go = registry().let_go.clone();
    // What was killed is gone within a fraction of a millisecond unless the machine is
    // stalled: looked at again soon, then less often. A fixed 5 ms cost the end of about one
    // run in four 5 ms more, when the pod's first process was still ending (issue 33).
    let mut pause = Duration::from_micros(250);
    loop {
        // Zombies first, every round: a pod's pid 1 ends only once every process of its
        // namespace is reaped, and one whose launcher was killed first (a server that had
        // exited) is hx's to reap; left, it kept the pod, and hx, waiting the whole
        // END_WAIT.
        reap_zombie_children();
        let procs = scan();
        let live: Vec<&Proc> = descendants(me, &procs)
            .into_iter()
            .filter(|p| p.state != 'Z' && p.state != 'X' && !let_go.contains(&p.pid))
            .collect();
        if live.is_empty() || Instant::now() >= deadline {
            break;
        }
        // A group is killed at once, so members forked since the scan go too; then each
        // process by pid, for those sharing hx's own group. Every group here has a live
        // member that is hx's descendant, so its number cannot belong to anyone else.
        let groups: BTreeSet<pid_t> = live.iter().map(|p| p.pgrp).collect();
        for g in groups.into_iter().filter(|&g| g > 1 && g != own_group) {
            // SAFETY: sending a signal; ESRCH is fine.
            unsafe { libc::killpg(g, libc::SIGKILL) };
        }
        for p in &live {
            // SAFETY: as above.
            unsafe { libc::kill(p.pid, libc::SIGKILL) };
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(5));
    }
    reap_zombie_children();
}

/// Reaps every zombie child of hx: only at the end, when no runtime waits for one. By
/// `waitpid` rather than a /proc scan: each scan reads every process's `stat`, and a run's
/// end made five (issue 33).
fn reap_zombie_children() {
    loop {
        let mut status = 0;
        // SAFETY: reaps one child that has ended, of any kind (`__WALL`), without blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::__WALL) };
        if pid <= 0 {
            break;
        }
    }
}

fn reap(pid: pid_t) {
    let mut status = 0;
    // SAFETY: waits for one given child without blocking.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
}

/// Whether hx has a child waiting to be reaped, without reaping it: a cheap test that spares
/// most SIGCHLDs a /proc scan.
fn has_zombie_child() -> bool {
    // SAFETY: siginfo_t is plain old data; WNOWAIT leaves the child as it is.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() != 0
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Proc {
    pid: pid_t,
    ppid: pid_t,
    pgrp: pid_t,
    state: char,
}

/// Every process /proc shows (those that vanish while it is read are skipped).
///
/// Each `stat` is opened relative to /proc and read once into a buffer on the stack: an
/// open, a read and a close, where `fs::read_to_string` adds a stat and a second read and
/// allocates a path and a string for each of the machine's processes.
fn scan() -> Vec<Proc> {
    use rustix::fs::{Mode, OFlags};
    let Ok(proc) = rustix::fs::open(
        "/proc",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) else {
        return Vec::new();
    };
    let Ok(dir) = rustix::fs::Dir::read_from(&proc) else {
        return Vec::new();
    };
    let mut path = Vec::with_capacity(32);
    // The fields read end with the process group, well inside the first 512 bytes: the
    // command name before them is at most 64.
    let mut buf = [0u8; 512];
    dir.filter_map(|e| {
        let e = e.ok()?;
        let name = e.file_name().to_bytes();
        let pid: pid_t = std::str::from_utf8(name).ok()?.parse().ok()?;
        path.clear();
        path.extend_from_slice(name);
        path.extend_from_slice(b"/stat");
        let stat = rustix::fs::openat(
            &proc,
            path.as_slice(),
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()?;
        let n = rustix::io::read(&stat, &mut buf).ok()?;
        parse_stat(pid, &String::from_utf8_lossy(&buf[..n]))
    })
    .collect()
}

/// `/proc/PID/stat`: `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses,
/// so the fields are read after the last `)`.
fn parse_stat(pid: pid_t, stat: &str) -> Option<Proc> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    let state = f.next()?.chars().next()?;
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        state,
    })
}

/// The processes below `root`, by parent links.
fn descendants(root: pid_t, procs: &[Proc]) -> Vec<&Proc> {
    let mut children: BTreeMap<pid_t, Vec<&Proc>> = BTreeMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut out = Vec::new();
    let mut todo = vec![root];
    while let Some(pid) = todo.pop() {
        for c in children.get(&pid).into_iter().flatten() {
            // A pid is its own ancestor only in a corrupt reading; never loop on it.
            if c.pid != root && out.len() < procs.len() {
                out.push(*c);
                todo.push(c.pid);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: pid_t, ppid: pid_t, state: char) -> Proc {
        Proc {
            pid,
            ppid,
            pgrp: pid,
            state,
        }
    }

    #[test]
    fn stat_fields_come_after_the_last_parenthesis() {
        let s = "42 (a) b (c)) S 7 40 40 0 -1 4194304";
        assert_eq!(
            parse_stat(42, s),
            Some(Proc {
                pid: 42,
                ppid: 7,
                pgrp: 40,
                state: 'S'
            })
        );
        assert_eq!(parse_stat(1, "1 (init"), None);
        assert_eq!(parse_stat(1, "1 (x) S nope 3"), None);
    }

    #[test]
    fn descendants_follow_parent_links_only() {
        let procs = [
            p(10, 1, 'S'),
            p(11, 10, 'S'),
            p(12, 11, 'Z'),
            p(13, 1, 'S'),
            p(14, 13, 'S'),
        ];
        let mut d: Vec<pid_t> = descendants(10, &procs).iter().map(|p| p.pid).collect();
        d.sort();
        assert_eq!(d, [11, 12]);
        // A self-parented entry (a torn read) does not loop.
        let odd = [p(5, 5, 'S'), p(6, 5, 'S')];
        let d: Vec<pid_t> = descendants(5, &odd).iter().map(|p| p.pid).collect();
        assert_eq!(d, [6]);
    }

    #[test]
    fn scan_sees_this_process() {
        let me = std::process::id() as pid_t;
        let found = scan().into_iter().find(|p| p.pid == me).expect("self");
        assert_eq!(found.ppid, unsafe { libc::getppid() });
    }
}
