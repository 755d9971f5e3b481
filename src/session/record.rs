//! The lines of a session file (JSON Lines) and a tolerant reader for them.
//!
//! Line 1 is the [`Header`]. Every later line is an object with a `type`:
//! `run` (a later run continued the session), `message` (one message exactly as sent to the
//! API), `usage` (one model request's token figures), `compaction` (the history was made to
//! fit the context window: see [`Compaction`]), `end` (how a run ended, with its figures and
//! the session's running totals), `model` (`hx chat`'s `/model` switched the model), `effort`
//! (`/effort` switched the effort),
//! `approval` (the user's answer when the guard would have refused a command, in `hx chat`),
//! `typed` (what the user typed for the next user message, `/NAME args`, whose message is the
//! body it sent),
//! `repair` (a resumed run answered calls left without a result inside the history: see
//! [`Line::Repair`]), `checkpoint` (a checkpoint of the workspace: its number, commit and tree,
//! see `crate::checkpoint`), `rewind` (`hx rewind` went back to a checkpoint; with the
//! conversation, the history is cut where that checkpoint was taken).
//! Readers skip types they do not know, so later versions can add lines without breaking
//! older readers.
//! Every line is written as a [`Line`], by [`Line::text`]. Every line is read by one loop
//! (`walk`) into an [`Entry`]: [`read`] applies them and gives where the session ended,
//! [`read_entries`] gives them too, in order, for what replays the session as it went
//! (`hx sessions export`).
//!
//! A compaction never rewrites the lines before it: the file keeps the whole conversation as
//! it was sent, and the `compaction` line says what the history became from there on, so a
//! reader that continues the session starts from the compacted history.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde::Deserialize;

use super::history;
use crate::model::{Message, ToolCall};

mod entries;
mod lines;

use entries::entry;
pub use entries::{EndLine, Entry, RequestUsage, RunLine};

pub use lines::{
    ApprovalLine, Change, CheckpointKind, CheckpointLine, Compaction, End, EndOutcome, Figures,
    Header, Line, RewindLine, RunInfo,
};

/// The file format this hx writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 1;

/// How a message line starts, and the bytes of its frame around the message's JSON (the
/// prefix and the closing brace).
const MESSAGE_PREFIX: &[u8] = br#"{"type":"message","message":"#;
const MESSAGE_FRAME: usize = MESSAGE_PREFIX.len() + 1;

