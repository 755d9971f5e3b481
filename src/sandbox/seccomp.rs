//! The commands' seccomp filter: a few syscalls refused whatever Landlock offers.
//!
//! - Only the native architecture: a syscall made through another ABI (i386's `int 0x80`, x32
//!   on x86-64) kills the process, since its numbers mean other calls and no rule below
//!   would see them.
//! - `io_uring_setup` answers `ENOSYS`, as on a kernel without io_uring: its ring runs
//!   operations (`socket`, `connect`, `openat`) that no syscall rule sees. Programs that use
//!   it fall back to plain syscalls.
//! - With `network = false`, `socket` answers `EACCES` for every address family but Unix and
//!   netlink (and IP in the pod, whose network namespace cuts it). Landlock refuses only TCP
//!   `connect` and `bind`; UDP, TCP Fast Open (`sendto(MSG_FASTOPEN)`, which connects without
//!   `connect`) and MPTCP (protocol 262) went past it. No IP socket at all closes every one of
//!   them, at the price of the command's own loopback servers too. A network namespace cuts
//!   only the families it owns: `AF_VSOCK` reaches the VM's host from any of them (issue 32),
//!   and TIPC, Bluetooth, CAN, RDS and the rest are no business of a command either, so the
//!   families allowed are listed, not the ones refused.
//!
//! Hand-written classic BPF rather than a crate (rust-vmm's `seccompiler` was the candidate):
//! the program is at most 16 fixed instructions, built once from constants, and installing it is one
//! `prctl`; a crate would bring a rule compiler for that (and is not in this build's offline
//! registry). The program is built in hx, before any fork: [`Filter::install`] only reads it,
//! so it is safe in the forked child (no allocation, no lock).

use std::io;

/// The architecture hx was built for, as the kernel reports it in `seccomp_data.arch`
/// (`AUDIT_ARCH_*` of linux/audit.h); `None` where hx has no filter for it.
#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xC000_003E);
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xC000_00B7);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<u32> = None;

/// x32's syscalls are x86-64's numbers with this bit set, under x86-64's `arch`.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: Option<u32> = Some(0x4000_0000);
#[cfg(not(target_arch = "x86_64"))]
const X32_SYSCALL_BIT: Option<u32> = None;

/// Offsets in `struct seccomp_data`: `nr`, `arch`, then the low half of `args[0]` (hx's
/// architectures are little-endian).
const NR: u32 = 0;
const ARCH_AT: u32 = 4;
const ARG0_LOW: u32 = 16;

/// `SECCOMP_MODE_FILTER` for `PR_SET_SECCOMP`.
const MODE_FILTER: libc::c_ulong = 2;

/// A seccomp program, ready for a child to install.
#[derive(Debug)]
pub struct Filter {
    program: Box<[libc::sock_filter]>,
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    }
}

/// A jump on `A == k` (or `A >= k` with `BPF_JGE`): `jt` or `jf` instructions ahead.
fn jump(op: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: (libc::BPF_JMP | op | libc::BPF_K) as u16,
        jt,
        jf,
        k,
    }
}

const BPF_JGE: u32 = 0x30;

/// The sockets a command may make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sockets {
    /// Any (`network = true`).
    All,
    /// Unix, netlink and IP: a pod's own network namespace cuts IP (`network = false`).
    InNamespace,
    /// Unix and netlink only (`network = false` without a pod).
    Local,
}

