//! The tools a Claude Code file asks for (an agent file's `tools`, a command file's
//! `allowed-tools`), as hx's tools.

use super::quoted;
use crate::skills::parse::Yaml;

/// Whom a list of Claude Code tool names is mapped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum For {
    /// A subagent type (`tools`): never `task`, `todo_write` or `load_skill`, and a narrowed
    /// `Bash(...)` is left out, since hx cannot narrow it.
    Subagent,
    /// One message of the main agent (a command's `allowed-tools`): every tool of hx's, and
    /// `Bash(...)` gives bash whole (the main agent has it anyway; the guard still watches).
    Message,
}

/// hx's tools for a `tools` field: a comma list or a YAML list of names. `None` (every
/// subagent tool) when it names nothing, or `*`.
pub(super) fn tool_names(v: &Yaml, notes: &mut Vec<String>) -> Option<Vec<String>> {
    tools_for(v, For::Subagent, notes)
}

/// [`tool_names`] for `who`: the names hx gives, in the order asked, each once; a name hx
/// lacks is a note. `allowed-tools` also takes Claude Code's space-separated form.
pub fn tools_for(v: &Yaml, who: For, notes: &mut Vec<String>) -> Option<Vec<String>> {
    let mut asked: Vec<String> = Vec::new();
    let mut add = |s: &str| asked.extend(split_tool_list(s, who));
    match v {
        Yaml::Seq(items) => {
            for item in items {
                match item.as_text() {
                    Some(s) => add(&s),
                    None => notes.push(format!("a tools entry is {}, not a name", item.kind())),
                }
            }
        }
        other => match other.as_text() {
            Some(s) => add(&s),
            None => {
                let every = match who {
                    For::Subagent => "every subagent tool",
                    For::Message => "every tool",
                };
                notes.push(format!(
                    "tools is {}, not a list of names; {every} is given",
                    other.kind()
                ));
                return None;
            }
        },
    }
    if asked.is_empty() || asked.iter().any(|t| t == "*") {
        return None;
    }
    let mut out: Vec<String> = Vec::new();
    let mut whole: Vec<String> = Vec::new();
    for t in &asked {
        match map_tool(t, who) {
            Mapped::To(name) => {
                if !out.iter().any(|o| o == name) {
                    out.push(name.to_string());
                }
            }
            Mapped::Mcp => {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
            Mapped::Never => notes.push(format!(
                "tool {}: a subagent never gets it (no task, todo_write or load_skill in a \
                 subagent), left out",
                quoted(t)
            )),
            Mapped::Narrowed => notes.push(format!(
                "tool {}: hx cannot limit bash to some commands, left out",
                quoted(t)
            )),
            Mapped::Missing => {
                notes.push(format!("tool {}: hx has no such tool, left out", quoted(t)))
            }
            Mapped::Whole(name) => {
                whole.push(quoted(t));
                if !out.iter().any(|o| o == name) {
                    out.push(name.to_string());
                }
            }
        }
    }
    // One note for all of a file's patterns: a commit command names three.
    if !whole.is_empty() {
        let tools = if whole.len() == 1 { "tool" } else { "tools" };
        notes.push(format!(
            "{tools} {}: hx cannot limit bash to some commands, gives it whole",
            whole.join(", ")
        ));
    }
    Some(out)
}

/// The names in one text of a tools field: comma-separated (`Read, Grep`), and for a
/// message also space-separated (`Bash(git add:*) Read`, Claude Code's `allowed-tools`
/// form), a space inside parentheses kept (`Bash(git commit -m:*)`).
fn split_tool_list(s: &str, who: For) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let splits = c == ',' || (who == For::Message && c.is_whitespace() && depth == 0);
        if splits {
            out.push(std::mem::take(&mut word));
        } else {
            word.push(c);
        }
    }
    out.push(word);
    out.into_iter()
        .map(|w| w.trim().to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

enum Mapped {
    To(&'static str),
    Mcp,
    Never,
    Narrowed,
    Missing,
    /// A narrowed tool (`Bash(...)`) given whole, with a note.
    Whole(&'static str),
}

/// Claude Code's tool names (and hx's own) to hx's tools for `who`.
fn map_tool(t: &str, who: For) -> Mapped {
    if who == For::Message {
        match t {
            "Task" | "Agent" | "task" => return Mapped::To("task"),
            "TodoWrite" | "todo_write" => return Mapped::To("todo_write"),
            "Skill" | "load_skill" => return Mapped::To("load_skill"),
            _ if t.starts_with("Bash(") => return Mapped::Whole("bash"),
            _ => {}
        }
    }
    match t {
        "Bash" | "bash" => Mapped::To("bash"),
        "Read" | "read_file" => Mapped::To("read_file"),
        "Write" | "write_file" => Mapped::To("write_file"),
        "Edit" | "MultiEdit" | "edit_file" => Mapped::To("edit_file"),
        // `LS` lists a folder, which `glob` does (`DIR/*`).
        "Glob" | "LS" | "glob" => Mapped::To("glob"),
        "Task" | "Agent" | "task" | "TodoWrite" | "todo_write" | "Skill" | "load_skill" => {
            Mapped::Never
        }
        _ if t.starts_with("Bash(") => Mapped::Narrowed,
        // The prefix MCP tools are named with (`mcp::names::PREFIX`, a layer above).
        _ if t.starts_with("mcp__") && t.len() > "mcp__".len() => Mapped::Mcp,
        _ => Mapped::Missing,
    }
}
