//! Unit tests of the store with real git: what a checkpoint takes (a plain folder, a
//! repository, a subfolder of one, the size and count limits), what `changes` and `restore`
//! make of two checkpoints, pruning, and the pure helpers.
//!
//! Tests run as threads of one process, so none changes the working folder or the
//! environment: each has its own temporary folder, and the `Env` the store reads points HOME
//! and the XDG folders into it (the user's global git ignore rules never apply here).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::git::Run;
use super::*;

/// PATH of `env` as a run with no writable folder would search it.
fn host_path(env: &Env) -> crate::sandbox::HostPath {
    crate::sandbox::HostPath::new(env.get("PATH").map(String::as_str), Vec::new())
}

/// A temporary folder holding the workspace (`ws`), the store and the environment's folders.
struct Place {
    root: tempfile::TempDir,
}

impl Place {
    fn new() -> Place {
        let root = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(root.path().join("ws")).expect("mkdir ws");
        Place { root }
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn ws(&self) -> PathBuf {
        self.root.path().join("ws")
    }

    fn env(&self) -> Env {
        let mut env = Env::new();
        env.insert(
            "PATH".into(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        );
        for (k, sub) in [
            ("HOME", "home"),
            ("XDG_STATE_HOME", "state"),
            ("XDG_CONFIG_HOME", "config"),
        ] {
            env.insert(k.into(), self.path().join(sub).display().to_string());
        }
        env
    }

    /// The store of `ws` in this place, without watches: every snapshot looks, so what a test
    /// sees does not depend on when inotify delivers an event.
    async fn store_of(&self, ws: &Path, settings: &Settings) -> Store {
        Store::open_at(
            ws,
            &self.path().join("store"),
            &self.env(),
            settings,
            &git::Program::from_env(&self.env()),
        )
        .await
        .expect("store opens")
        .unwatched()
    }

    async fn store(&self) -> Store {
        self.store_of(&self.ws(), &Settings::default()).await
    }

    fn write(&self, rel: &str, text: &str) {
        write(&self.ws().join(rel), text);
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.ws().join(rel)).expect("read")
    }
}

fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
}

