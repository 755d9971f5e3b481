//! `hx chat` in a real pseudo-terminal: typing, Ctrl keys, reading what the screen shows,
//! and the exit status. Every wait has a deadline (rexpect's timeout), never a fixed sleep.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use rexpect::process::WaitStatus;
use rexpect::reader::Options;
use rexpect::session::{spawn_with_options, PtySession};

use super::Hx;

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
        let options = Options::new()
            .timeout_ms(Some(TIMEOUT_MS))
            .strip_ansi_escape_codes(true);
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
        let rest = self.p.exp_eof().unwrap_or_default();
        self.seen.push_str(&rest);
        let deadline = Instant::now() + Duration::from_millis(TIMEOUT_MS);
        loop {
            match self.p.process().status() {
                Some(WaitStatus::Exited(_, code)) => return code,
                Some(WaitStatus::StillAlive) | None if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                other => panic!("hx did not exit normally: {other:?}\n{}", self.seen),
            }
        }
    }

    /// Sends hx a signal, as `kill` would.
    pub fn signal(&mut self, sig: rexpect::process::Signal) {
        self.p.process_mut().signal(sig).expect("signal hx");
    }
}
