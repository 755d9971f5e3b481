//! End-to-end tests of checkpoints with the real binary and real git: a session whose scripted
//! model changes files every way it can (its tools, commands, a subagent), then `hx rewind`,
//! `hx diff`, the conflicts they refuse, `--undo`, and the user's `.git` left as it was.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::support::calls::call;
use crate::support::pty::run_on_terminal;
use crate::support::{messages, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};
use sha2::Digest;

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every file below `dir` (links as their target), its bytes' hash and its mode.
fn tree_state(dir: &Path, skip_git: bool) -> BTreeMap<String, (String, u32)> {
    let mut out = BTreeMap::new();
    walk(dir, dir, skip_git, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, skip_git: bool, out: &mut BTreeMap<String, (String, u32)>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = e.path();
        let rel = path
            .strip_prefix(root)
            .expect("below")
            .to_string_lossy()
            .into_owned();
        if skip_git && rel == ".git" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).expect("readlink");
            out.insert(rel, (format!("-> {}", target.display()), 0o120000));
        } else if meta.is_dir() {
            out.insert(
                format!("{rel}/"),
                (String::new(), meta.permissions().mode() & 0o777),
            );
            walk(root, &path, skip_git, out);
        } else {
            let bytes = std::fs::read(&path).expect("read");
            let hash = sha2::Sha256::digest(&bytes);
            let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
            out.insert(rel, (hex, meta.permissions().mode() & 0o777));
        }
    }
}

/// `git apply -R --check` of `patch` in the workspace: whether undoing it applies cleanly.
fn reverse_check(hx: &Hx, patch: &str) -> std::process::Output {
    let file = hx.workspace().join("../patch.diff");
    std::fs::write(&file, patch).expect("write patch");
    Command::new("git")
        .args(["apply", "-R", "--check"])
        .arg(&file)
        .current_dir(hx.workspace())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git apply")
}

/// A workspace that is a git repository with one commit.
fn repo(hx: &mut Hx) {
    hx.write_file("a.txt", "alpha\nline two\n")
        .write_file("b.txt", "beta\n")
        .write_file("gone.txt", "will move\n")
        .write_file("c.txt", "will be removed\n")
        .write_file("script.sh", "#!/bin/sh\necho hi\n")
        .write_file("src/lib.rs", "fn main() {}\n")
        .write_file(".gitignore", "*.log\n");
    let ws = hx.workspace().to_path_buf();
    git(&ws, &["init", "-q", "."]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "init"]);
}

/// The main agent's session file (not a subagent's).
fn main_session(hx: &Hx) -> std::path::PathBuf {
    hx.session_files()
        .into_iter()
        .find(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            let head: Value =
                serde_json::from_str(text.lines().next().unwrap_or("{}")).unwrap_or(Value::Null);
            head["parent_id"].is_null()
        })
        .expect("a main session")
}

fn session_lines(hx: &Hx) -> Vec<Value> {
    let text = std::fs::read_to_string(main_session(hx)).expect("read");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("json line"))
        .collect()
}

fn checkpoint_lines(hx: &Hx) -> Vec<Value> {
    session_lines(hx)
        .into_iter()
        .filter(|v| v["type"] == "checkpoint")
        .collect()
}

/// The model of the main test: a write, an edit, a command that runs `sed -i`, `mv`, `rm`
/// and `chmod +x`, a link, and a subagent's write, then an answer.
fn changing_replies() -> Vec<Reply> {
    vec![
        Reply::tool_calls(vec![
            call(
                "w1",
                "write_file",
                json!({"path": "new.txt", "content": "brand new\n"}),
            ),
            call(
                "e1",
                "edit_file",
                json!({"path": "a.txt", "old_text": "alpha", "new_text": "ALPHA"}),
            ),
        ]),
        Reply::tool_calls(vec![call(
            "b1",
            "bash",
            json!({"command": "sed -i 's/beta/BETA/' b.txt && mv gone.txt moved.txt && rm c.txt && chmod +x script.sh && mkdir -p gen/deep && echo made > gen/deep/out.txt && ln -s a.txt link.txt && echo noise > build.log"}),
        )]),
        Reply::tool_calls(vec![call(
            "t1",
            "task",
            json!({"description": "write", "prompt": "write sub.txt"}),
        )]),
        // The subagent's turns.
        Reply::tool_calls(vec![call(
            "s1",
            "write_file",
            json!({"path": "src/sub.txt", "content": "from the subagent\n"}),
        )]),
        Reply::text("Wrote it."),
        Reply::text("All done."),
    ]
}

