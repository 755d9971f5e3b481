//! The store's index read by hx itself: the stat data git recorded for each file the last
//! git look took, so that a run's first checkpoint can tell in-process which files changed
//! since (issue 33: the git processes of that look were most of what checkpoints still cost
//! a run).
//!
//! Written by hx only for a store's first look, which takes every file in-process (version 2,
//! no extension: git adds its own when it next writes it); git keeps writing it when a look
//! falls back to git. Versions 2, 3 and 4 are read (4 when a user's `feature.manyFiles` makes git write it); anything this
//! reader does not know (a split index, a sparse one, a conflict stage, a submodule entry, a
//! bad checksum) is `None`, and the caller asks git instead. Hand-written: the format is a
//! header and fixed-size records, and gix would add a large dependency for it.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use sha1::{Digest, Sha1};

use super::objects::Oid;

/// Bytes of index read at most: 50,000 files (`max_files`' default) take about 5 MB.
const MAX_INDEX_BYTES: u64 = 64 * 1024 * 1024;

/// What git recorded of a file when it last took it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: Vec<u8>,
    pub ctime: (u32, u32),
    pub mtime: (u32, u32),
    pub ino: u32,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u32,
    pub oid: Oid,
}

/// The index: its entries, sorted by path as git keeps them, and when it was written.
#[derive(Debug)]
pub struct Index {
    pub entries: Vec<Entry>,
    /// The index file's modification time: an entry whose file changed in the same second
    /// (or after) is racily clean, and only its content can tell.
    pub mtime: (i64, i64),
}

/// The stat data a look holds a file (or folder) by: from std's `Metadata` (a stat by path
/// or of an open file) or rustix's `Stat` (a stat from an open folder, which std has no call
/// for: a name looked up in the folder, not a path walked from `/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat {
    pub dev: u64,
    pub ino: u64,
    /// Kind and permission bits, as `st_mode`.
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

impl FileStat {
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    pub fn is_symlink(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFLNK
    }

    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }
}

impl From<&std::fs::Metadata> for FileStat {
    fn from(m: &std::fs::Metadata) -> FileStat {
        FileStat {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            uid: m.uid(),
            gid: m.gid(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        }
    }
}

impl From<&rustix::fs::Stat> for FileStat {
    // The fields' widths differ by architecture (`st_dev` is 32 bits on some): each is
    // widened as std's `MetadataExt` widens it.
    #[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
    fn from(s: &rustix::fs::Stat) -> FileStat {
        FileStat {
            dev: s.st_dev as u64,
            ino: s.st_ino as u64,
            mode: s.st_mode as u32,
            uid: s.st_uid as u32,
            gid: s.st_gid as u32,
            size: s.st_size as u64,
            mtime: (s.st_mtime as i64, s.st_mtime_nsec as i64),
            ctime: (s.st_ctime as i64, s.st_ctime_nsec as i64),
        }
    }
}

/// What a file's stat data says against its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// What git recorded: the file is the entry's.
    Same,
    /// What git recorded, but in the second the index was written (or after), when a
    /// change may have come after git read the file: only its content can tell.
    Racy,
    /// Something differs.
    Differs,
}

/// What `meta` says of a file against `e` (as git compares them: the times, the inode, the
/// owner, the size, the kind and executable bit), for an index written at `written`.
pub fn stat(e: &Entry, meta: &FileStat, written: (i64, i64)) -> Stat {
    let t = |s: i64, ns: i64| (s as u32, ns as u32);
    let same_time = |rec: (u32, u32), now: (u32, u32)| {
        // A git built without nanoseconds records 0 for them, and compares seconds only.
        rec.0 == now.0 && (rec.1 == 0 || rec.1 == now.1)
    };
    let mode = if meta.is_symlink() {
        0o120000
    } else if meta.is_file() {
        if meta.mode & 0o100 != 0 {
            0o100755
        } else {
            0o100644
        }
    } else {
        return Stat::Differs;
    };
    let same = same_time(e.mtime, t(meta.mtime.0, meta.mtime.1))
        && same_time(e.ctime, t(meta.ctime.0, meta.ctime.1))
        && e.ino == meta.ino as u32
        && e.uid == meta.uid
        && e.gid == meta.gid
        && e.mode == mode;
    let size = e.size == meta.size as u32;
    // Git's rule with seconds only, which is the wider one. Git records a size of 0 for a
    // racily clean entry when it writes the index again ("smudged"), so that only its
    // content can vouch for it.
    let racy = i64::from(e.mtime.0) >= written.0;
    match (same, size, racy) {
        (true, true, false) => Stat::Same,
        (true, _, true) if size || e.size == 0 => Stat::Racy,
        _ => Stat::Differs,
    }
}

