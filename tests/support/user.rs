//! A throwaway unprivileged user for the containment tests (CI runs the suite as root, and a
//! root hx hides what an ordinary user's hx lets through: `kill -9 -1` reaches every process
//! of the user, files of the user are writable, and so on).
//!
//! [`as_unprivileged_user`] makes a system user of its own (`hx-ct-PID-N`) with
//! `useradd --system --no-create-home`, runs the scenario with it, and removes it afterwards,
//! on panic too. The user is fresh, so a command that got past the sandbox can reach only
//! that user's processes (hx and what the test started as the user), never the test runner.
//! When the test does not run as root (or `useradd` is missing) it prints why and passes.
//!
//! `useradd` and `userdel` rewrite the shadow suite's `-` backups (`/etc/passwd-`, ...) with
//! the user still in them: those are saved before the first user and put back after the
//! last, and the live files are checked to be as they were.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::confine::{is_root, skip};
use super::{Hx, Run};

/// The account files `useradd` and `userdel` change, and whose `-` backups they rewrite.
const ACCOUNT_FILES: [&str; 6] = [
    "/etc/passwd",
    "/etc/group",
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/subuid",
    "/etc/subgid",
];

/// A file's content, or `None` when it does not exist.
type Saved = Vec<(PathBuf, Option<Vec<u8>>)>;

/// The users alive now and what was saved before the first of them: one lock, so that the
/// tests' threads never run `useradd` or `userdel` at the same time (they lock the account
/// files and would fail), and the backups are saved and restored once.
struct Accounts {
    live: usize,
    files: Saved,
    backups: Saved,
}

static ACCOUNTS: Mutex<Accounts> = Mutex::new(Accounts {
    live: 0,
    files: Vec::new(),
    backups: Vec::new(),
});
static NEXT: AtomicUsize = AtomicUsize::new(0);

fn accounts() -> std::sync::MutexGuard<'static, Accounts> {
    ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner())
}

fn save(paths: impl Iterator<Item = PathBuf>) -> Saved {
    paths
        .map(|p| {
            let content = std::fs::read(&p).ok();
            (p, content)
        })
        .collect()
}

fn backups() -> impl Iterator<Item = PathBuf> {
    ACCOUNT_FILES.iter().map(|f| PathBuf::from(format!("{f}-")))
}

