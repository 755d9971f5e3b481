//! `hx acp`: hx as an Agent Client Protocol agent on stdin and stdout (`crate::acp`), in the
//! guarded runtime.

use std::os::fd::{FromRawFd, OwnedFd};

use super::{exit, fail, show_failure, AcpArgs};
use crate::acp::{self, Setup};
use crate::app::{self, runtime::Guard};
use crate::config::process_env;

pub(super) fn acp_command(args: AcpArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let flags = args.run.flags();
    let env = process_env();
    // The guard's settings come from the config where hx starts; each session loads its own
    // in its cwd. No key is needed yet: a session that needs one says so.
    let app::config::Loaded { config, warnings } = match app::config::load(&cwd, &env, &flags) {
        Ok(l) => l,
        Err(f) => return show_failure(f),
    };
    for w in warnings {
        errln!("{w}");
    }
    // A cost limit on a model without a price is refused before the editor's first request,
    // as `hx agent` refuses it; each session checks its own config again.
    if let Err(e) = config.require_price() {
        return show_failure(app::Failure::usage(e));
    }
    let protocol = match protocol_stdout() {
        Ok(fd) => fd,
        Err(e) => return fail(exit::FAILED, format!("cannot set up stdout: {e}")),
    };
    let guard = Guard {
        shell_env: &config.shell_env,
        keep_background: config.keep_background,
    };
    let setup = Setup {
        flags,
        env,
        key: acp::auth::Key::of(&config),
    };
    let output = std::fs::File::from(protocol);
    guard
        .run(|| {}, || acp::serve(setup, std::io::stdin(), output))
        .unwrap_or_else(show_failure)
}

/// The protocol's own copy of stdout, with descriptor 1 then pointing at stderr: whatever else
/// would write to stdout (a child that inherits it, a stray print) lands in the editor's log
/// instead of corrupting the stream of messages.
fn protocol_stdout() -> std::io::Result<OwnedFd> {
    // SAFETY: plain descriptor calls on descriptors this process holds; run while hx has one
    // thread, before anything else writes to stdout. The copy is close-on-exec, so no child
    // gets the protocol's stream.
    unsafe {
        let copy = libc::fcntl(libc::STDOUT_FILENO, libc::F_DUPFD_CLOEXEC, 3);
        if copy < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let copy = OwnedFd::from_raw_fd(copy);
        if libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(copy)
    }
}
