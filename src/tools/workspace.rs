//! The workspace root and path confinement: every file tool resolves the model's paths here so
//! that none of them can reach outside the folder hx was started in.

use std::io;
use std::path::{Path, PathBuf};

use super::output::quote;
use super::ToolResult;

pub(crate) use crate::paths::real_path;

/// The folder the tools work in, canonicalized once so that prefix checks compare like with like.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// Folders outside the root that may be read but never written: the skill folders whose
    /// files `load_skill` lists with absolute paths.
    read_only: Vec<PathBuf>,
}

impl Workspace {
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        Ok(Workspace {
            root: root.as_ref().canonicalize()?,
            read_only: Vec::new(),
        })
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

    /// Like [`Workspace::resolve`], but also accepts paths inside the read-only folders.
    pub fn resolve_for_read(&self, user_path: &str) -> Result<PathBuf, ToolResult> {
        self.resolve_within(user_path, true)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Turns a path the model gave (relative to the root, or absolute) into the real absolute
    /// path it names, with every symlink resolved (see `real_path`), refusing anything that
    /// lands outside the root. The path need not exist: a new file's path is where it would
    /// really be created.
    pub fn resolve(&self, user_path: &str) -> Result<PathBuf, ToolResult> {
        self.resolve_within(user_path, false)
    }

    /// Resolves once, then checks the root and, for reads, the read-only folders.
    fn resolve_within(&self, user_path: &str, read: bool) -> Result<PathBuf, ToolResult> {
        match real_path(&self.root.join(user_path)) {
            Ok(p) if p.starts_with(&self.root) => Ok(p),
            Ok(p) if read && self.read_only.iter().any(|r| p.starts_with(r)) => Ok(p),
            Ok(_) => Err(escape_error(user_path)),
            Err(e) => Err(ToolResult::error(format!(
                "cannot resolve {}: {e}",
                quote(user_path)
            ))),
        }
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
}
