//! The `todo_write` tool: the model's plan, replaced whole on every call (the views show it,
//! see the `events` module), and a reminder when the model stops keeping it up to date.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::history::{answered_calls, Carried, Carry, Restore};
use super::{Claude, Shown, Tool, ToolContext, ToolResult, ToolSpec};
use crate::model::{Message, ToolCall};

const NAME: &str = "todo_write";
/// Claude Code's `TodoWrite`; the main agent's plan, so no subagent gets it.
pub const CLAUDE: Claude = Claude {
    tool: NAME,
    names: &["TodoWrite"],
    for_subagents: false,
    by_command: false,
};
const MAX_ITEMS: usize = 20;
/// Characters of one item's content or activeForm: a todo is a line of a checklist, printed to
/// the user on every update and kept for the whole run.
const MAX_ITEM_CHARS: usize = 1000;
/// Tool-calling turns without a todo update, while todos are open, before a reminder.
const REMIND_AFTER: u32 = 3;
pub const REMINDER: &str = "<reminder>Update your todos.</reminder>";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Todo {
    pub content: String,
    pub status: Status,
    pub active_form: Option<String>,
}

/// The plan of one run, shared by the tool (which writes it) and the loop's reminder.
#[derive(Debug, Default)]
pub struct TodoList {
    items: Mutex<Vec<Todo>>,
    turns_since_update: AtomicU32,
}

impl TodoList {
    pub fn new() -> Arc<Self> {
        Arc::new(TodoList::default())
    }

    pub fn items(&self) -> Vec<Todo> {
        self.items.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn replace(&self, items: Vec<Todo>) {
        *self.items.lock().unwrap_or_else(|p| p.into_inner()) = items;
    }
}

/// The list as the model last wrote it in `history`: the arguments of the last `todo_write`
/// call there that gives a valid list, and that list. The arguments are checked again rather
/// than trusted from the answer, which compaction may have cleared.
pub fn latest_in(history: &[Message]) -> Option<(String, Vec<Todo>)> {
    answered_calls(history)
        .into_iter()
        .rev()
        .filter(|a| a.call.name == NAME && !a.content.starts_with("Error:"))
        .find_map(|a| {
            let args = serde_json::from_str::<Value>(&a.call.arguments).ok()?;
            let items = parse_todos(&args).ok()?;
            Some((a.call.arguments.clone(), items))
        })
}

/// A continued or compacted conversation brings its list back: the one the model can see in
/// it. A history without one leaves the list as it is.
impl Restore for TodoList {
    fn restore(&self, history: &[Message]) {
        if let Some((_, items)) = latest_in(history) {
            self.replace(items);
            self.turns_since_update.store(0, Ordering::Relaxed);
        }
    }
}

impl super::Reminder for TodoList {
    fn after_tool_turn(&self, calls: &[ToolCall]) -> Option<String> {
        if calls.iter().any(|c| c.name == NAME) {
            self.turns_since_update.store(0, Ordering::Relaxed);
            return None;
        }
        let open = self.items().iter().any(|t| t.status != Status::Completed);
        if !open {
            return None;
        }
        let n = self.turns_since_update.fetch_add(1, Ordering::Relaxed) + 1;
        if n >= REMIND_AFTER {
            self.turns_since_update.store(0, Ordering::Relaxed);
            Some(REMINDER.into())
        } else {
            None
        }
    }

