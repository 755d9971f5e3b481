//! The view for a program (`hx agent --json`): JSON Lines on stdout, one event per line,
//! flushed per line, nothing else on stdout.
//!
//! The event and item names are those of Codex's `exec --json` where the idea is the same, so
//! parsers written for it read hx too: `thread.started`, `turn.started`, `item.started`,
//! `item.updated`, `item.completed`, `turn.completed`, `turn.failed`, `error`; items
//! `agent_message`, `reasoning`, `command_execution`, `file_change`, `todo_list`, `error`.
//! hx's own items are `load_skill`, `task`, `tool_call` (any other tool), `compaction` and
//! `goal_check` (a round of `--until`). The README has
//! the schema; [`SCHEMA_VERSION`] changes when a field changes meaning or goes away.

use std::collections::{HashMap, VecDeque};
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Map, Value};

use super::{arg_str, Event, GoalCheck, Observer, Scope, Start, TurnEnd};
use crate::model::{AssistantTurn, ToolCall, Usage};
use crate::term::Term;
use crate::tools::todo::{self, Status};
use crate::tools::{About, Shown, ToolResult};

/// Where a scope's compaction in progress is kept among the open items (no call id has a NUL).
const COMPACTION_KEY: &str = "\u{0}compaction";

/// The version of the event schema, in `thread.started`.
pub const SCHEMA_VERSION: u32 = 1;

pub struct JsonView {
    out: Mutex<Box<dyn Write + Send>>,
    /// Where fatal errors go (stderr), the only thing this mode writes there.
    term: Arc<Term>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next_id: u64,
    /// Tool calls started and not yet completed, by scope key and call id. A queue, since a
    /// careless server may give two calls one id.
    open: HashMap<(String, String), VecDeque<OpenItem>>,
    /// The todo list item of each scope that has one.
    todos: HashMap<String, String>,
    /// Tokens of every request of the turn, subagents' included.
    usage: Usage,
    costs: super::Costs,
    /// Where the workspace is, to tell a new file from an existing one.
    cwd: Option<PathBuf>,
}

/// A started item, kept until its completion.
struct OpenItem {
    /// The item as last sent (`id` and `type` included).
    item: Map<String, Value>,
    shown: Shown,
    /// Todo calls become an item only once they succeed.
    announced: bool,
    blocked: Option<(String, String)>,
}

impl JsonView {
    /// A view writing to stdout.
    pub fn stdout(term: Arc<Term>) -> JsonView {
        JsonView::new(Box::new(std::io::stdout()), term)
    }

