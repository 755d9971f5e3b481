//! The line editor of `hx chat`: rustyline on a thread of its own, asked for one line at a
//! time by the async conversation loop.
//!
//! `readline()` blocks, and while it runs the terminal is in raw mode (Ctrl-C is a key, not
//! SIGINT). On its own thread it leaves the runtime free to watch SIGTERM and SIGHUP while
//! the prompt waits; between reads the terminal is back in its normal mode, so Ctrl-C during a
//! turn is SIGINT, which cancels the turn.
//!
//! History lives in `$XDG_STATE_HOME/hx/history` (never in the project), mode 0600, written
//! whole to a temporary file and renamed over the old one after each message.

use std::borrow::Cow;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, RwLock};
use std::time::Duration;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::{FileHistory, History};
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Behavior, Cmd, ConditionalEventHandler, Config, Context, Editor, Event, EventContext,
    EventHandler, ExternalPrinter, Helper, KeyCode, KeyEvent, Modifiers, Movement, RepeatCount,
};

type Printer = Arc<Mutex<Box<dyn ExternalPrinter + Send>>>;
use tokio::sync::oneshot;

use super::commands;
use super::queue::{Queue, BUSY_PROMPT};
use crate::config::Env;
use crate::text::Warning;

/// Entries kept in the history.
pub const HISTORY_ENTRIES: usize = 1000;
/// A history file larger than this is not read (and is replaced by the next write).
pub const HISTORY_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// A message longer than this is sent but not kept in the history.
pub const HISTORY_ENTRY_CHARS: usize = 64 * 1024;

/// What one read gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    Line(String),
    /// A line sent with Tab while a turn runs: for the next turn (see `queue`).
    NextTurn(String),
    /// Ctrl-C on an empty line.
    Interrupted,
    /// Ctrl-D on an empty line.
    Eof,
    /// The terminal cannot be read (gone, or not a terminal).
    Failed(String),
}

enum Request {
    Read {
        prompt: String,
        /// Text the line starts with, ready to edit (a message a rewind took back).
        initial: String,
        reply: oneshot::Sender<Read>,
    },
    /// Adds a line to the history and writes the history file.
    Remember(String),
}

/// The command files and skills Tab completes, shared with the conversation (which changes
/// them when the agent is rebuilt).
pub type SkillNames = Arc<RwLock<Vec<commands::Named>>>;

/// The handle the conversation keeps; the editor thread ends when it is dropped.
#[derive(Clone)]
pub struct LineEditor {
    tx: mpsc::Sender<Request>,
    /// Prints above the prompt while it waits, and redraws it (None: not a full terminal).
    printer: Option<Printer>,
    /// What the next line starts with.
    initial: Arc<Mutex<String>>,
    drawn: Arc<Drawn>,
}

/// The prompt's draws, counted, and whether a line is being read: a line printed above a
/// waiting prompt is passed to the editor's thread, which draws the prompt again under it
/// when it gets to it. [`LineEditor::print_raw`] waits for that draw, so that the prompt a
/// later line is drawn with (busy, or not any more) is the one of its time, not of a
/// line still on its way.
#[derive(Default)]
struct Drawn {
    /// Lines passed to the editor's thread, and the draws of the prompt under them: a draw
    /// with no line on its way (a key) is not counted.
    count: Mutex<(u64, u64)>,
    changed: Condvar,
    reading: AtomicBool,
    /// The prompt reads busy until the line of this number is drawn (see
    /// [`LineEditor::settle_with_next`]), whatever the queue says meanwhile.
    settles_at: Mutex<u64>,
    /// The next line printed is the one the prompt settles with.
    settle_next: AtomicBool,
}

impl Drawn {
    /// The prompt was drawn.
    fn drew(&self) {
        let mut c = lock(&self.count);
        if c.1 < c.0 {
            c.1 += 1;
        }
        self.changed.notify_all();
    }
}

/// Whether the terminal is in the line editor's raw mode (no canonical input): a line
/// printed now goes through its thread, not straight out.
fn editing() -> bool {
    // SAFETY: tcgetattr fills the struct it is given; a zeroed termios is a valid value.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0 && t.c_lflag & libc::ICANON == 0
    }
}

