//! Context that fits: what the model is told before the task, and keeping the conversation
//! inside its context window.
//!
//! - [`instructions`]: the project's `AGENTS.md` (or `CLAUDE.md`) files, read once for the
//!   system prompt.
//! - [`estimate`]: the size of the next request, anchored on the server's own count of the
//!   last one, and the [`Settings`] that say when it is too large.
//! - [`prune`]: the cheap step, without a model call: older tool outputs replaced by a line.
//! - [`summary`]: the other step: the summary request, and the history rebuilt around its
//!   answer with the task, the loaded skills, the todo list and the newest user messages.
//!
//! This module is logic over messages; `agent::compact` runs the steps in the loop, asks the
//! model, tells the hooks and records the result in the session.

pub mod estimate;
pub mod instructions;
pub mod prune;
pub mod summary;

pub use estimate::{Learned, Meter};
// A text helper, in the leaf `text` module so the views can use it too.
pub use crate::text::thousands;

/// The window of a model hx knows nothing about (most current models have at least this).
pub const DEFAULT_WINDOW: u64 = 128_000;
/// DeepSeek V4's window (and V4.1 Flash's, `deepseek-flash`), as its API reports it in an
/// overflow error.
pub const DEEPSEEK_V4_WINDOW: u64 = 1_048_576;
/// The smallest window hx accepts: below it the system prompt and tools alone do not fit.
pub const MIN_WINDOW: u64 = 1_000;
/// Compaction starts when the next request would pass this share of the window; the rest is
/// room for the answer and for the error of the estimate.
pub const DEFAULT_COMPACT_AT: f64 = 0.8;
/// Bytes of instruction files the system prompt takes at most.
pub const DEFAULT_PROJECT_DOC_MAX_BYTES: usize = 32 * 1024;

/// When to compact: a share of the window, or a number of tokens (long requests cost money
/// even when cached, so a user may want them shorter than the window allows).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompactAt {
    Fraction(f64),
    Tokens(u64),
}

/// The window of the model a run talks to, and when to compact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Tokens the model accepts in one request (prompt and answer).
    pub window: u64,
    pub compact_at: CompactAt,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: DEFAULT_WINDOW,
            compact_at: CompactAt::Fraction(DEFAULT_COMPACT_AT),
        }
    }
}

impl Settings {
    /// The most tokens a request may have before hx compacts: `compact_at`, never past the
    /// window.
    pub fn limit(&self) -> u64 {
        let limit = match self.compact_at {
            CompactAt::Fraction(f) => (self.window as f64 * f.clamp(0.0, 1.0)) as u64,
            CompactAt::Tokens(t) => t,
        };
        limit.min(self.window)
    }
}

/// The window hx knows for a model without configuration: DeepSeek's current names
/// (`deepseek-flash`, `deepseek-v4-pro`, the alias `deepseek-v4-flash`) and the retired ones,
/// which V4.1 Flash answers.
pub fn builtin_window(model: &str) -> Option<u64> {
    let m = model.to_ascii_lowercase();
    let deepseek = m.starts_with("deepseek-v4")
        || m.starts_with("deepseek-flash")
        || m == "deepseek-chat"
        || m == "deepseek-reasoner";
    deepseek.then_some(DEEPSEEK_V4_WINDOW)
}

/// How much of the limit each part of a compacted history may take. The figures are for large
/// windows (a 128,000-token window leaves them whole); a small window scales them down with
/// its limit, so a compacted history always leaves room to work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Tool output kept whole by pruning, newest first.
    pub keep_tool_output: u64,
    /// Pruning is worth it only when it frees at least this much.
    pub min_prune_gain: u64,
    /// One skill body carried over a summary.
    pub skill_each: u64,
    /// All skill bodies carried over a summary.
    pub skills_total: u64,
    /// User messages (after the task) carried over a summary, newest first.
    pub user_messages: u64,
    /// The summary itself.
    pub summary: u64,
    /// The least room under the limit worth cutting results the model has not seen to;
    /// with less, the older history is summarised first.
    pub newest_floor: u64,
}

impl Budgets {
    pub fn for_limit(limit: u64) -> Budgets {
        Budgets {
            keep_tool_output: (limit / 2).min(40_000),
            min_prune_gain: (limit / 5).min(20_000),
            skill_each: (limit / 8).min(5_000),
            skills_total: (limit / 4).min(25_000),
            user_messages: (limit / 4).min(20_000),
            summary: (limit / 4).min(8_000),
            newest_floor: (limit / 10).min(4_000),
        }
    }
}

#[cfg(test)]
mod tests;
