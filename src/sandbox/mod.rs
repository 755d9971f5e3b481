//! The bash sandbox: the kernel (the run's pod of namespaces, see [`pod`], and Landlock)
//! confines what `bash` and everything it starts may write, reach and leave running, and
//! whether it may use the network, while hx itself stays unrestricted.
//!
//! The pieces, in the order a run uses them:
//! - [`Settings`]: the mode, writable roots, network and `required`, from config and flags.
//! - [`Plan`]: what this kernel enforces of them, protection by protection ([`assess`], a
//!   pure function of the Landlock ABI and whether there is a pod: writes, network, signals,
//!   abstract sockets, capabilities, terminals, leftovers, metadata, pathname sockets, git
//!   metadata), the folders that stay writable, the warning to print once per run naming
//!   what is missing, and whether the run must refuse to start (`sandbox.required`). Built
//!   once, in hx.
//! - [`Sandbox`]: kept in the tools' context; it holds the run's ruleset ([`Confinement`],
//!   built once in hx) and what the child drops of its capabilities ([`CapDrop`]), which
//!   each command enters just before exec ([`Sandbox::apply`]), and it words the note added
//!   to a failed command whose output shows a refused write.

mod caps;
mod denial;
pub mod deny;
pub mod gitdirs;
mod host;
mod kernel;
pub mod pod;
mod protection;
mod roots;
pub mod seccomp;
mod settings;

use std::io;
use std::os::fd::RawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use caps::CapDrop;
pub use host::{HostPath, NotFound, Writable};
pub use kernel::{handled_fs, handled_net, handled_scopes, Confinement, Kernel};
pub use pod::sys::{default_signals, ignored};
pub use pod::{Pod, PodConfig};
pub use protection::{assess, Check, Protection, Status, Why, BY_SECCOMP, GIT_BY, GIT_GAP};
pub use settings::{
    clean_path, expand_socket, Mode, SandboxFile, Settings, Source, MAX_ALLOW_SOCKETS,
    MAX_ROOT_LEN, MAX_SOCKET_PATH, MAX_WRITABLE_ROOTS,
};

use crate::paths::Env;

/// What a shell legitimately writes outside any project, in every mode: the data sinks and
/// sources, and POSIX shared memory (semaphores of Python's multiprocessing live there).
/// Pipes and sockets a command inherits (its stdout, `/dev/stdout`, `/proc/self/fd/1` when
/// that is a pipe) are not files Landlock checks, so they need no entry; `/proc/self/fd/N`
/// naming a real file is checked as that file. Terminals are left out on purpose: a command
/// runs in a session of its own, without the user's terminal, and writing to `/dev/pts/N`
/// would let it put escape sequences on the user's screen (`sandbox.writable_roots` can add
/// `/dev/ptmx` and `/dev/pts` for a program that needs a pseudo-terminal of its own).
pub const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/shm",
];

/// A folder bash may write in, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub path: PathBuf,
    pub why: &'static str,
}

/// How much of a mode the running kernel enforces, in sum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enforcement {
    /// The mode is `off`.
    Off,
    Full,
    /// Enforced, but without these protections (each names what it needs).
    Partial(Vec<String>),
}

impl Enforcement {
    fn of(mode: Mode, checks: &[Check]) -> Enforcement {
        if mode == Mode::Off {
            return Enforcement::Off;
        }
        let gaps: Vec<String> = checks.iter().filter_map(Check::gap).collect();
        if gaps.is_empty() {
            Enforcement::Full
        } else {
            Enforcement::Partial(gaps)
        }
    }
}

/// What a run here enforces, decided once in hx before anything runs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub settings: Settings,
    pub kernel: Kernel,
    /// Each protection and whether it holds, in [`Protection::ALL`]'s order.
    pub protections: Vec<Check>,
    pub enforcement: Enforcement,
    pub workspace: PathBuf,
    /// Folders writable in `workspace-write` mode (empty in the other modes).
    pub writable: Vec<Root>,
    /// The entries of [`DEVICES`] that exist here.
    pub devices: Vec<PathBuf>,
    /// To print once per run, as `text::Warning`s.
    pub warnings: Vec<String>,
    /// Why a run must refuse to start (`sandbox.required` and a protection missing).
    pub refusal: Option<String>,
    /// Whether commands get the seccomp filter ([`seccomp::available`]).
    pub seccomp: bool,
    /// Whether the commands run in the run's pod (the assessment counts on it).
    pub pod: bool,
    /// The git folders of the workspace found at the start, which the pod protects.
    pub git: gitdirs::GitPlaces,
    /// The user's home folder, whose `~/.ssh` and the like the pod scans for sockets.
    pub home: Option<PathBuf>,
    /// The files the agent must not read (`.hxignore`, Claude Code's `Read(...)` deny
    /// rules): the file tools refuse them whatever the mode.
    pub deny: Arc<deny::Deny>,
    /// What of them exists at the start, which the pod hides from commands (empty without
    /// a pod).
    pub denied: deny::Existing,
}

