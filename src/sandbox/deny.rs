//! Files the agent must not read (issue 32, item 12): `.hxignore` at the workspace root
//! (gitignore syntax) and Claude Code's `permissions.deny` `Read(...)` rules. The file tools
//! refuse what they match, `glob` leaves it out, and the run's pod hides what exists of it when
//! the run starts ([`Deny::existing`], covered by `pod::init`).
//!
//! Deny rules only take away from what the model sees, so a project's apply without `hx
//! trust`. Claude Code's path forms, each a gitignore pattern against a base folder:
//! `//abs` from `/`, `~/p` from the home folder, `/p` from the folder that holds the settings'
//! `.claude` (the workspace, or the home folder for the user's file), `./p` from the
//! workspace, anchored, and `p` from the workspace, at any depth when it has no `/`.

use std::path::{Component, Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// The ignore file at the workspace root.
pub const HXIGNORE: &str = ".hxignore";
/// A larger `.hxignore` or settings file is not read (a warning says so).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// Rules kept from all files together; the rest are left out with a warning.
pub const MAX_RULES: usize = 1_000;
/// Existing denied files and folders the pod hides at most; past it the rest stay readable
/// by commands, and `hx sandbox` says so.
pub const MAX_COVERED: usize = 1_000;
/// Folders looked through for existing denied files when the run starts.
pub const MAX_FOLDERS: usize = 10_000;
/// Folders that look is not entered: git's own, and what package managers fill (thousands
/// of folders in a JavaScript or Python project, which would pass the bound at every start).
/// The file tools still refuse what is denied there.
pub const NOT_ENTERED: [&str; 4] = [".git", "node_modules", ".venv", "__pycache__"];
/// Rules `hx context` counts the existing paths of (a look each).
pub const MAX_COUNTED: usize = 50;
/// How the warning begins that commands can read the denied files (`hx context`, which
/// shows no commands' sandbox, leaves it out).
pub const COMMANDS_CAN_READ: &str =
    "the file tools refuse the files your deny rules name, but commands can read them";

/// One rule, as its file wrote it.
#[derive(Debug, Clone)]
pub struct Rule {
    /// As written: `Read(./.env)`, or `.hxignore` (whose lines are one matcher).
    pub text: String,
    /// The file it comes from.
    pub file: PathBuf,
    /// Where its pattern is anchored.
    base: PathBuf,
    matcher: Gitignore,
}

/// Why a path is denied: the rule (for `.hxignore`, its matching line) and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    pub rule: String,
    pub file: PathBuf,
}

impl std::fmt::Display for Denial {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "`{}` in {}", self.rule, self.file.display())
    }
}

/// The run's deny rules; empty when no file names any.
#[derive(Debug, Clone, Default)]
pub struct Deny {
    rules: Vec<Rule>,
}

/// The denied files and folders that exist when the run starts, for the pod to hide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Existing {
    pub paths: Vec<PathBuf>,
    /// The look stopped at [`MAX_FOLDERS`] or [`MAX_COVERED`]: more may exist.
    pub bounded: bool,
}