/// Longest line a reader accepts: a message holds at most a bounded tool result or model
/// turn, so a longer line is damage, not data.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// A message as the API sends and receives it; the reading side of [`Message::to_json`].
#[derive(Debug, Deserialize)]
pub struct WireMessage {
    role: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
    #[serde(default)]
    tool_call_id: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireCall {
    id: String,
    function: WireFunction,
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    name: String,
    arguments: String,
}

impl WireMessage {
    pub fn into_message(self) -> Result<Message, String> {
        let content = self.content.unwrap_or_default();
        Ok(match self.role.as_str() {
            "system" => Message::System(content),
            "user" => Message::User(content),
            "assistant" => Message::Assistant {
                content,
                reasoning: self.reasoning_content,
                tool_calls: self
                    .tool_calls
                    .unwrap_or_default()
                    .into_iter()
                    .map(|c| ToolCall {
                        id: c.id,
                        name: c.function.name,
                        arguments: c.function.arguments,
                    })
                    .collect(),
            },
            "tool" => Message::Tool {
                tool_call_id: self
                    .tool_call_id
                    .ok_or("a tool message without tool_call_id")?,
                content,
            },
            other => return Err(format!("unknown message role {other:?}")),
        })
    }
}

/// Any line after the header. A flat struct rather than a tagged enum: serde would buffer
/// every line into a generic tree to find its tag, and messages are nearly all of a file's
/// bytes.
#[derive(Debug, Deserialize)]
struct EventLine {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: Option<WireMessage>,
    // usage
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    reasoning_tokens: Option<u64>,
    #[serde(default)]
    cost: Option<f64>,
    #[serde(default)]
    cost_nanos: Option<u64>,
    #[serde(default)]
    currency: Option<String>,
    #[serde(default)]
    peak: Option<bool>,
    // run
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    base_url: Option<String>,
    #[serde(default)]
    started_at: Option<String>,
    // run, effort
    #[serde(default)]
    effort: Option<String>,
    // typed
    #[serde(default)]
    typed: Option<String>,
    // usage of a request that was not a turn (`summary`)
    #[serde(default)]
    request: Option<String>,
    // compaction
    #[serde(default)]
    trigger: Option<String>,
    #[serde(default)]
    step: Option<String>,
    #[serde(default)]
    tokens_before: Option<u64>,
    #[serde(default)]
    tokens_after: Option<u64>,
    #[serde(default)]
    cleared: Option<Vec<(usize, String)>>,
    #[serde(default)]
    messages: Option<Vec<WireMessage>>,
    // repair
    #[serde(default)]
    answers: Option<Vec<(usize, WireMessage)>>,
    // checkpoint
    #[serde(default)]
    n: Option<u32>,
    #[serde(default)]
    what: Option<CheckpointKind>,
    #[serde(default)]
    commit: Option<String>,
    #[serde(default)]
    tree: Option<String>,
    #[serde(default)]
    at_message: Option<usize>,
    #[serde(default)]
    label: Option<String>,
    #[serde(default)]
    at: Option<String>,
    // rewind
    #[serde(default)]
    to: Option<u32>,
    #[serde(default)]
    code: Option<bool>,
    #[serde(default)]
    conversation: Option<bool>,
    #[serde(default)]
    safety: Option<u32>,
    #[serde(default)]
    paths: Option<usize>,
    // end
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    detail: Option<String>,
    #[serde(default)]
    ended_at: Option<String>,
    #[serde(default)]
    session: Option<Figures>,
}

/// A session file as read back.
#[derive(Debug, Default)]
pub struct Loaded {
    pub header: Header,
    pub messages: Vec<Message>,
    /// The model, provider and base URL of the latest run.
    pub model: String,
    pub provider: String,
    pub base_url: String,
    /// The effort of the latest run or `effort` line, as written; `None`: its requests said
    /// none.
    pub effort: Option<String>,
    /// The session's figures up to its last `end` line, plus requests of a run that did not
    /// end.
    pub totals: Figures,
    /// The outcome of the last run: `None` when it has no `end` line (it crashed, was killed,
    /// or is still running).
    pub last_outcome: Option<String>,
    pub last_detail: Option<String>,
    /// Runs recorded (the first one and each `run` line).
    pub runs: u32,
    /// Compactions recorded; `messages` is the history as the last one left it, and what
    /// followed.
    pub compactions: u32,
    /// The bytes of `messages` as sent (each message's JSON is its line minus a fixed frame),
    /// counted while reading, so that a long resumed history is not serialized again just to
    /// be measured. `None` once a compaction or repair line changed them.
    pub sent_bytes: Option<u64>,
    /// Problems that did not stop the read (a torn last line), as whole sentences.
    pub warnings: Vec<String>,
    /// The session's checkpoints, in order.
    pub checkpoints: Vec<Checkpoint>,
    /// Its rewinds, in order.
    pub rewinds: Vec<RewindLine>,
    /// User messages that were not what the user typed (`/NAME args` sends a body): each
    /// message's text and what was typed, in order. By text, not by place, so that a repair
    /// or a compaction that moves messages does not mismatch them.
    pub typed: Vec<(String, String)>,
    /// Bytes of the file up to the end of its last complete line. Less than the file's size
    /// when its last line is torn: a writer appending to it must cut the tail first.
    pub valid_len: u64,
}

/// A checkpoint as read back, and whether the conversation can still go back to it (a
/// compaction, a repair or a rewind before it since has changed the history it names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub line: CheckpointLine,
    pub conversation_ok: bool,
}

/// Why a session file cannot be read; `line` is 1-based (0: the file as a whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

fn err(line: usize, message: impl Into<String>) -> ReadError {
    ReadError {
        line,
        message: message.into(),
    }
}

/// Reads just the header (line 1) of a session file.
pub fn read_header(path: &Path) -> Result<Header, ReadError> {
    let file = std::fs::File::open(path).map_err(|e| err(0, format!("cannot open: {e}")))?;
    let mut reader = BufReader::new(file).take(1024 * 1024);
    let mut line = Vec::new();
    reader
        .read_until(b'\n', &mut line)
        .map_err(|e| err(0, format!("cannot read: {e}")))?;
    if !line.ends_with(b"\n") {
        return Err(err(1, "no complete header line"));
    }
    parse_header(&line)
}

fn parse_header(line: &[u8]) -> Result<Header, ReadError> {
    let h: Header =
        serde_json::from_slice(line).map_err(|e| err(1, format!("not a session header ({e})")))?;
    if h.kind != "header" {
        return Err(err(1, "not a session header"));
    }
    if h.version > FORMAT_VERSION || h.version == 0 {
        return Err(err(
            1,
            format!(
                "format version {} (this hx reads up to {FORMAT_VERSION}; a newer hx wrote it)",
                h.version
            ),
        ));
    }
    if h.id.is_empty() {
        return Err(err(1, "the header has no id"));
    }
    Ok(h)
}

/// Reads a whole session file. A torn last line (a crash mid-write) is skipped with a
/// warning; any other damage is an error naming the line.
pub fn read(path: &Path) -> Result<Loaded, ReadError> {
    read_from(open(path)?)
}