/// How long a line printed above the prompt waits for it to be drawn again at most (the
/// editor's thread does it in a moment; this only bounds a wait that went wrong).
const DRAW_WAIT: Duration = Duration::from_secs(5);

/// `$XDG_STATE_HOME/hx/history`, else `~/.local/state/hx/history`: beside the sessions.
pub fn history_path(env: &Env) -> Option<PathBuf> {
    crate::session::store::sessions_root(env)?
        .parent()
        .map(|hx| hx.join("history"))
}

impl LineEditor {
    /// Starts the editor thread. Problems with the history file are warnings (the chat works
    /// without it), returned for the caller to print.
    pub fn start(
        history: Option<PathBuf>,
        skills: SkillNames,
        queue: Arc<Queue>,
    ) -> std::io::Result<(LineEditor, Vec<String>)> {
        let (tx, rx) = mpsc::channel::<Request>();
        let drawn = Arc::new(Drawn::default());
        let drawn_thread = drawn.clone();
        type Ready = Result<(Vec<String>, Option<Printer>), String>;
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        std::thread::Builder::new()
            .name("hx-line-editor".into())
            .spawn(move || {
                let next_turn = Arc::new(AtomicBool::new(false));
                let drawn_here = drawn_thread.clone();
                let keys = Keys {
                    queue: queue.clone(),
                    next_turn: next_turn.clone(),
                };
                let (mut editor, warnings) = match new_editor(history.as_deref(), skills, keys) {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let printer = editor.create_external_printer().ok().map(|p| {
                    let p: Box<dyn ExternalPrinter + Send> = Box::new(p);
                    Arc::new(Mutex::new(p))
                });
                let _ = ready_tx.send(Ok((warnings, printer)));
                serve(
                    &mut editor,
                    history.as_deref(),
                    rx,
                    &queue,
                    &next_turn,
                    &drawn_here,
                );
            })?;
        match ready_rx.recv() {
            Ok(Ok((warnings, printer))) => Ok((
                LineEditor {
                    tx,
                    printer,
                    initial: Arc::default(),
                    drawn,
                },
                warnings,
            )),
            Ok(Err(e)) => Err(std::io::Error::other(e)),
            Err(_) => Err(std::io::Error::other("the line editor did not start")),
        }
    }

    /// Shows `prompt` and waits for a line.
    pub async fn read(&self, prompt: &str) -> Read {
        let (reply, answer) = oneshot::channel();
        let initial = std::mem::take(&mut *self.initial.lock().unwrap_or_else(|p| p.into_inner()));
        let request = Request::Read {
            prompt: prompt.to_string(),
            initial,
            reply,
        };
        if self.tx.send(request).is_err() {
            return Read::Failed("the line editor stopped".into());
        }
        answer
            .await
            .unwrap_or_else(|_| Read::Failed("the line editor stopped".into()))
    }

    /// The next line starts with `text`, the cursor at its end.
    pub fn put_back(&self, text: &str) {
        *self.initial.lock().unwrap_or_else(|p| p.into_inner()) = text.to_string();
    }

    /// Lines on the terminal, control characters made visible. While the prompt waits they
    /// go above it, and it is drawn again below them.
    pub fn print(&self, text: &str) {
        let text = format!("{}\n", crate::term::escape_controls(text));
        let printed = self.printer.as_ref().is_some_and(|p| {
            p.lock()
                .unwrap_or_else(|e| e.into_inner())
                .print(text.clone())
                .is_ok()
        });
        if !printed {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        }
    }

    /// Text already made safe for the terminal (the chat's [`crate::term::Term`] escapes
    /// it), above the prompt while it waits, else straight to the terminal.
    pub fn print_raw(&self, text: &str) {
        let queued = self.drawn.reading.load(Ordering::SeqCst) && editing();
        let seq = {
            let mut c = lock(&self.drawn.count);
            c.0 += u64::from(queued);
            c.0
        };
        if queued && self.drawn.settle_next.swap(false, Ordering::SeqCst) {
            *lock(&self.drawn.settles_at) = seq;
        }
        let printed = self.printer.as_ref().is_some_and(|p| {
            p.lock()
                .unwrap_or_else(|e| e.into_inner())
                .print(text.to_string())
                .is_ok()
        });
        if !printed {
            let _ = std::io::Write::write_all(&mut std::io::stderr(), text.as_bytes());
        } else if queued {
            let count = lock(&self.drawn.count);
            let _ = self
                .drawn
                .changed
                .wait_timeout_while(count, DRAW_WAIT, |c| {
                    c.1 < seq && self.drawn.reading.load(Ordering::SeqCst)
                });
        }
    }

    /// While `on`, the next line printed above the prompt is the one the prompt is drawn
    /// not busy under first: the lines before it, still on their way to the editor's
    /// thread, keep the busy prompt even when the turn has ended meanwhile.
    pub fn settle_with_next(&self, on: bool) {
        self.drawn.settle_next.store(on, Ordering::SeqCst);
    }

    /// Whether lines can go above a waiting prompt (a full terminal).
    pub fn can_print_above(&self) -> bool {
        self.printer.is_some()
    }

    /// Keeps `line` in the history (and its file).
    pub fn remember(&self, line: &str) {
        if line.chars().count() <= HISTORY_ENTRY_CHARS {
            let _ = self.tx.send(Request::Remember(line.to_string()));
        }
    }
}

type ChatEditor = Editor<ChatHelper, FileHistory>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn new_editor(
    history: Option<&Path>,
    skills: SkillNames,
    keys: Keys,
) -> Result<(ChatEditor, Vec<String>), String> {
    let config = Config::builder()
        .max_history_size(HISTORY_ENTRIES)
        .map_err(|e| e.to_string())?
        .history_ignore_dups(true)
        .map_err(|e| e.to_string())?
        .history_ignore_space(true)
        .auto_add_history(false)
        .bracketed_paste(true)
        // Tab completes what is common to the candidates, a second Tab lists them (as bash
        // does), rather than cycling through them one at a time unseen.
        .completion_type(rustyline::CompletionType::List)
        // The terminal, also when stdout is piped: the prompt is not part of the answer.
        .behavior(Behavior::PreferTerm)
        .build();
    let history_entries = FileHistory::with_config(&config);
    let mut editor: ChatEditor = Editor::with_history(config, history_entries)
        .map_err(|e| format!("cannot open the terminal: {e}"))?;
    let dim = crate::term::colour_allowed();
    editor.set_helper(Some(ChatHelper { skills, dim }));
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        EventHandler::Simple(Cmd::Newline),
    );
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC)),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Tab, Modifiers::NONE),
        EventHandler::Conditional(Box::new(NextTurnKey(keys.clone()))),
    );
    editor.bind_sequence(
        KeyEvent(KeyCode::Up, Modifiers::NONE),
        EventHandler::Conditional(Box::new(TakeBackKey(keys))),
    );
    let mut warnings = Vec::new();
    if let Some(path) = history {
        if let Some(w) = load_history(&mut editor, path) {
            warnings.push(w);
        }
    }
    Ok((editor, warnings))
}

