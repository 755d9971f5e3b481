//! MCP servers as tools. Each configured server (`[mcp_servers.NAME]`, a trusted project's
//! `.mcp.json`) is started when a run starts, all at once; its tools join the agent's tools as
//! `mcp__SERVER__TOOL`, after the built-in ones, and go through the same loop, hooks, trace and
//! output cap. A server that fails to start, or dies later, costs its own tools only: one line
//! on stderr, `Error:` results, and the run goes on.
//!
//! The tool list is stable: servers in name order, each server's tools in name order, so the
//! request prefix stays byte-identical between turns. A server's `tools/list_changed`
//! notification marks it; the next turn lists its tools again ([`ToolSource::current`], called
//! once before each request) and only then does the list change.
//!
//! Processes: a local server is started by `process::Launch` as a command is, in a session
//! and process group of its own, with the commands' environment (the `[shell_env]` policy,
//! secrets removed) plus its own `env`, and in the run's sandbox unless its table says
//! `sandbox = "off"`: a user's server started in someone else's repository (`npx -y`, `python3
//! -m`) may run that repository's code. It is killed with its group when the run's agent is
//! dropped, on every exit path; `cleanup` sweeps whatever it left.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::future::{join_all, BoxFuture};
use rmcp::model::PaginatedRequestParams;
use rmcp::service::Peer;
use rmcp::RoleClient;
use serde_json::Value;

use crate::paths::Env;
use crate::process::ToolEnv;
use crate::sandbox::{HostPath, NotFound, Sandbox, Writable};
use crate::text::Warning;
use crate::tools::{DynamicTools, Tool, ToolSource, ToolSpec};

pub mod client;
pub mod config;
pub mod names;
pub mod schema;
pub mod tool;

use client::{Connection, Handler, Tail};
use config::{Planned, PlannedServer, ServerConfig, ServerSandbox};
use tool::{seconds, McpTool};

/// MCP tools offered in one request, all servers together: chat-completions servers accept
/// 128 tools at most, and the built-in ones need room.
pub const MAX_TOOLS: usize = 100;
/// Characters of one tool's description sent to the model (a longer one is cut).
pub const MAX_DESCRIPTION_CHARS: usize = 2048;
/// Tools read from one server's listing, all pages together; the rest are left out.
pub const MAX_LISTED_TOOLS: usize = 1000;
/// Pages of one listing read: a server that sends empty pages with a cursor forever must not
/// keep hx asking until the startup timeout.
pub const MAX_LISTED_PAGES: usize = 100;
/// Lines of a server's stderr shown when it fails.
const STDERR_LINES_SHOWN: usize = 5;
/// How long a failed server's stderr may take to reach its end before it is shown.
const STDERR_GRACE: Duration = Duration::from_millis(500);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a server stands.
enum State {
    /// Not started (yet, or at all: disabled, untrusted, invalid).
    Waiting(Planned),
    Running {
        conn: Box<Connection>,
        took: Duration,
    },
    Failed {
        why: String,
        took: Duration,
    },
}

/// One of the server's tools as last listed.
#[derive(Clone)]
struct Listed {
    tool: String,
    description: String,
    schema: Value,
}

/// One configured server.
pub struct Server {
    pub config: ServerConfig,
    /// Outside the sandbox: the program found when the run started (see
    /// `Local::outside_program`).
    program: Option<Result<PathBuf, String>>,
    state: Mutex<State>,
    listed: Mutex<Vec<Listed>>,
    tools_changed: Arc<AtomicBool>,
    stderr: Arc<Mutex<Tail>>,
    stop_reported: AtomicBool,
    warn: Warn,
}

