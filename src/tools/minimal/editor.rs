//! The minimal profile's `str_replace_editor`, shaped as the reference implementation
//! (SWE-agent's, Anthropic's `str_replace_editor`) has it: `view` (a file with `cat -n`
//! numbers, or a folder two levels deep), `create`, `str_replace`, `insert` and `undo_edit`,
//! with absolute paths. What it reads goes through the workspace's checks (inside the
//! workspace, the deny rules) and an editor's buffers when `hx acp` has one; every write is
//! `write_file`'s (atomic, beneath the workspace root, refused in a read-only run), so
//! checkpoints and the views see it as any edit.

use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use crate::tools::output::{quote, BoundedText};
use crate::tools::workspace::Opened;
use crate::tools::write_file::WriteFile;
use crate::tools::{args, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};

const NAME: &str = "str_replace_editor";

/// Bytes of a file the editor reads or writes whole, as `edit_file`'s limit.
pub const MAX_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Earlier versions `undo_edit` keeps of one file.
pub const UNDO_PER_FILE: usize = 10;
/// Bytes of earlier versions kept in all: past it the oldest go first.
pub const UNDO_TOTAL_BYTES: usize = 64 * 1024 * 1024;
/// Entries a folder's `view` lists.
pub const VIEW_ENTRIES: usize = 1000;
/// Lines of context shown around an edit.
const SNIPPET_LINES: usize = 4;

pub struct StrReplaceEditor {
    history: Mutex<History>,
}

/// The versions of each file before this tool's edits, newest last, each with its place in
/// the order of all edits.
#[derive(Default)]
struct History {
    files: BTreeMap<PathBuf, VecDeque<(u64, String)>>,
    bytes: usize,
    edits: u64,
}

impl History {
    fn push(&mut self, path: &Path, before: String) {
        self.edits += 1;
        self.bytes += before.len();
        let versions = self.files.entry(path.to_path_buf()).or_default();
        versions.push_back((self.edits, before));
        if versions.len() > UNDO_PER_FILE {
            if let Some((_, old)) = versions.pop_front() {
                self.bytes -= old.len();
            }
        }
        // The oldest version of all goes first, whichever file it is of; the one just kept
        // goes last.
        while self.bytes > UNDO_TOTAL_BYTES {
            let oldest = self
                .files
                .iter()
                .filter_map(|(p, v)| Some((v.front()?.0, p.clone())))
                .filter(|(n, _)| *n != self.edits)
                .min();
            let Some((_, p)) = oldest else {
                break;
            };
            if let Some(versions) = self.files.get_mut(&p) {
                if let Some((_, old)) = versions.pop_front() {
                    self.bytes -= old.len();
                }
                if versions.is_empty() {
                    self.files.remove(&p);
                }
            }
        }
    }

    fn pop(&mut self, path: &Path) -> Option<String> {
        let (_, before) = self.files.get_mut(path)?.pop_back()?;
        self.bytes -= before.len();
        Some(before)
    }
}

impl StrReplaceEditor {
    pub fn new() -> Self {
        StrReplaceEditor {
            history: Mutex::default(),
        }
    }

    fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for StrReplaceEditor {
    fn default() -> Self {
        StrReplaceEditor::new()
    }
}

impl Tool for StrReplaceEditor {
    fn kind(&self) -> Kind {
        Kind::Edit
    }

