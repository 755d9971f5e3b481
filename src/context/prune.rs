//! The first step of compaction, without a model call: the content of older tool results is
//! replaced by one line saying what it was, keeping the newest tool output whole.
//!
//! Old command output and file contents are most of a long run's history and the part the
//! model needs least: it can run the command or read the file again. Results of tools that
//! say they are not output (skill bodies: instructions) are never cleared.
//!
//! Results the model has not seen yet (those after the newest assistant message) are never
//! cleared: a model that only ever sees that its output was cleared runs the command again,
//! and in a small window it did so turn after turn without ever reading it. When they do not
//! fit, they are cut ([`cut`]): their head and tail kept, with a line saying how much is left
//! out and how to read it. They were never sent, so cutting them costs the prompt cache
//! nothing.

use std::collections::HashMap;

use super::estimate;
use crate::model::Message;
use crate::tools::output::quote;
use crate::tools::ToolSet;

/// How a cleared result begins; a result that begins so is not cleared again.
pub const CLEARED_PREFIX: &str = "[output cleared to save context: ";

/// What replaces a result of `chars` characters from the tool `tool`.
pub fn placeholder(chars: usize, tool: &str) -> String {
    format!(
        "{CLEARED_PREFIX}{} chars of {}; run it again if needed]",
        super::thousands(chars as u64),
        quote(tool)
    )
}

/// The results to clear or cut: their index in the history and the text that replaces each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub cleared: Vec<(usize, String)>,
    /// Estimated tokens the request loses.
    pub freed: u64,
    /// How many of `cleared` are results the model has not seen, cut rather than cleared
    /// (the last ones: they are the newest).
    pub cut: usize,
}

impl Plan {
    /// The results cleared of those the model has seen.
    pub fn old(&self) -> &[(usize, String)] {
        &self.cleared[..self.cleared.len() - self.cut]
    }

    /// This plan and `cuts` (of results after all of its own).
    pub fn with_cuts(mut self, cuts: Plan) -> Plan {
        self.cut += cuts.cleared.len();
        self.freed = self.freed.saturating_add(cuts.freed);
        self.cleared.extend(cuts.cleared);
        self
    }
}

/// Where the messages the model has not seen yet begin: after the newest assistant message
/// (the results of its calls, a reminder after them).
pub fn unseen_from(history: &[Message]) -> usize {
    history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .map_or(0, |i| i + 1)
}

/// The tool of each call in `history`, by call id.
fn tool_names(history: &[Message]) -> HashMap<&str, &str> {
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in history {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                names.insert(&c.id, &c.name);
            }
        }
    }
    names
}

/// The tool results of `history` to clear so that only the newest `keep` tokens of tool output
/// stay whole. The result that crosses `keep` and every older one are cleared, unless
/// clearing would not make it shorter, its tool in `tools` says it must stay, or the model has
/// not seen it yet ([`unseen_from`]: it counts as kept).
pub fn plan(history: &[Message], keep: u64, tools: &ToolSet) -> Plan {
    let names = tool_names(history);
    let unseen = unseen_from(history);
    let mut plan = Plan::default();
    let mut kept = 0u64;
    for (i, m) in history.iter().enumerate().rev() {
        let Message::Tool {
            tool_call_id,
            content,
        } = m
        else {
            continue;
        };
        let tool = names.get(tool_call_id.as_str()).copied().unwrap_or("?");
        if !tools.prunable(tool) || content.starts_with(CLEARED_PREFIX) {
            continue;
        }
        let size = estimate::message(m);
        kept = kept.saturating_add(size);
        if kept <= keep || i >= unseen {
            continue;
        }
        let line = placeholder(content.chars().count(), tool);
        let replaced = estimate::message(&Message::Tool {
            tool_call_id: tool_call_id.clone(),
            content: line.clone(),
        });
        if replaced < size {
            plan.freed += size - replaced;
            plan.cleared.push((i, line));
        }
    }
    plan.cleared.reverse();
    plan
}

/// The results the model has not seen that `tools` lets a compaction shorten: their index
/// and estimated tokens, in history order.
pub fn unseen(history: &[Message], tools: &ToolSet) -> Vec<(usize, u64)> {
    let names = tool_names(history);
    let from = unseen_from(history);
    history
        .iter()
        .enumerate()
        .skip(from)
        .filter_map(|(i, m)| match m {
            Message::Tool { tool_call_id, .. } => {
                let tool = names.get(tool_call_id.as_str()).copied().unwrap_or("?");
                tools.prunable(tool).then(|| (i, estimate::message(m)))
            }
            _ => None,
        })
        .collect()
}

