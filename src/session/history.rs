//! Which tool calls of a history have no result, and the answers that close them.
//!
//! Servers refuse a request whose history has a call without its result (400), so every
//! place that takes up a history that may have one (a resumed session, a chat turn cancelled
//! during its tools) answers them, and all of them find them here, the same way: a call is
//! answered by a tool message with its id in the run of tool messages right after the
//! assistant turn that made it.

use crate::model::Message;

/// The calls of one assistant turn that have no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenCalls<'a> {
    /// The index of the assistant turn.
    pub turn: usize,
    /// The index right after the run of tool messages that follows the turn: where answers
    /// to its open calls go. The length of the history when the run reaches its end.
    pub at: usize,
    /// The ids of the calls without a result, in the order the turn made them.
    pub ids: Vec<&'a str>,
}

/// The open calls of the assistant turn at `turn`; `None` when that is no assistant turn.
/// `ids` is empty when every call has its result.
fn of_turn(messages: &[Message], turn: usize) -> Option<OpenCalls<'_>> {
    let Some(Message::Assistant { tool_calls, .. }) = messages.get(turn) else {
        return None;
    };
    let start = turn + 1;
    let at = start
        + messages[start..]
            .iter()
            .take_while(|m| matches!(m, Message::Tool { .. }))
            .count();
    let results = &messages[start..at];
    let ids = tool_calls
        .iter()
        .map(|c| c.id.as_str())
        .filter(|id| {
            !results
                .iter()
                .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == id))
        })
        .collect();
    Some(OpenCalls { turn, at, ids })
}

/// Every assistant turn of `messages` that has calls without a result, in order.
pub fn open_calls(messages: &[Message]) -> Vec<OpenCalls<'_>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < messages.len() {
        match of_turn(messages, i) {
            Some(open) => {
                i = open.at;
                if !open.ids.is_empty() {
                    out.push(open);
                }
            }
            None => i += 1,
        }
    }
    out
}

/// The open calls of the last assistant turn when only their results follow it (a turn
/// cancelled during its tools): answers to them go at the end of the history. `None` when
/// there are none, or when the conversation went on after that turn.
pub fn open_calls_at_end(messages: &[Message]) -> Option<OpenCalls<'_>> {
    let last = messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))?;
    of_turn(messages, last).filter(|open| open.at == messages.len() && !open.ids.is_empty())
}

/// The answers that close every open call of `messages`, each `answer`, with the index each
/// has in the history once all are in: inserting them in order, each at its index (see
/// [`insert`]), gives the answered history. A turn's answers go right after its results.
pub fn answers(messages: &[Message], answer: &str) -> Vec<(usize, Message)> {
    let mut out = Vec::new();
    for open in open_calls(messages) {
        for id in open.ids {
            out.push((
                open.at + out.len(),
                Message::Tool {
                    tool_call_id: id.to_string(),
                    content: answer.to_string(),
                },
            ));
        }
    }
    out
}

/// Inserts messages, each at the index it has once all are in (as [`answers`] gives them),
/// in one pass over the history. Indices that are not increasing, or that leave a gap past
/// the end of the history, are an error naming the index: nothing is changed then.
pub fn insert(messages: &mut Vec<Message>, inserted: Vec<(usize, Message)>) -> Result<(), String> {
    let total = messages.len() + inserted.len();
    let mut next = 0;
    for (at, _) in &inserted {
        if *at < next {
            return Err(format!(
                "a message inserted at {at} comes after one inserted at {}",
                next - 1
            ));
        }
        if *at >= total {
            return Err(format!(
                "a message inserted at {at}, past the end of the history ({total} messages with the inserted ones)"
            ));
        }
        next = at + 1;
    }
    if inserted.is_empty() {
        return Ok(());
    }
    let old = std::mem::replace(messages, Vec::with_capacity(total));
    let mut old = old.into_iter();
    for (at, m) in inserted {
        messages.extend(old.by_ref().take(at - messages.len()));
        messages.push(m);
    }
    messages.extend(old);
    Ok(())
}

/// Answers every open call of `messages` with `answer`, each right after its turn's results.
/// A run that crashed or was killed mid-tool leaves such calls. Returns the number of answers
/// added and whether all of them went at the very end (then the caller can record them as
/// messages).
pub fn repair(messages: &mut Vec<Message>, answer: &str) -> (usize, bool) {
    let answers = answers(messages, answer);
    let added = answers.len();
    let at_end = answers.first().is_none_or(|(at, _)| *at == messages.len());
    // The indices come from this very history: they fit it.
    let _ = insert(messages, answers);
    (added, at_end)
}

#[cfg(test)]
mod tests;