#[test]
fn rewind_one_restores_exact_bytes_and_modes_after_edits_commands_and_a_subagent() {
    let server = FakeServer::start(changing_replies());
    let mut hx = Hx::new(&server);
    repo(&mut hx);
    let ws = hx.workspace().to_path_buf();
    let before = tree_state(&ws, true);
    let dot_git = tree_state(&ws.join(".git"), false);
    hx.args(["agent", "change things"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "All done.\n");
    // One line per turn that changed files.
    assert!(
        run.stderr.contains("2 files changed, +2 -1"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("files changed"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("b"),
        "BETA\n"
    );
    assert!(ws.join("src/sub.txt").exists());

    let cps = checkpoint_lines(&hx);
    let numbered: Vec<u64> = cps.iter().filter_map(|c| c["n"].as_u64()).collect();
    assert_eq!(numbered, [1, 2, 3, 4], "{cps:#?}");
    assert_eq!(cps[0]["what"], "message");
    assert_eq!(cps[0]["label"], "change things");

    // The list, then the rewind.
    let list = hx.run_args(&["rewind"]);
    list.assert_code(0);
    assert!(
        list.stdout
            .lines()
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with("1  "),
        "{}",
        list.stdout
    );
    assert!(list.stdout.contains("change things"), "{}", list.stdout);

    let shown = hx.run_args(&["sessions", "show", &session_id(&hx)]);
    assert!(
        shown.stdout.contains("── checkpoint 1 "),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains("── checkpoint 4 "),
        "{}",
        shown.stdout
    );

    let rewound = hx.run_args(&["rewind", "1", "--yes"]);
    rewound.assert_code(0);
    let mut after = tree_state(&ws, true);
    // The ignored file is no turn's to undo: the rewind leaves it, as git would.
    assert!(after.remove("build.log").is_some());
    assert_eq!(after, before, "{}", rewound.dump());
    assert_eq!(
        tree_state(&ws.join(".git"), false),
        dot_git,
        "the user's .git"
    );

    // What it replaced comes back with --undo.
    let undone = hx.run_args(&["rewind", "--undo", "--yes"]);
    undone.assert_code(0);
    assert_eq!(
        std::fs::read_to_string(ws.join("b.txt")).expect("b"),
        "BETA\n"
    );
    assert!(ws.join("gen/deep/out.txt").exists());
    assert_eq!(
        std::fs::read_link(ws.join("link.txt")).expect("link"),
        Path::new("a.txt")
    );
    let mode = std::fs::metadata(ws.join("script.sh"))
        .expect("script")
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "executable again");
    assert_eq!(
        tree_state(&ws.join(".git"), false),
        dot_git,
        "the user's .git"
    );
}

fn session_id(hx: &Hx) -> String {
    main_session(hx)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .expect("a session")
}

#[test]
fn diff_is_a_patch_git_applies_in_reverse_and_names_only_the_turns_changes() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"printf 'one\nTWO\nthree\nfour\n' > f.txt && echo fresh > new.txt"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("f.txt", "one\ntwo\nthree\n")
        .write_file("mine.txt", "the user's\n");
    hx.args(["agent", "edit f"]);
    hx.run().assert_code(0);
    // The user's own edit after the run is not the session's.
    std::fs::write(hx.workspace().join("mine.txt"), "edited by the user\n").expect("write");
    let diff = hx.run_args(&["diff"]);
    diff.assert_code(0);
    assert!(diff.stdout.contains("-two\n+TWO\n"), "{}", diff.stdout);
    assert!(diff.stdout.contains("+fresh"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("mine.txt"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("\x1b["), "plain in a pipe");
    let check = reverse_check(&hx, &diff.stdout);
    assert!(
        check.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&check.stderr),
        diff.stdout
    );
    let stat = hx.run_args(&["diff", "--stat"]);
    assert!(stat.stdout.contains("2 files changed"), "{}", stat.stdout);
    let turn = hx.run_args(&["diff", "--turn", "2"]);
    turn.assert_code(0);
    assert!(turn.stdout.contains("+TWO"), "{}", turn.stdout);
}

/// File contents and names that would drive a terminal (OSC 52 sets the clipboard, `ESC[2J`
/// clears the screen, a bidi override reorders a line): `hx diff` on a terminal shows them
/// escaped, as every other output of hx does, coloured or not; piped, the patch stays byte
/// for byte what git wrote, so `git apply -R` still undoes it.
#[test]
fn diff_on_a_terminal_escapes_control_sequences_and_piped_stays_byte_exact() {
    let command = r#"printf 'a\033]52;c;aGk=\007b\n\033[2Jc\nd\342\200\256e\n' > ctl.txt && echo n > "$(printf 'n\342\200\256m.txt')""#;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("b1", "bash", json!({ "command": command }))]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.run_args(&["agent", "write"]).assert_code(0);
    assert_eq!(
        std::fs::read(hx.workspace().join("ctl.txt")).expect("ctl.txt"),
        b"a\x1b]52;c;aGk=\x07b\n\x1b[2Jc\nd\xe2\x80\xaee\n"
    );

    let piped = hx.run_args(&["diff"]);
    piped.assert_code(0);
    assert!(
        piped
            .stdout
            .contains("+a\x1b]52;c;aGk=\x07b\n+\x1b[2Jc\n+d\u{202e}e\n"),
        "{}",
        piped.dump()
    );
    let check = reverse_check(&hx, &piped.stdout);
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );

    // The runner sets NO_COLOR; the first pass is coloured.
    hx.args(["diff"]).env_remove("NO_COLOR");
    for no_color in [false, true] {
        if no_color {
            hx.env("NO_COLOR", "1");
        }
        let run = run_on_terminal(&hx);
        run.assert_code(0);
        let screen = &run.stdout;
        assert!(
            !screen.contains("\x1b]"),
            "an OSC reached the terminal: {screen:?}"
        );
        assert!(
            !screen.contains("\x1b[2J"),
            "ESC[2J reached the terminal: {screen:?}"
        );
        assert!(!screen.contains('\u{202e}'), "a bidi override: {screen:?}");
        assert!(screen.contains("a^[]52;c;aGk=^Gb"), "{screen:?}");
        assert!(screen.contains("^[[2Jc"), "{screen:?}");
        assert!(screen.contains("d\\u{202e}e"), "{screen:?}");
        assert!(screen.contains("n\\u{202e}m.txt"), "{screen:?}");
        if no_color {
            assert!(!screen.contains('\x1b'), "{screen:?}");
        } else {
            assert!(
                screen.contains("\x1b[32m+a^[]52"),
                "added lines green: {screen:?}"
            );
        }
    }
}

#[test]
fn a_file_the_user_changed_too_stops_the_rewind_until_force() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "by hx\n"}),
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("f.txt", "original\n")
        .write_file("g.txt", "g\n");
    hx.args(["agent", "write f"]);
    hx.run().assert_code(0);
    std::fs::write(hx.workspace().join("f.txt"), "the user's edit\n").expect("write");
    std::fs::write(hx.workspace().join("g.txt"), "the user's g\n").expect("write");
    let refused = hx.run_args(&["rewind", "1", "--yes"]);
    refused.assert_code(1);
    assert!(refused.stderr.contains("  f.txt"), "{}", refused.stderr);
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(hx.read_file("f.txt"), "the user's edit\n");
    let forced = hx.run_args(&["rewind", "1", "--yes", "--force"]);
    forced.assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "original\n");
    // No turn touched g.txt: the user's edit stays.
    assert_eq!(hx.read_file("g.txt"), "the user's g\n");
    // And --undo gives the user's edit back.
    hx.run_args(&["rewind", "--undo", "--yes"]).assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "the user's edit\n");
}

