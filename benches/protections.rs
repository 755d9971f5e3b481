//! What hx's protections cost a whole run: issue 33's table.
//!
//! `cargo bench --bench protections` runs whole `hx agent` processes against the scripted
//! fake server, with every protection on (the default), checkpoints off, the sandbox off, and
//! both off, the four alternating run by run (each round starting with the next) so that each
//! sees the same machine, and prints the median wall time of each, the ratio of the default to
//! both off (of the medians, and the median of each round's own ratio, with its least and
//! most), and the peak RSS of the default runs. Workloads, each in a folder that is not a
//! git repository and in one that is:
//! - one answer, no tool: start, one request, exit;
//! - 40 turns of read_file, edit_file, glob and bash, then an answer;
//! - one bash turn in a folder of 2,000 skill folders (not git only: the issue's figure);
//!
//! each also as a second run in the same workspace and home (the first, not timed, made the
//! checkpoint store), as most runs are. A workload's files are dated an hour back before
//! the first run, as a workspace's files mostly are when hx is started in it; and the first
//! run waits until its folders have not changed for [`SETTLED`], as a workspace's folders
//! mostly have not, once per round of the four settings.
//!
//! The timed run is started by this bench's own program, started afresh for it (`measure`):
//! a child's peak RSS counts what its parent had resident when it was made, and the bench's
//! own grew past hx's once it held a round's four workspaces.
//!
//! Then a second table: the kernel's part of what the protections add to a second run among
//! the 2,000 skill folders (a watch, the look's stats, the sandbox's stat of each folder),
//! each folder's system calls made by this program in a loop, beside the skills' discovery's
//! own listing and read of each folder: the floor under that workload's ratio.
//!
//! `HX_BENCH_RUNS=N` sets the runs of each (7), `HX_BENCH_ONLY=TEXT` keeps the workloads
//! whose name holds TEXT (`kernel`: the second table alone).
//!
//! Targets (issue 33): the one-answer run 15 ms or less with every protection on; 40 turns
//! and the 2,000-skill turn within 1.3× of both off; peak memory under 16 MiB.

#[path = "../tests/support/mod.rs"]
mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::procs::{median, wait_with_usage};
use support::{Call, FakeServer, Hx, Reply};

/// How long a folder must have been unchanged for a look to keep its listing
/// (`checkpoint::listings::SETTLED`, 3 s), and a little more.
const SETTLED: Duration = Duration::from_millis(3_200);

#[derive(Clone, Copy, PartialEq)]
enum Workload {
    OneAnswer,
    FortyTurns,
    Skills,
}

#[derive(Clone, Copy)]
struct Setting {
    name: &'static str,
    checkpoints: bool,
    sandbox: bool,
}

const SETTINGS: [Setting; 4] = [
    Setting {
        name: "default",
        checkpoints: true,
        sandbox: true,
    },
    Setting {
        name: "checkpoints off",
        checkpoints: false,
        sandbox: true,
    },
    Setting {
        name: "sandbox off",
        checkpoints: true,
        sandbox: false,
    },
    Setting {
        name: "both off",
        checkpoints: false,
        sandbox: false,
    },
];

const SKILLS: usize = 2_000;