/// Of the writable roots, those the pod binds back: not the temporary folders, which the
/// pod has its own of.
fn bound_back(writable: &[Root]) -> impl Iterator<Item = &PathBuf> {
    writable
        .iter()
        .filter(|r| r.why != roots::TMP_WHY && r.why != roots::TMPDIR_WHY)
        .map(|r| &r.path)
}

impl Plan {
    /// `workspace` must be canonical (the tools' root). `env` gives `HOME` (for `~/` roots)
    /// and `TMPDIR`.
    pub fn new(settings: &Settings, workspace: &Path, env: &Env, kernel: Kernel) -> Plan {
        Plan::with_kept(settings, workspace, env, kernel, None)
    }

    /// [`Plan::new`] whose walk for git folders may take the folders' listings the
    /// checkpoints kept (`kept`), where no command can have written them.
    pub fn with_kept(
        settings: &Settings,
        workspace: &Path,
        env: &Env,
        kernel: Kernel,
        kept: Option<&dyn gitdirs::Listed>,
    ) -> Plan {
        let seccomp = seccomp::available();
        Plan::build(settings, workspace, env, kernel, seccomp, None, kept)
    }

    /// [`Plan::new`] with what the seccomp probe answered given (tests, other kernels).
    pub fn with_seccomp(
        settings: &Settings,
        workspace: &Path,
        env: &Env,
        kernel: Kernel,
        seccomp: bool,
    ) -> Plan {
        Plan::build(settings, workspace, env, kernel, seccomp, None, None)
    }

    /// [`Plan::new`] where the run's pod cannot be made, for the reason `why`: what only the
    /// pod enforces is missing.
    pub fn without_pod(
        settings: &Settings,
        workspace: &Path,
        env: &Env,
        kernel: Kernel,
        why: &str,
    ) -> Plan {
        Plan::build(
            settings,
            workspace,
            env,
            kernel,
            seccomp::available(),
            Some(why),
            None,
        )
    }

    /// [`Plan::new`] or [`Plan::without_pod`], as a pod could be made here now (a forked child
    /// tries), for what reports a run's sandbox without starting one (`hx sandbox`).
    pub fn probed(settings: &Settings, workspace: &Path, env: &Env, kernel: Kernel) -> Plan {
        if settings.mode == Mode::Off {
            return Plan::new(settings, workspace, env, kernel);
        }
        let mut plan = match pod::probe() {
            Ok(()) => Plan::new(settings, workspace, env, kernel),
            Err(why) => Plan::without_pod(settings, workspace, env, kernel, &why),
        };
        // As a run here would warn (`with_pod`).
        plan.warnings.extend(plan.own_program_warning());
        plan
    }