impl Server {
    /// The connection to call through, or the `Error:` text saying why there is none.
    fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let name = &self.config.name;
        let peer = match &*lock(&self.state) {
            State::Running { conn, .. } => conn.service.peer().clone(),
            State::Failed { why, .. } => {
                return Err(format!(
                    "MCP server {name} is not running: it failed to start: {why}"
                ))
            }
            State::Waiting(_) => return Err(format!("MCP server {name} is not running")),
        };
        if peer.is_transport_closed() {
            return Err(self.stopped());
        }
        Ok(peer)
    }

    /// The server stopped answering (it exited, or closed its output): says so on stderr
    /// once, with the end of its stderr, and gives the `Error:` text for the call.
    fn stopped(&self) -> String {
        let name = &self.config.name;
        if !self.stop_reported.swap(true, Ordering::SeqCst) {
            let last = lock(&self.stderr).last_lines(1).pop();
            let tail = last
                .map(|l| format!(": {}", crate::text::one_line(&l, 200)))
                .unwrap_or_default();
            (self.warn)(&Warning::notice(format!(
                "MCP server {name} stopped{tail}; its tools answer with errors for the rest of the run"
            )));
        }
        format!("MCP server {name} has stopped; its tools cannot be called in this run")
    }

    /// Lists the server's tools again (after `tools/list_changed`); keeps the old list if
    /// that fails.
    async fn relist(&self) {
        /// Sets the server's "tools changed" flag again if the relist is dropped before it
        /// ends (a turn cancelled with Ctrl-C), so the next turn lists again. A relist that
        /// failed or timed out is not retried every turn: the server says so once.
        struct Again<'a>(&'a AtomicBool, bool);
        impl Drop for Again<'_> {
            fn drop(&mut self) {
                if !self.1 {
                    self.0.store(true, Ordering::SeqCst);
                }
            }
        }
        let mut again = Again(&self.tools_changed, false);
        let Ok(peer) = self.peer() else {
            again.1 = true;
            return;
        };
        let limit = self.config.startup_timeout;
        let listed = tokio::time::timeout(limit, list_tools(&peer)).await;
        again.1 = true;
        match listed {
            Ok(Ok(tools)) => self.set_listed(tools),
            Ok(Err(e)) => (self.warn)(&Warning::new(format!(
                "MCP server {}: cannot list its changed tools: {}",
                self.config.name,
                said(&e.to_string())
            ))),
            Err(_) => (self.warn)(&Warning::new(format!(
                "MCP server {}: listing its changed tools took over {} s",
                self.config.name,
                seconds(limit)
            ))),
        }
    }

    /// Keeps the tools the config allows, in name order, with cleaned schemas; a tool whose
    /// schema cannot be cleaned is left out with a warning.
    fn set_listed(&self, (tools, more): (Vec<rmcp::model::Tool>, bool)) {
        if more {
            (self.warn)(&Warning::new(format!(
                "MCP server {} lists more than {MAX_LISTED_TOOLS} tools or \
                 {MAX_LISTED_PAGES} pages; the rest are left out",
                self.config.name
            )));
        }
        let mut listed = Vec::new();
        for t in tools {
            let tool = t.name.to_string();
            if !self.config.allows(&tool) {
                continue;
            }
            match schema::clean(&t.input_schema) {
                Ok(schema) => listed.push(Listed {
                    description: crate::text::cut(
                        t.description.as_deref().unwrap_or(""),
                        MAX_DESCRIPTION_CHARS,
                    ),
                    tool,
                    schema,
                }),
                Err(why) => (self.warn)(&Warning::new(format!(
                    "MCP server {}: tool {} left out: {why}",
                    self.config.name,
                    crate::tools::output::quote(&tool)
                ))),
            }
        }
        listed.sort_by(|a, b| a.tool.cmp(&b.tool));
        listed.dedup_by(|a, b| a.tool == b.tool);
        *lock(&self.listed) = listed;
    }
}

/// A server's tools, page after page, at most [`MAX_LISTED_TOOLS`] from at most
/// [`MAX_LISTED_PAGES`] pages (and whether it had more): a server that pages on and on cannot
/// fill hx's memory nor keep it asking.
async fn list_tools(
    peer: &Peer<RoleClient>,
) -> Result<(Vec<rmcp::model::Tool>, bool), rmcp::ServiceError> {
    let mut tools = Vec::new();
    let mut params = None;
    let mut pages = 0;
    loop {
        pages += 1;
        let page = peer.list_tools(params).await?;
        tools.extend(page.tools);
        let Some(cursor) = page.next_cursor else {
            return Ok((tools, false));
        };
        if tools.len() >= MAX_LISTED_TOOLS || pages >= MAX_LISTED_PAGES {
            tools.truncate(MAX_LISTED_TOOLS);
            return Ok((tools, true));
        }
        params = Some(PaginatedRequestParams::default().with_cursor(Some(cursor)));
    }
}

/// What a server says (an error, a label) on one line of bounded length: it reaches stderr,
/// `hx mcp list` and the model.
pub(crate) fn said(text: &str) -> String {
    crate::tools::output::quote(&crate::text::collapse_whitespace(text)).into_owned()
}

