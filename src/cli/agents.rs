//! `hx agents`: the subagent types a run here would offer through `task`, without an API key.

use std::path::{Path, PathBuf};

use super::{exit, fail, AgentsArgs, AgentsCommand};
use crate::agents::{self, Definition};
use crate::skills::walk::walk;
use crate::term::{one_line, Term};
use crate::text::Warning;

pub(super) fn agents_command(args: AgentsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let home = crate::paths::home_dir();
    // Agent files come from repositories: everything printed goes through `Term`, which shows
    // their control characters instead of sending them to a terminal.
    let term = Term::detect();
    match args.command {
        AgentsCommand::List { json } => list(&term, &cwd, home.as_deref(), json),
        AgentsCommand::Show { name } => show(&term, &cwd, home.as_deref(), &name),
        AgentsCommand::Check { path } => check(&term, &cwd, home.as_deref(), path),
    }
}

/// A path as the user would type it from `cwd`.
pub(super) fn shown(path: &Path, cwd: &Path) -> String {
    path.strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// The tools after mapping, as listed.
fn tools_of(def: &Definition) -> String {
    match &def.tools {
        None => "(every subagent tool)".to_string(),
        Some(t) if t.is_empty() => "(none)".to_string(),
        Some(t) => t.join(","),
    }
}

fn model_of(def: &Definition) -> &str {
    def.model.as_deref().unwrap_or("(configured)")
}

fn list(term: &Term, cwd: &Path, home: Option<&Path>, json: bool) -> i32 {
    let d = agents::discover(cwd, home);
    for w in &d.warnings {
        term.line(&Warning::new(w).to_string());
    }
    if json {
        let value = serde_json::json!({ "agents": d.agents, "not_read": d.broken });
        return match serde_json::to_string_pretty(&value) {
            Ok(text) => {
                term.out_line(&text);
                exit::ANSWERED
            }
            Err(e) => fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        };
    }
    if d.agents.is_empty() && d.broken.is_empty() {
        term.line(
            "hx: no agent files found (looked in .agents/agents and .claude/agents of the nearest \
             folder at or above this one that has either, and in ~/.agents/agents and \
             ~/.claude/agents)",
        );
        return exit::ANSWERED;
    }
    let mut rows: Vec<[String; 6]> = d
        .agents
        .iter()
        .map(|a| {
            [
                a.name.clone(),
                a.source.as_str().to_string(),
                tools_of(a),
                model_of(a).to_string(),
                shown(&a.path, cwd),
                match a.notes.len() {
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
    let (w0, w1, w2, w3, w4) = (w(0, 4), w(1, 6), w(2, 5), w(3, 5), w(4, 4));
    term.out_line(&format!(
        "{:w0$}  {:w1$}  {:w2$}  {:w3$}  {:w4$}  CHECK",
        "NAME", "SOURCE", "TOOLS", "MODEL", "PATH"
    ));
    for [name, source, tools, model, path, check] in rows {
        term.out_line(&format!(
            "{name:w0$}  {source:w1$}  {tools:w2$}  {model:w3$}  {path:w4$}  {}",
            one_line(&check, 200)
        ));
    }
    if d.agents.iter().any(|a| !a.notes.is_empty()) {
        term.line("hx: hx agents check says what each note is");
    }
    exit::ANSWERED
}

fn show(term: &Term, cwd: &Path, home: Option<&Path>, name: &str) -> i32 {
    let d = agents::discover(cwd, home);
    let Some(def) = d.get(name) else {
        let known: Vec<&str> = d.agents.iter().map(|a| a.name.as_str()).collect();
        let known = if known.is_empty() {
            "none are defined".to_string()
        } else {
            format!("the defined ones are {}", known.join(", "))
        };
        return fail(exit::FAILED, format!("no agent is named {name}; {known}"));
    };
    let body = match agents::read_body(def) {
        Ok(b) => b,
        Err(e) => return fail(exit::FAILED, e),
    };
    term.out_line(&format!("name: {}", def.name));
    term.out_line(&format!(
        "source: {} ({})",
        def.source.as_str(),
        shown(&def.path, cwd)
    ));
    term.out_line(&format!("description: {}", def.description));
    term.out_line(&format!("tools: {}", tools_of(def)));
    term.out_line(&format!("model: {}", model_of(def)));
    for n in &def.notes {
        term.out_line(&format!("note: {n}"));
    }
    term.out_line("");
    term.out_line("Its system prompt (followed by hx's rules for subagents):");
    term.out_line("");
    term.out_line(&body);
    exit::ANSWERED
}

fn check(term: &Term, cwd: &Path, home: Option<&Path>, path: Option<PathBuf>) -> i32 {
    // (file, is an error, message)
    let mut problems: Vec<(PathBuf, bool, String)> = Vec::new();
    let mut files = 0usize;
    match path {
        Some(p) => {
            let found: Vec<PathBuf> = if p.is_dir() {
                let mut f: Vec<PathBuf> = walk(&p, None, |_, n| agents::is_agent_file(n), |_| true)
                    .files
                    .into_iter()
                    .map(|f| f.path)
                    .collect();
                f.sort();
                f
            } else {
                vec![p]
            };
            for f in found {
                files += 1;
                match agents::read_definition(&f, crate::skills::Source::Project) {
                    Ok(def) => {
                        problems.extend(def.notes.into_iter().map(|n| (f.clone(), false, n)))
                    }
                    Err(e) => problems.push((f, true, e)),
                }
            }
        }
        None => {
            let d = agents::discover(cwd, home);
            if d.agents.is_empty() && d.broken.is_empty() && d.warnings.is_empty() {
                term.line("hx: no agent files found; pass a path to check");
                return exit::ANSWERED;
            }
            files = d.agents.len() + d.broken.len();
            for w in &d.warnings {
                term.line(&Warning::new(w).to_string());
            }
            for a in d.agents {
                problems.extend(a.notes.into_iter().map(|n| (a.path.clone(), false, n)));
            }
            problems.extend(d.broken.into_iter().map(|b| (b.path, true, b.reason)));
        }
    }
    problems.sort_by(|a, b| a.0.cmp(&b.0));
    for (file, error, message) in &problems {
        let sev = if *error { "error" } else { "warning" };
        term.out_line(&format!("{}: {sev}: {message}", shown(file, cwd)));
    }
    let errors = problems.iter().filter(|p| p.1).count();
    let warnings = problems.len() - errors;
    let warned = {
        let mut w: Vec<&PathBuf> = problems.iter().filter(|p| !p.1).map(|p| &p.0).collect();
        w.dedup();
        w.len()
    };
    term.line(&format!(
        "hx: {} read: {} used ({warned} with warnings), {} not ({}, {})",
        crate::text::count(files as u64, "agent file"),
        files - errors,
        errors,
        crate::text::count(errors as u64, "error"),
        crate::text::count(warnings as u64, "warning")
    ));
    if errors > 0 {
        exit::FAILED
    } else {
        exit::ANSWERED
    }
}
