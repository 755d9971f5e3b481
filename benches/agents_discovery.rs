//! What 500 agent files and 500 command files add to start-up: generates them in a temp folder
//! (each agent like a file of a public collection: a description with an unquoted colon, a
//! comma list of Claude's tools, `model: sonnet`, a 6 KB body; each command with
//! `allowed-tools: Bash(git add:*), ...`, an `argument-hint: [message]` list, a `!`cmd`` span
//! and a 4 KB body), then times discovery plus what a run makes of it (the grouped warnings,
//! `task`'s list of types; the commands' warnings and the `/` listing of Tab and `/help`),
//! and prints the median and minimum wall time of each and of both; then the start of the real
//! binary (`hx context`) with and without them, with hx's cache of agent files warm (a second
//! start) and empty (the first start after every file changed). Run with
//! `cargo bench --bench agents_discovery`.

use std::time::{Duration, Instant};

const AGENTS: usize = 500;
const COMMANDS: usize = 500;
const RUNS: usize = 30;

fn main() -> std::io::Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join(".claude/agents");
    std::fs::create_dir_all(&root)?;
    let body = "You are an expert. When invoked: read, think, report.\n".repeat(110);
    for i in 0..AGENTS {
        std::fs::write(
            root.join(format!("agent-{i:03}.md")),
            format!(
                "---\nname: agent-{i:03}\ndescription: Use this agent when: the user asks for thing {i}, e.g. a review\ntools: Read, Write, Edit, Bash, Glob, Grep, WebSearch\nmodel: sonnet\ncolor: blue\n---\n{body}"
            ),
        )?;
    }
    let commands = tmp.path().join(".claude/commands");
    let body =
        "Look at the diff and write the message. Keep it short: one line, then why.\n".repeat(55);
    for i in 0..COMMANDS {
        let dir = commands.join(format!("group-{}", i % 10));
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join(format!("command-{i:03}.md")),
            format!(
                "---\nallowed-tools: Bash(git add:*), Bash(git status:*), Bash(git commit:*), Read\nargument-hint: [message]\ndescription: Create a git commit: number {i}\nmodel: claude-sonnet-4-0\n---\n## Context\n\n- Current git status: !`git status`\n\n$ARGUMENTS\n\n{body}"
            ),
        )?;
    }
    let cwd = tmp.path().join("src");
    std::fs::create_dir_all(&cwd)?;
    let home = tmp.path().join("home");
    // Files changed in the last seconds are never cached (`agents::cache`): wait as a
    // project's files, written before today's first start, would have.
    std::thread::sleep(std::time::Duration::from_secs(
        hx::agents::cache::RACY_SECS + 1,
    ));
    let cache_home = tmp.path().join("cache");
    let cache_file = cache_home.join("hx").join(hx::agents::cache::FILE_NAME);

    let agents = || {
        let d = hx::agents::discover(&cwd, Some(&home));
        let warnings = d.run_warnings();
        let listing = hx::agents::listing(&d.agents, hx::agents::LIST_BUDGET);
        (d, warnings, listing)
    };
    let commands = || {
        let found = hx::app::invoke::Invocables {
            commands: std::sync::Arc::new(hx::commands::discover(&cwd, Some(&home))),
            skills: Default::default(),
        };
        let warnings = found.commands.run_warnings();
        let listed = found.listed();
        (found, warnings, listed)
    };
    // One warm-up run so the page cache state matches a second start of hx.
    let (first, warnings, _) = agents();
    assert_eq!(first.agents.len(), AGENTS);
    assert!(first.broken.is_empty(), "{:?}", first.broken.first());
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    let (found, warnings, listed) = commands();
    assert_eq!(found.commands.commands.len(), COMMANDS);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(listed.len(), COMMANDS);
    assert_eq!(listed[0].hint.as_deref(), Some("[message]"));

    let time = |f: &dyn Fn()| -> Vec<Duration> {
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                f();
                start.elapsed()
            })
            .collect();
        times.sort();
        times
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let show = |what: &str, times: &[Duration]| {
        println!(
            "agents_discovery: {what}, {RUNS} runs: median {:.2} ms, min {:.2} ms",
            ms(times[RUNS / 2]),
            ms(times[0])
        )
    };
    let a = time(&|| {
        let (d, _, listing) = agents();
        assert_eq!(d.agents.len(), AGENTS);
        assert!(!listing.is_empty());
    });
    show(&format!("{AGENTS} agent files"), &a);
    let cached = || hx::agents::discover_cached(&cwd, Some(&home), Some(&cache_file));
    assert_eq!(cached().agents, first.agents);
    assert!(cache_file.is_file());
    let warm = time(&|| {
        let d = cached();
        let warnings = d.run_warnings();
        let listing = hx::agents::listing(&d.agents, hx::agents::LIST_BUDGET);
        assert_eq!(d.agents.len(), AGENTS);
        // The files' notes are said once per change of a file (2f246b9): the first read
        // said them, the cached ones say none.
        assert!(warnings.is_empty(), "{warnings:?}");
        assert!(!listing.is_empty());
    });
    show(&format!("{AGENTS} agent files, from hx's cache"), &warm);
    let c = time(&|| {
        let (found, _, listed) = commands();
        assert_eq!(found.commands.commands.len(), COMMANDS);
        assert_eq!(listed.len(), COMMANDS);
    });
    show(&format!("{COMMANDS} command files"), &c);
    let both = time(&|| {
        let _ = agents();
        let _ = commands();
    });
    show(
        &format!("{AGENTS} agent files and {COMMANDS} command files"),
        &both,
    );

    // What they add to the start of the real binary: `hx context` (the agent built as a run
    // builds it, its prompt printed, no request) here and in a project without them.
    let bare = tempfile::tempdir()?;
    let bare_cwd = bare.path().join("src");
    std::fs::create_dir_all(&bare_cwd)?;
    let start = |dir: &std::path::Path, empty_cache: bool| -> Vec<Duration> {
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                if empty_cache {
                    let _ = std::fs::remove_file(&cache_file);
                }
                let t = Instant::now();
                let out = std::process::Command::new(env!("CARGO_BIN_EXE_hx"))
                    .arg("context")
                    .current_dir(dir)
                    .env("HOME", &home)
                    .env("XDG_CACHE_HOME", &cache_home)
                    .env_remove("XDG_CONFIG_HOME")
                    .env_remove("XDG_STATE_HOME")
                    .output()
                    .expect("hx context");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                t.elapsed()
            })
            .collect();
        times.sort();
        times
    };
    let cold = start(&cwd, true);
    let with = start(&cwd, false);
    let without = start(&bare_cwd, false);
    let line = |what: &str, times: &[Duration]| {
        println!(
            "agents_discovery: hx context start to exit, {RUNS} runs: median {:.2} ms with the {AGENTS} agent files and {COMMANDS} command files, {what}, {:.2} ms without ({:+.2} ms)",
            ms(times[RUNS / 2]),
            ms(without[RUNS / 2]),
            ms(times[RUNS / 2]) - ms(without[RUNS / 2])
        )
    };
    line("the cache warm", &with);
    line("the cache empty at each start", &cold);
    Ok(())
}
