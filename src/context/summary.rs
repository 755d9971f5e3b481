//! The second step of compaction: the model summarises the conversation, and the history is
//! rebuilt around the summary.
//!
//! The rebuilt history, in order:
//! 1. the same system prompt (byte for byte: the prefix cache keeps hitting on it);
//! 2. the task, verbatim (the first user message);
//! 3. the newest later user messages (follow-up tasks, hook feedback), oldest first;
//! 4. the summary, as a user message;
//! 5. what the tools say must survive (see `tools::Tool::carry`): the skills loaded so far and
//!    the todo list, as the calls that gave them, with their answers.
//!
//! The summary comes after the user messages, not before: the model reads the end of the
//! history as the latest state, and an old "now also do X" read last would look like a new
//! request (Codex orders its compacted history the same way for this reason). Skills and todos
//! go back in as the tool calls the model knows, so it reads them as it did when it made them,
//! and the next compaction (or `hx agent -c`) finds them the way it finds any other load.

use std::sync::Arc;

use super::estimate::{self, BYTES_PER_TOKEN};
use super::Budgets;
use crate::model::{Message, ReasoningEcho, ToolCall};
use crate::tools::output::bound;
use crate::tools::{Carry, Reminder, ToolSet};

/// The last message of the summary request: what to write, in which sections.
pub const PROMPT: &str = "\
Context compaction: the conversation above no longer fits the context window, so it will be \
replaced by your summary. Write that summary now, in plain text, without calling any tool. It \
is all you will know of the work so far, so be specific: paths, names, commands, error \
messages, numbers. Leave out what no longer matters. Use these sections:

1. Goal: what the user wants, in their terms.
2. Constraints and preferences: rules the user or the project set, and how the user wants \
things done.
3. Progress: what is done and what was verified (builds, tests).
4. Decisions: what was decided and why, including approaches tried and rejected.
5. Files: the files read and the files changed, with what changed in each.
6. Open problems: errors, failing tests, questions not yet answered.
7. Next step: exactly what to do next.

The original task, the skills loaded and the todo list are kept as they are: do not repeat \
them.";

/// How the user message holding a summary begins. A message that begins so is hx's own: the
/// next compaction summarises it again instead of carrying it as something the user said.
pub const HEADER: &str = "[hx compacted the conversation to fit the context window. Summary of \
the work so far:]\n\n";

/// The prefix of the ids of the calls that carry skills and todos over a compaction.
pub const CARRIED_ID: &str = "hx_carried_";

/// The note standing for messages left out of an oversized summary request.
fn left_out(n: usize) -> String {
    format!("[hx: {n} earlier messages are left out here: the summary request must fit the context window]")
}

/// Whether `m` holds a summary of an earlier compaction.
pub fn is_summary(m: &Message) -> bool {
    matches!(m, Message::User(t) if t.starts_with(HEADER))
}

/// The messages of the summary request: the history, then [`PROMPT`]. When that is more than
/// `room` tokens, the outputs the model has not seen yet are cut to the room the rest leaves
/// them: they were never sent, so the request still starts with the last one and the prompt
/// cache hits on it. When the rest leaves them hardly any room, tool outputs are cleared
/// instead (oldest first; the unseen ones cut to the room left, and cleared only when there is
/// hardly any), then the oldest messages after the task are left out. `Err` is the size of
/// what cannot be left out (system prompt, task, earlier summaries and the prompt) when even
/// that passes `room`.
pub fn request(history: &[Message], room: u64) -> Result<Vec<Message>, u64> {
    let mut msgs: Vec<Message> = history.to_vec();
    msgs.push(Message::User(PROMPT.to_string()));
    let mut size = estimate::messages(&msgs);
    if size <= room {
        return Ok(msgs);
    }
    if let Some(cut) = newest_cut(&msgs, history.len(), size, room) {
        return Ok(cut);
    }
    // Outputs first: they are most of the bytes, and the calls that made them stay. The
    // newest are the model's to read here: this request is where it sees them.
    let unseen = super::prune::unseen_from(history);
    for m in msgs.iter_mut().take(unseen) {
        if size <= room {
            return Ok(msgs);
        }
        clear(m, &mut size);
    }
    if size > room {
        let newest: Vec<(usize, u64)> = msgs
            .iter()
            .enumerate()
            .take(history.len())
            .skip(unseen)
            .filter(|(_, m)| matches!(m, Message::Tool { .. }))
            .map(|(i, m)| (i, estimate::message(m)))
            .collect();
        let theirs: u64 = newest.iter().map(|(_, s)| s).sum();
        let left = room.saturating_sub(size.saturating_sub(theirs));
        if left >= MIN_CUT {
            let plan = super::prune::cut(&msgs, &newest, left);
            super::prune::apply(&mut msgs, &plan.cleared);
            size = size.saturating_sub(plan.freed);
        }
        for m in msgs.iter_mut().take(history.len()).skip(unseen) {
            if size <= room {
                break;
            }
            clear(m, &mut size);
        }
    }
    if size <= room {
        return Ok(msgs);
    }
    drop_oldest(msgs, room)
}