/// The tool lists as of the last change.
struct Lists {
    generation: u64,
    all: DynamicTools,
    subagent: DynamicTools,
    /// Per server: each tool's request name and description, for `hx mcp list`.
    by_server: BTreeMap<String, Vec<(String, String)>>,
}

/// The MCP servers of one run.
/// Where a line for the user goes (a server that failed or stopped): the run's views, or the
/// terminal for `hx mcp list`; MCP does not print by itself.
pub type Warn = Arc<dyn Fn(&Warning) + Send + Sync>;

/// What a local server's process gets: the run's environment of commands and its sandbox.
#[derive(Debug, Clone, Default)]
pub struct Local {
    /// The `[shell_env]` policy applied, as for bash; a server's `env` is added to it.
    pub env: ToolEnv,
    /// The run's sandbox (`None`: the run has none, so servers run unconfined too).
    pub sandbox: Option<Arc<Sandbox>>,
    /// The folders commands may write: a `sandbox = "off"` server's program is never taken
    /// from them (`sandbox::Plan::written_by_commands`).
    pub writable: Vec<Writable>,
}

impl Local {
    /// The sandbox `server` runs in (`None`: unconfined).
    fn sandbox_of(&self, server: ServerSandbox) -> Option<&Sandbox> {
        match server {
            ServerSandbox::On => self.sandbox.as_deref(),
            ServerSandbox::Off => None,
        }
    }

    /// For a server that runs outside the run's sandbox (`sandbox = "off"`), the program to
    /// start, found now, once: a name on the PATH the server gets, outside every folder a
    /// command may write (a program planted in a virtualenv's `.venv/bin` on PATH would run
    /// unsandboxed), or a path that lies outside them; the error says why there is none.
    /// `None`: the server runs in the sandbox, or the run has none (then nothing is
    /// confined anyway), or there is no such program (starting it says so).
    fn outside_program(&self, config: &ServerConfig) -> Option<Result<PathBuf, String>> {
        let config::Transport::Stdio {
            command,
            env,
            cwd,
            sandbox,
            ..
        } = &config.transport
        else {
            return None;
        };
        if *sandbox == ServerSandbox::On || self.sandbox.is_none() {
            return None;
        }
        let path = match env.get("PATH") {
            Some(p) => Some(p.as_str()),
            None => self.env.get("PATH").and_then(|p| p.to_str()),
        };
        let host = HostPath::new(path, self.writable.clone());
        match host.find(command.as_ref(), cwd, path) {
            Ok(p) => Some(Ok(p)),
            Err(NotFound::Missing) => None,
            Err(NotFound::Refused(why)) => Some(Err(format!(
                "{why} (its table says sandbox = \"off\"; leave the sandbox on, or install the \
                 program elsewhere)"
            ))),
        }
    }
}

pub struct Mcp {
    servers: Vec<Arc<Server>>,
    env: Env,
    local: Local,
    warn: Warn,
    started: tokio::sync::OnceCell<()>,
    relisting: tokio::sync::Mutex<()>,
    lists: Mutex<Lists>,
}

impl Mcp {
    /// The run's servers, not started yet (the first [`ToolSource::current`] starts them).
    /// `env` is hx's environment (`.mcp.json` expansions, HTTP tokens); `local` what local
    /// servers' processes get.
    pub fn new(planned: Vec<PlannedServer>, env: Env, local: Local, warn: Warn) -> Arc<Mcp> {
        let servers = planned
            .into_iter()
            .map(|p| {
                Arc::new(Server {
                    program: local.outside_program(&p.config),
                    config: p.config,
                    state: Mutex::new(State::Waiting(p.plan)),
                    listed: Mutex::new(Vec::new()),
                    tools_changed: Arc::new(AtomicBool::new(false)),
                    stderr: Arc::new(Mutex::new(Tail::default())),
                    stop_reported: AtomicBool::new(false),
                    warn: warn.clone(),
                })
            })
            .collect();
        Arc::new(Mcp {
            servers,
            env,
            local,
            warn,
            started: tokio::sync::OnceCell::new(),
            relisting: tokio::sync::Mutex::new(()),
            lists: Mutex::new(Lists {
                generation: 0,
                all: Arc::from(Vec::new()),
                subagent: Arc::from(Vec::new()),
                by_server: BTreeMap::new(),
            }),
        })
    }

