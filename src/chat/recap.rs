//! What a resumed conversation shows of itself: the last exchanges, so the user sees where
//! they were.

use crate::model::Message;
use crate::text::one_line;

/// The user's messages shown, counting back from the last.
const EXCHANGES: usize = 3;
/// Characters of one message shown; a longer one is cut, saying how much is left out.
const MESSAGE_CHARS: usize = 2_000;
/// Characters of a call's arguments on its line.
const CALL_CHARS: usize = 120;

/// The last [`EXCHANGES`] user messages and everything after the first of them: each user
/// message and answer whole (up to [`MESSAGE_CHARS`]), each tool call as one line, results
/// left out; a message sent for `/NAME args` is shown as that (`typed`: each such message's
/// text and what was typed). Empty when there is nothing but the system prompt.
pub fn last_exchanges(messages: &[Message], typed: &[(String, String)]) -> String {
    let users: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User(_)))
        .map(|(i, _)| i)
        .collect();
    let Some(&from) = users.get(users.len().saturating_sub(EXCHANGES)) else {
        return String::new();
    };
    let mut out = String::new();
    if users.len() > EXCHANGES {
        out.push_str(&format!(
            "  ... {} earlier messages of yours (hx sessions show has them all)\n",
            users.len() - EXCHANGES
        ));
    }
    for m in &messages[from..] {
        match m {
            Message::User(text) if text.starts_with(crate::context::summary::HEADER) => {
                out.push_str("  (a summary of the conversation before it was compacted)\n");
            }
            Message::User(text) => {
                let shown = typed
                    .iter()
                    .rev()
                    .find(|(sent, _)| sent == text)
                    .map_or(text.as_str(), |(_, t)| t.as_str());
                out.push_str(&block("you", shown));
            }
            Message::Assistant {
                content,
                tool_calls,
                ..
            } => {
                if !content.trim().is_empty() {
                    out.push_str(&block("hx", content));
                }
                for call in tool_calls {
                    out.push_str(&format!(
                        "  > {} {}\n",
                        call.name,
                        one_line(&call.arguments, CALL_CHARS)
                    ));
                }
            }
            Message::System(_) | Message::Tool { .. } => {}
        }
    }
    out
}

/// `who: text`, its lines indented under the first, cut to [`MESSAGE_CHARS`].
fn block(who: &str, text: &str) -> String {
    let text = text.trim();
    let total = text.chars().count();
    let mut shown: String = text.chars().take(MESSAGE_CHARS).collect();
    if total > MESSAGE_CHARS {
        shown.push_str(&format!(" … ({} more characters)", total - MESSAGE_CHARS));
    }
    let mut out = String::new();
    for (i, line) in shown.lines().enumerate() {
        let head = if i == 0 {
            format!("{who}: ")
        } else {
            "  ".repeat(2)
        };
        out.push_str(&format!("{head}{line}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCall;

    #[test]
    fn the_last_three_exchanges_are_shown_calls_as_one_line_each() {
        let mut messages = vec![Message::System("rules".into())];
        for i in 0..5 {
            messages.push(Message::User(format!("question {i}\nsecond line")));
            messages.push(Message::Assistant {
                content: String::new(),
                reasoning: None,
                tool_calls: vec![ToolCall {
                    id: format!("c{i}"),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                }],
            });
            messages.push(Message::Tool {
                tool_call_id: format!("c{i}"),
                content: "secret output".into(),
            });
            messages.push(Message::Assistant {
                content: format!("answer {i}"),
                reasoning: None,
                tool_calls: Vec::new(),
            });
        }
        let text = last_exchanges(&messages, &[]);
        assert!(
            text.starts_with("  ... 2 earlier messages of yours"),
            "{text}"
        );
        assert!(!text.contains("question 1"), "{text}");
        assert!(
            text.contains("you: question 2\n    second line\n"),
            "{text}"
        );
        assert!(text.contains("hx: answer 4\n"), "{text}");
        assert_eq!(
            text.matches("  > bash {\"command\":\"ls\"}").count(),
            3,
            "{text}"
        );
        assert!(!text.contains("secret output"), "{text}");
        assert_eq!(last_exchanges(&messages[..1], &[]), "");
    }

    #[test]
    fn a_message_sent_for_a_slash_is_shown_as_typed() {
        let body = "<skill name=\"x\">\nSteps.\n</skill>\n\nnow".to_string();
        let messages = vec![Message::User(body.clone()), Message::User("plain".into())];
        let text = last_exchanges(&messages, &[(body, "/x now".into())]);
        assert_eq!(text, "you: /x now\nyou: plain\n");
    }

    #[test]
    fn a_long_message_is_cut_saying_how_much() {
        let messages = vec![Message::User("y".repeat(MESSAGE_CHARS + 10))];
        assert!(last_exchanges(&messages, &[]).contains("(10 more characters)"));
    }
}
