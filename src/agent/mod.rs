//! The agent loop: ask the model, run the tools it calls, send the results back, until it
//! answers in plain text. The loop knows no tool by name and no hook by kind.
//!
//! An [`Agent`] is a value: made once by its [`Builder`] (`app::build` does it for every
//! front end), and varied only by [`Agent::with_profile`] (another model, effort or price:
//! `/model`, `/effort`, a command's `model:`, a typed subagent) and [`Agent::with_tools`]
//! (fewer tools: a command's `allowed-tools`, a typed subagent's `tools:`). Its parts live
//! beside it: the tool calls of a turn ([`calls`]), checkpoints ([`checkpoints`]), cost and
//! budgets ([`cost`]), compaction ([`compact`]), what the loop watches the model for: the same
//! call over and over ([`repeats`]), calls written as text ([`text_call`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::context::{CompactAt, Learned, Meter};
use crate::events::{Event, Events};
use crate::hooks::{Combined, HookContext, HookEvent, Hooks};
use crate::model::{AssistantTurn, ChatModel, Message, ModelError, Profile, ToolSpec};
use crate::session::{Recorder, RunStats, Session};
use crate::tools::output::bound;
use crate::tools::{Reminder, Restore, ToolContext, ToolSet};

mod calls;
mod checkpoints;
pub mod compact;
pub mod cost;
pub mod goal;
pub mod outcome;
pub mod prompt;
pub mod repeats;
pub mod steer;
pub mod task;
pub mod text_call;

use crate::session::CheckpointKind;
use checkpoints::Beside;

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
    /// The model kept making the same call after it was told (`[loop]`); the line saying so.
    Looped(String),
    /// The goal's command (`--until`) still failed when its rounds ran out; the line saying so.
    GoalUnmet(String),
}

/// One user message for [`Agent::run_message`].
#[derive(Debug, Clone, Copy)]
pub struct Input<'a> {
    pub text: &'a str,
    /// The message starts the session's use here, so SessionStart hooks run: once per
    /// conversation, not once per message.
    pub session_start: bool,
    /// It opens with the block of a skill the user invoked (`/NAME`), which the model has
    /// loaded as of this message.
    pub invoked_skill: bool,
    /// What the user typed, when `text` is not it (`/NAME args`): recorded beside the
    /// message for what lists sessions, and the checkpoint's label.
    pub typed: Option<&'a str>,
    /// Messages the user sends while the run goes on, appended before its next request.
    pub steers: Option<&'a steer::Steers>,
}

impl<'a> Input<'a> {
    /// A message that starts the session's use here, invoking nothing.
    pub fn new(text: &'a str) -> Input<'a> {
        Input {
            text,
            session_start: true,
            invoked_skill: false,
            typed: None,
            steers: None,
        }
    }
}

/// Whose loop this is: the main agent's ends with `Stop` and is a turn of the user's; a
/// subagent's ends with `SubagentStop`, takes no checkpoints (its changes are inside its
/// parent's turn) and runs no prompt hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Main,
    Subagent,
}

/// One agent: a model and what its name decides, the tools it may use, the hooks that watch
/// it. Cloning is cheap (its parts are shared), and clones share what a run spends and what
/// was learned of the server's window.
#[derive(Clone)]
pub struct Agent {
    client: Arc<dyn ChatModel>,
    profile: Arc<Profile>,
    tools: ToolSet,
    tool_cx: ToolContext,
    hooks: Hooks,
    /// Which agent this is (its scope) and the session, as hooks are told.
    hook_cx: HookContext,
    /// Where everything that happens goes: the views (trace, `--json`). Subagents share it.
    events: Events,
    system_prompt: String,
    max_turns: u32,
    /// When the same call again is pointed out, and when it ends the run.
    loops: crate::config::LoopSettings,
    /// Asked after every tool-calling turn for a user message to append (todo reminders).
    reminders: Vec<Arc<dyn Reminder>>,
    role: Role,
    /// Where the sessions of subagents this agent starts are recorded.
    recorder: Recorder,
    /// When to compact; the window is the profile's.
    compact_at: CompactAt,
    /// What earlier runs learned of the server's window, by model (see [`compact`]): shared
    /// by every clone, so a subagent or the next message on the same model does not pay for
    /// the same refused request again. One entry per model the run used.
    learned: Arc<Mutex<BTreeMap<String, Learned>>>,
    /// Told the history when it changes other than by appending (the loaded skills, the todo
    /// list): a compaction, a resumed session, a skill the user invoked.
    restore: Vec<Arc<dyn Restore>>,
    /// Where the main agent keeps its checkpoints of the workspace (none: off, or a
    /// subagent).
    checkpoints: Option<Arc<crate::checkpoint::Checkpoints>>,
    budget: cost::Budget,
    /// The command each answer must pass (`--until`, `/goal`), if any.
    goal: Option<Arc<goal::Goal>>,
}