    /// The tools of the main agent (`subagent` false) or of subagents, for a registry.
    pub fn source(self: &Arc<Mcp>, subagent: bool) -> Arc<dyn ToolSource> {
        Arc::new(McpTools {
            mcp: self.clone(),
            subagent,
        })
    }

    /// Starts every server to be started, all at once, each within its startup timeout, and
    /// lists their tools. Failures are reported on stderr; they do not stop anything.
    pub async fn start(&self) {
        self.started
            .get_or_init(|| async {
                let starts = self.servers.iter().map(|s| self.start_one(s));
                join_all(starts).await;
                self.rebuild();
            })
            .await;
    }

    async fn start_one(&self, server: &Arc<Server>) {
        if !matches!(&*lock(&server.state), State::Waiting(Planned::Start)) {
            return;
        }
        let cfg = &server.config;
        let began = Instant::now();
        let handler = Handler {
            tools_changed: server.tools_changed.clone(),
        };
        let mut drain = None;
        let program = match &server.program {
            Some(Err(why)) => {
                self.failed(server, why.clone(), Duration::ZERO);
                return;
            }
            Some(Ok(p)) => Some(p.as_path()),
            None => None,
        };
        let attempt = async {
            let conn = client::connect(
                cfg,
                program,
                &self.env,
                &self.local,
                handler,
                server.stderr.clone(),
                &mut drain,
            )
            .await?;
            // What the server said before its first listing is covered by it.
            server.tools_changed.store(false, Ordering::SeqCst);
            let tools = list_tools(conn.service.peer())
                .await
                .map_err(|e| format!("tools/list failed: {}", said(&e.to_string())))?;
            Ok::<_, String>((conn, tools))
        };
        let outcome = tokio::time::timeout(cfg.startup_timeout, attempt).await;
        let took = began.elapsed();
        let why = match outcome {
            Ok(Ok((conn, tools))) => {
                server.set_listed(tools);
                *lock(&server.state) = State::Running {
                    conn: Box::new(conn),
                    took,
                };
                return;
            }
            Ok(Err(why)) => why,
            Err(_) => format!(
                "did not start within {} s (startup_timeout_sec)",
                seconds(cfg.startup_timeout)
            ),
        };
        // The process is gone (dropped with the attempt): its stderr ends soon.
        if let Some(d) = drain {
            let _ = tokio::time::timeout(STDERR_GRACE, d).await;
        }
        self.failed(server, why, took);
    }

    /// Says that `server` failed to start, and why, with the end of its stderr.
    fn failed(&self, server: &Server, why: String, took: Duration) {
        let cfg = &server.config;
        (self.warn)(&Warning::notice(format!(
            "MCP server {} failed to start: {why}; the run goes on without it",
            cfg.name
        )));
        let tail = lock(&server.stderr).last_lines(STDERR_LINES_SHOWN);
        for l in &tail {
            (self.warn)(&Warning::detail(format!(
                "{} stderr: {}",
                cfg.name,
                crate::text::one_line(l, 200)
            )));
        }
        if let Some(hint) = self.hidden_tmp_hint(server) {
            (self.warn)(&Warning::detail(hint));
        } else if let Some(hint) = self.refused_write_hint(server) {
            (self.warn)(&Warning::detail(hint));
        }
        // What `hx mcp list` and the tools' errors say carries the server's last words too:
        // they are seen without the lines above.
        let why = match tail.last() {
            Some(l) => format!("{why}: {}", crate::text::one_line(l, 200)),
            None => why,
        };
        *lock(&server.state) = State::Failed { why, took };
    }

    /// For a server that failed in the sandbox and names a file under the host's `/tmp` (its
    /// program, a script in its arguments, its folder): the sandbox's `/tmp` is the run's own,
    /// so the program says only that the file is missing (node's `MODULE_NOT_FOUND`), which
    /// does not tell the user why or what to do.
    fn hidden_tmp_hint(&self, server: &Server) -> Option<String> {
        let config::Transport::Stdio {
            command,
            args,
            cwd,
            sandbox,
            ..
        } = &server.config.transport
        else {
            return None;
        };
        let sandbox = self.local.sandbox_of(*sandbox)?;
        // A word of a shell line (`sh -c "node /tmp/x.js"`) and an option's value
        // (`--script=/tmp/x.js`) count too.
        let named = std::iter::once(command)
            .chain(args)
            .flat_map(|a| a.split_whitespace())
            .map(|w| w.split_once('=').map_or(w, |(_, v)| v))
            .map(std::path::Path::new)
            .filter(|p| p.is_absolute())
            .chain(std::iter::once(cwd.as_path()));
        let hidden = named.into_iter().find(|p| sandbox.hides(p))?;
        let name = &server.config.name;
        Some(format!(
            "{name} runs in hx's sandbox, whose /tmp is the run's own: {} in the host's /tmp is \
             not there; move it out of /tmp (into the workspace, say), or give its table \
             sandbox = \"off\"",
            hidden.display()
        ))
    }

