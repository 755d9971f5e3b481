//! The `edit_file` tool: replaces one exact, unique piece of text in a file, keeping the file's
//! line endings, and writes the result atomically.

use std::io::{ErrorKind, Read};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::output::quote;
use super::workspace::{Opened, Target};
use super::{args, Claude, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};

/// Claude Code's `Edit`, and its `MultiEdit`: several edits are several calls.
pub const CLAUDE: Claude = Claude {
    tool: "edit_file",
    names: &["Edit", "MultiEdit"],
    for_subagents: true,
    by_command: false,
};

pub struct EditFile;

impl Tool for EditFile {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Edit
    }

    fn shown(&self) -> Shown {
        Shown::FileEdit
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAUDE.tool.into(),
            description: "Replace one exact occurrence of old_text with new_text in a file. \
                old_text must match the file exactly (whitespace and indentation included) and \
                occur exactly once; if it occurs several times, include more surrounding lines \
                to make it unique. Read the file first. Line endings (LF or CRLF) follow the \
                file's."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": args::path_schema(),
                    "old_text": {
                        "type": "string",
                        "description": "The exact text to replace; must occur exactly once."
                    },
                    "new_text": {
                        "type": "string",
                        "description": "The text to put in its place (may be empty to delete)."
                    }
                },
                "required": ["path", "old_text", "new_text"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            // Before the arguments: whatever they are, nothing is written in this run.
            if let Some(refused) = cx.refuse_file_write("edit_file") {
                return refused;
            }
            let get = |key| args::string("edit_file", &args, key).map(str::to_string);
            let path = args::path("edit_file", &args, "path").map(str::to_string);
            let (user_path, old, new) = match (path, get("old_text"), get("new_text")) {
                (Ok(p), Ok(o), Ok(n)) => (p, o, n),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => return e,
            };
            if old.is_empty() {
                return ToolResult::error(
                    "edit_file.old_text must not be empty; use write_file to create a file",
                );
            }
            let target = match cx.workspace.target(&user_path) {
                Ok(t) => t,
                Err(e) => return e,
            };
            if let (Some(reader), Some(writer)) = (cx.editor.reader(), cx.editor.writer()) {
                let shown = quote(&user_path);
                // Checked again with the run's processes stopped, and read and written before
                // they go on.
                let _still = match super::editor::hold_still().await {
                    Ok(s) => s,
                    Err(e) => return ToolResult::error(format!("cannot write {shown}: {e}")),
                };
                let target = match cx.workspace.target(&user_path) {
                    Ok(t) => t,
                    Err(e) => return e,
                };
                let content = match reader.read(&target.path).await {
                    Ok(c) if c.len() as u64 > MAX_EDIT_BYTES => {
                        return too_large(&shown, c.len() as u64)
                    }
                    Ok(c) => c,
                    Err(e) => return ToolResult::error(format!("cannot read {shown}: {e}")),
                };
                let updated = match replaced(&content, &shown, &old, &new) {
                    Ok(u) => u,
                    Err(e) => return e,
                };
                return match writer.write(&target.path, &updated).await {
                    Ok(()) => edited(&user_path),
                    Err(e) => ToolResult::error(format!("cannot write {shown}: {e}")),
                };
            }
            super::run_blocking(move || edit(&target, &user_path, &old, &new)).await
        })
    }
}

/// Files edit_file reads whole; anything larger is not a source file to edit by text.
const MAX_EDIT_BYTES: u64 = 16 * 1024 * 1024;

