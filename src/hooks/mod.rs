//! Lifecycle hooks: the events of a run and the rules that combine what the user's hooks and
//! the guard say about them. The loop calls one method per event and knows none of
//! them.
//!
//! Order per event: the user's hooks (matching ones run concurrently, see `user`), then the
//! guard (PreToolUse only, skipped when a user hook allowed the call). In `hx chat` the guard's
//! refusal, and only the guard's, is put to the user (an [`Approver`]). What the views show of
//! these steps comes from the agent's events (`crate::events`), not from a hook.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::events::Scope;
use crate::model::ToolCall;
use crate::session::RunStats;
use crate::tools::{Tool, ToolResult};

pub mod command;
pub mod config;
pub mod guard;
pub mod ledger;
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
    /// The conversation is about to be compacted (Claude Code's name). `trigger` is `auto`
    /// (the next request would pass the limit, or the server said it did) or `manual`
    /// (`hx agent --compact`); `tokens` is the estimated size of the request it shrinks.
    PreCompact {
        trigger: &'a str,
        tokens: u64,
    },
    /// hx needs the user (Claude Code's name): an approval waits, or a long turn ended. Told
    /// only; its output changes nothing.
    Notification {
        message: &'a str,
        /// Claude Code's `notification_type`: `permission_prompt` or `idle_prompt`.
        kind: &'a str,
    },
    /// The session ends (Claude Code's name): `reason` is `clear` (`/new`),
    /// `prompt_input_exit` (the user left the chat) or `other` (a run's end, a signal).
    SessionEnd {
        reason: &'a str,
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
            HookEvent::PreCompact { .. } => "PreCompact",
            HookEvent::Notification { .. } => "Notification",
            HookEvent::SessionEnd { .. } => "SessionEnd",
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

    /// What a matcher is matched against: the tool of a tool event, the trigger of
    /// PreCompact (`auto`, `manual`).
    pub fn match_subject(&self) -> Option<&str> {
        match self {
            HookEvent::PreCompact { trigger, .. } => Some(trigger),
            _ => self.tool_name(),
        }
    }
}

/// Which agent an event belongs to.
#[derive(Debug, Clone, Default)]
pub struct HookContext {
    pub cwd: PathBuf,
    /// The parent agent or which subagent: what its trace lines start with, and what its
    /// events belong to.
    pub scope: Scope,
    /// One id per `hx agent` run, shared by its subagents (given to command hooks).
    pub session_id: String,
    /// Claude Code's name of each tool that has one, by hx name, from the tools themselves:
    /// matchers written for Claude Code (`Bash`) match hx's tools (`bash`).
    pub tool_aliases: Arc<BTreeMap<String, &'static str>>,
}

impl HookContext {
    /// Claude Code's name for `tool`, if it has one.
    pub fn claude_name(&self, tool: &str) -> Option<&'static str> {
        self.tool_aliases.get(tool).copied()
    }
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

/// The user's answer when the guard would refuse a call (interactive mode only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// Run it this once.
    Once,
    /// Run it, and this exact command again without asking for the rest of the session.
    Always,
    /// Do not run it: the guard's refusal stands.
    Refused,
}

/// Someone to put the guard's refusal to: the person at the terminal in `hx chat`. One-shot
/// runs have none, so they never ask.
pub trait Approver: Send + Sync {
    /// Whether to run `command`, which the guard refuses for `reason`.
    fn approve<'a>(
        &'a self,
        call: &'a ToolCall,
        command: &'a str,
        reason: &'a str,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, Approval>;

    /// Whether [`Approver::approve`] would put the question to someone (not answer it from
    /// an earlier "always"): then the `Notification` hooks hear of it first.
    fn will_ask(&self, _call: &ToolCall, _command: &str, _reason: &str) -> bool {
        true
    }
}

/// The hooks of a run: the user's hooks (one [`Hook`] that runs and merges all of them),
/// whether the guard is on, and whom to ask when it refuses.
#[derive(Clone, Default)]
pub struct Hooks {
    user: Option<Arc<dyn Hook>>,
    guard: bool,
    approver: Option<Arc<dyn Approver>>,
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

    /// Puts the guard's refusals to `approver` instead of refusing at once.
    pub fn with_approver(mut self, approver: Option<Arc<dyn Approver>>) -> Self {
        self.approver = approver;
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

    /// After a call: the user's hooks see its result, and their feedback and context are
    /// appended (the loop then cuts the whole to the output cap, as every tool message).
    /// Returns the result and a hook's request to stop the run.
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
        let out = self.user_output(&event, cx).await;
        let feedback = match out.verdict {
            Some(Verdict::Block(r)) => Some(r),
            _ => None,
        };
        append_context(
            &mut result,
            feedback.into_iter().chain(out.additional_context),
        );
        (result, out.stop_run)
    }

    /// Decides whether a call of `tool` (`None`: a tool the agent does not have) runs, and
    /// with which arguments: the user's hooks first (a deny wins; an allow skips the guard),
    /// then the guard, which reads the command the tool says the call runs.
    pub async fn pre_tool_use(
        &self,
        call: &ToolCall,
        tool: Option<&dyn Tool>,
        args: Option<&Value>,
        cx: &HookContext,
    ) -> PreToolUse {
        let event = HookEvent::PreToolUse { call, args };
        let out = self.user_output(&event, cx).await;
        if let Some(reason) = out.stop_run {
            return PreToolUse::StopRun(reason);
        }
        let effective = out.updated_input.as_ref().or(args);
        let command = tool.zip(effective).and_then(|(t, args)| t.command(args));
        let block = match out.verdict {
            Some(Verdict::Block(r)) => Some(("hook", r)),
            Some(Verdict::Allow) => None,
            None if self.guard => guard_verdict(command, &cx.cwd).map(|r| ("guard", r)),
            None => None,
        };
        // Only the guard's refusal is put to the user: a hook's block is the user's own rule,
        // and no prompt overrides it.
        let block = match (block, &self.approver, command) {
            (Some(("guard", reason)), Some(approver), Some(command)) => {
                if approver.will_ask(call, command, &reason) {
                    let message = format!("hx needs your permission to run: {command}");
                    let event = HookEvent::Notification {
                        message: &message,
                        kind: "permission_prompt",
                    };
                    self.notify(&event, cx).await;
                }
                match approver.approve(call, command, &reason, cx).await {
                    Approval::Once | Approval::Always => None,
                    Approval::Refused => Some(("guard", reason)),
                }
            }
            (block, _, _) => block,
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

/// The guard's reason to refuse a call that runs `command`, if any (a call that runs none it
/// leaves alone). The reason may quote the command: bounded, since it is shown on stderr as
/// well. `cwd` is where the command runs.
fn guard_verdict(command: Option<&str>, cwd: &std::path::Path) -> Option<String> {
    command
        .and_then(|c| guard::check_command_in(c, Some(cwd)))
        .map(|r| crate::tools::output::quote(&r).into_owned())
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
