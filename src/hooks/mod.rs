//! Lifecycle hooks: the events of a run and the rules that combine what the user's hooks and
//! the guard say about them. The loop calls one method per event and knows none of
//! them.
//!
//! Order per event: the user's hooks (matching ones run concurrently, see `user`), then the
//! guard (PreToolUse only, skipped when a user hook allowed the call). What the views show of
//! these steps comes from the agent's events (`crate::events`), not from a hook.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::events::Scope;
use crate::model::ToolCall;
use crate::session::RunStats;
use crate::tools::ToolResult;

pub mod command;
pub mod config;
pub mod guard;
mod shell_words;
pub mod user;

/// Something that happened in a run.
#[derive(Debug)]
pub enum HookEvent<'a> {
    SessionStart,
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
        args: Option<&'a Value>,
        result: &'a ToolResult,
    },
    Stop {
        stats: &'a RunStats,
        /// A Stop hook already kept this run going at least once in a row.
        stop_hook_active: bool,
    },
    /// A subagent (`task`) finished.
    SubagentStop {
        stats: &'a RunStats,
        stop_hook_active: bool,
    },
}

impl HookEvent<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit { .. } => "UserPromptSubmit",
            HookEvent::PreToolUse { .. } => "PreToolUse",
            HookEvent::PostToolUse { .. } => "PostToolUse",
            HookEvent::Stop { .. } => "Stop",
            HookEvent::SubagentStop { .. } => "SubagentStop",
        }
    }

    /// The tool the event is about, for matchers.
    pub fn tool_name(&self) -> Option<&str> {
        match self {
            HookEvent::PreToolUse { call, .. } | HookEvent::PostToolUse { call, .. } => {
                Some(&call.name)
            }
            _ => None,
        }
    }
}

/// Which agent an event belongs to.
#[derive(Debug, Clone)]
pub struct HookContext {
    pub cwd: PathBuf,
    /// The parent agent or which subagent: what its trace lines start with, and what its
    /// events belong to.
    pub scope: Scope,
    /// One id per `hx agent` run, shared by its subagents (given to command hooks).
    pub session_id: String,
}

/// A hook's verdict on a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// PreToolUse: run the call and skip the guard.
    Allow,
    /// PreToolUse: refuse the call. Stop: keep going. UserPromptSubmit: refuse the prompt.
    /// PostToolUse: feedback appended to the result.
    Block(String),
}

/// What one hook says about one event. Everything is optional: most hooks only observe.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookOutput {
    pub verdict: Option<Verdict>,
    /// PreToolUse: replaces the call's input.
    pub updated_input: Option<Value>,
    /// Added to the tool result (PostToolUse, PreToolUse) or the task (SessionStart,
    /// UserPromptSubmit).
    pub additional_context: Option<String>,
    /// `continue: false`: end the run, with this reason.
    pub stop_run: Option<String>,
}

pub trait Hook: Send + Sync {
    fn handle<'a>(
        &'a self,
        event: &'a HookEvent<'a>,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, HookOutput>;
}

/// How the PreToolUse hooks decided.
#[derive(Debug, Clone, PartialEq)]
pub enum PreToolUse {
    /// Run the call: with a hook's `updatedInput` when one gave it, else the model's
    /// arguments; `context` is added to the result.
    Run {
        updated_input: Option<Value>,
        context: Option<String>,
    },
    /// Do not run it; its result is `Error: blocked by BY: REASON`.
    Blocked {
        /// `guard` or `hook`.
        by: &'static str,
        reason: String,
        /// A hook's replacement input, when one gave it: what was refused.
        updated_input: Option<Value>,
    },
    /// A hook ended the run.
    StopRun(String),
}

/// What the hooks said about an event other than PreToolUse.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Combined {
    pub block: Option<String>,
    pub context: Option<String>,
    pub stop_run: Option<String>,
}

