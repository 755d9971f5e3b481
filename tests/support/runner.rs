//! Runs the real `hx` binary in a throwaway workspace and HOME, pointed at a `FakeServer`.
//!
//! Isolation matters more than speed here: a developer's own config or API keys must never leak
//! into a test run, and a hung `hx` must fail its test instead of hanging CI.
#![allow(dead_code)]

use super::server::FakeServer;
use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// How long `run()` lets hx take before killing it and failing the test.
/// The variable that fixes the time hx prices requests at.
pub const HX_NOW: &str = "HX_NOW";

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Inherited variables with these prefixes are removed so the host's settings can't leak in.
const SCRUBBED_PREFIXES: [&str; 3] = ["DEEPSEEK_", "HX_", "OPENAI_"];

/// One prepared invocation of hx; reusable, so several runs can share a workspace and HOME.
pub struct Hx {
    root: TempDir,
    workspace: PathBuf,
    home: PathBuf,
    program: PathBuf,
    /// Where hx runs, relative to `workspace` (empty: the workspace itself).
    cwd_rel: PathBuf,
    base_url: String,
    args: Vec<OsString>,
    /// Applied in order after the defaults: `Some` sets, `None` removes.
    env: Vec<(OsString, Option<OsString>)>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

impl Hx {
    /// Runs against `server` (`DEEPSEEK_BASE_URL` = `server.url()`).
    pub fn new(server: &FakeServer) -> Self {
        Self::with_base_url(&server.url())
    }

    /// For runs that must make no request: the base URL is a loopback port nobody listens on.
    pub fn new_offline() -> Self {
        Self::with_base_url(&unused_url())
    }

    pub fn with_base_url(base_url: &str) -> Self {
        Self::with_base_url_in(base_url, &std::env::temp_dir())
    }

    /// Like `new_offline`, with the workspace and HOME in a new folder under `parent` rather
    /// than the temporary folder: for the sandbox tests, where `/tmp` is writable and would hide
    /// a refused write next to the workspace.
    pub fn new_offline_in(parent: &Path) -> Self {
        Self::with_base_url_in(&unused_url(), parent)
    }

    fn with_base_url_in(base_url: &str, parent: &Path) -> Self {
        let root = tempfile::Builder::new()
            .prefix("hx-test-")
            .tempdir_in(parent)
            .expect("create temp dir");
        let workspace = root.path().join("workspace");
        let home = root.path().join("home");
        std::fs::create_dir_all(&workspace).expect("create temp workspace");
        std::fs::create_dir_all(home.join(".config")).expect("create temp home");
        Hx {
            root,
            workspace,
            home,
            program: PathBuf::from(env!("CARGO_BIN_EXE_hx")),
            cwd_rel: PathBuf::new(),
            base_url: base_url.to_string(),
            args: Vec::new(),
            // Requests are priced at an off-peak time (a Wednesday at noon, UTC), so cost
            // figures do not depend on when the tests run; a test of the peak sets its own.
            env: vec![(HX_NOW.into(), Some("2026-12-02T12:00:00Z".into()))],
            stdin: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Runs another program with the same setup (used by the harness's own tests).
    pub fn program(&mut self, path: impl AsRef<Path>) -> &mut Self {
        self.program = path.as_ref().to_path_buf();
        self
    }

    /// Runs hx in `workspace()/rel` instead of the workspace itself (created if missing), for
    /// behaviour that depends on where hx starts, such as relative paths.
    pub fn current_dir_rel(&mut self, rel: &str) -> &mut Self {
        let dir = self.workspace.join(rel);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        self.cwd_rel = PathBuf::from(rel);
        self
    }

    /// The workspace: the run's current directory unless `current_dir_rel` moved it.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `HOME`; `XDG_CONFIG_HOME` is `home()/.config`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The session files under the test's HOME, in name (creation) order.
    pub fn session_files(&self) -> Vec<PathBuf> {
        let root = self.home.join(".local/state/hx/sessions");
        let mut files = Vec::new();
        for dir in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            for f in std::fs::read_dir(dir.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                files.push(f.path());
            }
        }
        files.sort();
        files
    }

    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Writes `content` to `workspace()/rel`, creating parent directories.
    pub fn write_file(&mut self, rel: &str, content: &str) -> &mut Self {
        let path = self.workspace.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs in workspace");
        }
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        self
    }

    /// The user's config folder (`$XDG_CONFIG_HOME/hx`), whose files hx applies without
    /// `hx trust`.
    pub fn user_config_dir(&self) -> PathBuf {
        self.home.join(".config").join("hx")
    }

    /// Writes `content` to `name` in the user's config folder (`user_config_dir()`): for
    /// settings a test needs that are not about project files.
    pub fn write_user_config(&mut self, name: &str, content: &str) -> &mut Self {
        let dir = self.user_config_dir();
        std::fs::create_dir_all(&dir).expect("create the user config dir");
        let path = dir.join(name);
        std::fs::write(&path, content).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
        self
    }

    /// Reads `workspace()/rel` (panics if missing, with the path in the message).
    pub fn read_file(&self, rel: &str) -> String {
        let path = self.workspace.join(rel);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
    }

    /// Forgets the arguments given so far, to run again in the same workspace and HOME.
    pub fn clear_args(&mut self) -> &mut Self {
        self.args.clear();
        self
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.env.push((
            key.as_ref().to_os_string(),
            Some(value.as_ref().to_os_string()),
        ));
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Self {
        self.env.push((key.as_ref().to_os_string(), None));
        self
    }

    /// Text fed to stdin, which is then closed. Without it stdin is /dev/null.
    pub fn stdin(&mut self, text: &str) -> &mut Self {
        self.stdin = Some(text.as_bytes().to_vec());
        self
    }

    /// Overrides `DEFAULT_TIMEOUT` for `run()`.
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = timeout;
        self
    }

    /// How long a run may take: `timeout()`'s, else `DEFAULT_TIMEOUT`.
    pub fn time_limit(&self) -> Duration {
        self.timeout
    }

    /// The fully prepared command (stdio not configured).
    pub fn command(&self) -> Command {
        self.command_with(&self.args)
    }

    /// Runs hx with `args` instead of the prepared ones, in the same workspace, HOME and
    /// environment, stdin `/dev/null`; panics if it outlives the timeout. For a second command
    /// (`hx trust --yes`) between runs of the prepared one.
    pub fn run_args<S: AsRef<OsStr>>(&self, args: &[S]) -> Run {
        let args: Vec<OsString> = args.iter().map(|a| a.as_ref().to_os_string()).collect();
        let mut cmd = self.command_with(&args);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.program.display()));
        let run = Run::wait(child, self.timeout);
        assert!(!run.timed_out, "hx {args:?} timed out\n{}", run.dump());
        run
    }

