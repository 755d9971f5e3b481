//! The calls of one turn: each through PreToolUse, dispatch and PostToolUse, answered exactly
//! once, in call order, whatever happens (a bad argument, an unknown tool, a block, a panic,
//! a hook that stops the run).

use std::panic::AssertUnwindSafe;

use futures_util::future::join_all;
use futures_util::FutureExt;
use serde_json::Value;

use super::Agent;
use crate::events::Event;
use crate::hooks::{append_context, PreToolUse};
use crate::model::{Message, ToolCall};
use crate::session::Session;
use crate::tools::output::quote;
use crate::tools::{parse_args, About, Tool, ToolContext, ToolResult, ToolSet};

/// One call's answer.
struct Answer {
    result: ToolResult,
    /// A hook (or the guard) refused the call.
    blocked: bool,
    /// A hook asked to stop the run; the reason.
    stop: Option<String>,
}

/// [`Answer`] before the output cap, with the input a hook replaced the arguments with when
/// the call ran with it.
struct Ran {
    updated: Option<Value>,
    answer: Answer,
}

impl Agent {
    /// Runs a turn's `calls` and records their answers in `session`, one tool message per
    /// call in call order, with the figures; a hook's request to stop the run, if one made it.
    pub(super) async fn answer_calls(
        &self,
        session: &mut Session,
        tools: &ToolSet,
        calls: &[ToolCall],
    ) -> Option<String> {
        // Counted as made before they run, so a run abandoned mid-call still shows them.
        let made = u32::try_from(calls.len()).unwrap_or(u32::MAX);
        session.stats.tool_calls = session.stats.tool_calls.saturating_add(made);
        let answers = self.run_calls(tools, calls, session.id()).await;
        let mut stopped = None;
        for (call, answer) in calls.iter().zip(answers) {
            let blocked = u32::from(answer.blocked);
            session.stats.blocked = session.stats.blocked.saturating_add(blocked);
            stopped = stopped.or(answer.stop);
            // Cut to the output cap already (see `guarded_call`).
            session.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content: answer.result.content,
            });
        }
        stopped
    }

    /// One answer per call in call order. Calls of tools that may run concurrently
    /// (subagents) all start at once; the others run one at a time, in order, beside them,
    /// because later ones may depend on what earlier ones wrote. Once a hook stops the run,
    /// the ordered calls not yet started are answered without running.
    async fn run_calls(
        &self,
        tools: &ToolSet,
        calls: &[ToolCall],
        session_id: &str,
    ) -> Vec<Answer> {
        let concurrent = |c: &ToolCall| tools.get(&c.name).is_some_and(|t| t.concurrent());
        let (parallel, ordered): (Vec<_>, Vec<_>) =
            calls.iter().enumerate().partition(|(_, c)| concurrent(c));
        let ordered_run = async {
            let mut out = Vec::with_capacity(ordered.len());
            let mut stop: Option<String> = None;
            for (i, call) in ordered {
                if stop.is_some() {
                    // Never started, so the views hear nothing of it; its answer is cut to
                    // the cap like every call's (see `guarded_call`).
                    let result = ToolResult::error("not run: a hook stopped the run")
                        .bounded(self.output_limit());
                    let skipped = Answer {
                        result,
                        blocked: false,
                        stop: None,
                    };
                    out.push((i, skipped));
                    continue;
                }
                let answer = self.guarded_call(tools, call, session_id).await;
                stop = stop.or_else(|| answer.stop.clone());
                out.push((i, answer));
            }
            out
        };
        let parallel_run =
            join_all(parallel.into_iter().map(|(i, call)| async move {
                (i, self.guarded_call(tools, call, session_id).await)
            }));
        let (ordered_out, parallel_out) =
            futures_util::future::join(ordered_run, parallel_run).await;
        let mut all: Vec<(usize, Answer)> = ordered_out.into_iter().chain(parallel_out).collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, answer)| answer).collect()
    }

    /// One call, answered once: [`Agent::run_call`], with a panic anywhere in it (a tool, a
    /// hook, a bug) turned into that call's `Error: internal error in TOOL` result, so the
    /// conversation stays valid and the run goes on (the panic hook has printed its one line
    /// on stderr already: the binary's names the bug and where it happened). Here, and only
    /// here, the answer is cut to the output cap and the views hear the call finish: whatever
    /// produced the answer (the tool, an error, the hooks' additions, the panic), what they
    /// are shown is what the model is sent.
    async fn guarded_call(&self, tools: &ToolSet, call: &ToolCall, session_id: &str) -> Answer {
        let tool = tools.get(&call.name).map(|t| t.as_ref());
        let about = tool.map_or_else(About::default, About::of);
        let parsed = parse_args(&call.name, &call.arguments);
        let run = self.run_call(tools, tool, &about, call, &parsed, session_id);
        // Unwind safety: what a call shares with the rest of the run (the todo list, the
        // loaded skills, the terminal) sits behind mutexes whose poisoning hx ignores, and
        // every such state is whole between two statements.
        let Ran { updated, answer } = match AssertUnwindSafe(run).catch_unwind().await {
            Ok(ran) => ran,
            Err(_) => Ran {
                updated: None,
                answer: Answer {
                    result: ToolResult::error(format!("internal error in {}", quote(&call.name))),
                    blocked: false,
                    stop: None,
                },
            },
        };
        let answer = Answer {
            result: answer.result.bounded(self.output_limit()),
            ..answer
        };
        // Every started call is finished for the views, run or not, so nothing waits for it.
        self.emit(&Event::ToolFinished {
            call,
            args: updated.as_ref().or(parsed.as_ref().ok()),
            tool: &about,
            result: &answer.result,
        });
        answer
    }

    /// One call through PreToolUse, dispatch and PostToolUse: exactly one result, whether a
    /// hook blocked it, a hook's request to stop the run, and the input a hook replaced the
    /// arguments with when the call ran with it.
    async fn run_call(
        &self,
        tools: &ToolSet,
        tool: Option<&dyn Tool>,
        about: &About,
        call: &ToolCall,
        parsed: &Result<Value, ToolResult>,
        session_id: &str,
    ) -> Ran {
        let cx = &self.hook_cx;
        let args = parsed.as_ref().ok();
        self.emit(&Event::ToolStarted {
            call,
            args,
            tool: about,
        });
        let decision = self.hooks.pre_tool_use(call, tool, args, cx).await;
        let (updated, result, blocked) = match decision {
            PreToolUse::StopRun(reason) => {
                // Neither run nor told to PostToolUse hooks: the run is over.
                let r = ToolResult::error(format!("not run: a hook stopped the run: {reason}"));
                let answer = Answer {
                    result: r,
                    blocked: false,
                    stop: Some(reason),
                };
                return Ran {
                    updated: None,
                    answer,
                };
            }
            PreToolUse::Blocked {
                by,
                reason,
                updated_input,
            } => {
                // What the hooks refused: a hook's replacement input, if one gave it.
                self.emit(&Event::ToolBlocked {
                    call,
                    args: updated_input.as_ref().or(args),
                    tool: about,
                    by,
                    reason: &reason,
                });
                let r = ToolResult::error(format!("blocked by {by}: {reason}"));
                (None, r, true)
            }
            PreToolUse::Run {
                updated_input,
                context,
            } => {
                // A hook's replacement input, else the model's own arguments.
                let run_with = match (&updated_input, parsed) {
                    (Some(v), _) | (None, Ok(v)) => Ok(v.clone()),
                    (None, Err(e)) => Err(e.clone()),
                };
                match run_with {
                    Ok(v) => {
                        let mut r = tools
                            .dispatch_value(&call.name, v, &self.call_cx(call, session_id))
                            .await;
                        append_context(&mut r, context);
                        (updated_input, r, false)
                    }
                    // Unparsable arguments and no hook replaced them: the parse error is the
                    // answer.
                    Err(e) => (None, e, false),
                }
            }
        };
        let (result, stop) = self
            .hooks
            .post_tool_use(call, updated.as_ref().or(args), result, cx)
            .await;
        Ran {
            updated,
            answer: Answer {
                result,
                blocked,
                stop,
            },
        }
    }

    /// The call's own context: tools that start sessions (subagents) link them to this one
    /// through the call, and start them from this agent's profile.
    fn call_cx(&self, call: &ToolCall, session_id: &str) -> ToolContext {
        ToolContext {
            session_id: session_id.to_string(),
            call_id: call.id.clone(),
            profile: Some(self.profile.clone()),
            ..self.tool_cx.clone()
        }
    }
}
