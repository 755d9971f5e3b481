//! Every process hx starts goes through here: which shell runs a command line, which
//! environment it gets (the policy for tool commands and MCP servers, hx's own for the user's
//! hooks), its own process group, and the registration that lets hx end whatever it started
//! when it exits.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;

use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};

pub mod cleanup;
pub mod env;

pub use env::{EnvPolicy, Inherit, ToolEnv};

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

/// Makes hx not dumpable, so processes of the same user cannot read its memory
/// (`/proc/PID/mem`, ptrace) where the kernel would otherwise let them; best effort.
pub fn not_dumpable() {
    // SAFETY: prctl(PR_SET_DUMPABLE, 0) only changes this process's own attribute.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// A signal's name (`SIGTERM`), for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => "unknown signal",
    }
}

/// Whom a process runs for, which decides what it may see.
#[derive(Debug, Clone, Copy)]
pub enum Role<'a> {
    /// A command the model asked for, or a local MCP server (which may run the code of the
    /// repository it starts in): it gets the environment policy's variables only, and runs in
    /// the sandbox (Landlock when the kernel has it, no capabilities) unless it is off.
    Tool {
        env: &'a ToolEnv,
        sandbox: Option<&'a crate::sandbox::Sandbox>,
    },
    /// One of the user's own commands (a hook; a project's only once trusted): hx's whole
    /// environment, as Claude Code gives it.
    Hook,
    /// A tool of hx's own (git for checkpoints): exactly these variables and nothing of hx's
    /// environment, in a process group of its own, with hx's terminal but never asked for it.
    Private(&'a [(std::ffi::OsString, std::ffi::OsString)]),
}

/// A process about to start. Built only by this module's constructors, so nothing hx runs
/// can miss its group or its environment rules.
pub struct Launch<'a> {
    cmd: tokio::process::Command,
    /// Entered at the spawn, when the command is as it will run (see `Sandbox::apply`).
    sandbox: Option<&'a crate::sandbox::Sandbox>,
    /// Why it cannot start (the run's pod has exited; in a pod, a program that is not
    /// there), said by `spawn`.
    refused: Option<io::Error>,
}

impl<'a> Launch<'a> {
    /// `line` run by [`shell`] in `cwd`, in a new process group (so a timeout, a dropped call
    /// or Ctrl-C can kill all of it), killed if its handle is dropped.
    ///
    /// A tool command gets a session of its own (`setsid`, which also makes its process
    /// group): no controlling terminal, so it cannot open `/dev/tty`, push input into the
    /// user's shell (`TIOCSTI`), or block reading the terminal. Then it enters the sandbox,
    /// where the shell is looked up: a shell the model wrote runs confined there.
    pub fn shell(line: &str, cwd: &Path, role: Role<'a>) -> Launch<'a> {
        Launch::with_role(shell().as_ref(), &["-c".as_ref(), line.as_ref()], cwd, role)
    }

    /// `line` run by the shell at `shell` (a path hx found once, outside every folder a
    /// command may write: see `sandbox::HostPath`), in `cwd`, as [`Launch::shell`] runs a
    /// command: a hook, the user's own command, which keeps the terminal and its
    /// capabilities and runs outside the sandbox.
    pub fn hook(shell: &Path, line: &str, cwd: &Path) -> Launch<'a> {
        Launch::with_role(
            shell.as_os_str(),
            &["-c".as_ref(), line.as_ref()],
            cwd,
            Role::Hook,
        )
    }