#[cfg(test)]
fn config_for_history() -> Config {
    Config::builder()
        .max_history_size(HISTORY_ENTRIES)
        .and_then(|b| b.history_ignore_dups(true))
        .map(|b| b.history_ignore_space(true).build())
        .unwrap_or_default()
}

fn load_history(editor: &mut ChatEditor, path: &Path) -> Option<String> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => Some(format!("cannot read the history {}: {e}", path.display())),
        Ok(m) if !m.is_file() => Some(format!(
            "the history {} is not a file; it is not used",
            path.display()
        )),
        Ok(m) if m.len() > HISTORY_FILE_BYTES => Some(format!(
            "the history {} is larger than {} MiB; it is not read and the next message \
             replaces it",
            path.display(),
            HISTORY_FILE_BYTES >> 20
        )),
        Ok(_) => editor
            .load_history(path)
            .err()
            .map(|e| format!("cannot read the history {}: {e}", path.display())),
    }
}

fn serve(
    editor: &mut ChatEditor,
    history: Option<&Path>,
    rx: mpsc::Receiver<Request>,
    queue: &Arc<Queue>,
    next_turn: &AtomicBool,
    drawn: &Arc<Drawn>,
) {
    let mut warned = false;
    for request in rx {
        match request {
            Request::Read {
                prompt,
                initial,
                reply,
            } => {
                let prompt = ChatPrompt {
                    follows: prompt == super::PROMPT,
                    text: prompt,
                    queue: queue.clone(),
                    drawn: drawn.clone(),
                    asked: Default::default(),
                };
                next_turn.store(false, Ordering::SeqCst);
                {
                    // A line that went straight out as the last read ended is drawn under
                    // nothing: the count starts even.
                    let mut c = lock(&drawn.count);
                    c.1 = c.0;
                }
                drawn.reading.store(true, Ordering::SeqCst);
                let line = if initial.is_empty() {
                    editor.readline(&prompt)
                } else {
                    editor.readline_with_initial(&prompt, (&initial, ""))
                };
                drawn.reading.store(false, Ordering::SeqCst);
                drawn.changed.notify_all();
                let read = match line {
                    Ok(line) if next_turn.swap(false, Ordering::SeqCst) => Read::NextTurn(line),
                    Ok(line) => Read::Line(line),
                    Err(ReadlineError::Interrupted) => Read::Interrupted,
                    Err(ReadlineError::Eof) => Read::Eof,
                    Err(e) => Read::Failed(e.to_string()),
                };
                let _ = reply.send(read);
            }
            Request::Remember(line) => {
                let _ = editor.add_history_entry(line);
                if let Some(path) = history {
                    if let Err(e) = save_history(editor.history_mut(), path) {
                        // Once: a read-only state folder must not repeat it on every message.
                        if !warned {
                            warned = true;
                            let _ = std::io::Write::write_all(
                                &mut std::io::stderr(),
                                format!(
                                    "{}\n",
                                    crate::term::escape_controls(
                                        &Warning::new(format!(
                                            "cannot write the history {}: {e}",
                                            path.display()
                                        ))
                                        .to_string()
                                    )
                                )
                                .as_bytes(),
                            );
                        }
                    }
                }
            }
        }
    }
}

