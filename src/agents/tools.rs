//! The tools a Claude Code file asks for (an agent file's `tools`, a command file's
//! `allowed-tools`), as hx's tools.

use super::quoted;
use crate::skills::parse::Yaml;
use crate::tools::{bash, edit_file, glob, read_file, todo, write_file, Claude};

/// Claude Code's `Task`, and `Agent`, another name its files give it: the tool that starts
/// the subagents agent files define. That tool lives in `agent`, a layer above this one, so it
/// takes its names from here ([`TOOLS`] cannot take them from it).
pub const TASK: Claude = Claude {
    tool: "task",
    names: &["Task", "Agent"],
    for_subagents: false,
    by_command: false,
};

/// Every tool of hx's that Claude Code's files may name, as each tool states it next to its
/// code. A list of those statements rather than a run's registry: agent files are read before
/// the registry is complete (`task` is made from what they define) and what they map to is
/// cached across runs ([`super::cache`]), so the mapping must not depend on a run. A new tool
/// Claude Code has a name for is added here too. In the order the notes name them.
pub const TOOLS: &[Claude] = &[
    bash::CLAUDE,
    read_file::CLAUDE,
    write_file::CLAUDE,
    edit_file::CLAUDE,
    glob::CLAUDE,
    crate::tools::shells::tools::OUTPUT_CLAUDE,
    crate::tools::shells::tools::KILL_CLAUDE,
    TASK,
    todo::CLAUDE,
    crate::skills::load::CLAUDE,
];

/// Whom a list of Claude Code tool names is mapped for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum For {
    /// A subagent type (`tools`): never a tool that is not for subagents (`task`,
    /// `todo_write`, `load_skill`), and a narrowed `Bash(...)` is left out, since hx cannot
    /// narrow it.
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
    let mut give = |name: &str| {
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    };
    // Each tool's asks given whole, by tool, in the order first asked.
    let mut whole: Vec<(&'static str, Vec<String>)> = Vec::new();
    for t in &asked {
        match map_tool(t, who) {
            Mapped::To(name) => give(name),
            Mapped::Mcp => give(t),
            Mapped::Never => notes.push(format!(
                "tool {}: a subagent never gets it (no {} in a subagent), left out",
                quoted(t),
                never_given()
            )),
            Mapped::Narrowed(name) => notes.push(format!(
                "tool {}: hx cannot limit {name} to some commands, left out",
                quoted(t)
            )),
            Mapped::Missing => {
                notes.push(format!("tool {}: hx has no such tool, left out", quoted(t)))
            }
            Mapped::Whole(name) => {
                match whole.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, asks)) => asks.push(quoted(t)),
                    None => whole.push((name, vec![quoted(t)])),
                }
                give(name);
            }
        }
    }
    // One note for all of a file's patterns: a commit command names three.
    for (name, asks) in whole {
        let tools = if asks.len() == 1 { "tool" } else { "tools" };
        notes.push(format!(
            "{tools} {}: hx cannot limit {name} to some commands, gives it whole",
            asks.join(", ")
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
    /// A tool limited to some commands (`Bash(...)`), left out.
    Narrowed(&'static str),
    Missing,
    /// A tool limited to some commands given whole, with a note.
    Whole(&'static str),
}

/// Claude Code's tool names (and hx's own) to hx's tools for `who`, as [`TOOLS`] say.
fn map_tool(t: &str, who: For) -> Mapped {
    if let Some(tool) = TOOLS.iter().find(|c| c.means(t)) {
        return match who {
            For::Subagent if !tool.for_subagents => Mapped::Never,
            _ => Mapped::To(tool.tool),
        };
    }
    if let Some(tool) = TOOLS.iter().find(|c| c.limited(t)) {
        return match who {
            For::Subagent => Mapped::Narrowed(tool.tool),
            For::Message => Mapped::Whole(tool.tool),
        };
    }
    // The prefix MCP tools are named with (`mcp::names::PREFIX`, a layer above).
    if t.starts_with("mcp__") && t.len() > "mcp__".len() {
        Mapped::Mcp
    } else {
        Mapped::Missing
    }
}

/// The tools no subagent gets, as a note names them: `task, todo_write or load_skill`.
fn never_given() -> String {
    let names: Vec<&str> = TOOLS
        .iter()
        .filter(|c| !c.for_subagents)
        .map(|c| c.tool)
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        Some((last, _)) => last.to_string(),
        None => String::new(),
    }
}
