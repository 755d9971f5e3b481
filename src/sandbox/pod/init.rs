//! `hx __sandbox init`: makes the run's pod (A, K and B in the module's description). Runs
//! single-threaded, before anything of hx but `main`; every failure becomes one `error` line
//! on the report pipe (stdout), never a panic.

use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::sockets::{cover_socket, foreign_sockets};
use super::{attach_null, read_config, sys, PodConfig};
use crate::sandbox::caps::CapDrop;

/// stdin: the config, then the lifeline; stdout: the report.
const LIFELINE: i32 = 0;
const REPORT: i32 = 1;

fn report(line: &str) {
    sys::write_all(REPORT, format!("{line}\n").as_bytes());
}

pub fn main() -> i32 {
    let config = match read_config(LIFELINE) {
        Ok(c) => c,
        Err(e) => {
            report(&format!("error {e}"));
            return 1;
        }
    };
    // Read in hx's network namespace: the list is per namespace, and the pod's own is empty.
    let sockets = foreign_sockets(&config.kept(), &config.places, true);
    // SAFETY: getuid, getgid and prctl on this process; fork in a single-threaded process.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    unsafe {
        // B comes back to A when K exits, so A can wait for it and then clean up.
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
    // SAFETY: this process has one thread.
    let k = unsafe { libc::fork() };
    if k < 0 {
        report(&format!("error fork: {}", io::Error::last_os_error()));
        return 1;
    }
    if k == 0 {
        make_namespaces(&config, &sockets, uid, gid);
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    unsafe { libc::waitpid(k, &mut status, 0) };
    // Only B reports from here on; hx must see end-of-file when B exits early.
    sys::to_null(REPORT);
    sys::to_null(LIFELINE);
    loop {
        // SAFETY: waits for any child; ECHILD ends the loop.
        let r = unsafe { libc::waitpid(-1, &mut status, 0) };
        if r < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break;
        }
    }
    // The pod is gone: nothing can use its folder any more (hx removes it too on a normal
    // exit; this covers hx being killed).
    let _ = std::fs::remove_dir_all(&config.run_dir);
    0
}

/// K: the namespaces, the id maps, then B. Never returns.
fn make_namespaces(config: &PodConfig, sockets: &[PathBuf], uid: u32, gid: u32) -> ! {
    let mut flags =
        libc::CLONE_NEWUSER | libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
    if !config.network {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare on this single-threaded process.
    if unsafe { libc::unshare(flags) } != 0 {
        report(&format!("error unshare: {}", io::Error::last_os_error()));
        exit(1);
    }
    let maps = [
        ("/proc/self/setgroups", "deny".to_string()),
        ("/proc/self/uid_map", format!("{uid} {uid} 1\n")),
        ("/proc/self/gid_map", format!("{gid} {gid} 1\n")),
    ];
    for (file, text) in maps {
        if let Err(e) = std::fs::write(file, text) {
            report(&format!("error write {file}: {e}"));
            exit(1);
        }
    }
    // SAFETY: still one thread.
    let b = unsafe { libc::fork() };
    if b < 0 {
        report(&format!("error fork: {}", io::Error::last_os_error()));
        exit(1);
    }
    if b == 0 {
        pod_init(config, sockets);
    }
    report(&format!("pid {b}"));
    exit(0)
}

fn exit(code: i32) -> ! {
    // SAFETY: ends this process without running anything of the parent's (a forked copy).
    unsafe { libc::_exit(code) }
}

/// B: pid 1 of the pod. Never returns.
fn pod_init(config: &PodConfig, sockets: &[PathBuf]) -> ! {
    if let Err(e) = set_up(config, sockets) {
        report(&format!("error {e}"));
        exit(1);
    }
    // What B needs from here on (reaping, reading a pipe) takes no capability.
    let _ = CapDrop::detect().apply();
    let _ = std::env::set_current_dir("/");
    report("ready");
    // The report pipe stays open: B answers `stop` on it (see `serve`).
    sys::to_null(2);
    serve();
}

/// Reaps orphans, and exits when hx does (end-of-file on the lifeline), which kills every
/// process left in the pod. After `detach` (hx's `keep_background`), it exits when it is the
/// pod's last process instead.
fn serve() -> ! {
    // SAFETY: signal mask and signalfd calls on this single-threaded process.
    let sigfd = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK)
    };
    let mut detached = false;
    loop {
        let mut fds = [
            libc::pollfd {
                fd: if detached { -1 } else { LIFELINE },
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let timeout = if detached { 500 } else { -1 };
        // SAFETY: two pollfds we own.
        unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout) };
        if fds[1].revents != 0 {
            let mut info = [0u8; 128];
            // SAFETY: drains one signalfd record into a buffer of its size.
            unsafe { libc::read(sigfd, info.as_mut_ptr().cast(), info.len()) };
        }
        loop {
            let mut st = 0;
            // SAFETY: reaps any exited child without blocking.
            if unsafe { libc::waitpid(-1, &mut st, libc::WNOHANG) } <= 0 {
                break;
            }
        }
        if fds[0].revents != 0 {
            let mut buf = [0u8; 64];
            // SAFETY: into a buffer we own.
            let n = unsafe { libc::read(LIFELINE, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                exit(0);
            }
            // hx's word, a line at a time (it waits for the answer to `stop` before the next).
            for line in buf[..n as usize].split(|b| *b == b'\n') {
                match line {
                    b"detach" => detached = true,
                    b"stop" => report(if stop_all() { "stopped" } else { "running" }),
                    // SAFETY: a signal to every process of the pod but B.
                    b"cont" => unsafe {
                        libc::kill(-1, libc::SIGCONT);
                    },
                    _ => {}
                }
            }
        }
        if detached && alone() {
            exit(0);
        }
    }
}

