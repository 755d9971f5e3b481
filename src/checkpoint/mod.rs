//! Checkpoints: the state of the workspace's files, kept so that what the agent changed can
//! be seen (`hx diff`) and undone (`hx rewind`), whatever changed it (an edit, `sed -i`, `mv`,
//! a subagent).
//!
//! A checkpoint is a commit in a shadow repository of hx's own,
//! `$XDG_STATE_HOME/hx/checkpoints/<workspace>/git`, with its own index (`index`, the stat
//! cache that makes a checkpoint of an unchanged tree cost a directory walk and nothing
//! else). Its work tree is the workspace, or, in a git repository, the repository's top
//! folder limited to the workspace (so every `.gitignore` applies as git applies it). Every
//! object a checkpoint names is in the store itself: nothing is borrowed from the
//! repository's `.git/objects`, which commands may write, collect or remove (issue 32), and
//! every file a rewind writes back is checked against its name first. Nothing of the user's
//! `.git` is written: not its index, `HEAD`, refs, config or hooks.
//!
//! A run's first look, made while the run is built ([`Checkpoints::ahead`]), walks the workspace
//! in-process (`scan`): it sets the watches, finds the files git would list as untracked, and holds
//! every file of `index` against the stat data git recorded there (`index`); the few that changed
//! since are taken as a turn's are. A store's first look (no index yet) takes every file the walk
//! finds, into one pack (`pack`), and writes `index` itself. Only what the walk cannot be sure of
//! (a doubtful `.git` or rule, over a thousand changes) is looked at with git's plumbing, which
//! also brings `index` up to date. The checkpoints after it take only the files inotify named,
//! writing their blobs, trees, commit and ref in-process (`live`, `objects`; the tree is read from
//! the store's loose objects, or git's listing once packed, when a turn first changes a file), so a
//! run in a workspace seen before starts no git process. The CLI, not
//! gitoxide, for the rest: git is on every machine that has a repository, and gitoxide
//! would be a large dependency to compile for the same plumbing.
//!
//! What a checkpoint takes is what git would see (`.gitignore`, `.git/info/exclude`, the
//! global excludes file), minus files over `max_file_bytes`, past `max_files` or unreadable
//! (one warning names them), links as links, never in the home folder itself or `/`.
//!
//! Concurrency and crashes: every change to the store is made under an exclusive `flock` of
//! `lock`; git writes objects before the ref that names them and renames its index and refs
//! into place, so a crash leaves at worst unreferenced objects, which the next prune drops.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::paths::Env;

mod compare;
pub mod git;
mod ignores;
mod index;
mod listings;
mod live;
mod objects;
mod pack;
mod place;
mod restore;
mod scan;
mod snapshot;
mod store;
#[cfg(test)]
mod tests;
mod watch;

use git::Git;
pub use git::GitError;
pub use listings::Kept;
pub use store::{forget, Pruned, Usage};
pub use watch::flags as watch_flags;
use watch::Watch;

/// Bytes of a listing git may give back (paths of a tree, of changed files): far more than
/// `max_files` paths take.
const LIST_BYTES: u64 = 256 * 1024 * 1024;
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
    /// Bytes the workspace's store may take when a run opens it (default 1 GiB).
    pub max_store_bytes: u64,
}

pub const DEFAULT_MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
pub const DEFAULT_MAX_FILES: usize = 50_000;
pub const DEFAULT_KEEP_DAYS: u64 = 30;
pub const DEFAULT_KEEP_SESSIONS: usize = 100;
pub const DEFAULT_MAX_STORE_BYTES: u64 = 1 << 30;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            max_files: DEFAULT_MAX_FILES,
            keep_days: DEFAULT_KEEP_DAYS,
            keep_sessions: DEFAULT_KEEP_SESSIONS,
            max_store_bytes: DEFAULT_MAX_STORE_BYTES,
        }
    }
}

