//! The conversation of `hx chat`, and bare `hx` on a terminal. Each message is a user turn
//! on one session; Ctrl-C cancels the running turn, not the program; slash commands manage
//! the session. This loop drives an `app::Conversation`, which holds the agent and the
//! session; switching and resuming sessions is `switch`, `/model` and `/effort` `model`.
//!
//! What a turn does is shown by the same view as `hx agent`'s trace (`events::HumanView`, on
//! the terminal this loop prints through), spinner included; the loop adds how each turn
//! ended and its own lines.
//!
//! Signals: SIGINT is watched only while a turn runs (a fresh watcher per turn, so a stray
//! one from before does not cancel the next); at the prompt the terminal is raw and Ctrl-C is
//! a key the editor reads. SIGTERM and SIGHUP end the program at any point, with the cleanup
//! of `hx agent` (exit 143 / 129, the session line).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use tokio::signal::unix::{signal, SignalKind};

use super::approve::Approvals;
use super::commands::{self, Input};
use super::editor::{self, LineEditor, Read, SkillNames};
use super::queue::{During, Queue};
use super::terminal::SavedTerminal;
use crate::agent::Outcome;
use crate::app::invoke::Invocables;
use crate::app::outcome::{Ending, Front};
use crate::app::session::Resumed;
use crate::app::signals::{self, Signals, ENDING};
use crate::app::{build, exit, Conversation, Outgoing};
use crate::config::{Config, Env};
use crate::events::{Event, Events, HumanView, Scope};
use crate::hooks;
use crate::process::signal_name;
use crate::session::{self, Recorder};
use crate::skills::SkillRegistry;
use crate::term::Term;
use crate::text::Warning;

/// The prompt. The benchmark and the tests wait for it.
pub const PROMPT: &str = "hx> ";

/// What a conversation starts from.
pub struct Setup {
    pub config: Config,
    pub cwd: PathBuf,
    pub env: Env,
    /// The session `-c` or `-r` names, read.
    pub resume: Option<Resumed>,
    /// Record nothing.
    pub ephemeral: bool,
    /// The terminal everything is shown on.
    pub term: Arc<Term>,
}

/// What a build of the agent gives: the agent, and the command files (found once, on the
/// first build's thread, so that the prompt does not wait for them).
pub(super) type Built = Result<(build::Built, Arc<crate::commands::Discovery>), String>;

/// A read of the line editor in flight: the prompt, up during a turn and after it.
pub(super) type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = Read> + Send + Sync>>;

/// How a message's turn ended.
enum TurnEnd {
    Done(Result<Outcome, crate::model::ModelError>),
    /// Ctrl-C (SIGINT, or at an approval question).
    Cancelled,
    /// SIGTERM or SIGHUP: the program ends.
    Ended(i32),
}

pub(super) struct Chat {
    pub(super) config: Config,
    pub(super) cwd: PathBuf,
    pub(super) env: Env,
    pub(super) term: Arc<Term>,
    /// The agent's events, shown by a [`HumanView`] on `term`.
    pub(super) events: Events,
    pub(super) recorder: Recorder,
    pub(super) editor: LineEditor,
    pub(super) approvals: Arc<Approvals>,
    pub(super) skill_names: SkillNames,
    /// The first build, until it is done: it runs while the first prompt is up.
    pub(super) building: Option<tokio::task::JoinHandle<Built>>,
    pub(super) skills: Arc<SkillRegistry>,
    /// The command files `/NAME` runs.
    pub(super) commands: Arc<crate::commands::Discovery>,
    /// The commands whose notes were said already (once per conversation).
    pub(super) noted: std::collections::HashSet<String>,
    /// Tells the user a long turn ended (none: `notifications = "off"`).
    pub(super) notifier: Option<Arc<crate::notify::Notifier>>,
    /// The agent and the current session (created with the first message: an empty chat
    /// leaves no session for `-c` to find; or opened by `-c`, `-r`, `/resume`).
    pub(super) conversation: Conversation,
    /// What the user sent while a turn ran (see `queue`).
    pub(super) queue: Arc<Queue>,
    /// The prompt's read, when one is in flight: started during a turn, it goes on as the
    /// prompt after it.
    pub(super) pending: Option<Pending>,
    /// The last turn was stopped (Ctrl-C): what is queued waits for the user.
    pub(super) stopped: bool,
}

