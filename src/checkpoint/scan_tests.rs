use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::checkpoint::{Settings, Store};

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "git {args:?}");
}

/// Writes `p`, dated ten seconds back: a file written in the second a look's index is would
/// be racily clean, and, a second later, settled by a git look the tests do not expect
/// (`racily_clean_files_are_settled_by_one_git_look` makes that case on purpose). Its change
/// time is now, which any stat compares.
fn write(p: &Path, text: &str) {
    if let Some(d) = p.parent() {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(p, text).expect("write");
    date(
        p,
        std::time::SystemTime::now() - std::time::Duration::from_secs(10),
    );
}

/// Sets `p`'s modification time to `when`.
fn date(p: &Path, when: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("date {}: {e}", p.display()));
}

/// The store of `ws` kept in `state`, opened as a run opens it.
async fn open(ws: &Path, state: &Path, settings: &Settings) -> Store {
    let env = crate::paths::process_env();
    let program = crate::checkpoint::git::Program::from_env(&env);
    Store::open_at(ws, state, &env, settings, &program)
        .await
        .expect("store")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// The store's first look at `ws`, kept in `state`: made in-process, and the tree git's
/// first look makes in a store of its own (kept in `fresh`).
async fn first_look_as_gits(
    ws: &Path,
    state: &Path,
    fresh: &Path,
    settings: &Settings,
) -> crate::checkpoint::Snap {
    let first = open(ws, state, settings).await;
    let (snap, _) = first.snapshot("s", None).await.expect("first");
    assert_eq!(first.git_looks(), 0, "the first look is not hx's own");
    let theirs = open(ws, fresh, settings).await.first_look_by_git();
    let (looked, _) = theirs.snapshot("o", None).await.expect("git's first look");
    assert_eq!(theirs.git_looks(), 1);
    assert_eq!(snap.tree, looked.tree, "the first look: not git's tree");
    snap
}

/// A run's first checkpoint, in a workspace an earlier run looked at, is the walk's: it
/// starts no git (whatever changed between the runs, within what the walk can be sure of)
/// and makes exactly the tree git's look of the whole workspace makes.
#[test]
fn a_runs_first_look_in_process_makes_the_tree_gits_look_makes() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join("a.txt"), "a\n");
    write(&ws.join(".gitignore"), "*.log\n!keep.log\nbuild/\n");
    write(&ws.join("sub/.gitignore"), "*.tmp\n");
    write(&ws.join("sub/s.txt"), "s\n");
    write(&ws.join("src/deep/er/m.rs"), "fn main() {}\n");
    write(&ws.join("tracked.log"), "tracked though ignored\n");
    write(&ws.join("build/out.o"), "object\n");
    git(&ws, &["init", "-q", "."]);
    write(&ws.join(".git/info/exclude"), "secret.txt\n");
    git(&ws, &["add", "-A"]);
    git(&ws, &["add", "-f", "tracked.log"]);
    git(&ws, &["commit", "-qm", "files"]);
    write(&ws.join("vendor/lib/lib.rs"), "nested\n");
    git(&ws.join("vendor/lib"), &["init", "-q", "."]);
    // What the first look reads from each open folder: a link (taken as a link, not
    // followed), an executable file, an empty one, one over the size limit.
    std::os::unix::fs::symlink("src/deep", ws.join("to-deep")).expect("ln");
    // Dated back as `write` dates files: a link made in the second the index is would be
    // racily clean, and a run a second later would settle it with a git look.
    let back = rustix::fs::Timespec {
        tv_sec: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after the epoch")
            .as_secs() as i64
            - 10,
        tv_nsec: 0,
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        ws.join("to-deep"),
        &rustix::fs::Timestamps {
            last_access: back,
            last_modification: back,
        },
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    )
    .expect("date the link");
    write(&ws.join("src/run.sh"), "#!/bin/sh\n");
    std::fs::set_permissions(
        ws.join("src/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    write(&ws.join("empty.txt"), "");
    write(&ws.join("src/big.bin"), &"x".repeat(1500));
    let settings = Settings {
        max_file_bytes: 1000,
        ..Settings::default()
    };
    let rt = runtime();
    let state = root.path().join("state");
    rt.block_on(async {
        let first =
            first_look_as_gits(&ws, &state, &root.path().join("state-fresh"), &settings).await;
        let git_dir = open(&ws, &state, &settings).await.git.git_dir.clone();
        let listed = Command::new("git")
            .arg("--git-dir")
            .arg(&git_dir)
            .args(["ls-tree", "-r", &first.tree])
            .output()
            .expect("ls-tree");
        let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
        for (mode, path) in [
            ("120000", "to-deep"),
            ("100755", "src/run.sh"),
            ("100644", "empty.txt"),
        ] {
            assert!(
                listed
                    .lines()
                    .any(|l| l.starts_with(mode) && l.ends_with(&format!("\t{path}"))),
                "{path} as {mode} in:\n{listed}"
            );
        }
        assert!(!listed.contains("big.bin"), "over the limit:\n{listed}");
        type Change<'a> = (&'a str, Box<dyn Fn() + 'a>);
        let changes: Vec<Change> = vec![
            ("nothing", Box::new(|| {})),
            ("an edit", Box::new(|| write(&ws.join("a.txt"), "b\nc\n"))),
            (
                "a new file",
                Box::new(|| write(&ws.join("src/new.rs"), "new\n")),
            ),
            (
                "an ignored file",
                Box::new(|| write(&ws.join("x.log"), "log\n")),
            ),
            (
                "a file in an ignored folder",
                Box::new(|| write(&ws.join("build/more/x.o"), "o\n")),
            ),
            (
                "a file in a nested repository",
                Box::new(|| write(&ws.join("vendor/lib/new.rs"), "n\n")),
            ),
            (
                "a file a rule lets back",
                Box::new(|| write(&ws.join("keep.log"), "k\n")),
            ),
            (
                "a file a folder's rule ignores",
                Box::new(|| write(&ws.join("sub/x.tmp"), "t\n")),
            ),
            (
                "a file info/exclude ignores",
                Box::new(|| write(&ws.join("secret.txt"), "s\n")),
            ),
            (
                "a tracked file a rule ignores",
                Box::new(|| write(&ws.join("tracked.log"), "more\n")),
            ),
            (
                "a mode",
                Box::new(|| {
                    std::fs::set_permissions(
                        ws.join("a.txt"),
                        std::fs::Permissions::from_mode(0o755),
                    )
                    .expect("chmod")
                }),
            ),
            (
                "a link",
                Box::new(|| std::os::unix::fs::symlink("a.txt", ws.join("link")).expect("ln")),
            ),
            (
                "a file too large",
                Box::new(|| write(&ws.join("big.txt"), &"x".repeat(2000))),
            ),
            (
                "a rename in a folder",
                Box::new(|| {
                    std::fs::rename(ws.join("sub/s.txt"), ws.join("sub/t.txt")).expect("mv")
                }),
            ),
            (
                "a folder removed",
                Box::new(|| std::fs::remove_dir_all(ws.join("src/deep")).expect("rm")),
            ),
            (
                "a file made binary",
                Box::new(|| write(&ws.join("src/new.rs"), "\0bin")),
            ),
            (
                "a rule ignoring a folder with files taken",
                Box::new(|| write(&ws.join(".gitignore"), "*.log\n!keep.log\nbuild/\nsub/\n")),
            ),
            (
                "a file in it, taken before",
                Box::new(|| write(&ws.join("sub/t.txt"), "t2\n")),
            ),
            (
                "a new file in it",
                Box::new(|| write(&ws.join("sub/u.txt"), "u\n")),
            ),
        ];
        for (n, (what, change)) in changes.iter().enumerate() {
            change();
            // The same store as git would look at it: its index, without the tree that
            // lets a walk be sure of it.
            let copy = root.path().join(format!("state-{n}"));
            let copied = Command::new("cp").arg("-a").arg(&state).arg(&copy).status();
            assert!(copied.is_ok_and(|s| s.success()), "cp");
            std::fs::remove_file(copy.join("tree")).expect("rm tree");
            // A new run: a store opened again on the same state.
            let run = open(&ws, &state, &settings).await;
            let (here, _) = run.snapshot("s", None).await.expect("walk");
            assert_eq!(run.git_looks(), 0, "{what}: git looked");
            let other = open(&ws, &copy, &settings).await.unwatched();
            let (looked, _) = other.snapshot("o", None).await.expect("look");
            assert_eq!(other.git_looks(), 1);
            assert_eq!(
                here.tree, looked.tree,
                "{what}: not the tree git's look makes"
            );
        }
        // A prune packs every tree: the next run that finds a change reads the tree from
        // git's listing, and still makes no look. (The index's tree made a checkpoint of
        // the session the prune keeps: a git look just before.)
        std::fs::remove_file(state.join("tree")).expect("rm tree");
        let looked = open(&ws, &state, &settings).await;
        looked.snapshot("s", None).await.expect("look");
        assert_eq!(looked.git_looks(), 1);
        looked.prune(None).await.expect("prune");
        drop(looked);
        write(&ws.join("a.txt"), "after the prune\n");
        let run = open(&ws, &state, &settings).await;
        let (here, _) = run.snapshot("s", None).await.expect("walk");
        assert_eq!(run.git_looks(), 0, "after a prune: git looked");
        let copy = root.path().join("state-pruned");
        let copied = Command::new("cp").arg("-a").arg(&state).arg(&copy).status();
        assert!(copied.is_ok_and(|s| s.success()), "cp");
        std::fs::remove_file(copy.join("tree")).expect("rm tree");
        let other = open(&ws, &copy, &settings).await.unwatched();
        let (looked, _) = other.snapshot("o", None).await.expect("look");
        assert_eq!(
            here.tree, looked.tree,
            "after a prune: not the tree git's look makes"
        );
    });
}

/// A store opened on `state` as git's look would see it now: a copy without the tree that
/// lets a walk be sure of its index. The tree git's look makes there.
async fn gits_tree(ws: &Path, state: &Path, copy: &Path) -> String {
    let copied = Command::new("cp").arg("-a").arg(state).arg(copy).status();
    assert!(copied.is_ok_and(|s| s.success()), "cp");
    std::fs::remove_file(copy.join("tree")).expect("rm tree");
    let other = open(ws, copy, &Settings::default()).await.unwatched();
    let (looked, _) = other.snapshot("o", None).await.expect("look");
    assert_eq!(other.git_looks(), 1);
    looked.tree
}

/// What the walk cannot be sure of is git's to look at, and what it decides itself is what
/// git decides: each case a run apart from the last, the run's first checkpoint against
/// git's look of the same store.
#[test]
fn what_git_may_read_otherwise_is_left_to_git() {
    type Case = (&'static str, bool, fn(&Path));
    let cases: [Case; 6] = [
        ("a rule git and hx read alike", false, |ws| {
            write(&ws.join(".gitignore"), "*.tmp\n");
            write(&ws.join("y.tmp"), "ignored\n");
        }),
        ("a .git file that names nothing", true, |ws| {
            write(&ws.join("odd/.git"), "not a gitdir line\n");
            write(&ws.join("odd/b.txt"), "b\n");
        }),
        ("a .git folder without refs", true, |ws| {
            write(&ws.join("v/.git/HEAD"), "ref: refs/heads/main\n");
            std::fs::create_dir_all(ws.join("v/.git/objects")).expect("mkdir");
            write(&ws.join("v/f.txt"), "f\n");
        }),
        ("a .gitignore that is a link", true, |ws| {
            std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
            std::os::unix::fs::symlink("../shared-rules", ws.join("sub/.gitignore")).expect("ln");
            write(&ws.join("sub/x.log"), "taken by git\n");
        }),
        ("a pattern with braces", true, |ws| {
            write(&ws.join(".gitignore"), "*.{o,a}\n");
            write(&ws.join("x.o"), "taken by git\n");
        }),
        ("a rule that is not UTF-8", true, |ws| {
            std::fs::write(ws.join(".gitignore"), b"caf\xe9.txt\n").expect("write");
            let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
            std::fs::write(ws.join(name), "x").expect("write");
        }),
    ];
    let settings = Settings::default();
    let rt = runtime();
    for (what, to_git, change) in cases {
        let root = tempfile::tempdir().expect("tempdir");
        let ws = root.path().join("ws");
        write(&ws.join("a.txt"), "a\n");
        write(&ws.join("shared-rules"), "*.log\n");
        let state = root.path().join("state");
        rt.block_on(async {
            let first = open(&ws, &state, &settings).await;
            first.snapshot("s", None).await.expect("first");
            drop(first);
            change(&ws);
            let run = open(&ws, &state, &settings).await;
            let (here, _) = run.snapshot("s", None).await.expect("walk");
            assert_eq!(run.git_looks(), usize::from(to_git), "{what}");
            drop(run);
            let theirs = gits_tree(&ws, &state, &root.path().join("copy")).await;
            assert_eq!(here.tree, theirs, "{what}: not git's tree");
        });
    }
}

/// A workspace in a folder its repository ignores: git takes nothing new there, nor does
/// the walk, nor a turn; and a folder a rule came to ignore after its files were taken
/// keeps them, but a turn's new file in it is not taken.
#[test]
fn files_in_ignored_folders_are_left_out_as_git_leaves_them() {
    let root = tempfile::tempdir().expect("tempdir");
    let repo = root.path().join("repo");
    write(&repo.join(".gitignore"), "build/\n");
    write(&repo.join("build/ws/a.txt"), "a\n");
    write(&repo.join("build/ws/kept/k.txt"), "k\n");
    git(&repo, &["init", "-q", "."]);
    let ws = repo.join("build/ws");
    let settings = Settings::default();
    let rt = runtime();
    let state = root.path().join("state");
    rt.block_on(async {
        let first = open(&ws, &state, &settings).await;
        let (snap, _) = first.snapshot("s", None).await.expect("first");
        drop(first);
        write(&ws.join("new.txt"), "n\n");
        let run = open(&ws, &state, &settings).await;
        let (here, _) = run.snapshot("s", Some(&snap)).await.expect("walk");
        assert_eq!(run.git_looks(), 0);
        // A turn's new file, taken from the events.
        write(&ws.join("kept/turn.txt"), "t\n");
        let (turn, _) = run.snapshot("s", Some(&here)).await.expect("turn");
        assert_eq!(run.git_looks(), 0);
        drop(run);
        let theirs = gits_tree(&ws, &state, &root.path().join("copy")).await;
        assert_eq!(
            here.tree, turn.tree,
            "a file in an ignored folder was taken"
        );
        assert_eq!(turn.tree, theirs, "not git's tree");
    });
}

/// Files written in the second the index was stay racily clean until git writes it again,
/// which the walk never does: once the store's marker is a second old, one git look (its
/// refresh) ends that, and the runs after it read nothing again. A file dated in the future
/// is racily clean at any clock, which makes the case certain.
#[test]
fn racily_clean_files_are_settled_by_one_git_look() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join("a.txt"), "a\n");
    write(&ws.join("b.txt"), "b\n");
    let ahead = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
    date(&ws.join("a.txt"), ahead);
    let settings = Settings::default();
    let rt = runtime();
    let state = root.path().join("state");
    let run = |n: usize| {
        rt.block_on(async {
            let store = open(&ws, &state, &settings).await;
            let (snap, _) = store.snapshot("s", None).await.expect("checkpoint");
            (store.git_looks(), snap.tree, n)
        })
    };
    let (first, tree, _) = run(1);
    assert_eq!(first, 0, "a first run's look is hx's own");
    // The marker of an index changed a second ago.
    let marker = state.join("racy");
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(5);
    date(&marker, past);
    let (second, tree2, _) = run(2);
    assert_eq!(
        second, 1,
        "racy files, a second on: git's look settles them"
    );
    assert!(!marker.exists(), "the marker stayed");
    let (third, tree3, _) = run(3);
    assert_eq!(third, 0, "the run after the settling look asked git again");
    assert_eq!((&tree, &tree2), (&tree3, &tree3));
}

