//! What the kernel offers, and the Landlock ruleset: built in hx, entered by the child.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, Scope, ABI,
};

/// The Landlock support of the running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Landlock is there, with this ABI version.
    Abi(i32),
    /// Built in but not enabled at boot (`EOPNOTSUPP`).
    NotEnabled,
    /// Not built into this kernel, or a kernel older than 5.13 (`ENOSYS`, or anything else).
    Missing,
}

impl Kernel {
    /// Asks the running kernel (one syscall that creates nothing).
    pub fn detect() -> Kernel {
        const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
        // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the syscall only
        // returns the ABI version (or an error); it reads and writes no memory of ours.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<libc::c_void>(),
                0usize,
                LANDLOCK_CREATE_RULESET_VERSION,
            )
        };
        if v > 0 {
            return Kernel::Abi(i32::try_from(v).unwrap_or(i32::MAX));
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EOPNOTSUPP) => Kernel::NotEnabled,
            _ => Kernel::Missing,
        }
    }

    pub fn abi(self) -> i32 {
        match self {
            Kernel::Abi(v) => v,
            _ => 0,
        }
    }

    /// Why there is no Landlock, in words; `None` when there is.
    pub fn why_missing(self) -> Option<&'static str> {
        match self {
            Kernel::Abi(_) => None,
            Kernel::NotEnabled => Some(
                "this kernel has Landlock but it is not enabled at boot (add landlock to the lsm= kernel parameter)",
            ),
            Kernel::Missing => Some(
                "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)",
            ),
        }
    }
}

/// The file-system rights the sandbox handles: every kind of write up to ABI 3 (writing,
/// creating, removing, renaming or linking across folders, truncating). Reads and execution
/// are not handled, so they stay allowed everywhere. Device ioctls (ABI 5) are not writes to
/// files and stay allowed, so that terminal and device control works as before.
pub fn handled_fs() -> BitFlags<AccessFs> {
    AccessFs::from_write(ABI::V3)
}

/// The network rights handled when `network = false`: TCP connect and bind (ABI 4). With no
/// port allowed, both are refused for every port.
pub fn handled_net() -> BitFlags<AccessNet> {
    AccessNet::BindTcp | AccessNet::ConnectTcp
}

/// The scopes every command enters (ABI 6): it may signal only processes of its own domain
/// (itself and what it starts, not hx, not the user's other programs, not another command),
/// and connect only to abstract Unix sockets made in that domain. Pathname sockets are files,
/// which Landlock scopes do not cover.
pub fn handled_scopes() -> BitFlags<Scope> {
    Scope::Signal | Scope::AbstractUnixSocket
}

/// A Landlock ruleset, ready for children to enter. Built once per run, in hx: that is where
/// opening paths and allocating are allowed, and a ruleset binds the folders as they were
/// then. Rebuilt per command from paths, a writable folder whose parent is writable too (a
/// workspace in `/tmp`) could be swapped for a link by one command, and the next command's
/// ruleset would follow the link to wherever it points.
#[derive(Debug)]
pub struct Confinement {
    fd: OwnedFd,
}

impl Confinement {
    /// A ruleset that allows writes beneath `writable` only, refuses TCP unless `network`, and
    /// scopes signals and abstract Unix sockets to the command.
    /// Each path must be canonical: it is opened without following a final link, so a path
    /// that became a link since it was resolved is left out rather than followed. `None`
    /// when the kernel has no Landlock at all (the caller decided earlier to run unconfined,
    /// and warned).
    pub fn build(writable: &[PathBuf], network: bool) -> Result<Option<Confinement>, RulesetError> {
        Confinement::build_scoped(writable, network, handled_scopes())
    }

    /// [`Confinement::build`] with the given scopes instead (a pod's commands take fewer).
    pub fn build_scoped(
        writable: &[PathBuf],
        network: bool,
        scopes: BitFlags<Scope>,
    ) -> Result<Option<Confinement>, RulesetError> {
        let fs = handled_fs();
        // Best effort: a kernel older than a right leaves that right out (see `assess`).
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(fs)?;
        if !scopes.is_empty() {
            ruleset = ruleset.scope(scopes)?;
        }
        if !network {
            ruleset = ruleset.handle_access(handled_net())?;
        }
        let created = ruleset.create()?.add_rules(
            writable
                .iter()
                .filter_map(|p| open_no_follow(p).ok())
                .map(|(fd, is_dir)| {
                    // Beneath a file (a device) only the rights of files apply.
                    let access = if is_dir {
                        fs
                    } else {
                        fs & (AccessFs::WriteFile | AccessFs::Truncate)
                    };
                    Ok::<_, RulesetError>(PathBeneath::new(fd, access))
                }),
        )?;
        let fd: Option<OwnedFd> = created.into();
        Ok(fd.map(|fd| Confinement { fd }))
    }

    /// The ruleset's descriptor, for the child to enter (see `Sandbox::apply`). It is
    /// close-on-exec, so the program never sees it, and stays open in hx for the whole run.
    pub(super) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Opens `path` as a handle for a rule (`O_PATH`), not following a final link, and says
/// whether it is a folder.
fn open_no_follow(path: &std::path::Path) -> io::Result<(OwnedFd, bool)> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::FromRawFd;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path; the returned descriptor is checked and owned once.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened by us and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: fstat on an open descriptor into a zeroed plain-data struct.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if st.st_mode & libc::S_IFMT == libc::S_IFLNK {
        return Err(io::Error::other("a link"));
    }
    Ok((fd, st.st_mode & libc::S_IFMT == libc::S_IFDIR))
}
