//! Access to files beneath a folder held open: the only way the file tools touch the disk.
//!
//! [`Workspace`](super::Workspace) decides which file a path names: it follows every link and
//! checks that the result lies under the root (or a read-only folder), giving a path below
//! that folder with no link and no `..` left in it. Using that path by name afterwards would
//! re-walk it, and a command running meanwhile (sandboxed, but free to change the workspace)
//! could swap a folder on the way for a link to anywhere: hx is not sandboxed, so the write
//! would land there. Here every step opens one single name inside a folder already open, with
//! `O_NOFOLLOW`: the kernel looks that name up in that very folder and refuses a link, so no
//! step can leave the folder it started from. A link that appeared after the check makes the
//! call fail; it never leads anywhere. The temporary file of an atomic write is created, and
//! renamed over the target, inside the same open folder.
//!
//! Why a walk of single names rather than `openat2(RESOLVE_BENEATH)` or cap-std: the path is
//! already resolved and link-free, so all that is left is to refuse any link or `..` met on
//! the way, and one `openat(O_NOFOLLOW)` per folder does exactly that on every kernel (it is
//! what cap-std itself does where `openat2` is missing). `openat2` would save a few system
//! calls per path but fails with `ENOSYS` before Linux 5.6, where hx must still work (its
//! sandbox is optional; RHEL 8 runs 4.18): it would need this walk as a fallback anyway, and
//! the walk alone leaves no kernel with a weaker (or racy) path. cap-std resolves
//! links itself and refuses absolute ones, while hx's rules (a link inside that points inside
//! is fine, whether absolute or relative) are already implemented and property-tested in
//! `Workspace`; it would add eight crates (itself, cap-primitives and six helpers) for the
//! last step only.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// Attempts at a fresh temporary name before giving up; with 62^8 names a clash is already
/// a sign that something else is going on.
const TEMP_ATTEMPTS: usize = 16;

/// What [`Dir::open_regular`] found.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A regular file, opened, and its size when opened.
    File(File, u64),
    Missing,
    Dir,
    /// A FIFO, socket or device: reading it could block or never end.
    NotRegular,
}

/// A folder held open; every path below it is opened relative to it.
#[derive(Debug)]
pub(crate) struct Dir(OwnedFd);

/// What `fstatat` says of a name, without following a link.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub kind: FileType,
    /// The permission bits (including setuid, setgid and sticky).
    pub mode: u32,
}

impl Dir {
    /// Opens the folder at the absolute `path` one name at a time from `/`, refusing any link
    /// on the way: `path` must be real (canonical), and a folder swapped for a link since is
    /// an error rather than somewhere else.
    pub fn open_real(path: &Path) -> io::Result<Dir> {
        let root = Dir(rfs::open("/", dir_flags(), Mode::empty())?);
        let rel = path
            .strip_prefix("/")
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not an absolute path"))?;
        root.walk(rel, false)
    }

    /// The folder `rel` names below this one, opened name by name without following a link;
    /// with `create`, missing folders are created (as `create_dir_all` would). `rel` must be
    /// plain names: `..`, `.` or a root is refused, never resolved.
    pub fn walk(&self, rel: &Path, create: bool) -> io::Result<Dir> {
        let mut here: Option<Dir> = None;
        for part in rel.components() {
            let Component::Normal(name) = part else {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a checked path holds only plain names",
                ));
            };
            here = Some(here.as_ref().unwrap_or(self).subdir(name, create)?);
        }
        match here {
            Some(dir) => Ok(dir),
            None => Ok(Dir(self.0.try_clone()?)),
        }
    }

    fn subdir(&self, name: &OsStr, create: bool) -> io::Result<Dir> {
        match self.open_subdir(name) {
            Err(e) if create && e.kind() == io::ErrorKind::NotFound => {}
            opened => return opened,
        }
        match rfs::mkdirat(&self.0, name, Mode::from_bits_truncate(0o777)) {
            // Created meanwhile by someone else: fine, as for `create_dir_all`.
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io_error(e)),
        }
        self.open_subdir(name)
    }

    fn open_subdir(&self, name: &OsStr) -> io::Result<Dir> {
        match rfs::openat(&self.0, name, dir_flags(), Mode::empty()) {
            Ok(fd) => Ok(Dir(fd)),
            // With O_DIRECTORY the kernel says "not a directory" of a link too; say which.
            Err(Errno::NOTDIR) => match self.entry(name) {
                Ok(Some(e)) if e.kind == FileType::Symlink => Err(io_error(Errno::LOOP)),
                _ => Err(io_error(Errno::NOTDIR)),
            },
            Err(e) => Err(io_error(e)),
        }
    }

    /// What `name` in this folder is, `None` if nothing by that name exists.
    pub fn entry(&self, name: &OsStr) -> io::Result<Option<Entry>> {
        match rfs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(Entry {
                kind: FileType::from_raw_mode(st.st_mode),
                mode: st.st_mode & 0o7777,
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_error(e)),
        }
    }

    /// Opens `name` for reading if it is a regular file, without following a link and without
    /// blocking (a FIFO would otherwise hang the open). The kind is taken from the opened file,
    /// so nothing swapped in after the open can change the answer.
    pub fn open_regular(&self, name: &OsStr) -> io::Result<Opened> {
        let flags =
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let file = match rfs::openat(&self.0, name, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => return Ok(Opened::Missing),
            // What open(2) says of a socket.
            Err(Errno::NXIO) => return Ok(Opened::NotRegular),
            Err(e) => return Err(io_error(e)),
        };
        let meta = file.metadata()?;
        Ok(if meta.is_dir() {
            Opened::Dir
        } else if meta.is_file() {
            Opened::File(file, meta.len())
        } else {
            Opened::NotRegular
        })
    }

    /// Writes `data` to a temporary file in this folder and renames it over `name`, so readers
    /// (and a crash) see the old content or the new, never a mix. An existing file keeps its
    /// permissions; a new one gets the usual 0666 minus the umask. The rename replaces `name`
    /// itself: were it a link by now, the link is replaced, its target left alone.
    pub fn write_atomic(&self, name: &OsStr, data: &[u8]) -> io::Result<()> {
        let existing = match self.entry(name) {
            Ok(Some(e)) if e.kind == FileType::RegularFile => Some(e.mode),
            _ => None,
        };
        // Private until the content and the final mode are in place.
        let create_mode = if existing.is_some() { 0o600 } else { 0o666 };
        let (tmp_name, mut tmp) = self.create_temp(create_mode)?;
        let written = (|| {
            tmp.write_all(data)?;
            tmp.sync_all()?;
            if let Some(mode) = existing {
                rfs::fchmod(&tmp, Mode::from_raw_mode(mode)).map_err(io_error)?;
            }
            rfs::renameat(&self.0, &tmp_name, &self.0, name).map_err(io_error)
        })();
        if written.is_err() {
            let _ = rfs::unlinkat(&self.0, &tmp_name, AtFlags::empty());
        }
        written
    }

    /// A new file `.hx-write-XXXXXXXX` in this folder, created exclusively (never an existing
    /// file or a link) with `mode` minus the umask.
    fn create_temp(&self, mode: u32) -> io::Result<(String, File)> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        for _ in 0..TEMP_ATTEMPTS {
            let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
                .take(8)
                .collect();
            let tmp_name = format!(".hx-write-{suffix}");
            match rfs::openat(&self.0, tmp_name.as_str(), flags, Mode::from_raw_mode(mode)) {
                Ok(fd) => return Ok((tmp_name, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(io_error(e)),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "no free name for a temporary file",
        ))
    }
}

