//! Steers: messages the user sends while a message's run goes on (`hx chat`'s Enter during a
//! turn). Each is appended to the history as a user message before the run's next request,
//! after the answers of the calls in flight: never between a call and its answer, and never
//! among earlier messages, so the request before stays a prefix of the next one and the
//! server's prefix cache keeps hitting.
//!
//! They are the user's words, not hx's: plain `Message::User`s in the session (recorded,
//! resumed, and carried by a compaction's summary as what the user said), unlike the notes of
//! a [`crate::tools::Reminder`], which mark themselves as hx's.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Steers waiting at once; one more is refused (the user is told), so a key held down
/// cannot grow the next request without bound.
pub const MAX_STEERS: usize = 16;

/// The queue a front end pushes into while the run drains it before each request. Shared
/// (`Arc`) between the two.
#[derive(Debug, Default)]
pub struct Steers {
    queue: Mutex<VecDeque<String>>,
}

impl Steers {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<String>> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues `text` for the next request; `false` when [`MAX_STEERS`] already wait.
    pub fn push(&self, text: String) -> bool {
        let mut q = self.queue();
        if q.len() >= MAX_STEERS {
            return false;
        }
        q.push_back(text);
        true
    }

    /// Everything queued, oldest first, the queue left empty: what the run appends now, or
    /// what a run that ended left unsent.
    pub fn take(&self) -> Vec<String> {
        self.queue().drain(..).collect()
    }

    /// The newest steer, taken back before it was sent (to edit or drop it).
    pub fn take_last(&self) -> Option<String> {
        self.queue().pop_back()
    }

    /// What waits, oldest first, left queued.
    pub fn texts(&self) -> Vec<String> {
        self.queue().iter().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.queue().len()
    }

    pub fn is_empty(&self) -> bool {
        self.queue().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steers_come_out_oldest_first_and_the_queue_is_bounded() {
        let s = Steers::default();
        for i in 0..MAX_STEERS {
            assert!(s.push(format!("m{i}")));
        }
        assert!(!s.push("one too many".into()));
        assert_eq!(s.take_last().as_deref(), Some("m15"));
        let all = s.take();
        assert_eq!(all.len(), MAX_STEERS - 1);
        assert_eq!(all[0], "m0");
        assert!(s.is_empty());
    }
}
