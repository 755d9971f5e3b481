//! A session's run as the editor sees it: the events of `crate::events` as `session/update`
//! notifications. Like the trace and `--json`, this view only formats what it is told.
//!
//! The main agent's text and reasoning stream as message and thought chunks; every tool call
//! (a subagent's too, its id and title marked with the subagent) is a `tool_call` when it
//! starts and a `tool_call_update` when it ends; a file write or edit ends with a diff of the
//! whole file; a successful `todo_write` is a `plan`; each response's usage is a
//! `usage_update`, and a prompt's token totals are its answer's `usage`. Everything else
//! (warnings, hooks' lines) goes to stderr, which the protocol leaves free for logs.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, Cost, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionNotification, SessionUpdate, TextContent, ToolCall as AcpCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    Usage as AcpUsage, UsageUpdate, CLIENT_METHOD_NAMES,
};
use serde_json::Value;

use super::rpc::Output;
use crate::events::{arg_str, Event, Observer, Scope};
use crate::model::{Spend, ToolCall, Usage};
use crate::text::{one_line, Warning};
use crate::tools::todo::{self, Status};
use crate::tools::{About, Kind, Shown, ToolResult};

/// The longest file a diff shows whole: past it, the update says so in text instead.
pub const DIFF_MAX_BYTES: u64 = 1 << 20;

/// How long a tool call's title is.
const TITLE_CHARS: usize = 120;

/// Sends one update of session `id` to the client.
#[derive(Clone)]
pub struct Updates {
    pub session_id: String,
    pub out: Output,
}

impl Updates {
    pub fn send(&self, update: SessionUpdate) {
        self.out.notify(
            CLIENT_METHOD_NAMES.session_update,
            SessionNotification::new(self.session_id.clone(), update),
        );
    }

    pub fn text(&self, text: &str) -> SessionUpdate {
        SessionUpdate::AgentMessageChunk(chunk(text))
    }
}

pub fn chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

pub struct AcpView {
    updates: Updates,
    root: PathBuf,
    /// The model's context window: another model chosen for the session has its own.
    window: AtomicU64,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls started and not yet finished, by their id as the client knows it.
    open: HashSet<String>,
    /// A file's text before the call that writes or edits it.
    before: HashMap<String, Option<String>>,
    /// What this session's requests cost so far.
    spent: Spend,
    /// The tokens of the running prompt's requests (its subagents' and summaries' too, as
    /// `--json` counts a run), and whether any response reported usage at all.
    prompt: Usage,
    prompt_reported: bool,
}

impl AcpView {
    pub fn new(updates: Updates, root: &Path, window: u64) -> Arc<AcpView> {
        Arc::new(AcpView {
            updates,
            root: root.to_path_buf(),
            window: AtomicU64::new(window),
            state: Mutex::new(State::default()),
        })
    }

