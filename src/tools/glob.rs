//! The `glob` tool: lists workspace files matching a pattern, honouring `.gitignore`, so the
//! model can find files without shelling out to `find`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use serde_json::{json, Value};

use super::workspace::escape_error;
use super::{args, Claude, Kind, Tool, ToolContext, ToolResult, ToolSpec};

/// Most paths listed; the rest are only counted.
const MAX_RESULTS: usize = 200;
/// Longest pattern accepted, in characters. Real patterns are a few dozen; a huge one costs
/// seconds to compile into a regex and, past the regex size limit, cannot be compiled at all.
pub const MAX_PATTERN_CHARS: usize = 1000;

/// Claude Code's `Glob`, and its `LS`: listing a folder is `DIR/*`.
pub const CLAUDE: Claude = Claude {
    tool: "glob",
    names: &["Glob", "LS"],
    for_subagents: true,
    by_command: false,
};

pub struct Glob;

impl Tool for Glob {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Search
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAUDE.tool.into(),
            description: "List files in the workspace matching a glob pattern, e.g. \
                `src/**/*.rs` or `*.toml`. `*` matches within one folder, `**` across folders. \
                Returns sorted paths relative to the workspace root, at most 200. Files \
                ignored by .gitignore and the .git folder are skipped; hidden files are \
                included."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {
                        "type": "string",
                        "description": "Glob pattern, relative to the workspace root."
                    }
                },
                "required": ["pattern"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let pattern = match args::string("glob", &args, "pattern") {
                Ok(p) => p,
                Err(e) => return e,
            };
            let plan = match Plan::new(pattern, cx) {
                Ok(p) => p,
                Err(e) => return e,
            };
            super::run_blocking(move || plan.run()).await
        })
    }
}

/// A pattern split into the folder to walk (its literal leading folders) and the glob the
/// paths below that folder must match.
struct Plan {
    base: PathBuf,
    /// How `base` is shown: relative to the workspace root, with `/`, empty for the root.
    prefix: String,
    matcher: GlobSet,
    /// Without `**` the pattern cannot match deeper than its number of components.
    max_depth: Option<usize>,
    /// For its deny rules.
    workspace: super::Workspace,
}

impl Plan {
    fn new(pattern: &str, cx: &ToolContext) -> Result<Plan, ToolResult> {
        let chars = pattern.chars().count();
        if chars > MAX_PATTERN_CHARS {
            return Err(ToolResult::error(format!(
                "glob.pattern has {chars} characters; the limit is {MAX_PATTERN_CHARS}"
            )));
        }
        let parts: Vec<&str> = pattern
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        if parts.contains(&"..") {
            return Err(escape_error(pattern));
        }
        if parts.is_empty() {
            return Err(ToolResult::error(
                "glob.pattern must name files, e.g. **/*.rs",
            ));
        }
        // Keep at least the last component as the pattern, so `Cargo.toml` walks the root.
        let literal = parts[..parts.len() - 1]
            .iter()
            .take_while(|p| !p.contains(['*', '?', '[', ']', '{', '}', '\\']))
            .count();
        let mut base = parts[..literal].join("/");
        if pattern.starts_with('/') {
            base.insert(0, '/');
        }
        let base = cx.workspace.resolve(&base).map_err(|e| {
            if e.content.starts_with("Error: path escapes workspace") {
                escape_error(pattern)
            } else {
                e
            }
        })?;
        let rest = parts[literal..].join("/");
        // globset's own message repeats the whole pattern (or its regex); its kind does not.
        let invalid = |e: globset::Error| {
            ToolResult::error(format!(
                "invalid glob pattern {}: {}",
                super::output::quote(pattern),
                e.kind()
            ))
        };
        let glob = GlobBuilder::new(&rest)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(invalid)?;
        // A one-glob set rather than `Glob::compile_matcher`, which panics when the regex
        // cannot be compiled (too large); the set returns that as an error.
        let matcher = GlobSetBuilder::new().add(glob).build().map_err(invalid)?;
        let prefix = match cx.workspace.display(&base) {
            p if p == "." => String::new(),
            p => p,
        };
        let max_depth = (!rest.contains("**")).then(|| parts.len() - literal);
        Ok(Plan {
            base,
            prefix,
            matcher,
            max_depth,
            workspace: cx.workspace.clone(),
        })
    }