    pub fn new(out: Box<dyn Write + Send>, term: Arc<Term>) -> JsonView {
        JsonView {
            out: Mutex::new(out),
            term,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// One line, flushed. A reader that went away loses the rest; the run goes on.
    fn send(&self, event: Value) {
        let text = event.to_string();
        let line = safe_json(&text);
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }

    fn item(&self, kind: &str, item: &Map<String, Value>) {
        self.send(json!({"type": kind, "item": item}));
    }

    /// A new item with the next id, `item_0`, `item_1`, ... unique in the run.
    fn new_item(st: &mut State, scope: &Scope, kind: &str) -> Map<String, Value> {
        let mut item = Self::unnumbered_item(st, scope, kind);
        Self::number(st, &mut item);
        item
    }

    /// Gives `item` the next id. Ids are taken only by items that are sent, so they run
    /// without gaps (a program may count on it).
    fn number(st: &mut State, item: &mut Map<String, Value>) {
        let id = format!("item_{}", st.next_id);
        st.next_id += 1;
        // First, as Codex writes it.
        item.shift_insert(0, "id".into(), id.into());
    }

    /// A new item without an id yet: one that may never be sent as such (a todo_write call
    /// shows as its list).
    fn unnumbered_item(st: &mut State, scope: &Scope, kind: &str) -> Map<String, Value> {
        let mut item = Map::new();
        item.insert("type".into(), kind.into());
        if let Some(parent) = parent_item(st, scope) {
            item.insert("parent_item_id".into(), parent.into());
        }
        item
    }

    fn started(&self, s: &Start<'_>) {
        self.send(json!({
            "type": "thread.started",
            "thread_id": s.session_id,
            "schema_version": SCHEMA_VERSION,
            "hx_version": env!("CARGO_PKG_VERSION"),
            "model": s.model,
            "provider": s.provider,
            "base_url": crate::model::client::shown_url(s.base_url),
            "resumed": s.resumed,
        }));
    }

    fn warning(&self, scope: &Scope, w: &crate::text::Warning) {
        let mut st = self.state();
        let line = w.to_string();
        let (kind, message) = match w.is_advisory() {
            true => ("warning", w.text()),
            false => ("error", line.strip_prefix("hx: ").unwrap_or(&line)),
        };
        let mut item = Self::new_item(&mut st, scope, kind);
        item.insert("message".into(), message.into());
        drop(st);
        self.item("item.completed", &item);
    }

    fn response(&self, scope: &Scope, turn: &AssistantTurn) {
        let mut st = self.state();
        if let Some(u) = &turn.usage {
            st.usage.add(u);
            st.costs.count(scope, turn.cost);
        }
        let mut items = Vec::new();
        if let Some(r) = turn.reasoning.as_deref().filter(|r| !r.trim().is_empty()) {
            let mut item = Self::new_item(&mut st, scope, "reasoning");
            item.insert("text".into(), r.into());
            items.push(item);
        }
        if !turn.content.trim().is_empty() {
            let mut item = Self::new_item(&mut st, scope, "agent_message");
            item.insert("text".into(), turn.content.clone().into());
            items.push(item);
        }
        drop(st);
        for item in items {
            self.item("item.completed", &item);
        }
    }

    /// hx's `goal_check` item, a round of `--until`: its command, output and exit code as a
    /// `command_execution`'s, with the round and whether it passed; `status` is `completed`
    /// when it passed, `failed` when not.
    fn goal_checked(&self, scope: &Scope, check: &GoalCheck<'_>) {
        let mut st = self.state();
        let mut item = Self::new_item(&mut st, scope, "goal_check");
        drop(st);
        item.insert("command".into(), check.command.into());
        item.insert("round".into(), check.round.into());
        item.insert("max_rounds".into(), check.max_rounds.into());
        item.insert("aggregated_output".into(), check.output.into());
        item.insert("exit_code".into(), check.exit_code.into());
        item.insert("passed".into(), check.passed.into());
        // Started and completed, as every item that is not a message is.
        item.insert("status".into(), "in_progress".into());
        self.item("item.started", &item);
        let status = if check.passed { "completed" } else { "failed" };
        item.insert("status".into(), status.into());
        self.item("item.completed", &item);
    }

    fn tool_started(&self, scope: &Scope, call: &ToolCall, args: Option<&Value>, tool: &About) {
        let shown = tool.shown.clone();
        let mut st = self.state();
        // The item types of hx's schema (README): Codex's, and hx's own.
        let type_name = match shown {
            Shown::Command => "command_execution",
            Shown::FileWrite | Shown::FileEdit => "file_change",
            Shown::Skill => "load_skill",
            Shown::Subagent => "task",
            Shown::Mcp { .. } => "mcp_tool_call",
            Shown::Plan | Shown::Other => "tool_call",
        };
        let mut item = if shown == Shown::Plan {
            Self::unnumbered_item(&mut st, scope, type_name)
        } else {
            Self::new_item(&mut st, scope, type_name)
        };
        item.insert("call_id".into(), call.id.clone().into());
        // The arguments as parsed, or as sent when they are not JSON.
        let arguments = || {
            args.cloned()
                .unwrap_or_else(|| Value::String(call.arguments.clone()))
        };
        match &shown {
            Shown::Command => {
                let command = arg_str(args, "command").unwrap_or(&call.arguments);
                item.insert("command".into(), command.into());
                item.insert("aggregated_output".into(), "".into());
                item.insert("exit_code".into(), Value::Null);
            }
            Shown::FileWrite | Shown::FileEdit => {
                let changes: Vec<Value> = arg_str(args, "path")
                    .map(|path| {
                        let created = shown == Shown::FileWrite
                            && st.cwd.as_ref().is_some_and(|cwd| !cwd.join(path).exists());
                        json!({"path": path, "kind": if created { "add" } else { "update" }})
                    })
                    .into_iter()
                    .collect();
                item.insert("changes".into(), changes.into());
            }
            Shown::Skill => {
                let name = arg_str(args, "name").unwrap_or_default();
                item.insert("name".into(), name.into());
            }
            Shown::Subagent => {
                let description = arg_str(args, "description").unwrap_or_default();
                let prompt = arg_str(args, "prompt").unwrap_or_default();
                item.insert("description".into(), description.into());
                item.insert("prompt".into(), prompt.into());
            }
            Shown::Mcp { server, tool } => {
                item.insert("server".into(), server.clone().into());
                item.insert("tool".into(), tool.clone().into());
                item.insert("arguments".into(), arguments());
                item.insert("result".into(), Value::Null);
                item.insert("error".into(), Value::Null);
            }
            Shown::Plan | Shown::Other => {
                item.insert("tool".into(), call.name.clone().into());
                item.insert("arguments".into(), arguments());
            }
        }
        item.insert("status".into(), "in_progress".into());
        // A plan shows as the list it writes, once it is known to be valid.
        let announced = shown != Shown::Plan;
        st.open
            .entry((scope.key.clone(), call.id.clone()))
            .or_default()
            .push_back(OpenItem {
                item: item.clone(),
                shown,
                announced,
                blocked: None,
            });
        drop(st);
        if announced {
            self.item("item.started", &item);
        }
    }

    fn tool_blocked(&self, scope: &Scope, call: &ToolCall, by: &str, reason: &str) {
        let mut st = self.state();
        if let Some(open) = st
            .open
            .get_mut(&(scope.key.clone(), call.id.clone()))
            .and_then(|q| q.front_mut())
        {
            open.blocked = Some((by.to_string(), reason.to_string()));
        }
    }

    fn tool_finished(
        &self,
        scope: &Scope,
        call: &ToolCall,
        args: Option<&Value>,
        result: &ToolResult,
    ) {
        let mut st = self.state();
        let key = (scope.key.clone(), call.id.clone());
        let Some(open) = st.open.get_mut(&key).and_then(VecDeque::pop_front) else {
            return;
        };
        if st.open.get(&key).is_some_and(VecDeque::is_empty) {
            st.open.remove(&key);
        }
        if open.shown == Shown::Plan && open.blocked.is_none() && !result.is_error {
            if let Some(Ok(items)) = args.map(todo::parse_todos) {
                self.todos(st, scope, &items);
                return;
            }
        }
        let mut item = open.item;
        // `declined` only where Codex has it (a command); its other items end `completed` or
        // `failed`, and strict parsers of its schema refuse anything else. `blocked_by` says
        // why either way.
        let command = open.shown == Shown::Command;
        let status = match (&open.blocked, command) {
            (Some(_), true) => "declined",
            (Some(_), false) => "failed",
            (None, true) if result.exit_code == Some(0) && !result.is_error => "completed",
            (None, true) if result.shell_id.is_some() => "completed",
            (None, true) => "failed",
            (None, _) if result.is_error => "failed",
            (None, _) => "completed",
        };
        let (output_key, output): (&str, Value) = match open.shown {
            // What the command printed, as in Codex: the exit code is its own field, and a
            // refused command printed nothing (`reason` says why).
            Shown::Command if open.blocked.is_some() => ("aggregated_output", "".into()),
            Shown::Command => (
                "aggregated_output",
                command_output(&result.content, result.exit_code).into(),
            ),
            // Codex's shapes: MCP content blocks, or an error message.
            Shown::Mcp { .. } if status == "completed" => (
                "result",
                json!({
                    "content": [{"type": "text", "text": result.content}],
                    "structured_content": null,
                }),
            ),
            Shown::Mcp { .. } => ("error", json!({"message": result.content})),
            _ => ("output", result.content.clone().into()),
        };
        item.insert(output_key.into(), output);
        if command {
            item.insert("exit_code".into(), result.exit_code.into());
            if let Some(id) = &result.shell_id {
                item.insert("shell_id".into(), id.clone().into());
            }
        }
        item.insert("status".into(), status.into());
        if let Some((by, reason)) = open.blocked {
            item.insert("blocked_by".into(), by.into());
            item.insert("reason".into(), reason.into());
        }
        if !open.announced {
            Self::number(&mut st, &mut item);
        }
        drop(st);
        if !open.announced {
            let mut started = item.clone();
            started.insert("status".into(), "in_progress".into());
            started.remove(output_key);
            self.item("item.started", &started);
        }
        self.item("item.completed", &item);
    }

    /// The scope's todo list: started with its first version, updated with each later one,
    /// completed when the turn ends.
    fn todos(&self, mut st: MutexGuard<'_, State>, scope: &Scope, items: &[todo::Todo]) {
        let list: Vec<Value> = items
            .iter()
            .map(|t| {
                let status = match t.status {
                    Status::Pending => "pending",
                    Status::InProgress => "in_progress",
                    Status::Completed => "completed",
                };
                json!({
                    "text": t.content,
                    "completed": t.status == Status::Completed,
                    "status": status,
                })
            })
            .collect();
        let (event, mut item) = match st.todos.get(&scope.key) {
            Some(id) => {
                let mut item = Map::new();
                item.insert("id".into(), id.clone().into());
                item.insert("type".into(), "todo_list".into());
                if let Some(parent) = parent_item(&st, scope) {
                    item.insert("parent_item_id".into(), parent.into());
                }
                ("item.updated", item)
            }
            None => {
                let item = Self::new_item(&mut st, scope, "todo_list");
                if let Some(id) = item.get("id").and_then(Value::as_str) {
                    st.todos.insert(scope.key.clone(), id.to_string());
                }
                ("item.started", item)
            }
        };
        item.insert("items".into(), list.into());
        // The last version is what the list completes with.
        st.open.insert(
            (scope.key.clone(), String::from("\u{0}todo")),
            VecDeque::from([OpenItem {
                item: item.clone(),
                shown: Shown::Plan,
                announced: true,
                blocked: None,
            }]),
        );
        drop(st);
        self.item(event, &item);
    }

    /// A compaction of `scope`'s conversation: started now, completed by
    /// [`JsonView::compaction_ended`].
    fn compaction_started(&self, scope: &Scope, trigger: &str, tokens: u64) {
        let mut st = self.state();
        let mut item = Self::new_item(&mut st, scope, "compaction");
        item.insert("trigger".into(), trigger.into());
        item.insert("tokens_before".into(), tokens.into());
        item.insert("status".into(), "in_progress".into());
        st.open.insert(
            (scope.key.clone(), String::from(COMPACTION_KEY)),
            VecDeque::from([OpenItem {
                item: item.clone(),
                shown: Shown::Other,
                announced: true,
                blocked: None,
            }]),
        );
        drop(st);
        self.item("item.started", &item);
    }

    fn compaction_ended(&self, scope: &Scope, status: &str, fields: Map<String, Value>) {
        let mut st = self.state();
        let Some(open) = st
            .open
            .remove(&(scope.key.clone(), String::from(COMPACTION_KEY)))
            .and_then(|mut q| q.pop_front())
        else {
            return;
        };
        drop(st);
        let mut item = open.item;
        item.extend(fields);
        item.insert("status".into(), status.into());
        self.item("item.completed", &item);
    }

    /// Completes what is still open when the turn ends: the todo lists, and calls cut short
    /// by a signal (failed, so every started item has its completion).
    fn close_open(&self) {
        let mut st = self.state();
        let mut open: Vec<OpenItem> = st.open.drain().flat_map(|(_, q)| q).collect();
        st.todos.clear();
        drop(st);
        open.sort_by_key(|o| {
            o.item
                .get("id")
                .and_then(Value::as_str)
                .and_then(|id| id.strip_prefix("item_"))
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(u64::MAX)
        });
        for o in open.into_iter().filter(|o| o.announced) {
            let mut item = o.item;
            if o.shown != Shown::Plan {
                item.insert("status".into(), "failed".into());
            }
            self.item("item.completed", &item);
        }
    }

    fn turn_ended(&self, end: &TurnEnd) {
        self.close_open();
        let (usage, costs) = {
            let mut st = self.state();
            (std::mem::take(&mut st.usage), std::mem::take(&mut st.costs))
        };
        match end {
            TurnEnd::Answered(_) => self.send(json!({
                "type": "turn.completed",
                "usage": usage_json(&usage, &costs),
            })),
            TurnEnd::Failed {
                message,
                kind,
                status,
            } => {
                self.send(json!({
                    "type": "turn.failed",
                    "error": {"message": message, "kind": kind.as_str(), "status": status},
                    "usage": usage_json(&usage, &costs),
                }));
                // The one thing this mode writes on stderr: why the run failed.
                self.term.line(&format!("hx: {message}"));
            }
        }
    }
}

/// A turn's `usage`, in Codex's names; the output tokens spent thinking
/// (`reasoning_output_tokens`) when the server counted any. hx adds `cost` (a number in
/// `currency`, `null` when a request had no price) once a request reported usage, and
/// `subagent_cost` for the subagents' part of it.
pub fn usage_json(usage: &Usage, costs: &super::Costs) -> Value {
    let mut u = json!({
        "input_tokens": usage.prompt_tokens,
        "cached_input_tokens": usage.prompt_cache_hit_tokens,
        "output_tokens": usage.completion_tokens,
    });
    if let (Some(obj), n @ 1..) = (u.as_object_mut(), usage.reasoning_tokens) {
        obj.insert("reasoning_output_tokens".into(), n.into());
    }
    if let Some(obj) = u.as_object_mut().filter(|_| !costs.all.is_empty()) {
        obj.insert("cost".into(), costs.all.amount().into());
        if let Some(c) = costs.all.currency.filter(|_| !costs.all.mixed) {
            obj.insert("currency".into(), c.code().into());
        }
        if !costs.subagents.is_empty() {
            obj.insert("subagent_cost".into(), costs.subagents.amount().into());
        }
    }
    u
}

/// The id of the `task` item whose subagent `scope` is.
fn parent_item(st: &State, scope: &Scope) -> Option<String> {
    let parent = scope.parent.as_ref()?;
    let (parent_scope, call_id) = (&parent.0, &parent.1);
    st.open
        .get(&(parent_scope.key.clone(), call_id.clone()))?
        .front()?
        .item
        .get("id")?
        .as_str()
        .map(str::to_string)
}

impl Observer for JsonView {
    fn event(&self, scope: &Scope, event: &Event<'_>) {
        match event {
            Event::Started(s) => self.started(s),
            Event::Warning(w) => self.warning(scope, w),
            Event::Error(message) => {
                self.send(json!({"type": "error", "message": message}));
                self.term.line(&format!("hx: {message}"));
            }
            Event::TurnStarted => {
                let mut st = self.state();
                st.usage = Usage::default();
                st.costs = Default::default();
                drop(st);
                self.send(json!({"type": "turn.started"}));
            }
            Event::PromptSubmitted { cwd } => self.state().cwd = Some(cwd.to_path_buf()),
            Event::Noted(text) => {
                let mut st = self.state();
                let mut item = Self::new_item(&mut st, scope, "note");
                item.insert("text".into(), (*text).into());
                drop(st);
                self.item("item.completed", &item);
            }
            Event::Steered(text) => {
                let mut st = self.state();
                let mut item = Self::new_item(&mut st, scope, "user_message");
                item.insert("text".into(), (*text).into());
                drop(st);
                self.item("item.completed", &item);
            }
            Event::Retrying {
                attempt,
                max,
                delay,
                why,
            } => {
                let mut e = json!({
                    "type": "error",
                    "message": format!(
                        "{why}; retry {attempt}/{max} in {:.1} s",
                        delay.as_secs_f64()
                    ),
                    "retry": {"attempt": attempt, "max": max, "delay_ms": delay.as_millis() as u64},
                });
                if let (Some(parent), Some(obj)) =
                    (parent_item(&self.state(), scope), e.as_object_mut())
                {
                    obj.insert("parent_item_id".into(), parent.into());
                }
                self.send(e);
            }
            Event::Response(turn) => self.response(scope, turn),
            Event::ToolStarted { call, args, tool } => self.tool_started(scope, call, *args, tool),
            Event::ToolBlocked {
                call, by, reason, ..
            } => self.tool_blocked(scope, call, by, reason),
            Event::ToolFinished {
                call, args, result, ..
            } => self.tool_finished(scope, call, *args, result),
            Event::CompactionStarted { trigger, tokens } => {
                self.compaction_started(scope, trigger, *tokens)
            }
            Event::SummaryUsage(u, cost) => {
                let mut st = self.state();
                st.usage.add(u);
                st.costs.count(scope, *cost);
            }
            Event::Compacted {
                step,
                after,
                detail,
                ..
            } => {
                let mut fields = Map::new();
                fields.insert("step".into(), (*step).into());
                fields.insert("tokens_after".into(), (*after).into());
                fields.insert("detail".into(), (*detail).into());
                self.compaction_ended(scope, "completed", fields);
            }
            Event::CompactionFailed { reason } => {
                let mut fields = Map::new();
                fields.insert("reason".into(), (*reason).into());
                self.compaction_ended(scope, "failed", fields);
            }
            Event::TurnEnded(end) => self.turn_ended(end),
            Event::GoalChecked(check) => self.goal_checked(scope, check),
            Event::FilesChanged {
                checkpoint,
                changes,
            } => {
                // Codex's `file_change` item, for every change a turn made (commands' too);
                // `checkpoint`, `lines_added` and `lines_removed` are hx's own.
                let mut st = self.state();
                let mut item = Self::new_item(&mut st, scope, "file_change");
                drop(st);
                let list: Vec<Value> = changes
                    .paths
                    .iter()
                    .map(|(path, kind)| json!({"path": path, "kind": kind}))
                    .collect();
                item.insert("changes".into(), list.into());
                item.insert("checkpoint".into(), (*checkpoint).into());
                item.insert("lines_added".into(), changes.added.into());
                item.insert("lines_removed".into(), changes.removed.into());
                // Started and completed, as every item that is not a message is.
                item.insert("status".into(), "in_progress".into());
                self.item("item.started", &item);
                item.insert("status".into(), "completed".into());
                self.item("item.completed", &item);
            }
            Event::RequestStarted
            | Event::Reasoning(_)
            | Event::Text(_)
            | Event::Stopped { .. }
            | Event::HookRan { .. }
            | Event::UserHooks(_)
            | Event::SessionSaved { .. } => {}
        }
    }
}

/// A command's own output: the bash tool's result without the line it appends for an exit
/// that was not 0 (`[exit code: N]`, `[killed by signal N (NAME)]`), which `exit_code` gives,
/// and without its `(no output)` stand-in for nothing.
fn command_output(content: &str, exit_code: Option<i32>) -> &str {
    /// What the bash tool says for a command that printed nothing.
    const NOTHING: &str = "(no output)";
    let (rest, last) = match content.rsplit_once('\n') {
        Some((rest, last)) => (rest, last),
        None => ("", content),
    };
    let appended = match exit_code {
        Some(code) => code != 0 && last == format!("[exit code: {code}]"),
        None => last.starts_with("[killed by signal ") && last.ends_with(")]"),
    };
    let own = match appended {
        false => content,
        true if rest.is_empty() => "",
        // The output with the newline that ended it.
        true => &content[..=rest.len()],
    };
    match own.strip_suffix('\n').unwrap_or(own) {
        NOTHING => "",
        _ => own,
    }
}

/// JSON text with the characters a terminal would act on escaped: serde_json escapes C0
/// controls but passes DEL, C1 controls and bidirectional overrides through as they are.
/// They can only stand inside strings, where `\uXXXX` means the same character, so the value
/// is unchanged and a terminal showing the stream is safe.
pub fn safe_json(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| matches!(c, '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if unsafe_char(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

#[cfg(test)]
mod tests;
