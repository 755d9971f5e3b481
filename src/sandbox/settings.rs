//! The sandbox's configuration: `sandbox = "MODE"` or a `[sandbox]` table in a config file,
//! and `--sandbox MODE` on the command line.

use std::fmt;
use std::path::PathBuf;

use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use crate::paths::Env;

/// At most this many `writable_roots` (after the files are merged): each one is a rule the
/// kernel checks on every write, and a list longer than this is a mistake, not a setup.
pub const MAX_WRITABLE_ROOTS: usize = 64;
/// At most this many bytes in one `writable_roots` entry (PATH_MAX).
pub const MAX_ROOT_LEN: usize = 4096;
/// At most this many `allow_sockets` (after the files are merged): each is a way out of the
/// sandbox that the user names on purpose (an ssh agent, a container engine), not a list.
pub const MAX_ALLOW_SOCKETS: usize = 16;
/// At most this many bytes in a Unix socket's path (`sun_path`, NUL included): a longer one
/// cannot be connected to at all.
pub const MAX_SOCKET_PATH: usize = 108;
/// The pod's process bound when no file sets one (`sandbox.max_processes`): threads count, so
/// a parallel build has room, and a fork loop stops well before a host's pid_max of 32,768.
pub const DEFAULT_MAX_PROCESSES: u32 = 8192;
/// The kernel's bounds for a pid namespace's `pid_max` (`PID_MAX_MIN`, `PID_MAX_LIMIT`).
pub const MAX_PROCESSES_RANGE: std::ops::RangeInclusive<u32> = 301..=4_194_304;

/// What bash (and everything it starts) may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Write only in the workspace, the temporary folder and `sandbox.writable_roots`
    WorkspaceWrite,
    /// Write nowhere but /dev/null and the like
    ReadOnly,
    /// No sandbox
    Off,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::WorkspaceWrite => "workspace-write",
            Mode::ReadOnly => "read-only",
            Mode::Off => "off",
        }
    }
}

/// The `sandbox` key of one config file, as written: a bare mode or a table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SandboxFile {
    pub mode: Option<Mode>,
    pub writable_roots: Vec<String>,
    pub network: Option<bool>,
    pub required: Option<bool>,
    /// As written: absolute, `~/...`, `$NAME` or `${NAME}` (see [`expand_socket`]).
    pub allow_sockets: Vec<String>,
    /// The bound on the pod's processes and threads.
    pub max_processes: Option<u32>,
    /// The file that set `mode` (filled in by the loader, never read from TOML), so that
    /// `hx sandbox` can say where the mode came from.
    pub mode_from: Option<PathBuf>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    mode: Option<Mode>,
    #[serde(default)]
    writable_roots: Vec<String>,
    network: Option<bool>,
    required: Option<bool>,
    #[serde(default)]
    allow_sockets: Vec<String>,
    max_processes: Option<u32>,
}