    fn wrote(&self, text: &str) -> bool {
        text == REMINDER
    }
}

pub struct TodoWrite {
    list: Arc<TodoList>,
}

impl TodoWrite {
    pub fn new(list: Arc<TodoList>) -> Self {
        TodoWrite { list }
    }
}

/// Validates the whole new list; any problem refuses it and leaves the old list in place.
pub fn parse_todos(args: &Value) -> Result<Vec<Todo>, String> {
    let todos = match args.get("todos") {
        Some(Value::Array(a)) => a.clone(),
        // Models sometimes send the array as a JSON string.
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Array(a)) => a,
            _ => return Err("todo_write.todos must be an array of todo items".into()),
        },
        Some(_) => return Err("todo_write.todos must be an array of todo items".into()),
        None => return Err("todo_write.todos is required".into()),
    };
    if todos.len() > MAX_ITEMS {
        return Err(format!(
            "too many todos ({}); keep the list to at most {MAX_ITEMS} items",
            todos.len()
        ));
    }
    let mut out = Vec::with_capacity(todos.len());
    for (i, t) in todos.iter().enumerate() {
        let n = i + 1;
        let content = t
            .get("content")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if content.is_empty() {
            return Err(format!("todo {n} has empty content"));
        }
        let chars = content.chars().count();
        if chars > MAX_ITEM_CHARS {
            return Err(format!(
                "todo {n} has {chars} characters; the limit is {MAX_ITEM_CHARS}"
            ));
        }
        let status = match t.get("status").and_then(Value::as_str) {
            Some("pending") => Status::Pending,
            Some("in_progress") => Status::InProgress,
            Some("completed") => Status::Completed,
            Some(other) => {
                return Err(format!(
                    "todo {n} has unknown status '{}' (use pending, in_progress or completed)",
                    super::output::quote(other)
                ))
            }
            None => {
                return Err(format!(
                    "todo {n} needs a status (pending, in_progress or completed)"
                ))
            }
        };
        let active_form = t
            .get("activeForm")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if let Some(chars) = active_form
            .as_ref()
            .map(|a| a.chars().count())
            .filter(|&c| c > MAX_ITEM_CHARS)
        {
            return Err(format!(
                "todo {n}'s activeForm has {chars} characters; the limit is {MAX_ITEM_CHARS}"
            ));
        }
        out.push(Todo {
            content: content.to_string(),
            status,
            active_form,
        });
    }
    let in_progress = out
        .iter()
        .filter(|t| t.status == Status::InProgress)
        .count();
    if in_progress > 1 {
        return Err(format!(
            "{in_progress} todos are in_progress; only one may be in progress at a time"
        ));
    }
    Ok(out)
}

/// `[ ] pending`, `[>] in progress`, `[x] done`, then `(D/N completed)`. `active` shows an
/// in-progress item's activeForm (for the user) instead of its content (for the model).
pub fn render(items: &[Todo], active: bool) -> String {
    let mut s = String::new();
    for t in items {
        let (mark, text) = match t.status {
            Status::Pending => ("[ ]", &t.content),
            Status::InProgress if active => ("[>]", t.active_form.as_ref().unwrap_or(&t.content)),
            Status::InProgress => ("[>]", &t.content),
            Status::Completed => ("[x]", &t.content),
        };
        s.push_str(&format!("{mark} {text}\n"));
    }
    let done = items
        .iter()
        .filter(|t| t.status == Status::Completed)
        .count();
    s.push_str(&format!("({done}/{} completed)", items.len()));
    s
}

impl Tool for TodoWrite {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn shown(&self) -> Shown {
        Shown::Plan
    }

    /// The list the model last wrote, as that call with the list as its answer (the answer in
    /// the history may have been cleared); an empty list is no plan to keep.
    fn carry(&self, history: &[Message]) -> Vec<Carried> {
        latest_in(history)
            .filter(|(_, items)| !items.is_empty())
            .map(|(arguments, items)| Carried {
                arguments,
                answer: render(&items, false),
                what: Carry::State,
            })
            .into_iter()
            .collect()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: "Write your plan for a multi-step task as a todo list. Each call \
                          replaces the whole list. Keep exactly one item in_progress while \
                          working, mark items completed as soon as they are done, and at most \
                          20 items."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "todos": {
                        "type": "array",
                        "maxItems": MAX_ITEMS,
                        "items": {
                            "type": "object",
                            "properties": {
                                "content": {"type": "string", "description": "What to do, imperative (\"Run the tests\")."},
                                "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                                "activeForm": {"type": "string", "description": "Present-continuous form shown while in progress (\"Running the tests\")."}
                            },
                            "required": ["content", "status"]
                        }
                    }
                },
                "required": ["todos"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            match parse_todos(&args) {
                Ok(items) => {
                    let text = render(&items, false);
                    self.list.replace(items);
                    ToolResult::ok(text)
                }
                Err(e) => ToolResult::error(e),
            }
        })
    }
}

#[cfg(test)]
mod tests;
