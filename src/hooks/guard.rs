//! The built-in guard: refuses bash commands that destroy the machine or escalate privileges.
//!
//! It matches parsed words, not substrings, so `echo "sudo is a word"` or `grep reboot
//! notes.txt` pass while `sudo ls` or `x; reboot` do not. A script handed to a shell is checked
//! like the command line itself when the line holds it as plain text: `sh -c '…'`, `eval '…'`,
//! a here-doc or here-string (`sh <<EOF`, `bash <<< '…'`), or an `echo '…'` without backslashes
//! or a `cat <<EOF` piped in. A path is resolved by name as far as the words tell (`/usr/..`,
//! `~user`, a `cd` before it, `env -C`, the workspace's real path above it), so `cd / && rm
//! -rf *` is `rm -rf /*`. Words whose values the line gives (`for i in /`, `set --`,
//! `${X:-/}`, `{/,}`, `$(echo /)`) are expanded every way they may be (`expand`), each way
//! checked after the command as written, so an expansion only adds refusals.
//!
//! Its scope is the cheap refusal that a model reads and understands before anything runs: a
//! seat belt against a model's mistakes. The wall is the sandbox (the run's pod of namespaces
//! and Landlock), which confines whatever the guard lets through, so the guard does not emulate
//! programs to guess what a shell will run. A script read from a file (`sh install.sh`, `sh <
//! x`, `cat x | sh`), built at run time (`eval "$x"`, `make | sh`) or printed through a format
//! or escapes (`printf … | sh`, `echo -e '\x72m' | sh`) passes. Reading those meant a second
//! small interpreter that is never done (formats, `%b`, octal and hex bytes, `\c`, each echo
//! its own dialect), and a script spelled in escapes is no slip but a disguise, which only the
//! pod stops. Refusing every such pipe as "cannot tell what reaches the shell" was the other
//! choice, but it needs a list of which programs count as printers and would refuse `printf
//! '%s\n' ls | sh` while `sh script.sh` passes: not a rule a model learns from one refusal.
//!
//! Two cases it cannot read are still refused on a rule, since each is one cheap test with a
//! reason worth telling: a shell running what a download prints (`curl … | sh`, `bash -c
//! "$(curl …)"`, `bash <(wget …)`), because the model would run code that nobody, the guard
//! included, has seen (the reason tells it to save the file and read it first); and a command
//! word made at run time that the line does not tell (`$a -rf /`, `$(printf rm) -rf /`), when
//! its arguments would be refused for `rm`.

use std::cell::Cell;
use std::collections::HashMap;

use std::path::Path;

use super::shell_words::{commands, Input, SimpleCommand, PROCESS_SUBSTITUTION, SUBSTITUTION};
use expand::{variants, Bindings};
use find::{check_find, find_parts, picks_by_name};
use parallel::check_parallel;
use paths::{is_protected, moves_to, resolve, set_workspace, shown, Place};
use scripts::{output_of, script_of, stdin_script, Script};
use signals::{check_kill, check_killall, check_pkill};
use sweeps::{check_git_clean, check_recursive_owner_or_mode};
use wipe::check_wipe;

mod expand;
mod find;
mod parallel;
mod paths;
mod scripts;
mod signals;
mod sweeps;
mod wipe;

/// Why `command` is refused, or `None` when it may run. Above the workspace is unknown.
pub fn check_command(command: &str) -> Option<String> {
    check_command_in(command, None)
}

/// Why `command`, run in `workspace` (absolute), is refused: a path that climbs above it
/// (`..`, `~+/../..`) is resolved from where it really is.
pub fn check_command_in(command: &str, workspace: Option<&Path>) -> Option<String> {
    XARGS_COMMANDS.set(0);
    set_workspace(workspace);
    let why = check_script(command, 0, &Place::Workspace(0));
    set_workspace(None);
    why
}

/// Scripts inside scripts (`bash -c "sh -c '…'"`) are followed this deep; deeper ones pass.
const MAX_NESTING: usize = 4;
/// Pipes followed back from a shell to what produces its script.
const MAX_PIPE_HOPS: usize = 16;