impl<'de> Deserialize<'de> for SandboxFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SandboxFile;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a mode (\"workspace-write\", \"read-only\" or \"off\") or a [sandbox] table",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<SandboxFile, E> {
                Ok(SandboxFile {
                    mode: Some(Mode::deserialize(s.into_deserializer())?),
                    ..SandboxFile::default()
                })
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SandboxFile, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(SandboxFile {
                    mode: t.mode,
                    writable_roots: t.writable_roots,
                    network: t.network,
                    required: t.required,
                    allow_sockets: t.allow_sockets,
                    max_processes: t.max_processes,
                    mode_from: None,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl SandboxFile {
    /// Records the file this setting was read from.
    pub fn read_from(mut self, path: &std::path::Path) -> Self {
        if self.mode.is_some() {
            self.mode_from = Some(path.to_path_buf());
        }
        self
    }

    /// `self` with `top` laid over it. `writable_roots` and `allow_sockets` add up (a
    /// project's join the user's), the other keys are replaced.
    pub fn overlay(mut self, top: SandboxFile) -> SandboxFile {
        if top.mode.is_some() {
            self.mode = top.mode;
            self.mode_from = top.mode_from;
        }
        for r in top.writable_roots {
            if !self.writable_roots.contains(&r) {
                self.writable_roots.push(r);
            }
        }
        for s in top.allow_sockets {
            if !self.allow_sockets.contains(&s) {
                self.allow_sockets.push(s);
            }
        }
        self.network = top.network.or(self.network);
        self.required = top.required.or(self.required);
        self.max_processes = top.max_processes.or(self.max_processes);
        self
    }
}

/// Where the mode in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Default,
    File(PathBuf),
    Flag,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Flag => f.write_str("--sandbox"),
        }
    }
}

/// The sandbox settings of a run, merged and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub mode: Mode,
    pub source: Source,
    /// As written: absolute, `~/...`, or relative to the workspace.
    pub writable_roots: Vec<String>,
    /// Whether TCP connect and bind are allowed.
    pub network: bool,
    /// Refuse to run when the kernel cannot enforce every protection of the mode (see
    /// `Protection`): a Landlock older than ABI 6 (the scopes) is refused too.
    pub required: bool,
    /// The Unix sockets of programs outside the sandbox that commands may use on purpose
    /// (`sandbox.allow_sockets`, expanded): absolute, lexically clean, at most
    /// [`MAX_ALLOW_SOCKETS`]. A socket need not exist yet (an agent started later).
    pub allow_sockets: Vec<PathBuf>,
    /// The `allow_sockets` entries left out, as written, because a variable they name (or
    /// `HOME`) is not set or empty here: no such agent runs for this run, which is not an error.
    pub allow_sockets_unset: Vec<String>,
    /// The most processes (threads included) the run's pod holds at once: its PID
    /// namespace's `pid_max` (Linux 6.14 and later).
    pub max_processes: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::WorkspaceWrite,
            source: Source::Default,
            writable_roots: Vec::new(),
            network: true,
            required: false,
            allow_sockets: Vec::new(),
            allow_sockets_unset: Vec::new(),
            max_processes: DEFAULT_MAX_PROCESSES,
        }
    }
}

impl Settings {
    /// The merged files' setting with the flag over it; `env` expands `allow_sockets`.
    pub fn resolve(file: &SandboxFile, flag: Option<Mode>, env: &Env) -> Result<Settings, String> {
        if file.writable_roots.len() > MAX_WRITABLE_ROOTS {
            return Err(format!(
                "sandbox.writable_roots has {} entries; at most {MAX_WRITABLE_ROOTS} are allowed",
                file.writable_roots.len()
            ));
        }
        for r in &file.writable_roots {
            if r.trim().is_empty() {
                return Err("sandbox.writable_roots has an empty entry".into());
            }
            if r.len() > MAX_ROOT_LEN || r.contains('\0') {
                return Err(format!(
                    "sandbox.writable_roots has an entry that is not a path (longer than {MAX_ROOT_LEN} bytes or with a NUL byte)"
                ));
            }
        }
        let (allow_sockets, allow_sockets_unset) = allowed_sockets(&file.allow_sockets, env)?;
        let max_processes = file.max_processes.unwrap_or(DEFAULT_MAX_PROCESSES);
        if !MAX_PROCESSES_RANGE.contains(&max_processes) {
            return Err(format!(
                "sandbox.max_processes is {max_processes}; it must be between {} and {}",
                MAX_PROCESSES_RANGE.start(),
                MAX_PROCESSES_RANGE.end()
            ));
        }
        let (mode, source) = match (flag, file.mode) {
            (Some(m), _) => (m, Source::Flag),
            (None, Some(m)) => (
                m,
                file.mode_from.clone().map_or(Source::Default, Source::File),
            ),
            (None, None) => (Mode::WorkspaceWrite, Source::Default),
        };
        Ok(Settings {
            mode,
            source,
            writable_roots: file.writable_roots.clone(),
            network: file.network.unwrap_or(true),
            required: file.required.unwrap_or(false),
            allow_sockets,
            allow_sockets_unset,
            max_processes,
        })
    }
}

