//! The last checkpoint's tree, held in memory while a run goes on, so that a checkpoint
//! after a turn can take just the files inotify named (`watch`) and write their blobs, the
//! trees above them, the commit and the ref itself (`objects`), with no git process.
//!
//! A look (`snapshot::look`, git's walk) is still what a run's first checkpoint does, and
//! what any checkpoint does when the watches cannot say which files changed: a folder made,
//! moved or removed, an ignore file changed, the event queue overflowed. Those make the next
//! checkpoint look again; everything else a turn does to files is named by its events.
//!
//! A file the last tree does not have is taken unless an ignore rule matches it: the
//! `.gitignore` of its folder and of each above it up to the work tree's top (the nearest
//! that decides wins, as in git), then `info/exclude`, then the global excludes file. Its
//! folders are watched, so no rule ignores them.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::ignores::{Ignores, Rules};
use super::index::FileStat;
use super::objects::{hex, parse_hex, tree_bytes, Objects, Oid, Sink, TreeEntry};

const TREE: u32 = 0o040000;

#[derive(Debug, Default)]
struct Dir {
    entries: Entries,
    /// The tree's name while nothing below changed.
    oid: Option<Oid>,
}

/// Past this many entries a folder's are kept in a `BTreeMap`, below it in a sorted vector.
const FEW: usize = 32;

/// A folder's entries by name, in byte order. Most folders hold a few: a sorted vector
/// takes some 80 bytes an entry, where a `BTreeMap`'s first node takes some 800 whatever it
/// holds (a tree of 2,000 folders of one file each held 1.6 MB of nodes, issue 33). A
/// folder of many entries, where a vector's inserts would shift thousands, gets the map.
#[derive(Debug)]
enum Entries {
    Few(Vec<(Vec<u8>, Node)>),
    Many(BTreeMap<Vec<u8>, Node>),
}

impl Default for Entries {
    fn default() -> Entries {
        Entries::Few(Vec::new())
    }
}

impl Entries {
    fn get(&self, name: &[u8]) -> Option<&Node> {
        match self {
            Entries::Few(v) => {
                let i = v.binary_search_by(|(n, _)| n.as_slice().cmp(name)).ok()?;
                Some(&v[i].1)
            }
            Entries::Many(m) => m.get(name),
        }
    }

    fn get_mut(&mut self, name: &[u8]) -> Option<&mut Node> {
        match self {
            Entries::Few(v) => {
                let i = v.binary_search_by(|(n, _)| n.as_slice().cmp(name)).ok()?;
                Some(&mut v[i].1)
            }
            Entries::Many(m) => m.get_mut(name),
        }
    }

    fn contains_key(&self, name: &[u8]) -> bool {
        self.get(name).is_some()
    }

    fn insert(&mut self, name: Vec<u8>, node: Node) {
        match self {
            Entries::Few(v) => match v.binary_search_by(|(n, _)| n.as_slice().cmp(&name)) {
                Ok(i) => v[i].1 = node,
                Err(_) if v.len() >= FEW => {
                    let mut m: BTreeMap<Vec<u8>, Node> = std::mem::take(v).into_iter().collect();
                    m.insert(name, node);
                    *self = Entries::Many(m);
                }
                Err(i) => v.insert(i, (name, node)),
            },
            Entries::Many(m) => {
                m.insert(name, node);
            }
        }
    }

    fn remove(&mut self, name: &[u8]) -> Option<Node> {
        match self {
            Entries::Few(v) => {
                let i = v.binary_search_by(|(n, _)| n.as_slice().cmp(name)).ok()?;
                Some(v.remove(i).1)
            }
            Entries::Many(m) => m.remove(name),
        }
    }

