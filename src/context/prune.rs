//! The first step of compaction, without a model call: the content of older tool results is
//! replaced by one line saying what it was, keeping the newest tool output whole.
//!
//! Old command output and file contents are most of a long run's history and the part the
//! model needs least: it can run the command or read the file again. Results of tools that
//! say they are not output (skill bodies: instructions) are never cleared.

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

/// The results to clear: their index in the history and the line that replaces each.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub cleared: Vec<(usize, String)>,
    /// Estimated tokens the request loses.
    pub freed: u64,
}

/// The tool results of `history` to clear so that only the newest `keep` tokens of tool output
/// stay whole. The result that crosses `keep` and every older one are cleared, unless
/// clearing would not make it shorter or its tool in `tools` says it must stay.
pub fn plan(history: &[Message], keep: u64, tools: &ToolSet) -> Plan {
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in history {
        if let Message::Assistant { tool_calls, .. } = m {
            for c in tool_calls {
                names.insert(&c.id, &c.name);
            }
        }
    }
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
        if kept <= keep {
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
