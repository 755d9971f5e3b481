//! What the user sends while a turn runs. The prompt stays up during the turn (its prompt
//! reads [`BUSY_PROMPT`] meanwhile):
//!
//! - Enter queues the line as a **steer**: the running turn appends it as a user message
//!   before its next request, after the answers of the calls in flight
//!   ([`crate::agent::steer`]). A steer the turn ended before sending (the model answered
//!   without another request) is not lost: it is sent as the next message, at once.
//! - Tab queues it for the **next turn**: sent as its own message when the turn ends, one
//!   after the other in the order queued.
//! - Up on an empty prompt takes the newest queued message back into the line to edit
//!   (Enter queues it again; Ctrl-C on the line drops it).
//!
//! Ctrl-C stops the turn and sends nothing more: whatever was queued stays, and Enter on an
//! empty prompt sends the next of it (`/queue` lists it, Up takes it back).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::approve::Approvals;
use super::commands::{self, Input};
use super::conversation::{Chat, Pending};
use super::editor::{LineEditor, Read};
use super::terminal::SavedTerminal;
use super::PROMPT;
use crate::agent::steer::{Steers, MAX_STEERS};
use crate::app::signals::Signals;
use crate::app::Outgoing;
use crate::term::Term;

/// The prompt while a turn runs: as wide as [`super::PROMPT`] (the line editor keeps the
/// width it started with), and other than it, which tests and the benchmark wait for.
pub const BUSY_PROMPT: &str = "..> ";

/// Next-turn messages waiting at once (steers have their own bound, [`MAX_STEERS`]).
pub const MAX_QUEUED: usize = 16;

/// Shared by the conversation loop and the line editor's thread (whose Up and Tab keys look
/// at it).
#[derive(Debug)]
pub struct Queue {
    /// The conversation's steers, drained by the running turn.
    pub steers: Arc<Steers>,
    next: Mutex<VecDeque<String>>,
    /// A turn runs.
    busy: AtomicBool,
}

impl Queue {
    pub fn new(steers: Arc<Steers>) -> Queue {
        Queue {
            steers,
            next: Mutex::default(),
            busy: AtomicBool::new(false),
        }
    }

    fn next(&self) -> MutexGuard<'_, VecDeque<String>> {
        self.next.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_busy(&self, busy: bool) {
        self.busy.store(busy, Ordering::SeqCst);
    }

    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    /// Queues `text` as a steer; the line saying so, or why not.
    pub fn steer(&self, text: String) -> String {
        if self.steers.push(text) {
            format!("hx: steer queued for the next request ({})", self.waiting())
        } else {
            format!("hx: {MAX_STEERS} steers wait already; this one is not queued")
        }
    }

    /// Queues `text` for the next turn; the line saying so, or why not.
    pub fn next_turn(&self, text: String) -> String {
        let mut next = self.next();
        if next.len() >= MAX_QUEUED {
            return format!("hx: {MAX_QUEUED} messages wait already; this one is not queued");
        }
        next.push_back(text);
        drop(next);
        format!("hx: queued for the next turn ({})", self.waiting())
    }

    /// What waits, in a few words.
    fn waiting(&self) -> String {
        format!(
            "{} waiting; Up on an empty prompt takes the last back",
            crate::text::count((self.steers.len() + self.next().len()) as u64, "message")
        )
    }

    /// The message to send when a turn ends: the steers it left unsent, together, else the
    /// first next-turn message.
    pub fn pop(&self) -> Option<String> {
        let unsent = self.steers.take();
        if !unsent.is_empty() {
            return Some(unsent.join("\n\n"));
        }
        self.next().pop_front()
    }

    /// The newest queued message, taken back to edit (Up on an empty prompt).
    pub fn take_back(&self) -> Option<String> {
        self.next().pop_back().or_else(|| self.steers.take_last())
    }

    pub fn is_empty(&self) -> bool {
        self.steers.is_empty() && self.next().is_empty()
    }

