//! Signals to every process: `kill -1`, and a `pkill` or `killall` that picks none out by name.

use super::find::matches_every_name;

/// `kill` of pid -1: every process the user may signal, hx and the user's desktop included. A
/// lone `kill -1` too, which some `kill`s read as that pid.
pub(super) fn check_kill(args: &[&str]) -> Option<String> {
    let mut signal = None;
    let mut i = 0;
    while let Some(&a) = args.get(i) {
        match a {
            "-l" | "-L" | "--list" | "--table" => return None,
            "--" => {
                i += 1;
                break;
            }
            "-s" | "-n" | "--signal" | "-q" | "--queue" => {
                signal = args.get(i + 1).copied();
                i += 2;
            }
            _ if a.starts_with("--") => i += 1,
            // The first `-N` or `-NAME` is the signal; pids follow, negative ones too.
            _ if signal.is_none() && a.len() > 1 && a.starts_with('-') => {
                signal = Some(a);
                i += 1;
            }
            _ => break,
        }
    }
    let pids = args.get(i..).unwrap_or_default();
    (pids.contains(&"-1") || pids.is_empty() && signal == Some("-1"))
        .then(|| "signals every process (kill -1)".into())
}

/// `pkill`'s options that take the next word as their value.
const PKILL_VALUES: &[&str] = &[
    "-u",
    "-U",
    "-g",
    "-G",
    "-P",
    "-s",
    "-t",
    "-r",
    "-q",
    "-O",
    "--signal",
    "--euid",
    "--uid",
    "--group",
    "--pgroup",
    "--parent",
    "--session",
    "--terminal",
    "--runstates",
    "--queue",
    "--older",
    "--ns",
    "--nslist",
    "--cgroup",
    "--env",
];

/// `pkill` that picks no process by name: without a pattern (`pkill -u USER` signals all the
/// user's processes), with one that matches every name, or with `-v`, which signals all the
/// others.
pub(super) fn check_pkill(args: &[&str]) -> Option<String> {
    let mut patterns = Vec::new();
    let (mut pidfile, mut inverse) = (false, false);
    let mut options_done = false;
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        if options_done || !a.starts_with('-') || a == "-" {
            patterns.push(a);
        } else if a == "--" {
            options_done = true;
        } else if a == "-F" || a == "--pidfile" {
            pidfile = true;
            it.next();
        } else if a.starts_with("--pidfile=") {
            pidfile = true;
        } else if a == "--inverse" {
            inverse = true;
        } else if PKILL_VALUES.contains(&a) {
            it.next();
        } else if !a.starts_with("--") && a[1..].chars().all(|c| c.is_ascii_lowercase()) {
            // A cluster of flags (`-fx`), whose last may take a value (`-fu root`); a signal
            // (`-9`, `-HUP`) takes none.
            inverse |= a.contains('v');
            if a.ends_with(['u', 'g', 's', 't', 'r', 'q']) {
                it.next();
            }
        }
    }
    if inverse {
        return Some("signals every process but the ones named (pkill -v)".into());
    }
    match patterns.first() {
        None if !pidfile => {
            Some("signals every process it selects (pkill without a pattern)".into())
        }
        Some(p) if matches_every_name(p) => Some(format!(
            "signals every process (pkill {p:?} matches every name)"
        )),
        _ => None,
    }
}

/// `killall`'s options that take the next word as their value.
const KILLALL_VALUES: &[&str] = &[
    "-u",
    "--user",
    "-s",
    "--signal",
    "-o",
    "--older-than",
    "-y",
    "--younger-than",
    "-n",
    "--ns",
    "-Z",
    "--context",
];

/// `killall` without a process name (`killall -u USER` signals all the user's processes), or
/// with a regular expression that matches every name.
pub(super) fn check_killall(args: &[&str]) -> Option<String> {
    let mut names = Vec::new();
    let mut regex = false;
    let mut options_done = false;
    let mut it = args.iter();
    while let Some(&a) = it.next() {
        if options_done || !a.starts_with('-') || a == "-" {
            names.push(a);
        } else if matches!(a, "-l" | "--list" | "-V" | "--version" | "--help") {
            return None;
        } else if a == "--" {
            options_done = true;
        } else if a == "--regexp" {
            regex = true;
        } else if KILLALL_VALUES.contains(&a) {
            it.next();
        } else if !a.starts_with("--") && a[1..].chars().all(|c| c.is_ascii_lowercase()) {
            regex |= a.contains('r');
            if a.ends_with(['u', 's', 'o', 'y', 'n']) {
                it.next();
            }
        }
    }
    if names.is_empty() {
        return Some("signals every process it selects (killall without a process name)".into());
    }
    names
        .iter()
        .find(|n| regex && matches_every_name(n))
        .map(|n| format!("signals every process (killall -r {n:?} matches every name)"))
}