/// Whether the file at `full` (a racily clean entry's) still has the content `e` names, read
/// up to `limit` bytes without following a link: what git does for such entries.
pub fn same_content(e: &Entry, full: &Path, limit: u64) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let bytes = if e.mode == 0o120000 {
        match std::fs::read_link(full) {
            Ok(t) => t.as_os_str().as_bytes().to_vec(),
            Err(_) => return false,
        }
    } else {
        match crate::paths::open_regular(full) {
            Ok(f) => {
                let mut bytes = Vec::new();
                if f.take(limit + 1).read_to_end(&mut bytes).is_err() {
                    return false;
                }
                bytes
            }
            Err(_) => return false,
        }
    };
    bytes.len() as u64 <= limit && super::objects::name("blob", &bytes) == e.oid
}

/// The index at `path`, or `None` when there is none or this reader cannot be sure of it.
pub fn read(path: &Path) -> Option<Index> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if meta.len() > MAX_INDEX_BYTES {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_INDEX_BYTES).read_to_end(&mut bytes).ok()?;
    let entries = parse(&bytes)?;
    Some(Index {
        entries,
        mtime: (meta.mtime(), meta.mtime_nsec()),
    })
}

impl Entry {
    /// The entry of the file at `path` with the stat data `meta` and blob `oid`, as git
    /// records it (each field cut to 32 bits).
    pub fn of(path: Vec<u8>, mode: u32, oid: Oid, meta: &FileStat) -> Entry {
        Entry {
            path,
            ctime: (meta.ctime.0 as u32, meta.ctime.1 as u32),
            mtime: (meta.mtime.0 as u32, meta.mtime.1 as u32),
            ino: meta.ino as u32,
            mode,
            uid: meta.uid,
            gid: meta.gid,
            size: meta.size as u32,
            oid,
        }
    }
}

/// Writes `entries` (sorted by path, each once) as a version 2 index at `path`, renamed into
/// place. The device is written as 0: git compares it only when built to, and hx never.
pub fn write(path: &Path, entries: &[Entry]) -> std::io::Result<()> {
    let count = u32::try_from(entries.len())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "too many files"))?;
    let mut out = Vec::with_capacity(12 + entries.len() * 96 + 20);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&2u32.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    for e in entries {
        let start = out.len();
        for v in [
            e.ctime.0, e.ctime.1, e.mtime.0, e.mtime.1, 0, e.ino, e.mode, e.uid, e.gid, e.size,
        ] {
            out.extend_from_slice(&v.to_be_bytes());
        }
        out.extend_from_slice(&e.oid);
        // The name's length, or 0xfff when longer; stage 0, no other flag.
        let flags = e.path.len().min(0xfff) as u16;
        out.extend_from_slice(&flags.to_be_bytes());
        out.extend_from_slice(&e.path);
        // One to eight NULs, to a multiple of eight bytes from the entry's start.
        let len = out.len() - start;
        out.resize(start + (len + 8) / 8 * 8, 0);
    }
    let sum: [u8; 20] = Sha1::digest(&out).into();
    out.extend_from_slice(&sum);
    crate::paths::write_atomic(path, &out)
}

