//! How large the next request is, without a tokenizer.
//!
//! The server counts exactly: each response reports the `prompt_tokens` of its request. The
//! next request is that request plus what was appended since (the answer, tool results), so
//! only the appended part is estimated. With no count yet (the first request, a continued
//! session, right after a compaction) the whole request is estimated.
//!
//! The estimate is one token per 3 bytes of the JSON hx sends. Tokenizers of current models
//! average about 4 bytes per token on English and code, and more on JSON escapes and on
//! Chinese (3 bytes per character in UTF-8, under one token each), so the estimate errs high,
//! which is the safe side: compaction comes a little early rather than a request too late.
//! Text that tokenizes worse (random hex, base64) can beat it; the server's overflow error is
//! the backstop for that (see `agent::compact`). A tokenizer would be exact only for the
//! model it was made for, and hx talks to many.

use serde::Serialize;

use super::Settings;
use crate::model::{ChatRequest, Message, ToolSpec};

/// Bytes counted as one token.
pub const BYTES_PER_TOKEN: u64 = 3;
/// Tokens a chat template may add to a request beyond its bytes (role markers and the like).
const TEMPLATE_TOKENS: u64 = 1024;
/// A server's count is believed when it is at least the estimate divided by this.
const MIN_COUNT_SHARE: u64 = 4;
/// Tokens of answer a summary request keeps (twice the summary's budget where that is less)
/// whatever the limit leaves past it: in windows of up to 10,000 tokens, where the budget is
/// a quarter of a limit of a few thousand, the answer keeps twice it, as before issue 33.
pub const SUMMARY_ANSWER_FLOOR: u64 = 4_000;

/// The tokens `bytes` bytes of request are taken to be.
pub fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(BYTES_PER_TOKEN)
}

/// One message as it is sent.
pub fn message(m: &Message) -> u64 {
    tokens(json_len(m))
}

pub fn messages(ms: &[Message]) -> u64 {
    ms.iter().map(message).sum()
}

/// The part of every request that is not messages: the tool schemas and the fixed keys.
pub fn overhead(model: &str, tools: &[ToolSpec]) -> u64 {
    tokens(overhead_bytes(model, tools))
}

/// [`overhead`] in bytes.
pub fn overhead_bytes(model: &str, tools: &[ToolSpec]) -> usize {
    json_len(&ChatRequest {
        model,
        messages: &[],
        tools,
        // A few bytes of JSON, and no tokens of the prompt.
        thinking: None,
    })
}

/// Bytes of `v` as JSON, counted without building the text.
fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// The size of a run's requests against its limit. One per run of the loop: the last count the
/// server gave, and what the run learned about the window.
#[derive(Debug, Clone)]
pub struct Meter {
    settings: Settings,
    /// Tokens of every request besides its messages.
    overhead: u64,
    /// The server's `prompt_tokens` for the last request and how many messages it sent.
    anchor: Option<(u64, usize)>,
    /// The estimate of the first messages of the history: (how many, tokens). The history
    /// only grows between compactions, so each message is measured once.
    measured: (usize, u64),
    /// Set after an overflow: the limit the server's answer showed to be real.
    learned_limit: Option<u64>,
    /// A summary failed this run: proactive compaction waits until the window itself is at
    /// stake, rather than paying for a failing request on every turn.
    summary_failed: bool,
    /// The window the server stated that this meter took (see [`Meter::restate`]).
    stated: Option<u64>,
}

/// What runs learned of the server's window, kept by the agent for its next run (the next
/// message of a chat), so a second message does not pay for the same refused request again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Learned {
    /// The window the server named, when smaller than the configured one.
    window: Option<u64>,
    /// The limit a refused request showed to be real.
    limit: Option<u64>,
    /// The window the server stated when asked, which replaces the assumed one, larger or
    /// smaller (it is asked only when no `context_window` is set).
    stated: Option<u64>,
}

impl Learned {
    /// Both lessons at once: the smaller window and the smaller limit.
    pub fn merge(&mut self, other: Learned) {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.window = min(self.window, other.window);
        self.limit = min(self.limit, other.limit);
        self.stated = other.stated.or(self.stated);
    }

    /// What the server stated of the window when asked.
    pub fn stated(window: u64) -> Learned {
        Learned {
            stated: Some(window),
            ..Learned::default()
        }
    }
}

