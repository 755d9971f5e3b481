//! The `task` tool: runs a subagent — the same loop with a fresh message list, its own system
//! prompt and only the file and shell tools — and returns nothing but its final answer, so the
//! parent's context pays for the result, not for the work.

use std::sync::atomic::{AtomicU32, Ordering};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{Agent, Outcome};
use crate::tools::{args, Shown, Tool, ToolContext, ToolResult, ToolSpec};

const NAME: &str = "task";

pub struct Task {
    /// The subagent every call starts from; each call clones it with its own scope.
    template: Agent,
    started: AtomicU32,
}

impl Task {
    pub fn new(template: Agent) -> Self {
        Task {
            template,
            started: AtomicU32::new(0),
        }
    }
}

impl Tool for Task {
    fn claude_name(&self) -> Option<&'static str> {
        Some("Task")
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: format!(
                "Start a subagent to do a self-contained piece of work (research, a search \
                 across many files, an independent change) in a fresh context. It has only \
                 {}, runs up to {} turns, and returns only its final report: give it a \
                 complete prompt, since it sees nothing of this conversation. Several task \
                 calls in one turn run at the same time.",
                and_list(self.template.tools.names()),
                self.template.max_turns
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {
                        "type": "string",
                        "description": "A short label for the work (3-6 words)."
                    },
                    "prompt": {
                        "type": "string",
                        "description": "The complete task for the subagent, with all the context it needs."
                    }
                },
                "required": ["prompt"]
            }),
        }
    }

    fn concurrent(&self) -> bool {
        true
    }

    fn shown(&self) -> Shown {
        Shown::Subagent
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let prompt = match args::string(NAME, &args, "prompt") {
                Ok(p) if !p.trim().is_empty() => p.to_string(),
                Ok(_) => return ToolResult::error("task.prompt must not be empty"),
                Err(e) => return e,
            };
            let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
            let mut child = self.template.clone();
            // Its events name this call, so a view can tell whose work they are.
            child.hook_cx.scope = self.template.hook_cx.scope.subagent(n, &cx.call_id);
            // The subagent's own session, linked to the parent's through this call.
            let (mut session, unrecorded) = child
                .recorder
                .start(Some((cx.session_id.as_str(), cx.call_id.as_str())));
            if let Some(why) = unrecorded {
                child.warn(&why);
            }
            let result = child.run(&mut session, &prompt).await;
            let (outcome, detail) = super::outcome::session_end(&result);
            session.end(outcome, detail.as_deref());
            if let Some(e) = session.close() {
                child.warn(&e);
            }
            match result {
                Ok(outcome) => match outcome {
                    Outcome::Answered(text) if text.trim().is_empty() => {
                        ToolResult::ok("(no summary)")
                    }
                    Outcome::Answered(text) => ToolResult::ok(text.trim()),
                    Outcome::Stopped(reason) => {
                        ToolResult::error(format!("subagent stopped by a hook: {reason}"))
                    }
                    Outcome::MaxCost(why) => ToolResult::error(format!("subagent stopped: {why}")),
                    Outcome::MaxTurns(last) => {
                        let mut msg = format!(
                            "The subagent {} without a final answer.",
                            super::outcome::stopped_after(child.max_turns)
                        );
                        if !last.trim().is_empty() {
                            msg.push_str("\nIts last message:\n");
                            msg.push_str(last.trim());
                        }
                        ToolResult::ok(msg)
                    }
                },
                Err(e) => ToolResult::error(format!("subagent failed: {e}")),
            }
        })
    }
}

/// `a, b and c`.
fn and_list(names: &[String]) -> String {
    match names {
        [] => "no tools".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
