//! The `read_file` tool: a text file's content (optionally a range of lines), streamed through
//! the bounded accumulator so even a huge file costs bounded memory.

use std::io::{ErrorKind, Read};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::output::{quote, BoundedText, Utf8Decoder};
use super::workspace::{Opened, Target};
use super::{args, Claude, Kind, Tool, ToolContext, ToolResult, ToolSpec};

/// How much of the start of a file is checked for NUL bytes, the usual sign of a binary file.
const BINARY_PROBE: usize = 8 * 1024;

/// Claude Code's `Read`.
pub const CLAUDE: Claude = Claude {
    tool: "read_file",
    names: &["Read"],
    for_subagents: true,
    by_command: false,
};

pub struct ReadFile;

impl Tool for ReadFile {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Read
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAUDE.tool.into(),
            description: "Read a UTF-8 text file from the workspace and return its content \
                exactly as stored (no line numbers). Use offset and limit to read part of a \
                long file; remaining lines are counted at the end. Very long output keeps its \
                start and end."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": args::path_schema(),
                    "offset": {
                        "type": "integer",
                        "description": "1-based line number to start reading from (default 1)."
                    },
                    "limit": {
                        "type": "integer",
                        "description": "Maximum number of lines to return (default: all)."
                    }
                },
                "required": ["path"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let user_path = match args::path("read_file", &args, "path") {
                Ok(p) => p.to_string(),
                Err(e) => return e,
            };
            let offset = match args::opt_u64("read_file", &args, "offset") {
                Ok(o) => o.unwrap_or(1).max(1),
                Err(e) => return e,
            };
            let limit = match args::opt_u64("read_file", &args, "limit") {
                Ok(Some(0)) => return ToolResult::error("read_file.limit must be at least 1"),
                Ok(l) => l,
                Err(e) => return e,
            };
            // Skill folders outside the workspace are readable: load_skill lists their files.
            let target = match cx.workspace.target_for_read(&user_path) {
                Ok(t) => t,
                Err(e) => return e,
            };
            let cap = cx.limits.output_chars;
            if let Some(editor) = cx.editor.reader() {
                let shown = quote(&user_path);
                return match editor.read(&target.path).await {
                    Ok(text) => lines_of(text.as_bytes(), &shown, offset, limit, cap)
                        .unwrap_or_else(|e| ToolResult::error(format!("cannot read {shown}: {e}"))),
                    Err(e) => ToolResult::error(format!("cannot read {shown}: {e}")),
                };
            }
            super::run_blocking(move || {
                // Errors name the path as the model gave it, quoted short.
                let shown = quote(&user_path);
                read(&target, &shown, offset, limit, cap)
                    .unwrap_or_else(|e| ToolResult::error(format!("cannot read {shown}: {e}")))
            })
            .await
        })
    }
}

/// Reads lines `[offset, offset + limit)`; `Err` is for unexpected I/O errors only.
/// `user_path` is only for messages.
fn read(
    target: &Target,
    user_path: &str,
    offset: u64,
    limit: Option<u64>,
    cap: usize,
) -> std::io::Result<ToolResult> {
    // The kind comes from the opened file: a FIFO or device could block forever or never end.
    let file = match target.open_read()? {
        Opened::File(file, _) => file,
        Opened::Missing => return Ok(ToolResult::error(format!("file not found: {user_path}"))),
        Opened::Dir => {
            return Ok(ToolResult::error(format!(
                "{user_path} is a directory; use glob to list files"
            )))
        }
        Opened::NotRegular => {
            return Ok(ToolResult::error(format!(
                "{user_path} is not a regular file"
            )))
        }
    };
    lines_of(file, user_path, offset, limit, cap)
}

