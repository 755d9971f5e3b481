//! `session/load`: a recorded session's history told to the client as it would have streamed
//! it: the user's messages, the agent's text and reasoning, each tool call with its result.

use std::collections::HashMap;

use agent_client_protocol::v1::schema::{
    SessionUpdate, ToolCall as AcpCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
};
use serde_json::Value;

use super::view::{chunk, kind, plan, text_content, title, Updates};
use crate::events::Scope;
use crate::model::Message;
use crate::tools::{todo, Shown, ToolSet};

/// Sends the history of `messages` (the system prompt left out) as updates; `tools` says what
/// each called tool is.
pub fn replay(messages: &[Message], tools: &ToolSet, updates: &Updates) {
    let main = Scope::default();
    // Each call's tool and arguments, for its result's update.
    let mut calls: HashMap<&str, (Shown, Option<Value>)> = HashMap::new();
    for m in messages {
        match m {
            Message::System(_) => {}
            Message::User(text) => updates.send(SessionUpdate::UserMessageChunk(chunk(text))),
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                if let Some(r) = reasoning.as_deref().filter(|r| !r.is_empty()) {
                    updates.send(SessionUpdate::AgentThoughtChunk(chunk(r)));
                }
                if !content.is_empty() {
                    updates.send(updates.text(content));
                }
                for call in tool_calls {
                    let about = tools.about(&call.name);
                    let args = serde_json::from_str::<Value>(&call.arguments).ok();
                    let started =
                        AcpCall::new(call.id.clone(), title(&main, call, args.as_ref(), &about))
                            .kind(kind(about.kind))
                            .status(ToolCallStatus::InProgress)
                            .raw_input(args.clone());
                    updates.send(SessionUpdate::ToolCall(started));
                    calls.insert(&call.id, (about.shown, args));
                }
            }
            Message::Tool {
                tool_call_id,
                content,
            } => {
                // Results are recorded as the model read them; an error says so first.
                let failed = content.starts_with("Error");
                let status = match failed {
                    true => ToolCallStatus::Failed,
                    false => ToolCallStatus::Completed,
                };
                let fields = ToolCallUpdateFields::new()
                    .status(status)
                    .content(vec![text_content(content)]);
                updates.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    tool_call_id.clone(),
                    fields,
                )));
                if let Some((Shown::Plan, Some(args))) = calls.get(tool_call_id.as_str()) {
                    if let (false, Ok(items)) = (failed, todo::parse_todos(args)) {
                        updates.send(SessionUpdate::Plan(plan(&items)));
                    }
                }
            }
        }
    }
}