    fn len(&self) -> usize {
        match self {
            Entries::Few(v) => v.len(),
            Entries::Many(m) => m.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each entry in byte order.
    fn iter_mut(&mut self) -> Box<dyn Iterator<Item = (&Vec<u8>, &mut Node)> + '_> {
        match self {
            Entries::Few(v) => Box::new(v.iter_mut().map(|(n, node)| (&*n, node))),
            Entries::Many(m) => Box::new(m.iter_mut()),
        }
    }
}

#[derive(Debug)]
enum Node {
    File { mode: u32, oid: Oid },
    Dir(Dir),
}

/// A change that cannot be taken here (a folder where a file was, a file that cannot be
/// read or stored): the caller looks instead, and git says what is wrong.
#[derive(Debug)]
pub struct Look;

/// What taking the changed files skipped, for the run's warnings.
#[derive(Debug, Default)]
pub struct Skipped {
    pub too_big: Vec<String>,
    pub too_many: Vec<String>,
    pub unreadable: Vec<String>,
}

/// What a file on disk is to a checkpoint.
pub(super) enum OnDisk {
    Gone,
    /// Its mode and content, and the stat data of what was read (of the open file; of the
    /// link itself).
    Kept {
        mode: u32,
        bytes: Vec<u8>,
        meta: FileStat,
    },
    TooBig,
    Unreadable,
}

#[derive(Debug)]
pub struct Live {
    root: Dir,
    files: usize,
    /// The tree `root` is.
    pub tree: String,
    /// The ignore files, read when first needed.
    ignores: Ignores,
    /// Whether each folder asked about holds a repository of its own (`.git`).
    nested: HashMap<Vec<u8>, bool>,
}

impl Live {
    /// No file yet: what a store's first look fills.
    pub fn empty() -> Live {
        Live {
            root: Dir::default(),
            files: 0,
            tree: String::new(),
            ignores: Ignores::default(),
            nested: HashMap::new(),
        }
    }

    /// Puts the file `path` (relative to the top) in as the blob `oid`; `Look` where a
    /// folder of that name is.
    pub fn insert(&mut self, path: &[u8], mode: u32, oid: Oid) -> Result<(), Look> {
        let known = self.has(path);
        let name = path_name(path).to_vec();
        let dir = self.folder(path, true, true).ok_or(Look)?;
        if let Some(Node::Dir(_)) = dir.entries.get(&name) {
            return Err(Look);
        }
        dir.entries.insert(name, Node::File { mode, oid });
        if !known {
            self.files += 1;
        }
        Ok(())
    }

    /// The tree `tree` read from the store's loose objects (those a look just wrote); none
    /// when one of its trees is not loose, or there are more than `max` entries.
    pub fn from_objects(tree: &str, objects: &Objects, max: usize) -> Option<Live> {
        fn fill(
            dir: &mut Dir,
            oid: &Oid,
            objects: &Objects,
            files: &mut usize,
            max: usize,
        ) -> Option<()> {
            let (kind, bytes) = objects.read(oid).ok()??;
            if kind != "tree" {
                return None;
            }
            dir.oid = Some(*oid);
            for e in super::objects::parse_tree(&bytes).ok()? {
                if e.is_tree() {
                    let mut sub = Dir::default();
                    fill(&mut sub, &e.oid, objects, files, max)?;
                    dir.entries.insert(e.name, Node::Dir(sub));
                } else {
                    *files += 1;
                    if *files > max {
                        return None;
                    }
                    dir.entries.insert(
                        e.name,
                        Node::File {
                            mode: e.mode,
                            oid: e.oid,
                        },
                    );
                }
            }
            Some(())
        }
        let oid = parse_hex(tree)?;
        let mut root = Dir::default();
        let mut files = 0;
        fill(&mut root, &oid, objects, &mut files, max)?;
        Some(Live {
            root,
            files,
            tree: tree.to_string(),
            ignores: Ignores::default(),
            nested: HashMap::new(),
        })
    }

