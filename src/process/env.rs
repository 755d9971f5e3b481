//! The environment of tool commands (`bash`, for the agent and its subagents).
//!
//! hx itself holds API keys in its environment; a command the model runs must not be able to
//! print them into the conversation. The policy follows Codex's shell environment policy:
//!
//! 1. `inherit`: start from all of hx's variables, the core ones ([`CORE_VARS`] and `LC_*`),
//!    or none;
//! 2. unless `ignore_default_excludes`, drop the provider key variables hx knows and every
//!    name containing `KEY`, `SECRET`, `TOKEN` or `PASSWORD` (any case);
//! 3. drop the names matching an `exclude` pattern;
//! 4. when `include_only` is not empty, keep only the names matching one of its patterns;
//! 5. add `set`, last, so a value set on purpose always arrives.
//!
//! When the sandbox is on ([`EnvPolicy::apply_sandboxed`]), step 4 is followed by one more:
//! the variables that point a program at another program's Unix socket ([`SOCKET_VARS`]: the
//! ssh and gpg agents, the D-Bus buses, tmux and screen, Docker and Podman, the display and
//! the window manager, editors' servers) are dropped, each kept only when it names a socket of
//! `sandbox.allow_sockets`. Those programs do what they are asked with the user's keys and
//! outside the sandbox, so a command must not find them by default. `set` still wins.
//!
//! Patterns are globs (`*`, `?`, `[...]`) matched against the whole name, ignoring case.
//! Command hooks are the user's own programs and get hx's whole environment instead.
//!
//! A command could still read hx's environment back from `/proc/<hx>/environ` (its `$PPID`),
//! which shows the block the process started with. [`scrub_own_environ`] blanks the secrets'
//! values in that block once hx has copied what it needs.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::sandbox::clean_path as clean;
use std::sync::{Arc, OnceLock};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde::Deserialize;

/// The variables `inherit = "core"` keeps, besides every `LC_*`: who and where the user is,
/// where programs and temporary files are, and the locale and terminal they expect.
pub const CORE_VARS: [&str; 13] = [
    "HOME", "LOGNAME", "USER", "USERNAME", "PATH", "SHELL", "TMPDIR", "TEMP", "TMP", "LANG",
    "LANGUAGE", "TERM", "TZ",
];

/// Names holding secrets by convention, dropped unless `ignore_default_excludes`.
pub const DEFAULT_EXCLUDES: [&str; 4] = ["*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*"];

/// The variables that name, or lead a program to, another program's Unix socket; dropped for
/// sandboxed commands unless they name an allowed socket (see [`socket_target`] for how each
/// value is read). `KRB5CCNAME` is not among them: it names a credential file (or a keyring),
/// not a program that acts for the command.
pub const SOCKET_VARS: [&str; 27] = [
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
    "GNOME_KEYRING_CONTROL",
    "TMUX",
    "TMUX_PANE",
    "STY",
    "DOCKER_HOST",
    "CONTAINER_HOST",
    "WAYLAND_DISPLAY",
    "WAYLAND_SOCKET",
    "DISPLAY",
    "XAUTHORITY",
    "PULSE_SERVER",
    "PIPEWIRE_REMOTE",
    "SWAYSOCK",
    "I3SOCK",
    "NIRI_SOCKET",
    "KITTY_LISTEN_ON",
    "WEZTERM_UNIX_SOCKET",
    "NVIM",
    "NVIM_LISTEN_ADDRESS",
    "EMACS_SOCKET_NAME",
    "VSCODE_IPC_HOOK_CLI",
];