fn edit(target: &Target, user_path: &str, old: &str, new: &str) -> ToolResult {
    // Errors name the path as the model gave it, quoted short; a success names the path whole,
    // which exists and so is no longer than the system allows.
    let shown = quote(user_path);
    // The file's kind and size come from the opened file itself: a FIFO or device would block
    // or never end, and nothing swapped in after the open changes what is read.
    let (dir, name) = match target.parent(false) {
        Ok((dir, Some(name))) => (dir, name),
        Ok((_, None)) => return ToolResult::error(format!("{shown} is a directory")),
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return ToolResult::error(format!("file not found: {shown}"))
        }
        Err(e) => return ToolResult::error(format!("cannot read {shown}: {e}")),
    };
    let (file, len) = match dir.open_regular(name) {
        Ok(Opened::File(file, len)) => (file, len),
        Ok(Opened::Missing) => return ToolResult::error(format!("file not found: {shown}")),
        Ok(Opened::Dir) => return ToolResult::error(format!("{shown} is a directory")),
        Ok(Opened::NotRegular) => {
            return ToolResult::error(format!("{shown} is not a regular file"))
        }
        Err(e) => return ToolResult::error(format!("cannot read {shown}: {e}")),
    };
    let too_large = |len: u64| too_large(&shown, len);
    if len > MAX_EDIT_BYTES {
        return too_large(len);
    }
    // Bounded even if the file grows after it was measured.
    let mut bytes = Vec::with_capacity(len as usize);
    if let Err(e) = file.take(MAX_EDIT_BYTES + 1).read_to_end(&mut bytes) {
        return ToolResult::error(format!("cannot read {shown}: {e}"));
    }
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return too_large(bytes.len() as u64);
    }
    let content = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(_) => return ToolResult::error(format!("{shown} is not a UTF-8 text file")),
    };

    let updated = match replaced(&content, &shown, old, new) {
        Ok(u) => u,
        Err(e) => return e,
    };
    // Written into the folder the file was read from, held open since: the edit cannot land
    // anywhere else, whatever happened to the path meanwhile.
    let written = dir.write_atomic(name, updated.as_bytes());
    match written {
        Ok(()) => edited(user_path),
        Err(e) => ToolResult::error(format!("cannot write {shown}: {e}")),
    }
}

fn too_large(shown: &str, len: u64) -> ToolResult {
    ToolResult::error(format!(
        "{shown} is {len} bytes, too large for edit_file (limit {MAX_EDIT_BYTES}); use bash to change it"
    ))
}

fn edited(user_path: &str) -> ToolResult {
    ToolResult::ok(format!("Edited {user_path} (replaced 1 occurrence)"))
}

/// `content` with its one occurrence of `old` replaced by `new`; `Err` when `old` is missing
/// or not unique (`shown` names the file).
fn replaced(content: &str, shown: &str, old: &str, new: &str) -> Result<String, ToolResult> {
    let (old, new) = match_line_endings(content, old, new);
    let count = count_occurrences(content, &old);
    if count == 0 {
        return Err(ToolResult::error(format!("text not found in {shown}")));
    }
    if count > 1 {
        let times = if count >= MAX_COUNTED {
            format!("{count} or more")
        } else {
            count.to_string()
        };
        return Err(ToolResult::error(format!(
            "old_text occurs {times} times in {shown}; include more surrounding context \
             to make it unique"
        )));
    }
    Ok(content.replacen(old.as_str(), &new, 1))
}

/// Models write `\n` even when the file uses `\r\n`. For such a file, texts without any `\r`
/// are converted to CRLF, unless the converted old text is not in the file and the original is
/// (a file with mixed endings).
fn match_line_endings(content: &str, old: &str, new: &str) -> (String, String) {
    if !content.contains("\r\n") || old.contains('\r') {
        return (old.to_string(), new.to_string());
    }
    let to_crlf = |s: &str| {
        if s.contains('\r') {
            s.to_string()
        } else {
            s.replace('\n', "\r\n")
        }
    };
    let old_crlf = to_crlf(old);
    if old_crlf != old && !content.contains(&old_crlf) && content.contains(old) {
        return (old.to_string(), new.to_string());
    }
    (old_crlf, to_crlf(new))
}