/// `$XDG_STATE_HOME/hx/checkpoints`.
pub fn root(env: &Env) -> Option<PathBuf> {
    Some(crate::paths::state_dir(env)?.join("checkpoints"))
}

/// The store's folder of the workspace `ws` (real): where `Store::open` keeps it.
fn store_dir(ws: &Path, env: &Env) -> Option<PathBuf> {
    Some(root(env)?.join(crate::paths::workspace_folder(ws)))
}

/// The folders' listings the last look kept in the store of `workspace`, for the sandbox's
/// walk (`listings::Kept`); none when checkpoints are off here or no look kept any.
pub fn kept_listings(workspace: &Path, env: &Env, settings: &Settings) -> Option<Kept> {
    if !settings.enabled {
        return None;
    }
    let ws = crate::paths::real_path(workspace).ok()?;
    // Real, for the sandbox to tell whether commands may write it.
    let store = crate::paths::real_path(&store_dir(&ws, env)?).ok()?;
    let top = find_repo(&ws).map_or_else(|| ws.clone(), |(top, _)| top);
    Kept::read(&store, &top)
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
    /// Paths left alone because a link (or a file) is where a folder on their way was.
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
///
/// Defined here and implemented in `store`, `snapshot` and `restore`: its fields stay private
/// to this module, which its children see, so no field is opened wider to split the code.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    git: Git,
    index: PathBuf,
    /// The workspace below the work tree, `/`-terminated; empty when they are one folder.
    prefix: String,
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
    /// Of them, those git made (the in-process walk could not be sure).
    git_looks: std::sync::atomic::AtomicUsize,
    /// Folders whose listing a look took from the last one's (`listings`).
    listings_taken: std::sync::atomic::AtomicUsize,
    /// The last checkpoint's tree, while the watches can say what changed since.
    live: Mutex<Option<live::Live>>,
    /// Whether a first look is made in-process (`snapshot::first_look`); git's otherwise.
    first_in_process: bool,
    /// The store's objects, its packs' indexes read once a run (when an object is first
    /// not loose), rather than once a checkpoint.
    objects: objects::Objects,
    /// The warnings of a look made ahead of the first checkpoint, which that checkpoint
    /// gives.
    ahead_warnings: Mutex<Vec<String>>,
    /// The folders' listings the sandbox's walk read from this store, for the next look to
    /// take rather than read and parse the file again.
    kept: Mutex<Option<Kept>>,
}

/// The shadow's lock, held while it is changed; released when dropped.
struct Locked {
    _file: std::fs::File,
}

/// The checkpoints of a run: the store, opened at the first checkpoint or ahead of it
/// ([`Checkpoints::ahead`]), and told to prune when it is due.
pub struct Checkpoints {
    workspace: PathBuf,
    env: Env,
    settings: Settings,
    /// git, found when the run starts.
    git: git::Program,
    store: tokio::sync::OnceCell<Option<Store>>,
    recorded: Option<Recorded>,
    /// Told when the look made ahead is done (or given up).
    ahead: Option<tokio::sync::watch::Receiver<bool>>,
    /// What opening the store ahead had to say, for the first caller of `store`.
    said: Mutex<Vec<String>>,
    /// The listings the sandbox's walk read, for the store's first look.
    kept: Mutex<Option<Kept>>,
}

/// The ids of every session there is, when they can be known: what a prune asks, so that the
/// checkpoints of a session that is gone go too (sessions are a layer above).
pub type Recorded = std::sync::Arc<dyn Fn() -> Option<BTreeSet<String>> + Send + Sync>;

impl Checkpoints {
    /// The checkpoints of a run in `workspace`; git is looked up now, on `env`'s PATH as
    /// `host` allows (never in a folder a command may write).
    pub fn new(
        workspace: &Path,
        env: &Env,
        settings: &Settings,
        host: &crate::sandbox::HostPath,
    ) -> Checkpoints {
        let git = git::Program::find(host, env.get("PATH").map(String::as_str));
        Checkpoints::with_git(workspace, env, settings, git)
    }