fn mode_of(p: &Path) -> u32 {
    std::fs::symlink_metadata(p)
        .expect("lstat")
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// The user's git, as a user runs it in `dir` (no global config, so no hook or setting of the
/// machine's changes what the test sees).
fn user_git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
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
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

/// `ws` made a repository with everything in it committed.
fn commit_all(ws: &Path) {
    user_git(ws, &["init", "-q", "."]);
    user_git(ws, &["add", "-A"]);
    user_git(ws, &["commit", "-qm", "init"]);
}

/// The shadow's git, asked something by the test.
async fn shadow(store: &Store, args: &[&str]) -> String {
    let out = store
        .git
        .run(
            args,
            Run {
                limit: 1 << 20,
                ..Run::default()
            },
        )
        .await
        .expect("shadow git");
    String::from_utf8_lossy(&out).trim_end().to_string()
}

/// Each path of a tree and its mode.
async fn entries(store: &Store, tree: &str) -> Vec<(String, String)> {
    shadow(store, &["ls-tree", "-r", "--full-tree", tree])
        .await
        .lines()
        .map(|l| {
            let (meta, path) = l.split_once('\t').expect("a tab");
            let mode = meta.split(' ').next().expect("a mode");
            (path.to_string(), mode.to_string())
        })
        .collect()
}

async fn paths(store: &Store, tree: &str) -> Vec<String> {
    entries(store, tree)
        .await
        .into_iter()
        .map(|e| e.0)
        .collect()
}

fn is_hash(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn a_plain_folder_is_taken_whole_and_an_unchanged_one_keeps_its_commit() {
    let place = Place::new();
    place.write("a.txt", "alpha\n");
    place.write("sub/b.txt", "beta\n");
    std::os::unix::fs::symlink("a.txt", place.ws().join("link")).expect("symlink");
    let store = place.store().await;
    assert_eq!(store.work_tree(), place.ws());
    assert_eq!(store.prefix(), "");

    let (first, warnings) = store.snapshot("s1", None).await.expect("snapshot");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert!(is_hash(&first.commit) && is_hash(&first.tree), "{first:?}");
    assert_eq!(
        entries(&store, &first.tree).await,
        [
            ("a.txt".to_string(), "100644".to_string()),
            ("link".to_string(), "120000".to_string()),
            ("sub/b.txt".to_string(), "100644".to_string()),
        ]
    );
    assert_eq!(
        shadow(
            &store,
            &["cat-file", "-p", &format!("{}:a.txt", first.tree)]
        )
        .await,
        "alpha"
    );
    // A link is kept as a link: its blob is the target's name.
    assert_eq!(
        shadow(&store, &["cat-file", "-p", &format!("{}:link", first.tree)]).await,
        "a.txt"
    );
    let head = format!("{}^{{tree}}", first.commit);
    assert_eq!(shadow(&store, &["rev-parse", &head]).await, first.tree);
    assert_eq!(
        shadow(&store, &["rev-parse", "refs/hx/s1"]).await,
        first.commit
    );

    // Looked at again, unchanged: the same tree, so the previous checkpoint is the answer.
    let looks = store.looks();
    let (again, _) = store.snapshot("s1", Some(&first)).await.expect("again");
    assert_eq!(
        store.looks(),
        looks + 1,
        "an unwatched store looks every time"
    );
    assert_eq!(again, first);

    place.write("a.txt", "changed\n");
    let (next, _) = store.snapshot("s1", Some(&first)).await.expect("next");
    assert_ne!(next.commit, first.commit);
    assert_ne!(next.tree, first.tree);
    let parent = format!("{}^", next.commit);
    assert_eq!(shadow(&store, &["rev-parse", &parent]).await, first.commit);
    assert_eq!(
        shadow(&store, &["rev-parse", "refs/hx/s1"]).await,
        next.commit
    );
}

/// A session's ref names each new checkpoint without a new file each time: its file trades
/// names with a spare the store keeps (`snapshot::write_ref`), so that a turn's checkpoint
/// frees no file (on ext4 every file freed slows the files made after it for a minute).
#[tokio::test]
async fn a_sessions_ref_names_each_checkpoint_without_a_new_file_each_time() {
    use std::os::unix::fs::MetadataExt;
    let place = Place::new();
    let store = place.store().await;
    let name = store.git.git_dir.join("refs/hx/s1");
    let mut previous = None;
    let mut files = Vec::new();
    for i in 0..4 {
        place.write("a.txt", &format!("{i}\n"));
        let (snap, _) = store
            .snapshot("s1", previous.as_ref())
            .await
            .expect("snapshot");
        let text = std::fs::read_to_string(&name).expect("the ref");
        assert_eq!(text, format!("{}\n", snap.commit));
        assert_eq!(
            shadow(&store, &["rev-parse", "refs/hx/s1"]).await,
            snap.commit
        );
        files.push(std::fs::metadata(&name).expect("the ref").ino());
        previous = Some(snap);
    }
    // The first is a new file; from then on the ref's file and the spare take turns.
    assert_eq!((files[1], files[2]), (files[3], files[0]), "{files:?}");
    assert_ne!(files[1], files[2]);
    let left: Vec<_> = std::fs::read_dir(name.parent().expect("refs/hx"))
        .expect("refs/hx")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(left, ["s1"]);
    // The spare is the session's own, and goes with its ref.
    let spare = store.git.git_dir.join("hx-ref-spare-s1");
    assert!(spare.is_file());
    store
        .prune(Some(&std::collections::BTreeSet::new()))
        .await
        .expect("prune");
    assert!(!name.exists() && !spare.exists());
}

#[tokio::test]
async fn in_a_repository_the_tree_is_what_git_commits_and_the_users_git_is_left_alone() {
    let place = Place::new();
    let ws = place.ws();
    place.write("a.txt", "alpha\n");
    place.write(".gitignore", "*.log\n");
    place.write("src/lib.rs", "fn main() {}\n");
    commit_all(&ws);
    let index_before = std::fs::read(ws.join(".git/index")).expect("index");
    let head_before = user_git(&ws, &["rev-parse", "HEAD"]);

    let store = place.store().await;
    let (snap, _) = store.snapshot("s", None).await.expect("snapshot");
    assert_eq!(snap.tree, user_git(&ws, &["rev-parse", "HEAD^{tree}"]));
    // The store keeps its own copy of every object it names: nothing is borrowed.
    let alternates = store.dir().join("git/objects/info/alternates");
    assert!(!alternates.exists(), "the store borrows objects");
    // (Loose or in the first look's pack: git finds it in the store itself.)
    let blob = user_git(&ws, &["rev-parse", "HEAD:a.txt"]);
    assert_eq!(
        shadow(&store, &["cat-file", "-t", &blob]).await,
        "blob",
        "{blob} was not kept"
    );

    place.write("new.txt", "untracked\n");
    place.write("noise.log", "ignored\n");
    let (next, _) = store.snapshot("s", Some(&snap)).await.expect("next");
    assert_eq!(
        paths(&store, &next.tree).await,
        strings(&[".gitignore", "a.txt", "new.txt", "src/lib.rs"])
    );
    assert_eq!(
        std::fs::read(ws.join(".git/index")).expect("index"),
        index_before
    );
    assert_eq!(user_git(&ws, &["rev-parse", "HEAD"]), head_before);
    // Its one branch is its only ref: the checkpoints' refs are in the shadow.
    assert_eq!(
        user_git(&ws, &["for-each-ref", "--format=%(refname)"]),
        user_git(&ws, &["symbolic-ref", "HEAD"])
    );
}

#[tokio::test]
async fn in_a_subfolder_of_a_repository_only_it_is_taken_and_changes_are_shown_from_it() {
    let place = Place::new();
    let top = place.ws();
    place.write("top.txt", "top\n");
    place.write("sub/in.txt", "in\n");
    commit_all(&top);
    let store = place.store_of(&top.join("sub"), &Settings::default()).await;
    assert_eq!(store.work_tree(), top);
    assert_eq!(store.prefix(), "sub/");

    let (first, _) = store.snapshot("s", None).await.expect("first");
    assert_eq!(paths(&store, &first.tree).await, strings(&["sub/in.txt"]));
    place.write("sub/in.txt", "in, changed\n");
    place.write("sub/new.txt", "new\n");
    place.write("top.txt", "outside the workspace\n");
    let (next, _) = store.snapshot("s", Some(&first)).await.expect("next");
    let changes = store
        .changes(&first.tree, &next.tree)
        .await
        .expect("changes");
    assert_eq!(
        changes.paths,
        [
            ("in.txt".to_string(), "update"),
            ("new.txt".to_string(), "add")
        ]
    );
    // `changed` names paths from the work tree, as a restore takes them.
    assert_eq!(
        store
            .changed(&first.tree, &next.tree)
            .await
            .expect("changed"),
        strings(&["sub/in.txt", "sub/new.txt"])
    );
}

#[tokio::test]
async fn changes_name_each_path_added_updated_and_deleted_with_its_lines() {
    let place = Place::new();
    place.write("keep.txt", "same\n");
    place.write("mod.txt", "a\nb\n");
    place.write("del.txt", "x\n");
    std::fs::write(place.ws().join("bin.dat"), b"\0\x01\x02").expect("write");
    let store = place.store().await;
    let (one, _) = store.snapshot("s", None).await.expect("one");

    place.write("mod.txt", "a\nc\nd\n");
    std::fs::remove_file(place.ws().join("del.txt")).expect("rm");
    place.write("new.txt", "n1\nn2\n");
    std::fs::write(place.ws().join("bin.dat"), b"\0\x03").expect("write");
    let (two, _) = store.snapshot("s", Some(&one)).await.expect("two");

    let c = store.changes(&one.tree, &two.tree).await.expect("changes");
    assert_eq!(
        c.paths,
        [
            ("bin.dat".to_string(), "update"),
            ("del.txt".to_string(), "delete"),
            ("mod.txt".to_string(), "update"),
            ("new.txt".to_string(), "add"),
        ]
    );
    // mod.txt: +c +d -b; new.txt: +2; del.txt: -1; the binary file counts no lines.
    assert_eq!((c.added, c.removed), (4, 2));
    assert_eq!(
        store.changed(&one.tree, &two.tree).await.expect("changed"),
        strings(&["bin.dat", "del.txt", "mod.txt", "new.txt"])
    );
    assert_eq!(
        store.changes(&one.tree, &one.tree).await.expect("same"),
        Changes::default()
    );
    assert!(store
        .changed(&one.tree, &one.tree)
        .await
        .expect("same")
        .is_empty());

    // How each differing path is in the first: its mode and blob, or none.
    let d = store.differences(&one.tree, &two.tree).await.expect("diff");
    let del_blob = shadow(&store, &["rev-parse", &format!("{}:del.txt", one.tree)]).await;
    assert_eq!(
        d.keys().cloned().collect::<Vec<_>>(),
        strings(&["bin.dat", "del.txt", "mod.txt", "new.txt"])
    );
    assert_eq!(d["del.txt"], Some(("100644".to_string(), del_blob)));
    assert_eq!(d["new.txt"], None);
}

#[tokio::test]
async fn restore_brings_back_the_earlier_files_and_removes_what_came_after() {
    let place = Place::new();
    let ws = place.ws();
    place.write("a.txt", "one\n");
    place.write("gone.txt", "keep me\n");
    place.write("script.sh", "#!/bin/sh\n");
    set_mode(&ws.join("script.sh"), 0o755);
    place.write("private.txt", "secret v1\n");
    set_mode(&ws.join("private.txt"), 0o600);
    let store = place.store().await;
    let (before, _) = store.snapshot("s", None).await.expect("before");

    place.write("a.txt", "two\n");
    std::fs::remove_file(ws.join("gone.txt")).expect("rm");
    place.write("gen/deep/out.txt", "made\n");
    place.write("new.txt", "new\n");
    set_mode(&ws.join("script.sh"), 0o644);
    place.write("private.txt", "secret v2\n");
    let (after, _) = store.snapshot("s", Some(&before)).await.expect("after");

    let target = store
        .differences(&before.tree, &after.tree)
        .await
        .expect("differences");
    let names: Vec<String> = target.keys().cloned().collect();
    let done = store.restore(&target, &names).await.expect("restore");
    assert_eq!(
        done,
        Restored {
            written: strings(&["a.txt", "gone.txt", "private.txt", "script.sh"]),
            removed: strings(&["gen/deep/out.txt", "new.txt"]),
            refused: Vec::new(),
        }
    );
    assert_eq!(place.read("a.txt"), "one\n");
    assert_eq!(place.read("gone.txt"), "keep me\n");
    assert_eq!(place.read("private.txt"), "secret v1\n");
    assert!(!ws.join("new.txt").exists());
    // The folders the removed file left empty go too.
    assert!(!ws.join("gen").exists());
    // Permission bits stay the file's, but for the executable bit, which is the target's.
    assert_eq!(mode_of(&ws.join("private.txt")), 0o600);
    assert_eq!(mode_of(&ws.join("script.sh")), 0o755);

    let (now, _) = store.snapshot("s", Some(&after)).await.expect("now");
    assert_eq!(now.tree, before.tree);
}

#[tokio::test]
async fn restore_does_not_write_through_a_folder_that_became_a_link() {
    let place = Place::new();
    let ws = place.ws();
    let outside = place.path().join("outside");
    write(&outside.join("f.txt"), "outside\n");
    place.write("dir/f.txt", "one\n");
    let store = place.store().await;
    let (before, _) = store.snapshot("s", None).await.expect("before");

    std::fs::remove_dir_all(ws.join("dir")).expect("rm dir");
    std::os::unix::fs::symlink(&outside, ws.join("dir")).expect("symlink");
    let (after, _) = store.snapshot("s", Some(&before)).await.expect("after");

    let target = store
        .differences(&before.tree, &after.tree)
        .await
        .expect("differences");
    assert_eq!(
        target.keys().cloned().collect::<Vec<_>>(),
        strings(&["dir", "dir/f.txt"])
    );
    let names: Vec<String> = target.keys().cloned().collect();
    let done = store.restore(&target, &names).await.expect("restore");
    // The link itself is a path of the workspace and goes first; the folder is made again
    // in its place, and nothing is written beyond the link.
    assert_eq!(
        done,
        Restored {
            written: strings(&["dir/f.txt"]),
            removed: strings(&["dir"]),
            refused: Vec::new(),
        }
    );
    assert_eq!(
        std::fs::read_to_string(outside.join("f.txt")).expect("read"),
        "outside\n"
    );
    assert!(!std::fs::symlink_metadata(ws.join("dir"))
        .expect("dir")
        .file_type()
        .is_symlink());
    assert_eq!(place.read("dir/f.txt"), "one\n");
}

#[tokio::test]
async fn restore_replaces_a_file_that_became_a_link_and_leaves_its_target_alone() {
    let place = Place::new();
    let ws = place.ws();
    let outside = place.path().join("bashrc");
    write(&outside, "the user's own\n");
    set_mode(&outside, 0o600);
    place.write("script.sh", "#!/bin/sh\n");
    let store = place.store().await;
    let (before, _) = store.snapshot("s", None).await.expect("before");

    // A turn made it executable; then something swapped it for a link out.
    set_mode(&ws.join("script.sh"), 0o755);
    let (after, _) = store.snapshot("s", Some(&before)).await.expect("after");
    std::fs::remove_file(ws.join("script.sh")).expect("rm");
    std::os::unix::fs::symlink(&outside, ws.join("script.sh")).expect("symlink");

    let target = store
        .differences(&before.tree, &after.tree)
        .await
        .expect("differences");
    let names: Vec<String> = target.keys().cloned().collect();
    let done = store.restore(&target, &names).await.expect("restore");
    assert_eq!(done.written, strings(&["script.sh"]));
    assert_eq!(mode_of(&outside), 0o600);
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "the user's own\n"
    );
    let meta = std::fs::symlink_metadata(ws.join("script.sh")).expect("script");
    assert!(meta.is_file());
    assert_eq!(mode_of(&ws.join("script.sh")) & 0o111, 0);
    assert_eq!(place.read("script.sh"), "#!/bin/sh\n");
}

/// Files that share their bytes share one blob, read once for all of them; more files than
/// one batch of reads holds are all written back.
#[tokio::test]
async fn restore_writes_files_that_share_their_bytes_and_more_than_one_batch() {
    let place = Place::new();
    let names: Vec<String> = (0..40).map(|i| format!("f{i:02}.txt")).collect();
    for n in &names {
        place.write(n, "same\n");
    }
    let store = place.store().await;
    let (before, _) = store.snapshot("s", None).await.expect("before");
    for n in &names {
        place.write(n, "changed\n");
    }
    let (after, _) = store.snapshot("s", Some(&before)).await.expect("after");
    let target = store
        .differences(&before.tree, &after.tree)
        .await
        .expect("differences");
    let paths: Vec<String> = target.keys().cloned().collect();
    let done = store.restore(&target, &paths).await.expect("restore");
    assert_eq!(done.written, names);
    for n in &names {
        assert_eq!(place.read(n), "same\n", "{n}");
    }
}

#[test]
fn place_opens_no_folder_through_a_link_or_a_file_and_removes_a_link_not_its_target() {
    let place = Place::new();
    let ws = place.ws();
    let outside = place.path().join("outside");
    write(&outside.join("x.txt"), "outside\n");
    std::os::unix::fs::symlink(&outside, ws.join("ln")).expect("symlink");
    std::os::unix::fs::symlink(outside.join("x.txt"), ws.join("file-ln")).expect("symlink");
    place.write("plain", "a file\n");

    for rel in ["ln/x.txt", "plain/x.txt"] {
        assert!(
            matches!(
                place::folders(&ws, rel, true),
                Err(place::Blocked::NotFolder)
            ),
            "{rel}"
        );
    }
    assert!(!outside.join("x.txt").join("x.txt").exists());
    assert!(matches!(
        place::folders(&ws, "none/x.txt", false),
        Err(place::Blocked::Missing)
    ));
    // Made when asked, one folder at a time.
    let (open, name) = place::folders(&ws, "new/deep/f.txt", true).expect("made");
    assert_eq!((open.len(), name), (3, "f.txt"));
    assert!(ws.join("new/deep").is_dir());

    // A removal takes the link itself.
    let (open, name) = place::folders(&ws, "file-ln", false).expect("top");
    assert!(place::remove(&open[0], name));
    assert!(!ws.join("file-ln").exists());
    assert_eq!(
        std::fs::read_to_string(outside.join("x.txt")).expect("read"),
        "outside\n"
    );
    // And empty folders go up to the kept depth, not beyond.
    let (open, _) = place::folders(&ws, "new/deep/f.txt", false).expect("open");
    place::remove_empty(&open, "new/deep/f.txt", 2);
    assert!(!ws.join("new/deep").exists());
    assert!(ws.join("new").is_dir());
}

#[test]
fn place_put_writes_a_link_and_a_file_in_place_of_whatever_was_there() {
    let place = Place::new();
    let ws = place.ws();
    let outside = place.path().join("outside.txt");
    write(&outside, "outside\n");
    set_mode(&outside, 0o600);
    std::os::unix::fs::symlink(&outside, ws.join("f")).expect("symlink");
    place.write("kept", "old\n");
    set_mode(&ws.join("kept"), 0o640);

    let (open, _) = place::folders(&ws, "f", false).expect("top");
    let at = &open[0];
    place::put(at, "f", place::Content::File(b"new\n", true)).expect("put");
    assert_eq!(place.read("f"), "new\n");
    assert!(std::fs::symlink_metadata(ws.join("f"))
        .expect("f")
        .is_file());
    assert_eq!(mode_of(&outside), 0o600);
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "outside\n"
    );

    // A file that was there keeps its bits, with the target's executable bit.
    place::put(at, "kept", place::Content::File(b"v2\n", true)).expect("put");
    assert_eq!(mode_of(&ws.join("kept")), 0o750);
    place::put(at, "l", place::Content::Link(b"kept")).expect("link");
    assert_eq!(
        std::fs::read_link(ws.join("l")).expect("readlink"),
        Path::new("kept")
    );
    // No temporary name is left behind.
    let names: Vec<String> = std::fs::read_dir(&ws)
        .expect("ls")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".hx-restore")),
        "{names:?}"
    );
}