/// The one way to make an [`Agent`]. Cloning a builder before [`Builder::build`] makes agents
/// that share a budget and what was learned of the window: a main agent and the subagent
/// template of its `task` tool.
#[derive(Clone)]
pub struct Builder {
    agent: Agent,
}

impl Agent {
    /// A builder of an agent that talks to `client` as `profile` says, with `tools` and their
    /// context, telling `events` what happens. Until set otherwise: the main agent's role, no
    /// hooks, an empty system prompt, 200 turns, nothing recorded, no checkpoints, no budget.
    pub fn builder(
        client: Arc<dyn ChatModel>,
        profile: Profile,
        tools: ToolSet,
        tool_cx: ToolContext,
        events: Events,
    ) -> Builder {
        Builder {
            agent: Agent {
                client,
                profile: Arc::new(profile),
                tools,
                tool_cx,
                hooks: Hooks::new(),
                hook_cx: HookContext::default(),
                events,
                system_prompt: String::new(),
                max_turns: crate::config::DEFAULT_MAX_TURNS,
                loops: crate::config::DEFAULT_LOOP,
                reminders: Vec::new(),
                role: Role::Main,
                recorder: Recorder::default(),
                compact_at: crate::context::Settings::default().compact_at,
                learned: Default::default(),
                restore: Vec::new(),
                checkpoints: None,
                budget: cost::Budget::default(),
                goal: None,
            },
        }
    }

    /// This agent on another model, effort or price: everything else, the conversation's
    /// tools and hooks, the budget and what was learned of each model's window included,
    /// stays.
    pub fn with_profile(&self, profile: Profile) -> Agent {
        Agent {
            profile: Arc::new(profile),
            ..self.clone()
        }
    }

    /// This agent with other tools (a subset: [`ToolSet::only`]).
    pub fn with_tools(&self, tools: ToolSet) -> Agent {
        Agent {
            tools,
            ..self.clone()
        }
    }

    /// This agent with a goal its answers must pass (none: an answer is the end).
    pub fn with_goal(&self, goal: Option<Arc<goal::Goal>>) -> Agent {
        Agent {
            goal,
            ..self.clone()
        }
    }

    pub fn goal(&self) -> Option<&goal::Goal> {
        self.goal.as_deref()
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// The context its tools run in: the workspace, limits, sandbox.
    pub fn tool_cx(&self) -> &ToolContext {
        &self.tool_cx
    }

    pub fn system_prompt(&self) -> &str {
        &self.system_prompt
    }

    pub fn max_turns(&self) -> u32 {
        self.max_turns
    }

    /// The window of its model and when it compacts.
    pub fn context(&self) -> crate::context::Settings {
        crate::context::Settings {
            window: self.profile.window(),
            compact_at: self.compact_at,
        }
    }

    /// What was learned of its model's window.
    fn learned(&self) -> Learned {
        let all = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        all.get(self.profile.model()).copied().unwrap_or_default()
    }

    /// Keeps what a run learned of its model's window, with what others learned of it.
    fn learn(&self, learned: Learned) {
        let mut all = self.learned.lock().unwrap_or_else(|e| e.into_inner());
        all.entry(self.profile.model().to_string())
            .or_default()
            .merge(learned);
    }

    /// Where its checkpoints are kept (none: off, or a subagent).
    pub fn checkpoints(&self) -> Option<&Arc<crate::checkpoint::Checkpoints>> {
        self.checkpoints.as_ref()
    }

    /// Lets the tools that remember the conversation (`load_skill`'s "already loaded", the
    /// todo list) take it up from `history`: after a session is opened or switched to, and
    /// whenever the history changed other than by appending.
    pub fn restore_tools(&self, history: &[Message]) {
        for r in &self.restore {
            r.restore(history);
        }
    }

    /// The request this agent makes of its model with `messages` and `tools`: every request
    /// of the loop and of its compactions (the same settings keep the cached prefix), and the
    /// first request of a run that `hx skills eval` sends.
    pub fn chat_request<'a>(
        &'a self,
        messages: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> crate::model::ChatRequest<'a> {
        crate::model::ChatRequest {
            model: self.profile.model(),
            messages,
            tools,
            thinking: self.profile.thinking(),
        }
    }

