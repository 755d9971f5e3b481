//! Where a path in the words leads, and which places the guard keeps a command from sweeping.

use std::cell::RefCell;
use std::fmt;
use std::path::{Component, Path};

use super::program;
use crate::hooks::shell_words::{SimpleCommand, PROCESS_SUBSTITUTION};

/// Where a path leads, as far as the words tell: `.` and `..` are resolved by name (as the
/// shell's `cd` does), links are not followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Place {
    /// The folder the command line starts in (the workspace), or this many folders below it.
    Workspace(usize),
    /// An absolute path: its names below `/`.
    Root(Vec<String>),
    /// A home folder (`~`, `$HOME`; `~user` is `user`'s), `up` folders above it, then `names`.
    Home {
        user: Option<String>,
        up: usize,
        names: Vec<String>,
    },
    /// What the words do not tell: `$DIR`, `cd -`, above the workspace.
    Unknown,
}

impl Place {
    fn home(user: Option<&str>) -> Place {
        Place::Home {
            user: user.map(str::to_string),
            up: 0,
            names: Vec::new(),
        }
    }

    /// The entry `name` of this folder; `..` is its parent.
    fn join(self, name: &str) -> Place {
        match (self, name) {
            (p, "" | ".") => p,
            (Place::Workspace(0), "..") => WORKSPACE.with_borrow(|w| match w {
                Some(names) => Place::Root(names.clone()).join(".."),
                None => Place::Unknown,
            }),
            (Place::Unknown, _) => Place::Unknown,
            (Place::Workspace(d), "..") => Place::Workspace(d - 1),
            (Place::Workspace(d), _) => Place::Workspace(d + 1),
            (Place::Root(mut names), "..") => {
                names.pop();
                Place::Root(names)
            }
            (Place::Root(mut names), n) => {
                names.push(n.to_string());
                Place::Root(names)
            }
            (Place::Home { user, up, names }, n) => {
                let (mut up, mut names) = (up, names);
                if n != ".." {
                    names.push(n.to_string());
                } else if names.pop().is_none() {
                    up += 1;
                }
                Place::Home { user, up, names }
            }
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Root(names) => write!(f, "/{}", names.join("/")),
            Place::Home { user, up, names } => {
                write!(f, "~{}", user.as_deref().unwrap_or(""))?;
                for _ in 0..*up {
                    write!(f, "/..")?;
                }
                names.iter().try_for_each(|n| write!(f, "/{n}"))
            }
            Place::Workspace(_) => write!(f, "."),
            Place::Unknown => write!(f, "?"),
        }
    }
}

thread_local! {
    /// The names of the workspace's absolute path, while a line run there is checked.
    static WORKSPACE: RefCell<Option<Vec<String>>> = const { RefCell::new(None) };
}