impl Meter {
    pub fn new(settings: Settings, overhead: u64) -> Meter {
        Meter {
            settings,
            overhead,
            anchor: None,
            measured: (0, 0),
            learned_limit: None,
            summary_failed: false,
            stated: None,
        }
    }

    /// A meter that starts from what earlier runs learned.
    pub fn with_learned(mut self, learned: Learned) -> Meter {
        self.restate(learned);
        if let Some(w) = learned.window.filter(|&w| w < self.settings.window) {
            self.settings.window = w;
        }
        self.learned_limit = learned.limit;
        self
    }

    /// Takes the window the server stated, once: the answer to a question asked beside the
    /// run may come while it runs, and applies from the next request on. A window a refused
    /// request showed to be smaller still wins. Whether the window changed.
    pub fn restate(&mut self, learned: Learned) -> bool {
        let Some(stated) = learned.stated.filter(|&w| Some(w) != self.stated) else {
            return false;
        };
        self.stated = Some(stated);
        let window = learned.window.map_or(stated, |w| w.min(stated));
        let changed = window != self.settings.window;
        self.settings.window = window;
        changed
    }

    /// What this run learned, for the next.
    pub fn learned(&self, configured: &Settings) -> Learned {
        Learned {
            window: (self.settings.window < configured.window).then_some(self.settings.window),
            limit: self.learned_limit,
            // The agent keeps what the server stated; the meter only took it.
            stated: None,
        }
    }

    /// The tool schemas changed (an MCP server's list): the overhead is another, and the
    /// server's last count no longer describes a request. What the run learned of the window
    /// and the measures of the messages still hold.
    pub fn tools_changed(&mut self, overhead: u64) {
        self.overhead = overhead;
        self.anchor = None;
    }

    /// The window in force (the server's, when it named a smaller one).
    pub fn window(&self) -> u64 {
        self.settings.window
    }

    /// The most tokens a request may have before compaction.
    pub fn limit(&self) -> u64 {
        let limit = self.settings.limit();
        self.learned_limit.map_or(limit, |l| l.min(limit))
    }

    pub fn overhead(&self) -> u64 {
        self.overhead
    }

    /// The estimated size of a request sending `history`.
    pub fn request(&mut self, history: &[Message]) -> u64 {
        match self.anchor {
            Some((prompt, sent)) if sent <= history.len() => {
                prompt.saturating_add(messages(&history[sent..]))
            }
            _ => self.whole(history),
        }
    }

    /// The estimate of a request sending `history`, ignoring the server's count.
    pub fn whole(&mut self, history: &[Message]) -> u64 {
        let (n, tokens) = self.measured;
        let tokens = match history.get(n..) {
            Some(rest) => tokens.saturating_add(messages(rest)),
            None => messages(history),
        };
        self.measured = (history.len(), tokens);
        tokens.saturating_add(self.overhead)
    }

    /// The server counted `prompt_tokens` for the request that sent `history`. The server is
    /// outside hx, so a count it made up is no count, and the whole request is estimated
    /// instead: one larger than the request's bytes (no tokenizer makes more tokens than bytes,
    /// beyond a chat template's few), which would trigger compactions for nothing, and one
    /// under a quarter of hx's estimate (tokenizers average about 4 bytes a token where the
    /// estimate takes 3, so a real count comes near three quarters of it), which would let
    /// the next requests grow past the window unseen. A count of 0 (some servers send zeros) is below
    /// any estimate.
    pub fn observed(&mut self, prompt_tokens: u64, history: &[Message]) {
        let estimate = self.whole(history);
        let bytes = estimate.saturating_mul(BYTES_PER_TOKEN);
        let too_high = prompt_tokens > bytes.saturating_add(TEMPLATE_TOKENS);
        let too_low = prompt_tokens.saturating_mul(MIN_COUNT_SHARE) < estimate;
        if !too_high && !too_low {
            self.anchor = Some((prompt_tokens, history.len()));
        }
    }

    /// The first `count` messages of the history take `bytes` bytes as sent, as measured
    /// elsewhere (the session file they were read from): they are not measured again.
    pub fn seed(&mut self, known: Option<(usize, u64)>) {
        if let (Some((count, bytes)), (0, 0)) = (known, self.measured) {
            self.measured = (count, tokens(usize::try_from(bytes).unwrap_or(usize::MAX)));
        }
    }

    /// The history was replaced or changed in place: the last count and the measures say
    /// nothing about it.
    pub fn history_changed(&mut self) {
        self.anchor = None;
        self.measured = (0, 0);
    }

