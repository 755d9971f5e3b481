//! `hx agent`: parse the flags, show the run (the trace, or `--json`), and hand it to
//! `app::run`; `-o FILE` and the task from words and stdin are this command's own.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{exit, fail, show_failure, AgentArgs};
use crate::app::runtime::Guard;
use crate::app::session::{find_picked, Pick};
use crate::app::{self, run::Task};
use crate::config::{process_env, Config};
use crate::events::{Events, HumanView, JsonView, Verbosity};
use crate::text::Warning;
use crate::tools::workspace::Dir;

pub(super) fn agent_command(args: AgentArgs) -> i32 {
    super::JSON_ERRORS.store(args.json, std::sync::atomic::Ordering::Relaxed);
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut flags = args.run.flags();
    let env = process_env();
    if args.compact && !args.continue_ && args.resume.is_none() {
        return fail(
            exit::USAGE,
            "--compact compacts a recorded session: name it with -c (the newest) or -r ID",
        );
    }
    let pick = Pick::from_flags(args.continue_, args.resume.as_deref());
    let resume = match find_picked(pick, !args.ephemeral, &cwd, &env) {
        Ok(r) => r,
        Err(f) => return show_failure(f),
    };
    if let Some(r) = &resume {
        r.keep_provider(&mut flags);
    }
    // The config's warnings are shown by the views (in `--json`, as items), once they exist;
    // a config that cannot be used is the error, its warnings printed before it.
    let app::config::Loaded {
        config,
        mut warnings,
    } = match app::config::load_for_run(&cwd, &env, &flags) {
        Ok(l) => l,
        Err(f) => return show_failure(f),
    };
    // Resolved before any request: a typo in the path must not cost a run, and nothing the
    // model does can move it.
    let output_file = match args.output_last_message.as_deref().map(open_output_file) {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err(e)) => return fail(exit::USAGE, e),
    };
    // `--compact` has no task: it compacts the session and stops.
    let message = match args.compact {
        true => None,
        false => match read_task(&args.task, !args.no_stdin) {
            Ok((t, notice)) => {
                warnings.extend(notice);
                Some(t)
            }
            Err(e) => return fail(exit::USAGE, e),
        },
    };
    let verbosity = match (args.quiet, args.verbose) {
        (true, _) => Verbosity::Quiet,
        (_, true) => Verbosity::Verbose,
        _ => config.trace.verbosity(),
    };
    let shell_env = config.shell_env.clone();
    let guard = Guard {
        shell_env: &shell_env,
        keep_background: config.keep_background,
    };
    let answered = |text: &str| match &output_file {
        Some(file) => write_last_message(file, text),
        None => Ok(()),
    };
    let json = args.json;
    let ephemeral = args.ephemeral;
    let until = args.until;
    guard
        .run(
            || {},
            || async move {
                // Made on the runtime: a view may start a thread (the spinner's), which must
                // not run before the environment is scrubbed.
                let events = views(&config, json, verbosity);
                let task = Task {
                    config,
                    cwd,
                    env,
                    message,
                    resume,
                    ephemeral,
                    until,
                    warnings,
                };
                app::run::run(task, events, answered).await
            },
        )
        .unwrap_or_else(show_failure)
}

/// Where `-o FILE` goes, fixed before the model runs anything: the folder, held open, and the
/// name in it. Resolved later, a link the model made in the workspace (which its sandbox lets
/// it do) would send hx's own unsandboxed write wherever the model chose.
struct OutputFile {
    /// The path as given, for messages.
    given: PathBuf,
    dir: Dir,
    name: std::ffi::OsString,
}

/// Resolves `-o FILE` as `> FILE` would now: a link to its target (which need not exist yet),
/// a missing folder or a folder given as the file an error.
fn open_output_file(file: &Path) -> Result<OutputFile, String> {
    let what = |why: &str| format!("--output-last-message {}: {why}", file.display());
    let target = match file.symlink_metadata() {
        Ok(m) if m.file_type().is_symlink() => match std::fs::canonicalize(file) {
            Ok(t) => t,
            // A link to a file not there yet: the file it names.
            Err(_) => match std::fs::read_link(file) {
                Ok(t) => file.parent().unwrap_or(Path::new("")).join(t),
                Err(e) => return Err(what(&e.to_string())),
            },
        },
        _ => file.to_path_buf(),
    };
    if target.is_dir() {
        return Err(what("is a folder; give a file path"));
    }
    let (Some(name), dir) = (target.file_name(), target.parent()) else {
        return Err(what("is not a file path"));
    };
    let dir = match dir {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let opened = std::fs::canonicalize(dir).and_then(|real| Dir::open_real(&real));
    let dir = opened.map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory => {
            what(&format!("the folder {} does not exist", dir.display()))
        }
        _ => what(&format!("cannot open the folder {}: {e}", dir.display())),
    })?;
    Ok(OutputFile {
        given: file.to_path_buf(),
        dir,
        name: name.to_os_string(),
    })
}

