//! Where hx finds the programs it runs itself, outside the sandbox: git for checkpoints, the
//! shell of the user's hooks, the program of a `sandbox = "off"` MCP server.
//!
//! A command may write in the workspace and the writable folders, so a program found there
//! could be the model's: a `git` in an activated virtualenv's `.venv/bin` or in direnv's
//! `node_modules/.bin` would run unsandboxed, with hx's environment. So could one found
//! through a relative `PATH` entry (`./node_modules/.bin`, or the empty one), which names
//! whatever folder the program is started in. Those folders are skipped, links are followed
//! hop by hop to check where they lead, and each program is looked up once, when the run
//! starts, then started by the path found.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::roots::resolve_existing;

/// Links followed from one candidate before it counts as unusable (the kernel's own limit).
const MAX_HOPS: usize = 40;

/// A folder commands may write, and what it is ("the workspace", "sandbox.writable_roots").
pub type Writable = (PathBuf, &'static str);

/// PATH's folders that hx takes its own programs from, and the folders it never takes them
/// from.
#[derive(Debug, Clone, Default)]
pub struct HostPath {
    /// PATH's absolute folders outside every writable one, as written (so a multi-call
    /// program keeps the name it is started by), in PATH's order, without repeats.
    dirs: Vec<PathBuf>,
    /// The folders commands may write, canonical.
    writable: Vec<Writable>,
}

impl HostPath {
    /// The usable folders of the `PATH` value `path` (none: no PATH, as `execvp` would take
    /// its default), with `writable` the folders commands may write.
    pub fn new(path: Option<&str>, writable: Vec<Writable>) -> HostPath {
        let path = path.unwrap_or("/usr/local/bin:/usr/bin:/bin");
        let mut dirs: Vec<PathBuf> = Vec::new();
        for dir in std::env::split_paths(path) {
            if !dir.is_absolute() || dirs.contains(&dir) {
                continue;
            }
            // A folder that does not exist yet counts where it would be made.
            let usable = match resolve_existing(&dir) {
                Some(real) => !writable.iter().any(|(w, _)| real.starts_with(w)),
                None => false,
            };
            if usable {
                dirs.push(dir);
            }
        }
        HostPath { dirs, writable }
    }

    /// The `PATH` value for a program hx starts on the host itself (git, whose helpers are
    /// looked up on it): only the usable folders.
    pub fn value(&self) -> OsString {
        std::env::join_paths(&self.dirs).unwrap_or_default()
    }

    /// The writable folder (and what it is) that `path` lies in, or that a link on its way
    /// leads into; `None` when none does.
    pub fn writable_holding(&self, path: &Path) -> Option<&Writable> {
        let mut at = path.to_path_buf();
        for _ in 0..MAX_HOPS {
            let folder = at.parent().and_then(resolve_existing)?;
            if let Some(w) = self.writable.iter().find(|(w, _)| folder.starts_with(w)) {
                return Some(w);
            }
            let name = at.file_name()?;
            let here = folder.join(name);
            if let Some(w) = self.writable.iter().find(|(w, _)| here.starts_with(w)) {
                return Some(w);
            }
            match std::fs::read_link(&here) {
                Ok(target) => at = folder.join(target),
                Err(_) => return None,
            }
        }
        // A loop of links runs nothing; where it goes does not matter.
        None
    }

    /// Where to start `program` from: a name (no `/`) is looked up in the usable folders of
    /// PATH; a path (a relative one is taken from `cwd`) is used as it is, unless it lies in
    /// a folder commands may write. `path` is the PATH value the program would have been
    /// looked up on, relative entries taken from `cwd`: the refusal names where it is.
    pub fn find(
        &self,
        program: &OsStr,
        cwd: &Path,
        path: Option<&str>,
    ) -> Result<PathBuf, NotFound> {
        let shown = Path::new(program).display().to_string();
        if program.as_bytes().contains(&b'/') {
            let at = cwd.join(program);
            return match self.writable_holding(&at) {
                Some((w, what)) => Err(NotFound::Refused(format!(
                    "{shown} lies in {}, which commands may write, so hx does not run it \
                     outside the sandbox",
                    place(w, what)
                ))),
                None => Ok(at),
            };
        }
        for dir in &self.dirs {
            let candidate = dir.join(program);
            if executable(&candidate) && self.writable_holding(&candidate).is_none() {
                return Ok(candidate);
            }
        }
        let elsewhere = path.and_then(|p| {
            std::env::split_paths(p)
                .map(|d| cwd.join(d).join(program))
                .find(|c| executable(c))
        });
        let Some(found) = elsewhere else {
            return Err(NotFound::Missing);
        };
        let how = match self.writable_holding(&found) {
            Some((w, what)) => format!("in {}, which commands may write", place(w, what)),
            None => "through a relative PATH entry".to_string(),
        };
        Err(NotFound::Refused(format!(
            "{shown} is found on PATH only as {}, {how}, so hx does not run it outside the \
             sandbox",
            found.display()
        )))
    }
}

/// Why [`HostPath::find`] gives no program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFound {
    /// There is no such program on PATH at all.
    Missing,
    /// It is only where hx does not take programs from; the sentence says where.
    Refused(String),
}