/// What a socket variable's value leads to.
#[derive(Debug, PartialEq)]
enum Target {
    /// These sockets (all of them must be allowed; none: dropped).
    Sockets(Vec<PathBuf>),
    /// A folder of sockets: kept when an allowed socket lies beneath it.
    Folder(PathBuf),
    /// A socket of this file name (screen's session, in a folder of screen's choosing).
    Named(String),
    /// Goes with that other variable: kept when it is.
    With(&'static str),
}

/// How a program reads `name`'s `value` (`runtime`: `XDG_RUNTIME_DIR`, for the names that are
/// relative to it).
fn socket_target(name: &str, value: &str, runtime: Option<&str>) -> Target {
    let one = |p: &str| Target::Sockets(vec![PathBuf::from(p)]);
    let none = Target::Sockets(Vec::new());
    let in_runtime = |v: &str| {
        if v.starts_with('/') {
            one(v)
        } else {
            match runtime {
                Some(r) if !v.is_empty() => Target::Sockets(vec![Path::new(r).join(v)]),
                _ => Target::Sockets(Vec::new()),
            }
        }
    };
    match name {
        "SSH_AGENT_PID" => Target::With("SSH_AUTH_SOCK"),
        "TMUX_PANE" => Target::With("TMUX"),
        "XAUTHORITY" => Target::With("DISPLAY"),
        // `PATH:PID:PROTOCOL`, `PATH,PID,SESSION`.
        "GPG_AGENT_INFO" => one(value.split(':').next().unwrap_or("")),
        "TMUX" => one(value.split(',').next().unwrap_or("")),
        // `unix:path=P,guid=G;unix:abstract=...`: every address must be an allowed path.
        "DBUS_SESSION_BUS_ADDRESS" | "DBUS_SYSTEM_BUS_ADDRESS" => {
            let paths: Option<Vec<PathBuf>> = value
                .split(';')
                .filter(|a| !a.is_empty())
                .map(|a| {
                    let rest = a.strip_prefix("unix:")?;
                    rest.split(',')
                        .find_map(|kv| kv.strip_prefix("path="))
                        .map(PathBuf::from)
                })
                .collect();
            Target::Sockets(paths.unwrap_or_default())
        }
        "XDG_RUNTIME_DIR" | "GNOME_KEYRING_CONTROL" => Target::Folder(PathBuf::from(value)),
        "STY" => Target::Named(value.to_string()),
        // `unix:///P`; `tcp://` and `ssh://` lead to the same engine another way.
        "DOCKER_HOST" | "CONTAINER_HOST" => value.strip_prefix("unix://").map_or(none, one),
        "WAYLAND_DISPLAY" | "PIPEWIRE_REMOTE" => in_runtime(value),
        // An inherited descriptor's number: hx passes on none.
        "WAYLAND_SOCKET" => none,
        // `:N`, `:N.S`, `unix:N`: X's socket N; a host before the colon is TCP.
        "DISPLAY" => {
            let n = value
                .strip_prefix(':')
                .or_else(|| value.strip_prefix("unix:"))
                .map(|d| d.split('.').next().unwrap_or(""))
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()));
            n.map_or(none, |n| one(&format!("/tmp/.X11-unix/X{n}")))
        }
        // `unix:P` (`unix:@name` is abstract, `tcp:` is TCP).
        "KITTY_LISTEN_ON" => value.strip_prefix("unix:").map_or(none, one),
        "PULSE_SERVER" => one(value.strip_prefix("unix:").unwrap_or(value)),
        _ => one(value),
    }
}

/// The allowed sockets as configured and, for those that exist, as the file system resolves
/// them, so that a variable naming one through a link still matches.
struct Allowed {
    paths: Vec<PathBuf>,
    real: Vec<PathBuf>,
}

impl Allowed {
    fn new(paths: &[PathBuf]) -> Allowed {
        Allowed {
            paths: paths.iter().filter_map(|p| clean(p)).collect(),
            real: paths.iter().filter_map(|p| p.canonicalize().ok()).collect(),
        }
    }

    /// Whether `path` is one of them (a relative path never is).
    fn has(&self, path: &Path) -> bool {
        path.is_absolute()
            && (clean(path).is_some_and(|p| self.paths.contains(&p))
                || path.canonicalize().is_ok_and(|p| self.real.contains(&p)))
    }

    /// Whether one of them lies beneath the folder `dir`.
    fn beneath(&self, dir: &Path) -> bool {
        dir.is_absolute()
            && (clean(dir).is_some_and(|d| self.paths.iter().any(|p| p.starts_with(&d)))
                || dir
                    .canonicalize()
                    .is_ok_and(|d| self.real.iter().any(|p| p.starts_with(&d))))
    }

    fn named(&self, name: &str) -> bool {
        !name.is_empty()
            && self
                .paths
                .iter()
                .chain(&self.real)
                .any(|p| p.file_name().is_some_and(|f| f == name))
    }
}

