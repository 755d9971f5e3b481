//! What agent files' frontmatter was read as, kept between runs so that a project of hundreds
//! of agent files does not parse all of them at every start: 500 files of a public
//! collection's shape take about 10 ms to read and parse (most of them twice, since strict YAML
//! rejects an unquoted `when: ...` description), against about 1 ms to stat them.
//!
//! An entry is used only while its file's stat is what it was when the file was read: device,
//! inode, size, modification and change times. The change time moves with every write,
//! rename or `touch` and cannot be set back, so an edited file is always read again. As in
//! git's "racy clean" rule, a file changed in the last [`RACY_SECS`] seconds before it was read
//! is not kept: a second write in the same tick of the file system's clock could leave every
//! stamp as it was. The whole cache is dropped when hx's binary is another one (a parsing rule
//! may have changed) or the file is malformed or larger than [`MAX_CACHE_BYTES`].
//!
//! The cache also remembers what a run said about each file: a run says a file's notes (a
//! Claude model, a tool hx lacks) only when it read the file at a state no run had read it at
//! before, so a file that does not change is warned about once. A file read in its racy
//! window is kept too, marked unsettled: its definition is read again next time, but notes
//! that come out the same are not said again.
//!
//! The file is hx's own (`$XDG_CACHE_HOME/hx/agent-files.json`), written atomically and only
//! when a run read a file it did not hold; what it holds is checked against the same bounds as
//! a parsed file, so a damaged cache can cost a re-read, never a wrong or oversized definition.
//! It can be deleted at any time. Hand-written because it is a few stat fields and a JSON
//! file: no crate of its own is worth a dependency.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::Definition;
use crate::skills::{Source, MAX_DESCRIPTION_CHARS};

/// The cache file's name in hx's cache folder.
pub const FILE_NAME: &str = "agent-files.json";
/// Largest cache file read; a larger one is dropped (and rewritten smaller).
pub const MAX_CACHE_BYTES: u64 = 8 * 1024 * 1024;
/// Most entries kept: this run's first, then the newest of other projects'.
pub const MAX_ENTRIES: usize = 4 * super::MAX_FILES;
/// A file changed this recently (by the clock when discovery starts) is read but not kept.
pub const RACY_SECS: u64 = 2;
/// Bumped when an entry's shape or meaning changes.
const FORMAT: u32 = 2;
/// Most notes, and tool names, a kept definition may have; longest note.
const MAX_NOTES: usize = 64;
const MAX_TOOLS: usize = 256;
const MAX_NOTE_CHARS: usize = 1_000;

/// What a file's stat said when it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    /// The stamp of the regular file at `path` (links followed, as the read follows them);
    /// `None` for anything else, which is never cached.
    pub fn of(path: &Path) -> Option<Stamp> {
        let m = std::fs::metadata(path).ok()?;
        m.is_file().then(|| Stamp {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        })
    }

    /// Whether the file last changed at least [`RACY_SECS`] before `now`.
    fn settled(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(UNIX_EPOCH) else {
            return false;
        };
        let latest = self.mtime.0.max(self.ctime.0);
        latest >= 0 && (latest as u64).saturating_add(RACY_SECS) < now.as_secs()
    }
}

/// A definition without what its root gives it (source, `within`) or its path (the key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    name: String,
    description: String,
    tools: Option<Vec<String>>,
    model: Option<String>,
    notes: Vec<String>,
}

impl Kept {
    fn of(def: &Definition) -> Kept {
        Kept {
            name: def.name.clone(),
            description: def.description.clone(),
            tools: def.tools.clone(),
            model: def.model.clone(),
            notes: def.notes.clone(),
        }
    }

    /// Within the bounds a parsed definition keeps; a cache is a file on disk too.
    fn in_bounds(&self) -> bool {
        let chars = |s: &str| s.chars().count();
        super::check_name(&self.name).is_ok()
            && chars(&self.description) <= MAX_DESCRIPTION_CHARS
            && self.notes.len() <= MAX_NOTES
            && self.notes.iter().all(|n| chars(n) <= MAX_NOTE_CHARS)
            && self.tools.as_ref().is_none_or(|t| {
                t.len() <= MAX_TOOLS && t.iter().all(|n| chars(n) <= MAX_NOTE_CHARS)
            })
            && self
                .model
                .as_ref()
                .is_none_or(|m| chars(m) <= MAX_NOTE_CHARS)
    }
}

/// One file's entry: what reading it gave, a definition or the reason it could not be used.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    path: String,
    stamp: Stamp,
    read: Result<Kept, String>,
    /// Read at least [`RACY_SECS`] after the file last changed: its definition can be used.
    /// An unsettled entry only says which notes were said already.
    settled: bool,
}

#[derive(Serialize, Deserialize)]
struct OnDisk {
    format: u32,
    /// hx's binary, as [`binary`] gives it.
    binary: String,
    entries: Vec<Entry>,
}

/// The cache as one discovery uses it: loaded at its start, saved at its end.
#[derive(Debug, Default)]
pub struct Cache {
    path: Option<PathBuf>,
    binary: String,
    /// Path → index in `entries`.
    by_path: HashMap<String, usize>,
    entries: Vec<Entry>,
    now: Option<SystemTime>,
}

