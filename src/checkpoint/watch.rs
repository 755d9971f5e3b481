//! Knowing what changed without looking: inotify watches on every folder a checkpoint can
//! take files from, so that a checkpoint after one that saw the same workspace costs a read of
//! the event queue and of the files the events named (`live`), instead of a stat of every file.
//!
//! What a checkpoint takes depends on the files of the workspace's folders that git does not
//! ignore, on the ignore rules, and on nothing else hx does not set. Every folder that is not
//! ignored is watched (the folders above the workspace up to the repository's top too, for
//! their `.gitignore`, and `.git/info` for `exclude`). An event on a file of a watched folder
//! names that file; one on a folder (made, moved, removed), on an ignore file, or an overflow
//! makes the next checkpoint look again. The global excludes file is outside the workspace:
//! its modification time is compared instead. The kernel tells of changes made by any process
//! in any mount namespace (the pod's bind mounts are the same inodes).
//!
//! What inotify does not see, and so what a checkpoint can miss until the next event in the
//! folder: a write through a hard link whose other name is outside the watched folders, and a
//! write through a shared `mmap` of a file. Neither is how tools and editors change source.
//!
//! Watching stops for the run (every checkpoint looks, as without it) when the folders pass
//! [`MAX_FOLDERS`], when the kernel's watch limit is reached, or on any error.

use std::collections::{BTreeSet, HashMap};
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// Folders watched at most: beyond it, checkpoints look every time.
pub const MAX_FOLDERS: usize = 65_536;
/// Files named at most between two checkpoints: beyond it, the next checkpoint looks (a
/// walk is then as cheap as taking them one by one).
pub const MAX_CHANGED: usize = 10_000;

/// The events that may change what a checkpoint takes: content, mode, names. (Public for
/// `cargo bench --bench protections`, whose kernel's part sets the same watches.)
pub fn flags() -> WatchFlags {
    WatchFlags::MODIFY
        | WatchFlags::ATTRIB
        | WatchFlags::CLOSE_WRITE
        | WatchFlags::CREATE
        | WatchFlags::DELETE
        | WatchFlags::MOVED_FROM
        | WatchFlags::MOVED_TO
        | WatchFlags::DELETE_SELF
        | WatchFlags::MOVE_SELF
        | WatchFlags::DONT_FOLLOW
        | WatchFlags::ONLYDIR
}

#[derive(Debug, Default)]
struct State {
    /// The files events named since the checkpoint that looked or took changes last, as
    /// paths relative to the work tree's top.
    changed: BTreeSet<Vec<u8>>,
    /// A folder was made, moved or removed, or an ignore file changed, or the queue
    /// overflowed: the watches must be brought up to date, and the next checkpoint looks.
    resync: bool,
    /// The tree the last checkpoint found, which the files in `changed` change.
    clean: Option<String>,
    /// The global excludes file's modification time when the watches were set.
    excludes: Option<SystemTime>,
    /// Watching gave up: every checkpoint looks.
    off: bool,
    /// Each watch's folder, relative to the work tree's top (none: a folder watched only
    /// for its ignore file).
    folders: HashMap<i32, Option<Vec<u8>>>,
}

/// What the events since the last checkpoint say.
#[derive(Debug, PartialEq, Eq)]
pub enum Pending {
    /// Nothing a checkpoint takes changed: the last tree is the answer.
    Unchanged(String),
    /// Only these files changed (relative to the work tree's top), in the last tree.
    Changed(String, Vec<Vec<u8>>),
    /// Only a look can tell.
    Look,
}

#[derive(Debug)]
pub struct Watch {
    /// Closed by the watch's drop, through a [`Closer`].
    fd: std::mem::ManuallyDrop<OwnedFd>,
    excludes_file: Option<PathBuf>,
    state: Mutex<State>,
}

