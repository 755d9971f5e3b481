//! What the user sees: the answer on stdout, everything else (traces, reasoning, warnings) on
//! stderr, colour only where it helps and never under `NO_COLOR` or `TERM=dumb`.
//!
//! Text from outside hx (command output, model text, hook output, file names, server errors)
//! can hold escape sequences that retitle, clear or reprogram the user's terminal, or hide what
//! a line says. Everything written to stderr, and to stdout when it is a terminal, goes through
//! [`escape_controls`] first; a piped stdout keeps the answer's exact bytes for the program
//! reading it.
//!
//! While the user waits (for the model, for a slow tool) a [`Spinner`] line with the elapsed
//! seconds may stand at the bottom of a terminal; every write here erases it first, so it never
//! mixes with real output.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

// The text helpers live in the leaf `text` module, so layers below the terminal can use them;
// they are re-exported here where callers expect them.
pub use crate::text::{collapse_whitespace, escape_controls, escape_line, one_line};

/// The process's terminal streams, shared by the parent agent, subagents and hooks. Writes
/// are whole lines under one lock so concurrent agents never interleave inside a line.
#[derive(Debug)]
pub struct Term {
    stderr_color: bool,
    stdout_tty: bool,
    screen: Arc<Screen>,
}

/// What is on the terminal right now, behind the one lock every write takes.
#[derive(Debug, Default)]
struct Screen {
    state: Mutex<ScreenState>,
    /// Wakes the spinner's thread when something starts to wait.
    wake: Condvar,
}

#[derive(Debug)]
struct ScreenState {
    /// Nothing was written since the last newline: a spinner line may go here.
    at_line_start: bool,
    /// A spinner line is on the screen (and must be erased before anything else is written).
    drawn: bool,
    /// What the user is waiting for, oldest first; the spinner shows the oldest.
    waits: Vec<Wait>,
    next_wait: u64,
    ticker_started: bool,
    /// Something else has the bottom line (a question being asked): no spinner meanwhile.
    held: u32,
    /// Where text goes instead of the streams while a line editor's prompt has the bottom
    /// line (see [`Term::route`]).
    route: Option<Route>,
    /// Routed text after its last newline, kept until the line is whole.
    partial: String,
    /// Routed lines are held back, the last ones only (see [`Term::hold_last`]).
    holding: bool,
    last: Option<String>,
}

/// Takes whole lines, already escaped, to print above a waiting prompt.
#[derive(Clone)]
pub struct Route(pub Arc<dyn Fn(&str) + Send + Sync>);

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Route")
    }
}

impl Default for ScreenState {
    fn default() -> Self {
        ScreenState {
            at_line_start: true,
            drawn: false,
            waits: Vec::new(),
            next_wait: 0,
            ticker_started: false,
            held: 0,
            route: None,
            partial: String::new(),
            holding: false,
            last: None,
        }
    }
}

#[derive(Debug)]
struct Wait {
    id: u64,
    label: String,
    since: Instant,
}

/// A wait shorter than this shows no spinner: most tool calls and many first tokens take less,
/// and a spinner that flashes for a moment is noise.
pub const SPINNER_DELAY: Duration = Duration::from_secs(1);
/// How often the spinner redraws.
const SPINNER_TICK: Duration = Duration::from_millis(100);
const SPINNER_FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
/// Erases the current line and returns to its start.
const ERASE_LINE: &str = "\r\x1b[2K";

/// Whether the environment allows colour: not under `NO_COLOR` (any non-empty value) or
/// `TERM=dumb`. Whether the stream is a terminal is the caller's to ask.
pub fn colour_allowed() -> bool {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let dumb = std::env::var_os("TERM").is_some_and(|t| t == "dumb");
    !no_color && !dumb
}

impl Term {
    /// Detects terminals, `NO_COLOR` (any non-empty value disables colour) and `TERM=dumb` (a
    /// terminal that understands no escape codes).
    pub fn detect() -> Arc<Term> {
        Arc::new(Term {
            stderr_color: colour_allowed() && std::io::stderr().is_terminal(),
            stdout_tty: std::io::stdout().is_terminal(),
            screen: Arc::default(),
        })
    }

    /// A terminal that is never treated as interactive (tests, benchmarks).
    pub fn plain() -> Arc<Term> {
        Arc::new(Term {
            stderr_color: false,
            stdout_tty: false,
            screen: Arc::default(),
        })
    }

    pub fn stdout_is_tty(&self) -> bool {
        self.stdout_tty
    }

    /// Whether stderr is a terminal that takes hx's colour and cursor codes (not under
    /// `NO_COLOR` or `TERM=dumb`): where dimmed text and a spinner may appear.
    pub fn stderr_is_rich(&self) -> bool {
        self.stderr_color
    }

