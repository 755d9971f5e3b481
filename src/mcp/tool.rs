//! An MCP server's tool as one of hx's tools: its call goes to the server through rmcp, and
//! its result comes back as text (the loop bounds it like any tool result).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

use super::Server;
use crate::tools::{Shown, Tool, ToolContext, ToolResult, ToolSpec};

/// One tool of one server, under its request name.
pub struct McpTool {
    pub(super) server: Arc<Server>,
    /// The server's own name for it.
    pub(super) tool: String,
    pub(super) spec: ToolSpec,
}

impl Tool for McpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    fn call<'a>(&'a self, args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(self.run(args))
    }

    /// Its server, and the tool as its request name holds it (what `--json` has always said).
    fn shown(&self) -> Shown {
        let server = &self.server.config.name;
        let tool = super::names::tool_part(server, &self.spec.name).unwrap_or(&self.spec.name);
        Shown::Mcp {
            server: server.clone(),
            tool: tool.to_string(),
        }
    }
}

impl McpTool {
    async fn run(&self, args: Value) -> ToolResult {
        let name = &self.spec.name;
        let Value::Object(arguments) = args else {
            return ToolResult::error(format!("the arguments of {name} must be a JSON object"));
        };
        let peer = match self.server.peer() {
            Ok(p) => p,
            Err(why) => return ToolResult::error(why),
        };
        let mut params = CallToolRequestParams::new(self.tool.clone());
        params.arguments = Some(arguments);
        let limit = self.server.config.tool_timeout;
        match tokio::time::timeout(limit, peer.call_tool(params)).await {
            Err(_) => ToolResult::error(format!(
                "MCP tool {name} timed out after {} s",
                seconds(limit)
            )),
            Ok(Err(rmcp::ServiceError::McpError(e))) => ToolResult::error(format!(
                "MCP tool {name} failed: {}",
                crate::term::collapse_whitespace(&e.message)
            )),
            Ok(Err(e)) => {
                if peer.is_transport_closed() {
                    return ToolResult::error(self.server.stopped());
                }
                ToolResult::error(format!(
                    "MCP tool {name} failed: {}",
                    crate::term::collapse_whitespace(&e.to_string())
                ))
            }
            Ok(Ok(result)) => convert(name, result),
        }
    }
}

/// `2`, `0.5`: a timeout as the user wrote it.
pub fn seconds(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{}", d.as_secs())
    } else {
        format!("{s:.1}")
    }
}

/// A call's result as text: text content joined; images, audio and resources as a one-line
/// placeholder naming type and size (the model cannot use the bytes as text); structured
/// content as JSON when there is nothing else; `isError` as an `Error:` result.
pub fn convert(name: &str, r: CallToolResult) -> ToolResult {
    let mut parts: Vec<String> = r.content.iter().map(part).collect();
    if parts.is_empty() {
        if let Some(v) = &r.structured_content {
            parts.push(v.to_string());
        }
    }
    let text = parts.join("\n");
    if r.is_error == Some(true) {
        if text.trim().is_empty() {
            return ToolResult::error(format!("MCP tool {name} failed without a message"));
        }
        return ToolResult::error(text);
    }
    if text.is_empty() {
        return ToolResult::ok("(no output)");
    }
    ToolResult::ok(text)
}

/// Bytes of base64 data once decoded.
fn decoded_len(b64: &str) -> usize {
    let padding = b64.bytes().rev().take_while(|&b| b == b'=').count();
    (b64.len() / 4 * 3).saturating_sub(padding.min(2))
}

fn part(c: &ContentBlock) -> String {
    match c {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!(
            "[image: {}, {} bytes]",
            super::said(&i.mime_type),
            decoded_len(&i.data)
        ),
        ContentBlock::Audio(a) => format!(
            "[audio: {}, {} bytes]",
            super::said(&a.mime_type),
            decoded_len(&a.data)
        ),
        ContentBlock::Resource(r) => match &r.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => format!(
                "[resource: {}, {}, {} bytes]",
                super::said(uri),
                super::said(mime_type.as_deref().unwrap_or("text")),
                text.len()
            ),
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource: {}, {}, {} bytes]",
                super::said(uri),
                super::said(mime_type.as_deref().unwrap_or("binary")),
                decoded_len(blob)
            ),
            _ => "[resource of a kind hx does not know]".into(),
        },
        ContentBlock::ResourceLink(l) => format!(
            "[resource link: {}, {}{}]",
            super::said(&l.uri),
            super::said(l.mime_type.as_deref().unwrap_or("unknown type")),
            l.size.map(|s| format!(", {s} bytes")).unwrap_or_default()
        ),
        _ => "[content of a kind hx does not know]".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(content: Vec<ContentBlock>, is_error: Option<bool>) -> CallToolResult {
        let mut r = CallToolResult::default();
        r.content = content;
        r.is_error = is_error;
        r
    }

    #[test]
    fn text_is_joined_and_media_become_placeholders() {
        let r = result(
            vec![
                ContentBlock::text("one"),
                ContentBlock::image("aGVsbG8=", "image/png"),
                ContentBlock::text("two"),
            ],
            None,
        );
        assert_eq!(
            convert("t", r),
            ToolResult::ok("one\n[image: image/png, 5 bytes]\ntwo")
        );
    }

    #[test]
    fn is_error_and_empty_results() {
        let r = result(vec![ContentBlock::text("no such file")], Some(true));
        assert_eq!(convert("t", r), ToolResult::error("no such file"));
        let r = result(vec![], Some(true));
        assert_eq!(
            convert("mcp__s__t", r),
            ToolResult::error("MCP tool mcp__s__t failed without a message")
        );
        assert_eq!(
            convert("t", result(vec![], None)),
            ToolResult::ok("(no output)")
        );
        let mut r = result(vec![], None);
        r.structured_content = Some(serde_json::json!({"n": 1}));
        assert_eq!(convert("t", r), ToolResult::ok("{\"n\":1}"));
    }

    #[test]
    fn timeouts_read_as_written() {
        assert_eq!(seconds(std::time::Duration::from_secs(120)), "120");
        assert_eq!(seconds(std::time::Duration::from_millis(500)), "0.5");
    }
}
