//! Files as an editor holds them: its unsaved buffers, its own undo. Where an editor offers
//! them (`hx acp`'s client, with `fs.readTextFile` / `fs.writeTextFile`), `read_file`,
//! `write_file` and `edit_file` read and write through it, after the workspace's checks on
//! the path; without one, they use the disk as always. The editor writes by name, following
//! links, outside any sandbox: while it does, the run's commands are stopped ([`hold_still`]),
//! so none swaps a folder of the checked path for a link between hx's check and its write.

use std::path::Path;
use std::sync::Arc;

use futures_util::future::BoxFuture;

/// An editor's files. Errors are one line for the model.
pub trait EditorFiles: Send + Sync {
    /// Whether the editor reads files for hx (else the disk is read).
    fn reads(&self) -> bool;
    /// Whether the editor writes files for hx (else the disk is written).
    fn writes(&self) -> bool;
    /// The text of the file at `path` (absolute), as the editor has it.
    fn read<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<String, String>>;
    /// Makes `content` the text of the file at `path` (absolute).
    fn write<'a>(&'a self, path: &'a Path, content: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// The editor of a run's file tools, if it has one.
#[derive(Clone, Default)]
pub struct Editor(pub Option<Arc<dyn EditorFiles>>);

impl std::fmt::Debug for Editor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Editor(..)"
        } else {
            "Editor(none)"
        })
    }
}

impl Editor {
    /// The editor, when it reads files.
    pub fn reader(&self) -> Option<&dyn EditorFiles> {
        self.0.as_deref().filter(|e| e.reads())
    }

    /// The editor, when it writes files.
    pub fn writer(&self) -> Option<&dyn EditorFiles> {
        self.0.as_deref().filter(|e| e.writes())
    }
}

/// Stops the processes of the run's pods (every pod of this process: another session's
/// commands could swap a folder too) until the guard is dropped. Around an editor's write:
/// check the path after this, then write, then drop. Without a pod there is nothing to stop
/// (commands then run beside hx, under Landlock alone: the README says what is left).
pub async fn hold_still() -> Result<crate::sandbox::pod::StoppedAll, String> {
    tokio::task::spawn_blocking(crate::sandbox::pod::stop_all)
        .await
        .map_err(|e| format!("cannot stop the run's processes: {e}"))?
}
