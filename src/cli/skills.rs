//! `hx skills`: what the agent's skill catalog holds, without an API key.

use std::path::{Path, PathBuf};

use super::{exit, fail, SkillsArgs, SkillsCommand};
use crate::skills::{self, Severity, SkillRegistry};
use crate::term::{escape_controls, one_line, Term};

pub(super) fn skills_command(args: SkillsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let home = super::home_dir();
    // Skill files come from repositories: everything printed goes through `Term`, which shows
    // their control characters instead of sending them to a terminal.
    let term = Term::detect();
    let discover = || discover(&term, &cwd, home.as_deref());
    match args.command {
        SkillsCommand::List { json } => list(&term, &discover(), &cwd, json),
        SkillsCommand::Show { name } => show(&term, &discover(), &cwd, &name),
        SkillsCommand::Check { path } => check(&term, &cwd, home.as_deref(), path),
    }
}

/// Discovers skills, printing discovery warnings on stderr.
fn discover(term: &Term, cwd: &Path, home: Option<&Path>) -> SkillRegistry {
    let d = skills::discover(cwd, home);
    for w in &d.warnings {
        term.line(&format!("hx: warning: {w}"));
    }
    d.registry
}

/// A path as the user would type it from `cwd`.
fn shown(path: &Path, cwd: &Path) -> String {
    let cwd_real = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    path.strip_prefix(&cwd_real)
        .or_else(|_| path.strip_prefix(cwd))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

fn list(term: &Term, registry: &SkillRegistry, cwd: &Path, json: bool) -> i32 {
    if json {
        // `Skill` serializes as {name, source, path, description}, in that order.
        match serde_json::to_string_pretty(registry.skills()) {
            Ok(text) => term.out_line(&text),
            Err(e) => return fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        }
        return exit::ANSWERED;
    }
    if registry.is_empty() {
        term.line(
            "hx: no skills found (looked in .agents/skills and .claude/skills of the nearest folder \
             at or above this one that has either, and in ~/.agents/skills and ~/.claude/skills)",
        );
        return exit::ANSWERED;
    }
    // Columns are measured as they will be shown: escaped on a terminal.
    let cell = |text: String| match escape_controls(&text) {
        std::borrow::Cow::Owned(escaped) if term.stdout_is_tty() => escaped,
        _ => text,
    };
    let rows: Vec<[String; 4]> = registry
        .skills()
        .iter()
        .map(|s| {
            [
                cell(s.name.clone()),
                s.source.as_str().to_string(),
                cell(shown(&s.path, cwd)),
                cell(s.description.clone()),
            ]
        })
        .collect();
    let w = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (w(0).max(4), w(1).max(6), w(2).max(4));
    // Cut descriptions to the terminal's width; a pipe gets them whole.
    let width = term
        .stdout_is_tty()
        .then(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .flatten();
    let room = width.map(|w| w.saturating_sub(w0 + w1 + w2 + 6).max(20));
    term.out_line(&format!(
        "{:w0$}  {:w1$}  {:w2$}  DESCRIPTION",
        "NAME", "SOURCE", "PATH"
    ));
    for [name, source, path, desc] in rows {
        let desc = match room {
            Some(r) => one_line(&desc, r),
            None => desc,
        };
        term.out_line(&format!("{name:w0$}  {source:w1$}  {path:w2$}  {desc}"));
    }
    exit::ANSWERED
}

fn show(term: &Term, registry: &SkillRegistry, cwd: &Path, name: &str) -> i32 {
    let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    match registry.render(name, &root) {
        Ok(text) => {
            term.out_line(&text);
            exit::ANSWERED
        }
        Err(e) => fail(exit::USAGE, e),
    }
}

fn check(term: &Term, cwd: &Path, home: Option<&Path>, path: Option<PathBuf>) -> i32 {
    let roots = skills::skill_roots(cwd, home);
    let problems = match path {
        Some(p) => skills::check_path(&p, cwd, &roots),
        None if roots.roots.is_empty() && roots.skipped.is_empty() => {
            term.line("hx: no skills roots found; pass a path to check");
            return exit::ANSWERED;
        }
        None => skills::check_roots(&roots),
    };
    let errors = problems
        .iter()
        .filter(|p| p.severity == Severity::Error)
        .count();
    for p in &problems {
        let sev = match p.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        term.out_line(&format!("{}: {sev}: {}", shown(&p.file, cwd), p.message));
    }
    let warnings = problems.len() - errors;
    term.line(&format!(
        "hx: {errors} error{}, {warnings} warning{}",
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    ));
    if errors > 0 {
        exit::FAILED
    } else {
        exit::ANSWERED
    }
}