    /// For a server that failed in the sandbox with a refused write in its stderr (`npx`
    /// writing its cache in `~/.npm`, which npm words as a problem of file owners): what the
    /// user can do about it, since the server's own words do not say.
    fn refused_write_hint(&self, server: &Server) -> Option<String> {
        let config::Transport::Stdio { sandbox, .. } = &server.config.transport else {
            return None;
        };
        let mode = self.local.sandbox_of(*sandbox)?.mode();
        if !lock(&server.stderr).shows_refused_write() {
            return None;
        }
        let name = &server.config.name;
        Some(match mode {
            crate::sandbox::Mode::ReadOnly => format!(
                "{name} runs in hx's sandbox, which is read-only: give its table sandbox = \"off\" \
                 if it must write"
            ),
            _ => format!(
                "{name} runs in hx's sandbox, which refuses writes outside the workspace, the \
                 temporary folder and sandbox.writable_roots: add the folder it writes there \
                 (npx's cache: ~/.npm), or give its table sandbox = \"off\""
            ),
        })
    }

    /// Makes the tool lists anew from every server's listing: servers in name order, each
    /// one's tools in name order, at most [`MAX_TOOLS`].
    fn rebuild(&self) {
        let mut taken = std::collections::HashSet::new();
        let mut all: Vec<(String, Arc<dyn Tool>)> = Vec::new();
        let mut subagent = Vec::new();
        let mut by_server = BTreeMap::new();
        let mut left_out = 0usize;
        for server in &self.servers {
            let listed = lock(&server.listed).clone();
            let mut shown = Vec::new();
            for l in listed {
                if all.len() >= MAX_TOOLS {
                    left_out += 1;
                    continue;
                }
                let name = names::qualified(&server.config.name, &l.tool, |n| taken.contains(n));
                taken.insert(name.clone());
                shown.push((name.clone(), l.description.clone()));
                let tool: Arc<dyn Tool> = Arc::new(McpTool {
                    server: server.clone(),
                    tool: l.tool,
                    spec: ToolSpec {
                        name: name.clone(),
                        description: l.description,
                        parameters: l.schema,
                    },
                });
                if server.config.subagents {
                    subagent.push((name.clone(), tool.clone()));
                }
                all.push((name, tool));
            }
            by_server.insert(server.config.name.clone(), shown);
        }
        if left_out > 0 {
            (self.warn)(&Warning::new(format!(
                "at most {MAX_TOOLS} MCP tools per request; {left_out} left out"
            )));
        }
        // Numbered under the lock that stores them: the lists stored last have the highest.
        let mut lists = lock(&self.lists);
        *lists = Lists {
            generation: lists.generation + 1,
            all: Arc::from(all),
            subagent: Arc::from(subagent),
            by_server,
        };
    }

    /// The current lists, after starting the servers (once) and listing again the tools of
    /// those that said theirs changed.
    async fn current(&self, subagent: bool) -> (u64, DynamicTools) {
        self.start().await;
        if self
            .servers
            .iter()
            .any(|s| s.tools_changed.load(Ordering::SeqCst))
        {
            let _one_at_a_time = self.relisting.lock().await;
            let changed: Vec<&Arc<Server>> = self
                .servers
                .iter()
                .filter(|s| s.tools_changed.swap(false, Ordering::SeqCst))
                .collect();
            if !changed.is_empty() {
                join_all(changed.iter().map(|s| s.relist())).await;
                self.rebuild();
            }
        }
        self.listed(subagent)
    }

    /// The lists as they stand, nothing started or asked.
    fn listed(&self, subagent: bool) -> (u64, DynamicTools) {
        let lists = lock(&self.lists);
        let tools = if subagent {
            &lists.subagent
        } else {
            &lists.all
        };
        (lists.generation, tools.clone())
    }