    fn shown(&self) -> Shown {
        Shown::Other
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Custom editing tool for viewing, creating and editing files.\n\
                * State is persistent across command calls.\n\
                * If path is a file, view displays the result of applying `cat -n`. If path \
                is a directory, view lists non-hidden files and directories up to 2 levels \
                deep.\n\
                * The create command cannot be used if the specified path already exists as \
                a file.\n\
                * Long outputs keep their start and end.\n\
                * The undo_edit command reverts the last edit made to the file at path.\n\
                Notes for using the str_replace command:\n\
                * The old_str parameter should match EXACTLY one or more consecutive lines \
                from the original file. Be mindful of whitespaces!\n\
                * If the old_str parameter is not unique in the file, the replacement will \
                not be performed. Make sure to include enough context in old_str to make it \
                unique.\n\
                * The new_str parameter should contain the edited lines that should replace \
                the old_str."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "enum": ["view", "create", "str_replace", "insert", "undo_edit"],
                        "description": "The command to run."
                    },
                    "path": {
                        "type": "string",
                        "description": "Absolute path to a file or directory in the \
                            workspace."
                    },
                    "file_text": {
                        "type": "string",
                        "description": "Required for create: the content of the file."
                    },
                    "old_str": {
                        "type": "string",
                        "description": "Required for str_replace: the text to replace."
                    },
                    "new_str": {
                        "type": "string",
                        "description": "For str_replace, the new text (none: old_str is \
                            deleted); required for insert, the text to insert."
                    },
                    "insert_line": {
                        "type": "integer",
                        "description": "Required for insert: new_str goes after this line \
                            (0: at the top)."
                    },
                    "view_range": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "description": "For view of a file: [start, end] lines, 1-based; \
                            end -1 reads to the end."
                    }
                },
                "required": ["command", "path"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let command = match args::string(NAME, &args, "command") {
                Ok(c) => c.to_string(),
                Err(e) => return e,
            };
            let path = match args::path(NAME, &args, "path") {
                Ok(p) => p.to_string(),
                Err(e) => return e,
            };
            if !Path::new(&path).is_absolute() {
                let absolute = cx.workspace.root().join(&path).display().to_string();
                return ToolResult::error(format!(
                    "the path {} is not absolute; give an absolute path, such as {}",
                    quote(&path),
                    quote(&absolute)
                ));
            }
            match command.as_str() {
                "view" => view(&args, &path, cx).await,
                "create" => self.create(&args, &path, cx).await,
                "str_replace" => self.str_replace(&args, &path, cx).await,
                "insert" => self.insert(&args, &path, cx).await,
                "undo_edit" => self.undo(&path, cx).await,
                other => ToolResult::error(format!(
                    "unknown command {}; use one of view, create, str_replace, insert, \
                     undo_edit",
                    quote(other)
                )),
            }
        })
    }
}

impl StrReplaceEditor {
    async fn create(&self, args: &Value, path: &str, cx: &ToolContext) -> ToolResult {
        let text = match args::string(NAME, args, "file_text") {
            Ok(t) => t,
            Err(e) => return e,
        };
        match read_text(path, cx).await {
            Err(Unread::Missing) => {}
            Ok(_) | Err(Unread::Dir) => {
                return ToolResult::error(format!(
                    "{} already exists; create does not overwrite (use str_replace, or \
                     bash to remove it first)",
                    quote(path)
                ))
            }
            Err(Unread::Refused(e)) => return e,
        }
        match write(path, text, cx).await {
            Ok(()) => ToolResult::ok(format!("File created successfully at: {path}")),
            Err(e) => e,
        }
    }

    async fn str_replace(&self, args: &Value, path: &str, cx: &ToolContext) -> ToolResult {
        let old = match args::string(NAME, args, "old_str") {
            Ok(o) => o,
            Err(e) => return e,
        };
        let new = match args.get("new_str") {
            None | Some(Value::Null) => "",
            Some(_) => match args::string(NAME, args, "new_str") {
                Ok(n) => n,
                Err(e) => return e,
            },
        };
        if old.is_empty() {
            return ToolResult::error("str_replace_editor.old_str must not be empty");
        }
        let content = match read_text(path, cx).await {
            Ok(c) => c,
            Err(u) => return u.into_result(path),
        };
        let at: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
        match at.len() {
            0 => {
                return ToolResult::error(format!(
                    "No replacement was performed: old_str {} did not appear verbatim in {path}.",
                    quote(old)
                ))
            }
            1 => {}
            n => {
                let lines: Vec<String> = at
                    .iter()
                    .take(10)
                    .map(|&i| (line_of(&content, i)).to_string())
                    .collect();
                return ToolResult::error(format!(
                    "No replacement was performed: old_str occurs {n} times in {path} (at \
                     lines {}); it must occur exactly once, so include more surrounding lines \
                     to make it unique.",
                    lines.join(", ")
                ));
            }
        }
        let updated = format!(
            "{}{new}{}",
            &content[..at[0]],
            &content[at[0] + old.len()..]
        );
        let first = line_of(&content, at[0]);
        let last = first + new.matches('\n').count();
        self.save(path, content, &updated, (first, last), cx).await
    }

