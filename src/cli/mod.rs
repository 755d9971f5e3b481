//! The commands: dispatch to each, and how they print (the terminal, `fail`). What they
//! parse is `args`; what they run is `crate::app`.

/// `println!` for the commands: through the process's [`Term`](crate::term::Term), so a closed
/// pipe (`hx sessions list | head -1`) loses the line instead of panicking, and outside text
/// is escaped on a terminal.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::cli::out_line(&format!($($arg)*)) };
}

/// `eprintln!` for the commands, likewise: control characters always shown, never obeyed.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::err_line(&format!($($arg)*)) };
}

mod acp;
mod agent;
mod agents;
mod args;
mod chat;
mod checkpoints;
mod commands;
mod config;
mod context;
mod export;
mod mcp;
mod models;
mod sandbox;
mod sessions;
mod skills;
mod skills_eval;
mod trust;

pub use crate::app::exit;
pub use args::*;

/// Parses argv and runs the command; returns the process exit code.
pub fn main_with_args() -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Ok((Cli::from_arg_matches(&m)?, chat_option_given(&m))));
    let (cli, chat_options) = match parsed {
        Ok(c) => c,
        Err(e) => {
            if let Some(hint) = task_without_agent(&e) {
                return fail(exit::USAGE, hint);
            }
            // clap prints help and version to stdout with exit 0, errors to stderr with 2.
            let _ = e.print();
            if let Some(choices) = valid_subcommands(&e) {
                errln!("{choices}");
            }
            return if e.use_stderr() {
                exit::USAGE
            } else {
                exit::ANSWERED
            };
        }
    };
    if let Some(dir) = &cli.dir {
        if let Err(e) = std::env::set_current_dir(dir) {
            return fail(exit::USAGE, format!("-C {}: {e}", dir.display()));
        }
    }
    let Some(command) = cli.command else {
        return bare(cli.chat, chat_options.is_some());
    };
    if let Some(option) = chat_options {
        return fail(
            exit::USAGE,
            format!("{option} goes after the command (hx COMMAND {option} ...), or without one for hx chat"),
        );
    }
    match command {
        Command::Agent(args) => agent::agent_command(args),
        Command::Chat(args) => chat::chat_command(args),
        Command::Acp(args) => acp::acp_command(args),
        Command::Agents(args) => agents::agents_command(args),
        Command::Commands(args) => commands::commands_command(args),
        Command::Skills(args) => skills::skills_command(args),
        Command::Sessions(args) => sessions::sessions_command(args),
        Command::Trust(args) => trust_command(args),
        Command::Sandbox(args) => sandbox::sandbox_command(args),
        Command::Context(args) => context::context_command(args),
        Command::Mcp(args) => mcp::mcp_command(args),
        Command::Models(args) => models::models_command(args),
        Command::Config(args) => config::config_command(args),
        Command::Completions { shell } => completions(shell),
        Command::Man { into } => man(into.as_deref()),
        Command::Diff(args) => checkpoints::diff_command(args),
        Command::Rewind(args) => checkpoints::rewind_command(args),
        Command::Checkpoints(args) => checkpoints::checkpoints_command(args),
    }
}

/// The first of the chat's options the command line gave before any command (`hx -c`), as
/// the user would write it; `-C DIR` is not one.
fn chat_option_given(m: &clap::ArgMatches) -> Option<String> {
    use clap::CommandFactory;
    let id = m.ids().find(|id| {
        id.as_str() != "dir"
            && m.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine)
    })?;
    let cmd = Cli::command();
    let arg = cmd.get_arguments().find(|a| a.get_id() == id)?;
    Some(match (arg.get_long(), arg.get_short()) {
        (Some(long), _) => format!("--{long}"),
        (None, Some(short)) => format!("-{short}"),
        (None, None) => id.to_string(),
    })
}

