//! Where sessions live: `$XDG_STATE_HOME/hx/sessions/<workspace>/<id>.jsonl` (default
//! `~/.local/state/hx/sessions/...`), one folder per workspace, one file per session named by
//! its time-sortable id. Folders are created 0700 and files 0600: a session holds the user's
//! code and commands.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::log::{is_busy, OpenError, SessionLog};
use super::record::{self, Figures, Header};
use crate::paths::Env;

/// Bytes of a file's end read to find its last `end` line when listing.
const TAIL_BYTES: u64 = 256 * 1024;
/// Lines read from a file's start to find its first task when listing.
const HEAD_LINES: usize = 8;

/// `$XDG_STATE_HOME/hx/sessions`, else `~/.local/state/hx/sessions`.
pub fn sessions_root(env: &Env) -> Option<PathBuf> {
    Some(crate::paths::state_dir(env)?.join("sessions"))
}

pub use crate::paths::workspace_folder;

/// A new session id: a UUIDv7, which sorts by creation time as text.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Now, as RFC 3339 UTC with seconds.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(SystemTime::now()).to_string()
}

/// One line of `hx sessions list`.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Summary {
    pub id: String,
    /// The id as `hx sessions list` shows it and `-r` takes it: unique in its workspace.
    pub short_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub path: PathBuf,
    pub started_at: String,
    /// The folder its tools ran in.
    pub workspace: String,
    pub model: String,
    pub provider: String,
    /// `answered`, `max_turns`, `stopped`, `error`, `interrupted`, `running` (another hx
    /// holds it now) or `unfinished` (its last run ended without a trace: killed or crashed).
    pub outcome: String,
    pub turns: u32,
    pub tool_calls: u32,
    /// The first line of the first task, cut to 100 characters.
    pub task: String,
    /// What its requests cost (its subagents' sessions are listed with their own, and
    /// `hx sessions list` adds them to their parent's): `null` when not known.
    pub cost: Option<f64>,
    #[serde(skip)]
    pub spend: crate::model::Spend,
    #[serde(skip)]
    pub modified: SystemTime,
}

