//! A prompt's content blocks as the task hx gives the model: text as it is, a resource link
//! as a reference the model can read, an embedded resource (a file the editor sends with its
//! text, unsaved changes included) inline with where it is from.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

use super::rpc::{error, RpcError, INVALID_PARAMS};

/// The task of a prompt; `Err` (-32602) for content hx does not take (images, audio,
/// binary resources: the capabilities it announced say so) or an empty prompt.
pub fn task_text(blocks: &[ContentBlock]) -> Result<String, RpcError> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("[{}]({})", link.name, shown_uri(&link.uri)))
            }
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    shown_uri(&t.uri),
                    t.text
                )),
                _ => return Err(refused("a binary resource")),
            },
            ContentBlock::Image(_) => return Err(refused("an image")),
            ContentBlock::Audio(_) => return Err(refused("audio")),
            _ => return Err(refused("this kind of content")),
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        return Err(error(INVALID_PARAMS, "Invalid params: the prompt is empty"));
    }
    Ok(text)
}

fn refused(what: &str) -> RpcError {
    error(
        INVALID_PARAMS,
        format!("Invalid params: hx takes text, resource links and text resources, not {what}"),
    )
}

/// A `file://` URI as the path it names (what the model's file tools take); others as they are.
fn shown_uri(uri: &str) -> &str {
    uri.strip_prefix("file://").unwrap_or(uri)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, ResourceLink, TextContent, TextResourceContents,
    };

    #[test]
    fn text_links_and_embedded_files_make_one_task() {
        let blocks = vec![
            ContentBlock::Text(TextContent::new("fix this")),
            ContentBlock::ResourceLink(ResourceLink::new("main.rs", "file:///w/src/main.rs")),
            ContentBlock::Resource(EmbeddedResource::new(
                EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                    "fn main() {}",
                    "file:///w/src/lib.rs",
                )),
            )),
        ];
        assert_eq!(
            task_text(&blocks).expect("task"),
            "fix this\n[main.rs](/w/src/main.rs)\n<context ref=\"/w/src/lib.rs\">\nfn main() {}\n</context>"
        );
        let e = task_text(&[]).expect_err("empty");
        assert_eq!(i32::from(e.code), INVALID_PARAMS);
    }
}
