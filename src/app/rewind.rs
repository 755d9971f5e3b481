//! Seeing and undoing what a session's turns changed, from its checkpoints: the list, the
//! diff, and the rewind (files, conversation or both), the same for `hx diff`, `hx rewind`
//! and `hx chat`'s `/diff` and `/rewind`.
//!
//! What a turn changed is what differs between the checkpoint taken before its tools ran and
//! the one taken after (or, for a rewind, before and after it): hx's own work. Everything
//! else that changed between two checkpoints (between two messages, while no turn ran) may
//! be the user's, and a rewind never overwrites it without `--force`.

use std::collections::BTreeSet;

use crate::checkpoint::{Restored, Snap, Store};
use crate::session::{Checkpoint, CheckpointKind, CheckpointLine};

/// Why a rewind did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Paths hx's turns changed after the checkpoint that something else changed too (the
    /// user, between messages): overwriting them needs `--force`.
    Conflicts(Vec<String>),
    /// Anything else, in one line.
    Other(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Conflicts(paths) => write!(
                f,
                "{} changed outside hx's turns since then; a rewind would overwrite {}: {}",
                if paths.len() == 1 {
                    "1 file was".to_string()
                } else {
                    format!("{} files were", paths.len())
                },
                if paths.len() == 1 { "it" } else { "them" },
                paths.join(", ")
            ),
            Refused::Other(s) => f.write_str(s),
        }
    }
}

/// The snapshot a checkpoint line names.
pub fn snap(c: &CheckpointLine) -> Snap {
    Snap {
        commit: c.commit.clone(),
        tree: c.tree.clone(),
    }
}

/// Where checkpoint `n` is in the session's list; the error names the numbers there are.
pub fn find(checkpoints: &[Checkpoint], n: u32) -> Result<usize, String> {
    if let Some(i) = checkpoints.iter().position(|c| c.line.n == Some(n)) {
        return Ok(i);
    }
    let max = checkpoints.iter().filter_map(|c| c.line.n).max();
    Err(match max {
        None => "this session has no checkpoints".to_string(),
        Some(m) => format!("no checkpoint {n}: this session has checkpoints 1 to {m}"),
    })
}

/// The workspace now, as a checkpoint of `session` (not recorded).
pub async fn now(store: &Store, session: &str, checkpoints: &[Checkpoint]) -> Result<Snap, String> {
    let last = checkpoints.last().map(|c| snap(&c.line));
    store.snapshot(session, last.as_ref()).await.map(|(s, _)| s)
}

/// The paths changed from `checkpoints[from]` to `end` (the workspace now, or a later
/// checkpoint), split into those hx's turns changed and those something else changed.
async fn attribute(
    store: &Store,
    checkpoints: &[Checkpoint],
    from: usize,
    to: usize,
    end: &Snap,
) -> Result<(BTreeSet<String>, BTreeSet<String>), String> {
    let mut hx = BTreeSet::new();
    let mut other = BTreeSet::new();
    let mut trees: Vec<(&str, bool)> = checkpoints[from..to]
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let next_is_after = checkpoints
                .get(from + i + 1)
                .is_some_and(|n| n.line.what == CheckpointKind::After);
            (
                c.line.tree.as_str(),
                c.line.starts_hx_work() && next_is_after,
            )
        })
        .collect();
    trees.push((end.tree.as_str(), false));
    for pair in trees.windows(2) {
        let ((a, by_hx), (b, _)) = (pair[0], pair[1]);
        if a == b {
            continue;
        }
        let paths = store.changed(a, b).await?;
        if by_hx {
            hx.extend(paths);
        } else {
            other.extend(paths);
        }
    }
    Ok((hx, other))
}

/// What a rewind of the files did: the checkpoint of what it replaced, the one after it, and
/// the paths.
pub struct CodeRewound {
    pub safety: Snap,
    pub after: Snap,
    pub restored: Restored,
}

