//! `find`: the commands it runs, and a sweep of a protected folder.

use super::paths::{is_protected, matches_every_entry, resolve, shown, Place};
use super::{check_simple, program};
use crate::hooks::shell_words::SimpleCommand;

/// `find`: the commands it runs, and a sweep that deletes (or re-owns) everything below `/`, a
/// home folder or a system folder (`find / -delete`, `find ~ -exec rm -rf {} +`).
pub(super) fn check_find(
    args: &[&str],
    all: &[SimpleCommand],
    depth: usize,
    cwd: &Place,
) -> Option<String> {
    let (starts, expr) = find_parts(args);
    let runs = find_exec(expr);
    for (c, in_found_dir) in &runs {
        // `-execdir` runs in the folder of each file found.
        let at = if *in_found_dir { &Place::Unknown } else { cwd };
        if let Some(why) = check_simple(c, all, depth, at) {
            return Some(why);
        }
    }
    if picks_by_name(expr) {
        return None;
    }
    let start = starts.iter().find(|s| is_protected(&resolve(s, cwd)))?;
    let start = shown(start, cwd);
    if expr.contains(&"-delete") {
        return Some(format!("recursive delete of {start} (find -delete)"));
    }
    runs.iter().find_map(|(c, _)| {
        let (name, _) = program(&c.words)?;
        match name {
            "rm" | "unlink" | "shred" => {
                Some(format!("recursive delete of {start} (find -exec {name})"))
            }
            "chmod" | "chown" | "chgrp" => {
                Some(format!("recursive {name} of {start} (find -exec {name})"))
            }
            _ => None,
        }
    })
}

/// `find`'s start points (`.` when it names none) and its expression.
pub(super) fn find_parts<'a, 'b>(args: &'b [&'a str]) -> (Vec<&'a str>, &'b [&'a str]) {
    let mut i = 0;
    // Options before the start points: `-H`, `-L`, `-P`, `-D DEBUGOPTS`, `-O3`.
    while let Some(a) = args.get(i) {
        match *a {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            a if a.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let first = i.min(args.len());
    let end = args[first..]
        .iter()
        .position(|a| a.len() > 1 && a.starts_with('-') || matches!(*a, "(" | "!" | ","))
        .map_or(args.len(), |p| first + p);
    let mut starts = args[first..end].to_vec();
    if starts.is_empty() {
        starts.push(".");
    }
    (starts, &args[end..])
}

/// `find`'s tests of a file's name or path.
const NAME_TESTS: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-regex",
    "-iregex",
    "-lname",
    "-ilname",
    "-samefile",
    "-inum",
];

/// Whether a `find` expression picks files by name or path (`-name '*.o'`), so that it does
/// not reach everything below its start points. A pattern that matches every name picks
/// nothing out, and `-o`, `!` or `,` could undo any pick.
pub(super) fn picks_by_name(expr: &[&str]) -> bool {
    if expr
        .iter()
        .any(|a| matches!(*a, "-o" | "-or" | "!" | "-not" | ","))
    {
        return false;
    }
    expr.windows(2)
        .any(|w| NAME_TESTS.contains(&w[0]) && !matches_every_name(w[1]))
}

/// A glob or regular expression that matches every name.
pub(super) fn matches_every_name(pattern: &str) -> bool {
    pattern.is_empty()
        || matches_every_entry(pattern)
        || matches!(pattern, ".*" | ".+" | "^.*" | "^.*$" | ".*$")
}

/// The commands `find` runs for what it finds (`-exec CMD {} ;`, `-execdir`, `-ok`, `-okdir`),
/// each with whether it runs in the folder of the file found.
fn find_exec(args: &[&str]) -> Vec<(SimpleCommand, bool)> {
    let mut found = Vec::new();
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if matches!(*a, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let words = args
                .by_ref()
                .take_while(|w| !matches!(**w, ";" | "+"))
                .map(|w| w.to_string())
                .collect();
            let command = SimpleCommand {
                words,
                ..SimpleCommand::default()
            };
            found.push((command, a.ends_with("dir")));
        }
    }
    found
}
