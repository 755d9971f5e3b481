//! `hx skills`: what the agent's skill catalog holds, without an API key.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::{exit, fail, SkillsArgs, SkillsCommand};
use crate::skills::{self, Severity, SkillRegistry};
use crate::term::one_line;

pub(super) fn skills_command(args: SkillsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let home = super::home_dir();
    match args.command {
        SkillsCommand::List { json } => list(&discover(&cwd, home.as_deref()), &cwd, json),
        SkillsCommand::Show { name } => show(&discover(&cwd, home.as_deref()), &cwd, &name),
        SkillsCommand::Check { path } => check(&cwd, home.as_deref(), path),
    }
}

/// Discovers skills, printing discovery warnings on stderr.
fn discover(cwd: &Path, home: Option<&Path>) -> SkillRegistry {
    let d = skills::discover(cwd, home);
    for w in &d.warnings {
        eprintln!("hx: warning: {w}");
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

fn list(registry: &SkillRegistry, cwd: &Path, json: bool) -> i32 {
    if json {
        // `Skill` serializes as {name, source, path, description}, in that order.
        match serde_json::to_string_pretty(registry.skills()) {
            Ok(text) => println!("{text}"),
            Err(e) => return fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        }
        return exit::ANSWERED;
    }
    if registry.is_empty() {
        eprintln!(
            "hx: no skills found (looked in .agents/skills and .claude/skills of the nearest folder \
             at or above this one that has either, and in ~/.agents/skills and ~/.claude/skills)"
        );
        return exit::ANSWERED;
    }
    let rows: Vec<[String; 4]> = registry
        .skills()
        .iter()
        .map(|s| {
            [
                s.name.clone(),
                s.source.as_str().to_string(),
                shown(&s.path, cwd),
                s.description.clone(),
            ]
        })
        .collect();
    let w = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2) = (w(0).max(4), w(1).max(6), w(2).max(4));
    // Cut descriptions to the terminal's width; a pipe gets them whole.
    let width = std::io::stdout()
        .is_terminal()
        .then(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .flatten();
    let room = width.map(|w| w.saturating_sub(w0 + w1 + w2 + 6).max(20));
    println!(
        "{:w0$}  {:w1$}  {:w2$}  DESCRIPTION",
        "NAME", "SOURCE", "PATH"
    );
    for [name, source, path, desc] in rows {
        let desc = match room {
            Some(r) => one_line(&desc, r),
            None => desc,
        };
        println!("{name:w0$}  {source:w1$}  {path:w2$}  {desc}");
    }
    exit::ANSWERED
}

fn show(registry: &SkillRegistry, cwd: &Path, name: &str) -> i32 {
    let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    match registry.render(name, &root) {
        Ok(text) => {
            println!("{text}");
            exit::ANSWERED
        }
        Err(e) => fail(exit::USAGE, e),
    }
}

fn check(cwd: &Path, home: Option<&Path>, path: Option<PathBuf>) -> i32 {
    let roots = skills::skill_roots(cwd, home);
    let problems = match path {
        Some(p) => skills::check_path(&p, cwd, &roots),
        None if roots.roots.is_empty() && roots.skipped.is_empty() => {
            eprintln!("hx: no skills roots found; pass a path to check");
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
        println!("{}: {sev}: {}", shown(&p.file, cwd), p.message);
    }
    let warnings = problems.len() - errors;
    eprintln!(
        "hx: {errors} error{}, {warnings} warning{}",
        if errors == 1 { "" } else { "s" },
        if warnings == 1 { "" } else { "s" }
    );
    if errors > 0 {
        exit::FAILED
    } else {
        exit::ANSWERED
    }
}