    /// Sends `req` to the model, its retries shown with `label` (`hx skills eval`'s requests,
    /// whose text is not an answer).
    pub async fn complete_quietly(
        &self,
        req: &crate::model::ChatRequest<'_>,
        label: &str,
    ) -> Result<AssistantTurn, ModelError> {
        let mut sink = self.events.retry_sink(&self.hook_cx.scope, label);
        self.client.complete(req, &mut sink).await
    }

    /// Runs `task` as the next user message of `session`, to an answer. The system prompt
    /// starts an empty session; a recorded one keeps its own. Every message goes through the
    /// session, so whatever happens (a model error after retries, the future dropped on
    /// Ctrl-C) the session holds the conversation up to that point, and its figures. What
    /// happens is told to the events as it happens; the main agent's run is a turn
    /// ([`Event::TurnStarted`]), whose end the caller reports ([`Event::TurnEnded`]), since
    /// only it knows how the turn ended when the run is cut short.
    pub async fn run(&self, session: &mut Session, task: &str) -> Result<Outcome, ModelError> {
        self.run_message(session, Input::new(task)).await
    }

    /// [`Agent::run`] for one message of a conversation (see [`Input`]). `max_turns` counts
    /// this message's requests. Dropping the future cancels the message: calls it leaves
    /// unanswered are the caller's to answer before the next request.
    pub async fn run_message(
        &self,
        session: &mut Session,
        input: Input<'_>,
    ) -> Result<Outcome, ModelError> {
        let began = Instant::now();
        let turns_before = session.stats.turns;
        // A checkpoint of the last message that came after its cancel.
        session.record_arrived();
        session.begin_message();
        let task = match self.submit(input.text, input.session_start).await {
            Ok(task) => task,
            Err(refused) => return Ok(refused),
        };
        if session.is_empty() {
            session.push(Message::System(self.system_prompt.clone()));
        }
        let label = crate::text::one_line(input.typed.unwrap_or(&task), 80);
        let at_message = session.messages().len();
        // The message's checkpoint is taken while the MCP servers start and its first request
        // is out (the workspace does not change before a tool runs), so its work waits on the
        // model instead of adding to it.
        let beside = Beside::new(Box::pin(self.take_checkpoint(session)));
        if let Some(typed) = input.typed {
            session.record_typed(typed, &task);
        }
        session.push(Message::User(task));
        // A skill the user invoked is loaded as of now: `load_skill` says so rather than
        // putting the body in twice.
        if input.invoked_skill {
            self.restore_tools(session.messages());
        }
        // The specs change only when an MCP server's tool list did, seen before a request:
        // otherwise the request prefix stays byte-identical from turn to turn.
        let toolset = self.tools.clone();
        let tools = toolset.specs();
        let mut meter = self.meter(&tools);
        meter.seed(session.measured());
        let mut run = Run {
            began,
            turns_before,
            label,
            at_message,
            compactions: session.stats.compactions,
            beside,
            after: None,
            toolset,
            tools,
            meter,
            last_text: String::new(),
            continuations: 0,
            repeats: repeats::Repeats::new(self.loops),
            text_calls: 0,
            goal_rounds: 0,
        };
        // A compaction due before the first request would reshape the history the message's
        // checkpoint names a place in: then it is taken and recorded first.
        let size = run.meter.request(session.messages());
        if run.meter.over_limit(size, session.messages()) {
            self.message_checkpoint(session, &mut run, true).await;
        }
        loop {
            if let Some(limit) = self.limit_reached(session, &mut run).await {
                return Ok(limit);
            }
            self.refresh_tools(session, &mut run).await;
            // Notes of what happened meanwhile (a background shell ended) go last, after
            // everything the last request held.
            for r in &self.reminders {
                if let Some(text) = r.before_request() {
                    self.emit(&Event::Noted(&text));
                    session.push(Message::User(text));
                }
            }
            // What the user typed meanwhile goes last of all: it is what the model answers.
            for text in input.steers.map(steer::Steers::take).unwrap_or_default() {
                self.emit(&Event::Steered(&text));
                session.push(Message::User(text));
            }
            session.stats.turns = session.stats.turns.saturating_add(1);
            // Made to fit the context window first, when it would not (see `compact`); the
            // last turn's checkpoint goes on beside it.
            let asked = run
                .beside
                .run(self.request(
                    session,
                    &run.toolset,
                    &run.tools,
                    &mut run.meter,
                    &mut run.after,
                ))
                .await;
            self.after_recorded(session, &mut run).await;
            // Recorded before the answer is: the turn's own checkpoint comes after it. A
            // server's overflow error compacted the history meanwhile: the checkpoint names no
            // place in it, so it is kept for what changed but is no point to rewind to.
            let in_place = session.stats.compactions == run.compactions;
            self.message_checkpoint(session, &mut run, in_place).await;
            let turn = match asked {
                Ok(t) => t,
                Err(compact::Ended::Stopped(reason)) => return Ok(Outcome::Stopped(reason)),
                Err(compact::Ended::Error(e)) => {
                    // The run is over: hooks hear it (the trace prints the figures so far).
                    self.stop(session, began, false).await;
                    return Err(e);
                }
            };
            if let Some(outcome) = self.take_turn(session, &mut run, turn).await {
                return Ok(outcome);
            }
        }
    }

