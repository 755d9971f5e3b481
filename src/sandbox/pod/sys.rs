//! The few syscalls the pod needs that std does not wrap: the new mount API (`open_tree`,
//! `move_mount`, `mount_setattr`), `openat2` (to open a path without following any link),
//! pidfds. Each returns an `io::Error` carrying what failed, for the pod's report.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
pub const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub const MOUNT_ATTR_NODEV: u64 = 0x4;
const RESOLVE_NO_SYMLINKS: u64 = 0x04;
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

pub fn cstr(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// `what` with the path and the OS error, for the report.
pub fn fail(what: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

fn owned(fd: libc::c_long) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor the kernel just returned, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Opens `path` (absolute) as an `O_PATH` handle without following a link in any component:
/// a mount point or a rule target that a command turned into a link is refused, not followed.
pub fn open_path(path: &Path, dir: bool) -> io::Result<OwnedFd> {
    let c = cstr(path)?;
    open_cpath(&c, dir).map_err(|e| fail("open", path, e))
}

/// [`open_path`] on a path made before a fork: allocates nothing, so a forked child of hx
/// may call it; its error is the bare OS error.
pub fn open_cpath(path: &CStr, dir: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::O_PATH | libc::O_CLOEXEC | libc::O_NOFOLLOW;
    if dir {
        flags |= libc::O_DIRECTORY;
    }
    let how = OpenHow {
        flags: flags as u64,
        mode: 0,
        resolve: RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a valid NUL-terminated path and an open_how of the size given.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            path.as_ptr(),
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    owned(fd)
}

/// A detached copy of the mount tree at `fd` (recursive), for attaching elsewhere later.
pub fn clone_tree(fd: &OwnedFd, recursive: bool) -> io::Result<OwnedFd> {
    let mut flags =
        OPEN_TREE_CLONE | libc::O_CLOEXEC as libc::c_uint | libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: an open descriptor and an empty path with AT_EMPTY_PATH.
    let r = unsafe { libc::syscall(libc::SYS_open_tree, fd.as_raw_fd(), c"".as_ptr(), flags) };
    owned(r)
}

/// Sets mount attributes on the detached or attached tree at `fd` (recursive).
pub fn set_attr_fd(fd: &OwnedFd, set: u64, recursive: bool) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive {
        flags |= AT_RECURSIVE;
    }
    // SAFETY: an open descriptor, an empty path and a mount_attr of the size given.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Attaches the detached tree `tree` on top of what `target` is open on (a link included:
/// the mount goes on the link itself).
pub fn attach(tree: OwnedFd, target: &OwnedFd) -> io::Result<()> {
    // SAFETY: two open descriptors and empty paths with the EMPTY_PATH flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `mount(2)` of a new file system (`proc`, `tmpfs`, `devpts`) on `target`.
pub fn mount_fs(fstype: &str, target: &Path, flags: libc::c_ulong, data: &str) -> io::Result<()> {
    let t = cstr(target)?;
    let ty = CString::new(fstype).map_err(|_| io::Error::other("fstype"))?;
    let d = CString::new(data).map_err(|_| io::Error::other("data"))?;
    // SAFETY: NUL-terminated strings that live across the call.
    let r = unsafe {
        libc::mount(
            ty.as_ptr(),
            t.as_ptr(),
            ty.as_ptr(),
            flags,
            d.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(fail(
            &format!("mount {fstype} on"),
            target,
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Makes every mount private (no propagation either way).
pub fn make_private() -> io::Result<()> {
    // SAFETY: constant arguments.
    let r = unsafe {
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if r != 0 {
        return Err(fail(
            "make private",
            Path::new("/"),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

pub fn pidfd_open(pid: libc::pid_t) -> io::Result<OwnedFd> {
    // SAFETY: plain integers.
    owned(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })
}

/// Sends `sig` to the process `fd` refers to (never to a reused pid).
pub fn pidfd_kill(fd: &OwnedFd, sig: libc::c_int) {
    // SAFETY: an open pidfd and a null siginfo.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}

/// Whether the process behind the pidfd has exited (a pidfd polls readable then).
pub fn exited(fd: &OwnedFd) -> bool {
    exited_within(fd, 0)
}

/// Whether the process behind the pidfd exits within `ms` milliseconds.
pub fn exited_within(fd: &OwnedFd, ms: libc::c_int) -> bool {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd we own.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    r > 0 && p.revents != 0
}

/// `fstat` of an open descriptor: its file type bits.
pub fn file_type(fd: &OwnedFd) -> io::Result<libc::mode_t> {
    // SAFETY: a zeroed plain-data struct filled by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(st.st_mode & libc::S_IFMT)
}

/// Writes all of `bytes` to the raw descriptor `fd` (a report line).
pub fn write_all(fd: RawFd, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: a buffer we own.
        let n = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        if n < 0 {
            if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Points `fd` (0, 1 or 2) at `/dev/null`, so the process holds none of its caller's pipes.
pub fn to_null(fd: RawFd) {
    // SAFETY: open and dup2 on integers; the temporary descriptor is closed.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, fd);
            if null != fd {
                libc::close(null);
            }
        }
    }
}

/// The kernel's `struct sigaction` (handler first, as on every architecture hx builds for;
/// all zero is SIG_DFL with no flags and an empty mask).
#[repr(C)]
#[derive(Default)]
struct KernelSigaction {
    handler: usize,
    flags: libc::c_ulong,
    restorer: usize,
    mask: u64,
}

/// Whether this process ignores signal `sig` (1 to 64). Async-signal-safe: one raw
/// `rt_sigaction`, which, unlike glibc's `sigaction`, also reads glibc's own signals.
pub fn ignored(sig: libc::c_int) -> bool {
    let mut old = KernelSigaction::default();
    // SAFETY: reads into a struct we own, of the kernel's layout; a signal number out of
    // range gives EINVAL.
    let read = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            std::ptr::null::<KernelSigaction>(),
            &mut old as *mut KernelSigaction,
            8usize,
        )
    };
    read == 0 && old.handler == libc::SIG_IGN
}

/// Gives the calling process (a child between fork and exec) the signal state a program
/// expects to start with: exec resets a handled signal to its default but keeps an ignored
/// one ignored, and keeps the mask. Rust's runtime ignores SIGPIPE in every Rust program (the
/// launcher of the pod is one: `yes | head` then said `Broken pipe`), and hx itself may have
/// been started with signals ignored (`nohup`'s SIGHUP, a script's `&` ignores SIGINT and
/// SIGQUIT). So every ignored signal goes back to its default and none stays blocked.
/// Async-signal-safe: raw `rt_sigaction` and `sigprocmask` only. Raw, since glibc's
/// `sigaction` refuses its own two real-time signals (32 and 33), which an ignored state
/// reaches too.
pub fn default_signals() {
    for sig in 1..=64 {
        if ignored(sig) {
            to_default(sig);
        }
    }
    unblock_all();
}

/// No signal blocked in the calling process. Async-signal-safe.
pub fn unblock_all() {
    // SAFETY: a signal set we own.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

/// Every signal's handler back to the default, the mask left as it is: L, a forked child of
/// hx that never execs, must not run hx's handlers (they write to hx's descriptors). A
/// pending signal whose default is to be ignored (SIGCHLD) is discarded by it, blocked or
/// not: L calls it before it has a child.
pub fn all_default() {
    for sig in 1..=64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            to_default(sig);
        }
    }
}

/// `sig`'s handler back to the default by the raw syscall (see [`default_signals`]).
fn to_default(sig: libc::c_int) {
    let dfl = KernelSigaction::default();
    // SAFETY: a struct we own, of the kernel's layout and size 8 for its signal set.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            &dfl as *const KernelSigaction,
            std::ptr::null_mut::<KernelSigaction>(),
            8usize,
        );
    }
}

/// The calling thread's `errno`, read without allocating.
pub fn errno() -> libc::c_int {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    /// Read only: a test must not change the signal handling of the process it shares.
    #[test]
    fn ignored_reads_the_process_s_dispositions() {
        // Rust's runtime ignores SIGPIPE in every program, this test binary included.
        assert!(super::ignored(libc::SIGPIPE));
        assert!(!super::ignored(libc::SIGTERM));
        assert!(!super::ignored(0) && !super::ignored(65));
    }
}
