//! Background shells: a `bash` call with `run_in_background` starts its command here and
//! returns at once; `bash_output` reads what it printed since the last read, `kill_shell` ends
//! it. The run's agents share one [`Shells`] (it lives in the [`ToolContext`]), so a shell a
//! subagent started is the parent's to read and end.
//!
//! Everything a shell prints goes to a log file in the run's shells folder, up to
//! [`LOG_MAX_BYTES`]; memory holds only offsets. A read returns the new bytes cut like any
//! output (`[tools] output_chars`), and names the file for `read_file` to page through.
//!
//! A shell that ends is told once: by the `bash_output` or `kill_shell` call that sees it end,
//! else by a short note appended before the model's next request (see [`Shells`]'s
//! [`Reminder`]), never by an edit of earlier messages, so a cached prefix keeps hitting.
//! What is still running when hx exits is ended with the rest of what hx started
//! (`process::cleanup::end_all`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::sync::Notify;

use super::output::{BoundedText, Utf8Decoder};
use super::{Reminder, ToolContext};
use crate::process::{signal_name, Launch, Role, Started};

pub mod tools;

pub use tools::{BashOutput, KillShell};

/// Bytes of one shell's log: output past it is counted, not kept (a server logging forever
/// must not fill the disk).
pub const LOG_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Bytes of new output a `bash_output` pattern is looked for in, each time output arrives.
const SCAN_BYTES: u64 = 1024 * 1024;

/// Lines of a shell's output its end note quotes, and characters of each.
const NOTE_LINES: usize = 5;
const NOTE_LINE_CHARS: usize = 200;

/// What every end note starts with, so a summary knows the message is hx's.
const NOTE_PREFIX: &str = "[background shell ";

/// The background shells of a run.
#[derive(Debug)]
pub struct Shells {
    /// Where their logs go: made (0700) when the first shell starts.
    dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Shells started so far.
    started: u32,
    shells: BTreeMap<u32, Arc<Shell>>,
}

/// One background shell.
#[derive(Debug)]
pub struct Shell {
    pub id: String,
    pub command: String,
    pub log: PathBuf,
    /// Its process group (the shell's pid), which `kill_shell` ends.
    pgid: Option<libc::pid_t>,
    progress: Mutex<Progress>,
    /// Woken whenever output arrives or the shell ends.
    changed: Notify,
}

#[derive(Debug, Default)]
struct Progress {
    /// Bytes in the log.
    written: u64,
    /// Bytes past [`LOG_MAX_BYTES`] (or that the disk refused), not kept.
    dropped: u64,
    /// Bytes of the log a read has returned.
    read: u64,
    end: Option<End>,
    /// Whether the model was told of its end.
    told: bool,
    killed: bool,
}

/// How a shell ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum End {
    Code(i32),
    Signal(i32),
    /// Its status could not be had.
    Lost(String),
}

impl std::fmt::Display for End {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            End::Code(c) => write!(f, "exit code {c}"),
            End::Signal(s) => write!(f, "killed by signal {s} ({})", signal_name(*s)),
            End::Lost(why) => write!(f, "status unknown: {why}"),
        }
    }
}

impl End {
    fn of(status: std::io::Result<ExitStatus>) -> End {
        use std::os::unix::process::ExitStatusExt;
        match status {
            Ok(s) => match (s.code(), s.signal()) {
                (Some(c), _) => End::Code(c),
                (None, Some(sig)) => End::Signal(sig),
                (None, None) => End::Lost("no exit code".into()),
            },
            Err(e) => End::Lost(e.to_string()),
        }
    }

    pub fn code(&self) -> Option<i32> {
        match self {
            End::Code(c) => Some(*c),
            _ => None,
        }
    }
}

/// What a read of a shell found.
#[derive(Debug)]
pub struct Output {
    /// The new output, cut; empty when there was none.
    pub text: String,
    pub end: Option<End>,
    /// Bytes in its log, and bytes left out of it.
    pub written: u64,
    pub dropped: u64,
    /// Whether `kill_shell` ended it.
    pub killed: bool,
}

/// A shell as the views list it (`/shells`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub command: String,
    pub end: Option<End>,
    pub bytes: u64,
}

impl Shells {
    /// Shells whose logs go to `dir` (made when the first one starts).
    pub fn new(dir: PathBuf) -> Shells {
        Shells {
            dir,
            state: Mutex::default(),
        }
    }

