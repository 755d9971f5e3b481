//! User hook files: reading `hooks.json` (Claude Code's `settings.json` "hooks" shape) into
//! command entries, and the tool matchers that decide which entries an event runs.
//!
//! A hooks file is read exactly as written or not at all. Hooks are a safety net the user
//! relies on (a PreToolUse hook may be what refuses a command), so any problem that would lose
//! a hook, or change how one runs, is an error: `hx trust` refuses the file, and a run with
//! such a user file or trusted project file stops before its first request. Every problem is
//! reported, one line each, naming the file.

use std::path::{Path, PathBuf};
use std::time::Duration;

use regex::Regex;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::HookEvent;
use crate::paths::{user_config_dir, Env};
use crate::text::Warning;
use crate::trust::{self, escaped, gate, Gate};

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
    PreCompact,
    Notification,
    SessionEnd,
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
            "PreCompact" => EventKind::PreCompact,
            "Notification" => EventKind::Notification,
            "SessionEnd" => EventKind::SessionEnd,
            _ => return None,
        })
    }

    /// The name a hooks file uses.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::SessionStart => "SessionStart",
            EventKind::UserPromptSubmit => "UserPromptSubmit",
            EventKind::PreToolUse => "PreToolUse",
            EventKind::PostToolUse => "PostToolUse",
            EventKind::Stop => "Stop",
            EventKind::SubagentStop => "SubagentStop",
            EventKind::PreCompact => "PreCompact",
            EventKind::Notification => "Notification",
            EventKind::SessionEnd => "SessionEnd",
        }
    }

    pub fn of(event: &HookEvent<'_>) -> EventKind {
        match event {
            HookEvent::SessionStart => EventKind::SessionStart,
            HookEvent::UserPromptSubmit { .. } => EventKind::UserPromptSubmit,
            HookEvent::PreToolUse { .. } => EventKind::PreToolUse,
            HookEvent::PostToolUse { .. } => EventKind::PostToolUse,
            HookEvent::Stop { .. } => EventKind::Stop,
            HookEvent::SubagentStop { .. } => EventKind::SubagentStop,
            HookEvent::PreCompact { .. } => EventKind::PreCompact,
            HookEvent::Notification { .. } => EventKind::Notification,
            HookEvent::SessionEnd { .. } => EventKind::SessionEnd,
        }
    }

    /// Only tool events have a tool for a matcher to look at, and PreCompact its trigger
    /// (`auto`, `manual`).
    pub fn uses_matcher(self) -> bool {
        matches!(
            self,
            EventKind::PreToolUse | EventKind::PostToolUse | EventKind::PreCompact
        )
    }
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
            .map_err(|e| {
                format!(
                    "invalid matcher regex {:?}: {}",
                    crate::tools::output::quote(t),
                    crate::text::one_line(&one_line_err(&e), 300)
                )
            })
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

    /// Whether a call of `tool` (an hx name) is matched, by its own name or its Claude Code
    /// name `alias`.
    pub fn matches(&self, tool: &str, alias: Option<&str>) -> bool {
        let names = [Some(tool), alias];
        let mut names = names.iter().flatten();
        match self {
            Matcher::All => true,
            Matcher::Names(list) => names.any(|n| list.iter().any(|l| l == n)),
            Matcher::Regex(re) => names.any(|n| re.is_match(n)),
        }
    }
}

fn one_line_err(e: &regex::Error) -> String {
    crate::text::collapse_whitespace(&e.to_string())
}

/// `.hx/hooks.json` needs `hx trust`: it runs commands.
pub const TRUST: trust::Kind = trust::Kind {
    path: ".hx/hooks.json",
    label: "project hooks",
    review,
    content: trust::Content::File,
};

/// Claude Code's own place for hooks, `.claude/settings.json`: its `"hooks"` are read as
/// `.hx/hooks.json` is, under the same trust (the whole file is approved: it is one file).
/// The rest of it (permissions, environment, model) is Claude Code's, and left alone; a
/// file without hooks runs nothing and needs no trust.
pub const TRUST_CLAUDE: trust::Kind = trust::Kind {
    path: ".claude/settings.json",
    label: "Claude Code settings (hooks)",
    review: review_settings,
    content: trust::Content::File,
};

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
    pub fn applies_to(&self, event: &HookEvent<'_>, cx: &super::HookContext) -> bool {
        if self.event != EventKind::of(event) {
            return false;
        }
        if !self.event.uses_matcher() {
            return true;
        }
        event
            .match_subject()
            .is_some_and(|t| self.matcher.matches(t, cx.claude_name(t)))
    }
}