#[tokio::test]
async fn restore_removes_nothing_through_a_link_or_outside_the_work_tree() {
    let place = Place::new();
    let ws = place.ws();
    let outside = place.path().join("outside");
    write(&outside.join("x.txt"), "outside\n");
    write(&place.path().join("escape.txt"), "beside the workspace\n");
    std::os::unix::fs::symlink(&outside, ws.join("ln")).expect("symlink");
    place.write("b", "b\n");
    let store = place.store().await;

    let names = strings(&["ln/x.txt", "../escape.txt", "/abs", "a/../b", "./b"]);
    let target: BTreeMap<String, Option<(String, String)>> =
        names.iter().map(|n| (n.clone(), None)).collect();
    let done = store.restore(&target, &names).await.expect("restore");
    // Unsafe names are not paths a restore takes at all; the one through a link is refused.
    assert_eq!(
        done,
        Restored {
            written: Vec::new(),
            removed: Vec::new(),
            refused: strings(&["ln/x.txt"]),
        }
    );
    assert!(outside.join("x.txt").exists());
    assert!(place.path().join("escape.txt").exists());
    assert_eq!(place.read("b"), "b\n");
}

#[tokio::test]
async fn files_over_the_limits_are_left_out_and_named_once_a_run() {
    let place = Place::new();
    place.write("a.txt", "a\n");
    place.write("b.txt", "b\n");
    place.write("big.bin", "0123456789abcdefghij");
    place.write("c.txt", "c\n");
    let settings = Settings {
        max_file_bytes: 10,
        max_files: 2,
        ..Settings::default()
    };
    let store = place.store_of(&place.ws(), &settings).await;

    let (first, warnings) = store.snapshot("s", None).await.expect("first");
    assert_eq!(
        warnings,
        [
            "checkpoints skip 1 file over checkpoints.max_file_bytes (10 bytes): big.bin",
            "checkpoints stop at checkpoints.max_files (2): 1 file not kept: c.txt",
        ]
    );
    assert_eq!(
        paths(&store, &first.tree).await,
        strings(&["a.txt", "b.txt"])
    );

    let (again, warnings) = store.snapshot("s", Some(&first)).await.expect("again");
    assert_eq!(again, first);
    assert!(warnings.is_empty(), "named twice: {warnings:?}");

    // A file already taken that grows past the limit leaves the checkpoint.
    place.write("a.txt", "now more than ten bytes\n");
    let (next, warnings) = store.snapshot("s", Some(&first)).await.expect("next");
    assert_eq!(
        warnings,
        ["checkpoints skip 1 file over checkpoints.max_file_bytes (10 bytes): a.txt"]
    );
    assert_eq!(paths(&store, &next.tree).await, strings(&["b.txt"]));
}

