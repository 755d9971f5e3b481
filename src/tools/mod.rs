//! Tools the model can call: the `Tool` trait, the context a call runs in, and the registry
//! that maps a tool name to its handler.
//!
//! The agent loop knows no tool by name, nor does anything else outside the tool's own file:
//! a tool says what it is ([`Tool::kind`]), how the views show it ([`Tool::shown`]), what the
//! guard reads ([`Tool::command`]) and what compaction keeps of it ([`Tool::prunable`],
//! [`Tool::carry`]). Adding a tool is one new file plus one `register` call; a [`ToolSet`]
//! (which tools one agent may use) is a filter over the registry, not a copy of it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;

pub mod about;
pub mod bash;
pub mod claude;
pub mod edit_file;
pub mod editor;
pub mod glob;
pub mod history;
pub mod minimal;
pub mod output;
pub mod read_file;
pub mod shells;
pub mod todo;
pub mod workspace;
pub mod write_file;

pub use about::{About, Kind, Shown};
pub use claude::Claude;
pub use editor::{Editor, EditorFiles};
pub use history::{Carried, Carry, Restore};
pub use shells::Shells;
pub use workspace::Workspace;

// The wire type of a tool's description lives with the other wire types; tools build it.
pub use crate::model::ToolSpec;

/// What a tool call gives back to the model. Errors the model can act on are ordinary results
/// whose text starts with `Error:`; `is_error` lets hooks and traces tell them apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// A command's exit status, for the views (`--json`); the model reads it in `content`.
    pub exit_code: Option<i32>,
    /// The shell a command was started in, when it runs on in the background: it has no
    /// exit code yet, and did not fail.
    pub shell_id: Option<String>,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolResult {
            content: content.into(),
            is_error: false,
            exit_code: None,
            shell_id: None,
        }
    }

    /// An error result; the text gets the `Error: ` prefix the model is told to look for.
    pub fn error(message: impl std::fmt::Display) -> Self {
        ToolResult {
            content: format!("Error: {message}"),
            is_error: true,
            exit_code: None,
            shell_id: None,
        }
    }

    /// The result of a command that exited with `code`.
    pub fn with_exit_code(mut self, code: Option<i32>) -> Self {
        self.exit_code = code;
        self
    }

    /// The result cut to `limit` characters like tool output (see [`output::bound`]).
    pub fn bounded(mut self, limit: usize) -> Self {
        self.content = output::bound(self.content, limit);
        self
    }
}

/// Limits that bound what one tool call may cost.
#[derive(Debug, Clone)]
pub struct ToolLimits {
    /// Maximum characters of output a tool returns (head and tail are kept when cut).
    pub output_chars: usize,
    /// Default timeout of a bash command when the call gives none.
    pub bash_timeout: Duration,
    /// Upper bound on a timeout the model may ask for.
    pub bash_max_timeout: Duration,
    /// Background shells that may run at once (`[tools] background_shells`).
    pub background_shells: usize,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            output_chars: 50_000,
            bash_timeout: Duration::from_secs(120),
            bash_max_timeout: Duration::from_secs(600),
            background_shells: 4,
        }
    }
}

/// Everything a tool call may use from its surroundings.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub workspace: Workspace,
    pub limits: ToolLimits,
    /// The environment of `bash` commands (the `[shell_env]` policy applied).
    pub env: crate::process::ToolEnv,
    /// The kernel sandbox bash commands run in; `None` runs them unconfined.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// Whether the tools that write files may: the sandbox's mode as set, which holds
    /// whether or not the kernel can enforce it for bash.
    pub file_writes: FileWrites,
    /// The session the call belongs to, and the call's id (empty outside a run).
    pub session_id: String,
    pub call_id: String,
    /// The editor the file tools go through (`hx acp`), if any.
    pub editor: Editor,
    /// The profile of the agent making the call (none outside a run): the `task` tool starts
    /// its subagent from it.
    pub profile: Option<Arc<crate::model::Profile>>,
    /// The run's background shells, shared by its agents (a subagent's are its parent's).
    pub shells: Arc<Shells>,
}