/// Runs the conversation until the user leaves (0) or a signal ends it (128 + its number);
/// `terminal` is put back on every way out.
pub async fn run(setup: Setup, terminal: &SavedTerminal) -> i32 {
    let Setup {
        config,
        cwd,
        env,
        resume,
        ephemeral,
        term,
    } = setup;
    let events = Events::new(Arc::new(HumanView::new(
        term.clone(),
        config.show_reasoning,
        config.trace.verbosity(),
    )));
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let recorder = build::recorder(&config, &workspace, &env, ephemeral);
    let skill_names: SkillNames = Arc::new(RwLock::new(Vec::new()));
    let id = match &resume {
        Some(r) => r.id().to_string(),
        None => session::store::new_id(),
    };
    let conversation = Conversation::new(recorder.clone(), id.clone());
    let queue = Arc::new(Queue::new(conversation.steers()));
    let (editor, warnings) = match LineEditor::start(
        editor::history_path(&env),
        skill_names.clone(),
        queue.clone(),
    ) {
        Ok(e) => e,
        Err(e) => {
            term.line(&format!("hx: cannot start the line editor: {e}"));
            return exit::FAILED;
        }
    };
    for w in warnings {
        term.line(&Warning::new(w).to_string());
    }
    let notifier = crate::notify::Notifier::new(
        config.notifications,
        config.notify.clone(),
        config.notify_after,
        workspace.clone(),
    );
    let approvals = Approvals::new(term.clone(), notifier.clone());
    // The prompt stays up while a turn runs: what the turn shows goes above it.
    if editor.can_print_above() {
        let e = editor.clone();
        term.route(Some(crate::term::Route(Arc::new(move |t: &str| {
            e.print_raw(t)
        }))));
    }
    // The agent, and with it the skill catalog (2,000 skills take tens of milliseconds), is
    // built on the blocking pool while the prompt is already up; a line waits for it.
    let building = {
        let (config, cwd, env) = (config.clone(), cwd.clone(), env.clone());
        let (events, recorder, id) = (events.clone(), recorder.clone(), id.clone());
        let (approver, editor): (Arc<dyn hooks::Approver>, _) = (approvals.clone(), editor.clone());
        tokio::task::spawn_blocking(move || {
            let mut warnings = Vec::new();
            let built = build::build_agent_with(
                &config,
                &cwd,
                &env,
                events,
                recorder,
                &id,
                build::Asks {
                    approver: Some(approver),
                    ..Default::default()
                },
                &mut warnings,
            );
            let built = built.map(|b| {
                let invocables =
                    Invocables::discover(b.agent.tool_cx().workspace.root(), b.skills.clone());
                warnings.extend(invocables.warnings());
                warnings.extend(invocables.shadowed(&commands::builtin_names()));
                (b, invocables.commands)
            });
            for w in warnings {
                editor.print(&w.to_string());
            }
            built
        })
    };
    let mut chat = Chat {
        config,
        cwd,
        env,
        term,
        events,
        conversation,
        queue,
        pending: None,
        stopped: false,
        recorder,
        editor,
        approvals,
        skill_names,
        building: Some(building),
        skills: Arc::new(SkillRegistry::default()),
        commands: Default::default(),
        noted: Default::default(),
        notifier,
    };
    if let Some(r) = resume {
        if let Err(code) = chat.open(r) {
            return code;
        }
    }
    let mut ends = match Signals::of(&ENDING) {
        Ok(s) => s,
        Err(e) => {
            chat.say(&format!("hx: cannot watch signals: {e}"));
            return exit::FAILED;
        }
    };
    let reaper = tokio::spawn(signals::reap_orphans());
    let code = chat.converse(&mut ends, terminal).await;
    reaper.abort();
    code
}

/// How long the banner waits for the agent's build, so that its warnings come first.
const BANNER_WAIT: std::time::Duration = std::time::Duration::from_millis(300);

impl Chat {
    pub(super) fn say(&self, text: &str) {
        self.term.line(text);
    }