/// `msgs` (the history, its first `history_len`, then the prompt; `size` tokens) with only
/// the outputs the model has not seen cut, when that brings it within `room`.
fn newest_cut(msgs: &[Message], history_len: usize, size: u64, room: u64) -> Option<Vec<Message>> {
    let unseen = super::prune::unseen_from(&msgs[..history_len]);
    let newest: Vec<(usize, u64)> = msgs
        .iter()
        .enumerate()
        .take(history_len)
        .skip(unseen)
        .filter(|(_, m)| matches!(m, Message::Tool { .. }))
        .map(|(i, m)| (i, estimate::message(m)))
        .collect();
    let theirs: u64 = newest.iter().map(|(_, s)| s).sum();
    let rest = size.saturating_sub(theirs);
    // The cut's share is an estimate of characters: aimed lower, so that it lands within.
    let left = room.checked_sub(rest)?.saturating_sub(CUT_MARGIN);
    if left < MIN_CUT {
        return None;
    }
    let plan = super::prune::cut(msgs, &newest, left);
    let mut out = msgs.to_vec();
    super::prune::apply(&mut out, &plan.cleared);
    (estimate::messages(&out) <= room).then_some(out)
}

/// Tokens a cut result may come out above its share.
const CUT_MARGIN: u64 = 32;

/// Tokens of room under which results are cleared rather than cut: a few lines of head and
/// tail would tell the model less than the line saying they were cleared.
const MIN_CUT: u64 = 200;

/// Clears the output `m` holds, if it is one not cleared yet, taking what that saves from
/// `size`.
fn clear(m: &mut Message, size: &mut u64) {
    let Message::Tool { content, .. } = &*m else {
        return;
    };
    if content.starts_with(super::prune::CLEARED_PREFIX) {
        return;
    }
    let before = estimate::message(m);
    let cleared = super::prune::placeholder(content_len(m), "this tool");
    if let Message::Tool { content, .. } = m {
        *content = cleared;
    }
    *size = size.saturating_sub(before.saturating_sub(estimate::message(m)));
}

/// `msgs` with whole messages after the task left out, oldest first, until they fit `room`.
fn drop_oldest(mut msgs: Vec<Message>, room: u64) -> Result<Vec<Message>, u64> {
    // Whole messages after the task, oldest first; a call's answers go with it.
    let first_user = msgs
        .iter()
        .position(|m| matches!(m, Message::User(_)))
        .unwrap_or(0);
    let mut at = first_user + 1;
    let mut dropped = 0usize;
    let mut note_at: Option<usize> = None;
    while estimate::messages(&msgs) > room && at < msgs.len() - 1 {
        if is_summary(&msgs[at]) || Some(at) == note_at {
            at += 1;
            continue;
        }
        let removed = msgs.remove(at);
        dropped += 1;
        if matches!(removed, Message::Assistant { ref tool_calls, .. } if !tool_calls.is_empty()) {
            while at < msgs.len() - 1 && matches!(msgs[at], Message::Tool { .. }) {
                msgs.remove(at);
                dropped += 1;
            }
        }
        match note_at {
            Some(n) => msgs[n] = Message::User(left_out(dropped)),
            None => {
                msgs.insert(at, Message::User(left_out(dropped)));
                note_at = Some(at);
                at += 1;
            }
        }
    }
    let size = estimate::messages(&msgs);
    if size > room {
        return Err(size);
    }
    Ok(msgs)
}

