//! Wire types of the chat-completions API: tolerant on input, exact on output.
//!
//! Output rules that real servers enforce: assistant `content` is always a string (`""` when a
//! turn only calls tools); DeepSeek wants `reasoning_content` back on every assistant message
//! of a turn that made tool calls (400 otherwise) while strict servers (Groq, Cerebras) reject
//! the key, so whether it is sent is a per-provider [`ReasoningEcho`]; and local servers
//! (Ollama, vLLM) parse the arguments of every call in the history, so arguments that are not
//! a JSON object are sent back as `{}` (the tool result already told the model they were bad).

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{json, Value};

use super::effort::Thinking;

/// The JSON-schema description of a tool, as sent in the request's `tools` array.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON schema object (`{"type":"object","properties":{...},"required":[...]}`).
    pub parameters: Value,
}

/// One tool call as the model made it. `arguments` is the raw JSON text, kept byte for byte so
/// the request prefix we send back is exactly what the model produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Whether assistant messages carry `reasoning_content` back to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEcho {
    /// On every assistant message (`""` when there was none): DeepSeek.
    Always,
    /// When the server itself streamed the `reasoning_content` key.
    #[default]
    Auto,
    /// Never: servers that reject unknown message fields.
    Never,
}

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    Assistant {
        content: String,
        /// Sent as `reasoning_content` when `Some` (possibly `""`).
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
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// Written straight to the request body (no intermediate JSON tree: a long history would be
/// held twice). Key order is fixed, so the same history always gives the same bytes.
impl Serialize for Message {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::System(c) | Message::User(c) => {
                let mut m = ser.serialize_map(Some(2))?;
                let role = if matches!(self, Message::System(_)) {
                    "system"
                } else {
                    "user"
                };
                m.serialize_entry("role", role)?;
                m.serialize_entry("content", c)?;
                m.end()
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let mut m = ser.serialize_map(None)?;
                m.serialize_entry("role", "assistant")?;
                m.serialize_entry("content", content)?;
                if let Some(r) = reasoning {
                    m.serialize_entry("reasoning_content", r)?;
                }
                if !tool_calls.is_empty() {
                    m.serialize_entry("tool_calls", &WireCalls(tool_calls))?;
                }
                m.end()
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                let mut m = ser.serialize_map(Some(3))?;
                m.serialize_entry("role", "tool")?;
                m.serialize_entry("tool_call_id", tool_call_id)?;
                m.serialize_entry("content", content)?;
                m.end()
            }
        }
    }
}

struct WireCalls<'a>(&'a [ToolCall]);

impl Serialize for WireCalls<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.collect_seq(self.0.iter().map(|c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            })
        }))
    }
}

/// A call's arguments as sent back: the model's text when it is a JSON object (kept byte for
/// byte), else `{}`.
fn wire_arguments(raw: &str) -> &str {
    match serde_json::from_str::<Value>(raw) {
        Ok(Value::Object(_)) => raw,
        _ => "{}",
    }
}

/// Everything one model request carries. It borrows the conversation: the history can be
/// long, and a request is built for every turn.
#[derive(Debug, Clone, Copy)]
pub struct ChatRequest<'a> {
    pub model: &'a str,
    pub messages: &'a [Message],
    pub tools: &'a [ToolSpec],
    /// How hard the model thinks; `None` sends no key for it (the model's default).
    pub thinking: Option<Thinking>,
}

impl ChatRequest<'_> {
    /// The JSON body, streaming with usage on the final chunk.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for ChatRequest<'_> {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        let mut m = ser.serialize_map(None)?;
        m.serialize_entry("model", self.model)?;
        m.serialize_entry("messages", self.messages)?;
        m.serialize_entry("stream", &true)?;
        m.serialize_entry("stream_options", &json!({"include_usage": true}))?;
        if !self.tools.is_empty() {
            let tools: Vec<Value> = self
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
            m.serialize_entry("tools", &tools)?;
        }
        // Last: the bytes before it are those of a request without a setting.
        if let Some(t) = &self.thinking {
            t.serialize_into(&mut m)?;
        }
        m.end()
    }
}

