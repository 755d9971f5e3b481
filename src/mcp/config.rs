//! Which MCP servers a run starts: `[mcp_servers.NAME]` tables of hx's config files (Codex's
//! keys) and a project's `.mcp.json` (Claude Code's format), which runs only once trusted
//! (`hx trust`), like project hooks: its servers are commands from the repository.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::paths::Env;
use crate::text::Warning;
use crate::trust::{self, escaped, Gate};

use super::names;

/// How long a server may take to start and list its tools, unless its table says otherwise.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take, unless its table says otherwise.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Longer timeouts are refused as typos.
const MAX_STARTUP_TIMEOUT_SECS: f64 = 600.0;
const MAX_TOOL_TIMEOUT_SECS: f64 = 24.0 * 3600.0;
/// Servers one run may start, all sources together: each is a process or a connection, and
/// their tools go into every request.
pub const MAX_SERVERS: usize = 32;

/// `[mcp_servers.NAME]` as written in a config file (Codex's keys, plus `subagents`).
#[derive(Debug, Default, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerFile {
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub cwd: Option<String>,
    pub enabled: Option<bool>,
    pub startup_timeout_sec: Option<f64>,
    pub tool_timeout_sec: Option<f64>,
    pub enabled_tools: Option<Vec<String>>,
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    pub url: Option<String>,
    pub bearer_token_env_var: Option<String>,
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// Whether subagents (`task`) get this server's tools too (default: only the main agent).
    pub subagents: Option<bool>,
    /// `"off"`: a local server runs outside the run's sandbox (default `"on"`).
    pub sandbox: Option<ServerSandbox>,
}

/// Whether a local server's process runs in the run's sandbox, as commands do.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerSandbox {
    /// The run's sandbox (what bash may write, and `network`), the default.
    #[default]
    On,
    /// Outside it: the server may write wherever the user may. Its environment is still
    /// the commands' one, plus its `env`.
    Off,
}

impl ServerFile {
    /// The problem that keeps the table `[mcp_servers.NAME]` from being used, if any.
    pub fn check(&self, name: &str) -> Result<(), String> {
        if !names::valid_server_name(name) {
            return Err(format!(
                "the server name {name:?} must be {}",
                names::SERVER_NAME_RULE
            ));
        }
        match (&self.command, &self.url) {
            (Some(_), Some(_)) => return Err("give either command or url, not both".into()),
            (None, None) => {
                return Err("give command (a local server) or url (an HTTP server)".into())
            }
            (Some(c), None) if c.trim().is_empty() => return Err("command is empty".into()),
            (None, Some(u)) => check_url(u)?,
            _ => {}
        }
        if self.url.is_none()
            && (self.bearer_token_env_var.is_some() || !self.http_headers.is_empty())
        {
            return Err("bearer_token_env_var and http_headers need url".into());
        }
        if self.command.is_none()
            && (!self.args.is_empty()
                || !self.env.is_empty()
                || self.cwd.is_some()
                || self.sandbox.is_some())
        {
            return Err("args, env, cwd and sandbox need command".into());
        }
        seconds(
            "startup_timeout_sec",
            self.startup_timeout_sec,
            MAX_STARTUP_TIMEOUT_SECS,
        )?;
        seconds(
            "tool_timeout_sec",
            self.tool_timeout_sec,
            MAX_TOOL_TIMEOUT_SECS,
        )?;
        Ok(())
    }
}

fn check_url(url: &str) -> Result<(), String> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(format!(
            "url must start with http:// or https://, got {url:?}"
        ))
    }
}

fn seconds(key: &str, value: Option<f64>, max: f64) -> Result<Option<Duration>, String> {
    match value {
        None => Ok(None),
        Some(s) if s > 0.0 && s <= max => Ok(Some(Duration::from_secs_f64(s))),
        Some(s) => Err(format!("{key} must be above 0 and at most {max}, got {s}")),
    }
}

/// Where a server was configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A `[mcp_servers]` table of hx's config (the user's, or a trusted project's).
    Config,
    /// A project's `.mcp.json`.
    McpJson(PathBuf),
}

impl Source {
    pub fn label(&self) -> String {
        match self {
            Source::Config => "config".into(),
            Source::McpJson(p) => p.display().to_string(),
        }
    }
}

