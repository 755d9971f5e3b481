//! hx in a real pseudo-terminal: `hx chat` (typing, Ctrl keys, reading what the screen
//! shows, the exit status), and any run of hx that needs a terminal, to its end. Every wait
//! has a deadline (rexpect's timeout), never a fixed sleep.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rexpect::error::Error;
use rexpect::process::{Signal, WaitStatus};
use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};

use super::{Hx, Run};

/// The prompt hx chat shows.
pub const PROMPT: &str = "hx> ";
/// How long any one expected output may take before the test fails.
const TIMEOUT_MS: u64 = 20_000;

pub struct Chat {
    pub p: PtySession,
    /// Everything read from the terminal so far, for failure messages and counts.
    pub seen: String,
}

impl Chat {
    /// Starts `hx` with the prepared arguments in a new terminal and waits for its prompt.
    pub fn start(hx: &Hx) -> Chat {
        let mut chat = Chat::spawn(hx);
        chat.expect(PROMPT);
        chat
    }

    /// Starts `hx` with the prepared arguments in a new terminal.
    pub fn spawn(hx: &Hx) -> Chat {
        Chat::spawn_with(hx, true)
    }

    /// As [`Chat::start`], keeping every escape code hx writes in what is read.
    pub fn start_raw(hx: &Hx) -> Chat {
        let mut chat = Chat::spawn_with(hx, false);
        chat.expect(PROMPT);
        chat
    }

    fn spawn_with(hx: &Hx, strip: bool) -> Chat {
        let options = Options::new()
            .timeout_ms(Some(TIMEOUT_MS))
            .strip_ansi_escape_codes(strip);
        let p = spawn_with_options(hx.terminal_command(), options).expect("start hx in a pty");
        Chat {
            p,
            seen: String::new(),
        }
    }

    /// Waits for `text` on the terminal; returns what came before it.
    pub fn expect(&mut self, text: &str) -> String {
        match self.p.exp_string(text) {
            Ok(before) => {
                self.seen.push_str(&before);
                self.seen.push_str(text);
                before
            }
            Err(e) => panic!(
                "waiting for {text:?}: {e}\n--- seen so far ---\n{}\n---",
                self.seen
            ),
        }
    }

    /// Everything the terminal shows during the next `window`: for what must not appear in
    /// it.
    pub fn read_for(&mut self, window: Duration) -> String {
        let deadline = Instant::now() + window;
        let mut shown = String::new();
        while Instant::now() < deadline {
            match self.p.try_read() {
                Some(c) => shown.push(c),
                None => std::thread::sleep(Duration::from_millis(10)),
            }
        }
        self.seen.push_str(&shown);
        shown
    }

    /// Sends `keys` as typed (Tab, an escape sequence, a line's end as `\r`), at once.
    pub fn keys(&mut self, keys: &str) {
        self.p.send(keys).expect("type");
        self.p.flush().expect("flush");
    }

    /// Types `line` and presses Enter.
    pub fn type_line(&mut self, line: &str) {
        self.p.send(line).expect("type");
        self.p.send("\r").expect("enter");
        self.p.flush().expect("flush");
    }

    /// Types a message and waits for the prompt to come back after its turn.
    pub fn say(&mut self, line: &str) -> String {
        self.type_line(line);
        self.expect(PROMPT)
    }

    pub fn ctrl(&mut self, c: char) {
        self.p.send_control(c).expect("send a control key");
    }

    /// Waits for hx to end; its exit code (panics when a signal ended it).
    pub fn exit_code(mut self) -> i32 {
        match self.wait() {
            WaitStatus::Exited(_, code) => code,
            other => panic!("hx did not exit normally: {other:?}\n{}", self.seen),
        }
    }

    /// Waits for hx to end, reading what it still shows; how it ended (panics if it still
    /// runs after the timeout).
    pub fn wait(&mut self) -> WaitStatus {
        let rest = self.p.exp_eof().unwrap_or_default();
        self.seen.push_str(&rest);
        let deadline = Instant::now() + Duration::from_millis(TIMEOUT_MS);
        loop {
            match self.p.process().status() {
                Some(WaitStatus::StillAlive) | None if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Some(WaitStatus::StillAlive) | None => {
                    panic!("hx did not end within {TIMEOUT_MS} ms\n{}", self.seen)
                }
                Some(status) => return status,
            }
        }
    }

    /// Sends hx a signal, as `kill` would.
    pub fn signal(&mut self, sig: rexpect::process::Signal) {
        self.p.process_mut().signal(sig).expect("signal hx");
    }
}

/// Runs the prepared hx on a terminal of its own, to its end, as `Hx::run` does with pipes:
/// `stdout` is everything the terminal showed (stdout and stderr share it; lines end in
/// `\r\n`, escape codes kept), `stderr` is empty. Panics, showing the screen so far, if hx
/// outlives the runner's time limit.
pub fn run_on_terminal(hx: &Hx) -> Run {
    let limit = hx.time_limit();
    let options = Options::new()
        .timeout_ms(Some(limit.as_millis() as u64))
        .strip_ansi_escape_codes(false);
    let start = Instant::now();
    let mut p = spawn_with_options(hx.terminal_command(), options).expect("start hx in a pty");
    let (shown, timed_out) = match p.exp_eof() {
        Ok(shown) => (shown, false),
        Err(Error::Timeout { got, .. }) => (got, true),
        Err(e) => panic!("reading hx's terminal: {e}"),
    };
    let mut status = None;
    if timed_out {
        let _ = p.process_mut().signal(Signal::SIGKILL);
    }
    // The terminal is closed once hx and everything it started let go of it; hx itself may
    // take a moment longer to be reaped.
    while Instant::now() < start + limit + Duration::from_secs(5) {
        match p.process().status() {
            Some(WaitStatus::StillAlive) | None => std::thread::sleep(Duration::from_millis(10)),
            ended => {
                status = ended;
                break;
            }
        }
    }
    // rexpect hands each byte on as the char of the same number; the terminal got UTF-8.
    let bytes: Vec<u8> = shown.chars().map(|c| c as u32 as u8).collect();
    let run = Run {
        code: match status {
            Some(WaitStatus::Exited(_, code)) => Some(code),
            _ => None,
        },
        signal: match status {
            Some(WaitStatus::Signaled(_, sig, _)) => Some(sig as i32),
            _ => None,
        },
        stdout: String::from_utf8_lossy(&bytes).into_owned(),
        stderr: String::new(),
        timed_out,
        elapsed: start.elapsed(),
    };
    assert!(
        !timed_out,
        "hx did not finish within {limit:?} on a terminal; killed.\n{}",
        run.dump()
    );
    run
}
