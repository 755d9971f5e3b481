//! The built-in trace hook: one line per step on stderr, in the format the README documents.

use std::sync::Arc;

use serde_json::Value;

use super::{HookContext, HookEvent};
use crate::model::ToolCall;
use crate::term::{one_line, Term};

/// Lines of a tool result shown under its PostToolUse line.
const PREVIEW_LINES: usize = 5;
/// Characters of one argument value on the `> NAME k=v` line.
const VALUE_CHARS: usize = 80;

pub struct TraceHook {
    term: Arc<Term>,
}

impl TraceHook {
    pub fn new(term: Arc<Term>) -> Self {
        TraceHook { term }
    }

    /// A line that is not a step of the run (a warning), printed with the trace.
    pub fn note(&self, text: &str) {
        self.term.line(text);
    }

    /// Prints the line(s) of one event.
    pub fn trace(&self, event: &HookEvent<'_>, cx: &HookContext) {
        let p = &cx.prefix;
        match event {
            HookEvent::SessionStart => {}
            HookEvent::UserPromptSubmit { .. } => {
                self.term.line(&format!(
                    "{p}[HOOK] UserPromptSubmit cwd={}",
                    cx.cwd.display()
                ));
            }
            HookEvent::PreToolUse { call, args } => {
                self.term.line(&format!(
                    "{p}> {}\n{p}[HOOK] PreToolUse {}({})",
                    call_summary(&call.name, *args),
                    call.name,
                    compact_args(call, *args)
                ));
            }
            HookEvent::PostToolUse { call, result, .. } => {
                self.term.line(&format!(
                    "{p}[HOOK] PostToolUse {} output_chars={}",
                    call.name,
                    result.content.chars().count()
                ));
                let preview = preview(&result.content, p);
                if !preview.is_empty() {
                    self.term.dim_line(&preview);
                }
            }
            HookEvent::Stop { stats, .. } | HookEvent::SubagentStop { stats, .. } => {
                self.term
                    .line(&format!("{p}[HOOK] {}: {}", event.name(), stats.summary()));
            }
            HookEvent::PreCompact { trigger, tokens } => {
                self.term
                    .line(&format!("{p}[HOOK] PreCompact {trigger} tokens={tokens}"));
            }
        }
    }
}

impl TraceHook {
    /// `[HOOK] PreToolUse blocked NAME(ARGS): REASON`, after the hooks refused a call.
    pub fn blocked(&self, call: &ToolCall, args: Option<&Value>, reason: &str, cx: &HookContext) {
        self.term.line(&format!(
            "{}[HOOK] PreToolUse blocked {}({}): {reason}",
            cx.prefix,
            call.name,
            compact_args(call, args)
        ));
    }
}

/// The arguments as compact JSON; the raw text when they are not JSON.
fn compact_args(call: &ToolCall, args: Option<&Value>) -> String {
    match args {
        Some(v) => v.to_string(),
        None => one_line(&call.arguments, 200),
    }
}

/// `NAME k=v k=v` with each value on one line, cut short.
pub fn call_summary(name: &str, args: Option<&Value>) -> String {
    let mut s = name.to_string();
    if let Some(Value::Object(map)) = args {
        for (k, v) in map {
            let text = match v {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            s.push_str(&format!(" {k}={}", one_line(&text, VALUE_CHARS)));
        }
    }
    s
}

/// The first lines of a tool result, then `...` when there is more.
fn preview(content: &str, prefix: &str) -> String {
    let mut lines = content.lines();
    let mut out: Vec<String> = lines
        .by_ref()
        .take(PREVIEW_LINES)
        .map(|l| format!("{prefix}{}", one_line(l, 200)))
        .collect();
    if lines.next().is_some() {
        out.push(format!("{prefix}..."));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_shows_short_one_line_values() {
        let long = "x".repeat(200);
        let args = json!({"command": "echo a\necho b", "n": 3, "long": long});
        let s = call_summary("bash", Some(&args));
        assert!(
            s.starts_with("bash command=echo a echo b n=3 long=xxx"),
            "{s}"
        );
        assert!(s.ends_with('…'));
        assert!(s.chars().count() < 130);
    }

    #[test]
    fn preview_cuts_after_five_lines() {
        assert_eq!(preview("a\nb", ""), "a\nb");
        assert_eq!(
            preview("1\n2\n3\n4\n5\n6\n7", "  "),
            "  1\n  2\n  3\n  4\n  5\n  ..."
        );
    }
}