#[tokio::test]
async fn tree_with_takes_only_the_named_paths_and_diff_shows_them() {
    let place = Place::new();
    place.write("mod.txt", "a\nb\n");
    place.write("del.txt", "x\n");
    let store = place.store().await;
    let (one, _) = store.snapshot("s", None).await.expect("one");
    place.write("mod.txt", "a\nc\n");
    std::fs::remove_file(place.ws().join("del.txt")).expect("rm");
    place.write("new.txt", "n\n");
    let (two, _) = store.snapshot("s", Some(&one)).await.expect("two");

    let only = strings(&["mod.txt", "del.txt"]);
    let mixed = store
        .tree_with(&one.tree, &two.tree, &only)
        .await
        .expect("tree_with");
    assert_eq!(
        store.changed(&one.tree, &mixed).await.expect("changed"),
        strings(&["del.txt", "mod.txt"])
    );
    assert_eq!(
        store.changed(&mixed, &two.tree).await.expect("changed"),
        strings(&["new.txt"])
    );
    assert!(!store.dir().join("diff.index").exists());

    let patch = store.diff(&one.tree, &mixed, false).await.expect("diff");
    let patch = String::from_utf8(patch).expect("utf-8");
    assert!(patch.contains("deleted file mode 100644"), "{patch}");
    assert!(patch.contains("--- a/mod.txt\n+++ b/mod.txt\n"), "{patch}");
    assert!(patch.contains(" a\n-b\n+c\n"), "{patch}");
    assert!(!patch.contains("\x1b["), "colour asked off: {patch}");
    let stat = store.diff(&one.tree, &mixed, true).await.expect("stat");
    assert!(
        String::from_utf8_lossy(&stat).contains("2 files changed, 1 insertion(+), 2 deletions(-)"),
        "{}",
        String::from_utf8_lossy(&stat)
    );
}

