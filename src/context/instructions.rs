//! Project instructions: the `AGENTS.md` files almost every repository carries now, read once
//! when a run starts and put in the system prompt, after hx's own rules and before the skill
//! catalog.
//!
//! Which files, in order: the user's own `$XDG_CONFIG_HOME/hx/AGENTS.md` first of all, then
//! one file per folder from the project root (the nearest folder at or above the working
//! directory that holds `.git`, else the working directory) down to the working directory:
//! its `AGENTS.md`, or its `CLAUDE.md` when it has no `AGENTS.md`. Later files are more
//! specific, and the prompt says that the later one wins.
//!
//! The files together may take `project_doc_max_bytes`. Over it, the files furthest from the
//! working directory are cut first (their ends, then the whole file): the nearest file is the
//! most specific. Every cut is said, in the prompt under the file and in one warning.
//!
//! A repository's instruction files stay in the repository: one that is a link to a file
//! outside the project root is skipped with a warning, since whatever it pointed at (a key,
//! a file of the home folder) would go to the model's server. They are not gated by `hx
//! trust`: they run nothing and send nothing elsewhere; they are text, like any file the
//! model reads.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::thousands;

/// The file each folder may hold.
pub const FILE: &str = "AGENTS.md";
/// The file read from a folder without [`FILE`].
pub const FALLBACK: &str = "CLAUDE.md";

/// One instruction file as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// The path the prompt names: relative to the project root, or the user's file as is.
    pub label: String,
    /// The text kept (all of it unless cut).
    pub text: String,
    /// Bytes of the file left out to stay within the limit.
    pub cut: u64,
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    /// Furthest first: the user's file, the project root's, ..., the working directory's.
    pub docs: Vec<Doc>,
    /// sentences for `text::Warning`s.
    /// sentences for `hx: warning: `.
    pub warnings: Vec<String>,
    /// The limit the files were cut to.
    pub max_bytes: usize,
}

/// The project root for `cwd`: the nearest folder at or above it holding `.git` (a folder, or
/// the file of a worktree), else `cwd` itself.
pub fn project_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The instruction files for a run in `cwd` (an absolute path with links resolved), with the
/// user's config folder `user_dir`, cut to `max_bytes` in all.
pub fn discover(cwd: &Path, user_dir: Option<&Path>, max_bytes: usize) -> Instructions {
    let root = project_root(cwd);
    let mut found: Vec<(String, PathBuf, u64)> = Vec::new();
    let mut warnings = Vec::new();
    if let Some(dir) = user_dir {
        let path = dir.join(FILE);
        // The user's own file may be a link to anywhere: it is theirs.
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => found.push((
                format!("{} (the user's own)", path.display()),
                path,
                m.len(),
            )),
            Ok(_) => warnings.push(format!("{}: not a regular file; skipped", path.display())),
            Err(_) => {}
        }
    }
    let mut folders: Vec<&Path> = cwd
        .ancestors()
        .take_while(|d| d.starts_with(&root))
        .collect();
    folders.reverse();
    for dir in folders {
        let Some(path) = [FILE, FALLBACK]
            .iter()
            .map(|name| dir.join(name))
            .find(|p| std::fs::symlink_metadata(p).is_ok())
        else {
            continue;
        };
        let label = path
            .strip_prefix(&root)
            .unwrap_or(&path)
            .display()
            .to_string();
        match project_file(&path, &root) {
            Ok(len) => found.push((label, path, len)),
            Err(why) => warnings.push(format!("{}: {why}; skipped", path.display())),
        }
    }
    // The nearest files get the room first; the furthest are cut.
    let mut room = max_bytes as u64;
    let mut keep = vec![0u64; found.len()];
    for (i, (_, _, len)) in found.iter().enumerate().rev() {
        keep[i] = (*len).min(room);
        room -= keep[i];
    }
    let mut docs = Vec::new();
    for ((label, path, len), keep) in found.into_iter().zip(keep) {
        match read_prefix(&path, keep) {
            Ok(text) => {
                // A read shorter than asked (the file shrank since) cut nothing; a cut inside
                // a character drops at most 3 bytes more.
                let cut = if (text.len() as u64) + 3 < keep {
                    0
                } else {
                    len.saturating_sub(text.len() as u64)
                };
                docs.push(Doc { label, text, cut });
            }
            Err(why) => warnings.push(format!("{}: {why}; skipped", path.display())),
        }
    }
    let cuts: Vec<String> = docs
        .iter()
        .filter(|d| d.cut > 0)
        .map(|d| format!("{} bytes of {}", thousands(d.cut), d.label))
        .collect();
    if !cuts.is_empty() {
        warnings.push(format!(
            "the instruction files are larger than project_doc_max_bytes ({} bytes), so the \
             files furthest from the working directory are cut: {}",
            thousands(max_bytes as u64),
            cuts.join(", ")
        ));
    }
    Instructions {
        docs,
        warnings,
        max_bytes,
    }
}

/// The size of a project's instruction file, or why it is not read.
fn project_file(path: &Path, root: &Path) -> Result<u64, String> {
    let real = path
        .canonicalize()
        .map_err(|e| format!("cannot be read ({e})"))?;
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    if !real.starts_with(&real_root) {
        return Err(format!(
            "a link to {}, outside the project {}",
            real.display(),
            real_root.display()
        ));
    }
    let meta = std::fs::metadata(&real).map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    Ok(meta.len())
}

/// The first `max` bytes of a file as text, cut at a character boundary.
fn read_prefix(path: &Path, max: u64) -> Result<String, String> {
    if max == 0 {
        return Ok(String::new());
    }
    // Non-blocking, so a file swapped for a FIFO since it was checked cannot hang the start.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        // Cut inside a character: keep the characters before it.
        Err(e) if e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            Ok(String::from_utf8(bytes).unwrap_or_default())
        }
        Err(_) => Err("not UTF-8 text".into()),
    }
}

impl Instructions {
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Each file as its part of the prompt: its label and its text under the line naming it.
    pub fn parts(&self) -> Vec<(String, String)> {
        self.docs
            .iter()
            .map(|d| {
                let mut s = format!("## {}\n\n", d.label);
                if !d.text.trim().is_empty() {
                    s.push_str(d.text.trim_end());
                    s.push_str("\n\n");
                }
                if d.cut > 0 {
                    let what = if d.text.is_empty() {
                        format!("this file ({} bytes) is left out", thousands(d.cut))
                    } else {
                        format!("the last {} bytes of this file are cut", thousands(d.cut))
                    };
                    s.push_str(&format!(
                        "[hx: {what}: the instruction files exceed project_doc_max_bytes ({} \
                         bytes)]\n\n",
                        thousands(self.max_bytes as u64)
                    ));
                }
                (d.label.clone(), s.trim_end().to_string())
            })
            .collect()
    }

    /// The heading that introduces the files in the prompt.
    pub fn heading() -> &'static str {
        "# Project instructions\n\nThe user's and the project's instructions (AGENTS.md files) \
         follow, the most general first: the user's own, then the project root's, down to the \
         working directory's. Follow them; where two disagree, the later one wins."
    }

    /// The whole section of the system prompt; empty without files.
    pub fn section(&self) -> String {
        if self.docs.is_empty() {
            return String::new();
        }
        let mut s = Self::heading().to_string();
        for (_, part) in self.parts() {
            s.push_str("\n\n");
            s.push_str(&part);
        }
        s
    }
}