#[test]
fn a_conversation_rewind_continues_from_before_the_checkpoint_with_the_same_prefix() {
    let server = FakeServer::start(vec![
        Reply::text("First answer."),
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "second\n"}),
        )]),
        Reply::text("Second answer."),
        Reply::text("Third answer."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "first"]);
    hx.run().assert_code(0);
    hx.clear_args().args(["agent", "-c", "second"]);
    hx.run().assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "second\n");
    // Checkpoint 2 is the one before the message "second".
    let r = hx.run_args(&["rewind", "2", "--yes"]);
    r.assert_code(0);
    assert!(!hx.workspace().join("f.txt").exists(), "{}", r.dump());
    hx.clear_args().args(["agent", "-c", "again"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    let at_n = &reqs[1];
    let next = &reqs[3];
    let sent = messages(&next.body);
    assert_eq!(sent.last().expect("last")["content"], "again");
    assert_eq!(
        &sent[..sent.len() - 1],
        &messages(&at_n.body)[..sent.len() - 1]
    );
    // Byte for byte: the new request up to its new message is a prefix of the one at N.
    let cut = |raw: &str| -> String {
        let at = raw.rfind(r#"{"role":"user""#).expect("a user message");
        raw[..at].to_string()
    };
    let new_raw = next.raw_body.clone();
    let old_raw = at_n.raw_body.clone();
    assert!(old_raw.starts_with(&cut(&new_raw)), "{new_raw}\n{old_raw}");
}

#[test]
fn the_home_folder_is_refused_in_one_line() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("b1", "bash", r#"{"command":"true"}"#)]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    let ws = hx.workspace().to_path_buf();
    hx.env("HOME", &ws);
    hx.env("XDG_STATE_HOME", hx.home().join(".local/state"));
    hx.args(["agent", "hi"]);
    let run = hx.run();
    run.assert_code(0);
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("checkpoints are off"))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(lines[0].contains("home folder"), "{}", run.stderr);
}

#[test]
fn ignored_and_oversized_files_are_skipped_with_one_warning() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"head -c 3000 /dev/zero > big.bin && echo x > skip.log && echo y > small.txt"}"#,
        )]),
        Reply::tool_calls(vec![Call::new(
            "b2",
            "bash",
            r#"{"command":"echo z >> small.txt"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(".gitignore", "*.log\n")
        .write_user_config("config.toml", "[checkpoints]\nmax_file_bytes = 1000\n");
    hx.args(["agent", "make files"]);
    let run = hx.run();
    run.assert_code(0);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("max_file_bytes"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(warnings[0].contains("big.bin"), "{}", run.stderr);
    assert!(!warnings[0].contains("skip.log"), "{}", run.stderr);
    // Neither is in a checkpoint: the rewind removes only the file it kept.
    hx.run_args(&["rewind", "1", "--yes"]).assert_code(0);
    assert!(!hx.workspace().join("small.txt").exists());
    assert!(hx.workspace().join("big.bin").exists());
    assert!(hx.workspace().join("skip.log").exists());
}

#[test]
fn two_runs_in_one_workspace_at_once_both_keep_their_checkpoints() {
    let server = FakeServer::start_with(|req| {
        let n = req.body["messages"].as_array().map_or(0, Vec::len);
        if n <= 2 {
            let user = req.body["messages"][1]["content"].as_str().unwrap_or("x");
            let cmd = format!("for i in 1 2 3 4 5; do echo $i >> {user}.txt; done");
            Reply::tool_calls(vec![Call::new(
                "b",
                "bash",
                &json!({"command": cmd}).to_string(),
            )])
        } else {
            Reply::text("Done.")
        }
    });
    let mut hx = Hx::new(&server);
    hx.write_file("base.txt", "base\n");
    hx.args(["agent", "one"]);
    let ca = hx.spawn();
    hx.clear_args().args(["agent", "two"]);
    let cb = hx.spawn();
    let (ra, rb) = (ca, cb);
    let ra = crate::support::runner::Run::wait(ra, hx.time_limit());
    let rb = crate::support::runner::Run::wait(rb, hx.time_limit());
    ra.assert_code(0);
    rb.assert_code(0);
    assert!(!ra.stderr.contains("warning"), "{}", ra.stderr);
    assert!(!rb.stderr.contains("warning"), "{}", rb.stderr);
    let list = hx.run_args(&["checkpoints"]);
    list.assert_code(0);
    assert!(list.stdout.contains("sessions:    2"), "{}", list.stdout);
    let pruned = hx.run_args(&["checkpoints", "prune"]);
    pruned.assert_code(0);
    assert!(
        pruned.stdout.contains("sessions:    2"),
        "{}",
        pruned.stdout
    );
}

#[test]
fn without_git_checkpoints_are_off_with_one_warning_and_the_run_goes_on() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"echo x > f.txt"}"#,
        )]),
        Reply::tool_calls(vec![Call::new(
            "b2",
            "bash",
            r#"{"command":"echo y >> f.txt"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    // A PATH with a shell and nothing else, outside /tmp: the sandbox's pod has a /tmp of its
    // own, where a shell under the host's /tmp is not.
    let outside = tempfile::tempdir_in(crate::support::outside_tmp()).expect("tempdir");
    let bin = outside.path().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let shell = ["/bin/bash", "/usr/bin/bash", "/bin/sh"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a shell");
    std::os::unix::fs::symlink(shell, bin.join("bash")).expect("link");
    hx.env("PATH", &bin).args(["agent", "write"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "Done.\n");
    let off: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("checkpoints are off"))
        .collect();
    assert_eq!(off.len(), 1, "{}", run.stderr);
    assert!(off[0].contains("git is not installed"), "{}", run.stderr);
    assert_eq!(hx.read_file("f.txt"), "x\ny\n");
}

#[test]
fn json_carries_the_paths_a_command_changed_as_a_file_change_item() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"echo x > made.txt && rm old.txt && echo more >> kept.txt"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("old.txt", "old\n")
        .write_file("kept.txt", "kept\n")
        .args(["agent", "--json", "change"]);
    let run = hx.run();
    run.assert_code(0);
    let items: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "file_change")
        .collect();
    assert_eq!(items.len(), 1, "{}", run.stdout);
    let item = &items[0]["item"];
    assert_eq!(
        item["changes"],
        json!([
            {"path": "kept.txt", "kind": "update"},
            {"path": "made.txt", "kind": "add"},
            {"path": "old.txt", "kind": "delete"},
        ])
    );
    assert_eq!(item["checkpoint"], 2);
    assert_eq!(item["lines_added"], 2);
    assert_eq!(item["lines_removed"], 1);
}

/// The checkpoint after a turn's tools is taken beside the next request (issue 33), not
/// before it: a real model's first token takes longer than a checkpoint. Here the turn's
/// command writes 9 MB of random bytes, whose checkpoint (hashing and deflating them) takes
/// tens of milliseconds, so when the next request arrives the `file_change` item that ends
/// it is not on stdout yet. It still comes, once, and the session records the checkpoint
/// where the turn's answers end.
#[test]
fn the_checkpoint_after_a_turn_is_taken_beside_the_next_request() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("stdout.jsonl");
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let asked = AtomicUsize::new(0);
    let server = {
        let (out, seen) = (out.clone(), seen.clone());
        FakeServer::start_with(move |r| match r.path.ends_with("/chat/completions") {
            // Another endpoint's answer is not this.
            false => Reply::text(""),
            true => match asked.fetch_add(1, Ordering::SeqCst) {
                0 => Reply::tool_calls(vec![Call::new(
                    "b1",
                    "bash",
                    r#"{"command":"head -c 9000000 /dev/urandom > big.bin"}"#,
                )]),
                _ => {
                    let so_far = std::fs::read_to_string(&out).unwrap_or_default();
                    seen.lock().expect("seen").push(so_far);
                    Reply::text("Done.")
                }
            },
        })
    };
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "make a big file"]);
    let mut cmd = hx.command();
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawn hx");
    let deadline = Instant::now() + hx.time_limit();
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("hx did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "{}",
        std::fs::read_to_string(&out).unwrap_or_default()
    );
    let seen = seen.lock().expect("seen").clone();
    assert_eq!(seen.len(), 1, "one request after the turn");
    assert!(
        !seen[0].contains("file_change"),
        "the turn's checkpoint was done before the next request went out:\n{}",
        seen[0]
    );
    let stdout = std::fs::read_to_string(&out).expect("stdout");
    let changes: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("json"))
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "file_change")
        .collect();
    assert_eq!(changes.len(), 1, "{stdout}");
    assert_eq!(
        changes[0]["item"]["changes"],
        json!([{"path": "big.bin", "kind": "add"}])
    );
    let files = hx.session_files();
    let lines = crate::support::jsonl::session_lines(&files[0]);
    let after: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "checkpoint" && l["what"] == "after")
        .collect();
    assert_eq!(after.len(), 1, "{lines:#?}");
    // System, user, the assistant's call and its answer.
    assert_eq!(after[0]["at_message"], 4);
}