    /// The tree `tree` from git's listing of it (`ls-tree -r -t -z`: each tree before what
    /// it holds); none when the listing is not one, or there are more than `max` files.
    pub fn from_listing(tree: &str, listing: &[u8], max: usize) -> Option<Live> {
        let mut live = Live {
            root: Dir {
                entries: Entries::default(),
                oid: Some(parse_hex(tree)?),
            },
            files: 0,
            tree: tree.to_string(),
            ignores: Ignores::default(),
            nested: HashMap::new(),
        };
        for item in listing.split(|&b| b == 0).filter(|i| !i.is_empty()) {
            let tab = item.iter().position(|&b| b == b'\t')?;
            let (head, path) = (&item[..tab], &item[tab + 1..]);
            let mut fields = std::str::from_utf8(head).ok()?.split(' ');
            let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
            let kind = fields.next()?;
            let oid = parse_hex(fields.next()?)?;
            let name = path_name(path).to_vec();
            let node = match kind {
                "tree" => Node::Dir(Dir {
                    entries: Entries::default(),
                    oid: Some(oid),
                }),
                "blob" => {
                    live.files += 1;
                    if live.files > max {
                        return None;
                    }
                    Node::File { mode, oid }
                }
                // A submodule: not what a checkpoint takes.
                _ => return None,
            };
            let dir = live.folder(path, false, false)?;
            dir.entries.insert(name, node);
        }
        Some(live)
    }

    /// The folder holding `path`, its folders made when `make`; the trees on the way
    /// forgotten when `touch` (something in them is about to change).
    fn folder(&mut self, path: &[u8], make: bool, touch: bool) -> Option<&mut Dir> {
        let mut dir = &mut self.root;
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        let (_, folders) = parts.split_last()?;
        if touch {
            dir.oid = None;
        }
        for part in folders {
            if make && !dir.entries.contains_key(part) {
                dir.entries.insert(part.to_vec(), Node::Dir(Dir::default()));
            }
            dir = match dir.entries.get_mut(part) {
                Some(Node::Dir(d)) => d,
                _ => return None,
            };
            if touch {
                dir.oid = None;
            }
        }
        Some(dir)
    }

    fn has(&self, path: &[u8]) -> bool {
        let mut dir = &self.root;
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        let Some((name, folders)) = parts.split_last() else {
            return false;
        };
        for part in folders {
            dir = match dir.entries.get(part) {
                Some(Node::Dir(d)) => d,
                _ => return false,
            };
        }
        matches!(dir.entries.get(name), Some(Node::File { .. }))
    }

    /// Drops `path`, and the folders it leaves empty.
    fn remove(&mut self, path: &[u8]) {
        fn go(dir: &mut Dir, parts: &[&[u8]]) -> bool {
            let Some((first, rest)) = parts.split_first() else {
                return false;
            };
            let removed = if rest.is_empty() {
                matches!(dir.entries.get(first), Some(Node::File { .. }))
                    && dir.entries.remove(first).is_some()
            } else {
                let Some(Node::Dir(sub)) = dir.entries.get_mut(first) else {
                    return false;
                };
                let removed = go(sub, rest);
                if removed && sub.entries.is_empty() {
                    dir.entries.remove(first);
                }
                removed
            };
            if removed {
                dir.oid = None;
            }
            removed
        }
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        if go(&mut self.root, &parts) {
            self.files -= 1;
        }
    }

    /// Forgets what was read of the ignore files and of which folders are repositories: a
    /// look comes after any change to them (the watches say so), and may find the same tree.
    pub fn forget_rules(&mut self) {
        self.ignores.clear();
        self.nested.clear();
    }

    /// Whether `path` is in a folder below the top that is a repository of its own, whose
    /// git keeps it (a look leaves those folders out).
    fn in_nested(&mut self, top: &Path, path: &[u8]) -> bool {
        let parts: Vec<&[u8]> = path.split(|&b| b == b'/').collect();
        (1..parts.len()).any(|depth| {
            let folder = parts[..depth].join(&b'/');
            *self.nested.entry(folder.clone()).or_insert_with(|| {
                std::fs::symlink_metadata(top.join(OsStr::from_bytes(&folder)).join(".git")).is_ok()
            })
        })
    }

