//! What tools read back from a conversation: each call with its answer, the state a tool
//! keeps about the conversation (the skills loaded, the todo list), which must follow the
//! history when a run continues a recorded session or compaction rebuilds it, and the calls a
//! compaction's summary carries over so that this state survives it.

use crate::model::{Message, ToolCall};

/// Something a tool remembers about the conversation. After the history is replaced (a
/// compaction) or read back (`hx agent -c`), it is told the history and derives its state
/// from it again, so what it says (`load_skill`'s "already loaded") matches what the model can
/// still see.
pub trait Restore: Send + Sync {
    fn restore(&self, history: &[Message]);
}

/// One of a tool's calls that a summary carries over (see [`super::Tool::carry`]): made again
/// in the rebuilt history as a call of that tool with these arguments, answered with `answer`,
/// so the model reads it as it did when it made it, and the next compaction or a resumed run
/// finds it like any other call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carried {
    /// The call's arguments, as the model wrote them.
    pub arguments: String,
    pub answer: String,
    pub what: Carry,
}

/// How a summary weighs a carried call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Carry {
    /// Instructions the model loaded by name (a skill's body): carried, oldest first, while
    /// they fit their budgets, newest kept first; the compaction's line names the ones left out
    /// as left to load again. `at` is where the answer is in the history.
    Loaded { name: String, at: usize },
    /// The state the model keeps up to date (the todo list): carried after the loaded ones,
    /// and left out only when nothing else is left to leave out.
    State,
}

/// One tool call of an assistant message and the tool message answering it.
#[derive(Debug, Clone, Copy)]
pub struct Answered<'a> {
    pub call: &'a ToolCall,
    /// The index of the answering tool message in the history.
    pub at: usize,
    pub content: &'a str,
}

/// Every call of `history` that has an answer, in order. Answers follow their assistant
/// message directly (the API requires it), so only the tool messages right after it count.
pub fn answered_calls(history: &[Message]) -> Vec<Answered<'_>> {
    let mut out = Vec::new();
    for (i, m) in history.iter().enumerate() {
        let Message::Assistant { tool_calls, .. } = m else {
            continue;
        };
        if tool_calls.is_empty() {
            continue;
        }
        let answers = history[i + 1..]
            .iter()
            .enumerate()
            .map_while(|(j, m)| match m {
                Message::Tool {
                    tool_call_id,
                    content,
                } => Some((i + 1 + j, tool_call_id, content)),
                _ => None,
            });
        for (at, id, content) in answers {
            if let Some(call) = tool_calls.iter().find(|c| &c.id == id) {
                out.push(Answered { call, at, content });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        }
    }

    fn tool(id: &str, content: &str) -> Message {
        Message::Tool {
            tool_call_id: id.into(),
            content: content.into(),
        }
    }

    #[test]
    fn pairs_each_call_with_the_answer_that_follows_its_turn() {
        let history = vec![
            Message::System("s".into()),
            Message::User("u".into()),
            Message::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![call("a", "bash"), call("b", "glob")],
            },
            tool("b", "B"),
            tool("a", "A"),
            Message::User("reminder".into()),
            // An answer that does not follow its turn is not this call's.
            tool("zzz", "stray"),
            Message::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![call("c", "load_skill")],
            },
        ];
        let got: Vec<(&str, usize, &str)> = answered_calls(&history)
            .iter()
            .map(|a| (a.call.name.as_str(), a.at, a.content))
            .collect();
        assert_eq!(got, [("glob", 3, "B"), ("bash", 4, "A")]);
    }
}
