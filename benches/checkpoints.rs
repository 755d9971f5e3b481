//! Checkpoints, measured on the library with real git.
//!
//! `cargo bench --bench checkpoints` makes a git repository of 10,000 files (100 folders of
//! 100, committed), opens its checkpoint store in a temporary state folder and prints medians
//! of:
//! - a checkpoint when nothing changed, the figure the issue bounds by 20 ms: in a run, where
//!   the watches (`checkpoint::watch`) tell that nothing changed without looking; and one
//!   that looks (the stat cache warm), as a run's first checkpoint does;
//! - a turn's checkpoint after it edited one file (the watches name it): the new blob, the
//!   two trees above it, the commit and the ref written, and the figures the trace shows
//!   (`1 file changed, +1 -1`) read back, which a run pays after each turn that edits;
//! - a rewind of 100 changed files, the whole of `hx rewind`'s work on them (the safety
//!   checkpoint, telling hx's changes from others', the restore, the checkpoint after), bound
//!   200 ms;
//! - the disk 100 unchanged checkpoints add to the store (bound 100 KB), and the store's
//!   size after the first checkpoint (a copy of every file: the store borrows nothing from
//!   the repository since issue 32).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use hx::app::rewind;
use hx::checkpoint::git::Program;
use hx::checkpoint::{Settings, Snap, Store};
use hx::session::{Checkpoint, CheckpointKind, CheckpointLine};

const FOLDERS: usize = 100;
const PER_FOLDER: usize = 100;
const RUNS: usize = 21;
const REWINDS: usize = 7;

/// CPU time of hx and of the git processes it waited for, in ms: what the machine spends,
/// whatever else runs on it (wall times on a loaded machine measure the others too).
fn cpu_ms() -> f64 {
    let mut total = 0.0;
    for who in [libc::RUSAGE_SELF, libc::RUSAGE_CHILDREN] {
        // SAFETY: getrusage fills the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        for t in [u.ru_utime, u.ru_stime] {
            total += t.tv_sec as f64 * 1e3 + t.tv_usec as f64 / 1e3;
        }
    }
    total
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).expect("comparable"));
    v[v.len() / 2]
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@b")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@b")
        .status()
        .expect("git")
        .success();
    assert!(ok, "git {args:?}");
}

/// The store of `ws` kept in `state`, with the default settings and the machine's git.
async fn open(ws: &Path, state: &Path) -> Store {
    let env = hx::paths::process_env();
    Store::open_at(
        ws,
        state,
        &env,
        &Settings::default(),
        &Program::from_env(&env),
    )
    .await
    .expect("store")
}

fn du(dir: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        match e.metadata() {
            Ok(m) if m.is_dir() => total += du(&e.path()),
            Ok(m) => total += m.blocks() * 512,
            Err(_) => {}
        }
    }
    total
}

fn line(n: Option<u32>, what: CheckpointKind, s: &Snap) -> Checkpoint {
    Checkpoint {
        line: CheckpointLine {
            n,
            what,
            commit: s.commit.clone(),
            tree: s.tree.clone(),
            at_message: 1,
            label: String::new(),
            at: String::new(),
        },
        conversation_ok: true,
    }
}

