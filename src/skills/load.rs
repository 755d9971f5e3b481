//! The `load_skill` tool: gives the model a skill's instructions as an ordinary tool result.
//! It only reads; it runs nothing. One value per run: it remembers what it already loaded so a
//! second call does not put the same body in the conversation twice.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::render::render;
use super::SkillRegistry;
use crate::model::Message;
use crate::tools::history::{answered_calls, Carried, Carry, Restore};
use crate::tools::{Claude, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};

/// The tool's name, as the catalog tells the model to call it.
pub const LOAD_SKILL: &str = "load_skill";
/// Claude Code's `Skill`. Subagents have no skill catalog, so no subagent gets it.
pub const CLAUDE: Claude = Claude {
    tool: LOAD_SKILL,
    names: &["Skill"],
    for_subagents: false,
    by_command: false,
};

/// The skill a call of `load_skill` with these arguments asks for, read as the tool reads it
/// (trimmed); `None` when they name none.
pub fn requested(arguments: &str) -> Option<String> {
    let v: Value = serde_json::from_str(arguments).ok()?;
    Some(v.get("name")?.as_str()?.trim().to_string())
}

/// How every body `load_skill` gives begins (see [`render`]): what tells a loaded skill from an
/// error or an "already loaded" note in a history.
const BODY_START: &str = "<skill name=\"";

/// One skill body the model can see in a history.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Loaded {
    pub name: String,
    /// The call's arguments as the model wrote them.
    pub arguments: String,
    /// The answer: the body as loaded.
    pub body: String,
    /// Where the answer is in the history.
    pub at: usize,
}

/// The skills whose bodies `history` holds, each once (its latest load), oldest first.
fn loaded_in(history: &[Message]) -> Vec<Loaded> {
    let mut out: Vec<Loaded> = Vec::new();
    for a in answered_calls(history) {
        if a.call.name != LOAD_SKILL || !a.content.starts_with(BODY_START) {
            continue;
        }
        let Some(name) = requested(&a.call.arguments) else {
            continue;
        };
        out.retain(|l| l.name != name);
        out.push(Loaded {
            name,
            arguments: a.call.arguments.clone(),
            body: a.content.to_string(),
            at: a.at,
        });
    }
    out
}

/// Cheap to clone (shared state), so a call can move onto a blocking thread.
#[derive(Clone)]
pub struct LoadSkill {
    registry: Arc<SkillRegistry>,
    /// Names loaded in this run.
    loaded: Arc<Mutex<HashSet<String>>>,
}

impl LoadSkill {
    pub fn new(registry: Arc<SkillRegistry>) -> Self {
        LoadSkill {
            registry,
            loaded: Arc::new(Mutex::new(HashSet::new())),
        }
    }

    fn loaded_set(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        // A panic elsewhere while holding the lock leaves a set that is still valid.
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The whole call, synchronous (bodies are small, bounded reads).
    pub fn load(&self, args: &Value, cx: &ToolContext) -> ToolResult {
        let name = match args.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim(),
            _ => return ToolResult::error("load_skill.name must be a non-empty string"),
        };
        if self.registry.get(name).is_some_and(|s| !s.model_invocable) {
            return ToolResult::error(format!(
                "skill {name} is only for the user to invoke (/{name}); it is not in the skills list"
            ));
        }
        if self.loaded_set().contains(name) {
            return ToolResult::ok(format!(
                "Skill {name} is already loaded above in this conversation; follow those instructions."
            ));
        }
        match render(&self.registry, name, cx.workspace.root()) {
            Ok(text) => {
                self.loaded_set().insert(name.to_string());
                ToolResult::ok(text)
            }
            Err(e) => ToolResult::error(e),
        }
    }
}

/// "Already loaded" must mean the body is in the history the model sees: after a compaction
/// (which keeps only some bodies) or when a run continues a recorded session, the set is the
/// bodies that history holds.
impl Restore for LoadSkill {
    fn restore(&self, history: &[Message]) {
        let mut names: HashSet<String> = loaded_in(history).into_iter().map(|l| l.name).collect();
        names.extend(history.iter().filter_map(invoked_in));
        *self.loaded_set() = names;
    }
}

/// The skill whose block a user message starts with: one the user invoked (`/NAME`), its
/// body put in the message as this tool renders it. Only the "already loaded" set counts
/// it; a summary keeps it as the user's message, not as a call.
fn invoked_in(m: &Message) -> Option<String> {
    let Message::User(text) = m else {
        return None;
    };
    let rest = text.strip_prefix(BODY_START)?;
    let (name, _) = rest.split_once("\">\n")?;
    // A name with an escaped character is not worth unescaping: it loads again, no harm.
    (!name.contains('&')).then(|| name.to_string())
}

impl Tool for LoadSkill {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Read
    }

    fn shown(&self) -> Shown {
        Shown::Skill
    }

    /// A skill's body is instructions, not output: the model cannot make it again by running
    /// something, so prune never clears it.
    fn prunable(&self) -> bool {
        false
    }

    /// Every skill whose body the history holds, each once (its latest load).
    fn carry(&self, history: &[Message]) -> Vec<Carried> {
        loaded_in(history)
            .into_iter()
            .map(|l| Carried {
                arguments: l.arguments,
                answer: l.body,
                what: Carry::Loaded {
                    name: l.name,
                    at: l.at,
                },
            })
            .collect()
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: LOAD_SKILL.into(),
            description: "Load a skill's full instructions by its name from the skills list. \
Call it before following a skill, a project workflow or a command the user names. It returns \
the skill's instructions and the paths of its other files (read those with read_file when \
needed); it only loads instructions and runs nothing."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "description": "The skill's name, exactly as in the skills list."
                    }
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        // Reading the body and listing the folder touch the disk: off the async thread, so a
        // slow filesystem cannot stall the run (or Ctrl-C).
        let tool = self.clone();
        let cx = cx.clone();
        Box::pin(async move { crate::tools::run_blocking(move || tool.load(&args, &cx)).await })
    }
}