    /// [`Checkpoints::new`] with the git it runs given (one found later: `Program::later`).
    pub fn with_git(
        workspace: &Path,
        env: &Env,
        settings: &Settings,
        git: git::Program,
    ) -> Checkpoints {
        Checkpoints {
            workspace: workspace.to_path_buf(),
            env: env.clone(),
            settings: settings.clone(),
            git,
            store: tokio::sync::OnceCell::new(),
            recorded: None,
            ahead: None,
            said: Mutex::new(Vec::new()),
            kept: Mutex::new(None),
        }
    }

    /// Hands the store's first look the folders' listings read for the sandbox's walk
    /// ([`kept_listings`]): the file is read and parsed once a run, not twice (issue 33).
    pub fn with_kept(self, kept: Option<Kept>) -> Checkpoints {
        *self.kept.lock().unwrap_or_else(|p| p.into_inner()) = kept;
        self
    }

    /// Opens the store and looks at the workspace now, on a thread of `runtime`'s blocking
    /// pool, while the run is still being built: the first checkpoint then finds the watches
    /// set and the tree known, and only writes its commit (issue 33: in a workspace of 2,000
    /// folders the look was 20 ms between the first answer and the first tool). Whatever
    /// changes in between is an event, as between any two checkpoints. For a run that will
    /// take checkpoints (a recorded one): the store is opened either way.
    pub fn ahead(mut self, runtime: &tokio::runtime::Handle) -> std::sync::Arc<Checkpoints> {
        let (done, ahead) = tokio::sync::watch::channel(false);
        self.ahead = Some(ahead);
        let me = std::sync::Arc::new(self);
        let them = me.clone();
        let on = runtime.clone();
        // Not spawned on the runtime itself: it has one thread, busy building the run. A
        // git this needs (a new store's `init`) waits for that thread to be free.
        drop(runtime.spawn_blocking(move || {
            on.block_on(async {
                let said = |line: &str| {
                    them.said
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(line.to_string())
                };
                if let Some(store) = them.open(&said).await {
                    store.look_ahead().await;
                }
            });
            let _ = done.send(true);
        }));
        me
    }

    /// Drops the checkpoints of the sessions `ids`, with the git this run found.
    pub async fn forget(&self, ids: &[String]) -> Result<usize, String> {
        store::forget(&self.env, ids, &self.git).await
    }

    /// What the prune a run makes when it is due asks for the sessions there are.
    pub fn recorded(mut self, recorded: Recorded) -> Checkpoints {
        self.recorded = Some(recorded);
        self
    }

    /// The store, or none when checkpoints are off here; the first call opens it (or waits
    /// for the look made ahead), and the one line saying why they are off (or what a prune
    /// found wrong) goes to `warn`.
    pub async fn store(&self, warn: &(dyn Fn(&str) + Sync)) -> Option<&Store> {
        if let Some(mut ahead) = self.ahead.clone() {
            // An error: the look's thread is gone (it panicked), and the store is what it
            // left, as after any failed look.
            let _ = ahead.wait_for(|done| *done).await;
        }
        let said = std::mem::take(&mut *self.said.lock().unwrap_or_else(|p| p.into_inner()));
        for line in said {
            warn(&line);
        }
        self.open(warn).await
    }

