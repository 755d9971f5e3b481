//! System-prompt assembly. The prompt is the start of every request's prefix, so it must be
//! byte-identical from turn to turn: nothing volatile (time, random ids) goes in, and every
//! section is rendered in a fixed order.

use std::path::Path;

/// The base rules for the main agent.
pub fn base(cwd: &Path) -> String {
    format!(
        "You are hx, a coding agent working in a terminal.\n\
         Working directory (the workspace): {cwd}\n\
         Relative paths are relative to the workspace; file tools refuse paths outside it.\n\
         \n\
         Do the user's task with the tools: look before you change (glob, read_file), change \
         files with edit_file or write_file, and run commands with bash to build, test and \
         check your work. When several calls are independent, make them in one turn. A tool \
         result that starts with \"Error:\" means the call failed: read it and adjust.\n\
         \n\
         When the task is done, reply in plain text without calling a tool: a short summary \
         of what you did and what you found. That reply ends the run.",
        cwd = cwd.display()
    )
}

/// The base rules for the main agent of the minimal tool profile, which has `bash` (one
/// persistent shell) and `str_replace_editor` only: it names no other tool.
pub fn minimal(cwd: &Path) -> String {
    format!(
        "You are hx, a coding agent working in a terminal.\n\
         Working directory (the workspace): {cwd}\n\
         str_replace_editor takes absolute paths and refuses paths outside the workspace.\n\
         \n\
         Do the user's task with the tools: look before you change, change files with \
         str_replace_editor, and run commands with bash to build, test and check your work. \
         The bash shell persists between calls: the working folder and variables carry \
         over. A tool result that starts with \"Error:\" means the call failed: read it and \
         adjust.\n\
         \n\
         When the task is done, reply in plain text without calling a tool: a short summary \
         of what you did and what you found. That reply ends the run.",
        cwd = cwd.display()
    )
}

/// The rules for a subagent started by the `task` tool: same workspace, narrower role.
pub fn subagent(cwd: &Path) -> String {
    format!(
        "You are a subagent of hx, a coding agent, working on one delegated task.\n\
         Working directory (the workspace): {cwd}\n\
         Relative paths are relative to the workspace; file tools refuse paths outside it.\n\
         \n\
         Use the tools to do the task. A tool result that starts with \"Error:\" means the \
         call failed: read it and adjust. When done, reply in plain text without calling a \
         tool: your reply is the only thing the agent that started you will see, so make it \
         a complete, concise report of what you did and found.",
        cwd = cwd.display()
    )
}

/// Joins the base rules and further sections (project instructions, the skill catalog) with
/// blank lines.
pub fn assemble(base: String, sections: &[String]) -> String {
    let mut s = base;
    for sec in sections.iter().filter(|s| !s.trim().is_empty()) {
        s.push_str("\n\n");
        s.push_str(sec.trim_end());
    }
    s
}