impl ToolContext {
    /// A context with the default limits and environment policy.
    pub fn new(workspace: Workspace) -> Self {
        ToolContext {
            workspace,
            limits: ToolLimits::default(),
            env: crate::process::ToolEnv::default(),
            sandbox: None,
            file_writes: FileWrites::Allowed,
            session_id: String::new(),
            call_id: String::new(),
            editor: Editor::default(),
            profile: None,
            shells: Arc::new(Shells::new(std::env::temp_dir().join(format!(
                "hx-shells-{}-{}",
                std::process::id(),
                fastrand::u64(..)
            )))),
        }
    }

    /// The answer of `tool`, a tool that changes files, when this run may change none; `None`
    /// when it may go on.
    pub fn refuse_file_write(&self, tool: &str) -> Option<ToolResult> {
        let FileWrites::ReadOnly(source) = &self.file_writes else {
            return None;
        };
        // Where the mode was set, so the user (and the model, telling them) knows what to
        // change; the flag beats any file.
        let set_by = match source {
            crate::sandbox::Source::File(path) => format!("set in {}", path.display()),
            crate::sandbox::Source::Flag | crate::sandbox::Source::Default => {
                "--sandbox read-only".to_string()
            }
        };
        Some(ToolResult::error(format!(
            "{tool} refused: the sandbox is read-only ({set_by}); no file may be changed in \
             this run. Retrying will not help; the user can allow writes with --sandbox \
             workspace-write."
        )))
    }
}

/// Whether the file tools may change files in this run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum FileWrites {
    #[default]
    Allowed,
    /// The sandbox is `read-only`, set where this says.
    ReadOnly(crate::sandbox::Source),
}

impl FileWrites {
    /// What the sandbox settings of a run allow.
    pub fn of(settings: &crate::sandbox::Settings) -> FileWrites {
        match settings.mode {
            crate::sandbox::Mode::ReadOnly => FileWrites::ReadOnly(settings.source.clone()),
            crate::sandbox::Mode::WorkspaceWrite | crate::sandbox::Mode::Off => FileWrites::Allowed,
        }
    }
}

/// Something that may want to remind the model of a duty after a turn that called tools (the
/// todo list, when it has gone stale): the loop appends its text as a user message after the
/// turn's tool messages, without knowing which tool asked.
pub trait Reminder: Send + Sync {
    fn after_tool_turn(&self, calls: &[crate::model::ToolCall]) -> Option<String>;

    /// A user message to append before the next request, whatever came before it (a
    /// background shell that ended): appended, never put among earlier messages, so the
    /// request before keeps being a prefix of the next.
    fn before_request(&self) -> Option<String> {
        None
    }

    /// Whether `text` is one of the messages this reminder appends: hx's, not the user's, so a
    /// compaction's summary does not carry it over as something the user said.
    fn wrote(&self, text: &str) -> bool;
}

/// One tool. `call` never fails as a Rust error for things the model did wrong: bad arguments,
/// missing files, failing commands are all `ToolResult::error`.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult>;

    /// Whether calls of this tool in one turn may run at the same time. Only tools whose
    /// calls cannot depend on each other's effects (subagents) say yes.
    fn concurrent(&self) -> bool {
        false
    }

    /// How Claude Code knows this tool (see [`Claude`]), so hook matchers written for Claude
    /// Code match it too; `None` for a tool Claude Code has no counterpart of.
    fn claude(&self) -> Option<Claude> {
        None
    }

    /// Whether subagents (`task`) get this tool as well as the main agent. Taken from
    /// [`Tool::claude`] by default, since the reading of agent files tells what a subagent
    /// never gets from the same statement.
    fn for_subagents(&self) -> bool {
        self.claude().is_some_and(|c| c.for_subagents)
    }

    /// What a call does, for an editor (see [`Kind`]).
    fn kind(&self) -> Kind {
        Kind::Other
    }

    /// How the views show a call (see [`Shown`]).
    fn shown(&self) -> Shown {
        Shown::Other
    }

    /// The shell command a call with these arguments runs, if the tool runs one: the guard
    /// inspects it (and `hx chat` puts it to the user when the guard refuses it). A tool that
    /// runs no command has none, and the guard leaves its calls alone.
    fn command<'a>(&self, _args: &'a Value) -> Option<&'a str> {
        None
    }

    /// Whether compaction's prune step may clear this tool's old results. Output (a command's,
    /// a file's contents) can be made again; instructions the model loaded cannot, and stay.
    fn prunable(&self) -> bool {
        true
    }

    /// What a summary carries over of this tool's calls in `history` (which replaces all of
    /// them), in the order they are to be made again: the state the model would otherwise
    /// lose. Nothing by default: a summary says what the results were.
    fn carry(&self, _history: &[crate::model::Message]) -> Vec<Carried> {
        Vec::new()
    }
}

