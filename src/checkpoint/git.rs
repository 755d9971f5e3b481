//! Running git for the shadow repository: one way to start it, with an environment made from
//! nothing and every setting that could run code or change bytes pinned on the command line.
//!
//! The user's repository never configures these runs: `GIT_DIR` is the shadow's, so git
//! reads neither the user's `.git/config` nor its hooks; the system and global files are
//! `/dev/null`; hooks, fsmonitor, filters and line-ending conversion are off, so what is
//! stored is the bytes on disk and nothing in a repository can make a checkpoint run a
//! program.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, OnceLock};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::process::{Launch, Role};
use crate::sandbox::{HostPath, NotFound};

/// Bytes of git's error output kept for the message.
const STDERR_BYTES: u64 = 8 * 1024;

/// The git hx runs, found once, when the run starts, and the `PATH` it gets (git looks its
/// helpers up on it): both outside every folder a command may write and never through a
/// relative entry, so a `git` the model wrote (in a virtualenv's `.venv/bin` on PATH) is never
/// the one hx runs, unsandboxed, on every checkpoint.
///
/// Which folders commands may write is known only once the run's pod has started (without
/// one, the temporary folders are the host's), so a run's checkpoints may begin before it:
/// [`Program::later`] is found when the pod's start is known, and only what runs git waits
/// for it (issue 33: the look made ahead started after the pod's start, 6 ms later, and
/// needs no git).
#[derive(Debug, Clone)]
pub struct Program {
    found: Arc<OnceLock<Found>>,
    /// That git is there at all, known before `found` is: a git the narrowest host path
    /// allows (the one of a run without a pod) is one the run's allows too.
    present: bool,
}

#[derive(Debug)]
struct Found {
    git: Result<PathBuf, GitError>,
    path: OsString,
}

/// Gives a [`Program::later`] its git, once: dropped without, every git it runs fails.
pub struct Finder(Arc<OnceLock<Found>>);

impl Finder {
    /// git on `path` (hx's PATH), as `host` (the run's, its pod started or not) allows.
    pub fn find(self, host: &HostPath, path: Option<&str>) {
        let _ = self.0.set(Found::of(host, path));
    }
}

impl Drop for Finder {
    fn drop(&mut self) {
        let _ = self.0.set(Found {
            git: Err(GitError::Failed(
                "the run's sandbox did not say where git may be taken from".into(),
            )),
            path: OsString::new(),
        });
    }
}

impl Found {
    fn of(host: &HostPath, path: Option<&str>) -> Found {
        let git = match host.find(OsStr::new("git"), Path::new("/"), path) {
            Ok(p) => Ok(p),
            Err(NotFound::Missing) => Err(GitError::Missing),
            Err(NotFound::Refused(why)) => Err(GitError::Failed(why)),
        };
        Found {
            git,
            path: host.value(),
        }
    }
}

impl Program {
    /// git on `path` (hx's PATH), as `host` allows.
    pub fn find(host: &HostPath, path: Option<&str>) -> Program {
        let found = Found::of(host, path);
        Program {
            present: found.git.is_ok(),
            found: Arc::new(OnceLock::from(found)),
        }
    }

    /// git found later, by the [`Finder`], with the run's host path; `narrowest` is the host
    /// path of a run without a pod, which no run's is narrower than.
    pub fn later(narrowest: &HostPath, path: Option<&str>) -> (Program, Finder) {
        let found = Arc::new(OnceLock::new());
        let program = Program {
            present: Found::of(narrowest, path).git.is_ok(),
            found: found.clone(),
        };
        (program, Finder(found))
    }

    /// git from `env`'s PATH, skipping only relative entries (tests, benchmarks).
    pub fn from_env(env: &crate::paths::Env) -> Program {
        Program::find(
            &HostPath::new(env.get("PATH").map(String::as_str), Vec::new()),
            None,
        )
    }

    fn found(&self) -> &Found {
        self.found.wait()
    }

    fn git(&self) -> Result<&Path, GitError> {
        self.found().git.as_deref().map_err(Clone::clone)
    }

    /// The `PATH` git runs with.
    fn path(&self) -> OsString {
        self.found().path.clone()
    }

    /// Whether there is a git to run, without waiting for a [`Program::later`] when the
    /// narrowest host path already has one.
    fn present(&self) -> Result<(), GitError> {
        if self.present {
            return Ok(());
        }
        self.git().map(|_| ())
    }
}