/// Token usage of one model request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub prompt_cache_hit_tokens: u64,
    pub completion_tokens: u64,
    /// Of the completion tokens, those the model spent thinking (`completion_tokens_details
    /// .reasoning_tokens`; 0 when the server does not say).
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Adds another request's counts. They come from the server, which may send anything a
    /// `u64` holds: a sum that would overflow stays at `u64::MAX` instead of panicking (debug)
    /// or wrapping to a small number (release).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.prompt_cache_hit_tokens = self
            .prompt_cache_hit_tokens
            .saturating_add(other.prompt_cache_hit_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// The accumulated result of one model request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AssistantTurn {
    pub content: String,
    pub reasoning: Option<String>,
    /// The server streamed DeepSeek's `reasoning_content` key, so it understands it on input.
    pub reasoning_field: bool,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
    /// What the request cost, by its usage and the model's price (set by the agent; `None`:
    /// no usage, or no price).
    pub cost: Option<super::Cost>,
}

impl AssistantTurn {
    /// The turn as it goes into the history, its reasoning echoed as `echo` says.
    pub fn to_message(&self, echo: ReasoningEcho) -> Message {
        let reasoning = match echo {
            ReasoningEcho::Always => Some(self.reasoning.clone().unwrap_or_default()),
            ReasoningEcho::Auto if self.reasoning_field => {
                Some(self.reasoning.clone().unwrap_or_default())
            }
            _ => None,
        };
        // Normalised once here, not on every request that resends the history.
        let tool_calls = self
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                arguments: wire_arguments(&c.arguments).to_string(),
                ..c.clone()
            })
            .collect();
        Message::Assistant {
            content: self.content.clone(),
            reasoning,
            tool_calls,
        }
    }
}

// ---- streamed chunks (input side: every field optional, unknown fields ignored) ----