/// A run cut short while the request after a turn is out keeps the turn's checkpoint, taken
/// beside that request: the rewind to before the message knows the turn's changes as hx's and
/// needs no `--force`. The turn writes 9 MB, so its checkpoint is still being taken when the
/// signal comes (the request is out at once): hx waits for it before it ends.
#[test]
fn a_run_interrupted_during_the_next_request_keeps_the_turns_checkpoint() {
    use std::time::Duration;

    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"head -c 9000000 /dev/urandom > big.bin && echo by hx > f.txt"}"#,
        )]),
        Reply::hang(),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("f.txt", "original\n");
    hx.args(["agent", "write f"]);
    let mut child = hx.spawn();
    if !server.wait_for_requests(2, Duration::from_secs(20)) {
        let _ = child.kill();
        panic!("hx never made its second request");
    }
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = crate::support::Run::wait(child, Duration::from_secs(20));
    run.assert_code(130);
    let files = hx.session_files();
    let lines = crate::support::jsonl::session_lines(&files[0]);
    let after: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "checkpoint" && l["what"] == "after")
        .collect();
    assert_eq!(after.len(), 1, "{}\n{lines:#?}", run.dump());
    let rewound = hx.run_args(&["rewind", "1", "--yes"]);
    rewound.assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "original\n");
    assert!(!hx.workspace().join("big.bin").exists());
}