/// Tools that can change during a run (an MCP server's), listed after the fixed ones in an
/// order of their own. The list changes only in [`ToolSource::current`], which the loop calls
/// once before each request, so the tools a request offers are the ones its calls find.
pub trait ToolSource: Send + Sync {
    /// The tools as of now: their generation (a new number whenever the list changed) and the
    /// list. Brings the list up to date first when a server said its tools changed.
    fn current(&self) -> BoxFuture<'_, (u64, DynamicTools)>;

    /// The tools as last listed, without starting or asking anything (none before the first
    /// [`ToolSource::current`]): for views and estimates outside the loop.
    fn listed(&self) -> (u64, DynamicTools);
}

/// Changing tools with their names, in the order their specs are sent.
pub type DynamicTools = Arc<[(String, Arc<dyn Tool>)]>;

/// All tools of a run, in the order they were registered: the order their specs are sent in.
/// Adding a tool is one file and one `register` call; which agents get it and what hooks call
/// it come from the tool itself.
#[derive(Clone, Default)]
pub struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    by_name: BTreeMap<String, usize>,
    /// Tools that come and go (MCP servers'), after the fixed ones.
    source: Option<Arc<dyn ToolSource>>,
}

impl Registry {
    pub fn new() -> Self {
        Registry::default()
    }

    /// The file and shell tools every agent (parent or subagent) gets.
    pub fn standard() -> Self {
        let mut r = Registry::new();
        r.register(Arc::new(bash::Bash));
        r.register(Arc::new(read_file::ReadFile));
        r.register(Arc::new(write_file::WriteFile));
        r.register(Arc::new(edit_file::EditFile));
        r.register(Arc::new(glob::Glob));
        r.register(Arc::new(shells::BashOutput));
        r.register(Arc::new(shells::KillShell));
        r
    }

    /// Adds a tool; one of the same name is replaced where it stood.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name;
        match self.by_name.get(&name) {
            Some(&i) => self.tools[i] = tool,
            None => {
                self.by_name.insert(name, self.tools.len());
                self.tools.push(tool);
            }
        }
    }

    /// Adds tools that may change during the run; a [`ToolSet`] of this registry lists them
    /// after its own, as of its last [`ToolSet::refresh`].
    pub fn set_source(&mut self, source: Arc<dyn ToolSource>) {
        self.source = Some(source);
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = String> + '_ {
        self.tools.iter().map(|t| t.spec().name)
    }

    /// Each tool's Claude Code name, by hx name (for hook matchers).
    pub fn claude_names(&self) -> BTreeMap<String, &'static str> {
        self.tools
            .iter()
            .filter_map(|t| Some((t.spec().name, t.claude()?.name()?)))
            .collect()
    }
}

/// The tools one agent may use: a view of the registry in a fixed order (the order the specs
/// are sent in, which must not change between turns so the request prefix stays cacheable).
#[derive(Clone)]
pub struct ToolSet {
    registry: Registry,
    allowed: Vec<String>,
    /// The registry's changing tools as of the last [`ToolSet::refresh`], and their generation.
    dynamic: (u64, DynamicTools),
    /// When set, only the changing tools of these names are in the set (a subagent type's
    /// `mcp__SERVER__TOOL` list).
    dynamic_only: Option<Arc<[String]>>,
}

impl ToolSet {
    /// A set of the named tools, in the given order. A name the registry does not know is an
    /// error: a tool silently missing from an agent is a bug, not a choice.
    #[cfg(test)]
    pub fn new(registry: Registry, names: &[&str]) -> Result<Self, String> {
        if let Some(unknown) = names.iter().find(|n| registry.get(n).is_none()) {
            return Err(format!("unknown tool {unknown:?} in a tool list"));
        }
        let allowed = names.iter().map(|n| n.to_string()).collect();
        Ok(ToolSet::of(registry, allowed))
    }

    fn of(registry: Registry, allowed: Vec<String>) -> Self {
        ToolSet {
            registry,
            allowed,
            dynamic: (0, Arc::from(Vec::new())),
            dynamic_only: None,
        }
    }

