//! The `task` tool: runs a subagent — the same loop with a fresh message list, its own system
//! prompt and only the file and shell tools — and returns nothing but its final answer, so the
//! parent's context pays for the result, not for the work.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};

use super::{prompt, Agent, Outcome};
use crate::agents::{self, Definition};
use crate::config::Profiles;
use crate::model::Profile;
use crate::tools::{args, Claude, Shown, Tool, ToolContext, ToolResult, ToolSpec};

const NAME: &str = agents::tools::TASK.tool;

pub struct Task {
    /// The subagent every call starts from; each call varies it with its own profile and
    /// scope.
    template: Agent,
    /// What makes a subagent's profile from its caller's and its type's `model`.
    profiles: Profiles,
    /// The defined subagent types, in name order. A call's subagent is made from the template
    /// when it starts: a project of 500 agent files should not clone 500 agents at every
    /// start for the one or two a run uses.
    types: Vec<Definition>,
    /// The list of types in the description, made once so the schema never changes in a run.
    listing: String,
    started: AtomicU32,
    /// The retired model names a type gave that were said already (once per run each).
    said: Mutex<BTreeSet<String>>,
}

impl Task {
    /// A `task` that starts `template`'s subagents, and those of the given types
    /// (`subagent_type`), each on a profile `profiles` makes.
    pub fn new(template: Agent, profiles: Profiles, mut types: Vec<Definition>) -> Self {
        types.sort_by(|a, b| a.name.cmp(&b.name));
        types.dedup_by(|a, b| a.name == b.name);
        Task {
            template,
            profiles,
            listing: agents::listing(&types, agents::LIST_BUDGET),
            types,
            started: AtomicU32::new(0),
            said: Mutex::new(BTreeSet::new()),
        }
    }

    /// The arguments' schema: `subagent_type` only when types are defined, so a run without
    /// any sends the schema it always did.
    fn parameters(&self) -> Value {
        let mut properties = json!({
            "description": {
                "type": "string",
                "description": "A short label for the work (3-6 words)."
            },
            "prompt": {
                "type": "string",
                "description": "The complete task for the subagent, with all the context it needs."
            }
        });
        if !self.types.is_empty() {
            properties["subagent_type"] = json!({
                "type": "string",
                "description": "The specialised subagent to start, by name (see the list in this tool's description); leave it out for a general subagent."
            });
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": ["prompt"]
        })
    }

    /// The type a call names: none for the generic subagent.
    fn kind(&self, args: &Value) -> Result<Option<&Definition>, ToolResult> {
        let kind = match args.get("subagent_type") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
            Some(Value::String(s)) => s.trim(),
            Some(_) => return Err(ToolResult::error("task.subagent_type must be a string")),
        };
        if let Ok(i) = self.types.binary_search_by(|d| d.name.as_str().cmp(kind)) {
            return Ok(Some(&self.types[i]));
        }
        // Every name: where the description's list had to count the last ones, it points
        // here. Bounded all the same: at most `agents::MAX_FILES` names of 64 characters, and
        // the result is cut to the tool output limit like any other.
        let known: Vec<&str> = self.types.iter().map(|d| d.name.as_str()).collect();
        Err(ToolResult::error(if known.is_empty() {
            format!(
                "unknown subagent_type {kind:?}: no subagent types are defined; leave \
                 subagent_type out for a general subagent"
            )
        } else {
            format!(
                "unknown subagent_type {kind:?}; the defined ones are: {} (or leave it out \
                 for a general subagent)",
                known.join(", ")
            )
        }))
    }

    /// The subagent a call starts: the generic one, or the type it names, on the profile
    /// made from its caller's (`caller`) and the type's `model`, narrowed to the type's
    /// tools (never wider: [`crate::tools::ToolSet::only`] picks from the template's).
    fn child(&self, args: &Value, caller: &Profile) -> Result<Agent, ToolResult> {
        let def = self.kind(args)?;
        let model = def.and_then(|d| d.model.as_deref());
        let (profile, notice) = self.profiles.subagent(caller, model);
        let mut child = self.template.with_profile(profile);
        if let (Some(notice), Some(model)) = (notice, model) {
            let first = self
                .said
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(model.to_string());
            if first {
                child.events.warn(&child.hook_cx.scope, &notice);
            }
        }
        let Some(def) = def else {
            return Ok(child);
        };
        let body = agents::read_body(def).map_err(ToolResult::error)?;
        if let Some(names) = &def.tools {
            child = child.with_tools(self.template.tools.only(names));
        }
        child.system_prompt = prompt::assemble(body, std::slice::from_ref(&child.system_prompt));
        Ok(child)
    }
}