impl Filter {
    /// The filter of commands, making only the sockets `sockets` allows; `None` on an
    /// architecture hx has no filter for.
    pub fn new(sockets: Sockets) -> Option<Filter> {
        let arch = ARCH?;
        let load = |at| stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, at);
        let ret = |what| stmt(libc::BPF_RET | libc::BPF_K, what);
        let kill = ret(libc::SECCOMP_RET_KILL_PROCESS);
        let errno = |e: i32| ret(libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA));
        let mut p = vec![
            load(ARCH_AT),
            jump(libc::BPF_JEQ, arch, 1, 0),
            kill,
            load(NR),
        ];
        if let Some(bit) = X32_SYSCALL_BIT {
            p.extend([jump(BPF_JGE, bit, 0, 1), kill]);
        }
        p.extend([
            jump(libc::BPF_JEQ, libc::SYS_io_uring_setup as u32, 0, 1),
            errno(libc::ENOSYS),
        ]);
        let allowed: &[i32] = match sockets {
            Sockets::All => &[],
            Sockets::InNamespace => &[
                libc::AF_UNIX,
                libc::AF_NETLINK,
                libc::AF_INET,
                libc::AF_INET6,
            ],
            Sockets::Local => &[libc::AF_UNIX, libc::AF_NETLINK],
        };
        if !allowed.is_empty() {
            // Each allowed family jumps to the final allow, past the rest and the refusal.
            let n = allowed.len() as u8;
            // Not socket(2): on to the final allow, past the family checks and the refusal.
            p.push(jump(libc::BPF_JEQ, libc::SYS_socket as u32, 0, n + 2));
            p.push(load(ARG0_LOW));
            for (i, family) in allowed.iter().enumerate() {
                p.push(jump(libc::BPF_JEQ, *family as u32, n - i as u8, 0));
            }
            p.push(errno(libc::EACCES));
        }
        p.push(ret(libc::SECCOMP_RET_ALLOW));
        Some(Filter {
            program: p.into_boxed_slice(),
        })
    }

    /// Installs the filter on the calling thread and what it starts. Run in the forked child
    /// after `no_new_privs` (which an unprivileged process needs for it): one `prctl` on a
    /// program built earlier, so it is async-signal-safe.
    pub fn install(&self) -> io::Result<()> {
        let prog = libc::sock_fprog {
            len: self.program.len() as u16,
            filter: self.program.as_ptr().cast_mut(),
        };
        // SAFETY: the kernel copies the program (which it only reads) during the call; `prog`
        // and `self.program` outlive it.
        let r = unsafe {
            libc::prctl(
                libc::PR_SET_SECCOMP,
                MODE_FILTER,
                &prog as *const libc::sock_fprog,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// How many instructions the program has.
    pub fn len(&self) -> usize {
        self.program.len()
    }

    pub fn is_empty(&self) -> bool {
        self.program.is_empty()
    }
}

/// Whether commands here can have the filter: hx knows this architecture, and the kernel has
/// seccomp filters. Asked in hx with a null program, which a kernel with filters refuses with
/// `EFAULT` (and one without them with `EINVAL`), installing nothing.
pub fn available() -> bool {
    if ARCH.is_none() {
        return false;
    }
    // SAFETY: a null program pointer is rejected before anything is installed.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_SECCOMP,
            MODE_FILTER,
            std::ptr::null::<libc::sock_fprog>(),
        )
    };
    r != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `script` in a child that installs `filter` (after `no_new_privs`), returning its
    /// exit status and output.
    fn run_filtered(filter: &Filter, argv: &[&str]) -> std::process::Output {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new(argv[0]);
        cmd.args(&argv[1..]);
        let prog = filter.program.as_ptr() as usize;
        let len = filter.program.len();
        // SAFETY: prctl calls on integers and a program that outlives the child's exec (the
        // filter lives in this frame until `output` returns).
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                    return Err(io::Error::last_os_error());
                }
                let prog = libc::sock_fprog {
                    len: len as u16,
                    filter: prog as *mut libc::sock_filter,
                };
                if libc::prctl(libc::PR_SET_SECCOMP, MODE_FILTER, &prog) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.output().expect("run")
    }

    #[test]
    fn the_program_s_jumps_land_inside_it() {
        for sockets in [Sockets::All, Sockets::InNamespace, Sockets::Local] {
            let f = Filter::new(sockets).expect("an architecture with a filter");
            for (i, ins) in f.program.iter().enumerate() {
                if ins.code as u32 & 0x07 == libc::BPF_JMP {
                    let far = i + 1 + ins.jt.max(ins.jf) as usize;
                    assert!(far < f.len(), "instruction {i} jumps to {far}");
                }
            }
            let last = f.program[f.len() - 1];
            assert_eq!(last.k, libc::SECCOMP_RET_ALLOW);
        }
        assert!(
            Filter::new(Sockets::Local).unwrap().len() > Filter::new(Sockets::All).unwrap().len()
        );
        assert!(available(), "this kernel has seccomp filters");
    }

    #[test]
    fn ip_sockets_are_refused_and_the_rest_allowed() {
        // IPv4, IPv6, MPTCP, netlink, vsock (40), TIPC (30), then a Unix socket.
        let script = "import socket, errno\n\
            for fam, kind, proto in [(socket.AF_INET, socket.SOCK_STREAM, 0), \
            (socket.AF_INET6, socket.SOCK_DGRAM, 0), (socket.AF_INET, socket.SOCK_STREAM, 262), \
            (socket.AF_NETLINK, socket.SOCK_RAW, 0), (40, socket.SOCK_STREAM, 0), \
            (30, socket.SOCK_RDM, 0)]:\n\
            \x20   try: socket.socket(fam, kind, proto); print('made')\n\
            \x20   except OSError as e: print(errno.errorcode[e.errno])\n\
            socket.socket(socket.AF_UNIX); print('unix')\n";
        let run = |s| {
            let out = run_filtered(&Filter::new(s).unwrap(), &["python3", "-c", script]);
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let lines = |s| run(s).lines().map(str::to_string).collect::<Vec<_>>();
        let local = lines(Sockets::Local);
        assert_eq!(local[..3], ["EACCES"; 3], "{local:?}");
        assert_eq!(local[3], "made", "{local:?}");
        assert_eq!(local[4..], ["EACCES", "EACCES", "unix"], "{local:?}");
        let pod = lines(Sockets::InNamespace);
        assert_eq!(pod[..2], ["made", "made"], "{pod:?}");
        assert_eq!(pod[3], "made", "{pod:?}");
        assert_eq!(pod[4..], ["EACCES", "EACCES", "unix"], "{pod:?}");
        // With the network, no family is the filter's business (the kernel may lack some).
        let all = lines(Sockets::All);
        assert_eq!(all[..2], ["made", "made"], "{all:?}");
        assert!(!all.iter().any(|l| l == "EACCES"), "{all:?}");
        assert_eq!(all.last().map(String::as_str), Some("unix"), "{all:?}");
    }

    #[test]
    fn io_uring_is_not_there() {
        let script = "import ctypes, os\n\
            libc = ctypes.CDLL(None, use_errno=True)\n\
            p = ctypes.create_string_buffer(120)\n\
            r = libc.syscall(425, 4, p)\n\
            print(r, os.strerror(ctypes.get_errno()))\n";
        let out = run_filtered(
            &Filter::new(Sockets::All).unwrap(),
            &["python3", "-c", script],
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "-1 Function not implemented\n",
            "{out:?}"
        );
    }

    /// A syscall through i386's `int 0x80` (here `getpid`, 20) kills the process: only the
    /// native numbers are checked.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn a_foreign_architecture_s_syscall_kills() {
        use std::os::unix::process::ExitStatusExt;
        let script = "import mmap, ctypes\n\
            m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n\
            m.write(bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3]))\n\
            f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n\
            print('pid', f() > 0)\n";
        let out = run_filtered(
            &Filter::new(Sockets::All).unwrap(),
            &["python3", "-c", script],
        );
        assert_eq!(out.status.signal(), Some(libc::SIGSYS), "{out:?}");
        // Without the filter the same call answers.
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .expect("run");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "pid True\n",
            "{out:?}"
        );
    }
}
