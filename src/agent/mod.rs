//! The agent loop: ask the model, run the tools it calls, send the results back, until it
//! answers in plain text. The loop knows no tool by name and no hook by kind.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use futures_util::FutureExt;
use serde_json::Value;

use crate::events::{Event, Events};
use crate::hooks::{append_context, Combined, HookContext, HookEvent, Hooks, PreToolUse};
use crate::model::{ChatModel, Message, ModelError, ReasoningEcho, Thinking, ToolCall};
use crate::session::{Recorder, RunStats, Session};
use crate::tools::output::{bound, quote};
use crate::tools::{
    parse_args, About, Kind, Reminder, Restore, Tool, ToolContext, ToolResult, ToolSet,
};

pub mod compact;
pub mod outcome;
pub mod prompt;
pub mod task;

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered in plain text.
    Answered(String),
    /// `max_turns` requests were made and the model still wanted tools; the last text, if any.
    MaxTurns(String),
    /// A hook ended the run (`continue: false`) or refused the prompt; the reason.
    Stopped(String),
    /// Its requests cost more than `--max-cost`; the line saying so.
    MaxCost(String),
}

/// One agent: a model, the tools it may use, the hooks that watch it.
#[derive(Clone)]
pub struct Agent {
    pub model: Arc<dyn ChatModel>,
    pub model_name: String,
    /// How hard the model thinks, sent with every request of this agent, the summary of a
    /// compaction included (the same settings, so the same cached prefix); `None` sends
    /// nothing, and the model's default holds.
    pub thinking: Option<Thinking>,
    pub tools: ToolSet,
    pub tool_cx: ToolContext,
    pub hooks: Hooks,
    /// Which agent this is (its scope) and the session, as hooks are told.
    pub hook_cx: HookContext,
    /// Where everything that happens goes: the views (trace, `--json`). Subagents share it.
    pub events: Events,
    pub system_prompt: String,
    pub max_turns: u32,
    /// Whether assistant messages carry `reasoning_content` back (per provider).
    pub reasoning_echo: ReasoningEcho,
    /// Asked after every tool-calling turn for a user message to append (todo reminders).
    pub reminders: Vec<Arc<dyn Reminder>>,
    /// A subagent ends with `SubagentStop` instead of `Stop`.
    pub is_subagent: bool,
    /// Where the sessions of subagents this agent starts are recorded.
    pub recorder: Recorder,
    /// The model's context window and when to compact (see [`compact`]).
    pub context: crate::context::Settings,
    /// What earlier runs of this agent learned of the server's window (see [`compact`]);
    /// shared by its clones, which talk to the same server.
    pub learned: Arc<std::sync::Mutex<crate::context::Learned>>,
    /// Told the history when compaction replaces it (the loaded skills, the todo list).
    pub restore: Vec<Arc<dyn Restore>>,
    /// Where the main agent keeps its checkpoints of the workspace (none: off, or a
    /// subagent, whose changes are inside its parent's turn).
    pub checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    /// The prices of its model's requests; `None`: unknown, so costs are too.
    pub price: Option<crate::model::Price>,
    /// The time every request is priced at (`HX_NOW`, for tests); `None`: the clock's.
    pub fixed_now: Option<u64>,
    /// The run ends after the request that takes [`Agent::spent`] past this.
    pub max_cost: Option<f64>,
    /// What the requests of this agent's run cost, its subagents' included (they share it).
    pub spent: Arc<std::sync::Mutex<crate::model::Spend>>,
}

/// One call's result, whether a hook blocked it, and a hook's request to stop the run.
type CallOutcome = (ToolResult, bool, Option<String>);

/// [`CallOutcome`] before the output cap, with a hook's replacement input when the call ran
/// with it.
type Ran = (Option<Value>, ToolResult, bool, Option<String>);

/// Stop hooks may keep a run going this many times in a row, so a hook that always says
/// "not done" cannot loop forever.
pub const MAX_STOP_CONTINUATIONS: u32 = 8;