    /// This set narrowed to the named tools: its fixed tools among them, in its own order,
    /// and of its changing tools only those named. Names it does not have are no error (a
    /// definition written for another tool names many).
    pub fn only(&self, names: &[String]) -> ToolSet {
        let mut set = self.clone();
        set.allowed.retain(|n| names.contains(n));
        let changing: Vec<String> = names
            .iter()
            .filter(|n| self.registry.get(n).is_none())
            .cloned()
            .collect();
        set.dynamic_only = Some(Arc::from(changing));
        set
    }

    /// Whether a changing tool is in the set: named exactly, or its server named alone
    /// (`mcp__SERVER`, Claude Code's way of giving every tool of a server).
    fn keeps(&self, name: &str) -> bool {
        self.dynamic_only.as_ref().is_none_or(|only| {
            only.iter().any(|n| {
                n == name
                    || (n.matches("__").count() == 1
                        && name
                            .strip_prefix(n.as_str())
                            .is_some_and(|rest| rest.starts_with("__")))
            })
        })
    }

    /// Every tool of the registry, in registration order: the main agent's set.
    pub fn all(registry: Registry) -> Self {
        let allowed = registry.names().collect();
        ToolSet::of(registry, allowed)
    }

    /// The tools that say they are for subagents, in registration order.
    pub fn for_subagents(registry: Registry) -> Self {
        let allowed = registry
            .tools
            .iter()
            .filter(|t| t.for_subagents())
            .map(|t| t.spec().name)
            .collect();
        ToolSet::of(registry, allowed)
    }

    /// Adds a tool to this set (and to its registry): after the fixed tools it has, before the
    /// changing ones, like a [`Registry::register`] after the set was made. One of the same
    /// name is replaced where it stood.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        let name = tool.spec().name;
        self.registry.register(tool);
        if !self.allowed.contains(&name) {
            self.allowed.push(name);
        }
    }

    /// Brings the changing tools (MCP servers') up to date; whether the set changed, so that
    /// the specs must be taken again. Between two calls the set does not change: call it once
    /// before each request.
    pub async fn refresh(&mut self) -> bool {
        let Some(source) = &self.registry.source else {
            return false;
        };
        let (generation, tools) = source.current().await;
        if generation == self.dynamic.0 {
            return false;
        }
        self.dynamic = (generation, tools);
        true
    }

    /// This set with the changing tools as last listed (see [`ToolSource::listed`]): what the
    /// next request would offer, for a view or an estimate that must not start servers.
    pub fn as_listed(&self) -> ToolSet {
        let mut set = self.clone();
        if let Some(source) = &self.registry.source {
            set.dynamic = source.listed();
        }
        set
    }

    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        if self.allowed.iter().any(|n| n == name) {
            self.registry.get(name)
        } else {
            self.dynamic
                .1
                .iter()
                .find(|(n, _)| n == name && self.keeps(n))
                .map(|(_, t)| t)
        }
    }

    /// What the tool `name` says about itself to the views; a name the set does not have is
    /// any other tool (see [`About::default`]).
    pub fn about(&self, name: &str) -> About {
        self.get(name)
            .map_or_else(About::default, |t| About::of(t.as_ref()))
    }

    /// Whether compaction may clear results of the tool `name` (see [`Tool::prunable`]); a
    /// tool the set does not have says nothing against it.
    pub fn prunable(&self, name: &str) -> bool {
        self.get(name).is_none_or(|t| t.prunable())
    }

    /// What a summary carries over of `history`: each tool's [`Tool::carry`], with the name
    /// its calls are made under, in the order the specs are sent.
    pub fn carry(&self, history: &[crate::model::Message]) -> Vec<(String, Carried)> {
        self.tools()
            .flat_map(|t| {
                let name = t.spec().name;
                t.carry(history).into_iter().map(move |c| (name.clone(), c))
            })
            .collect()
    }

    /// The tools, in the order their specs are sent.
    fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.allowed
            .iter()
            .filter_map(|n| self.registry.get(n))
            .chain(
                self.dynamic
                    .1
                    .iter()
                    .filter(|(n, _)| self.keeps(n))
                    .map(|(_, t)| t),
            )
    }

    /// The fixed tools' names (the changing ones come after them in [`ToolSet::specs`]).
    pub fn names(&self) -> &[String] {
        &self.allowed
    }

    /// The specs as sent: the fixed tools in their order, then the changing ones in theirs.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools().map(|t| t.spec()).collect()
    }

    /// Runs one call from its raw argument text (what the loop does in two steps, with the
    /// hooks between them): unknown tools and unparsable arguments become error results.
    #[cfg(test)]
    pub async fn dispatch(&self, name: &str, raw_args: &str, cx: &ToolContext) -> ToolResult {
        let Some(tool) = self.get(name) else {
            return unknown_tool(name);
        };
        match parse_args(name, raw_args) {
            Ok(args) => tool.call(args, cx).await,
            Err(e) => e,
        }
    }

    /// Runs one call whose arguments are already parsed (or replaced by a hook).
    pub async fn dispatch_value(&self, name: &str, args: Value, cx: &ToolContext) -> ToolResult {
        match self.get(name) {
            Some(tool) => tool.call(args, cx).await,
            None => unknown_tool(name),
        }
    }
}