#[tokio::test]
async fn prune_drops_the_sessions_past_keep_sessions_and_what_only_they_named() {
    let place = Place::new();
    place.write("a.txt", "one\n");
    let settings = Settings {
        keep_sessions: 1,
        ..Settings::default()
    };
    let store = place.store_of(&place.ws(), &settings).await;
    store.snapshot("s1", None).await.expect("s1");
    place.write("a.txt", "two\n");
    store.snapshot("s2", None).await.expect("s2");
    let usage = store.usage(None).await;
    assert!(usage.bytes > 0);
    assert_eq!((usage.sessions, usage.gone, usage.checkpoints), (2, 0, 2));

    // A new store was just made: nothing is due for a day.
    assert_eq!(store.prune_if_due(None).await.expect("due"), None);
    let pruned = store.prune(None).await.expect("prune");
    assert_eq!(pruned.sessions_dropped, 1);
    assert!(pruned.bytes_before > 0 && pruned.bytes_after > 0);
    let usage = store.usage(None).await;
    assert_eq!((usage.sessions, usage.checkpoints), (1, 1));
}

#[tokio::test]
async fn prune_drops_the_sessions_that_are_gone_before_counting_the_kept() {
    let place = Place::new();
    place.write("a.txt", "one\n");
    let settings = Settings {
        keep_sessions: 1,
        ..Settings::default()
    };
    let store = place.store_of(&place.ws(), &settings).await;
    store.snapshot("old", None).await.expect("old");
    place.write("a.txt", "two\n");
    // Newer, and gone: it takes no place of the one kept.
    store.snapshot("gone", None).await.expect("gone");
    let recorded: BTreeSet<String> = ["old".to_string()].into();
    let usage = store.usage(Some(&recorded)).await;
    assert_eq!((usage.sessions, usage.gone), (2, 1));
    let pruned = store.prune(Some(&recorded)).await.expect("prune");
    assert_eq!((pruned.sessions_dropped, pruned.sessions_gone), (1, 1));
    let usage = store.usage(Some(&recorded)).await;
    assert_eq!((usage.sessions, usage.gone, usage.checkpoints), (1, 0, 1));
}