/// Where the line being checked runs; `None` (or a path not plain and absolute) leaves what
/// lies above it unknown.
pub(super) fn set_workspace(path: Option<&Path>) {
    let names = path.filter(|p| p.is_absolute()).and_then(|p| {
        p.components()
            .filter(|c| *c != Component::RootDir)
            .map(|c| match c {
                Component::Normal(n) => n.to_str().map(str::to_string),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()
    });
    WORKSPACE.set(names);
}

/// Where the path `word` leads from `cwd`.
pub(super) fn resolve(word: &str, cwd: &Place) -> Place {
    let var = |names: &[&str]| {
        names.iter().find_map(|h| {
            word.strip_prefix(h)
                .filter(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    };
    let (from, rest) = if let Some(rest) = word.strip_prefix('/') {
        (Place::Root(Vec::new()), rest)
    } else if let Some(rest) = var(&["$HOME", "${HOME}"]) {
        (Place::home(None), rest)
    } else if let Some(rest) = var(&["$PWD", "${PWD}"]) {
        // The shell's working folder: where the words' `cd`s left it.
        (cwd.clone(), rest)
    } else if let Some(after) = word.strip_prefix('~') {
        let (user, rest) = after.split_once('/').unwrap_or((after, ""));
        match user {
            "" => (Place::home(None), rest),
            // `~+` is the working folder, `~-` the one before.
            "+" => (cwd.clone(), rest),
            "-" => return Place::Unknown,
            u => (Place::home(Some(u)), rest),
        }
    } else if word.starts_with('$') || word.starts_with(PROCESS_SUBSTITUTION) {
        return Place::Unknown;
    } else {
        (cwd.clone(), word)
    };
    let names: Vec<&str> = rest.split('/').collect();
    let mut place = from;
    for (i, name) in names.iter().enumerate() {
        // A last name that matches every entry (`*`, `.*`) reaches the folder's whole content:
        // for a delete, the folder itself.
        if i + 1 == names.len() && matches_every_entry(name) {
            break;
        }
        place = place.join(name);
    }
    place
}

/// A glob that matches every name in a folder (`*`, `.*`, `?*`, `.[!.]*`): with the glob
/// characters and bracket expressions taken out, at most dots are left.
pub(super) fn matches_every_entry(name: &str) -> bool {
    let mut rest = String::new();
    let mut in_bracket = false;
    let mut any_glob = false;
    for c in name.chars() {
        match c {
            '[' if !in_bracket => {
                in_bracket = true;
                any_glob = true;
            }
            ']' if in_bracket => in_bracket = false,
            '*' | '?' if !in_bracket => any_glob = true,
            _ if in_bracket => {}
            c => rest.push(c),
        }
    }
    any_glob && rest.chars().all(|c| c == '.')
}

/// Top-level folders of the system: deleting one, or all it holds, breaks the machine.
const SYSTEM_FOLDERS: &[&str] = &[
    "root", "home", "usr", "etc", "var", "bin", "boot", "lib", "lib64", "sbin", "opt", "srv",
    "dev", "proc", "sys",
];

/// `/`, a home folder (the user's, another's, or `/home/NAME`), a folder above one, or a
/// top-level system folder. A top-level name the words do not fix (`/u*`, `/$X`) may be any of
/// them. The workspace's own `.` or `*` are not the machine.
pub(super) fn is_protected(p: &Place) -> bool {
    match p {
        Place::Root(names) => match names.as_slice() {
            [] => true,
            [top] => SYSTEM_FOLDERS.contains(&top.as_str()) || top.contains(['*', '?', '[', '$']),
            [first, _] => first == "home",
            _ => false,
        },
        Place::Home { up, names, .. } => names.len() <= *up,
        Place::Workspace(_) | Place::Unknown => false,
    }
}

/// System folders whose files the machine runs on (`/etc/passwd`, `/usr/bin/env`).
const SYSTEM_FILE_FOLDERS: &[&str] = &["etc", "usr", "bin", "sbin", "lib", "lib64", "boot"];
/// Folders of a home whose files are keys and trust.
const HOME_KEY_FOLDERS: &[&str] = &[".ssh", ".gnupg"];

/// A file whose contents the machine or the user's login depends on: one directly in `/` or a
/// home folder (`~/.bashrc`, `/home/bob/.profile`), in `~/.ssh` or `~/.gnupg`, or anywhere in
/// a system folder that holds programs or configuration; or a protected folder itself.
pub(super) fn is_protected_file(p: &Place) -> bool {
    if is_protected(p) {
        return true;
    }
    let in_home = |names: &[String]| match names {
        [_] => true,
        [folder, _] => HOME_KEY_FOLDERS.contains(&folder.as_str()),
        _ => false,
    };
    match p {
        Place::Root(names) => match names.as_slice() {
            [_] => true,
            [first, _, rest @ ..] if first == "home" => in_home(rest),
            [first, rest @ ..] if first == "root" => in_home(rest),
            [top, ..] => SYSTEM_FILE_FOLDERS.contains(&top.as_str()),
            [] => false,
        },
        Place::Home { up: 0, names, .. } => in_home(names),
        Place::Home { .. } | Place::Workspace(_) | Place::Unknown => false,
    }
}

/// `word` as a reason names it: with the folder a `cd` moved to, when it is relative to that.
pub(super) fn shown(word: &str, cwd: &Place) -> String {
    let relative = !(word.starts_with('/') || word.starts_with('~') || word.starts_with('$'));
    match cwd {
        Place::Root(_) | Place::Home { .. } if relative => format!("{word} in {cwd}"),
        _ => word.to_string(),
    }
}

/// Where `cmd` moves the commands after it when it is a `cd` (or `pushd`, `popd`).
pub(super) fn moves_to(cmd: &SimpleCommand, cwd: &Place) -> Option<Place> {
    let (name, args) = program(&cmd.words)?;
    if name == "popd" {
        return Some(Place::Unknown);
    }
    if name != "cd" && name != "pushd" {
        return None;
    }
    let mut dir = None;
    let mut options_done = false;
    for a in &args {
        if !options_done && *a == "--" {
            options_done = true;
        } else if !options_done
            && a.len() > 1
            && a.starts_with('-')
            && !a[1..].starts_with(|c: char| c.is_ascii_digit())
        {
            // `-L`, `-P`, `-e`, `-@`, pushd's `-n`.
        } else {
            dir = Some(*a);
            break;
        }
    }
    Some(match dir {
        None if name == "cd" => Place::home(None),
        // `pushd` alone swaps the top two folders of its stack, `cd -` goes back: unknown here.
        None | Some("-") => Place::Unknown,
        Some(d) if name == "pushd" && (d.starts_with('+') || d.starts_with('-')) => Place::Unknown,
        Some(d) => resolve(d, cwd),
    })
}