/// `sandbox.allow_sockets` expanded and checked: the paths, and the entries left out because
/// a variable they name is not set. An entry that is not a socket path once expanded is an
/// error that names it, so a typo does not silently allow nothing (or something else).
fn allowed_sockets(written: &[String], env: &Env) -> Result<(Vec<PathBuf>, Vec<String>), String> {
    if written.len() > MAX_ALLOW_SOCKETS {
        return Err(format!(
            "sandbox.allow_sockets has {} entries; at most {MAX_ALLOW_SOCKETS} are allowed",
            written.len()
        ));
    }
    let (mut paths, mut unset) = (Vec::new(), Vec::new());
    for raw in written {
        let bad = |why: &str| format!("sandbox.allow_sockets: {raw:?} {why}");
        if raw.len() > MAX_ROOT_LEN || raw.contains('\0') {
            return Err(bad(&format!(
                "is not a path (longer than {MAX_ROOT_LEN} bytes or with a NUL byte)"
            )));
        }
        let Some(path) = expand_socket(raw, env).map_err(|e| bad(&e))? else {
            unset.push(raw.clone());
            continue;
        };
        if !path.is_absolute() {
            return Err(bad(&format!(
                "is {}, not an absolute path (write /..., ~/... or a variable holding one)",
                if path.as_os_str().is_empty() {
                    "empty".to_string()
                } else {
                    format!("{:?}", path.display().to_string())
                }
            )));
        }
        let clean = clean_path(&path).ok_or_else(|| {
            bad(&format!(
                "({}) has a `..` component; name the socket itself",
                path.display()
            ))
        })?;
        if clean.as_os_str().len() >= MAX_SOCKET_PATH {
            return Err(bad(&format!(
                "({}) is {} bytes long; a Unix socket's path has fewer than {MAX_SOCKET_PATH}",
                clean.display(),
                clean.as_os_str().len()
            )));
        }
        if !paths.contains(&clean) {
            paths.push(clean);
        }
    }
    Ok((paths, unset))
}

/// One `allow_sockets` entry with `~/` (at the start: `HOME`) and `$NAME` / `${NAME}`
/// (anywhere: hx's environment) replaced, `$$` standing for a `$`. `Ok(None)` when a variable
/// it names (or `HOME`) is not set or empty; `Err` for a `$` that starts no name.
pub fn expand_socket(raw: &str, env: &Env) -> Result<Option<PathBuf>, String> {
    let var = |name: &str| env.get(name).filter(|v| !v.is_empty()).cloned();
    let mut out = String::new();
    let mut rest = raw;
    if let Some(after) = rest.strip_prefix("~/") {
        let Some(home) = var("HOME") else {
            return Ok(None);
        };
        out.push_str(home.trim_end_matches('/'));
        out.push('/');
        rest = after;
    } else if rest.starts_with('~') {
        return Err("starts with `~` but not `~/` (another user's home is not expanded)".into());
    }
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let name_len = |s: &str| {
            s.bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count()
        };
        let (name, used) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) if end > 0 && name_len(braced) == end => (&braced[..end], end + 2),
                _ => return Err("has a `${` without a variable name and `}`".into()),
            }
        } else if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
            continue;
        } else {
            match name_len(after) {
                0 => {
                    return Err(
                        "has a `$` that starts no variable name (write `$$` for a `$`)".into(),
                    )
                }
                n => (&after[..n], n),
            }
        };
        let Some(value) = var(name) else {
            return Ok(None);
        };
        out.push_str(&value);
        rest = &after[used..];
    }
    out.push_str(rest);
    Ok(Some(PathBuf::from(out)))
}

