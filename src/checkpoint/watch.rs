//! Knowing that nothing changed without looking: inotify watches on every folder a checkpoint
//! can take files from, so that a checkpoint after one that saw the same workspace costs a
//! read of the event queue instead of a stat of every file.
//!
//! What a checkpoint takes depends on the files of the workspace's folders that git does not
//! ignore, on the ignore rules, and on nothing else hx does not set. Every folder that is not
//! ignored is watched (the folders above the workspace up to the repository's top too, for
//! their `.gitignore`, and `.git/info` for `exclude`); any event on them makes the next
//! checkpoint look again. The global excludes file is outside the workspace: its modification
//! time is compared instead. So the fast path is taken only when no event came since a
//! checkpoint that looked, which the kernel tells for changes made by any process in any
//! mount namespace (the pod's bind mounts are the same inodes).
//!
//! What inotify does not see, and so what a checkpoint can miss until the next event in the
//! folder: a write through a hard link whose other name is outside the watched folders, and a
//! write through a shared `mmap` of a file. Neither is how tools and editors change source.
//!
//! Watching stops for the run (every checkpoint looks, as without it) when the folders pass
//! [`MAX_FOLDERS`], when the kernel's watch limit is reached, or on any error.

use std::collections::HashSet;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// Folders watched at most: beyond it, checkpoints look every time.
pub const MAX_FOLDERS: usize = 65_536;

/// The events that may change what a checkpoint takes: content, mode, names.
fn flags() -> WatchFlags {
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
    /// An event came since the checkpoint that looked last.
    dirty: bool,
    /// A folder was made or moved in, or an ignore file changed, or the queue overflowed:
    /// the watches must be brought up to date before the next look.
    resync: bool,
    /// The tree the last look found, while no event came after it.
    clean: Option<String>,
    /// The global excludes file's modification time when the watches were set.
    excludes: Option<SystemTime>,
    /// Watching gave up: every checkpoint looks.
    off: bool,
}

#[derive(Debug)]
pub struct Watch {
    fd: OwnedFd,
    excludes_file: Option<PathBuf>,
    state: Mutex<State>,
}

impl Watch {
    /// A watch with no folder yet (the first look sets them), or none where inotify is not
    /// available.
    pub fn new(excludes_file: Option<PathBuf>) -> Option<Watch> {
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).ok()?;
        Some(Watch {
            fd,
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
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            match reader.next() {
                Ok(ev) => {
                    st.dirty = true;
                    let e = ev.events();
                    let folder_came = e.contains(ReadFlags::ISDIR)
                        && e.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO);
                    let ignore_file = ev.file_name().is_some_and(|n| {
                        let n = n.to_bytes();
                        n == b".gitignore" || n == b"exclude"
                    });
                    if folder_came
                        || ignore_file
                        || e.contains(ReadFlags::QUEUE_OVERFLOW)
                        || e.contains(ReadFlags::UNMOUNT)
                    {
                        st.resync = true;
                    }
                }
                Err(rustix::io::Errno::AGAIN) => break,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => {
                    st.off = true;
                    break;
                }
            }
        }
    }

    /// The tree of the last look when nothing it depends on changed since.
    pub fn unchanged(&self) -> Option<String> {
        let mut st = self.state();
        if st.off {
            return None;
        }
        self.drain(&mut st);
        if st.dirty || st.resync || st.off || st.excludes != self.excludes_time() {
            return None;
        }
        st.clean.clone()
    }

    /// Before a look: events so far are what the look will see. Whether the watches must be
    /// set again first (see [`Watch::sync`]).
    pub fn begin(&self) -> bool {
        let mut st = self.state();
        self.drain(&mut st);
        st.dirty = false;
        st.clean = None;
        !st.off && st.resync
    }

    /// After a look that found `tree`: it stays the answer until an event comes.
    pub fn looked(&self, tree: &str) {
        let mut st = self.state();
        if !st.off && !st.resync {
            st.clean = Some(tree.to_string());
        }
    }

    /// Watches `root`'s folders but `.git` and those in `ignored` (paths relative to `top`,
    /// ending in `/`), and the folders `also` (not their subfolders). Called before the look
    /// whose result [`Watch::looked`] keeps, so nothing after the watches were set is missed.
    pub fn sync(&self, top: &Path, root: &Path, ignored: &HashSet<Vec<u8>>, also: &[PathBuf]) {
        let excludes = self.excludes_time();
        let ok = self.add_all(top, root, ignored, also);
        let mut st = self.state();
        if ok {
            st.resync = false;
            st.excludes = excludes;
        } else {
            st.off = true;
            st.clean = None;
        }
    }

    /// Stops watching for the run: every checkpoint looks.
    pub fn give_up(&self) {
        let mut st = self.state();
        st.off = true;
        st.clean = None;
    }

    fn add(&self, dir: &Path) -> bool {
        match inotify::add_watch(&self.fd, dir, flags()) {
            Ok(_) => true,
            // Gone or not a folder: nothing there to miss.
            Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => true,
            // The watch limit (ENOSPC), no memory, no access: give up watching.
            Err(_) => false,
        }
    }

    fn add_all(
        &self,
        top: &Path,
        root: &Path,
        ignored: &HashSet<Vec<u8>>,
        also: &[PathBuf],
    ) -> bool {
        use std::os::unix::ffi::OsStrExt;
        for a in also {
            if a.is_dir() && !self.add(a) {
                return false;
            }
        }
        let mut stack = vec![root.to_path_buf()];
        let mut n = 0usize;
        while let Some(dir) = stack.pop() {
            n += 1;
            if n > MAX_FOLDERS || !self.add(&dir) {
                return false;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                // The entry's type from the folder listing: a link to a folder is a link.
                let Ok(t) = e.file_type() else { continue };
                if !t.is_dir() || e.file_name() == ".git" {
                    continue;
                }
                let path = e.path();
                let rel = path.strip_prefix(top).unwrap_or(&path);
                let mut key = rel.as_os_str().as_bytes().to_vec();
                key.push(b'/');
                if !ignored.contains(&key) {
                    // Folders waiting count too: one folder of a million would not wait to
                    // be popped before the bound says so.
                    if n + stack.len() >= MAX_FOLDERS {
                        return false;
                    }
                    stack.push(path);
                }
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::process::Command;

    use crate::checkpoint::{Settings, Snap, Store};

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
}
