//! The file tools against a tree that changes under them. A command the model runs (sandboxed,
//! but free to write in the workspace) can flip a folder between a real folder and a link to
//! anywhere while the model calls the file tools on paths through it; hx itself is not
//! sandboxed, so a tool that checked the path and then used it by name again could be made to
//! write, edit or read outside the workspace. The tools must never do so, however the race
//! falls.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hx::tools::edit_file::EditFile;
use hx::tools::read_file::ReadFile;
use hx::tools::write_file::WriteFile;
use hx::tools::{Tool, ToolContext, Workspace};
use serde_json::json;

const SECRET: &str = "the outside secret\n";
/// How long the tools are called against the flipping folder. Enough for the old tools (which
/// re-walked the path by name) to be caught many times over; the loop stops early once they are.
const RACE: Duration = Duration::from_secs(1);

/// Flips `ws/d` between a real folder (`ws/real` at first) and a link to `outside` until
/// dropped.
struct Flipper {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<u64>>,
}

impl Flipper {
    fn start(ws: &Path, outside: &Path) -> Flipper {
        let (ws, outside) = (ws.to_path_buf(), outside.to_path_buf());
        let d = ws.join("d");
        std::fs::rename(ws.join("real"), &d).expect("real folder in place");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut flips = 0u64;
            while !flag.load(Ordering::Relaxed) {
                // A fresh name each round: a tool that creates `d` while it is missing must
                // not leave the flipper stuck on a name already taken. Each step may fail
                // while a tool holds something; the next round goes on.
                let aside = ws.join(format!("aside-{flips}"));
                let _ = std::fs::rename(&d, &aside);
                let _ = symlink(&outside, &d);
                std::thread::yield_now();
                // Removes the link (or a file), never a folder.
                let _ = std::fs::remove_file(&d);
                let _ = std::fs::rename(&aside, &d);
                std::thread::yield_now();
                flips += 1;
            }
            flips
        });
        Flipper {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .expect("running")
            .join()
            .expect("flipper")
    }
}

impl Drop for Flipper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The names and contents of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("read outside")
        .map(|e| {
            let e = e.expect("entry");
            let content = std::fs::read_to_string(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), content)
        })
        .collect();
    files.sort();
    files
}

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let base = tempfile::tempdir().expect("tempdir");
    let (ws, outside) = (base.path().join("ws"), base.path().join("outside"));
    std::fs::create_dir_all(ws.join("real")).expect("ws");
    std::fs::create_dir(&outside).expect("outside");
    std::fs::write(outside.join("secret.txt"), SECRET).expect("secret");
    std::fs::write(outside.join("target.txt"), "old\n").expect("target");
    std::fs::write(ws.join("real/secret.txt"), "inside\n").expect("inside");
    std::fs::write(ws.join("real/target.txt"), "old\n").expect("target inside");
    (base, ws, outside)
}

#[tokio::test(flavor = "current_thread")]
async fn a_folder_flipped_to_a_link_never_leads_the_file_tools_outside() {
    let (_base, ws, outside) = setup();
    let before = listing(&outside);
    let cx = ToolContext::new(Workspace::new(&ws).expect("workspace"));
    let flipper = Flipper::start(&ws, &outside);
    let deadline = Instant::now() + RACE;
    let (mut calls, mut secrets_read) = (0u32, 0u32);
    // Stops early once something leaked, so the old code fails fast.
    while Instant::now() < deadline && listing(&outside) == before && secrets_read == 0 {
        let write = json!({"path": "d/.bashrc", "content": "pwned\n"});
        WriteFile.call(write, &cx).await;
        for (old, new) in [("old\n", "new\n"), ("new\n", "old\n")] {
            let edit = json!({"path": "d/target.txt", "old_text": old, "new_text": new});
            EditFile.call(edit, &cx).await;
        }
        let read = ReadFile.call(json!({"path": "d/secret.txt"}), &cx).await;
        secrets_read += u32::from(read.content.contains(SECRET.trim_end()));
        calls += 4;
    }
    let flips = flipper.finish();
    assert_eq!(
        listing(&outside),
        before,
        "written outside the workspace ({calls} calls, {flips} flips)"
    );
    assert_eq!(secrets_read, 0, "read outside the workspace");
    // The tools still work once the tree holds still.
    let write = json!({"path": "d/.bashrc", "content": "fine\n"});
    assert_eq!(
        WriteFile.call(write, &cx).await.content,
        "Wrote 5 bytes to d/.bashrc"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("d/.bashrc")).expect("written"),
        "fine\n"
    );
}