impl Watch {
    /// A watch with no folder yet (the first look sets them), or none where inotify is not
    /// available.
    pub fn new(excludes_file: Option<PathBuf>) -> Option<Watch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        Some(Watch {
            fd: std::mem::ManuallyDrop::new(fd),
            excludes_file,
            state: Mutex::new(State {
                resync: true,
                ..State::default()
            }),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn excludes_time(&self) -> Option<SystemTime> {
        let f = self.excludes_file.as_ref()?;
        std::fs::metadata(f).and_then(|m| m.modified()).ok()
    }

    /// Reads every queued event into the state.
    fn drain(&self, st: &mut State) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = inotify::Reader::new(&*self.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(ev) => note(
                    st,
                    ev.wd(),
                    ev.events(),
                    ev.file_name().map(|n| n.to_bytes()),
                ),
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    st.off = true;
                    break;
                }
            }
        }
    }

    /// What changed since the last checkpoint, as far as the events tell.
    pub fn pending(&self) -> Pending {
        let mut st = self.state();
        if st.off {
            return Pending::Look;
        }
        self.drain(&mut st);
        if st.resync || st.off || st.excludes != self.excludes_time() {
            return Pending::Look;
        }
        let Some(clean) = st.clean.clone() else {
            return Pending::Look;
        };
        if st.changed.is_empty() {
            Pending::Unchanged(clean)
        } else {
            let changed = std::mem::take(&mut st.changed);
            Pending::Changed(clean, changed.into_iter().collect())
        }
    }

    /// Before a look: events so far are what the look will see. Whether the watches must be
    /// set again first (see [`Watch::sync`]).
    pub fn begin(&self) -> bool {
        let mut st = self.state();
        self.drain(&mut st);
        st.changed.clear();
        st.clean = None;
        !st.off && st.resync
    }

    /// After a checkpoint that found `tree` (a look, or the changed files taken): it stays
    /// the answer until an event comes.
    pub fn looked(&self, tree: &str) {
        let mut st = self.state();
        if !st.off && !st.resync {
            st.clean = Some(tree.to_string());
        }
    }

    /// Sets the watches again: the folders `also` (for their ignore files only), then each
    /// folder `walk` gives to the function it is handed (relative to the top), which says
    /// whether watching goes on; `walk` says whether it gave every folder. Called before the
    /// look whose result [`Watch::looked`] keeps, so nothing after the watches were set is
    /// missed.
    pub fn sync(
        &self,
        also: &[PathBuf],
        walk: impl FnOnce(&(dyn Fn(&Path, Vec<u8>) -> bool + Sync)) -> bool,
    ) {
        let excludes = self.excludes_time();
        self.state().folders.clear();
        let ok = also.iter().all(|a| !a.is_dir() || self.add(a, None))
            && walk(&|dir: &Path, rel: Vec<u8>| self.add(dir, Some(rel)));
        let mut st = self.state();
        if ok {
            st.resync = false;
            st.excludes = excludes;
        } else {
            st.off = true;
            st.clean = None;
        }
    }

    /// Watches `dir`, known as `rel` (relative to the top; none: only its ignore file
    /// counts).
    fn add(&self, dir: &Path, rel: Option<Vec<u8>>) -> bool {
        match inotify::add_watch(&*self.fd, dir, flags()) {
            Ok(wd) => {
                self.state().folders.insert(wd, rel);
                true
            }
            // Gone or not a folder: nothing there to miss.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => true,
            // The watch limit (ENOSPC), no memory, no access: give up watching.
            Err(_) => false,
        }
    }
}

/// Closing an inotify instance that has watches waits for the kernel to retire them (an
/// RCU grace period: 10 to 24 ms measured on hx's exit here, against 0.1 ms for any other
/// close), which held up every run's end. A child made for it holds the last reference
/// and waits instead: it closes every other descriptor first (so no pipe's reader waits on
/// it), waits until hx has closed its own copy, then closes the instance and exits; hx's
/// own close is then only a reference dropped. Without that wait the two closes raced: among
/// 2,000 watched folders the child closed first in one run of six under `perf record` and
/// one of nine under `perf trace` (`cargo bench --bench protections`), and hx's close, the
/// last, waited 14 ms.
///
/// The child shares hx's memory (`CLONE_VM`, as `posix_spawn`'s child does) instead of
/// being a fork: a fork's copy-on-write made each page hx wrote while the child lived a
/// fault and a copy, which cost the end of a run about 2 ms (issue 33).
impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: the field is not used again: this is the watch's end.
        let fd = unsafe { std::mem::ManuallyDrop::take(&mut self.fd) };
        let closer = Closer::start(&fd);
        // Without a closer (none could be made), this close is the last, and waits.
        drop(fd);
        if let Some(closer) = closer {
            crate::process::cleanup::let_go(closer.release());
        }
    }
}

