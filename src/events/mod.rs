//! The one stream of what happens in a run, and the views that show it.
//!
//! The agent loop, the model's streaming callbacks, the user's hooks and the command emit
//! [`Event`]s; every view is an [`Observer`] of that same stream: the trace and answer for a
//! person ([`human`], stderr and stdout) and JSON Lines for a program ([`json`], stdout). A
//! view only formats what it is told, so two views of one run cannot disagree; another
//! consumer (the interactive mode, a session log) is one more `Observer`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::model::{AssistantTurn, EventSink, FailureKind, ToolCall, Usage};
use crate::session::RunStats;
use crate::text::Warning;
use crate::tools::{About, ToolResult};

mod brief;
pub mod human;
pub mod json;

pub use human::{HumanView, Verbosity};
pub use json::JsonView;

/// Something that happened in a run, told to every view. Borrowed: a view that keeps anything
/// copies what it keeps.
#[derive(Debug)]
pub enum Event<'a> {
    /// Where the run's requests go and which session it is: once per command, before
    /// anything else of a run that starts (a run that cannot start has only warnings and an
    /// [`Event::Error`]).
    Started(&'a Start<'a>),
    /// A line for the user that is not a step of the run (a skipped file, a failed hook).
    Warning(&'a Warning),
    /// The run cannot go on (a hooks file that is not valid, a session that cannot be
    /// continued): one line for the user, after which the command exits.
    Error(&'a str),
    /// A note hx appended for the model before a request, of something that happened
    /// meanwhile (a background shell that ended): its text, as the model reads it.
    Noted(&'a str),
    /// A message the user sent while the run went on (a steer), appended before the next
    /// request: its text.
    Steered(&'a str),
    /// The main agent took a task: everything up to [`Event::TurnEnded`] is one turn.
    TurnStarted,
    /// The task passed the `UserPromptSubmit` hooks' turn (traced as that hook event).
    PromptSubmitted { cwd: &'a Path },
    /// A model request was sent.
    RequestStarted,
    /// Streamed reasoning of the response being received.
    Reasoning(&'a str),
    /// Streamed text of the response being received.
    Text(&'a str),
    /// The request failed and is sent again after `delay`: what it streamed is void.
    Retrying {
        attempt: u32,
        max: u32,
        delay: Duration,
        why: &'a str,
    },
    /// A response is complete: its text, reasoning, calls and token figures.
    Response(&'a AssistantTurn),
    /// A tool call is about to go through the `PreToolUse` hooks and run. `tool` is what the
    /// called tool says about itself (the same in the call's other events): how to show it.
    ToolStarted {
        call: &'a ToolCall,
        args: Option<&'a Value>,
        tool: &'a About,
    },
    /// The hooks refused the call; `by` is `guard` or `hook`. [`Event::ToolFinished`] follows
    /// with the error the model is sent.
    ToolBlocked {
        call: &'a ToolCall,
        args: Option<&'a Value>,
        tool: &'a About,
        by: &'a str,
        reason: &'a str,
    },
    /// The call's result, as the model is sent it (hook additions included, cut to the cap).
    ToolFinished {
        call: &'a ToolCall,
        args: Option<&'a Value>,
        tool: &'a About,
        result: &'a ToolResult,
    },
    /// The conversation is about to be compacted (traced as the `PreCompact` hook event,
    /// which follows): `trigger` is `auto` (the next request would pass the limit),
    /// `overflow` (the server refused a request as too long) or `manual` (`--compact`,
    /// `/compact`); `tokens` the estimated size of the request it shrinks. One of
    /// [`Event::Compacted`] and [`Event::CompactionFailed`] follows.
    CompactionStarted { trigger: &'a str, tokens: u64 },
    /// A compaction's summary request was answered: its tokens count in the turn's totals
    /// (it is a request of the run, though not a response of the loop).
    SummaryUsage(&'a Usage, Option<crate::model::Cost>),
    /// The compaction is done: `step` is `prune` (old tool outputs cleared) or `summary`; the
    /// request's estimated tokens before and after; what it did, as one phrase.
    Compacted {
        step: &'a str,
        before: u64,
        after: u64,
        detail: &'a str,
    },
    /// The compaction did not happen: a hook stopped it, its summary request failed, or the
    /// run was cut short during it. The history is as it was.
    CompactionFailed { reason: &'a str },
    /// A turn's tools changed files, as the checkpoints before and after them tell (whatever
    /// changed them: an edit, a command, a subagent): `checkpoint` is the number of the one
    /// before.
    FilesChanged {
        checkpoint: u32,
        changes: &'a crate::checkpoint::Changes,
    },
    /// An agent's run ended (the `Stop` or, for a subagent, `SubagentStop` hook event): its
    /// own figures and how long it took.
    Stopped {
        stats: &'a RunStats,
        elapsed: Duration,
        subagent: bool,
    },
    /// A command hook of the user's ran for `event`: how it ended (`exit 0`, `signal 9`,
    /// `timed out`, `not started`), how long it took, what it wrote (bounded by the hook
    /// runner; `stdout` only when it was plain text), and how many characters of its output went into the task as context
    /// (SessionStart, UserPromptSubmit), if any.
    HookRan {
        event: &'a str,
        command: &'a str,
        ended: &'a str,
        took: Duration,
        stdout: &'a str,
        stderr: &'a str,
        context_chars: Option<usize>,
    },
    /// The goal's command (`--until`, `/goal`) ran after an answer: one round.
    GoalChecked(&'a GoalCheck<'a>),
    /// How the turn ended, from the command that ran it.
    TurnEnded(&'a TurnEnd),
    /// The events (hooks.json's names: `PreToolUse`, ...) that the user's command hooks of the
    /// run listen to, said once the hooks are read: the trace shows those events' steps.
    UserHooks(&'a [&'a str]),
    /// The session is on disk under this id and can be continued.
    /// `short` is the id as the user types it (see `session::store::short_id`).
    SessionSaved { id: &'a str, short: &'a str },
}

/// What [`Event::Started`] says.
#[derive(Debug, Clone)]
pub struct Start<'a> {
    pub session_id: &'a str,
    pub model: &'a str,
    pub provider: &'a str,
    pub base_url: &'a str,
    /// The session existed before this run (`-c`, `-r`).
    pub resumed: bool,
}

/// What [`Event::GoalChecked`] says: the command, which round of how many, whether it
/// passed, its exit code (none: killed, timed out, not started) and its output as the model
/// is sent it (bounded as a `bash` result is).
#[derive(Debug, Clone)]
pub struct GoalCheck<'a> {
    pub command: &'a str,
    pub round: u32,
    pub max_rounds: u32,
    pub passed: bool,
    pub exit_code: Option<i32>,
    pub output: &'a str,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnd {
    /// The model answered with this text.
    Answered(String),
    /// No answer: the reason, as one line for the user (an API error, a hook's stop, the turn
    /// limit, a signal), its kind for programs, and the HTTP status the server refused the
    /// request with, when it did.
    Failed {
        message: String,
        kind: FailureKind,
        status: Option<u16>,
    },
}

impl TurnEnd {
    /// A failure without an HTTP status.
    pub fn failed(kind: FailureKind, message: impl Into<String>) -> TurnEnd {
        TurnEnd::Failed {
            message: message.into(),
            kind,
            status: None,
        }
    }
}

/// Whose event it is: the main agent or one of its subagents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// What each of its trace lines starts with: empty for the main agent, `  [task 1] ` for
    /// the first subagent.
    pub prefix: String,
    /// Unique among the scopes of a run: empty for the main agent, `task 1` for a subagent.
    pub key: String,
    /// For a subagent: the scope and call id of the `task` call that started it.
    pub parent: Option<Arc<(Scope, String)>>,
}

impl Scope {
    /// The scope of the `n`th subagent started by this agent's call `call_id`.
    pub fn subagent(&self, n: u32, call_id: &str) -> Scope {
        let key = if self.key.is_empty() {
            format!("task {n}")
        } else {
            format!("{}/task {n}", self.key)
        };
        Scope {
            prefix: format!("{}  [task {n}] ", self.prefix),
            key,
            parent: Some(Arc::new((self.clone(), call_id.to_string()))),
        }
    }

    pub fn is_subagent(&self) -> bool {
        self.parent.is_some()
    }
}

/// A view of the run, or any other consumer of its events. Called from the agent's tasks, in
/// the order things happen; concurrent subagents may call at the same time, so a view keeps
/// its state behind a lock.
pub trait Observer: Send + Sync {
    fn event(&self, scope: &Scope, event: &Event<'_>);
}

/// Where an agent sends its events: one observer (which may pass them on to others). The
/// default sends them nowhere (tests, benchmarks).
#[derive(Clone, Default)]
pub struct Events(Option<Arc<dyn Observer>>);

impl std::fmt::Debug for Events {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Events(..)"
        } else {
            "Events(none)"
        })
    }
}

impl Events {
    pub fn new(observer: Arc<dyn Observer>) -> Events {
        Events(Some(observer))
    }

    pub fn emit(&self, scope: &Scope, event: &Event<'_>) {
        if let Some(o) = &self.0 {
            o.event(scope, event);
        }
    }

    /// A line for the user beside the trace (see [`Event::Warning`]).
    pub fn warn(&self, scope: &Scope, warning: &Warning) {
        self.emit(scope, &Event::Warning(warning));
    }

    /// The model's streaming callbacks as events of `scope`.
    pub fn sink<'a>(&'a self, scope: &'a Scope) -> ModelSink<'a> {
        ModelSink {
            events: self,
            scope,
        }
    }
}

/// The model client's [`EventSink`] for one agent: each callback becomes an event.
pub struct ModelSink<'a> {
    events: &'a Events,
    scope: &'a Scope,
}

impl EventSink for ModelSink<'_> {
    fn text(&mut self, delta: &str) {
        self.events.emit(self.scope, &Event::Text(delta));
    }

    fn reasoning(&mut self, delta: &str) {
        self.events.emit(self.scope, &Event::Reasoning(delta));
    }

    fn retrying(&mut self, attempt: u32, max: u32, delay: Duration, why: &str) {
        self.events.emit(
            self.scope,
            &Event::Retrying {
                attempt,
                max,
                delay,
                why,
            },
        );
    }
}

/// The model client's [`EventSink`] for a request whose text is not shown (a compaction's
/// summary): only its retries become events, their reason after `prefix`.
pub struct RetrySink<'a> {
    events: &'a Events,
    scope: &'a Scope,
    prefix: &'a str,
}

impl Events {
    /// See [`RetrySink`].
    pub fn retry_sink<'a>(&'a self, scope: &'a Scope, prefix: &'a str) -> RetrySink<'a> {
        RetrySink {
            events: self,
            scope,
            prefix,
        }
    }
}

