//! What a shell is given to run, where the command line holds it as plain text. What it does
//! not read, and why, is in the guard's module doc.

use super::{program, MAX_PIPE_HOPS};
use crate::hooks::shell_words::{Input, SimpleCommand, PROCESS_SUBSTITUTION, SUBSTITUTION};

/// Programs whose output is a download.
const DOWNLOADERS: &[&str] = &["curl", "wget"];

/// What a shell is given to run.
pub(super) enum Script {
    Text(String),
    /// The output of this download program.
    Download(String),
    /// Read from a file or built at run time.
    Unknown,
}

/// The script that `name` (a shell, `eval`, `source` or `.`) runs.
pub(super) fn script_of(
    name: &str,
    args: &[&str],
    cmd: &SimpleCommand,
    all: &[SimpleCommand],
) -> Script {
    if name == "eval" {
        let script = args.join(" ");
        return if script.trim() == SUBSTITUTION {
            substituted(cmd, all)
        } else {
            Script::Text(script)
        };
    }
    let ShellOptions {
        dash_c,
        dash_s,
        operand,
    } = if matches!(name, "source" | ".") {
        ShellOptions {
            operand: args.first().copied(),
            ..ShellOptions::default()
        }
    } else {
        shell_options(args)
    };
    match operand {
        Some(s) if dash_c && s.trim() == SUBSTITUTION => substituted(cmd, all),
        Some(s) if dash_c => Script::Text(s.to_string()),
        // `bash -c` alone is an error: nothing runs.
        None if dash_c => Script::Unknown,
        Some(PROCESS_SUBSTITUTION) if !dash_s => substituted(cmd, all),
        Some("/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0") => stdin_script(cmd, all),
        // A script file: stdin is its data.
        Some(_) if !dash_s => Script::Unknown,
        _ => stdin_script(cmd, all),
    }
}

/// What a shell's arguments say of where its script comes from.
#[derive(Default)]
struct ShellOptions<'a> {
    /// `-c`: the operand is the script.
    dash_c: bool,
    /// `-s`: the script is read on stdin, the operands are its arguments.
    dash_s: bool,
    /// The first operand: the `-c` script, or the script file.
    operand: Option<&'a str>,
}

/// A shell's options (see [`ShellOptions`]).
fn shell_options<'a>(args: &[&'a str]) -> ShellOptions<'a> {
    let (mut dash_c, mut dash_s) = (false, false);
    let mut it = args.iter();
    let done = |dash_c, dash_s, operand| ShellOptions {
        dash_c,
        dash_s,
        operand,
    };
    while let Some(a) = it.next() {
        if *a == "--" || *a == "-" {
            return done(dash_c, dash_s, it.next().copied());
        }
        if let Some(long) = a.strip_prefix("--") {
            if matches!(long, "rcfile" | "init-file") {
                it.next();
            }
        } else if (a.starts_with('-') || a.starts_with('+')) && a.len() > 1 {
            for c in a.chars().skip(1) {
                match c {
                    'c' => dash_c = true,
                    's' => dash_s = true,
                    // `-o pipefail`, `-O extglob`: the option name is the next word.
                    'o' | 'O' => {
                        it.next();
                    }
                    _ => {}
                }
            }
        } else {
            return done(dash_c, dash_s, Some(a));
        }
    }
    done(dash_c, dash_s, None)
}

/// The script a command reads on stdin.
pub(super) fn stdin_script(cmd: &SimpleCommand, all: &[SimpleCommand]) -> Script {
    match &cmd.stdin {
        Input::Text(t) => Script::Text(t.clone()),
        Input::Pipe(i) => all
            .get(*i)
            .map_or(Script::Unknown, |p| output_of(p, all, MAX_PIPE_HOPS)),
        Input::Inherited | Input::File(_) | Input::Unknown => Script::Unknown,
    }
}

/// What a command substitution that is a whole script prints: the output of its last command
/// when that is a literal, or a download when any command in it downloads.
fn substituted(cmd: &SimpleCommand, all: &[SimpleCommand]) -> Script {
    let inside = || {
        cmd.substitutions
            .iter()
            .flat_map(|r| all.get(r.clone()))
            .flatten()
    };
    if let Some(d) =
        inside().find_map(|c| program(&c.words).filter(|(n, _)| DOWNLOADERS.contains(n)))
    {
        return Script::Download(d.0.to_string());
    }
    match cmd.substitutions.as_slice() {
        [only] if !only.is_empty() => all
            .get(only.end - 1)
            .map_or(Script::Unknown, |last| output_of(last, all, MAX_PIPE_HOPS)),
        _ => Script::Unknown,
    }
}

/// What `producer` prints, when the command line holds it as plain text: `echo` prints its
/// arguments, `cat` and `tee` their input; a download anywhere up the pipe makes the whole a
/// download. Any other program (`printf` included) prints what the guard does not read.
pub(super) fn output_of(producer: &SimpleCommand, all: &[SimpleCommand], hops: usize) -> Script {
    let upstream = || match &producer.stdin {
        Input::Pipe(i) if hops > 0 => all
            .get(*i)
            .map_or(Script::Unknown, |p| output_of(p, all, hops - 1)),
        Input::Text(t) => Script::Text(t.clone()),
        _ => Script::Unknown,
    };
    let Some((name, args)) = program(&producer.words) else {
        return Script::Unknown;
    };
    match name {
        "echo" => echo_output(&args).map_or(Script::Unknown, Script::Text),
        n if DOWNLOADERS.contains(&n) => Script::Download(n.to_string()),
        "tee" => upstream(),
        // `cat FILE` prints a file; without one (or with `-`) it prints its input.
        "cat" if args.iter().all(|a| a.starts_with('-')) => upstream(),
        _ => match upstream() {
            d @ Script::Download(_) => d,
            _ => Script::Unknown,
        },
    }
}

/// What `echo ARGS` prints, when no word holds a backslash: then every echo (`sh`'s, bash's,
/// with `-e` or without) prints the words as written. With one, what it prints depends on which
/// echo runs and is not read (see the module doc).
pub(super) fn echo_output(args: &[&str]) -> Option<String> {
    let first = args
        .iter()
        .position(|a| {
            !(a.len() > 1 && a.starts_with('-') && a[1..].chars().all(|c| "neE".contains(c)))
        })
        .unwrap_or(args.len());
    let words = &args[first..];
    (!words.iter().any(|w| w.contains('\\'))).then(|| words.join(" ") + "\n")
}
