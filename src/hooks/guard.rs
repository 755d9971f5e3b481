//! The built-in guard: refuses bash commands that destroy the machine or escalate privileges.
//!
//! It matches parsed words, not substrings, so `echo "sudo is a word"` or `grep reboot
//! notes.txt` pass while `sudo ls` or `x; reboot` do not. It is a seat belt against a model's
//! mistakes, not a sandbox against an adversary.

use super::shell_words::{commands, SimpleCommand};

/// Why `command` is refused, or `None` when it may run.
pub fn check_command(command: &str) -> Option<String> {
    if is_fork_bomb(command) {
        return Some("fork bomb".into());
    }
    commands(command).iter().find_map(|c| check_simple(c, 0))
}

/// Words that run the rest of the line as a command.
const WRAPPERS: &[&str] = &[
    "env", "nohup", "nice", "time", "command", "exec", "builtin", "timeout", "stdbuf", "xargs",
    "chroot", "ionice", "taskset", "setsid", "then", "else", "elif", "do", "if", "while", "until",
    "!", "{",
];

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

fn check_simple(cmd: &SimpleCommand, depth: usize) -> Option<String> {
    for target in &cmd.redirects {
        if is_disk_device(target) {
            return Some(format!("write to a disk device ({target})"));
        }
    }
    let mut words = cmd.words.iter().map(String::as_str).peekable();
    // Skip `VAR=value` assignments, shell keywords and wrappers (with their options and
    // operands) to reach the command that really runs.
    let mut name = None;
    while let Some(w) = words.next() {
        if is_assignment(w) {
            continue;
        }
        let base = w.rsplit('/').next().unwrap_or(w);
        if base == "command" && words.peek().is_some_and(|o| *o == "-v" || *o == "-V") {
            // `command -v sudo` only asks whether sudo exists.
            return None;
        }
        if WRAPPERS.contains(&base) {
            let mut list_option = false;
            while let Some(opt) = words.peek().copied() {
                if opt.starts_with('-') && opt.len() > 1 {
                    words.next();
                    list_option |= opt == "-c" || opt == "--cpu-list" || opt == "-p";
                    if option_takes_value(base, opt) {
                        words.next();
                    }
                } else if is_assignment(opt) {
                    words.next();
                } else {
                    break;
                }
            }
            for _ in 0..leading_operands(base, list_option) {
                words.next();
            }
            continue;
        }
        name = Some(base);
        break;
    }
    let name = name?;
    let args: Vec<&str> = words.collect();
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
            .map(|t| format!("write to a disk device ({t})")),
        // Only the destination is written: copying a disk to an image is fine.
        "cp" | "mv" => args
            .last()
            .filter(|a| is_disk_device(a))
            .map(|t| format!("write to a disk device ({t})")),
        "rm" => check_rm(&args),
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "eval" if depth < 4 => {
            let script = if name == "eval" {
                Some(args.join(" "))
            } else {
                args.iter()
                    .position(|a| a.starts_with('-') && a.contains('c') && !a.starts_with("--"))
                    .and_then(|i| args.get(i + 1))
                    .map(|s| s.to_string())
            };
            let script = script?;
            if is_fork_bomb(&script) {
                return Some("fork bomb".into());
            }
            commands(&script)
                .iter()
                .find_map(|c| check_simple(c, depth + 1))
        }
        _ => None,
    }
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

/// `rm` that is recursive and aimed at `/` or the home folder, or that disarms the root check.
fn check_rm(args: &[&str]) -> Option<String> {
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
        .find(|t| is_root_or_home(t))
        .map(|t| format!("recursive delete of {t}"))
}

/// `/`, the home folder, or a top-level system folder, also written `/*`, `//`, `~/`,
/// `$HOME/*`. The workspace's own `.` or `*` are not the machine and are allowed.
fn is_root_or_home(t: &str) -> bool {
    let mut t = t.to_string();
    loop {
        let before = t.len();
        for suffix in ["/*", "/."] {
            if let Some(s) = t.strip_suffix(suffix) {
                t = if s.is_empty() {
                    "/".into()
                } else {
                    s.to_string()
                };
            }
        }
        while t.len() > 1 && t.ends_with('/') {
            t.pop();
        }
        if t.len() == before {
            break;
        }
    }
    matches!(
        t.as_str(),
        "/" | "~"
            | "$HOME"
            | "${HOME}"
            | "/root"
            | "/home"
            | "/usr"
            | "/etc"
            | "/var"
            | "/bin"
            | "/boot"
            | "/lib"
            | "/lib64"
            | "/sbin"
            | "/opt"
            | "/srv"
            | "/dev"
            | "/proc"
            | "/sys"
    )
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
