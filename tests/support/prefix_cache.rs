//! DeepSeek's context cache as its guide describes it (2026): a request hits only where it
//! fully matches a persisted *prefix unit*, and each request persists two: at the end of its
//! input and at the end of the model's output. A request's hit tokens are the longest unit that
//! is a whole prefix of it; the rest is a miss. (DeepSeek also persists common prefixes it
//! detects and units at fixed intervals of long inputs; this fake does not, so its hit share is
//! a lower bound of the real one.)
//!
//! What the model sees is the tools and settings, then the messages in order, so a prefix is
//! compared as that: the body without `messages`, `stream` and `stream_options` (a changed
//! tool list or model misses whole), then message by message. Messages are compared as
//! parsed JSON (key order aside), the assistant's `reasoning_content` kept only on a turn that
//! called tools (DeepSeek's thinking mode drops it from the context on the others): the
//! server's own rendering of a message is what counts, not hx's bytes. Tokens are bytes / 4 of
//! each part's JSON, deterministic, not a tokenizer.
#![allow(dead_code)]

use super::reply::Reply;
use super::server::Recorded;
use serde_json::{json, Map, Value};
use std::sync::Mutex;

/// One request as the cache priced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priced {
    pub prompt: u64,
    pub hit: u64,
    pub completion: u64,
    /// A compaction's summary request (its last message is hx's summary instruction).
    pub summary: bool,
}

#[derive(Debug, Clone, PartialEq)]
struct Unit {
    header: String,
    messages: Vec<String>,
}

/// The persisted units and every request priced so far.
#[derive(Default)]
pub struct PrefixCache {
    units: Mutex<Vec<Unit>>,
    priced: Mutex<Vec<Priced>>,
}

fn tokens(bytes: usize) -> u64 {
    (bytes as u64).div_ceil(4)
}

/// The settings part of a body: everything but the messages and the streaming switches.
fn header(body: &Value) -> String {
    let mut m: Map<String, Value> = body.as_object().cloned().unwrap_or_default();
    for k in ["messages", "stream", "stream_options"] {
        m.remove(k);
    }
    Value::Object(m).to_string()
}

/// A message as the server renders it: its JSON, the assistant's reasoning only beside calls.
fn message(m: &Value) -> String {
    let mut m = m.clone();
    if let Some(o) = m.as_object_mut() {
        if o.get("role").and_then(Value::as_str) == Some("assistant") {
            if o.get("tool_calls")
                .is_some_and(|c| c.as_array().is_some_and(|a| a.is_empty()))
            {
                o.remove("tool_calls");
            }
            if o.get("tool_calls").is_none() {
                o.remove("reasoning_content");
            }
        }
    }
    m.to_string()
}

impl Unit {
    fn of(body: &Value) -> Unit {
        let messages = body["messages"]
            .as_array()
            .map(|a| a.iter().map(message).collect())
            .unwrap_or_default();
        Unit {
            header: header(body),
            messages,
        }
    }

    fn tokens(&self) -> u64 {
        tokens(self.header.len() + self.messages.iter().map(String::len).sum::<usize>())
    }

    fn is_prefix_of(&self, other: &Unit) -> bool {
        self.header == other.header
            && self.messages.len() <= other.messages.len()
            && self.messages[..] == other.messages[..self.messages.len()]
    }
}

/// The assistant message a reply becomes in the next request, as the server renders it.
fn output(reply: &Reply) -> Value {
    let mut m = json!({"role": "assistant", "content": reply.content_text()});
    if !reply.calls().is_empty() {
        m["reasoning_content"] = reply.reasoning_text().into();
        m["tool_calls"] = reply
            .calls()
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
    }
    m
}

impl PrefixCache {
    /// `reply` to `req` with its usage counted by the cache: prompt and hit tokens as above,
    /// completion tokens as bytes / 4 of the answer, its reasoning and its calls. The units of
    /// the request's input and of this output are persisted for the requests after it.
    pub fn answer(&self, req: &Recorded, reply: Reply) -> Reply {
        let unit = Unit::of(&req.body);
        let prompt = unit.tokens();
        let mut units = self.units.lock().unwrap_or_else(|e| e.into_inner());
        let hit = units
            .iter()
            .filter(|u| u.is_prefix_of(&unit))
            .map(Unit::tokens)
            .max()
            .unwrap_or(0);
        let out = output(&reply);
        let completion = tokens(
            reply.content_text().len()
                + reply.reasoning_text().len()
                + reply
                    .calls()
                    .iter()
                    .map(|c| c.arguments.len() + c.name.len())
                    .sum::<usize>(),
        )
        .max(1);
        let mut after = unit.clone();
        after.messages.push(message(&out));
        for u in [unit, after] {
            if !units.contains(&u) {
                units.push(u);
            }
        }
        drop(units);
        self.priced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Priced {
                prompt,
                hit,
                completion,
                summary: super::body::is_summary(&req.body),
            });
        reply.with_usage(prompt, hit, completion)
    }

    /// Every request priced so far, in order.
    pub fn priced(&self) -> Vec<Priced> {
        self.priced
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