impl Agent {
    /// The request this agent makes of its model with `messages` and `tools`: every request
    /// of the loop and of its compactions (the same settings keep the cached prefix), and the
    /// first request of a run that `hx skills eval` sends.
    pub fn chat_request<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [crate::model::ToolSpec],
    ) -> crate::model::ChatRequest<'a> {
        crate::model::ChatRequest {
            model: &self.model_name,
            messages,
            tools,
            thinking: self.thinking,
        }
    }

    /// What a request with `usage` cost now, counted in [`Agent::spent`]; `None` without a
    /// price (counted as unpriced).
    pub fn cost_of(&self, usage: &crate::model::Usage) -> Option<crate::model::Cost> {
        let now = self.now();
        let cost = self.price.as_ref().map(|p| p.cost(usage, now));
        self.spent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add_cost(cost);
        cost
    }

    /// The one line saying that `what` breaks the prompt cache's prefix: the next request
    /// misses about `tokens` tokens that would have been hits, and what that costs more.
    pub fn cache_broken(&self, what: &str, tokens: u64) {
        let cost = self.price.as_ref().map_or_else(
            || "its cost unknown".to_string(),
            |p| format!("{} more than hits", p.miss_extra(tokens, self.now()).show()),
        );
        self.events.warn(
            &self.hook_cx.scope,
            &crate::text::Warning::notice(format!(
                "{what}: the next request misses the prompt cache for about {} tokens ({cost})",
                crate::text::thousands(tokens)
            )),
        );
    }

    /// What the prompt cache makes of rewritten history, for weighing a prune: a hit's price
    /// as a share of a miss's from the price table. Without a price, a server that has
    /// reported cache hits is taken to charge a tenth for them (OpenAI's discount on its
    /// recent models, the dearest common case short of DeepSeek's); one that never has keeps
    /// no cache.
    pub(crate) fn cache(&self, session: &Session) -> crate::context::prune::Cache {
        use crate::context::prune::Cache;
        match &self.price {
            Some(p) => {
                let r = p.rates_at(self.now()).0;
                if r.input_cache_miss > 0.0 {
                    Cache::HitShare(r.input_cache_hit / r.input_cache_miss)
                } else {
                    Cache::None
                }
            }
            None if session.stats.usage.prompt_cache_hit_tokens > 0 => Cache::HitShare(0.1),
            None => Cache::None,
        }
    }

    /// The time requests are priced at: `HX_NOW`'s, else the clock's.
    fn now(&self) -> u64 {
        self.fixed_now.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
    }

    /// The limit `--max-cost` set, when the run's requests (its subagents' included) have
    /// passed it: the amount spent, shown.
    pub fn over_budget(&self) -> Option<String> {
        let max = self.max_cost?;
        let spent = *self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let (nanos, currency) = spent.known().or(spent.currency.map(|c| (spent.nanos, c)))?;
        (nanos as f64 / 1e9 > max).then(|| {
            format!(
                "the run cost {} and passed --max-cost {}",
                currency.show(nanos),
                currency.show((max * 1e9) as u64)
            )
        })
    }

    /// Runs `task` as the next user message of `session`, to an answer. The system prompt
    /// starts an empty session; a recorded one keeps its own. Every message goes through the
    /// session, so whatever happens (a model error after retries, the future dropped on
    /// Ctrl-C) the session holds the conversation up to that point, and its figures. What
    /// happens is told to [`Agent::events`] as it happens; the main agent's run is a turn
    /// ([`Event::TurnStarted`]), whose end the caller reports ([`Event::TurnEnded`]), since
    /// only it knows how the turn ended when the run is cut short.
    pub async fn run(&self, session: &mut Session, task: &str) -> Result<Outcome, ModelError> {
        self.run_message(session, task, true).await
    }

    /// [`Agent::run`] for one message of a conversation (`hx chat`): `session_start` says
    /// whether this message starts the session's use here, so SessionStart hooks run once per
    /// conversation rather than once per message. `max_turns` counts this message's requests.
    /// Dropping the future cancels the message: calls it leaves unanswered are the caller's
    /// to answer before the next request.
    pub async fn run_message(
        &self,
        session: &mut Session,
        task: &str,
        session_start: bool,
    ) -> Result<Outcome, ModelError> {
        let began = Instant::now();
        let cx = &self.hook_cx;
        let mut task = task.to_string();
        let turns_before = session.stats.turns;
        session.begin_message();
        if !self.is_subagent {
            self.emit(&Event::TurnStarted);
            let start = if session_start {
                self.hooks.notify(&HookEvent::SessionStart, cx).await
            } else {
                Default::default()
            };
            if let Some(reason) = start.stop_run {
                return Ok(Outcome::Stopped(reason));
            }
            self.emit(&Event::PromptSubmitted { cwd: &cx.cwd });
            let c = self
                .hooks
                .notify(&HookEvent::UserPromptSubmit { prompt: &task }, cx)
                .await;
            if let Some(reason) = c.block.or(c.stop_run) {
                return Ok(Outcome::Stopped(format!(
                    "prompt refused by a hook: {reason}"
                )));
            }
            // Context from hooks travels with the task: the system prompt stays fixed. All of
            // it together is cut like one tool result.
            let extra: Vec<String> = start.context.into_iter().chain(c.context).collect();
            if !extra.is_empty() {
                task.push_str("\n\n");
                task.push_str(&bound(extra.join("\n\n"), self.output_limit()));
            }
        }
        if session.is_empty() {
            session.push(Message::System(self.system_prompt.clone()));
        }
        let label = crate::text::one_line(&task, 80);
        let at_message = session.messages().len();
        let compactions = session.stats.compactions;
        let taking = self.take_checkpoint(session);
        // A skill the user invoked (`/NAME`, its block in the message) is loaded as of now:
        // `load_skill` says so rather than putting the body in twice.
        let invoked = task.starts_with("<skill name=\"");
        session.push(Message::User(task));
        if invoked {
            for r in &self.restore {
                r.restore(session.messages());
            }
        }
        // The specs change only when an MCP server's tool list did, seen before a request:
        // otherwise the request prefix stays byte-identical from turn to turn. The first
        // refresh (the loop's, before the first request) starts the MCP servers; each later
        // one finds the same generation unless a server's list changed.
        let mut toolset = self.tools.clone();
        let mut tools = toolset.specs();
        let mut meter = self.meter(&tools);
        meter.seed(session.measured());
        // The message's checkpoint is taken while the MCP servers start and its first request
        // is out (the workspace does not change before a tool runs), so its git work waits
        // on the model instead of adding to it. A compaction due before that request would
        // reshape the history it names a place in: then it is taken and recorded first.
        let mut beside = Beside::new(taking);
        let size = meter.request(session.messages());
        if meter.over_limit(size) {
            self.message_checkpoint(session, &mut beside, &label, at_message, true)
                .await;
        }
        let mut last_text = String::new();
        let mut continuations = 0;
        let outcome = loop {
            if session.stats.turns.saturating_sub(turns_before) >= self.max_turns {
                // Hooks still hear that the run ended (the trace prints its figures), but
                // cannot extend it past the limit.
                self.stop(session, began, false).await;
                break Outcome::MaxTurns(last_text);
            }
            // Subagents spend from the same purse: a task call may have passed the limit.
            if let Some(why) = self.over_budget() {
                self.stop(session, began, false).await;
                break Outcome::MaxCost(why);
            }
            // A relist that gave the same tools changes nothing: the same bytes go out.
            let refreshed = beside.run(toolset.refresh()).await;
            if refreshed && toolset.specs() != tools {
                tools = toolset.specs();
                // Other schemas: the server's last count no longer describes the request.
                meter.tools_changed(crate::context::estimate::overhead(&self.model_name, &tools));
                // The tools come before the messages: the whole request misses. (Not the
                // first listing, before this run's first request: nothing went out yet.)
                if session.stats.turns > turns_before {
                    let size = meter.request(session.messages());
                    self.cache_broken("an MCP server's tools changed", size);
                }
            }
            session.stats.turns = session.stats.turns.saturating_add(1);
            // Made to fit the context window first, when it would not (see `compact`).
            let asked = beside
                .run(self.request(session, &toolset, &tools, &mut meter))
                .await;
            // Recorded before the answer is: the turn's own checkpoint comes after it. A
            // server's overflow error compacted the history meanwhile: the checkpoint names no
            // place in it, so it is kept for what changed but is no point to rewind to.
            let in_place = session.stats.compactions == compactions;
            self.message_checkpoint(session, &mut beside, &label, at_message, in_place)
                .await;
            let turn = match asked {
                Ok(t) => t,
                Err(compact::Ended::Stopped(reason)) => break Outcome::Stopped(reason),
                Err(compact::Ended::Error(e)) => {
                    // The run is over: hooks hear it (the trace prints the figures so far).
                    self.stop(session, began, false).await;
                    return Err(e);
                }
            };
            let mut turn = turn;
            if let Some(u) = &turn.usage {
                turn.cost = self.cost_of(u);
                session.record_usage(u, turn.cost, &self.model_name);
            }
            // Whether to go on is decided by the calls collected, not by `finish_reason`:
            // servers disagree on it, and a call without an answer would break the next request.
            let has_calls = !turn.tool_calls.is_empty();
            self.emit(&Event::Response(&turn));
            // Before the calls of a turn that may change files (any tool but those that only
            // read or search), whoever would change them: a command, a subagent.
            let before = if self.may_change_files(&toolset, &turn.tool_calls) {
                let label = turn
                    .tool_calls
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ");
                self.checkpoint(session, "turn", crate::text::one_line(&label, 80))
                    .await
            } else {
                None
            };
            session.push(turn.to_message(self.reasoning_echo));
            if !has_calls {
                session.turn_done();
                let c = self.stop(session, began, continuations > 0).await;
                if let Some(reason) = c.stop_run {
                    break Outcome::Stopped(reason);
                }
                match c.block {
                    Some(reason) if continuations < MAX_STOP_CONTINUATIONS => {
                        continuations += 1;
                        session.push(Message::User(bound(reason, self.output_limit())));
                        continue;
                    }
                    _ => break Outcome::Answered(turn.content),
                }
            }
            continuations = 0;
            if !turn.content.trim().is_empty() {
                last_text = turn.content.clone();
            }
            // The request that passed the limit is the last: its calls are answered, not run,
            // so the history stays one a later run can send.
            if let Some(why) = self.over_budget() {
                for call in &turn.tool_calls {
                    session.push(Message::Tool {
                        tool_call_id: call.id.clone(),
                        content: format!("Error: not run: {why}"),
                    });
                }
                session.turn_done();
                self.stop(session, began, false).await;
                break Outcome::MaxCost(why);
            }
            let mut stopped: Option<String> = None;
            // Counted as made before they run, so a run abandoned mid-call still shows them.
            session.stats.tool_calls = session
                .stats
                .tool_calls
                .saturating_add(u32::try_from(turn.tool_calls.len()).unwrap_or(u32::MAX));
            let outcomes = self
                .run_calls(&toolset, &turn.tool_calls, session.id())
                .await;
            for (call, (result, blocked, stop)) in turn.tool_calls.iter().zip(outcomes) {
                session.stats.blocked = session.stats.blocked.saturating_add(u32::from(blocked));
                stopped = stopped.or(stop);
                // Cut to the output cap already (see `guarded_call`).
                session.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content: result.content,
                });
            }
            if let Some((n, before)) = before {
                self.after_turn(session, n, &before).await;
            }
            session.turn_done();
            if let Some(reason) = stopped {
                break Outcome::Stopped(reason);
            }
            // Reminders go after all of the turn's tool messages: an assistant turn with
            // tool calls must be followed directly by their answers.
            for r in &self.reminders {
                if let Some(text) = r.after_tool_turn(&turn.tool_calls) {
                    session.push(Message::User(text));
                }
            }
        };
        Ok(outcome)
    }

    /// Whether a turn's calls may change files: any call of a tool that does not say it only
    /// reads or searches (a tool the set does not have is answered without running).
    fn may_change_files(&self, tools: &ToolSet, calls: &[ToolCall]) -> bool {
        self.checkpoints.is_some()
            && calls.iter().any(|c| {
                tools
                    .get(&c.name)
                    .is_some_and(|t| !matches!(t.kind(), Kind::Read | Kind::Search))
            })
    }

    /// Takes a checkpoint of the workspace for `session` and records it; `what` is `message`,
    /// `turn` or `after` (unnumbered). Its number and what the store knows of it, or nothing
    /// when checkpoints are off or it could not be taken (the run goes on; a warning says
    /// why).
    async fn checkpoint(
        &self,
        session: &mut Session,
        what: &str,
        label: String,
    ) -> Option<(u32, crate::checkpoint::Snap)> {
        let at_message = session.messages().len();
        let taken = self.take_checkpoint(session).await;
        self.record_checkpoint(session, what, label, at_message, taken, what != "after")
    }

    /// The message's checkpoint, once: waited for if it is still being taken, then recorded
    /// (`numbered`: as a point to rewind to).
    async fn message_checkpoint(
        &self,
        session: &mut Session,
        beside: &mut Beside<impl Future<Output = Taken>>,
        label: &str,
        at_message: usize,
        numbered: bool,
    ) {
        if let Some(t) = beside.finish().await {
            self.record_checkpoint(
                session,
                "message",
                label.to_string(),
                at_message,
                t,
                numbered,
            );
        }
    }

    /// The work of a checkpoint that does not need the session, so that it can go on while
    /// the session is busy: none when checkpoints are off or the run is unrecorded.
    fn take_checkpoint(&self, session: &Session) -> impl Future<Output = Taken> + '_ {
        // A rewind needs the session file: an unrecorded run keeps none.
        let recorded = session.path().is_some();
        let id = session.id().to_string();
        let previous = session
            .checkpoints()
            .last()
            .map(|c| crate::checkpoint::Snap {
                commit: c.line.commit.clone(),
                tree: c.line.tree.clone(),
            });
        async move {
            if !recorded {
                return None;
            }
            let store = self.store().await?;
            Some(store.snapshot(&id, previous.as_ref()).await)
        }
    }

    /// Records what [`Agent::take_checkpoint`] took, `at_message` the place in the history
    /// it precedes; warns when it could not be taken.
    fn record_checkpoint(
        &self,
        session: &mut Session,
        what: &str,
        label: String,
        at_message: usize,
        taken: Taken,
        numbered: bool,
    ) -> Option<(u32, crate::checkpoint::Snap)> {
        match taken? {
            Ok((snap, warnings)) => {
                for w in warnings {
                    self.warn(&w);
                }
                let n = numbered.then(|| session.next_checkpoint());
                session.record_checkpoint(crate::session::CheckpointLine {
                    n,
                    what: what.to_string(),
                    commit: snap.commit.clone(),
                    tree: snap.tree.clone(),
                    at_message,
                    label,
                    at: crate::session::store::now_rfc3339(),
                });
                Some((n.unwrap_or(0), snap))
            }
            Err(e) => {
                self.warn(&format!("no checkpoint taken: {e}"));
                None
            }
        }
    }

    async fn store(&self) -> Option<&crate::checkpoint::Store> {
        let warn = |line: &str| self.warn(line);
        self.checkpoints.as_ref()?.store(&warn).await
    }

    /// After a turn's tools: the checkpoint that tells what they changed, and the views told.
    async fn after_turn(&self, session: &mut Session, n: u32, before: &crate::checkpoint::Snap) {
        let Some((_, after)) = self.checkpoint(session, "after", String::new()).await else {
            return;
        };
        let Some(store) = self.store().await else {
            return;
        };
        match store.changes(&before.tree, &after.tree).await {
            Ok(c) if !c.paths.is_empty() => self.emit(&Event::FilesChanged {
                checkpoint: n,
                changes: &c,
            }),
            Ok(_) => {}
            Err(e) => self.warn(&format!("cannot tell what the turn changed: {e}")),
        }
    }

    /// A warning for the user, beside the trace.
    pub fn warn(&self, text: &str) {
        self.events
            .warn(&self.hook_cx.scope, &crate::text::Warning::new(text));
    }

    fn emit(&self, event: &Event<'_>) {
        self.events.emit(&self.hook_cx.scope, event);
    }

    /// Tells the views this agent's run ended ([`Event::Stopped`]) without asking the hooks:
    /// for a run cut short by a signal or Ctrl-C, where the user wants out, not more hook
    /// work. `elapsed`: since the run (in `hx chat`, the message) began.
    pub fn stopped(&self, session: &Session, elapsed: Duration) {
        self.emit(&Event::Stopped {
            stats: &session.message_stats(),
            elapsed,
            subagent: self.is_subagent,
        });
    }

    /// The run ended (for now: a Stop hook may keep it going): the views and the hooks hear it.
    async fn stop(&self, session: &Session, began: Instant, stop_hook_active: bool) -> Combined {
        self.stopped(session, began.elapsed());
        let stats = session.message_stats();
        let event = self.stop_event(&stats, stop_hook_active);
        self.hooks.notify(&event, &self.hook_cx).await
    }

    /// The output cap: characters of one tool result, and of hook text added to a message.
    fn output_limit(&self) -> usize {
        self.tool_cx.limits.output_chars
    }

    fn stop_event<'a>(&self, stats: &'a RunStats, stop_hook_active: bool) -> HookEvent<'a> {
        if self.is_subagent {
            HookEvent::SubagentStop {
                stats,
                stop_hook_active,
            }
        } else {
            HookEvent::Stop {
                stats,
                stop_hook_active,
            }
        }
    }

    /// Runs a turn's calls, one result per call in call order. Calls of tools that may run
    /// concurrently (subagents) all start at once; the others run one at a time, in order,
    /// beside them, because later ones may depend on what earlier ones wrote. Once a hook
    /// stops the run, the ordered calls not yet started are answered without running.
    async fn run_calls(
        &self,
        tools: &ToolSet,
        calls: &[ToolCall],
        session_id: &str,
    ) -> Vec<CallOutcome> {
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
                    let skipped = ToolResult::error("not run: a hook stopped the run")
                        .bounded(self.output_limit());
                    out.push((i, (skipped, false, None)));
                    continue;
                }
                let r = self.guarded_call(tools, call, session_id).await;
                stop = stop.or_else(|| r.2.clone());
                out.push((i, r));
            }
            out
        };
        let parallel_run =
            join_all(parallel.into_iter().map(|(i, call)| async move {
                (i, self.guarded_call(tools, call, session_id).await)
            }));
        let (ordered_out, parallel_out) =
            futures_util::future::join(ordered_run, parallel_run).await;
        let mut all: Vec<(usize, CallOutcome)> =
            ordered_out.into_iter().chain(parallel_out).collect();
        all.sort_by_key(|(i, _)| *i);
        all.into_iter().map(|(_, outcome)| outcome).collect()
    }

    /// One call, answered once: [`Agent::run_call`], with a panic anywhere in it (a tool, a
    /// hook, a bug) turned into that call's `Error: internal error in TOOL` result, so the
    /// conversation stays valid and the run goes on (the panic hook has printed its one line
    /// on stderr already: the binary's names the bug and where it happened). Here, and only
    /// here, the answer is cut to the output cap and the views hear the call finish: whatever
    /// produced the answer (the tool, an error, the hooks' additions, the panic), what they
    /// are shown is what the model is sent.
    async fn guarded_call(
        &self,
        tools: &ToolSet,
        call: &ToolCall,
        session_id: &str,
    ) -> CallOutcome {
        let tool = tools.get(&call.name).map(|t| t.as_ref());
        let about = tool.map_or_else(About::default, About::of);
        let parsed = parse_args(&call.name, &call.arguments);
        let run = self.run_call(tools, tool, &about, call, &parsed, session_id);
        // Unwind safety: what a call shares with the rest of the run (the todo list, the
        // loaded skills, the terminal) sits behind mutexes whose poisoning hx ignores, and
        // every such state is whole between two statements.
        let (updated, result, blocked, stop) = match AssertUnwindSafe(run).catch_unwind().await {
            Ok(ran) => ran,
            Err(_) => {
                let name = quote(&call.name);
                let result = ToolResult::error(format!("internal error in {name}"));
                (None, result, false, None)
            }
        };
        let result = result.bounded(self.output_limit());
        // Every started call is finished for the views, run or not, so nothing waits for it.
        self.emit(&Event::ToolFinished {
            call,
            args: updated.as_ref().or(parsed.as_ref().ok()),
            tool: &about,
            result: &result,
        });
        (result, blocked, stop)
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
                return (None, r, false, Some(reason));
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
                        // The call's own context: tools that start sessions (subagents) link
                        // them to this one through the call.
                        let tool_cx = ToolContext {
                            session_id: session_id.to_string(),
                            call_id: call.id.clone(),
                            ..self.tool_cx.clone()
                        };
                        let mut r = tools.dispatch_value(&call.name, v, &tool_cx).await;
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
        (updated, result, blocked, stop)
    }
}