impl Tool for Task {
    fn claude(&self) -> Option<Claude> {
        Some(agents::tools::TASK)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: NAME.into(),
            description: format!(
                "Start a subagent to do a self-contained piece of work (research, a search \
                 across many files, an independent change) in a fresh context. It has only \
                 {}{}, runs up to {} turns, and returns only its final report: give it a \
                 complete prompt, since it sees nothing of this conversation. Several task \
                 calls in one turn run at the same time.{}",
                and_list(self.template.tools.names()),
                if self.types.is_empty() {
                    ""
                } else {
                    " (a specialised one, those of them its definition names)"
                },
                self.template.max_turns,
                if self.types.is_empty() {
                    String::new()
                } else {
                    format!(
                        "\n\nSpecialised subagents (set subagent_type to one of these names; \
                         each has its own instructions and tools):{}",
                        self.listing
                    )
                }
            ),
            parameters: self.parameters(),
        }
    }

    fn concurrent(&self) -> bool {
        true
    }

    fn shown(&self) -> Shown {
        Shown::Subagent
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let prompt = match args::string(NAME, &args, "prompt") {
                Ok(p) if !p.trim().is_empty() => p.to_string(),
                Ok(_) => return ToolResult::error("task.prompt must not be empty"),
                Err(e) => return e,
            };
            let caller = cx.profile.as_deref().unwrap_or(&self.template.profile);
            let mut child = match self.child(&args, caller) {
                Ok(c) => c,
                Err(e) => return e,
            };
            let n = self.started.fetch_add(1, Ordering::Relaxed) + 1;
            // Its events name this call, so a view can tell whose work they are.
            child.hook_cx.scope = self.template.hook_cx.scope.subagent(n, &cx.call_id);
            // The subagent's own session, linked to the parent's through this call.
            let parent = Some((cx.session_id.as_str(), cx.call_id.as_str()));
            let (mut session, unrecorded) = child.recorder.start(parent, &child.profile);
            if let Some(why) = unrecorded {
                child.warn(&why);
            }
            let result = child.run(&mut session, &prompt).await;
            let (outcome, detail) = super::outcome::session_end(&result);
            let kind = super::outcome::failure_kind(&result);
            session.end(outcome, detail.as_deref(), kind);
            if let Some(e) = session.close() {
                child.warn(&e);
            }
            match result {
                Ok(outcome) => match outcome {
                    Outcome::Answered(text) if text.trim().is_empty() => {
                        ToolResult::ok("(no summary)")
                    }
                    Outcome::Answered(text) => ToolResult::ok(text.trim()),
                    Outcome::Stopped(reason) => {
                        ToolResult::error(format!("subagent stopped by a hook: {reason}"))
                    }
                    Outcome::MaxCost(why) | Outcome::Looped(why) | Outcome::GoalUnmet(why) => {
                        ToolResult::error(format!("subagent stopped: {why}"))
                    }
                    Outcome::MaxTurns(last) => {
                        let mut msg = format!(
                            "The subagent {} without a final answer.",
                            super::outcome::stopped_after(child.max_turns)
                        );
                        if !last.trim().is_empty() {
                            msg.push_str("\nIts last message:\n");
                            msg.push_str(last.trim());
                        }
                        ToolResult::ok(msg)
                    }
                },
                Err(e) => ToolResult::error(format!("subagent failed: {e}")),
            }
        })
    }
}

/// `a, b and c`.
fn and_list(names: &[String]) -> String {
    match names {
        [] => "no tools".to_string(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}