/// Writes the whole history to a temporary file beside `path` (0600), then renames it over
/// `path`: a crash leaves the old file or the new one, never half of one.
fn save_history(history: &mut FileHistory, path: &Path) -> Result<(), String> {
    let dir = path.parent().ok_or("no folder")?;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| e.to_string())?;
    let tmp = tempfile::Builder::new()
        .prefix(".history.")
        .tempfile_in(dir)
        .map_err(|e| e.to_string())?;
    // `save` writes only when there is something new; the caller just added an entry.
    history.save(tmp.path()).map_err(|e| e.to_string())?;
    tmp.persist(path).map_err(|e| e.error.to_string())?;
    Ok(())
}

/// Ctrl-C on a line with text clears it; on an empty line it is the "how do I leave" key.
struct CtrlC;

impl ConditionalEventHandler for CtrlC {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// The chat's prompt: while a turn runs it reads [`BUSY_PROMPT`] (same width), redrawn so
/// whenever the editor next draws the line (a key, a line printed above it).
struct ChatPrompt {
    text: String,
    /// It is the chat's own prompt, not a question.
    follows: bool,
    queue: Arc<Queue>,
    drawn: Arc<Drawn>,
    /// The prompt's text was asked for this many times: the editor asks twice as it starts
    /// (measuring it, drawing it), before it draws it under any printed line.
    asked: std::sync::atomic::AtomicU32,
}

impl rustyline::Prompt for ChatPrompt {
    fn raw(&self) -> &str {
        if self.asked.fetch_add(1, Ordering::SeqCst) >= 2 {
            self.drawn.drew();
        }
        let settling = lock(&self.drawn.count).1 < *lock(&self.drawn.settles_at);
        if self.follows && (self.queue.busy() || settling) {
            BUSY_PROMPT
        } else {
            &self.text
        }
    }
}

/// What the queue keys share with the conversation.
#[derive(Clone)]
struct Keys {
    queue: Arc<Queue>,
    /// The line being accepted was sent with Tab: for the next turn.
    next_turn: Arc<AtomicBool>,
}

/// Tab while a turn runs, on a message: accepted for the next turn. Otherwise (a `/NAME`, or
/// no turn running) it completes, as it always did.
struct NextTurnKey(Keys);

impl ConditionalEventHandler for NextTurnKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let line = ctx.line();
        if !self.0.queue.busy() || line.trim().is_empty() || line.starts_with('/') {
            return None;
        }
        self.0.next_turn.store(true, Ordering::SeqCst);
        Some(Cmd::AcceptLine)
    }
}

