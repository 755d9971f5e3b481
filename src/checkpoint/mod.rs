//! Checkpoints: the state of the workspace's files, kept so that what the agent changed can
//! be seen (`hx diff`) and undone (`hx rewind`), whatever changed it (an edit, `sed -i`, `mv`,
//! a subagent).
//!
//! A checkpoint is a commit in a shadow repository of hx's own,
//! `$XDG_STATE_HOME/hx/checkpoints/<workspace>/git`, with its own index (`index`, the stat
//! cache that makes a checkpoint of an unchanged tree cost a directory walk and nothing
//! else). Its work tree is the workspace, or, in a git repository, the repository's top
//! folder limited to the workspace (so every `.gitignore` applies as git applies it); the
//! repository's object store is borrowed (alternates), so content git already has is not
//! copied. Nothing of the user's `.git` is written: not its index, `HEAD`, refs, config or
//! hooks. Built on the git CLI's plumbing, not gitoxide: git is on every machine that has a
//! repository, it already knows the ignore rules, the stat cache and the pack format, and hx
//! already runs processes through one guarded path; gitoxide would be a large dependency to
//! compile for the same plumbing.
//!
//! What a checkpoint takes is what git would see (`.gitignore`, `.git/info/exclude`, the
//! global excludes file), minus files over `max_file_bytes` and past `max_files` (one warning
//! names them), links as links, never in the home folder itself or `/`.
//!
//! Concurrency and crashes: every change to the store is made under an exclusive `flock` of
//! `lock`; git writes objects before the ref that names them and renames its index and refs
//! into place, so a crash leaves at worst unreferenced objects, which the next prune drops.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::paths::{write_atomic, Env};

pub mod git;
mod watch;

pub use git::GitError;
use git::{Git, Run};
use watch::Watch;

/// Bytes of a listing git may give back (paths of a tree, of changed files): far more than
/// `max_files` paths take.
const LIST_BYTES: u64 = 256 * 1024 * 1024;
/// How long a checkpoint waits for another hx's to finish before it is skipped.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// How often the store is pruned without being asked.
const PRUNE_EVERY: Duration = Duration::from_secs(24 * 3600);
/// The attributes every path gets in the shadow: no filter, no line-ending or encoding
/// conversion, so a checkpoint holds the bytes on disk and a rewind writes them back.
const ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";
/// The ref namespace of the sessions' checkpoints.
const REFS: &str = "refs/hx/";

/// `[checkpoints]` of the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub enabled: bool,
    /// Files larger than this are not taken (default 10 MiB).
    pub max_file_bytes: u64,
    /// Files taken at most (default 50,000).
    pub max_files: usize,
    /// Sessions whose newest checkpoint is older than this many days are pruned (30).
    pub keep_days: u64,
    /// The newest this many sessions keep their checkpoints (100).
    pub keep_sessions: usize,
}

pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
pub const DEFAULT_MAX_FILES: usize = 50_000;
pub const DEFAULT_KEEP_DAYS: u64 = 30;
pub const DEFAULT_KEEP_SESSIONS: usize = 100;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files: DEFAULT_MAX_FILES,
            keep_days: DEFAULT_KEEP_DAYS,
            keep_sessions: DEFAULT_KEEP_SESSIONS,
        }
    }
}

/// `$XDG_STATE_HOME/hx/checkpoints`.
pub fn root(env: &Env) -> Option<PathBuf> {
    Some(crate::paths::state_dir(env)?.join("checkpoints"))
}

/// One checkpoint as the store knows it: its commit and its tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snap {
    pub commit: String,
    pub tree: String,
}

/// What changed between two checkpoints: each path and how (`add`, `update`, `delete`, the
/// words of Codex's `file_change`), and lines added and removed (a binary file counts as a
/// path without lines).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    pub paths: Vec<(String, &'static str)>,
    pub added: u64,
    pub removed: u64,
}

/// What a restore did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    pub written: Vec<String>,
    pub removed: Vec<String>,
    /// Paths left alone because a folder on their way is a link now.
    pub refused: Vec<String>,
}

/// Why checkpoints are off: `line` is the one line to tell the user (none: the config said
/// so).
#[derive(Debug, Clone)]
pub struct Off {
    pub line: Option<String>,
}

impl Off {
    fn said(line: impl Into<String>) -> Off {
        Off {
            line: Some(line.into()),
        }
    }
}

