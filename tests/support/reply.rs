//! Scripted replies of the fake server: builders and the exact SSE event shapes they produce.
//!
//! Shapes follow DeepSeek's streaming chat completions by default, with switches for the Ollama
//! and OpenAI variants and for the malformed streams clients meet in the wild.
#![allow(dead_code)]

use serde_json::Value;
use std::time::Duration;

/// Model name the fake reports in DeepSeek-style chunks.
pub const MODEL: &str = "deepseek-v4-flash";
/// Model name the fake reports in `.ollama()` chunks.
pub const OLLAMA_MODEL: &str = "qwen3:8b";
const DEFAULT_REASONING: &str = "The user wants a direct answer. I will keep it short.";
const TOOL_REASONING: &str = "I should look at the workspace with a tool before answering.";

/// One scripted tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl Call {
    pub fn new(id: &str, name: &str, arguments: &str) -> Self {
        Call {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// One `bash` call per command, with ids `c0`, `c1`, ...
    pub fn bash_each(commands: &[&str]) -> Vec<Call> {
        commands
            .iter()
            .enumerate()
            .map(|(i, c)| {
                Call::new(
                    &format!("c{i}"),
                    "bash",
                    &serde_json::json!({ "command": c }).to_string(),
                )
            })
            .collect()
    }
}

#[derive(Clone, Debug)]
pub(super) enum Kind {
    Stream,
    Status { code: u16, body: String },
    StreamError(Value),
    Raw(Vec<String>),
    Hang,
}

/// One scripted response. Build with the constructors, refine with the chainable methods.
#[derive(Clone, Debug)]
pub struct Reply {
    pub(super) kind: Kind,
    reasoning: Option<String>,
    content: Option<String>,
    calls: Vec<Call>,
    /// (prompt, cache hit, completion) tokens.
    usage: (u64, u64, u64),
    keep_alives: usize,
    finish_reason: Option<String>,
    ollama: bool,
    openai_usage: bool,
    trailing_blank_line: bool,
    done: bool,
    pub(super) cut_after: Option<usize>,
    pub(super) delay: Duration,
    pub(super) event_delay: Duration,
    /// No pause between the two halves of a split event (benchmarks: no added latency).
    pub(super) unpaced: bool,
    pub(super) headers: Vec<(String, String)>,
}

impl Reply {
    fn base(kind: Kind) -> Self {
        Reply {
            kind,
            reasoning: None,
            content: None,
            calls: Vec::new(),
            usage: (1200, 1024, 150),
            keep_alives: 0,
            finish_reason: None,
            ollama: false,
            openai_usage: false,
            trailing_blank_line: true,
            done: true,
            cut_after: None,
            delay: Duration::ZERO,
            event_delay: Duration::ZERO,
            unpaced: false,
            headers: Vec::new(),
        }
    }

    /// Reasoning then `answer`, finish `stop`.
    pub fn text(answer: &str) -> Self {
        let mut r = Self::base(Kind::Stream);
        r.reasoning = Some(DEFAULT_REASONING.into());
        r.content = Some(answer.into());
        r
    }

    /// Reasoning then the calls one after the other, finish `tool_calls`.
    pub fn tool_calls(calls: Vec<Call>) -> Self {
        let mut r = Self::base(Kind::Stream);
        r.reasoning = Some(TOOL_REASONING.into());
        r.calls = calls;
        r
    }

    /// A plain non-stream response (`content-type: application/json`) with this status and body.
    pub fn status(code: u16, body: &str) -> Self {
        Self::base(Kind::Status {
            code,
            body: body.into(),
        })
    }

    /// DeepSeek's answer (400) to a request longer than its window of `window` tokens.
    pub fn deepseek_overflow(window: u64) -> Self {
        let message = format!(
            "This model's maximum context length is {window} tokens. However, you requested {} \
             tokens ({} in the messages, 0 in the completion). Please reduce the length of the \
             messages or completion.",
            window + 3000,
            window + 3000
        );
        Self::status(
            400,
            &serde_json::json!({"error": {"message": message, "type": "invalid_request_error",
                "param": null, "code": "invalid_request_error"}})
            .to_string(),
        )
    }

    /// A 200 stream whose second event is `data: {"error": <error>}`, then the stream ends.
    pub fn stream_error(error: Value) -> Self {
        Self::base(Kind::StreamError(error))
    }

    /// Exactly these bytes, one HTTP chunk per event (never split, no `[DONE]` added).
    pub fn raw_sse(events: Vec<String>) -> Self {
        Self::base(Kind::Raw(events))
    }

    /// Headers of a 200 stream, then silence until the server is dropped.
    pub fn hang() -> Self {
        Self::base(Kind::Hang)
    }

    /// The answer's text (`""` when none).
    pub fn content_text(&self) -> &str {
        self.content.as_deref().unwrap_or("")
    }

    /// The reasoning streamed before it (`""` when none).
    pub fn reasoning_text(&self) -> &str {
        self.reasoning.as_deref().unwrap_or("")
    }

    /// The calls it makes.
    pub fn calls(&self) -> &[Call] {
        &self.calls
    }

    /// Text streamed before the tool calls (or the answer, for `text`).
    pub fn with_content(mut self, text: &str) -> Self {
        self.content = Some(text.into());
        self
    }

    pub fn with_reasoning(mut self, text: &str) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// No reasoning chunks and no `reasoning_content` key anywhere.
    pub fn without_reasoning(mut self) -> Self {
        self.reasoning = None;
        self
    }

    /// Token counts for the final usage object; reasoning tokens are derived from the reasoning text.
    pub fn with_usage(mut self, prompt: u64, cache_hit: u64, completion: u64) -> Self {
        self.usage = (prompt, cache_hit, completion);
        self
    }

    /// `n` extra `: keep-alive` comments before the first data event.
    pub fn keep_alives(mut self, n: usize) -> Self {
        self.keep_alives = n;
        self
    }

    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Ollama's shape: no reasoning, each call whole in one chunk, usage (without cache fields) on
    /// the finish chunk, no `logprobs`/`usage: null` keys.
    pub fn ollama(mut self) -> Self {
        self.ollama = true;
        self
    }

    /// OpenAI's shape: no usage key on choice chunks, then a `"choices":[]` chunk carrying usage.
    pub fn openai_usage(mut self) -> Self {
        self.openai_usage = true;
        self
    }

    /// The last event ends right after its data (no `\n\n`) and the stream closes.
    pub fn no_trailing_blank_line(mut self) -> Self {
        self.trailing_blank_line = false;
        self
    }

    pub fn no_done(mut self) -> Self {
        self.done = false;
        self
    }

    /// Send `n` data events (comments don't count), then drop the connection without the 0-chunk.
    pub fn cut_after_events(mut self, n: usize) -> Self {
        self.cut_after = Some(n);
        self
    }

    /// Wait before sending the response headers.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    /// Keeps splitting events across chunks but without the pause between the halves, so a
    /// benchmark measures hx, not the fake's pacing.
    pub fn unpaced(mut self) -> Self {
        self.unpaced = true;
        self
    }

    /// Wait between events.
    pub fn event_delay(mut self, d: Duration) -> Self {
        self.event_delay = d;
        self
    }

    /// Extra response header (any reply kind), e.g. `Retry-After: 0`.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The SSE events of a stream reply, each as `(bytes, is_data_event)`.
    pub(super) fn events(&self, id: &str, created: u64) -> Vec<(String, bool)> {
        let chunk = |delta: &str, finish: Option<&str>, usage: Option<&str>| {
            let finish = finish.map_or_else(|| "null".to_string(), js);
            let (model, fp, logprobs) = if self.ollama {
                (OLLAMA_MODEL, "fp_ollama", "")
            } else {
                (MODEL, "fp_test", r#","logprobs":null"#)
            };
            let usage = usage
                .map(|u| format!(r#","usage":{u}"#))
                .unwrap_or_default();
            let json = format!(
                r#"{{"id":{},"object":"chat.completion.chunk","created":{created},"model":"{model}","system_fingerprint":"{fp}","choices":[{{"index":0,"delta":{delta}{logprobs},"finish_reason":{finish}}}]{usage}}}"#,
                js(id)
            );
            (format!("data: {json}\n\n"), true)
        };
        // Ollama and OpenAI-style chunks carry no `usage` key until the end; DeepSeek sends null.
        let mid_usage = if self.ollama || self.openai_usage {
            None
        } else {
            Some("null")
        };
        let keep_alive = || (": keep-alive\n\n".to_string(), false);
        let reasoning = self.reasoning.as_deref().filter(|_| !self.ollama);
        let mut ev: Vec<(String, bool)> = (0..self.keep_alives).map(|_| keep_alive()).collect();

        if let Kind::StreamError(err) = &self.kind {
            ev.push(chunk(
                r#"{"role":"assistant","content":null}"#,
                None,
                mid_usage,
            ));
            ev.push((
                format!("data: {}\n\n", serde_json::json!({ "error": err })),
                true,
            ));
            return ev;
        }
        if !self.ollama {
            let role = match reasoning {
                Some(_) => r#"{"role":"assistant","content":null,"reasoning_content":""}"#,
                None => r#"{"role":"assistant","content":null}"#,
            };
            ev.push(chunk(role, None, mid_usage));
        }
        if let Some(text) = reasoning {
            for piece in pieces(text, 2) {
                let delta = format!(r#"{{"content":null,"reasoning_content":{}}}"#, js(&piece));
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        if !self.ollama {
            ev.push(keep_alive());
        }
        if let Some(text) = &self.content {
            for piece in pieces(text, 2) {
                let delta = match (self.ollama, reasoning) {
                    (true, _) => format!(r#"{{"role":"assistant","content":{}}}"#, js(&piece)),
                    (false, Some(_)) => {
                        format!(r#"{{"content":{},"reasoning_content":null}}"#, js(&piece))
                    }
                    (false, None) => format!(r#"{{"content":{}}}"#, js(&piece)),
                };
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        for (i, call) in self.calls.iter().enumerate() {
            let (id, name) = (js(&call.id), js(&call.name));
            if self.ollama {
                let args = js(&call.arguments);
                let delta = format!(
                    r#"{{"role":"assistant","content":"","tool_calls":[{{"id":{id},"index":{i},"type":"function","function":{{"name":{name},"arguments":{args}}}}}]}}"#
                );
                ev.push(chunk(&delta, None, mid_usage));
                continue;
            }
            let first = format!(
                r#"{{"tool_calls":[{{"index":{i},"id":{id},"type":"function","function":{{"name":{name},"arguments":""}}}}]}}"#
            );
            ev.push(chunk(&first, None, mid_usage));
            for piece in pieces(&call.arguments, 3) {
                let delta = format!(
                    r#"{{"tool_calls":[{{"index":{i},"function":{{"arguments":{}}}}}]}}"#,
                    js(&piece)
                );
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        let default_finish = if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        let finish = self.finish_reason.as_deref().unwrap_or(default_finish);
        let final_delta = if self.ollama {
            r#"{"role":"assistant","content":""}"#
        } else {
            r#"{"content":""}"#
        };
        let usage = self.usage_json();
        if self.openai_usage {
            ev.push(chunk(final_delta, Some(finish), None));
            let model = if self.ollama { OLLAMA_MODEL } else { MODEL };
            let json = format!(
                r#"{{"id":{},"object":"chat.completion.chunk","created":{created},"model":"{model}","choices":[],"usage":{usage}}}"#,
                js(id)
            );
            ev.push((format!("data: {json}\n\n"), true));
        } else {
            ev.push(chunk(final_delta, Some(finish), Some(&usage)));
        }
        if self.done {
            ev.push(("data: [DONE]\n\n".into(), true));
        }
        if !self.trailing_blank_line {
            if let Some(last) = ev.last_mut() {
                last.0.truncate(last.0.trim_end_matches('\n').len());
            }
        }
        ev
    }

    fn usage_json(&self) -> String {
        let (p, h, c) = self.usage;
        let reasoning_chars = self
            .reasoning
            .as_deref()
            .filter(|_| !self.ollama)
            .map_or(0, |r| r.chars().count());
        // Roughly four characters per token, never more than the completion itself.
        let r = (reasoning_chars as u64).div_ceil(4).min(c);
        let t = p + c;
        if self.ollama {
            format!(r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t}}}"#)
        } else if self.openai_usage {
            format!(
                r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":{h}}},"completion_tokens_details":{{"reasoning_tokens":{r}}}}}"#
            )
        } else {
            let miss = p.saturating_sub(h);
            format!(
                r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":{h}}},"prompt_cache_hit_tokens":{h},"prompt_cache_miss_tokens":{miss},"completion_tokens_details":{{"reasoning_tokens":{r}}}}}"#
            )
        }
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Splits `s` on char boundaries into at least `min` pieces of about 10 chars. Strings shorter
/// than `min` chars are padded with empty pieces so the piece-count guarantee always holds.
fn pieces(s: &str, min: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = min.max(chars.len().div_ceil(10));
    let size = chars.len().div_ceil(n).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    while out.len() < min {
        out.push(String::new());
    }
    out
}
