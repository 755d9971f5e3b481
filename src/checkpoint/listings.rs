//! What each folder held when a look last listed it, kept in the store beside the index
//! (`folders`), so that a run's look lists only the folders that changed since: an entry
//! cannot be added, removed or renamed without the folder's change time moving, so a folder
//! whose stat is the one recorded holds what was recorded. A stat of a folder costs a
//! fraction of its open, listing and close (issue 33: in a workspace of 2,000 folders the
//! listings were most of a run's first look, after the watches).
//!
//! git's untracked cache does the like for `git status`, but keeps what the ignore rules
//! made of each folder, so it must also watch the rules. This keeps the raw listing (names
//! and kinds), and the rules are applied anew at every look, whatever changed.
//!
//! A folder is recorded only when its change time is [`SETTLED`] older than the look: a
//! change in the same tick of the filesystem's clock as the stat could leave the time as it
//! was. A change time of zero (a filesystem that keeps none) is never trusted.
//!
//! The file is hx's own, but a file on disk all the same: it is read within
//! [`MAX_BYTES`], and anything in it that does not parse makes it empty, not an error.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use foldhash::{HashMap, HashMapExt};

use super::index::FileStat;

/// The file's name in the store.
pub const FILE: &str = "folders";
/// Bytes of the file read or written at most: 2,000 folders of one file take about 210 KB.
/// Past it, the folders left out are listed at the next look.
const MAX_BYTES: usize = 32 * 1024 * 1024;
/// How much older than the look a folder's change time must be for its listing to be kept:
/// well past the tick of any local filesystem's clock (FAT's is two seconds).
pub const SETTLED: Duration = Duration::from_secs(3);
const HEADER: &[u8] = b"hx folders 1\n";

/// A folder's stat as far as its entries go: the same file (device and inode), and its
/// change and modification times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    dev: u64,
    ino: u64,
    ctime: (i64, i64),
    mtime: (i64, i64),
}

impl Key {
    pub fn of(meta: &FileStat) -> Key {
        Key {
            dev: meta.dev,
            ino: meta.ino,
            ctime: meta.ctime,
            mtime: meta.mtime,
        }
    }

    /// Whether a listing made after this stat may be kept: the change time is older than
    /// `settled` (nanoseconds since the epoch), and not zero.
    fn settled(&self, settled: i128) -> bool {
        let ctime = i128::from(self.ctime.0) * 1_000_000_000 + i128::from(self.ctime.1);
        self.ctime != (0, 0) && ctime < settled
    }
}

/// What an entry of a folder is, as its listing says (a link is a link).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Link,
    Other,
}

impl Kind {
    /// The kind of a file whose `st_mode` (or listed type, as mode bits) is `mode`.
    pub fn of_mode(mode: u32) -> Kind {
        match mode & libc::S_IFMT {
            libc::S_IFDIR => Kind::Dir,
            libc::S_IFREG => Kind::File,
            libc::S_IFLNK => Kind::Link,
            _ => Kind::Other,
        }
    }

    fn byte(self) -> u8 {
        match self {
            Kind::Dir => b'd',
            Kind::File => b'f',
            Kind::Link => b'l',
            Kind::Other => b'o',
        }
    }

    fn from_byte(b: u8) -> Option<Kind> {
        Some(match b {
            b'd' => Kind::Dir,
            b'f' => Kind::File,
            b'l' => Kind::Link,
            b'o' => Kind::Other,
            _ => return None,
        })
    }
}

/// A folder's entries: each name, and its kind.
pub type Listing = Arc<[(Box<[u8]>, Kind)]>;

/// A folder (relative to the work tree's top), its stat when listed, and what it held.
type Record = (Vec<u8>, Key, Listing);

/// The listings a look may take instead of listing, and those it made.
#[derive(Debug, Default)]
pub struct Listings {
    known: HashMap<Vec<u8>, (Key, Listing)>,
    /// Nanoseconds since the epoch before which a folder's change time must be for its
    /// listing to be kept.
    settled: i128,
    /// The listings of this look's folders that may be kept: taken, or made.
    kept: Mutex<Vec<Record>>,
    /// How many of them were taken from `known`.
    taken: std::sync::atomic::AtomicUsize,
}

