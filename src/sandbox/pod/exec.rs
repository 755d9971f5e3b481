//! The command's exec, made ready in hx: what `execvp` would do with the `Command` std was
//! given, done instead by C, the command's process in the pod.
//!
//! C was a `fork` of L, itself a fork of hx: a copy of hx's page tables made for each
//! command, torn down again by C's exec a moment later, while L waited. C is now made with
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, as `posix_spawn` makes a child: it
//! runs in L's memory, suspended L, until its exec. It cannot return into std's child code
//! (that runs on L's stack), so it execs itself, from what this module made before the fork:
//! a forked child of a threaded process may not allocate.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

use super::sys;

/// What glibc's `execvp` searches when the environment has no `PATH`.
const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";
/// The shell a file the kernel cannot execute is given to, as `execvp` does.
const SH: &[u8] = b"/bin/sh";

/// One command's exec, made in hx before the fork. Pointers into its own strings, which it
/// owns and never changes: their heap buffers stay where they are when `Exec` moves.
#[derive(Default)]
pub struct Exec {
    /// The files to try, in order: the program itself when it holds a `/`, else the program
    /// in each folder of the command's `PATH`.
    paths: Vec<CString>,
    /// For each path, the `/bin/sh PATH ARGS...` argument vector a file the kernel refuses
    /// as not executable (`ENOEXEC`: a script without `#!`) is run with.
    scripts: Vec<Vec<*const libc::c_char>>,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// The strings `argv`, `envp` and `scripts` point into.
    strings: Vec<CString>,
    sh: CString,
}

// SAFETY: the raw pointers point only into the `CString`s `Exec` owns, which are never
// changed or dropped before it is; `Exec` is only read after it is made.
unsafe impl Send for Exec {}
// SAFETY: as above: nothing writes through the pointers.
unsafe impl Sync for Exec {}

/// The files `execvp` tries for `program`, in order: the program itself when it holds a `/`,
/// else the program in each folder of `path` (the command's `PATH`; none: glibc's default),
/// an empty folder being the working folder.
pub(crate) fn candidates(program: &[u8], path: Option<&[u8]>) -> Vec<Vec<u8>> {
    if program.is_empty() {
        return Vec::new();
    }
    if program.contains(&b'/') {
        return vec![program.to_vec()];
    }
    path.unwrap_or(DEFAULT_PATH)
        .split(|&b| b == b':')
        .map(|dir| {
            let mut p = dir.to_vec();
            if !p.is_empty() && !p.ends_with(b"/") {
                p.push(b'/');
            }
            p.extend_from_slice(program);
            p
        })
        .collect()
}

impl Exec {
    /// The exec of `cmd` as it will run: its program, its arguments, and its environment,
    /// which is exactly the variables set on it (every command hx runs in a pod has its
    /// environment cleared first: `process::Role::Tool`). A NUL byte (std puts a placeholder
    /// in its place, and refuses to spawn the command before any fork) gives an empty exec.
    pub fn of(cmd: &Command) -> Exec {
        Exec::try_of(cmd).unwrap_or_default()
    }

    fn try_of(cmd: &Command) -> Option<Exec> {
        let c = |s: &OsStr| CString::new(s.as_bytes()).ok();
        let program = cmd.get_program().as_bytes();
        let mut strings = vec![c(cmd.get_program())?];
        for a in cmd.get_args() {
            strings.push(c(a)?);
        }
        let args = strings.len();
        let mut search = None;
        for (k, v) in cmd.get_envs() {
            let Some(v) = v else { continue };
            if k == "PATH" {
                search = Some(v.as_bytes());
            }
            let mut pair = k.as_bytes().to_vec();
            pair.push(b'=');
            pair.extend_from_slice(v.as_bytes());
            strings.push(CString::new(pair).ok()?);
        }
        let paths: Vec<CString> = candidates(program, search)
            .into_iter()
            .filter_map(|p| CString::new(p).ok())
            .collect();
        let sh = CString::new(SH).ok()?;
        let nul = std::ptr::null();
        let argv: Vec<_> = strings[..args]
            .iter()
            .map(|s| s.as_ptr())
            .chain([nul])
            .collect();
        let envp: Vec<_> = strings[args..]
            .iter()
            .map(|s| s.as_ptr())
            .chain([nul])
            .collect();
        let scripts = paths
            .iter()
            .map(|p| {
                [sh.as_ptr(), p.as_ptr()]
                    .into_iter()
                    .chain(argv[1..].iter().copied())
                    .collect()
            })
            .collect();
        Some(Exec {
            paths,
            scripts,
            argv,
            envp,
            strings,
            sh,
        })
    }