#[tokio::test]
async fn a_lock_file_a_crash_left_is_cleared_by_the_next_lock() {
    let place = Place::new();
    place.write("a.txt", "a\n");
    let store = place.store().await;
    let stale = store.dir().join("index.lock");
    std::fs::write(&stale, b"").expect("write");
    store.snapshot("s", None).await.expect("snapshot");
    assert!(!stale.exists());
}

#[tokio::test]
async fn open_keeps_the_store_under_the_state_folder_and_says_why_it_is_off() {
    let place = Place::new();
    let ws = place.ws();
    let env = place.env();
    let store = Store::open(
        &ws,
        &env,
        &Settings::default(),
        &git::Program::from_env(&env),
    )
    .await
    .expect("opens");
    let real = crate::paths::real_path(&ws).expect("real path");
    let want = place
        .path()
        .join("state/hx/checkpoints")
        .join(crate::paths::workspace_folder(&real));
    assert_eq!(store.dir(), want);
    assert_eq!(
        std::fs::read_to_string(want.join("git/info/attributes")).expect("attributes"),
        "* -text -eol -filter -ident -working-tree-encoding\n"
    );
    // Hooks are never there to run.
    assert!(!want.join("git/hooks").exists());

    let disabled = Settings {
        enabled: false,
        ..Settings::default()
    };
    let off = Store::open(&ws, &env, &disabled, &git::Program::from_env(&env))
        .await
        .expect_err("off");
    assert_eq!(off.line, None);

    let mut nowhere = env.clone();
    nowhere.remove("HOME");
    nowhere.remove("XDG_STATE_HOME");
    let off = Store::open(
        &ws,
        &nowhere,
        &Settings::default(),
        &git::Program::from_env(&nowhere),
    )
    .await
    .expect_err("no place");
    assert_eq!(
        off.line.as_deref(),
        Some("checkpoints are off: no place for them (set HOME or XDG_STATE_HOME)")
    );

    let mut no_git = env.clone();
    let empty = place.path().join("empty-bin");
    std::fs::create_dir_all(&empty).expect("mkdir");
    no_git.insert("PATH".into(), empty.display().to_string());
    let off = Store::open(
        &ws,
        &no_git,
        &Settings::default(),
        &git::Program::from_env(&no_git),
    )
    .await
    .expect_err("no git");
    assert_eq!(
        off.line.as_deref(),
        Some("checkpoints are off: git is not installed")
    );
}

#[tokio::test]
async fn checkpoints_open_the_store_once_and_warn_once() {
    let place = Place::new();
    let warned = std::sync::Mutex::new(Vec::<String>::new());
    let warn = |line: &str| warned.lock().expect("lock").push(line.to_string());

    let mut nowhere = place.env();
    nowhere.remove("HOME");
    nowhere.remove("XDG_STATE_HOME");
    let off = Checkpoints::new(
        &place.ws(),
        &nowhere,
        &Settings::default(),
        &crate::sandbox::HostPath::default(),
    );
    assert!(off.store(&warn).await.is_none());
    assert!(off.store(&warn).await.is_none());
    assert_eq!(
        *warned.lock().expect("lock"),
        ["checkpoints are off: no place for them (set HOME or XDG_STATE_HOME)"]
    );

    let on = Checkpoints::new(
        &place.ws(),
        &place.env(),
        &Settings::default(),
        &host_path(&place.env()),
    );
    let store = on.store(&warn).await.expect("a store");
    assert!(store.dir().join("git/HEAD").is_file());
    assert_eq!(warned.lock().expect("lock").len(), 1, "a new store warns");
}

/// Issue 33: the store is opened and the workspace looked at while the run is built. The
/// first checkpoint is that look's tree with what changed after it (which the watches
/// name), gives the look's warnings once, and looks no more.
#[tokio::test]
async fn a_look_made_ahead_is_the_first_checkpoints_with_what_changed_after_it() {
    let place = Place::new();
    place.write("a.txt", "a\n");
    place.write("big.bin", "0123456789abcdefghij");
    let settings = Settings {
        max_file_bytes: 10,
        ..Settings::default()
    };
    let ahead = Checkpoints::new(
        &place.ws(),
        &place.env(),
        &settings,
        &host_path(&place.env()),
    )
    .ahead(&tokio::runtime::Handle::current());
    let warned = std::sync::Mutex::new(Vec::<String>::new());
    let warn = |line: &str| warned.lock().expect("lock").push(line.to_string());
    let store = ahead.store(&warn).await.expect("a store");
    assert_eq!(store.looks(), 1, "the look made ahead");

    place.write("a.txt", "later\n");
    place.write("new.txt", "new\n");
    let (first, warnings) = store.snapshot("s", None).await.expect("first");
    assert_eq!(
        warnings,
        ["checkpoints skip 1 file over checkpoints.max_file_bytes (10 bytes): big.bin"]
    );
    assert_eq!(store.looks(), 1, "the first checkpoint looked again");
    assert_eq!(
        paths(store, &first.tree).await,
        strings(&["a.txt", "new.txt"])
    );
    let a = shadow(store, &["cat-file", "-p", &format!("{}:a.txt", first.tree)]).await;
    assert_eq!(a, "later");

    let (again, warnings) = store.snapshot("s", Some(&first)).await.expect("again");
    assert_eq!(again, first);
    assert!(warnings.is_empty(), "named twice: {warnings:?}");
    assert_eq!(
        *warned.lock().expect("lock"),
        Vec::<String>::new(),
        "a warning of opening the store"
    );

    // What opening the store ahead had to say goes to the first caller, once.
    let mut nowhere = place.env();
    nowhere.remove("HOME");
    nowhere.remove("XDG_STATE_HOME");
    let off = Checkpoints::new(&place.ws(), &nowhere, &settings, &host_path(&nowhere))
        .ahead(&tokio::runtime::Handle::current());
    assert!(off.store(&warn).await.is_none());
    assert!(off.store(&warn).await.is_none());
    assert_eq!(
        *warned.lock().expect("lock"),
        ["checkpoints are off: no place for them (set HOME or XDG_STATE_HOME)"]
    );
}