/// How hx reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    /// A local process speaking JSON-RPC on its stdin and stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Added to the environment of commands (the `[shell_env]` policy's).
        env: BTreeMap<String, String>,
        cwd: PathBuf,
        sandbox: ServerSandbox,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        bearer_token_env_var: Option<String>,
        headers: BTreeMap<String, String>,
    },
}

/// One server, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub name: String,
    pub source: Source,
    pub transport: Transport,
    pub enabled: bool,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    pub enabled_tools: Option<Vec<String>>,
    pub disabled_tools: Vec<String>,
    pub subagents: bool,
}

impl ServerConfig {
    /// A checked config table (see [`ServerFile::check`]); `cwd` is relative to `base`.
    pub fn from_file(name: &str, f: &ServerFile, base: &Path, home: Option<&Path>) -> ServerConfig {
        let transport = match (&f.command, &f.url) {
            (Some(command), _) => Transport::Stdio {
                command: command.clone(),
                args: f.args.clone(),
                env: f.env.clone(),
                cwd: f.cwd.as_deref().map_or(base.to_path_buf(), |c| {
                    match (c.strip_prefix("~/"), home) {
                        (Some(rest), Some(h)) => h.join(rest),
                        _ => base.join(c),
                    }
                }),
                sandbox: f.sandbox.unwrap_or_default(),
            },
            (None, url) => Transport::Http {
                url: url.clone().unwrap_or_default(),
                bearer_token_env_var: f.bearer_token_env_var.clone(),
                headers: f.http_headers.clone(),
            },
        };
        ServerConfig {
            name: name.to_string(),
            source: Source::Config,
            transport,
            enabled: f.enabled.unwrap_or(true),
            startup_timeout: seconds("", f.startup_timeout_sec, MAX_STARTUP_TIMEOUT_SECS)
                .ok()
                .flatten()
                .unwrap_or(DEFAULT_STARTUP_TIMEOUT),
            tool_timeout: seconds("", f.tool_timeout_sec, MAX_TOOL_TIMEOUT_SECS)
                .ok()
                .flatten()
                .unwrap_or(DEFAULT_TOOL_TIMEOUT),
            enabled_tools: f.enabled_tools.clone(),
            disabled_tools: f.disabled_tools.clone(),
            subagents: f.subagents.unwrap_or(false),
        }
    }

    /// Whether the server's tool `name` is offered (`enabled_tools`, then `disabled_tools`).
    pub fn allows(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|list| list.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }
}

/// One server of `.mcp.json`, Claude Code's format: a local command, or an HTTP endpoint.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// hx's own key (Claude Code has none): `"off"` runs a local server outside the sandbox.
    sandbox: Option<ServerSandbox>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpJson {
    #[serde(rename = "mcpServers", default)]
    servers: BTreeMap<String, JsonServer>,
}

/// The servers of a `.mcp.json` text, or every problem found (one line each).
fn parse_mcp_json(text: &str) -> Result<Vec<(String, JsonServer)>, Vec<String>> {
    let file: McpJson = serde_json::from_str(text)
        .map_err(|e| vec![crate::term::collapse_whitespace(&e.to_string())])?;
    let mut problems = Vec::new();
    for (name, s) in &file.servers {
        let why = match (s.kind.as_deref(), &s.command, &s.url) {
            _ if !names::valid_server_name(name) => {
                Some(format!("the name must be {}", names::SERVER_NAME_RULE))
            }
            (None | Some("stdio"), Some(c), None) if !c.trim().is_empty() => None,
            (Some("http"), None, Some(_)) if s.sandbox.is_some() => {
                Some("sandbox is for a local server (a command), not an HTTP one".into())
            }
            (Some("http"), None, Some(u)) => check_url(u).err(),
            (Some("sse"), ..) => Some(
                "type \"sse\" (the deprecated HTTP+SSE transport) is not supported; use \"http\""
                    .into(),
            ),
            (Some(k), ..) if !["stdio", "http"].contains(&k) => {
                Some(format!("unknown type {k:?} (stdio or http)"))
            }
            (Some("http"), ..) => Some("type \"http\" needs url and no command".into()),
            _ => Some("a local server needs a non-empty command and no url".into()),
        };
        if let Some(why) = why {
            problems.push(format!("server {}: {why}", escaped(name)));
        }
    }
    if problems.is_empty() {
        Ok(file.servers.into_iter().collect())
    } else {
        Err(problems)
    }
}