    /// Takes the files `paths` (relative to `top`, each in the workspace) as they are on
    /// disk now: their blobs written, gone ones dropped. `Look` when one cannot be taken so.
    pub fn take(
        &mut self,
        top: &Path,
        paths: &[Vec<u8>],
        objects: &Objects,
        rules: &Rules,
        settings: &super::Settings,
    ) -> Result<Skipped, Look> {
        let mut skipped = Skipped::default();
        for path in paths {
            if path
                .split(|&b| b == b'/')
                .any(|c| c == b".git" || c.is_empty())
            {
                continue;
            }
            let rel = String::from_utf8_lossy(path).into_owned();
            let known = self.has(path);
            let full = top.join(OsStr::from_bytes(path));
            match on_disk(&full, settings.max_file_bytes)? {
                OnDisk::Gone => self.remove(path),
                OnDisk::TooBig => {
                    self.remove(path);
                    skipped.too_big.push(rel);
                }
                OnDisk::Unreadable => {
                    self.remove(path);
                    skipped.unreadable.push(rel);
                }
                OnDisk::Kept { mode, bytes, .. } => {
                    if !known {
                        let ignored = self.ignores.ignored(top, path, false, rules);
                        // A rule git may read otherwise: git's look decides.
                        if self.ignores.doubtful() {
                            return Err(Look);
                        }
                        if ignored || self.in_nested(top, path) {
                            continue;
                        }
                        if self.files >= settings.max_files {
                            skipped.too_many.push(rel);
                            continue;
                        }
                    }
                    let oid = objects.write("blob", &bytes).map_err(|_| Look)?;
                    self.insert(path, mode, oid)?;
                }
            }
        }
        Ok(skipped)
    }

