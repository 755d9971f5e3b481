//! What the person a front end asks (the user at `hx chat`'s terminal, `hx acp`'s editor)
//! answered about the guard's refusals in one session: the commands allowed always, and the
//! answers not yet recorded in the session file. Shared by `chat::approve` and `acp::permission`
//! so both record the same lines and mean the same by "always".

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};

use super::Approval;
use crate::model::ToolCall;
use crate::session::{store, ApprovalLine};

#[derive(Default)]
pub struct Ledger {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Commands answered "always" in this session.
    always: HashSet<String>,
    /// Answers not yet recorded in the session.
    answered: Vec<ApprovalLine>,
}

impl Ledger {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session: nothing is allowed without asking any more.
    pub fn reset(&self) {
        let mut s = self.state();
        s.always.clear();
        s.answered.clear();
    }

    /// Whether `command` was allowed always before (nothing recorded).
    pub fn is_always(&self, command: &str) -> bool {
        self.state().always.contains(command)
    }

    /// `Some(Always)`, recorded as `allowed`, when `command` was allowed always before: it is
    /// not asked again.
    pub fn allowed_before(&self, call: &ToolCall, command: &str, reason: &str) -> Option<Approval> {
        if !self.state().always.contains(command) {
            return None;
        }
        self.record(call, command, reason, "allowed");
        Some(Approval::Always)
    }

    /// Keeps the answer to a question: recorded, and remembered when it is "always".
    pub fn answered(&self, call: &ToolCall, command: &str, reason: &str, answer: Approval) {
        let word = match answer {
            Approval::Once => "once",
            Approval::Always => "always",
            Approval::Refused => "refused",
        };
        if answer == Approval::Always {
            self.state().always.insert(command.to_string());
        }
        self.record(call, command, reason, word);
    }

    fn record(&self, call: &ToolCall, command: &str, reason: &str, answer: &str) {
        self.state().answered.push(ApprovalLine {
            call_id: call.id.clone(),
            command: command.to_string(),
            reason: reason.to_string(),
            answer: answer.to_string(),
            at: store::now_rfc3339(),
        });
    }

    /// The answers given since the last call, oldest first, for the session.
    pub fn take_answered(&self) -> Vec<ApprovalLine> {
        std::mem::take(&mut self.state().answered)
    }
}
