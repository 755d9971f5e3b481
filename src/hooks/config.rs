//! User hook files: reading `hooks.json` (Claude Code's `settings.json` "hooks" shape) into
//! command entries, and the tool matchers that decide which entries an event runs.
//!
//! Nothing in a hooks file can stop a run from starting: every problem is one warning line
//! naming the file, and the rest of the file still counts.

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use super::trust::{link_problem, TrustState, TrustStore};
use super::HookEvent;
use crate::config::{user_config_dir, Env};

/// A command hook's timeout when its entry gives none (Claude Code's default).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Longer timeouts are refused as typos: a hook that may hang for a day is not intended.
const MAX_TIMEOUT_SECS: f64 = 24.0 * 3600.0;

/// The events a hooks file may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    Stop,
    SubagentStop,
}

impl EventKind {
    pub fn parse(name: &str) -> Option<EventKind> {
        Some(match name {
            "SessionStart" => EventKind::SessionStart,
            "UserPromptSubmit" => EventKind::UserPromptSubmit,
            "PreToolUse" => EventKind::PreToolUse,
            "PostToolUse" => EventKind::PostToolUse,
            "Stop" => EventKind::Stop,
            "SubagentStop" => EventKind::SubagentStop,
            _ => return None,
        })
    }

    pub fn of(event: &HookEvent<'_>) -> EventKind {
        match event {
            HookEvent::SessionStart => EventKind::SessionStart,
            HookEvent::UserPromptSubmit { .. } => EventKind::UserPromptSubmit,
            HookEvent::PreToolUse { .. } => EventKind::PreToolUse,
            HookEvent::PostToolUse { .. } => EventKind::PostToolUse,
            HookEvent::Stop { .. } => EventKind::Stop,
            HookEvent::SubagentStop { .. } => EventKind::SubagentStop,
        }
    }

    /// Only tool events have a tool for a matcher to look at.
    pub fn uses_matcher(self) -> bool {
        matches!(self, EventKind::PreToolUse | EventKind::PostToolUse)
    }
}

/// Claude Code's tool names and the hx tools they mean, so hooks written for Claude Code
/// (`"matcher": "Bash"`) run unchanged.
const CLAUDE_ALIASES: [(&str, &str); 8] = [
    ("Bash", "bash"),
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("Edit", "edit_file"),
    ("Glob", "glob"),
    ("Task", "task"),
    ("TodoWrite", "todo_write"),
    ("Skill", "load_skill"),
];

/// Claude Code's name for an hx tool, if it has one.
pub fn claude_name(hx_tool: &str) -> Option<&'static str> {
    CLAUDE_ALIASES
        .iter()
        .find(|(_, hx)| *hx == hx_tool)
        .map(|(claude, _)| *claude)
}

/// Which tools an entry is for.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    /// `bash|write_file`: exact names.
    Names(Vec<String>),
    /// Anything else: a regular expression that must match the whole name.
    Regex(Regex),
}

impl Matcher {
    pub fn parse(text: &str) -> Result<Matcher, String> {
        let t = text.trim();
        if t.is_empty() || t == "*" {
            return Ok(Matcher::All);
        }
        let plain = t
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|' || c == ' ');
        if plain {
            let names = t
                .split('|')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string)
                .collect();
            return Ok(Matcher::Names(names));
        }
        // Anchored so `bash` does not also match `bash_extra`, as an exact list would not.
        Regex::new(&format!("^(?:{t})$"))
            .map(Matcher::Regex)
            .map_err(|e| format!("invalid matcher regex {t:?}: {}", one_line_err(&e)))
    }

    /// The matcher as written (`*` for all tools), for showing to the user.
    pub fn text(&self) -> String {
        match self {
            Matcher::All => "*".to_string(),
            Matcher::Names(names) => names.join("|"),
            // `parse` wrapped the user's text in an anchor; show what they wrote.
            Matcher::Regex(re) => {
                let s = re.as_str();
                s.strip_prefix("^(?:")
                    .and_then(|s| s.strip_suffix(")$"))
                    .unwrap_or(s)
                    .to_string()
            }
        }
    }

    /// Whether a call of `tool` (an hx name) is matched, by its own name or its Claude alias.
    pub fn matches(&self, tool: &str) -> bool {
        let names = [Some(tool), claude_name(tool)];
        let mut names = names.iter().flatten();
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.any(|n| list.iter().any(|l| l == n)),
            Matcher::Regex(re) => names.any(|n| re.is_match(n)),
        }
    }
}

