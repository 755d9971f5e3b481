//! The `write_file` tool (stub; filled in by the tools work).

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{Tool, ToolContext, ToolResult, ToolSpec};

pub struct WriteFile;

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn call<'a>(&'a self, _args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { ToolResult::error("not implemented") })
    }
}
