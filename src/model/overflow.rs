//! Telling a request the server refused as too long for the model's context window from any
//! other refusal, so the agent loop can shrink the conversation and try again.
//!
//! Each server says it in its own words, in the body of a 400 (llama.cpp has used 500 too):
//! - DeepSeek, OpenAI and vLLM: `This model's maximum context length is 1048576 tokens.
//!   However, you requested 1100000 tokens (…)`; OpenAI adds `"code":
//!   "context_length_exceeded"`, newer OpenAI models say `Your input exceeds the context window
//!   of this model`.
//! - llama.cpp's server: `the request exceeds the available context size, try increasing it`
//!   (`"type": "exceed_context_size_error"`, with `"n_ctx"`), newer builds `request (4390
//!   tokens) exceeds the available context size (4096 tokens), try increasing it`, and some
//!   `Context size has been exceeded.`
//! - Proxies in front of other APIs (OpenRouter): `prompt is too long`.

use regex::Regex;

/// What the body of a refused request says, when it says the request was too long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow {
    /// The window the server named, when it did.
    pub window: Option<u64>,
}

/// Phrases (lowercase) that mean "longer than the context window" in the servers above.
const PHRASES: [&str; 7] = [
    "context_length_exceeded",
    "maximum context length",
    "exceeds the available context size",
    "exceed_context_size_error",
    "context size has been exceeded",
    "exceeds the context window",
    "prompt is too long",
];

/// Whether an error body says the request was too long, and the window it names.
pub fn detect(body: &str) -> Option<Overflow> {
    let lower = body.to_ascii_lowercase();
    if !PHRASES.iter().any(|p| lower.contains(p)) {
        return None;
    }
    Some(Overflow {
        window: window(&lower),
    })
}

/// The window named in a (lowercased) error body.
fn window(lower: &str) -> Option<u64> {
    const PATTERNS: [&str; 3] = [
        r"maximum context length is (\d[\d,]*)",
        r"available context size \((\d+) tokens\)",
        r#""n_ctx"\s*:\s*(\d+)"#,
    ];
    PATTERNS.iter().find_map(|p| {
        let re = Regex::new(p).ok()?;
        let digits: String = re
            .captures(lower)?
            .get(1)?
            .as_str()
            .chars()
            .filter(char::is_ascii_digit)
            .collect();
        digits.parse().ok().filter(|&n: &u64| n > 0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_server_s_wording_is_an_overflow_and_its_window_is_read() {
        let cases: [(&str, Option<u64>); 7] = [
            (
                r#"{"error":{"message":"This model's maximum context length is 1048576 tokens. However, you requested 1100000 tokens (1100000 in the messages, 0 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":null,"code":"invalid_request_error"}}"#,
                Some(1_048_576),
            ),
            (
                r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 8227 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
                Some(8192),
            ),
            (
                r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}"#,
                None,
            ),
            (
                r#"{"object":"error","message":"This model's maximum context length is 16384 tokens. However, you requested 122946 tokens (112946 in the messages, 10000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#,
                Some(16384),
            ),
            (
                r#"{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"exceed_context_size_error","n_prompt_tokens":14429,"n_ctx":8192}}"#,
                Some(8192),
            ),
            (
                r#"{"error":{"code":400,"message":"request (4390 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error"}}"#,
                Some(4096),
            ),
            (
                r#"{"error":{"code":500,"message":"Context size has been exceeded.","type":"server_error"}}"#,
                None,
            ),
        ];
        for (body, window) in cases {
            assert_eq!(detect(body), Some(Overflow { window }), "{body}");
        }
    }

    #[test]
    fn other_refusals_are_not_overflows() {
        for body in [
            r#"{"error":{"message":"Authentication Fails (no such user)","type":"authentication_error"}}"#,
            r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#,
            "Bad Request",
            r#"{"error":{"message":"max_tokens is too large: 99999999. This model supports at most 8192 completion tokens"}}"#,
        ] {
            assert_eq!(detect(body), None, "{body}");
        }
    }
}