    /// Writes the trees that changed and gives the top one's name.
    pub fn write(&mut self, objects: &dyn Sink) -> std::io::Result<String> {
        fn go(dir: &mut Dir, objects: &dyn Sink) -> std::io::Result<Oid> {
            if let Some(oid) = dir.oid {
                return Ok(oid);
            }
            let mut entries = Vec::with_capacity(dir.entries.len());
            for (name, node) in dir.entries.iter_mut() {
                let (mode, oid) = match node {
                    Node::File { mode, oid } => (*mode, *oid),
                    Node::Dir(d) => (TREE, go(d, objects)?),
                };
                entries.push(TreeEntry {
                    mode,
                    name: name.clone(),
                    oid,
                });
            }
            let oid = objects.put("tree", &tree_bytes(&mut entries))?;
            dir.oid = Some(oid);
            Ok(oid)
        }
        let oid = go(&mut self.root, objects)?;
        self.tree = hex(&oid);
        Ok(self.tree.clone())
    }
}

fn path_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// The file at `full` as a checkpoint takes it: links as links, regular files by content
/// (executable or not), anything else as gone.
pub(super) fn on_disk(full: &Path, max_bytes: u64) -> Result<OnDisk, Look> {
    use std::os::unix::fs::OpenOptionsExt;
    let meta = match std::fs::symlink_metadata(full) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(OnDisk::Gone),
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => return Ok(OnDisk::Gone),
        Err(_) => return Err(Look),
    };
    let t = meta.file_type();
    if t.is_dir() {
        return Err(Look);
    }
    if t.is_symlink() {
        return match std::fs::read_link(full) {
            Ok(target) => Ok(OnDisk::Kept {
                mode: 0o120000,
                bytes: target.as_os_str().as_bytes().to_vec(),
                meta: FileStat::from(&meta),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(OnDisk::Gone),
            Err(_) => Err(Look),
        };
    }
    if !t.is_file() {
        // FIFOs, sockets, devices: not files to keep.
        return Ok(OnDisk::Gone);
    }
    if meta.len() > max_bytes {
        return Ok(OnDisk::TooBig);
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(full)
    {
        Ok(f) => read_opened(f.into(), max_bytes),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Ok(OnDisk::Unreadable),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(OnDisk::Gone),
        // Swapped for a link or a folder since the stat: look again.
        Err(_) => Err(Look),
    }
}

/// The file `name` of the open `folder`, listed as `kind` (a file or a link), as
/// [`on_disk`] takes it: for a walk that has the folder open, a name looked up in it rather
/// than a path walked from `/` twice (issue 33: a first look's reads of 2,000 files were a
/// third of it, half of that in path lookups).
pub(super) fn on_disk_at(
    folder: std::os::fd::BorrowedFd<'_>,
    name: &std::ffi::CStr,
    kind: super::listings::Kind,
    max_bytes: u64,
) -> Result<OnDisk, Look> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    use rustix::io::Errno;
    match kind {
        super::listings::Kind::Link => {
            let meta = match rustix::fs::statat(folder, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(m) => FileStat::from(&m),
                Err(Errno::NOENT) => return Ok(OnDisk::Gone),
                Err(_) => return Err(Look),
            };
            if !meta.is_symlink() {
                return Err(Look);
            }
            match rustix::fs::readlinkat(folder, name, Vec::new()) {
                Ok(target) => Ok(OnDisk::Kept {
                    mode: 0o120000,
                    bytes: target.into_bytes(),
                    meta,
                }),
                Err(Errno::NOENT) => Ok(OnDisk::Gone),
                Err(_) => Err(Look),
            }
        }
        super::listings::Kind::File => {
            let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
            match rustix::fs::openat(folder, name, flags, Mode::empty()) {
                Ok(fd) => read_opened(fd, max_bytes),
                Err(Errno::ACCESS | Errno::PERM) => Ok(OnDisk::Unreadable),
                Err(Errno::NOENT) => Ok(OnDisk::Gone),
                // Swapped for a link or a folder since the listing: look again.
                Err(_) => Err(Look),
            }
        }
        _ => Err(Look),
    }
}

/// An opened file as a checkpoint takes it: its mode and stat data from the open file (not
/// what the path was a moment before), and its bytes, as many as its stat says, as git
/// reads a file it stores (a file still being written is taken as it was at the stat, and
/// its next change is an event).
fn read_opened(file: std::os::fd::OwnedFd, max_bytes: u64) -> Result<OnDisk, Look> {
    let meta = rustix::fs::fstat(&file)
        .map(|m| FileStat::from(&m))
        .map_err(|_| Look)?;
    // A folder put where the file was: what it holds is for a look to find.
    if meta.is_dir() {
        return Err(Look);
    }
    if !meta.is_file() {
        return Ok(OnDisk::Gone);
    }
    if meta.size > max_bytes {
        return Ok(OnDisk::TooBig);
    }
    let mut bytes = vec![0u8; usize::try_from(meta.size).map_err(|_| Look)?];
    let mut filled = 0;
    while filled < bytes.len() {
        match rustix::io::read(&file, &mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Err(Look),
        }
    }
    bytes.truncate(filled);
    let mode = if meta.mode & 0o100 != 0 {
        0o100755
    } else {
        0o100644
    };
    Ok(OnDisk::Kept { mode, bytes, meta })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder's entries answer as a `BTreeMap` would, below `FEW` entries and past it:
    /// the same lookups, removals and order, whatever order the names came in.
    #[test]
    fn entries_answer_as_a_map_would_few_or_many() {
        for count in [0, 1, 5, FEW - 1, FEW, FEW + 1, 200] {
            let mut entries = Entries::default();
            let mut map = BTreeMap::new();
            // Names in a scrambled order, some of them twice.
            for i in (0..count * 2).map(|i| (i * 7919) % (count + 1)) {
                let name = format!("n{i}").into_bytes();
                let oid = [u8::try_from(i % 256).expect("byte"); 20];
                entries.insert(
                    name.clone(),
                    Node::File {
                        mode: 0o100644,
                        oid,
                    },
                );
                map.insert(name, oid);
            }
            let gone = b"n3".to_vec();
            assert_eq!(entries.remove(&gone).is_some(), map.remove(&gone).is_some());
            assert_eq!(entries.len(), map.len());
            assert_eq!(entries.is_empty(), map.is_empty());
            assert!(!entries.contains_key(b"n3") && !entries.contains_key(b"none"));
            let listed: Vec<(Vec<u8>, Oid)> = entries
                .iter_mut()
                .map(|(n, node)| match node {
                    Node::File { oid, .. } => (n.clone(), *oid),
                    Node::Dir(_) => panic!("a folder"),
                })
                .collect();
            let expected: Vec<(Vec<u8>, Oid)> = map.into_iter().collect();
            assert_eq!(listed, expected, "{count} names");
            for (name, oid) in &expected {
                assert!(matches!(entries.get(name), Some(Node::File { oid: o, .. }) if o == oid));
                assert!(entries.get_mut(name).is_some());
            }
        }
    }
}