    fn lock(&self) -> MutexGuard<'_, ScreenState> {
        lock(&self.screen)
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
        if text.is_empty() {
            return;
        }
        let text = escape_controls(text);
        let mut st = self.lock();
        if st.route.is_some() {
            let text = if dim && self.stderr_color {
                match text.strip_suffix('\n') {
                    Some(t) => format!("\x1b[2m{t}\x1b[0m\n"),
                    None => format!("\x1b[2m{text}\x1b[0m"),
                }
            } else {
                text.into_owned()
            };
            routed(&mut st, &text);
            return;
        }
        let mut e = std::io::stderr().lock();
        erase_spinner(&mut st, &mut e);
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
        st.at_line_start = text.ends_with('\n');
    }

    /// Text on stdout, flushed (the streamed answer, a listing): exact when stdout is piped,
    /// control characters made visible on a terminal.
    pub fn out_raw(&self, text: &str) {
        if text.is_empty() {
            return;
        }
        let text = if self.stdout_tty {
            escape_controls(text)
        } else {
            Cow::Borrowed(text)
        };
        let mut st = self.lock();
        if self.stdout_tty && st.route.is_some() {
            routed(&mut st, &text);
            return;
        }
        if self.stdout_tty {
            // stdout shares the screen with the spinner's stderr.
            erase_spinner(&mut st, &mut std::io::stderr().lock());
        }
        let mut o = std::io::stdout().lock();
        let _ = write!(o, "{text}");
        let _ = o.flush();
        if self.stdout_tty {
            st.at_line_start = text.ends_with('\n');
        }
    }

    /// A line on stdout, as [`Term::out_raw`].
    pub fn out_line(&self, text: &str) {
        self.out_raw(&format!("{text}\n"));
    }

    /// Keeps the spinner off the screen until the guard is dropped: for a question asked on
    /// the terminal by something that does not write through here (the line editor), whose
    /// prompt a spinner frame would overwrite.
    pub fn hold_spinner(&self) -> SpinnerHold {
        let mut st = self.lock();
        st.held += 1;
        erase_spinner(&mut st, &mut std::io::stderr().lock());
        let _ = std::io::stderr().flush();
        SpinnerHold {
            screen: self.screen.clone(),
        }
    }

    /// From now on (`Some`) the lines written here, but for an answer on a stdout that is
    /// not the terminal, go through `route` (above `hx chat`'s prompt, which stays up while a
    /// turn runs), a line at a time, and the spinner stays off (the prompt has the bottom
    /// line); `None` ends that, passing on the line begun.
    pub fn route(&self, route: Option<Route>) {
        let mut st = self.lock();
        match (st.route.clone(), &route) {
            (None, Some(_)) => {
                st.held += 1;
                erase_spinner(&mut st, &mut std::io::stderr().lock());
            }
            (Some(old), None) => {
                let rest = std::mem::take(&mut st.partial);
                if !rest.is_empty() {
                    (old.0)(&rest);
                }
                st.held = st.held.saturating_sub(1);
                st.at_line_start = true;
            }
            _ => {}
        }
        st.route = route;
    }

    /// While `on`, each routed piece waits until the next one comes, and turning it off
    /// passes on the last: a prompt redrawn once, after everything, shows what was decided
    /// meanwhile (the chat's prompt, no longer busy once its turn's last lines are out).
    pub fn hold_last(&self, on: bool) {
        let mut st = self.lock();
        st.holding = on;
        if !on {
            if let (Some(last), Some(route)) = (st.last.take(), st.route.clone()) {
                (route.0)(&last);
            }
        }
    }

    /// The spinner of this terminal (see [`Spinner`]).
    pub fn spinner(&self) -> Spinner {
        Spinner {
            screen: self.stderr_color.then(|| self.screen.clone()),
        }
    }
}

