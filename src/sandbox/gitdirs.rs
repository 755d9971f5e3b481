//! The git folders of a workspace, found once when the run starts, that the pod keeps
//! commands from redirecting (issue 32, item 3).
//!
//! `.git/config`, hooks and info are not all git reads. A linked worktree's `.git` is a file
//! naming its git folder (`gitdir: ...`), whose `commondir` names the shared one; a
//! submodule's git folder lies in the superproject's `.git/modules/NAME` (the superproject's
//! plain `git status` reads its config); a repository may be nested in the workspace
//! (`vendor/lib/.git`); and a `commondir` file a command creates in `.git` sends the user's
//! git to whatever folder it names. Each of those, written by a command, made the user's next
//! `git status` (or their Stop hook) run the model's `core.fsmonitor` outside the sandbox.
//! So every git folder found here gets what `.git` gets (config, hooks and info read-only),
//! each `.git` file and each worktree's `commondir` and `gitdir` are read-only, and the
//! redirection files that did not exist at the start are removed after each command
//! ([`Redirects`]), since a mount can only cover a file that exists.

use std::collections::BTreeSet;
use std::ffi::{CStr, OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// What folders held when they were last listed, where that still holds: the checkpoints'
/// kept listings (`checkpoint::Kept`), as this lower layer sees them.
pub trait Listed {
    /// The file the listings came from: whoever could write it could make a walk miss what
    /// a folder holds.
    fn file(&self) -> &Path;
    /// Gives `f` each entry of `dir` (below the top, reached through no link) and whether it
    /// is a folder (a link is not), when `dir`'s stat is the one it was listed with; whether
    /// it did. `at`, when given, is where `dir` is stat'ed from: the open folder above it and
    /// its name there (one name to look up, not the path from `/`).
    fn each(
        &self,
        dir: &Path,
        at: Option<(BorrowedFd<'_>, &CStr)>,
        f: &mut dyn FnMut(&OsStr, bool),
    ) -> bool;
}

/// Folders looked through for nested repositories at most: a bound on the run's start in a
/// large workspace; past it, protection is partial and `hx sandbox` says so.
pub const MAX_FOLDERS: usize = 10_000;
/// Folders the walk does not enter: package managers fill them (npm, pip, Python) and never
/// leave a repository there (npm and pip drop `.git` from what they install), and they are
/// what would make a JavaScript or Python project pass the bound.
const NOT_ENTERED: [&str; 3] = ["node_modules", ".venv", "__pycache__"];
/// Submodule git folders looked through in one `.git/modules`, nested ones included.
const MAX_MODULES: usize = 1_000;
/// Folders the walk holds open for the folders below them to be opened in, at most.
const MAX_HELD_OPEN: usize = 256;
/// Bytes of folder entries read by one `getdents64`.
const DENTS_BYTES: usize = 32 * 1024;

/// A folder still to list, and the open folder above it with its name there, when held.
struct Folder {
    path: PathBuf,
    parent: Option<(std::sync::Arc<HeldFolder>, std::ffi::CString)>,
}

/// The folders a walk holds open for the folders below it to be opened in (one name to look
/// up, not the path from `/`), at most [`MAX_HELD_OPEN`] and an eighth of the descriptors the
/// process may have (the skills' discovery, the agent files and the checkpoints' look are
/// read meanwhile). This walk's, and the checkpoints' look's (`checkpoint::scan`).
pub(crate) struct HeldFolders {
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    max: usize,
}

impl HeldFolders {
    pub(crate) fn new() -> HeldFolders {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given and nothing else.
        let soft = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
            usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
        } else {
            0
        };
        HeldFolders {
            open: Default::default(),
            max: (soft / 8).min(MAX_HELD_OPEN),
        }
    }

    /// Whether one more may be held now.
    fn room(&self) -> bool {
        self.open.load(std::sync::atomic::Ordering::Relaxed) < self.max
    }

    /// `fd`, held for the folders below it, unless too many are held.
    pub(crate) fn hold(&self, fd: std::os::fd::OwnedFd) -> Option<std::sync::Arc<HeldFolder>> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.open.fetch_add(1, Relaxed) >= self.max {
            self.open.fetch_sub(1, Relaxed);
            return None;
        }
        Some(std::sync::Arc::new(HeldFolder {
            fd,
            open: self.open.clone(),
        }))
    }
}

/// Queues the folders `below` the folder `dir`, to be opened and stat'ed in `held` (the open
/// `dir`) when it is held.
fn below_of(
    queue: &mut std::collections::VecDeque<Folder>,
    dir: &Path,
    below: Vec<OsString>,
    held: Option<std::sync::Arc<HeldFolder>>,
) {
    for name in below {
        let parent = held.as_ref().and_then(|h| {
            let c = std::ffi::CString::new(name.as_bytes()).ok()?;
            Some((h.clone(), c))
        });
        queue.push_back(Folder {
            path: dir.join(name),
            parent,
        });
    }
}