/// A tree of many folders, which both walkers share: the files changed and added across
/// it, and those a rule ignores, come out as git's look makes them, and the first look's
/// tree is git's too.
#[test]
fn the_walkers_of_a_wide_tree_find_what_git_finds() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join(".gitignore"), "*.tmp\nskip/\n");
    for i in 0..60 {
        for j in 0..5 {
            write(&ws.join(format!("d{i}/e{j}/f.txt")), &format!("{i} {j}\n"));
        }
        write(&ws.join(format!("d{i}/skip/x.txt")), "ignored folder\n");
    }
    let settings = Settings::default();
    let rt = runtime();
    let state = root.path().join("state");
    rt.block_on(async {
        let snap =
            first_look_as_gits(&ws, &state, &root.path().join("state-fresh"), &settings).await;
        for i in [0, 13, 27, 41, 59] {
            write(&ws.join(format!("d{i}/e2/f.txt")), "changed\n");
            write(&ws.join(format!("d{i}/e4/new.rs")), "new\n");
            write(&ws.join(format!("d{i}/e1/n.tmp")), "ignored\n");
        }
        let run = open(&ws, &state, &settings).await;
        let (here, _) = run.snapshot("s", Some(&snap)).await.expect("walk");
        assert_eq!(run.git_looks(), 0, "git looked");
        drop(run);
        let theirs = gits_tree(&ws, &state, &root.path().join("copy")).await;
        assert_eq!(here.tree, theirs, "not git's tree");
        assert_ne!(here.tree, snap.tree, "the changes were not taken");
    });
}

