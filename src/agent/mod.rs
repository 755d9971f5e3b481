//! The agent loop: ask the model, run the tools it calls, send the results back, until it
//! answers in plain text. The loop knows no tool by name and no hook by kind.

use std::sync::Arc;

use futures_util::future::join_all;
use serde_json::Value;

use crate::hooks::{Decision, HookContext, HookEvent, Hooks};
use crate::model::{ChatModel, ChatRequest, EventSink, Message, ModelError, ToolCall, Usage};
use crate::tools::{parse_args, ToolContext, ToolResult, ToolSet};

pub mod prompt;

/// What a run did, for the Stop line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made (blocked ones included).
    pub tool_calls: u32,
    /// Calls a PreToolUse hook refused.
    pub blocked: u32,
    pub usage: Usage,
    /// Whether any response reported usage (so zeros are not shown as facts).
    pub has_usage: bool,
}

impl RunStats {
    /// `turns=2, tool_calls=1, blocked=0`, then token figures when the server sent them.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "turns={}, tool_calls={}, blocked={}",
            self.turns, self.tool_calls, self.blocked
        );
        if self.has_usage {
            s.push_str(&format!(
                ", prompt_tokens={}, cache_hit_tokens={}, completion_tokens={}",
                self.usage.prompt_tokens,
                self.usage.prompt_cache_hit_tokens,
                self.usage.completion_tokens
            ));
        }
        s
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered in plain text.
    Answered(String),
    /// `max_turns` requests were made and the model still wanted tools; the last text, if any.
    MaxTurns(String),
}

#[derive(Debug, Clone)]
pub struct RunReport {
    pub outcome: Outcome,
    pub stats: RunStats,
    /// The whole conversation: what the last request sent, plus the final answer.
    pub messages: Vec<Message>,
}

/// Receives the streamed output of each turn and hears when a turn is over.
pub trait TurnSink: EventSink {
    fn turn_finished(&mut self, _has_tool_calls: bool) {}
}

impl TurnSink for crate::model::NullSink {}

impl TurnSink for crate::term::Renderer {
    fn turn_finished(&mut self, has_tool_calls: bool) {
        crate::term::Renderer::turn_finished(self, has_tool_calls)
    }
}

/// One agent: a model, the tools it may use, the hooks that watch it.
#[derive(Clone)]
pub struct Agent {
    pub model: Arc<dyn ChatModel>,
    pub model_name: String,
    pub tools: ToolSet,
    pub tool_cx: ToolContext,
    pub hooks: Hooks,
    pub hook_cx: HookContext,
    pub system_prompt: String,
    pub max_turns: u32,
    /// Asked after every tool-calling turn for a user message to append (todo reminders).
    pub reminders: Vec<Arc<dyn Reminder>>,
    /// A subagent ends with `SubagentStop` instead of `Stop`.
    pub is_subagent: bool,
}

/// Something that may want to remind the model of a duty after a turn that called tools.
pub trait Reminder: Send + Sync {
    fn after_tool_turn(&self, calls: &[ToolCall]) -> Option<String>;
}

impl Agent {
    /// Runs `task` to an answer. A model error after retries ends the run as an error; every
    /// tool problem is a tool result the model sees.
    pub async fn run(&self, task: &str, sink: &mut dyn TurnSink) -> Result<RunReport, ModelError> {
        let mut stats = RunStats::default();
        self.hooks
            .run(&HookEvent::UserPromptSubmit { prompt: task }, &self.hook_cx)
            .await;
        let mut req = ChatRequest {
            model: self.model_name.clone(),
            messages: vec![
                Message::System(self.system_prompt.clone()),
                Message::User(task.to_string()),
            ],
            tools: self.tools.specs(),
        };
        let mut last_text = String::new();
        let outcome = loop {
            if stats.turns >= self.max_turns {
                break Outcome::MaxTurns(last_text);
            }
            stats.turns += 1;
            let turn = self.model.complete(&req, sink).await?;
            if let Some(u) = &turn.usage {
                stats.usage.add(u);
                stats.has_usage = true;
            }
            // Whether to go on is decided by the calls collected, not by `finish_reason`:
            // servers disagree on it, and a call without an answer would break the next request.
            let has_calls = !turn.tool_calls.is_empty();
            sink.turn_finished(has_calls);
            req.messages.push(turn.to_message());
            if !has_calls {
                break Outcome::Answered(turn.content);
            }
            if !turn.content.trim().is_empty() {
                last_text = turn.content.clone();
            }
            let results = self.run_calls(&turn.tool_calls).await;
            for (call, (result, blocked)) in turn.tool_calls.iter().zip(results) {
                stats.tool_calls += 1;
                stats.blocked += u32::from(blocked);
                req.messages.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content: result.content,
                });
            }
            // Reminders go after all of the turn's tool messages: an assistant turn with
            // tool calls must be followed directly by their answers.
            for r in &self.reminders {
                if let Some(text) = r.after_tool_turn(&turn.tool_calls) {
                    req.messages.push(Message::User(text));
                }
            }
        };
        let stop = if self.is_subagent {
            HookEvent::SubagentStop { stats: &stats }
        } else {
            HookEvent::Stop { stats: &stats }
        };
        self.hooks.run(&stop, &self.hook_cx).await;
        Ok(RunReport {
            outcome,
            stats,
            messages: req.messages,
        })
    }

    /// Runs a turn's calls, one result per call in call order. Consecutive calls of tools that
    /// may run concurrently (subagents) run together; everything else runs one at a time, in
    /// order, because later calls may depend on what earlier ones wrote.
    async fn run_calls(&self, calls: &[ToolCall]) -> Vec<(ToolResult, bool)> {
        let concurrent = |c: &ToolCall| self.tools.get(&c.name).is_some_and(|t| t.concurrent());
        let mut out = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let n = calls[i..].iter().take_while(|c| concurrent(c)).count();
            if n > 1 {
                out.extend(join_all(calls[i..i + n].iter().map(|c| self.run_call(c))).await);
                i += n;
            } else {
                out.push(self.run_call(&calls[i]).await);
                i += 1;
            }
        }
        out
    }

    /// One call through PreToolUse, dispatch and PostToolUse; always yields exactly one result,
    /// and whether a hook blocked it.
    async fn run_call(&self, call: &ToolCall) -> (ToolResult, bool) {
        let parsed: Option<Value> = parse_args(&call.name, &call.arguments).ok();
        let pre = HookEvent::PreToolUse {
            call,
            args: parsed.as_ref(),
        };
        let (result, blocked) = match self.hooks.run(&pre, &self.hook_cx).await {
            Decision::Block(reason) => (ToolResult::error(reason), true),
            Decision::Continue => (
                self.tools
                    .dispatch(&call.name, &call.arguments, &self.tool_cx)
                    .await,
                false,
            ),
        };
        let post = HookEvent::PostToolUse {
            call,
            result: &result,
        };
        self.hooks.run(&post, &self.hook_cx).await;
        (result, blocked)
    }
}
