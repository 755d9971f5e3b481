//! Lifecycle hooks: handlers for the events of a run, and the rules that combine their
//! verdicts. The built-in trace and guard are hooks like any user hook, so the loop calls one
//! method per event and knows none of them.
//!
//! Order per event: the trace first (it sees every step), then the user's hooks (matching ones
//! run concurrently), then the guard (PreToolUse only, skipped when a user hook allowed the
//! call).

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::{join_all, BoxFuture};
use serde_json::Value;

use crate::agent::RunStats;
use crate::model::ToolCall;
use crate::tools::ToolResult;

pub mod command;
pub mod config;
pub mod guard;
mod shell_words;
pub mod trace;
pub mod trust;
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
    /// Printed before each trace line: empty for the parent, e.g. `  [task 1] ` for a
    /// subagent, so a reader can tell whose step a line is.
    pub prefix: String,
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
    /// Run the call with these arguments (the model's, or a hook's `updatedInput`).
    Run {
        args: Option<Value>,
        context: Vec<String>,
    },
    /// Do not run it; its result is `Error: blocked by BY: REASON`.
    Blocked {
        /// `guard` or `hook`.
        by: &'static str,
        reason: String,
    },
    /// A hook ended the run.
    StopRun(String),
}

/// The combined verdict for events other than PreToolUse.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Combined {
    pub block: Option<String>,
    pub context: Vec<String>,
    pub stop_run: Option<String>,
}

/// The hooks of a run.
#[derive(Clone, Default)]
pub struct Hooks {
    trace: Option<Arc<trace::TraceHook>>,
    user: Vec<Arc<dyn Hook>>,
    guard: Option<Arc<dyn Hook>>,
}

impl Hooks {
    pub fn new() -> Self {
        Hooks::default()
    }

    pub fn with_trace(mut self, trace: Arc<trace::TraceHook>) -> Self {
        self.trace = Some(trace);
        self
    }

    pub fn with_guard(mut self, guard: Arc<dyn Hook>) -> Self {
        self.guard = Some(guard);
        self
    }

    pub fn push_user(&mut self, hook: Arc<dyn Hook>) {
        self.user.push(hook);
    }

    async fn user_outputs(&self, event: &HookEvent<'_>, cx: &HookContext) -> Vec<HookOutput> {
        join_all(self.user.iter().map(|h| h.handle(event, cx))).await
    }

    fn trace(&self, event: &HookEvent<'_>, cx: &HookContext) {
        if let Some(t) = &self.trace {
            t.trace(event, cx);
        }
    }

    /// Any other event: trace it, run the user's hooks, combine what they say.
    pub async fn notify(&self, event: &HookEvent<'_>, cx: &HookContext) -> Combined {
        self.trace(event, cx);
        let mut c = Combined::default();
        for out in self.user_outputs(event, cx).await {
            if let (None, Some(Verdict::Block(r))) = (&c.block, out.verdict) {
                c.block = Some(r);
            }
            c.context.extend(out.additional_context);
            if c.stop_run.is_none() {
                c.stop_run = out.stop_run;
            }
        }
        c
    }

    /// After a call: the user's hooks see its result, their feedback and context are appended,
    /// and only then is it traced, so `output_chars` counts what the model is sent. Returns the
    /// final result and a hook's request to stop the run.
    pub async fn post_tool_use(
        &self,
        call: &ToolCall,
        args: Option<&Value>,
        mut result: ToolResult,
        cx: &HookContext,
    ) -> (ToolResult, Option<String>) {
        let event = HookEvent::PostToolUse {
            call,
            args,
            result: &result,
        };
        let mut added = Vec::new();
        let mut stop = None;
        for out in self.user_outputs(&event, cx).await {
            if let Some(Verdict::Block(r)) = out.verdict {
                added.push(r);
            }
            added.extend(out.additional_context);
            if stop.is_none() {
                stop = out.stop_run;
            }
        }
        append_context(&mut result, added);
        let event = HookEvent::PostToolUse {
            call,
            args,
            result: &result,
        };
        self.trace(&event, cx);
        (result, stop)
    }

    /// Decides whether a call runs, and with which arguments.
    pub async fn pre_tool_use(
        &self,
        call: &ToolCall,
        args: Option<&Value>,
        cx: &HookContext,
    ) -> PreToolUse {
        let event = HookEvent::PreToolUse { call, args };
        self.trace(&event, cx);
        let mut allowed = false;
        let mut blocked = None;
        let mut updated = None;
        let mut context = Vec::new();
        for out in self.user_outputs(&event, cx).await {
            if let Some(reason) = out.stop_run {
                return PreToolUse::StopRun(reason);
            }
            match out.verdict {
                Some(Verdict::Block(r)) if blocked.is_none() => blocked = Some(r),
                Some(Verdict::Allow) => allowed = true,
                _ => {}
            }
            if out.updated_input.is_some() {
                updated = out.updated_input;
            }
            context.extend(out.additional_context);
        }
        let args = updated.or_else(|| args.cloned());
        let block = match blocked {
            Some(r) => Some(("hook", r)),
            None if allowed => None,
            None => match &self.guard {
                Some(g) => {
                    let event = HookEvent::PreToolUse {
                        call,
                        args: args.as_ref(),
                    };
                    match g.handle(&event, cx).await.verdict {
                        Some(Verdict::Block(r)) => Some(("guard", r)),
                        _ => None,
                    }
                }
                None => None,
            },
        };
        match block {
            Some((by, reason)) => {
                if let Some(t) = &self.trace {
                    t.blocked(call, args.as_ref(), &reason, cx);
                }
                PreToolUse::Blocked { by, reason }
            }
            None => PreToolUse::Run { args, context },
        }
    }
}

/// Hook-supplied text goes after the tool's own output, so the model reads both.
pub fn append_context(result: &mut ToolResult, context: Vec<String>) {
    for c in context.iter().filter(|c| !c.trim().is_empty()) {
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

/// The guard as a hook: refuses dangerous `bash` commands.
pub struct GuardHook;

impl Hook for GuardHook {
    fn handle<'a>(
        &'a self,
        event: &'a HookEvent<'a>,
        _cx: &'a HookContext,
    ) -> BoxFuture<'a, HookOutput> {
        let verdict = match event {
            HookEvent::PreToolUse {
                call,
                args: Some(args),
            } if call.name == "bash" => args
                .get("command")
                .and_then(Value::as_str)
                .and_then(guard::check_command)
                .map(Verdict::Block),
            _ => None,
        };
        Box::pin(async move {
            HookOutput {
                verdict,
                ..HookOutput::default()
            }
        })
    }
}
