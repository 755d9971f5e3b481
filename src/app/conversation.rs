//! One conversation: an agent and the session it appends to, message by message, and how it
//! ends. `hx agent` (one message), `hx chat` and `hx acp` each drive one: they decide when a
//! message is sent and what cancels it, and show what happened; what a message does to the
//! session, and whether the session is kept when the conversation closes, is decided here,
//! once.
//!
//! Sending is a future the front end may drop (Ctrl-C, `session/cancel`, a signal): the
//! session keeps everything appended until then, and [`Conversation::cancelled`] answers the
//! calls left open so the next request is valid.

use std::sync::Arc;
use std::time::Duration;

use super::outcome::{Ending, Front, Mapped, INTERRUPTED};
use super::session::short_id;
use crate::agent::compact::Ended;
use crate::agent::goal::Goal;
use crate::agent::steer::Steers;
use crate::agent::{Agent, Input, Outcome};
use crate::events::TurnEnd;
use crate::model::{FailureKind, Message, ModelError, Profile};
use crate::session::{ApprovalLine, EndOutcome, Recorder, Session};
use crate::tools::ToolSet;

/// How long a run cut short waits for the checkpoint its last turn was taking (a turn's
/// checkpoint takes milliseconds; one that looks at a large workspace may take longer).
const CHECKPOINT_WAIT: Duration = Duration::from_secs(1);

/// One message to send, and what holds for it alone.
#[derive(Clone, Default)]
pub struct Outgoing {
    pub text: String,
    /// Another model (a command's `model:`), for this message.
    pub profile: Option<Profile>,
    /// Fewer tools (a command's `allowed-tools`), for this message.
    pub tools: Option<ToolSet>,
    /// It opens with the block of a skill the user invoked (`/NAME`).
    pub invoked_skill: bool,
    /// What the user typed, when `text` is not it (`/NAME args`).
    pub typed: Option<String>,
}

impl Outgoing {
    /// A message as the user typed it.
    pub fn text(text: impl Into<String>) -> Outgoing {
        Outgoing {
            text: text.into(),
            ..Outgoing::default()
        }
    }
}

/// What the user switched: `/model` or `/effort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switched {
    Model,
    Effort,
}

/// What closing a conversation did with its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Closed {
    /// There was none: nothing was sent, nothing opened.
    NoSession,
    /// It held nothing to go on with, and its file was removed: its id.
    Discarded(String),
    /// Written out: its id, and as the user types it when it is recorded, and what went
    /// wrong writing it.
    Kept {
        id: String,
        short: Option<String>,
        error: Option<String>,
    },
}

pub struct Conversation {
    /// `None` until the front end's build of it is done (`hx chat` and `hx acp` build it
    /// while the user or the client goes on).
    agent: Option<Agent>,
    recorder: Recorder,
    /// The session's id, chosen before its file exists.
    id: String,
    /// Created with the first message (an empty conversation leaves no session behind), or
    /// opened (resumed, or `hx acp`'s `session/new`).
    session: Option<Session>,
    /// A message was sent: the SessionStart hooks ran.
    started: bool,
    /// How the last message ended, for the session's `end` line: its outcome, detail and,
    /// when it failed, kind.
    ending: (EndOutcome, Option<String>, Option<FailureKind>),
    /// The last message's run failed before the model answered anything (see
    /// [`Ending::unreached`]).
    unreached: bool,
    /// The command every message's answer must pass (`--until`, `/goal`), if any.
    goal: Option<Arc<Goal>>,
    /// What the user sends while a message runs (see [`Conversation::steers`]).
    steers: Arc<Steers>,
}

impl Conversation {
    /// A conversation whose session will have the id `id`, recorded by `recorder`.
    pub fn new(recorder: Recorder, id: String) -> Conversation {
        Conversation {
            agent: None,
            recorder,
            id,
            session: None,
            started: false,
            ending: (EndOutcome::Answered, None, None),
            unreached: false,
            goal: None,
            steers: Arc::default(),
        }
    }

    /// The queue of steers: a front end pushes what the user sends while [`Conversation::send`]
    /// runs, and the run appends it, as user messages, before its next request (see
    /// [`crate::agent::steer`]). What a run that ended left in it is the front end's to take
    /// ([`Steers::take`]) and send as the next message.
    pub fn steers(&self) -> Arc<Steers> {
        self.steers.clone()
    }