fn content_len(m: &Message) -> usize {
    match m {
        Message::Tool { content, .. } => content.chars().count(),
        _ => 0,
    }
}

/// What a rebuilt history carries besides the summary.
struct Parts {
    /// Whether the carried calls' message echoes reasoning (`""`).
    reasoning: bool,
    system: Option<Message>,
    task: Message,
    /// Oldest first.
    users: Vec<Message>,
    summary: Message,
    /// (call, answer): the loaded instructions oldest first, then the states (the todo list).
    carried: Vec<(ToolCall, String)>,
    /// The names of the loaded instructions, the first of `carried`.
    loaded: Vec<String>,
}

impl Parts {
    fn history(&self) -> Vec<Message> {
        let mut out = Vec::with_capacity(self.users.len() + self.carried.len() + 5);
        out.extend(self.system.clone());
        out.push(self.task.clone());
        out.extend(self.users.iter().cloned());
        out.push(self.summary.clone());
        if !self.carried.is_empty() {
            out.push(Message::Assistant {
                content: String::new(),
                reasoning: self.reasoning.then(String::new),
                tool_calls: self.carried.iter().map(|(c, _)| c.clone()).collect(),
            });
            out.extend(self.carried.iter().map(|(c, answer)| Message::Tool {
                tool_call_id: c.id.clone(),
                content: answer.clone(),
            }));
        }
        out
    }

    /// Leaves out the least needed part still there: the oldest user message, then the oldest
    /// skill, then the todo list. False when nothing is left to leave out.
    fn shed(&mut self) -> bool {
        if !self.users.is_empty() {
            self.users.remove(0);
        } else if !self.loaded.is_empty() {
            self.carried.remove(0);
            self.loaded.remove(0);
        } else if !self.carried.is_empty() {
            self.carried.clear();
        } else {
            return false;
        }
        true
    }
}

/// A history rebuilt around a summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Rebuilt {
    pub history: Vec<Message>,
    /// The skills whose bodies it still holds.
    pub skills: Vec<String>,
    /// Loaded skills it no longer holds (`load_skill` loads them again).
    pub forgotten: Vec<String>,
}

/// What the run's tools say a summary keeps: the calls each carries over, and which user
/// messages are hx's reminders rather than the user's words.
pub struct Keep<'a> {
    pub tools: &'a ToolSet,
    pub reminders: &'a [Arc<dyn Reminder>],
    /// How the loop's own notes to the model begin (a repeated call, a call written as
    /// text): hx's words too.
    pub notes: &'a [&'a str],
}

/// Instructions a tool loaded by name, which a summary carries while they fit.
struct Loaded {
    tool: String,
    name: String,
    at: usize,
    arguments: String,
    body: String,
}