#[derive(Debug, Deserialize, Default)]
pub(crate) struct Chunk {
    /// `null` occurs in the wild as well as a missing key.
    #[serde(default)]
    pub choices: Option<Vec<ChunkChoice>>,
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
    /// DeepSeek's name for the reasoning text.
    #[serde(default)]
    pub reasoning_content: Option<String>,
    /// The name some OpenAI-compatible servers use (vLLM, OpenRouter, Groq); vLLM sends both.
    #[serde(default)]
    pub reasoning: Option<String>,
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

#[derive(Debug, Deserialize, Default)]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct PromptDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct CompletionDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
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
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(reasoning: Option<&str>, field: bool, args: &str) -> AssistantTurn {
        AssistantTurn {
            reasoning: reasoning.map(str::to_string),
            reasoning_field: field,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "glob".into(),
                arguments: args.into(),
            }],
            ..AssistantTurn::default()
        }
    }

    #[test]
    fn deepseek_gets_reasoning_content_even_when_empty() {
        let m = turn(None, false, "{\"pattern\":\"*\"}").to_message(ReasoningEcho::Always);
        assert_eq!(
            m.to_json(),
            json!({"role":"assistant","content":"","reasoning_content":"",
                   "tool_calls":[{"id":"c1","type":"function",
                   "function":{"name":"glob","arguments":"{\"pattern\":\"*\"}"}}]})
        );
    }

    #[test]
    fn reasoning_echo_policies() {
        let t = turn(Some("r"), true, "{}");
        assert_eq!(
            t.to_message(ReasoningEcho::Auto).to_json()["reasoning_content"],
            "r"
        );
        assert_eq!(
            t.to_message(ReasoningEcho::Never)
                .to_json()
                .get("reasoning_content"),
            None
        );
        let groq = turn(Some("r"), false, "{}");
        assert_eq!(
            groq.to_message(ReasoningEcho::Auto)
                .to_json()
                .get("reasoning_content"),
            None
        );
    }

    #[test]
    fn arguments_that_are_not_an_object_go_back_as_empty_object() {
        for bad in ["", "{\"path\": ", "[1]", "null"] {
            let j = turn(None, false, bad)
                .to_message(ReasoningEcho::Never)
                .to_json();
            assert_eq!(j["tool_calls"][0]["function"]["arguments"], "{}", "{bad:?}");
        }
        let keep = "{ \"path\" : \"a\" }";
        let j = turn(None, false, keep)
            .to_message(ReasoningEcho::Never)
            .to_json();
        assert_eq!(j["tool_calls"][0]["function"]["arguments"], keep);
    }

    #[test]
    fn plain_assistant_has_no_tool_fields() {
        let m = Message::Assistant {
            content: "hi".into(),
            reasoning: None,
            tool_calls: vec![],
        };
        assert_eq!(m.to_json(), json!({"role":"assistant","content":"hi"}));
    }

    #[test]
    fn usage_from_the_server_saturates_instead_of_overflowing() {
        let mut total = Usage {
            prompt_tokens: u64::MAX - 1,
            prompt_cache_hit_tokens: 5,
            completion_tokens: u64::MAX,
            ..Usage::default()
        };
        total.add(&Usage {
            prompt_tokens: 10,
            prompt_cache_hit_tokens: 7,
            completion_tokens: u64::MAX,
            ..Usage::default()
        });
        assert_eq!(
            total,
            Usage {
                prompt_tokens: u64::MAX,
                prompt_cache_hit_tokens: 12,
                completion_tokens: u64::MAX,
                ..Usage::default()
            }
        );
    }

    /// The keys each effort adds to a request, in each provider's words, after everything a
    /// request without a setting has.
    #[test]
    fn each_effort_is_sent_in_the_providers_words_after_the_rest() {
        use super::super::effort::{Dialect, Effort};
        let messages = [Message::User("hi".into())];
        let tools = [ToolSpec {
            name: "glob".into(),
            description: "d".into(),
            parameters: json!({"type": "object"}),
        }];
        let req = |thinking| ChatRequest {
            model: "m",
            messages: &messages,
            tools: &tools,
            thinking,
        };
        let plain = serde_json::to_string(&req(None)).expect("json");
        assert!(
            !plain.contains("thinking") && !plain.contains("reasoning"),
            "{plain}"
        );
        let cases = [
            (
                Dialect::DeepSeek,
                Effort::Off,
                r#","thinking":{"type":"disabled"}}"#,
            ),
            (
                Dialect::DeepSeek,
                Effort::Low,
                r#","thinking":{"type":"enabled"},"reasoning_effort":"low"}"#,
            ),
            (
                Dialect::DeepSeek,
                Effort::High,
                r#","thinking":{"type":"enabled"},"reasoning_effort":"high"}"#,
            ),
            (
                Dialect::DeepSeek,
                Effort::Max,
                r#","thinking":{"type":"enabled"},"reasoning_effort":"max"}"#,
            ),
            (
                Dialect::OpenAi,
                Effort::Off,
                r#","reasoning_effort":"none"}"#,
            ),
            (
                Dialect::OpenAi,
                Effort::Low,
                r#","reasoning_effort":"low"}"#,
            ),
            (
                Dialect::OpenAi,
                Effort::High,
                r#","reasoning_effort":"high"}"#,
            ),
            (
                Dialect::OpenAi,
                Effort::Max,
                r#","reasoning_effort":"xhigh"}"#,
            ),
            (
                Dialect::OpenRouter,
                Effort::Off,
                r#","reasoning":{"effort":"none"}}"#,
            ),
            (
                Dialect::OpenRouter,
                Effort::Low,
                r#","reasoning":{"effort":"low"}}"#,
            ),
            (
                Dialect::OpenRouter,
                Effort::High,
                r#","reasoning":{"effort":"high"}}"#,
            ),
            (
                Dialect::OpenRouter,
                Effort::Max,
                r#","reasoning":{"effort":"xhigh"}}"#,
            ),
        ];
        let prefix = plain.strip_suffix('}').expect("an object");
        for (dialect, effort, tail) in cases {
            let body =
                serde_json::to_string(&req(Some(Thinking { effort, dialect }))).expect("json");
            assert_eq!(body, format!("{prefix}{tail}"), "{dialect:?} {effort:?}");
        }
    }

    #[test]
    fn chunk_tolerates_unknown_fields_and_nulls() {
        let c: Chunk = serde_json::from_str(
            r#"{"id":"x","choices":[{"index":0,"delta":{"content":null,"weird":1},"logprobs":null,"finish_reason":"insufficient_system_resource"}],"usage":null}"#,
        )
        .expect("parse");
        assert_eq!(
            c.choices.expect("choices")[0].finish_reason.as_deref(),
            Some("insufficient_system_resource")
        );
    }
}