/// A folder whose stat is the one the last run's look listed it with is not listed again:
/// its listing is taken. One whose entries changed since is listed, and the tree is still
/// the one git's look makes.
#[test]
fn folders_unchanged_since_the_last_runs_look_are_not_listed_again() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join("a/x.txt"), "x\n");
    write(&ws.join("b/y.txt"), "y\n");
    write(&ws.join("c/d/z.txt"), "z\n");
    write(&ws.join("top.txt"), "t\n");
    // Listings are kept only of folders that have not changed for a while.
    std::thread::sleep(super::super::listings::SETTLED + std::time::Duration::from_millis(200));
    let settings = Settings::default();
    let state = root.path().join("state");
    let rt = runtime();
    rt.block_on(async {
        let first = first_look_as_gits(&ws, &state, &root.path().join("fresh"), &settings).await;
        assert!(state.join("folders").is_file(), "no listings kept");
        let again = open(&ws, &state, &settings).await;
        let (same, _) = again.snapshot("s", None).await.expect("look");
        assert_eq!(same.tree, first.tree);
        // The top, a, b, c and c/d.
        assert_eq!(again.listings_taken(), 5);
        drop(again);
        // Between runs: a file made in a, one removed from c/d; b and c unchanged.
        write(&ws.join("a/new.txt"), "n\n");
        std::fs::remove_file(ws.join("c/d/z.txt")).expect("rm");
        let copy = root.path().join("copy");
        let copied = Command::new("cp").arg("-a").arg(&state).arg(&copy).status();
        assert!(copied.is_ok_and(|s| s.success()), "cp");
        std::fs::remove_file(copy.join("tree")).expect("rm tree");
        let run = open(&ws, &state, &settings).await;
        let (here, _) = run.snapshot("s", None).await.expect("walk");
        assert_eq!(run.git_looks(), 0, "git looked");
        assert_eq!(run.listings_taken(), 3, "the top, b and c");
        let other = open(&ws, &copy, &settings).await.unwatched();
        let (looked, _) = other.snapshot("o", None).await.expect("look");
        assert_eq!(here.tree, looked.tree, "not the tree git's look makes");
        assert_ne!(here.tree, first.tree);
    });
}