    /// `/queue`: what waits, oldest first.
    pub fn listing(&self) -> String {
        let next = self.next();
        if next.is_empty() && self.steers.is_empty() {
            return "nothing queued (during a turn: Enter steers it, Tab queues the next turn)"
                .into();
        }
        let mut lines: Vec<String> = (self.steers.texts().iter())
            .map(|m| format!("steer: {}", crate::text::one_line(m, 70)))
            .collect();
        for m in next.iter() {
            lines.push(format!("next turn: {}", crate::text::one_line(m, 70)));
        }
        lines.join("\n")
    }
}

/// What a line typed during a turn goes to: the approval question waiting, else the queue.
pub(super) struct During {
    pub(super) queue: Arc<Queue>,
    pub(super) approvals: Arc<Approvals>,
    pub(super) editor: LineEditor,
    pub(super) term: Arc<Term>,
}

impl During {
    pub(super) fn editor_read(&self) -> Pending {
        let editor = self.editor.clone();
        Box::pin(async move { editor.read(PROMPT).await })
    }

    /// Takes one read of the prompt; what the turn must act on is given back: Ctrl-C on an
    /// empty line (the turn stops), or a terminal that cannot be read.
    pub(super) fn line(&self, got: Read) -> Option<Read> {
        let got = self.approvals.answer(got).err()?;
        let (text, next_turn) = match got {
            Read::Line(l) => (l, false),
            Read::NextTurn(l) => (l, true),
            Read::Eof => {
                self.term.line(
                    "hx: a turn is running: Ctrl-C stops it; Ctrl-D leaves at the prompt after it",
                );
                return None;
            }
            other => return Some(other),
        };
        let text = commands::join_continued(&text);
        if text.trim().is_empty() {
            return None;
        }
        self.editor.remember(&text);
        let said = if text.starts_with('/') && !text.starts_with("//") {
            match commands::parse(&text) {
                Input::Queue => self.queue.listing(),
                _ => "hx: commands wait for the prompt after the turn (Up brings this one back)"
                    .to_string(),
            }
        } else {
            let text = text
                .strip_prefix('/')
                .filter(|t| t.starts_with('/'))
                .map_or(text.clone(), str::to_string);
            if next_turn {
                self.queue.next_turn(text)
            } else {
                self.queue.steer(text)
            }
        };
        self.term.line(&said);
        None
    }
}

impl Chat {
    /// After a turn that was not stopped, what was queued during it, one message after the
    /// other: the steers it left unsent, then the next-turn messages in order (see `queue`).
    pub(super) async fn follow(
        &mut self,
        ends: &mut Signals,
        terminal: &SavedTerminal,
    ) -> Option<i32> {
        while !self.stopped {
            let next = self.queue.pop()?;
            self.say(&format!(
                "hx: sending what was queued: {}",
                crate::text::one_line(&next, 70)
            ));
            if let Some(code) = self.send(&Outgoing::text(next), ends, terminal).await {
                return Some(code);
            }
        }
        if !self.queue.is_empty() {
            self.say("hx: stopped; what was queued waits: Enter on an empty prompt sends it, /queue lists it");
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsent_steers_go_first_as_one_message_then_the_next_turns() {
        let q = Queue::new(Arc::default());
        q.next_turn("later".into());
        q.steer("a".into());
        q.steer("b".into());
        assert_eq!(q.pop().as_deref(), Some("a\n\nb"));
        assert_eq!(q.pop().as_deref(), Some("later"));
        assert_eq!(q.pop(), None);
    }

    #[test]
    fn up_takes_back_the_newest_next_turn_message_then_steers() {
        let q = Queue::new(Arc::default());
        q.steer("s".into());
        q.next_turn("n".into());
        assert_eq!(q.take_back().as_deref(), Some("n"));
        assert_eq!(q.take_back().as_deref(), Some("s"));
        assert!(q.is_empty());
    }
}