/// The sessions of one workspace.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(root: &Path, workspace: &Path) -> Store {
        Store {
            dir: root.join(workspace_folder(workspace)),
        }
    }

    /// The store in a given folder (listing every workspace).
    pub fn at(dir: &Path) -> Store {
        Store {
            dir: dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.jsonl"))
    }

    /// Creates the session file of `id` (and the folders, 0700).
    pub fn create(&self, id: &str) -> Result<SessionLog, String> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let path = self.path_of(id);
        SessionLog::create(&path).map_err(|e| match e {
            OpenError::Busy => format!("{} is in use", path.display()),
            OpenError::Io(e) => format!("cannot create {}: {e}", path.display()),
        })
    }

    /// Every session file of the workspace, in id (creation) order.
    pub fn files(&self) -> Vec<PathBuf> {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        files
    }

    /// The workspace's sessions, newest first; subagents' only when `subagents` is set.
    /// Files that cannot be read are skipped with a warning each.
    pub fn list(&self, subagents: bool) -> (Vec<Summary>, Vec<String>) {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        for path in self.files() {
            match summarize(&path) {
                Ok(s) if subagents || s.parent_id.is_none() => out.push(s),
                Ok(_) => {}
                Err(e) => warnings.push(format!("skipping {}: {e}", path.display())),
            }
        }
        out.sort_by(|a, b| b.id.cmp(&a.id));
        let ids = self.ids();
        for s in &mut out {
            s.short_id = short_id(&s.id, ids.iter().map(String::as_str));
        }
        (out, warnings)
    }

    /// The ids of the workspace's sessions (subagents' too), in id order.
    pub fn ids(&self) -> Vec<String> {
        self.files().iter().filter_map(|p| stem(p)).collect()
    }

    /// `id` as a person types it, unique among this workspace's sessions (see [`short_id`]).
    pub fn short(&self, id: &str) -> String {
        let ids = self.ids();
        short_id(id, ids.iter().map(String::as_str))
    }

    /// The files whose id is `part`, or else holds it (any part of an id will do, the
    /// short one from a listing included; case and dashes do not matter).
    pub fn matching(&self, part: &str) -> Vec<PathBuf> {
        let files = self.files();
        if let Some(exact) = files.iter().find(|p| stem(p).as_deref() == Some(part)) {
            return vec![exact.clone()];
        }
        let wanted = part.to_ascii_lowercase().replace('-', "");
        if wanted.is_empty() {
            return Vec::new();
        }
        files
            .into_iter()
            .filter(|p| {
                stem(p).is_some_and(|s| s.to_ascii_lowercase().replace('-', "").contains(&wanted))
            })
            .collect()
    }

    /// The session whose id is `part` or holds it; among top-level sessions and subagents
    /// alike. An unknown or ambiguous part is an error listing candidates.
    pub fn find(&self, part: &str) -> Result<PathBuf, String> {
        let part = part.trim();
        if part.is_empty() {
            return Err("an empty session id".into());
        }
        let matches = self.matching(part);
        match matches.len() {
            1 => Ok(matches[0].clone()),
            0 => {
                let (recent, _) = self.list(false);
                let ids = self.ids();
                let shown: Vec<String> = recent
                    .iter()
                    .take(5)
                    .map(|s| short_id(&s.id, ids.iter().map(String::as_str)))
                    .collect();
                Err(if shown.is_empty() {
                    format!("no session {part:?} in this workspace (it has none)")
                } else {
                    format!(
                        "no session {part:?} in this workspace; recent ones: {} ('hx sessions list' shows all)",
                        shown.join(", ")
                    )
                })
            }
            n => Err(ambiguous(part, &matches, n, &self.ids())),
        }
    }

    /// The session `-c` continues: the top-level one written most recently.
    pub fn newest(&self) -> Result<Option<PathBuf>, Vec<String>> {
        let (list, warnings) = self.list(false);
        let newest = list
            .into_iter()
            .max_by(|a, b| a.modified.cmp(&b.modified).then(a.id.cmp(&b.id)))
            .map(|s| s.path);
        match newest {
            Some(p) => Ok(Some(p)),
            None if warnings.is_empty() => Ok(None),
            None => Err(warnings),
        }
    }

    /// Removes the session at `path` with its subagents' files; gives the ids removed. A
    /// session that a run is writing now is left, and is the error.
    pub fn remove(&self, path: &Path) -> Result<Vec<String>, String> {
        let header = record::read_header(path).map_err(|e| e.to_string())?;
        if is_busy(path) {
            return Err(format!(
                "session {} is in use by a running hx; not removed",
                self.short(&header.id)
            ));
        }
        let mut removed = Vec::new();
        for (child, child_path) in self.children(&header.id) {
            if std::fs::remove_file(&child_path).is_ok() {
                removed.push(child.id);
            }
        }
        std::fs::remove_file(path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        removed.insert(0, header.id);
        Ok(removed)
    }

    /// Removes the sessions last written longer than `age` ago (a subagent's with its
    /// parent's, or alone when its parent is gone), never one in use; gives the ids removed
    /// and what could not be.
    pub fn prune(&self, age: std::time::Duration) -> (Vec<String>, Vec<String>) {
        let now = SystemTime::now();
        let old = |p: &Path| {
            std::fs::metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|d| d > age))
        };
        let (mut removed, mut problems) = (Vec::new(), Vec::new());
        for path in self.files() {
            if !path.exists() || !old(&path) {
                continue;
            }
            match record::read_header(&path) {
                // A subagent's file goes with its parent, unless the parent is gone.
                Ok(h)
                    if h.parent_id
                        .as_ref()
                        .is_some_and(|p| self.path_of(p).exists()) => {}
                Ok(_) => match self.remove(&path) {
                    Ok(ids) => removed.extend(ids),
                    Err(e) => problems.push(e),
                },
                // Unreadable and old: not a session anyone can continue.
                Err(_) if !is_busy(&path) => match std::fs::remove_file(&path) {
                    Ok(()) => removed.push(stem(&path).unwrap_or_default()),
                    Err(e) => problems.push(format!("cannot remove {}: {e}", path.display())),
                },
                Err(_) => {}
            }
        }
        (removed, problems)
    }

    /// The subagent sessions started by session `parent_id`, in id order.
    pub fn children(&self, parent_id: &str) -> Vec<(Header, PathBuf)> {
        self.files()
            .into_iter()
            .filter_map(|p| {
                let h = record::read_header(&p).ok()?;
                (h.parent_id.as_deref() == Some(parent_id)).then_some((h, p))
            })
            .collect()
    }
}

/// Hex digits of a short id. A UUIDv7 begins with its time, which recent sessions share, and
/// ends with random bits: 8 of those are 4 billion values, unique in any one workspace.
pub const SHORT_ID: usize = 8;
/// Candidates an ambiguous id lists.
const CANDIDATES: usize = 10;

/// The end of `id`, [`SHORT_ID`] characters or as many more as it takes for no other id of
/// `ids` to hold it (an id typed with `-r` may be any part).
pub fn short_id<'a>(id: &str, ids: impl IntoIterator<Item = &'a str>) -> String {
    let others: Vec<&str> = ids.into_iter().filter(|o| *o != id).collect();
    let chars: Vec<char> = id.chars().collect();
    let mut n = SHORT_ID.min(chars.len());
    loop {
        let tail: String = chars[chars.len() - n..].iter().collect();
        if n >= chars.len() || !others.iter().any(|o| o.contains(&tail)) {
            return tail;
        }
        n += 1;
    }
}

