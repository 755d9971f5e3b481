//! `hx skills check`: validates SKILL.md files against the Agent Skills specification
//! (agentskills.io), stricter than discovery, which accepts anything it can make sense of.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::catalog::MAX_DESCRIPTION_CHARS;
use super::discover::{Roots, SkillRoot, Skipped, MAX_NAME_CHARS, SKILL_FILE};
use super::parse::{parse_frontmatter, split_frontmatter, Frontmatter, Yaml};
use super::render::read_skill_file;
use super::walk::{walk, MAX_DIRS};
use super::Source;
use crate::text::cut;

/// The frontmatter keys the specification defines.
pub const KNOWN_KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];
/// Keys Claude Code adds that hx honours: who may invoke a skill (see `skills::Skill`).
pub const INVOCATION_KEYS: [&str; 2] = ["disable-model-invocation", "user-invocable"];
/// Keys Claude Code adds that hx reads: what `/NAME` takes after it, shown in `/help`.
pub const HINT_KEY: &str = "argument-hint";
pub const MAX_COMPATIBILITY_CHARS: usize = 500;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One finding about one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub file: PathBuf,
    pub severity: Severity,
    pub message: String,
}

/// Checks every skill under `path`: a skills root, a skill folder, or a SKILL.md itself.
/// Problems come file by file, files in path order.
pub fn check(path: &Path) -> Vec<Problem> {
    check_within(path, None)
}

/// [`check`], but with `bound` (a project root's real path), a skill folder or SKILL.md whose
/// real path leaves it is reported as an error and not read, as discovery skips it.
pub fn check_within(path: &Path, bound: Option<&Path>) -> Vec<Problem> {
    if !path.is_file() && !path.is_dir() {
        return vec![problem(path, Severity::Error, "no such file or folder")];
    }
    if let Some(bound) = bound {
        match path.canonicalize() {
            Ok(real) if !real.starts_with(bound) => {
                return vec![skipped_problem(&Skipped {
                    path: path.to_path_buf(),
                    target: real,
                    bound: bound.to_path_buf(),
                    is_root: false,
                })];
            }
            _ => {}
        }
    }
    if path.is_file() {
        return check_file(path);
    }
    let walked = walk(path, bound, |_, name| name == SKILL_FILE, |_| true);
    let mut out = Vec::new();
    if walked.truncated {
        out.push(problem(
            path,
            Severity::Warning,
            &format!("stopped looking for skills after {MAX_DIRS} folders"),
        ));
    }
    let more = walked.escapes_total - walked.escapes.len();
    if more > 0 {
        out.push(problem(
            path,
            Severity::Error,
            &format!("{more} more links lead out of it: hx skips them"),
        ));
    }
    if walked.files.is_empty() && walked.escapes.is_empty() {
        out.push(problem(path, Severity::Warning, "no SKILL.md found"));
    }
    let mut found: Vec<(PathBuf, Vec<Problem>)> = walked
        .escapes
        .iter()
        .map(|e| {
            let skipped = Skipped {
                path: e.link.clone(),
                target: e.target.clone(),
                bound: bound.unwrap_or(path).to_path_buf(),
                is_root: false,
            };
            (e.link.clone(), vec![skipped_problem(&skipped)])
        })
        .chain(
            walked
                .files
                .iter()
                .map(|f| (f.path.clone(), check_file(&f.path))),
        )
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    out.extend(found.into_iter().flat_map(|(_, p)| p));
    out
}

/// Checks what `hx skills check` finds without a path: every root, and the project roots
/// that discovery skips.
pub fn check_roots(roots: &Roots) -> Vec<Problem> {
    let mut out: Vec<Problem> = roots.skipped.iter().map(skipped_problem).collect();
    for root in &roots.roots {
        out.extend(check_within(&root.path, root.bound()));
    }
    out
}

/// Checks a path the user named (absolute, or relative to `cwd`, the current folder), holding
/// it to the same rules as discovery when it lies in one of the project's skills roots.
pub fn check_path(path: &Path, cwd: &Path, roots: &Roots) -> Vec<Problem> {
    // How it names a skills root, compared with the root's own path.
    let named = crate::paths::lexical(&cwd.join(path));
    if let Some(skipped) = roots.skipped.iter().find(|s| named.starts_with(&s.path)) {
        return vec![skipped_problem(skipped)];
    }
    let real = cwd.join(path).canonicalize().ok();
    let bound = roots
        .roots
        .iter()
        .filter(|r| r.source == Source::Project)
        .find(|r| {
            named.starts_with(&r.path) || real.as_ref().is_some_and(|p| p.starts_with(&r.real))
        })
        .and_then(SkillRoot::bound);
    check_within(path, bound)
}

/// A skipped root or link as an error: hx will not use what it holds.
pub fn skipped_problem(skipped: &Skipped) -> Problem {
    let what = if skipped.is_root {
        "this skills root"
    } else {
        "it"
    };
    problem(
        &skipped.path,
        Severity::Error,
        &format!("{}: hx skips {what}", skipped.reason()),
    )
}

fn problem(file: &Path, severity: Severity, message: &str) -> Problem {
    Problem {
        file: file.to_path_buf(),
        severity,
        message: message.to_string(),
    }
}