/// `hx fix the bug`: a task given without `agent`. clap would say "unrecognized subcommand";
/// the line says what was probably meant. A word close to a command's name (`hx agnet`) is
/// left to clap, which suggests that command.
fn task_without_agent(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return None;
    }
    let Some(ContextValue::String(word)) = e.get(ContextKind::InvalidSubcommand) else {
        return None;
    };
    // Everything from the unknown word on is the task as the user typed it.
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let from = args.iter().position(|a| a == word)?;
    // `hx sessions rm x` is a mistyped command, not a task: the hint is for a first word
    // only.
    use clap::CommandFactory;
    let cli = Cli::command();
    let before = args.get(1..from).unwrap_or_default();
    if before
        .iter()
        .any(|a| cli.get_subcommands().any(|c| c.get_name() == a))
    {
        return None;
    }
    let task = args[from..].join(" ");
    Some(format!(
        "'{}' is not a command (hx --help lists them); to give hx a task, run: hx agent {}",
        crate::term::escape_line(word),
        crate::term::escape_line(&shell_quote(&task))
    ))
}

/// For a command's unknown subcommand (`hx sessions rm`), the ones it has: clap names only a
/// close one.
fn valid_subcommands(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ErrorKind};
    use clap::CommandFactory;
    if e.kind() != ErrorKind::InvalidSubcommand || e.get(ContextKind::SuggestedSubcommand).is_some()
    {
        return None;
    }
    let mut cmd = Cli::command();
    let mut path = vec!["hx".to_string()];
    for arg in std::env::args().skip(1) {
        match cmd.find_subcommand(&arg) {
            Some(sub) => {
                path.push(arg);
                let sub = sub.clone();
                cmd = sub;
            }
            None if cmd.has_subcommands() && !arg.starts_with('-') => break,
            None => {}
        }
    }
    let names: Vec<&str> = cmd
        .get_subcommands()
        .map(|c| c.get_name())
        .filter(|n| *n != "help")
        .collect();
    (!names.is_empty()).then(|| {
        format!(
            "the commands of {} are: {} (see {} --help)",
            path.join(" "),
            names.join(", "),
            path.join(" ")
        )
    })
}

/// `text` as one shell word: in double quotes when that keeps it as it is, else in single
/// quotes.
fn shell_quote(text: &str) -> String {
    if !text.contains(['"', '$', '`', '\\', '!']) {
        format!("\"{text}\"")
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

/// `hx` without a command: a conversation when a person is at a terminal, else the usage
/// (exit 2). With the chat's options (`hx -c`), always the chat, which says why it cannot
/// start without a terminal.
fn bare(chat: ChatArgs, chat_options: bool) -> i32 {
    use clap::CommandFactory;
    use std::io::{IsTerminal, Write};
    if chat_options || (std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return chat::chat_command(chat);
    }
    let help = Cli::command().render_help();
    let _ = write!(std::io::stderr(), "{help}");
    exit::USAGE
}

fn completions(shell: clap_complete::Shell) -> i32 {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "hx", &mut script);
    out_text(&String::from_utf8_lossy(&script));
    exit::ANSWERED
}

fn man(dir: Option<&std::path::Path>) -> i32 {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let Some(dir) = dir else {
        let mut page = Vec::new();
        if let Err(e) = clap_mangen::Man::new(cmd).render(&mut page) {
            return fail(exit::FAILED, format!("cannot render the manual page: {e}"));
        }
        out_text(&String::from_utf8_lossy(&page));
        return exit::ANSWERED;
    };
    if let Err(e) = std::fs::create_dir_all(dir) {
        return fail(exit::USAGE, format!("{}: {e}", dir.display()));
    }
    match clap_mangen::generate_to(cmd, dir) {
        Ok(()) => {
            outln!("wrote the manual pages into {}", dir.display());
            exit::ANSWERED
        }
        Err(e) => fail(exit::FAILED, format!("{}: {e}", dir.display())),
    }
}

fn trust_command(args: TrustArgs) -> i32 {
    use trust::{run, TrustAction};
    let action = match (args.list, args.revoke) {
        (true, _) => TrustAction::List,
        (_, true) => TrustAction::Revoke,
        _ => TrustAction::Trust { yes: args.yes },
    };
    match current_dir() {
        Ok(cwd) => run(action, &cwd, &crate::config::process_env()),
        Err(code) => code,
    }
}

/// The working directory; when it cannot be read (deleted under us), says so and gives the
/// exit code.
fn current_dir() -> Result<std::path::PathBuf, i32> {
    std::env::current_dir().map_err(|e| {
        fail(
            exit::USAGE,
            format!("cannot read the working directory: {e}"),
        )
    })
}

/// The process's terminal: one, so that a spinner line (see `term::Spinner`) is erased before
/// any other write, whoever makes it.
static TERM: std::sync::OnceLock<std::sync::Arc<crate::term::Term>> = std::sync::OnceLock::new();

/// The terminal the commands print through (see [`outln!`], [`errln!`]).
fn term() -> &'static crate::term::Term {
    TERM.get_or_init(crate::term::Term::detect)
}

