//! Issue 32, item 6: what a checkpoint needs to restore is kept by hx itself and checked,
//! never borrowed from the repository's `.git/objects`, which commands may write, collect or
//! remove. Each test is a reproduction of the issue's, with the real binary and real git.

use std::io::Write;

use crate::checkpoints::git;
use crate::support::calls::call;
use crate::support::{FakeServer, Hx, Reply};
use serde_json::json;

/// A repository whose files are committed, loose, in `.git/objects`.
fn repo(hx: &mut Hx, files: &[(&str, &str)]) {
    for (path, text) in files {
        hx.write_file(path, text);
    }
    let ws = hx.workspace().to_path_buf();
    git(&ws, &["init", "-q", "."]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "init"]);
}

fn one_turn(call: crate::support::Call) -> FakeServer {
    FakeServer::start(vec![Reply::tool_calls(vec![call]), Reply::text("Done.")])
}

/// A real small model ran `rm -rf` over the workspace, `.git/objects` included: the
/// rewind must still bring every file back.
#[test]
fn a_rewind_brings_the_files_back_after_a_command_removed_the_repositorys_objects() {
    let server = one_turn(call(
        "b1",
        "bash",
        json!({"command": "rm -rf src a.txt .git/objects"}),
    ));
    let mut hx = Hx::new(&server);
    repo(
        &mut hx,
        &[("a.txt", "alpha\n"), ("src/lib.rs", "fn main() {}\n")],
    );
    hx.args(["agent", "clean up"]);
    hx.run().assert_code(0);
    assert!(!hx.workspace().join("a.txt").exists(), "the command ran");
    assert!(
        !hx.workspace().join(".git/objects").exists(),
        "the command ran"
    );
    let rewound = hx.run_args(&["rewind", "1", "--yes"]);
    rewound.assert_code(0);
    assert_eq!(hx.read_file("a.txt"), "alpha\n");
    assert_eq!(hx.read_file("src/lib.rs"), "fn main() {}\n");
}

/// An ordinary history rewrite and a collection (`reset --hard`, `reflog expire`, `gc
/// --prune=now`) drops the blobs the checkpoints named: the rewind still has them.
#[test]
fn a_rewind_brings_the_files_back_after_the_repository_collected_them() {
    let server = one_turn(call(
        "e1",
        "edit_file",
        json!({"path": "b.txt", "old_text": "beta", "new_text": "BETA"}),
    ));
    let mut hx = Hx::new(&server);
    repo(&mut hx, &[("a.txt", "alpha\n")]);
    hx.write_file("b.txt", "beta\n");
    let ws = hx.workspace().to_path_buf();
    git(&ws, &["add", "b.txt"]);
    git(&ws, &["commit", "-qm", "b"]);
    hx.args(["agent", "shout"]);
    hx.run().assert_code(0);
    assert_eq!(hx.read_file("b.txt"), "BETA\n");
    git(&ws, &["reset", "-q", "--hard", "HEAD~1"]);
    git(&ws, &["reflog", "expire", "--expire=now", "--all"]);
    git(&ws, &["gc", "-q", "--prune=now"]);
    assert!(!ws.join("b.txt").exists());
    let rewound = hx.run_args(&["rewind", "1", "--yes", "--force"]);
    rewound.assert_code(0);
    assert_eq!(hx.read_file("b.txt"), "beta\n");
}

/// A loose object forged in the repository under the name of the file's original bytes
/// changes neither what `hx diff` shows as the original nor what `hx rewind` writes.
#[test]
fn a_forged_object_in_the_repository_changes_neither_diff_nor_rewind() {
    let server = one_turn(call(
        "e1",
        "edit_file",
        json!({"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}),
    ));
    let mut hx = Hx::new(&server);
    repo(&mut hx, &[("a.txt", "alpha\n")]);
    let ws = hx.workspace().to_path_buf();
    let original = git(&ws, &["rev-parse", "HEAD:a.txt"]).trim().to_string();
    hx.args(["agent", "shout"]);
    hx.run().assert_code(0);
    // The object's file replaced by other bytes under the same name.
    let path = ws
        .join(".git/objects")
        .join(&original[..2])
        .join(&original[2..]);
    assert!(path.is_file(), "the original is loose");
    let mut z = Vec::new();
    {
        use std::io::Read;
        let mut enc = flate2::read::ZlibEncoder::new(
            &b"blob 18\0the model's forgery\n"[..],
            flate2::Compression::default(),
        );
        enc.read_to_end(&mut z).expect("deflate");
    }
    std::fs::remove_file(&path).expect("rm");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&z))
        .expect("forge");
    let diff = hx.run_args(&["diff"]);
    diff.assert_code(0);
    assert!(diff.stdout.contains("-alpha\n+ALPHA\n"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("forgery"), "{}", diff.stdout);
    hx.run_args(&["rewind", "1", "--yes"]).assert_code(0);
    assert_eq!(hx.read_file("a.txt"), "alpha\n");
}
