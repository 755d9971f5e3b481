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
//! checked against (`ignores`). A folder whose stat is the one the last look kept its listing
//! with is not listed again (`listings`).

use std::ffi::{CStr, CString, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use foldhash::{HashMap, HashSet, HashSetExt};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::ignores::{Ignores, Rules};
use super::index::{same_content, stat, Entry, FileStat, Index, Stat};
use super::listings::{Key, Kind, Listing, Listings};
use super::watch::MAX_FOLDERS;
use crate::sandbox::gitdirs::{HeldFolder, HeldFolders};

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
pub type Add<'a> = &'a (dyn Fn(&Path, Vec<u8>) -> bool + Sync);

/// What a store's first look does with each file the walk finds (none for other looks):
/// given the open folder, the file's name in it, its kind as listed and its path relative
/// to the top, it reads and stores the file there, by the walker that listed it (two files
/// at once, each opened by its name in its folder rather than by a path from `/`); `Err`:
/// only git's look can be sure.
pub type Take<'a> = &'a (dyn Fn(BorrowedFd<'_>, &CStr, Kind, &[u8]) -> Result<(), ()> + Sync);

/// Entries of a kept leaf folder, at most, for its files to be stat'ed from the folder above
/// it rather than from the folder opened (see [`Scan::list`]): each of those stats looks up
/// one name more, so past a few files the open and close it spares are spent again. (The look
/// of a 10,000-file repository of 100-file folders, `cargo bench --bench checkpoints`, did not
/// move beyond its noise either way.)
const MAX_LEAF_ENTRIES: usize = 8;

/// Bytes of folder entries read by one `getdents64`: a folder of 2,000 skill folders in
/// four calls, most folders in one.
const DENTS_BYTES: usize = 32 * 1024;

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
    /// What folders held when a look last listed them, taken for those unchanged since,
    /// and given what this walk lists (`listings`).
    pub listings: &'a Listings,
    /// A first look's reader of each file found ([`Take`]).
    pub take: Option<Take<'a>>,
}

/// Something only git's look can tell.
struct Unsure;

/// A walk shared by its walkers.
struct Walk<'i> {
    /// The index the files are held against, and which of its entries a walker held.
    index: Option<&'i Index>,
    held: Vec<AtomicBool>,
    /// Bytes of racily clean files read so far, and whether any was.
    racy_bytes: AtomicU64,
    racy: AtomicBool,
    queue: Mutex<Queue>,
    /// Told when folders come into the queue, or the walk ends.
    more: Condvar,
    /// Walkers waiting for folders: changed under the queue's lock, read without it.
    waiting: AtomicUsize,
    /// Folders given to the walk so far: taken, or still to list.
    known: AtomicUsize,
    watching: AtomicBool,
    sure: AtomicBool,
    /// Folders held open for those below them.
    open_folders: HeldFolders,
    /// Files found so far, by every walker.
    found: AtomicUsize,
    ignores: Mutex<&'i mut Ignores>,
}

/// A folder to list.
struct Folder {
    /// Its full path, to watch it by (and for what is still read by path).
    path: PathBuf,
    /// Its path relative to the top.
    rel: Vec<u8>,
    /// Whether a rule ignores it.
    ignored: bool,
    /// The open folder above it and its name there, when that one is held: one name to
    /// look up, not the path from `/`.
    parent: Option<(Arc<HeldFolder>, CString)>,
}

/// Where a folder's files are stat'ed: the folder itself, opened; or, when it was not (see
/// [`Scan::list`]), the folder above it, by the folder's name and theirs.
enum Through<'f> {
    Open(OwnedFd),
    Above(BorrowedFd<'f>, &'f CStr),
}

