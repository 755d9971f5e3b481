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
        // Without the warnings about other skills: they are `list`'s and `check`'s business,
        // and the one about this skill is the error below.
        SkillsCommand::Show { name } => {
            let registry = skills::discover(&cwd, home.as_deref()).registry;
            show(&term, &registry, &cwd, home.as_deref(), &name)
        }
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

/// What `hx skills check` finds wrong with a listed skill's SKILL.md: its errors.
fn check_errors(skill: &skills::Skill) -> Vec<String> {
    skills::check::check(&skill.path)
        .into_iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| p.message)
        .collect()
}

fn list(term: &Term, registry: &SkillRegistry, cwd: &Path, json: bool) -> i32 {
    // The same verdict `hx skills check` gives: a listing that calls a skill fine while the
    // check fails it would leave the user guessing which to believe.
    let errors: Vec<Vec<String>> = registry.skills().iter().map(check_errors).collect();
    if json {
        // `Skill` serializes as {name, source, path, description}, in that order; `errors`
        // follows, empty for a valid skill.
        let rows: Result<Vec<serde_json::Value>, _> = registry
            .skills()
            .iter()
            .zip(&errors)
            .map(|(s, e)| {
                let mut row = serde_json::to_value(s)?;
                if let Some(obj) = row.as_object_mut() {
                    obj.insert("errors".into(), e.clone().into());
                }
                Ok::<_, serde_json::Error>(row)
            })
            .collect();
        match rows.and_then(|r| serde_json::to_string_pretty(&r)) {
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
    let rows: Vec<[String; 5]> = registry
        .skills()
        .iter()
        .zip(&errors)
        .map(|(s, e)| {
            let check = match e.len() {
                0 => "ok".to_string(),
                1 => "1 error".to_string(),
                n => format!("{n} errors"),
            };
            [
                cell(s.name.clone()),
                s.source.as_str().to_string(),
                check,
                cell(shown(&s.path, cwd)),
                cell(s.description.clone()),
            ]
        })
        .collect();
    let w = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (w(0).max(4), w(1).max(6), w(2).max(5), w(3).max(4));
    // Cut descriptions to the terminal's width; a pipe gets them whole.
    let width = term
        .stdout_is_tty()
        .then(|| terminal_size::terminal_size().map(|(w, _)| w.0 as usize))
        .flatten();
    let room = width.map(|w| w.saturating_sub(w0 + w1 + w2 + w3 + 8).max(20));
    term.out_line(&format!(
        "{:w0$}  {:w1$}  {:w2$}  {:w3$}  DESCRIPTION",
        "NAME", "SOURCE", "CHECK", "PATH"
    ));
    for [name, source, check, path, desc] in rows {
        let desc = match room {
            Some(r) => one_line(&desc, r),
            None => desc,
        };
        term.out_line(&format!(
            "{name:w0$}  {source:w1$}  {check:w2$}  {path:w3$}  {desc}"
        ));
    }
    let invalid = errors.iter().filter(|e| !e.is_empty()).count();
    if invalid > 0 {
        term.line(&format!(
            "hx: {invalid} of these skills fail{} the specification; hx skills check says why",
            if invalid == 1 { "s" } else { "" },
        ));
    }
    exit::ANSWERED
}

fn show(term: &Term, registry: &SkillRegistry, cwd: &Path, home: Option<&Path>, name: &str) -> i32 {
    let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    if registry.get(name).is_none() {
        if let Some(why) = not_loaded(registry, cwd, home, name) {
            return fail(exit::FAILED, why);
        }
    }
    match registry.render(name, &root) {
        Ok(text) => {
            term.out_line(&text);
            exit::ANSWERED
        }
        Err(e) => fail(exit::USAGE, e),
    }
}

/// Why no skill is called `name` although a skill folder of that name exists: its SKILL.md
/// did not parse (discovery skipped it), or its frontmatter gives it another name.
fn not_loaded(
    registry: &SkillRegistry,
    cwd: &Path,
    home: Option<&Path>,
    name: &str,
) -> Option<String> {
    let folder_is = |path: &Path| {
        path.parent()
            .and_then(Path::file_name)
            .is_some_and(|f| f == name)
    };
    if let Some(other) = registry.skills().iter().find(|s| folder_is(&s.path)) {
        return Some(format!(
            "no skill is named {name}: the skill in {} is named {}; hx skills show {} shows it",
            shown(&other.path, cwd),
            other.name,
            other.name
        ));
    }
    let roots = skills::skill_roots(cwd, home);
    roots.roots.iter().find_map(|root| {
        let walked = skills::discover::find_skill_files(root);
        walked
            .files
            .iter()
            .find(|f| folder_is(&f.path))
            .and_then(|f| {
                let folder = f.path.parent()?;
                let reason = skills::discover::read_skill(&f.path, folder, root.source).err()?;
                let path = shown(&f.path, cwd);
                Some(format!(
                    "skill {name} is not loaded: {path}: {reason}; hx skills check {path} lists \
                 every problem"
                ))
            })
    })
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
