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
        for choice in chunk.choices {
            for delta in [choice.delta, choice.message].into_iter().flatten() {
                if let Some(r) = delta.reasoning_content.filter(|r| !r.is_empty()) {
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
        let existing = match (d.index, &id) {
            (Some(i), _) => self.calls.iter().position(|c| c.index == Some(i)),
            // Without an index, a fragment with a new id starts a call; one without continues
            // the last call.
            (None, Some(id)) => self.calls.iter().position(|c| &c.id == id),
            (None, None) => self.calls.len().checked_sub(1),
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
            tool_calls,
            finish_reason: self.finish_reason,
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