    /// Takes `steers` as its queue: a front end that starts another conversation (`/new`,
    /// `/resume`) keeps pushing into the one it has.
    pub fn set_steers(&mut self, steers: Arc<Steers>) {
        self.steers = steers;
    }

    /// From the next message on, each answer must pass `goal` (none: an answer ends the
    /// message). It stays across sessions (`/new`, `/resume`), as the workspace does.
    pub fn set_goal(&mut self, goal: Option<Arc<Goal>>) {
        self.goal = goal;
    }

    pub fn goal(&self) -> Option<&Goal> {
        self.goal.as_deref()
    }

    /// Puts `agent` in place (its build is done): the tools that remember the conversation
    /// take it up from the session's history.
    pub fn set_agent(&mut self, agent: Agent) {
        if let Some(s) = &self.session {
            agent.restore_tools(s.messages());
        }
        self.agent = Some(agent);
    }

    /// Goes on with `session`, opened by the front end (resumed, or new): its id is the
    /// conversation's.
    pub fn open(&mut self, session: Session) {
        self.id = session.id().to_string();
        if let Some(a) = &self.agent {
            a.restore_tools(session.messages());
        }
        self.session = Some(session);
    }

    pub fn agent(&self) -> Option<&Agent> {
        self.agent.as_ref()
    }

    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    pub fn session_mut(&mut self) -> Option<&mut Session> {
        self.session.as_mut()
    }

    /// The history so far (none before the first message).
    pub fn messages(&self) -> &[Message] {
        self.session.as_ref().map_or(&[], Session::messages)
    }

    /// The session's id (chosen before its file exists).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The session, created (its file too) on first use; the reason it is not recorded, when
    /// it could not be.
    fn session_or_start(&mut self, agent: &Agent) -> (&mut Session, Option<String>) {
        let mut unrecorded = None;
        let session = self.session.get_or_insert_with(|| {
            let (s, why) = self
                .recorder
                .start_with_id(self.id.clone(), None, agent.profile());
            unrecorded = why;
            s
        });
        (session, unrecorded)
    }

    /// Sends one message and runs it to the model's answer (or the end the run came to).
    /// The agent must be in place ([`Conversation::set_agent`]); without it nothing is sent.
    /// The future may be dropped: then [`Conversation::cancelled`] or
    /// [`Conversation::stopped`] says so.
    pub async fn send(&mut self, message: &Outgoing) -> Result<Outcome, ModelError> {
        let Some(base) = self.agent.clone() else {
            return Ok(Outcome::Stopped("the agent is not ready".into()));
        };
        let session_start = !std::mem::replace(&mut self.started, true);
        let goal = self.goal.clone();
        let steers = self.steers.clone();
        // The session is the conversation's, on its own profile, whatever this one message
        // goes to: `-c` goes on with the conversation's model.
        let (session, unrecorded) = self.session_or_start(&base);
        if let Some(why) = unrecorded {
            base.warn(&why);
        }
        let agent = Self::for_message(base, message).with_goal(goal);
        let input = Input {
            text: &message.text,
            session_start,
            invoked_skill: message.invoked_skill,
            typed: message.typed.as_deref(),
            steers: Some(&steers),
        };
        agent.run_message(session, input).await
    }

    /// The agent a message goes to: the conversation's, with the message's own profile and
    /// tools.
    fn for_message(agent: Agent, message: &Outgoing) -> Agent {
        let agent = match &message.profile {
            Some(p) => agent.with_profile(p.clone()),
            None => agent,
        };
        match &message.tools {
            Some(t) => agent.with_tools(t.clone()),
            None => agent,
        }
    }

    /// The window of the model `message` goes to (its own profile's, else the
    /// conversation's).
    pub fn window_for(&self, message: &Outgoing) -> Option<u64> {
        let own = message.profile.as_ref().map(Profile::window);
        own.or_else(|| self.agent.as_ref().map(|a| a.context().window))
    }

    /// Records the user's answers to the guard's questions asked during the last message
    /// (`hx chat`'s and `hx acp`'s approvers queue them).
    pub fn record_approvals(&mut self, answers: Vec<ApprovalLine>) {
        if let Some(session) = &mut self.session {
            for a in answers {
                session.record_approval(&a);
            }
        }
    }

    /// After the front end changed the history other than by a message (a rewind): the tools
    /// that remember the conversation take it up again.
    pub fn history_changed(&self) {
        if let (Some(agent), Some(session)) = (&self.agent, &self.session) {
            agent.restore_tools(session.messages());
        }
    }