/// `the workspace`, or `sandbox.writable_roots (/the/folder)`.
fn place(folder: &Path, what: &str) -> String {
    if what == "the workspace" {
        what.to_string()
    } else {
        format!("{what} ({})", folder.display())
    }
}

/// Whether `path` is a file some execute bit allows (as `execvp` looks).
fn executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exe(path: &Path) {
        std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
        std::fs::write(path, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn refused(r: Result<PathBuf, NotFound>) -> String {
        match r {
            Err(NotFound::Refused(why)) => why,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn a_program_is_never_taken_from_a_writable_folder_or_a_relative_entry() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("real");
        let ws = root.join("ws");
        let sys = root.join("sys");
        exe(&ws.join(".venv/bin/git"));
        exe(&ws.join("node_modules/.bin/git"));
        exe(&sys.join("git"));
        exe(&sys.join("sh"));
        // A folder outside that is a link into the workspace is the workspace's.
        std::os::unix::fs::symlink(ws.join(".venv/bin"), root.join("linked")).expect("link");
        // So is a program outside that is a link into it.
        let outside = root.join("out");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::os::unix::fs::symlink(ws.join(".venv/bin/git"), outside.join("git")).expect("ln");
        let path = format!(
            "{}:./node_modules/.bin::{}:{}:{}",
            ws.join(".venv/bin").display(),
            root.join("linked").display(),
            outside.display(),
            sys.display()
        );
        let host = HostPath::new(Some(&path), vec![(ws.clone(), "the workspace")]);
        assert_eq!(host.dirs, [outside.clone(), sys.clone()]);
        let git = OsStr::new("git");
        assert_eq!(host.find(git, &ws, Some(&path)), Ok(sys.join("git")));
        assert_eq!(
            host.value(),
            OsString::from(format!("{}:{}", outside.display(), sys.display()))
        );
        // A path is checked where it leads.
        refused(host.find(OsStr::new("./node_modules/.bin/git"), &ws, None));
        refused(host.find(outside.join("git").as_os_str(), &ws, None));
        assert_eq!(
            host.find(sys.join("git").as_os_str(), &ws, None),
            Ok(sys.join("git"))
        );
        // Only in the workspace, or only through a relative entry: said so.
        let venv = ws.join(".venv/bin").display().to_string();
        let only = HostPath::new(Some(&venv), vec![(ws.clone(), "the workspace")]);
        let why = refused(only.find(git, &ws, Some(&venv)));
        assert!(
            why.contains("in the workspace, which commands may write"),
            "{why}"
        );
        let why = refused(only.find(git, &root, Some("./ws/node_modules/.bin")));
        assert!(why.contains("in the workspace"), "{why}");
        let why = refused(only.find(OsStr::new("sh"), &root, Some("./sys")));
        assert!(why.contains("through a relative PATH entry"), "{why}");
        assert_eq!(
            only.find(OsStr::new("nothing-like-it"), &ws, Some("/usr/bin")),
            Err(NotFound::Missing)
        );
    }
}