    /// Executes the command as `execvp` would: each path in turn, past those that are not
    /// there; a path that is there but refused (`EACCES`) is remembered, and said if no
    /// other runs, else the last path's error. Returns only when nothing could be executed,
    /// with the error to say: async-signal-safe (syscalls on what `of` made).
    pub fn run(&self) -> libc::c_int {
        let mut denied = false;
        let mut last = libc::ENOENT;
        for (path, script) in self.paths.iter().zip(&self.scripts) {
            // SAFETY: NUL-terminated strings and NULL-terminated vectors made by `of`.
            unsafe { libc::execve(path.as_ptr(), self.argv.as_ptr(), self.envp.as_ptr()) };
            match sys::errno() {
                libc::ENOEXEC => {
                    // SAFETY: as above.
                    unsafe { libc::execve(self.sh.as_ptr(), script.as_ptr(), self.envp.as_ptr()) };
                    return sys::errno();
                }
                libc::EACCES => denied = true,
                e @ (libc::ENOENT
                | libc::ENOTDIR
                | libc::ESTALE
                | libc::ENODEV
                | libc::ETIMEDOUT) => last = e,
                other => return other,
            }
        }
        if denied {
            libc::EACCES
        } else {
            last
        }
    }

    /// The program as it was given (the command's first argument), for messages.
    pub fn program(&self) -> &[u8] {
        self.strings.first().map_or(b"", |s| s.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[*const libc::c_char]) -> Vec<String> {
        v.iter()
            .take_while(|p| !p.is_null())
            // SAFETY: pointers into the exec's own NUL-terminated strings.
            .map(|&p| {
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    #[test]
    fn a_bare_name_is_looked_for_in_the_commands_path_as_execvp_does() {
        let mut cmd = Command::new("tool");
        cmd.args(["-c", "x y"])
            .env_clear()
            .env("PATH", "/opt/bin::/usr/bin/")
            .env("A", "1");
        let e = Exec::of(&cmd);
        let paths: Vec<_> = e.paths.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(paths, ["/opt/bin/tool", "tool", "/usr/bin/tool"]);
        assert_eq!(strings(&e.argv), ["tool", "-c", "x y"]);
        let mut env = strings(&e.envp);
        env.sort();
        assert_eq!(env, ["A=1", "PATH=/opt/bin::/usr/bin/"]);
        assert_eq!(
            strings(&e.scripts[0]),
            ["/bin/sh", "/opt/bin/tool", "-c", "x y"]
        );
        assert_eq!(e.program(), b"tool");
    }

    #[test]
    fn a_path_is_tried_alone_and_no_path_variable_means_glibcs_default() {
        let mut cmd = Command::new("./run.sh");
        cmd.env_clear();
        let e = Exec::of(&cmd);
        assert_eq!(e.paths, [CString::new("./run.sh").unwrap()]);
        assert!(strings(&e.envp).is_empty());
        let e = Exec::of(Command::new("ls").env_clear());
        let paths: Vec<_> = e.paths.iter().map(|p| p.to_str().unwrap()).collect();
        assert_eq!(paths, ["/bin/ls", "/usr/bin/ls"]);
        // A variable removed from the command is not given to it.
        let e = Exec::of(Command::new("ls").env_clear().env("A", "1").env_remove("A"));
        assert!(strings(&e.envp).is_empty());
    }

    /// The error said is the last path's, as glibc's: a file where a folder was is "not a
    /// folder", not "not found". (No path here can execute: the test process stays.)
    #[test]
    fn the_error_said_is_the_last_paths() {
        let e = Exec::of(Command::new("/etc/passwd/x").env_clear());
        assert_eq!(e.run(), libc::ENOTDIR);
        let e = Exec::of(
            Command::new("no-such-program-hx")
                .env_clear()
                .env("PATH", "/nonexistent-hx:/etc/passwd"),
        );
        assert_eq!(e.run(), libc::ENOTDIR);
    }

    #[test]
    fn an_exec_with_nothing_to_run_says_not_found() {
        assert_eq!(Exec::default().run(), libc::ENOENT);
        assert!(Exec::of(Command::new("").env_clear()).paths.is_empty());
    }
}