/// `path` without `.` components and repeated slashes; `None` when it has a `..` (which only
/// the file system could resolve, and which a socket's own name never needs).
pub fn clean_path(path: &std::path::Path) -> Option<PathBuf> {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => return None,
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        #[serde(default)]
        sandbox: SandboxFile,
    }

    fn parse(s: &str) -> Result<SandboxFile, String> {
        toml::from_str::<Doc>(s)
            .map(|d| d.sandbox)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn a_bare_mode_or_a_table() {
        assert_eq!(
            parse("sandbox = \"read-only\"").unwrap().mode,
            Some(Mode::ReadOnly)
        );
        let t = parse(
            "[sandbox]\nmode = \"off\"\nwritable_roots = [\"~/.cargo\", \"/opt/x\"]\nnetwork = false\nrequired = true\n",
        )
        .unwrap();
        assert_eq!(t.mode, Some(Mode::Off));
        assert_eq!(t.writable_roots, ["~/.cargo", "/opt/x"]);
        assert_eq!((t.network, t.required), (Some(false), Some(true)));
        // The dotted form the issue writes.
        let d = parse("sandbox.writable_roots = [\"cache\"]\n").unwrap();
        assert_eq!(
            (d.mode, d.writable_roots),
            (None, vec!["cache".to_string()])
        );
    }

    #[test]
    fn max_processes_is_read_checked_and_replaced() {
        let env = Env::new();
        let s = Settings::resolve(&SandboxFile::default(), None, &env).unwrap();
        assert_eq!(s.max_processes, DEFAULT_MAX_PROCESSES);
        let user = parse("[sandbox]\nmax_processes = 512\n").unwrap();
        let s = Settings::resolve(&user, None, &env).unwrap();
        assert_eq!(s.max_processes, 512);
        let project = parse("[sandbox]\nmax_processes = 1000\n").unwrap();
        let s = Settings::resolve(&user.clone().overlay(project), None, &env).unwrap();
        assert_eq!(s.max_processes, 1000);
        // Below the kernel's least pid_max: an error, not a bound that silently fails.
        let e = Settings::resolve(
            &parse("[sandbox]\nmax_processes = 10\n").unwrap(),
            None,
            &env,
        )
        .unwrap_err();
        assert!(e.contains("between 301 and 4194304"), "{e}");
    }

    #[test]
    fn unknown_keys_and_modes_are_errors() {
        let e = parse("[sandbox]\nnetwrok = false\n").unwrap_err();
        assert!(e.contains("netwrok"), "{e}");
        let e = parse("sandbox = \"workspace\"\n").unwrap_err();
        assert!(e.contains("workspace-write"), "{e}");
        let e = parse("sandbox = 3\n").unwrap_err();
        assert!(e.contains("a mode"), "{e}");
    }

    #[test]
    fn later_files_win_and_roots_add_up() {
        let user = parse("[sandbox]\nmode = \"read-only\"\nwritable_roots = [\"a\"]\n")
            .unwrap()
            .read_from("/u/config.toml".as_ref());
        let project = parse("[sandbox]\nwritable_roots = [\"b\", \"a\"]\nnetwork = false\n")
            .unwrap()
            .read_from("/p/.hx/config.toml".as_ref());
        let m = SandboxFile::default().overlay(user).overlay(project);
        let s = Settings::resolve(&m, None, &Env::new()).unwrap();
        assert_eq!(s.mode, Mode::ReadOnly);
        assert_eq!(s.source, Source::File("/u/config.toml".into()));
        assert_eq!(s.writable_roots, ["a", "b"]);
        assert!(!s.network && !s.required);
        let s = Settings::resolve(&m, Some(Mode::Off), &Env::new()).unwrap();
        assert_eq!((s.mode, s.source), (Mode::Off, Source::Flag));
        let d = Settings::resolve(&SandboxFile::default(), None, &Env::new()).unwrap();
        assert_eq!(d, Settings::default());
    }

    #[test]
    fn roots_are_bounded() {
        let many = SandboxFile {
            writable_roots: (0..=MAX_WRITABLE_ROOTS).map(|i| i.to_string()).collect(),
            ..SandboxFile::default()
        };
        assert!(Settings::resolve(&many, None, &Env::new()).is_err());
        for bad in ["", "  ", "a\0b"] {
            let f = SandboxFile {
                writable_roots: vec![bad.to_string()],
                ..SandboxFile::default()
            };
            assert!(Settings::resolve(&f, None, &Env::new()).is_err(), "{bad:?}");
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Env {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sockets(list: &[&str], e: &Env) -> Result<Settings, String> {
        let f = SandboxFile {
            allow_sockets: list.iter().map(|s| s.to_string()).collect(),
            ..SandboxFile::default()
        };
        Settings::resolve(&f, None, e)
    }

    #[test]
    fn allowed_sockets_expand_home_and_variables() {
        let t = parse("[sandbox]\nallow_sockets = [\"~/.ssh/agent.sock\", \"$SSH_AUTH_SOCK\"]\n")
            .unwrap();
        assert_eq!(t.allow_sockets, ["~/.ssh/agent.sock", "$SSH_AUTH_SOCK"]);
        let e = env(&[
            ("HOME", "/home/u/"),
            ("SSH_AUTH_SOCK", "/tmp/ssh-X/agent.1"),
            ("XDG_RUNTIME_DIR", "/run/user/1000"),
        ]);
        let s = Settings::resolve(&t, None, &e).unwrap();
        assert_eq!(
            s.allow_sockets,
            [
                PathBuf::from("/home/u/.ssh/agent.sock"),
                PathBuf::from("/tmp/ssh-X/agent.1")
            ]
        );
        assert!(s.allow_sockets_unset.is_empty());
        let s = sockets(
            &[
                "${XDG_RUNTIME_DIR}/podman/podman.sock",
                "/a//./b$$",
                "$SSH_AUTH_SOCK",
            ],
            &e,
        )
        .unwrap();
        assert_eq!(
            s.allow_sockets,
            [
                PathBuf::from("/run/user/1000/podman/podman.sock"),
                PathBuf::from("/a/b$"),
                PathBuf::from("/tmp/ssh-X/agent.1")
            ]
        );
    }

    #[test]
    fn a_socket_whose_variable_is_not_set_is_left_out() {
        let s = sockets(
            &["$SSH_AUTH_SOCK", "~/x.sock", "/run/docker.sock"],
            &env(&[("SSH_AUTH_SOCK", "")]),
        )
        .unwrap();
        assert_eq!(s.allow_sockets, [PathBuf::from("/run/docker.sock")]);
        assert_eq!(s.allow_sockets_unset, ["$SSH_AUTH_SOCK", "~/x.sock"]);
    }

    #[test]
    fn allowed_sockets_must_be_absolute_socket_paths() {
        let e = env(&[("REL", "agent.sock"), ("HOME", "/h")]);
        for (bad, says) in [
            ("agent.sock", "not an absolute path"),
            ("$REL", "not an absolute path"),
            ("", "empty"),
            ("/a/../b", "`..`"),
            ("~other/x", "`~`"),
            ("/a/$", "`$$`"),
            ("/a/${X", "`${`"),
            ("/a/${}", "`${`"),
            ("/a\0b", "NUL"),
        ] {
            let err = sockets(&[bad], &e).expect_err(bad);
            assert!(err.starts_with("sandbox.allow_sockets: "), "{err}");
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let long = format!("/{}", "s".repeat(MAX_SOCKET_PATH));
        assert!(sockets(&[&long], &e).unwrap_err().contains("bytes long"));
        let many: Vec<String> = (0..=MAX_ALLOW_SOCKETS).map(|i| format!("/s{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(sockets(&many, &e).unwrap_err().contains("at most"));
    }

    #[test]
    fn allowed_sockets_add_up_across_files() {
        let user = parse("[sandbox]\nallow_sockets = [\"/a\"]\n").unwrap();
        let project = parse("[sandbox]\nallow_sockets = [\"/b\", \"/a\"]\n").unwrap();
        let m = SandboxFile::default().overlay(user).overlay(project);
        assert_eq!(m.allow_sockets, ["/a", "/b"]);
    }
}