impl EventSink for RetrySink<'_> {
    fn retrying(&mut self, attempt: u32, max: u32, delay: Duration, why: &str) {
        self.events.emit(
            self.scope,
            &Event::Retrying {
                attempt,
                max,
                delay,
                why: &format!("{}{why}", self.prefix),
            },
        );
    }
}

/// A string argument of a call, if the arguments parsed and hold one.
pub fn arg_str<'a>(args: Option<&'a Value>, key: &str) -> Option<&'a str> {
    args?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subagent_scopes_nest_and_name_their_parent_call() {
        let main = Scope::default();
        let one = main.subagent(1, "call_a");
        assert_eq!(one.prefix, "  [task 1] ");
        assert_eq!(one.key, "task 1");
        let parent = one.parent.as_ref().expect("parent");
        assert_eq!((&parent.0, parent.1.as_str()), (&main, "call_a"));
        let deeper = one.subagent(2, "call_b");
        assert_eq!(deeper.key, "task 1/task 2");
        assert_eq!(deeper.prefix, "  [task 1]   [task 2] ");
    }
}

/// What a turn's requests cost, the subagents' apart too (they are in `all`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Costs {
    pub all: crate::model::Spend,
    pub subagents: crate::model::Spend,
}

impl Costs {
    /// Counts one request of `scope` that reported usage.
    pub fn count(&mut self, scope: &Scope, cost: Option<crate::model::Cost>) {
        self.all.add_cost(cost);
        if scope.is_subagent() {
            self.subagents.add_cost(cost);
        }
    }
}

/// `cost=$0.0123 cache=97%`, with the subagents' share after it when they made requests: the
/// Stop line's words for a turn's money and prompt cache.
pub fn cost_words(usage: &Usage, costs: &Costs) -> String {
    let mut s = format!("cost={}", costs.all.show());
    if let Some(p) = cache_share(usage) {
        s.push_str(&format!(" cache={p}%"));
    }
    if !costs.subagents.is_empty() {
        s.push_str(&format!(" (subagents {})", costs.subagents.show()));
    }
    s
}

/// Hit tokens over prompt tokens, in whole percent; `None` without prompt tokens.
pub fn cache_share(usage: &Usage) -> Option<u64> {
    (usage.prompt_tokens > 0).then(|| {
        let hit = usage.prompt_cache_hit_tokens.min(usage.prompt_tokens);
        ((hit as u128 * 100) / usage.prompt_tokens as u128) as u64
    })
}
