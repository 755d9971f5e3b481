//! Lifecycle hooks: ordered handlers for the events of a run. The built-in trace is one of
//! them, so user hooks can sit beside it without the loop knowing either.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::agent::RunStats;
use crate::model::ToolCall;
use crate::tools::ToolResult;

pub mod trace;

/// Something that happened in a run.
#[derive(Debug)]
pub enum HookEvent<'a> {
    UserPromptSubmit {
        prompt: &'a str,
    },
    /// A tool call is about to run. `args` is the parsed arguments (`None` when they are not a
    /// JSON object: the call will fail with an argument error).
    PreToolUse {
        call: &'a ToolCall,
        args: Option<&'a Value>,
    },
    PostToolUse {
        call: &'a ToolCall,
        result: &'a ToolResult,
    },
    Stop {
        stats: &'a RunStats,
    },
    /// A subagent (`task`) finished.
    SubagentStop {
        stats: &'a RunStats,
    },
}

impl HookEvent<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            HookEvent::UserPromptSubmit { .. } => "UserPromptSubmit",
            HookEvent::PreToolUse { .. } => "PreToolUse",
            HookEvent::PostToolUse { .. } => "PostToolUse",
            HookEvent::Stop { .. } => "Stop",
            HookEvent::SubagentStop { .. } => "SubagentStop",
        }
    }
}

/// Which agent an event belongs to.
#[derive(Debug, Clone)]
pub struct HookContext {
    pub cwd: PathBuf,
    /// Printed before each trace line: empty for the parent, e.g. `  [task 1] ` for a
    /// subagent, so a reader can tell whose step a line is.
    pub prefix: String,
}

/// A handler's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Continue,
    /// Refuse the step (only meaningful for `PreToolUse`). The text, after `Error: `, becomes
    /// the call's tool result, e.g. `blocked by guard: REASON`.
    Block(String),
}

pub trait Hook: Send + Sync {
    fn handle<'a>(
        &'a self,
        event: &'a HookEvent<'a>,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, Decision>;
}

/// The hooks of a run, in order.
#[derive(Clone, Default)]
pub struct Hooks {
    list: Vec<Arc<dyn Hook>>,
}

impl Hooks {
    pub fn new() -> Self {
        Hooks::default()
    }

    pub fn push(&mut self, hook: Arc<dyn Hook>) {
        self.list.push(hook);
    }

    /// Runs every hook in order; the first block wins and later hooks do not see the event.
    pub async fn run(&self, event: &HookEvent<'_>, cx: &HookContext) -> Decision {
        for h in &self.list {
            if let d @ Decision::Block(_) = h.handle(event, cx).await {
                return d;
            }
        }
        Decision::Continue
    }
}
