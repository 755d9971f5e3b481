//! Child processes shared by the bash tool and command hooks: which shell runs a command
//! line, and killing a command's whole process group.

use std::sync::OnceLock;

/// `bash` when it is on PATH (models and hooks written for Claude Code expect bash syntax),
/// else the POSIX `sh`.
pub fn shell() -> &'static str {
    static SHELL: OnceLock<&'static str> = OnceLock::new();
    SHELL.get_or_init(|| {
        let found = std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|dir| dir.join("bash").is_file())
        });
        if found {
            "bash"
        } else {
            "sh"
        }
    })
}

/// Kills a process group when dropped, so that neither a timeout, nor an early return, nor the
/// caller dropping the future (Ctrl-C) leaves a command's processes running.
pub struct GroupGuard {
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
    /// Guards the group led by the child `pid` (spawned with `process_group(0)`); `None` when
    /// the child already exited and was reaped.
    pub fn new(pid: Option<u32>) -> Self {
        GroupGuard {
            pgid: pid.and_then(|id| libc::pid_t::try_from(id).ok()),
        }
    }

    /// Kills the group now (idempotent).
    pub fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg only sends a signal; a group that no longer exists gives ESRCH,
            // which is fine to ignore.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }

    /// Leaves the group alone: used when every process that held our pipe is gone, so whatever
    /// remains detached its output on purpose (e.g. `server > log 2>&1 &`).
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
