//! The sandbox's configuration: `sandbox = "MODE"` or a `[sandbox]` table in a config file,
//! and `--sandbox MODE` on the command line.

use std::fmt;
use std::path::PathBuf;

use serde::de::{self, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

/// At most this many `writable_roots` (after the files are merged): each one is a rule the
/// kernel checks on every write, and a list longer than this is a mistake, not a setup.
pub const MAX_WRITABLE_ROOTS: usize = 64;
/// At most this many bytes in one `writable_roots` entry (PATH_MAX).
pub const MAX_ROOT_LEN: usize = 4096;

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

    /// `self` with `top` laid over it. `writable_roots` add up (a project's roots join the
    /// user's), the other keys are replaced.
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
        self.network = top.network.or(self.network);
        self.required = top.required.or(self.required);
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
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: Mode::WorkspaceWrite,
            source: Source::Default,
            writable_roots: Vec::new(),
            network: true,
            required: false,
        }
    }
}

impl Settings {
    /// The merged files' setting with the flag over it.
    pub fn resolve(file: &SandboxFile, flag: Option<Mode>) -> Result<Settings, String> {
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
        })
    }
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
        let s = Settings::resolve(&m, None).unwrap();
        assert_eq!(s.mode, Mode::ReadOnly);
        assert_eq!(s.source, Source::File("/u/config.toml".into()));
        assert_eq!(s.writable_roots, ["a", "b"]);
        assert!(!s.network && !s.required);
        let s = Settings::resolve(&m, Some(Mode::Off)).unwrap();
        assert_eq!((s.mode, s.source), (Mode::Off, Source::Flag));
        let d = Settings::resolve(&SandboxFile::default(), None).unwrap();
        assert_eq!(d, Settings::default());
    }

    #[test]
    fn roots_are_bounded() {
        let many = SandboxFile {
            writable_roots: (0..=MAX_WRITABLE_ROOTS).map(|i| i.to_string()).collect(),
            ..SandboxFile::default()
        };
        assert!(Settings::resolve(&many, None).is_err());
        for bad in ["", "  ", "a\0b"] {
            let f = SandboxFile {
                writable_roots: vec![bad.to_string()],
                ..SandboxFile::default()
            };
            assert!(Settings::resolve(&f, None).is_err(), "{bad:?}");
        }
    }
}