    /// `hx agent --compact`, `/compact`: the history summarised now.
    pub async fn compact(&mut self) -> Result<(), Ended> {
        let (Some(agent), Some(session)) = (&self.agent, &mut self.session) else {
            return Ok(());
        };
        agent.compact_now(session).await?;
        session.turn_done();
        Ok(())
    }

    /// After a send was dropped (Ctrl-C, `session/cancel`): the views told that the run
    /// stopped, and the calls it left open answered as interrupted, so the next request is
    /// valid. The ending to map.
    pub async fn cancelled(&mut self, elapsed: Duration) -> Ending {
        self.settle_checkpoints().await;
        self.stopped(elapsed);
        let open = self
            .session
            .as_mut()
            .map_or(0, |s| s.answer_open_calls(INTERRUPTED));
        Ending::Cancelled { open }
    }

    /// After a send was dropped: the checkpoint its last turn was taking beside the request,
    /// waited for ([`CHECKPOINT_WAIT`] at most) and recorded.
    pub async fn settle_checkpoints(&mut self) {
        if let Some(s) = &mut self.session {
            s.settle_arriving(CHECKPOINT_WAIT).await;
        }
    }

    /// The views told that the run stopped, without asking the hooks (a signal, a cancel).
    pub fn stopped(&self, elapsed: Duration) {
        if let (Some(agent), Some(session)) = (&self.agent, &self.session) {
            agent.stopped(session, elapsed);
        }
    }

    /// How the last message (or the conversation) ended, mapped for `front` and kept for
    /// the session's `end` line. Only a message's own end says whether it reached the model:
    /// a signal at the prompt leaves what the last message found.
    pub fn ended(&mut self, ending: Ending, front: Front) -> Mapped {
        if let Ending::Run(_) = ending {
            self.unreached = ending.unreached();
        }
        let max_turns = self.agent.as_ref().map_or(0, Agent::max_turns);
        let mapped = ending.map(max_turns, front);
        let kind = match &mapped.turn {
            TurnEnd::Failed { kind, .. } => Some(*kind),
            TurnEnd::Answered(_) => None,
        };
        self.ending = (mapped.outcome.clone(), mapped.detail.clone(), kind);
        if let Some(s) = &self.session {
            s.turn_done();
        }
        mapped
    }

    /// Goes on with another profile, as the user `switched` it (`/model`, `/effort`): the
    /// conversation's tools, hooks and history stay. Recorded in the session: a line for
    /// what was switched, and one for the other part when it changed with it (a retired
    /// name's effort). Another model's prompt cache holds nothing sent so far, which is said.
    pub fn set_profile(&mut self, profile: Profile, switched: Switched) {
        let Some(agent) = &self.agent else {
            return;
        };
        let old = agent.profile().clone();
        let agent = agent.with_profile(profile);
        let new = agent.profile();
        if let Some(s) = &mut self.session {
            if switched == Switched::Model || new.model() != old.model() {
                s.record_model(new.model());
            }
            if switched == Switched::Effort || new.effort() != old.effort() {
                s.record_effort(new.effort());
            }
            if new.model() != old.model() && s.stats.last_prompt_tokens > 0 {
                agent.cache_broken("another model", s.stats.last_prompt_tokens);
            }
        }
        self.agent = Some(agent);
    }

    /// Ends the conversation's session: its `end` line written, then kept, or removed when
    /// it holds nothing to go on with (it never got an answer, and no message was sent or
    /// the last one never reached the model: no key, no network, a 401). A message after it
    /// starts a new session, with a new id.
    pub fn close(&mut self) -> Closed {
        let Some(mut session) = self.session.take() else {
            return Closed::NoSession;
        };
        let (outcome, detail, kind) =
            std::mem::replace(&mut self.ending, (EndOutcome::Answered, None, None));
        session.end(outcome, detail.as_deref(), kind);
        let sent = std::mem::replace(&mut self.started, false);
        self.id = crate::session::store::new_id();
        if session.never_answered() && (self.unreached || !sent) {
            let id = session.id().to_string();
            session.discard();
            return Closed::Discarded(id);
        }
        let short = short_id(&session);
        let error = session.close();
        Closed::Kept {
            id: session.id().to_string(),
            short,
            error,
        }
    }
}
