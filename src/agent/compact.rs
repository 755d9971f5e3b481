//! The agent's side of keeping the conversation inside the context window (the logic is in
//! [`crate::context`]). Every model request of the loop goes through [`Agent::request`], which
//! compacts first when the request would pass the point where compaction starts (the limit, or
//! before it where the summary request must still fit whole: `Meter::compact_point`), and once
//! more when the server refuses it as too long; `hx agent --compact` calls
//! [`Agent::compact_now`].
//!
//! A compaction: the `PreCompact` hooks hear it (and may stop the run); then either the prune
//! step (old tool outputs cleared, no model call) when that frees enough and brings the request
//! under the limit, or the summary step (the request before it with the summary instruction
//! appended, same tools, so the prompt cache hits on it; then the history rebuilt around its
//! answer). The session records it and switches to the new history; the tools that
//! remember the conversation (loaded skills, todos) restore themselves from it.
//!
//! The views hear it as events: [`Event::CompactionStarted`] before the hooks, then
//! [`Event::Compacted`] or [`Event::CompactionFailed`] (also when the run is cut short during
//! it), and the summary request's tokens as [`Event::SummaryUsage`].
//!
//! When the summary request fails (an error after the client's retries, or an empty answer):
//! if the next request still fits the window, the run goes on without compacting, with a
//! warning, and makes no further proactive summary until a request would pass the window
//! itself; otherwise (the window is at stake, the server refused a request, or the user asked)
//! the run ends with the error, the session saved as it was.

use crate::context::{estimate, prune, summary, thousands, Budgets, Learned, Meter};
use crate::events::Event;
use crate::hooks::HookEvent;
use crate::model::{AssistantTurn, Message, ModelError, ToolSpec};
use crate::session::{Change, Compaction, Session};
use crate::tools::ToolSet;

use super::checkpoints::{settle, Beside};
use super::Agent;

/// Why a request was not made.
#[derive(Debug)]
pub enum Ended {
    /// A model error, or a conversation that cannot be made to fit.
    Error(ModelError),
    /// A `PreCompact` hook stopped the run; the reason.
    Stopped(String),
}

/// What started a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The next request would pass the point where compaction starts.
    Auto,
    /// The server refused a request as too long.
    Overflow,
    /// `hx agent --compact`.
    Manual,
}

impl Trigger {
    /// The word in the session's `compaction` line.
    fn name(self) -> &'static str {
        match self {
            Trigger::Auto => "auto",
            Trigger::Overflow => "overflow",
            Trigger::Manual => "manual",
        }
    }

    /// The word a `PreCompact` matcher sees: Claude Code's `auto` or `manual`.
    fn hook(self) -> &'static str {
        match self {
            Trigger::Manual => "manual",
            _ => "auto",
        }
    }
}

/// How a compaction that did not end the run went.
enum Done {
    /// The history was replaced: the step (`prune`, `summary`), the estimated size after it,
    /// and what it did.
    Compacted(&'static str, u64, String),
    /// The summary failed, and the run goes on without it (the warning says why).
    Skipped(String),
}

/// Tells the views a compaction ended when its future is dropped before it did (Ctrl-C in
/// `hx chat`, a signal), so no view waits for it any longer.
struct Unfinished<'a> {
    agent: &'a Agent,
    armed: bool,
}

impl Drop for Unfinished<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.agent.emit(&Event::CompactionFailed {
                reason: "interrupted",
            });
        }
    }
}

impl Agent {
    /// The meter of one run of this agent with these tools.
    pub fn meter(&self, tools: &[ToolSpec]) -> Meter {
        let learned = self.learned();
        Meter::new(
            self.context(),
            estimate::overhead(self.profile.model(), tools),
        )
        .with_learned(learned)
    }

