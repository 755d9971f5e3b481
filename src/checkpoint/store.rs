//! The store itself: opening (and making) the shadow repository, its lock, what it copies of
//! the user's repository, and what it keeps (usage, pruning, the sessions' refs).

use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use super::git::{self, Git, GitError, Program, Run};
use super::watch::Watch;
use super::{
    dir_size, find_repo, ref_safe, root, store_dir, Locked, Off, Settings, Store, LIST_BYTES, REFS,
};
use crate::paths::{write_atomic, Env};

/// How long a checkpoint waits for another hx's to finish before it is skipped.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often the store is pruned without being asked.
const PRUNE_EVERY: Duration = Duration::from_secs(24 * 3600);
/// In hx's state folder: the user's global excludes file, as git said it and what that
/// depends on (`git::global_excludes`).
const EXCLUDES_CACHE: &str = "git-excludes";
/// The attributes every path gets in the shadow: no filter, no line-ending or encoding
/// conversion, so a checkpoint holds the bytes on disk and a rewind writes them back.
const ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";

impl Store {
    /// The store of `workspace`, created if needed, run with `git`. `Off` when checkpoints are
    /// off here (the config, the home folder, `/`, no git, no state folder).
    pub async fn open(
        workspace: &Path,
        env: &Env,
        settings: &Settings,
        git: &Program,
    ) -> Result<Store, Off> {
        if !settings.enabled {
            return Err(Off { line: None });
        }
        let ws = crate::paths::real_path(workspace).unwrap_or_else(|_| workspace.to_path_buf());
        let home = crate::paths::home_dir().and_then(|h| crate::paths::real_path(&h).ok());
        if ws == Path::new("/") || home.as_deref() == Some(ws.as_path()) {
            return Err(Off::said(format!(
                "checkpoints are off in {}: hx keeps none of the home folder itself or of /",
                ws.display()
            )));
        }
        let Some(dir) = store_dir(&ws, env) else {
            return Err(Off::said(
                "checkpoints are off: no place for them (set HOME or XDG_STATE_HOME)",
            ));
        };
        Store::open_at(&ws, &dir, env, settings, git).await
    }