/// A workspace's first run makes its checkpoint store without starting git (issue 33): the
/// repository is made in-process, and the user's global excludes file, once asked of git,
/// is remembered for every workspace. The `git` on PATH notes each run: the first
/// workspace's run asks the global config once (a new HOME with a `.gitconfig`), and then a
/// run in a second workspace starts none; both take their checkpoints.
#[test]
fn a_new_workspaces_store_is_made_without_starting_git() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "one\n"}),
        )]),
        Reply::text("Done."),
        Reply::tool_calls(vec![call(
            "w2",
            "write_file",
            json!({"path": "g.txt", "content": "two\n"}),
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .expect("sh")
            .stdout,
    )
    .expect("utf-8");
    std::fs::write(hx.home().join(".gitconfig"), "[user]\n\tname = t\n").expect("write");
    let notes = hx.home().join("git-runs");
    let bin = hx.home().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho \"$1 $2\" >> '{}'\nexec '{}' \"$@\"\n",
            notes.display(),
            real.trim()
        ),
    )
    .expect("write");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::var("PATH").unwrap_or_default();
    hx.env("PATH", format!("{}:{path}", bin.display()));
    hx.current_dir_rel("first").args(["agent", "write f"]);
    let first = hx.run();
    first.assert_code(0);
    assert!(first.stderr.contains("1 file changed"), "{}", first.dump());
    let noted = std::fs::read_to_string(&notes).unwrap_or_default();
    assert_eq!(noted, "config --global\n", "{}", first.dump());
    hx.current_dir_rel("second");
    let second = hx.run();
    second.assert_code(0);
    assert!(
        second.stderr.contains("1 file changed"),
        "{}",
        second.dump()
    );
    let noted = std::fs::read_to_string(&notes).unwrap_or_default();
    assert_eq!(noted, "config --global\n", "{}", second.dump());
    // The store is a repository git reads: the second workspace's checkpoints are there.
    let diff = hx.run_args(&["diff", "--turn", "2"]);
    diff.assert_code(0);
    assert!(diff.stdout.contains("+two"), "{}", diff.dump());
}

#[test]
fn chat_rewind_puts_the_message_back_in_the_input_line_and_sends_the_same_prefix() {
    use crate::support::pty::Chat;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "by hx\n"}),
        )]),
        Reply::text("Wrote it."),
        Reply::text("Again."),
    ]);
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    assert!(chat.say("write f please").contains("Wrote it."));
    assert!(hx.workspace().join("f.txt").exists());
    let listed = chat.say("/diff");
    assert!(listed.contains("+by hx"), "{listed}");
    chat.type_line("/rewind");
    chat.expect("before message");
    chat.expect("rewind to");
    chat.type_line("1");
    chat.expect("rewound to checkpoint 1");
    // The message is back in the line: Enter sends it again.
    chat.expect("write f please");
    chat.type_line("");
    chat.expect("Again.");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    assert!(!hx.workspace().join("f.txt").exists());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert_eq!(messages(&reqs[2].body), messages(&reqs[0].body));
}

