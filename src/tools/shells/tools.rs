//! `bash_output` and `kill_shell`: the model's handles on the shells `bash` started in the
//! background.

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{Output, Shell};
use crate::tools::{args, Claude, Kind, Tool, ToolContext, ToolResult, ToolSpec};

/// Characters of a `bash_output` pattern.
const MAX_PATTERN_CHARS: usize = 1000;

/// Bytes a compiled pattern may take: a pattern is the model's, and a regex's size grows with
/// its repetitions.
const MAX_PATTERN_SIZE: usize = 1 << 20;

/// Claude Code's `BashOutput`.
pub const OUTPUT_CLAUDE: Claude = Claude {
    tool: "bash_output",
    names: &["BashOutput"],
    for_subagents: true,
    by_command: false,
};

/// Claude Code's `KillShell`.
pub const KILL_CLAUDE: Claude = Claude {
    tool: "kill_shell",
    names: &["KillShell", "KillBash"],
    for_subagents: true,
    by_command: false,
};

pub struct BashOutput;

pub struct KillShell;

fn shell_id_schema() -> Value {
    json!({
        "type": "string",
        "description": "The id `bash` gave when it started the shell in the background."
    })
}

/// The shell a call names, or the error saying what there is.
fn shell_of(
    tool: &str,
    args: &Value,
    cx: &ToolContext,
) -> Result<std::sync::Arc<Shell>, ToolResult> {
    let id = args::string(tool, args, "shell_id")?;
    cx.shells.get(id).ok_or_else(|| {
        let ids: Vec<String> = cx.shells.list().into_iter().map(|l| l.id).collect();
        let known = if ids.is_empty() {
            "no shell was started in the background".to_string()
        } else {
            format!("the shells are {}", ids.join(", "))
        };
        ToolResult::error(format!(
            "no background shell {}: {known}",
            crate::tools::output::quote(id)
        ))
    })
}

impl Tool for BashOutput {
    fn claude(&self) -> Option<Claude> {
        Some(OUTPUT_CLAUDE)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: OUTPUT_CLAUDE.tool.into(),
            description: "Read what a background shell (bash with run_in_background) printed \
                since the last read, whether it is still running, and its exit code. Long \
                output keeps its start and end; the whole of it is in the log file named on \
                the last line, which read_file can page through. Instead of calling this in a \
                loop, give `wait`: the call returns as soon as new output arrives (a line \
                matching `pattern`, when given) or the shell ends."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "shell_id": shell_id_schema(),
                    "wait": {
                        "type": "integer",
                        "description": "Seconds to wait for new output or the end (default 0: \
                            answer at once)."
                    },
                    "pattern": {
                        "type": "string",
                        "description": "With `wait`: return only once a line of new output \
                            matches this regular expression (or the shell ends, or the wait \
                            is over)."
                    }
                },
                "required": ["shell_id"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let shell = match shell_of("bash_output", &args, cx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let wait = match args::opt_u64("bash_output", &args, "wait") {
                Ok(w) => Duration::from_secs(w.unwrap_or(0)).min(cx.limits.bash_max_timeout),
                Err(e) => return e,
            };
            let pattern = match pattern(&args) {
                Ok(p) => p,
                Err(e) => return e,
            };
            if !wait.is_zero() {
                shell.wait_for(wait, pattern.as_ref()).await;
            }
            match shell.read_new(cx.limits.output_chars).await {
                Ok(out) => result(&shell, out, "(no new output)"),
                Err(e) => ToolResult::error(e),
            }
        })
    }
}

/// The `pattern` argument, compiled.
fn pattern(args: &Value) -> Result<Option<regex::Regex>, ToolResult> {
    let Some(p) = args.get("pattern").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let Some(p) = p.as_str() else {
        return Err(ToolResult::error("bash_output.pattern must be a string"));
    };
    if p.chars().count() > MAX_PATTERN_CHARS {
        return Err(ToolResult::error(format!(
            "bash_output.pattern has more than {MAX_PATTERN_CHARS} characters"
        )));
    }
    regex::RegexBuilder::new(p)
        .size_limit(MAX_PATTERN_SIZE)
        .build()
        .map(Some)
        .map_err(|e| {
            ToolResult::error(format!(
                "bash_output.pattern is not a regular expression: {e}"
            ))
        })
}

/// A read's result: the new output, then one line on how the shell stands.
fn result(shell: &Shell, out: Output, empty: &str) -> ToolResult {
    let mut text = if out.text.is_empty() {
        empty.to_string()
    } else {
        out.text
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    let state = match &out.end {
        None => "running".to_string(),
        Some(_) if out.killed => "killed".to_string(),
        Some(end) => format!("ended: {end}"),
    };
    let dropped = if out.dropped > 0 {
        format!("; {} bytes past the log's limit were not kept", out.dropped)
    } else {
        String::new()
    };
    text.push_str(&format!(
        "[{} {state}; {} bytes of output in {}{dropped}]",
        shell.id,
        out.written,
        shell.log.display()
    ));
    ToolResult::ok(text).with_exit_code(out.end.as_ref().and_then(super::End::code))
}

impl Tool for KillShell {
    fn claude(&self) -> Option<Claude> {
        Some(KILL_CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Execute
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: KILL_CLAUDE.tool.into(),
            description: "End a background shell and what it started in its process group; \
                returns the output it printed since the last read."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": { "shell_id": shell_id_schema() },
                "required": ["shell_id"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let shell = match shell_of("kill_shell", &args, cx) {
                Ok(s) => s,
                Err(e) => return e,
            };
            let was_running = shell.kill().await;
            match shell.read_new(cx.limits.output_chars).await {
                Ok(out) if !was_running => {
                    let mut r = result(&shell, out, "(no new output)");
                    r.content = format!("{} had already ended.\n{}", shell.id, r.content);
                    r
                }
                Ok(out) => result(&shell, out, "(no new output)"),
                Err(e) => ToolResult::error(e),
            }
        })
    }
}