/// Runs `argv` (an account tool), retrying a few times while another program holds the
/// account files' lock (its exit code 10 for useradd, 10 or 1 for userdel).
fn account_tool(argv: &[&str]) -> Result<(), String> {
    let mut last = String::new();
    for _ in 0..5 {
        let out = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
        if out.status.success() {
            return Ok(());
        }
        last = format!(
            "`{}` failed ({}): {}",
            argv.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    Err(last)
}

/// A throwaway system user, removed when dropped, with a copy of hx it can run.
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    /// A 0755 folder (root's, so the user cannot change what is in it) holding `hx`.
    bin: tempfile::TempDir,
}

impl User {
    /// Makes the user, or says why it cannot be made here.
    pub fn create() -> Result<User, String> {
        if !is_root() {
            return Err("making a throwaway user needs root".into());
        }
        let name = format!(
            "hx-ct-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let bin = tempfile::Builder::new()
            .prefix("hx-ct-bin-")
            .tempdir()
            .map_err(|e| format!("cannot make a folder for hx: {e}"))?;
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod: {e}"))?;
        // A copy, not a link: the build folder may sit under a home only root may enter, and
        // a hard link would share the file's mode with the build's.
        let program = bin.path().join("hx");
        std::fs::copy(env!("CARGO_BIN_EXE_hx"), &program)
            .map_err(|e| format!("cannot copy hx: {e}"))?;
        std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod: {e}"))?;
        let mut acc = accounts();
        if acc.live == 0 {
            acc.files = save(ACCOUNT_FILES.iter().map(PathBuf::from));
            acc.backups = save(backups());
        }
        let added = account_tool(&[
            "useradd",
            "--system",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--user-group",
            &name,
        ]);
        if let Err(e) = added {
            if acc.live == 0 {
                restore(&acc.backups);
            }
            return Err(e);
        }
        acc.live += 1;
        drop(acc);
        // From here on, dropping `user` removes it.
        let mut user = User {
            name,
            uid: 0,
            gid: 0,
            bin,
        };
        user.uid = id(&["-u", &user.name])?;
        user.gid = id(&["-g", &user.name])?;
        if user.uid == 0 || user.gid == 0 {
            return Err(format!(
                "{} got uid {} gid {}",
                user.name, user.uid, user.gid
            ));
        }
        Ok(user)
    }

    /// A prepared hx (offline until the test points it at a server) that this user runs: the
    /// copy of the binary. Its folders are handed to the user by [`User::run`].
    /// Its workspace and HOME lie outside the temporary folder (which commands may write), in
    /// a folder the user can reach.
    pub fn hx(&self) -> Hx {
        let mut hx = Hx::new_offline_in(&reachable_outside_tmp());
        hx.program(self.bin.path().join("hx"));
        hx
    }

    /// Gives `hx`'s whole test folder (workspace, HOME, config) to the user: done before each
    /// run, so files the test wrote since are the user's too.
    pub fn hand_over(&self, hx: &Hx) {
        let root = hx.workspace().parent().expect("the test folder");
        chown_tree(root, self.uid, self.gid);
    }

    /// `cmd` made to run as the user, with no supplementary group (std clears them when a
    /// root parent sets the uid).
    pub fn as_user(&self, cmd: &mut Command) {
        cmd.uid(self.uid).gid(self.gid);
    }

    /// Runs `hx`'s prepared command as the user, to its end; panics on a timeout.
    pub fn run(&self, hx: &Hx) -> Run {
        self.hand_over(hx);
        let mut cmd = hx.command();
        self.as_user(&mut cmd);
        super::confine::run(cmd, hx.time_limit())
    }

    /// Runs hx with `args` (not the prepared ones) as the user, to its end.
    pub fn run_args(&self, hx: &Hx, args: &[&str]) -> Run {
        self.hand_over(hx);
        let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
        let mut cmd = hx.command_with(&args);
        self.as_user(&mut cmd);
        super::confine::run(cmd, hx.time_limit())
    }

    /// Starts `argv` as the user (a process of theirs for a command to try to reach).
    pub fn spawn(&self, argv: &[&str]) -> std::process::Child {
        let mut cmd = Command::new(argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/");
        self.as_user(&mut cmd);
        cmd.spawn().expect("spawn as the user")
    }
}

impl Drop for User {
    fn drop(&mut self) {
        let mut acc = accounts();
        // A process still running as the user keeps userdel from removing it: the scenario
        // ends what it started, and hx what its commands left (retried a second, meanwhile).
        let removed = account_tool(&["userdel", &self.name]);
        acc.live -= 1;
        let mut problems = Vec::new();
        if let Err(e) = removed {
            problems.push(e);
        }
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
        if passwd
            .lines()
            .any(|l| l.split(':').next() == Some(&self.name))
        {
            problems.push(format!("{} is still in /etc/passwd", self.name));
        }
        if acc.live == 0 {
            restore(&acc.backups);
            for (path, before) in save(ACCOUNT_FILES.iter().map(PathBuf::from))
                .into_iter()
                .zip(&acc.files)
                .filter(|((_, now), (_, before))| now != before)
                .map(|((p, _), (_, b))| (p, b))
            {
                problems.push(format!(
                    "{} differs from before the test users ({} bytes before)",
                    path.display(),
                    before.as_ref().map_or(0, Vec::len)
                ));
            }
        }
        drop(acc);
        if !problems.is_empty() && !std::thread::panicking() {
            panic!("removing {}: {}", self.name, problems.join("; "));
        }
    }
}

/// A folder outside the temporary folder that every user can enter: the suite's own
/// (`outside_tmp`) when its every ancestor can be entered by others, else one in `/var/tmp`.
fn reachable_outside_tmp() -> PathBuf {
    let mode = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.permissions().mode());
    let reachable = |p: &Path| p.ancestors().all(|a| mode(a) & 0o001 != 0);
    let dir = super::outside_tmp();
    if reachable(&dir) {
        return dir;
    }
    let tmp = Path::new("/tmp").canonicalize().expect("/tmp");
    let temp = std::env::temp_dir();
    let var = PathBuf::from("/var/tmp/hx-ct-tests");
    assert!(
        !var.starts_with(&tmp) && !var.starts_with(&temp),
        "no folder outside the temporary folder that the test user can reach"
    );
    std::fs::create_dir_all(&var).expect("mkdir /var/tmp/hx-ct-tests");
    std::fs::set_permissions(&var, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    var
}

/// Puts saved files back as they were (best effort: this runs in a drop).
fn restore(saved: &Saved) {
    for (path, content) in saved {
        let _ = match content {
            Some(c) => std::fs::write(path, c),
            None => std::fs::remove_file(path),
        };
    }
}

fn id(args: &[&str]) -> Result<u32, String> {
    let out = Command::new("id")
        .args(args)
        .output()
        .map_err(|e| format!("id: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| {
            format!(
                "id {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

fn chown_tree(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        for entry in std::fs::read_dir(path).expect("read_dir").flatten() {
            chown_tree(&entry.path(), uid, gid);
        }
    }
}

/// Runs `scenario` with a throwaway user of its own, removed afterwards; when none can be
/// made here, prints why `test` is skipped and passes.
pub fn as_unprivileged_user(test: &str, scenario: impl FnOnce(&User)) {
    match User::create() {
        Ok(user) => scenario(&user),
        Err(why) => skip(test, &why),
    }
}
