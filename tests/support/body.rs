//! Reading the parts of a recorded request body that tests assert on.
#![allow(dead_code)]

use serde_json::Value;

/// The request's `messages` array.
pub fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages array")
}

/// The names of the tools the request offers, in order.
pub fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name").to_string())
        .collect()
}

/// The request's system prompt (its first message).
pub fn system_prompt(body: &Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .expect("system prompt")
        .to_string()
}