fn one_line_err(e: &regex::Error) -> String {
    crate::term::collapse_whitespace(&e.to_string())
}

/// One command hook of one event.
#[derive(Debug, Clone)]
pub struct Entry {
    pub event: EventKind,
    pub matcher: Matcher,
    pub command: String,
    pub timeout: Duration,
    /// The file it came from, for messages.
    pub source: PathBuf,
    /// Where the command runs, also given as `HX_PROJECT_DIR`/`CLAUDE_PROJECT_DIR`: the folder
    /// holding `.hx` for a project hook (its commands are written relative to the project,
    /// wherever below it hx started), the workspace root for a user hook.
    pub dir: PathBuf,
}

impl Entry {
    /// Whether this entry runs for `event`.
    pub fn applies_to(&self, event: &HookEvent<'_>) -> bool {
        if self.event != EventKind::of(event) {
            return false;
        }
        if !self.event.uses_matcher() {
            return true;
        }
        event.tool_name().is_some_and(|t| self.matcher.matches(t))
    }
}

/// Parses one hooks file whose commands run in `dir`. Problems are pushed to `warnings` as
/// whole lines naming `path`.
pub fn parse_file(path: &Path, dir: &Path, text: &str, warnings: &mut Vec<String>) -> Vec<Entry> {
    let mut warn = |msg: String| warnings.push(format!("hx: {}: {msg}", path.display()));
    let root: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            warn(format!("not valid JSON ({e}); its hooks are skipped"));
            return Vec::new();
        }
    };
    let Value::Object(top) = root else {
        warn("expected a JSON object; its hooks are skipped".into());
        return Vec::new();
    };
    // Claude Code's settings shape wraps the event map in "hooks"; a bare event map is
    // accepted too, so a hooks section can be pasted either way.
    let events: &Map<String, Value> = match top.get("hooks") {
        Some(Value::Object(m)) => m,
        Some(_) => {
            warn("\"hooks\" must be an object of events; its hooks are skipped".into());
            return Vec::new();
        }
        None => &top,
    };
    let mut entries = Vec::new();
    for (name, groups) in events {
        let Some(event) = EventKind::parse(name) else {
            warn(format!(
                "unknown hook event {name:?} (known: SessionStart, UserPromptSubmit, \
                 PreToolUse, PostToolUse, Stop, SubagentStop); skipped"
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            warn(format!(
                "{name}: expected an array of matcher groups; skipped"
            ));
            continue;
        };
        for (gi, group) in groups.iter().enumerate() {
            let at = format!("{name}[{gi}]");
            let source = (path, dir);
            if let Err(msg) = parse_group(event, group, source, &mut entries, &mut warn, &at) {
                warn(format!("{at}: {msg}; skipped"));
            }
        }
    }
    entries
}

/// One `{"matcher": ..., "hooks": [...]}` group of the file `path` whose commands run in
/// `dir`. An `Err` skips the whole group; problems with single hooks are warned about here and
/// skip only that hook.
fn parse_group(
    event: EventKind,
    group: &Value,
    (path, dir): (&Path, &Path),
    entries: &mut Vec<Entry>,
    warn: &mut impl FnMut(String),
    at: &str,
) -> Result<(), String> {
    let Value::Object(group) = group else {
        return Err("expected an object with \"hooks\"".into());
    };
    let matcher = match group.get("matcher") {
        // Other events have no tool to match; Claude Code ignores their matchers too.
        _ if !event.uses_matcher() => Matcher::All,
        None | Some(Value::Null) => Matcher::All,
        Some(Value::String(m)) => Matcher::parse(m)?,
        Some(_) => return Err("\"matcher\" must be a string".into()),
    };
    let Some(Value::Array(hooks)) = group.get("hooks") else {
        return Err("expected \"hooks\": an array of hooks".into());
    };
    for (hi, hook) in hooks.iter().enumerate() {
        let at = format!("{at}.hooks[{hi}]");
        match parse_hook(hook) {
            Ok((command, timeout, timeout_warning)) => {
                if let Some(w) = timeout_warning {
                    warn(format!("{at}: {w}"));
                }
                entries.push(Entry {
                    event,
                    matcher: matcher.clone(),
                    command,
                    timeout,
                    source: path.to_path_buf(),
                    dir: dir.to_path_buf(),
                });
            }
            Err(msg) => warn(format!("{at}: {msg}; skipped")),
        }
    }
    Ok(())
}

/// One `{"type": "command", "command": ..., "timeout": ...}`: the command, its timeout and a
/// warning when the timeout was unusable (the hook still runs, with the default: a guarding
/// hook is better run than dropped over a typo in its timeout).
fn parse_hook(hook: &Value) -> Result<(String, Duration, Option<String>), String> {
    let Value::Object(hook) = hook else {
        return Err("expected an object".into());
    };
    match hook.get("type").and_then(Value::as_str) {
        Some("command") => {}
        Some(other) => {
            return Err(format!(
                "unsupported hook type {other:?} (hx runs \"command\" hooks only)"
            ))
        }
        None => return Err("missing \"type\": \"command\"".into()),
    }
    let command = match hook.get("command") {
        Some(Value::String(c)) if !c.trim().is_empty() => c.clone(),
        _ => return Err("\"command\" must be a non-empty string".into()),
    };
    let (timeout, warning) = match hook.get("timeout") {
        None | Some(Value::Null) => (DEFAULT_TIMEOUT, None),
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT_SECS => (Duration::from_secs_f64(s), None),
            _ => (
                DEFAULT_TIMEOUT,
                Some(format!(
                    "\"timeout\" must be seconds between 0 and {MAX_TIMEOUT_SECS}, got {v}; using {} s",
                    DEFAULT_TIMEOUT.as_secs()
                )),
            ),
        },
    };
    Ok((command, timeout, warning))
}

