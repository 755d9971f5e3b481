//! Running hx the ways the containment tests need: inside a PID namespace of its own (so that a
//! command's `kill -9 -1` can reach only the test's processes, even if the sandbox is broken),
//! and as the unprivileged user `nobody` (CI runs the suite as root). Each helper says why it
//! cannot be used here instead of failing, so a test can skip with that reason.
#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{Hx, Run};

/// The uid and gid of `nobody`, whom the unprivileged runs use.
pub const NOBODY: u32 = 65534;

/// The running kernel's Landlock ABI, 0 without Landlock.
pub fn landlock_abi() -> i64 {
    const VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag the syscall only returns the
    // ABI version or an error; it touches no memory of ours.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    v.max(0)
}

/// Why the Landlock scopes (ABI 6) cannot be tested here; `None` when they can.
pub fn no_scopes() -> Option<String> {
    let abi = landlock_abi();
    (abi < 6).then(|| format!("this kernel's Landlock ABI is {abi}; the scopes need ABI 6"))
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// Prints why a test does not run here; the caller returns right after.
pub fn skip(test: &str, why: &str) {
    eprintln!("skipped {test}: {why}");
}

/// Whether `argv` runs and exits 0 here (stdio closed).
fn works(argv: &[&str]) -> Result<(), String> {
    let status = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` failed here ({status})", argv.join(" ")))
    }
}

/// The command that puts what follows it into a new PID namespace (with its own `/proc`), or
/// why there is none: root uses `unshare --pid`; another user needs a user namespace too.
pub fn pid_namespace() -> Result<Vec<String>, String> {
    let mut argv: Vec<String> = vec!["unshare".into()];
    if !is_root() {
        // SAFETY: getuid and getgid have no failure mode.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        argv.extend([
            "--user".into(),
            format!("--map-user={uid}"),
            format!("--map-group={gid}"),
        ]);
    }
    argv.extend(["--pid", "--fork", "--mount-proc"].map(String::from));
    let mut probe: Vec<&str> = argv.iter().map(String::as_str).collect();
    probe.push("true");
    works(&probe)?;
    Ok(argv)
}

/// The command that runs what follows it as `nobody` with no supplementary groups, or why
/// there is none (not root, or no `setpriv`).
pub fn as_nobody() -> Result<Vec<String>, String> {
    if !is_root() {
        return Err("running as another user needs root".into());
    }
    let argv: Vec<String> = vec![
        "setpriv".into(),
        format!("--reuid={NOBODY}"),
        format!("--regid={NOBODY}"),
        "--clear-groups".into(),
    ];
    let mut probe: Vec<&str> = argv.iter().map(String::as_str).collect();
    probe.push("true");
    works(&probe)?;
    Ok(argv)
}

/// Gives `hx`'s whole test folder (workspace, HOME, config) to `nobody`, and points `hx` at a
/// copy of the binary that `nobody` can reach (the build folder may sit under a home folder
/// only root may enter).
pub fn hand_to_nobody(hx: &mut Hx) {
    let root = hx
        .workspace()
        .parent()
        .expect("the test folder")
        .to_path_buf();
    let program = PathBuf::from(env!("CARGO_BIN_EXE_hx"));
    if !reachable_by_all(&program) {
        let copy = root.join("hx");
        if std::fs::hard_link(&program, &copy).is_err() {
            std::fs::copy(&program, &copy).expect("copy hx");
        }
        hx.program(&copy);
    }
    chown_tree(&root);
}

/// Every folder above `path` can be entered by anyone, and `path` run by anyone.
fn reachable_by_all(path: &Path) -> bool {
    let mode = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.permissions().mode());
    mode(path) & 0o001 != 0 && path.ancestors().skip(1).all(|a| mode(a) & 0o001 != 0)
}

fn chown_tree(path: &Path) {
    std::os::unix::fs::lchown(path, Some(NOBODY), Some(NOBODY))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
    let is_dir = std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir());
    if is_dir {
        for entry in std::fs::read_dir(path).expect("read_dir").flatten() {
            chown_tree(&entry.path());
        }
    }
}

/// `hx`'s prepared command run through `prefix` (a program and its arguments): the same
/// arguments, environment and folder, the wrapper in a process group of its own so that a
/// timeout ends all of it.
pub fn wrapped(hx: &Hx, prefix: &[String]) -> Command {
    use std::os::unix::process::CommandExt;
    let inner = hx.command();
    let mut cmd = Command::new(&prefix[0]);
    cmd.args(&prefix[1..])
        .arg(inner.get_program())
        .args(inner.get_args());
    if let Some(dir) = inner.get_current_dir() {
        cmd.current_dir(dir);
    }
    for (key, value) in inner.get_envs() {
        match value {
            Some(v) => cmd.env(key, v),
            None => cmd.env_remove(key),
        };
    }
    cmd.process_group(0);
    cmd
}

/// Runs `cmd` to its end with stdin `/dev/null`, as `Hx::run` does; panics on a timeout.
pub fn run(mut cmd: Command, limit: std::time::Duration) -> Run {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn the wrapped hx");
    let run = Run::wait(child, limit);
    assert!(!run.timed_out, "timed out\n{}", run.dump());
    run
}