impl Deny {
    /// The rules for `workspace` (canonical): its `.hxignore`, its `.claude/settings.json`
    /// and `.claude/settings.local.json`, and `~/.claude/settings.json`; with the warnings
    /// for what was left out (unreadable or malformed files, other tools' rules).
    pub fn load(workspace: &Path, home: Option<&Path>) -> (Deny, Vec<String>) {
        let mut deny = Deny::default();
        let mut warnings = Vec::new();
        let home = home.and_then(|h| h.canonicalize().ok());
        deny.hxignore(workspace, &mut warnings);
        let claude = workspace.join(".claude");
        for name in ["settings.json", "settings.local.json"] {
            deny.claude(
                &claude.join(name),
                workspace,
                workspace,
                home.as_deref(),
                &mut warnings,
            );
        }
        // Started in the home folder, the user's file is the project's, read above.
        if let Some(h) = home.as_deref().filter(|h| *h != workspace) {
            let file = h.join(".claude/settings.json");
            deny.claude(&file, h, workspace, Some(h), &mut warnings);
        }
        if deny.rules.len() > MAX_RULES {
            warnings.push(format!(
                "{} deny rules; only the first {MAX_RULES} apply",
                deny.rules.len()
            ));
            deny.rules.truncate(MAX_RULES);
        }
        (deny, warnings)
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The rule that denies `path` (absolute), if one does; a folder's rule denies what it
    /// holds.
    pub fn denies(&self, path: &Path, is_dir: bool) -> Option<Denial> {
        self.rules.iter().find_map(|r| {
            if !path.starts_with(&r.base) {
                return None;
            }
            let m = r.matcher.matched_path_or_any_parents(path, is_dir);
            let glob = m.is_ignore().then(|| m.inner()).flatten()?;
            let rule = if r.text == HXIGNORE {
                glob.original().to_string()
            } else {
                r.text.clone()
            };
            Some(Denial {
                rule,
                file: r.file.clone(),
            })
        })
    }

    /// How many files and folders exist now that `rule` denies (the whole look bounded as
    /// [`Deny::existing`]'s); for `hx context`.
    pub fn count_existing(&self, rule: &Rule, workspace: &Path) -> Existing {
        let one = Deny {
            rules: vec![rule.clone()],
        };
        one.existing(workspace)
    }

    /// The denied files and folders that exist now, without following links: a folder
    /// denied whole is one entry. Never the workspace or a folder holding it (hiding it
    /// would hide the run's own files from itself).
    pub fn existing(&self, workspace: &Path) -> Existing {
        let mut out = Existing::default();
        if self.is_empty() {
            return out;
        }
        let mut queue: std::collections::VecDeque<PathBuf> = self.starts(workspace).into();
        let mut seen = 0usize;
        'walk: while let Some(dir) = queue.pop_front() {
            seen += 1;
            if seen > MAX_FOLDERS {
                out.bounded = true;
                break;
            }
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let Ok(kind) = e.file_type() else { continue };
                let path = e.path();
                let holds_workspace = workspace.starts_with(&path);
                if !holds_workspace && self.denies(&path, kind.is_dir()).is_some() {
                    if out.paths.len() == MAX_COVERED {
                        out.bounded = true;
                        break 'walk;
                    }
                    out.paths.push(path);
                } else if kind.is_dir() && !NOT_ENTERED.iter().any(|n| e.file_name() == *n) {
                    queue.push_back(path);
                }
            }
        }
        out.paths.sort();
        out.paths.dedup();
        out
    }

    /// Where [`Deny::existing`] looks: the workspace, and for each rule anchored outside it
    /// the literal folder its pattern starts with (`~/.ssh` for `Read(~/.ssh/**)`).
    fn starts(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut starts = vec![workspace.to_path_buf()];
        for r in &self.rules {
            if r.base.starts_with(workspace) || r.text == HXIGNORE {
                continue;
            }
            let Some(pattern) = r.matcher_pattern() else {
                continue;
            };
            let literal: PathBuf = pattern
                .trim_start_matches('/')
                .split('/')
                .take_while(|c| !c.contains(['*', '?', '[', '\\']))
                .collect();
            let mut at = r.base.join(literal);
            // The walk lists a folder's entries: start at the folder that holds the literal
            // part, so a literal file or folder is itself an entry.
            if !at.is_dir() || self.denies(&at, true).is_some() {
                at.pop();
            }
            if !starts.iter().any(|s| at.starts_with(s)) {
                starts.push(at);
            }
        }
        starts
    }

    /// A `.hxignore` at the workspace root: every line, one matcher.
    fn hxignore(&mut self, workspace: &Path, warnings: &mut Vec<String>) {
        let file = workspace.join(HXIGNORE);
        let Some(text) = read_bounded(&file, warnings) else {
            return;
        };
        let mut b = GitignoreBuilder::new(workspace);
        for line in text.lines() {
            if let Err(e) = b.add_line(Some(file.clone()), line) {
                warnings.push(format!("{}: {e}; that line is ignored", file.display()));
            }
        }
        match b.build() {
            Ok(matcher) if !matcher.is_empty() => self.rules.push(Rule {
                text: HXIGNORE.into(),
                file,
                base: workspace.to_path_buf(),
                matcher,
            }),
            Ok(_) => {}
            Err(e) => warnings.push(format!("{}: {e}; ignored", file.display())),
        }
    }

    /// The `Read(...)` rules of one Claude Code settings file; `project` is the folder that
    /// holds its `.claude` (where `/p` is anchored).
    fn claude(
        &mut self,
        file: &Path,
        project: &Path,
        workspace: &Path,
        home: Option<&Path>,
        warnings: &mut Vec<String>,
    ) {
        let Some(text) = read_bounded(file, warnings) else {
            return;
        };
        let value: serde_json::Value = match serde_json::from_str(&text) {
            Ok(v) => v,
            Err(e) => {
                warnings.push(format!(
                    "{} is not valid JSON ({e}); its deny rules are ignored",
                    file.display()
                ));
                return;
            }
        };
        let Some(deny) = value.pointer("/permissions/deny") else {
            return;
        };
        let Some(entries) = deny.as_array() else {
            warnings.push(format!(
                "{}: permissions.deny is not a list; ignored",
                file.display()
            ));
            return;
        };
        let mut ignored = Vec::new();
        for entry in entries {
            let Some(text) = entry.as_str() else {
                ignored.push(entry.to_string());
                continue;
            };
            match read_rule(text, project, workspace, home) {
                Some((base, pattern)) => match matcher(&base, &pattern, file) {
                    Some(matcher) => self.rules.push(Rule {
                        text: text.to_string(),
                        file: file.to_path_buf(),
                        base,
                        matcher,
                    }),
                    None => ignored.push(text.to_string()),
                },
                None => ignored.push(text.to_string()),
            }
        }
        if !ignored.is_empty() {
            let shown: Vec<String> = ignored
                .iter()
                .take(5)
                .map(|r| crate::text::one_line(r, 80))
                .collect();
            let more = match ignored.len() {
                n if n > 5 => format!(" and {} more", n - 5),
                _ => String::new(),
            };
            warnings.push(format!(
                "{}: hx applies only the Read(PATH) deny rules; ignored: {}{more}",
                file.display(),
                shown.join(", ")
            ));
        }
    }
}