    pub(super) fn set_skill_names(&self) {
        let names = self.named();
        *self.skill_names.write().unwrap_or_else(|p| p.into_inner()) = names;
    }

    /// What `/NAME` may invoke: the command files, then the skills.
    pub(super) fn invocables(&self) -> Invocables {
        Invocables {
            commands: self.commands.clone(),
            skills: self.skills.clone(),
        }
    }

    /// The command files and skills `/` offers, for Tab and `/help`; the chat's own
    /// commands hide those of their names.
    fn named(&self) -> Vec<commands::Named> {
        let builtins = commands::builtin_names();
        self.invocables()
            .listed()
            .into_iter()
            .filter(|l| !builtins.contains(&l.name.as_str()))
            .map(|l| commands::Named {
                name: l.name,
                hint: l.hint,
                description: l.description,
            })
            .collect()
    }

    /// The conversation, until the user leaves (0) or a signal ends it.
    async fn converse(&mut self, ends: &mut Signals, terminal: &SavedTerminal) -> i32 {
        // The build's warnings (skills, the sandbox, AGENTS.md) come before the banner,
        // together with the config's: the build takes milliseconds, so it is waited for a
        // moment. A slower one (thousands of skills on a slow disk) goes on behind the prompt.
        if let Some(building) = self.building.as_mut() {
            if let Ok(built) = tokio::time::timeout(BANNER_WAIT, building).await {
                self.building = None;
                if let Err(code) = self.install(built, terminal) {
                    return code;
                }
            }
        }
        self.say(&format!(
            "hx chat · {} · {} · {} · /help lists commands · Ctrl-D leaves",
            self.config.model,
            self.config.provider,
            crate::model::client::shown_url(&self.config.base_url)
        ));
        let mut leaving = false;
        loop {
            let line = match self.read(PROMPT, ends, terminal).await {
                Ok(r) => r,
                Err(code) => return code,
            };
            let line = match line {
                // Tab sent it as the turn ended: no turn runs to queue it behind.
                Read::Line(l) | Read::NextTurn(l) => l,
                Read::Interrupted if leaving => break,
                Read::Interrupted => {
                    leaving = true;
                    self.say("hx: press Ctrl-C again, Ctrl-D or type /exit to leave");
                    continue;
                }
                Read::Eof => break,
                Read::Failed(e) => {
                    self.say(&format!("hx: cannot read the terminal: {e}"));
                    break;
                }
            };
            leaving = false;
            if !line.trim().is_empty() {
                if let Err(code) = self.ready(ends, terminal).await {
                    return code;
                }
            }
            let text = commands::join_continued(&line);
            if !text.trim().is_empty() {
                self.editor.remember(&text);
            }
            let input = commands::parse(&text);
            match input {
                // After a stopped turn, what was queued waits for this.
                Input::Empty if !self.queue.is_empty() => {
                    if let Err(code) = self.ready(ends, terminal).await {
                        return code;
                    }
                    self.stopped = false;
                    if let Some(code) = self.follow(ends, terminal).await {
                        return code;
                    }
                }
                Input::Empty => {}
                Input::Message(m) => {
                    if let Some(code) = self.send(&Outgoing::text(m), ends, terminal).await {
                        return code;
                    }
                    if let Some(code) = self.follow(ends, terminal).await {
                        return code;
                    }
                }
                Input::Invoke { name, args } => {
                    if let Some(code) = self.invoke(&name, &args, ends, terminal).await {
                        return code;
                    }
                    if let Some(code) = self.follow(ends, terminal).await {
                        return code;
                    }
                }
                Input::Queue => self.say(&self.queue.listing()),
                Input::Exit => break,
                Input::Help => self.say(commands::help(&self.named()).trim_end()),
                Input::New => {
                    self.hear_session_end("clear").await;
                    self.new_session();
                }
                Input::Resume(id) => {
                    if let Err(code) = self.resume(id, ends, terminal).await {
                        return code;
                    }
                }
                Input::Compact => {
                    if let Some(sig) = self.compact(ends).await {
                        return self.end_by_signal(sig, terminal).await;
                    }
                }
                Input::Model(None) => self.offer_models().await,
                Input::Model(name) => self.model(name),
                Input::Effort(name) => self.effort(name),
                Input::Goal(command) => self.goal(command),
                Input::Diff => self.diff().await,
                Input::Rewind(arg) => {
                    if let Err(code) = self.rewind(arg, ends, terminal).await {
                        return code;
                    }
                }
                Input::Skills => self.say(&super::skills_text(
                    &self.skills,
                    &self.skills.catalog(self.config.skills_catalog_budget),
                    self.config.skills_catalog_budget,
                )),
                Input::Todos => self.say(&super::todos_text(self.messages())),
                Input::Shells(arg) => self.shells(arg).await,
                Input::Usage => {
                    self.say(&super::usage_report(self.conversation.session()));
                }
                Input::Context => {
                    if let Some(agent) = self.conversation.agent() {
                        let specs = agent.tools().as_listed().specs();
                        let size = super::ContextSize::measure(
                            agent.context(),
                            agent.profile().model(),
                            agent.system_prompt(),
                            &specs,
                            self.messages(),
                        );
                        self.say(&super::context_text(
                            agent.system_prompt(),
                            &self.skills.catalog(self.config.skills_catalog_budget),
                            self.skills.len(),
                            self.config.skills_catalog_budget,
                            &specs,
                            self.messages(),
                            &size,
                        ))
                    }
                }
            }
        }
        // The user left.
        self.hear_session_end("prompt_input_exit").await;
        self.close_session();
        exit::ANSWERED
    }