/// Bytes of the mapping the child that closes an inotify instance runs on: its stack, and
/// at the bottom the [`Handover`] it shares with hx.
const CLOSER_STACK: usize = 64 * 1024;

/// How many times, of at most 10 ms each, the closer waits for hx's own close (a hx that
/// died in between never says it closed; a wait may also end early): then it closes all the
/// same. About 3 s, so that only a hx stalled that long between the two lets the child's
/// close come first.
const CLOSER_WAIT_ROUNDS: u32 = 300;
const CLOSER_WAIT_ROUND_NS: i64 = 10_000_000;

/// A system call made without glibc, whose `syscall()` writes `errno` when a call fails. The
/// closer runs on the thread-local storage of the hx thread that dropped the watch (it is
/// made without `CLONE_SETTLS`), so each failed call would write that thread's `errno`, or
/// freed memory once the thread has ended; and its futex waits fail as a rule (a timeout,
/// or the word already set). The kernel's result: a negative errno on failure.
///
/// # Safety
/// The caller passes arguments valid for the call `nr`.
#[cfg(target_arch = "x86_64")]
unsafe fn raw_syscall(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the Linux x86_64 system call convention; the kernel writes rax, rcx and r11.
    unsafe {
        std::arch::asm!(
            "syscall",
            inlateout("rax") nr as isize => ret,
            in("rdi") a,
            in("rsi") b,
            in("rdx") c,
            in("r10") d,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    ret
}

/// See the x86_64 version.
///
/// # Safety
/// The caller passes arguments valid for the call `nr`.
#[cfg(target_arch = "aarch64")]
unsafe fn raw_syscall(nr: libc::c_long, a: usize, b: usize, c: usize, d: usize) -> isize {
    let ret: isize;
    // SAFETY: the Linux aarch64 system call convention; the kernel writes x0.
    unsafe {
        std::arch::asm!(
            "svc 0",
            in("x8") nr,
            inlateout("x0") a as isize => ret,
            in("x1") b,
            in("x2") c,
            in("x3") d,
            options(nostack),
        );
    }
    ret
}

/// What hx and the closer share, at the bottom of the closer's stack mapping.
#[repr(C)]
struct Handover {
    fd: u32,
    /// Set to 1, with a futex wake, once hx has closed its copy of `fd`.
    closed: std::sync::atomic::AtomicU32,
}

/// A closer child started and waiting for hx's close: to be released (a closer dropped
/// unreleased waits out its rounds, and is not let go at hx's end).
#[must_use]
struct Closer {
    pid: libc::pid_t,
    handover: *const Handover,
}

impl Closer {
    /// Starts a child, sharing hx's memory, that holds a copy of `fd`, closes every other
    /// descriptor, waits for [`Closer::release`] (about 3 s at most), closes `fd` and exits.
    /// None where the child cannot be made.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn start(fd: &OwnedFd) -> Option<Closer> {
        use std::os::fd::AsRawFd;
        /// The child: only raw system calls (never glibc's, see [`raw_syscall`]) on its own
        /// descriptors and its own mapping, so that no memory of hx's is written.
        extern "C" fn closer(arg: *mut libc::c_void) -> libc::c_int {
            // SAFETY: `arg` is the Handover at the bottom of this child's own mapping, which
            // is never unmapped.
            let handover = unsafe { &*(arg as *const Handover) };
            let fd = handover.fd as usize;
            // SAFETY: system calls on the child's own copies of the descriptors, a futex
            // wait on a word of its own mapping with a timeout on its own stack, and its
            // exit. A close_range the kernel lacks (before 5.9) fails and leaves the
            // descriptors open until the exit, as before.
            unsafe {
                if fd > 0 {
                    raw_syscall(libc::SYS_close_range, 0, fd - 1, 0, 0);
                }
                raw_syscall(libc::SYS_close_range, fd + 1, u32::MAX as usize, 0, 0);
                let round = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: CLOSER_WAIT_ROUND_NS,
                };
                for _ in 0..CLOSER_WAIT_ROUNDS {
                    if handover.closed.load(std::sync::atomic::Ordering::Acquire) != 0 {
                        break;
                    }
                    raw_syscall(
                        libc::SYS_futex,
                        &handover.closed as *const std::sync::atomic::AtomicU32 as usize,
                        (libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG) as usize,
                        0,
                        &round as *const libc::timespec as usize,
                    );
                }
                raw_syscall(libc::SYS_close, fd, 0, 0, 0);
                raw_syscall(libc::SYS_exit, 0, 0, 0, 0);
            }
            0
        }
        let fd = u32::try_from(fd.as_raw_fd()).ok()?;
        // SAFETY: the mapping is made here and never unmapped (the child may outlive hx's
        // use of it, and hx itself: 64 KiB a watch dropped, once a run or a chat
        // conversation); the Handover is written before the child exists; the child starts
        // with every signal blocked, so no handler of hx's runs on it; `closer` touches only
        // its own mapping.
        unsafe {
            let stack = libc::mmap(
                std::ptr::null_mut(),
                CLOSER_STACK,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if stack == libc::MAP_FAILED {
                return None;
            }
            let handover = stack.cast::<Handover>();
            handover.write(Handover {
                fd,
                closed: std::sync::atomic::AtomicU32::new(0),
            });
            let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            let mut was = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigfillset(all.as_mut_ptr());
            libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), was.as_mut_ptr());
            let pid = libc::clone(
                closer,
                stack.cast::<u8>().add(CLOSER_STACK).cast(),
                libc::CLONE_VM | libc::SIGCHLD,
                handover.cast(),
            );
            libc::pthread_sigmask(libc::SIG_SETMASK, was.as_ptr(), std::ptr::null_mut());
            if pid <= 0 {
                libc::munmap(stack, CLOSER_STACK);
                return None;
            }
            Some(Closer { pid, handover })
        }
    }

    /// Where there is no [`raw_syscall`], none: hx closes the instance itself, and waits.
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn start(_: &OwnedFd) -> Option<Closer> {
        None
    }

    /// Tells the child that hx's copy is closed, so that its close is the last; its pid,
    /// which is the caller's to reap.
    fn release(self) -> libc::pid_t {
        // SAFETY: the Handover lies in a mapping that is never unmapped; the child only
        // reads it.
        unsafe {
            let closed = &(*self.handover).closed;
            closed.store(1, std::sync::atomic::Ordering::Release);
            libc::syscall(
                libc::SYS_futex,
                closed as *const std::sync::atomic::AtomicU32,
                libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
                1i32,
            );
        }
        self.pid
    }
}