/// Gives the paths the session's turns changed after checkpoint `n` their content and mode at
/// `n` back (removing what they created, bringing back what they deleted), leaving every other
/// path alone. A path that was also changed outside the turns stops it unless `force`.
/// Before anything is written, the workspace is taken as a checkpoint (`safety`), which the
/// caller records, so the rewind can be undone. The run's commands (in `hx chat`) are
/// stopped throughout, so none changes a file, or swaps a folder for a link, while the rewind
/// looks and writes; `hx rewind` runs with no pod of its own and relies on the restore's
/// descriptors alone.
pub async fn rewind_code(
    store: &Store,
    session: &str,
    checkpoints: &[Checkpoint],
    n: u32,
    force: bool,
) -> Result<CodeRewound, Refused> {
    let at = find(checkpoints, n).map_err(Refused::Other)?;
    let target = snap(&checkpoints[at].line);
    let _still = crate::tools::editor::hold_still()
        .await
        .map_err(Refused::Other)?;
    let safety = now(store, session, checkpoints)
        .await
        .map_err(Refused::Other)?;
    let (hx, other) = attribute(store, checkpoints, at, checkpoints.len(), &safety)
        .await
        .map_err(Refused::Other)?;
    let conflicts: Vec<String> = hx.intersection(&other).cloned().collect();
    if !conflicts.is_empty() && !force {
        return Err(Refused::Conflicts(shown(store, &conflicts)));
    }
    // Only what differs from the target now: a path a turn changed and changed back is as
    // it was.
    let differs = store
        .differences(&target.tree, &safety.tree)
        .await
        .map_err(Refused::Other)?;
    let paths: Vec<String> = hx
        .iter()
        .filter(|p| differs.contains_key(p.as_str()))
        .cloned()
        .collect();
    let restored = store
        .restore(&differs, &paths)
        .await
        .map_err(Refused::Other)?;
    let (after, _) = store
        .snapshot(session, Some(&safety))
        .await
        .map_err(Refused::Other)?;
    Ok(CodeRewound {
        safety,
        after,
        restored,
    })
}

/// Paths as the user sees them: relative to the workspace.
pub fn shown(store: &Store, paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.strip_prefix(store.prefix()).unwrap_or(p).to_string())
        .collect()
}

/// The unified diff of what the session's turns changed: from its first checkpoint to now,
/// or (`turn`) from checkpoint `turn` to the next numbered one. Only paths a turn changed are
/// in it (as they are at its end: with what the user did to them since).
pub async fn diff(
    store: &Store,
    session: &str,
    checkpoints: &[Checkpoint],
    turn: Option<u32>,
    stat: bool,
) -> Result<Vec<u8>, String> {
    if checkpoints.is_empty() {
        return Ok(Vec::new());
    }
    let from = match turn {
        Some(n) => find(checkpoints, n)?,
        None => 0,
    };
    let next = turn.and_then(|_| {
        checkpoints[from + 1..]
            .iter()
            .position(|c| c.line.n.is_some())
            .map(|i| from + 1 + i)
    });
    let (to, end) = match next {
        Some(i) => (i, snap(&checkpoints[i].line)),
        None => (checkpoints.len(), now(store, session, checkpoints).await?),
    };
    let (hx, _) = attribute(store, checkpoints, from, to, &end).await?;
    let base = &checkpoints[from].line.tree;
    let paths: Vec<String> = hx.into_iter().collect();
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let top = store.tree_with(base, &end.tree, &paths).await?;
    store.diff(base, &top, stat).await
}

/// One line of `hx rewind`'s list: a numbered checkpoint and how many files differ from it
/// now.
pub struct Listed<'a> {
    pub line: &'a CheckpointLine,
    pub changed_since: usize,
}

/// The numbered checkpoints of a session, each with the files that differ from it now.
pub async fn list<'a>(
    store: &Store,
    session: &str,
    checkpoints: &'a [Checkpoint],
) -> Result<Vec<Listed<'a>>, String> {
    let now = now(store, session, checkpoints).await?;
    let mut out = Vec::new();
    for c in checkpoints.iter().filter(|c| c.line.n.is_some()) {
        let changed_since = store.changed(&c.line.tree, &now.tree).await?.len();
        out.push(Listed {
            line: &c.line,
            changed_since,
        });
    }
    Ok(out)
}

/// The checkpoint lines a code rewind to `n` adds to the session: the numbered one of what
/// it replaced (`next` is its number) and the one after it.
pub fn lines_of(r: &CodeRewound, n: u32, next: u32, at_message: usize) -> [CheckpointLine; 2] {
    let now = crate::session::store::now_rfc3339();
    [
        CheckpointLine {
            n: Some(next),
            what: CheckpointKind::Rewind,
            commit: r.safety.commit.clone(),
            tree: r.safety.tree.clone(),
            at_message,
            label: format!("before the rewind to {n}"),
            at: now.clone(),
        },
        CheckpointLine {
            n: None,
            what: CheckpointKind::After,
            commit: r.after.commit.clone(),
            tree: r.after.tree.clone(),
            at_message,
            label: String::new(),
            at: now,
        },
    ]
}

/// `3  2026-12-02 03:40:01  message  fix the bug   2 files changed since`.
pub fn listed_line(l: &Listed<'_>) -> String {
    let what = l.line.what.shown();
    let since = match l.changed_since {
        0 => "no change since".to_string(),
        1 => "1 file changed since".to_string(),
        k => format!("{k} files changed since"),
    };
    format!(
        "{:>3}  {}  {what:<14}  {:<50}  {since}",
        l.line.n.unwrap_or(0),
        l.line.at.replace('T', " ").trim_end_matches('Z'),
        crate::text::one_line(&l.line.label, 50)
    )
}
