//! The workspace root and path confinement: every file tool resolves the model's paths here so
//! that none of them can reach outside the folder hx was started in.
//!
//! Two steps, so that a tree changing in between cannot widen what a tool reaches: the check
//! ([`Workspace::target`]) follows every link the path meets and refuses what lands outside;
//! the use ([`Target::parent`], [`Target::open_read`]) then opens the checked, link-free path
//! one name at a time beneath the root held open for the run (see [`beneath`]), so a folder
//! swapped for a link after the check makes the call fail instead of leading outside.

mod beneath;

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::output::quote;
use super::ToolResult;
use crate::sandbox::deny::{Denial, Deny};

pub(crate) use crate::paths::real_path;
pub(crate) use beneath::{Dir, Opened};

/// The folder the tools work in, canonicalized once so that prefix checks compare like with like.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// The root held open for the run: every file the tools touch is reached beneath it, so
    /// a root renamed or replaced meanwhile makes the tools fail or keeps them in the folder
    /// they started in (the one the sandbox's ruleset binds too), never anywhere else.
    root_dir: Arc<Dir>,
    /// Folders outside the root that may be read but never written: the skill folders whose
    /// files `load_skill` lists with absolute paths. Opened when read (a catalog can list
    /// thousands, more than a process may hold open), from `/` without following a link.
    read_only: Vec<PathBuf>,
    /// The files the model must not read (`.hxignore`, Claude Code's `Read(...)` deny
    /// rules): every file tool refuses them, and `glob` leaves them out.
    deny: Arc<Deny>,
}

/// A path the model gave, checked: where it really is, and the folder held open beneath which
/// it is reached.
#[derive(Debug)]
pub(crate) struct Target {
    /// The real absolute path: every link resolved, no `..`.
    pub path: PathBuf,
    base: Base,
    /// `path` below the base folder: plain names only.
    rel: PathBuf,
}

#[derive(Debug)]
enum Base {
    Root(Arc<Dir>),
    ReadOnly(PathBuf),
}

impl Target {
    /// The folder that holds the target, opened beneath the base folder (missing folders
    /// created when `create`), and the target's name in it; no name when the target is the
    /// base folder itself.
    pub fn parent(&self, create: bool) -> io::Result<(Dir, Option<&OsStr>)> {
        let opened;
        let base = match &self.base {
            Base::Root(dir) => dir.as_ref(),
            Base::ReadOnly(path) => {
                opened = Dir::open_real(path)?;
                &opened
            }
        };
        match self.rel.file_name() {
            Some(name) => {
                let folders = self.rel.parent().unwrap_or(Path::new(""));
                Ok((base.walk(folders, create)?, Some(name)))
            }
            None => Ok((base.walk(Path::new(""), false)?, None)),
        }
    }

    /// Opens the target for reading if it is a regular file (see [`Dir::open_regular`]).
    pub fn open_read(&self) -> io::Result<Opened> {
        match self.parent(false) {
            Ok((dir, Some(name))) => dir.open_regular(name),
            Ok((_, None)) => Ok(Opened::Dir),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Opened::Missing),
            Err(e) => Err(e),
        }
    }
}