/// The socket variables of `vars` that do not name an allowed socket.
fn unallowed_sockets(
    vars: &BTreeMap<OsString, OsString>,
    allowed: &[PathBuf],
) -> Vec<&'static str> {
    let allowed = Allowed::new(allowed);
    let value = |name: &str| vars.get(OsStr::new(name)).map(|v| v.to_string_lossy());
    let runtime = value("XDG_RUNTIME_DIR");
    let keeps = |name: &str| -> bool {
        let Some(v) = value(name) else {
            return false;
        };
        match socket_target(name, &v, runtime.as_deref()) {
            Target::Sockets(paths) => !paths.is_empty() && paths.iter().all(|p| allowed.has(p)),
            Target::Folder(dir) => allowed.beneath(&dir),
            Target::Named(n) => allowed.named(&n),
            // Resolved below, once the others are known.
            Target::With(_) => true,
        }
    };
    let mut dropped: Vec<&'static str> = SOCKET_VARS
        .into_iter()
        .filter(|n| vars.contains_key(OsStr::new(n)) && !keeps(n))
        .collect();
    for name in SOCKET_VARS {
        if let Some(v) = value(name) {
            if let Target::With(other) = socket_target(name, &v, None) {
                let alone = dropped.contains(&other) || !vars.contains_key(OsStr::new(other));
                if alone && !dropped.contains(&name) {
                    dropped.push(name);
                }
            }
        }
    }
    dropped
}

/// Where a tool command's environment starts from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inherit {
    /// Every variable of hx's environment.
    #[default]
    All,
    /// Only [`CORE_VARS`] and `LC_*`.
    Core,
    /// Nothing: only what `set` gives.
    None,
}

/// The rules, checked (patterns compiled, `set` names valid).
#[derive(Debug, Clone)]
pub struct EnvPolicy {
    inherit: Inherit,
    default_excludes: bool,
    /// The provider key variables hx knows (presets and every configured `api_key_env`);
    /// matched by exact name, since a configured one need not look like a key.
    key_vars: BTreeSet<String>,
    defaults: GlobSet,
    exclude: GlobSet,
    /// `None`: no filter.
    include_only: Option<GlobSet>,
    set: BTreeMap<String, String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        EnvPolicy::new(
            Inherit::All,
            false,
            &[],
            &[],
            BTreeMap::new(),
            BTreeSet::new(),
        )
        .unwrap_or_else(|_| unreachable!("the default policy has no user patterns"))
    }
}

impl EnvPolicy {
    /// Checks and compiles the rules; the error names the bad pattern or variable.
    pub fn new(
        inherit: Inherit,
        ignore_default_excludes: bool,
        exclude: &[String],
        include_only: &[String],
        set: BTreeMap<String, String>,
        key_vars: BTreeSet<String>,
    ) -> Result<EnvPolicy, String> {
        for (name, value) in &set {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!(
                    "set: {name:?} is not a variable name (empty, or has '=' or NUL)"
                ));
            }
            if value.contains('\0') {
                return Err(format!("set: the value of {name} contains NUL"));
            }
        }
        Ok(EnvPolicy {
            inherit,
            default_excludes: !ignore_default_excludes,
            key_vars,
            defaults: patterns("default excludes", &DEFAULT_EXCLUDES)?,
            exclude: patterns("exclude", exclude)?,
            include_only: if include_only.is_empty() {
                None
            } else {
                Some(patterns("include_only", include_only)?)
            },
            set,
        })
    }

    /// The environment a tool command gets, from `vars` (hx's own environment), when the
    /// sandbox is off: the socket variables pass as they are.
    pub fn apply(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> ToolEnv {
        self.apply_with(vars, None)
    }

    /// The environment a sandboxed tool command gets: as [`EnvPolicy::apply`], without the
    /// [`SOCKET_VARS`] that name no socket of `allowed` (`sandbox.allow_sockets`).
    pub fn apply_sandboxed(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        allowed: &[PathBuf],
    ) -> ToolEnv {
        self.apply_with(vars, Some(allowed))
    }

    fn apply_with(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
        sockets: Option<&[PathBuf]>,
    ) -> ToolEnv {
        let mut out: BTreeMap<OsString, OsString> = vars
            .into_iter()
            .filter(|(name, _)| self.keeps(&name.to_string_lossy()))
            .collect();
        if let Some(allowed) = sockets {
            for name in unallowed_sockets(&out, allowed) {
                out.remove(OsStr::new(name));
            }
        }
        for (k, v) in &self.set {
            out.insert(k.into(), v.into());
        }
        ToolEnv {
            vars: Arc::new(out.into_iter().collect()),
        }
    }

    /// Whether the default excludes cover `name` (whether or not they are on).
    pub fn is_secret(&self, name: &str) -> bool {
        self.defaults.is_match(name) || self.key_vars.iter().any(|k| k.eq_ignore_ascii_case(name))
    }

    /// Whether an inherited variable survives steps 1 to 4.
    fn keeps(&self, name: &str) -> bool {
        let inherited = match self.inherit {
            Inherit::All => true,
            Inherit::Core => CORE_VARS.contains(&name) || name.starts_with("LC_"),
            Inherit::None => false,
        };
        inherited
            && !(self.default_excludes && self.is_secret(name))
            && !self.exclude.is_match(name)
            && self.include_only.as_ref().is_none_or(|s| s.is_match(name))
    }
}

