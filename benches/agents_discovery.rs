//! What 500 agent files add to start-up: generates them in a temp folder (each like a file of
//! a public collection: a description with an unquoted colon, a comma list of Claude's tools,
//! `model: sonnet`, a 6 KB body), then times discovery plus what a run makes of it (the grouped
//! warnings, `task`'s list of types), and prints the median and minimum wall time. Run with
//! `cargo bench --bench agents_discovery`.

use std::time::{Duration, Instant};

const AGENTS: usize = 500;
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
    let cwd = tmp.path().join("src");
    std::fs::create_dir_all(&cwd)?;
    let home = tmp.path().join("home");

    let startup = || {
        let d = hx::agents::discover(&cwd, Some(&home));
        let warnings = d.run_warnings();
        let listing = hx::agents::listing(&d.agents, hx::agents::LIST_BUDGET);
        (d, warnings, listing)
    };
    // One warm-up run so the page cache state matches a second start of hx.
    let (first, warnings, _) = startup();
    assert_eq!(first.agents.len(), AGENTS);
    assert!(first.broken.is_empty(), "{:?}", first.broken.first());
    assert_eq!(warnings.len(), 3, "{warnings:?}");

    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let (d, _, listing) = startup();
            let elapsed = start.elapsed();
            assert_eq!(d.agents.len(), AGENTS);
            assert!(!listing.is_empty());
            elapsed
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "agents_discovery: {AGENTS} agent files, {RUNS} runs: median {:.2} ms, min {:.2} ms",
        ms(times[RUNS / 2]),
        ms(times[0])
    );
    Ok(())
}