/// The store of one workspace.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    git: Git,
    index: PathBuf,
    /// The workspace below the work tree, `/`-terminated; empty when they are one folder.
    prefix: String,
    /// The user's repository's folder of objects, borrowed.
    user_objects: Option<PathBuf>,
    /// The user's repository's `info/exclude`, copied into the shadow's before a checkpoint.
    user_exclude: Option<PathBuf>,
    settings: Settings,
    /// Paths already named in a warning, so each is named once per run.
    warned: Mutex<BTreeSet<String>>,
    /// Whether anything changed since the last look, without looking (none: inotify is not
    /// available, and every checkpoint looks).
    watch: Option<Watch>,
    /// Looks at the workspace so far (for tests and benchmarks).
    looks: std::sync::atomic::AtomicUsize,
}

/// The shadow's lock, held while it is changed; released when dropped.
struct Locked {
    _file: std::fs::File,
}

impl Store {
    /// The store of `workspace`, created if needed. `Off` when checkpoints are off here (the
    /// config, the home folder, `/`, no git, no state folder).
    pub async fn open(workspace: &Path, env: &Env, settings: &Settings) -> Result<Store, Off> {
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
        let Some(root) = root(env) else {
            return Err(Off::said(
                "checkpoints are off: no place for them (set HOME or XDG_STATE_HOME)",
            ));
        };
        let dir = root.join(crate::paths::workspace_folder(&ws));
        Store::open_at(&ws, &dir, env, settings).await
    }

