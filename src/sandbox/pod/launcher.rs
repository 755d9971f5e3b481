//! hx's launcher as a run holds it: opened once, when the pod starts, and executed from that
//! handle (`/proc/self/fd/N`) rather than by its path for the run's every command.
//!
//! When hx runs from a folder commands may write (`target/release` of the workspace, when
//! working on hx itself, or a `~/.cargo` made writable), a command could replace the
//! launcher, and hx would start the next command with the model's program, outside the pod.
//! A handle follows the file hx opened, not the name, so a rename (how a build, or `mv`,
//! replaces a program) changes nothing. A write into the same file would still change what
//! the handle reads, so a launcher in such a folder is first copied into a sealed memory
//! file (or, where the kernel allows no executable one, into the run's own folder, which no
//! command reaches), and that private copy runs.

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The launcher the run executes.
#[derive(Debug)]
pub struct Held {
    file: OwnedFd,
}

impl Held {
    /// `exe`, opened; copied first when it lies in one of `writable` (canonical folders
    /// commands may write) or a link on its way leads there. `run_dir` is the run's own
    /// folder, for a copy where no memory file can be executed.
    pub fn open(exe: &Path, writable: &[PathBuf], run_dir: &Path) -> io::Result<Held> {
        let real = exe.canonicalize()?;
        let exposed = writable
            .iter()
            .any(|w| real.starts_with(w) || exe.starts_with(w));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(&real)?;
        if !exposed {
            return Ok(Held { file: file.into() });
        }
        let copy = match memory_copy(&file) {
            Ok(fd) => fd,
            Err(_) => file_copy(&file, run_dir)?,
        };
        Ok(Held { file: copy })
    }

    /// The path that executes it, in hx and in hx's children until they exec (the
    /// descriptor is close-on-exec: the kernel opens the file before it closes them).
    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.file.as_raw_fd()))
    }
}

/// `file`'s bytes in a sealed memory file, reopened read-only (a file open for writing
/// cannot be executed); checked executable by a probe of `execveat`'s path.
fn memory_copy(file: &File) -> io::Result<OwnedFd> {
    let name = c"hx-launcher";
    // MFD_EXEC (6.3) says it may be executed; older kernels refuse the flag, and allow it.
    const MFD_EXEC: libc::c_uint = 0x10;
    let base = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // The system call, not glibc's wrapper: the portable build links against glibc 2.17,
    // which has none (2.27 added it).
    let create = |flags: libc::c_uint| {
        // SAFETY: a constant C string; the result is checked.
        unsafe { libc::syscall(libc::SYS_memfd_create, name.as_ptr(), flags) }
    };
    let mut fd = create(base | MFD_EXEC);
    if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        fd = create(base);
    }
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::other("memfd_create: bad fd"))?;
    // SAFETY: a descriptor just made, owned by nothing else.
    let mut mem = unsafe { File::from_raw_fd(fd) };
    let mut from = file;
    io::copy(&mut from, &mut mem)?;
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on a descriptor we own.
    if unsafe { libc::fcntl(mem.as_raw_fd(), libc::F_ADD_SEALS, seals) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let read = reopen(&mem)?;
    drop(mem);
    // `vm.memfd_noexec = 2` refuses to execute any memory file: find out now.
    if !executable(&read) {
        return Err(io::Error::other("memory files cannot be executed here"));
    }
    Ok(read)
}

/// `file`'s bytes in the run's own folder (`run_dir`, which hx made 0700 and no command
/// reaches), mode 0500, opened read-only.
fn file_copy(file: &File, run_dir: &Path) -> io::Result<OwnedFd> {
    let at = run_dir.join("launcher");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o500)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&at)?;
    let mut from = file;
    io::copy(&mut from, &mut out)?;
    out.sync_all()?;
    drop(out);
    let read = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&at)?;
    Ok(read.into())
}

/// `f` opened again, read-only, through its descriptor.
fn reopen(f: &File) -> io::Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}", f.as_raw_fd());
    let read = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?;
    Ok(read.into())
}

/// Whether the kernel would execute `fd`: `faccessat(X_OK)` on it, which checks the mount
/// and the memory file's exec rule as `execve` does.
fn executable(fd: &OwnedFd) -> bool {
    let path = format!("/proc/self/fd/{}\0", fd.as_raw_fd());
    // SAFETY: a NUL-terminated path; no memory is written.
    unsafe { libc::access(path.as_ptr().cast(), libc::X_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher in a writable folder is copied: a write into the same file, or a rename
    /// over it, leaves what the run executes as it was. Outside, the handle is the file.
    #[test]
    fn a_launcher_in_a_writable_folder_runs_from_a_private_copy() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().expect("real");
        let (ws, run) = (root.join("ws"), root.join("run"));
        std::fs::create_dir_all(&ws).expect("mkdir");
        std::fs::create_dir_all(&run).expect("mkdir");
        let exe = ws.join("hx-pod");
        std::fs::write(&exe, "the launcher").expect("write");
        let held = Held::open(&exe, std::slice::from_ref(&ws), &run).expect("held");
        // In place (same inode), then by a rename.
        std::fs::write(&exe, "the model's").expect("overwrite");
        assert_eq!(std::fs::read(held.path()).expect("read"), b"the launcher");
        std::fs::write(ws.join("new"), "the model's").expect("write");
        std::fs::rename(ws.join("new"), &exe).expect("rename");
        assert_eq!(std::fs::read(held.path()).expect("read"), b"the launcher");
        // Sealed: not even hx can write the copy.
        let w = std::fs::OpenOptions::new().write(true).open(held.path());
        assert!(
            w.is_err() || std::io::Write::write_all(&mut w.expect("open"), b"x").is_err(),
            "the copy is writable"
        );
        // Outside every writable folder: the handle of the file itself (a rename changes
        // nothing either).
        let outside = root.join("bin");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(outside.join("hx-pod"), "the launcher").expect("write");
        let held = Held::open(&outside.join("hx-pod"), &[ws], &run).expect("held");
        std::fs::write(outside.join("new"), "other").expect("write");
        std::fs::rename(outside.join("new"), outside.join("hx-pod")).expect("rename");
        assert_eq!(std::fs::read(held.path()).expect("read"), b"the launcher");
    }
}