/// The hooks of a run: the user's hooks (one [`Hook`] that runs and merges all of them), and
/// whether the guard is on.
#[derive(Clone, Default)]
pub struct Hooks {
    user: Option<Arc<dyn Hook>>,
    guard: bool,
}

impl Hooks {
    pub fn new() -> Self {
        Hooks::default()
    }

    pub fn with_guard(mut self, on: bool) -> Self {
        self.guard = on;
        self
    }

    pub fn with_user(mut self, hook: Arc<dyn Hook>) -> Self {
        self.user = Some(hook);
        self
    }

    async fn user_output(&self, event: &HookEvent<'_>, cx: &HookContext) -> HookOutput {
        match &self.user {
            Some(h) => h.handle(event, cx).await,
            None => HookOutput::default(),
        }
    }

    /// Any other event: ask the user's hooks.
    pub async fn notify(&self, event: &HookEvent<'_>, cx: &HookContext) -> Combined {
        let out = self.user_output(event, cx).await;
        Combined {
            block: match out.verdict {
                Some(Verdict::Block(r)) => Some(r),
                _ => None,
            },
            context: out.additional_context,
            stop_run: out.stop_run,
        }
    }

    /// After a call: the user's hooks see its result, their feedback and context are appended,
    /// and the whole is cut to `limit` characters (the output cap the loop applies to every
    /// tool message), so what the views show of it is what the model is sent. Returns the
    /// final result and a hook's request to stop the run.
    pub async fn post_tool_use(
        &self,
        call: &ToolCall,
        args: Option<&Value>,
        mut result: ToolResult,
        limit: usize,
        cx: &HookContext,
    ) -> (ToolResult, Option<String>) {
        let event = HookEvent::PostToolUse {
            call,
            args,
            result: &result,
        };
        let out = self.user_output(&event, cx).await;
        let feedback = match out.verdict {
            Some(Verdict::Block(r)) => Some(r),
            _ => None,
        };
        append_context(
            &mut result,
            feedback.into_iter().chain(out.additional_context),
        );
        (result.bounded(limit), out.stop_run)
    }

    /// Decides whether a call runs, and with which arguments: the user's hooks first (a deny
    /// wins; an allow skips the guard), then the guard.
    pub async fn pre_tool_use(
        &self,
        call: &ToolCall,
        args: Option<&Value>,
        cx: &HookContext,
    ) -> PreToolUse {
        let event = HookEvent::PreToolUse { call, args };
        let out = self.user_output(&event, cx).await;
        if let Some(reason) = out.stop_run {
            return PreToolUse::StopRun(reason);
        }
        let effective = out.updated_input.as_ref().or(args);
        let block = match out.verdict {
            Some(Verdict::Block(r)) => Some(("hook", r)),
            Some(Verdict::Allow) => None,
            None if self.guard => guard_verdict(call, effective).map(|r| ("guard", r)),
            None => None,
        };
        match block {
            Some((by, reason)) => PreToolUse::Blocked {
                by,
                reason,
                updated_input: out.updated_input,
            },
            None => PreToolUse::Run {
                updated_input: out.updated_input,
                context: out.additional_context,
            },
        }
    }
}

/// The guard's reason to refuse a `bash` call, if any.
fn guard_verdict(call: &ToolCall, args: Option<&Value>) -> Option<String> {
    if call.name != "bash" {
        return None;
    }
    args?
        .get("command")
        .and_then(Value::as_str)
        .and_then(guard::check_command)
}

/// Hook-supplied text goes after the tool's own output, so the model reads both.
pub fn append_context(result: &mut ToolResult, context: impl IntoIterator<Item = String>) {
    for c in context.into_iter().filter(|c| !c.trim().is_empty()) {
        // One blank line between the output and each addition.
        let sep = if result.content.ends_with('\n') {
            "\n"
        } else {
            "\n\n"
        };
        result.content.push_str(sep);
        result.content.push_str(c.trim_end());
    }
}