/// The hooks of a run started in `cwd` (the workspace root): the user's file (always) then the
/// project's (only when trusted), and the warning lines to show.
pub fn load(cwd: &Path, env: &Env) -> (Vec<Entry>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut entries = Vec::new();
    if let Some(user) = user_config_dir(env).map(|d| d.join("hooks.json")) {
        if let Some(bytes) = read(&user, &mut warnings) {
            entries.extend(parse_bytes(&user, cwd, &bytes, &mut warnings));
        }
    }
    if let Some(project) = project_hooks_file(cwd) {
        let p = project.display();
        if let Some(problem) = link_problem(&project) {
            warnings.push(format!("hx: {p}: project hooks skipped: {problem}"));
            return (entries, warnings);
        }
        // The bytes hashed are the bytes parsed: the file cannot change between the two.
        if let Some(bytes) = read(&project, &mut warnings) {
            let state = match TrustStore::path_for(env).map(|p| TrustStore::load(&p)) {
                Some(Ok(store)) => store.state(&project, &bytes),
                Some(Err(e)) => {
                    warnings.push(format!("hx: {e}; project hooks are not run"));
                    TrustState::Untrusted
                }
                None => TrustState::Untrusted,
            };
            match state {
                TrustState::Trusted => {
                    let dir = project_dir(&project);
                    entries.extend(parse_bytes(&project, dir, &bytes, &mut warnings))
                }
                TrustState::Untrusted => warnings.push(format!(
                    "hx: {p}: project hooks skipped: not trusted; review the file, then run `hx trust` to allow them"
                )),
                TrustState::Changed => warnings.push(format!(
                    "hx: {p}: project hooks skipped: changed since trusted; review the file, then run `hx trust` again"
                )),
            }
        }
    }
    (entries, warnings)
}

/// A hooks file's bytes; `None` when it is missing (silently) or unreadable (with a warning).
fn read(path: &Path, warnings: &mut Vec<String>) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(b) => Some(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            warnings.push(format!(
                "hx: {}: cannot read ({e}); its hooks are skipped",
                path.display()
            ));
            None
        }
    }
}

fn parse_bytes(path: &Path, dir: &Path, bytes: &[u8], warnings: &mut Vec<String>) -> Vec<Entry> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_file(path, dir, text, warnings),
        Err(_) => {
            warnings.push(format!(
                "hx: {}: not UTF-8 text; its hooks are skipped",
                path.display()
            ));
            Vec::new()
        }
    }
}

/// The nearest `.hx/hooks.json` at or above `cwd`.
pub fn project_hooks_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|d| d.join(".hx").join("hooks.json"))
        .find(|p| p.is_file())
}

/// The project folder of a `<dir>/.hx/hooks.json` found by `project_hooks_file`: `<dir>`.
pub fn project_dir(hooks_file: &Path) -> &Path {
    // Such a path always has two parents; the fallback only keeps this total.
    hooks_file.ancestors().nth(2).unwrap_or(hooks_file)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