    fn build(
        settings: &Settings,
        workspace: &Path,
        env: &Env,
        kernel: Kernel,
        seccomp: bool,
        no_pod: Option<&str>,
        kept: Option<&dyn gitdirs::Listed>,
    ) -> Plan {
        let mut protections = assess(
            settings.mode,
            settings.network,
            kernel,
            seccomp,
            no_pod.is_none(),
        );
        let home = env
            .get("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute());
        let (deny, mut warnings) = deny::Deny::load(workspace, home.as_deref());
        let denied = if settings.mode == Mode::Off || no_pod.is_some() {
            deny::Existing::default()
        } else {
            deny.existing(workspace)
        };
        warnings.extend(deny_warning(&deny, &denied, settings.mode, no_pod));
        let mut writable = Vec::new();
        if settings.mode == Mode::WorkspaceWrite {
            writable = roots::writable_roots(settings, workspace, env, &mut warnings);
            let path = env.get("PATH").map_or("", String::as_str);
            warnings.extend(roots::path_warnings(path, workspace));
        }
        // The git folders the pod protects are found now; past the walk's bound, nested
        // repositories may be left out, and that is said.
        // Without a pod nothing protects them: no walk.
        let git = if settings.mode == Mode::Off || no_pod.is_some() {
            gitdirs::GitPlaces::default()
        } else {
            // The checkpoints' listings only from a store no command of the pod can write
            // (outside the workspace and the writable roots; the temporary folders are the
            // pod's own): one a command wrote could hide a repository from the walk.
            let written = |file: &Path| {
                file.starts_with(workspace) || bound_back(&writable).any(|w| file.starts_with(w))
            };
            let kept = kept.filter(|k| !written(k.file()));
            gitdirs::GitPlaces::find(workspace, kept)
        };
        for c in &mut protections {
            let git_check = c.protection == Protection::GitMetadata;
            if git_check && git.bounded && matches!(c.status, Status::Enforced(_)) {
                c.status = Status::Partial {
                    by: GIT_BY,
                    gap: GIT_GAP,
                    why: Why::Bounded,
                };
            }
        }
        let enforcement = Enforcement::of(settings.mode, &protections);
        let devices = DEVICES
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect();
        let mode = settings.mode.name();
        let problem = match &enforcement {
            Enforcement::Off | Enforcement::Full => None,
            Enforcement::Partial(gaps)
                if protections
                    .iter()
                    .all(|c| c.status.holds() || why_not(&c.status) == Some(Why::Bounded)) =>
            {
                Some(format!(
                    "{}, so {mode} is not enforced whole: {}",
                    Why::Bounded,
                    gaps.join("; ")
                ))
            }
            Enforcement::Partial(gaps) => Some(match (no_pod, kernel.why_missing()) {
                // Landlock (and the pod) hold whole; what is missing is the seccomp filter's.
                (None, None)
                    if protections.iter().all(|c| {
                        c.status.holds() || matches!(why_not(&c.status), Some(Why::NoSeccomp))
                    }) =>
                {
                    format!(
                        "there is no seccomp filter for commands here (this kernel has none, or hx \
                         none for this architecture), so {mode} is not enforced whole: {}",
                        gaps.join("; ")
                    )
                }
                (None, None) => format!(
                    "this kernel's Landlock (ABI {}) cannot enforce all of {mode}: {}",
                    kernel.abi(),
                    gaps.join("; ")
                ),
                (None, Some(why)) => format!(
                    "{why}, so hx cannot enforce all of {mode}: {}",
                    gaps.join("; ")
                ),
                (Some(pod), None) => format!(
                    "hx cannot make its pod of namespaces here ({pod}), so it cannot enforce \
                     all of {mode}: {}",
                    gaps.join("; ")
                ),
                (Some(pod), Some(why)) => {
                    format!("hx cannot make its pod of namespaces here ({pod}) and {why}")
                }
            }),
        };
        if settings.mode == Mode::Off && !settings.network {
            warnings.push(
                "sandbox.network = false has no effect while the sandbox is off: TCP is not refused"
                    .into(),
            );
        }
        let mut refusal = None;
        if let Some(problem) = problem {
            if settings.required {
                refusal = Some(format!(
                    "sandbox.required is set, but {problem}; refusing to run (use --sandbox off to run unconfined)"
                ));
            } else if no_pod.is_some() && kernel.why_missing().is_some() {
                let unconfined: Vec<&str> = protections
                    .iter()
                    .filter(|c| !c.status.holds())
                    .map(|c| c.protection.name())
                    .collect();
                let ip = if !settings.network && seccomp {
                    " and its IP sockets refused"
                } else {
                    ""
                };
                warnings.push(format!(
                    "the sandbox is partial: {problem}, so bash runs with only its capabilities dropped{ip}: its {} {} not confined (set sandbox = \"off\" to silence this, or sandbox.required = true to refuse to run)",
                    protection::and_list(&unconfined),
                    if unconfined.len() == 1 { "is" } else { "are" }
                ));
            } else {
                warnings.push(format!(
                    "the sandbox is partial: {problem} (set sandbox.required = true to refuse to run instead)"
                ));
            }
        }
        Plan {
            settings: settings.clone(),
            kernel,
            protections,
            enforcement,
            workspace: workspace.to_path_buf(),
            writable,
            devices,
            warnings,
            refusal,
            seccomp,
            pod: no_pod.is_none(),
            git,
            home,
            deny: Arc::new(deny),
            denied,
        }
    }

    /// The sandbox the bash tool applies: `None` when the mode is off; the refusal when the
    /// run must not start. Without Landlock it still drops the commands' capabilities.
    pub fn sandbox(&self) -> Result<Option<Arc<Sandbox>>, String> {
        self.sandbox_in(None)
    }

    /// [`Plan::sandbox`], its commands run in `pod` when there is one.
    pub fn sandbox_in(&self, pod: Option<Arc<Pod>>) -> Result<Option<Arc<Sandbox>>, String> {
        if let Some(r) = &self.refusal {
            return Err(r.clone());
        }
        if self.settings.mode == Mode::Off {
            return Ok(None);
        }
        let writable: Vec<PathBuf> = self.writable.iter().map(|r| r.path.clone()).collect();
        let confinement = if self.kernel.why_missing().is_none() {
            // Once for the run: every command enters the same ruleset (see Confinement).
            let built = match &pod {
                None => {
                    let mut rules = writable.clone();
                    rules.extend(self.devices.iter().cloned());
                    Confinement::build(&rules, self.settings.network)
                }
                Some(pod) => {
                    // In the pod: its own /tmp and /dev/shm (folders of the run's on the host,
                    // so hx can open them), no signal scope (the PID namespace confines
                    // signals, and a command may signal what an earlier one of the run
                    // left), and the abstract-socket scope only where the pod shares hx's
                    // network namespace. Each command still gets a domain of its own, so it
                    // cannot ptrace or read the memory of another's processes (an MCP
                    // server's) in the same pod.
                    let mut rules = self.pod_writable();
                    if self.settings.mode == Mode::WorkspaceWrite {
                        rules.push(pod.run_dir().join("tmp"));
                    }
                    rules.push(pod.run_dir().join("shm"));
                    rules.push(pod.devpts());
                    rules.extend(
                        self.devices
                            .iter()
                            .filter(|d| !d.starts_with("/dev/shm"))
                            .cloned(),
                    );
                    let scopes = if self.settings.network {
                        landlock::Scope::AbstractUnixSocket.into()
                    } else {
                        landlock::BitFlags::empty()
                    };
                    // TCP is left to the pod's network namespace too: with Landlock's TCP
                    // rights a command's own loopback server would be refused as well.
                    Confinement::build_scoped(&rules, true, scopes)
                }
            };
            built.map_err(|e| format!("cannot set up the sandbox: {e}"))?
        } else {
            None
        };
        Ok(Some(Arc::new(Sandbox {
            mode: self.settings.mode,
            workspace: self.workspace.clone(),
            writable,
            confinement,
            caps: CapDrop::detect(),
            filter: self
                .seccomp
                .then(|| {
                    seccomp::Filter::new(if self.settings.network {
                        seccomp::Sockets::All
                    } else {
                        seccomp::Sockets::Local
                    })
                })
                .flatten()
                .map(Arc::new),
            redirects: match pod {
                Some(_) => gitdirs::Redirects::of(&self.git.clone().within(&self.pod_writable())),
                None => gitdirs::Redirects::default(),
            },
            hidden: match pod {
                Some(_) => self.denied.paths.clone(),
                None => Vec::new(),
            },
            pod,
        })))
    }

    /// Starts the run's pod when this plan runs commands confined; the plan comes back as it
    /// was, or, when the pod cannot be made here, without what only the pod enforces.
    pub fn with_pod(mut self, env: &Env) -> (Plan, Option<Arc<Pod>>) {
        let own = self.own_program_warning();
        self.warnings.extend(own.clone());
        if self.settings.mode == Mode::Off || self.refusal.is_some() || !self.pod {
            return (self, None);
        }
        let run_dir = std::env::temp_dir().join(format!(
            "hx-{}-{:08x}",
            std::process::id(),
            fastrand::u32(..)
        ));
        match Pod::start(&self.pod_config(run_dir)) {
            Ok(pod) => (self, Some(pod)),
            Err(why) => {
                let mut plan =
                    Plan::without_pod(&self.settings, &self.workspace, env, self.kernel, &why);
                plan.warnings.extend(own);
                (plan, None)
            }
        }
    }

    /// The writable folders the pod binds back: the workspace and `sandbox.writable_roots`,
    /// not the temporary folders, which the pod has its own of.
    fn pod_writable(&self) -> Vec<PathBuf> {
        bound_back(&self.writable).cloned().collect()
    }

    /// The folders a command (or a file tool) may write in this run, and what each is: the
    /// workspace always (in `read-only` too: its files are the repository's, a stranger's
    /// as much as the model's), the writable roots, and without the pod the temporary
    /// folders and `/dev/shm` (the pod has its own). What hx runs itself outside the sandbox
    /// is never taken from them ([`HostPath`]).
    pub fn written_by_commands(&self) -> Vec<Writable> {
        self.written(self.pod)
    }

    /// [`Plan::written_by_commands`] with a pod or without one.
    fn written(&self, pod: bool) -> Vec<Writable> {
        let mut out: Vec<Writable> = vec![(self.workspace.clone(), "the workspace")];
        for r in &self.writable {
            let temporary = r.why == roots::TMP_WHY || r.why == roots::TMPDIR_WHY;
            // The pod's temporary folders are its own, not the host's.
            let own = pod && temporary;
            if !own && !out.iter().any(|(p, _)| *p == r.path) {
                out.push((r.path.clone(), r.why));
            }
        }
        if !pod && self.settings.mode == Mode::WorkspaceWrite {
            let shm = PathBuf::from("/dev/shm");
            if self.devices.contains(&shm) {
                out.push((shm, "/dev/shm"));
            }
        }
        out
    }

    /// The warning for hx's own program (or `hx-pod` beside it) lying in a folder commands
    /// may write, or reached through a link that leads there: a command could replace it,
    /// and the user's next run of hx would be the model's program. This run is safe from
    /// it: the pod's launcher runs from a private copy (`pod::launcher`), and without a pod
    /// hx starts no program of its own.
    pub fn own_program_warning(&self) -> Option<String> {
        if self.settings.mode != Mode::WorkspaceWrite {
            return None;
        }
        let exe = std::env::current_exe().ok()?;
        let host = HostPath::new(None, self.written_by_commands());
        let pod = exe.with_file_name("hx-pod");
        let (at, (folder, what)) = [exe, pod]
            .into_iter()
            .filter(|p| p.is_file())
            .find_map(|p| host.writable_holding(&p).cloned().map(|w| (p, w)))?;
        let place = if what == "the workspace" {
            what.to_string()
        } else {
            format!("{what} ({})", folder.display())
        };
        Some(format!(
            "hx's program {} lies in {place}, which commands may write: a command could \
             replace it, and your next run of hx would run the model's program (this run \
             starts its commands from a copy of its own); install hx outside the folders \
             commands may write",
            at.display()
        ))
    }

    /// Where hx takes the programs it runs itself from: `env`'s PATH, without the folders
    /// commands may write and without relative entries.
    pub fn host_path(&self, env: &Env) -> HostPath {
        HostPath::new(
            env.get("PATH").map(String::as_str),
            self.written_by_commands(),
        )
    }

    /// [`Plan::host_path`] as it is without a pod (the temporary folders and `/dev/shm` the
    /// host's), known before the pod has started: no run's is narrower, so what it allows,
    /// the run's allows, whether or not its pod starts.
    pub fn narrowest_host_path(&self, env: &Env) -> HostPath {
        HostPath::new(env.get("PATH").map(String::as_str), self.written(false))
    }

    /// What the run's pod is made of; `run_dir` is the run's own folder (it must not exist).
    pub fn pod_config(&self, run_dir: PathBuf) -> PodConfig {
        let writable = self.pod_writable();
        // Outside the writable folders, the pod's tree is read-only already.
        let git = self.git.clone().within(&writable);
        // Read-only mode binds nothing writable, but the commands still run in the workspace.
        let read_only = if writable.contains(&self.workspace) {
            Vec::new()
        } else {
            vec![self.workspace.clone()]
        };
        PodConfig {
            writable,
            read_only,
            network: self.settings.network,
            run_dir,
            git_dirs: git.dirs,
            git_worktrees: git.worktrees,
            git_files: git.files,
            // Sockets of other programs the user allows on purpose (their ssh agent): bound
            // back over the hidden /tmp, /run and the other programs' sockets.
            allowed_sockets: self.settings.allow_sockets.clone(),
            places: self
                .home
                .as_deref()
                .map_or_else(Vec::new, pod::sockets::home_places),
            max_processes: Some(self.settings.max_processes),
            denied: self.denied.paths.clone(),
        }
    }

    /// What commands can still read of the denied files, in one line for `hx sandbox`.
    pub fn denied_in_commands(&self) -> String {
        let n = self.denied.paths.len();
        let files = crate::text::count(n as u64, "denied path");
        if self.settings.mode == Mode::Off {
            "not hidden from commands: the sandbox is off".into()
        } else if !self.pod {
            format!("not hidden from commands: {}", Why::NoPod)
        } else if self.denied.bounded {
            format!(
                "{files} hidden from commands by the pod; more may exist past the {} folders \
                 or {} paths looked through at the start; files made later are not hidden",
                deny::MAX_FOLDERS,
                deny::MAX_COVERED
            )
        } else {
            format!(
                "{files} hidden from commands by the pod (a file unreadable, a folder empty); \
                 files made later are not hidden"
            )
        }
    }
}

/// The one warning of a run whose deny rules commands can read past: no pod, the sandbox
/// off, or more denied files than the pod hides.
fn deny_warning(
    deny: &deny::Deny,
    denied: &deny::Existing,
    mode: Mode,
    no_pod: Option<&str>,
) -> Option<String> {
    if deny.is_empty() {
        return None;
    }
    let why = if mode == Mode::Off {
        "the sandbox is off".to_string()
    } else if no_pod.is_some() {
        "there is no pod to hide them in".to_string()
    } else if denied.bounded {
        format!(
            "there are more than the pod hides ({} paths, {} folders looked through)",
            deny::MAX_COVERED,
            deny::MAX_FOLDERS
        )
    } else {
        return None;
    };
    Some(format!("{}: {why}", deny::COMMANDS_CAN_READ))
}

/// Why a protection does not hold whole, if it does not.
fn why_not(status: &Status) -> Option<Why> {
    match status {
        Status::Missing(why) | Status::Partial { why, .. } => Some(*why),
        Status::Enforced(_) | Status::Allowed => None,
    }
}
/// The sandbox of a run, shared by every bash call (subagents' too).
#[derive(Debug)]
pub struct Sandbox {
    mode: Mode,
    workspace: PathBuf,
    /// Where writes are allowed (devices aside): what the denial note compares against.
    writable: Vec<PathBuf>,
    /// The ruleset every command enters; `None` when this kernel has none to offer.
    confinement: Option<Confinement>,
    /// Read once per run, before any fork.
    caps: CapDrop,
    /// Built once per run; `None` where this kernel or architecture has none.
    filter: Option<Arc<seccomp::Filter>>,
    /// The run's pod, when commands run in one (then `confinement` is the per-call ruleset
    /// the launcher enters inside it, and hx's child enters nothing itself).
    pod: Option<Arc<Pod>>,
    /// With a pod: the git redirection files no mount covers, removed after each command.
    redirects: gitdirs::Redirects,
    /// With a pod: the denied files and folders it hides, which a command's `Permission
    /// denied` may name.
    hidden: Vec<PathBuf>,
}

impl Drop for Sandbox {
    /// The end of the run (its agent dropped): a git redirection made since the last command
    /// (by an MCP server, or a process a command left running) is removed once more, before
    /// the user's git reads it.
    fn drop(&mut self) {
        let _ = self.redirects.undo();
    }
}

impl Sandbox {
    /// The mode this sandbox enforces (`workspace-write` or `read-only`).
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether commands run in a pod (then their `/tmp` is the run's own).
    pub fn has_pod(&self) -> bool {
        self.pod.is_some()
    }

    /// After a command: removes the git redirection files it made where none was at the
    /// start (a `.git/commondir` would send the user's git to config the model wrote); the
    /// line that says so, for the command's output, or `None` when there were none.
    pub fn undo_git_redirects(&self) -> Option<String> {
        let undone = self.redirects.undo();
        if undone.is_empty() {
            return None;
        }
        let names: Vec<String> = undone.iter().map(|p| p.display().to_string()).collect();
        Some(format!(
            "hx removed {}: a command made it, and it would send the user's git to \
             another folder's config and hooks, outside the sandbox",
            names.join(", ")
        ))
    }

    /// Why no command can start now (the run's pod has exited); `None` when they can.
    pub fn gone(&self) -> Option<String> {
        self.pod.as_ref()?.gone()
    }

    /// Whether a command cannot see `path`, a file of the host's: it lies under `/tmp`,
    /// which the run's pod replaces with its own (see [`Pod::hides`]); never without a pod.
    pub fn hides(&self, path: &Path) -> bool {
        self.pod.as_ref().is_some_and(|p| p.hides(path))
    }

    /// The pod's own folder on the host, whose `tmp` is the commands' `/tmp`.
    pub fn run_dir(&self) -> Option<&Path> {
        self.pod.as_ref().map(|p| p.run_dir())
    }

    /// Makes the child of `cmd` enter the sandbox just before it executes the program (after
    /// any `pre_exec` set before this one, such as `setsid`). With a pod, the child joins it
    /// and starts the command in it, then stays outside as its launcher ([`Pod::join`]):
    /// `cmd` must be the command as it will run, since its program, arguments and
    /// environment (the variables set on it: clear it first) are read here.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let ruleset = self.confinement.as_ref().map(Confinement::raw_fd);
        if let Some(pod) = &self.pod {
            let join = pod.join(ruleset, self.caps, cmd);
            // SAFETY: `run` makes only async-signal-safe syscalls on what `join` made before
            // the fork; the pod's and the ruleset's descriptors stay open in hx for the
            // whole run (this `Sandbox` owns them).
            unsafe {
                cmd.pre_exec(move || join.run());
            }
            return;
        }
        let caps = self.caps;
        let filter = self.filter.clone();
        // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
        // allowed: `enter` makes syscalls on copied integers, its own stack and the filter
        // built before the fork, with no allocation, no lock and no output. The ruleset's
        // descriptor stays open in hx for the whole run (this `Sandbox` owns it).
        unsafe {
            cmd.pre_exec(move || enter(ruleset, caps, filter.as_deref()));
        }
    }

