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
    "chroot", "ionice", "taskset", "setsid",
];

fn check_simple(cmd: &SimpleCommand, depth: usize) -> Option<String> {
    for target in &cmd.redirects {
        if is_disk_device(target) {
            return Some(format!("write to a disk device ({target})"));
        }
    }
    let mut words = cmd.words.iter().map(String::as_str).peekable();
    // Skip `VAR=value` assignments and wrappers (with their options) to reach the command.
    let mut name = None;
    while let Some(w) = words.next() {
        if is_assignment(w) {
            continue;
        }
        let base = w.rsplit('/').next().unwrap_or(w);
        if WRAPPERS.contains(&base) {
            while let Some(opt) = words.peek() {
                // `timeout 10`, `nice -n 5`: options and their numeric values.
                if opt.starts_with('-') || opt.parse::<f64>().is_ok() || is_assignment(opt) {
                    words.next();
                } else {
                    break;
                }
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
        "tee" | "cp" | "mv" | "shred" | "wipefs" => args
            .iter()
            .find(|a| is_disk_device(a))
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

fn is_root_or_home(t: &str) -> bool {
    let t = t.trim_end_matches("/*").trim_end_matches('*');
    let t = if t.len() > 1 {
        t.trim_end_matches('/')
    } else {
        t
    };
    let t = t.trim_end_matches("/.");
    matches!(
        t,
        "" | "/"
            | "~"
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
    ) || t.chars().all(|c| c == '/' || c == '.')
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