/// The results `at` (index and estimated tokens, as [`unseen`] gives them) cut so that
/// together they take at most about `room` tokens: a result smaller than its share stays
/// whole and leaves the rest of its share to the larger ones; each larger one keeps its head
/// and tail around [`cut_note`].
pub fn cut(history: &[Message], at: &[(usize, u64)], room: u64) -> Plan {
    let mut by_size = at.to_vec();
    by_size.sort_by_key(|&(i, size)| (size, i));
    let mut left = room;
    let mut plan = Plan::default();
    for (k, &(i, size)) in by_size.iter().enumerate() {
        let share = left / (by_size.len() - k) as u64;
        if size <= share {
            left -= size;
            continue;
        }
        left -= share;
        let Some(Message::Tool {
            tool_call_id,
            content,
        }) = history.get(i)
        else {
            continue;
        };
        // The message's keys and id are the same however much of its content is kept.
        let fixed = estimate::message(&Message::Tool {
            tool_call_id: tool_call_id.clone(),
            content: String::new(),
        });
        let text = cut_text(
            content,
            size.saturating_sub(fixed),
            share.saturating_sub(fixed),
        );
        let after = estimate::message(&Message::Tool {
            tool_call_id: tool_call_id.clone(),
            content: text.clone(),
        });
        if after < size {
            plan.freed += size - after;
            plan.cleared.push((i, text));
        }
    }
    plan.cleared.sort_by_key(|(i, _)| *i);
    plan.cut = plan.cleared.len();
    plan
}

/// The line standing for the middle of an output that was cut to fit the context window,
/// `omitted` of its `total` characters.
pub fn cut_note(omitted: usize, total: usize) -> String {
    format!(
        "... [hx cut this output to fit the context window: {} of its {} characters are left \
         out here. To see them, read it again in parts: a narrower command (grep, head, tail, \
         sed -n), or read_file with offset and limit] ...",
        super::thousands(omitted as u64),
        super::thousands(total as u64)
    )
}

/// `content`, `size` tokens as sent, cut to at most about `tokens` tokens: its first and last
/// characters around [`cut_note`]. Characters are taken in the proportion the whole content
/// has to its tokens, so escapes and multi-byte text are counted as the estimate counts them.
fn cut_text(content: &str, size: u64, tokens: u64) -> String {
    let total = content.chars().count();
    let note = cut_note(total, total);
    // The note, the newlines around it, and the rounding of two halves.
    let budget = tokens.saturating_sub(estimate::tokens(note.len() + 2) + 2);
    let keep = ((total as u128 * budget as u128) / size.max(1) as u128) as usize;
    let keep = keep.min(total);
    let head = keep / 2;
    let tail = keep - head;
    let head_end = content
        .char_indices()
        .nth(head)
        .map_or(content.len(), |(b, _)| b);
    let tail_start = content
        .char_indices()
        .nth(total - tail)
        .map_or(content.len(), |(b, _)| b);
    let mut out = String::with_capacity(keep * 4 + note.len() + 2);
    out.push_str(&content[..head_end]);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&cut_note(total - keep, total));
    out.push('\n');
    out.push_str(&content[tail_start..]);
    out
}

/// `history` with the plan's results replaced.
pub fn apply(history: &mut [Message], cleared: &[(usize, String)]) {
    for (i, line) in cleared {
        if let Some(Message::Tool { content, .. }) = history.get_mut(*i) {
            *content = line.clone();
        }
    }
}

/// What the prompt cache makes of a prune: a cached prompt token's price as a share of an
/// uncached one's (DeepSeek Flash: 1/50), or `None` when the server keeps no cache.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cache {
    None,
    HitShare(f64),
}

/// What is known of a prune when it is weighed: tokens it frees, tokens of history after the
/// first result it clears (the next request misses them instead of hitting), the room left
/// under the limit after it, and the tokens the history grew by per request so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weighed {
    pub freed: u64,
    pub rewritten: u64,
    pub room_after: u64,
    pub growth: u64,
}

/// Whether a prune pays for itself before the next compaction, the rule that it must
/// not rewrite history later requests depend on for more than it saves.
///
/// It costs once: the rewritten tokens miss the cache on the next request, a miss's price
/// less a hit's each. It saves on every request until the history is back at the limit (about
/// `room_after / growth` of them): the freed tokens, which would have been sent as hits. A
/// prune that does not pay leaves the compaction to the summary, whose request hits the cache
/// on everything before its instruction. Without a cache, a prune costs nothing beyond its
/// request and always pays.
pub fn pays(w: Weighed, cache: Cache) -> bool {
    let Cache::HitShare(hit) = cache else {
        return true;
    };
    let hit = if hit.is_finite() {
        hit.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let requests = (w.room_after / w.growth.max(1)).max(1) as f64;
    let saved = w.freed as f64 * hit * requests;
    let lost = w.rewritten as f64 * (1.0 - hit);
    saved >= lost
}