    async fn open(&self, warn: &(dyn Fn(&str) + Sync)) -> Option<&Store> {
        self.store
            .get_or_init(|| async {
                match Store::open(&self.workspace, &self.env, &self.settings, &self.git).await {
                    Ok(store) => {
                        *store.kept.lock().unwrap_or_else(|p| p.into_inner()) =
                            self.kept.lock().unwrap_or_else(|p| p.into_inner()).take();
                        let recorded = self.recorded.as_ref().and_then(|r| r());
                        if let Err(e) = store.prune_if_due(recorded.as_ref()).await {
                            warn(&format!("checkpoints not pruned: {e}"));
                        }
                        match within_bound(&store, self.settings.max_store_bytes, recorded.as_ref())
                            .await
                        {
                            Ok(()) => Some(store),
                            Err(line) => {
                                warn(&line);
                                None
                            }
                        }
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

/// Whether the store takes at most `max` bytes, pruned first when it takes more (issue 32: a
/// store grew by megabytes a turn, with no bound but the age and number of sessions). Checked
/// when a run opens the store, so a run may pass the bound by what it adds itself; still
/// over after the prune, the run takes no checkpoints and the error says so.
async fn within_bound(
    store: &Store,
    max: u64,
    recorded: Option<&BTreeSet<String>>,
) -> Result<(), String> {
    if store_size(store.dir()) <= max {
        return Ok(());
    }
    let _ = store.prune(recorded).await;
    let size = dir_size(store.dir(), 0);
    if size <= max {
        return Ok(());
    }
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    Err(format!(
        "checkpoints are off this run: the store of this workspace takes {}, more than \
         checkpoints.max_store_bytes ({}); lower checkpoints.keep_sessions or keep_days and \
         run `hx checkpoints prune`, or raise the bound",
        mb(size),
        mb(max)
    ))
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

/// Bytes the store at `dir` takes, as [`dir_size`] counts them, with the files of each
/// folder whose change time is the one recorded last time (in `sizes`) counted as then: a
/// folder's change time moves whenever a name in it is made, removed or renamed, and the
/// store changes no file in place but its lock, which is empty, and its refs' spares, whose
/// size never changes (`snapshot::write_ref`). So a run pays a stat for
/// each file of the folders changed since the last run, not for each of the thousands of
/// objects a first look wrote (issue 33: a fifth of what checkpoints still cost a run).
fn store_size(dir: &Path) -> u64 {
    use std::collections::HashMap;
    /// Folders recorded at most (a store has about 300).
    const MAX_RECORDED: usize = 10_000;
    let record = dir.join("sizes");
    let mut known: HashMap<String, (i64, i64, u64)> = std::fs::read_to_string(&record)
        .unwrap_or_default()
        .lines()
        .take(MAX_RECORDED)
        .filter_map(|l| {
            let mut f = l.splitn(4, ' ');
            let bytes = f.next()?.parse().ok()?;
            let s = f.next()?.parse().ok()?;
            let ns = f.next()?.parse().ok()?;
            Some((f.next()?.to_string(), (s, ns, bytes)))
        })
        .collect();
    let mut seen: Vec<(String, (i64, i64, u64))> = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    while let Some((folder, depth)) = stack.pop() {
        let (Ok(meta), Ok(rd)) = (
            std::fs::symlink_metadata(&folder),
            std::fs::read_dir(&folder),
        ) else {
            continue;
        };
        let stamp = (meta.ctime(), meta.ctime_nsec());
        let name = folder.to_string_lossy().into_owned();
        let mut files = match known.remove(&name) {
            Some((s, ns, bytes)) if (s, ns) == stamp => Some(bytes),
            _ => None,
        };
        let mut counted = 0u64;
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                if depth < 8 {
                    stack.push((e.path(), depth + 1));
                }
            } else if files.is_none() {
                counted += e.metadata().map(|m| m.blocks() * 512).unwrap_or(0);
            }
        }
        let bytes = *files.get_or_insert(counted);
        total += bytes;
        if seen.len() < MAX_RECORDED {
            seen.push((name, (stamp.0, stamp.1, bytes)));
        }
    }
    let text: String = seen
        .iter()
        .filter(|(n, _)| !n.contains('\n'))
        .map(|(n, (s, ns, b))| format!("{b} {s} {ns} {n}\n"))
        .collect();
    let _ = crate::paths::write_atomic(&record, text.as_bytes());
    total
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