/// Checks `script`, which starts in `cwd`; a `cd` in it moves the commands after it.
fn check_script(script: &str, depth: usize, cwd: &Place) -> Option<String> {
    if is_fork_bomb(script) {
        return Some("fork bomb".into());
    }
    let all = commands(script);
    let scope = scopes(&all);
    let bindings = Bindings::collect(&all);
    // Where a `cd` left each scope (the script, or one substitution: a subshell, so a `cd` in
    // it moves only what follows in it); a scope no `cd` moved is where its parent is.
    let mut moved: HashMap<Scope, Place> = HashMap::new();
    for (i, c) in all.iter().enumerate() {
        let here = cwd_of(scope[i], &moved, &scope, cwd);
        if let Some(why) = check_simple(c, &all, depth, &here) {
            return Some(why);
        }
        let made = variants(c, &all, &bindings);
        for v in &made {
            if let Some(why) = check_simple(v, &all, depth, &here) {
                return Some(format!(
                    "{why}: `{}` can run as `{}`",
                    brief(&c.words),
                    brief(&v.words)
                ));
            }
        }
        // Where a `cd` may go: a protected place among its expansions, else as written.
        let to = made
            .iter()
            .filter_map(|v| moves_to(v, &here))
            .find(is_protected)
            .or_else(|| moves_to(c, &here));
        if let Some(to) = to {
            moved.insert(scope[i], to);
        }
    }
    None
}

/// A command's words for a reason, from its program on (past `do`, `then`), bounded.
fn brief(words: &[String]) -> String {
    let start = words
        .iter()
        .position(|w| {
            !matches!(
                w.as_str(),
                "do" | "then" | "else" | "elif" | "if" | "!" | "{"
            )
        })
        .unwrap_or(0);
    let line = words[start..].join(" ");
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// A substitution, as the index of the command holding it and its place among that command's
/// substitutions; `None` is the script's own level.
type Scope = Option<(usize, usize)>;

/// The scope of each command: the innermost substitution it runs in.
fn scopes(all: &[SimpleCommand]) -> Vec<Scope> {
    let mut innermost: Vec<Option<((usize, usize), usize)>> = vec![None; all.len()];
    for (host, c) in all.iter().enumerate() {
        for (k, range) in c.substitutions.iter().enumerate() {
            for i in range.clone() {
                if let Some(slot) = innermost.get_mut(i) {
                    if slot.is_none_or(|(_, len)| range.len() < len) {
                        *slot = Some(((host, k), range.len()));
                    }
                }
            }
        }
    }
    innermost
        .into_iter()
        .map(|s| s.map(|(scope, _)| scope))
        .collect()
}

/// Where the commands of `scope` run now: where a `cd` in it moved them, else where its parent
/// (the scope of the command holding the substitution) is, up to the script's `start`.
fn cwd_of(scope: Scope, moved: &HashMap<Scope, Place>, scopes: &[Scope], start: &Place) -> Place {
    let mut s = scope;
    // A holder comes after the commands of its substitutions, so each step goes up; the bound
    // only keeps a broken list from looping.
    for _ in 0..=scopes.len() {
        if let Some(p) = moved.get(&s) {
            return p.clone();
        }
        match s {
            None => break,
            Some((host, _)) => s = scopes.get(host).copied().flatten(),
        }
    }
    moved.get(&None).unwrap_or(start).clone()
}

/// Words that run the rest of the line as a command.
const WRAPPERS: &[&str] = &[
    "env", "nohup", "nice", "time", "command", "exec", "builtin", "timeout", "stdbuf", "xargs",
    "chroot", "ionice", "taskset", "setsid", "then", "else", "elif", "do", "if", "while", "until",
    "!", "{",
];

/// Shells that run a script given with `-c`, as a file operand, or on stdin.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];

/// A wrapper's options that take a separate argument (`timeout -s KILL`, `env -u VAR`).
fn option_takes_value(wrapper: &str, opt: &str) -> bool {
    let list: &[&str] = match wrapper {
        "timeout" => &["-s", "--signal", "-k", "--kill-after"],
        "env" => &["-u", "--unset", "-C", "--chdir", "-S", "--split-string"],
        "exec" => &["-a"],
        "nice" => &["-n", "--adjustment"],
        "ionice" => &["-c", "-n", "-p", "--class", "--classdata"],
        "taskset" => &["-c", "--cpu-list", "-p"],
        "xargs" => &["-I", "-n", "-P", "-d", "-E", "-L", "-s", "-a"],
        "stdbuf" => &["-i", "-o", "-e"],
        _ => &[],
    };
    list.contains(&opt)
}

/// Leading operands a wrapper takes before the command: `timeout DURATION`, `chroot DIR`,
/// `taskset MASK`.
fn leading_operands(wrapper: &str, saw_list_option: bool) -> usize {
    match wrapper {
        "timeout" | "chroot" => 1,
        "taskset" if !saw_list_option => 1,
        _ => 0,
    }
}

/// What a simple command really runs, past `VAR=value` assignments, shell keywords and
/// wrappers with their options and operands.
struct Program<'a> {
    /// The program's word as written (`/bin/rm`, `$(…)`) and its index among the words.
    word: &'a str,
    at: usize,
    /// Its base name (`rm`).
    name: &'a str,
    args: Vec<&'a str>,
    /// `xargs` ran it: it gets the words of its input too.
    xargs: Option<Xargs<'a>>,
    /// `env -C DIR` ran it in `DIR`.
    chdir: Option<&'a str>,
}