    /// The main agent's hooks before a message: SessionStart (once per conversation) and
    /// UserPromptSubmit. The task, with the context they add; `Err`: a hook refused it.
    async fn submit(&self, task: &str, session_start: bool) -> Result<String, Outcome> {
        let mut task = task.to_string();
        if self.role == Role::Subagent {
            return Ok(task);
        }
        let cx = &self.hook_cx;
        self.emit(&Event::TurnStarted);
        let start = if session_start {
            self.hooks.notify(&HookEvent::SessionStart, cx).await
        } else {
            Default::default()
        };
        if let Some(reason) = start.stop_run {
            return Err(Outcome::Stopped(reason));
        }
        self.emit(&Event::PromptSubmitted { cwd: &cx.cwd });
        let c = self
            .hooks
            .notify(&HookEvent::UserPromptSubmit { prompt: &task }, cx)
            .await;
        if let Some(reason) = c.block.or(c.stop_run) {
            return Err(Outcome::Stopped(format!(
                "prompt refused by a hook: {reason}"
            )));
        }
        // Context from hooks travels with the task: the system prompt stays fixed. All of it
        // together is cut like one tool result.
        let extra: Vec<String> = start.context.into_iter().chain(c.context).collect();
        if !extra.is_empty() {
            task.push_str("\n\n");
            task.push_str(&bound(extra.join("\n\n"), self.output_limit()));
        }
        Ok(task)
    }

    /// The turn limit or the budget, when the next request would pass one: the run ends
    /// (the hooks hear it, but cannot extend it).
    async fn limit_reached(&self, session: &mut Session, run: &mut Run<'_>) -> Option<Outcome> {
        let outcome = if session.stats.turns.saturating_sub(run.turns_before) >= self.max_turns {
            Outcome::MaxTurns(std::mem::take(&mut run.last_text))
        } else {
            // Subagents spend from the same purse: a task call may have passed the limit.
            Outcome::MaxCost(self.over_budget()?)
        };
        // Before the Stop hooks, which may run commands.
        self.after_recorded(session, run).await;
        self.stop(session, run.began, false).await;
        Some(outcome)
    }

    /// The tools before a request: the first refresh starts the MCP servers; a later one
    /// finds the same generation unless a server's list changed. A relist that gave the same
    /// tools changes nothing: the same bytes go out.
    async fn refresh_tools(&self, session: &Session, run: &mut Run<'_>) {
        let refreshed = run.beside.run(run.toolset.refresh()).await;
        if !refreshed || run.toolset.specs() == run.tools {
            return;
        }
        run.tools = run.toolset.specs();
        // Other schemas: the server's last count no longer describes the request.
        let overhead = crate::context::estimate::overhead(self.profile.model(), &run.tools);
        run.meter.tools_changed(overhead);
        // The tools come before the messages: the whole request misses. (Not the first
        // listing, before this run's first request: nothing went out yet.)
        if session.stats.turns > run.turns_before {
            let size = run.meter.request(session.messages());
            self.cache_broken("an MCP server's tools changed", size);
        }
    }

