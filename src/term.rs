//! What the user sees: the answer on stdout, everything else (traces, reasoning, warnings) on
//! stderr, colour only where it helps and never under `NO_COLOR` or `TERM=dumb`.
//!
//! Text from outside hx (command output, model text, hook output, file names, server errors)
//! can hold escape sequences that retitle, clear or reprogram the user's terminal, or hide what
//! a line says. Everything written to stderr, and to stdout when it is a terminal, goes through
//! [`escape_controls`] first; a piped stdout keeps the answer's exact bytes for the program
//! reading it.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::model::EventSink;
// The text helpers live in the leaf `text` module, so layers below the terminal can use them;
// they are re-exported here where callers expect them.
pub use crate::text::{collapse_whitespace, escape_controls, escape_line, one_line};

/// The process's terminal streams, shared by the parent agent, subagents and hooks. Writes
/// are whole lines under one lock so concurrent agents never interleave inside a line.
#[derive(Debug)]
pub struct Term {
    stderr_color: bool,
    stdout_tty: bool,
    lock: Mutex<()>,
}

impl Term {
    /// Detects terminals, `NO_COLOR` (any non-empty value disables colour) and `TERM=dumb` (a
    /// terminal that understands no escape codes).
    pub fn detect() -> Arc<Term> {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
        Arc::new(Term {
            stderr_color: !no_color && !dumb && std::io::stderr().is_terminal(),
            stdout_tty: std::io::stdout().is_terminal(),
            lock: Mutex::new(()),
        })
    }

    /// A terminal that is never treated as interactive (tests, benchmarks).
    pub fn plain() -> Arc<Term> {
        Arc::new(Term {
            stderr_color: false,
            stdout_tty: false,
            lock: Mutex::new(()),
        })
    }

    pub fn stdout_is_tty(&self) -> bool {
        self.stdout_tty
    }

    fn guard(&self) -> std::sync::MutexGuard<'_, ()> {
        // A panic elsewhere while printing must not silence all later output.
        self.lock.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One or more lines on stderr, control characters made visible. Write errors (a closed
    /// pipe) are ignored: losing a trace line must not fail the run.
    pub fn line(&self, text: &str) {
        self.err_raw(&format!("{text}\n"), false);
    }

    /// Lines on stderr, dimmed where colour is on.
    pub fn dim_line(&self, text: &str) {
        self.err_raw(&format!("{text}\n"), true);
    }

    /// Text on stderr (streamed reasoning or interim text), control characters made visible,
    /// dimmed if asked.
    pub fn err_raw(&self, text: &str, dim: bool) {
        let text = escape_controls(text);
        let _g = self.guard();
        let mut e = std::io::stderr().lock();
        let _ = if dim && self.stderr_color {
            // The reset goes before a final newline, so the dim never leaks to the next line.
            match text.strip_suffix('\n') {
                Some(t) => writeln!(e, "\x1b[2m{t}\x1b[0m"),
                None => write!(e, "\x1b[2m{text}\x1b[0m"),
            }
        } else {
            write!(e, "{text}")
        };
        let _ = e.flush();
    }

    /// Text on stdout, flushed (the streamed answer, a listing): exact when stdout is piped,
    /// control characters made visible on a terminal.
    pub fn out_raw(&self, text: &str) {
        let text = if self.stdout_tty {
            escape_controls(text)
        } else {
            Cow::Borrowed(text)
        };
        let _g = self.guard();
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "{text}");
        let _ = o.flush();
    }

    /// A line on stdout, as [`Term::out_raw`].
    pub fn out_line(&self, text: &str) {
        self.out_raw(&format!("{text}\n"));
    }
}

/// Renders the parent agent's streamed responses.
///
/// On a terminal the text streams to stdout as it arrives. When stdout is piped only the final
/// answer is printed (by the caller, once); text of turns that also call tools is interim and
/// goes to stderr at the end of its turn.
pub struct Renderer {
    term: Arc<Term>,
    show_reasoning: bool,
    /// This turn's text, held back when stdout is not a terminal.
    pending: String,
    streamed_any: bool,
    in_reasoning: bool,
    line_open: bool,
}

impl Renderer {
    pub fn new(term: Arc<Term>, show_reasoning: bool) -> Self {
        Renderer {
            term,
            show_reasoning,
            pending: String::new(),
            streamed_any: false,
            in_reasoning: false,
            line_open: false,
        }
    }

    /// Whether the final answer already reached stdout while streaming.
    pub fn streamed_answer(&self) -> bool {
        self.term.stdout_is_tty() && self.streamed_any
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            self.term.err_raw("\n", false);
            self.in_reasoning = false;
        }
    }
}

impl EventSink for Renderer {
    /// The turn is over. `has_tool_calls`: its text was interim, not the answer.
    fn turn_finished(&mut self, has_tool_calls: bool) {
        self.end_reasoning();
        if self.term.stdout_is_tty() {
            // Close the line now, before the hooks' lines (Stop) reach the same screen.
            if self.line_open {
                self.term.out_raw("\n");
            }
            if has_tool_calls {
                self.streamed_any = false;
            }
        } else if has_tool_calls && !self.pending.trim().is_empty() {
            self.term.line(self.pending.trim_end());
        }
        self.line_open = false;
        self.pending.clear();
    }
    fn text(&mut self, delta: &str) {
        self.end_reasoning();
        if self.term.stdout_is_tty() {
            self.term.out_raw(delta);
            self.streamed_any = true;
            self.line_open = !delta.ends_with('\n');
        } else {
            self.pending.push_str(delta);
        }
    }

    fn reasoning(&mut self, delta: &str) {
        if self.show_reasoning {
            self.in_reasoning = true;
            self.term.err_raw(delta, true);
        }
    }

    fn retrying(&mut self, attempt: u32, max: u32, delay: Duration, why: &str) {
        self.end_reasoning();
        if self.line_open {
            self.term.out_raw("\n");
        }
        let discarded = if self.streamed_any || self.line_open {
            "; the partial output above is discarded"
        } else {
            ""
        };
        self.term.line(&format!(
            "hx: {why}; retry {attempt}/{max} in {:.1} s{discarded}",
            delay.as_secs_f64()
        ));
        self.pending.clear();
        self.streamed_any = false;
        self.line_open = false;
    }
}