/// Issue 32: a session's store grew without bound (42 MB after five turns). A store over
/// `max_store_bytes` is pruned; still over, the run takes no checkpoints and says why once.
#[tokio::test]
async fn a_store_over_its_bound_is_pruned_then_left_off_with_one_warning() {
    let place = Place::new();
    let warned = std::sync::Mutex::new(Vec::<String>::new());
    let warn = |line: &str| warned.lock().expect("lock").push(line.to_string());
    let first = Checkpoints::new(
        &place.ws(),
        &place.env(),
        &Settings::default(),
        &host_path(&place.env()),
    );
    let dir = first
        .store(&warn)
        .await
        .expect("a store")
        .dir()
        .to_path_buf();
    // 3 MB the store holds (a pack, say), that no prune can drop.
    let blob: String = (0..3_000_000u32)
        .map(|i| char::from(b'a' + (i.wrapping_mul(2_654_435_761) >> 27) as u8 % 26))
        .collect();
    write(&dir.join("git/objects/pack/held.pack"), &blob);
    let bounded = Settings {
        max_store_bytes: 1_000_000,
        ..Settings::default()
    };
    let over = Checkpoints::new(
        &place.ws(),
        &place.env(),
        &bounded,
        &host_path(&place.env()),
    );
    assert!(over.store(&warn).await.is_none());
    assert!(over.store(&warn).await.is_none());
    let lines = warned.lock().expect("lock").clone();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].starts_with("checkpoints are off this run: the store of this workspace takes 3."),
        "{lines:?}"
    );
    assert!(
        lines[0].contains("checkpoints.max_store_bytes (1.0 MB)"),
        "{lines:?}"
    );
    // Under the bound, as before.
    let under = Checkpoints::new(
        &place.ws(),
        &place.env(),
        &Settings::default(),
        &host_path(&place.env()),
    );
    assert!(under.store(&warn).await.is_some());
}

#[test]
fn safe_rel_takes_only_plain_relative_paths() {
    for ok in ["a", "a/b.txt", ".hidden", "a..b", "dir/.x/y"] {
        assert!(safe_rel(ok), "{ok} refused");
    }
    for bad in [
        "", "/a", "a//b", "./a", "a/./b", "../a", "a/..", "a/", "..", ".",
    ] {
        assert!(!safe_rel(bad), "{bad:?} taken");
    }
}

#[test]
fn ref_safe_keeps_uuids_and_replaces_everything_else() {
    let uuid = "0192f5a4-7b3c-7d1e-9f00-123456789abc";
    assert_eq!(ref_safe(uuid), uuid);
    assert_eq!(ref_safe("a/b c..d"), "a_b_c__d");
    assert_eq!(ref_safe("../x"), "___x");
    assert_eq!(ref_safe("é~^:"), "____");
}

#[test]
fn split_paths_splits_on_nul_and_skips_empty_items() {
    assert_eq!(
        split_paths(b"a\0b c\0\0d/e\0"),
        strings(&["a", "b c", "d/e"])
    );
    assert_eq!(split_paths(b"bad\xff\0"), strings(&["bad\u{fffd}"]));
    assert!(split_paths(b"").is_empty());
}

#[test]
fn plural_and_named_make_the_warnings_words() {
    assert_eq!(plural(1, "file"), "1 file");
    assert_eq!(plural(0, "file"), "0 files");
    assert_eq!(plural(1234, "file"), "1,234 files");
    assert_eq!(named(&strings(&["a", "b"])), "a, b");
    let seven = strings(&["a", "b", "c", "d", "e", "f", "g"]);
    assert_eq!(named(&seven), "a, b, c, d, e and 2 more");
    // A path is shown to a terminal: its control characters are not sent as they are.
    assert_eq!(named(&strings(&["x\x1b[2Jy"])), "x^[[2Jy");
}

#[test]
fn find_repo_names_the_top_folder_and_the_common_git_folder() {
    let place = Place::new();
    let ws = place.ws();
    assert_eq!(
        find_repo(&ws),
        None,
        "the temporary folder is in a repository"
    );

    place.write("sub/deep/f.txt", "f\n");
    commit_all(&ws);
    assert_eq!(find_repo(&ws), Some((ws.clone(), ws.join(".git"))));
    assert_eq!(
        find_repo(&ws.join("sub/deep")),
        Some((ws.clone(), ws.join(".git")))
    );

    // A linked worktree's objects and `info/exclude` are the main repository's.
    let linked = place.path().join("linked");
    user_git(
        &ws,
        &["worktree", "add", "-q", &linked.display().to_string()],
    );
    let (top, common) = find_repo(&linked.join("sub")).expect("a repository");
    assert_eq!(top, linked);
    assert_eq!(
        common.canonicalize().expect("common"),
        ws.join(".git").canonicalize().expect("git")
    );
}

#[test]
fn index_entries_and_signature_read_an_index_and_nothing_else() {
    let place = Place::new();
    let ws = place.ws();
    let index = ws.join(".git/index");
    assert_eq!(index_entries(&index), 0);
    assert_eq!(index_signature(&index), None);

    place.write("a", "a\n");
    place.write("b/c", "c\n");
    commit_all(&ws);
    assert_eq!(index_entries(&index), 2);
    let before = index_signature(&index).expect("signature");
    place.write("d", "d\n");
    user_git(&ws, &["add", "d"]);
    assert_eq!(index_entries(&index), 3);
    assert_ne!(index_signature(&index).expect("signature"), before);

    let junk = place.path().join("junk");
    std::fs::write(&junk, b"not an index at all").expect("write");
    assert_eq!(index_entries(&junk), 0);
}