/// `.mcp.json` (Claude Code's project MCP servers) needs `hx trust`: each server is a command
/// to run, or an HTTP endpoint that gets the model's tool calls.
pub const TRUST: trust::Kind = trust::Kind {
    path: ".mcp.json",
    label: "project MCP servers",
    review,
    content: trust::Content::File,
};

/// `hx trust` on a `.mcp.json`: each server's command line and environment (or URL and
/// headers), escaped, or the problems that refuse it.
pub fn review(_path: &Path, text: &str) -> trust::Review {
    let servers = parse_mcp_json(text)?;
    let mut lines = Vec::new();
    for (name, s) in servers {
        let name = escaped(&name);
        match (&s.command, &s.url) {
            (Some(c), _) => {
                let words: Vec<String> = std::iter::once(c)
                    .chain(&s.args)
                    .map(|w| escaped(w))
                    .collect();
                lines.push(format!("server {name}: {}", words.join(" ")));
                for (k, v) in &s.env {
                    lines.push(format!("  env {}={}", escaped(k), escaped(v)));
                }
                if s.sandbox == Some(ServerSandbox::Off) {
                    lines.push("  sandbox off: it may write wherever you may".into());
                }
            }
            (None, url) => {
                lines.push(format!(
                    "server {name}: http {}",
                    escaped(url.as_deref().unwrap_or(""))
                ));
                for (k, v) in &s.headers {
                    lines.push(format!("  header {}: {}", escaped(k), escaped(v)));
                }
            }
        }
    }
    if lines.is_empty() {
        lines.push("(no servers)".into());
    }
    Ok(lines)
}