/// An open folder held for the folders below it, counted while it is.
pub(crate) struct HeldFolder {
    pub(crate) fd: std::os::fd::OwnedFd,
    open: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for HeldFolder {
    fn drop(&mut self) {
        self.open.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What the pod protects, and what it could not look through.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GitPlaces {
    /// Git folders: config, config.worktree, hooks and info read-only (parents first).
    pub dirs: Vec<PathBuf>,
    /// A linked worktree's own folder (`.git/worktrees/NAME`): its `commondir`, `gitdir` and
    /// `config.worktree`, where they exist, read-only.
    pub worktrees: Vec<PathBuf>,
    /// `.git` files (a linked worktree's, a submodule's checkout's): read-only.
    pub files: Vec<PathBuf>,
    /// The walk for nested repositories stopped at [`MAX_FOLDERS`], or could not open a
    /// folder for want of file descriptors.
    pub bounded: bool,
}

impl GitPlaces {
    /// The git folders of `workspace` (canonical) and of the repositories in it, found by a
    /// walk of at most [`MAX_FOLDERS`] folders that follows no link and does not enter
    /// [`NOT_ENTERED`].
    ///
    /// A folder whose stat is the one the checkpoints' last look listed it with is not
    /// listed again: its entries are taken from `kept` (issue 33: in a workspace of 2,000
    /// folders, listing them was most of a start's walk). The caller gives listings only
    /// from a store no command may write.
    pub fn find(workspace: &Path, kept: Option<&dyn Listed>) -> GitPlaces {
        let mut places = GitPlaces::default();
        // The workspace's own `.git`, or the one above it (the workspace is a folder of a
        // repository: that repository's git folder is as much the user's).
        if let Some(top) = workspace.ancestors().find(|d| d.join(".git").exists()) {
            places.dot_git(&top.join(".git"));
        }
        // A folder is opened in the one above it when that one was listed (not taken from
        // `kept`): one name to look up, not the path from `/` (issue 33: a new workspace's
        // 2,000 folders took this walk 14 ms, a quarter of it in lookups). The folders held
        // open for those below them are bounded; past it, a path from `/` again.
        let held = HeldFolders::new();
        let mut queue = std::collections::VecDeque::from([Folder {
            path: workspace.to_path_buf(),
            parent: None,
        }]);
        let mut dents = vec![std::mem::MaybeUninit::<u8>::uninit(); DENTS_BYTES];
        let mut seen = 0usize;
        while let Some(Folder { path: dir, parent }) = queue.pop_front() {
            seen += 1;
            if seen > MAX_FOLDERS {
                places.bounded = true;
                break;
            }
            let mut below: Vec<OsString> = Vec::new();
            let mut short = false;
            let mut entry = |name: &OsStr, is_dir: bool| {
                if name == ".git" {
                    if dir != workspace {
                        places.dot_git(&dir.join(name));
                    }
                } else if is_dir && !NOT_ENTERED.iter().any(|n| name == *n) {
                    below.push(name.to_os_string());
                }
            };
            // Listed as a folder in the folder above: a link put in its place since is not
            // followed.
            let open = |flags: OFlags| {
                let flags = flags | OFlags::DIRECTORY | OFlags::CLOEXEC;
                match &parent {
                    Some((above, name)) => rustix::fs::openat(
                        &above.fd,
                        name.as_c_str(),
                        flags | OFlags::NOFOLLOW,
                        Mode::empty(),
                    ),
                    None => rustix::fs::open(&dir, flags, Mode::empty()),
                }
            };
            let at = parent
                .as_ref()
                .map(|(above, name)| (above.fd.as_fd(), name.as_c_str()));
            if kept.is_some_and(|k| k.each(&dir, at, &mut entry)) {
                // Held (`O_PATH`: not listed) for the folders below it to be stat'ed in, and
                // opened in when their listing is not taken.
                let fd = (!below.is_empty() && held.room())
                    .then(|| open(OFlags::PATH).ok())
                    .flatten();
                drop(parent);
                below_of(&mut queue, &dir, below, fd.and_then(|fd| held.hold(fd)));
                continue;
            }
            let opened = match open(OFlags::RDONLY) {
                // Out of descriptors (a low `ulimit -n`, other threads' files): by path,
                // with nothing held; still none, the walk says it is partial rather than
                // pass the folder by in silence.
                Err(e) if e == Errno::MFILE || e == Errno::NFILE => {
                    let again = rustix::fs::open(
                        &dir,
                        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                        Mode::empty(),
                    );
                    short = again.is_err();
                    again
                }
                other => other,
            };
            drop(parent);
            let Ok(fd) = opened else {
                places.bounded |= short;
                continue;
            };
            let mut entries = rustix::fs::RawDir::new(&fd, &mut dents);
            while let Some(Ok(e)) = entries.next() {
                let bytes = e.file_name().to_bytes();
                if bytes == b"." || bytes == b".." {
                    continue;
                }
                // The type from the listing: a link to a folder is not entered.
                let is_dir = match e.file_type() {
                    FileType::Directory => true,
                    FileType::Unknown => {
                        rustix::fs::statat(&fd, e.file_name(), AtFlags::SYMLINK_NOFOLLOW).is_ok_and(
                            |st| FileType::from_raw_mode(st.st_mode) == FileType::Directory,
                        )
                    }
                    _ => false,
                };
                entry(OsStr::from_bytes(bytes), is_dir);
            }
            let fd = (!below.is_empty()).then(|| held.hold(fd)).flatten();
            below_of(&mut queue, &dir, below, fd);
        }
        places
    }

    /// A `.git` entry: a folder is a git folder; a file names one (`gitdir: ...`), which is
    /// a worktree's own folder when it has a `commondir`.
    fn dot_git(&mut self, dot: &Path) {
        let Ok(meta) = std::fs::symlink_metadata(dot) else {
            return;
        };
        if meta.is_dir() {
            self.git_dir(dot);
            return;
        }
        if !meta.is_file() {
            return;
        }
        if !self.files.iter().any(|f| f == dot) {
            self.files.push(dot.to_path_buf());
        }
        let Ok(text) = std::fs::read_to_string(dot) else {
            return;
        };
        let Some(named) = text.lines().next().and_then(|l| l.strip_prefix("gitdir:")) else {
            return;
        };
        let Some(folder) = dot.parent() else {
            return;
        };
        let Ok(target) = folder.join(named.trim()).canonicalize() else {
            return;
        };
        if target.join("commondir").is_file() {
            self.worktree(&target);
        } else {
            self.git_dir(&target);
        }
    }

    /// A worktree's own folder, and the common git folder its `commondir` names.
    fn worktree(&mut self, dir: &Path) {
        if self.worktrees.iter().any(|w| w == dir) {
            return;
        }
        self.worktrees.push(dir.to_path_buf());
        if let Some(common) = common_dir(dir) {
            self.git_dir(&common);
        }
    }

    /// A git folder, its linked worktrees' folders and its submodules' git folders.
    fn git_dir(&mut self, dir: &Path) {
        let Ok(dir) = dir.canonicalize() else {
            return;
        };
        if self.dirs.contains(&dir) {
            return;
        }
        self.dirs.push(dir.clone());
        if let Some(common) = common_dir(&dir) {
            self.git_dir(&common);
        }
        if let Ok(entries) = std::fs::read_dir(dir.join("worktrees")) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    self.worktree(&e.path());
                }
            }
        }
        // A submodule's name may hold slashes: its git folder is any folder under
        // `modules` with a HEAD, and it may have modules of its own.
        let mut stack = vec![dir.join("modules")];
        let mut looked = 0;
        while let Some(d) = stack.pop() {
            looked += 1;
            if looked > MAX_MODULES {
                self.bounded = true;
                break;
            }
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let p = e.path();
                if p.join("HEAD").is_file() {
                    self.git_dir(&p);
                } else {
                    stack.push(p);
                }
            }
        }
    }

    /// Only the places that lie in one of `writable` (canonical): the rest of the tree is
    /// read-only in the pod already.
    pub fn within(mut self, writable: &[PathBuf]) -> GitPlaces {
        let inside = |p: &PathBuf| writable.iter().any(|w| p.starts_with(w));
        self.dirs.retain(inside);
        self.worktrees.retain(inside);
        self.files.retain(inside);
        self
    }
}