/// Writes the final answer as stdout would hold it, atomically, in the held folder (see
/// [`Dir::write_atomic`]: an existing file keeps its mode, a new one gets the umask's, and
/// whatever the name holds by then, a link included, is replaced, never followed).
fn write_last_message(out: &OutputFile, answer: &str) -> Result<(), String> {
    let text = if answer.is_empty() {
        String::new()
    } else {
        format!("{}\n", answer.trim_end_matches('\n'))
    };
    out.dir
        .write_atomic(&out.name, text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", out.given.display()))
}

/// How long `hx agent WORDS` waits for a stdin that is not a terminal to start (its first
/// byte, or its end) before going on with the words alone. Under CI and harnesses stdin is
/// often a pipe nobody writes to and nobody closes, and reading it to its end would wait
/// forever; a command piped in starts writing (or ends) well within this. Claude Code waits
/// the same 3 s.
const STDIN_GRACE: Duration = Duration::from_secs(3);

/// Builds the task from the words and, unless `read_stdin` is off, a piped stdin; with the
/// notice to show when a stdin beside words said nothing in time and was left unread.
fn read_task(words: &[String], read_stdin: bool) -> Result<(String, Option<Warning>), String> {
    let words = words.join(" ");
    let mut notice = None;
    let mut stdin_piped = read_stdin && !std::io::stdin().is_terminal();
    // Without words stdin is the task, worth any wait; beside words it is an extra.
    if stdin_piped && !words.trim().is_empty() && !stdin_starts_within(STDIN_GRACE) {
        stdin_piped = false;
        notice = Some(Warning::notice(format!(
            "nothing came on stdin in {} s: the task is the words alone (--no-stdin or \
             < /dev/null skips the wait)",
            STDIN_GRACE.as_secs()
        )));
    }
    let stdin = if stdin_piped {
        let mut buf = Vec::new();
        // Bounded: a task is text for a model, not a data pipe.
        const MAX: u64 = 8 * 1024 * 1024;
        std::io::stdin()
            .take(MAX + 1)
            .read_to_end(&mut buf)
            .map_err(|e| format!("cannot read stdin: {e}"))?;
        if buf.len() as u64 > MAX {
            return Err("stdin is larger than 8 MiB; pass a file path in the task instead".into());
        }
        String::from_utf8(buf).map_err(|_| "stdin is not valid UTF-8 text".to_string())?
    } else {
        String::new()
    };
    let task =
        match (words.trim().is_empty(), stdin.trim().is_empty()) {
            (false, false) => format!(
                "{}\n\n<stdin>\n{}\n</stdin>",
                words.trim(),
                stdin.trim_end()
            ),
            (false, true) => words.trim().to_string(),
            (true, false) => stdin.trim().to_string(),
            (true, true) if !read_stdin => return Err(
                "no task given: pass it as words (hx agent \"fix the failing test\"); --no-stdin \
                 leaves stdin unread"
                    .into(),
            ),
            (true, true) => return Err(
                "no task given: pass it as words (hx agent \"fix the failing test\") or on stdin"
                    .into(),
            ),
        };
    Ok((task, notice))
}

/// Whether stdin has something for a read within `wait`: data, or its end (a closed pipe,
/// `/dev/null`, a file). poll(2) rather than a reading thread, which could not be cancelled
/// once the wait is over and would go on holding the unread pipe.
fn stdin_starts_within(wait: Duration) -> bool {
    let deadline = Instant::now() + wait;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let mut fd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one pollfd we own, for a descriptor poll only looks at.
        let ready = unsafe { libc::poll(&mut fd, 1, ms) };
        if ready >= 0 {
            // Any event counts (POLLHUP at the end, POLLNVAL for a closed descriptor): the
            // read that follows answers at once and says what it found.
            return ready > 0;
        }
        if std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            // poll itself failed: read as before, which reports what is wrong.
            return true;
        }
    }
}

/// The views of this run, as one stream of events: the trace and answer for a person, or
/// JSON Lines for a program.
fn views(config: &Config, json: bool, verbosity: Verbosity) -> Events {
    let term = super::shared_term();
    if json {
        Events::new(Arc::new(JsonView::stdout(term)))
    } else {
        Events::new(Arc::new(HumanView::new(
            term,
            config.show_reasoning,
            verbosity,
        )))
    }
}