fn main() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("repo");
    for d in 0..FOLDERS {
        let dir = ws.join(format!("dir{d:03}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..PER_FOLDER {
            std::fs::write(
                dir.join(format!("file{f:03}.txt")),
                format!("folder {d} file {f}\nsome text to diff\n"),
            )
            .expect("write");
        }
    }
    git(&ws, &["init", "-q", "."]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "files"]);
    let state = root.path().join("state");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let store = open(&ws, &state).await;
        let t = Instant::now();
        let (first, _) = store.snapshot("bench", None).await.expect("first");
        let cold = t.elapsed().as_secs_f64() * 1e3;
        let after_first = du(&state);

        // As in a session: the next checkpoint comes seconds later, not in the same second.
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        // The files were written in the second the index was: git compares their content
        // until a look a second later writes the index again (settles it). A run's first
        // look does that once; what is measured below is the stat cache warm.
        let looking = open(&ws, &state).await
            .unwatched();
        looking.snapshot("bench", Some(&first)).await.expect("settle");
        store.snapshot("bench", Some(&first)).await.expect("watched");
        let looks = store.looks();
        let mut unchanged = Vec::new();
        let mut unchanged_cpu = Vec::new();
        for _ in 0..RUNS {
            let (t, c) = (Instant::now(), cpu_ms());
            let (s, _) = store.snapshot("bench", Some(&first)).await.expect("again");
            unchanged.push(t.elapsed().as_secs_f64() * 1e3);
            unchanged_cpu.push(cpu_ms() - c);
            assert_eq!(s, first, "nothing changed");
        }

        assert_eq!(store.looks(), looks, "unchanged checkpoints looked at the workspace");
        // What a run's first checkpoint costs, nothing changed since the last run's: a look
        // (a stat of every file, the untracked walk), the watches not set yet.
        let mut looked = Vec::new();
        let mut looked_cpu = Vec::new();
        for _ in 0..RUNS {
            let (t, c) = (Instant::now(), cpu_ms());
            let (s, _) = looking.snapshot("bench", Some(&first)).await.expect("look");
            looked.push(t.elapsed().as_secs_f64() * 1e3);
            looked_cpu.push(cpu_ms() - c);
            assert_eq!(s, first, "nothing changed");
        }

        let before = du(&state);
        for _ in 0..100 {
            store.snapshot("bench", Some(&first)).await.expect("again");
        }
        let added = du(&state).saturating_sub(before);

        let mut rewinds = Vec::new();
        let mut rewinds_cpu = Vec::new();
        let mut prev = first.clone();
        for round in 0..REWINDS {
            let (turn, _) = store.snapshot("bench", Some(&prev)).await.expect("turn");
            for f in 0..100 {
                let p = ws.join(format!("dir{:03}/file{f:03}.txt", f % FOLDERS));
                std::fs::write(&p, format!("changed in round {round}\n")).expect("write");
            }
            let (after, _) = store.snapshot("bench", Some(&turn)).await.expect("after");
            let cps = vec![
                line(Some(1), CheckpointKind::Turn, &turn),
                line(None, CheckpointKind::After, &after),
            ];
            tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
            let (t, c) = (Instant::now(), cpu_ms());
            let r = rewind::rewind_code(&store, "bench", &cps, 1, false)
                .await
                .unwrap_or_else(|e| panic!("rewind: {e}"));
            rewinds.push(t.elapsed().as_secs_f64() * 1e3);
            rewinds_cpu.push(cpu_ms() - c);
            assert_eq!(r.restored.written.len(), 100);
            prev = r.after;
        }

        let mut edited = Vec::new();
        let mut edited_cpu = Vec::new();
        let file = ws.join("dir007/file007.txt");
        // The first after the rewinds may look (a rewind's restore sets the watches again).
        let (settled, _) = store.snapshot("bench", Some(&prev)).await.expect("settled");
        prev = settled;
        let looks = store.looks();
        for i in 0..RUNS {
            std::fs::write(&file, format!("edited {i}\nsome text to diff\n")).expect("edit");
            let (t, c) = (Instant::now(), cpu_ms());
            let (after, _) = store.snapshot("bench", Some(&prev)).await.expect("edited");
            let changes = store.changes(&prev.tree, &after.tree).await.expect("changes");
            edited.push(t.elapsed().as_secs_f64() * 1e3);
            edited_cpu.push(cpu_ms() - c);
            assert_eq!((changes.paths.len(), changes.added), (1, 1));
            prev = after;
        }
        assert_eq!(store.looks(), looks, "the edits' checkpoints looked at the workspace");

        println!("checkpoints of a {}-file git repository", FOLDERS * PER_FOLDER);
        println!("  first checkpoint (cold index):        {cold:.1} ms");
        println!(
            "  unchanged checkpoint, median of {RUNS}:   {:.3} ms wall, {:.3} ms CPU (target < 20 ms)",
            median(unchanged),
            median(unchanged_cpu)
        );
        println!(
            "  unchanged checkpoint that looks (a run's first), median of {RUNS}: {:.1} ms wall, {:.1} ms CPU",
            median(looked),
            median(looked_cpu)
        );
        println!(
            "  a turn's checkpoint, one file edited, median of {RUNS}: {:.3} ms wall, {:.3} ms CPU",
            median(edited),
            median(edited_cpu)
        );
        println!(
            "  rewind of 100 changed files, median of {REWINDS}: {:.1} ms wall, {:.1} ms CPU (target < 200 ms)",
            median(rewinds),
            median(rewinds_cpu)
        );
        println!(
            "  disk added by 100 unchanged checkpoints: {} bytes (target < 100 KB)",
            added
        );
        println!("  store after the first checkpoint:      {} bytes", after_first);
    });
    if let Some(src) = std::env::var_os("HX_BENCH_CLONE") {
        rt.block_on(large_clone(Path::new(&src)));
    }
}

/// `HX_BENCH_CLONE=REPO`: the same unchanged checkpoints in a clone of a large repository
/// (the 50,000-file figure, bound 200 ms), cloned into a temporary folder.
async fn large_clone(src: &Path) {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("clone");
    let ok = Command::new("git")
        .args(["clone", "-q", "--no-hardlinks"])
        .arg(src)
        .arg(&ws)
        .status()
        .expect("git clone")
        .success();
    assert!(ok, "git clone {}", src.display());
    let files = String::from_utf8_lossy(
        &Command::new("git")
            .args(["ls-files", "-z"])
            .current_dir(&ws)
            .output()
            .expect("ls-files")
            .stdout,
    )
    .split('\0')
    .filter(|p| !p.is_empty())
    .count();
    let state = root.path().join("state");
    let store = open(&ws, &state).await;
    let t = Instant::now();
    let (first, _) = store.snapshot("bench", None).await.expect("first");
    let cold = t.elapsed().as_secs_f64() * 1e3;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let looking = open(&ws, &state).await.unwatched();
    looking
        .snapshot("bench", Some(&first))
        .await
        .expect("settle");
    let (mut looked, mut watched) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        let (s, _) = looking.snapshot("bench", Some(&first)).await.expect("look");
        looked.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(s, first, "nothing changed");
        let t = Instant::now();
        let (s, _) = store.snapshot("bench", Some(&first)).await.expect("again");
        watched.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(s, first, "nothing changed");
    }
    println!(
        "checkpoints of a clone of {} ({files} files)",
        src.display()
    );
    println!("  first checkpoint (cold index):        {cold:.1} ms");
    println!(
        "  unchanged checkpoint, median of {RUNS}:   {:.3} ms in a run (watched), {:.1} ms for a run's first (a look) (target < 200 ms)",
        median(watched),
        median(looked)
    );
}
