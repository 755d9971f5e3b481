//! Recursive changes of a protected folder other than `rm`: modes and owners, `git clean`.

use super::paths::{is_protected, resolve, shown, Place};

/// `chmod`, `chown` or `chgrp` recursive on `/`, a home folder or a top-level system folder:
/// `chmod -R 000 ~` locks the user out of their files, `chmod -R 777 /` opens the system.
pub(super) fn check_recursive_owner_or_mode(
    name: &str,
    args: &[&str],
    cwd: &Place,
) -> Option<String> {
    let mut recursive = false;
    let mut reference = false;
    let mut operands = Vec::new();
    let mut options_done = false;
    for a in args {
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done && a.starts_with("--") {
            recursive |= *a == "--recursive";
            reference |= a.starts_with("--reference");
        } else if !options_done
            && a.len() > 1
            && a.starts_with('-')
            && a[1..].chars().all(|c| "RHLPcfvh".contains(c))
        {
            // `-R`, `-Rv`; a mode such as `-w` or `-rwx` is an operand.
            recursive |= a.contains('R');
        } else {
            operands.push(*a);
        }
    }
    if !recursive {
        return None;
    }
    // The first operand is the mode, owner or group, unless `--reference` gives it.
    let paths = if reference {
        &operands[..]
    } else {
        operands.get(1..).unwrap_or_default()
    };
    paths
        .iter()
        .find(|t| is_protected(&resolve(t, cwd)))
        .map(|t| format!("recursive {name} of {}", shown(t, cwd)))
}

/// `git clean` (not a dry run) of `/`, a home folder or a top-level system folder: it deletes
/// every file there that git does not track (with `-x`, the ignored ones too), and a home
/// folder may well be a repository of dotfiles.
pub(super) fn check_git_clean(args: &[&str], cwd: &Place) -> Option<String> {
    let mut at = cwd.clone();
    let mut it = args.iter();
    loop {
        let a = *it.next()?;
        match a {
            "-C" | "--work-tree" => at = resolve(it.next()?, &at),
            "-c" | "--git-dir" | "--namespace" | "--config-env" => {
                it.next();
            }
            "clean" => break,
            _ if a.starts_with("--work-tree=") => {
                at = resolve(&a["--work-tree=".len()..], &at);
            }
            _ if a.starts_with('-') => {}
            _ => return None,
        }
    }
    let mut paths = Vec::new();
    let mut options_done = false;
    while let Some(&a) = it.next() {
        if options_done || !a.starts_with('-') || a == "-" {
            paths.push(a);
        } else if a == "--" {
            options_done = true;
        } else if a == "--dry-run" {
            return None;
        } else if a == "--exclude" {
            it.next();
        } else if !a.starts_with("--") {
            // A cluster of flags (`-xfd`); what follows `-e` is its pattern.
            let (flags, pattern) = a[1..].split_once('e').unwrap_or((&a[1..], "-"));
            if flags.contains('n') {
                return None;
            }
            if pattern.is_empty() {
                it.next();
            }
        }
    }
    if paths.is_empty() {
        return is_protected(&at).then(|| format!("git clean of {at}"));
    }
    paths
        .iter()
        .find(|p| is_protected(&resolve(p, &at)))
        .map(|p| format!("git clean of {}", shown(p, &at)))
}