    /// [`Store::open`] with the store's folder chosen (tests, benchmarks).
    pub async fn open_at(
        ws: &Path,
        dir: &Path,
        env: &Env,
        settings: &Settings,
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
        let path: Option<OsString> = env.get("PATH").map(OsString::from);
        let git_dir = dir.join("git");
        let excludes = match git::global_excludes(path.as_ref(), env, &git_dir).await {
            Ok(x) => x,
            Err(GitError::Missing) => return Err(off("git is not installed".into())),
            Err(e) => return Err(off(e.to_string())),
        };
        let excludes_file = excludes.clone();
        let store = Store {
            dir: dir.to_path_buf(),
            git: Git::new(path, git_dir, work_tree, excludes),
            index: dir.join("index"),
            prefix,
            user_objects: user_git
                .as_ref()
                .map(|g| g.join("objects"))
                .filter(|o| o.is_dir()),
            user_exclude: user_git.map(|g| g.join("info").join("exclude")),
            settings: settings.clone(),
            warned: Mutex::new(BTreeSet::new()),
            watch: Watch::new(excludes_file),
            looks: std::sync::atomic::AtomicUsize::new(0),
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

    /// How many checkpoints looked at the workspace (the others knew from the watches that
    /// nothing changed).
    pub fn looks(&self) -> usize {
        self.looks.load(std::sync::atomic::Ordering::Relaxed)
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

    async fn lock(&self) -> Result<Locked, String> {
        let path = self.dir.join("lock");
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
            self.dir.join("index.lock"),
            self.dir.join("restore.index.lock"),
            self.git.git_dir.join("packed-refs.lock"),
        ] {
            let _ = std::fs::remove_file(stale);
        }
        Ok(Locked { _file: file })
    }

    async fn init(&self) -> Result<(), GitError> {
        let git_dir = &self.git.git_dir;
        if !git_dir.join("HEAD").is_file() {
            // Made beside and renamed into place: a crash leaves no half-made repository.
            let tmp = self.dir.join(format!("git.tmp-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            let g = Git {
                git_dir: tmp.clone(),
                ..self.git.clone()
            };
            g.run(
                &["init", "-q", "--bare"],
                Run {
                    bare: true,
                    ..Run::default()
                },
            )
            .await?;
            let _ = std::fs::remove_dir_all(tmp.join("hooks"));
            write_atomic(&tmp.join("info").join("attributes"), ATTRIBUTES.as_bytes())
                .map_err(|e| GitError::Failed(format!("cannot write: {e}")))?;
            // A new store has nothing to prune for a day.
            let _ = write_atomic(&self.dir.join("pruned"), b"");
            if let Err(e) = std::fs::rename(&tmp, git_dir) {
                let _ = std::fs::remove_dir_all(&tmp);
                if !git_dir.join("HEAD").is_file() {
                    return Err(GitError::Failed(format!("cannot create the store: {e}")));
                }
            }
        }
        let alternates = git_dir.join("objects").join("info").join("alternates");
        let want = self
            .user_objects
            .as_ref()
            .map(|o| format!("{}\n", o.display()))
            .unwrap_or_default();
        if std::fs::read_to_string(&alternates).unwrap_or_default() != want {
            write_atomic(&alternates, want.as_bytes())
                .map_err(|e| GitError::Failed(format!("cannot write: {e}")))?;
        }
        Ok(())
    }

    /// The user's `info/exclude` in the shadow, as it is now.
    fn sync_exclude(&self) {
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

    fn run_index(&self) -> Run<'_> {
        Run {
            index: Some(&self.index),
            limit: LIST_BYTES,
            ..Run::default()
        }
    }

    /// The pathspec of the workspace.
    fn spec(&self) -> &str {
        if self.prefix.is_empty() {
            "."
        } else {
            &self.prefix
        }
    }

    /// Takes a checkpoint for `session`: the workspace as it is now. `previous` is the
    /// session's last one; when nothing changed since, it is the answer (nothing is written).
    /// The lines of what was skipped (too large, too many) come back once per path per run.
    pub async fn snapshot(
        &self,
        session: &str,
        previous: Option<&Snap>,
    ) -> Result<(Snap, Vec<String>), String> {
        let _lock = self.lock().await?;
        let (tree, warnings) = match self.watch.as_ref().and_then(Watch::unchanged) {
            // No event since the last look: the same files, the same tree.
            Some(tree) => (tree, Vec::new()),
            None => self.look().await?,
        };
        if let Some(p) = previous.filter(|p| p.tree == tree) {
            return Ok((p.clone(), warnings));
        }
        let mut args = vec!["commit-tree", tree.as_str(), "-m", "hx checkpoint"];
        // The previous checkpoint stays reachable through the new one, from the one ref.
        if let Some(p) = previous {
            args.extend(["-p", p.commit.as_str()]);
        }
        let commit = self
            .git
            .line(&args, Run::default())
            .await
            .map_err(|e| e.to_string())?;
        // The ref last: a crash before it leaves only objects nothing names.
        let name = format!("{REFS}{}", ref_safe(session));
        self.git
            .run(&["update-ref", &name, &commit], Run::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok((Snap { commit, tree }, warnings))
    }

    /// Looks at the workspace: the watches set first where folders came (so that nothing
    /// after them is missed), then the index brought up to date and its tree written.
    async fn look(&self) -> Result<(String, Vec<String>), String> {
        self.looks
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.sync_exclude();
        if let Some(w) = &self.watch {
            if w.begin() {
                self.sync_watch(w).await;
            }
        }
        let staged = match self.stage().await {
            Ok(t) => t,
            // The index is only a cache: one that git cannot read is thrown away.
            Err(GitError::Failed(e)) if e.contains("index") => {
                let _ = std::fs::remove_file(&self.index);
                self.stage().await.map_err(|e| e.to_string())?
            }
            Err(e) => return Err(e.to_string()),
        };
        if let Some(w) = &self.watch {
            w.looked(&staged.0);
        }
        Ok(staged)
    }

    /// Sets the watches on every folder that is not ignored (git names those, collapsed).
    async fn sync_watch(&self, w: &Watch) {
        let listing = self
            .git
            .run(
                &[
                    "ls-files",
                    "-z",
                    "-o",
                    "-i",
                    "--directory",
                    "--exclude-standard",
                    "--",
                    self.spec(),
                ],
                self.run_index(),
            )
            .await;
        let Ok(listing) = listing else {
            // Without the ignored folders, watching could take a build folder's every event.
            w.give_up();
            return;
        };
        // A folder is listed so when all it holds is ignored too; only the folders a rule
        // ignores themselves are left unwatched (a file made in the others counts).
        let folders: Vec<&[u8]> = listing
            .split(|b| *b == 0)
            .filter(|p| p.ends_with(b"/"))
            .collect();
        let mut ignored = std::collections::HashSet::new();
        if !folders.is_empty() {
            let checked = self
                .git
                .run(
                    &["check-ignore", "-z", "--stdin"],
                    Run {
                        stdin: Some(folders.join(&0u8)),
                        check_ignore: true,
                        ..self.run_index()
                    },
                )
                .await;
            let Ok(checked) = checked else {
                w.give_up();
                return;
            };
            ignored.extend(
                checked
                    .split(|b| *b == 0)
                    .filter(|p| !p.is_empty())
                    .map(<[u8]>::to_vec),
            );
        }
        let top = &self.git.work_tree;
        let root = top.join(&self.prefix);
        // The folders above the workspace, for their `.gitignore`; `info`, for `exclude`.
        let mut also: Vec<PathBuf> = root
            .ancestors()
            .skip(1)
            .take_while(|a| a.starts_with(top))
            .map(Path::to_path_buf)
            .collect();
        if let Some(info) = self.user_exclude.as_ref().and_then(|x| x.parent()) {
            also.push(info.to_path_buf());
        }
        w.sync(top, &root, &ignored, &also);
    }

    /// Brings the index up to date with the workspace and writes its tree.
    async fn stage(&self) -> Result<(String, Vec<String>), GitError> {
        self.settle().await?;
        // Two gits at once, one for each core: the stat of every tracked file, and the walk
        // for untracked ones. Disjoint but for a path both modified and deleted, which the
        // loop below takes once; the untracked ones keep their order, so `max_files` keeps
        // the same files.
        let spec = self.spec();
        let changed = ["ls-files", "-z", "-t", "-m", "-d", "--", spec];
        let others = [
            "ls-files",
            "-z",
            "-t",
            "-o",
            "--exclude-standard",
            "--",
            spec,
        ];
        let (tracked, untracked) = tokio::join!(
            self.git.run(&changed, self.run_index()),
            self.git.run(&others, self.run_index()),
        );
        let mut listing = tracked?;
        if !listing.is_empty() && !listing.ends_with(&[0]) {
            listing.push(0);
        }
        listing.extend(untracked?);
        let mut seen = BTreeSet::new();
        let mut update: Vec<u8> = Vec::new();
        let mut drop_: Vec<u8> = Vec::new();
        let mut too_big: Vec<String> = Vec::new();
        let mut too_many: Vec<String> = Vec::new();
        let mut files = index_entries(&self.index);
        for item in listing.split(|b| *b == 0).filter(|i| i.len() > 2) {
            let (tag, path) = (item[0], &item[2..]);
            if !seen.insert(path.to_vec()) {
                continue;
            }
            let rel = String::from_utf8_lossy(path).into_owned();
            // A folder with a repository of its own: its git keeps it.
            if path.ends_with(b"/") {
                continue;
            }
            let full = self
                .git
                .work_tree
                .join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(path));
            match std::fs::symlink_metadata(&full) {
                Err(_) => {
                    update.extend_from_slice(path);
                    update.push(0);
                }
                Ok(m) if m.file_type().is_symlink() => {
                    if tag == b'?' && files >= self.settings.max_files {
                        too_many.push(rel);
                        continue;
                    }
                    files += usize::from(tag == b'?');
                    update.extend_from_slice(path);
                    update.push(0);
                }
                Ok(m) if m.is_file() => {
                    if m.len() > self.settings.max_file_bytes {
                        too_big.push(rel);
                        drop_.extend_from_slice(path);
                        drop_.push(0);
                        continue;
                    }
                    if tag == b'?' && files >= self.settings.max_files {
                        too_many.push(rel);
                        continue;
                    }
                    files += usize::from(tag == b'?');
                    update.extend_from_slice(path);
                    update.push(0);
                }
                // FIFOs, sockets, devices: not files to keep.
                Ok(_) => {}
            }
        }
        let unchanged = update.is_empty() && drop_.is_empty();
        if !unchanged {
            // Entries written in the second their files changed are "racily clean": git
            // reads their content on every look until the index is written again later.
            let _ = write_atomic(&self.dir.join("racy"), b"");
        }
        if !drop_.is_empty() {
            self.git
                .run(
                    &["update-index", "-z", "--force-remove", "--stdin"],
                    Run {
                        stdin: Some(drop_),
                        ..self.run_index()
                    },
                )
                .await?;
        }
        if !update.is_empty() {
            self.git
                .run(
                    &[
                        "update-index",
                        "-z",
                        "--add",
                        "--remove",
                        "--replace",
                        "--stdin",
                    ],
                    Run {
                        stdin: Some(update),
                        ..self.run_index()
                    },
                )
                .await?;
        }
        let warnings = self.warnings(too_big, too_many);
        // Nothing changed: the index is the one whose tree was written last time.
        let cached = self.dir.join("tree");
        if unchanged {
            if let (Some(sig), Ok(text)) = (
                index_signature(&self.index),
                std::fs::read_to_string(&cached),
            ) {
                if let Some(tree) = text.strip_prefix(&sig).map(str::trim) {
                    if tree.len() >= 40 {
                        return Ok((tree.to_string(), warnings));
                    }
                }
            }
        }
        let tree = self.git.line(&["write-tree"], self.run_index()).await?;
        if let Some(sig) = index_signature(&self.index) {
            let _ = write_atomic(&cached, format!("{sig}{tree}\n").as_bytes());
        }
        Ok((tree, warnings))
    }

    /// Writes the index again once a second has passed since it was last changed, so that
    /// the entries it took in the second their files changed are checked by their stat data
    /// from then on instead of by their content: what keeps an unchanged checkpoint a walk
    /// of stat calls.
    async fn settle(&self) -> Result<(), GitError> {
        let marker = self.dir.join("racy");
        let Ok(changed) = std::fs::metadata(&marker).and_then(|m| m.modified()) else {
            return Ok(());
        };
        if SystemTime::now()
            .duration_since(changed)
            .unwrap_or_default()
            < Duration::from_secs(1)
        {
            return Ok(());
        }
        let _ = std::fs::remove_file(&marker);
        // Exit 1 only says some entry needs an update, which the listing that follows sees.
        match self
            .git
            .run(&["update-index", "-q", "--refresh"], self.run_index())
            .await
        {
            Ok(_) | Err(GitError::Failed(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// One line for each kind of skip, naming the paths not named before in this run.
    fn warnings(&self, too_big: Vec<String>, too_many: Vec<String>) -> Vec<String> {
        let mut warned = self.warned.lock().unwrap_or_else(|p| p.into_inner());
        let mut out = Vec::new();
        let big: Vec<String> = too_big
            .into_iter()
            .filter(|p| warned.insert(p.clone()))
            .collect();
        if !big.is_empty() {
            out.push(format!(
                "checkpoints skip {} over checkpoints.max_file_bytes ({} bytes): {}",
                plural(big.len(), "file"),
                crate::text::thousands(self.settings.max_file_bytes),
                named(&big)
            ));
        }
        let many: Vec<String> = too_many
            .into_iter()
            .filter(|p| warned.insert(p.clone()))
            .collect();
        if !many.is_empty() {
            out.push(format!(
                "checkpoints stop at checkpoints.max_files ({}): {} not kept: {}",
                crate::text::thousands(self.settings.max_files as u64),
                plural(many.len(), "file"),
                named(&many)
            ));
        }
        out
    }

    /// The paths that differ between two trees (or commits).
    pub async fn changed(&self, a: &str, b: &str) -> Result<Vec<String>, String> {
        if a == b {
            return Ok(Vec::new());
        }
        let out = self.diff_tree("--name-only", a, b).await?;
        Ok(split_paths(&out))
    }

    /// `git diff-tree -r -z --no-renames FORMAT a b`, its output bounded.
    async fn diff_tree(&self, format: &str, a: &str, b: &str) -> Result<Vec<u8>, String> {
        self.git
            .run(
                &["diff-tree", "-r", "-z", "--no-renames", format, a, b],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())
    }

    /// What changed between two trees, with lines added and removed.
    pub async fn changes(&self, a: &str, b: &str) -> Result<Changes, String> {
        if a == b {
            return Ok(Changes::default());
        }
        let out = self.diff_tree("--numstat", a, b).await?;
        let mut c = Changes::default();
        for item in out.split(|b| *b == 0).filter(|i| !i.is_empty()) {
            let text = String::from_utf8_lossy(item);
            let mut parts = text.splitn(3, '\t');
            let (Some(add), Some(del), Some(_)) = (parts.next(), parts.next(), parts.next()) else {
                continue;
            };
            c.added += add.parse::<u64>().unwrap_or(0);
            c.removed += del.parse::<u64>().unwrap_or(0);
        }
        let status = self
            .git
            .run(
                &[
                    "diff-tree",
                    "-r",
                    "-z",
                    "--no-renames",
                    "--name-status",
                    a,
                    b,
                ],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut parts = status.split(|b| *b == 0).filter(|i| !i.is_empty());
        while let (Some(tag), Some(path)) = (parts.next(), parts.next()) {
            let kind = match tag.first() {
                Some(b'A') => "add",
                Some(b'D') => "delete",
                _ => "update",
            };
            let path = String::from_utf8_lossy(path);
            let shown = path.strip_prefix(self.prefix.as_str()).unwrap_or(&path);
            c.paths.push((shown.to_string(), kind));
        }
        Ok(c)
    }

    /// How each path that differs between `a` and `b` is in `a`: its mode and blob, or none
    /// when `a` does not have it.
    pub async fn differences(
        &self,
        a: &str,
        b: &str,
    ) -> Result<BTreeMap<String, Option<(String, String)>>, String> {
        let mut map = BTreeMap::new();
        if a == b {
            return Ok(map);
        }
        let out = self
            .git
            .run(
                &["diff-tree", "-r", "-z", "--no-renames", "--raw", a, b],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        // `:MODE_A MODE_B HASH_A HASH_B STATUS` NUL `PATH` NUL.
        let mut parts = out.split(|b| *b == 0).filter(|i| !i.is_empty());
        while let (Some(meta), Some(path)) = (parts.next(), parts.next()) {
            let meta = String::from_utf8_lossy(meta);
            let f: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let (Some(mode), Some(hash), Some(status)) = (f.first(), f.get(2), f.get(4)) else {
                continue;
            };
            let entry = (!status.starts_with('A')).then(|| (mode.to_string(), hash.to_string()));
            map.insert(String::from_utf8_lossy(path).into_owned(), entry);
        }
        Ok(map)
    }

    /// Gives each of `paths` its content and mode in the target back, as `differences` (of
    /// the target and now) says they are there, and removes those the target does not have.
    /// Other paths are left alone. A regular file that is rewritten keeps its permission
    /// bits, but for the executable bit, which is the target's.
    pub async fn restore(
        &self,
        target: &BTreeMap<String, Option<(String, String)>>,
        paths: &[String],
    ) -> Result<Restored, String> {
        let _lock = self.lock().await?;
        let mut done = Restored::default();
        let mut write: Vec<(&String, &String, &String)> = Vec::new();
        // Deepest first, so a folder a turn made is empty when its files are gone.
        let mut sorted: Vec<&String> = paths.iter().filter(|p| safe_rel(p)).collect();
        sorted.sort_by(|a, b| b.cmp(a));
        for p in sorted {
            let Some(entry) = target.get(p.as_str()) else {
                continue;
            };
            if !self.beneath_no_link(p) {
                done.refused.push(p.clone());
                continue;
            }
            let full = self.git.work_tree.join(p);
            if let Some((mode, hash)) = entry {
                write.push((p, mode, hash));
                continue;
            }
            match std::fs::symlink_metadata(&full) {
                Ok(m) if m.is_dir() => {
                    if std::fs::remove_dir(&full).is_ok() {
                        done.removed.push(p.clone());
                    }
                }
                Ok(_) => {
                    if std::fs::remove_file(&full).is_ok() {
                        done.removed.push(p.clone());
                    }
                    self.remove_empty_parents(p);
                }
                Err(_) => {}
            }
        }
        if !write.is_empty() {
            // What each file's permissions are now, to keep them (git knows only 644/755).
            let before: BTreeMap<&String, u32> = write
                .iter()
                .filter_map(|(p, _, _)| {
                    let m = std::fs::symlink_metadata(self.git.work_tree.join(p)).ok()?;
                    m.is_file().then(|| (*p, m.permissions().mode() & 0o7777))
                })
                .collect();
            // An index of just these entries, checked out.
            let index = self.dir.join("restore.index");
            let _ = std::fs::remove_file(&index);
            let run = || Run {
                index: Some(&index),
                limit: LIST_BYTES,
                ..Run::default()
            };
            let mut info = Vec::new();
            let mut names = Vec::new();
            for (p, mode, hash) in &write {
                let _ = writeln!(info, "{mode} {hash}\t{p}");
                names.extend_from_slice(p.as_bytes());
                names.push(0);
            }
            let result = async {
                self.git
                    .run(
                        &["update-index", "--index-info"],
                        Run {
                            stdin: Some(info),
                            ..run()
                        },
                    )
                    .await?;
                self.git
                    .run(
                        &["checkout-index", "-f", "-z", "--stdin"],
                        Run {
                            stdin: Some(names),
                            ..run()
                        },
                    )
                    .await
            }
            .await;
            let _ = std::fs::remove_file(&index);
            result.map_err(|e| e.to_string())?;
            for (p, mode, _) in write {
                let mode = u32::from_str_radix(mode, 8).unwrap_or(0);
                if let (Some(old), true) = (before.get(p), mode & 0o170000 == 0o100000) {
                    let exec = mode & 0o111 != 0;
                    let keep = old & 0o666 | if exec { (old & 0o444) >> 2 } else { 0 };
                    let _ = std::fs::set_permissions(
                        self.git.work_tree.join(p),
                        std::fs::Permissions::from_mode(keep),
                    );
                }
                done.written.push(p.clone());
            }
        }
        done.removed.sort();
        done.written.sort();
        Ok(done)
    }

    /// Whether every folder on the way to `rel` (below the work tree) is a real folder, not a
    /// link: a path is never removed through a link.
    fn beneath_no_link(&self, rel: &str) -> bool {
        let mut at = self.git.work_tree.clone();
        let parts: Vec<&str> = rel.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => return false,
                Ok(m) if !m.is_dir() => return true,
                Err(_) => return true,
                Ok(_) => {}
            }
        }
        true
    }

    /// Removes the folders above `rel` that its removal left empty, up to the workspace (a
    /// folder the target has files in gets them back from the checkout that follows).
    fn remove_empty_parents(&self, rel: &str) {
        let mut parent = Path::new(rel).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            if p.as_os_str().len() < self.prefix.len() {
                break;
            }
            if std::fs::remove_dir(self.git.work_tree.join(p)).is_err() {
                break;
            }
            parent = p.parent();
        }
    }

    /// A tree that is `base` with `paths` as they are in `top`: the changes of those paths
    /// only, for a diff limited to them.
    pub async fn tree_with(
        &self,
        base: &str,
        top: &str,
        paths: &[String],
    ) -> Result<String, String> {
        let _lock = self.lock().await?;
        let out = self
            .git
            .run(
                &["ls-tree", "-r", "-z", "--full-tree", top],
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())?;
        let mut top_entries: BTreeMap<String, String> = BTreeMap::new();
        for item in out.split(|b| *b == 0).filter(|i| !i.is_empty()) {
            let text = String::from_utf8_lossy(item);
            if let Some((meta, path)) = text.split_once('\t') {
                let mut m = meta.split(' ');
                if let (Some(mode), Some(_), Some(hash)) = (m.next(), m.next(), m.next()) {
                    top_entries.insert(path.to_string(), format!("{mode} {hash}"));
                }
            }
        }
        let mut info = Vec::new();
        for p in paths {
            match top_entries.get(p) {
                Some(e) => writeln!(info, "{e}\t{p}"),
                None => writeln!(info, "0 {}\t{p}", "0".repeat(40)),
            }
            .ok();
        }
        let index = self.dir.join("diff.index");
        let run = || Run {
            index: Some(&index),
            limit: LIST_BYTES,
            ..Run::default()
        };
        let result = async {
            self.git.run(&["read-tree", base], run()).await?;
            self.git
                .run(
                    &["update-index", "--index-info"],
                    Run {
                        stdin: Some(info),
                        ..run()
                    },
                )
                .await?;
            self.git.line(&["write-tree"], run()).await
        }
        .await;
        let _ = std::fs::remove_file(&index);
        result.map_err(|e| e.to_string())
    }

    /// The unified diff (or `--stat`) from tree `a` to tree `b`, paths relative to the work
    /// tree, as `git apply` reads it; binary files are named, not dumped.
    pub async fn diff(&self, a: &str, b: &str, color: bool, stat: bool) -> Result<Vec<u8>, String> {
        let color = if color {
            "--color=always"
        } else {
            "--color=never"
        };
        let mut args = vec![
            "diff-tree",
            "-r",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            color,
        ];
        args.push(if stat { "--stat" } else { "-p" });
        args.extend([a, b]);
        self.git
            .run(
                &args,
                Run {
                    limit: LIST_BYTES,
                    ..Run::default()
                },
            )
            .await
            .map_err(|e| e.to_string())
    }

    /// The store's size in bytes, its sessions with checkpoints and its checkpoints.
    pub async fn usage(&self) -> (u64, usize, u64) {
        let size = dir_size(&self.dir, 0);
        let refs = self.session_refs().await.unwrap_or_default();
        let count = self
            .git
            .line(&["rev-list", "--all", "--count"], Run::default())
            .await
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (size, refs.len(), count)
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
    pub async fn prune_if_due(&self) -> Result<Option<Pruned>, String> {
        let stamp = self.dir.join("pruned");
        let due = std::fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .map(|t| SystemTime::now().duration_since(t).unwrap_or_default() > PRUNE_EVERY)
            .unwrap_or(true);
        if !due {
            return Ok(None);
        }
        self.prune().await.map(Some)
    }

    /// Drops the checkpoints of sessions past `keep_sessions` or older than `keep_days`, then
    /// packs the store and drops what nothing names.
    pub async fn prune(&self) -> Result<Pruned, String> {
        let _lock = self.lock().await?;
        let mut refs = self.session_refs().await?;
        refs.sort_by_key(|r| std::cmp::Reverse(r.1));
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let oldest = now.saturating_sub(self.settings.keep_days.saturating_mul(86_400));
        let mut delete = String::new();
        let mut dropped = 0;
        for (i, (name, t)) in refs.iter().enumerate() {
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
        // `-l`: objects the user's repository has stay there, not copied into the pack.
        git(&["repack", "-a", "-d", "-l", "-q"], None)
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
            bytes_before: before,
            bytes_after: after,
        })
    }
}

/// The checkpoints of a run: the store, opened at the first checkpoint (so a run that never
/// changes a file never starts git), and told to prune when it is due.
pub struct Checkpoints {
    workspace: PathBuf,
    env: Env,
    settings: Settings,
    store: tokio::sync::OnceCell<Option<Store>>,
}

impl Checkpoints {
    pub fn new(workspace: &Path, env: &Env, settings: &Settings) -> Checkpoints {
        Checkpoints {
            workspace: workspace.to_path_buf(),
            env: env.clone(),
            settings: settings.clone(),
            store: tokio::sync::OnceCell::new(),
        }
    }

    /// The store, or none when checkpoints are off here; the first call opens it, and the
    /// one line saying why they are off (or what a prune found wrong) goes to `warn`.
    pub async fn store(&self, warn: &(dyn Fn(&str) + Sync)) -> Option<&Store> {
        self.store
            .get_or_init(|| async {
                match Store::open(&self.workspace, &self.env, &self.settings).await {
                    Ok(store) => {
                        if let Err(e) = store.prune_if_due().await {
                            warn(&format!("checkpoints not pruned: {e}"));
                        }
                        Some(store)
                    }
                    Err(off) => {
                        if let Some(line) = off.line {
                            warn(&line);
                        }
                        None
                    }
                }
            })
            .await
            .as_ref()
    }
}

/// What a prune did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub sessions_dropped: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

/// The repository `ws` is in: its top folder and its common git folder (where the objects
/// and `info/exclude` are; a linked worktree's `.git` file points at its own folder, whose
/// `commondir` names the shared one).
fn find_repo(ws: &Path) -> Option<(PathBuf, PathBuf)> {
    for dir in ws.ancestors() {
        let dot = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot) else {
            continue;
        };
        let git_dir = if meta.is_dir() {
            dot
        } else if meta.is_file() {
            let text = std::fs::read_to_string(&dot).ok()?;
            let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
            dir.join(target)
        } else {
            return None;
        };
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(c) => git_dir.join(c.trim()),
            Err(_) => git_dir,
        };
        return Some((dir.to_path_buf(), common));
    }
    None
}

/// What identifies one version of the index file: its inode, size and change time.
fn index_signature(index: &Path) -> Option<String> {
    let m = std::fs::metadata(index).ok()?;
    Some(format!(
        "{} {} {}.{} ",
        m.ino(),
        m.len(),
        m.ctime(),
        m.ctime_nsec()
    ))
}

/// Entries of a git index, from its header (0 when there is none).
fn index_entries(index: &Path) -> usize {
    use std::io::Read;
    let mut head = [0u8; 12];
    let read = std::fs::File::open(index).and_then(|mut f| f.read_exact(&mut head));
    if read.is_err() || &head[..4] != b"DIRC" {
        return 0;
    }
    u32::from_be_bytes([head[8], head[9], head[10], head[11]]) as usize
}

/// A session id as a ref's last part (ids are UUIDs; anything else is made safe).
fn ref_safe(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// A relative path with no `..`, `.` or empty part: what git lists, and all a restore writes.
fn safe_rel(p: &str) -> bool {
    !p.is_empty()
        && !p.starts_with('/')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
}

fn split_paths(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|i| !i.is_empty())
        .map(|i| String::from_utf8_lossy(i).into_owned())
        .collect()
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{} {what}s", crate::text::thousands(n as u64))
    }
}

/// The first few paths, and how many more.
fn named(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut s = paths
        .iter()
        .take(SHOWN)
        .map(|p| crate::text::escape_controls(p).into_owned())
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        s.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    s
}

/// Bytes the files below `dir` take (links not followed), to a depth that a git folder
/// never passes.
fn dir_size(dir: &Path, depth: usize) -> u64 {
    if depth > 8 {
        return 0;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path(), depth + 1),
            Ok(m) => m.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}
