//! Discovery cost with 2,000 skills: generates them in a temp folder, runs discovery
//! repeatedly and prints the median and minimum wall time (no criterion: a plain main keeps
//! the dependency list short). Run with `cargo bench --bench skills_discovery`.

use std::time::{Duration, Instant};

const SKILLS: usize = 2_000;
const RUNS: usize = 30;

fn main() -> std::io::Result<()> {
    let tmp = tempfile::tempdir()?;
    let root = tmp.path().join(".agents/skills");
    for i in 0..SKILLS {
        let dir = root.join(format!("skill-{i:04}"));
        std::fs::create_dir_all(&dir)?;
        // A realistic file: frontmatter with a block scalar, then a body discovery must skip.
        let body = "Step one. Step two.\n".repeat(200);
        std::fs::write(
            dir.join("SKILL.md"),
            format!(
                "---\nname: skill-{i:04}\ndescription: >\n  Skill number {i}. Use when: the user asks\n  for thing {i}.\nlicense: MIT\n---\n{body}"
            ),
        )?;
    }
    let cwd = tmp.path().join("src");
    std::fs::create_dir_all(&cwd)?;
    let home = tmp.path().join("home");

    // One warm-up run so the page cache state matches a second start of hx.
    let first = hx::skills::discover(&cwd, Some(&home));
    assert_eq!(first.registry.len(), SKILLS);
    assert!(first.warnings.is_empty(), "{:?}", first.warnings.first());

    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            let d = hx::skills::discover(&cwd, Some(&home));
            let elapsed = start.elapsed();
            assert_eq!(d.registry.len(), SKILLS);
            elapsed
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "skills_discovery: {SKILLS} skills, {RUNS} runs: median {:.2} ms, min {:.2} ms",
        ms(times[RUNS / 2]),
        ms(times[0])
    );
    Ok(())
}