impl Through<'_> {
    /// The stat of `name`, an entry of the folder, not following a link.
    fn stat(&self, name: &[u8]) -> Option<FileStat> {
        let st = match self {
            Through::Open(fd) => {
                let name = CString::new(name).ok()?;
                rustix::fs::statat(fd, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
            }
            Through::Above(fd, dir) => {
                let mut path = Vec::with_capacity(dir.to_bytes().len() + 1 + name.len());
                path.extend_from_slice(dir.to_bytes());
                path.push(b'/');
                path.extend_from_slice(name);
                let path = CString::new(path).ok()?;
                rustix::fs::statat(*fd, path.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
            }
        };
        st.ok().map(|s| FileStat::from(&s))
    }
}

/// The folders a walker gave up for the others to list. Each walker lists the folders it
/// found itself, and gives some up only when another waits, so that most folders cost no
/// lock and no wake-up.
struct Queue {
    folders: Vec<Folder>,
    /// The walkers there are: when every one waits for folders, the walk is over.
    walkers: usize,
    stop: bool,
}

impl Walk<'_> {
    fn queue(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Ends the walk for every walker.
    fn end(&self) {
        self.queue().stop = true;
        self.more.notify_all();
    }

    /// Whether the file of `e`, whose stat is `meta`, surely has what the index recorded:
    /// by its stat data, or, when the index was written in the second the file changed
    /// (racily clean), by its content at `full`, read within [`MAX_RACY_BYTES`] for the
    /// whole walk.
    fn unchanged(&self, e: &Entry, meta: Option<FileStat>, full: impl FnOnce() -> PathBuf) -> bool {
        let Some(index) = self.index else {
            return false;
        };
        match meta.as_ref().map(|m| (stat(e, m, index.mtime), m.size)) {
            Some((Stat::Same, _)) => true,
            // Files written in the second the index was (a run right after the one that
            // made it): read and named, as git would, within a bound.
            Some((Stat::Racy, len))
                if self.racy_bytes.fetch_add(len, Ordering::Relaxed) + len <= MAX_RACY_BYTES =>
            {
                self.racy.store(true, Ordering::Relaxed);
                same_content(e, &full(), len)
            }
            _ => false,
        }
    }
}

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
        // Each file of the index (in the workspace) by its path: where it is in the index.
        let tracked: HashMap<&[u8], usize> = index
            .map(|i| {
                i.entries
                    .iter()
                    .enumerate()
                    .map(|(n, e)| (e.path.as_slice(), n))
                    .filter(|(p, _)| p.starts_with(self.prefix))
                    .collect()
            })
            .unwrap_or_default();
        // Every folder holding a file of the index: walked even when a rule ignores it now,
        // since git keeps looking at the files it already has.
        let mut holding: HashSet<&[u8]> = HashSet::new();
        for p in tracked.keys() {
            let mut end = p.len();
            while let Some(slash) = p[..end].iter().rposition(|&b| b == b'/') {
                if !holding.insert(&p[..slash]) {
                    break;
                }
                end = slash;
            }
        }
        let root_rel = self
            .prefix
            .strip_suffix(b"/")
            .unwrap_or(self.prefix)
            .to_vec();
        // A workspace in a folder its repository ignores: git lists nothing new in it.
        let root_ignored =
            !root_rel.is_empty() && ignores.ignored(self.top, &root_rel, true, &self.rules);
        let walk = Walk {
            index,
            held: index
                .map(|i| i.entries.iter().map(|_| AtomicBool::new(false)).collect())
                .unwrap_or_default(),
            racy_bytes: AtomicU64::new(0),
            racy: AtomicBool::new(false),
            queue: Mutex::new(Queue {
                folders: vec![Folder {
                    path: self.top.join(OsStr::from_bytes(&root_rel)),
                    rel: root_rel,
                    ignored: root_ignored,
                    parent: None,
                }],
                walkers: 2,
                stop: false,
            }),
            more: Condvar::new(),
            waiting: AtomicUsize::new(0),
            known: AtomicUsize::new(1),
            watching: AtomicBool::new(add.is_some()),
            sure: AtomicBool::new(index.is_some()),
            open_folders: HeldFolders::new(),
            found: AtomicUsize::new(0),
            ignores: Mutex::new(ignores),
        };
        // Two walkers, one for each core: a workspace's first checkpoint comes before its
        // first tool runs, and the walk (a listing and a watch per folder) was most of what
        // checkpoints still cost a run in a workspace of 2,000 folders (issue 33).
        let found = std::thread::scope(|scope| {
            let other = std::thread::Builder::new()
                .name("hx-scan".into())
                .spawn_scoped(scope, || self.walker(&walk, add, &tracked, &holding));
            if other.is_err() {
                walk.queue().walkers = 1;
            }
            let mut found = self.walker(&walk, add, &tracked, &holding);
            match other.map(|h| h.join()) {
                Ok(Ok(theirs)) => {
                    found.0.extend(theirs.0);
                    found.1.extend(theirs.1);
                }
                // One that panicked: what it found is lost, so only git can be sure, and
                // the folders it held were not all watched.
                Ok(Err(_)) => {
                    walk.sure.store(false, Ordering::Relaxed);
                    walk.watching.store(false, Ordering::Relaxed);
                }
                // No second thread: this one walked alone.
                Err(_) => {}
            }
            found
        });
        let (mut found, changed) = found;
        let doubtful = walk
            .ignores
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .doubtful();
        let watching = walk.watching.load(Ordering::Relaxed);
        let sure = walk.sure.load(Ordering::Relaxed);
        // Past `max_files`, git keeps the first new files in its order, not the walk's; and
        // a rule the `ignore` crate may read otherwise than git is git's to apply.
        let within = |i: &Index| i.entries.len() + found.len() <= self.max_files;
        let Some(index) = index.filter(|i| sure && within(i) && !doubtful) else {
            return (watching, Scanned::Look);
        };
        found.extend(changed);
        // The files of the index no listing held (gone, or no longer files): every watch is
        // set, so a file that changes after its stat below is an event.
        let rest: Vec<&Entry> = index
            .entries
            .iter()
            .zip(&walk.held)
            .filter(|(e, held)| e.path.starts_with(self.prefix) && !held.load(Ordering::Relaxed))
            .map(|(e, _)| e)
            .collect();
        for e in rest {
            let full = self.top.join(OsStr::from_bytes(&e.path));
            let meta = std::fs::symlink_metadata(&full).ok();
            if !walk.unchanged(e, meta.as_ref().map(FileStat::from), || full.clone()) {
                found.push(e.path.clone());
            }
        }
        if found.len() > self.max_changed {
            return (watching, Scanned::Look);
        }
        (
            watching,
            Scanned::Changed(found, walk.racy.load(Ordering::Relaxed)),
        )
    }

    /// One walker: lists the folders it finds, and those others give up, each watched
    /// before it is listed, until every walker waits for folders; the files it found that
    /// git would list as untracked, and those of the index that may have changed.
    fn walker(
        &self,
        walk: &Walk<'_>,
        add: Option<Add<'_>>,
        tracked: &HashMap<&[u8], usize>,
        holding: &HashSet<&[u8]>,
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let mut kept = Kept {
            dents: vec![MaybeUninit::uninit(); DENTS_BYTES],
            ..Kept::default()
        };
        let found = self.walk_folders(walk, add, tracked, holding, &mut kept);
        self.listings.keep(kept.records, kept.taken);
        found
    }

    /// The walker's folders, one after the other (see [`Scan::walker`]); the listings it
    /// made or took go into `kept`.
    fn walk_folders(
        &self,
        walk: &Walk<'_>,
        add: Option<Add<'_>>,
        tracked: &HashMap<&[u8], usize>,
        holding: &HashSet<&[u8]>,
        kept: &mut Kept,
    ) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        // A walker that panics ends the walk, so that the other does not wait for it.
        struct Leaving<'a, 'i>(&'a Walk<'i>);
        impl Drop for Leaving<'_, '_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.end();
                }
            }
        }
        let _leaving = Leaving(walk);
        let mut found = (Vec::new(), Vec::new());
        let mut mine: Vec<Folder> = Vec::new();
        loop {
            let folder = match mine.pop() {
                Some(next) => next,
                None => {
                    let mut q = walk.queue();
                    loop {
                        if q.stop {
                            return found;
                        }
                        if let Some(next) = q.folders.pop() {
                            break next;
                        }
                        if walk.waiting.fetch_add(1, Ordering::Relaxed) + 1 == q.walkers {
                            q.stop = true;
                            walk.more.notify_all();
                            return found;
                        }
                        q = walk.more.wait(q).unwrap_or_else(|p| p.into_inner());
                        walk.waiting.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            };
            if walk.known.load(Ordering::Relaxed) > MAX_FOLDERS {
                walk.watching.store(false, Ordering::Relaxed);
            }
            if walk.watching.load(Ordering::Relaxed) {
                if let Some(add) = add {
                    if !add(&folder.path, folder.rel.clone()) {
                        walk.watching.store(false, Ordering::Relaxed);
                    }
                }
            }
            let watching = walk.watching.load(Ordering::Relaxed);
            if !watching && !walk.sure.load(Ordering::Relaxed) {
                walk.end();
                return found;
            }
            let before = found.0.len() + found.1.len();
            let mut below = Vec::new();
            let listed = self.list(walk, folder, tracked, holding, &mut below, &mut found, kept);
            let now = found.0.len() + found.1.len() - before;
            let total = walk.found.fetch_add(now, Ordering::Relaxed) + now;
            if listed.is_err() || total > self.max_changed {
                walk.sure.store(false, Ordering::Relaxed);
                if !watching {
                    walk.end();
                    return found;
                }
            }
            walk.known.fetch_add(below.len(), Ordering::Relaxed);
            mine.append(&mut below);
            // Another walker waits: it takes the folders found first (nearest the top, with
            // the most below them), and this one goes on with the rest.
            if walk.waiting.load(Ordering::Relaxed) > 0 && mine.len() > 1 {
                let half = mine.len() / 2;
                let mut q = walk.queue();
                q.folders.extend(mine.drain(..half));
                walk.more.notify_all();
            }
        }
    }

    /// Lists one folder: its folders that count onto `stack`; into `found`, its files that
    /// git would list as untracked, then those of the index that may have changed. The
    /// folder is watched before it is listed, so a file that changes after its stat here is
    /// an event. It is opened once, in the folder above it when that one is held, and its
    /// stat, its listing and its files' stats (and a first look's reads) go through that
    /// descriptor: a name looked up in the folder, not a path walked from `/` each time (a
    /// racily clean file's content is still read by path). A folder whose stat is the one
    /// its kept listing was made with is not listed again: the listing is taken
    /// (`listings`); and one that held no folders then, and few files ([`MAX_LEAF_ENTRIES`]),
    /// none of which a first look reads, is not opened at all: it and its files are stat'ed
    /// from the folder above it (issue 33: the open, stat and close of each of 2,000
    /// unchanged folders was a fifth of a second run's look).
    #[allow(clippy::too_many_arguments)]
    fn list(
        &self,
        walk: &Walk<'_>,
        folder: Folder,
        tracked: &HashMap<&[u8], usize>,
        holding: &HashSet<&[u8]>,
        stack: &mut Vec<Folder>,
        (found, changed): &mut (Vec<Vec<u8>>, Vec<Vec<u8>>),
        kept: &mut Kept,
    ) -> Result<(), Unsure> {
        let Folder {
            path: dir,
            rel,
            ignored: in_ignored,
            parent,
        } = folder;
        let rel = rel.as_slice();
        // A kept leaf: stat'ed where it is listed, and taken when that stat is the one it
        // was kept with (after its watch was set, as an opened folder's is).
        let leaf = parent
            .as_ref()
            .filter(|_| self.take.is_none() && self.listings.small_leaf(rel, MAX_LEAF_ENTRIES))
            .and_then(|(above, name)| {
                let st = rustix::fs::statat(&above.fd, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .ok()?;
                let key = Key::of(&FileStat::from(&st));
                let listing = self.listings.get(rel, &key)?;
                Some((
                    Through::Above(above.fd.as_fd(), name.as_c_str()),
                    key,
                    listing,
                ))
            });
        let (through, key, taken) = match leaf {
            Some((through, key, listing)) => (through, Some(key), Some(listing)),
            None => {
                let folder = self.open(&dir, rel, parent.as_ref())?;
                // The folder's stat before its listing: one kept with a later stat could
                // miss what changed in between.
                let key = rustix::fs::fstat(&folder)
                    .ok()
                    .map(|s| Key::of(&FileStat::from(&s)));
                let taken = key.as_ref().and_then(|key| self.listings.get(rel, key));
                (Through::Open(folder), key, taken)
            }
        };
        // Anything unsure still lists the folders below, for their watches.
        let mut unsure = false;
        let listing: Listing = match (taken, &through) {
            (Some(listing), _) => {
                kept.taken += 1;
                listing
            }
            (None, Through::Open(folder)) => {
                let mut listing = Vec::new();
                let mut entries = rustix::fs::RawDir::new(folder, &mut kept.dents);
                while let Some(e) = entries.next() {
                    let e = e.map_err(|_| Unsure)?;
                    let name = e.file_name().to_bytes();
                    // glibc's readdir (git's) passes over entries without an inode.
                    if name == b"." || name == b".." || e.ino() == 0 {
                        continue;
                    }
                    // The type from the listing (a link to a folder is a link), or from a
                    // stat of the name where the file system does not say.
                    let kind = match e.file_type() {
                        FileType::Unknown => {
                            match rustix::fs::statat(
                                folder,
                                e.file_name(),
                                AtFlags::SYMLINK_NOFOLLOW,
                            ) {
                                Ok(st) => Kind::of_mode(FileStat::from(&st).mode),
                                Err(_) => {
                                    unsure = true;
                                    continue;
                                }
                            }
                        }
                        t => Kind::of_mode(t.as_raw_mode()),
                    };
                    listing.push((Box::from(name), kind));
                }
                Listing::from(listing)
            }
            // A leaf is one whose listing was taken.
            (None, Through::Above(..)) => return Err(Unsure),
        };
        if let (Some(key), false) = (key, unsure) {
            kept.records.push((rel.to_vec(), key, listing.clone()));
        }
        let mut to_hold = Vec::new();
        let mut to_take = Vec::new();
        {
            let mut ignores = walk.ignores.lock().unwrap_or_else(|p| p.into_inner());
            if !listing.iter().any(|(n, _)| &**n == b".gitignore") {
                ignores.none_in(rel);
            }
            // A folder below the top with a repository of its own: its git keeps its files
            // (a look leaves them out, as `live` does), unless git has files of it already.
            if !rel.is_empty() && listing.iter().any(|(n, _)| &**n == b".git") {
                if is_repository(&dir.join(".git")) && !holding.contains(rel) {
                    return Ok(());
                }
                unsure = true;
            }
            for (i, (name, kind)) in listing.iter().enumerate() {
                if &**name == b".git" {
                    continue;
                }
                let mut child = rel.to_vec();
                if !child.is_empty() {
                    child.push(b'/');
                }
                child.extend_from_slice(name);
                match kind {
                    Kind::Dir => {
                        let ignored =
                            in_ignored || ignores.ignored(self.top, &child, true, &self.rules);
                        if !ignored || holding.contains(child.as_slice()) {
                            stack.push(Folder {
                                path: dir.join(OsStr::from_bytes(name)),
                                rel: child,
                                ignored,
                                parent: None,
                            });
                        }
                    }
                    Kind::File | Kind::Link => {
                        if let Some(&n) = tracked.get(child.as_slice()) {
                            to_hold.push((n, i, child));
                        } else if !in_ignored
                            && !ignores.ignored(self.top, &child, false, &self.rules)
                        {
                            if self.take.is_some() {
                                to_take.push((i, child.clone()));
                            }
                            found.push(child);
                        }
                    }
                    // FIFOs, sockets, devices: not files to keep.
                    Kind::Other => {}
                }
            }
            // A rule git may read otherwise makes the look git's (see `walk`): a first look
            // reads no more files for nothing.
            if self.take.is_some() && ignores.doubtful() {
                walk.sure.store(false, Ordering::Relaxed);
            }
        }
        // Outside the rules' lock: the other walker goes on with its folder meanwhile.
        if let Some(index) = walk.index {
            for (n, i, child) in to_hold {
                walk.held[n].store(true, Ordering::Relaxed);
                let meta = through.stat(&listing[i].0);
                let full = || dir.join(OsStr::from_bytes(&listing[i].0));
                if !walk.unchanged(&index.entries[n], meta, full) {
                    changed.push(child);
                }
            }
        }
        if let (Some(take), Through::Open(folder)) = (self.take.filter(|_| !unsure), &through) {
            // Past the bound, or with anything git's look must decide, the look is git's:
            // what is left is not worth reading.
            for (i, child) in to_take {
                if !walk.sure.load(Ordering::Relaxed) {
                    break;
                }
                let taken = CString::new(&*listing[i].0)
                    .map_err(|_| ())
                    .and_then(|c| take(folder.as_fd(), c.as_c_str(), listing[i].1, &child));
                if taken.is_err() {
                    unsure = true;
                    break;
                }
            }
        }
        // The folders below are opened in this one, while few enough are held.
        if let (false, Through::Open(folder)) = (stack.is_empty(), through) {
            if let Some(held) = walk.open_folders.hold(folder) {
                for below in stack.iter_mut() {
                    let name = below.rel.rsplit(|&b| b == b'/').next().unwrap_or_default();
                    below.parent = CString::new(name).ok().map(|c| (held.clone(), c));
                }
            }
        }
        if unsure {
            Err(Unsure)
        } else {
            Ok(())
        }
    }

    /// Opens the folder at `dir` (`rel` below the top): in the folder above it when that one
    /// is held, else by its path. Past the walk's first folder, a folder is one its parent
    /// listed as a folder: a link put in its place since is not followed (the parent's
    /// watch has the change for the next look).
    fn open(
        &self,
        dir: &Path,
        rel: &[u8],
        parent: Option<&(Arc<HeldFolder>, CString)>,
    ) -> Result<OwnedFd, Unsure> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let opened = match parent {
            Some((above, name)) => rustix::fs::openat(
                &above.fd,
                name.as_c_str(),
                flags | OFlags::NOFOLLOW,
                Mode::empty(),
            ),
            None if rel == self.prefix.strip_suffix(b"/").unwrap_or(self.prefix) => {
                rustix::fs::open(dir, flags, Mode::empty())
            }
            None => rustix::fs::open(dir, flags | OFlags::NOFOLLOW, Mode::empty()),
        };
        opened.map_err(|_| Unsure)
    }
}

/// The listings a walker made or took, for [`Listings::keep`], and its buffer for them.
#[derive(Default)]
struct Kept {
    records: Vec<(Vec<u8>, Key, Listing)>,
    taken: usize,
    dents: Vec<MaybeUninit<u8>>,
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
