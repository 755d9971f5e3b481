//! The ignore rules a checkpoint follows, as git applies them, read in-process for the
//! checks hx makes without git (`live`, `scan`): the `.gitignore` of a path's folder and of
//! each above it up to the work tree's top (the nearest that decides wins), then
//! `info/exclude`, then the global excludes file.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use ignore::gitignore::{Gitignore, GitignoreBuilder};

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
}

impl Ignores {
    /// Forgets what was read: the files may have changed since.
    pub fn clear(&mut self) {
        self.folders.clear();
        self.outer = None;
    }

    /// Whether the rules ignore `path` (relative to `top`; a folder when `is_dir`). Only the
    /// path itself is matched: the caller knows its folders are not ignored.
    pub fn ignored(&mut self, top: &Path, path: &[u8], is_dir: bool, rules: &Rules) -> bool {
        let full = top.join(OsStr::from_bytes(path));
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        // The folders from the path's own up to the top, nearest first.
        for depth in (0..parts.len()).rev() {
            let folder = parts[..depth].join(&b'/');
            let gi = self.folders.entry(folder).or_insert_with_key(|folder| {
                let file = top.join(OsStr::from_bytes(folder)).join(".gitignore");
                file.is_file().then(|| Gitignore::new(&file).0)
            });
            if let Some(gi) = gi {
                let m = gi.matched(&full, is_dir);
                if m.is_ignore() {
                    return true;
                }
                if m.is_whitelist() {
                    return false;
                }
            }
        }
        let outer = self.outer.get_or_insert_with(|| {
            [rules.exclude, rules.global]
                .into_iter()
                .flatten()
                .filter_map(|file| {
                    let mut b = GitignoreBuilder::new(top);
                    b.add(file);
                    b.build().ok()
                })
                .collect()
        });
        for gi in outer.iter() {
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