fn patterns(what: &str, list: &[impl AsRef<str>]) -> Result<GlobSet, String> {
    let mut b = GlobSetBuilder::new();
    for p in list {
        let p = p.as_ref();
        let glob = GlobBuilder::new(p)
            .case_insensitive(true)
            .build()
            .map_err(|e| format!("{what}: bad pattern {p:?}: {e}"))?;
        b.add(glob);
    }
    b.build().map_err(|e| format!("{what}: {e}"))
}

/// The environment of a run's tool commands and local MCP servers: `policy` applied to hx's
/// environment as it started, with the socket variables confined when the sandbox is on.
pub fn for_tools(policy: &EnvPolicy, sandbox: &crate::sandbox::Settings) -> ToolEnv {
    if sandbox.mode == crate::sandbox::Mode::Off {
        policy.apply(original_vars())
    } else {
        policy.apply_sandboxed(original_vars(), &sandbox.allow_sockets)
    }
}

/// hx's environment as it started, kept by [`scrub_own_environ`] for hooks and the policy.
static ORIGINAL: OnceLock<Vec<(OsString, OsString)>> = OnceLock::new();

/// hx's environment as it started: [`scrub_own_environ`] blanked the secrets in the live one.
pub fn original_vars() -> Vec<(OsString, OsString)> {
    match ORIGINAL.get() {
        Some(vars) => vars.clone(),
        None => std::env::vars_os().collect(),
    }
}

/// The environment command hooks get: hx's own, with the secrets' values (the user's hooks
/// may need them). `None` when nothing was scrubbed: then inheriting is the same.
pub(super) fn hook_vars() -> Option<&'static [(OsString, OsString)]> {
    ORIGINAL.get().map(Vec::as_slice)
}

extern "C" {
    /// POSIX: the process's environment, a NULL-terminated array of `NAME=VALUE` strings.
    static mut environ: *mut *mut libc::c_char;
}

/// Overwrites with NULs, in place, the values of the variables `policy` deems secret in hx's
/// own environment (so `/proc/<hx>/environ` and `getenv` show them empty), after keeping a
/// copy for hooks and the tool policy ([`original_vars`]).
///
/// # Safety
/// No other thread may read or change the environment meanwhile: call it once, at start,
/// before any thread is spawned, and after everything that needs a secret has copied it.
pub unsafe fn scrub_own_environ(policy: &EnvPolicy) {
    if ORIGINAL.set(std::env::vars_os().collect()).is_err() {
        return;
    }
    // SAFETY: the caller guarantees exclusive access; `environ` is NULL or a NULL-terminated
    // array of valid NUL-terminated strings, which live in writable memory (the initial block
    // on the stack, or the heap for variables set later).
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let s = *entry;
            let bytes = CStr::from_ptr(s).to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                if policy.is_secret(&String::from_utf8_lossy(&bytes[..eq])) {
                    std::ptr::write_bytes(s.add(eq + 1), 0, bytes.len() - eq - 1);
                }
            }
            entry = entry.add(1);
        }
    }
}

/// The variables tool commands run with: computed once per run from hx's environment, so
/// every command of the run (and of its subagents) sees the same.
#[derive(Debug, Clone)]
pub struct ToolEnv {
    vars: Arc<Vec<(OsString, OsString)>>,
}

impl ToolEnv {
    /// The default policy applied to the process environment (tests, embedders).
    pub fn from_process_default() -> ToolEnv {
        EnvPolicy::default().apply(std::env::vars_os())
    }

    pub fn vars(&self) -> impl Iterator<Item = (&OsStr, &OsStr)> {
        self.vars
            .iter()
            .map(|(k, v)| (k.as_os_str(), v.as_os_str()))
    }

    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

impl Default for ToolEnv {
    fn default() -> Self {
        ToolEnv::from_process_default()
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