/// How `xargs` hands its input to the program.
#[derive(Debug, Clone, Copy, Default)]
struct Xargs<'a> {
    /// `-I R`: each input line replaces `R` in the arguments; else the words come after them.
    replace: Option<&'a str>,
    /// `-a FILE`: the input is a file's, not stdin's.
    from_file: bool,
}

impl<'a> Xargs<'a> {
    /// Reads one of `xargs`'s options; `value` is the word after it.
    fn option(&mut self, opt: &'a str, value: Option<&'a str>) {
        if opt == "-I" {
            self.replace = value;
        } else if opt == "-i" || opt == "--replace" {
            self.replace = Some("{}");
        } else if let Some(r) = opt.strip_prefix("--replace=") {
            self.replace = Some(r);
        } else if let Some(r) = opt.strip_prefix("-I").or_else(|| opt.strip_prefix("-i")) {
            self.replace = Some(r);
        } else if opt.starts_with("-a") || opt.starts_with("--arg-file") {
            self.from_file = true;
        }
    }
}

/// The program a simple command really runs (its base name) and its arguments. `None` when it
/// runs nothing, or only asks whether a program exists (`command -v sudo`).
fn program(words: &[String]) -> Option<(&str, Vec<&str>)> {
    program_of(words).map(|p| (p.name, p.args))
}

fn program_of(words: &[String]) -> Option<Program<'_>> {
    let word = |i: usize| words.get(i).map(String::as_str);
    let mut i = 0;
    let mut xargs = None;
    let mut chdir = None;
    while let Some(w) = word(i) {
        i += 1;
        if is_assignment(w) {
            continue;
        }
        let base = w.rsplit('/').next().unwrap_or(w);
        if base == "command" && word(i).is_some_and(|o| o == "-v" || o == "-V") {
            return None;
        }
        if WRAPPERS.contains(&base) {
            let mut list_option = false;
            let mut input = (base == "xargs").then(Xargs::default);
            while let Some(opt) = word(i) {
                if opt.starts_with('-') && opt.len() > 1 {
                    i += 1;
                    list_option |= opt == "-c" || opt == "--cpu-list" || opt == "-p";
                    if let Some(x) = input.as_mut() {
                        x.option(opt, word(i));
                    }
                    if base == "env" {
                        chdir = env_chdir(opt, word(i)).or(chdir);
                    }
                    if option_takes_value(base, opt) {
                        i += 1;
                    }
                } else if is_assignment(opt) {
                    i += 1;
                } else {
                    break;
                }
            }
            i += leading_operands(base, list_option);
            xargs = xargs.or(input);
            continue;
        }
        if base == "busybox" {
            // `busybox sh`: the applet is the program.
            continue;
        }
        let args = words.get(i..).unwrap_or_default();
        return Some(Program {
            word: w,
            at: i - 1,
            name: base,
            args: args.iter().map(String::as_str).collect(),
            xargs,
            chdir,
        });
    }
    None
}

/// The folder `env`'s option `opt` (with `value`, the word after it) runs its command in.
fn env_chdir<'a>(opt: &'a str, value: Option<&'a str>) -> Option<&'a str> {
    match opt {
        "-C" | "--chdir" => value,
        _ => opt
            .strip_prefix("--chdir=")
            .or_else(|| opt.strip_prefix("-C").filter(|d| !d.is_empty())),
    }
}