    async fn insert(&self, args: &Value, path: &str, cx: &ToolContext) -> ToolResult {
        let after = match args::opt_u64(NAME, args, "insert_line") {
            Ok(Some(n)) => n as usize,
            Ok(None) => return ToolResult::error("str_replace_editor.insert_line is required"),
            Err(e) => return e,
        };
        let new = match args::string(NAME, args, "new_str") {
            Ok(n) => n,
            Err(e) => return e,
        };
        let content = match read_text(path, cx).await {
            Ok(c) => c,
            Err(u) => return u.into_result(path),
        };
        let count = line_count(&content);
        if after > count {
            return ToolResult::error(format!(
                "insert_line {after} is past the end of {path}, which has {count} lines; \
                 give 0 to {count}"
            ));
        }
        // Where line `after` ends (its newline included); a last line without one gets one.
        let mut at = 0;
        for _ in 0..after {
            at += content[at..]
                .find('\n')
                .map_or(content.len() - at, |i| i + 1);
        }
        let mut updated = String::with_capacity(content.len() + new.len() + 2);
        updated.push_str(&content[..at]);
        if at > 0 && !updated.ends_with('\n') {
            updated.push('\n');
        }
        updated.push_str(new);
        if !new.ends_with('\n') {
            updated.push('\n');
        }
        updated.push_str(&content[at..]);
        let last = after + new.trim_end_matches('\n').matches('\n').count() + 1;
        self.save(path, content, &updated, (after + 1, last), cx)
            .await
    }

    async fn undo(&self, path: &str, cx: &ToolContext) -> ToolResult {
        let real = match cx.workspace.resolve(path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        let Some(before) = self.history().pop(&real) else {
            return ToolResult::error(format!(
                "no edit of {path} to undo (this tool keeps the last {UNDO_PER_FILE} edits of \
                 each file, for this run)"
            ));
        };
        match write(path, &before, cx).await {
            Ok(()) => ToolResult::ok(format!(
                "Last edit to {path} undone successfully. Here's the result of running \
                 `cat -n` on {path}:\n{}",
                numbered(&before, 1, None, cx.limits.output_chars)
            )),
            Err(e) => {
                self.history().push(&real, before);
                e
            }
        }
    }

    /// Writes `updated` over `before`, keeps `before` for `undo_edit`, and answers with the
    /// edited lines `edited` (first, last) and a few around them.
    async fn save(
        &self,
        path: &str,
        before: String,
        updated: &str,
        edited: (usize, usize),
        cx: &ToolContext,
    ) -> ToolResult {
        if updated.len() > MAX_FILE_BYTES {
            return ToolResult::error(format!(
                "the edit would make {path} {} bytes long, past the editor's limit of \
                 {MAX_FILE_BYTES}",
                updated.len()
            ));
        }
        let real = match cx.workspace.resolve(path) {
            Ok(p) => p,
            Err(e) => return e,
        };
        if let Err(e) = write(path, updated, cx).await {
            return e;
        }
        self.history().push(&real, before);
        let from = edited.0.saturating_sub(SNIPPET_LINES).max(1);
        let to = edited.1 + SNIPPET_LINES;
        ToolResult::ok(format!(
            "The file {path} has been edited. Here's the result of running `cat -n` on a \
             snippet of {path}:\n{}\nReview the changes and make sure they are as expected. \
             Edit the file again if necessary.",
            numbered(updated, from, Some(to), cx.limits.output_chars)
        ))
    }
}

/// Why a file could not be read whole.
enum Unread {
    Missing,
    Dir,
    Refused(ToolResult),
}

impl Unread {
    fn into_result(self, path: &str) -> ToolResult {
        match self {
            Unread::Missing => ToolResult::error(format!("file not found: {}", quote(path))),
            Unread::Dir => ToolResult::error(format!(
                "{} is a directory; only view works on a directory",
                quote(path)
            )),
            Unread::Refused(e) => e,
        }
    }
}

/// The whole text of the file at `path`, checked as the file tools check a path (inside the
/// workspace, not denied), through the editor's buffers when there is one.
async fn read_text(path: &str, cx: &ToolContext) -> Result<String, Unread> {
    let target = cx.workspace.target(path).map_err(Unread::Refused)?;
    let shown = quote(path).into_owned();
    if let Some(editor) = cx.editor.reader() {
        if !target.path.exists() {
            return Err(Unread::Missing);
        }
        if target.path.is_dir() {
            return Err(Unread::Dir);
        }
        let text = editor
            .read(&target.path)
            .await
            .map_err(|e| Unread::Refused(ToolResult::error(format!("cannot read {shown}: {e}"))))?;
        return checked_text(text.into_bytes(), &shown);
    }
    let read = tokio::task::spawn_blocking(move || {
        let cannot = |e: std::io::Error| {
            Unread::Refused(ToolResult::error(format!("cannot read {shown}: {e}")))
        };
        let file = match target.open_read() {
            Ok(Opened::File(file, _)) => file,
            Ok(Opened::Missing) => return Err(Unread::Missing),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unread::Missing),
            Ok(Opened::Dir) => return Err(Unread::Dir),
            Ok(Opened::NotRegular) => {
                return Err(Unread::Refused(ToolResult::error(format!(
                    "{shown} is not a regular file"
                ))))
            }
            Err(e) => return Err(cannot(e)),
        };
        // Bounded even if the file grows while it is read.
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(cannot)?;
        checked_text(bytes, &shown)
    })
    .await;
    read.unwrap_or_else(|e| {
        Err(Unread::Refused(ToolResult::error(format!(
            "the read was cancelled: {e}"
        ))))
    })
}