/// The name is the model's: quoted short like any argument.
fn unknown_tool(name: &str) -> ToolResult {
    ToolResult::error(format!("unknown tool {}", output::quote(name)))
}

/// Runs a tool's blocking file work off the async thread. A panic there is raised again in the
/// calling task, so the loop's per-call guard answers it like any other panic in a tool.
pub async fn run_blocking<F>(work: F) -> ToolResult
where
    F: FnOnce() -> ToolResult + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(e) => match e.try_into_panic() {
            Ok(payload) => std::panic::resume_unwind(payload),
            Err(e) => ToolResult::error(format!("the call was cancelled: {e}")),
        },
    }
}

/// Parses a call's argument string. An empty string means `{}` (some servers send that for
/// tools without parameters); anything else must be a JSON object.
pub fn parse_args(name: &str, raw: &str) -> Result<Value, ToolResult> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err(ToolResult::error(format!(
            "invalid arguments for {}: expected a JSON object",
            output::quote(name)
        ))),
        // serde_json's messages give a position, never the input itself.
        Err(e) => Err(ToolResult::error(format!(
            "invalid arguments for {}: {e}",
            output::quote(name)
        ))),
    }
}

/// Helpers for reading typed fields out of a call's arguments with model-readable errors.
pub mod args {
    use serde_json::Value;

    use super::ToolResult;

    /// The schema of a `path` argument, the same in every file tool.
    pub fn path_schema() -> Value {
        serde_json::json!({
            "type": "string",
            "description": "File path, relative to the workspace root."
        })
    }

    /// Bytes of a path argument: the longest path the system opens (`PATH_MAX`). Checked
    /// before the path is resolved, which costs a step per component: a 5 MB path of `a/a/…`
    /// would otherwise keep the resolver busy for hours.
    pub const MAX_PATH_BYTES: usize = 4096;

    /// A required path field, at most [`MAX_PATH_BYTES`] long.
    pub fn path<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolResult> {
        let p = string(tool, args, key)?;
        if p.len() > MAX_PATH_BYTES {
            return Err(ToolResult::error(format!(
                "{tool}.{key} is {} bytes long; the limit is {MAX_PATH_BYTES}",
                p.len()
            )));
        }
        Ok(p)
    }

    /// A required string field.
    pub fn string<'a>(tool: &str, args: &'a Value, key: &str) -> Result<&'a str, ToolResult> {
        match args.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(_) => Err(ToolResult::error(format!("{tool}.{key} must be a string"))),
            None => Err(ToolResult::error(format!("{tool}.{key} is required"))),
        }
    }

    /// An optional non-negative integer field (accepts integral floats and numeric strings,
    /// which models do send).
    pub fn opt_u64(tool: &str, args: &Value, key: &str) -> Result<Option<u64>, ToolResult> {
        let bad = || ToolResult::error(format!("{tool}.{key} must be a non-negative integer"));
        match args.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(u) = n.as_u64() {
                    Ok(Some(u))
                } else {
                    match n.as_f64() {
                        Some(f) if f >= 0.0 && f.fract() == 0.0 && f < 1e15 => Ok(Some(f as u64)),
                        _ => Err(bad()),
                    }
                }
            }
            Some(Value::String(s)) => s.trim().parse::<u64>().map(Some).map_err(|_| bad()),
            Some(_) => Err(bad()),
        }
    }
}

#[cfg(test)]
mod tests;
