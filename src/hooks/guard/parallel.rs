//! GNU `parallel`: the command lines it makes from its arguments (`::: WORDS`) or its input.

use super::paths::Place;
use super::{check_script, input_words, MAX_NESTING, MAX_XARGS_COMMANDS, XARGS_COMMANDS};
use crate::hooks::shell_words::SimpleCommand;

/// `parallel`'s options that take the next word as their value.
const VALUES: &[&str] = &[
    "-j",
    "-P",
    "--jobs",
    "-S",
    "--sshlogin",
    "-I",
    "--colsep",
    "-C",
    "-d",
    "--delimiter",
    "-E",
    "-n",
    "-N",
    "-L",
    "-l",
    "--tmpdir",
    "--results",
    "--joblog",
    "--delay",
    "--timeout",
    "--retries",
    "--halt",
    "--memfree",
    "--load",
    "--tagstring",
    "--workdir",
    "--wd",
];

/// Separators before `parallel`'s argument words; `::::` names files of arguments instead.
const LITERAL_ARGS: &[&str] = &[":::", ":::+"];
const FILE_ARGS: &[&str] = &["::::", "::::+"];

/// `parallel CMD ::: ARGS` runs, through a shell, `CMD` with each argument put in for `{}` (or
/// after it); without `:::` the arguments are the lines of its input, as for `xargs`. Each
/// line it makes is checked as a script; a file of arguments (`-a`, `::::`) is not read.
pub(super) fn check_parallel(
    args: &[&str],
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
    depth: usize,
    cwd: &Place,
) -> Option<String> {
    if depth >= MAX_NESTING {
        return None;
    }
    let mut replace = "{}";
    let mut i = 0;
    while let Some(&a) = args.get(i) {
        if a == "--" {
            i += 1;
            break;
        }
        if !(a.starts_with('-') && a.len() > 1) {
            break;
        }
        if a == "-a" || a.starts_with("--arg-file") || a == "--workdir" || a == "--wd" {
            // Arguments from a file, or a folder the guard does not follow: not read.
            return None;
        }
        if a == "-I" {
            replace = args.get(i + 1).copied().unwrap_or(replace);
        }
        i += if VALUES.contains(&a) { 2 } else { 1 };
    }
    let rest = args.get(i..).unwrap_or_default();
    let sep = rest
        .iter()
        .position(|a| LITERAL_ARGS.contains(a) || FILE_ARGS.contains(a));
    let command = &rest[..sep.unwrap_or(rest.len())];
    let items: Vec<String> = match sep {
        Some(s) => {
            let mut items = Vec::new();
            let mut literal = false;
            for a in &rest[s..] {
                if LITERAL_ARGS.contains(a) || FILE_ARGS.contains(a) {
                    literal = LITERAL_ARGS.contains(a);
                } else if literal {
                    items.push(a.to_string());
                }
            }
            items
        }
        None => input_words(cmd, all),
    };
    items.iter().find_map(|item| {
        let made = XARGS_COMMANDS.get();
        if made >= MAX_XARGS_COMMANDS {
            return None;
        }
        XARGS_COMMANDS.set(made + 1);
        // No command: each argument is a command line.
        let line = if command.is_empty() {
            item.clone()
        } else if command.iter().any(|w| w.contains(replace)) {
            command.join(" ").replace(replace, item)
        } else {
            format!("{} {item}", command.join(" "))
        };
        check_script(&line, depth + 1, cwd)
    })
}
