//! The `write_file` tool, and the atomic write that `edit_file` shares: a file is either its
//! old content or its new content, never half written.

use std::fs::Permissions;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::output::quote;
use super::{args, Tool, ToolContext, ToolResult, ToolSpec};

pub struct WriteFile;

impl Tool for WriteFile {
    fn claude_name(&self) -> Option<&'static str> {
        Some("Write")
    }

    fn for_subagents(&self) -> bool {
        true
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create a file or replace its whole content. Missing parent folders \
                are created. Paths are relative to the workspace root. To change part of an \
                existing file, prefer edit_file."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": args::path_schema(),
                    "content": {
                        "type": "string",
                        "description": "The complete new content of the file."
                    }
                },
                "required": ["path", "content"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let (user_path, content) = match (
                args::path("write_file", &args, "path"),
                args::string("write_file", &args, "content"),
            ) {
                (Ok(p), Ok(c)) => (p.to_string(), c.to_string()),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let path = match cx.workspace.resolve(&user_path) {
                Ok(p) => p,
                Err(e) => return e,
            };
            super::run_blocking(move || write(&path, &user_path, &content)).await
        })
    }
}

fn write(path: &Path, user_path: &str, content: &str) -> ToolResult {
    // Errors name the path quoted short; a success names it whole, as it now exists.
    let shown = quote(user_path);
    if path.is_dir() {
        return ToolResult::error(format!("{shown} is a directory"));
    }
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return ToolResult::error(format!("cannot create folders for {shown}: {e}"));
        }
    }
    match atomic_write(path, content.as_bytes()) {
        Ok(()) => ToolResult::ok(format!("Wrote {} bytes to {user_path}", content.len())),
        Err(e) => ToolResult::error(format!("cannot write {shown}: {e}")),
    }
}

/// Writes `data` to a temporary file beside `path` and renames it over `path`, so readers (and
/// a crash) see the old content or the new, never a mix. An existing file keeps its
/// permissions; a new one gets the usual 0666 minus the umask rather than the temporary
/// file's private 0600.
pub(crate) fn atomic_write(path: &Path, data: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("path has no parent folder"))?;
    let existing = std::fs::metadata(path).ok().map(|m| m.permissions());
    let mut builder = tempfile::Builder::new();
    builder.prefix(".hx-write-");
    if existing.is_none() {
        // Passed to open(2), which applies the umask.
        builder.permissions(Permissions::from_mode(0o666));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(data)?;
    tmp.as_file().sync_all()?;
    if let Some(perms) = existing {
        tmp.as_file().set_permissions(perms)?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;

    fn cx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::new(Workspace::new(dir.path()).unwrap())
    }

    async fn write_file(cx: &ToolContext, args: Value) -> String {
        WriteFile.call(args, cx).await.content
    }

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn creates_parents_and_reports_bytes() {
        let d = tempfile::tempdir().unwrap();
        let r = write_file(&cx(&d), json!({"path": "a/b/c.txt", "content": "héllo\n"})).await;
        assert_eq!(r, "Wrote 7 bytes to a/b/c.txt");
        let p = d.path().join("a/b/c.txt");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "héllo\n");
        // Not the tempfile's 0600: new files are readable by the group like any other.
        let umask = current_umask();
        assert_eq!(mode(&p), 0o666 & !umask);
        // No temporary files left behind.
        assert_eq!(std::fs::read_dir(d.path().join("a/b")).unwrap().count(), 1);
    }

    fn current_umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
            .unwrap_or(0o022)
    }

    #[tokio::test]
    async fn overwrite_keeps_permissions() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("run.sh");
        std::fs::write(&p, "old").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o750)).unwrap();
        let r = write_file(&cx(&d), json!({"path": "run.sh", "content": "new"})).await;
        assert_eq!(r, "Wrote 3 bytes to run.sh");
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(mode(&p), 0o750);
    }

    #[tokio::test]
    async fn refuses_directories_escapes_and_bad_args() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let cx = cx(&d);
        let w = |path: &str| json!({"path": path, "content": "x"});
        assert_eq!(write_file(&cx, w("dir")).await, "Error: dir is a directory");
        assert_eq!(
            write_file(&cx, w("../x")).await,
            "Error: path escapes workspace: ../x"
        );
        assert_eq!(
            write_file(&cx, w("out/x")).await,
            "Error: path escapes workspace: out/x"
        );
        assert!(!outside.path().join("x").exists());
        assert_eq!(
            write_file(&cx, json!({"path": "f"})).await,
            "Error: write_file.content is required"
        );
        assert_eq!(
            write_file(&cx, json!({"content": "x"})).await,
            "Error: write_file.path is required"
        );
    }

    #[tokio::test]
    async fn absolute_path_inside_is_fine() {
        let d = tempfile::tempdir().unwrap();
        let cx = cx(&d);
        let abs = cx.workspace.root().join("abs.txt");
        let abs = abs.to_str().unwrap();
        let r = write_file(&cx, json!({"path": abs, "content": ""})).await;
        assert_eq!(r, format!("Wrote 0 bytes to {abs}"));
    }
}
