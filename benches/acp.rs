//! How soon `hx acp` has a session ready: the real binary started over pipes in a project with
//! 2,000 skills, the clock running from the `initialize` request to the answer to
//! `session/new` (the agent built: skills read, catalog made, session file created), and from
//! the process's start to that answer. Prints the medians and minimums of several starts,
//! and the same for a project without skills. Target: under 20 ms from initialize with 2,000
//! skills. Run with `cargo bench --bench acp`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::acp::Acp;
use support::Hx;

const SKILLS: usize = 2_000;
const RUNS: usize = 15;

fn main() {
    let mut with_skills = Hx::new_offline();
    with_skills.arg("acp");
    for i in 0..SKILLS {
        with_skills.write_file(
            &format!(".agents/skills/skill-{i:04}/SKILL.md"),
            &format!(
                "---\nname: skill-{i:04}\ndescription: >\n  Skill number {i}. Use when: the user asks\n  for thing {i}.\n---\n{}",
                "Step one. Step two.\n".repeat(200)
            ),
        );
    }
    let mut bare = Hx::new_offline();
    bare.arg("acp");
    for (name, hx) in [("2,000 skills", &with_skills), ("no skills", &bare)] {
        // One start first, so the page cache is as warm as on a second start of hx.
        ready_after(hx);
        let mut runs: Vec<(Duration, Duration)> = (0..RUNS).map(|_| ready_after(hx)).collect();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        runs.sort_by_key(|r| r.0);
        let (init_median, init_min) = (runs[RUNS / 2].0, runs[0].0);
        runs.sort_by_key(|r| r.1);
        let (start_median, start_min) = (runs[RUNS / 2].1, runs[0].1);
        println!(
            "acp: initialize to a ready session/new, {name}, {RUNS} runs: median {:.1} ms, min {:.1} ms; \
             from the process's start: median {:.1} ms, min {:.1} ms",
            ms(init_median),
            ms(init_min),
            ms(start_median),
            ms(start_min)
        );
    }
}

/// (initialize sent → session/new answered, process started → session/new answered).
fn ready_after(hx: &Hx) -> (Duration, Duration) {
    let started = Instant::now();
    let mut acp = Acp::start(hx);
    let asked = Instant::now();
    acp.initialize();
    acp.new_session(hx.workspace());
    let done = Instant::now();
    let (code, _, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    (done - asked, done - started)
}