impl Workspace {
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = root.as_ref().canonicalize()?;
        let root_dir = Arc::new(Dir::open_real(&root)?);
        Ok(Workspace {
            root,
            root_dir,
            read_only: Vec::new(),
            deny: Arc::default(),
        })
    }

    /// The deny rules the tools apply.
    pub fn with_deny(mut self, deny: Arc<Deny>) -> Self {
        self.deny = deny;
        self
    }

    /// The rule that keeps `path` (absolute) from the model, if one does.
    pub fn denied(&self, path: &Path, is_dir: bool) -> Option<Denial> {
        self.deny.denies(path, is_dir)
    }

    /// Adds folders that `resolve_for_read` accepts besides the root. Folders that do not
    /// exist are ignored.
    pub fn with_read_only(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Self {
        for d in dirs {
            if let Ok(real) = d.canonicalize() {
                if !real.starts_with(&self.root) && !self.read_only.contains(&real) {
                    self.read_only.push(real);
                }
            }
        }
        self
    }

    /// Adds a folder that `resolve_for_read` accepts once it exists (a run's shells folder,
    /// made when the first shell starts). Its parent must exist; it must not be a link.
    pub fn with_read_only_later(mut self, dir: &Path) -> Self {
        let real = dir
            .parent()
            .zip(dir.file_name())
            .and_then(|(parent, name)| Some(parent.canonicalize().ok()?.join(name)));
        if let Some(real) = real {
            if !real.starts_with(&self.root) && !self.read_only.contains(&real) {
                self.read_only.push(real);
            }
        }
        self
    }

    /// Like [`Workspace::resolve`], but also accepts paths inside the read-only folders.
    pub fn resolve_for_read(&self, user_path: &str) -> Result<PathBuf, ToolResult> {
        self.check(user_path, true).map(|t| t.path)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Turns a path the model gave (relative to the root, or absolute) into the real absolute
    /// path it names, with every symlink resolved (see `real_path`), refusing anything that
    /// lands outside the root. The path need not exist: a new file's path is where it would
    /// really be created. This is the check alone: a path used by name afterwards is walked
    /// again, links and all, so the file tools use [`Workspace::target`] instead.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, ToolResult> {
        self.check(user_path, false).map(|t| t.path)
    }

    /// The checked path to write, reached beneath the root.
    pub(crate) fn target(&self, user_path: &str) -> Result<Target, ToolResult> {
        self.check(user_path, false)
    }

    /// The checked path to read, reached beneath the root or its read-only folder.
    pub(crate) fn target_for_read(&self, user_path: &str) -> Result<Target, ToolResult> {
        self.check(user_path, true)
    }

    /// Resolves once, then checks the root and, for reads, the read-only folders.
    fn check(&self, user_path: &str, read: bool) -> Result<Target, ToolResult> {
        let path = match real_path(&self.root.join(user_path)) {
            Ok(p) => p,
            Err(e) => {
                return Err(ToolResult::error(format!(
                    "cannot resolve {}: {e}",
                    quote(user_path)
                )))
            }
        };
        if let Some(refusal) = self.refuse_denied(user_path, &path) {
            return Err(refusal);
        }
        let (base, folder) = if path.starts_with(&self.root) {
            (Base::Root(self.root_dir.clone()), &self.root)
        } else {
            match self.read_only.iter().find(|r| read && path.starts_with(r)) {
                Some(r) => (Base::ReadOnly(r.clone()), r),
                None => return Err(escape_error(user_path)),
            }
        };
        let rel = path
            .strip_prefix(folder)
            .unwrap_or(Path::new(""))
            .to_path_buf();
        Ok(Target { path, base, rel })
    }

    /// The refusal of a denied path: checked where it really is and where the model named
    /// it (a link named `.env` is as denied as the file).
    fn refuse_denied(&self, user_path: &str, real: &Path) -> Option<ToolResult> {
        if self.deny.is_empty() {
            return None;
        }
        let named = crate::paths::lexical(&self.root.join(user_path));
        let denial = [real, named.as_path()]
            .into_iter()
            .find_map(|p| self.deny.denies(p, p.is_dir()))?;
        let file = self.display(&denial.file);
        Some(ToolResult::error(format!(
            "{} is denied to the model by the rule `{}` in {file}: hx neither reads nor \
             writes it for you; ask the user if you need what it holds",
            quote(user_path),
            denial.rule
        )))
    }

    /// The path relative to the root with `/` separators, for showing to the model.
    pub fn display(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts.is_empty() {
            ".".to_string()
        } else {
            parts.join("/")
        }
    }
}

