//! The one guarded runtime of every command that starts processes (`hx agent`, `hx chat`,
//! `hx mcp list`): the secrets blanked in hx's own environment, hx a subreaper and not
//! dumpable, a current-thread runtime, a panic caught, and everything hx started ended on
//! the way out, whatever the way.

use std::future::Future;

use super::exit;
use super::Failure;
use crate::process::{self, EnvPolicy};

/// What a guarded run needs to know before it starts.
pub struct Guard<'a> {
    /// The environment policy whose secrets are blanked in hx's own environment.
    pub shell_env: &'a EnvPolicy,
    /// `[tools] keep_background`: leave what is still running when hx exits.
    pub keep_background: bool,
}

/// Ends everything hx started when it is dropped (a return or an unwind); `keep_background`
/// keeps what is still running instead.
struct EndAll {
    keep_background: bool,
}

impl Drop for EndAll {
    fn drop(&mut self) {
        // The pods first: their pid 1 killed ends every process in them at once.
        crate::sandbox::pod::end_all(self.keep_background);
        if !self.keep_background {
            process::cleanup::end_all();
        }
    }
}

impl Guard<'_> {
    /// Runs the future `make` gives on a current-thread runtime and returns its exit code.
    /// Must be called while hx has one thread: the environment is changed in place first.
    /// A panic (a bug: the panic hook has printed its line) calls `on_panic` and gives
    /// [`exit::FAILED`], after the same cleanup as any other ending.
    pub fn run<F>(self, on_panic: impl FnOnce(), make: impl FnOnce() -> F) -> Result<i32, Failure>
    where
        F: Future<Output = i32>,
    {
        // The key is in the config by now: blank the secrets in hx's own environment, where
        // a command could read them back (/proc/$PPID/environ).
        // SAFETY: the caller runs this before any thread of hx starts; the runtime and its
        // threads start below.
        unsafe { process::env::scrub_own_environ(self.shell_env) };
        // Orphans of the commands hx runs come back to hx, so that none outlives it.
        process::cleanup::become_subreaper();
        // Not dumpable: a command running as the same user (outside the sandbox, or with it
        // off) cannot read the API key from hx's memory through /proc/PID/mem.
        process::not_dumpable();
        // A run's pod that is let go of (the agent dropped) ends with it, or detaches.
        crate::sandbox::pod::keep_on_exit(self.keep_background);
        // Declared before the runtime, so it ends them after the runtime is gone (also when
        // unwinding).
        let _end = EndAll {
            keep_background: self.keep_background,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Failure::failed(format!("cannot start the async runtime: {e}")))?;
        // A panic outside a tool call must still end in the cleanup below and the drop guard
        // above, not in the runtime waiting on blocking work while unwinding.
        let run = std::panic::AssertUnwindSafe(|| runtime.block_on(make()));
        let code = std::panic::catch_unwind(run).unwrap_or_else(|_| {
            on_panic();
            exit::FAILED
        });
        // Do not wait for blocking work still in flight (a read stuck on a FIFO, a slow
        // walk): after a signal or an answer nothing it could produce is wanted.
        runtime.shutdown_background();
        Ok(code)
    }
}
