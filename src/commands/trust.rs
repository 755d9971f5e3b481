//! What a project's commands folder runs, for `hx trust`: the `` !`cmd` `` spans of its
//! files. A repository's command that runs something when the user types its name is code
//! from whoever wrote the repository, so it runs only while `hx trust` has approved exactly
//! what the folder runs; the prose of a command can change without asking again, a command
//! it runs cannot.
//!
//! The approved content of a folder is its manifest: a JSON list of `{"file", "run"}`, one
//! per file with spans, in the order of the files' paths (the walk of discovery, with its
//! rule that a link out of the folder does not count). When a command runs, its spans must
//! be exactly its file's entry in the manifest that is trusted now.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{body_of, shell_spans, Command};
use crate::paths::Env;
use crate::skills::discover::{read_in_parallel, SkillRoot};
use crate::skills::Source;
use crate::text::Warning;
use crate::trust::{self, escaped, Content, Gate, Kind};

/// `.claude/commands` needs `hx trust` for what its files run (`` !`cmd` ``).
pub const TRUST_CLAUDE: Kind = Kind {
    path: ".claude/commands",
    label: "project commands",
    review,
    content: Content::Folder(manifest),
};

/// `.agents/commands`, the same.
pub const TRUST_AGENTS: Kind = Kind {
    path: ".agents/commands",
    label: "project commands",
    review,
    content: Content::Folder(manifest),
};

/// One file of the manifest: what it runs, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Relative to the folder, `/`-separated.
    pub file: String,
    pub run: Vec<String>,
}

/// The manifest of `folder`: `None` when none of its files runs anything.
pub fn manifest(folder: &Path) -> Result<Option<Vec<u8>>, String> {
    let entries = entries(folder)?;
    if entries.is_empty() {
        return Ok(None);
    }
    serde_json::to_vec(&entries)
        .map(Some)
        .map_err(|e| format!("cannot list what it runs: {e}"))
}

/// The entries of `folder`'s manifest: its command files as discovery walks them, read on a
/// few threads.
pub fn entries(folder: &Path) -> Result<Vec<Entry>, String> {
    let real = folder
        .canonicalize()
        .map_err(|e| format!("cannot resolve: {e}"))?;
    let root = SkillRoot {
        path: folder.to_path_buf(),
        real,
        source: Source::Project,
    };
    let files: Vec<PathBuf> =
        crate::agents::files_in(std::slice::from_ref(&root), "command", &mut Vec::new())
            .into_iter()
            .map(|(p, _)| p)
            .collect();
    let read = read_in_parallel(&files, 64, |path| {
        let Some(rel) = path.strip_prefix(folder).ok() else {
            return Ok(None);
        };
        // A file that is too large or not text runs nothing: it cannot be invoked.
        let Ok(text) = crate::agents::read_within(path, None) else {
            return Ok(None);
        };
        let run: Vec<String> = shell_spans(body_of(&text))
            .into_iter()
            .map(|s| s.command)
            .collect();
        let file = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        Ok((!run.is_empty()).then_some(Entry { file, run }))
    });
    Ok(read.into_iter().filter_map(|r| r.ok().flatten()).collect())
}

/// `hx trust` on a commands folder: one line per command it runs, with its file.
fn review(_path: &Path, text: &str) -> trust::Review {
    let entries: Vec<Entry> =
        serde_json::from_str(text).map_err(|e| vec![format!("not a list of commands: {e}")])?;
    Ok(entries
        .iter()
        .flat_map(|e| {
            e.run
                .iter()
                .map(move |r| format!("{} runs {}", escaped(&e.file), escaped(r)))
        })
        .collect())
}

/// Whether the project command `cmd` may run `spans` (its body's, as read to run it): they
/// must be exactly its file's entry in its folder's manifest that `hx trust` approved. `Err`
/// is the notice saying why not and what to do.
pub fn may_run(cmd: &Command, spans: &[String], env: &Env) -> Result<(), Warning> {
    if cmd.source == Source::User {
        return Ok(());
    }
    let kind = [&TRUST_CLAUDE, &TRUST_AGENTS]
        .into_iter()
        .find(|k| cmd.root.ends_with(k.path));
    let notice = |why: &str| {
        Warning::new(format!(
            "command {}: its {} left as text: {why}",
            cmd.name,
            crate::text::count(spans.len() as u64, "shell command"),
        ))
    };
    let Some(kind) = kind else {
        return Err(notice("its folder is not one hx trust knows"));
    };
    let project = kind.project_dir(&cmd.root);
    let gate = trust::gate(kind, project, env).map_err(|e| notice(&e))?;
    let (path, text) = match gate {
        Some(Gate::Trusted { path, text }) => (path, text),
        Some(Gate::Skipped { .. }) | None => {
            return Err(notice(&format!(
                "the project's commands are not trusted; review them, then run `hx trust` in {}",
                project.display()
            )))
        }
    };
    let same_folder = match (path.canonicalize(), cmd.root.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same_folder {
        return Err(notice("its folder is not the one hx trust approved"));
    }
    let entries: Vec<Entry> = serde_json::from_str(&text).unwrap_or_default();
    let rel = cmd
        .path
        .strip_prefix(&cmd.root)
        .map(|r| {
            r.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default();
    match entries.iter().find(|e| e.file == rel) {
        Some(e) if e.run == spans => Ok(()),
        _ => Err(notice(
            "what it runs changed since `hx trust`; review it, then run `hx trust` again",
        )),
    }
}