/// Up on an empty line with messages queued: the newest comes back into the line to edit.
/// Otherwise the history, as always.
struct TakeBackKey(Keys);

impl ConditionalEventHandler for TakeBackKey {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        if !ctx.line().is_empty() {
            return None;
        }
        self.0.queue.take_back().map(|text| Cmd::Insert(1, text))
    }
}

/// Completion of commands and skill names, and the trailing-`\` rule for a new line.
struct ChatHelper {
    skills: SkillNames,
    /// Whether the hint may be dimmed (not under `NO_COLOR` or `TERM=dumb`).
    dim: bool,
}

impl Completer for ChatHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let word = line.get(..pos).unwrap_or("");
        if !word.starts_with('/') || word.contains(char::is_whitespace) {
            return Ok((0, Vec::new()));
        }
        let names = self.skills.read().unwrap_or_else(|p| p.into_inner());
        let found = commands::complete(word, &names);
        let unique = found.len() == 1;
        let found = found
            .into_iter()
            .map(|c| Pair {
                display: c.display,
                // A unique command gets a space after it, ready for its argument or the
                // message.
                replacement: if unique {
                    format!("{} ", c.replacement)
                } else {
                    c.replacement
                },
            })
            .collect();
        Ok((0, found))
    }
}

impl Hinter for ChatHelper {
    type Hint = String;

    /// A command's or skill's `argument-hint`, after `/NAME ` (as Tab leaves a unique name)
    /// while nothing follows it: what to type next, as Claude Code shows it.
    fn hint(&self, line: &str, pos: usize, _: &Context<'_>) -> Option<String> {
        if pos != line.len() {
            return None;
        }
        let rest = line.strip_prefix('/')?;
        let (name, space) = match rest.strip_suffix(' ') {
            Some(name) => (name, ""),
            None => (rest, " "),
        };
        if name.is_empty() || name.contains(char::is_whitespace) {
            return None;
        }
        let names = self.skills.read().unwrap_or_else(|p| p.into_inner());
        let hint = names.iter().find(|n| n.name == name)?.hint.as_deref()?;
        // The line editor writes it as it is, not through hx's escaping.
        Some(format!("{space}{}", crate::text::escape_line(hint)))
    }
}

impl Highlighter for ChatHelper {
    fn highlight_hint<'h>(&self, hint: &'h str) -> Cow<'h, str> {
        if self.dim {
            Cow::Owned(format!("\x1b[2m{hint}\x1b[0m"))
        } else {
            Cow::Borrowed(hint)
        }
    }

    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ChatHelper {
    fn validate(&self, ctx: &mut ValidationContext) -> rustyline::Result<ValidationResult> {
        Ok(if ctx.input().ends_with('\\') {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Valid(None)
        })
    }
}

impl Helper for ChatHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_sits_beside_the_sessions() {
        let mut env = Env::new();
        env.insert("HOME".into(), "/home/u".into());
        assert_eq!(
            history_path(&env),
            Some(PathBuf::from("/home/u/.local/state/hx/history"))
        );
        env.insert("XDG_STATE_HOME".into(), "/state".into());
        assert_eq!(history_path(&env), Some(PathBuf::from("/state/hx/history")));
    }

    #[test]
    fn the_history_file_is_replaced_whole_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("state/hx/history");
        let mut h = FileHistory::with_config(&config_for_history());
        h.add("first line\nsecond line").expect("add");
        save_history(&mut h, &path).expect("save");
        h.add("another").expect("add");
        save_history(&mut h, &path).expect("save again");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let mut back = FileHistory::with_config(&config_for_history());
        back.load(&path).expect("load");
        assert_eq!(back.len(), 2);
        let entries: Vec<&String> = back.iter().collect();
        assert_eq!(entries[0], "first line\nsecond line");
        // Nothing but the history itself is left in the folder.
        let names: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("history")]);
    }
}