fn replies(w: Workload) -> Vec<Reply> {
    let call = |i: usize, name: &str, args: &str| {
        Reply::tool_calls(vec![Call::new(&format!("call_{i}"), name, args)]).unpaced()
    };
    let mut out = Vec::new();
    match w {
        Workload::OneAnswer => {}
        Workload::FortyTurns => {
            for i in 0..39 {
                out.push(match i % 4 {
                    0 => call(i, "read_file", r#"{"path":"notes.txt"}"#),
                    1 => call(
                        i,
                        "edit_file",
                        &format!(
                            r#"{{"path":"src/main.rs","old_text":"step {}","new_text":"step {}"}}"#,
                            i / 4,
                            i / 4 + 1
                        ),
                    ),
                    2 => call(i, "glob", r#"{"pattern":"**/*.rs"}"#),
                    _ => call(i, "bash", r#"{"command":"ls src"}"#),
                });
            }
        }
        Workload::Skills => out.push(call(0, "bash", r#"{"command":"true"}"#)),
    }
    out.push(Reply::text("done").unpaced());
    out
}

fn prepare(hx: &mut Hx, w: Workload, git: bool, s: Setting) {
    let mut config = String::new();
    if !s.checkpoints {
        config.push_str("[checkpoints]\nenabled = false\n");
    }
    if !s.sandbox {
        config.push_str("[sandbox]\nmode = \"off\"\n");
    }
    if !config.is_empty() {
        hx.write_user_config("config.toml", &config);
    }
    match w {
        Workload::OneAnswer => {
            hx.write_file("README.md", "# a project\n");
        }
        Workload::FortyTurns => {
            hx.write_file("notes.txt", &"a line of notes\n".repeat(50));
            hx.write_file("src/main.rs", "fn main() {} // step 0\n");
            for i in 0..20 {
                hx.write_file(&format!("src/m{i}.rs"), "pub fn f() {}\n");
            }
        }
        Workload::Skills => {
            for i in 0..SKILLS {
                hx.write_file(
                    &format!(".agents/skills/skill-{i}/SKILL.md"),
                    &format!(
                        "---\nname: skill-{i}\ndescription: what skill {i} is for\n---\n\nThe rules of skill {i}.\n"
                    ),
                );
            }
        }
    }
    // The files are given a time an hour ago, as a workspace's are when hx first sees it:
    // written in the second the first run's index was, every one would be racily clean, and
    // the timed second run (within a second of it) would read them all back.
    backdate(hx.workspace());
    if git {
        let ws = hx.workspace().to_path_buf();
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@example.com",
                "commit",
                "-q",
                "-m",
                "start",
            ],
        ] {
            let ok = Command::new("git")
                .args(args)
                .current_dir(&ws)
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok, "git {args:?} failed");
        }
    }
    hx.args(["agent", "do the task"]);
}

/// Sets every file under `dir` to have been changed an hour ago.
fn backdate(dir: &Path) {
    let then = std::time::SystemTime::now() - Duration::from_secs(3600);
    let times = std::fs::FileTimes::new()
        .set_accessed(then)
        .set_modified(then);
    for entry in std::fs::read_dir(dir).expect("list the workspace") {
        let path = entry.expect("list the workspace").path();
        if path.is_dir() {
            backdate(&path);
        } else {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_times(times))
                .unwrap_or_else(|e| panic!("backdate {}: {e}", path.display()));
        }
    }
}

/// A workspace and home made for one timed run, and the server of its first run.
struct Ready {
    server: FakeServer,
    hx: Hx,
}

fn ready(w: Workload, git: bool, s: Setting) -> Ready {
    let server = FakeServer::start(replies(w));
    let mut hx = Hx::new(&server);
    // cargo gives its bench processes an LD_LIBRARY_PATH of build and toolchain folders,
    // which no installed hx sees: with it, every program a run execs (hx, its pod, bash,
    // git) searched some 40 folders for each library it loads.
    hx.env_remove("LD_LIBRARY_PATH");
    prepare(&mut hx, w, git, s);
    Ready { server, hx }
}

// The child is reaped by `wait4` (which also reports its peak RSS), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn run(ready: Ready, w: Workload, warm: bool, s: Setting) -> (Duration, i64, Duration, Hx) {
    let Ready { server, mut hx } = ready;
    // A second run in the workspace, as most are: the first (not timed) made the
    // checkpoint store and its stat cache; the files are put back as they were.
    let _warmed;
    if warm {
        let mut first = hx.command();
        first.stdout(Stdio::null()).stderr(Stdio::null());
        assert!(
            first.status().is_ok_and(|s| s.success()),
            "first run failed"
        );
        if w == Workload::FortyTurns {
            hx.write_file("src/main.rs", "fn main() {} // step 0\n");
        }
        let again = FakeServer::start(replies(w));
        hx.env("DEEPSEEK_BASE_URL", again.url());
        _warmed = again;
    }
    // Through this program, freshly started (see `measure`).
    let out = hx.workspace().with_file_name("measured");
    hx.program(std::env::current_exe().expect("the bench's own program"))
        .env(MEASURE, env!("CARGO_BIN_EXE_hx"))
        .env(MEASURE_OUT, &out);
    let mut cmd = hx.command();
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let status = cmd.status().expect("spawn the bench's measure");
    assert!(status.success(), "{} run failed", s.name);
    drop(server);
    let text = std::fs::read_to_string(&out).expect("what `measure` wrote");
    let n: Vec<u64> = text
        .split_whitespace()
        .map(|n| n.parse().expect("a number"))
        .collect();
    let rss = i64::try_from(n[2]).expect("KiB");
    // The workspace is removed at the end of the bench (see `main`).
    (
        Duration::from_nanos(n[0]),
        rss,
        Duration::from_nanos(n[1]),
        hx,
    )
}

/// Set to hx's program: this bench's own program, started with it, runs hx as it was asked
/// to run, and writes the run's wall time, CPU time (ns) and peak RSS (KiB) to the file
/// `MEASURE_OUT` names. A child's peak RSS counts what its parent had resident when it was
/// made, before its exec, and the bench grows past hx's own while it holds a round's four
/// workspaces; this program, just started, does not.
const MEASURE: &str = "BENCH_MEASURE_HX";
const MEASURE_OUT: &str = "BENCH_MEASURE_OUT";

