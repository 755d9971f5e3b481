//! `hx chat`, and bare `hx` on a terminal: a conversation. Each message is a user turn on one
//! session; Ctrl-C cancels the running turn, not the program; slash commands manage the
//! session. The editor, the commands and the approvals are `crate::chat`; this is the loop
//! that owns the session and the agent.
//!
//! What a turn does is shown by the same view as `hx agent`'s trace (`events::HumanView`, on
//! the terminal this loop prints through), spinner included; the loop adds how each turn
//! ended and its own lines.
//!
//! Signals: SIGINT is watched only while a turn runs (a fresh watcher per turn, so a stray
//! one from before does not cancel the next); at the prompt the terminal is raw and Ctrl-C is
//! a key the editor reads. SIGTERM and SIGHUP end the program at any point, with the cleanup
//! of `hx agent` (exit 143 / 129, the session line).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use tokio::signal::unix::{signal, SignalKind};

use super::agent::{
    build_agent_with, find_session, open_session, reap_orphans, recorder, EndAll, Resumed, Signals,
};
use super::{exit, fail, ChatArgs};
use crate::agent::{Agent, Outcome};
use crate::chat::approve::Approvals;
use crate::chat::commands::{self, Input};
use crate::chat::editor::{self, LineEditor, Read, SkillNames};
use crate::chat::{self as parts, INTERRUPTED};
use crate::config::{process_env, Config, Env};
use crate::events::{self, Event, Events, HumanView, Scope, Verbosity};
use crate::hooks;
use crate::process;
use crate::process::signal_name;
use crate::session::{self, Recorder, Session};
use crate::skills::SkillRegistry;
use crate::term::{one_line, Term};

/// The prompt. The benchmark and the tests wait for it.
pub const PROMPT: &str = "hx> ";

pub(super) fn chat_command(args: ChatArgs) -> i32 {
    if !std::io::stdin().is_terminal() {
        return fail(
            exit::USAGE,
            "hx chat needs a terminal on stdin; for scripts use hx agent \"TASK\"",
        );
    }
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let mut flags = args.run.flags();
    let env = process_env();
    let resume = match find_session(
        args.continue_,
        args.resume.as_deref(),
        !args.ephemeral,
        &cwd,
        &env,
    ) {
        Ok(r) => r,
        Err(code) => return code,
    };
    if let Some(r) = &resume {
        r.keep_provider(&mut flags);
    }
    let config = match super::load_config(&cwd, &env, &flags) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Err(e) = config.require_key() {
        return fail(exit::USAGE, e);
    }
    // As in `hx agent`: the key is in `config`; blank the secrets before any thread starts.
    // SAFETY: single-threaded here; the editor thread and the runtime start below.
    unsafe { process::env::scrub_own_environ(&config.shell_env) };
    process::cleanup::become_subreaper();
    // As in `hx agent`: a same-user process cannot read the key from hx's memory.
    process::not_dumpable();
    let _end = EndAll {
        keep_background: config.keep_background,
    };
    let terminal = SavedTerminal::save();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => return fail(exit::FAILED, format!("cannot start the async runtime: {e}")),
    };
    // A panic (a bug) must not leave the terminal raw, nor skip the cleanup: caught here,
    // the terminal put back, and the drop guard above still ends what hx started.
    let run = std::panic::AssertUnwindSafe(|| {
        runtime.block_on(run(config, cwd, env, resume, args.ephemeral, &terminal))
    });
    let code = std::panic::catch_unwind(run).unwrap_or_else(|_| {
        terminal.restore();
        exit::FAILED
    });
    runtime.shutdown_background();
    code
}

/// The terminal's settings at start, put back when a signal ends hx while the editor has the
/// terminal in raw mode (its own restore never runs then).
struct SavedTerminal(Option<libc::termios>);

impl SavedTerminal {
    fn save() -> SavedTerminal {
        // SAFETY: tcgetattr fills the struct it is given; a zeroed termios is a valid value.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            SavedTerminal((libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0).then_some(t))
        }
    }

    fn restore(&self) {
        if let Some(t) = &self.0 {
            // SAFETY: puts back settings read from the same descriptor.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
            }
            // Bracketed paste off again, as the editor would on leaving.
            let _ = std::io::Write::write_all(&mut std::io::stderr(), b"\x1b[?2004l");
        }
    }
}