    /// The `SessionEnd` hooks, told the session ends and why, when it holds a message (a
    /// session that never began has nothing to end).
    pub(super) async fn hear_session_end(&self, reason: &str) {
        if let (Some(agent), Some(_)) = (self.conversation.agent(), self.conversation.session()) {
            agent.session_end(reason).await;
        }
    }

    fn messages(&self) -> &[crate::model::Message] {
        self.conversation.messages()
    }

    /// One line from the editor; SIGTERM or SIGHUP meanwhile ends the program, and so does
    /// a first build that fails (`Err`: the exit code, everything closed).
    pub(super) async fn read(
        &mut self,
        prompt: &str,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Result<Read, i32> {
        let mut read = match self.pending.take() {
            Some(p) => p,
            None => self.start_read(prompt),
        };
        loop {
            tokio::select! {
                r = &mut read => return Ok(r),
                sig = ends.recv() => {
                    return Err(self.end_by_signal(sig, terminal).await);
                }
                built = async {
                    match self.building.as_mut() {
                        Some(b) => b.await,
                        None => std::future::pending().await,
                    }
                }, if self.building.is_some() => {
                    self.building = None;
                    self.install(built, terminal)?;
                }
            }
        }
    }

    /// Waits for the first build, if it is still running.
    async fn ready(&mut self, ends: &mut Signals, terminal: &SavedTerminal) -> Result<(), i32> {
        if let Some(building) = self.building.take() {
            let built = tokio::select! {
                b = building => b,
                sig = ends.recv() => {
                    return Err(self.end_by_signal(sig, terminal).await);
                }
            };
            self.install(built, terminal)?;
        }
        Ok(())
    }

    /// Puts the first build's agent in place; a build that failed (a hooks file that is not
    /// valid, a sandbox that is required but cannot be had) ends the program with exit 2,
    /// before any request, as it does `hx agent`.
    fn install(
        &mut self,
        built: Result<Built, tokio::task::JoinError>,
        terminal: &SavedTerminal,
    ) -> Result<(), i32> {
        let failed = match built {
            Ok(Ok((built, commands))) => {
                self.conversation.set_agent(built.agent);
                self.skills = built.skills;
                self.commands = commands;
                self.set_skill_names();
                return Ok(());
            }
            Ok(Err(e)) => (exit::USAGE, e),
            Err(e) => (exit::FAILED, format!("cannot build the agent: {e}")),
        };
        // Straight to the terminal, not above the prompt: hx ends before the editor would
        // print it.
        terminal.restore();
        self.term.route(None);
        self.say(&format!("\nhx: {}", failed.1));
        self.close_session();
        Err(failed.0)
    }

    /// Ends the chat on a signal that ends the program: the terminal put back, the session's
    /// `SessionEnd` hooks told (`other`, as Claude Code says of any end but the three it
    /// names), the session closed with the signal as its outcome.
    pub(super) async fn end_by_signal(&mut self, sig: i32, terminal: &SavedTerminal) -> i32 {
        terminal.restore();
        self.term.route(None);
        // The handlers stay: a second signal must not cut the session's last lines short.
        self.say(&format!("\nhx: terminated by {}", signal_name(sig)));
        self.hear_session_end("other").await;
        let mapped = self
            .conversation
            .ended(Ending::Signalled(sig), Front::Conversation);
        self.close_session();
        mapped.code
    }

    /// Sends one message and runs its turn to the end, a cancel, or a signal (`Some`: the
    /// program's exit code).
    pub(super) async fn send(
        &mut self,
        message: &Outgoing,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Option<i32> {
        let agent = self.conversation.agent()?;
        // The window of the model this message goes to, for the status line.
        let window = self.conversation.window_for(message).unwrap_or_default();
        let spent_before = agent.spent();
        let usage_before = self
            .conversation
            .session()
            .map(|s| s.stats.usage)
            .unwrap_or_default();
        let main = Scope::default();
        // A fresh watcher: a SIGINT that arrived while the prompt waited is not this turn's.
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                self.say(&format!("hx: cannot watch Ctrl-C: {e}"));
                return None;
            }
        };
        let cancel = self.approvals.begin_turn();
        // The view shows the turn as it runs, above the prompt, which stays up (see
        // `queue`); every way out below ends the turn for it.
        let began = Instant::now();
        let mut read = match self.pending.take() {
            Some(p) => p,
            None => self.start_read(PROMPT),
        };
        self.queue.set_busy(true);
        let end = {
            let during = During {
                queue: self.queue.clone(),
                approvals: self.approvals.clone(),
                editor: self.editor.clone(),
                term: self.term.clone(),
            };
            let turn = self.conversation.send(message);
            tokio::pin!(turn);
            let mut cancel = futures_util::FutureExt::fuse(cancel);
            loop {
                tokio::select! {
                    r = &mut turn => break TurnEnd::Done(r),
                    _ = sigint.recv() => break TurnEnd::Cancelled,
                    Ok(()) = &mut cancel => break TurnEnd::Cancelled,
                    sig = ends.recv() => break TurnEnd::Ended(sig),
                    got = &mut read => {
                        read = during.editor_read();
                        if let Some(failed) = during.line(got) {
                            match failed {
                                Read::Interrupted => break TurnEnd::Cancelled,
                                // The prompt after the turn says so, and the chat ends.
                                f => read = Box::pin(async move { f }),
                            }
                        }
                    }
                }
            }
        };
        drop(sigint);
        self.stopped = matches!(end, TurnEnd::Cancelled);
        // The run's future is gone: the HTTP request is dropped, the running commands'
        // process groups killed, the subagents stopped.
        let answered = self.approvals.take_answered();
        self.conversation.record_approvals(answered);
        let ending = match end {
            TurnEnd::Done(r) => Ending::Run(r),
            TurnEnd::Cancelled => self.conversation.cancelled(began.elapsed()).await,
            TurnEnd::Ended(sig) => {
                self.conversation.settle_checkpoints().await;
                // The view's Stop line; the program's own line follows.
                self.conversation.stopped(began.elapsed());
                return Some(self.end_by_signal(sig, terminal).await);
            }
        };
        // The prompt is drawn once more, not busy, under the turn's last line.
        self.pending = Some(read);
        self.term.hold_last(true);
        let ran = matches!(ending, Ending::Run(_));
        let mapped = self.conversation.ended(ending, Front::Conversation);
        self.events.emit(&main, &Event::TurnEnded(&mapped.turn));
        if ran {
            self.status_line(window, spent_before, usage_before);
        }
        self.queue.set_busy(false);
        self.editor.settle_with_next(true);
        self.term.hold_last(false);
        self.editor.settle_with_next(false);
        if ran {
            self.tell(message, &mapped.turn, began.elapsed()).await;
        }
        None
    }

