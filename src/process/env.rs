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
//! Patterns are globs (`*`, `?`, `[...]`) matched against the whole name, ignoring case.
//! Command hooks are the user's own programs and get hx's whole environment instead.
//!
//! A command could still read hx's environment back from `/proc/<hx>/environ` (its `$PPID`),
//! which shows the block the process started with. [`scrub_own_environ`] blanks the secrets'
//! values in that block once hx has copied what it needs.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CStr, OsStr, OsString};
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

    /// The environment a tool command gets, from `vars` (hx's own environment).
    pub fn apply(&self, vars: impl IntoIterator<Item = (OsString, OsString)>) -> ToolEnv {
        let mut out: BTreeMap<OsString, OsString> = vars
            .into_iter()
            .filter(|(name, _)| self.keeps(&name.to_string_lossy()))
            .collect();
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