/// The error every tool gives for a path outside the workspace.
pub fn escape_error(user_path: &str) -> ToolResult {
    ToolResult::error(format!("path escapes workspace: {}", quote(user_path)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn setup() -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
        let ws_dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(ws_dir.path()).unwrap();
        (ws_dir, outside, ws)
    }

    fn escape(ws: &Workspace, p: &str) -> String {
        ws.resolve(p).unwrap_err().content
    }

    #[test]
    fn relative_and_absolute_inside_are_fine() {
        let (_d, _o, ws) = setup();
        std::fs::write(ws.root().join("a.txt"), "x").unwrap();
        assert_eq!(ws.resolve("a.txt").unwrap(), ws.root().join("a.txt"));
        assert_eq!(
            ws.resolve("./sub/../a.txt").unwrap(),
            ws.root().join("a.txt")
        );
        let abs = ws.root().join("new/dir/file.rs");
        assert_eq!(ws.resolve(abs.to_str().unwrap()).unwrap(), abs);
        assert_eq!(ws.resolve("").unwrap(), ws.root());
    }

    #[test]
    fn dotdot_after_a_missing_folder_still_sees_the_symlink() {
        let (_d, o, ws) = setup();
        std::fs::write(o.path().join("secret"), "x").unwrap();
        symlink(o.path(), ws.root().join("link")).unwrap();
        for p in [
            "nope/../link/secret",
            "nope/../link/new.txt",
            "a/b/../../link",
        ] {
            assert_eq!(
                escape(&ws, p),
                format!("Error: path escapes workspace: {p}")
            );
        }
        std::fs::create_dir(ws.root().join("real")).unwrap();
        assert_eq!(
            ws.resolve("nope/../real/x").unwrap(),
            ws.root().join("real/x")
        );
    }

    #[test]
    fn dotdot_and_absolute_outside_escape() {
        let (_d, o, ws) = setup();
        assert_eq!(escape(&ws, "../x"), "Error: path escapes workspace: ../x");
        assert_eq!(
            escape(&ws, "a/../../x"),
            "Error: path escapes workspace: a/../../x"
        );
        let abs = o.path().join("f.txt");
        let abs = abs.to_str().unwrap();
        assert_eq!(
            escape(&ws, abs),
            format!("Error: path escapes workspace: {abs}")
        );
        assert_eq!(
            escape(&ws, "/etc/passwd"),
            "Error: path escapes workspace: /etc/passwd"
        );
    }

    #[test]
    fn symlinks_pointing_outside_escape() {
        let (_d, o, ws) = setup();
        std::fs::write(o.path().join("secret"), "s").unwrap();
        symlink(o.path().join("secret"), ws.root().join("link")).unwrap();
        symlink(o.path(), ws.root().join("dirlink")).unwrap();
        symlink(o.path().join("nope"), ws.root().join("dangling")).unwrap();
        assert_eq!(escape(&ws, "link"), "Error: path escapes workspace: link");
        assert_eq!(
            escape(&ws, "dirlink/secret"),
            "Error: path escapes workspace: dirlink/secret"
        );
        assert_eq!(
            escape(&ws, "dirlink/new/file"),
            "Error: path escapes workspace: dirlink/new/file"
        );
        assert_eq!(
            escape(&ws, "dangling"),
            "Error: path escapes workspace: dangling"
        );
    }

    #[test]
    fn symlinks_inside_resolve_to_their_target() {
        let (_d, _o, ws) = setup();
        std::fs::create_dir(ws.root().join("real")).unwrap();
        symlink(ws.root().join("real"), ws.root().join("alias")).unwrap();
        symlink("real/t.txt", ws.root().join("dangling_inside")).unwrap();
        assert_eq!(ws.resolve("alias/f").unwrap(), ws.root().join("real/f"));
        assert_eq!(
            ws.resolve("dangling_inside").unwrap(),
            ws.root().join("real/t.txt")
        );
    }

    #[test]
    fn display_is_relative_with_slashes() {
        let (_d, _o, ws) = setup();
        assert_eq!(ws.display(&ws.root().join("a/b.rs")), "a/b.rs");
        assert_eq!(ws.display(ws.root()), ".");
    }
}

#[cfg(test)]
mod read_only_tests {
    use super::*;

    #[test]
    fn read_only_folders_are_readable_not_writable() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws_dir = dir.path().join("ws");
        let skills = dir.path().join("skills");
        std::fs::create_dir_all(&ws_dir).expect("ws");
        std::fs::create_dir_all(&skills).expect("skills");
        std::fs::write(skills.join("ref.md"), "x").expect("write");
        std::fs::write(dir.path().join("secret"), "x").expect("write");
        let ws = Workspace::new(&ws_dir)
            .expect("ws")
            .with_read_only([skills.clone()]);
        let inside = skills.join("ref.md");
        let inside = inside.to_str().expect("utf8");
        assert!(ws.resolve_for_read(inside).is_ok());
        assert_eq!(
            ws.resolve(inside).expect_err("no writes").content,
            format!("Error: path escapes workspace: {inside}")
        );
        assert!(ws.resolve_for_read("../secret").is_err());
        assert!(ws.resolve_for_read("../skills/../secret").is_err());
    }

    /// Files of a read-only folder are read beneath it too: neither a folder inside it nor
    /// the folder itself swapped for a link after the check leads anywhere else.
    #[test]
    fn read_only_reads_do_not_follow_links_swapped_in_after_the_check() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path().canonicalize().expect("canonical");
        let (ws_dir, skills, outside) = (base.join("ws"), base.join("skills"), base.join("out"));
        for d in [&ws_dir, &skills.join("sub"), &outside.join("sub")] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(skills.join("sub/ref.md"), "skill").expect("write");
        std::fs::write(outside.join("sub/ref.md"), "secret").expect("write");
        std::fs::write(outside.join("ref.md"), "secret").expect("write");
        let ws = Workspace::new(&ws_dir)
            .expect("ws")
            .with_read_only([skills.clone()]);
        let deep = skills.join("sub/ref.md");
        let deep = ws
            .target_for_read(deep.to_str().expect("utf8"))
            .expect("ok");
        assert!(matches!(deep.open_read(), Ok(Opened::File(..))));

        std::fs::rename(skills.join("sub"), skills.join("moved")).expect("move");
        std::os::unix::fs::symlink(&outside, skills.join("sub")).expect("link");
        let e = deep.open_read().expect_err("a link inside");
        assert!(e.to_string().contains("became a link"), "{e}");

        std::fs::remove_file(skills.join("sub")).expect("unlink");
        std::fs::rename(skills.join("moved"), skills.join("sub")).expect("back");
        assert!(matches!(deep.open_read(), Ok(Opened::File(..))));
        std::fs::rename(&skills, base.join("skills_moved")).expect("move");
        std::os::unix::fs::symlink(&outside, &skills).expect("link");
        let e = deep.open_read().expect_err("the folder itself");
        assert!(e.to_string().contains("became a link"), "{e}");
    }
}
