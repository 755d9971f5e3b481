//! Reading the parts of a recorded request body that tests assert on.
#![allow(dead_code)]

use serde_json::Value;

/// The built-in tools, in the order every request offers them.
pub const BUILT_IN_TOOLS: [&str; 10] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "bash_output",
    "kill_shell",
    "todo_write",
    "task",
    "load_skill",
];

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

/// The content of the tool message answering call `id` in a request body.
pub fn tool_answer<'a>(body: &'a Value, id: &str) -> &'a str {
    messages(body)
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no answer to {id} in {:#}", body["messages"]))
}

/// The request's tool messages (the answers to calls), in order.
pub fn tool_messages(body: &Value) -> Vec<&Value> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect()
}

/// The contents of the request's tool messages, in order.
pub fn tool_results(body: &Value) -> Vec<String> {
    tool_messages(body)
        .iter()
        .map(|m| m["content"].as_str().expect("tool content").to_string())
        .collect()
}

/// How hx's summary instruction begins (`context::summary::PROMPT`).
pub const SUMMARY_PROMPT_START: &str = "Context compaction:";

/// Whether the body is a compaction's summary request: its last message is hx's summary
/// instruction. (It offers the same tools as the turns around it, so the tools cannot tell.)
pub fn is_summary(body: &Value) -> bool {
    body["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| {
            m["role"] == "user"
                && m["content"]
                    .as_str()
                    .is_some_and(|c| c.starts_with(SUMMARY_PROMPT_START))
        })
}