/// `bytes` as text, when they are a text file of at most [`MAX_FILE_BYTES`].
fn checked_text(bytes: Vec<u8>, shown: &str) -> Result<String, Unread> {
    let refuse = |why: String| Err(Unread::Refused(ToolResult::error(why)));
    if bytes.len() > MAX_FILE_BYTES {
        return refuse(format!(
            "{shown} is larger than {MAX_FILE_BYTES} bytes, the editor's limit; use bash"
        ));
    }
    if bytes.contains(&0) {
        return refuse(format!(
            "{shown} looks like a binary file (it contains NUL bytes)"
        ));
    }
    String::from_utf8(bytes).or_else(|_| refuse(format!("{shown} is not a UTF-8 text file")))
}

/// Writes `text` as `write_file` does (its checks, its atomic write, its refusal in a
/// read-only run), its errors named as this tool's.
async fn write(path: &str, text: &str, cx: &ToolContext) -> Result<(), ToolResult> {
    let r = WriteFile
        .call(json!({ "path": path, "content": text }), cx)
        .await;
    if r.is_error {
        Err(ToolResult {
            content: r.content.replace("write_file", NAME),
            ..r
        })
    } else {
        Ok(())
    }
}

async fn view(args: &Value, path: &str, cx: &ToolContext) -> ToolResult {
    let range = match view_range(args) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let limit = cx.limits.output_chars;
    match read_text(path, cx).await {
        Ok(text) => {
            let count = line_count(&text);
            let (from, to) = match range {
                None => (1, None),
                Some((start, end)) => {
                    if start < 1 || start as usize > count.max(1) {
                        return ToolResult::error(format!(
                            "view_range start {start} is not a line of {path}, which has \
                             {count} lines"
                        ));
                    }
                    if end != -1 && (end < start || end as usize > count) {
                        return ToolResult::error(format!(
                            "view_range end {end} must be -1 or a line from {start} to \
                             {count}, the last of {path}"
                        ));
                    }
                    (start as usize, (end != -1).then_some(end as usize))
                }
            };
            ToolResult::ok(format!(
                "Here's the result of running `cat -n` on {path}:\n{}",
                numbered(&text, from, to, limit)
            ))
        }
        Err(Unread::Dir) if range.is_some() => {
            ToolResult::error("view_range is for files; a directory's view lists it whole")
        }
        Err(Unread::Dir) => view_dir(path, cx).await,
        Err(u) => u.into_result(path),
    }
}