fn open(path: &Path) -> Result<BufReader<std::fs::File>, ReadError> {
    let meta = std::fs::metadata(path).map_err(|e| err(0, format!("cannot open: {e}")))?;
    if !meta.is_file() {
        return Err(err(0, "not a file"));
    }
    let file = std::fs::File::open(path).map_err(|e| err(0, format!("cannot open: {e}")))?;
    Ok(BufReader::with_capacity(256 * 1024, file))
}

/// [`read`] from a file already open (and locked) for the run that continues it.
pub fn read_file(file: &std::fs::File) -> Result<Loaded, ReadError> {
    use std::io::Seek;
    let mut f = file;
    f.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| err(0, format!("cannot read: {e}")))?;
    read_from(BufReader::with_capacity(256 * 1024, f))
}

pub fn read_from(reader: impl BufRead) -> Result<Loaded, ReadError> {
    let mut state = State::new();
    let walked = walk(reader, &mut |line| state.apply(line))?;
    Ok(state.finish(walked))
}

/// [`read`], and every line after the header as an [`Entry`] with its line number, in the
/// order written: the session as it went, where [`Loaded`] is where it ended. Checked as
/// [`read`] checks it, so a file one reads the other does.
pub fn read_entries(path: &Path) -> Result<(Loaded, Vec<(usize, Entry)>), ReadError> {
    read_entries_from(open(path)?)
}

fn read_entries_from(reader: impl BufRead) -> Result<(Loaded, Vec<(usize, Entry)>), ReadError> {
    let mut state = State::new();
    let mut entries = Vec::new();
    let walked = walk(reader, &mut |line| {
        if let Item::Entry { n, entry, .. } = &line {
            entries.push((*n, entry.clone()));
        }
        state.apply(line)
    })?;
    Ok((state.finish(walked), entries))
}

/// A line as [`walk`] hands it on.
enum Item<'a> {
    Header(Header),
    Entry {
        n: usize,
        /// The line's bytes, its newline included.
        raw: &'a [u8],
        entry: Entry,
    },
}

/// What [`walk`] found besides the lines.
struct Walked {
    warnings: Vec<String>,
    valid_len: u64,
}

