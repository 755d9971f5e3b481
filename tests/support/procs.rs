//! Watching processes hx started, through /proc: polled up to a deadline, never after a fixed
//! sleep.

use std::path::Path;
use std::time::{Duration, Instant};

/// The state letter of `/proc/PID/stat` (`R`, `S`, `Z`, ...), `None` once the pid is gone.
pub fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: the state follows the last ") ".
    let (_, rest) = stat.rsplit_once(") ")?;
    rest.chars().next()
}

/// Running: neither gone nor a zombie. A killed process may linger as a zombie where its
/// reaper (PID 1 in some containers) does not reap; that is dead too.
pub fn running(pid: i32) -> bool {
    state(pid).is_some_and(|s| s != 'Z' && s != 'X')
}

/// Polls until `pid` stops running; false if it still runs after `timeout`.
pub fn ends_within(pid: i32, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while running(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Stands for a process that was gone before its pid could be read: no process has it.
pub const GONE: i32 = i32::MAX;

/// The pid, as this process sees it, of the process that calls itself `pid` and works in
/// `cwd`: a command in hx's sandbox runs in a PID namespace of the run's own, so the `$$` it
/// writes is its pid there (the last of `NSpid` in `/proc/PID/status`); with the sandbox off
/// it is the pid itself. [`GONE`] when no such process runs (any more).
pub fn host_pid(pid: i32, cwd: &Path) -> i32 {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let works_there = |p: i32| std::fs::read_link(format!("/proc/{p}/cwd")).is_ok_and(|c| c == cwd);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return GONE;
    };
    for e in dir.flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let status = std::fs::read_to_string(format!("/proc/{p}/status")).unwrap_or_default();
        let Some(ns) = status.lines().find_map(|l| l.strip_prefix("NSpid:")) else {
            continue;
        };
        let ids: Vec<i32> = ns
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        let named = ids.last() == Some(&pid) && (ids.len() > 1 || p == pid);
        if named && works_there(p) {
            return p;
        }
    }
    GONE
}

/// The pid a command wrote to `path` (`echo $$ > path`, in the workspace), once its whole
/// line is there, as this process sees it ([`host_pid`]); `None` if it is not there within
/// `timeout`.
pub fn pid_in(path: &Path, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(pid) = text.strip_suffix('\n').and_then(|t| t.trim().parse().ok()) {
            return Some(host_pid(pid, path.parent().unwrap_or(Path::new("/"))));
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits for the child `pid` (which nothing else reaps) and gives its exit status, its user
/// and system CPU time with that of the processes it waited for, and its peak RSS in KiB:
/// what the benchmarks measure a whole run by.
pub fn wait_with_usage(pid: u32) -> (i32, Duration, i64) {
    let mut status = 0;
    // SAFETY: rusage is plain old data; wait4 fills it for our own child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(r, pid as libc::pid_t, "wait4 failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    (libc::WEXITSTATUS(status), cpu, usage.ru_maxrss)
}

/// The middle of `v` (the upper one of an even count).
pub fn median<T: Copy + PartialOrd>(mut v: Vec<T>) -> T {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[v.len() / 2]
}
