//! The short line the default trace shows under a tool call's `>` line, only where it says
//! something the `>` line does not: that the call failed (a command's exit code, its output's
//! length and last line; another tool's error), or that the guard or a hook refused it. A call
//! that succeeded gets none: the next step shows it worked.

use crate::text::one_line;
use crate::tools::{About, Shown, ToolResult};

/// Characters of the error or output line quoted.
const QUOTED_CHARS: usize = 200;

/// `blocked by the guard: WHY`, or by a hook.
pub fn refused(by: &str, why: &str) -> String {
    let who = match by {
        "guard" => "the guard",
        _ => "a hook",
    };
    format!("blocked by {who}: {}", one_line(why, QUOTED_CHARS))
}

/// How the call ended, when it failed: `failed: exit code 3 · 11 lines · error: boom` for a
/// command, `failed: ERROR` (`· N lines` when the error has more) for any tool.
pub fn ended(tool: &About, result: &ToolResult) -> Option<String> {
    if tool.shown == Shown::Command && !result.is_error {
        return command_failed(&result.content, result.exit_code);
    }
    if !result.is_error {
        return None;
    }
    let text = result.content.trim();
    let text = text.strip_prefix("Error:").unwrap_or(text).trim_start();
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first = lines.next().unwrap_or("(no message)");
    let more = lines.count();
    let mut line = format!("failed: {}", one_line(first, QUOTED_CHARS));
    if more > 0 {
        line.push_str(&format!(" · {} lines", more + 1));
    }
    Some(line)
}

/// A command's failure: the status line the bash tool appends for an exit that was not 0
/// (`[exit code: N]`, `[killed by signal N (NAME)]`), how many lines it printed before it,
/// and the last of them, where a failing command says why.
fn command_failed(content: &str, exit_code: Option<i32>) -> Option<String> {
    if exit_code == Some(0) {
        return None;
    }
    let (printed, last) = match content.rsplit_once('\n') {
        Some((rest, last)) => (rest, last),
        None => ("", content),
    };
    let status = last.trim();
    let status = status
        .strip_prefix("[exit code: ")
        .and_then(|s| s.strip_suffix(']'))
        .map(|code| format!("exit code {code}"))
        .or_else(|| {
            status
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .filter(|s| s.starts_with("killed by signal "))
                .map(str::to_string)
        })?;
    let lines: Vec<&str> = printed
        .lines()
        .filter(|l| !l.trim().is_empty() && *l != "(no output)")
        .collect();
    Some(match lines.last() {
        None => format!("failed: {status} · no output"),
        Some(l) => format!(
            "failed: {status} · {} · {}",
            crate::text::count(lines.len() as u64, "line"),
            one_line(l, QUOTED_CHARS)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> About {
        About {
            shown: Shown::Command,
            ..About::default()
        }
    }

    #[test]
    fn a_failed_command_says_its_status_its_length_and_its_last_line() {
        let r = ToolResult::ok("1\n2\nerror: boom\n[exit code: 3]").with_exit_code(Some(3));
        assert_eq!(
            ended(&command(), &r).as_deref(),
            Some("failed: exit code 3 · 3 lines · error: boom")
        );
        let r = ToolResult::ok("(no output)\n[exit code: 1]").with_exit_code(Some(1));
        assert_eq!(
            ended(&command(), &r).as_deref(),
            Some("failed: exit code 1 · no output")
        );
        let r = ToolResult::ok("x\n[killed by signal 9 (SIGKILL)]");
        assert_eq!(
            ended(&command(), &r).as_deref(),
            Some("failed: killed by signal 9 (SIGKILL) · 1 line · x")
        );
    }

    #[test]
    fn a_success_says_nothing() {
        let r = ToolResult::ok("all good\n").with_exit_code(Some(0));
        assert_eq!(ended(&command(), &r), None);
        assert_eq!(
            ended(&About::default(), &ToolResult::ok("[exit code: 3]")),
            None
        );
    }

    #[test]
    fn a_tool_error_gives_its_first_line() {
        let r = ToolResult::error("old_text not found in a.txt");
        assert_eq!(
            ended(&About::default(), &r).as_deref(),
            Some("failed: old_text not found in a.txt")
        );
        let r = ToolResult::error("command timed out after 5 s\npartial\nmore");
        assert_eq!(
            ended(&command(), &r).as_deref(),
            Some("failed: command timed out after 5 s · 3 lines")
        );
    }

    #[test]
    fn a_refusal_names_who_refused() {
        assert_eq!(refused("guard", "sudo"), "blocked by the guard: sudo");
        assert_eq!(refused("hook", "no\nway"), "blocked by a hook: no way");
    }
}