/// The same terminal, for the views of a run and for `hx chat`.
fn shared_term() -> std::sync::Arc<crate::term::Term> {
    TERM.get_or_init(crate::term::Term::detect).clone()
}

pub(crate) fn out_line(text: &str) {
    term().out_line(text);
}

/// Text on stdout as it is given (no newline added).
pub(crate) fn out_text(text: &str) {
    term().out_raw(text);
}

pub(crate) fn err_line(text: &str) {
    term().line(text);
}

/// The configuration of a command run in `cwd`, its warnings (an untrusted project file)
/// printed; `Err` is the exit code of a bad configuration, the problem printed.
fn load_config(
    cwd: &std::path::Path,
    env: &crate::config::Env,
    flags: &crate::config::Flags,
) -> Result<crate::config::Config, i32> {
    match crate::app::config::load(cwd, env, flags) {
        Ok(loaded) => {
            for w in loaded.warnings {
                errln!("{w}");
            }
            Ok(loaded.config)
        }
        Err(f) => Err(show_failure(f)),
    }
}

/// Prints a [`Failure`](crate::app::Failure): its warnings, then its line; gives its code.
fn show_failure(f: crate::app::Failure) -> i32 {
    for w in &f.warnings {
        errln!("{w}");
    }
    fail(f.code, f.message)
}

/// Set by `hx agent --json` before anything can fail: a run that cannot start (no key, a bad
/// config, a session not found) is then also an `error` event on stdout, as it is once the
/// view exists, so a program sees every failure the same way.
static JSON_ERRORS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Prints `hx: MSG` on stderr and gives `code`. Messages quote servers, files and paths, so
/// their control characters are made visible. A stderr that cannot be written (a closed
/// terminal, a full disk) loses the line, never the exit code: `eprintln!` would panic.
fn fail(code: i32, msg: impl std::fmt::Display) -> i32 {
    use std::io::Write;
    let msg = msg.to_string();
    if JSON_ERRORS.load(std::sync::atomic::Ordering::Relaxed) {
        let line = serde_json::json!({"type": "error", "message": msg}).to_string();
        // Escaped as the view escapes its events: the message may quote a path or an id.
        let line = crate::events::json::safe_json(&line);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }
    let msg = crate::term::escape_controls(&msg).into_owned();
    let _ = writeln!(std::io::stderr(), "hx: {msg}");
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_help_lists_every_preset_with_its_variables() {
        for p in crate::config::PRESETS {
            let line = AGENT_HELP
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{} ", p.name)))
                .unwrap_or_else(|| panic!("no line for {}", p.name));
            assert!(line.contains(p.base_url), "{line}");
            for var in [p.api_key_env, p.base_url_env].into_iter().flatten() {
                assert!(line.contains(var), "{var} missing from {line}");
            }
        }
    }

    #[test]
    fn a_task_quoted_for_the_shell_stays_one_word() {
        assert_eq!(shell_quote("fix the bug"), "\"fix the bug\"");
        assert_eq!(shell_quote("it's $HOME"), r"'it'\''s $HOME'");
    }
}