    /// What the model's turn asks for, done: its cost counted, the message recorded, the
    /// calls run and answered (checkpoints around them), reminders added. The run's outcome
    /// when it ends here.
    async fn take_turn<'a>(
        &'a self,
        session: &mut Session,
        run: &mut Run<'a>,
        mut turn: AssistantTurn,
    ) -> Option<Outcome> {
        if let Some(u) = &turn.usage {
            turn.cost = self.cost_of(u);
            session.record_usage(u, turn.cost, self.profile.model());
        }
        self.emit(&Event::Response(&turn));
        // Whether to go on is decided by the calls collected, not by `finish_reason`: servers
        // disagree on it, and a call without an answer would break the next request.
        if turn.tool_calls.is_empty() {
            session.push(turn.to_message(self.profile.reasoning_echo()));
            if self.text_call(session, run, &turn.content) {
                session.turn_done();
                return None;
            }
            return self.answered(session, run, turn.content).await;
        }
        // Before the calls of a turn that may change files, whoever would change them.
        let before = if self.may_change_files(&run.toolset, &turn.tool_calls) {
            let names: Vec<&str> = turn.tool_calls.iter().map(|c| c.name.as_str()).collect();
            let label = crate::text::one_line(&names.join(", "), 80);
            self.checkpoint(session, CheckpointKind::Turn, label).await
        } else {
            None
        };
        session.push(turn.to_message(self.profile.reasoning_echo()));
        run.continuations = 0;
        if !turn.content.trim().is_empty() {
            run.last_text = turn.content.clone();
        }
        // The request that passed the limit is the last: its calls are answered, not run, so
        // the history stays one a later run can send.
        if let Some(why) = self.over_budget() {
            for call in &turn.tool_calls {
                session.push(Message::Tool {
                    tool_call_id: call.id.clone(),
                    content: format!("Error: not run: {why}"),
                });
            }
            session.turn_done();
            self.stop(session, run.began, false).await;
            return Some(Outcome::MaxCost(why));
        }
        let answers_at = session.messages().len();
        let stopped = self
            .answer_calls(session, &run.toolset, &turn.tool_calls)
            .await;
        let answered = session.messages().len();
        run.after = before.map(|(n, before)| self.after_turn(session, n, before, answered));
        session.turn_done();
        if let Some(reason) = stopped {
            self.after_recorded(session, run).await;
            return Some(Outcome::Stopped(reason));
        }
        // Reminders go after all of the turn's tool messages: an assistant turn with tool
        // calls must be followed directly by their answers.
        for r in &self.reminders {
            if let Some(text) = r.after_tool_turn(&turn.tool_calls) {
                session.push(Message::User(text));
            }
        }
        // A run that goes on takes the checkpoint beside its next request; one the loop watch
        // ends waits for it before its Stop hooks (`watch_repeats`).
        self.watch_repeats(session, run, &turn.tool_calls, answers_at)
            .await
    }

    /// A turn without calls: the answer, unless the goal's command fails ([`goal`]) or a Stop
    /// hook keeps the run going (at most [`MAX_STOP_CONTINUATIONS`] times in a row).
    async fn answered(
        &self,
        session: &mut Session,
        run: &mut Run<'_>,
        answer: String,
    ) -> Option<Outcome> {
        session.turn_done();
        match self.check_goal(session, run).await {
            Some(goal::Checked::Again) => return None,
            Some(goal::Checked::Unmet(outcome)) => return Some(outcome),
            Some(goal::Checked::Passed) | None => {}
        }
        let c = self.stop(session, run.began, run.continuations > 0).await;
        if let Some(reason) = c.stop_run {
            return Some(Outcome::Stopped(reason));
        }
        match c.block {
            Some(reason) if run.continuations < MAX_STOP_CONTINUATIONS => {
                run.continuations += 1;
                session.push(Message::User(bound(reason, self.output_limit())));
                None
            }
            _ => Some(Outcome::Answered(answer)),
        }
    }

    /// The `Notification` hooks, told that a long turn ended and hx waits for the user
    /// (Claude Code's `idle_prompt`). Only told: what they say changes nothing.
    pub async fn notification(&self, message: &str) {
        let event = HookEvent::Notification {
            message,
            kind: "idle_prompt",
        };
        self.hooks.notify(&event, &self.hook_cx).await;
    }

    /// The `SessionEnd` hooks, told the conversation's session ends, and why (`clear`,
    /// `prompt_input_exit`, `other`).
    pub async fn session_end(&self, reason: &str) {
        self.hooks
            .notify(&HookEvent::SessionEnd { reason }, &self.hook_cx)
            .await;
    }

    /// A warning for the user, beside the trace.
    pub fn warn(&self, text: &str) {
        self.events
            .warn(&self.hook_cx.scope, &crate::text::Warning::new(text));
    }

    /// A line for the user about the run's course (`hx: ...`), beside the trace.
    fn notice(&self, text: &str) {
        self.events
            .warn(&self.hook_cx.scope, &crate::text::Warning::notice(text));
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
            subagent: self.role == Role::Subagent,
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
        match self.role {
            Role::Subagent => HookEvent::SubagentStop {
                stats,
                stop_hook_active,
            },
            Role::Main => HookEvent::Stop {
                stats,
                stop_hook_active,
            },
        }
    }
}

