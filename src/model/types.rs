//! Wire types of the chat-completions API: tolerant on input, exact on output.
//!
//! Output rules that real servers enforce: assistant `content` is always a string (`""` when a
//! turn only calls tools), and DeepSeek wants `reasoning_content` back on every assistant
//! message of a turn that made tool calls (400 otherwise), so it is sent as `""` when empty.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::tools::ToolSpec;

/// One tool call as the model made it. `arguments` is the raw JSON text, kept byte for byte so
/// the request prefix we send back is exactly what the model produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    Assistant {
        content: String,
        reasoning: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl Message {
    /// The message as the API expects it.
    pub fn to_json(&self) -> Value {
        match self {
            Message::System(c) => json!({"role": "system", "content": c}),
            Message::User(c) => json!({"role": "user", "content": c}),
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let mut m = json!({"role": "assistant", "content": content});
                if !tool_calls.is_empty() {
                    m["reasoning_content"] = json!(reasoning.as_deref().unwrap_or(""));
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.arguments},
                            })
                        })
                        .collect();
                }
                m
            }
            Message::Tool {
                tool_call_id,
                content,
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        }
    }
}

/// Everything one model request carries.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
}

impl ChatRequest {
    /// The JSON body, streaming with usage on the final chunk.
    pub fn to_json(&self) -> Value {
        let mut body = json!({
            "model": self.model,
            "messages": self.messages.iter().map(Message::to_json).collect::<Vec<_>>(),
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if !self.tools.is_empty() {
            body["tools"] = self
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.parameters,
                        },
                    })
                })
                .collect();
        }
        body
    }
}

/// Token usage of one model request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub prompt_cache_hit_tokens: u64,
    pub completion_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.prompt_cache_hit_tokens += other.prompt_cache_hit_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// The accumulated result of one model request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub content: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

impl AssistantTurn {
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            reasoning: self.reasoning.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

// ---- streamed chunks (input side: every field optional, unknown fields ignored) ----

#[derive(Debug, Deserialize, Default)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub delta: Option<Delta>,
    /// Some servers (and non-streaming fallbacks) put a whole message here.
    #[serde(default)]
    pub message: Option<Delta>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct Delta {
    #[serde(default)]
    pub content: Option<String>,
    /// DeepSeek's name; some OpenAI-compatible servers (vLLM, OpenRouter) say `reasoning`.
    #[serde(default, alias = "reasoning")]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    /// Usually a string fragment; Ollama-style servers sometimes send a whole JSON object.
    #[serde(default)]
    pub arguments: Option<Value>,
}

#[derive(Debug, Deserialize, Default, Serialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize, Default, Serialize)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

impl WireUsage {
    pub fn to_usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            prompt_cache_hit_tokens: self
                .prompt_cache_hit_tokens
                .or_else(|| self.prompt_tokens_details.as_ref()?.cached_tokens)
                .unwrap_or(0),
            completion_tokens: self.completion_tokens.unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assistant_with_calls_always_carries_content_and_reasoning() {
        let m = Message::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "glob".into(),
                arguments: "{\"pattern\":\"*\"}".into(),
            }],
        };
        assert_eq!(
            m.to_json(),
            json!({"role":"assistant","content":"","reasoning_content":"",
                   "tool_calls":[{"id":"c1","type":"function",
                   "function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]})
        );
    }

    #[test]
    fn plain_assistant_has_no_tool_fields() {
        let m = Message::Assistant {
            content: "hi".into(),
            reasoning: Some("r".into()),
            tool_calls: vec![],
        };
        assert_eq!(m.to_json(), json!({"role":"assistant","content":"hi"}));
    }

    #[test]
    fn chunk_tolerates_unknown_fields_and_nulls() {
        let c: Chunk = serde_json::from_str(
            r#"{"id":"x","choices":[{"index":0,"delta":{"content":null,"weird":1},"logprobs":null,"finish_reason":"insufficient_system_resource"}],"usage":null}"#,
        )
        .expect("parse");
        assert_eq!(
            c.choices[0].finish_reason.as_deref(),
            Some("insufficient_system_resource")
        );
    }
}