/// The big-endian `u32` at `at`, when `b` holds it (git's index and pack index both use them).
pub(super) fn be32(b: &[u8], at: usize) -> Option<u32> {
    let s = b.get(at..at + 4)?;
    Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// The entries of an index file's bytes.
fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    let body_len = bytes.len().checked_sub(20)?;
    let (body, sum) = bytes.split_at(body_len);
    if Sha1::digest(body).as_slice() != sum || body.get(..4)? != b"DIRC" {
        return None;
    }
    let version = be32(body, 4)?;
    if !(2..=4).contains(&version) {
        return None;
    }
    let count = be32(body, 8)? as usize;
    let mut entries = Vec::with_capacity(count.min(body.len() / 62));
    let mut at = 12;
    let mut last: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let w = |i: usize| be32(body, start + 4 * i);
        let mut oid = [0u8; 20];
        oid.copy_from_slice(body.get(start + 40..start + 60)?);
        let flags = u16::from_be_bytes([*body.get(start + 60)?, *body.get(start + 61)?]);
        at = start + 62;
        if flags & 0x4000 != 0 {
            // Extended flags (skip-worktree, intent-to-add): not what a look writes.
            return None;
        }
        // A conflict stage or assume-valid: not an entry a look writes either.
        if flags & 0x3000 != 0 || flags & 0x8000 != 0 {
            return None;
        }
        let path = if version == 4 {
            // The path is the previous one less N bytes, then the rest up to a NUL.
            let (strip, used) = varint(body.get(at..)?)?;
            at += used;
            let keep = last.len().checked_sub(strip)?;
            let end = at + body.get(at..)?.iter().position(|&b| b == 0)?;
            let mut p = last[..keep].to_vec();
            p.extend_from_slice(&body[at..end]);
            at = end + 1;
            p
        } else {
            let end = at + body.get(at..)?.iter().position(|&b| b == 0)?;
            let p = body[at..end].to_vec();
            // NUL-padded to a multiple of 8 bytes from the entry's start.
            at = start + (end - start + 8) / 8 * 8;
            p
        };
        let mode = w(6)?;
        if !matches!(mode, 0o100644 | 0o100755 | 0o120000) {
            // A submodule (0o160000) or a sparse folder: git's to read.
            return None;
        }
        entries.push(Entry {
            path: path.clone(),
            ctime: (w(0)?, w(1)?),
            mtime: (w(2)?, w(3)?),
            ino: w(5)?,
            mode,
            uid: w(7)?,
            gid: w(8)?,
            size: w(9)?,
            oid,
        });
        last = path;
    }
    // Extensions: a split index ("link") or a sparse one ("sdir") leave entries elsewhere.
    while at + 8 <= body.len() {
        let sig = &body[at..at + 4];
        if sig == b"link" || sig == b"sdir" {
            return None;
        }
        let len = be32(body, at + 4)? as usize;
        at = at.checked_add(8 + len)?;
    }
    Some(entries)
}