impl Listings {
    /// The listings recorded in `file` (none when it is missing or does not parse), for a
    /// look starting now.
    pub fn read(file: &Path) -> Listings {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .saturating_sub(SETTLED);
        let known = crate::paths::read_regular(file, MAX_BYTES as u64)
            .ok()
            .flatten()
            .and_then(|bytes| parse(&bytes))
            .unwrap_or_default();
        Listings {
            known,
            settled: i128::try_from(now.as_nanos()).unwrap_or(i128::MAX),
            ..Listings::default()
        }
    }

    /// What `folder` held, when its stat now (`key`, taken after its watch was set) is the
    /// one recorded: it holds the same entries still.
    pub fn get(&self, folder: &[u8], key: &Key) -> Option<Listing> {
        let (known, listing) = self.known.get(folder)?;
        (known == key && key.settled(self.settled)).then(|| listing.clone())
    }

    /// Whether `folder` held no folders, and at most `entries` entries, when its listing
    /// was kept (false: none was kept).
    pub fn small_leaf(&self, folder: &[u8], entries: usize) -> bool {
        self.known.get(folder).is_some_and(|(_, listing)| {
            listing.len() <= entries && listing.iter().all(|(_, kind)| *kind != Kind::Dir)
        })
    }

    /// Keeps what a walker listed, or took: each folder, its stat before it was listed, and
    /// its entries; and how many of them it took from the file.
    pub fn keep(&self, records: Vec<Record>, taken: usize) {
        self.taken
            .fetch_add(taken, std::sync::atomic::Ordering::Relaxed);
        let settled = self.settled;
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(records.into_iter().filter(|(_, k, _)| k.settled(settled)));
    }

    /// How many listings were taken rather than made so far.
    pub fn taken(&self) -> usize {
        self.taken.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes the listings this look kept to `file`, unless they are the ones read.
    pub fn write(self, file: &Path) -> std::io::Result<()> {
        let mut kept = self.kept.into_inner().unwrap_or_else(|p| p.into_inner());
        let taken = self.taken.into_inner();
        // Nothing listed (no walk), or every listing the one read: the file stays.
        if kept.is_empty() || (taken == kept.len() && taken == self.known.len()) {
            return Ok(());
        }
        kept.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut out = HEADER.to_vec();
        for (folder, key, listing) in kept {
            let start = out.len();
            out.extend_from_slice(&folder);
            out.push(0);
            let numbers = [
                key.dev.to_string(),
                key.ino.to_string(),
                key.ctime.0.to_string(),
                key.ctime.1.to_string(),
                key.mtime.0.to_string(),
                key.mtime.1.to_string(),
                listing.len().to_string(),
            ];
            for n in numbers {
                out.extend_from_slice(n.as_bytes());
                out.push(0);
            }
            for (name, kind) in listing.iter() {
                out.push(kind.byte());
                out.extend_from_slice(name);
                out.push(0);
            }
            if out.len() > MAX_BYTES {
                out.truncate(start);
                break;
            }
        }
        crate::paths::write_atomic(file, &out)
    }
}

/// The listings the last look kept of a work tree's folders, read for another walk of it:
/// the sandbox's, which finds the git folders the pod protects before the pod starts
/// (`sandbox::gitdirs`). Each is taken as a look takes it, only while the folder's stat is
/// the one it was listed with; the walk keeps nothing, and what was read goes on to the
/// run's first look ([`Kept::into_look`]).
#[derive(Debug)]
pub struct Kept {
    /// The work tree's top, to which the folders are relative.
    top: PathBuf,
    /// The file they were read from.
    file: PathBuf,
    listings: Listings,
}

impl Kept {
    /// The listings in `store` (a store's folder, canonical) of the work tree at `top`; none
    /// when no look kept any.
    pub fn read(store: &Path, top: &Path) -> Option<Kept> {
        let file = store.join(FILE);
        let listings = Listings::read(&file);
        (!listings.known.is_empty()).then(|| Kept {
            top: top.to_path_buf(),
            file,
            listings,
        })
    }

