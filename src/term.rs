//! What the user sees: the answer on stdout, everything else (traces, reasoning, warnings) on
//! stderr, colour only where it helps and never under `NO_COLOR`.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::model::EventSink;

/// The process's terminal streams, shared by the parent agent, subagents and hooks. Writes
/// are whole lines under one lock so concurrent agents never interleave inside a line.
#[derive(Debug)]
pub struct Term {
    stderr_color: bool,
    stdout_tty: bool,
    lock: Mutex<()>,
}

impl Term {
    /// Detects terminals and `NO_COLOR` (any non-empty value disables colour).
    pub fn detect() -> Arc<Term> {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Arc::new(Term {
            stderr_color: !no_color && std::io::stderr().is_terminal(),
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

    /// One or more lines on stderr. Write errors (a closed pipe) are ignored: losing a trace
    /// line must not fail the run.
    pub fn line(&self, text: &str) {
        let _g = self.guard();
        let mut e = std::io::stderr().lock();
        let _ = writeln!(e, "{text}");
    }

    /// Lines on stderr, dimmed where colour is on.
    pub fn dim_line(&self, text: &str) {
        if self.stderr_color {
            self.line(&format!("\x1b[2m{text}\x1b[0m"));
        } else {
            self.line(text);
        }
    }

    /// Raw text on stderr (streamed reasoning or interim text), dimmed if asked.
    pub fn err_raw(&self, text: &str, dim: bool) {
        let _g = self.guard();
        let mut e = std::io::stderr().lock();
        let _ = if dim && self.stderr_color {
            write!(e, "\x1b[2m{text}\x1b[0m")
        } else {
            write!(e, "{text}")
        };
        let _ = e.flush();
    }

    /// Raw text on stdout, flushed (the streamed answer).
    pub fn out_raw(&self, text: &str) {
        let _g = self.guard();
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "{text}");
        let _ = o.flush();
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

/// Every run of whitespace (newlines included) as one space, trimmed: error messages and
/// descriptions shown on one line.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Cuts text to one line of at most `max` characters, marking the cut with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| {
            if c == '\n' || c == '\r' || c == '\t' {
                ' '
            } else {
                c
            }
        })
        .collect();
    if flat.chars().count() > max {
        let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        flat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_whitespace_joins_runs() {
        assert_eq!(collapse_whitespace("  a\n\tb   c \r\n"), "a b c");
    }

    #[test]
    fn one_line_flattens_and_cuts() {
        assert_eq!(one_line("a\nb", 10), "a b");
        assert_eq!(one_line("abcdef", 4), "abc…");
        assert_eq!(one_line("ééééé", 5), "ééééé");
    }
}