/// `/diff` in `hx chat` shares `hx diff`'s patch and shows it through the terminal's lines,
/// which escape what would drive the terminal.
#[test]
fn chat_diff_shows_control_sequences_escaped() {
    use crate::support::pty::Chat;
    let command = r#"printf 'a\033]52;c;aGk=\007b\nd\342\200\256e\n' > ctl.txt"#;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("b1", "bash", json!({ "command": command }))]),
        Reply::text("Wrote it."),
    ]);
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    assert!(chat.say("write it").contains("Wrote it."));
    let listed = chat.say("/diff");
    assert!(listed.contains("+a^[]52;c;aGk=^Gb"), "{listed:?}");
    assert!(listed.contains("+d\\u{202e}e"), "{listed:?}");
    assert!(!listed.contains('\u{202e}'), "{listed:?}");
    assert!(!listed.contains('\x07'), "{listed:?}");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn a_lock_file_a_crashed_git_left_does_not_stop_the_next_checkpoint() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"echo 1 > f.txt"}"#,
        )]),
        Reply::text("One."),
        Reply::tool_calls(vec![Call::new(
            "b2",
            "bash",
            r#"{"command":"echo 2 > f.txt"}"#,
        )]),
        Reply::text("Two."),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    let root = hx.home().join(".local/state/hx/checkpoints");
    let store = std::fs::read_dir(&root)
        .expect("store root")
        .flatten()
        .next()
        .expect("a store")
        .path();
    // What git leaves when it is killed while it writes the index or a ref.
    std::fs::write(store.join("index.lock"), "").expect("lock");
    std::fs::write(store.join("index"), "torn").expect("torn index");
    hx.clear_args().args(["agent", "-c", "two"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    assert!(
        run.stderr.contains("1 file changed, +1 -1"),
        "{}",
        run.stderr
    );
    hx.run_args(&["rewind", "1", "--code", "--yes"])
        .assert_code(0);
    assert!(!hx.workspace().join("f.txt").exists());
}

#[test]
fn in_a_subfolder_of_a_repository_the_repositorys_ignore_rules_apply_and_only_the_subfolder_is_kept(
) {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"mkdir -p new && echo made > new/f.txt && echo x > out.tmp && echo more >> kept.txt"}"#,
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    // The ignore rule is the repository's, above the workspace.
    hx.write_file(".gitignore", "*.tmp\n")
        .write_file("top.txt", "top\n")
        .write_file("sub/kept.txt", "kept\n");
    let ws = hx.workspace().to_path_buf();
    git(&ws, &["init", "-q", "."]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "init"]);
    let dot_git = tree_state(&ws.join(".git"), false);
    hx.current_dir_rel("sub").args(["agent", "change"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("2 files changed, +2 -0"),
        "{}",
        run.stderr
    );
    let diff = hx.run_args(&["diff", "--stat"]);
    assert!(diff.stdout.contains("sub/new/f.txt"), "{}", diff.stdout);
    assert!(!diff.stdout.contains("top.txt"), "{}", diff.stdout);
    hx.run_args(&["rewind", "1", "--yes"]).assert_code(0);
    assert!(
        !ws.join("sub/new").exists(),
        "the folder the turn made is gone"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/kept.txt")).expect("kept"),
        "kept\n"
    );
    assert!(
        ws.join("sub/out.tmp").exists(),
        "ignored: not the checkpoint's"
    );
    assert_eq!(
        tree_state(&ws.join(".git"), false),
        dot_git,
        "the user's .git"
    );
}

/// A rewind appends its lines after the run's `end`; they are no run of their own, so the
/// session that answered is still listed as answered, not `unfinished`.
#[test]
fn a_rewound_session_that_answered_is_listed_as_answered() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "f.txt", "content": "by hx\n"}),
        )]),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("f.txt", "original\n");
    hx.args(["agent", "write f"]);
    hx.run().assert_code(0);
    let listed = |hx: &Hx| {
        let list = hx.run_args(&["sessions", "list"]);
        list.assert_code(0);
        list.stdout
    };
    assert!(listed(&hx).contains(" answered "), "{}", listed(&hx));
    let files = hx.run_args(&["rewind", "1", "--code", "--yes"]);
    files.assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "original\n");
    let after = listed(&hx);
    assert!(after.contains(" answered "), "{after}");
    assert!(!after.contains("unfinished"), "{after}");
    // The files and the conversation, and the undo: the same.
    hx.run_args(&["rewind", "--undo", "--yes"]).assert_code(0);
    hx.run_args(&["rewind", "1", "--yes"]).assert_code(0);
    let after = listed(&hx);
    assert!(after.contains(" answered "), "{after}");
    assert!(!after.contains("unfinished"), "{after}");
}

/// A run that writes a file, so that its session has checkpoints.
fn writing_run(hx: &mut Hx, task: &str) {
    hx.clear_args().args(["agent", task]);
    hx.run().assert_code(0);
}

/// Two answers a run that writes `f.txt` gets, for each of `runs` runs.
fn writing_replies(runs: usize) -> Vec<Reply> {
    (0..runs)
        .flat_map(|i| {
            [
                Reply::tool_calls(vec![call(
                    "w1",
                    "write_file",
                    json!({"path": "f.txt", "content": format!("run {i}\n")}),
                )]),
                Reply::text("Done."),
            ]
        })
        .collect()
}