    pub fn updates(&self) -> Updates {
        self.updates.clone()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_window(&self, window: u64) {
        self.window.store(window, Ordering::Relaxed);
    }

    /// A prompt begins: [`AcpView::prompt_usage`] counts from here.
    pub fn begin_prompt(&self) {
        let mut st = self.state();
        st.prompt = Usage::default();
        st.prompt_reported = false;
    }

    /// The running (or just ended) prompt's token totals in the schema's shape; `None` when
    /// no response said what it used, so that zeros are never reported as counts. Input
    /// includes the cached tokens, as the servers count `prompt_tokens`; output includes the
    /// thinking.
    pub fn prompt_usage(&self) -> Option<AcpUsage> {
        let st = self.state();
        if !st.prompt_reported {
            return None;
        }
        let u = &st.prompt;
        let total = u.prompt_tokens.saturating_add(u.completion_tokens);
        Some(
            AcpUsage::new(total, u.prompt_tokens, u.completion_tokens)
                .cached_read_tokens(u.prompt_cache_hit_tokens)
                .thought_tokens((u.reasoning_tokens > 0).then_some(u.reasoning_tokens)),
        )
    }

    fn count(&self, usage: Option<&Usage>, cost: Option<crate::model::Cost>) -> Spend {
        let mut st = self.state();
        st.spent.add_cost(cost);
        if let Some(u) = usage {
            st.prompt.add(u);
            st.prompt_reported = true;
        }
        st.spent
    }

    /// The calls a cancelled prompt left open end as failed, so that no spinner in the editor
    /// outlives its prompt.
    pub fn close_open(&self) {
        let open: Vec<String> = self.state().open.drain().collect();
        for id in open {
            let fields = ToolCallUpdateFields::new()
                .status(ToolCallStatus::Failed)
                .content(vec![text_content(crate::app::outcome::INTERRUPTED)]);
            self.updates
                .send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id, fields,
                )));
        }
    }

    fn path_of(&self, args: Option<&Value>) -> Option<PathBuf> {
        let p = arg_str(args, "path")?;
        Some(self.root.join(p))
    }

    fn tool_started(&self, scope: &Scope, call: &ToolCall, args: Option<&Value>, tool: &About) {
        let id = call_id(scope, call);
        let path = self.path_of(args);
        if matches!(tool.shown, Shown::FileWrite | Shown::FileEdit) {
            if let Some(p) = &path {
                self.state().before.insert(id.clone(), read_bounded(p));
            }
        }
        self.state().open.insert(id.clone());
        let line = args
            .and_then(|a| a.get("offset"))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let locations = path
            .map(|p| vec![ToolCallLocation::new(p).line(line)])
            .unwrap_or_default();
        let raw = args
            .cloned()
            .unwrap_or_else(|| Value::String(call.arguments.clone()));
        let started = AcpCall::new(id, title(scope, call, args, tool))
            .kind(kind(tool.kind))
            .status(ToolCallStatus::InProgress)
            .locations(locations)
            .raw_input(raw);
        self.updates.send(SessionUpdate::ToolCall(started));
    }

    fn tool_finished(
        &self,
        scope: &Scope,
        call: &ToolCall,
        args: Option<&Value>,
        tool: &About,
        result: &ToolResult,
    ) {
        let id = call_id(scope, call);
        let before = {
            let mut st = self.state();
            st.open.remove(&id);
            st.before.remove(&id)
        };
        let status = match result.is_error {
            true => ToolCallStatus::Failed,
            false => ToolCallStatus::Completed,
        };
        let diff = match (&tool.shown, result.is_error, self.path_of(args)) {
            // What write_file wrote is its argument, wherever it went (the disk, or the
            // editor's buffer); an edit is read back.
            (Shown::FileWrite, false, Some(path)) => {
                arg_str(args, "content").map(|new| Diff::new(path, new).old_text(before.flatten()))
            }
            (Shown::FileEdit, false, Some(path)) => {
                read_bounded(&path).map(|new| Diff::new(path, new).old_text(before.flatten()))
            }
            _ => None,
        };
        let content = match diff {
            Some(d) => vec![ToolCallContent::Diff(d)],
            None => vec![text_content(&result.content)],
        };
        let fields = ToolCallUpdateFields::new().status(status).content(content);
        self.updates
            .send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                id, fields,
            )));
        if tool.shown == Shown::Plan && !result.is_error && !scope.is_subagent() {
            if let Some(Ok(items)) = args.map(todo::parse_todos) {
                self.updates.send(SessionUpdate::Plan(plan(&items)));
            }
        }
    }

    fn response(&self, usage: Option<&Usage>, cost: Option<crate::model::Cost>) {
        let spent = self.count(usage, cost);
        let Some(u) = usage else { return };
        let used = u.prompt_tokens.saturating_add(u.completion_tokens);
        let cost = spent
            .known()
            .map(|(nanos, currency)| Cost::new(nanos as f64 / 1e9, currency.code()));
        self.updates.send(SessionUpdate::UsageUpdate(
            UsageUpdate::new(used, self.window.load(Ordering::Relaxed)).cost(cost),
        ));
    }
}