    /// `program` with `args`, started directly (no shell), in `cwd`, in a new process group,
    /// killed if its handle is dropped: an MCP server, which lives for the whole run, or git.
    /// A name without `/` is looked up on the role's `PATH`; what runs outside the sandbox is
    /// given as the path hx found for it.
    pub fn program(
        program: impl AsRef<OsStr>,
        args: &[String],
        cwd: &Path,
        role: Role<'a>,
    ) -> Launch<'a> {
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_ref()).collect();
        Launch::with_role(program.as_ref(), &args, cwd, role)
    }

    /// In a pod, hx's child joins it and runs the program there (`Sandbox::apply`).
    fn with_role(program: &OsStr, args: &[&OsStr], cwd: &Path, role: Role<'a>) -> Launch<'a> {
        let in_pod = matches!(
            role,
            Role::Tool {
                sandbox: Some(s),
                ..
            } if s.has_pod()
        );
        let mut refused = None;
        let mut entered = None;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args);
        cmd.current_dir(cwd).kill_on_drop(true);
        match role {
            Role::Tool { env, sandbox } => {
                cmd.env_clear().envs(env.vars());
                if in_pod {
                    // The pod's /tmp is the run's own; a $TMPDIR of hx's is not in it.
                    cmd.env("TMPDIR", "/tmp");
                    // The program is looked up in the pod, after the launcher forked: one that
                    // is not there fails here, as it does without a pod.
                    if !findable(program, env.get("PATH")) {
                        refused = Some(io::Error::from(io::ErrorKind::NotFound));
                    }
                }
                // SAFETY: runs in the forked child; setsid is async-signal-safe and touches
                // nothing of the parent. It must stand instead of `process_group(0)`, which
                // std would apply first and which makes setsid fail (a group leader).
                unsafe {
                    cmd.pre_exec(|| {
                        if libc::setsid() < 0 {
                            return Err(io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
                default_signals(&mut cmd);
                if let Some(s) = sandbox {
                    entered = Some(s);
                    if let Some(why) = s.gone() {
                        refused = Some(io::Error::other(why));
                    }
                }
            }
            Role::Private(vars) => {
                cmd.process_group(0)
                    .env_clear()
                    .envs(vars.iter().map(|(k, v)| (k, v)));
                if inherited_ignored() {
                    default_signals(&mut cmd);
                }
            }
            Role::Hook => {
                cmd.process_group(0);
                if inherited_ignored() {
                    default_signals(&mut cmd);
                }
                if let Some(vars) = env::hook_vars() {
                    cmd.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
                }
            }
        }
        Launch {
            cmd,
            sandbox: entered,
            refused,
        }
    }

    /// Not killed when its handle is dropped: a background shell, whose handle goes with the
    /// runtime when hx exits, is ended by [`cleanup::end_all`] instead, or kept with
    /// `keep_background`.
    pub fn keep_on_drop(mut self) -> Launch<'a> {
        self.cmd.kill_on_drop(false);
        self
    }

    /// One more variable, on top of what the role gives.
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Launch<'a> {
        self.cmd.env(key, value);
        self
    }

    pub fn stdin(mut self, s: Stdio) -> Launch<'a> {
        self.cmd.stdin(s);
        self
    }

    pub fn stdout(mut self, s: Stdio) -> Launch<'a> {
        self.cmd.stdout(s);
        self
    }

    pub fn stderr(mut self, s: Stdio) -> Launch<'a> {
        self.cmd.stderr(s);
        self
    }

    /// Starts the process and registers it. The command (and with it our copies of any file
    /// descriptors given as stdio) is dropped here, so a pipe's end-of-file can arrive.
    pub fn spawn(mut self) -> io::Result<Started> {
        if let Some(e) = self.refused.take() {
            return Err(e);
        }
        // Last of the `pre_exec`s, after `setsid` and the signals' defaults.
        if let Some(s) = self.sandbox {
            s.apply(self.cmd.as_std_mut());
        }
        let child = cleanup::spawn_registered(&mut self.cmd)?;
        let pid = child.id().and_then(|id| libc::pid_t::try_from(id).ok());
        Ok(Started {
            child,
            pid,
            group: GroupGuard { pgid: pid },
        })
    }
}

/// Makes the child start with no signal ignored or blocked, whatever hx inherited (std
/// resets only SIGPIPE and the mask): see [`crate::sandbox::default_signals`].
fn default_signals(cmd: &mut tokio::process::Command) {
    // SAFETY: runs in the forked child; `default_signals` makes only async-signal-safe
    // calls on its own stack.
    unsafe {
        cmd.pre_exec(|| {
            crate::sandbox::default_signals();
            Ok(())
        });
    }
}

/// Whether hx was started with a signal ignored other than SIGPIPE (which std resets in
/// every child itself), read once: hx ignores none of its own. Without one, a hook or a git
/// of hx's needs no `pre_exec`, and std may start it the fast way (`posix_spawn`).
fn inherited_ignored() -> bool {
    static IGNORED: OnceLock<bool> = OnceLock::new();
    *IGNORED.get_or_init(|| (1..=64).any(|s| s != libc::SIGPIPE && crate::sandbox::ignored(s)))
}

/// Whether `program` names a file that exists, as `execvp` would look for it: itself when it
/// holds a `/`, else in each folder of `path`, the same candidates the pod's launcher then
/// executes (`sandbox::pod::exec`).
fn findable(program: &OsStr, path: Option<&OsStr>) -> bool {
    use std::os::unix::ffi::OsStrExt;
    if program.as_bytes().contains(&b'/') {
        return Path::new(program).exists();
    }
    crate::sandbox::pod::exec::candidates(program.as_bytes(), path.map(OsStr::as_bytes))
        .iter()
        .any(|c| Path::new(OsStr::from_bytes(c)).is_file())
}

/// A started process: its handle and its process group.
pub struct Started {
    child: Child,
    /// Registered as ours until its exit status is collected.
    pid: Option<libc::pid_t>,
    pub group: GroupGuard,
}

impl Started {
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }

    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }

    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }

    /// Waits for the process itself (not its group) to exit. Cancel-safe.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        if let Some(pid) = self.pid.take() {
            cleanup::collected(pid);
        }
        Ok(status)
    }
}

/// Kills a process group when dropped, so that neither a timeout, nor an early return, nor the
/// caller dropping the future (a signal) leaves a command's processes running.
pub struct GroupGuard {
    pgid: Option<libc::pid_t>,
}

impl GroupGuard {
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

    /// The group's number, while it is armed.
    pub fn pgid(&self) -> Option<libc::pid_t> {
        self.pgid
    }

    /// Leaves the group alone for the rest of the run: used when every process that held our
    /// pipe is gone, so whatever remains detached its output on purpose (e.g. `server > log
    /// 2>&1 &`). It is still ended when hx exits (see [`cleanup::end_all`]).
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}