    /// Where the logs go.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts `command` as [`super::bash`] runs one (the sandbox, the pod, the environment),
    /// its output going to its log; the shell, or why it could not start.
    pub fn start(&self, command: &str, cx: &ToolContext) -> Result<Arc<Shell>, String> {
        let mut state = self.state();
        let running = state.shells.values().filter(|s| s.running()).count();
        let max = cx.limits.background_shells;
        if running >= max {
            return Err(format!(
                "{running} background shells are running, the most a run may have \
                 ([tools] background_shells = {max}); end one with kill_shell first"
            ));
        }
        make_private_dir(&self.dir)
            .map_err(|e| format!("cannot make {}: {e}", self.dir.display()))?;
        let n = state.started + 1;
        let id = format!("bg{n}");
        let log = self.dir.join(format!("{id}.log"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&log)
            .map_err(|e| format!("cannot make {}: {e}", log.display()))?;
        let (writer, reader) = pipe::pipe().map_err(|e| format!("cannot create pipe: {e}"))?;
        let (out_fd, err_fd) = writer
            .into_blocking_fd()
            .and_then(|fd| Ok((fd.try_clone()?, fd)))
            .map_err(|e| format!("cannot create pipe: {e}"))?;
        let role = Role::Tool {
            env: &cx.env,
            sandbox: cx.sandbox.as_deref(),
        };
        let mut child = Launch::shell(command, cx.workspace.root(), role)
            .stdin(Stdio::null())
            .stdout(Stdio::from(out_fd))
            .stderr(Stdio::from(err_fd))
            .keep_on_drop()
            .spawn()
            .map_err(|e| format!("cannot run command: {e}"))?;
        let pgid = child.group.pgid();
        // Its group is ended by `kill_shell`, or with the rest of the run (every exit path
        // sweeps what hx started), not when the runtime drops the task reading its output:
        // `keep_background` may keep it past hx.
        child.group.disarm();
        let shell = Arc::new(Shell {
            id,
            command: command.to_string(),
            log,
            pgid,
            progress: Mutex::default(),
            changed: Notify::new(),
        });
        state.started = n;
        state.shells.insert(n, shell.clone());
        tokio::spawn(pump(shell.clone(), child, reader, file));
        Ok(shell)
    }

    /// The shell of id `id`.
    pub fn get(&self, id: &str) -> Option<Arc<Shell>> {
        let n: u32 = id.trim().strip_prefix("bg")?.parse().ok()?;
        self.state().shells.get(&n).cloned()
    }

    /// Every shell of the run, in the order they started.
    pub fn list(&self) -> Vec<Listed> {
        self.state()
            .shells
            .values()
            .map(|s| {
                let p = s.progress();
                Listed {
                    id: s.id.clone(),
                    command: s.command.clone(),
                    end: p.end.clone(),
                    bytes: p.written + p.dropped,
                }
            })
            .collect()
    }

    /// How many are running.
    pub fn running(&self) -> usize {
        self.state().shells.values().filter(|s| s.running()).count()
    }

    /// The note of the shells that ended and were not told of yet, which marks them told.
    fn end_note(&self) -> Option<String> {
        let ended: Vec<Arc<Shell>> = self.state().shells.values().cloned().collect();
        let notes: Vec<String> = ended.iter().filter_map(|s| s.take_end_note()).collect();
        (!notes.is_empty()).then(|| notes.join("\n\n"))
    }
}

/// The run's shells tell the model of each one that ended before its next request.
impl Reminder for Shells {
    fn after_tool_turn(&self, _calls: &[crate::model::ToolCall]) -> Option<String> {
        None
    }

    fn before_request(&self) -> Option<String> {
        self.end_note()
    }

    fn wrote(&self, text: &str) -> bool {
        text.starts_with(NOTE_PREFIX)
    }
}

impl Shell {
    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn running(&self) -> bool {
        self.progress().end.is_none()
    }

    /// Keeps `bytes` of output, as much as the log may hold.
    fn append(&self, file: &mut File, bytes: &[u8]) {
        let mut p = self.progress();
        let room = LOG_MAX_BYTES.saturating_sub(p.written);
        let keep = bytes.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        if keep > 0 && file.write_all(&bytes[..keep]).is_ok() {
            p.written += keep as u64;
        } else {
            p.dropped += keep as u64;
        }
        p.dropped += (bytes.len() - keep) as u64;
        drop(p);
        self.changed.notify_waiters();
    }

    fn finish(&self, end: End) {
        self.progress().end = Some(end);
        self.changed.notify_waiters();
    }