/// What a build of the agent gives.
type Built = Result<super::agent::Built, String>;

/// How a message's turn ended.
enum TurnEnd {
    Done(Result<Outcome, crate::model::ModelError>),
    /// Ctrl-C (SIGINT, or at an approval question).
    Cancelled,
    /// SIGTERM or SIGHUP: the program ends.
    Ended(i32),
}

struct Chat {
    config: Config,
    cwd: PathBuf,
    env: Env,
    term: Arc<Term>,
    /// The agent's events, shown by a [`HumanView`] on `term`.
    events: Events,
    recorder: Recorder,
    editor: LineEditor,
    approvals: Arc<Approvals>,
    skill_names: SkillNames,
    /// `None` until the first build is done: it runs while the first prompt is up.
    agent: Option<Agent>,
    building: Option<tokio::task::JoinHandle<Built>>,
    skills: Arc<SkillRegistry>,
    /// The current session's id: chosen before its file exists.
    id: String,
    /// Created with the first message (an empty chat leaves no session for `-c` to find),
    /// or opened by `-c`, `-r`, `/resume`.
    session: Option<Session>,
    /// SessionStart hooks already ran for the current session.
    started: bool,
    /// How the last message ended, for the session's `end` line.
    outcome: (&'static str, Option<String>),
}

async fn run(
    config: Config,
    cwd: PathBuf,
    env: Env,
    resume: Option<Resumed>,
    ephemeral: bool,
    terminal: &SavedTerminal,
) -> i32 {
    let term = super::shared_term();
    let events = Events::new(Arc::new(HumanView::new(
        term.clone(),
        config.show_reasoning,
        Verbosity::Normal,
    )));
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let recorder = recorder(&config, &workspace, &env, ephemeral);
    let skill_names: SkillNames = Arc::new(RwLock::new(Vec::new()));
    let (editor, warnings) =
        match LineEditor::start(editor::history_path(&env), skill_names.clone()) {
            Ok(e) => e,
            Err(e) => return fail(exit::FAILED, format!("cannot start the line editor: {e}")),
        };
    for w in warnings {
        term.line(&format!("hx: warning: {w}"));
    }
    let approvals = Approvals::new(editor.clone(), term.clone());
    let id = match &resume {
        Some(r) => r.loaded.header.id.clone(),
        None => session::store::new_id(),
    };
    // The agent, and with it the skill catalog (2,000 skills take tens of milliseconds), is
    // built on the blocking pool while the prompt is already up; a line waits for it.
    let building = {
        let (config, cwd, env) = (config.clone(), cwd.clone(), env.clone());
        let (events, recorder, id) = (events.clone(), recorder.clone(), id.clone());
        let (approver, editor): (Arc<dyn hooks::Approver>, _) = (approvals.clone(), editor.clone());
        tokio::task::spawn_blocking(move || {
            let mut warnings = Vec::new();
            let built = build_agent_with(
                &config,
                &cwd,
                &env,
                events,
                recorder,
                &id,
                Some(approver),
                &mut warnings,
            );
            for w in warnings {
                editor.print(&w);
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
        recorder,
        editor,
        approvals,
        skill_names,
        agent: None,
        building: Some(building),
        skills: Arc::new(SkillRegistry::default()),
        id,
        session: None,
        started: false,
        outcome: ("answered", None),
    };
    if let Some(r) = resume {
        if let Err(code) = chat.open(r) {
            return code;
        }
    }
    let mut ends = match Signals::of(&[libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT]) {
        Ok(s) => s,
        Err(e) => return fail(exit::FAILED, format!("cannot watch signals: {e}")),
    };
    let reaper = tokio::spawn(reap_orphans());
    let code = chat.converse(&mut ends, terminal).await;
    reaper.abort();
    code
}

impl Chat {
    fn say(&self, text: &str) {
        self.term.line(text);
    }

    fn set_skill_names(&self) {
        let names = self.skills.names().map(str::to_string).collect();
        *self.skill_names.write().unwrap_or_else(|p| p.into_inner()) = names;
    }

    /// The conversation, until the user leaves (0) or a signal ends it.
    async fn converse(&mut self, ends: &mut Signals, terminal: &SavedTerminal) -> i32 {
        self.say(&format!(
            "hx chat · {} · /help lists commands · Ctrl-D leaves",
            self.config.model
        ));
        let mut leaving = false;
        loop {
            let line = match self.read(PROMPT, ends, terminal).await {
                Ok(r) => r,
                Err(code) => return code,
            };
            let line = match line {
                Read::Line(l) => l,
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
            let input = commands::parse(&text, |n| self.skills.get(n).is_some());
            match input {
                Input::Empty => {}
                Input::Message(m) => {
                    if let Some(code) = self.send(&m, ends, terminal).await {
                        return code;
                    }
                }
                Input::Exit => break,
                Input::Help => self.say(commands::help().trim_end()),
                Input::New => self.new_session(),
                Input::Resume(id) => {
                    if let Err(code) = self.resume(id, ends, terminal).await {
                        return code;
                    }
                }
                Input::Compact => {
                    if let Some(sig) = self.compact(ends).await {
                        return self.end_by_signal(sig, terminal);
                    }
                }
                Input::Model(name) => self.model(name),
                Input::Skills => self.say(&parts::skills_text(
                    &self.skills,
                    &self.skills.catalog(self.config.skills_catalog_budget),
                    self.config.skills_catalog_budget,
                )),
                Input::Todos => self.say(&parts::todos_text(self.messages())),
                Input::Usage => {
                    let totals = self.session.as_ref().map(Session::totals);
                    self.say(&parts::usage_text(&totals.unwrap_or_default()));
                }
                Input::Context => {
                    if let Some(agent) = &self.agent {
                        self.say(&parts::context_text(
                            &agent.system_prompt,
                            &self.skills.catalog(self.config.skills_catalog_budget),
                            self.skills.len(),
                            self.config.skills_catalog_budget,
                            &agent.tools.as_listed().specs(),
                            self.messages(),
                        ))
                    }
                }
                Input::Unknown(word) => {
                    self.say(&format!("hx: unknown command {word}; /help lists them"))
                }
            }
        }
        self.close_session();
        exit::ANSWERED
    }

    fn messages(&self) -> &[crate::model::Message] {
        self.session.as_ref().map_or(&[], |s| s.messages())
    }

    /// One line from the editor; SIGTERM or SIGHUP meanwhile ends the program, and so does
    /// a first build that fails (`Err`: the exit code, everything closed).
    async fn read(
        &mut self,
        prompt: &str,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Result<Read, i32> {
        let editor = self.editor.clone();
        let read = editor.read(prompt);
        tokio::pin!(read);
        loop {
            tokio::select! {
                r = &mut read => return Ok(r),
                sig = ends.recv() => {
                    return Err(self.end_by_signal(sig, terminal));
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

    /// Lets the agent's tools that remember the conversation (`load_skill`'s "already
    /// loaded", the todo list) take it up from the current session's history, as `hx agent`
    /// does after opening a session: after every build and every switch of session.
    fn restore_tools(&self) {
        if let (Some(agent), Some(session)) = (&self.agent, &self.session) {
            for r in &agent.restore {
                r.restore(session.messages());
            }
        }
    }

    /// Waits for the first build, if it is still running.
    async fn ready(&mut self, ends: &mut Signals, terminal: &SavedTerminal) -> Result<(), i32> {
        if let Some(building) = self.building.take() {
            let built = tokio::select! {
                b = building => b,
                sig = ends.recv() => {
                    return Err(self.end_by_signal(sig, terminal));
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
            Ok(Ok(built)) => {
                self.agent = Some(built.agent);
                self.skills = built.skills;
                self.set_skill_names();
                self.restore_tools();
                return Ok(());
            }
            Ok(Err(e)) => (exit::USAGE, e),
            Err(e) => (exit::FAILED, format!("cannot build the agent: {e}")),
        };
        // Straight to the terminal, not above the prompt: hx ends before the editor would
        // print it.
        terminal.restore();
        self.say(&format!("\nhx: {}", failed.1));
        self.close_session();
        Err(failed.0)
    }

    /// Ends the program on SIGTERM or SIGHUP: the session records it and is named.
    /// Ends the chat on a signal that ends the program: the terminal put back, the session
    /// closed with the signal as its outcome.
    fn end_by_signal(&mut self, sig: i32, terminal: &SavedTerminal) -> i32 {
        terminal.restore();
        // The handlers stay: a second signal must not cut the session's last lines short.
        self.say(&format!("\nhx: terminated by {}", signal_name(sig)));
        self.outcome = ("interrupted", Some(signal_name(sig).to_string()));
        self.close_session();
        exit::signalled(sig)
    }

    /// The current session, created (and its file) on first use.
    fn session(&mut self) -> &mut Session {
        let Chat {
            session,
            recorder,
            id,
            term,
            ..
        } = self;
        session.get_or_insert_with(|| {
            let (s, unrecorded) = recorder.start_with_id(id.clone(), None);
            if let Some(why) = unrecorded {
                term.line(&format!("hx: warning: {why}"));
            }
            s
        })
    }

    /// Sends one message and runs its turn to the end, a cancel, or a signal (`Some`: the
    /// program's exit code).
    async fn send(
        &mut self,
        text: &str,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Option<i32> {
        let session_start = !self.started;
        self.started = true;
        self.session();
        let Chat {
            agent: Some(agent),
            session: Some(session),
            term,
            events,
            config,
            approvals,
            outcome,
            ..
        } = &mut *self
        else {
            return None;
        };
        let main = Scope::default();
        // A fresh watcher: a SIGINT that arrived while the prompt waited is not this turn's.
        let mut sigint = match signal(SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                term.line(&format!("hx: cannot watch Ctrl-C: {e}"));
                return None;
            }
        };
        let cancel = approvals.begin_turn();
        // The view shows the turn as it runs, the spinner too (waiting for the model, or for
        // a tool that takes over a second); every way out below ends the turn for it, so no
        // spinner outlives its turn.
        let began = Instant::now();
        let end = tokio::select! {
            r = agent.run_message(session, text, session_start) => TurnEnd::Done(r),
            _ = sigint.recv() => TurnEnd::Cancelled,
            Ok(()) = cancel => TurnEnd::Cancelled,
            sig = ends.recv() => TurnEnd::Ended(sig),
        };
        // The run's future is gone: the HTTP request is dropped, the running commands'
        // process groups killed, the subagents stopped.
        drop(sigint);
        for a in approvals.take_answered() {
            session.record_approval(&a);
        }
        let sig = match end {
            TurnEnd::Done(r) => {
                let (end, how) = finish(r, config.max_turns);
                events.emit(&main, &Event::TurnEnded(&end));
                *outcome = how;
                session.turn_done();
                return None;
            }
            TurnEnd::Cancelled => {
                agent.stopped(session, began.elapsed());
                let open = parts::answer_open_calls(session);
                let note = if open > 0 {
                    format!("; {open} unfinished call(s) answered \"{INTERRUPTED}\"")
                } else {
                    String::new()
                };
                let end = events::TurnEnd::Failed(format!("interrupted{note}"));
                events.emit(&main, &Event::TurnEnded(&end));
                *outcome = ("interrupted", Some("SIGINT".into()));
                return None;
            }
            TurnEnd::Ended(sig) => {
                // The view's Stop line; the program's own line follows.
                agent.stopped(session, began.elapsed());
                sig
            }
        };
        Some(self.end_by_signal(sig, terminal))
    }

    /// `/compact`: the conversation's history summarised now (as `hx agent --compact`), so
    /// it takes less of the context window. Ctrl-C stops it; the history is then unchanged.
    /// A signal that ends the program (SIGTERM, SIGHUP, SIGQUIT) is given back.
    async fn compact(&mut self, ends: &mut Signals) -> Option<i32> {
        let Chat {
            agent: Some(agent),
            session: Some(session),
            term,
            ..
        } = &mut *self
        else {
            self.say("hx: nothing to compact yet");
            return None;
        };
        if session.messages().len() < 3 {
            term.line("hx: nothing to compact yet");
            return None;
        }
        let Ok(mut sigint) = signal(SignalKind::interrupt()) else {
            return None;
        };
        let done = tokio::select! {
            r = agent.compact_now(session) => Some(r),
            _ = sigint.recv() => None,
            sig = ends.recv() => return Some(sig),
        };
        match done {
            Some(Ok(())) => session.turn_done(),
            Some(Err(crate::agent::compact::Ended::Error(e))) => {
                term.line(&format!("hx: compaction failed: {e}"))
            }
            Some(Err(crate::agent::compact::Ended::Stopped(r))) => {
                term.line(&format!("hx: a hook stopped the compaction: {r}"))
            }
            None => term.line("hx: compaction interrupted; the history is as it was"),
        }
        None
    }

    /// Ends the current session's run in its file and names it; the next message starts a
    /// new one.
    fn close_session(&mut self) {
        let Some(mut session) = self.session.take() else {
            return;
        };
        let (outcome, detail) = &self.outcome;
        session.end(outcome, detail.as_deref());
        let recorded = session.path().is_some();
        if let Some(e) = session.close() {
            self.say(&format!("hx: warning: {e}"));
        }
        if recorded {
            self.say(&format!(
                "hx: session {id} · continue with: hx chat -r {id}, or hx agent -r {id} \"...\"",
                id = session.id()
            ));
        }
    }

    /// `/new`: the current session is closed; the next message starts a fresh one, with an
    /// agent built anew (fresh todos, skills read again).
    fn new_session(&mut self) {
        self.close_session();
        if let Err(e) = self.rebuild(session::store::new_id(), true) {
            self.say(&format!("hx: {e}"));
            return;
        }
        self.say("hx: new session");
    }

    /// Builds the agent for session `id` with the current config and puts it in place. A
    /// `fresh` session starts over: no approvals, and SessionStart hooks run again.
    fn rebuild(&mut self, id: String, fresh: bool) -> Result<(), String> {
        let mut warnings = Vec::new();
        let built = build_agent_with(
            &self.config,
            &self.cwd,
            &self.env,
            self.events.clone(),
            self.recorder.clone(),
            &id,
            Some(self.approvals.clone()),
            &mut warnings,
        );
        for w in warnings {
            self.say(&w);
        }
        let super::agent::Built { agent, skills, .. } = built?;
        self.agent = Some(agent);
        self.skills = skills;
        self.id = id;
        self.set_skill_names();
        self.restore_tools();
        if fresh {
            self.started = false;
            self.outcome = ("answered", None);
            self.approvals.reset();
        }
        Ok(())
    }

    /// Makes a recorded session the current one (its open calls answered).
    fn open(&mut self, resumed: Resumed) -> Result<(), i32> {
        let id = resumed.loaded.header.id.clone();
        let mut warnings = Vec::new();
        let session = open_session(
            &self.recorder,
            id,
            Some(resumed),
            self.config.reasoning_echo,
            &mut warnings,
        );
        for w in warnings {
            self.say(&w);
        }
        let session = match session {
            Ok(s) => s,
            Err(e) => {
                self.say(&format!("hx: {e}"));
                return Err(exit::FAILED);
            }
        };
        let messages = session
            .messages()
            .iter()
            .filter(|m| !matches!(m, crate::model::Message::System(_)))
            .count();
        let last = session
            .messages()
            .iter()
            .rev()
            .find_map(|m| match m {
                crate::model::Message::User(t) => Some(one_line(t, 100)),
                _ => None,
            })
            .unwrap_or_default();
        self.say(&format!(
            "hx: resumed session {} ({messages} messages); last message: {last}",
            session.id()
        ));
        self.session = Some(session);
        self.restore_tools();
        Ok(())
    }

    /// `/resume [ID]`: without an id, lists this workspace's sessions and asks which.
    async fn resume(
        &mut self,
        id: Option<String>,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Result<(), i32> {
        let id = match id {
            Some(id) => id,
            None => match self.pick(ends, terminal).await? {
                Some(id) => id,
                None => return Ok(()),
            },
        };
        // Looked up without the lock first: the current session holds its own.
        let found = match find_session(false, Some(&id), false, &self.cwd, &self.env) {
            Ok(Some(r)) => r,
            // Reported already; the conversation goes on as it was.
            Ok(None) | Err(_) => return Ok(()),
        };
        if found.loaded.header.id == self.id && self.session.is_some() {
            self.say("hx: that is the current session");
            return Ok(());
        }
        self.close_session();
        // Then read again under the lock it will be appended with.
        let record = self.recorder.store.is_some();
        let found = match find_session(
            false,
            Some(&found.loaded.header.id),
            record,
            &self.cwd,
            &self.env,
        ) {
            Ok(Some(r)) => r,
            Ok(None) | Err(_) => return Ok(()),
        };
        if let Err(e) = self.rebuild(found.loaded.header.id.clone(), true) {
            self.say(&format!("hx: {e}"));
            return Ok(());
        }
        // A session another hx holds is refused here; the chat goes on, in a new session.
        let _ = self.open(found);
        Ok(())
    }

    /// Lists the newest sessions of this workspace, numbered, and reads a choice.
    async fn pick(
        &mut self,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Result<Option<String>, i32> {
        const SHOWN: usize = 20;
        let Some(root) = session::store::sessions_root(&self.env) else {
            self.say("hx: no place for sessions: set HOME or XDG_STATE_HOME");
            return Ok(None);
        };
        let store = super::sessions::store_for(&root, &self.cwd);
        let (list, _) = store.list(false);
        if list.is_empty() {
            self.say("hx: no sessions in this workspace yet");
            return Ok(None);
        }
        let mut text = String::new();
        for (i, s) in list.iter().take(SHOWN).enumerate() {
            text.push_str(&format!(
                "{:>3}  {}  {}  {:>3} turns  {}\n",
                i + 1,
                s.id,
                s.started_at,
                s.turns,
                one_line(&s.task, 60)
            ));
        }
        if list.len() > SHOWN {
            text.push_str(&format!(
                "     ... {} older: /resume ID, or hx sessions list\n",
                list.len() - SHOWN
            ));
        }
        self.say(text.trim_end());
        let answer = match self
            .read(
                "Resume which? (number or id; Enter cancels) ",
                ends,
                terminal,
            )
            .await?
        {
            Read::Line(l) => l.trim().to_string(),
            _ => String::new(),
        };
        if answer.is_empty() {
            return Ok(None);
        }
        Ok(Some(match answer.parse::<usize>() {
            Ok(n) if (1..=list.len().min(SHOWN)).contains(&n) => list[n - 1].id.clone(),
            _ => answer,
        }))
    }

    /// `/model [NAME]`: shows the model, or goes on with another (recorded in the session).
    fn model(&mut self, name: Option<String>) {
        let Some(name) = name else {
            self.say(&format!(
                "model: {} (provider {})",
                self.config.model, self.config.provider
            ));
            return;
        };
        if name.chars().count() > MAX_MODEL_CHARS || name.chars().any(char::is_control) {
            self.say(&format!(
                "hx: a model name is one word of at most {MAX_MODEL_CHARS} characters"
            ));
            return;
        }
        if name.contains(char::is_whitespace) {
            self.say("hx: a model name is one word");
            return;
        }
        let old = self.config.clone();
        self.config.set_model(&name);
        self.recorder.model = name.clone();
        // The subagents' model is fixed when the agent is built: build it again, for the
        // same session.
        if let Err(e) = self.rebuild(self.id.clone(), false) {
            self.recorder.model = old.model.clone();
            self.config = old;
            self.say(&format!("hx: {e}"));
            return;
        }
        if let Some(s) = &mut self.session {
            s.record_model(&name);
        }
        self.say(&format!("model: {name}"));
    }
}

/// Longest model name `/model` takes.
const MAX_MODEL_CHARS: usize = 200;

/// How a finished turn ended, for the view (which prints the answer, or the reason), and the
/// outcome for the session's `end` line.
fn finish(
    r: Result<Outcome, crate::model::ModelError>,
    max_turns: u32,
) -> (events::TurnEnd, (&'static str, Option<String>)) {
    use events::TurnEnd::{Answered, Failed};
    match r {
        Ok(Outcome::Answered(text)) => (Answered(text), ("answered", None)),
        Ok(Outcome::Stopped(reason)) => (
            Failed(format!("stopped by a hook: {reason}")),
            ("stopped", Some(reason)),
        ),
        Ok(Outcome::MaxTurns(_)) => (
            Failed(format!(
                "stopped after {} (--max-turns) without a final answer; a message goes on from \
                 here",
                crate::text::count(max_turns.into(), "request")
            )),
            ("max_turns", None),
        ),
        Err(e) => (Failed(e.to_string()), ("error", Some(e.to_string()))),
    }
}