    /// The prepared command for a pseudo-terminal: the same isolation, but no process group
    /// of its own, since the terminal's session makes the child a session leader (which
    /// cannot change its group), and a Ctrl-C on that terminal must reach it. `TERM` is
    /// `xterm` unless the test set or removed it, like any default.
    pub fn terminal_command(&self) -> Command {
        let mut cmd = self.base_command(&self.args);
        if !self.env.iter().any(|(key, _)| key == "TERM") {
            cmd.env("TERM", "xterm");
        }
        cmd
    }

    /// The command of a run with `args` instead of the prepared ones.
    pub fn command_with(&self, args: &[OsString]) -> Command {
        let mut cmd = self.base_command(args);
        // Own process group, so a timeout can kill hx together with anything it started.
        cmd.process_group(0);
        cmd
    }

    fn base_command(&self, args: &[OsString]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.args(args)
            .current_dir(self.workspace.join(&self.cwd_rel));
        for (key, _) in std::env::vars_os() {
            let name = key.to_string_lossy();
            if SCRUBBED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                cmd.env_remove(&key);
            }
        }
        for key in ["CLICOLOR_FORCE", "FORCE_COLOR"] {
            cmd.env_remove(key);
        }
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_DATA_HOME", self.home.join(".local/share"))
            .env("XDG_STATE_HOME", self.home.join(".local/state"))
            .env("XDG_CACHE_HOME", self.home.join(".cache"))
            .env("DEEPSEEK_API_KEY", "test-key")
            .env("DEEPSEEK_BASE_URL", &self.base_url)
            .env("NO_COLOR", "1");
        for (key, value) in &self.env {
            match value {
                Some(v) => cmd.env(key, v),
                None => cmd.env_remove(key),
            };
        }
        cmd
    }

    /// Starts hx with piped stdout/stderr; stdin gets the `stdin()` text then closes. For signal
    /// tests: send signals to `child.id()`, then collect with `Run::wait`.
    pub fn spawn(&self) -> Child {
        let mut cmd = self.command();
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        cmd.stdin(if self.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", self.program.display()));
        if let (Some(text), Some(mut pipe)) = (self.stdin.clone(), child.stdin.take()) {
            // In a thread: hx may not read stdin at all, and a full pipe must not block us.
            thread::spawn(move || {
                let _ = pipe.write_all(&text);
            });
        }
        child
    }

    /// Runs hx to completion; panics (with the output so far) if it outlives the timeout.
    pub fn run(&self) -> Run {
        let run = Run::wait(self.spawn(), self.timeout);
        if run.timed_out {
            panic!(
                "hx did not finish within {:?}; killed.\n{}",
                self.timeout,
                run.dump()
            );
        }
        run
    }
}