/// The folder `dir/commondir` names, canonical.
fn common_dir(dir: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(dir.join("commondir")).ok()?;
    dir.join(text.trim()).canonicalize().ok()
}

/// The redirection files a command could create where none was at the start (so no mount
/// covers them): a git folder's `commondir`, and a linked worktree's `config.worktree`
/// (read when the common config turns `extensions.worktreeConfig` on). Removed after each
/// command; the paths removed are said.
#[derive(Debug, Default)]
pub struct Redirects {
    watched: Vec<PathBuf>,
}

impl Redirects {
    /// The files of `places` to keep absent: those missing now.
    pub fn of(places: &GitPlaces) -> Redirects {
        let mut all = BTreeSet::new();
        for d in &places.dirs {
            all.insert(d.join("commondir"));
        }
        for w in &places.worktrees {
            all.insert(w.join("config.worktree"));
        }
        let watched = all
            .into_iter()
            .filter(|p| std::fs::symlink_metadata(p).is_err())
            .collect();
        Redirects { watched }
    }

    /// Removes each watched file that exists now (a link is removed, never followed); the
    /// ones removed.
    pub fn undo(&self) -> Vec<PathBuf> {
        self.watched
            .iter()
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .filter(|p| remove_beneath(p).is_ok())
            .cloned()
            .collect()
    }
}