/// What one file gave: its result, and the entry to keep when it was read (not found kept).
pub struct Looked {
    pub read: Result<Definition, String>,
    /// An earlier run said the file's notes, at the state it has now.
    pub notes_said: bool,
    fresh: Option<Entry>,
}

impl Looked {
    /// A file whose reading failed before the cache was asked (a reader thread's panic).
    pub fn failed(reason: String) -> Looked {
        Looked {
            read: Err(reason),
            notes_said: false,
            fresh: None,
        }
    }
}

impl Cache {
    /// The cache at `path` (empty when it cannot be used), for a discovery whose clock reads
    /// `now`. [`Cache::default`] is no cache: every file is read, nothing is saved.
    pub fn load(path: &Path, now: SystemTime) -> Cache {
        let mut cache = Cache {
            path: Some(path.to_path_buf()),
            binary: binary(),
            now: Some(now),
            ..Cache::default()
        };
        let Ok(Some(bytes)) = crate::paths::read_regular(path, MAX_CACHE_BYTES) else {
            return cache;
        };
        let Ok(disk) = serde_json::from_slice::<OnDisk>(&bytes) else {
            return cache;
        };
        if disk.format != FORMAT || disk.binary != cache.binary {
            return cache;
        }
        for e in disk.entries.into_iter().take(MAX_ENTRIES) {
            let ok = match &e.read {
                Ok(kept) => kept.in_bounds(),
                Err(reason) => reason.chars().count() <= MAX_NOTE_CHARS,
            };
            if ok && !cache.by_path.contains_key(&e.path) {
                cache.by_path.insert(e.path.clone(), cache.entries.len());
                cache.entries.push(e);
            }
        }
        cache
    }

    /// The definition of the file at `path` under a root of `source`: the kept one while the
    /// file's stamp is unchanged, else `read`'s (kept for next time if the file has settled).
    pub fn look(
        &self,
        path: &Path,
        source: Source,
        read: impl FnOnce() -> Result<Definition, String>,
    ) -> Looked {
        let key = path.to_str();
        let stamp = key.and(self.now).and_then(|_| Stamp::of(path));
        let mut before = None;
        if let (Some(key), Some(stamp)) = (key, stamp) {
            if let Some(e) = self.by_path.get(key).map(|&i| &self.entries[i]) {
                if e.stamp == stamp && !e.settled {
                    before = Some(&e.read);
                } else if e.stamp == stamp {
                    return Looked {
                        read: e.read.clone().map(|k| Definition {
                            name: k.name,
                            source,
                            path: path.to_path_buf(),
                            within: None,
                            description: k.description,
                            tools: k.tools,
                            model: k.model,
                            notes: k.notes,
                        }),
                        notes_said: true,
                        fresh: None,
                    };
                }
            }
        }
        let result = read();
        // Read again within the racy window of a state an earlier run read: the notes were
        // said then, unless a write in the same tick changed them.
        let notes_said = match (before, &result) {
            (Some(Ok(kept)), Ok(def)) => kept.notes == def.notes,
            _ => false,
        };
        let fresh = match (key, stamp, self.now) {
            (Some(key), Some(stamp), Some(now)) => Some(Entry {
                path: key.to_string(),
                stamp,
                read: result.as_ref().map(Kept::of).map_err(Clone::clone),
                settled: stamp.settled(now),
            }),
            _ => None,
        };
        Looked {
            read: result,
            notes_said,
            fresh,
        }
    }

    /// Writes the cache back when `looked` read a file it did not hold: this discovery's
    /// entries first, then the others it held, up to [`MAX_ENTRIES`]. Best effort: a cache
    /// that cannot be written costs the next run a re-read, which is not worth a warning.
    pub fn save(&self, paths: &[&Path], looked: &[Looked]) {
        let Some(file) = &self.path else {
            return;
        };
        if looked.iter().all(|l| l.fresh.is_none()) {
            return;
        }
        let mut entries: Vec<Entry> = Vec::new();
        let mut taken = std::collections::HashSet::new();
        for (path, l) in paths.iter().zip(looked) {
            let entry = match &l.fresh {
                Some(e) => Some(e.clone()),
                None => path
                    .to_str()
                    .and_then(|k| self.by_path.get(k))
                    .map(|&i| self.entries[i].clone()),
            };
            if let Some(e) = entry {
                if taken.insert(e.path.clone()) {
                    entries.push(e);
                }
            }
        }
        for e in &self.entries {
            if entries.len() >= MAX_ENTRIES {
                break;
            }
            if !taken.contains(&e.path) {
                entries.push(e.clone());
            }
        }
        entries.truncate(MAX_ENTRIES);
        let disk = OnDisk {
            format: FORMAT,
            binary: self.binary.clone(),
            entries,
        };
        if let Ok(bytes) = serde_json::to_vec(&disk) {
            if bytes.len() as u64 <= MAX_CACHE_BYTES {
                let _ = crate::paths::write_atomic(file, &bytes);
            }
        }
    }
}

/// hx's own binary, by version and the stat of the executable: a rebuilt or upgraded hx
/// may read files differently, so it starts from an empty cache.
fn binary() -> String {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| std::fs::metadata(p).ok());
    match exe {
        Some(m) => format!(
            "{} {} {} {}.{}",
            env!("CARGO_PKG_VERSION"),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ),
        None => format!("{} unknown", env!("CARGO_PKG_VERSION")),
    }
}

#[cfg(test)]
mod tests;