    fn run(&self) -> ToolResult {
        // The walk's own root never passes through filter_entry, so `.git/*` must be caught
        // here.
        let inside_git = self.prefix.split('/').any(|c| c == ".git");
        if inside_git || !self.base.is_dir() {
            return ToolResult::ok("(no matches)");
        }
        let walker = ignore::WalkBuilder::new(&self.base)
            .hidden(false)
            .require_git(false)
            .follow_links(false)
            .max_depth(self.max_depth)
            .filter_entry({
                // Denied files are left out, and denied folders not entered.
                let ws = self.workspace.clone();
                move |e| {
                    let dir = e.file_type().is_some_and(|t| t.is_dir());
                    e.file_name() != ".git" && ws.denied(e.path(), dir).is_none()
                }
            })
            .build();
        // Only the first MAX_RESULTS in sorted order are kept, so a huge tree costs bounded
        // memory; the rest are counted.
        let mut kept = BTreeSet::new();
        let mut total = 0usize;
        for entry in walker.flatten() {
            let is_file = entry
                .file_type()
                .is_some_and(|t| t.is_file() || (t.is_symlink() && !entry.path().is_dir()));
            if !is_file {
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(&self.base) else {
                continue;
            };
            if !self.matcher.is_match(rel) {
                continue;
            }
            total += 1;
            kept.insert(self.show(rel));
            if kept.len() > MAX_RESULTS {
                kept.pop_last();
            }
        }
        if total == 0 {
            return ToolResult::ok("(no matches)");
        }
        let mut out = kept.into_iter().collect::<Vec<_>>().join("\n");
        if total > MAX_RESULTS {
            out.push_str(&format!("\n... ({} more)", total - MAX_RESULTS));
        }
        ToolResult::ok(out)
    }

    fn show(&self, rel: &Path) -> String {
        let mut s = self.prefix.clone();
        for c in rel.components() {
            if !s.is_empty() {
                s.push('/');
            }
            s.push_str(&c.as_os_str().to_string_lossy());
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;

    fn setup(files: &[&str]) -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        for f in files {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let cx = ToolContext::new(Workspace::new(d.path()).unwrap());
        (d, cx)
    }

    async fn glob(cx: &ToolContext, pattern: &str) -> String {
        Glob.call(json!({ "pattern": pattern }), cx).await.content
    }

    const TREE: &[&str] = &[
        "main.rs",
        "src/a.rs",
        "src/sub/b.rs",
        "src/c.txt",
        "tests/t.rs",
    ];

    #[tokio::test]
    async fn star_stays_in_one_folder_and_doublestar_crosses() {
        let (_d, cx) = setup(TREE);
        assert_eq!(glob(&cx, "*.rs").await, "main.rs");
        assert_eq!(
            glob(&cx, "**/*.rs").await,
            "main.rs\nsrc/a.rs\nsrc/sub/b.rs\ntests/t.rs"
        );
        assert_eq!(glob(&cx, "src/**/*.rs").await, "src/a.rs\nsrc/sub/b.rs");
        assert_eq!(glob(&cx, "./src/*").await, "src/a.rs\nsrc/c.txt");
        assert_eq!(glob(&cx, "src/sub/b.rs").await, "src/sub/b.rs");
        assert_eq!(
            glob(&cx, "*/*.{rs,txt}").await,
            "src/a.rs\nsrc/c.txt\ntests/t.rs"
        );
        assert_eq!(glob(&cx, "**/*.py").await, "(no matches)");
        assert_eq!(glob(&cx, "nope/**").await, "(no matches)");
    }

    #[tokio::test]
    async fn honours_gitignore_skips_git_and_keeps_hidden_files() {
        let (d, cx) = setup(&[
            "keep.rs",
            "skip.log",
            "sub/in.rs",
            "sub/in.log",
            "target/out.rs",
            ".env",
            ".config/x.toml",
            ".git/config",
            ".git/HEAD",
        ]);
        std::fs::write(d.path().join(".gitignore"), "*.log\ntarget/\n").unwrap();
        assert_eq!(
            glob(&cx, "**/*").await,
            ".config/x.toml\n.env\n.gitignore\nkeep.rs\nsub/in.rs"
        );
        // The root's .gitignore still applies when the walk starts in a subfolder.
        assert_eq!(glob(&cx, "sub/*").await, "sub/in.rs");
        assert_eq!(glob(&cx, ".git/*").await, "(no matches)");
        assert_eq!(glob(&cx, "**/config").await, "(no matches)");
    }

    #[tokio::test]
    async fn caps_the_list_at_200() {
        let names: Vec<String> = (0..250).map(|i| format!("f{i:03}.txt")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let (_d, cx) = setup(&refs);
        let out = glob(&cx, "*.txt").await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 201);
        assert_eq!(lines[0], "f000.txt");
        assert_eq!(lines[199], "f199.txt");
        assert_eq!(lines[200], "... (50 more)");
    }

    #[tokio::test]
    async fn refuses_patterns_outside_the_workspace() {
        let (d, cx) = setup(TREE);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("o.rs"), "").unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("out")).unwrap();
        let abs_out = format!("{}/*.rs", outside.path().display());
        for p in [
            "../*.rs",
            "src/../../*",
            "/etc/*",
            "out/*.rs",
            abs_out.as_str(),
        ] {
            assert_eq!(
                glob(&cx, p).await,
                format!("Error: path escapes workspace: {p}")
            );
        }
        // Symlinked folders are not followed during the walk either.
        assert_eq!(glob(&cx, "**/o.rs").await, "(no matches)");
        let abs_in = format!("{}/src/*.rs", cx.workspace.root().display());
        assert_eq!(glob(&cx, &abs_in).await, "src/a.rs");
    }

    #[tokio::test]
    async fn long_and_pathological_patterns_are_errors_or_results_never_panics() {
        let (_d, cx) = setup(TREE);
        let over = "a".repeat(MAX_PATTERN_CHARS + 1);
        assert_eq!(
            glob(&cx, &over).await,
            "Error: glob.pattern has 1001 characters; the limit is 1000"
        );
        // Within the cap, the shapes that make the largest regexes still compile (or fail)
        // without a panic.
        for p in [
            "?".repeat(MAX_PATTERN_CHARS),
            "*?".repeat(MAX_PATTERN_CHARS / 2),
            "[!a]".repeat(MAX_PATTERN_CHARS / 4),
            "**/".repeat(MAX_PATTERN_CHARS / 3),
            "{?,*}".repeat(MAX_PATTERN_CHARS / 5),
            "[!é-ü]".repeat(MAX_PATTERN_CHARS / 6),
        ] {
            let r = glob(&cx, &p).await;
            assert!(r.len() < 2_000, "{}", &r[..200]);
        }
    }

    #[tokio::test]
    async fn bad_arguments_are_errors() {
        let (_d, cx) = setup(TREE);
        let r = Glob.call(json!({}), &cx).await;
        assert_eq!(r.content, "Error: glob.pattern is required");
        assert!(glob(&cx, "src/[a")
            .await
            .starts_with("Error: invalid glob pattern src/[a:"));
        assert_eq!(
            glob(&cx, "./").await,
            "Error: glob.pattern must name files, e.g. **/*.rs"
        );
    }
}