    /// One model request of the loop, offering `toolset` (whose specs are `tools`), made to
    /// fit: compacted first when it would pass the limit, compacted and sent again once when
    /// the server refuses it as too long. A second refusal in a row is the error. `after`:
    /// the last turn's checkpoint, still being taken beside the request; a compaction waits
    /// for it and records it first (its hooks may run commands, and it reshapes the history
    /// the checkpoint names a place in).
    pub(super) async fn request(
        &self,
        session: &mut Session,
        toolset: &ToolSet,
        tools: &[ToolSpec],
        meter: &mut Meter,
        after: &mut Option<Beside<'_, ()>>,
    ) -> Result<AssistantTurn, Ended> {
        let mut overflowed = false;
        loop {
            self.take_stated(meter);
            let size = meter.request(session.messages());
            if meter.over_limit(size, session.messages()) {
                settle(session, after).await;
                self.compact(session, (toolset, tools), meter, Trigger::Auto, size)
                    .await?;
            }
            let req = self.chat_request(session.messages(), tools);
            self.emit(&Event::RequestStarted);
            let mut sink = self.events.sink(&self.hook_cx.scope);
            let answer = super::checkpoints::beside(after, self.client.complete(&req, &mut sink));
            match answer.await {
                Ok(turn) => {
                    if let Some(u) = &turn.usage {
                        meter.observed(u.prompt_tokens, session.messages());
                    }
                    return Ok(turn);
                }
                Err(ModelError::ContextOverflow { window, .. }) if !overflowed => {
                    overflowed = true;
                    let size = meter.request(session.messages());
                    if let Some(w) = meter.overflowed(window, size) {
                        self.warn(&w);
                    }
                    // Merged, not replaced: a subagent sharing it may have learned more.
                    self.learn(meter.learned(&self.context()));
                    settle(session, after).await;
                    self.compact(session, (toolset, tools), meter, Trigger::Overflow, size)
                        .await?;
                }
                Err(e) => return Err(Ended::Error(e)),
            }
        }
    }

