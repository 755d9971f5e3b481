//! The client's file system (`fs/read_text_file`, `fs/write_text_file`), where it offers it:
//! the file tools then see the editor's unsaved buffers, and their writes land in its undo
//! (see `crate::tools::editor`). The paths are those the workspace's checks gave.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    FileSystemCapabilities, ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
    CLIENT_METHOD_NAMES,
};
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::rpc::{Output, Pending};
use crate::tools::EditorFiles;

pub struct ClientFiles {
    pub session_id: String,
    pub out: Output,
    pub pending: Pending,
    pub caps: FileSystemCapabilities,
}

/// The client's error as one line: its message, else the whole error.
fn said(e: Value) -> String {
    match e.get("message").and_then(Value::as_str) {
        Some(m) => format!("the editor answered: {m}"),
        None => format!("the editor answered: {e}"),
    }
}

impl EditorFiles for ClientFiles {
    fn reads(&self) -> bool {
        self.caps.read_text_file
    }

    fn writes(&self) -> bool {
        self.caps.write_text_file
    }

    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let request = ReadTextFileRequest::new(self.session_id.clone(), path);
            let answer = self
                .pending
                .request(&self.out, CLIENT_METHOD_NAMES.fs_read_text_file, request)
                .await
                .map_err(said)?;
            serde_json::from_value::<ReadTextFileResponse>(answer)
                .map(|r| r.content)
                .map_err(|e| format!("the editor's answer is not a file's text: {e}"))
        })
    }

    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let request = WriteTextFileRequest::new(self.session_id.clone(), path, content);
            self.pending
                .request(&self.out, CLIENT_METHOD_NAMES.fs_write_text_file, request)
                .await
                .map(|_| ())
                .map_err(said)
        })
    }
}