/// Git's offset varint (each continuation adds one before shifting).
fn varint(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut c = *b.first()?;
    let mut v = usize::from(c & 0x7f);
    while c & 0x80 != 0 {
        i += 1;
        c = *b.get(i)?;
        v = v.checked_add(1)?.checked_shl(7)? | usize::from(c & 0x7f);
    }
    Some((v, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    /// Every version git writes reads back as the files git took, with their stat data.
    #[test]
    fn indexes_git_writes_read_back_with_their_files() {
        for version in ["2", "3", "4"] {
            let tmp = tempfile::tempdir().unwrap();
            let d = tmp.path();
            std::fs::create_dir_all(d.join("src/deep")).unwrap();
            std::fs::write(d.join("a.txt"), "a\n").unwrap();
            std::fs::write(d.join("src/deep/a-much-longer-name.rs"), "b\n").unwrap();
            std::fs::write(d.join("src/deep/b.rs"), "c\n").unwrap();
            std::os::unix::fs::symlink("a.txt", d.join("link")).unwrap();
            git(d, &["init", "-q"]);
            git(d, &["config", "index.version", version]);
            git(d, &["add", "-A"]);
            let index = read(&d.join(".git/index")).expect("read");
            let paths: Vec<&[u8]> = index.entries.iter().map(|e| e.path.as_slice()).collect();
            assert_eq!(
                paths,
                [
                    &b"a.txt"[..],
                    b"link",
                    b"src/deep/a-much-longer-name.rs",
                    b"src/deep/b.rs"
                ],
                "version {version}"
            );
            let link = &index.entries[1];
            assert_eq!(link.mode, 0o120000);
            let meta = FileStat::from(&std::fs::symlink_metadata(d.join("src/deep/b.rs")).unwrap());
            let e = &index.entries[3];
            assert_eq!(e.size, 2);
            assert_eq!(e.ino, meta.ino as u32);
            assert_eq!(
                e.oid,
                super::super::objects::name("blob", b"c\n"),
                "version {version}"
            );
            let later = (index.mtime.0 + 5, 0);
            assert_eq!(stat(e, &meta, later), Stat::Same, "version {version}");
            // An index written in the second its file changed cannot vouch for it: its
            // content can.
            let when = (i64::from(e.mtime.0), 999_999_999);
            assert_eq!(stat(e, &meta, when), Stat::Racy);
            let full = d.join("src/deep/b.rs");
            assert!(same_content(e, &full, 100));
            std::fs::write(&full, "d\n").unwrap();
            assert!(!same_content(e, &full, 100));
            assert!(!same_content(e, &full, 1), "past the limit");
            std::fs::write(&full, "cc\n").unwrap();
            let meta = FileStat::from(&std::fs::symlink_metadata(&full).unwrap());
            assert_eq!(stat(e, &meta, later), Stat::Differs);
            let link = d.join("link");
            assert!(same_content(&index.entries[1], &link, 100));
        }
    }

    #[test]
    fn a_damaged_index_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("a.txt"), "a\n").unwrap();
        git(d, &["init", "-q"]);
        git(d, &["add", "-A"]);
        let path = d.join(".git/index");
        let mut bytes = std::fs::read(&path).unwrap();
        assert!(read(&path).is_some());
        bytes[20] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(read(&path).is_none());
        std::fs::write(&path, b"DIRC").unwrap();
        assert!(read(&path).is_none());
        std::fs::write(&path, b"").unwrap();
        assert!(read(&path).is_none());
    }

    /// A stat from an open folder holds what a stat by path holds, for a file, a link (not
    /// followed) and a folder.
    #[test]
    fn a_stat_from_an_open_folder_is_a_stat_by_path() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("f"), "x\n").unwrap();
        std::fs::set_permissions(d.join("f"), std::fs::Permissions::from_mode(0o751)).unwrap();
        std::os::unix::fs::symlink("f", d.join("l")).unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        let folder = std::fs::File::open(d).unwrap();
        for name in ["f", "l", "sub"] {
            let by_path = FileStat::from(&std::fs::symlink_metadata(d.join(name)).unwrap());
            let from_folder = FileStat::from(
                &rustix::fs::statat(&folder, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap(),
            );
            assert_eq!(by_path, from_folder, "{name}");
        }
        let f = FileStat::from(&std::fs::symlink_metadata(d.join("f")).unwrap());
        assert!(f.is_file() && !f.is_symlink());
        assert_eq!(f.mode & 0o777, 0o751);
        // Each field where lstat(2) puts it, not only two conversions that agree.
        let path = std::ffi::CString::new(d.join("f").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: an all-zero stat is a valid value; lstat writes it and reads the path.
        let mut raw: libc::stat = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::lstat(path.as_ptr(), &mut raw) }, 0);
        assert_eq!(
            (f.dev, f.ino, f.mode, f.uid, f.gid, f.size),
            (
                raw.st_dev as u64,
                raw.st_ino as u64,
                raw.st_mode as u32,
                raw.st_uid as u32,
                raw.st_gid as u32,
                raw.st_size as u64
            )
        );
        assert_eq!(f.mtime, (raw.st_mtime as i64, raw.st_mtime_nsec as i64));
        assert_eq!(f.ctime, (raw.st_ctime as i64, raw.st_ctime_nsec as i64));
        let l = FileStat::from(&std::fs::symlink_metadata(d.join("l")).unwrap());
        assert!(l.is_symlink() && !l.is_file());
        let sub = FileStat::from(&std::fs::metadata(d.join("sub")).unwrap());
        assert!(sub.is_dir() && !sub.is_file() && !sub.is_symlink());
    }
}