/// What taking a checkpoint gave: none when checkpoints are off or the run is unrecorded;
/// else the checkpoint and its warnings, or why it could not be taken.
type Taken = Option<Result<(crate::checkpoint::Snap, Vec<String>), String>>;

/// A checkpoint being taken beside other work, until what it took is asked for once.
struct Beside<F> {
    taking: Option<Pin<Box<F>>>,
    taken: Option<Taken>,
}

impl<F: Future<Output = Taken>> Beside<F> {
    fn new(taking: F) -> Self {
        Beside {
            taking: Some(Box::pin(taking)),
            taken: None,
        }
    }

    /// Runs `work` to its end while the checkpoint, if still being taken, goes on beside it.
    async fn run<T>(&mut self, work: impl Future<Output = T>) -> T {
        let mut work = std::pin::pin!(work);
        if let Some(t) = self.taking.as_mut() {
            tokio::select! {
                biased;
                out = &mut work => return out,
                t = t.as_mut() => {
                    self.taken = Some(t);
                    self.taking = None;
                }
            }
        }
        work.await
    }

    /// What the checkpoint took, waited for if need be; none once asked before.
    async fn finish(&mut self) -> Option<Taken> {
        if let Some(t) = self.taking.take() {
            self.taken = Some(t.await);
        }
        self.taken.take()
    }
}