/// `hx checkpoints`' line that starts with `key`.
fn store_line(hx: &Hx, key: &str) -> String {
    let shown = hx.run_args(&["checkpoints"]);
    shown.assert_code(0);
    shown
        .stdout
        .lines()
        .find(|l| l.starts_with(key))
        .unwrap_or_else(|| panic!("{key} in {}", shown.stdout))
        .to_string()
}

/// Removing sessions (`hx sessions rm`, `hx sessions prune`) takes their checkpoints with
/// them: `hx checkpoints` counts only what a rewind can still reach.
#[test]
fn removing_sessions_drops_their_checkpoints() {
    let server = FakeServer::start(writing_replies(2));
    let mut hx = Hx::new(&server);
    writing_run(&mut hx, "first");
    let first = session_id(&hx);
    writing_run(&mut hx, "second");
    assert_eq!(store_line(&hx, "sessions:"), "sessions:    2");

    let rm = hx.run_args(&["sessions", "rm", &first]);
    rm.assert_code(0);
    assert_eq!(store_line(&hx, "sessions:"), "sessions:    1");

    let pruned = hx.run_args(&["sessions", "prune", "--older-than", "0s"]);
    pruned.assert_code(0);
    assert!(
        pruned.stdout.contains("removed 1 session file"),
        "{}",
        pruned.stdout
    );
    assert_eq!(store_line(&hx, "sessions:"), "sessions:    0");
    assert_eq!(store_line(&hx, "checkpoints:"), "checkpoints: 0");
}

/// Sessions that went another way (a file removed by hand, or by an older hx) are counted
/// apart, and `hx checkpoints prune` drops their checkpoints.
#[test]
fn checkpoints_prune_drops_the_checkpoints_of_sessions_that_are_gone() {
    let server = FakeServer::start(writing_replies(2));
    let mut hx = Hx::new(&server);
    writing_run(&mut hx, "first");
    let gone = main_session(&hx);
    writing_run(&mut hx, "second");
    std::fs::remove_file(&gone).expect("remove the session file");
    assert_eq!(
        store_line(&hx, "sessions:"),
        "sessions:    2 (1 whose session is gone: hx checkpoints prune drops them)"
    );
    let pruned = hx.run_args(&["checkpoints", "prune"]);
    pruned.assert_code(0);
    assert!(
        pruned
            .stdout
            .contains("pruned: 1 session(s) dropped (1 whose session is gone)"),
        "{}",
        pruned.stdout
    );
    assert!(
        pruned.stdout.contains("sessions:    1\n"),
        "{}",
        pruned.stdout
    );
    // The session that is left still rewinds.
    hx.run_args(&["rewind", "1", "--yes"]).assert_code(0);
    assert_eq!(hx.read_file("f.txt"), "run 0\n");
}

/// A run whose message never reached the model keeps no session, and the checkpoint taken
/// beside its request goes with it.
#[test]
fn a_session_discarded_for_a_401_takes_its_checkpoint_with_it() {
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )]);
    let mut hx = Hx::new(&server);
    hx.write_file("f.txt", "x\n");
    hx.args(["agent", "hi"]);
    let run = hx.run();
    assert_ne!(run.code, Some(0), "{}", run.dump());
    assert!(hx.session_files().is_empty(), "{}", run.dump());
    assert_eq!(store_line(&hx, "sessions:"), "sessions:    0");
}

/// A file hx cannot read (`chmod 000`, present before the run) is skipped with one warning,
/// as an oversized one is, and every checkpoint of the run is still taken. Run as a throwaway
/// unprivileged user: root reads a 000 file, so as root (CI) the case does not arise.
#[test]
fn an_unreadable_file_is_skipped_with_one_warning_and_checkpoints_go_on() {
    const NAME: &str = "an_unreadable_file_is_skipped_with_one_warning_and_checkpoints_go_on";
    crate::support::user::as_unprivileged_user(NAME, |user| {
        let server = FakeServer::start(vec![
            Reply::tool_calls(vec![Call::new(
                "b1",
                "bash",
                r#"{"command":"echo x > f.txt"}"#,
            )]),
            Reply::tool_calls(vec![Call::new(
                "b2",
                "bash",
                r#"{"command":"echo y >> f.txt"}"#,
            )]),
            Reply::text("Done."),
        ]);
        let mut hx = user.hx();
        // A repository of its own: the test folder may lie in this one's ignored `target/`.
        hx.write_file("a.txt", "kept\n")
            .write_file("locked.txt", "nobody reads this\n");
        let ws = hx.workspace().to_path_buf();
        git(&ws, &["init", "-q", "."]);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "init"]);
        hx.write_file("secret.txt", "nor this\n");
        // One tracked, one untracked.
        let locked = ws.join("locked.txt");
        for f in [&locked, &ws.join("secret.txt")] {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o000)).expect("chmod");
        }
        hx.env("DEEPSEEK_BASE_URL", server.url())
            .args(["agent", "write"]);
        let run = user.run(&hx);
        run.assert_code(0);
        assert_eq!(run.stdout, "Done.\n", "{}", run.dump());
        assert!(
            !run.stderr.contains("no checkpoint taken"),
            "{}",
            run.stderr
        );
        let skipped: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| l.contains("cannot read"))
            .collect();
        assert_eq!(skipped.len(), 1, "{}", run.stderr);
        assert!(
            skipped[0].contains("locked.txt") && skipped[0].contains("secret.txt"),
            "{}",
            run.stderr
        );
        let numbered: Vec<u64> = checkpoint_lines(&hx)
            .iter()
            .filter_map(|c| c["n"].as_u64())
            .collect();
        assert_eq!(numbered, [1, 2, 3], "{}", run.stderr);

        let diff = user.run_args(&hx, &["diff"]);
        diff.assert_code(0);
        assert!(diff.stdout.contains("+x\n+y\n"), "{}", diff.dump());
        assert!(!diff.stdout.contains("locked.txt"), "{}", diff.dump());
        assert!(!diff.stdout.contains("secret.txt"), "{}", diff.dump());
        user.run_args(&hx, &["rewind", "1", "--yes"]).assert_code(0);
        assert!(!hx.workspace().join("f.txt").exists());
        // Not in any checkpoint, so no turn's to undo: left as it was.
        let mode = std::fs::symlink_metadata(&locked)
            .expect("locked")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0, "locked.txt left alone");
        assert_eq!(hx.read_file("a.txt"), "kept\n");
    });
}

