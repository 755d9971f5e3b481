//! Folds streamed chunks into one assistant turn.
//!
//! Tool calls arrive in fragments: the id and name only in the first one, `index` telling
//! parallel calls apart, arguments split anywhere. Some servers (Ollama) send a whole call in
//! one chunk, some omit `index`; both are handled here so the client loop stays simple.

use serde_json::Value;

use super::types::{AssistantTurn, Chunk, ToolCall, ToolCallDelta};
use super::EventSink;

#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates one streamed response.
#[derive(Debug, Default)]
pub struct Accumulator {
    content: String,
    reasoning: String,
    saw_reasoning: bool,
    /// The server used DeepSeek's `reasoning_content` key (so it expects it back).
    reasoning_field: bool,
    calls: Vec<PartialCall>,
    pub(crate) finish_reason: Option<String>,
    usage: Option<super::Usage>,
}

impl Accumulator {
    pub fn new() -> Self {
        Accumulator::default()
    }

    /// Applies one chunk, reporting visible deltas to the sink.
    pub(crate) fn apply(&mut self, chunk: Chunk, sink: &mut dyn EventSink) {
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.to_usage());
        }
        for choice in chunk.choices.into_iter().flatten() {
            // A whole `message` is a snapshot some servers add to (or send instead of) the
            // deltas; when deltas came it would only repeat them.
            let delta = match (choice.delta, choice.message) {
                (Some(d), _) => Some(d),
                (None, Some(m)) if self.content.is_empty() && self.calls.is_empty() => Some(m),
                (None, _) => None,
            };
            if let Some(delta) = delta {
                if delta.reasoning_content.is_some() {
                    self.reasoning_field = true;
                }
                let reasoning = delta
                    .reasoning_content
                    .filter(|r| !r.is_empty())
                    .or(delta.reasoning.filter(|r| !r.is_empty()));
                if let Some(r) = reasoning {
                    self.saw_reasoning = true;
                    sink.reasoning(&r);
                    self.reasoning.push_str(&r);
                }
                if let Some(c) = delta.content.filter(|c| !c.is_empty()) {
                    sink.text(&c);
                    self.content.push_str(&c);
                }
                for call in delta.tool_calls.into_iter().flatten() {
                    self.apply_call(call, sink);
                }
            }
            if let Some(f) = choice.finish_reason {
                self.finish_reason = Some(f);
            }
        }
    }

    fn apply_call(&mut self, d: ToolCallDelta, sink: &mut dyn EventSink) {
        let id = d.id.filter(|s| !s.is_empty());
        let names_a_tool = d
            .function
            .as_ref()
            .is_some_and(|f| f.name.as_deref().is_some_and(|n| !n.is_empty()));
        let existing = match (d.index, &id) {
            // Same index, other id: a server that numbers every parallel call 0 (Ollama).
            (Some(i), Some(id)) => self
                .calls
                .iter()
                .position(|c| c.index == Some(i) && (c.id.is_empty() || &c.id == id)),
            // The newest call with this index gets the id-less fragments that follow it.
            (Some(i), None) => self.calls.iter().rposition(|c| c.index == Some(i)),
            // Without an index, a fragment with a new id starts a call; one without continues
            // the last call, unless it names a tool while the last call already has a name.
            (None, Some(id)) => self.calls.iter().position(|c| &c.id == id),
            (None, None) => match self.calls.last() {
                Some(last) if names_a_tool && !last.name.is_empty() => None,
                Some(_) => Some(self.calls.len() - 1),
                None => None,
            },
        };
        let pos = match existing {
            Some(p) => p,
            None => {
                self.calls.push(PartialCall {
                    index: d.index,
                    ..PartialCall::default()
                });
                sink.tool_call_started();
                self.calls.len() - 1
            }
        };
        let call = &mut self.calls[pos];
        if let Some(id) = id {
            call.id = id;
        }
        if let Some(f) = d.function {
            if let Some(n) = f.name.filter(|n| !n.is_empty()) {
                call.name = n;
            }
            match f.arguments {
                Some(Value::String(s)) => call.arguments.push_str(&s),
                Some(Value::Null) | None => {}
                // A whole arguments object (Ollama): keep it as the JSON text it stands for.
                Some(v) => call.arguments.push_str(&v.to_string()),
            }
        }
    }

    pub fn finish(self) -> AssistantTurn {
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                // A call without an id cannot be answered by id; give it a stable one.
                id: if c.id.is_empty() {
                    format!("call_{i}")
                } else {
                    c.id
                },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        AssistantTurn {
            content: self.content,
            reasoning: self.saw_reasoning.then_some(self.reasoning),
            reasoning_field: self.reasoning_field,
            tool_calls,
            usage: self.usage,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::NullSink;

    fn apply_all(chunks: &[&str]) -> AssistantTurn {
        let mut acc = Accumulator::new();
        for c in chunks {
            let chunk: Chunk = serde_json::from_str(c).expect("chunk");
            acc.apply(chunk, &mut NullSink);
        }
        acc.finish()
    }

    #[test]
    fn fragments_by_index_and_parallel_calls() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"role":"assistant","content":null,"reasoning_content":""}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"think"}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"glob","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"bash","arguments":"{\"comm"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"and\":\"ls\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"*\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"content":""},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_cache_hit_tokens":8}}"#,
        ]);
        assert_eq!(t.reasoning.as_deref(), Some("think"));
        assert_eq!(t.content, "");
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].id, "a");
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.tool_calls[1].name, "bash");
        assert_eq!(t.tool_calls[1].arguments, r#"{"command":"ls"}"#);
        assert_eq!(t.usage.map(|u| u.prompt_cache_hit_tokens), Some(8));
    }

    #[test]
    fn whole_call_in_one_chunk_with_object_arguments() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"x","function":{"name":"glob","arguments":{"pattern":"*"}}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.reasoning, None);
    }

    #[test]
    fn parallel_calls_that_all_say_index_0_stay_apart() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_a","index":0,"function":{"name":"read_file","arguments":{"path":"a"}}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"call_b","index":0,"function":{"name":"glob","arguments":{"pattern":"*"}}}]}}]}"#,
        ]);
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(t.tool_calls[1].name, "glob");
        assert_eq!(t.tool_calls[1].arguments, r#"{"pattern":"*"}"#);
    }

    #[test]
    fn calls_without_index_or_id_split_on_names() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"glob","arguments":"{\"pattern\""}},{"function":{"arguments":":\"*\"}"}},{"function":{"name":"bash","arguments":"{}"}}]}}]}"#,
        ]);
        assert_eq!(t.tool_calls.len(), 2);
        assert_eq!(t.tool_calls[0].arguments, r#"{"pattern":"*"}"#);
        assert_eq!(t.tool_calls[1].name, "bash");
    }

    #[test]
    fn both_reasoning_keys_null_choices_and_message_snapshots() {
        let t = apply_all(&[
            r#"{"choices":null}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"ab","reasoning":"ab"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"delta":{"content":"lo"},"message":{"content":"Hello"},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(t.reasoning.as_deref(), Some("ab"));
        assert!(t.reasoning_field);
        assert_eq!(t.content, "Hello");
        let whole = apply_all(&[
            r#"{"choices":[{"message":{"content":"Whole","reasoning":null,"reasoning_content":null},"finish_reason":"stop"}]}"#,
        ]);
        assert_eq!(whole.content, "Whole");
    }

    #[test]
    fn openai_usage_chunk_without_choices() {
        let t = apply_all(&[
            r#"{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":3}}}"#,
        ]);
        assert_eq!(t.content, "hi");
        let u = t.usage.expect("usage");
        assert_eq!((u.prompt_tokens, u.prompt_cache_hit_tokens), (7, 3));
    }
}