    /// How many listings were taken rather than made (for tests).
    #[cfg(test)]
    pub fn taken(&self) -> usize {
        self.listings.taken()
    }

    /// The listings read, for the look of the work tree at `top` (the first of the run) to
    /// take as if it had read them itself: none when they were read for another tree.
    pub(super) fn into_look(self, top: &Path) -> Option<Listings> {
        (self.top == top).then(|| Listings {
            taken: std::sync::atomic::AtomicUsize::new(0),
            ..self.listings
        })
    }

    /// Writes `store`'s listings as a look would have, for the work tree at `top`: each
    /// folder (relative to `top`) at its stat now, holding what it is said to hold, true or
    /// not (for tests of what a walk believes).
    #[cfg(test)]
    pub fn forge(store: &Path, top: &Path, folders: &[(&str, &[(&str, Kind)])]) {
        let listings = Listings::read(&store.join(FILE));
        let records = folders
            .iter()
            .map(|(rel, entries)| {
                let meta = std::fs::symlink_metadata(top.join(rel)).expect("a folder");
                let listing: Listing = entries
                    .iter()
                    .map(|(n, k)| (Box::from(n.as_bytes()), *k))
                    .collect();
                (rel.as_bytes().to_vec(), Key::of(&(&meta).into()), listing)
            })
            .collect();
        listings.keep(records, 0);
        listings
            .write(&store.join(FILE))
            .expect("write the listings");
    }
}

impl crate::sandbox::gitdirs::Listed for Kept {
    fn file(&self) -> &Path {
        &self.file
    }