#[test]
fn dir_size_counts_files_below_and_follows_no_link() {
    let place = Place::new();
    let big = place.path().join("big");
    std::fs::create_dir_all(&big).expect("mkdir");
    std::fs::write(big.join("f"), vec![7u8; 2 << 20]).expect("write");
    assert!(dir_size(&big, 0) >= 2 << 20);

    let ws = place.ws();
    std::os::unix::fs::symlink(&big, ws.join("link")).expect("symlink");
    assert!(dir_size(&ws, 0) < 1 << 20, "the link was followed");
    assert_eq!(dir_size(&place.path().join("missing"), 0), 0);
}

#[test]
fn root_is_below_the_state_folder() {
    let place = Place::new();
    assert_eq!(
        root(&place.env()),
        Some(place.path().join("state/hx/checkpoints"))
    );
    assert_eq!(root(&Env::new()), None);
}

#[tokio::test]
async fn forget_drops_the_refs_of_the_sessions_named_packed_or_loose_in_whichever_store() {
    let place = Place::new();
    place.write("a.txt", "one\n");
    let env = place.env();
    let git = git::Program::from_env(&env);
    let store = Store::open(&place.ws(), &env, &Settings::default(), &git)
        .await
        .expect("store opens")
        .unwatched();
    for (s, text) in [("s1", "1\n"), ("s2", "2\n"), ("s3", "3\n")] {
        place.write("a.txt", text);
        store.snapshot(s, None).await.expect("snapshot");
    }
    // A prune packs the refs; the next one is loose.
    store.prune(None).await.expect("prune");
    place.write("a.txt", "4\n");
    store.snapshot("s4", None).await.expect("s4");
    let ids = strings(&["s1", "s4", "never-had-any"]);
    assert_eq!(forget(&env, &ids, &git).await.expect("forget"), 2);
    let usage = store.usage(None).await;
    assert_eq!(usage.sessions, 2);
    // Nothing left to drop: no git runs, nothing said.
    assert_eq!(forget(&env, &ids, &git).await.expect("again"), 0);
}

/// A store made before issue 32 borrowed the repository's objects: opening it copies what its
/// checkpoints name into it and ends the borrowing, so a repository that loses its objects
/// afterwards takes nothing from the checkpoints.
#[tokio::test]
async fn a_store_that_borrowed_objects_keeps_its_own_copies_once_opened() {
    let place = Place::new();
    let ws = place.ws();
    place.write("a.txt", "alpha\n");
    commit_all(&ws);
    let tree = user_git(&ws, &["rev-parse", "HEAD^{tree}"]);
    let blob = user_git(&ws, &["rev-parse", "HEAD:a.txt"]);
    // The old store: the user's tree committed in a shadow that borrows its objects.
    let store = place.store().await;
    let git_dir = store.dir().join("git");
    drop(store);
    let old = tempfile::tempdir().expect("tempdir");
    let fresh = old.path().join("git");
    user_git(
        old.path(),
        &["init", "-q", "--bare", fresh.to_str().expect("utf-8")],
    );
    std::fs::remove_dir_all(&git_dir).expect("rm");
    std::fs::rename(&fresh, &git_dir).expect("mv");
    std::fs::write(
        git_dir.join("objects/info/alternates"),
        format!("{}\n", ws.join(".git/objects").display()),
    )
    .expect("alternates");
    let shadow_git = |args: &[&str]| {
        let mut all = vec!["--git-dir", git_dir.to_str().expect("utf-8")];
        all.extend_from_slice(args);
        user_git(old.path(), &all)
    };
    let commit = shadow_git(&["commit-tree", &tree, "-m", "old"]);
    shadow_git(&["update-ref", "refs/hx/old", &commit]);

    let store = place.store().await;
    assert!(!git_dir.join("objects/info/alternates").exists());
    drop(store);
    std::fs::remove_dir_all(ws.join(".git/objects")).expect("rm objects");
    assert_eq!(shadow_git(&["cat-file", "-p", &blob]), "alpha");
}

/// The store's size with what the last run recorded is what a count of every file finds,
/// whatever was added, removed or replaced since, in the folders recorded or new ones.
#[test]
fn the_store_size_with_its_record_is_the_size_a_full_count_finds() {
    let place = Place::new();
    let store = place.path().join("store");
    let blob = |n: usize| vec![1u8; n];
    for d in ["objects/aa", "objects/bb", "objects/pack"] {
        std::fs::create_dir_all(store.join(d)).expect("mkdir");
    }
    std::fs::write(store.join("objects/aa/1"), blob(10_000)).expect("write");
    std::fs::write(store.join("objects/bb/2"), blob(20_000)).expect("write");
    let recorded = |what: &str| {
        // The record itself is a file of the store; it is counted as it is now.
        let counted = store_size(&store);
        let full = dir_size(&store, 0);
        let record = std::fs::metadata(store.join("sizes")).map_or(0, |m| m.blocks() * 512);
        assert!(
            counted.abs_diff(full) <= record.max(4096),
            "{what}: {counted} against {full}"
        );
        full
    };
    recorded("first");
    recorded("nothing changed");
    std::fs::write(store.join("objects/aa/3"), blob(300_000)).expect("write");
    assert!(recorded("an object added") > 300_000);
    std::fs::write(store.join("objects/pack/held.pack"), blob(3_000_000)).expect("write");
    assert!(recorded("a pack added") > 3_000_000);
    std::fs::remove_file(store.join("objects/pack/held.pack")).expect("rm");
    assert!(recorded("a pack removed") < 3_000_000);
    std::fs::create_dir_all(store.join("objects/cc")).expect("mkdir");
    std::fs::write(store.join("objects/cc/4"), blob(500_000)).expect("write");
    recorded("a new folder");
    let tmp = store.join("objects/bb/tmp");
    std::fs::write(&tmp, blob(900_000)).expect("write");
    std::fs::rename(&tmp, store.join("objects/bb/2")).expect("mv");
    assert!(recorded("an object replaced") > 900_000);
    std::fs::write(store.join("sizes"), "garbage\n1 2\n").expect("write");
    recorded("a damaged record");
}