/// Why a git run failed: git is not installed, or it said no.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GitError {
    Missing,
    Failed(String),
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GitError::Missing => f.write_str("git is not installed"),
            GitError::Failed(s) => f.write_str(s),
        }
    }
}

/// The fixed part of every run: git, the shadow's folders, the work tree.
#[derive(Debug, Clone)]
pub struct Git {
    pub program: Program,
    pub git_dir: PathBuf,
    pub work_tree: PathBuf,
    /// The global excludes file the user's git would read, read here explicitly since the
    /// global config is not.
    pub excludes_file: Option<PathBuf>,
}

/// One run's settings on top of [`Git`]'s.
#[derive(Default)]
pub struct Run<'a> {
    /// `GIT_INDEX_FILE`; none: the shadow's own (`GIT_DIR/index`, unused by hx).
    pub index: Option<&'a Path>,
    pub stdin: Option<Vec<u8>>,
    /// Bytes of output accepted; more is an error (nothing hx asks git for is unbounded).
    pub limit: u64,
    /// Without a work tree (`git init --bare`).
    pub bare: bool,
    /// `git check-ignore`: exit 1 is an answer (nothing is ignored), not a failure, and
    /// the paths it reads are not pathspecs (it refuses the literal magic).
    pub check_ignore: bool,
}

impl Git {
    pub fn new(
        program: Program,
        git_dir: PathBuf,
        work_tree: PathBuf,
        excludes_file: Option<PathBuf>,
    ) -> Git {
        Git {
            program,
            git_dir,
            work_tree,
            excludes_file,
        }
    }

    fn vars(&self, index: Option<&Path>, bare: bool, literal: bool) -> Vec<(OsString, OsString)> {
        let mut v: Vec<(OsString, OsString)> = vec![
            ("GIT_DIR".into(), self.git_dir.clone().into()),
            ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
            ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
            ("GIT_CONFIG_SYSTEM".into(), "/dev/null".into()),
            ("GIT_ATTR_NOSYSTEM".into(), "1".into()),
            ("GIT_TERMINAL_PROMPT".into(), "0".into()),
            ("GIT_NO_REPLACE_OBJECTS".into(), "1".into()),
            ("GIT_PAGER".into(), "cat".into()),
            ("GIT_AUTHOR_NAME".into(), "hx".into()),
            ("GIT_AUTHOR_EMAIL".into(), "hx@localhost".into()),
            ("GIT_COMMITTER_NAME".into(), "hx".into()),
            ("GIT_COMMITTER_EMAIL".into(), "hx@localhost".into()),
            ("LC_ALL".into(), "C".into()),
        ];
        if !bare {
            v.push(("GIT_WORK_TREE".into(), self.work_tree.clone().into()));
        }
        if !bare && literal {
            // The workspace's path is a path, never a pattern.
            v.push(("GIT_LITERAL_PATHSPECS".into(), "1".into()));
        }
        v.push(("PATH".into(), self.program.path()));
        if let Some(i) = index {
            v.push(("GIT_INDEX_FILE".into(), i.into()));
        }
        v
    }

    fn args(&self, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = [
            "core.hooksPath=/dev/null",
            "core.fsmonitor=false",
            // No fsync of each object: git's default since 2.36 made the first checkpoint
            // of 2,000 small files take 2.8 s of waiting on the disk. The store holds undo
            // points, and the one a power cut could lose is the newest, made again next turn.
            "core.fsync=none",
            "core.autocrlf=false",
            "core.safecrlf=false",
            "core.symlinks=true",
            "core.fileMode=true",
            "core.quotePath=false",
            "core.splitIndex=false",
            "core.sparseCheckout=false",
            "core.precomposeUnicode=false",
            "gc.auto=0",
            "maintenance.auto=false",
            "color.ui=never",
            "commit.gpgSign=false",
            "protocol.allow=never",
        ]
        .iter()
        .flat_map(|c| ["-c".to_string(), c.to_string()])
        .collect();
        if let Some(x) = &self.excludes_file {
            all.push("-c".into());
            all.push(format!("core.excludesFile={}", x.display()));
        }
        all.extend(args.iter().map(|a| a.to_string()));
        all
    }