    fn each(
        &self,
        dir: &Path,
        at: Option<(std::os::fd::BorrowedFd<'_>, &std::ffi::CStr)>,
        f: &mut dyn FnMut(&std::ffi::OsStr, bool),
    ) -> bool {
        let Some(rel) = dir.strip_prefix(&self.top).ok() else {
            return false;
        };
        let meta = match at {
            Some((folder, name)) => {
                rustix::fs::statat(folder, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .map(|s| FileStat::from(&s))
                    .ok()
            }
            None => std::fs::symlink_metadata(dir)
                .map(|m| FileStat::from(&m))
                .ok(),
        };
        let Some(meta) = meta else {
            return false;
        };
        let Some(listing) = self
            .listings
            .get(rel.as_os_str().as_bytes(), &Key::of(&meta))
        else {
            return false;
        };
        self.listings
            .taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for (name, kind) in listing.iter() {
            f(std::ffi::OsStr::from_bytes(name), *kind == Kind::Dir);
        }
        true
    }
}

/// The records of a file [`Listings::write`] wrote; none if any part of it is not.
fn parse(bytes: &[u8]) -> Option<HashMap<Vec<u8>, (Key, Listing)>> {
    let mut fields = bytes.strip_prefix(HEADER)?.split(|&b| b == 0);
    let mut known = HashMap::new();
    loop {
        let folder = match fields.next() {
            // The end: the last NUL leaves an empty field.
            Some([]) if fields.clone().next().is_none() => break,
            Some(f) => f.to_vec(),
            None => break,
        };
        let mut number =
            || -> Option<i64> { std::str::from_utf8(fields.next()?).ok()?.parse().ok() };
        let (dev, ino) = (number()?, number()?);
        let ctime = (number()?, number()?);
        let mtime = (number()?, number()?);
        let count = usize::try_from(number()?).ok()?;
        let key = Key {
            dev: u64::try_from(dev).ok()?,
            ino: u64::try_from(ino).ok()?,
            ctime,
            mtime,
        };
        // Each entry takes two bytes at least: a count past what is left is not a count.
        if count > bytes.len() / 2 {
            return None;
        }
        let mut listing = Vec::with_capacity(count);
        for _ in 0..count {
            let (&kind, name) = fields.next()?.split_first()?;
            if matches!(name, b"" | b"." | b"..") || name.contains(&b'/') {
                return None;
            }
            listing.push((Box::from(name), Kind::from_byte(kind)?));
        }
        known.insert(folder, (key, Listing::from(listing)));
    }
    Some(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ctime: i64) -> Key {
        Key {
            dev: 1,
            ino: 2,
            ctime: (ctime, 5),
            mtime: (ctime, 5),
        }
    }

    fn listing(names: &[(&str, Kind)]) -> Listing {
        names
            .iter()
            .map(|(n, k)| (Box::from(n.as_bytes()), *k))
            .collect()
    }

    #[test]
    fn listings_kept_are_read_back_only_for_the_same_stat_and_only_when_settled() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(FILE);
        let old = key(1_000);
        let a = listing(&[
            ("SKILL.md", Kind::File),
            ("sub", Kind::Dir),
            ("l", Kind::Link),
        ]);
        let fresh = Listings::read(&file);
        assert!(fresh.known.is_empty());
        // A folder changed a moment ago is not kept: a change in the same tick could be lost.
        let now = i64::try_from(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .expect("after the epoch")
                .as_secs(),
        )
        .expect("seconds");
        fresh.keep(
            vec![
                (b"a".to_vec(), old, a.clone()),
                (b"".to_vec(), old, listing(&[("a", Kind::Dir)])),
                (b"new".to_vec(), key(now), listing(&[])),
                (
                    b"zero".to_vec(),
                    Key {
                        ctime: (0, 0),
                        ..key(0)
                    },
                    listing(&[]),
                ),
            ],
            0,
        );
        fresh.write(&file).expect("write");
        let read = Listings::read(&file);
        assert_eq!(read.known.len(), 2, "{:?}", read.known.keys());
        assert_eq!(read.get(b"a", &old).as_deref(), Some(&*a));
        assert_eq!(read.get(b"", &old).map(|l| l.len()), Some(1));
        // Another stat: another folder, or this one changed.
        assert_eq!(read.get(b"a", &key(1_001)), None);
        assert_eq!(read.get(b"new", &key(now)), None);
    }

    #[test]
    fn a_look_that_took_every_listing_writes_nothing_and_a_bad_file_is_an_empty_one() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join(FILE);
        let first = Listings::read(&file);
        first.keep(
            vec![(b"a".to_vec(), key(10), listing(&[("f", Kind::File)]))],
            0,
        );
        first.write(&file).expect("write");
        let written = std::fs::metadata(&file)
            .expect("written")
            .modified()
            .expect("mtime");
        std::thread::sleep(Duration::from_millis(20));
        let second = Listings::read(&file);
        let taken = second.get(b"a", &key(10)).expect("taken");
        second.keep(vec![(b"a".to_vec(), key(10), taken)], 1);
        second.write(&file).expect("write");
        let again = std::fs::metadata(&file)
            .expect("kept")
            .modified()
            .expect("mtime");
        assert_eq!(written, again, "nothing changed, yet the file was written");
        for bad in [
            &b"hx folders 2\n"[..],
            b"hx folders 1\na\x001\x002\x0010\x005\x0010\x005\x009\x00fx\x00",
            b"hx folders 1\na\x001\x002\x0010\x005\x0010\x005\x001\x00xname\x00",
            b"hx folders 1\na\x001\x002\x00ten\x005\x0010\x005\x001\x00fname\x00",
            b"hx folders 1\na\x001\x002\x0010\x005\x0010\x005\x001\x00fa/b\x00",
        ] {
            std::fs::write(&file, bad).expect("write");
            assert!(Listings::read(&file).known.is_empty(), "{bad:?}");
        }
    }