    /// Tells this agent, and every agent sharing what it learned (its subagents, the next
    /// messages, another profile), the window the server stated for a model when asked (the
    /// app asks it beside the run): they plan for it from their next request on. The teller
    /// holds nothing of the agent but that, so it may outlive the run on another thread.
    pub fn window_teller(&self) -> impl Fn(&str, u64) + Send + Sync + 'static {
        let learned = self.learned.clone();
        move |model: &str, window: u64| {
            let mut all = learned.lock().unwrap_or_else(|e| e.into_inner());
            all.entry(model.to_string())
                .or_default()
                .merge(Learned::stated(window));
        }
    }

    /// Before a request: a window the server stated since the run began applies now.
    fn take_stated(&self, meter: &mut Meter) {
        meter.restate(self.learned());
    }

    /// `hx agent --compact`: the session's history summarised now, whatever its size.
    pub async fn compact_now(&self, session: &mut Session) -> Result<(), Ended> {
        // The MCP tools as listed: the next request offers them too (a `--compact` run that
        // started no server has none to count).
        let toolset = self.tools.as_listed();
        let tools = toolset.specs();
        let mut meter = self.meter(&tools);
        meter.seed(session.measured());
        let size = meter.whole(session.messages());
        self.compact(
            session,
            (&toolset, &tools),
            &mut meter,
            Trigger::Manual,
            size,
        )
        .await
    }

    /// One compaction of a request estimated at `before` tokens, told to the views. The tools
    /// of `toolset` say what of their calls it keeps; `tools` are their specs as the request
    /// before it offered them, which the summary request offers too.
    async fn compact(
        &self,
        session: &mut Session,
        (toolset, tools): (&ToolSet, &[ToolSpec]),
        meter: &mut Meter,
        trigger: Trigger,
        before: u64,
    ) -> Result<(), Ended> {
        self.emit(&Event::CompactionStarted {
            trigger: trigger.name(),
            tokens: before,
        });
        let mut unfinished = Unfinished {
            agent: self,
            armed: true,
        };
        let done = self
            .compact_steps(session, (toolset, tools), meter, trigger, before)
            .await;
        unfinished.armed = false;
        let failed = |reason: &str| self.emit(&Event::CompactionFailed { reason });
        match &done {
            Ok(Done::Compacted(step, after, detail)) => self.emit(&Event::Compacted {
                step,
                before,
                after: *after,
                detail,
            }),
            Ok(Done::Skipped(why)) => failed(why),
            Err(Ended::Stopped(reason)) => failed(&format!("stopped by a hook: {reason}")),
            Err(Ended::Error(e)) => failed(&e.to_string()),
        }
        done.map(|_| ())
    }

    /// The steps of [`Agent::compact`]: the hooks, then prune or summary.
    async fn compact_steps(
        &self,
        session: &mut Session,
        (toolset, tools): (&ToolSet, &[ToolSpec]),
        meter: &mut Meter,
        trigger: Trigger,
        before: u64,
    ) -> Result<Done, Ended> {
        let cx = &self.hook_cx;
        let event = HookEvent::PreCompact {
            trigger: trigger.hook(),
            tokens: before,
        };
        if let Some(reason) = self.hooks.notify(&event, cx).await.stop_run {
            return Err(Ended::Stopped(reason));
        }
        let budgets = Budgets::for_limit(meter.limit());
        // A prune must bring the request under the point where compaction starts, which may
        // be below the limit (see `Meter::compact_point`), or the next request compacts again.
        let limit = meter.compact_point(session.messages());
        if trigger != Trigger::Manual {
            let plan = prune_plan(session.messages(), toolset, &budgets, before, limit);
            let after = before.saturating_sub(plan.freed);
            // From the first old output cleared on, the history is not what the cache holds;
            // the results cut were never sent, so cutting them alone misses nothing.
            let rewritten = match plan.old().iter().map(|(i, _)| *i).min() {
                Some(first) => session
                    .messages()
                    .get(first..)
                    .map_or(0, estimate::messages)
                    .saturating_sub(plan.freed),
                None => 0,
            };
            let weighed = prune::Weighed {
                freed: plan.freed,
                rewritten,
                room_after: limit.saturating_sub(after),
                growth: growth_per_request(session.messages()),
            };
            // A server that refused the request must get a shorter one whatever it costs.
            let pays = trigger == Trigger::Overflow || prune::pays(weighed, self.cache(session));
            if plan.freed >= budgets.min_prune_gain && after <= limit && pays {
                let detail = prune_detail(&plan);
                // The size left is reported as a summary's is, the pruned history estimated
                // whole (what the next request is taken to be until the server counts it):
                // `before` may be the server's count, whose tokens are not the estimate's,
                // so taking the freed estimate off it can leave nothing.
                let left = meter.whole(session.messages()).saturating_sub(plan.freed);
                self.record(session, meter, trigger, "prune", (before, left), {
                    Change::Cleared(plan.cleared)
                })?;
                if rewritten > 0 {
                    self.cache_broken("compaction cleared old tool outputs", rewritten);
                }
                return Ok(Done::Compacted("prune", left, detail));
            }
        }

        // The summary request is the request before it plus one user message: the same system
        // prompt, tools and effort, so DeepSeek's cache hits on everything but the instruction
        // (its prefix units end where each request's input and each answer end). Sent without
        // tools it would miss whole, and it is the largest request of the run. No
        // `tool_choice: "none"` either: thinking mode (DeepSeek's default) does not take it,
        // and the instruction already says not to call a tool; calls made anyway are not run.
        //
        // It may use the window, less room for its answer (the summary and the reasoning
        // before it); it is one request, not the limit's every turn. Compaction started early
        // enough for it to fit whole (`Meter::compact_point`) unless the last turn grew more
        // than the one before it, or the window is too small for that.
        let window_room = meter.summary_room();
        let input = summary_input(session.messages(), meter, window_room)?;
        let req = self.chat_request(&input, tools);
        // Its text is not the answer: only its retries are shown.
        self.emit(&Event::RequestStarted);
        let mut sink = self.events.retry_sink(&cx.scope, "compaction: ");
        let answer = match self.client.complete(&req, &mut sink).await {
            Ok(turn) => {
                if let Some(u) = &turn.usage {
                    let cost = self.cost_of(u);
                    session.record_request_usage(u, cost, self.profile.model(), "summary");
                    self.emit(&Event::SummaryUsage(u, cost));
                }
                match turn.content.trim() {
                    "" if !turn.tool_calls.is_empty() => Err(ModelError::Transport(
                        "the summary request was answered with tool calls, not a summary".into(),
                    )),
                    "" => Err(ModelError::Transport(
                        "the summary request gave an empty answer".into(),
                    )),
                    // Text beside calls is the summary; the calls are not run (nothing in the
                    // history asks for them: it is replaced).
                    text => Ok(text.to_string()),
                }
            }
            Err(e) => Err(e),
        };
        let text = match answer {
            Ok(t) => t,
            Err(e) if trigger == Trigger::Auto && before <= meter.window() => {
                meter.summary_failed();
                self.warn(&format!(
                    "compaction failed: {e}; the run goes on without it while its requests fit \
                     the window"
                ));
                return Ok(Done::Skipped(e.to_string()));
            }
            Err(e) => {
                self.warn("compaction failed: the summary request gave no summary");
                return Err(Ended::Error(e));
            }
        };

        let room = limit.saturating_sub(meter.overhead());
        let keep = summary::Keep {
            tools: toolset,
            reminders: &self.reminders,
            notes: &[
                super::repeats::NOTICE,
                super::text_call::CORRECTION,
                super::goal::NOTICE,
            ],
        };
        let rebuilt = summary::rebuild(
            session.messages(),
            &text,
            &budgets,
            self.profile.reasoning_echo(),
            room,
            &keep,
        )
        .map_err(|size| Ended::Error(too_large(size + meter.overhead(), limit, meter)))?;
        let after = meter.whole(&rebuilt.history);
        let mut detail = format!("summarised; {} skills kept", rebuilt.skills.len());
        if !rebuilt.forgotten.is_empty() {
            detail.push_str(&format!(
                ", {} left to load again",
                rebuilt.forgotten.join(", ")
            ));
        }
        self.record(session, meter, trigger, "summary", (before, after), {
            Change::Replaced(rebuilt.history)
        })?;
        self.restore_tools(session.messages());
        self.cache_broken("compaction replaced the history with a summary", after);
        Ok(Done::Compacted("summary", after, detail))
    }

    /// Records a compaction in the session and starts measuring its new history.
    fn record(
        &self,
        session: &mut Session,
        meter: &mut Meter,
        trigger: Trigger,
        step: &str,
        (before, after): (u64, u64),
        change: Change,
    ) -> Result<(), Ended> {
        session
            .compact(Compaction {
                trigger: trigger.name().to_string(),
                step: step.to_string(),
                tokens_before: before,
                tokens_after: after,
                change,
            })
            .map_err(|e| Ended::Error(ModelError::TooLarge(e)))?;
        meter.history_changed();
        Ok(())
    }
}

