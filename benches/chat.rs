//! How soon `hx chat` is ready for typing: the real binary is started in a pseudo-terminal in
//! a project with 2,000 skills, and the clock stops when its prompt appears on the terminal.
//! Prints the median and the minimum of several starts, and the same for a project without
//! skills for comparison. Run with `cargo bench --bench chat`.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use rexpect::reader::Options;
use rexpect::session::spawn_with_options;
use support::Hx;

const SKILLS: usize = 2_000;
const RUNS: usize = 15;
const PROMPT: &str = "hx> ";

fn main() {
    let mut with_skills = Hx::new_offline();
    with_skills.arg("chat");
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
    bare.arg("chat");

    for (name, hx) in [("2,000 skills", &with_skills), ("no skills", &bare)] {
        // One start first, so the page cache is as warm as on a second start of hx.
        ready_after(hx);
        let mut times: Vec<Duration> = (0..RUNS).map(|_| ready_after(hx)).collect();
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "chat: start to prompt, {name}, {RUNS} runs: median {:.1} ms, min {:.1} ms",
            ms(times[RUNS / 2]),
            ms(times[0])
        );
    }
}

/// Starts hx chat, waits for its prompt, then leaves with Ctrl-D; the time to the prompt.
fn ready_after(hx: &Hx) -> Duration {
    let options = Options::new()
        .timeout_ms(Some(20_000))
        .strip_ansi_escape_codes(true);
    let start = Instant::now();
    let mut p = spawn_with_options(hx.terminal_command(), options).expect("start hx");
    // rexpect's own waits poll every 100 ms, too coarse to time: read what has arrived in a
    // tight loop instead.
    let mut seen = String::new();
    while !seen.contains(PROMPT) {
        match p.try_read() {
            Some(c) => seen.push(c),
            None => {
                assert!(
                    start.elapsed() < Duration::from_secs(20),
                    "no prompt: {seen}"
                );
                std::thread::sleep(Duration::from_micros(100));
            }
        }
    }
    let elapsed = start.elapsed();
    p.send_control('d').expect("Ctrl-D");
    p.exp_eof().expect("hx exits");
    elapsed
}
