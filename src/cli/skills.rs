//! `hx skills`: what the agent's skill catalog holds, without an API key.

use std::path::{Path, PathBuf};

use super::{exit, fail, SkillsArgs, SkillsCommand};
use crate::paths::shown_from;
use crate::skills::{self, Severity, SkillRegistry};
use crate::term::{escape_controls, one_line, Term};
use crate::text::Warning;

pub(super) fn skills_command(args: SkillsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let home = crate::paths::home_dir();
    // Skill files come from repositories: everything printed goes through `Term`, which shows
    // their control characters instead of sending them to a terminal.
    let term = Term::detect();
    match args.command {
        SkillsCommand::List { json } => {
            let d = skills::discover(&cwd, home.as_deref());
            // A file that did not parse is a row of the listing, not a warning as well.
            let rows: Vec<String> = d.broken.iter().map(skills::Broken::warning).collect();
            for w in d.warnings.iter().filter(|w| !rows.contains(w)) {
                term.line(&Warning::new(w).to_string());
            }
            list(&term, &d, &cwd, json)
        }
        // Without the warnings about other skills: they are `list`'s and `check`'s business,
        // and the one about this skill is the error below.
        SkillsCommand::Show { name } => {
            let registry = skills::discover(&cwd, home.as_deref()).registry;
            show(&term, &registry, &cwd, home.as_deref(), &name)
        }
        SkillsCommand::Check { path } => check(&term, &cwd, home.as_deref(), path),
        SkillsCommand::Eval(args) => super::skills_eval::eval_command(args),
    }
}

/// What `hx skills check` finds wrong with a SKILL.md: its errors.
fn check_errors(path: &Path) -> Vec<String> {
    skills::check::check(path)
        .into_iter()
        .filter(|p| p.severity == Severity::Error)
        .map(|p| p.message)
        .collect()
}

/// One row of `hx skills list`: a skill, or a skill folder whose SKILL.md did not parse.
struct Row<'a> {
    name: String,
    source: skills::Source,
    path: &'a Path,
    description: Option<&'a str>,
    /// `check`'s errors, in its words.
    errors: Vec<String>,
    loaded: bool,
}

fn rows<'a>(d: &'a skills::Discovery) -> Vec<Row<'a>> {
    // The same verdict `hx skills check` gives: a listing that calls a skill fine while the
    // check fails it would leave the user guessing which to believe.
    let loaded = d.registry.skills().iter().map(|s| Row {
        name: s.name.clone(),
        source: s.source,
        path: &s.path,
        description: Some(&s.description),
        errors: check_errors(&s.path),
        loaded: true,
    });
    let broken = d.broken.iter().map(|b| {
        let mut errors = check_errors(&b.path);
        if errors.is_empty() {
            errors.push(b.reason.clone());
        }
        Row {
            // The folder's name: the file gave none that could be read.
            name: b
                .path
                .parent()
                .and_then(Path::file_name)
                .map_or_else(|| "?".into(), |n| n.to_string_lossy().into_owned()),
            source: b.source,
            path: &b.path,
            description: None,
            errors,
            loaded: false,
        }
    });
    let mut rows: Vec<Row> = loaded.chain(broken).collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name).then_with(|| a.path.cmp(b.path)));
    rows
}

fn list(term: &Term, d: &skills::Discovery, cwd: &Path, json: bool) -> i32 {
    let rows = rows(d);
    if json {
        let rows: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "name": r.name,
                    "source": r.source,
                    "path": r.path.to_string_lossy(),
                    "description": r.description,
                    "errors": r.errors,
                    "loaded": r.loaded,
                })
            })
            .collect();
        match serde_json::to_string_pretty(&rows) {
            Ok(text) => term.out_line(&text),
            Err(e) => return fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        }
        return exit::ANSWERED;
    }
    if rows.is_empty() {
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
    let cells: Vec<[String; 5]> = rows
        .iter()
        .map(|r| {
            let check = match (r.loaded, r.errors.len()) {
                (false, _) => "not loaded".to_string(),
                (true, 0) => "ok".to_string(),
                (true, 1) => "1 error".to_string(),
                (true, n) => format!("{n} errors"),
            };
            let desc = match r.description {
                Some(d) => d.to_string(),
                None => r.errors.first().cloned().unwrap_or_default(),
            };
            [
                cell(r.name.clone()),
                r.source.as_str().to_string(),
                check,
                cell(shown_from(r.path, cwd)),
                cell(desc),
            ]
        })
        .collect();
    let w = |i: usize| {
        cells
            .iter()
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    };
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
    for [name, source, check, path, desc] in cells {
        let desc = match room {
            Some(r) => one_line(&desc, r),
            None => desc,
        };
        term.out_line(&format!(
            "{name:w0$}  {source:w1$}  {check:w2$}  {path:w3$}  {desc}"
        ));
    }
    let invalid = rows.iter().filter(|r| !r.errors.is_empty()).count();
    let unloaded = rows.iter().filter(|r| !r.loaded).count();
    if invalid > 0 {
        let not_loaded = match unloaded {
            0 => String::new(),
            n => format!(
                " ({n} not loaded: the agent cannot use {})",
                if n == 1 { "it" } else { "them" }
            ),
        };
        term.line(&format!(
            "hx: {invalid} of these skills fail{} the specification{not_loaded}; hx skills check \
             says why",
            if invalid == 1 { "s" } else { "" },
        ));
    }
    exit::ANSWERED
}

fn show(term: &Term, registry: &SkillRegistry, cwd: &Path, home: Option<&Path>, name: &str) -> i32 {
    let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    if registry.get(name).is_none() {
        if let Some(why) = skills::discover::not_loaded(registry, cwd, home, name) {
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
        term.out_line(&format!(
            "{}: {sev}: {}",
            shown_from(&p.file, cwd),
            p.message
        ));
    }
    let warnings = problems.len() - errors;
    term.line(&format!(
        "hx: {}, {}",
        crate::text::count(errors as u64, "error"),
        crate::text::count(warnings as u64, "warning")
    ));
    if errors > 0 {
        exit::FAILED
    } else {
        exit::ANSWERED
    }
}