/// Checks one SKILL.md.
pub fn check_file(path: &Path) -> Vec<Problem> {
    let mut out = Vec::new();
    let mut error = |m: String| out.push(problem(path, Severity::Error, &m));
    let text = match read_skill_file(path) {
        Ok(t) => t,
        Err(e) => {
            error(e);
            return out;
        }
    };
    let Some((fm_text, _)) = split_frontmatter(&text) else {
        error(
            "no frontmatter: the file must start with a --- line and the frontmatter end with one"
                .into(),
        );
        return out;
    };
    match parse_frontmatter(fm_text) {
        Ok(fm) => check_fields(path, &fm, &mut out),
        Err(e) => error(format!("frontmatter is not valid YAML: {e}")),
    }
    out
}

fn check_fields(path: &Path, fm: &Frontmatter, out: &mut Vec<Problem>) {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    if fm.recovered {
        warnings.push(
            "frontmatter is not strict YAML: quote values that contain \": \" (hx reads it, other tools may not)"
                .to_string(),
        );
    }
    match required_string(fm, "name") {
        Err(e) => errors.push(e),
        Ok(name) => {
            errors.extend(name_problems(&name));
            let folder = folder_name(path);
            if folder != name {
                errors.push(format!(
                    "name {} does not match its folder name {}",
                    quoted(&name),
                    quoted(&folder)
                ));
            }
        }
    }
    match required_string(fm, "description") {
        Err(e) => errors.push(e),
        Ok(d) => {
            let n = d.chars().count();
            if n > MAX_DESCRIPTION_CHARS {
                errors.push(format!(
                    "description is {n} characters, more than {MAX_DESCRIPTION_CHARS}"
                ));
            }
        }
    }
    if fm.fields.contains_key("compatibility") {
        match required_string(fm, "compatibility") {
            Err(e) => errors.push(e),
            Ok(c) if c.chars().count() > MAX_COMPATIBILITY_CHARS => errors.push(format!(
                "compatibility is {} characters, more than {MAX_COMPATIBILITY_CHARS}",
                c.chars().count()
            )),
            Ok(_) => {}
        }
    }
    for key in ["license", "allowed-tools"] {
        if let Some(v) = fm.fields.get(key) {
            if !matches!(v, Yaml::String(_)) {
                warnings.push(format!("{key} should be a string, not {}", v.kind()));
            }
        }
    }
    match fm.fields.get("metadata") {
        None => {}
        Some(Yaml::Map(entries))
            if entries
                .iter()
                .any(|(k, v)| !matches!((k, v), (Yaml::String(_), Yaml::String(_)))) =>
        {
            warnings.push("metadata should map strings to strings".into());
        }
        Some(Yaml::Map(_)) => {}
        Some(v) => errors.push(format!("metadata must be a mapping, not {}", v.kind())),
    }
    for key in INVOCATION_KEYS {
        if let Some(v) = fm.fields.get(key) {
            if !matches!(v, Yaml::Bool(_)) {
                warnings.push(format!("{key} should be true or false, not {}", v.kind()));
            }
        }
    }
    if let Err(note) = super::discover::argument_hint_of(&fm.fields) {
        warnings.push(note);
    }
    for key in fm.fields.keys() {
        let key_str = key.as_str();
        if !KNOWN_KEYS.contains(&key_str)
            && !INVOCATION_KEYS.contains(&key_str)
            && key_str != HINT_KEY
        {
            warnings.push(format!(
                "unknown field {} (the specification defines {})",
                quoted(key),
                KNOWN_KEYS.join(", ")
            ));
        }
    }
    // Errors first: they are what stops a skill from working elsewhere.
    out.extend(errors.iter().map(|e| problem(path, Severity::Error, e)));
    out.extend(warnings.iter().map(|w| problem(path, Severity::Warning, w)));
}

/// The name of the folder holding `file`. Taken from the path as given when it names the
/// folder, so a symlinked skill folder keeps the link's name (the name agents see); resolved
/// on disk only when it does not, as for `SKILL.md`, `./SKILL.md` or `sub/../SKILL.md`
/// (`hx skills check .` run inside a skill folder). Empty when it cannot be found.
fn folder_name(file: &Path) -> String {
    let parent = file.parent().unwrap_or(Path::new(""));
    let name = match parent.file_name() {
        Some(n) => Some(n.to_os_string()),
        None => {
            // A bare `SKILL.md` has an empty parent: the current folder.
            let dir = if parent.as_os_str().is_empty() {
                Path::new(".")
            } else {
                parent
            };
            dir.canonicalize()
                .ok()
                .and_then(|real| real.file_name().map(|n| n.to_os_string()))
        }
    };
    name.map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A present, non-blank string field.
fn required_string(fm: &Frontmatter, key: &str) -> Result<String, String> {
    match fm.fields.get(key) {
        None | Some(Yaml::Null) => Err(format!("missing required field {key}")),
        Some(Yaml::String(s)) if s.trim().is_empty() => Err(format!("{key} is empty")),
        Some(Yaml::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!("{key} must be a string, not {}", v.kind())),
    }
}

/// A name or key as a message quotes it: cut to the longest valid name, so a file cannot make
/// `check`'s output as long as itself.
fn quoted(text: &str) -> String {
    cut(text, MAX_NAME_CHARS)
}

/// The specification's name rules: 1–64 lowercase ASCII letters, digits and single hyphens,
/// not at either end.
pub fn name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let n = name.chars().count();
    let shown = quoted(name);
    if n > MAX_NAME_CHARS {
        out.push(format!(
            "name is {n} characters, more than {MAX_NAME_CHARS}"
        ));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        out.push(format!(
            "name {shown} may only contain lowercase letters a-z, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push(format!("name {shown} must not start or end with a hyphen"));
    }
    if name.contains("--") {
        out.push(format!("name {shown} must not contain consecutive hyphens"));
    }
    out
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod tests;
