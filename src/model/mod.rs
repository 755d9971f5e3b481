//! Talking to the model: wire types, the chat-completions client, SSE parsing, retries.

use futures_util::future::BoxFuture;

mod accumulate;
pub mod client;
pub mod effort;
mod failure;
pub mod overflow;
pub mod price;
pub mod profile;
pub mod retry;
pub mod sse;
pub mod types;
pub mod window;

pub use client::{ClientOptions, OpenAiClient};
pub use effort::{Dialect, Effort, Thinking};
pub use failure::FailureKind;
pub use price::{Cost, Price, Spend};
pub use profile::Profile;
pub use types::{AssistantTurn, ChatRequest, Message, ReasoningEcho, ToolCall, ToolSpec, Usage};

/// Receives a response while it streams in; the agent turns each callback into an event
/// (the `events` module) for the views.
pub trait EventSink: Send {
    fn text(&mut self, _delta: &str) {}
    fn reasoning(&mut self, _delta: &str) {}
    /// A new tool call began in this response (its text so far was interim, not the answer).
    fn tool_call_started(&mut self) {}
    /// The attempt failed and will be retried after `delay`: what it streamed is void.
    fn retrying(&mut self, _attempt: u32, _max: u32, _delay: std::time::Duration, _why: &str) {}
}

/// A sink that shows nothing.
pub struct NullSink;
impl EventSink for NullSink {}

/// Why a model request failed for good (after any retries).
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The server refused the request; retrying would not help.
    #[error("API error {status}: {message}")]
    Api { status: u16, message: String },
    /// The server reported an error inside a 200 stream.
    #[error("API error in stream: {0}")]
    Stream(String),
    /// Connection, timeout or truncated-stream failures that outlasted the retries.
    #[error("{0}")]
    Transport(String),
    /// The server was never reached: its name did not resolve, or nothing answered at its
    /// address. `dns` when the name did not resolve, which a retry seldom changes.
    #[error("{message}")]
    Unreachable { message: String, dns: bool },
    /// The server refused the request as longer than the model's context window (DeepSeek's,
    /// OpenAI's, vLLM's and llama.cpp's ways of saying so; see [`overflow`]). Not retried as
    /// is: the conversation must shrink first, which the agent loop can do. `window` is the
    /// window the server named, when it did.
    #[error("API error {status}: {message}")]
    ContextOverflow {
        status: u16,
        message: String,
        window: Option<u64>,
    },
    /// The conversation cannot be made to fit the context window (the system prompt and the
    /// task alone are too large); the text says what takes the room.
    #[error("{0}")]
    TooLarge(String),
    /// The response broke one of hx's limits on what a server may send (its size, or how long
    /// it may take). Not retried: the retry would send the identical request, and a response
    /// that was too large or too slow once is most likely so again, at the same cost.
    #[error("{0}")]
    Limit(String),
}

/// A chat-completions endpoint. One implementation speaks HTTP; tests may supply others.
pub trait ChatModel: Send + Sync {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        sink: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<AssistantTurn, ModelError>>;
}
