//! Approvals: in `hx chat`, a call the guard would refuse is put to the person at the
//! terminal first. `y` runs it once, `a` runs this exact command for the rest of the session
//! without asking again, `n` (and Enter, and anything else) refuses, and the model gets the
//! guard's error as in one-shot mode. The chat's prompt is up while the turn runs (see
//! `queue`): the question is printed above it and the next line typed answers it. A user hook's block never gets here (see
//! `Hooks::pre_tool_use`). Every answer is kept for the conversation to record in the session.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use futures_util::future::BoxFuture;
use tokio::sync::oneshot;

use super::editor::Read;
use crate::hooks::ledger::Ledger;
use crate::hooks::{Approval, Approver, HookContext};
use crate::model::ToolCall;
use crate::notify::{Notifier, Why};
use crate::session::ApprovalLine;
use crate::term::Term;

/// The question, after the command and the reason.
pub const QUESTION: &str = "Run it? [y] once, [a] always in this session, [N] no: ";

pub struct Approvals {
    term: Arc<Term>,
    state: Mutex<State>,
    ledger: Ledger,
    /// One question at a time: concurrent subagents wait their turn.
    asking: tokio::sync::Mutex<()>,
    /// Told when a question waits after a long turn.
    notifier: Option<Arc<Notifier>>,
}

#[derive(Default)]
struct State {
    /// Cancels the running turn: Ctrl-C at the question stops the turn, as it would anywhere
    /// else during it.
    cancel: Option<oneshot::Sender<()>>,
    /// When the running turn began.
    began: Option<Instant>,
    /// The question waiting for its answer: the next line read at the prompt.
    waiting: Option<oneshot::Sender<Read>>,
}

impl Approvals {
    pub fn new(term: Arc<Term>, notifier: Option<Arc<Notifier>>) -> Arc<Approvals> {
        Arc::new(Approvals {
            term,
            state: Mutex::new(State::default()),
            ledger: Ledger::default(),
            asking: tokio::sync::Mutex::new(()),
            notifier,
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new session: nothing is allowed without asking any more.
    pub fn reset(&self) {
        self.ledger.reset();
    }

    /// A turn starts: the receiver fires when the user presses Ctrl-C at a question.
    pub fn begin_turn(&self) -> oneshot::Receiver<()> {
        let (tx, rx) = oneshot::channel();
        let mut st = self.state();
        st.cancel = Some(tx);
        st.began = Some(Instant::now());
        rx
    }

    /// A line read at the prompt during a turn: the answer of the question waiting, if one
    /// is (`Ok`); else given back, for the queue.
    pub fn answer(&self, read: Read) -> Result<(), Read> {
        match self.state().waiting.take() {
            Some(tx) => tx.send(read),
            None => Err(read),
        }
    }

    /// The answers given since the last call, oldest first, for the session.
    pub fn take_answered(&self) -> Vec<ApprovalLine> {
        self.ledger.take_answered()
    }

    async fn ask(
        &self,
        call: &ToolCall,
        command: &str,
        reason: &str,
        cx: &HookContext,
    ) -> Approval {
        let _one = self.asking.lock().await;
        // The editor writes the question itself: the spinner of the waiting call keeps off it.
        let _hold = self.term.hold_spinner();
        let p = &cx.scope.prefix;
        if let Some(before) = self.ledger.allowed_before(call, command, reason) {
            self.term.line(&format!(
                "{p}hx: allowed for this session: {}",
                command.replace('\n', "\n    ")
            ));
            return before;
        }
        let shown = command.replace('\n', "\n    ");
        self.term.line(&format!(
            "{p}hx: the guard would refuse this command: {reason}\n    {shown}"
        ));
        let began = self.state().began;
        if let (Some(n), Some(began)) = (&self.notifier, began) {
            n.tell(began.elapsed(), &cx.session_id, Why::Approval { command })
                .await;
        }
        let (tx, rx) = oneshot::channel();
        self.state().waiting = Some(tx);
        self.term.line(QUESTION);
        let answer = match rx.await.unwrap_or(Read::Eof) {
            Read::Line(l) | Read::NextTurn(l) => match l.trim().to_ascii_lowercase().as_str() {
                "y" | "yes" => Approval::Once,
                "a" | "always" => Approval::Always,
                _ => Approval::Refused,
            },
            Read::Interrupted => {
                if let Some(cancel) = self.state().cancel.take() {
                    let _ = cancel.send(());
                }
                Approval::Refused
            }
            Read::Eof | Read::Failed(_) => Approval::Refused,
        };
        self.ledger.answered(call, command, reason, answer);
        answer
    }
}

impl Approver for Approvals {
    fn approve<'a>(
        &'a self,
        call: &'a ToolCall,
        command: &'a str,
        reason: &'a str,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, Approval> {
        Box::pin(self.ask(call, command, reason, cx))
    }

    fn will_ask(&self, _call: &ToolCall, command: &str, _reason: &str) -> bool {
        !self.ledger.is_always(command)
    }
}