impl Builder {
    /// The hooks that watch it, and what they are told of it.
    pub fn hooks(mut self, hooks: Hooks, cx: HookContext) -> Builder {
        self.agent.hooks = hooks;
        self.agent.hook_cx = cx;
        self
    }

    pub fn system_prompt(mut self, prompt: String) -> Builder {
        self.agent.system_prompt = prompt;
        self
    }

    pub fn max_turns(mut self, n: u32) -> Builder {
        self.agent.max_turns = n;
        self
    }

    /// `[loop]`: when the same call again is pointed out, and when it ends the run.
    pub fn loops(mut self, loops: crate::config::LoopSettings) -> Builder {
        self.agent.loops = loops;
        self
    }

    pub fn role(mut self, role: Role) -> Builder {
        self.agent.role = role;
        self
    }

    /// Asked after every tool-calling turn for a message to append.
    pub fn reminders(mut self, reminders: Vec<Arc<dyn Reminder>>) -> Builder {
        self.agent.reminders = reminders;
        self
    }

    /// Told the history when it changes other than by appending.
    pub fn restore(mut self, restore: Vec<Arc<dyn Restore>>) -> Builder {
        self.agent.restore = restore;
        self
    }

    /// Where the sessions of the subagents it starts are recorded.
    pub fn recorder(mut self, recorder: Recorder) -> Builder {
        self.agent.recorder = recorder;
        self
    }

    pub fn compact_at(mut self, at: CompactAt) -> Builder {
        self.agent.compact_at = at;
        self
    }

    pub fn checkpoints(mut self, c: Option<Arc<crate::checkpoint::Checkpoints>>) -> Builder {
        self.agent.checkpoints = c;
        self
    }

    /// `--max-cost`, and the time requests are priced at (`HX_NOW`, for tests).
    pub fn budget(mut self, max_cost: Option<f64>, fixed_now: Option<u64>) -> Builder {
        self.agent.budget = self.agent.budget.limited(max_cost, fixed_now);
        self
    }

    /// Other tools, for the agent this builder makes next.
    pub fn tools(mut self, tools: ToolSet) -> Builder {
        self.agent.tools = tools;
        self
    }

    /// Another profile, for the agent this builder makes next.
    pub fn profile(mut self, profile: Profile) -> Builder {
        self.agent.profile = Arc::new(profile);
        self
    }

    pub fn build(self) -> Agent {
        self.agent
    }
}

/// One message's run: the state its loop carries from turn to turn.
struct Run<'a> {
    began: Instant,
    /// The session's turns before this message: `max_turns` counts this message's.
    turns_before: u32,
    /// The message, shortened, for its checkpoint.
    label: String,
    /// Messages of the history before it.
    at_message: usize,
    /// The session's compactions before its first request.
    compactions: u32,
    /// The message's checkpoint, taken beside the first request.
    beside: Beside<'a>,
    /// The last turn's checkpoint ([`Agent::after_turn`]), taken beside the next request.
    after: Option<Beside<'a, ()>>,
    toolset: ToolSet,
    /// The specs the requests offer.
    tools: Vec<ToolSpec>,
    meter: Meter,
    /// The last text the model wrote beside calls, for a run that reaches its turn limit.
    last_text: String,
    /// Stop hooks that kept the run going, in a row.
    continuations: u32,
    /// The calls so far, watched for the same one again.
    repeats: repeats::Repeats,
    /// Answers that were calls written as text, sent back to the model.
    text_calls: u32,
    /// Answers the goal checked (`--until`).
    goal_rounds: u32,
}

/// Stop hooks may keep a run going this many times in a row, so a hook that always says
/// "not done" cannot loop forever.
pub const MAX_STOP_CONTINUATIONS: u32 = 8;