    /// The line to add to a failed command's output when it shows a write the sandbox
    /// refused (see `denial::refused_write`); `None` otherwise, and always without a ruleset
    /// (no Landlock) and without a pod, since then nothing refused it.
    pub fn denial_note(&self, output: &str) -> Option<String> {
        // Without a ruleset and without a pod nothing refused it.
        if self.confinement.is_none() && self.pod.is_none() {
            return None;
        }
        if let Some(path) = denial::hidden_read(output, &self.workspace, &self.hidden) {
            return Some(format!(
                "[sandbox] {} is denied to the model by the user's deny rules (.hxignore, \
                 Read(...) in .claude/settings.json): hx hides it from commands too. Retrying \
                 will not help; ask the user if you need what it holds.",
                path.display()
            ));
        }
        let read_only = self.mode == Mode::ReadOnly;
        let hit = denial::refused_write(output, &self.workspace, &self.writable, read_only)?;
        Some(if read_only {
            "[sandbox] hx's sandbox is read-only for this run: nothing outside /dev/null and the \
             like may be written. Retrying will not help; the user can allow writes with \
             --sandbox workspace-write or --sandbox off."
                .to_string()
        } else {
            let what = hit.map_or_else(
                || "the write".to_string(),
                |p| format!("the write to {}", p.display()),
            );
            format!(
                "[sandbox] hx's sandbox refused {what}: bash may write only in the workspace, the \
                 temporary folder and sandbox.writable_roots. Retrying will not help; the user \
                 can allow it by adding the folder to sandbox.writable_roots in hx's config, or \
                 with --sandbox off."
            )
        })
    }
}

/// What the just-forked, single-threaded child does to enter the sandbox, in this order:
/// `no_new_privs` (Landlock and seccomp need it of a process without `CAP_SYS_ADMIN`, and it
/// keeps set-user-ID programs from giving back what is dropped next), the ruleset when there
/// is one, every capability dropped, then the seccomp filter (last, so that nothing above
/// runs under it). Any step failing fails the spawn, so a command never runs less confined
/// than planned.
pub(crate) fn enter(
    ruleset: Option<RawFd>,
    caps: CapDrop,
    filter: Option<&seccomp::Filter>,
) -> io::Result<()> {
    // SAFETY: plain syscalls with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if let Some(fd) = ruleset {
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
    }
    caps.apply()?;
    match filter {
        Some(f) => f.install(),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests;