fn lock(screen: &Screen) -> MutexGuard<'_, ScreenState> {
    // A panic elsewhere while printing must not silence all later output.
    screen.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Routed text: whole lines go on at once, the rest waits for its newline (the prompt is
/// drawn again under each piece, which would break a line in two).
fn routed(st: &mut ScreenState, text: &str) {
    st.partial.push_str(text);
    let Some(end) = st.partial.rfind('\n') else {
        return;
    };
    let whole: String = st.partial.drain(..=end).collect();
    let out = if st.holding {
        st.last.replace(whole)
    } else {
        Some(whole)
    };
    if let (Some(out), Some(route)) = (out, &st.route) {
        (route.0)(&out);
    }
}

fn erase_spinner(st: &mut ScreenState, e: &mut impl Write) {
    if st.drawn {
        let _ = write!(e, "{ERASE_LINE}");
        st.drawn = false;
    }
}

/// Shows the user that hx is waiting, and for how long: one line at the bottom of the terminal,
/// `⠹ waiting for the model 3s`, from [`SPINNER_DELAY`] after a wait began until it ends, then
/// erased without a trace.
///
/// Only on a terminal that takes escape codes: never through a pipe (a log would fill with
/// frames) nor under `NO_COLOR` or `TERM=dumb`; there [`Spinner::wait`] does nothing. Several
/// waits may overlap (subagents, concurrent calls): the oldest is shown. A small thread draws
/// the frames; it sleeps while nothing waits.
#[derive(Debug, Clone)]
pub struct Spinner {
    /// `None`: the spinner is off for this terminal.
    screen: Option<Arc<Screen>>,
}

impl Spinner {
    /// A spinner that never shows (tests, a pipe).
    pub fn off() -> Spinner {
        Spinner { screen: None }
    }

    /// Starts a wait labelled `label` (`waiting for the model`, `running bash`); it lasts until
    /// the returned guard is dropped.
    pub fn wait(&self, label: &str) -> WaitGuard {
        let Some(screen) = &self.screen else {
            return WaitGuard {
                screen: None,
                id: 0,
            };
        };
        let mut st = lock(screen);
        let id = st.next_wait;
        st.next_wait += 1;
        st.waits.push(Wait {
            id,
            label: spinner_label(label),
            since: Instant::now(),
        });
        if !st.ticker_started {
            let s = screen.clone();
            // Without its thread the spinner simply never shows: nothing else depends on it.
            st.ticker_started = std::thread::Builder::new()
                .name("hx-spinner".into())
                .spawn(move || tick(&s))
                .is_ok();
        }
        screen.wake.notify_all();
        WaitGuard {
            screen: Some(screen.clone()),
            id,
        }
    }
}

/// One wait of a [`Spinner`]; dropping it ends the wait (and erases the spinner line if it was
/// this wait's).
#[derive(Debug)]
pub struct WaitGuard {
    screen: Option<Arc<Screen>>,
    id: u64,
}

impl WaitGuard {
    /// Changes what the wait says (`retry 1/4`), keeping its clock.
    pub fn relabel(&self, label: &str) {
        if let Some(screen) = &self.screen {
            let mut st = lock(screen);
            if let Some(w) = st.waits.iter_mut().find(|w| w.id == self.id) {
                w.label = spinner_label(label);
            }
        }
    }
}

impl Drop for WaitGuard {
    fn drop(&mut self) {
        if let Some(screen) = &self.screen {
            let mut st = lock(screen);
            st.waits.retain(|w| w.id != self.id);
            erase_spinner(&mut st, &mut std::io::stderr().lock());
            let _ = std::io::stderr().flush();
        }
    }
}

/// See [`Term::hold_spinner`].
#[derive(Debug)]
pub struct SpinnerHold {
    screen: Arc<Screen>,
}

impl Drop for SpinnerHold {
    fn drop(&mut self) {
        let mut st = lock(&self.screen);
        st.held = st.held.saturating_sub(1);
    }
}

/// A label on one short line, whatever the model named its tool.
fn spinner_label(label: &str) -> String {
    one_line(&escape_line(label), 40)
}

/// The spinner's thread: redraws the oldest wait every tick while anything waits.
fn tick(screen: &Screen) {
    let mut st = lock(screen);
    loop {
        while st.waits.is_empty() {
            st = screen.wake.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        if let Some(w) = st.waits.first() {
            let waited = w.since.elapsed();
            // Never over text that is still being written on the current line.
            if waited >= SPINNER_DELAY && st.held == 0 && (st.at_line_start || st.drawn) {
                let frame = SPINNER_FRAMES[(waited.as_millis() / SPINNER_TICK.as_millis())
                    as usize
                    % SPINNER_FRAMES.len()];
                // The label as ASCII: a wide character (a tool name the model made up) would
                // take two columns, wrap the line, and leave frames the erase cannot reach.
                let label: String = w
                    .label
                    .chars()
                    .map(|c| {
                        if c.is_ascii_graphic() || c == ' ' {
                            c
                        } else {
                            '?'
                        }
                    })
                    .collect();
                let text = format!("{frame} {label} {}s", waited.as_secs());
                let width = terminal_size::terminal_size_of(std::io::stderr())
                    .map_or(80, |(w, _)| usize::from(w.0));
                // One character short of the width, so the line never wraps (and the erase
                // reaches all of it).
                let text = one_line(&text, width.saturating_sub(1).max(1));
                let mut e = std::io::stderr().lock();
                let _ = write!(e, "{ERASE_LINE}\x1b[2m{text}\x1b[0m");
                let _ = e.flush();
                st.drawn = true;
            }
        }
        st = screen
            .wake
            .wait_timeout(st, SPINNER_TICK)
            .map(|(g, _)| g)
            .unwrap_or_else(|p| p.into_inner().0);
    }
}