    /// A read of the line editor at `prompt`, to poll or keep in flight.
    fn start_read(&self, prompt: &str) -> Pending {
        let editor = self.editor.clone();
        let prompt = prompt.to_string();
        Box::pin(async move { editor.read(&prompt).await })
    }

    /// A turn that ended by itself, after a while: the user is told (a Ctrl-C means they are
    /// there).
    async fn tell(&self, message: &Outgoing, end: &crate::events::TurnEnd, elapsed: Duration) {
        if elapsed >= self.config.notify_after {
            if let Some(agent) = self.conversation.agent() {
                agent.notification("hx is waiting for your input").await;
            }
        }
        let Some(n) = &self.notifier else {
            return;
        };
        let input = message.typed.as_deref().unwrap_or(&message.text);
        let why = crate::notify::Why::turn(input, end);
        n.tell(elapsed, self.conversation.id(), why).await;
    }

    /// `/shells`: the run's background shells; `/shells kill ID` ends one.
    async fn shells(&self, arg: Option<String>) {
        let Some(agent) = self.conversation.agent() else {
            return;
        };
        let shells = &agent.tool_cx().shells;
        let Some(arg) = arg else {
            self.say(&super::shells_text(&shells.list()));
            return;
        };
        let id = match arg.split_whitespace().collect::<Vec<_>>()[..] {
            ["kill", id] => id.to_string(),
            _ => {
                self.say("hx: /shells takes nothing, or kill and a shell's id (/shells kill bg1)");
                return;
            }
        };
        match shells.get(&id) {
            Some(shell) if shell.kill().await => self.say(&format!("hx: {id} killed")),
            Some(_) => self.say(&format!("hx: {id} had already ended")),
            None => self.say(&format!(
                "hx: no background shell {}",
                crate::tools::output::quote(&id)
            )),
        }
    }