/// How folders are opened. `O_PATH` (Linux) needs only the right to pass through a folder,
/// as a lookup by name does: a workspace below a folder the user may enter but not list
/// (`0711`) must keep working. Elsewhere a folder is opened for reading.
fn dir_flags() -> OFlags {
    #[cfg(target_os = "linux")]
    let access = OFlags::PATH;
    #[cfg(not(target_os = "linux"))]
    let access = OFlags::RDONLY;
    access | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

/// The error as `std` would give it, except the one only a race produces: the path was
/// resolved to have no link on it, so `ELOOP` from an `O_NOFOLLOW` open means a folder or file
/// became a link after the check.
fn io_error(e: Errno) -> io::Error {
    if e == Errno::LOOP {
        io::Error::other(
            "a part of the path became a link after it was checked; nothing was followed, \
             try again",
        )
    } else {
        e.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn held(dir: &tempfile::TempDir) -> Dir {
        Dir::open_real(&dir.path().canonicalize().expect("canonical")).expect("open")
    }

    #[test]
    fn walk_refuses_links_and_dotdot_and_creates_folders() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        symlink(outside.path(), dir.path().join("link")).expect("symlink");
        let d = held(&dir);
        let e = d.walk(Path::new("link/x"), true).expect_err("a link");
        assert!(e.to_string().contains("became a link"), "{e}");
        assert!(!outside.path().join("x").exists());
        for bad in ["../x", "./x", "/x"] {
            let e = d.walk(Path::new(bad), true).expect_err(bad);
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }
        assert_eq!(
            d.walk(Path::new("a/b"), false).expect_err("missing").kind(),
            io::ErrorKind::NotFound
        );
        d.walk(Path::new("a/b"), true).expect("created");
        assert!(dir.path().join("a/b").is_dir());
        std::fs::write(dir.path().join("f"), "x").expect("file");
        assert_eq!(
            d.walk(Path::new("f/g"), true)
                .expect_err("a file")
                .raw_os_error(),
            Some(libc::ENOTDIR)
        );
    }

    #[test]
    fn open_real_refuses_a_link_anywhere_on_the_way() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real = dir.path().canonicalize().expect("canonical");
        std::fs::create_dir(real.join("a")).expect("a");
        symlink(real.join("a"), real.join("l")).expect("symlink");
        assert!(Dir::open_real(&real.join("a")).is_ok());
        assert!(Dir::open_real(&real.join("l")).is_err());
    }

    #[test]
    fn write_atomic_replaces_a_link_never_its_target() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("t"), "theirs").expect("target");
        symlink(outside.path().join("t"), dir.path().join("f")).expect("symlink");
        held(&dir)
            .write_atomic(OsStr::new("f"), b"ours")
            .expect("write");
        assert_eq!(
            std::fs::read_to_string(outside.path().join("t")).expect("t"),
            "theirs"
        );
        let meta = std::fs::symlink_metadata(dir.path().join("f")).expect("f");
        assert!(meta.is_file());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f")).expect("f"),
            "ours"
        );
    }

    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("sub/inner")).expect("folder");
        let e = held(&dir)
            .write_atomic(OsStr::new("sub"), b"x")
            .expect_err("a non-empty folder cannot be replaced by a file");
        assert!(e.raw_os_error().is_some(), "{e}");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["sub"]);
    }
}