/// The first `name` on the test's own PATH.
fn on_path(name: &str) -> std::path::PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|f| f.is_file())
        })
        .unwrap_or_else(|| panic!("{name} on PATH"))
}

/// Issue 32, item 7: a process still running swaps a file, and a folder on another file's
/// way, for links out of the workspace while the rewind writes them back. Simulated at the
/// worst moment, deterministically: a `git` first on the rewind's PATH (outside the workspace,
/// as hx requires) that makes the swaps right after every `checkout-index` (how a rewind
/// wrote files before) and `cat-file blob` or `cat-file --batch` (how it reads them now).
/// Whatever the rewind does next (a mode kept, a file written), the files outside keep their
/// mode and bytes.
fn rewind_link_race(mut hx: Hx, run: impl Fn(&mut Hx, &[&str]) -> crate::support::Run) {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "b1",
            "bash",
            r#"{"command":"chmod +x script.sh && echo more >> src/lib.rs"}"#,
        )]),
        Reply::text("Done."),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url());
    repo(&mut hx);
    let ws = hx.workspace().to_path_buf();
    run(&mut hx, &["agent", "change modes"]).assert_code(0);

    // Beside the workspace, so an unprivileged run's user owns them, as a user's ~/.bashrc.
    let outside = ws.parent().expect("the test folder").join("outside");
    let secret = outside.join("bashrc");
    let secret_dir = outside.join("dir");
    std::fs::create_dir_all(&secret_dir).expect("mkdir");
    for f in [secret.clone(), secret_dir.join("lib.rs")] {
        std::fs::write(&f, "the user's own\n").expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    }
    let bin = ws.parent().expect("the test folder").join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let wrapper = bin.join("git");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\n{git} \"$@\"\nrc=$?\ncase \" $* \" in *\" checkout-index \"*|*\" cat-file blob \"*|*\" cat-file --batch \"*)\n\
             /bin/rm -rf '{ws}/script.sh' '{ws}/src'\n\
             /bin/ln -s '{secret}' '{ws}/script.sh'\n\
             /bin/ln -s '{dir}' '{ws}/src'\n;;\nesac\nexit $rc\n",
            git = on_path("git").display(),
            ws = ws.display(),
            secret = secret.display(),
            dir = secret_dir.display(),
        ),
    )
    .expect("write the wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![bin.clone()];
    dirs.extend(std::env::split_paths(&path));
    hx.env("PATH", std::env::join_paths(dirs).expect("a PATH"));

    let rewound = run(&mut hx, &["rewind", "1", "--code", "--yes"]);
    // Nothing outside changed (what failed before), whatever the rewind reports.
    for f in [secret, secret_dir.join("lib.rs")] {
        let meta = std::fs::symlink_metadata(&f).expect("still there");
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o600,
            "{} keeps its mode\n{}",
            f.display(),
            rewound.dump()
        );
        assert_eq!(
            std::fs::read_to_string(&f).expect("read"),
            "the user's own\n",
            "{} keeps its bytes\n{}",
            f.display(),
            rewound.dump()
        );
    }
    // The folder swapped before its file was written is left alone, and said so.
    rewound.assert_code(0);
    assert!(
        rewound.stderr.contains("left alone") && rewound.stderr.contains("src/lib.rs"),
        "{}",
        rewound.dump()
    );
}

#[test]
fn a_rewind_never_changes_a_file_through_a_link_swapped_in_while_it_runs() {
    rewind_link_race(
        Hx::new_offline_in(&crate::support::outside_tmp()),
        |hx, args| {
            hx.clear_args().args(args);
            hx.run()
        },
    );
}

#[test]
fn a_rewind_never_changes_a_file_through_a_link_swapped_in_while_it_runs_as_a_user() {
    crate::support::user::as_unprivileged_user(
        "a_rewind_never_changes_a_file_through_a_link_swapped_in_while_it_runs_as_a_user",
        |user| {
            rewind_link_race(user.hx(), |hx, args| {
                hx.clear_args().args(args);
                user.run(hx)
            })
        },
    );
}