/// One event into the state: the file it names, or a resync when it says the watches or
/// the ignore rules changed.
fn note(st: &mut State, wd: i32, e: ReadFlags, name: Option<&[u8]>) {
    if e.intersects(ReadFlags::QUEUE_OVERFLOW | ReadFlags::UNMOUNT) {
        st.resync = true;
        return;
    }
    let ignore_file = |n: &[u8]| n == b".gitignore" || n == b"exclude";
    match (st.folders.get(&wd), name) {
        // A watch removed (its folder gone, which its parent's event said) or not known.
        (None, _) => {
            if !e.contains(ReadFlags::IGNORED) {
                st.resync = true;
            }
        }
        // A folder above the workspace or `info`: only its ignore file counts.
        (Some(None), Some(n)) => {
            if ignore_file(n) {
                st.resync = true;
            }
        }
        (Some(None), None) => {}
        (Some(Some(_)), None) => {
            if e.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF) {
                st.resync = true;
            }
        }
        (Some(Some(folder)), Some(n)) => {
            if e.contains(ReadFlags::ISDIR) {
                // A folder made, moved or removed: its files, and watches, are a look's.
                if e.intersects(
                    ReadFlags::CREATE
                        | ReadFlags::MOVED_TO
                        | ReadFlags::DELETE
                        | ReadFlags::MOVED_FROM,
                ) {
                    st.resync = true;
                }
            } else if n == b".gitignore" {
                st.resync = true;
            } else if st.changed.len() >= MAX_CHANGED {
                st.resync = true;
                st.changed.clear();
            } else {
                let mut path = folder.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(n);
                st.changed.insert(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Command;

    use super::Closer;
    use crate::checkpoint::{Settings, Snap, Store};
    use std::os::fd::OwnedFd;

    fn git(dir: &Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "git {args:?}");
    }

    fn write(p: &Path, text: &str) {
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(p, text).expect("write");
    }

    /// Waits for the child `pid`; true if it exited with status 0.
    fn exited_cleanly(pid: libc::pid_t) -> bool {
        let mut status = 0;
        // SAFETY: waits for a child the test made.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        waited == pid && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0
    }

    /// The events `poll` reports on `reader` within `ms` (none: nothing happened in time).
    fn poll_for(reader: &impl std::os::fd::AsRawFd, ms: libc::c_int) -> libc::c_short {
        let mut ends = [libc::pollfd {
            fd: reader.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: polls a descriptor the caller holds, for at most `ms`.
        let ready = unsafe { libc::poll(ends.as_mut_ptr(), 1, ms) };
        assert!(ready >= 0, "poll: {}", std::io::Error::last_os_error());
        ends[0].revents
    }

    /// The child that closes an inotify instance runs on the stack it is given, sharing hx's
    /// memory, and keeps no other descriptor: a pipe whose writer hx closes ends while the
    /// child still waits to be released, and the child then exits cleanly (not killed by a
    /// fault).
    #[test]
    fn the_closer_keeps_only_what_it_closes_and_exits_cleanly() {
        // A pipe below the kept descriptor's number and one above it.
        let (reader, writer) = std::io::pipe().expect("a pipe");
        let kept = OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null"));
        let (reader_above, writer_above) = std::io::pipe().expect("a pipe");
        let closer = Closer::start(&kept).expect("a child");
        drop(writer);
        drop(writer_above);
        for reader in [&reader, &reader_above] {
            // At most 1 s: well within the child's 3 s wait for its release, which would
            // end the pipe too.
            assert!(
                poll_for(reader, 1_000) & libc::POLLHUP != 0,
                "the pipe ends while the child waits"
            );
        }
        let mut info = std::mem::MaybeUninit::<libc::siginfo_t>::zeroed();
        // SAFETY: asks, without reaping, whether the child this test made has ended.
        let asked = unsafe {
            libc::waitid(
                libc::P_PID,
                closer.pid as libc::id_t,
                info.as_mut_ptr(),
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        assert_eq!(asked, 0);
        // SAFETY: waitid wrote the struct (zeroed when no child has ended).
        assert_eq!(
            unsafe { info.assume_init().si_pid() },
            0,
            "the child still waits to be released"
        );
        drop(kept);
        let pid = closer.release();
        assert!(exited_cleanly(pid), "the child ended cleanly");
    }

    /// The closer's close of the instance is the last one, so that the kernel's wait is
    /// its and not hx's: it keeps its copy until hx says it has closed its own. Given a
    /// pipe's writer, the reader sees no end while hx has not said so, though hx's own copy
    /// is closed, and sees it once hx has.
    #[test]
    fn the_closer_closes_only_after_hx_has_closed_its_copy() {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        let writer = OwnedFd::from(writer);
        let closer = Closer::start(&writer).expect("a child");
        drop(writer);
        // The child runs on this thread's thread-local storage: its waits, which time out
        // every 10 ms, must not write this thread's errno.
        // SAFETY: this thread's own errno.
        unsafe { *libc::__errno_location() = 0 };
        assert_eq!(
            poll_for(&reader, 200),
            0,
            "the child closed its copy before hx said it had closed"
        );
        // SAFETY: as above.
        let errno = unsafe { *libc::__errno_location() };
        assert_eq!(errno, 0, "the child's waits wrote this thread's errno");
        let pid = closer.release();
        assert!(
            poll_for(&reader, 5_000) & libc::POLLHUP != 0,
            "the pipe ends once hx has said so"
        );
        assert!(exited_cleanly(pid), "the child ended cleanly");
    }

    /// Each change a checkpoint must see, made with nothing but the file system (as a command
    /// would), is seen by the next checkpoint; a change only to ignored files is not one.
    #[test]
    fn after_a_look_every_change_that_counts_is_seen_and_nothing_else_looks() {
        let root = tempfile::tempdir().expect("tempdir");
        let ws = root.path().join("ws");
        write(&ws.join("a.txt"), "a\n");
        write(&ws.join(".gitignore"), "*.log\nbuild/\n");
        write(&ws.join("logs/x.log"), "log\n");
        write(&ws.join("build/out.bin"), "built\n");
        write(&ws.join("src/deep/er/m.rs"), "fn main() {}\n");
        std::fs::create_dir_all(ws.join("empty")).expect("mkdir");
        git(&ws, &["init", "-q", "."]);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "files"]);
        let env = crate::paths::process_env();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let store = Store::open_at(
                &ws,
                &root.path().join("state"),
                &env,
                &Settings::default(),
                &crate::checkpoint::git::Program::from_env(&env),
            )
            .await
            .expect("store");
            assert!(store.watch.is_some(), "inotify is available on Linux");
            let mut prev: Snap = store.snapshot("s", None).await.expect("first").0;
            // Nothing changed: no look.
            let looks = store.looks();
            let (same, _) = store.snapshot("s", Some(&prev)).await.expect("again");
            assert_eq!(same, prev);
            assert_eq!(store.looks(), looks, "an unchanged checkpoint looked");

            type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
            let changes: Vec<Change> = vec![
                ("an edit", Box::new(|| write(&ws.join("a.txt"), "b\n"))),
                (
                    "a file deep down",
                    Box::new(|| write(&ws.join("src/deep/er/m.rs"), "fn main() { }\n")),
                ),
                (
                    "a new folder",
                    Box::new(|| write(&ws.join("new/b.txt"), "b\n")),
                ),
                (
                    "an edit in the new folder",
                    Box::new(|| write(&ws.join("new/b.txt"), "c\n")),
                ),
                (
                    "a file in a folder that was empty",
                    Box::new(|| write(&ws.join("empty/c.txt"), "c\n")),
                ),
                (
                    "a file in a folder of ignored files",
                    Box::new(|| write(&ws.join("logs/note.txt"), "n\n")),
                ),
                (
                    "a mode",
                    Box::new(|| {
                        let p = ws.join("a.txt");
                        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))
                            .expect("chmod");
                    }),
                ),
                (
                    "a rename",
                    Box::new(|| {
                        std::fs::rename(ws.join("a.txt"), ws.join("src/a.txt")).expect("mv");
                    }),
                ),
                (
                    "a removal",
                    Box::new(|| std::fs::remove_file(ws.join("new/b.txt")).expect("rm")),
                ),
                (
                    "an ignore rule that no longer ignores a folder",
                    Box::new(|| write(&ws.join(".gitignore"), "*.log\n")),
                ),
                (
                    "an edit in the folder no longer ignored",
                    Box::new(|| write(&ws.join("build/out.bin"), "rebuilt\n")),
                ),
            ];
            for (what, change) in &changes {
                change();
                let (next, _) = store.snapshot("s", Some(&prev)).await.expect("after");
                assert_ne!(next.tree, prev.tree, "{what} was not seen");
                prev = next;
                // And the checkpoint after it, with nothing changed, does not look.
                let looks = store.looks();
                let (same, _) = store.snapshot("s", Some(&prev)).await.expect("again");
                assert_eq!(same, prev, "after {what}");
                assert_eq!(
                    store.looks(),
                    looks,
                    "after {what}, an unchanged checkpoint looked"
                );
            }
            // Only ignored files changed: the same checkpoint.
            write(&ws.join("logs/y.log"), "more\n");
            let (same, _) = store.snapshot("s", Some(&prev)).await.expect("ignored");
            assert_eq!(same, prev);
        });
    }

    /// A checkpoint that takes only the files the events named (no git process: no look)
    /// makes exactly the tree a look of the whole workspace makes, whatever the change and
    /// whichever ignore rule applies; and what changed reads the same as git tells it.
    #[test]
    fn changed_files_taken_alone_make_the_tree_a_look_makes() {
        let root = tempfile::tempdir().expect("tempdir");
        let ws = root.path().join("ws");
        write(&ws.join("a.txt"), "a\n");
        write(&ws.join(".gitignore"), "*.log\n!keep.log\n");
        write(&ws.join("sub/.gitignore"), "*.tmp\n");
        write(&ws.join("sub/s.txt"), "s\n");
        write(&ws.join("src/deep/er/m.rs"), "fn main() {}\n");
        write(&ws.join("tracked.log"), "tracked though ignored\n");
        git(&ws, &["init", "-q", "."]);
        write(&ws.join(".git/info/exclude"), "secret.txt\n");
        git(&ws, &["add", "-A"]);
        git(&ws, &["add", "-f", "tracked.log"]);
        git(&ws, &["commit", "-qm", "files"]);
        // A repository of its own inside, which the project does not track.
        write(&ws.join("vendor/lib/lib.rs"), "nested\n");
        git(&ws.join("vendor/lib"), &["init", "-q", "."]);
        let env = crate::paths::process_env();
        let settings = Settings {
            max_file_bytes: 1000,
            ..Settings::default()
        };
        let program = crate::checkpoint::git::Program::from_env(&env);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let store = Store::open_at(&ws, &root.path().join("state"), &env, &settings, &program)
                .await
                .expect("store");
            let mut prev: Snap = store.snapshot("s", None).await.expect("first").0;
            type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
            let changes: Vec<Change> = vec![
                ("an edit", Box::new(|| write(&ws.join("a.txt"), "b\nc\n"))),
                (
                    "a new file",
                    Box::new(|| write(&ws.join("src/new.rs"), "new\n")),
                ),
                (
                    "an ignored file",
                    Box::new(|| write(&ws.join("x.log"), "log\n")),
                ),
                (
                    "a file in a nested repository",
                    Box::new(|| write(&ws.join("vendor/lib/new.rs"), "n\n")),
                ),
                (
                    "a file a rule lets back",
                    Box::new(|| write(&ws.join("keep.log"), "k\n")),
                ),
                (
                    "a file a folder's rule ignores",
                    Box::new(|| write(&ws.join("sub/x.tmp"), "t\n")),
                ),
                (
                    "a file info/exclude ignores",
                    Box::new(|| write(&ws.join("secret.txt"), "s\n")),
                ),
                (
                    "a tracked file a rule ignores",
                    Box::new(|| write(&ws.join("tracked.log"), "more\n")),
                ),
                (
                    "a mode",
                    Box::new(|| {
                        std::fs::set_permissions(
                            ws.join("a.txt"),
                            std::fs::Permissions::from_mode(0o755),
                        )
                        .expect("chmod")
                    }),
                ),
                (
                    "a link",
                    Box::new(|| std::os::unix::fs::symlink("a.txt", ws.join("link")).expect("ln")),
                ),
                (
                    "a file too large",
                    Box::new(|| write(&ws.join("big.txt"), &"x".repeat(2000))),
                ),
                (
                    "a rename in a folder",
                    Box::new(|| {
                        std::fs::rename(ws.join("sub/s.txt"), ws.join("sub/t.txt")).expect("mv")
                    }),
                ),
                (
                    "the last file of a folder removed",
                    Box::new(|| std::fs::remove_file(ws.join("src/deep/er/m.rs")).expect("rm")),
                ),
                (
                    "a file made binary",
                    Box::new(|| write(&ws.join("src/new.rs"), "\0bin")),
                ),
                // A rule changed where the tree does not show it: the look that follows
                // finds the same tree, and what was learnt of the old rules must go.
                (
                    "info/exclude gains a rule (a look)",
                    Box::new(|| write(&ws.join(".git/info/exclude"), "secret.txt\nlater.txt\n")),
                ),
                (
                    "a file the new exclude rule ignores",
                    Box::new(|| write(&ws.join("later.txt"), "l\n")),
                ),
            ];
            for (n, (what, change)) in changes.iter().enumerate() {
                change();
                let looks = store.looks();
                let (next, _) = store.snapshot("s", Some(&prev)).await.expect("after");
                if !what.ends_with("(a look)") {
                    assert_eq!(store.looks(), looks, "{what}: the checkpoint looked");
                }
                // The same workspace looked at whole by a store of its own.
                let other = Store::open_at(
                    &ws,
                    &root.path().join(format!("state-{n}")),
                    &env,
                    &settings,
                    &program,
                )
                .await
                .expect("store")
                .unwatched();
                let (looked, _) = other.snapshot("o", None).await.expect("look");
                assert_eq!(next.tree, looked.tree, "{what}: not the tree a look makes");
                // What changed, read here, as git tells it.
                let here = store
                    .changes(&prev.tree, &next.tree)
                    .await
                    .expect("changes");
                let gits = store
                    .git_changes(&prev.tree, &next.tree)
                    .await
                    .expect("git");
                assert!(
                    !here.paths.is_empty()
                        || *what == "an ignored file"
                        || what.contains("nested")
                        || what.contains("ignores")
                        || *what == "a file too large"
                        || what.ends_with("(a look)"),
                    "{what}: nothing changed"
                );
                assert_eq!(here, gits, "{what}: the changes differ from git's");
                prev = next;
            }
        });
    }
}