/// The listings the sandbox's walk read at a run's start are the ones the run's first look
/// takes: the file is not read again (here it is gone by then). Listings read for another
/// work tree are not taken.
#[test]
fn the_first_look_takes_the_listings_the_sandboxs_walk_read() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join("a/x.txt"), "x\n");
    write(&ws.join("b/c/y.txt"), "y\n");
    std::thread::sleep(super::super::listings::SETTLED + std::time::Duration::from_millis(200));
    let settings = Settings::default();
    let state = root.path().join("state");
    let top = crate::paths::real_path(&ws).expect("real");
    let rt = runtime();
    rt.block_on(async {
        let first = first_look_as_gits(&ws, &state, &root.path().join("fresh"), &settings).await;
        let read = |top: &Path| crate::checkpoint::Kept::read(&state, top).expect("kept");
        for (kept, taken) in [(read(&top), 4), (read(&root.path().join("other")), 0)] {
            let listed = state.join("folders");
            let bytes = std::fs::read(&listed).expect("the listings");
            std::fs::remove_file(&listed).expect("rm");
            let run = open(&ws, &state, &settings).await;
            *run.kept.lock().expect("lock") = Some(kept);
            let (here, _) = run.snapshot("s", None).await.expect("look");
            assert_eq!(here.tree, first.tree);
            // The top, a, b and b/c.
            assert_eq!(run.listings_taken(), taken);
            std::fs::write(&listed, bytes).expect("put back");
        }
    });
}

