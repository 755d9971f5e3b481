//! Capabilities: a root hx (CI runs as root) would hand every one of its capabilities to the
//! commands it runs, and `CAP_NET_RAW`, `CAP_CHOWN`, `CAP_SYS_ADMIN` and the rest go around
//! everything Landlock refuses (a raw `AF_PACKET` socket sends past the TCP rules). A command
//! gets none: the ambient set cleared, the bounding set emptied (so that no later exec can
//! grant one back, root's own programs included) and the other sets zeroed. With
//! `no_new_privs` set first, set-user-ID and file-capability programs gain nothing either.

use std::io;

/// What the child drops, decided in hx before any fork: the kernel's highest capability, and
/// whether hx may shrink the bounding set at all (that needs `CAP_SETPCAP`, which an
/// unprivileged hx lacks; its bounding set then grants nothing under `no_new_privs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapDrop {
    last: u32,
    bounding: bool,
}

/// `CAP_SETPCAP` (linux/capability.h), which libc does not name.
const CAP_SETPCAP: u32 = 8;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit sets, as two 32-bit halves.
const VERSION_3: u32 = 0x2008_0522;

#[repr(C)]
struct Header {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Data {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

impl CapDrop {
    /// Reads what the drop needs, in hx (it reads a file, which the child must not).
    pub fn detect() -> CapDrop {
        let last = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok())
            .filter(|&n| n < 64)
            .unwrap_or_else(probe_last);
        CapDrop {
            last,
            bounding: effective(CAP_SETPCAP),
        }
    }

    /// Drops every capability of the calling process: run in the forked child, so only
    /// syscalls on integers and the stack (async-signal-safe). Any failure fails the spawn,
    /// so a command never keeps a capability by accident.
    pub(super) fn apply(self) -> io::Result<()> {
        // SAFETY: prctl and capset with integer arguments and pointers to locals.
        unsafe {
            // The ambient set does not exist before Linux 4.3 (EINVAL): nothing to clear there.
            if libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
                && io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL)
            {
                return Err(io::Error::last_os_error());
            }
            // Before capset: dropping from the bounding set needs CAP_SETPCAP in effect.
            if self.bounding {
                for cap in 0..=self.last {
                    if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                }
            }
            let header = Header {
                version: VERSION_3,
                pid: 0,
            };
            let none = [Data::default(); 2];
            if libc::syscall(libc::SYS_capset, &header as *const Header, none.as_ptr()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// The highest capability the bounding set knows, found by asking (`PR_CAPBSET_READ` answers
/// `EINVAL` past it), for a system without `/proc`.
fn probe_last() -> u32 {
    // SAFETY: PR_CAPBSET_READ only reads this process's bounding set.
    let known = |cap: u32| unsafe {
        libc::prctl(libc::PR_CAPBSET_READ, cap as libc::c_ulong, 0, 0, 0) >= 0
    };
    (0..64u32).take_while(|&cap| known(cap)).last().unwrap_or(0)
}

/// Whether hx itself has `cap` in effect.
fn effective(cap: u32) -> bool {
    let mut header = Header {
        version: VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget fills the two structs we own.
    let r = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    let (word, bit) = ((cap / 32) as usize, cap % 32);
    r == 0
        && data
            .get(word)
            .is_some_and(|d| d.effective & (1 << bit) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kernel_s_last_capability_is_found_with_or_without_proc() {
        let d = CapDrop::detect();
        // CAP_AUDIT_READ (37) came with Linux 3.16; hx's kernels are newer.
        assert!(d.last >= 37, "{d:?}");
        assert_eq!(probe_last(), d.last);
    }
}