/// The history that replaces `history`, at most `room` tokens (see the module's doc for what it
/// holds; `keep` says what the tools carry over). `Err` is the size of what cannot be left out
/// (the system prompt, the task and the summary) when that alone passes `room`.
pub fn rebuild(
    history: &[Message],
    summary: &str,
    budgets: &Budgets,
    echo: ReasoningEcho,
    room: u64,
    keep: &Keep<'_>,
) -> Result<Rebuilt, u64> {
    let system = match history.first() {
        Some(m @ Message::System(_)) => Some(m.clone()),
        _ => None,
    };
    let task_at = history.iter().position(|m| matches!(m, Message::User(_)));
    let task = task_at.map_or_else(|| Message::User(String::new()), |i| history[i].clone());
    let after_task = task_at.map_or(history.len(), |i| i + 1);

    // The newest user messages, within their budget; the one that crosses it is cut.
    let mut users = Vec::new();
    let mut left = budgets.user_messages;
    for m in history[after_task..].iter().rev() {
        let Message::User(text) = m else { continue };
        let hx_wrote = keep.reminders.iter().any(|r| r.wrote(text))
            || keep.notes.iter().any(|n| text.starts_with(n));
        if is_summary(m) || hx_wrote {
            continue;
        }
        let size = estimate::message(m);
        if size <= left {
            left -= size;
            users.push(m.clone());
            continue;
        }
        if left >= 100 {
            let chars = usize::try_from(left * BYTES_PER_TOKEN).unwrap_or(usize::MAX);
            users.push(Message::User(bound(text.clone(), chars)));
        }
        break;
    }
    users.reverse();

    let cap = usize::try_from(budgets.summary * BYTES_PER_TOKEN).unwrap_or(usize::MAX);
    let summary = Message::User(format!(
        "{HEADER}{}",
        bound(summary.trim().to_string(), cap)
    ));

    let mut loaded = Vec::new();
    let mut states = Vec::new();
    for (tool, c) in keep.tools.carry(history) {
        match c.what {
            Carry::Loaded { name, at } => loaded.push(Loaded {
                tool,
                name,
                at,
                arguments: c.arguments,
                body: c.answer,
            }),
            Carry::State => states.push((tool, c.arguments, c.answer)),
        }
    }
    loaded.sort_by_key(|l| l.at);
    let loaded_names: Vec<String> = loaded.iter().map(|l| l.name.clone()).collect();

    // Skills, most recently loaded first, each and all within their budgets.
    let mut kept = Vec::new();
    let mut forgotten = Vec::new();
    let mut total = 0u64;
    let mut newest_first = loaded;
    newest_first.sort_by_key(|l| std::cmp::Reverse(l.at));
    for l in newest_first {
        let size = estimate::tokens(l.body.len());
        if size <= budgets.skill_each && total + size <= budgets.skills_total {
            total += size;
            kept.push(l);
        } else {
            forgotten.push(l.name);
        }
    }
    kept.sort_by_key(|l| l.at);
    let kept_names: Vec<String> = kept.iter().map(|l| l.name.clone()).collect();
    let mut carried: Vec<(ToolCall, String)> = kept
        .into_iter()
        .map(|l| (call(l.tool, l.arguments), l.body))
        .chain(
            states
                .into_iter()
                .map(|(tool, arguments, answer)| (call(tool, arguments), answer)),
        )
        .collect();
    for (i, (call, _)) in carried.iter_mut().enumerate() {
        call.id = format!("{CARRIED_ID}{i}");
    }

    // The carried calls are an assistant message like the model's own: with `reasoning_content`
    // where the provider wants it (DeepSeek answers 400 without it), and under `auto` as the
    // server's own messages in this history have it.
    let reasoning = match echo {
        ReasoningEcho::Always => true,
        ReasoningEcho::Never => false,
        ReasoningEcho::Auto => {
            history.iter().rev().find_map(|m| match m {
                Message::Assistant { reasoning, .. } => Some(reasoning.is_some()),
                _ => None,
            }) == Some(true)
        }
    };
    let mut parts = Parts {
        reasoning,
        system,
        task,
        users,
        summary,
        carried,
        loaded: kept_names,
    };
    loop {
        let history = parts.history();
        if estimate::messages(&history) <= room {
            let names = parts.loaded;
            forgotten.extend(
                loaded_names
                    .into_iter()
                    .filter(|n| !names.contains(n) && !forgotten.contains(n))
                    .collect::<Vec<_>>(),
            );
            return Ok(Rebuilt {
                history,
                skills: names,
                forgotten,
            });
        }
        if !parts.shed() {
            return Err(estimate::messages(&history));
        }
    }
}

/// A carried call of `tool`; its id is given once all are known.
fn call(tool: String, arguments: String) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: tool,
        arguments,
    }
}
