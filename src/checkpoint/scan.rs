//! A look made in-process: one walk of the workspace that sets the watches as it goes and
//! finds the files git would list as untracked and not ignored, then a stat of each file of
//! the store's index against what git recorded of it (`index`). What it finds is the few
//! files that may differ from the index's tree, which `live` takes as it takes a turn's; a
//! run whose files did not change since the last look starts no git process at all (issue
//! 33: a run's first look was five git processes, most of what checkpoints still cost).
//!
//! Anything it cannot be sure of is a look by git instead ([`Scanned::Look`]): no index, or
//! one this reader does not know; a folder that cannot be read; a `.git` in a folder that is
//! neither a repository folder nor a `gitdir:` file; more changed files than
//! [`MAX_CHANGED`]. The ignore rules are the same in-process ones a turn's new files are
//! checked against (`ignores`).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::ignores::{Ignores, Rules};
use super::index::{same_content, stat, Index, Stat};
use super::watch::MAX_FOLDERS;

/// Files that may have changed, at most, for the walk to take them itself: beyond it, git's
/// look (which also brings the index up to date, so the next run's walk finds fewer).
pub const MAX_CHANGED: usize = 1_000;
/// Bytes of racily clean files read to tell whether they changed, at most: past it, they
/// count as changed.
const MAX_RACY_BYTES: u64 = 64 * 1024 * 1024;

/// What the walk found.
#[derive(Debug, PartialEq, Eq)]
pub enum Scanned {
    /// These files (relative to the top) may differ from the index's tree (none: it is the
    /// workspace's tree); whether racily clean entries had to be read to tell.
    Changed(Vec<Vec<u8>>, bool),
    /// Only git's look can tell.
    Look,
}

/// What is given each folder to watch (relative to the top); `false`: watching stops.
pub type Add<'a> = &'a dyn Fn(&Path, Vec<u8>) -> bool;

/// Where to walk.
pub struct Scan<'a> {
    /// The work tree's top.
    pub top: &'a Path,
    /// The workspace below the top, `/`-terminated (empty: the top).
    pub prefix: &'a [u8],
    pub rules: Rules<'a>,
    /// `checkpoints.max_files`.
    pub max_files: usize,
    /// Files found changed past which only git's look is sure ([`MAX_CHANGED`]; a first
    /// look, which takes every file, `max_files`).
    pub max_changed: usize,
}

/// Something only git's look can tell.
struct Unsure;