/// How long B tries to stop the pod's processes before it says they still run.
const STOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Stops every process of the pod (`SIGSTOP`, which none can catch), for hx to act on the
/// workspace while none of them can change it (an editor's write in `hx acp`). Sent again until
/// `/proc` shows each stopped or dead, since one forked meanwhile may have missed it; `false`
/// when some still run after [`STOP_LIMIT`].
fn stop_all() -> bool {
    let deadline = std::time::Instant::now() + STOP_LIMIT;
    loop {
        // SAFETY: a signal to every process of the pod but B.
        unsafe { libc::kill(-1, libc::SIGSTOP) };
        if all_stopped() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
    }
}

/// Whether every process of the pod but B is stopped or dead (`T`, `t`, `Z`, `X` in its
/// `stat`; a process gone meanwhile counts as dead).
fn all_stopped() -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().all(|e| {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| *n != "1" && n.bytes().all(|b| b.is_ascii_digit()))
        else {
            return true;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            return true;
        };
        // The state follows the name, which is in parentheses and may hold anything.
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].trim_start().chars().next());
        matches!(state, Some('T' | 't' | 'Z' | 'X'))
    })
}

/// Whether pid 1 is the pod's only process.
fn alone() -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return true;
    };
    !dir.flatten().any(|e| {
        e.file_name()
            .to_str()
            .is_some_and(|n| n != "1" && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

fn step<T>(what: &str, path: &Path, r: io::Result<T>) -> io::Result<T> {
    r.map_err(|e| sys::fail(what, path, e))
}

/// A detached recursive copy of the tree at `path`, taken without following links.
fn clone_of(path: &Path, dir: bool, recursive: bool) -> io::Result<OwnedFd> {
    let fd = sys::open_path(path, dir)?;
    step("clone", path, sys::clone_tree(&fd, recursive))
}

const DEVICES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// The mounts of the design's section 4.2, in its order.
fn set_up(config: &PodConfig, sockets: &[PathBuf]) -> io::Result<()> {
    let ro = sys::MOUNT_ATTR_RDONLY | sys::MOUNT_ATTR_NOSUID | sys::MOUNT_ATTR_NODEV;
    sys::make_private()?;
    // First, so that the copies of the writable folders below carry the covers along.
    for path in &config.denied {
        cover_denied(path, &config.run_dir, ro)?;
    }
    // Copies of what stays reachable, taken before anything is hidden; parents first, so a
    // root inside another lands on top of it.
    let mut binds: Vec<(&PathBuf, bool)> = config.writable.iter().map(|w| (w, true)).collect();
    binds.extend(config.read_only.iter().map(|r| (r, false)));
    binds.sort_by_key(|(p, _)| p.components().count());
    let mut roots = Vec::new();
    for (path, writable) in binds {
        // A root may be a file (a device, a socket), not only a folder.
        let fd = sys::open_path(path, false)?;
        let is_dir = sys::file_type(&fd)? == libc::S_IFDIR;
        let tree = step("clone", path, sys::clone_tree(&fd, true))?;
        if !writable {
            step("make read-only", path, sys::set_attr_fd(&tree, ro, true))?;
        }
        roots.push((path.clone(), tree, is_dir));
    }
    let tmp = clone_of(&config.run_dir.join("tmp"), true, false)?;
    let shm = clone_of(&config.run_dir.join("shm"), true, false)?;
    let mut devices = Vec::new();
    for d in DEVICES {
        let p = PathBuf::from(format!("/dev/{d}"));
        if let Ok(fd) = sys::open_path(&p, false) {
            devices.push((d, step("clone", &p, sys::clone_tree(&fd, false))?));
        }
    }
    let mut back = Vec::new();
    for s in &config.allowed_sockets {
        match sys::open_path(s, false) {
            Ok(fd) => back.push((s.clone(), step("clone", s, sys::clone_tree(&fd, false))?)),
            // An allowed socket that is not there yet is not bound: nothing to reach.
            Err(_) => continue,
        }
    }
    if config.network {
        // systemd-resolved's stub: /etc/resolv.conf links into /run, which is hidden below.
        if let Ok(real) = std::fs::canonicalize("/etc/resolv.conf") {
            if real.starts_with("/run") {
                if let Ok(fd) = clone_of(&real, false, false) {
                    back.push((real, fd));
                }
            }
        }
    }
    // Item 4: chmod, chown, utimensat and setxattr outside the writable roots get EROFS.
    let root = sys::open_path(Path::new("/"), true)?;
    step(
        "make read-only",
        Path::new("/"),
        sys::set_attr_fd(&root, ro, true),
    )?;
    sys::mount_fs(
        "proc",
        Path::new("/proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        "",
    )?;
    if let Some(n) = config.max_processes {
        // The pod's own /proc: since Linux 6.14 `pid_max` is its PID namespace's, and B may
        // set it there. A fork past it gets EAGAIN, as past `ulimit -u`, which root ignores.
        // An older kernel has one for the whole machine, which B may not write: no bound.
        let _ = std::fs::write("/proc/sys/kernel/pid_max", n.to_string());
    }
    let tmp_dir = sys::open_path(Path::new("/tmp"), true)?;
    step("bind", Path::new("/tmp"), sys::attach(tmp, &tmp_dir))?;
    let run = Path::new("/run");
    let masked = sys::open_path(run, true).is_ok();
    if masked {
        sys::mount_fs(
            "tmpfs",
            run,
            libc::MS_NOSUID | libc::MS_NODEV,
            "mode=755,size=1m",
        )?;
    }
    for (path, tree, is_dir) in roots {
        let target = mount_point(&path, is_dir)?;
        step("bind", &path, sys::attach(tree, &target))?;
    }
    for g in &config.git_dirs {
        protect_git(g, ro)?;
    }
    for w in &config.git_worktrees {
        protect_worktree(w, ro)?;
    }
    for f in &config.git_files {
        read_only_file(f, ro)?;
    }
    for s in sockets {
        // A socket that vanished, or one behind a link, is no one's to reach.
        let _ = cover_socket(s);
    }
    for (path, tree) in back {
        let target = mount_point(&path, false)?;
        step("bind", &path, sys::attach(tree, &target))?;
    }
    if masked {
        let fd = sys::open_path(run, true)?;
        step(
            "make read-only",
            run,
            sys::set_attr_fd(&fd, sys::MOUNT_ATTR_RDONLY, false),
        )?;
    }
    set_up_dev(devices, shm)?;
    if !config.network {
        loopback_up()?;
    }
    Ok(())
}

/// The mount point for `path`: the path itself when it exists; else, beneath the pod's own
/// `/tmp` or `/run`, made (folders, or an empty file for a socket or file).
fn mount_point(path: &Path, dir: bool) -> io::Result<OwnedFd> {
    if let Ok(fd) = sys::open_path(path, dir) {
        return Ok(fd);
    }
    if !(path.starts_with("/tmp") || path.starts_with("/run")) {
        return Err(sys::fail(
            "find",
            path,
            io::Error::from(io::ErrorKind::NotFound),
        ));
    }
    let made = if dir {
        std::fs::create_dir_all(path)
    } else {
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|_| std::fs::File::create(path).map(drop))
    };
    step("make", path, made)?;
    sys::open_path(path, dir)
}

/// Item 6: the git folder cannot be renamed away (it is a mount point), and its config,
/// config.worktree, hooks and info are read-only. A missing hooks or info folder is made
/// first (empty, as `git init` leaves them), so that neither can be created in the run; a
/// link gets `/dev/null` on it. A missing config.worktree is left missing: git reads it only
/// with `extensions.worktreeConfig` set, which the read-only config keeps a command from
/// setting, and the user's `.git` gains no file it did not have.
fn protect_git(git: &Path, ro: u64) -> io::Result<()> {
    let Ok(fd) = sys::open_path(git, true) else {
        return Ok(());
    };
    let tree = step("clone", git, sys::clone_tree(&fd, true))?;
    step("bind", git, sys::attach(tree, &fd))?;
    for (name, dir) in [
        ("config", false),
        ("config.worktree", false),
        ("hooks", true),
        ("info", true),
    ] {
        let path = git.join(name);
        let fd = match sys::open_path(&path, false) {
            Ok(fd) => fd,
            Err(e) if e.kind() == io::ErrorKind::NotFound && name == "config.worktree" => {
                continue;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let made = if dir {
                    std::fs::create_dir(&path)
                } else {
                    make_empty(&path)
                };
                step("make", &path, made)?;
                sys::open_path(&path, false)?
            }
            Err(e) => return Err(e),
        };
        if sys::file_type(&fd)? == libc::S_IFLNK {
            step("cover", &path, attach_null(&fd))?;
            continue;
        }
        let tree = step("clone", &path, sys::clone_tree(&fd, true))?;
        step("make read-only", &path, sys::set_attr_fd(&tree, ro, true))?;
        step("bind", &path, sys::attach(tree, &fd))?;
    }
    Ok(())
}

/// Issue 32, item 3: a linked worktree's own folder (`.git/worktrees/NAME`) cannot be
/// renamed away, and the files that send its git elsewhere (`commondir`, `gitdir`,
/// `config.worktree`) are read-only where they exist; one that does not is removed by hx
/// after each command if a command makes it (`sandbox::gitdirs::Redirects`).
fn protect_worktree(dir: &Path, ro: u64) -> io::Result<()> {
    let Ok(fd) = sys::open_path(dir, true) else {
        return Ok(());
    };
    let tree = step("clone", dir, sys::clone_tree(&fd, true))?;
    step("bind", dir, sys::attach(tree, &fd))?;
    for name in ["commondir", "gitdir", "config.worktree"] {
        read_only_file(&dir.join(name), ro)?;
    }
    Ok(())
}

/// `path` bound read-only on itself (so it can be neither written nor renamed away), or
/// `/dev/null` on it when it is a link; nothing when it does not exist.
fn read_only_file(path: &Path, ro: u64) -> io::Result<()> {
    let fd = match sys::open_path(path, false) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if sys::file_type(&fd)? == libc::S_IFLNK {
        return step("cover", path, attach_null(&fd));
    }
    let tree = step("clone", path, sys::clone_tree(&fd, false))?;
    step("make read-only", path, sys::set_attr_fd(&tree, ro, false))?;
    step("bind", path, sys::attach(tree, &fd))
}

/// Item 12: a denied file gets the run's empty mode-0 file on it, a folder the run's empty
/// folder, a link `/dev/null`; each read-only, and a mount point, so it can be neither read,
/// written, renamed nor removed. One that vanished since hx looked is nothing to hide.
fn cover_denied(path: &Path, run_dir: &Path, ro: u64) -> io::Result<()> {
    let fd = match sys::open_path(path, false) {
        Ok(fd) => fd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    let template = match sys::file_type(&fd)? {
        libc::S_IFLNK => return step("cover", path, super::attach_null(&fd)),
        libc::S_IFDIR => run_dir.join(super::DENIED_DIR),
        _ => run_dir.join(super::DENIED_FILE),
    };
    let cover = clone_of(&template, false, false)?;
    step("make read-only", path, sys::set_attr_fd(&cover, ro, false))?;
    step("cover", path, sys::attach(cover, &fd))
}

fn make_empty(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map(drop)
}

/// Item 1: a `/dev` with the data devices, `tty` (which a command without a controlling
/// terminal cannot open), a `devpts` of the pod's own and the run's `shm`; no host terminal,
/// no console, no `tty0...N`.
fn set_up_dev(devices: Vec<(&str, OwnedFd)>, shm: OwnedFd) -> io::Result<()> {
    let dev = Path::new("/dev");
    sys::mount_fs(
        "tmpfs",
        dev,
        libc::MS_NOSUID | libc::MS_NOEXEC,
        "mode=755,size=64k",
    )?;
    for (name, tree) in devices {
        let p = dev.join(name);
        step("make", &p, make_empty(&p))?;
        let target = sys::open_path(&p, false)?;
        step("bind", &p, sys::attach(tree, &target))?;
    }
    for (link, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
        ("ptmx", "pts/ptmx"),
    ] {
        let p = dev.join(link);
        step("link", &p, std::os::unix::fs::symlink(to, &p))?;
    }
    let pts = dev.join("pts");
    step("make", &pts, std::fs::create_dir(&pts))?;
    sys::mount_fs(
        "devpts",
        &pts,
        libc::MS_NOSUID | libc::MS_NOEXEC,
        "newinstance,ptmxmode=0666,mode=620",
    )?;
    let shm_dir = dev.join("shm");
    step("make", &shm_dir, std::fs::create_dir(&shm_dir))?;
    let target = sys::open_path(&shm_dir, true)?;
    step("bind", &shm_dir, sys::attach(shm, &target))?;
    let fd = sys::open_path(dev, true)?;
    step(
        "make read-only",
        dev,
        sys::set_attr_fd(&fd, sys::MOUNT_ATTR_RDONLY, false),
    )
}

/// `lo` up in the pod's new network namespace: commands' own loopback servers work, and
/// nothing else is there to reach.
fn loopback_up() -> io::Result<()> {
    #[repr(C)]
    struct IfReq {
        name: [u8; 16],
        flags: libc::c_short,
        pad: [u8; 22],
    }
    let mut req = IfReq {
        name: [0; 16],
        flags: 0,
        pad: [0; 22],
    };
    req.name[..2].copy_from_slice(b"lo");
    let fail = |what: &str| io::Error::other(format!("{what} lo: {}", io::Error::last_os_error()));
    // SAFETY: a datagram socket and two ioctls on a struct of the size the kernel reads.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(fail("socket for"));
        }
        let s = <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(s);
        use std::os::fd::AsRawFd;
        if libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) != 0 {
            return Err(fail("read flags of"));
        }
        req.flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        if libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) != 0 {
            return Err(fail("bring up"));
        }
    }
    Ok(())
}