/// [`read`] once the file is open: anything that reads like one (an editor's text too).
fn lines_of(
    mut file: impl Read,
    user_path: &str,
    offset: u64,
    limit: Option<u64>,
    cap: usize,
) -> std::io::Result<ToolResult> {
    let end = limit.map(|l| offset.saturating_add(l));
    let mut text = BoundedText::new(cap);
    let mut decoder = Utf8Decoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut bytes_seen = 0usize;
    // Line number of the next byte; the file's last byte, to count an unterminated last line.
    let mut line: u64 = 1;
    let mut last_byte = b'\n';

    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        if bytes_seen < BINARY_PROBE {
            let probe = &chunk[..n.min(BINARY_PROBE - bytes_seen)];
            if probe.contains(&0) {
                return Ok(ToolResult::error(format!(
                    "{user_path} looks like a binary file (it contains NUL bytes)"
                )));
            }
        }
        bytes_seen += n;
        last_byte = chunk[n - 1];

        let mut rest = chunk;
        while !rest.is_empty() {
            if end.is_some_and(|e| line >= e) {
                // Past the wanted range: only count what is left.
                line += rest.iter().filter(|&&b| b == b'\n').count() as u64;
                break;
            }
            let (piece, complete) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..=i], true),
                None => (rest, false),
            };
            if line >= offset {
                decoder.decode(piece, |s| text.push(s));
            }
            if complete {
                line += 1;
            }
            rest = &rest[piece.len()..];
        }
        if decoder.saw_invalid() {
            return Ok(not_text(user_path));
        }
    }
    decoder.finish(|s| text.push(s));
    if decoder.saw_invalid() {
        return Ok(not_text(user_path));
    }

    let total = (line - 1) + u64::from(last_byte != b'\n');
    if bytes_seen == 0 && offset == 1 {
        return Ok(ToolResult::ok("(empty file)"));
    }
    if offset > total {
        return Ok(ToolResult::error(format!(
            "offset {offset} is past the end of {user_path}, which has {total} lines"
        )));
    }
    let shown_end = end.map_or(total, |e| (e - 1).min(total));
    let more = total - shown_end;
    let mut out = text.finish();
    if more > 0 {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&format!("... ({more} more lines)"));
    }
    Ok(ToolResult::ok(out))
}

