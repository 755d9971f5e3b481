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

/// The pid a command wrote to `path` (`echo $$ > path`), once its whole line is there; `None`
/// if it is not there within `timeout`.
pub fn pid_in(path: &Path, timeout: Duration) -> Option<i32> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if let Some(pid) = text.strip_suffix('\n').and_then(|t| t.trim().parse().ok()) {
            return Some(pid);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