// The child is reaped by `wait4` (which also reports its peak RSS), not by `Child::wait`.
#[allow(clippy::zombie_processes)]
fn measure(hx: std::ffi::OsString) -> ! {
    let out = std::env::var_os(MEASURE_OUT).expect("where to write");
    let mut cmd = Command::new(hx);
    cmd.args(std::env::args_os().skip(1))
        .env_remove(MEASURE)
        .env_remove(MEASURE_OUT);
    let start = Instant::now();
    let child = cmd.spawn().expect("spawn hx");
    let (code, cpu, rss) = wait_with_usage(child.id());
    let wall = start.elapsed();
    let line = format!("{} {} {rss}\n", wall.as_nanos(), cpu.as_nanos());
    std::fs::write(out, line).expect("write what was measured");
    std::process::exit(code)
}

/// Waits until what was written is on disk.
fn disk_settles() {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// CPU time of the calling thread.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the struct it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// The kernel's part of what the protections add to a second run among 2,000 skill folders,
/// each folder's system calls made here in a loop, with nothing of hx's around them: the
/// floor under the 2,000-skill ratio, beside what the skills' discovery itself asks of the
/// kernel for the same folders (both settings make it).
fn floor(runs: usize) {
    use rustix::fs::{inotify, openat, statat, AtFlags, Mode, OFlags, CWD};
    let root = tempfile::tempdir().expect("tempdir");
    let skills = root.path().join(".agents/skills");
    for i in 0..SKILLS {
        let dir = skills.join(format!("skill-{i}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let text = format!(
            "---\nname: skill-{i}\ndescription: what skill {i} is for\n---\n\nThe rules of skill {i}.\n"
        );
        std::fs::write(dir.join("SKILL.md"), text).expect("write");
    }
    disk_settles();
    let top = openat(
        CWD,
        &skills,
        OFlags::RDONLY | OFlags::DIRECTORY,
        Mode::empty(),
    )
    .expect("open the skills");
    let nofollow = AtFlags::SYMLINK_NOFOLLOW;
    let dir = |i: usize| format!("skill-{i}");
    let timed = |f: &mut dyn FnMut()| {
        let start = thread_cpu();
        f();
        thread_cpu() - start
    };
    let mut parts: [Vec<Duration>; 5] = Default::default();
    for _ in 0..runs {
        let watches = inotify::init(inotify::CreateFlags::CLOEXEC).expect("inotify");
        parts[0].push(timed(&mut || {
            for i in 0..SKILLS {
                let flags = hx::checkpoint::watch_flags();
                inotify::add_watch(&watches, skills.join(dir(i)), flags).expect("watch");
            }
        }));
        parts[1].push(timed(&mut || {
            for i in 0..SKILLS {
                let _ = statat(&top, dir(i), nofollow);
                let _ = statat(&top, format!("skill-{i}/SKILL.md"), nofollow);
            }
        }));
        parts[2].push(timed(&mut || {
            for i in 0..SKILLS {
                let _ = statat(&top, dir(i), nofollow);
            }
        }));
        parts[3].push(timed(&mut || {
            for i in 0..SKILLS {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW;
                let folder =
                    rustix::fs::open(skills.join(dir(i)), flags, Mode::empty()).expect("open");
                let _ = rustix::fs::fstat(&folder);
                let _ = statat(&folder, "SKILL.md", nofollow);
            }
        }));
        let mut dents = vec![std::mem::MaybeUninit::<u8>::uninit(); 32 * 1024];
        let mut bytes = Vec::new();
        parts[4].push(timed(&mut || {
            for i in 0..SKILLS {
                let folder = openat(
                    &top,
                    dir(i),
                    OFlags::RDONLY | OFlags::DIRECTORY,
                    Mode::empty(),
                )
                .expect("open");
                let mut entries = rustix::fs::RawDir::new(&folder, &mut dents);
                while entries.next().is_some() {}
                drop(folder);
                let file = openat(
                    &top,
                    format!("skill-{i}/SKILL.md"),
                    OFlags::RDONLY,
                    Mode::empty(),
                )
                .expect("open");
                bytes.clear();
                let _ = std::io::Read::read_to_end(&mut std::fs::File::from(file), &mut bytes);
            }
        }));
        // Closed while not timed: the kernel retires the watches after an RCU grace period.
        drop(watches);
    }
    let [watch, look, sandbox, before, skills_read] = parts.map(|p| ms(median(p)));
    println!();
    println!(
        "protections/the kernel's part of a second run among 2,000 skill folders: CPU ms of the thread that makes the calls, median of {runs}"
    );
    println!(
        "| a watch on each folder | the look's stat of each folder and its file | the same, each folder opened and closed | the sandbox's stat of each folder | the skills' discovery's listing and read of each |"
    );
    println!("| --- | --- | --- | --- | --- |");
    println!("| {watch} | {look} | {before} | {sandbox} | {skills_read} |");
}

fn main() {
    if let Some(hx) = std::env::var_os(MEASURE) {
        measure(hx);
    }
    // `cargo test --benches` runs this without --bench: keep that to one run each.
    let runs = if std::env::args().any(|a| a == "--bench") {
        std::env::var("HX_BENCH_RUNS")
            .ok()
            .and_then(|r| r.parse().ok())
            .unwrap_or(7)
    } else {
        1
    };
    let cases = [
        ("one answer, no tool", Workload::OneAnswer, false, false),
        (
            "one answer, no tool (git)",
            Workload::OneAnswer,
            true,
            false,
        ),
        (
            "one answer, second run (git)",
            Workload::OneAnswer,
            true,
            true,
        ),
        ("40 turns", Workload::FortyTurns, false, false),
        ("40 turns (git)", Workload::FortyTurns, true, false),
        (
            "40 turns, second run (git)",
            Workload::FortyTurns,
            true,
            true,
        ),
        (
            "one turn, 2,000 skill folders",
            Workload::Skills,
            false,
            false,
        ),
        (
            "one turn, 2,000 skill folders, second run",
            Workload::Skills,
            false,
            true,
        ),
    ];
    println!("protections/whole `hx agent` runs, median wall ms of {runs} (settings alternating)");
    println!(
        "| workload | {} | default / both off | the rounds' ratios: median (least to most) | CPU ms: default, both off | peak RSS: default, both off |",
        SETTINGS.map(|s| s.name).join(" | ")
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    // HX_BENCH_ONLY=TEXT: only the workloads whose name holds TEXT.
    let only = std::env::var("HX_BENCH_ONLY").unwrap_or_default();
    // Every workspace is removed at the end, none while runs are timed: after thousands of
    // files are removed, ext4 makes each new file look past the inodes freed in the last
    // few seconds (`recently_deleted`, under `__ext4_new_inode` in `perf`), and a file's
    // creation took up to 1 ms. hx's runs paid for the bench's removals, most the settings
    // that create files.
    let mut done = Vec::new();
    for (name, w, git, warm) in cases.into_iter().filter(|c| c.0.contains(only.as_str())) {
        let mut walls: Vec<Vec<Duration>> = vec![Vec::new(); SETTINGS.len()];
        let mut cpus: Vec<Vec<Duration>> = vec![Vec::new(); SETTINGS.len()];
        let mut rss = Vec::new();
        let mut rss_off = Vec::new();
        for r in 0..runs {
            let round: Vec<Ready> = SETTINGS.iter().map(|s| ready(w, git, *s)).collect();
            // The round's files go to disk before any run, as a workspace's made earlier
            // are, so that their writing does not fall on hx's runs either.
            disk_settles();
            if warm {
                std::thread::sleep(SETTLED);
            }
            // Each round starts with the next setting: the first run after the wait (or the
            // workspaces' making) is slower, whichever it is, and no setting always gets it.
            let mut round: Vec<(usize, Ready)> = round.into_iter().enumerate().collect();
            round.rotate_left(r % SETTINGS.len());
            for (i, ready) in round {
                let s = &SETTINGS[i];
                let (wall, peak, cpu, hx) = run(ready, w, warm, *s);
                done.push(hx);
                walls[i].push(wall);
                cpus[i].push(cpu);
                if i == 0 {
                    rss.push(peak);
                }
                if i == 3 {
                    rss_off.push(peak);
                }
            }
        }
        // Each round's own ratio too: its four runs follow each other within a second or
        // so, while the machine's speed drifts over minutes (both-off medians of one
        // workload moved from 35 to 57 ms within an hour here), which the ratio of the
        // medians takes in whole.
        let mut rounds: Vec<f64> = walls[0]
            .iter()
            .zip(&walls[3])
            .map(|(on, off)| on.as_secs_f64() / off.as_secs_f64())
            .collect();
        rounds.sort_by(f64::total_cmp);
        let medians: Vec<Duration> = walls.into_iter().map(median).collect();
        let cpu: Vec<Duration> = cpus.into_iter().map(median).collect();
        println!(
            "| {name} | {} | {:.2}× | {:.2}× ({:.2}× to {:.2}×) | {}, {} | {:.1} MiB, {:.1} MiB |",
            medians
                .iter()
                .map(|d| ms(*d))
                .collect::<Vec<_>>()
                .join(" | "),
            medians[0].as_secs_f64() / medians[3].as_secs_f64(),
            rounds[rounds.len() / 2],
            rounds[0],
            rounds[rounds.len() - 1],
            ms(cpu[0]),
            ms(cpu[3]),
            median(rss) as f64 / 1024.0,
            median(rss_off) as f64 / 1024.0
        );
    }
    if "the kernel's part".contains(only.as_str()) {
        floor(runs);
    }
}