impl Observer for AcpView {
    fn event(&self, scope: &Scope, event: &Event<'_>) {
        let main = !scope.is_subagent();
        match event {
            Event::Text(t) if main => self.updates.send(self.updates.text(t)),
            Event::Reasoning(t) if main => self
                .updates
                .send(SessionUpdate::AgentThoughtChunk(chunk(t))),
            Event::ToolStarted { call, args, tool } => self.tool_started(scope, call, *args, tool),
            Event::ToolFinished {
                call,
                args,
                tool,
                result,
            } => self.tool_finished(scope, call, *args, tool, result),
            Event::Response(turn) => self.response(turn.usage.as_ref(), turn.cost),
            Event::SummaryUsage(usage, cost) => {
                self.count(Some(usage), *cost);
            }
            Event::Warning(w) => log(&format!("{}{w}", scope.prefix)),
            Event::Error(e) => log(&Warning::new(*e).to_string()),
            Event::Retrying { why, .. } => log(&format!("{}hx: retrying: {why}", scope.prefix)),
            Event::HookRan {
                event,
                command,
                ended,
                ..
            } if *ended != "exit 0" => log(&format!(
                "{}hx: hook {event} {}: {ended}",
                scope.prefix,
                one_line(command, 80)
            )),
            _ => {}
        }
    }
}

/// A line on stderr (the editor's log of the agent).
pub fn log(line: &str) {
    crate::term::Term::plain().line(line);
}

/// The id of a call as the client knows it: a subagent's calls are marked with it, since
/// ids are only unique within one agent's turns.
pub fn call_id(scope: &Scope, call: &ToolCall) -> String {
    match scope.is_subagent() {
        true => format!("{}:{}", scope.key, call.id),
        false => call.id.clone(),
    }
}

/// The tool's kind as ACP's `ToolKind`, by the name the tool itself gives it.
pub fn kind(kind: Kind) -> ToolKind {
    serde_json::from_value(Value::from(kind.acp_name())).unwrap_or(ToolKind::Other)
}

/// What the editor shows of a call, in one line.
pub fn title(scope: &Scope, call: &ToolCall, args: Option<&Value>, tool: &About) -> String {
    let path = || arg_str(args, "path").unwrap_or("?");
    let text = match &tool.shown {
        Shown::Command => arg_str(args, "command").unwrap_or(&call.name).to_string(),
        Shown::FileWrite => format!("Write {}", path()),
        Shown::FileEdit => format!("Edit {}", path()),
        Shown::Plan => "Update the plan".to_string(),
        Shown::Skill => format!("Load skill {}", arg_str(args, "name").unwrap_or("?")),
        Shown::Subagent => format!("Task: {}", arg_str(args, "description").unwrap_or("")),
        Shown::Mcp { server, tool } => format!("{server}: {tool}"),
        Shown::Other if tool.kind == Kind::Read && args.is_some() => format!("Read {}", path()),
        Shown::Other => crate::events::human::call_summary(&call.name, args),
    };
    one_line(&format!("{}{text}", scope.prefix.trim_start()), TITLE_CHARS)
}

pub fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

/// The model's todo list as an ACP plan (hx's todos have no priority: all are medium).
pub fn plan(items: &[todo::Todo]) -> Plan {
    Plan::new(
        items
            .iter()
            .map(|t| {
                let status = match t.status {
                    Status::Pending => PlanEntryStatus::Pending,
                    Status::InProgress => PlanEntryStatus::InProgress,
                    Status::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(t.content.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// A file's text, when it is one and at most [`DIFF_MAX_BYTES`]; `None` otherwise (a new
/// file, a binary one, a huge one).
fn read_bounded(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Not blocking: the path is the model's, and a FIFO there would stop the whole loop.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(DIFF_MAX_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > DIFF_MAX_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}