    /// The line after a turn: how full the context is, what the turn and the session cost,
    /// and the turn's cache hits; nothing when nothing was spent.
    fn status_line(
        &self,
        window: u64,
        before: crate::model::Spend,
        usage_before: crate::model::Usage,
    ) {
        let (Some(agent), Some(session)) = (self.conversation.agent(), self.conversation.session())
        else {
            return;
        };
        let spent = agent.spent();
        let mut turn = spent;
        turn.nanos = spent.nanos.saturating_sub(before.nanos);
        turn.priced = spent.priced.saturating_sub(before.priced);
        turn.unpriced = spent.unpriced.saturating_sub(before.unpriced);
        if turn.is_empty() {
            return;
        }
        // Its own requests, every run of it (a subagent's are in its own session).
        let whole = session.totals().cost;
        let u = session.stats.usage;
        let delta = crate::model::Usage {
            prompt_tokens: u.prompt_tokens.saturating_sub(usage_before.prompt_tokens),
            prompt_cache_hit_tokens: u
                .prompt_cache_hit_tokens
                .saturating_sub(usage_before.prompt_cache_hit_tokens),
            ..Default::default()
        };
        self.term.dim_line(&super::status_text(
            session.stats.last_prompt_tokens,
            window,
            &turn,
            &whole,
            crate::events::cache_share(&delta),
            agent.tool_cx().shells.running(),
        ));
    }

    /// `/compact`: the conversation's history summarised now (as `hx agent --compact`), so
    /// it takes less of the context window. Ctrl-C stops it; the history is then unchanged.
    /// A signal that ends the program (SIGTERM, SIGHUP, SIGQUIT) is given back.
    async fn compact(&mut self, ends: &mut Signals) -> Option<i32> {
        if self.messages().len() < 3 || self.conversation.agent().is_none() {
            self.say("hx: nothing to compact yet");
            return None;
        }
        let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
            return None;
        };
        let done = tokio::select! {
            r = self.conversation.compact() => Some(r),
            _ = sigint.recv() => None,
            sig = ends.recv() => return Some(sig),
        };
        match done {
            Some(Ok(())) => {}
            Some(Err(crate::agent::compact::Ended::Error(e))) => {
                self.say(&format!("hx: compaction failed: {e}"))
            }
            Some(Err(crate::agent::compact::Ended::Stopped(r))) => {
                self.say(&format!("hx: a hook stopped the compaction: {r}"))
            }
            None => self.say("hx: compaction interrupted; the history is as it was"),
        }
        None
    }
}