fn not_text(user_path: &str) -> ToolResult {
    ToolResult::error(format!("{user_path} is not a UTF-8 text file"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        for (name, content) in files {
            std::fs::write(d.path().join(name), content).unwrap();
        }
        let cx = ToolContext::new(Workspace::new(d.path()).unwrap());
        (d, cx)
    }

    async fn read_file(cx: &ToolContext, args: Value) -> String {
        ReadFile.call(args, cx).await.content
    }

    const FIVE: &[u8] = b"one\ntwo\nthree\nfour\nfive\n";

    #[tokio::test]
    async fn returns_raw_content() {
        let (_d, cx) = setup(&[("f.txt", FIVE), ("e.txt", b""), ("n.txt", b"a\nb")]);
        let s = |p: &str| json!({ "path": p });
        assert_eq!(
            read_file(&cx, s("f.txt")).await,
            "one\ntwo\nthree\nfour\nfive\n"
        );
        assert_eq!(read_file(&cx, s("e.txt")).await, "(empty file)");
        assert_eq!(read_file(&cx, s("n.txt")).await, "a\nb");
    }

    #[tokio::test]
    async fn offset_and_limit_select_lines() {
        let (_d, cx) = setup(&[("f.txt", FIVE), ("n.txt", b"a\nb\nc")]);
        let r = |o: u64, l: u64| json!({"path": "f.txt", "offset": o, "limit": l});
        assert_eq!(
            read_file(&cx, r(2, 2)).await,
            "two\nthree\n... (2 more lines)"
        );
        assert_eq!(read_file(&cx, r(0, 1)).await, "one\n... (4 more lines)");
        assert_eq!(read_file(&cx, r(4, 10)).await, "four\nfive\n");
        assert_eq!(read_file(&cx, r(5, 1)).await, "five\n");
        let r = json!({"path": "f.txt", "offset": 3});
        assert_eq!(read_file(&cx, r).await, "three\nfour\nfive\n");
        let r = json!({"path": "n.txt", "offset": 2, "limit": 1});
        assert_eq!(read_file(&cx, r).await, "b\n... (1 more lines)");
    }

    #[tokio::test]
    async fn offset_past_the_end_is_an_error() {
        let (_d, cx) = setup(&[("f.txt", FIVE), ("e.txt", b"")]);
        assert_eq!(
            read_file(&cx, json!({"path": "f.txt", "offset": 6})).await,
            "Error: offset 6 is past the end of f.txt, which has 5 lines"
        );
        assert_eq!(
            read_file(&cx, json!({"path": "e.txt", "offset": 2})).await,
            "Error: offset 2 is past the end of e.txt, which has 0 lines"
        );
    }

    #[tokio::test]
    async fn long_files_keep_head_and_tail() {
        let content = format!(
            "{}{}{}",
            "a".repeat(10),
            "b".repeat(100_000),
            "c".repeat(10)
        );
        let (_d, mut cx) = setup(&[("big.txt", content.as_bytes())]);
        cx.limits.output_chars = 20;
        assert_eq!(
            read_file(&cx, json!({"path": "big.txt"})).await,
            "aaaaaaaaaa\n... [100000 characters omitted] ...\ncccccccccc"
        );
    }

    #[tokio::test]
    async fn multibyte_char_across_read_chunks() {
        // "é" straddles the 64 KiB read boundary.
        let mut content = "x".repeat(64 * 1024 - 1).into_bytes();
        content.extend_from_slice("é\n".as_bytes());
        let (_d, cx) = setup(&[("f.txt", &content)]);
        let r = read_file(&cx, json!({"path": "f.txt"})).await;
        assert!(r.ends_with("xxé\n"), "{}", &r[r.len() - 10..]);
        assert!(!r.contains('\u{FFFD}'));
    }

    #[tokio::test]
    async fn refuses_binary_dirs_and_missing_files() {
        let (d, cx) = setup(&[("nul.bin", b"ab\0cd"), ("bad.txt", b"ok\n\xff\n")]);
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let s = |p: &str| json!({ "path": p });
        assert_eq!(
            read_file(&cx, s("nul.bin")).await,
            "Error: nul.bin looks like a binary file (it contains NUL bytes)"
        );
        assert_eq!(
            read_file(&cx, s("bad.txt")).await,
            "Error: bad.txt is not a UTF-8 text file"
        );
        assert_eq!(
            read_file(&cx, s("dir")).await,
            "Error: dir is a directory; use glob to list files"
        );
        assert_eq!(
            read_file(&cx, s("no.txt")).await,
            "Error: file not found: no.txt"
        );
    }

    #[tokio::test]
    async fn refuses_escapes_and_bad_args() {
        let (d, cx) = setup(&[]);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), d.path().join("l")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("dl")).unwrap();
        let abs = outside.path().join("secret");
        let abs = abs.to_str().unwrap();
        for p in ["../secret", "l", "dl/secret", abs] {
            let r = read_file(&cx, json!({ "path": p })).await;
            assert_eq!(r, format!("Error: path escapes workspace: {p}"));
        }
        assert_eq!(
            read_file(&cx, json!({})).await,
            "Error: read_file.path is required"
        );
        assert_eq!(
            read_file(&cx, json!({"path": "x", "limit": 0})).await,
            "Error: read_file.limit must be at least 1"
        );
        assert_eq!(
            read_file(&cx, json!({"path": "x", "offset": "two"})).await,
            "Error: read_file.offset must be a non-negative integer"
        );
    }

    /// The race, decided: checked while the path held no link, then a folder on the way or
    /// the file itself became a link to outside before the read.
    #[test]
    fn links_swapped_in_after_the_check_are_not_followed() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("s.txt"), "secret").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/s.txt"), "public").unwrap();
        std::fs::write(d.path().join("s.txt"), "public").unwrap();
        let ws = Workspace::new(d.path()).unwrap();
        let in_sub = ws.target_for_read("sub/s.txt").unwrap();
        let top = ws.target_for_read("s.txt").unwrap();
        std::fs::rename(d.path().join("sub"), d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("sub")).unwrap();
        std::fs::remove_file(d.path().join("s.txt")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("s.txt"), d.path().join("s.txt")).unwrap();
        for target in [in_sub, top] {
            let e = read(&target, "x", 1, None, 1000).unwrap_err();
            assert!(e.to_string().contains("became a link"), "{e}");
        }
    }
}