    /// Runs `git ARGS` and returns its output; a non-zero exit is an error with git's words.
    pub async fn run(&self, args: &[&str], run: Run<'_>) -> Result<Vec<u8>, GitError> {
        let vars = self.vars(run.index, run.bare, !run.check_ignore);
        let launch = Launch::program(
            self.program.git()?,
            &self.args(args),
            &self.work_tree,
            Role::Private(&vars),
        )
        .stdin(if run.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = match launch.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(GitError::Missing),
            Err(e) => return Err(GitError::Failed(format!("cannot start git: {e}"))),
        };
        let stdin = child.take_stdin();
        let stdout = child.take_stdout();
        let stderr = child.take_stderr();
        let feed = async {
            if let (Some(mut pipe), Some(bytes)) = (stdin, run.stdin) {
                // git may stop reading early (an error): its answer says why.
                let _ = pipe.write_all(&bytes).await;
                let _ = pipe.shutdown().await;
            }
        };
        let limit = run.limit.max(1);
        let out = async {
            let mut buf = Vec::new();
            if let Some(s) = stdout {
                let _ = s.take(limit + 1).read_to_end(&mut buf).await;
            }
            buf
        };
        let err = async {
            let mut buf = Vec::new();
            if let Some(s) = stderr {
                let _ = s.take(STDERR_BYTES).read_to_end(&mut buf).await;
            }
            buf
        };
        let ((), out, err) = tokio::join!(feed, out, err);
        if out.len() as u64 > limit {
            child.group.kill();
            let _ = child.wait().await;
            return Err(GitError::Failed(format!(
                "git {} said more than {limit} bytes",
                args.first().copied().unwrap_or("")
            )));
        }
        let status = child
            .wait()
            .await
            .map_err(|e| GitError::Failed(format!("git: {e}")))?;
        if status.success() || (run.check_ignore && status.code() == Some(1)) {
            Ok(out)
        } else {
            let text = String::from_utf8_lossy(&err);
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("failed");
            Err(GitError::Failed(format!(
                "git {}: {}",
                args.first().copied().unwrap_or(""),
                crate::text::escape_controls(first.trim())
            )))
        }
    }

    /// [`Git::run`] whose output is one line (a hash), trimmed.
    pub async fn line(&self, args: &[&str], run: Run<'_>) -> Result<String, GitError> {
        let out = self.run(args, Run { limit: 4096, ..run }).await?;
        Ok(String::from_utf8_lossy(&out).trim().to_string())
    }
}

/// The global excludes file the user's git reads: `core.excludesFile` of the user's global
/// config (asked of git itself, which knows includes and `~`), else
/// `$XDG_CONFIG_HOME/git/ignore` (or `~/.config/git/ignore`) when it exists. Reading a config
/// value runs nothing.
///
/// The config's answer is remembered in the file `cache` with what it depends on: the
/// variables that place the global config and the stat data of each config file, so a run
/// whose config did not change starts no git for it (issue 33). A config that includes
/// another is asked of git every time, since what it includes may change unseen.
pub async fn global_excludes(
    program: &Program,
    env: &crate::paths::Env,
    neutral_git_dir: &Path,
    cache: &Path,
) -> Result<Option<PathBuf>, GitError> {
    program.present()?;
    let key = config_key(env);
    // No global config file at all (a new account, a container): nothing sets it, and git
    // need not be asked.
    let unconfigured = key.as_ref().is_some_and(|(_, any)| !any);
    let key = key.map(|(line, _)| line);
    let remembered = key.as_ref().and_then(|key| {
        // A key line and a path: a few KiB at most; a larger file is not one hx wrote.
        let bytes = crate::paths::read_regular(cache, 16 * 1024).ok()??;
        let text = String::from_utf8(bytes).ok()?;
        let (first, value) = text.split_once('\n')?;
        (first == key).then(|| value.trim_end_matches('\n').to_string())
    });
    let configured = match remembered {
        Some(value) => value,
        None if unconfigured => String::new(),
        None => {
            let value = configured_excludes(program, env, neutral_git_dir).await?;
            if let Some(key) = key {
                let _ = crate::paths::write_atomic(cache, format!("{key}\n{value}\n").as_bytes());
            }
            value
        }
    };
    if !configured.is_empty() {
        return Ok(Some(PathBuf::from(configured)));
    }
    let default = match env.get("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x).join("git").join("ignore"),
        None => match env.get("HOME").filter(|v| !v.is_empty()) {
            Some(h) => PathBuf::from(h).join(".config").join("git").join("ignore"),
            None => return Ok(None),
        },
    };
    Ok(default.is_file().then_some(default))
}

