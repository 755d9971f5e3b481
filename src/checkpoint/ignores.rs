//! The ignore rules a checkpoint follows, as git applies them, read in-process for the
//! checks hx makes without git (`live`, `scan`): the `.gitignore` of a path's folder and of
//! each above it up to the work tree's top (the nearest that decides wins), then
//! `info/exclude`, then the global excludes file; and a path in an ignored folder is
//! ignored, whatever a rule says of it.
//!
//! The `ignore` crate matches as git does but in a few things, and a file that has one of
//! them makes the answers doubtful ([`Ignores::doubtful`]), so that the caller asks git: a
//! `.gitignore` that is a link (git does not follow it), a pattern with a brace (globset
//! reads `{a,b}` as a choice, git as the characters), a line that is not UTF-8 (the crate
//! skips it, git applies it), a file over [`MAX_IGNORE_BYTES`].

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use foldhash::HashMap;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// Bytes of one ignore file read at most; a larger one is git's to apply.
const MAX_IGNORE_BYTES: u64 = 1024 * 1024;

/// What the ignore rules outside the work tree's folders are.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub exclude: Option<&'a Path>,
    pub global: Option<&'a Path>,
}

/// The ignore files read so far, each when first needed.
#[derive(Debug, Default)]
pub struct Ignores {
    /// Each folder's `.gitignore` (none: it has none).
    folders: HashMap<Vec<u8>, Option<Gitignore>>,
    /// `info/exclude` and the global excludes file.
    outer: Option<Vec<Gitignore>>,
    /// Whether each folder asked about is ignored, itself or through a folder above.
    ignored_folders: HashMap<Vec<u8>, bool>,
    /// An ignore file this reader may read otherwise than git was met.
    doubtful: bool,
}

impl Ignores {
    /// Forgets what was read: the files may have changed since.
    pub fn clear(&mut self) {
        *self = Ignores::default();
    }

    /// Whether an ignore file read so far may be read otherwise by git: the answers given
    /// are then not to be trusted.
    pub fn doubtful(&self) -> bool {
        self.doubtful
    }

    /// Tells that `folder` (relative to the top) has no `.gitignore`, as its listing just
    /// showed: the walk lists every folder, and a stat of each one's `.gitignore` by its
    /// full path was a fifth of the walk in a workspace of 2,000 folders.
    pub fn none_in(&mut self, folder: &[u8]) {
        self.folders.entry(folder.to_vec()).or_insert(None);
    }

    /// Whether the rules ignore `path` (relative to `top`; a folder when `is_dir`): it, or
    /// a folder it is in.
    pub fn ignored(&mut self, top: &Path, path: &[u8], is_dir: bool, rules: &Rules) -> bool {
        if let Some(slash) = path.iter().rposition(|&b| b == b'/') {
            if self.folder_ignored(top, &path[..slash], rules) {
                return true;
            }
        }
        self.matched(top, path, is_dir, rules)
    }

    /// Whether the folder `folder` is ignored, itself or through one above it.
    fn folder_ignored(&mut self, top: &Path, folder: &[u8], rules: &Rules) -> bool {
        if let Some(known) = self.ignored_folders.get(folder) {
            return *known;
        }
        let above = match folder.iter().rposition(|&b| b == b'/') {
            Some(slash) => self.folder_ignored(top, &folder[..slash], rules),
            None => false,
        };
        let ignored = above || self.matched(top, folder, true, rules);
        self.ignored_folders.insert(folder.to_vec(), ignored);
        ignored
    }

    /// Whether the rules match `path` itself.
    fn matched(&mut self, top: &Path, path: &[u8], is_dir: bool, rules: &Rules) -> bool {
        let full = top.join(OsStr::from_bytes(path));
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        // The folders from the path's own up to the top, nearest first.
        for depth in (0..parts.len()).rev() {
            let folder = parts[..depth].join(&b'/');
            if !self.folders.contains_key(&folder) {
                let dir = top.join(OsStr::from_bytes(&folder));
                let read = read_rules(&dir, &dir.join(".gitignore"), false);
                self.doubtful |= read.is_err();
                self.folders.insert(folder.clone(), read.ok().flatten());
            }
            if let Some(Some(gi)) = self.folders.get(&folder) {
                let m = gi.matched(&full, is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
        }
        if self.outer.is_none() {
            let mut outer = Vec::new();
            for file in [rules.exclude, rules.global].into_iter().flatten() {
                match read_rules(top, file, true) {
                    Ok(Some(gi)) => outer.push(gi),
                    Ok(None) => {}
                    Err(Doubt) => self.doubtful = true,
                }
            }
            self.outer = Some(outer);
        }
        for gi in self.outer.iter().flatten() {
            let m = gi.matched(&full, is_dir);
            if m.is_ignore() {
                return true;
            }
            if m.is_whitelist() {
                return false;
            }
        }
        false
    }
}

/// A rule file git may read otherwise than the `ignore` crate.
struct Doubt;

/// The rules of `file` (none: there is none), matched from `root`; a link is followed only
/// when `follow` (git reads `info/exclude` and the global file through links, not a
/// `.gitignore` in the tree).
fn read_rules(root: &Path, file: &Path, follow: bool) -> Result<Option<Gitignore>, Doubt> {
    let meta = if follow {
        std::fs::metadata(file)
    } else {
        std::fs::symlink_metadata(file)
    };
    let meta = match meta {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(_) => return Err(Doubt),
    };
    if meta.file_type().is_symlink() || !meta.is_file() || meta.len() > MAX_IGNORE_BYTES {
        return Err(Doubt);
    }
    let bytes = std::fs::read(file).map_err(|_| Doubt)?;
    let text = String::from_utf8(bytes).map_err(|_| Doubt)?;
    let mut b = GitignoreBuilder::new(root);
    for (i, line) in text.lines().enumerate() {
        // A byte-order mark before the first line is not part of it, for git either.
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        if !line.starts_with('#') && line.contains('{') {
            return Err(Doubt);
        }
        if b.add_line(Some(file.to_path_buf()), line).is_err() {
            return Err(Doubt);
        }
    }
    b.build().map(Some).map_err(|_| Doubt)
}
