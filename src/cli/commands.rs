//! `hx commands`: the command files `/NAME` runs in `hx chat` and `hx agent`, without an API
//! key.

use std::path::Path;

use super::agents::shown;
use super::{exit, fail, CommandsArgs, CommandsCommand};
use crate::commands::{self, Command};
use crate::term::{one_line, Term};
use crate::text::Warning;

pub(super) fn commands_command(args: CommandsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let home = crate::paths::home_dir();
    // Command files come from repositories: everything printed goes through `Term`, which
    // shows their control characters instead of sending them to a terminal.
    let term = Term::detect();
    let d = commands::discover(&cwd, home.as_deref());
    for w in &d.warnings {
        term.line(&Warning::new(w).to_string());
    }
    match args.command {
        CommandsCommand::List { json } => list(&term, &cwd, &d, json),
        CommandsCommand::Show { name } => show(&term, &cwd, &d, &name),
    }
}

fn tools_of(c: &Command) -> String {
    match &c.tools {
        None => "(every tool)".to_string(),
        Some(t) if t.is_empty() => "(none)".to_string(),
        Some(t) => t.join(","),
    }
}

fn model_of(c: &Command) -> &str {
    c.model.as_deref().unwrap_or("(configured)")
}

fn list(term: &Term, cwd: &Path, d: &commands::Discovery, json: bool) -> i32 {
    if json {
        let value = serde_json::json!({ "commands": d.commands, "not_read": d.broken });
        return match serde_json::to_string_pretty(&value) {
            Ok(text) => {
                term.out_line(&text);
                exit::ANSWERED
            }
            Err(e) => fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        };
    }
    if d.commands.is_empty() && d.broken.is_empty() {
        term.line(
            "hx: no command files found (looked in .agents/commands and .claude/commands of the \
             nearest folder at or above this one that has either, and in ~/.agents/commands and \
             ~/.claude/commands)",
        );
        return exit::ANSWERED;
    }
    let mut rows: Vec<[String; 7]> = d
        .commands
        .iter()
        .map(|c| {
            [
                format!("/{}", c.name),
                c.source.as_str().to_string(),
                c.argument_hint.clone().unwrap_or_default(),
                model_of(c).to_string(),
                tools_of(c),
                shown(&c.path, cwd),
                match c.notes.len() {
                    0 => "ok".to_string(),
                    n => crate::text::count(n as u64, "note"),
                },
            ]
        })
        .collect();
    rows.extend(d.broken.iter().map(|b| {
        [
            "-".to_string(),
            b.source.as_str().to_string(),
            String::new(),
            "-".to_string(),
            "-".to_string(),
            shown(&b.path, cwd),
            format!("not read: {}", b.reason),
        ]
    }));
    let w = |i: usize, min: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
            .max(min)
    };
    let (w0, w1, w2, w3, w4, w5) = (w(0, 4), w(1, 6), w(2, 4), w(3, 5), w(4, 5), w(5, 4));
    term.out_line(&format!(
        "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {:w4$}  {:w5$}  CHECK",
        "NAME", "SOURCE", "ARGS", "MODEL", "TOOLS", "PATH"
    ));
    for [name, source, hint, model, tools, path, check] in rows {
        term.out_line(&format!(
            "{name:w0$}  {source:w1$}  {hint:w2$}  {model:w3$}  {tools:w4$}  {path:w5$}  {}",
            one_line(&check, 200)
        ));
    }
    if d.commands.iter().any(|c| !c.notes.is_empty()) {
        term.line("hx: hx commands show NAME says what each note is");
    }
    exit::ANSWERED
}

fn show(term: &Term, cwd: &Path, d: &commands::Discovery, name: &str) -> i32 {
    let name = name.strip_prefix('/').unwrap_or(name);
    let Some(c) = d.get(name) else {
        let near = commands::near_names(name, d.commands.iter().map(|c| c.name.as_str()), 5);
        let more = if near.is_empty() {
            String::new()
        } else {
            format!("; did you mean {}?", near.join(", "))
        };
        return fail(exit::FAILED, format!("no command is named {name}{more}"));
    };
    let body = match commands::read_body(c) {
        Ok(b) => b,
        Err(e) => return fail(exit::FAILED, e),
    };
    term.out_line(&format!("name: /{}", c.name));
    term.out_line(&format!(
        "source: {} ({})",
        c.source.as_str(),
        shown(&c.path, cwd)
    ));
    term.out_line(&format!("description: {}", c.description));
    if let Some(h) = &c.argument_hint {
        term.out_line(&format!("arguments: {h}"));
    }
    term.out_line(&format!("model: {}", model_of(c)));
    term.out_line(&format!("tools: {}", tools_of(c)));
    let spans = commands::shell_spans(&body);
    for s in &spans {
        let who = match c.source {
            crate::skills::Source::Project => "once the project's commands are trusted",
            crate::skills::Source::User => "always (your own file)",
        };
        term.out_line(&format!("runs: {} ({who})", s.command));
    }
    for n in &c.notes {
        term.out_line(&format!("note: {n}"));
    }
    term.out_line("");
    term.out_line("Its body ($ARGUMENTS and $1..$9 are the words after the name):");
    term.out_line("");
    term.out_line(&body);
    exit::ANSWERED
}