/// `${VAR}` and `${VAR:-default}` in `.mcp.json` values, as Claude Code expands them, from
/// hx's environment. A variable that is not set and has no default is an error naming it.
pub fn expand(text: &str, env: &Env) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        match (env.get(name), default) {
            (Some(v), _) => out.push_str(v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(format!("${{{name}}} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// What a run does with a configured server.
#[derive(Debug, Clone, PartialEq)]
pub enum Planned {
    Start,
    /// `enabled = false`.
    Disabled,
    /// From a `.mcp.json` that `hx trust` has not approved as it is.
    Untrusted,
    /// Its configuration cannot be used (a `${VAR}` that is not set); why.
    Invalid(String),
}

/// One configured server and what the run does with it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedServer {
    pub config: ServerConfig,
    pub plan: Planned,
}

/// Every server configured for a run in `cwd`: the config's tables (already checked) and the
/// project's `.mcp.json`, in name order, at most [`MAX_SERVERS`]. Lines for the user (an
/// untrusted `.mcp.json`, a name defined twice, servers past the limit) go to `warnings`.
pub fn plan(
    tables: &BTreeMap<String, ServerFile>,
    workspace: &Path,
    env: &Env,
    home: Option<&Path>,
    warnings: &mut Vec<Warning>,
) -> Result<Vec<PlannedServer>, String> {
    let mut out: BTreeMap<String, PlannedServer> = BTreeMap::new();
    for (name, f) in tables {
        let config = ServerConfig::from_file(name, f, workspace, home);
        let plan = if config.enabled {
            Planned::Start
        } else {
            Planned::Disabled
        };
        out.insert(name.clone(), PlannedServer { config, plan });
    }
    let gated = trust::gate(&TRUST, workspace, env)?;
    let (path, text, trusted) = match gated {
        None => (None, None, false),
        Some(Gate::Trusted { path, text }) => (Some(path), Some(text), true),
        Some(Gate::Skipped {
            notice,
            path,
            bytes,
        }) => {
            warnings.push(notice);
            // What the gate read, so `hx mcp list` can name what waits for trust; never
            // started.
            let text = bytes.and_then(|b| String::from_utf8(b).ok());
            (Some(path), text, false)
        }
    };
    if let (Some(path), Some(text)) = (path, text) {
        let servers = match parse_mcp_json(&text) {
            Ok(s) => s,
            Err(problems) if trusted => {
                return Err(format!("{}: {}", path.display(), problems.join("; ")))
            }
            Err(_) => Vec::new(),
        };
        let project = TRUST.project_dir(&path).to_path_buf();
        for (name, s) in servers {
            if out.contains_key(&name) {
                warnings.push(Warning::notice(format!(
                    "{}: MCP server {} is also in a config file, which wins",
                    path.display(),
                    escaped(&name)
                )));
                continue;
            }
            // An untrusted file is shown as written: expanding its `${VAR}`s would put the
            // user's variables (a token) into `hx mcp list`'s output for a server that never
            // starts.
            let no_env = Env::new();
            let vars = if trusted { env } else { &no_env };
            let (config, invalid) = from_json(&name, &s, &path, &project, vars);
            let plan = match (trusted, invalid) {
                (false, _) => Planned::Untrusted,
                (true, Some(why)) => Planned::Invalid(why),
                (true, None) => Planned::Start,
            };
            out.insert(name, PlannedServer { config, plan });
        }
    }
    let mut list: Vec<PlannedServer> = out.into_values().collect();
    if list.len() > MAX_SERVERS {
        let dropped: Vec<String> = list.drain(MAX_SERVERS..).map(|p| p.config.name).collect();
        warnings.push(Warning::new(format!(
            "at most {MAX_SERVERS} MCP servers; left out: {}",
            dropped.join(", ")
        )));
    }
    Ok(list)
}

/// A `.mcp.json` server with its `${VAR}`s expanded (and why it cannot start, if one is
/// missing). It runs in the project folder, as in Claude Code.
fn from_json(
    name: &str,
    s: &JsonServer,
    path: &Path,
    project: &Path,
    env: &Env,
) -> (ServerConfig, Option<String>) {
    let mut problem = None;
    let mut x = |t: &str| {
        expand(t, env).unwrap_or_else(|e| {
            problem.get_or_insert(e);
            t.to_string()
        })
    };
    let transport = match &s.command {
        Some(c) => Transport::Stdio {
            command: x(c),
            args: s.args.iter().map(|a| x(a)).collect(),
            env: s.env.iter().map(|(k, v)| (k.clone(), x(v))).collect(),
            cwd: project.to_path_buf(),
            sandbox: s.sandbox.unwrap_or_default(),
        },
        None => Transport::Http {
            url: x(s.url.as_deref().unwrap_or("")),
            bearer_token_env_var: None,
            headers: s.headers.iter().map(|(k, v)| (k.clone(), x(v))).collect(),
        },
    };
    let config = ServerConfig {
        name: name.to_string(),
        source: Source::McpJson(path.to_path_buf()),
        transport,
        enabled: true,
        startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: DEFAULT_TOOL_TIMEOUT,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        subagents: false,
    };
    (config, problem)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> ServerFile {
        toml::from_str(text).expect("table")
    }

    #[test]
    fn tables_are_checked() {
        let ok = table("command = \"npx\"\nargs = [\"-y\", \"x\"]\ntool_timeout_sec = 1.5");
        assert_eq!(ok.check("fs"), Ok(()));
        assert!(table("url = \"https://h/mcp\"").check("web").is_ok());
        let e = |t: &str| table(t).check("s").unwrap_err();
        assert_eq!(
            e(""),
            "give command (a local server) or url (an HTTP server)"
        );
        assert_eq!(
            e("command = \"a\"\nurl = \"http://h\""),
            "give either command or url, not both"
        );
        assert!(e("url = \"ftp://h\"").starts_with("url must start with http://"));
        assert_eq!(
            e("command = \"a\"\nhttp_headers = {a = \"b\"}"),
            "bearer_token_env_var and http_headers need url"
        );
        assert!(e("command = \"a\"\nstartup_timeout_sec = 0")
            .starts_with("startup_timeout_sec must be above 0"));
        assert!(table("command = \"a\"")
            .check("a.b")
            .unwrap_err()
            .contains("server name"));
        assert!(
            toml::from_str::<ServerFile>("comand = \"a\"").is_err(),
            "unknown keys are errors"
        );
    }

    #[test]
    fn a_table_resolves_with_defaults() {
        let f = table("command = \"srv\"\ncwd = \"sub\"\ndisabled_tools = [\"rm\"]");
        let c = ServerConfig::from_file("s", &f, Path::new("/w"), Some(Path::new("/h")));
        assert_eq!(c.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(c.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert!(c.enabled && !c.subagents);
        assert!(matches!(&c.transport, Transport::Stdio { cwd, .. } if cwd == Path::new("/w/sub")));
        assert!(c.allows("ls") && !c.allows("rm"));
        let f = table("command = \"srv\"\ncwd = \"~/x\"\nenabled_tools = [\"ls\"]");
        let c = ServerConfig::from_file("s", &f, Path::new("/w"), Some(Path::new("/h")));
        assert!(matches!(&c.transport, Transport::Stdio { cwd, .. } if cwd == Path::new("/h/x")));
        assert!(c.allows("ls") && !c.allows("cat"));
    }

    #[test]
    fn a_local_server_may_leave_the_sandbox_in_either_format() {
        let stdio = |c: &ServerConfig| match &c.transport {
            Transport::Stdio { sandbox, .. } => *sandbox,
            Transport::Http { .. } => panic!("a local server"),
        };
        let base = Path::new("/w");
        let on = ServerConfig::from_file("s", &table("command = \"srv\""), base, None);
        assert_eq!(stdio(&on), ServerSandbox::On);
        let f = table("command = \"srv\"\nsandbox = \"off\"");
        assert_eq!(f.check("s"), Ok(()));
        assert_eq!(
            stdio(&ServerConfig::from_file("s", &f, base, None)),
            ServerSandbox::Off
        );
        assert!(toml::from_str::<ServerFile>("command = \"a\"\nsandbox = \"no\"").is_err());
        assert_eq!(
            table("url = \"http://h\"\nsandbox = \"off\"").check("s"),
            Err("args, env, cwd and sandbox need command".into())
        );

        let text =
            r#"{"mcpServers": {"a": {"command": "x", "sandbox": "off"}, "b": {"command": "y"}}}"#;
        assert_eq!(
            review(Path::new(".mcp.json"), text).expect("valid"),
            [
                "server \"a\": \"x\"",
                "  sandbox off: it may write wherever you may",
                "server \"b\": \"y\"",
            ]
        );
        let servers = parse_mcp_json(text).expect("valid");
        let p = Path::new("/p/.mcp.json");
        let configs: Vec<ServerSandbox> = servers
            .iter()
            .map(|(n, s)| stdio(&from_json(n, s, p, Path::new("/p"), &Env::new()).0))
            .collect();
        assert_eq!(configs, [ServerSandbox::Off, ServerSandbox::On]);
        let http =
            r#"{"mcpServers": {"w": {"type": "http", "url": "http://h", "sandbox": "off"}}}"#;
        let problems = review(Path::new(".mcp.json"), http).unwrap_err();
        assert_eq!(
            problems,
            ["server \"w\": sandbox is for a local server (a command), not an HTTP one"]
        );
    }

    #[test]
    fn mcp_json_in_claude_codes_format() {
        let text = r#"{"mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"A": "1"}},
            "web": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#;
        let servers = parse_mcp_json(text).expect("valid");
        assert_eq!(servers.len(), 2);
        let lines = review(Path::new(".mcp.json"), text).expect("valid");
        assert_eq!(
            lines,
            [
                "server \"fs\": \"npx\" \"-y\" \"server-filesystem\" \".\"",
                "  env \"A\"=\"1\"",
                "server \"web\": http \"https://h/mcp\"",
                "  header \"Authorization\": \"Bearer ${TOKEN}\"",
            ]
        );
        let bad = r#"{"mcpServers": {"a": {"type": "sse", "url": "http://h"},
            "b": {"args": []}, "c d": {"command": "x"}}}"#;
        let problems = review(Path::new(".mcp.json"), bad).unwrap_err();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].contains("\"sse\""), "{problems:?}");
        assert!(review(Path::new("x"), r#"{"mcpServers": {}, "x": 1}"#).is_err());
    }

    #[test]
    fn variables_expand_as_in_claude_code() {
        let mut env = Env::new();
        env.insert("T".into(), "tok".into());
        assert_eq!(expand("Bearer ${T}", &env), Ok("Bearer tok".into()));
        assert_eq!(expand("${U:-dflt}/${T}", &env), Ok("dflt/tok".into()));
        assert_eq!(expand("${U}", &env), Err("${U} is not set".into()));
        assert_eq!(expand("no ${ end", &env), Ok("no ${ end".into()));
    }
}