/// A loopback URL nobody listens on. Bind then drop: the port was free a moment ago and
/// nothing of ours will reopen it.
fn unused_url() -> String {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_or(9, |a| a.port());
    format!("http://127.0.0.1:{port}")
}

/// The outcome of one hx process.
#[derive(Clone, Debug)]
pub struct Run {
    /// Exit code, None if killed by a signal.
    pub code: Option<i32>,
    /// The signal that ended the process, if any.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// True if `Run::wait` had to kill the process.
    pub timed_out: bool,
    pub elapsed: Duration,
}

fn drain(
    pipe: Option<impl Read + Send + 'static>,
) -> (Arc<Mutex<Vec<u8>>>, Option<JoinHandle<()>>) {
    let buf = Arc::new(Mutex::new(Vec::new()));
    let sink = buf.clone();
    let handle = pipe.map(|mut p| {
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            while let Ok(n @ 1..) = p.read(&mut chunk) {
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .extend_from_slice(&chunk[..n]);
            }
        })
    });
    (buf, handle)
}

fn kill_group(child: &mut Child) {
    // `kill -- -PGID` reaches hx's own children too; Child::kill is the fallback.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
}

impl Run {
    /// Waits for `child` (spawned by `Hx::spawn`) up to `timeout`, killing its process group if
    /// it takes longer, and collects its output.
    pub fn wait(mut child: Child, timeout: Duration) -> Run {
        let start = Instant::now();
        let (out, out_t) = drain(child.stdout.take());
        let (err, err_t) = drain(child.stderr.take());
        let mut timed_out = false;
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break Some(status),
                Ok(None) if start.elapsed() < timeout => thread::sleep(Duration::from_millis(10)),
                Ok(None) => {
                    timed_out = true;
                    kill_group(&mut child);
                    break child.wait().ok();
                }
                Err(_) => break None,
            }
        };
        let elapsed = start.elapsed();
        // A leftover grandchild can hold the pipes open; give readers a moment, then cut it off.
        let readers: Vec<_> = [out_t, err_t].into_iter().flatten().collect();
        let deadline = Instant::now() + Duration::from_secs(5);
        while readers.iter().any(|h| !h.is_finished()) && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(10));
        }
        if readers.iter().any(|h| !h.is_finished()) {
            kill_group(&mut child);
        }
        let text = |b: &Arc<Mutex<Vec<u8>>>| {
            String::from_utf8_lossy(&b.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
        };
        Run {
            code: status.and_then(|s| s.code()),
            signal: status.and_then(|s| s.signal()),
            stdout: text(&out),
            stderr: text(&err),
            timed_out,
            elapsed,
        }
    }

    /// Panics, showing stdout and stderr, unless the exit code is `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            Some(code),
            "unexpected exit status\n{}",
            self.dump()
        );
        self
    }

    pub fn assert_success(&self) -> &Self {
        self.assert_code(0)
    }

    /// Exit status and both streams, for failure messages.
    pub fn dump(&self) -> String {
        format!(
            "code: {:?} signal: {:?} timed_out: {} elapsed: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}\n---",
            self.code, self.signal, self.timed_out, self.elapsed, self.stdout, self.stderr
        )
    }
}

/// A folder for test workspaces outside `/tmp`: `/tmp` is writable in the sandbox, so a
/// workspace there could not show a refused write beside it (`../outside`, `$HOME/x`). The
/// target folder when it lies elsewhere, else `/var/tmp`, else the home folder's cache (a
/// checkout under `/tmp` must run these tests too).
pub fn outside_tmp() -> PathBuf {
    let tmp = Path::new("/tmp").canonicalize().expect("/tmp");
    let temp = std::env::temp_dir()
        .canonicalize()
        .unwrap_or_else(|_| std::env::temp_dir());
    let home_cache = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache"));
    let candidates = [
        Some(PathBuf::from(env!("CARGO_TARGET_TMPDIR"))),
        Some(PathBuf::from("/var/tmp")),
        home_cache,
    ];
    for base in candidates.into_iter().flatten() {
        let dir = base.join("hx-sandbox-tests");
        if std::fs::create_dir_all(&dir).is_err() {
            continue;
        }
        let Ok(dir) = dir.canonicalize() else {
            continue;
        };
        if !dir.starts_with(&tmp) && !dir.starts_with(&temp) {
            return dir;
        }
    }
    panic!("the sandbox tests need a writable folder outside the temporary folder");
}