fn check_simple(
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
    depth: usize,
    cwd: &Place,
) -> Option<String> {
    for target in &cmd.redirects {
        if is_disk_device(target) {
            return Some(format!("write to a disk device ({target})"));
        }
    }
    let prog = program_of(&cmd.words)?;
    let moved;
    let cwd = match prog.chdir {
        Some(dir) => {
            moved = resolve(dir, cwd);
            &moved
        }
        None => cwd,
    };
    if let Some(x) = prog.xargs {
        if let Some(why) = check_xargs(&cmd.words[prog.at..], x, cmd, all, depth, cwd) {
            return Some(why);
        }
    }
    // `$dir/rm` is still `rm`; `$a`, `/bin/$a` and `$(…)` are made when the line runs.
    if prog.name.contains('$') || prog.name.contains(PROCESS_SUBSTITUTION) {
        return check_made_command(&prog, cmd, all, depth, cwd);
    }
    let (name, args) = (prog.name, prog.args);
    match name {
        "sudo" | "su" | "doas" | "pkexec" => Some(format!("privilege escalation ({name})")),
        "shutdown" | "reboot" | "halt" | "poweroff" => Some(format!("stops the machine ({name})")),
        "systemctl"
            if args
                .iter()
                .any(|a| matches!(*a, "poweroff" | "reboot" | "halt" | "kexec")) =>
        {
            Some("stops the machine (systemctl)".into())
        }
        "init" | "telinit" if args.first().is_some_and(|a| *a == "0" || *a == "6") => {
            Some(format!("stops the machine ({name})"))
        }
        n if n == "mkfs" || n.starts_with("mkfs.") || n == "mke2fs" || n == "mkswap" => {
            Some(format!("formats a filesystem ({n})"))
        }
        "dd" => args
            .iter()
            .find_map(|a| a.strip_prefix("of="))
            .filter(|t| t.starts_with("/dev/") && !is_harmless_device(t))
            .map(|t| format!("raw write to a device (dd of={t})")),
        "tee" | "shred" | "wipefs" => args
            .iter()
            .find(|a| is_disk_device(a))
            .map(|t| format!("write to a disk device ({t})"))
            .or_else(|| check_wipe(name, &args, cwd)),
        "truncate" => check_wipe(name, &args, cwd),
        "parallel" => check_parallel(&args, cmd, all, depth, cwd),
        // Only the destination is written: copying a disk to an image is fine.
        "cp" | "mv" => args
            .last()
            .filter(|a| is_disk_device(a))
            .map(|t| format!("write to a disk device ({t})")),
        "rm" => check_rm(&args, cwd),
        "kill" => check_kill(&args),
        "pkill" => check_pkill(&args),
        "killall" => check_killall(&args),
        "killall5" => Some("signals every process (killall5)".into()),
        "chmod" | "chown" | "chgrp" => check_recursive_owner_or_mode(name, &args, cwd),
        "git" => check_git_clean(&args, cwd),
        "find" => check_find(&args, all, depth, cwd),
        n if SHELLS.contains(&n) || matches!(n, "eval" | "source" | ".") => {
            if depth >= MAX_NESTING {
                return None;
            }
            match script_of(name, &args, cmd, all) {
                Script::Text(script) => check_script(&script, depth + 1, cwd),
                Script::Download(from) => Some(format!(
                    "runs a script downloaded from the network ({from} | {name}); save it to a \
                     file and read it first"
                )),
                Script::Unknown => None,
            }
        }
        _ => None,
    }
}

/// Commands made from `xargs -I`'s input checked in one line at most: each input line makes one,
/// and a shell among them may hold another `xargs -I`, whose commands would multiply these.
const MAX_XARGS_COMMANDS: usize = 256;

thread_local! {
    /// Commands made from `xargs -I`'s input so far in the line being checked.
    static XARGS_COMMANDS: Cell<usize> = const { Cell::new(0) };
}

/// The command `xargs` runs (`run`: its program and arguments), with the words of its input
/// where the line tells them (`echo / | xargs rm -rf`).
fn check_xargs(
    run: &[String],
    x: Xargs<'_>,
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
    depth: usize,
    cwd: &Place,
) -> Option<String> {
    if x.from_file {
        return None;
    }
    let input = input_words(cmd, all);
    if input.is_empty() {
        return None;
    }
    let check = |words: Vec<String>| {
        let made = SimpleCommand {
            words,
            ..SimpleCommand::default()
        };
        check_simple(&made, all, depth, cwd)
    };
    match x.replace {
        Some(r) if !r.is_empty() => input.iter().find_map(|item| {
            let made = XARGS_COMMANDS.get();
            if made >= MAX_XARGS_COMMANDS {
                return None;
            }
            XARGS_COMMANDS.set(made + 1);
            check(run.iter().map(|w| w.replace(r, item)).collect())
        }),
        _ => check(run.iter().cloned().chain(input).collect()),
    }
}

/// The words a command reads on stdin, where the line tells them: the text of a literal piped
/// in or a here-doc, or the start points of a `find` that picks nothing out (every path it
/// prints is one or lies below one). Empty when the line does not tell.
fn input_words(cmd: &SimpleCommand, all: &[SimpleCommand]) -> Vec<String> {
    if let Script::Text(text) = stdin_script(cmd, all) {
        return text
            .split_whitespace()
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
    }
    let Input::Pipe(i) = cmd.stdin else {
        return Vec::new();
    };
    match all.get(i).and_then(|p| program(&p.words)) {
        Some(("find", args)) => {
            let (starts, expr) = find_parts(&args);
            if picks_by_name(expr) {
                Vec::new()
            } else {
                starts.into_iter().map(str::to_string).collect()
            }
        }
        _ => Vec::new(),
    }
}

