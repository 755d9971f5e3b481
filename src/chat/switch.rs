//! Switching sessions in a conversation: closing the current one, starting a new one
//! (`/new`), and resuming a recorded one (`-c`, `-r`, `/resume`).

use super::conversation::Chat;
use super::editor::Read;
use super::terminal::SavedTerminal;
use crate::app::session::{self as sessions, Pick, Resumed};
use crate::app::signals::Signals;
use crate::app::{build, exit, Closed, Conversation};
use crate::session;
use crate::term::one_line;
use crate::text::Warning;

impl Chat {
    /// Ends the current session's run in its file and names it; the next message starts a
    /// new one.
    pub(super) fn close_session(&mut self) {
        if let Closed::Kept { short, error, .. } = self.conversation.close() {
            if let Some(e) = error {
                self.say(&Warning::new(e).to_string());
            }
            if let Some(id) = short {
                self.say(&format!(
                    "hx: session {id} · continue with: hx chat -r {id}, or hx agent -r {id} \"...\""
                ));
            }
        }
    }

    /// `/new`: the current session is closed; the next message starts a fresh one, with an
    /// agent built anew (fresh todos, skills read again).
    pub(super) fn new_session(&mut self) {
        self.close_session();
        if let Err(e) = self.rebuild(session::store::new_id()) {
            self.say(&format!("hx: {e}"));
            return;
        }
        self.say("hx: new session");
    }

    /// Starts a conversation for session `id` with an agent built anew from the current
    /// config: no approvals, and SessionStart hooks run again.
    pub(super) fn rebuild(&mut self, id: String) -> Result<(), String> {
        let mut warnings = Vec::new();
        let built = build::build_agent_with(
            &self.config,
            &self.cwd,
            &self.env,
            self.events.clone(),
            self.recorder.clone(),
            &id,
            build::Asks {
                approver: Some(self.approvals.clone()),
                ..Default::default()
            },
            &mut warnings,
        );
        for w in warnings {
            self.say(&w.to_string());
        }
        let build::Built { agent, skills, .. } = built?;
        // Command files stay as the first build found them; the skills are found again.
        self.conversation = Conversation::new(self.recorder.clone(), id);
        // What the prompt queues goes on to the new conversation's turns.
        self.conversation.set_steers(self.queue.steers.clone());
        self.conversation.set_agent(agent);
        self.skills = skills;
        self.set_skill_names();
        self.approvals.reset();
        Ok(())
    }

    /// Makes a recorded session the current one (its open calls answered).
    pub(super) fn open(&mut self, resumed: Resumed) -> Result<(), i32> {
        let id = resumed.loaded.header.id.clone();
        let typed = resumed.loaded.typed.clone();
        let mut warnings = Vec::new();
        let profile = self
            .conversation
            .agent()
            .map_or_else(|| self.config.profile(), |a| a.profile().clone());
        let session = sessions::open(&self.recorder, id, Some(resumed), &profile, &mut warnings);
        for w in warnings {
            self.say(&w.to_string());
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
        let short = sessions::short_id(&session).unwrap_or_else(|| session.id().to_string());
        let recap = super::recap::last_exchanges(session.messages(), &typed);
        self.say(&format!(
            "hx: resumed session {short} ({}); where you were:\n{}",
            crate::text::count(messages as u64, "message"),
            recap.trim_end()
        ));
        self.conversation.open(session);
        Ok(())
    }

    /// The session `pick` names, read (and locked when `record`); what is wrong is said.
    fn find(&self, pick: Pick<'_>, record: bool) -> Option<Resumed> {
        match sessions::find(pick, record, &self.cwd, &self.env) {
            Ok(r) => Some(r),
            Err(f) => {
                for w in &f.warnings {
                    self.say(&w.to_string());
                }
                self.say(&format!("hx: {}", f.message));
                None
            }
        }
    }

    /// `/resume [ID]`: without an id, lists this workspace's sessions and asks which.
    pub(super) async fn resume(
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
        // Said already when not found; the conversation goes on as it was.
        let Some(found) = self.find(Pick::Id(&id), false) else {
            return Ok(());
        };
        if found.loaded.header.id == self.conversation.id() && self.conversation.session().is_some()
        {
            self.say("hx: that is the current session");
            return Ok(());
        }
        // Claude Code has no reason for a switch to another session: `other`.
        self.hear_session_end("other").await;
        self.close_session();
        // Then read again under the lock it will be appended with.
        let record = self.recorder.store.is_some();
        let Some(found) = self.find(Pick::Id(found.id()), record) else {
            return Ok(());
        };
        if let Err(e) = self.rebuild(found.loaded.header.id.clone()) {
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
        let store = sessions::store_for(&root, &self.cwd);
        let (mut list, _) = store.list(false);
        // The one this conversation is in is not one to resume.
        list.retain(|s| s.id != self.conversation.id());
        if list.is_empty() {
            self.say("hx: no other sessions in this workspace yet");
            return Ok(None);
        }
        let mut text = String::new();
        for (i, s) in list.iter().take(SHOWN).enumerate() {
            text.push_str(&format!(
                "{:>3}  {}  {}  {:>9}  {}\n",
                i + 1,
                s.short_id,
                s.started_at,
                crate::text::count(u64::from(s.turns), "turn"),
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
}
