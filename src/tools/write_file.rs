//! The `write_file` tool: creates or replaces a file atomically (a temporary file in the same
//! folder renamed over it), reached beneath the workspace root held open.

use futures_util::future::BoxFuture;
use rustix::fs::FileType;
use serde_json::{json, Value};

use super::output::quote;
use super::workspace::Target;
use super::{args, Claude, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};

/// Claude Code's `Write`.
pub const CLAUDE: Claude = Claude {
    tool: "write_file",
    names: &["Write"],
    for_subagents: true,
    by_command: false,
};

pub struct WriteFile;

impl Tool for WriteFile {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Edit
    }

    fn shown(&self) -> Shown {
        Shown::FileWrite
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAUDE.tool.into(),
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
            // Before the arguments: whatever they are, nothing is written in this run.
            if let Some(refused) = cx.refuse_file_write("write_file") {
                return refused;
            }
            let (user_path, content) = match (
                args::path("write_file", &args, "path"),
                args::string("write_file", &args, "content"),
            ) {
                (Ok(p), Ok(c)) => (p.to_string(), c.to_string()),
                (Err(e), _) | (_, Err(e)) => return e,
            };
            let target = match cx.workspace.target(&user_path) {
                Ok(t) => t,
                Err(e) => return e,
            };
            if let Some(editor) = cx.editor.writer() {
                // Checked again with the run's processes stopped, and written before they go on.
                let _still = match super::editor::hold_still().await {
                    Ok(s) => s,
                    Err(e) => {
                        return ToolResult::error(format!(
                            "cannot write {}: {e}",
                            quote(&user_path)
                        ))
                    }
                };
                let target = match cx.workspace.target(&user_path) {
                    Ok(t) => t,
                    Err(e) => return e,
                };
                return match editor.write(&target.path, &content).await {
                    Ok(()) => wrote(&content, &user_path),
                    Err(e) => ToolResult::error(format!("cannot write {}: {e}", quote(&user_path))),
                };
            }
            super::run_blocking(move || write(&target, &user_path, &content)).await
        })
    }
}

fn wrote(content: &str, user_path: &str) -> ToolResult {
    ToolResult::ok(format!("Wrote {} bytes to {user_path}", content.len()))
}

fn write(target: &Target, user_path: &str, content: &str) -> ToolResult {
    // Errors name the path quoted short; a success names it whole, as it now exists.
    let shown = quote(user_path);
    let (dir, name) = match target.parent(true) {
        Ok((dir, Some(name))) => (dir, name),
        Ok((_, None)) => return ToolResult::error(format!("{shown} is a directory")),
        Err(e) => return ToolResult::error(format!("cannot create folders for {shown}: {e}")),
    };
    if let Ok(Some(entry)) = dir.entry(name) {
        if entry.kind == FileType::Directory {
            return ToolResult::error(format!("{shown} is a directory"));
        }
    }
    match dir.write_atomic(name, content.as_bytes()) {
        Ok(()) => wrote(content, user_path),
        Err(e) => ToolResult::error(format!("cannot write {shown}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;
    use std::fs::Permissions;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

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
    async fn a_read_only_run_refuses_and_writes_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "old").unwrap();
        let config = std::path::PathBuf::from("/u/config.toml");
        let cx = ToolContext {
            file_writes: crate::tools::FileWrites::ReadOnly(crate::sandbox::Source::File(config)),
            ..cx(&d)
        };
        for path in ["f", "new/g"] {
            let r = write_file(&cx, json!({"path": path, "content": "new"})).await;
            assert_eq!(
                r,
                "Error: write_file refused: the sandbox is read-only (set in /u/config.toml); \
                 no file may be changed in this run. Retrying will not help; the user can \
                 allow writes with --sandbox workspace-write."
            );
        }
        assert_eq!(std::fs::read_to_string(d.path().join("f")).unwrap(), "old");
        assert!(!d.path().join("new").exists());
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

    /// The race, decided: the path was checked while `sub` was a folder, then `sub` became a
    /// link to a folder outside before the write.
    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let target = ws.target("sub/.bashrc").unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        assert_eq!(
            write(&target, "sub/.bashrc", "pwned").content,
            "Error: cannot create folders for sub/.bashrc: a part of the path became a link \
             after it was checked; nothing was followed, try again"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert_eq!(
            std::fs::read_dir(d.path().join("moved")).unwrap().count(),
            0
        );
    }

    /// A folder the check found missing, made a link before the write creates it.
    #[test]
    fn a_missing_folder_that_appears_as_a_link_is_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let target = ws.target("new/deeper/f.txt").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("new")).unwrap();
        let r = write(&target, "new/deeper/f.txt", "x");
        assert!(r.content.contains("became a link"), "{}", r.content);
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    /// The file itself became a link to a file outside: the rename replaces the link, and the
    /// file outside keeps its content.
    #[test]
    fn a_file_swapped_for_a_link_is_replaced_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret");
        std::fs::write(&secret, "theirs").unwrap();
        std::fs::write(d.path().join("f"), "ours").unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let target = ws.target("f").unwrap();
        std::fs::remove_file(d.path().join("f")).unwrap();
        std::os::unix::fs::symlink(&secret, d.path().join("f")).unwrap();
        assert_eq!(write(&target, "f", "new").content, "Wrote 3 bytes to f");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "theirs");
        assert!(std::fs::symlink_metadata(d.path().join("f"))
            .unwrap()
            .is_file());
    }
}