/// The hooks of a Claude Code settings file: those under its `"hooks"`, none without one.
pub fn parse_settings(path: &Path, dir: &Path, text: &str) -> Result<Vec<Entry>, Vec<String>> {
    if !settings_have_hooks(text) {
        return Ok(Vec::new());
    }
    parse_file(path, dir, text)
}

/// Whether a settings file names hooks (one that is not JSON is read, to say so).
fn settings_have_hooks(text: &str) -> bool {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(top)) => top.get("hooks").is_some_and(|h| !h.is_null()),
        _ => true,
    }
}

/// Parses one hooks file whose commands run in `dir`: every entry, or every problem (each
/// without the file's name, which the caller adds).
pub fn parse_file(path: &Path, dir: &Path, text: &str) -> Result<Vec<Entry>, Vec<String>> {
    // serde_json keeps the last of two equal keys, so a second "PreToolUse" would silently
    // drop the first one's hooks: refused like any other lost hook.
    serde_json::from_str::<NoDuplicateKeys>(text).map_err(|e| vec![json_problem(&e)])?;
    let root: Value = serde_json::from_str(text).map_err(|e| vec![json_problem(&e)])?;
    let Value::Object(top) = root else {
        return Err(vec!["expected a JSON object".into()]);
    };
    // Claude Code's settings shape wraps the event map in "hooks"; a bare event map is
    // accepted too, so a hooks section can be pasted either way.
    let events: &Map<String, Value> = match top.get("hooks") {
        Some(Value::Object(m)) => m,
        Some(_) => return Err(vec!["\"hooks\" must be an object of events".into()]),
        None => &top,
    };
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    for (name, groups) in events {
        let Some(event) = EventKind::parse(name) else {
            problems.push(format!(
                "unknown hook event {name:?} (known: SessionStart, UserPromptSubmit, \
                 PreToolUse, PostToolUse, Stop, SubagentStop, PreCompact, Notification, SessionEnd)"
            ));
            continue;
        };
        let Value::Array(groups) = groups else {
            problems.push(format!("{name}: expected an array of matcher groups"));
            continue;
        };
        for (gi, group) in groups.iter().enumerate() {
            let at = format!("{name}[{gi}]");
            if let Err(msg) =
                parse_group(event, group, (path, dir), &mut entries, &mut problems, &at)
            {
                problems.push(format!("{at}: {msg}"));
            }
        }
    }
    if problems.is_empty() {
        Ok(entries)
    } else {
        Err(problems)
    }
}

fn json_problem(e: &serde_json::Error) -> String {
    format!("not valid JSON ({e})")
}

/// Walks a JSON document only to refuse an object that names a key twice.
struct NoDuplicateKeys;

impl<'de> Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeys)
    }
}

impl<'de> Visitor<'de> for NoDuplicateKeys {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<NoDuplicateKeys>()?;
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("the key {key:?} appears twice")));
            }
        }
        Ok(NoDuplicateKeys)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(NoDuplicateKeys)
    }
}

/// One `{"matcher": ..., "hooks": [...]}` group of the file `path` whose commands run in
/// `dir`. An `Err` is a problem with the whole group; problems with single hooks are pushed
/// here, so that all of them are reported at once.
fn parse_group(
    event: EventKind,
    group: &Value,
    (path, dir): (&Path, &Path),
    entries: &mut Vec<Entry>,
    problems: &mut Vec<String>,
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
        match parse_hook(hook) {
            Ok((command, timeout)) => entries.push(Entry {
                event,
                matcher: matcher.clone(),
                command,
                timeout,
                source: path.to_path_buf(),
                dir: dir.to_path_buf(),
            }),
            Err(msg) => problems.push(format!("{at}.hooks[{hi}]: {msg}")),
        }
    }
    Ok(())
}