    /// Every server as `hx mcp list` shows it (call [`Mcp::start`] first).
    pub fn status(&self) -> Vec<Status> {
        let lists = lock(&self.lists);
        self.servers
            .iter()
            .map(|s| {
                let c = &s.config;
                let (state, why, took) = match &*lock(&s.state) {
                    State::Running { conn, took } => {
                        if conn.service.peer().is_transport_closed() {
                            ("stopped", None, Some(*took))
                        } else {
                            ("started", None, Some(*took))
                        }
                    }
                    State::Failed { why, took } => ("failed", Some(why.clone()), Some(*took)),
                    State::Waiting(Planned::Start) => ("not started", None, None),
                    State::Waiting(Planned::Disabled) => ("disabled", None, None),
                    State::Waiting(Planned::Untrusted) => (
                        "untrusted",
                        Some("review the file, then run `hx trust` to allow it".into()),
                        None,
                    ),
                    State::Waiting(Planned::Invalid(w)) => ("failed", Some(w.clone()), None),
                };
                let sandbox = match &c.transport {
                    config::Transport::Stdio { sandbox, .. } => Some(self.sandboxing(*sandbox)),
                    config::Transport::Http { .. } => None,
                };
                Status {
                    name: c.name.clone(),
                    source: c.source.label(),
                    sandbox,
                    target: match &c.transport {
                        config::Transport::Stdio { command, args, .. } => std::iter::once(command)
                            .chain(args)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(" "),
                        config::Transport::Http { url, .. } => url.clone(),
                    },
                    state,
                    why,
                    start_ms: took.map(|t| t.as_millis()),
                    tools: lists.by_server.get(&c.name).cloned().unwrap_or_default(),
                }
            })
            .collect()
    }
}

/// Whether a local server's process runs in the sandbox, for `hx mcp list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sandboxing {
    /// In the run's sandbox, of this mode.
    In(crate::sandbox::Mode),
    /// Outside it: its configuration says `sandbox = "off"`.
    OffByServer,
    /// Outside it: the run has no sandbox (the mode is off, or no Landlock).
    OffByRun,
}

impl Sandboxing {
    /// The mode the server runs in, or `off`.
    pub fn name(self) -> &'static str {
        match self {
            Sandboxing::In(mode) => mode.name(),
            Sandboxing::OffByServer | Sandboxing::OffByRun => "off",
        }
    }

    /// Why it runs outside the sandbox, if it does.
    pub fn why_off(self) -> Option<&'static str> {
        match self {
            Sandboxing::In(_) => None,
            Sandboxing::OffByServer => Some("its configuration says sandbox = \"off\""),
            Sandboxing::OffByRun => Some("the run has no sandbox (see hx sandbox)"),
        }
    }
}

impl serde::Serialize for Sandboxing {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Mcp {
    fn sandboxing(&self, server: ServerSandbox) -> Sandboxing {
        match (server, &self.local.sandbox) {
            (ServerSandbox::Off, _) => Sandboxing::OffByServer,
            (ServerSandbox::On, Some(s)) => Sandboxing::In(s.mode()),
            (ServerSandbox::On, None) => Sandboxing::OffByRun,
        }
    }
}

/// One server as `hx mcp list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Status {
    pub name: String,
    /// `config`, or the `.mcp.json` it came from.
    pub source: String,
    /// A local server's sandbox; `None` for an HTTP one (no process of hx's).
    pub sandbox: Option<Sandboxing>,
    /// The command line, or the URL.
    pub target: String,
    /// started, failed, stopped, disabled, untrusted.
    pub state: &'static str,
    pub why: Option<String>,
    /// Milliseconds from start to its tools listed (or to the failure).
    pub start_ms: Option<u128>,
    /// Request name and description of each tool offered.
    pub tools: Vec<(String, String)>,
}

/// One agent's view of the run's MCP tools.
struct McpTools {
    mcp: Arc<Mcp>,
    subagent: bool,
}

impl ToolSource for McpTools {
    fn current(&self) -> BoxFuture<'_, (u64, DynamicTools)> {
        Box::pin(self.mcp.current(self.subagent))
    }

    fn listed(&self) -> (u64, DynamicTools) {
        self.mcp.listed(self.subagent)
    }
}