/// A command whose program the shell makes when it runs the line: a variable (`$a -rf /`) or a
/// substitution (`$(cat cmd) -rf /`). A substitution whose output the line tells (a literal
/// echoed) is checked as the command it makes. Otherwise what runs cannot be told, and the
/// command is refused when its arguments would be refused for `rm`: whatever the program is,
/// they aim at the machine, and the sandbox, not the guard, covers the rest.
fn check_made_command(
    prog: &Program<'_>,
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
    depth: usize,
    cwd: &Place,
) -> Option<String> {
    if prog.word == SUBSTITUTION {
        // Its substitution is the one after those in the words before it.
        let k: usize = cmd.words[..prog.at]
            .iter()
            .map(|w| w.matches(SUBSTITUTION).count() + w.matches(PROCESS_SUBSTITUTION).count())
            .sum();
        let printed = cmd.substitutions.get(k).and_then(|r| {
            let last = all.get(r.clone())?.last()?;
            match output_of(last, all, MAX_PIPE_HOPS) {
                Script::Text(t) => Some(t),
                _ => None,
            }
        });
        if let Some(text) = printed {
            let words = text
                .split_whitespace()
                .map(str::to_string)
                .chain(prog.args.iter().map(|a| a.to_string()))
                .collect();
            let made = SimpleCommand {
                words,
                stdin: cmd.stdin.clone(),
                ..SimpleCommand::default()
            };
            return check_simple(&made, all, depth, cwd);
        }
    }
    check_rm(&prog.args, cwd).map(|why| {
        format!(
            "cannot tell what {} runs, and its arguments would be refused for rm ({why})",
            prog.word
        )
    })
}

fn is_assignment(w: &str) -> bool {
    match w.split_once('=') {
        Some((k, _)) => {
            !k.is_empty()
                && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !k.starts_with(|c: char| c.is_ascii_digit())
        }
        None => false,
    }
}

/// `rm` that is recursive and aimed at `/`, a home folder or a top-level system folder, or
/// that disarms the root check.
fn check_rm(args: &[&str], cwd: &Place) -> Option<String> {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut options_done = false;
    for a in args {
        if *a == "--no-preserve-root" {
            return Some("rm --no-preserve-root".into());
        }
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            recursive |= *a == "--recursive";
        } else if !options_done && a.starts_with('-') && a.len() > 1 {
            recursive |= a.contains('r') || a.contains('R');
        } else {
            targets.push(*a);
        }
    }
    if !recursive {
        return None;
    }
    targets
        .iter()
        .find(|t| is_protected(&resolve(t, cwd)))
        .map(|t| format!("recursive delete of {}", shown(t, cwd)))
}

fn is_disk_device(t: &str) -> bool {
    [
        "/dev/sd",
        "/dev/nvme",
        "/dev/hd",
        "/dev/vd",
        "/dev/xvd",
        "/dev/mmcblk",
        "/dev/disk",
        "/dev/mapper/",
        "/dev/md",
        "/dev/dm-",
    ]
    .iter()
    .any(|p| t.starts_with(p))
}

fn is_harmless_device(t: &str) -> bool {
    matches!(
        t,
        "/dev/null" | "/dev/zero" | "/dev/stdout" | "/dev/stderr" | "/dev/tty"
    ) || t.starts_with("/dev/fd/")
        || t.starts_with("/dev/pts/")
}

/// `:(){ :|:& };:` and its renamed forms: a function that pipes itself into itself in the
/// background.
fn is_fork_bomb(command: &str) -> bool {
    let s: String = command.chars().filter(|c| !c.is_whitespace()).collect();
    let mut from = 0;
    while let Some(p) = s[from..].find("(){") {
        let at = from + p;
        let name: String = s[..at]
            .chars()
            .rev()
            .take_while(|c| !matches!(c, ';' | '&' | '|' | '(' | ')' | '{' | '}'))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        let body = &s[at + 3..];
        if !name.is_empty()
            && (body.starts_with(&format!("{name}|{name}&"))
                || body.starts_with(&format!("{name}|{name};"))
                || body.starts_with(&format!("{name}&{name}&")))
        {
            return true;
        }
        from = at + 3;
    }
    false
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_shapes;