/// What the global config's answer depends on, as one line, and whether any config file
/// exists; none when a config file includes another, or cannot be read.
fn config_key(env: &crate::paths::Env) -> Option<(String, bool)> {
    use std::os::unix::fs::MetadataExt;
    let var = |k: &str| env.get(k).map(String::as_str).unwrap_or("");
    let files = global_config_files(env);
    let mut key = format!(
        "v1 {:?} {:?} {:?}",
        var("HOME"),
        var("XDG_CONFIG_HOME"),
        env.get("GIT_CONFIG_GLOBAL")
    );
    let mut any = false;
    for f in files {
        match std::fs::metadata(&f) {
            Ok(m) => {
                any = true;
                if m.len() > 1024 * 1024 {
                    return None;
                }
                let text = std::fs::read(&f).ok()?.to_ascii_lowercase();
                if text.windows(8).any(|w| w == b"[include") {
                    return None;
                }
                key.push_str(&format!(
                    " {}:{}:{}.{}:{}.{}",
                    m.ino(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec()
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => key.push_str(" -"),
            Err(_) => return None,
        }
    }
    Some((key, any))
}

/// The files of the user's global git config, as git finds them.
fn global_config_files(env: &crate::paths::Env) -> Vec<PathBuf> {
    if let Some(g) = env.get("GIT_CONFIG_GLOBAL") {
        return vec![PathBuf::from(g)];
    }
    let home = PathBuf::from(env.get("HOME").map(String::as_str).unwrap_or(""));
    let xdg = match env.get("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(x) => PathBuf::from(x),
        None => home.join(".config"),
    };
    vec![home.join(".gitconfig"), xdg.join("git").join("config")]
}

/// `core.excludesFile` as the user's global config sets it (empty: it does not).
async fn configured_excludes(
    program: &Program,
    env: &crate::paths::Env,
    neutral_git_dir: &Path,
) -> Result<String, GitError> {
    let mut vars: Vec<(OsString, OsString)> = vec![
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
        // Nothing to discover: includeIf conditions are checked against the shadow.
        ("GIT_DIR".into(), neutral_git_dir.into()),
        ("LC_ALL".into(), "C".into()),
    ];
    for k in ["HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL"] {
        if let Some(v) = env.get(k) {
            vars.push((k.into(), v.into()));
        }
    }
    vars.push(("PATH".into(), program.path()));
    let args: Vec<String> = ["config", "--global", "--includes", "--path", "--get"]
        .iter()
        .map(|s| s.to_string())
        .chain(["core.excludesFile".to_string()])
        .collect();
    let launch = Launch::program(program.git()?, &args, Path::new("/"), Role::Private(&vars))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = match launch.spawn() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(GitError::Missing),
        Err(e) => return Err(GitError::Failed(format!("cannot start git: {e}"))),
    };
    let mut out = Vec::new();
    if let Some(s) = child.take_stdout() {
        let _ = s.take(4096).read_to_end(&mut out).await;
    }
    let status = child.wait().await;
    let configured = String::from_utf8_lossy(&out).trim().to_string();
    if status.is_ok_and(|s| s.success()) && !configured.contains('\n') {
        Ok(configured)
    } else {
        Ok(String::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `text` to `path`, executable: a `git` for a test's PATH.
    fn executable(path: &Path, text: &str) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(path, text).expect("write");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    /// Without any global config file nothing sets `core.excludesFile`: git is not asked,
    /// and the default file counts when it exists.
    #[test]
    fn without_a_global_config_git_is_not_asked() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let log = tmp.path().join("calls");
        executable(
            &bin.join("git"),
            &format!("#!/bin/sh\necho \"$@\" >> '{}'\n", log.display()),
        );
        let mut env = crate::paths::Env::new();
        env.insert("HOME".into(), home.display().to_string());
        env.insert("PATH".into(), bin.display().to_string());
        let program = Program::from_env(&env);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let cache = tmp.path().join("excludes");
            let neutral = tmp.path().join("neutral");
            let got = global_excludes(&program, &env, &neutral, &cache).await;
            assert_eq!(got.expect("asked"), None);
            let ignore = home.join(".config/git/ignore");
            std::fs::create_dir_all(ignore.parent().expect("parent")).expect("mkdir");
            std::fs::write(&ignore, "*.log\n").expect("write");
            let got = global_excludes(&program, &env, &neutral, &cache).await;
            assert_eq!(got.expect("asked"), Some(ignore));
        });
        assert!(
            !log.exists(),
            "git was asked: {:?}",
            std::fs::read_to_string(&log)
        );
    }

    /// The config's answer is asked of git once, and again only when a config file changes;
    /// a config that includes another is asked every time.
    #[test]
    fn the_global_excludes_are_asked_of_git_again_only_when_the_config_changes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let home = tmp.path().join("home");
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&bin).expect("mkdir");
        let real = Program::from_env(&crate::paths::process_env());
        let real = real.git().expect("git").to_path_buf();
        let log = tmp.path().join("calls");
        let script = format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        );
        executable(&bin.join("git"), &script);
        let mut env = crate::paths::Env::new();
        env.insert("HOME".into(), home.display().to_string());
        env.insert("PATH".into(), bin.display().to_string());
        let program = Program::from_env(&env);
        let cache = tmp.path().join("excludes");
        let neutral = tmp.path().join("neutral");
        let calls = || {
            std::fs::read_to_string(&log)
                .unwrap_or_default()
                .lines()
                .count()
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let ask = || global_excludes(&program, &env, &neutral, &cache);
            std::fs::write(home.join(".gitconfig"), "[core]\n\texcludesFile = /x/one\n")
                .expect("write");
            assert_eq!(ask().await.expect("ask"), Some(PathBuf::from("/x/one")));
            assert_eq!(calls(), 1);
            assert_eq!(ask().await.expect("ask"), Some(PathBuf::from("/x/one")));
            assert_eq!(calls(), 1, "asked again with nothing changed");
            std::fs::write(
                home.join(".gitconfig"),
                "[core]\n\texcludesFile = /x/two-longer\n",
            )
            .expect("write");
            assert_eq!(
                ask().await.expect("ask"),
                Some(PathBuf::from("/x/two-longer"))
            );
            assert_eq!(calls(), 2);
            std::fs::write(home.join(".gitconfig"), "[include]\n\tpath = other\n").expect("write");
            std::fs::write(home.join("other"), "[core]\n\texcludesFile = /x/three\n")
                .expect("write");
            assert_eq!(ask().await.expect("ask"), Some(PathBuf::from("/x/three")));
            assert_eq!(ask().await.expect("ask"), Some(PathBuf::from("/x/three")));
            assert_eq!(calls(), 4, "an including config is asked every time");
        });
    }

    /// A git found later: what runs git waits for its finder, and gets the git the
    /// finder's host path gives; knowing that git is there waits only when the narrowest
    /// host path has none; a finder dropped unused fails every git, never hangs it.
    #[test]
    fn a_program_found_later_waits_only_to_run_git() {
        use std::sync::mpsc;
        use std::time::Duration;
        let tmp = tempfile::tempdir().expect("tempdir");
        let (early, late) = (tmp.path().join("early"), tmp.path().join("late"));
        for bin in [&early, &late] {
            std::fs::create_dir_all(bin).expect("mkdir");
            executable(&bin.join("git"), "#!/bin/sh\n");
        }
        let path = format!("{}:{}", late.display(), early.display());
        // The narrowest host path: `late` is a folder commands may write there.
        let narrowest = HostPath::new(Some(&path), vec![(late.clone(), "a temporary folder")]);
        let (program, finder) = Program::later(&narrowest, Some(&path));
        let (tx, rx) = mpsc::channel();
        let asking = program.clone();
        std::thread::spawn(move || {
            let _ = tx.send(("present", asking.present().map(|_| PathBuf::new())));
            let _ = tx.send(("git", asking.git().map(Path::to_path_buf)));
        });
        let (what, present) = rx.recv_timeout(Duration::from_secs(10)).expect("present");
        assert_eq!((what, present), ("present", Ok(PathBuf::new())));
        // Running git waits for the finder.
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "did not wait"
        );
        finder.find(&HostPath::new(Some(&path), Vec::new()), Some(&path));
        let (what, git) = rx.recv_timeout(Duration::from_secs(10)).expect("git");
        assert_eq!((what, git), ("git", Ok(late.join("git"))));
        assert_eq!(program.path(), OsString::from(&path));

        // No git on the narrowest path: knowing there is one waits too.
        let none = HostPath::new(Some(&path), vec![(tmp.path().to_path_buf(), "all")]);
        let (program, finder) = Program::later(&none, Some(&path));
        let (tx, rx) = mpsc::channel();
        let asking = program.clone();
        std::thread::spawn(move || {
            let _ = tx.send(asking.present());
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(200)).is_err(),
            "did not wait"
        );
        drop(finder);
        let present = rx.recv_timeout(Duration::from_secs(10)).expect("answered");
        assert!(matches!(present, Err(GitError::Failed(_))), "{present:?}");
        assert!(program.git().is_err());
    }
}
