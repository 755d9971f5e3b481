//! The disk side of a restore, through descriptors of folders walked one name at a time.
//!
//! A rewind writes outside any sandbox, and a process the model started may still run (in
//! another hx run on the same workspace, or one that a stopped pod does not hold): a path
//! checked and then used by name could meet a folder, or the file itself, swapped for a link
//! in between, and a mode change or a removal would land outside the workspace (issue 32:
//! `~/.bashrc` made 0666). So nothing here names a path from the top: every folder is opened
//! inside the one before it with `O_NOFOLLOW`, a file is written as a new temporary file in
//! its open folder (its mode set on that descriptor) and renamed over the name, and a
//! removal is an `unlinkat` in the open folder, which never follows the last name either.
//! There is no `chmod` of an existing path at all: `fchmodat` follows the last name (Linux
//! refuses `AT_SYMLINK_NOFOLLOW` for it before `fchmodat2`), and `chmod` of
//! `/proc/self/fd/N` for an `O_PATH` descriptor of a link would change the link's target.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Why the folders of a path could not be opened.
#[derive(Debug)]
pub(super) enum Blocked {
    /// A name on the way is a link, or something other than a folder: the path is left alone.
    NotFolder,
    /// A folder on the way does not exist (and was not to be made).
    Missing,
    Failed(io::Error),
}

/// The folders from `root` down to the one holding `rel`'s last name, each open, and that
/// name. `make`: folders that are missing are made (as `mkdir`, with the umask).
pub(super) fn folders<'a>(
    root: &Path,
    rel: &'a str,
    make: bool,
) -> Result<(Vec<OwnedFd>, &'a str), Blocked> {
    let parts: Vec<&str> = rel.split('/').collect();
    let Some((name, above)) = parts.split_last() else {
        return Err(Blocked::Missing);
    };
    // The work tree itself is the store's, found when the run began; only below it can a
    // link be new.
    let top = rfs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Blocked::Failed(e.into()))?;
    let mut open = vec![top];
    for part in above {
        let at = open.last().ok_or(Blocked::Missing)?;
        let next = match folder(at, part) {
            Err(Errno::NOENT) if make => {
                match rfs::mkdirat(at, *part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(Blocked::Failed(e.into())),
                }
                folder(at, part)
            }
            other => other,
        };
        match next {
            Ok(fd) => open.push(fd),
            Err(Errno::NOENT) => return Err(Blocked::Missing),
            Err(Errno::LOOP | Errno::NOTDIR) => return Err(Blocked::NotFolder),
            Err(e) => return Err(Blocked::Failed(e.into())),
        }
    }
    Ok((open, name))
}

/// `name` in `at`, opened as a folder only if it is one (a link is `ELOOP` or `ENOTDIR`).
fn folder(at: &OwnedFd, name: &str) -> Result<OwnedFd, Errno> {
    rfs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// What `name` in `at` is, without following a link; none when it does not exist.
fn kind(at: &OwnedFd, name: &str) -> io::Result<Option<(FileType, u32)>> {
    match rfs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some((
            FileType::from_raw_mode(st.st_mode),
            st.st_mode & 0o7777,
        ))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Removes `name` from `at`: an empty folder, or anything else (a link itself, never what
/// it points to). False when there was nothing to remove or a folder is not empty.
pub(super) fn remove(at: &OwnedFd, name: &str) -> bool {
    let flags = match kind(at, name) {
        Ok(Some((FileType::Directory, _))) => AtFlags::REMOVEDIR,
        Ok(Some(_)) => AtFlags::empty(),
        Ok(None) | Err(_) => return false,
    };
    rfs::unlinkat(at, name, flags).is_ok()
}

/// Removes the folders of `open` below depth `keep` (the workspace's) that are empty, deepest
/// first; `rel` names them.
pub(super) fn remove_empty(open: &[OwnedFd], rel: &str, keep: usize) {
    let parts: Vec<&str> = rel.split('/').collect();
    // open[i] is the folder named by parts[i - 1], held in open[i - 1].
    for i in (keep.max(1)..open.len()).rev() {
        let (Some(parent), Some(name)) = (open.get(i - 1), parts.get(i - 1)) else {
            return;
        };
        if rfs::unlinkat(parent, *name, AtFlags::REMOVEDIR).is_err() {
            return;
        }
    }
}

/// What a restored path becomes.
pub(super) enum Content<'a> {
    /// A regular file: its bytes, and whether the target has it executable.
    File(&'a [u8], bool),
    /// A symbolic link to this.
    Link(&'a [u8]),
}

/// Makes `name` in `at` what `content` says: made under a fresh name in the same folder and
/// renamed over it, so the old entry (a link, even) is replaced, never written through. A
/// regular file that was there keeps its permission bits, but for the executable bit, which
/// is the target's; a new one gets git's (0666 or 0777, less the umask).
pub(super) fn put(at: &OwnedFd, name: &str, content: Content<'_>) -> io::Result<()> {
    let before = match kind(at, name)? {
        Some((FileType::RegularFile, mode)) => Some(mode),
        _ => None,
    };
    let temp = match content {
        Content::File(bytes, exec) => {
            let create = if exec { 0o777 } else { 0o666 };
            let (fd, temp) = fresh(|t| {
                rfs::openat(
                    at,
                    t,
                    OFlags::WRONLY
                        | OFlags::CREATE
                        | OFlags::EXCL
                        | OFlags::NOFOLLOW
                        | OFlags::CLOEXEC,
                    Mode::from_raw_mode(create),
                )
            })?;
            let written = (|| {
                if let Some(old) = before {
                    let x = if exec { (old & 0o444) >> 2 } else { 0 };
                    rfs::fchmod(&fd, Mode::from_raw_mode(old & 0o666 | x))?;
                }
                File::from(fd).write_all(bytes)
            })();
            if let Err(e) = written {
                let _ = rfs::unlinkat(at, &temp, AtFlags::empty());
                return Err(e);
            }
            temp
        }
        Content::Link(target) => fresh(|t| rfs::symlinkat(target, at, t))?.1,
    };
    rfs::renameat(at, &temp, at, name).map_err(|e| {
        let _ = rfs::unlinkat(at, &temp, AtFlags::empty());
        io::Error::from(e)
    })
}

/// Makes a new entry under a name no one uses, trying another on a clash.
fn fresh<T>(mut make: impl FnMut(&str) -> Result<T, Errno>) -> io::Result<(T, String)> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    for attempt in 0..16u32 {
        let name = format!(".hx-restore-{}-{stamp:x}-{attempt}", std::process::id());
        match make(&name) {
            Ok(t) => return Ok((t, name)),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name",
    ))
}