impl Rule {
    /// The pattern of a Claude Code rule, as anchored below its base.
    fn matcher_pattern(&self) -> Option<String> {
        rule_pattern(&self.text)
    }
}

/// The pattern part of `Read(PATH)` as [`read_rule`] anchors it (without the base).
fn rule_pattern(text: &str) -> Option<String> {
    let path = text.strip_prefix("Read(")?.strip_suffix(')')?;
    Some(match path {
        p if p.starts_with("//") => p[1..].to_string(),
        p if p.starts_with("~/") => p[1..].to_string(),
        p if p.starts_with("./") => p[1..].to_string(),
        p => p.to_string(),
    })
}

/// A Claude Code deny entry as a base folder and a gitignore pattern below it; `None` for
/// other tools' rules, a bare `Read` and paths hx cannot place.
fn read_rule(
    text: &str,
    project: &Path,
    workspace: &Path,
    home: Option<&Path>,
) -> Option<(PathBuf, String)> {
    let path = text.strip_prefix("Read(")?.strip_suffix(')')?;
    if path.is_empty() || path.starts_with('!') {
        return None;
    }
    let pattern = rule_pattern(text)?;
    let base = if path.starts_with("//") {
        PathBuf::from("/")
    } else if path.starts_with("~/") {
        home?.to_path_buf()
    } else if path.starts_with('/') {
        project.to_path_buf()
    } else {
        workspace.to_path_buf()
    };
    // gitignore's `..` means nothing; a rule that climbs is left out rather than guessed.
    if Path::new(&pattern)
        .components()
        .any(|c| c == Component::ParentDir)
    {
        return None;
    }
    Some((base, pattern))
}

fn matcher(base: &Path, pattern: &str, file: &Path) -> Option<Gitignore> {
    let mut b = GitignoreBuilder::new(base);
    b.add_line(Some(file.to_path_buf()), pattern).ok()?;
    b.build().ok().filter(|m| !m.is_empty())
}

/// The file's text when it exists, is at most [`MAX_FILE_BYTES`] and is UTF-8; a warning
/// otherwise (none when it does not exist).
fn read_bounded(file: &Path, warnings: &mut Vec<String>) -> Option<String> {
    use std::io::Read;
    let f = match std::fs::File::open(file) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            warnings.push(format!("cannot read {}: {e}; ignored", file.display()));
            return None;
        }
    };
    let mut bytes = Vec::new();
    if let Err(e) = f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes) {
        warnings.push(format!("cannot read {}: {e}; ignored", file.display()));
        return None;
    }
    if bytes.len() as u64 > MAX_FILE_BYTES {
        warnings.push(format!(
            "{} is larger than {} KiB; its deny rules are ignored",
            file.display(),
            MAX_FILE_BYTES / 1024
        ));
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(t) => Some(t),
        Err(_) => {
            warnings.push(format!("{} is not UTF-8; ignored", file.display()));
            None
        }
    }
}

#[cfg(test)]
#[path = "deny_tests.rs"]
mod tests;