/// One `{"type": "command", "command": ..., "timeout": ...}`: the command and its timeout.
fn parse_hook(hook: &Value) -> Result<(String, Duration), String> {
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
    let timeout = match hook.get("timeout") {
        None | Some(Value::Null) => DEFAULT_TIMEOUT,
        Some(v) => match v.as_f64() {
            Some(s) if s > 0.0 && s <= MAX_TIMEOUT_SECS => Duration::from_secs_f64(s),
            _ => {
                return Err(format!(
                    "\"timeout\" must be seconds between 0 and {MAX_TIMEOUT_SECS}, got {v}"
                ))
            }
        },
    };
    Ok((command, timeout))
}

/// The hooks of a run started in `cwd` (the workspace root): the user's file (always) then the
/// project's (only when trusted), and the warning line when the project's was left out. An
/// `Err` (one line per problem, the first without its `hx: `) stops the run: the user relies
/// on the hooks of both files.
pub fn load(cwd: &Path, env: &Env) -> Result<(Vec<Entry>, Vec<Warning>), String> {
    let mut warnings = Vec::new();
    let mut entries = Vec::new();
    if let Some(user) = user_config_dir(env).map(|d| d.join("hooks.json")) {
        if let Some(bytes) = trust::read_file(&user)? {
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| format!("{}: not UTF-8 text", user.display()))?;
            entries.extend(parse_file(&user, cwd, text).map_err(|p| at_file(&user, &p))?);
        }
    }
    let home = env.get("HOME").filter(|h| !h.is_empty());
    if let Some(user) = home.map(|h| Path::new(h).join(TRUST_CLAUDE.path)) {
        if let Some(bytes) = trust::read_file(&user)? {
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| format!("{}: not UTF-8 text", user.display()))?;
            entries.extend(parse_settings(&user, cwd, text).map_err(|p| at_file(&user, &p))?);
        }
    }
    for (kind, parse) in [
        (&TRUST, parse_file as Parse),
        (&TRUST_CLAUDE, parse_settings as Parse),
    ] {
        match gate(kind, cwd, env)? {
            Some(Gate::Trusted { path, text }) => {
                let dir = kind.project_dir(&path);
                entries.extend(parse(&path, dir, &text).map_err(|p| at_file(&path, &p))?);
            }
            // Settings without hooks run nothing: nothing waits for trust.
            Some(Gate::Skipped { notice, bytes, .. }) => {
                let text = bytes.as_deref().map(String::from_utf8_lossy);
                if kind.path == TRUST.path || text.is_none_or(|t| settings_have_hooks(&t)) {
                    warnings.push(notice);
                }
            }
            None => {}
        }
    }
    Ok((entries, warnings))
}

type Parse = fn(&Path, &Path, &str) -> Result<Vec<Entry>, Vec<String>>;

/// The problems of the file `path` as the lines of one error: `FILE: PROBLEM`, each line after
/// the first starting `hx: ` as the caller starts the first.
fn at_file(path: &Path, problems: &[String]) -> String {
    let lines: Vec<String> = trust::problem_lines(problems)
        .iter()
        .map(|problem| format!("{}: {problem}", path.display()))
        .collect();
    lines.join("\nhx: ")
}

/// `hx trust` on a project hooks file: its problems, or one line per hook as shown for
/// approval.
pub fn review(path: &Path, text: &str) -> trust::Review {
    let entries = parse_file(path, TRUST.project_dir(path), text)?;
    Ok(entries.iter().map(shown_entry).collect())
}

/// `hx trust` on a project's `.claude/settings.json`: the hooks it runs (a line saying there
/// are none when it has none).
pub fn review_settings(path: &Path, text: &str) -> trust::Review {
    let entries = parse_settings(path, TRUST_CLAUDE.project_dir(path), text)?;
    if entries.is_empty() {
        return Ok(vec!["(no hooks: hx runs nothing of this file)".into()]);
    }
    Ok(entries.iter().map(shown_entry).collect())
}

/// One hook as `hx trust` shows it; the command and matcher come from the repository, so they
/// are escaped.
fn shown_entry(e: &Entry) -> String {
    let command = escaped(&e.command);
    if e.event.uses_matcher() {
        let matcher = escaped(&e.matcher.text());
        format!("{:?}, matcher {matcher}: {command}", e.event)
    } else {
        format!("{:?}: {command}", e.event)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