impl Scan<'_> {
    /// Walks the workspace: `add` is given each folder that counts (to watch it, before its
    /// files are listed, so that nothing after is missed) and may refuse it (`false`: stop
    /// watching); `index` (none: only the watches are wanted) is what the files are held
    /// against. Whether the watches were all set, and what was found.
    pub fn walk(
        &self,
        index: Option<&Index>,
        ignores: &mut Ignores,
        add: Option<Add<'_>>,
    ) -> (bool, Scanned) {
        let tracked: HashSet<&[u8]> = index
            .map(|i| {
                i.entries
                    .iter()
                    .map(|e| e.path.as_slice())
                    .filter(|p| p.starts_with(self.prefix))
                    .collect()
            })
            .unwrap_or_default();
        // Every folder holding a file of the index: walked even when a rule ignores it now,
        // since git keeps looking at the files it already has.
        let mut holding: HashSet<&[u8]> = HashSet::new();
        for p in &tracked {
            let mut end = p.len();
            while let Some(slash) = p[..end].iter().rposition(|&b| b == b'/') {
                if !holding.insert(&p[..slash]) {
                    break;
                }
                end = slash;
            }
        }
        let mut found = Vec::new();
        let mut watching = add.is_some();
        let mut sure = index.is_some();
        let root_rel = self
            .prefix
            .strip_suffix(b"/")
            .unwrap_or(self.prefix)
            .to_vec();
        // A workspace in a folder its repository ignores: git lists nothing new in it.
        let root_ignored =
            !root_rel.is_empty() && ignores.ignored(self.top, &root_rel, true, &self.rules);
        let mut stack = vec![(
            self.top.join(OsStr::from_bytes(&root_rel)),
            root_rel,
            root_ignored,
        )];
        let mut folders = 0usize;
        while let Some((dir, rel, in_ignored)) = stack.pop() {
            folders += 1;
            if watching && folders + stack.len() > MAX_FOLDERS {
                watching = false;
            }
            if watching {
                if let Some(add) = add {
                    watching = add(&dir, rel.clone());
                }
            }
            if !watching && !sure {
                break;
            }
            let listed = self.list(
                &dir, &rel, in_ignored, &tracked, &holding, ignores, &mut stack, &mut found,
            );
            if listed.is_err() || found.len() > self.max_changed {
                sure = false;
                if !watching {
                    break;
                }
            }
        }
        // Past `max_files`, git keeps the first new files in its order, not the walk's; and
        // a rule the `ignore` crate may read otherwise than git is git's to apply.
        let within = |i: &Index| i.entries.len() + found.len() <= self.max_files;
        let Some(index) = index.filter(|i| sure && within(i) && !ignores.doubtful()) else {
            return (watching, Scanned::Look);
        };
        let mut racy_bytes = 0u64;
        let mut racy = false;
        for e in index
            .entries
            .iter()
            .filter(|e| e.path.starts_with(self.prefix))
        {
            let full = self.top.join(OsStr::from_bytes(&e.path));
            let meta = std::fs::symlink_metadata(&full);
            let same = match meta.as_ref().map(|m| (stat(e, m, index.mtime), m.len())) {
                Ok((Stat::Same, _)) => true,
                // Files written in the second the index was (a run right after the one that
                // made it): read and named, as git would, within a bound.
                Ok((Stat::Racy, len)) if racy_bytes + len <= MAX_RACY_BYTES => {
                    racy = true;
                    racy_bytes += len;
                    same_content(e, &full, len)
                }
                _ => false,
            };
            if !same {
                found.push(e.path.clone());
                if found.len() > self.max_changed {
                    return (watching, Scanned::Look);
                }
            }
        }
        (watching, Scanned::Changed(found, racy))
    }

    /// Lists one folder: its folders that count onto `stack`, its files that git would list
    /// as untracked into `found`.
    #[allow(clippy::too_many_arguments)]
    fn list(
        &self,
        dir: &Path,
        rel: &[u8],
        in_ignored: bool,
        tracked: &HashSet<&[u8]>,
        holding: &HashSet<&[u8]>,
        ignores: &mut Ignores,
        stack: &mut Vec<(PathBuf, Vec<u8>, bool)>,
        found: &mut Vec<Vec<u8>>,
    ) -> Result<(), Unsure> {
        let entries: Vec<std::fs::DirEntry> = std::fs::read_dir(dir)
            .map_err(|_| Unsure)?
            .collect::<Result<_, _>>()
            .map_err(|_| Unsure)?;
        // Anything unsure still lists the folders below, for their watches.
        let mut unsure = false;
        if !entries.iter().any(|e| e.file_name() == ".gitignore") {
            ignores.none_in(rel);
        }
        // A folder below the top with a repository of its own: its git keeps its files (a
        // look leaves them out, as `live` does), unless git has files of it already.
        if !rel.is_empty() && entries.iter().any(|e| e.file_name() == ".git") {
            if is_repository(&dir.join(".git")) && !holding.contains(rel) {
                return Ok(());
            }
            unsure = true;
        }
        for e in entries {
            let name = e.file_name();
            if name == ".git" {
                continue;
            }
            let mut child = rel.to_vec();
            if !child.is_empty() {
                child.push(b'/');
            }
            child.extend_from_slice(name.as_bytes());
            // The type from the listing: a link to a folder is a link.
            let Ok(t) = e.file_type() else {
                unsure = true;
                continue;
            };
            if t.is_dir() {
                let ignored = in_ignored || ignores.ignored(self.top, &child, true, &self.rules);
                if !ignored || holding.contains(child.as_slice()) {
                    stack.push((e.path(), child, ignored));
                }
            } else if t.is_file() || t.is_symlink() {
                if tracked.contains(child.as_slice())
                    || in_ignored
                    || ignores.ignored(self.top, &child, false, &self.rules)
                {
                    continue;
                }
                found.push(child);
            }
            // FIFOs, sockets, devices: not files to keep.
        }
        if unsure {
            Err(Unsure)
        } else {
            Ok(())
        }
    }
}

/// Whether `dot` (a `.git` found below the top) surely makes its folder a repository, as
/// git decides it: a folder (or the folder a `gitdir:` file names) with a `HEAD` that names
/// a ref or a commit, and `objects` and `refs` of its own or in the folder its `commondir`
/// names. What git might judge otherwise is left to git.
fn is_repository(dot: &Path) -> bool {
    fn git_dir(d: &Path) -> bool {
        let head = std::fs::read(d.join("HEAD")).unwrap_or_default();
        let head_ok = head.starts_with(b"ref: refs/")
            || (head.len() >= 40 && head[..40].iter().all(u8::is_ascii_hexdigit));
        let common = match std::fs::read_to_string(d.join("commondir")) {
            Ok(c) => d.join(c.trim_end()),
            Err(_) => d.to_path_buf(),
        };
        head_ok && common.join("objects").is_dir() && common.join("refs").is_dir()
    }
    match std::fs::symlink_metadata(dot) {
        Ok(m) if m.is_dir() => git_dir(dot),
        Ok(m) if m.is_file() && m.len() < 4096 => {
            let Ok(text) = std::fs::read_to_string(dot) else {
                return false;
            };
            let Some(target) = text.lines().next().and_then(|l| l.strip_prefix("gitdir: ")) else {
                return false;
            };
            let folder = dot.parent().unwrap_or(Path::new("/"));
            git_dir(&folder.join(target.trim_end()))
        }
        _ => false,
    }
}

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