/// The one loop over a session file's lines, each read bounded: the header, then each later
/// complete line parsed into an [`Entry`] and handed to `each`. A torn last line (a crash
/// mid-write) is left out with a warning; any other damage is an error naming the line.
fn walk(
    mut reader: impl BufRead,
    each: &mut dyn FnMut(Item<'_>) -> Result<(), ReadError>,
) -> Result<Walked, ReadError> {
    let mut walked = Walked {
        warnings: Vec::new(),
        valid_len: 0,
    };
    let mut buf = Vec::new();
    let mut n = 0usize;
    let mut offset = 0u64;
    loop {
        buf.clear();
        let got = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(|e| err(n + 1, format!("cannot read: {e}")))?;
        if got == 0 {
            break;
        }
        n += 1;
        if !buf.ends_with(b"\n") {
            if got > MAX_LINE_BYTES {
                return Err(err(n, format!("longer than {} MiB", MAX_LINE_BYTES >> 20)));
            }
            // The last line, cut short by a crash while it was written.
            if n == 1 {
                return Err(err(1, "no complete header line"));
            }
            walked.warnings.push(format!(
                "line {n} is incomplete (hx stopped while writing it); it is skipped"
            ));
            break;
        }
        offset += got as u64;
        if n == 1 {
            each(Item::Header(parse_header(&buf)?))?;
        } else if !buf.iter().all(u8::is_ascii_whitespace) {
            let ev: EventLine = serde_json::from_slice(&buf)
                .map_err(|e| err(n, format!("not a valid session line ({e})")))?;
            let entry = entry(ev).map_err(|e| err(n, e))?;
            each(Item::Entry {
                n,
                raw: &buf,
                entry,
            })?;
        }
        walked.valid_len = offset;
    }
    if n == 0 {
        return Err(err(0, "the file is empty"));
    }
    Ok(walked)
}

/// A session as read so far: the lines applied in order give the history the run had.
struct State {
    loaded: Loaded,
    /// The figures of requests after the last `end` line (a run that has not ended).
    run_figures_open: Figures,
    /// What was typed for the next user message.
    typed: Option<String>,
}

impl State {
    fn new() -> State {
        State {
            loaded: Loaded {
                sent_bytes: Some(0),
                ..Loaded::default()
            },
            run_figures_open: Figures::default(),
            typed: None,
        }
    }

    fn apply(&mut self, line: Item<'_>) -> Result<(), ReadError> {
        let (n, raw, entry) = match line {
            Item::Header(h) => {
                let loaded = &mut self.loaded;
                loaded.model = h.model.clone();
                loaded.provider = h.provider.clone();
                loaded.base_url = h.base_url.clone();
                loaded.effort = h.effort.clone();
                loaded.header = h;
                loaded.runs = 1;
                return Ok(());
            }
            Item::Entry { n, raw, entry } => (n, raw, entry),
        };
        let loaded = &mut self.loaded;
        // A typed line names the user message right after it, and nothing later.
        let typed = self.typed.take();
        match entry {
            Entry::Typed(t) => self.typed = Some(t),
            Entry::Message(m) => {
                if let (Message::User(text), Some(t)) = (&m, typed) {
                    loaded.typed.push((text.clone(), t));
                }
                loaded.messages.push(m);
                // The line is `{"type":"message","message":` + the message as sent + `}`.
                let json = raw.len().checked_sub(MESSAGE_FRAME + 1);
                loaded.sent_bytes = match (loaded.sent_bytes, json) {
                    (Some(t), Some(bytes)) if raw.starts_with(MESSAGE_PREFIX) => {
                        Some(t.saturating_add(bytes as u64))
                    }
                    _ => None,
                };
            }
            Entry::Usage(u) => {
                let open = &mut self.run_figures_open;
                if u.request.is_none() {
                    open.turns = open.turns.saturating_add(1);
                }
                open.prompt_tokens = open.prompt_tokens.saturating_add(u.usage.prompt_tokens);
                open.cache_hit_tokens = open
                    .cache_hit_tokens
                    .saturating_add(u.usage.prompt_cache_hit_tokens);
                open.completion_tokens = open
                    .completion_tokens
                    .saturating_add(u.usage.completion_tokens);
                open.reasoning_tokens = open
                    .reasoning_tokens
                    .saturating_add(u.usage.reasoning_tokens);
                open.cost.add_cost(u.cost);
            }
            Entry::Compaction(c) => {
                c.apply(&mut loaded.messages).map_err(|e| err(n, e))?;
                // Before repair lines, a repair at resume was written as a compaction line,
                // but nothing was compacted.
                if c.trigger != "repair" {
                    loaded.compactions = loaded.compactions.saturating_add(1);
                }
                loaded.sent_bytes = None;
                reshaped(&mut loaded.checkpoints, 0);
            }
            Entry::Repair(answers) => {
                history::insert(&mut loaded.messages, answers)
                    .map_err(|e| err(n, format!("the repair does not fit the history: {e}")))?;
                loaded.sent_bytes = None;
                reshaped(&mut loaded.checkpoints, 0);
            }
            Entry::Run(run) => {
                loaded.runs = loaded.runs.saturating_add(1);
                loaded.last_outcome = None;
                loaded.last_detail = None;
                if let Some(m) = run.model {
                    loaded.model = m;
                }
                if let Some(p) = run.provider {
                    loaded.provider = p;
                }
                if let Some(u) = run.base_url {
                    loaded.base_url = u;
                }
                // Each run says its own; a run line without one sent none.
                loaded.effort = run.effort;
            }
            Entry::Model(model) => {
                if let Some(m) = model {
                    loaded.model = m;
                }
            }
            Entry::Effort(effort) => loaded.effort = effort,
            Entry::Checkpoint(line) => loaded.checkpoints.push(Checkpoint {
                line,
                conversation_ok: true,
            }),
            Entry::Rewind(r) => {
                if let (true, Some(k)) = (r.conversation, r.at_message) {
                    if k > loaded.messages.len() {
                        return Err(err(n, "a rewind past the end of the history"));
                    }
                    loaded.messages.truncate(k);
                    loaded.sent_bytes = None;
                    reshaped(&mut loaded.checkpoints, k);
                }
                loaded.rewinds.push(r);
            }
            Entry::End(end) => {
                loaded.last_outcome = Some(end.outcome);
                loaded.last_detail = end.detail;
                if let Some(s) = end.session {
                    loaded.totals = s;
                }
                self.run_figures_open = Figures::default();
            }
            Entry::Other(_) => {}
        }
        Ok(())
    }

    fn finish(mut self, walked: Walked) -> Loaded {
        self.loaded.warnings = walked.warnings;
        self.loaded.valid_len = walked.valid_len;
        // Requests of a run that has no end line yet (crashed or running) still happened.
        self.loaded.totals.add(&self.run_figures_open);
        self.loaded
    }
}

/// The history changed other than by appending: the checkpoints taken after its first `keep`
/// messages no longer name a place in it.
fn reshaped(checkpoints: &mut [Checkpoint], keep: usize) {
    for c in checkpoints
        .iter_mut()
        .filter(|c| keep == 0 || c.line.at_message > keep)
    {
        c.conversation_ok = false;
    }
}

/// Also here, where the tests of the crate's users find it.
pub use super::history::repair;

#[cfg(test)]
mod tests;