    /// [`Store::open`] with the store's folder chosen (tests, benchmarks).
    pub async fn open_at(
        ws: &Path,
        dir: &Path,
        env: &Env,
        settings: &Settings,
        git: &Program,
    ) -> Result<Store, Off> {
        let off = |e: String| Off::said(format!("checkpoints are off: {e}"));
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| off(format!("cannot create {}: {e}", dir.display())))?;
        let (work_tree, prefix, user_git) = match find_repo(ws) {
            Some((top, common)) => {
                let rel = ws.strip_prefix(&top).unwrap_or(Path::new(""));
                let mut prefix = rel.to_string_lossy().into_owned();
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                (top, prefix, Some(common))
            }
            None => (ws.to_path_buf(), String::new(), None),
        };
        let git_dir = dir.join("git");
        // Remembered in hx's state folder, not in each store: the user's config is the same
        // for every workspace, and a new one's first run then asks git nothing (issue 33).
        // Not in the cache folder, which users make writable for commands more readily
        // (package caches): a command that wrote it could keep every file out of the
        // checkpoints.
        let remembered = crate::paths::state_dir(env)
            .map_or_else(|| dir.join("excludes"), |state| state.join(EXCLUDES_CACHE));
        let excludes = match git::global_excludes(git, env, &git_dir, &remembered).await {
            Ok(x) => x,
            Err(GitError::Missing) => return Err(off("git is not installed".into())),
            Err(e) => return Err(off(e.to_string())),
        };
        let excludes_file = excludes.clone();
        let git_dir_for_objects = git_dir.clone();
        let store = Store {
            dir: dir.to_path_buf(),
            git: Git::new(git.clone(), git_dir, work_tree, excludes),
            index: dir.join("index"),
            prefix,
            user_exclude: user_git.map(|g| g.join("info").join("exclude")),
            settings: settings.clone(),
            warned: Mutex::new(BTreeSet::new()),
            watch: Watch::new(excludes_file),
            looks: std::sync::atomic::AtomicUsize::new(0),
            git_looks: std::sync::atomic::AtomicUsize::new(0),
            listings_taken: std::sync::atomic::AtomicUsize::new(0),
            live: Mutex::new(None),
            first_in_process: true,
            objects: super::objects::Objects::new(&git_dir_for_objects),
            ahead_warnings: Mutex::new(Vec::new()),
            kept: Mutex::new(None),
        };
        let lock = store.lock().await.map_err(off)?;
        store.init().await.map_err(|e| off(e.to_string()))?;
        drop(lock);
        Ok(store)
    }

    /// The store without its watches: every checkpoint looks at the workspace, as a run's
    /// first does (for benchmarks).
    pub fn unwatched(mut self) -> Store {
        self.watch = None;
        self
    }

    /// The store whose first look is git's, as before hx made it in-process: what the tests
    /// hold hx's first look against.
    #[cfg(test)]
    pub fn first_look_by_git(mut self) -> Store {
        self.first_in_process = false;
        self
    }

    /// How many checkpoints looked at the workspace (the others knew from the watches that
    /// nothing changed).
    pub fn looks(&self) -> usize {
        self.looks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many of the looks git made.
    pub fn git_looks(&self) -> usize {
        self.git_looks.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many folders the looks did not list, their listing kept since the last look.
    pub fn listings_taken(&self) -> usize {
        self.listings_taken
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The store's folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder the paths of a checkpoint are relative to.
    pub fn work_tree(&self) -> &Path {
        &self.git.work_tree
    }

    /// The workspace below the work tree (`sub/dir/`; empty: the same folder).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub(super) async fn lock(&self) -> Result<Locked, String> {
        lock_at(&self.dir, &self.git.git_dir).await
    }

    async fn init(&self) -> Result<(), GitError> {
        let git_dir = &self.git.git_dir;
        if !git_dir.join("HEAD").is_file() {
            // Made beside and renamed into place: a crash leaves no half-made repository.
            let tmp = self.dir.join(format!("git.tmp-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            make_bare(&tmp).map_err(|e| {
                let _ = std::fs::remove_dir_all(&tmp);
                GitError::Failed(format!("cannot create the store: {e}"))
            })?;
            // A new store has nothing to prune for a day.
            let _ = write_atomic(&self.dir.join("pruned"), b"");
            if let Err(e) = std::fs::rename(&tmp, git_dir) {
                let _ = std::fs::remove_dir_all(&tmp);
                if !git_dir.join("HEAD").is_file() {
                    return Err(GitError::Failed(format!("cannot create the store: {e}")));
                }
            }
        }
        // Stores made before issue 32 borrowed the repository's objects, which commands may
        // forge, collect or remove: what their checkpoints need is copied in once, and the
        // borrowing ends.
        let alternates = git_dir.join("objects").join("info").join("alternates");
        if std::fs::metadata(&alternates).is_ok_and(|m| m.len() > 0) {
            let copied = self
                .git
                .run(
                    &["repack", "-a", "-d", "-q"],
                    Run {
                        bare: true,
                        ..Run::default()
                    },
                )
                .await;
            std::fs::remove_file(&alternates)
                .map_err(|e| GitError::Failed(format!("cannot write: {e}")))?;
            if let Err(e) = copied {
                return Err(GitError::Failed(format!(
                    "the checkpoints of this workspace borrowed objects its repository no \
                     longer has, and some cannot be restored ({e}); new ones are kept whole"
                )));
            }
        }
        Ok(())
    }

    /// The user's `info/exclude` in the shadow, as it is now.
    pub(super) fn sync_exclude(&self) {
        let want = self
            .user_exclude
            .as_ref()
            .and_then(|p| crate::paths::open_regular(p).ok())
            .and_then(|f| {
                let mut buf = Vec::new();
                use std::io::Read;
                f.take(1024 * 1024).read_to_end(&mut buf).ok()?;
                Some(buf)
            })
            .unwrap_or_default();
        let ours = self.git.git_dir.join("info").join("exclude");
        if std::fs::read(&ours).unwrap_or_default() != want {
            let _ = write_atomic(&ours, &want);
        }
    }

    /// The store's size in bytes, its sessions with checkpoints (and how many of them are
    /// gone: not among `recorded`, the ids of every session there is, when known) and its
    /// checkpoints.
    pub async fn usage(&self, recorded: Option<&BTreeSet<String>>) -> Usage {
        let bytes = dir_size(&self.dir, 0);
        let refs = self.session_refs().await.unwrap_or_default();
        let gone = refs
            .iter()
            .filter(|(name, _)| is_gone(name, recorded))
            .count();
        let checkpoints = self
            .git
            .line(&["rev-list", "--all", "--count"], Run::default())
            .await
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        Usage {
            bytes,
            sessions: refs.len(),
            gone,
            checkpoints,
        }
    }

    /// Every session's ref and the time of its newest checkpoint (Unix seconds).
    async fn session_refs(&self) -> Result<Vec<(String, u64)>, String> {
        let out = self
            .git
            .run(
                &[
                    "for-each-ref",
                    "--format=%(refname) %(committerdate:unix)",
                    REFS,
                ],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&out)
            .lines()
            .filter_map(|l| {
                let (name, t) = l.rsplit_once(' ')?;
                Some((name.to_string(), t.parse().ok()?))
            })
            .collect())
    }

    /// Prunes when the last prune is a day old (or never was): what a run does unasked.
    pub async fn prune_if_due(
        &self,
        recorded: Option<&BTreeSet<String>>,
    ) -> Result<Option<Pruned>, String> {
        let stamp = self.dir.join("pruned");
        let due = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .map(|t| SystemTime::now().duration_since(t).unwrap_or_default() > PRUNE_EVERY)
            .unwrap_or(true);
        if !due {
            return Ok(None);
        }
        self.prune(recorded).await.map(Some)
    }

    /// Drops the checkpoints of sessions past `keep_sessions` or older than `keep_days`, and
    /// of sessions that are gone (not among `recorded`, the ids of every session there is,
    /// when known: a rewind needs its session's file), then packs the store and drops what
    /// nothing names.
    pub async fn prune(&self, recorded: Option<&BTreeSet<String>>) -> Result<Pruned, String> {
        let _lock = self.lock().await?;
        let mut refs = self.session_refs().await?;
        refs.sort_by_key(|r| std::cmp::Reverse(r.1));
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let oldest = now.saturating_sub(self.settings.keep_days.saturating_mul(86_400));
        let mut delete = String::new();
        let (mut dropped, mut gone) = (0, 0);
        // The sessions that are gone first, so that they take no place of the newest kept.
        let (orphans, kept): (Vec<_>, Vec<_>) =
            refs.iter().partition(|(name, _)| is_gone(name, recorded));
        for (name, _) in orphans {
            delete.push_str(&format!("delete {name}\n"));
            dropped += 1;
            gone += 1;
        }
        for (i, (name, t)) in kept.into_iter().enumerate() {
            if i >= self.settings.keep_sessions || *t < oldest {
                delete.push_str(&format!("delete {name}\n"));
                dropped += 1;
            }
        }
        let before = dir_size(&self.dir, 0);
        let git = |args: &'static [&'static str], stdin: Option<Vec<u8>>| {
            self.git.run(
                args,
                Run {
                    stdin,
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
        };
        if !delete.is_empty() {
            git(&["update-ref", "--stdin"], Some(delete.into_bytes()))
                .await
                .map_err(|e| e.to_string())?;
        }
        super::snapshot::drop_orphan_spares(&self.git.git_dir);
        git(&["repack", "-a", "-d", "-q"], None)
            .await
            .map_err(|e| e.to_string())?;
        git(&["prune", "--expire=now"], None)
            .await
            .map_err(|e| e.to_string())?;
        git(&["pack-refs", "--all"], None)
            .await
            .map_err(|e| e.to_string())?;
        let _ = write_atomic(&self.dir.join("pruned"), b"");
        let after = dir_size(&self.dir, 0);
        Ok(Pruned {
            sessions_dropped: dropped,
            sessions_gone: gone,
            bytes_before: before,
            bytes_after: after,
        })
    }
}

/// What a prune did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    /// Sessions whose checkpoints were dropped, the gone ones included.
    pub sessions_dropped: usize,
    /// Of them, the sessions that are gone.
    pub sessions_gone: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// What a store holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub bytes: u64,
    /// Sessions with checkpoints.
    pub sessions: usize,
    /// Of them, those whose session is gone.
    pub gone: usize,
    pub checkpoints: u64,
}