/// A folder that held no folders when its listing was kept is stat'ed from the folder above
/// it, not opened: its files are held against the index through that folder, by the
/// folder's name and theirs. An unchanged file there is not found; one changed in place
/// (which leaves the folder's stat as it was) is; and a folder that gained a folder is
/// opened and listed again.
#[test]
fn a_kept_leaf_folders_files_are_stat_ed_from_the_folder_above() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    write(&ws.join("a/x.txt"), "x\n");
    write(&ws.join("b/y.txt"), "y\n");
    write(&ws.join("c/d/z.txt"), "z\n");
    std::thread::sleep(super::super::listings::SETTLED + std::time::Duration::from_millis(200));
    let settings = Settings::default();
    let state = root.path().join("state");
    let top = crate::paths::real_path(&ws).expect("real");
    runtime().block_on(async {
        first_look_as_gits(&ws, &state, &root.path().join("fresh"), &settings).await;
    });
    let walk = || {
        let listings = super::Listings::read(&state.join(super::super::listings::FILE));
        let index = super::super::index::read(&state.join("index")).expect("the index");
        let scan = super::Scan {
            top: &top,
            prefix: b"",
            rules: super::Rules {
                exclude: None,
                global: None,
            },
            max_files: 1_000,
            max_changed: super::MAX_CHANGED,
            listings: &listings,
            take: None,
        };
        let found = scan
            .walk(Some(&index), &mut super::Ignores::default(), None)
            .1;
        (found, listings.taken())
    };
    // The top, a, b, c and c/d, all taken; nothing found.
    assert_eq!(walk(), (super::Scanned::Changed(Vec::new(), false), 5));
    // Changed in place: b's stat is as it was, y.txt's is not.
    std::fs::write(ws.join("b/y.txt"), "y, changed\n").expect("write");
    // A folder made in a: a is listed again, and its new folder's file found.
    write(&ws.join("a/e/w.txt"), "w\n");
    let (found, taken) = walk();
    assert_eq!(
        found,
        super::Scanned::Changed(vec![b"a/e/w.txt".to_vec(), b"b/y.txt".to_vec()], false)
    );
    assert_eq!(taken, 4, "the top, b, c and c/d");
}
