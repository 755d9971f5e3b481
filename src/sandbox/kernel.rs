//! What the kernel offers, and the Landlock ruleset: built in hx, entered by the child.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    path_beneath_rules, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetError, ABI,
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

/// A Landlock ruleset, ready for a child to enter. Build one per command, in hx, before the
/// fork: that is where opening paths and allocating are allowed.
#[derive(Debug)]
pub struct Confinement {
    fd: OwnedFd,
}

impl Confinement {
    /// A ruleset that allows writes beneath `writable` only, and refuses TCP unless `network`.
    /// `None` when the kernel has no Landlock at all (the caller decided earlier to run
    /// unconfined, and warned).
    pub fn build(writable: &[PathBuf], network: bool) -> Result<Option<Confinement>, RulesetError> {
        let fs = handled_fs();
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(fs)?;
        if !network {
            ruleset = ruleset.handle_access(handled_net())?;
        }
        let created = ruleset
            .create()?
            .add_rules(path_beneath_rules(writable, fs))?;
        let fd: Option<OwnedFd> = created.into();
        Ok(fd.map(|fd| Confinement { fd }))
    }

    /// Makes the child of `cmd` enter this ruleset just before it executes the program. The
    /// ruleset file descriptor is close-on-exec, so the program never sees it.
    pub fn apply(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let fd = self.fd.as_raw_fd();
        // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
        // allowed. `enter` makes two syscalls on a copied integer: no allocation, no lock, no
        // output. The descriptor stays open in hx until `spawn` has returned, because the
        // caller keeps `self` alive across it.
        unsafe {
            cmd.pre_exec(move || enter(fd));
        }
    }
}

/// Restricts the calling (single-threaded, just forked) process with the ruleset `fd`:
/// `no_new_privs` first, which Landlock requires of an unprivileged process, then the
/// ruleset. Either failing fails the spawn, so a command never runs unconfined by accident.
fn enter(fd: RawFd) -> io::Result<()> {
    // SAFETY: plain syscalls with integer arguments.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}
