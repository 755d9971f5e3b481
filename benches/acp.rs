//! How soon `hx acp` has a session ready: the real binary started over pipes in a project with
//! 2,000 skills, the clock running from the `initialize` request to the answer to
//! `session/new` (config loaded, key checked, session file created; the agent's build, with
//! the skills, goes on behind it, as in `hx chat`), and on to the answer of a first prompt
//! against the fake server on loopback (which waits for that build). Prints the medians and
//! minimums of several starts, and the same for a project without skills. Target: under
//! 20 ms from initialize to session/new with 2,000 skills. Run with `cargo bench --bench acp`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::acp::Acp;
use support::{FakeServer, Hx, Reply};

const SKILLS: usize = 2_000;
const RUNS: usize = 15;

fn main() {
    let server = FakeServer::start_with(|_| Reply::text("ok").unpaced());
    let mut with_skills = Hx::new(&server);
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
    let mut bare = Hx::new(&server);
    bare.arg("acp");
    for (name, hx) in [("2,000 skills", &with_skills), ("no skills", &bare)] {
        // One start first, so the page cache is as warm as on a second start of hx.
        ready_after(hx);
        let runs: Vec<[Duration; 3]> = (0..RUNS).map(|_| ready_after(hx)).collect();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let stat = |i: usize| {
            let mut v: Vec<Duration> = runs.iter().map(|r| r[i]).collect();
            v.sort();
            format!("median {:.1} ms, min {:.1} ms", ms(v[RUNS / 2]), ms(v[0]))
        };
        println!(
            "acp, {name}, {RUNS} runs: initialize to session/new answered {}; process start to \
             session/new answered {}; initialize to a first prompt answered {}",
            stat(0),
            stat(1),
            stat(2)
        );
    }
}

/// [initialize sent → session/new answered, process started → session/new answered,
/// initialize sent → a first prompt answered].
fn ready_after(hx: &Hx) -> [Duration; 3] {
    let started = Instant::now();
    let mut acp = Acp::start(hx);
    let asked = Instant::now();
    acp.initialize();
    let sid = acp.new_session(hx.workspace());
    let ready = Instant::now();
    let id = acp.prompt(&sid, "hi");
    let answer = acp.response(id);
    assert!(answer.get("error").is_none(), "{answer}");
    let answered = Instant::now();
    let (code, _, stderr) = acp.finish();
    assert_eq!(code, Some(0), "{stderr}");
    [ready - asked, ready - started, answered - asked]
}