/// The messages of the summary request for `history`, at most `window_room` tokens as the
/// meter counts them (the server's last count, bytes / 3 for the rest). A history that fits
/// so is sent whole, since shrinking it rewrites the cached prefix. One that does not sheds
/// what it passes by, counted in the estimate's tokens (which count more than the server's
/// for the same bytes, so the server's count lands under the room): the newest outputs
/// first, which were never sent (see `summary::request`).
fn summary_input(
    history: &[Message],
    meter: &mut Meter,
    window_room: u64,
) -> Result<Vec<Message>, Ended> {
    let instruction = estimate::message(&Message::User(summary::PROMPT.to_string()));
    let measured = meter.request(history).saturating_add(instruction);
    let room = match measured.checked_sub(window_room) {
        None | Some(0) => u64::MAX,
        Some(excess) => estimate::messages(history)
            .saturating_add(instruction)
            .saturating_sub(excess),
    };
    summary::request(history, room).map_err(|size| Ended::Error(too_large(size, room, meter)))
}

/// Tokens a cut result may come out above its share (the proportion of characters it keeps
/// is an estimate): the cut aims this much lower, so that the request lands under the limit.
const CUT_MARGIN: u64 = 32;

/// The prune step's plan for a request of `before` tokens against `limit`: older outputs
/// cleared beyond their budget; then, when the request would still pass the limit, the results
/// the model has not seen cut to the room the limit leaves them (at most their budget, so the
/// next turns have room too). When that room is under `newest_floor`, they are left whole:
/// the older history takes the rest of the window, and the summary makes room instead.
fn prune_plan(
    history: &[Message],
    toolset: &ToolSet,
    budgets: &Budgets,
    before: u64,
    limit: u64,
) -> prune::Plan {
    let plan = prune::plan(history, budgets.keep_tool_output, toolset);
    let after = before.saturating_sub(plan.freed);
    if after <= limit {
        return plan;
    }
    let unseen = prune::unseen(history, toolset);
    let rest = after.saturating_sub(unseen.iter().map(|(_, size)| size).sum());
    let room = limit.saturating_sub(rest);
    if room < budgets.newest_floor {
        return plan;
    }
    let share = room
        .min(budgets.keep_tool_output)
        .saturating_sub(CUT_MARGIN);
    plan.with_cuts(prune::cut(history, &unseen, share))
}

/// What a prune did, as one phrase.
fn prune_detail(plan: &prune::Plan) -> String {
    let old = plan.old().len();
    let cut = match plan.cut {
        1 => "cut the newest tool output to fit".to_string(),
        n => format!("cut the {n} newest tool outputs to fit"),
    };
    match (old, plan.cut) {
        (_, 0) => format!("cleared {old} old tool outputs"),
        (0, _) => cut,
        _ => format!("cleared {old} old tool outputs, {cut}"),
    }
}

/// The error for a conversation whose essentials alone (`size` tokens) pass the `room` they
/// may have.
fn too_large(size: u64, room: u64, meter: &Meter) -> ModelError {
    ModelError::TooLarge(format!(
        "the conversation cannot fit the context window: the system prompt, the tools and the \
         task alone take about {} tokens, and compaction has {} (context_window {}, compact_at \
         {}); shorten the task, or raise context_window if the model takes more",
        thousands(size),
        thousands(room),
        thousands(meter.window()),
        thousands(meter.limit())
    ))
}

/// The tokens the history grew by per model request so far: what its tool results and
/// answers add each turn, after the system prompt.
fn growth_per_request(history: &[Message]) -> u64 {
    let turns = history
        .iter()
        .filter(|m| matches!(m, Message::Assistant { .. }))
        .count()
        .max(1) as u64;
    estimate::messages(history.get(1..).unwrap_or_default()) / turns
}