/// Occurrences counted before counting stops. Each search costs up to the length of the
/// text, so counting every overlapping occurrence of a long repetitive `old_text` (a run of
/// one character in a file of it) would take hours; the model only needs to know that the
/// text is not unique.
const MAX_COUNTED: usize = 10;

/// Counts occurrences up to [`MAX_COUNTED`], overlapping ones included: in "aaa", "aa" is
/// ambiguous, not unique.
fn count_occurrences(haystack: &str, needle: &str) -> usize {
    let mut count = 0;
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        count += 1;
        if count == MAX_COUNTED {
            break;
        }
        let start = from + i;
        // Step one character, not one byte, to stay on a char boundary.
        from = start + haystack[start..].chars().next().map_or(1, char::len_utf8);
    }
    count
}

#[cfg(test)]
mod fifo_tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().expect("utf8")).expect("cstring");
        // SAFETY: mkfifo on a path we own.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let ws = crate::tools::Workspace::new(dir.path()).expect("workspace");
        let target = ws.target("fifo").expect("inside");
        assert_eq!(
            edit(&target, "fifo", "a", "b").content,
            "Error: fifo is not a regular file"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.txt"), content).unwrap();
        let cx = ToolContext::new(Workspace::new(d.path()).unwrap());
        (d, cx)
    }

    async fn edit_file(cx: &ToolContext, path: &str, old: &str, new: &str) -> String {
        let args = json!({"path": path, "old_text": old, "new_text": new});
        EditFile.call(args, cx).await.content
    }

    fn read(d: &tempfile::TempDir) -> String {
        std::fs::read_to_string(d.path().join("f.txt")).unwrap()
    }

    #[tokio::test]
    async fn replaces_a_unique_occurrence() {
        let (d, cx) = setup("fn main() {\n    old();\n}\n");
        let r = edit_file(&cx, "f.txt", "    old();", "    new();\n    more();").await;
        assert_eq!(r, "Edited f.txt (replaced 1 occurrence)");
        assert_eq!(read(&d), "fn main() {\n    new();\n    more();\n}\n");
    }

    #[tokio::test]
    async fn a_read_only_run_refuses_and_leaves_the_file() {
        let (d, mut cx) = setup("old\n");
        cx.file_writes = crate::tools::FileWrites::ReadOnly(crate::sandbox::Source::Flag);
        let r = edit_file(&cx, "f.txt", "old", "new").await;
        assert!(
            r.starts_with(
                "Error: edit_file refused: the sandbox is read-only (--sandbox read-only)"
            ),
            "{r}"
        );
        assert_eq!(read(&d), "old\n");
    }

    #[tokio::test]
    async fn missing_and_ambiguous_text_are_errors() {
        let (d, cx) = setup("a = 1;\na = 1;\nbanana\n");
        assert_eq!(
            edit_file(&cx, "f.txt", "b = 2;", "x").await,
            "Error: text not found in f.txt"
        );
        assert_eq!(
            edit_file(&cx, "f.txt", "a = 1;", "x").await,
            "Error: old_text occurs 2 times in f.txt; include more surrounding context to make \
             it unique"
        );
        // Overlapping matches count too.
        assert_eq!(
            edit_file(&cx, "f.txt", "ana", "x").await,
            "Error: old_text occurs 2 times in f.txt; include more surrounding context to make \
             it unique"
        );
        assert_eq!(read(&d), "a = 1;\na = 1;\nbanana\n");
    }

    #[tokio::test]
    async fn counting_a_repetitive_text_stops_early() {
        let (_d, cx) = setup(&"a".repeat(2_000_000));
        let old = "a".repeat(500_000);
        assert_eq!(
            edit_file(&cx, "f.txt", &old, "b").await,
            "Error: old_text occurs 10 or more times in f.txt; include more surrounding \
             context to make it unique"
        );
        assert_eq!(count_occurrences(&"ab".repeat(9), "ab"), 9);
        assert_eq!(count_occurrences(&"ab".repeat(11), "ab"), 10);
    }

    #[tokio::test]
    async fn keeps_crlf_line_endings() {
        let (d, cx) = setup("one\r\ntwo\r\nthree\r\n");
        let r = edit_file(&cx, "f.txt", "one\ntwo\n", "uno\ndos\n").await;
        assert_eq!(r, "Edited f.txt (replaced 1 occurrence)");
        assert_eq!(read(&d), "uno\r\ndos\r\nthree\r\n");
        // A single-line old text with a multi-line new text also gets CRLF.
        edit_file(&cx, "f.txt", "three", "3\n4").await;
        assert_eq!(read(&d), "uno\r\ndos\r\n3\r\n4\r\n");
    }

    #[tokio::test]
    async fn lf_files_stay_lf() {
        let (d, cx) = setup("one\ntwo\n");
        edit_file(&cx, "f.txt", "one\n", "1\n2\n").await;
        assert_eq!(read(&d), "1\n2\ntwo\n");
    }

    #[tokio::test]
    async fn errors_for_bad_input_and_paths() {
        let (d, cx) = setup("x");
        std::fs::create_dir(d.path().join("dir")).unwrap();
        std::fs::write(d.path().join("bin"), b"\xff\xfe").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.txt"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("o.txt"), d.path().join("l")).unwrap();
        assert_eq!(
            edit_file(&cx, "f.txt", "", "y").await,
            "Error: edit_file.old_text must not be empty; use write_file to create a file"
        );
        assert_eq!(
            edit_file(&cx, "nope.txt", "x", "y").await,
            "Error: file not found: nope.txt"
        );
        assert_eq!(
            edit_file(&cx, "dir", "x", "y").await,
            "Error: dir is a directory"
        );
        assert_eq!(
            edit_file(&cx, "bin", "x", "y").await,
            "Error: bin is not a UTF-8 text file"
        );
        assert_eq!(
            edit_file(&cx, "../f.txt", "x", "y").await,
            "Error: path escapes workspace: ../f.txt"
        );
        assert_eq!(
            edit_file(&cx, "l", "x", "y").await,
            "Error: path escapes workspace: l"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.txt")).unwrap(),
            "x"
        );
        let r = EditFile
            .call(json!({"path": "f.txt", "old_text": "x"}), &cx)
            .await;
        assert_eq!(r.content, "Error: edit_file.new_text is required");
    }

    /// The race, decided: checked while the path held no link, then a folder on the way or
    /// the file itself became a link to outside before the edit.
    #[test]
    fn links_swapped_in_after_the_check_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("t.txt"), "old").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/t.txt"), "old").unwrap();
        std::fs::write(d.path().join("t.txt"), "old").unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let in_sub = ws.target("sub/t.txt").unwrap();
        let top = ws.target("t.txt").unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        std::fs::remove_file(d.path().join("t.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("t.txt"), d.path().join("t.txt")).unwrap();
        let raced = "a part of the path became a link after it was checked; nothing was \
                     followed, try again";
        assert_eq!(
            edit(&in_sub, "sub/t.txt", "old", "new").content,
            format!("Error: cannot read sub/t.txt: {raced}")
        );
        assert_eq!(
            edit(&top, "t.txt", "old", "new").content,
            format!("Error: cannot read t.txt: {raced}")
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("t.txt")).unwrap(),
            "old"
        );
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    }

    /// The folder is moved elsewhere in the workspace between the read and the write: the
    /// edit lands in the file it read, in the folder held open, not at the old name.
    #[test]
    fn the_edit_is_written_where_the_file_was_read() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/t.txt"), "old").unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let target = ws.target("sub/t.txt").unwrap();
        let (dir, name) = target.parent(false).unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        dir.write_atomic(name.unwrap(), b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(d.path().join("moved/t.txt")).unwrap(),
            "new"
        );
        assert!(!d.path().join("sub").exists());
    }
}