/// Removes `path`, its folder opened without following a link on the way (a command may
/// have swapped a folder for a link since the start).
fn remove_beneath(path: &Path) -> std::io::Result<()> {
    use rustix::fs::{openat, unlinkat, AtFlags, Mode, OFlags, CWD};
    let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(std::io::ErrorKind::InvalidInput.into());
    };
    let mut dir = openat(
        CWD,
        "/",
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for part in folder.components().skip(1) {
        dir = openat(
            &dir,
            part.as_os_str(),
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
    }
    unlinkat(&dir, name, AtFlags::empty())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().expect("a folder")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }

    #[test]
    fn every_git_folder_of_the_workspace_is_found_and_new_redirections_are_undone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().canonicalize().expect("real").join("ws");
        let git = ws.join(".git");
        file(&git.join("HEAD"), "ref: refs/heads/main\n");
        file(&git.join("modules/a/b/HEAD"), "x\n");
        file(&git.join("modules/a/b/modules/c/HEAD"), "x\n");
        file(&git.join("worktrees/wt/commondir"), "../..\n");
        file(&git.join("worktrees/wt/gitdir"), "x\n");
        file(
            &ws.join("wt/.git"),
            &format!("gitdir: {}\n", git.join("worktrees/wt").display()),
        );
        file(&ws.join("sub/.git"), "gitdir: ../.git/modules/a/b\n");
        file(&ws.join("vendor/lib/.git/HEAD"), "x\n");
        // Not entered: what a package manager installed.
        file(&ws.join("node_modules/pkg/.git/HEAD"), "x\n");
        let places = GitPlaces::find(&ws, None);
        assert_eq!(
            places.dirs,
            [
                git.clone(),
                git.join("modules/a/b"),
                git.join("modules/a/b/modules/c"),
                ws.join("vendor/lib/.git"),
            ]
        );
        assert_eq!(places.worktrees, [git.join("worktrees/wt")]);
        let mut files = places.files.clone();
        files.sort();
        assert_eq!(files, [ws.join("sub/.git"), ws.join("wt/.git")]);
        assert!(!places.bounded);
        // Outside the writable folders, nothing is left to protect.
        assert_eq!(
            places.clone().within(&[tmp.path().join("elsewhere")]),
            GitPlaces::default()
        );
        // A commondir made since the start is removed; one there at the start is not
        // watched (a mount covers it).
        let redirects = Redirects::of(&places);
        file(&git.join("commondir"), "/elsewhere\n");
        file(&git.join("worktrees/wt/config.worktree"), "[core]\n");
        let mut undone = redirects.undo();
        undone.sort();
        assert_eq!(
            undone,
            [
                git.join("commondir"),
                git.join("worktrees/wt/config.worktree")
            ]
        );
        assert!(!git.join("commondir").exists());
        assert!(git.join("worktrees/wt/commondir").exists());
        assert!(redirects.undo().is_empty());
    }

    /// The walk opens each folder in the one above it, holding at most `MAX_HELD_OPEN`
    /// open: past it, folders are opened by path, and a repository deep in a wide tree is
    /// found either way; a link to a folder is not entered; nothing is left open.
    #[test]
    fn a_wide_tree_is_walked_through_open_folders_and_by_path_past_the_bound() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let ws = tmp.path().canonicalize().expect("real").join("ws");
        let wide = MAX_HELD_OPEN + 50;
        for i in 0..wide {
            std::fs::create_dir_all(ws.join(format!("p{i}/q/r"))).expect("mkdir");
        }
        file(&ws.join("p3/q/r/.git/HEAD"), "x\n");
        let last = wide - 1;
        file(&ws.join(format!("p{last}/q/r/.git/HEAD")), "x\n");
        file(&tmp.path().join("outside/.git/HEAD"), "x\n");
        std::os::unix::fs::symlink(tmp.path().join("outside"), ws.join("p0/link")).expect("ln");
        // Other tests run beside this one: only descriptors of the workspace count.
        let open_here = || {
            std::fs::read_dir("/proc/self/fd")
                .expect("fds")
                .flatten()
                .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t.starts_with(&ws)))
                .count()
        };
        let mut places = GitPlaces::find(&ws, None);
        assert_eq!(open_here(), 0, "a folder left open");
        places.dirs.sort();
        assert_eq!(
            places.dirs,
            [ws.join("p3/q/r/.git"), ws.join(format!("p{last}/q/r/.git"))]
        );
        assert!(!places.bounded);
    }
}