/// Whether the session of ref `name` (`refs/hx/<id>`) is not among `recorded` (the ids of
/// every session there is); never, when they are not known.
fn is_gone(name: &str, recorded: Option<&BTreeSet<String>>) -> bool {
    let Some(recorded) = recorded else {
        return false;
    };
    let id = name.strip_prefix(REFS).unwrap_or(name);
    // Ids are UUIDs, their own ref names; any other is compared as its ref names it.
    !(recorded.contains(id) || recorded.iter().any(|r| ref_safe(r) == id))
}

/// Takes the lock of the store in `dir` (whose repository is `git_dir`), waiting for
/// another hx's; a lock file a crashed git left is removed under it.
async fn lock_at(dir: &Path, git_dir: &Path) -> Result<Locked, String> {
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let began = std::time::Instant::now();
    loop {
        use std::os::fd::AsRawFd;
        // SAFETY: flock on a descriptor we own; LOCK_NB never blocks.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            break;
        }
        if began.elapsed() > LOCK_WAIT {
            return Err(format!(
                "another hx held {} for {}s",
                path.display(),
                LOCK_WAIT.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Under the lock no git of ours runs, so a lock file git left is a crash's.
    for stale in [
        dir.join("index.lock"),
        dir.join("restore.index.lock"),
        git_dir.join("packed-refs.lock"),
    ] {
        let _ = std::fs::remove_file(stale);
    }
    Ok(Locked { _file: file })
}

/// A new store's repository in `dir`, made here rather than by `git init --bare`, which was a
/// process on every new workspace's first run (issue 33): what git needs to take a folder for
/// a bare repository (`HEAD`, `config`, `objects`, `refs`) and the attributes that keep its
/// bytes as they are. Nothing of git's templates: the sample hooks (which hx removed), the
/// `description`, and `info/exclude` (the user's, copied by `sync_exclude`). The settings a
/// checkpoint's bytes depend on are pinned on every git command instead (`Git::args`).
fn make_bare(dir: &Path) -> std::io::Result<()> {
    for sub in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
    ] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    std::fs::write(
        dir.join("config"),
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n",
    )?;
    std::fs::write(dir.join("info").join("attributes"), ATTRIBUTES)?;
    // Last: a folder with a `HEAD` is a repository to git.
    std::fs::write(dir.join("HEAD"), "ref: refs/heads/master\n")
}

/// Drops the checkpoints of the sessions `ids` (their refs), in whichever workspace's store
/// under the state folder holds them: a session removed takes its checkpoints with it, and
/// what only they named goes at the store's next prune. Gives how many sessions had some.
pub async fn forget(env: &Env, ids: &[String], git: &Program) -> Result<usize, String> {
    let Some(root) = root(env) else {
        return Ok(0);
    };
    let Ok(folders) = std::fs::read_dir(&root) else {
        return Ok(0);
    };
    let names: Vec<String> = ids
        .iter()
        .map(|id| format!("{REFS}{}", ref_safe(id)))
        .collect();
    let mut forgotten = 0;
    for dir in folders.filter_map(Result::ok).map(|e| e.path()) {
        let git_dir = dir.join("git");
        if !git_dir.join("HEAD").is_file() {
            continue;
        }
        // Read without git first: most stores hold none of them, and need no process.
        let packed = std::fs::read(git_dir.join("packed-refs")).unwrap_or_default();
        let packed = String::from_utf8_lossy(&packed);
        let held = |name: &str| {
            git_dir.join(name).is_file()
                || packed
                    .lines()
                    .any(|l| l.split_once(' ').is_some_and(|(_, r)| r == name))
        };
        if !names.iter().any(|n| held(n)) {
            continue;
        }
        let _lock = lock_at(&dir, &git_dir).await?;
        let delete: String = names
            .iter()
            .filter(|n| held(n))
            .map(|n| format!("delete {n}\n"))
            .collect();
        forgotten += delete.lines().count();
        let git = Git::new(git.clone(), git_dir, dir.clone(), None);
        git.run(
            &["update-ref", "--stdin"],
            Run {
                stdin: Some(delete.into_bytes()),
                limit: LIST_BYTES,
                bare: true,
                ..Run::default()
            },
        )
        .await
        .map_err(|e| format!("cannot drop the checkpoints in {}: {e}", dir.display()))?;
        super::snapshot::drop_orphan_spares(&git.git_dir);
    }
    Ok(forgotten)
}
