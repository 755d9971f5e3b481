//! A bounded directory walk shared by discovery, resource listing and `check`.
//!
//! Skill folders live in user-controlled trees, so the walk must stay cheap and finite on
//! anything: depth and folder-count caps, `.git`, `node_modules` and hidden folders skipped,
//! and symlinked folders followed only once per real folder so a link loop cannot recurse.
//! With a bound, links whose real path leaves the bound are not followed, so a repository
//! cannot make the walk (and what it finds) reach the rest of the file system.

use std::collections::{HashSet, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

/// Deepest folder level entered below the walk's root (the root is level 0).
pub const MAX_DEPTH: usize = 6;
/// Most folders read per walk below its root (so a root can hold 2,000 skill folders).
pub const MAX_DIRS: usize = 2_000;
/// Most links out of the bound kept for reporting; the rest are only counted.
pub const MAX_ESCAPES_KEPT: usize = 20;

/// A file the walk accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The path as reached from the walk's root (through links as named).
    pub path: PathBuf,
    /// The real path of the folder holding it, every link resolved.
    pub real_dir: PathBuf,
}

/// A link the walk did not follow because its real path leaves the bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escape {
    pub link: PathBuf,
    pub target: PathBuf,
}

/// What a walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// Files the filter accepted, in visiting order (callers sort when order matters).
    pub files: Vec<Found>,
    /// True when [`MAX_DIRS`] stopped the walk before it was done.
    pub truncated: bool,
    /// Links out of the bound, sorted by path, at most [`MAX_ESCAPES_KEPT`].
    pub escapes: Vec<Escape>,
    /// How many links out of the bound there were in all.
    pub escapes_total: usize,
}

impl Walked {
    fn escaped(&mut self, link: PathBuf, target: PathBuf) {
        self.escapes_total += 1;
        self.escapes.push(Escape { link, target });
        self.escapes.sort_by(|a, b| a.link.cmp(&b.link));
        self.escapes.truncate(MAX_ESCAPES_KEPT);
    }
}

/// Walks `root` breadth-first. `want_file(path, name)` picks files; `enter_dir(path)` may veto
/// a folder (it is asked after the built-in skips). Unreadable folders are passed over: a
/// permission problem in one corner must not hide the rest. With `bound` (a real path), a
/// symlinked file or folder is taken only when its real path lies inside it; the others are
/// reported in [`Walked::escapes`]. A root that does not exist, or lies outside the bound,
/// gives nothing.
pub fn walk(
    root: &Path,
    bound: Option<&Path>,
    mut want_file: impl FnMut(&Path, &str) -> bool,
    mut enter_dir: impl FnMut(&Path) -> bool,
) -> Walked {
    let mut out = Walked::default();
    let Ok(root_real) = root.canonicalize() else {
        return out;
    };
    if bound.is_some_and(|b| !root_real.starts_with(b)) {
        // The root itself leads out (a folder checked earlier may have become a link since).
        return out;
    }
    let mut seen: HashSet<DirId> = HashSet::new();
    let root_id = followed_dir_id(root);
    if let Some(id) = root_id {
        seen.insert(id);
    }
    let root_dev = root_id.map_or(0, |id| dev_part(&id));
    // Each folder carries its real path: a plain entry's is its parent's plus its name, so
    // only links cost a `canonicalize`.
    let mut queue = VecDeque::from([(root.to_path_buf(), root_real, 0usize, root_dev)]);
    let mut dirs_read = 0usize;
    while let Some((dir, dir_real, depth, dev)) = queue.pop_front() {
        if dirs_read > MAX_DIRS {
            out.truncated = true;
            break;
        }
        dirs_read += 1;
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            let Some(name) = name.to_str() else {
                // Not UTF-8: no skill or resource name we could show the model anyway.
                continue;
            };
            let path = entry.path();
            let is_link = file_type.is_symlink();
            let (is_dir, is_file, id) = if is_link {
                match fs::metadata(&path) {
                    Ok(m) if m.is_dir() => (true, false, followed_dir_id(&path)),
                    Ok(m) => (false, m.is_file(), None),
                    Err(_) => continue, // dangling link
                }
            } else {
                (
                    file_type.is_dir(),
                    file_type.is_file(),
                    entry_dir_id(&entry, dev),
                )
            };
            if is_file {
                if !want_file(&path, name) {
                    continue;
                }
                if is_link {
                    if let Some(bound) = bound {
                        match path.canonicalize() {
                            Ok(real) if real.starts_with(bound) => {}
                            Ok(real) => {
                                out.escaped(path, real);
                                continue;
                            }
                            Err(_) => continue,
                        }
                    }
                }
                out.files.push(Found {
                    path,
                    real_dir: dir_real.clone(),
                });
            } else if is_dir {
                if depth + 1 > MAX_DEPTH || skip_dir_name(name) || !enter_dir(&path) {
                    continue;
                }
                let child_real = if is_link {
                    match path.canonicalize() {
                        Ok(real) if bound.is_some_and(|b| !real.starts_with(b)) => {
                            out.escaped(path, real);
                            continue;
                        }
                        Ok(real) => real,
                        Err(_) => continue,
                    }
                } else {
                    dir_real.join(name)
                };
                let child_dev = match id {
                    Some(id) if !seen.insert(id) => continue, // a loop or an alias
                    Some(id) => dev_part(&id),
                    None if is_link => continue, // cannot tell: do not follow
                    None => dev,
                };
                queue.push_back((path, child_real, depth + 1, child_dev));
            }
        }
    }
    out
}

/// Folders never walked: VCS data, dependency trees and hidden folders.
pub fn skip_dir_name(name: &str) -> bool {
    name.starts_with('.') || name == "node_modules"
}

/// A real folder's identity: (device, inode).
type DirId = (u64, u64);

#[cfg(unix)]
fn followed_dir_id(path: &Path) -> Option<DirId> {
    use std::os::unix::fs::MetadataExt;
    fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

fn dev_part(id: &DirId) -> u64 {
    id.0
}

#[cfg(unix)]
fn entry_dir_id(entry: &fs::DirEntry, parent_dev: u64) -> Option<DirId> {
    use std::os::unix::fs::DirEntryExt;
    // The inode comes with the directory entry and a plain folder is on its parent's device
    // (unless it is a mount point, where a wrong guess can at worst skip an aliased folder),
    // so plain folders cost no extra syscall.
    Some((parent_dev, entry.ino()))
}

#[cfg(not(unix))]
fn followed_dir_id(_path: &Path) -> Option<DirId> {
    None
}

#[cfg(not(unix))]
fn entry_dir_id(_entry: &fs::DirEntry, _parent_dev: u64) -> Option<DirId> {
    // Symlinked folders are not followed here (no cheap identity), so plain folders cannot
    // form a loop and need no tracking.
    None
}