    fn put(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    /// A folder whose stat is the one the checkpoints' last look listed it with is not listed
    /// again; one that changed since is.
    #[test]
    fn a_kept_listing_is_taken_only_while_its_folder_is_as_it_was() {
        use crate::sandbox::gitdirs::GitPlaces;
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().canonicalize().expect("real").join("ws");
        let store = tmp.path().canonicalize().expect("real").join("store");
        std::fs::create_dir_all(&store).expect("mkdir");
        put(&ws.join("a/f"), "x\n");
        put(&ws.join("vendor/lib/.git/HEAD"), "x\n");
        // Listings are kept only of folders that have not changed for a while.
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(200));
        // The listing of vendor/lib leaves out its `.git`: taken, it hides the repository.
        // That is why only listings no command can write are given (`Plan::build`).
        let top: &[(&str, Kind)] = &[("a", Kind::Dir), ("vendor", Kind::Dir)];
        Kept::forge(
            &store,
            &ws,
            &[
                ("", top),
                ("a", &[("f", Kind::File)]),
                ("vendor", &[("lib", Kind::Dir)]),
                ("vendor/lib", &[]),
            ],
        );
        let kept = Kept::read(&store, &ws).expect("listings");
        let places = GitPlaces::find(&ws, Some(&kept));
        assert_eq!(kept.taken(), 4);
        assert!(places.dirs.is_empty(), "{:?}", places.dirs);
        // A file made in vendor/lib moves its stat: the folder is listed again.
        put(&ws.join("vendor/lib/new.txt"), "n\n");
        let kept = Kept::read(&store, &ws).expect("listings");
        let places = GitPlaces::find(&ws, Some(&kept));
        assert_eq!(kept.taken(), 3, "the top, a and vendor");
        assert_eq!(places.dirs, [ws.join("vendor/lib/.git")]);
    }

    /// The walk for git folders takes the checkpoints' kept listings only from a store no
    /// command can write: one in the workspace (or a writable root) could have been written to
    /// hide a repository from the pod.
    #[test]
    fn kept_listings_are_taken_only_from_a_store_commands_cannot_write() {
        use crate::sandbox::{Kernel, Mode, Plan, Settings};
        let tmp = tempfile::tempdir().expect("tempdir");
        let real = tmp.path().canonicalize().expect("real");
        let ws = real.join("ws");
        let inside = ws.join(".state");
        let outside = real.join("state");
        std::fs::create_dir_all(ws.join("vendor/lib/.git")).expect("mkdir");
        std::fs::write(ws.join("vendor/lib/.git/HEAD"), "x\n").expect("write");
        std::fs::create_dir_all(&inside).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::thread::sleep(SETTLED + std::time::Duration::from_millis(200));
        // Listings that leave out vendor/lib's `.git`, as a command would write them.
        let top: &[(&str, Kind)] = &[(".state", Kind::Dir), ("vendor", Kind::Dir)];
        let forged: &[(&str, &[(&str, Kind)])] = &[
            ("", top),
            ("vendor", &[("lib", Kind::Dir)]),
            ("vendor/lib", &[]),
        ];
        let settings = |mode| Settings {
            mode,
            ..Settings::default()
        };
        let write = settings(Mode::WorkspaceWrite);
        let with = |store: &Path, settings: &Settings| {
            Kept::forge(store, &ws, forged);
            let kept = Kept::read(store, &ws).expect("listings");
            let env = crate::paths::Env::new();
            let plan = Plan::with_kept(settings, &ws, &env, Kernel::Missing, Some(&kept));
            (plan.git.dirs, kept.taken())
        };
        let nested = vec![ws.join("vendor/lib/.git")];
        assert_eq!(with(&inside, &write), (nested.clone(), 0));
        let read_only = settings(Mode::ReadOnly);
        assert_eq!(with(&inside, &read_only), (nested.clone(), 0));
        // A writable root that holds the store.
        let root = Settings {
            writable_roots: vec![outside.display().to_string()],
            ..write.clone()
        };
        assert_eq!(with(&outside, &root), (nested, 0));
        // Out of the commands' reach, the listings are believed: the forged one hides it.
        assert_eq!(with(&outside, &write), (Vec::new(), 3));
    }
}