    /// Ends its process group (what it started and left in it) and waits a moment for the
    /// shell's end to be seen. Whether it was still running.
    pub async fn kill(&self) -> bool {
        {
            let mut p = self.progress();
            if p.end.is_some() {
                return false;
            }
            p.killed = true;
        }
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg only sends a signal; the group is the shell's own, and the shell
            // is not reaped yet (no end seen), so its number is still its own.
            unsafe { libc::killpg(pgid, libc::SIGKILL) };
        }
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), self.ended()).await;
        true
    }

    /// Waits until it has ended.
    async fn ended(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.running() {
                return;
            }
            changed.await;
        }
    }

    /// What it printed since the last read, cut to `limit` characters, and how it stands;
    /// a read that sees its end tells the model of it (no end note follows).
    pub async fn read_new(self: &Arc<Self>, limit: usize) -> Result<Output, String> {
        let (from, to, end, dropped) = {
            let p = self.progress();
            (p.read, p.written, p.end.clone(), p.dropped)
        };
        let shell = self.clone();
        let complete = end.is_some();
        let decoded = tokio::task::spawn_blocking(move || {
            decode_range(&shell.log, from, to, limit, complete)
        })
        .await
        .map_err(|e| format!("the read was cancelled: {e}"))?
        .map_err(|e| format!("cannot read {}: {e}", self.log.display()))?;
        let (text, used) = decoded;
        let mut p = self.progress();
        p.read = from + used;
        if end.is_some() {
            p.told = true;
        }
        Ok(Output {
            text,
            end,
            written: p.written,
            dropped,
            killed: p.killed,
        })
    }

    /// Waits up to `wait` for output after the last read (a line matching `pattern`, when
    /// given) or for the shell to end.
    pub async fn wait_for(&self, wait: std::time::Duration, pattern: Option<&regex::Regex>) {
        let deadline = tokio::time::Instant::now() + wait;
        let mut scanned = self.progress().read;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (written, ended) = {
                let p = self.progress();
                (p.written + p.dropped, p.end.is_some())
            };
            let read = self.progress().read;
            if ended {
                return;
            }
            if written > read {
                match pattern {
                    None => return,
                    Some(re) if self.matches(re, &mut scanned) => return,
                    Some(_) => {}
                }
            }
            tokio::select! {
                _ = changed => {}
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    }

    /// Whether a whole line of the log after `scanned` matches `re`; `scanned` moves past the
    /// lines looked at. At most [`SCAN_BYTES`] of new output are looked at each time.
    fn matches(&self, re: &regex::Regex, scanned: &mut u64) -> bool {
        let written = self.progress().written;
        let from = (*scanned).max(written.saturating_sub(SCAN_BYTES));
        let Ok(bytes) = read_range(&self.log, from, written) else {
            return false;
        };
        let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else {
            return false;
        };
        let lines = String::from_utf8_lossy(&bytes[..last_newline]);
        *scanned = from + last_newline as u64 + 1;
        lines.lines().any(|l| re.is_match(l))
    }

    /// The end note, once, when it has ended and was not told of yet.
    fn take_end_note(&self) -> Option<String> {
        let end = {
            let mut p = self.progress();
            if p.told || p.end.is_none() {
                return None;
            }
            p.told = true;
            p.end.clone()?
        };
        let command = crate::text::one_line(&self.command, 80);
        let mut note = format!("{NOTE_PREFIX}{} ended: {end}] {command}", self.id);
        let last = self.last_lines();
        if !last.is_empty() {
            note.push_str("\nlast lines:\n");
            note.push_str(&last);
        }
        Some(note)
    }

    /// The last lines of its log (each cut short), for the end note.
    fn last_lines(&self) -> String {
        let size = self.progress().written;
        let from = size.saturating_sub(4096);
        let Ok(bytes) = read_range(&self.log, from, size) else {
            return String::new();
        };
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let start = lines.len().saturating_sub(NOTE_LINES);
        lines[start..]
            .iter()
            .map(|l| crate::text::one_line(l, NOTE_LINE_CHARS))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Moves the shell's output into its log until the shell has exited and the output is closed
/// (something it left running may hold it open: the shell runs until that ends too, or is
/// killed).
async fn pump(shell: Arc<Shell>, mut child: Started, mut reader: pipe::Receiver, mut file: File) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut status = None;
    while !(eof && status.is_some()) {
        tokio::select! {
            r = reader.read(&mut buf), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => shell.append(&mut file, &buf[..n]),
            },
            s = child.wait(), if status.is_none() => status = Some(s),
        }
    }
    if let Some(s) = status {
        shell.finish(End::of(s));
    }
}

/// Bytes `from..to` of `path`.
fn read_range(path: &Path, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut out = Vec::new();
    f.take(to.saturating_sub(from)).read_to_end(&mut out)?;
    Ok(out)
}

/// Decodes `path`'s bytes from `from` to `to` into at most `limit` characters (head and tail),
/// reading a chunk at a time; how many bytes were decoded (an incomplete character at the end
/// of a still-running shell's output is left for the next read).
fn decode_range(
    path: &Path,
    from: u64,
    to: u64,
    limit: usize,
    complete: bool,
) -> std::io::Result<(String, u64)> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut f = f.take(to.saturating_sub(from));
    let mut text = BoundedText::new(limit);
    let mut decoder = Utf8Decoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        decoder.decode(&buf[..n], |s| text.push(s));
    }
    let held = if complete {
        decoder.finish(|s| text.push(s));
        0
    } else {
        decoder.pending_len() as u64
    };
    let body = if text.is_empty() {
        String::new()
    } else {
        text.finish()
    };
    Ok((body, total - held))
}

/// Makes `dir` and its parents; `dir` itself readable by its owner only.
fn make_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests;