fn stem(path: &Path) -> Option<String> {
    path.file_stem().map(|s| s.to_string_lossy().into_owned())
}

/// The error for an id that `n` sessions hold: the first candidates, one a line, each with
/// its time and first message.
fn ambiguous(part: &str, matches: &[PathBuf], n: usize, ids: &[String]) -> String {
    let mut text =
        format!("session id {part:?} is ambiguous: {n} sessions hold it; type more of it:");
    for path in matches.iter().rev().take(CANDIDATES) {
        let id = stem(path).unwrap_or_default();
        let short = short_id(&id, ids.iter().map(String::as_str));
        match summarize(path) {
            Ok(s) => text.push_str(&format!("\n  {short}  {}  {}", s.started_at, s.task)),
            Err(_) => text.push_str(&format!("\n  {short}  (unreadable)")),
        }
    }
    if n > CANDIDATES {
        text.push_str(&format!(
            "\n  ... and {} more ('hx sessions list' shows all)",
            n - CANDIDATES
        ));
    }
    text
}

/// A listing line for one file, reading its start and its end rather than all of it.
pub fn summarize(path: &Path) -> Result<Summary, String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        return Err("not a file".into());
    }
    let header = record::read_header(path).map_err(|e| e.to_string())?;
    let task = first_task(path).unwrap_or_default();
    let (outcome, figures) = match last_end(path) {
        Some((outcome, figures)) => (outcome, figures),
        // No end line at the end: read it all for the figures of the run that did not end.
        None => {
            let loaded = record::read(path).map_err(|e| e.to_string())?;
            let outcome = if is_busy(path) {
                "running"
            } else {
                "unfinished"
            };
            (outcome.to_string(), loaded.totals)
        }
    };
    Ok(Summary {
        short_id: short_id(&header.id, []),
        id: header.id,
        parent_id: header.parent_id,
        path: path.to_path_buf(),
        started_at: header.started_at,
        workspace: header.workspace,
        model: header.model,
        provider: header.provider,
        outcome,
        turns: figures.turns,
        tool_calls: figures.tool_calls,
        task,
        cost: figures.cost.amount(),
        spend: figures.cost,
        modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    })
}

/// The first line of the first user message among the file's first lines: what the user
/// typed for it (`/NAME args`, whose message is a body the user never wrote), else its text.
fn first_task(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    let reader = std::io::BufReader::new(file).take(8 * 1024 * 1024);
    let mut typed = None;
    for line in reader.lines().take(HEAD_LINES).skip(1) {
        let line = line.ok()?;
        let v: serde_json::Value = serde_json::from_str(&line).ok()?;
        if v["type"] == "typed" {
            typed = v["typed"].as_str().map(str::to_string);
            continue;
        }
        if v["type"] == "message" && v["message"]["role"] == "user" {
            let text = typed
                .as_deref()
                .unwrap_or_else(|| v["message"]["content"].as_str().unwrap_or(""));
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return Some(crate::text::one_line(first.trim(), 100));
        }
    }
    None
}

/// The outcome and session figures of the file's last `end` line, when only lines written
/// between runs follow it: `hx rewind` appends `checkpoint` and `rewind` lines to a session
/// that ended, and they are no run of their own, so a session that answered still did.
fn last_end(path: &Path) -> Option<(String, Figures)> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let start = len.saturating_sub(TAIL_BYTES);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut tail = Vec::new();
    file.take(TAIL_BYTES).read_to_end(&mut tail).ok()?;
    let mut body = tail.strip_suffix(b"\n")?;
    #[derive(serde::Deserialize)]
    struct EndOnly {
        #[serde(rename = "type")]
        kind: String,
        outcome: Option<String>,
        session: Option<Figures>,
    }
    loop {
        let (rest, last) = match body.iter().rposition(|&b| b == b'\n') {
            Some(i) => (Some(&body[..i]), &body[i + 1..]),
            // The whole file, or a line cut by where the tail begins.
            None if start == 0 => (None, body),
            None => return None,
        };
        let e: EndOnly = serde_json::from_slice(last).ok()?;
        match e.kind.as_str() {
            "end" => {
                return Some((
                    e.outcome.unwrap_or_else(|| "unknown".into()),
                    e.session.unwrap_or_default(),
                ))
            }
            "checkpoint" | "rewind" => body = rest?,
            _ => return None,
        }
    }
}