    /// The largest summary request that leaves the window room for its answer (the window
    /// holds a request's input and its output): the room every request of the loop has past
    /// the limit, for its answer and for the error of the estimate. The summary request is
    /// measured as they are (the server's count of what was sent, bytes / 3 for the rest,
    /// which errs high), so it needs no other margin. That room is at least the summary's
    /// budget, the most of the answer the rebuilt history keeps (counted in the estimate's
    /// tokens, so the same text takes about three quarters of it by a tokenizer's count,
    /// the rest left for reasoning), and at most twice it, the summary and as much reasoning
    /// again: where the window leaves more (windows of about 80,000 tokens and up) the room
    /// is what it was. In a small window the budget shrinks with the limit faster than the
    /// summary's sections and the reasoning before them do: there the answer keeps twice the
    /// budget up to [`SUMMARY_ANSWER_FLOOR`], whatever the limit leaves.
    ///
    /// Twice the budget in every window was the rule before (issue 33): in a 40,000-token
    /// window it left the answer 16,000 tokens, twice a turn's, and held the requests
    /// under 24,000, where each turn's new results were 6.1 % of all prompt tokens.
    pub fn summary_room(&self) -> u64 {
        let budget = super::Budgets::for_limit(self.limit()).summary;
        let most = budget.saturating_mul(2);
        let least = budget.max(SUMMARY_ANSWER_FLOOR).min(most);
        let answer = self
            .window()
            .saturating_sub(self.limit())
            .clamp(least, most);
        self.window().saturating_sub(answer)
    }

    /// The size past which a request sending `history` calls for compaction: the limit, or
    /// less where the summary request must fit in [`Meter::summary_room`] as the request
    /// before it plus the instruction (a window under about 80,000 tokens; from 20,000 up
    /// that room is the limit itself at the default `compact_at`, so the point is the
    /// instruction and a turn below it). Shrinking a
    /// summary request rewrites the prefix the cache holds, so compaction starts while the
    /// next request can still carry the instruction whole: it is taken to grow by what the
    /// last turn added (the newest answer and what came after it). A turn larger than a
    /// quarter of that room is no guide to the next one; if the next one is as large, its
    /// summary request cuts the newest outputs, which were never sent.
    ///
    /// Compacting early costs the run room to work (what the point leaves above the tool
    /// schemas), and a run compacts about as often as it fills that room, each time paying for
    /// a summary request and a request that misses the cache whole. So the point moves only
    /// while it keeps two thirds of that room (at most half as many compactions again): in
    /// windows of up to about 10,000 tokens it would keep less, and there compaction waits
    /// for the limit and the summary request is shrunk to fit.
    pub fn compact_point(&self, history: &[Message]) -> u64 {
        let limit = self.limit();
        let room = self
            .summary_room()
            .saturating_sub(message(&Message::User(super::summary::PROMPT.to_string())));
        let work = |at: u64| at.saturating_sub(self.overhead);
        if room >= limit || work(room).saturating_mul(3) < work(limit).saturating_mul(2) {
            return limit;
        }
        let last = history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
            .map_or(0, |i| messages(&history[i..]));
        let growth = if last > room / 4 { 0 } else { last };
        room.saturating_sub(growth)
    }

    /// Whether a request of `size` tokens sending `history` calls for compaction now.
    pub fn over_limit(&self, size: u64, history: &[Message]) -> bool {
        size > self.compact_point(history) && !(self.summary_failed && size <= self.window())
    }

    pub fn summary_failed(&mut self) {
        self.summary_failed = true;
    }

    /// The server refused a request of (by estimate) `size` tokens as too long, naming its
    /// window when it did. From now on the limit is the configured share of that window, or,
    /// when the server's window is not smaller than the configured one (so the estimate was
    /// wrong, not the window), half the refused size. Returns a warning for the user when the
    /// configured window was wrong.
    pub fn overflowed(&mut self, server_window: Option<u64>, size: u64) -> Option<String> {
        match server_window {
            Some(w) if w < self.settings.window => {
                let configured = self.settings.window;
                self.settings.window = w;
                self.learned_limit = None;
                Some(format!(
                    "the server's context window is {} tokens, not {} (context_window); this run \
                     uses the server's",
                    super::thousands(w),
                    super::thousands(configured)
                ))
            }
            _ => {
                let half = size / 2;
                self.learned_limit = Some(self.learned_limit.map_or(half, |l| l.min(half)));
                None
            }
        }
    }
}