/// The `view_range` argument, if given.
fn view_range(args: &Value) -> Result<Option<(i64, i64)>, ToolResult> {
    let bad = || ToolResult::error("str_replace_editor.view_range must be [start, end] integers");
    match args.get("view_range") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) if a.len() == 2 => match (a[0].as_i64(), a[1].as_i64()) {
            (Some(s), Some(e)) => Ok(Some((s, e))),
            _ => Err(bad()),
        },
        Some(_) => Err(bad()),
    }
}

/// The folder's files and folders two levels deep, hidden ones and denied ones left out.
async fn view_dir(path: &str, cx: &ToolContext) -> ToolResult {
    let real = match cx.workspace.resolve(path) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let workspace = cx.workspace.clone();
    let limit = cx.limits.output_chars;
    let shown = path.to_string();
    crate::tools::run_blocking(move || {
        let mut found = Vec::new();
        let mut more = false;
        walk(&workspace, &real, 2, &mut found, &mut more);
        found.sort();
        let mut text = BoundedText::new(limit);
        text.push(&format!(
            "Here's the files and directories up to 2 levels deep in {shown}, excluding \
             hidden items:\n{}\n",
            real.display()
        ));
        for p in &found {
            text.push(&format!("{}\n", p.display()));
        }
        if more {
            text.push(&format!("[listing cut at {VIEW_ENTRIES} entries]\n"));
        }
        ToolResult::ok(text.finish())
    })
    .await
}

fn walk(
    workspace: &crate::tools::Workspace,
    dir: &Path,
    depth: usize,
    found: &mut Vec<PathBuf>,
    more: &mut bool,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if e.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let p = e.path();
        // A link is listed, never followed: it could lead out of the workspace.
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if workspace.denied(&p, is_dir).is_some() {
            continue;
        }
        if found.len() >= VIEW_ENTRIES {
            *more = true;
            return;
        }
        found.push(p.clone());
        if is_dir && depth > 1 {
            walk(workspace, &p, depth - 1, found, more);
        }
    }
}

/// Lines `from..=to` (1-based; to the end without `to`) of `text`, numbered as `cat -n`
/// numbers them, cut to `limit` characters.
fn numbered(text: &str, from: usize, to: Option<usize>, limit: usize) -> String {
    let mut out = BoundedText::new(limit);
    for (i, line) in text.lines().enumerate().map(|(i, l)| (i + 1, l)) {
        if i < from {
            continue;
        }
        if to.is_some_and(|t| i > t) {
            break;
        }
        out.push(&format!("{i:6}\t{line}\n"));
    }
    out.finish()
}

/// Lines of `text`, a last one without a newline counted.
fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// The 1-based line of byte `at`.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_like_cat_n() {
        assert_eq!(numbered("a\nb\nc", 2, None, 1000), "     2\tb\n     3\tc\n");
        assert_eq!(numbered("a\nb\nc\n", 1, Some(1), 1000), "     1\ta\n");
    }

    #[test]
    fn history_is_bounded_per_file() {
        let mut h = History::default();
        let p = Path::new("/w/f");
        for i in 0..(UNDO_PER_FILE + 3) {
            h.push(p, i.to_string());
        }
        let mut popped = Vec::new();
        while let Some(v) = h.pop(p) {
            popped.push(v);
        }
        assert_eq!(popped.len(), UNDO_PER_FILE);
        assert_eq!(popped.last().map(String::as_str), Some("3"));
        assert_eq!(h.bytes, 0);
    }

    /// One edit each of many files stays within the total: the oldest versions go first,
    /// whichever file they are of.
    #[test]
    fn history_is_bounded_in_all_oldest_first() {
        let mut h = History::default();
        let big = "x".repeat(UNDO_TOTAL_BYTES / 3 + 1);
        for i in 0..5 {
            h.push(&PathBuf::from(format!("/w/{i}")), big.clone());
        }
        assert!(h.bytes <= UNDO_TOTAL_BYTES, "{} bytes kept", h.bytes);
        assert!(h.pop(Path::new("/w/0")).is_none(), "the oldest was kept");
        assert!(h.pop(Path::new("/w/4")).is_some(), "the newest went");
    }
}
