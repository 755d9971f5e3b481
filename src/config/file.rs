//! A config file as written: its tables, reading and parsing it, laying one file over
//! another, and what `hx trust` shows of the project file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::origins::Written;
use super::ConfigError;
use crate::model::{Effort, ReasoningEcho};
use crate::process::Inherit;
use crate::sandbox;
use crate::trust;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderFile {
    pub base_url: Option<String>,
    /// The environment variable holding the API key; none means no Authorization header.
    pub api_key_env: Option<String>,
    pub model: Option<String>,
    /// Whether assistant messages carry `reasoning_content` back: `always` (DeepSeek, which
    /// answers 400 without it), `auto` (when the server streams that key), `never` (servers
    /// that reject unknown message fields).
    pub send_reasoning: Option<ReasoningEcho>,
    /// Tokens the provider's model accepts in one request.
    pub context_window: Option<u64>,
    /// How hard this provider's model thinks (`off`, `low`, `high`, `max`); over the top-level
    /// `effort`, and the only one a provider hx knows no effort words for is sent.
    pub effort: Option<Effort>,
    /// The subagents' effort with this provider; over the top-level `subagent_effort`.
    pub subagent_effort: Option<Effort>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkFile {
    pub retries: Option<u32>,
    pub retry_base_delay_ms: Option<u64>,
    pub connect_timeout_secs: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub request_timeout_secs: Option<u64>,
    /// One attempt, request sent to last byte, however the server paces it.
    pub max_response_secs: Option<u64>,
    /// Bytes of one server-sent event.
    pub max_event_bytes: Option<usize>,
    /// Bytes of one response body.
    pub max_response_bytes: Option<usize>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsFile {
    pub output_chars: Option<usize>,
    pub bash_timeout_secs: Option<u64>,
    /// Leave what commands started in the background running when hx exits (default off).
    pub keep_background: Option<bool>,
    /// Background shells (`bash` with `run_in_background`) that may run at once.
    pub background_shells: Option<usize>,
    /// The tools the model is offered (`default`, or `minimal`: a persistent bash and
    /// str_replace_editor).
    pub profile: Option<crate::tools::minimal::Profile>,
}

/// `[checkpoints]`: what hx keeps of the workspace to show and undo changes (see
/// `crate::checkpoint`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsFile {
    pub enabled: Option<bool>,
    pub max_file_bytes: Option<u64>,
    pub max_files: Option<usize>,
    pub keep_days: Option<u64>,
    pub keep_sessions: Option<usize>,
    pub max_store_bytes: Option<u64>,
}

/// `[loop]`: the same call made over and over (see [`super::LoopSettings`]): when the model is told,
/// and when the run ends.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopFile {
    pub repeats: Option<u32>,
    pub stop_after: Option<u32>,
}

/// `[shell_env]`: the environment of tool commands (see `process::env`). `exclude` and `set`
/// of the user's and the project's file add up; the other keys of the project file win.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellEnvFile {
    pub inherit: Option<Inherit>,
    pub ignore_default_excludes: Option<bool>,
    #[serde(default)]
    pub exclude: Vec<String>,
    pub include_only: Option<Vec<String>>,
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

/// One config file as written.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub provider: Option<String>,
    /// Used by every provider whose table sets no model.
    pub model: Option<String>,
    pub max_turns: Option<u32>,
    /// Turn limit of each subagent started by the `task` tool.
    pub subagent_max_turns: Option<u32>,
    /// How hard the model thinks: `off`, `low`, `high`, `max` (default: the model's own).
    pub effort: Option<Effort>,
    /// How hard the subagents' model thinks (default: as the main agent's).
    pub subagent_effort: Option<Effort>,
    pub show_reasoning: Option<bool>,
    /// How much the trace shows: `short` (the default) or `hooks` (every hook step).
    pub trace: Option<super::Trace>,
    /// The built-in guard against destructive bash commands (default on).
    pub guard: Option<bool>,
    /// Characters the skill catalog may take in the system prompt (default 8,000).
    pub skills_catalog_budget: Option<usize>,
    /// Record every run as a session file (default on): `sessions = false`, or a table
    /// `[sessions]` with `enabled` and `keep_days`.
    pub sessions: Option<SessionsFile>,
    /// Tokens the model accepts in one request, for providers whose table sets none.
    pub context_window: Option<u64>,
    /// When to compact: a share of the window (`0.8`) or a number of tokens (`200000`).
    pub compact_at: Option<CompactAtFile>,
    /// Put the AGENTS.md files in the system prompt (default on).
    pub project_doc: Option<bool>,
    /// Bytes the AGENTS.md files may take in the system prompt, all together.
    pub project_doc_max_bytes: Option<usize>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderFile>,
    #[serde(default)]
    pub network: NetworkFile,
    #[serde(default)]
    pub tools: ToolsFile,
    #[serde(default)]
    pub shell_env: ShellEnvFile,
    #[serde(default)]
    pub checkpoints: CheckpointsFile,
    /// `[loop]` (a keyword in Rust, hence the field's name).
    #[serde(default, rename = "loop")]
    pub loops: LoopFile,
    /// `sandbox = "MODE"` or a `[sandbox]` table (mode, writable_roots, network, required).
    #[serde(default)]
    pub sandbox: sandbox::SandboxFile,
    /// `[mcp_servers.NAME]`: MCP servers whose tools the agent gets (see `crate::mcp`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, crate::mcp::config::ServerFile>,
    /// End a run once its requests cost more than this (in the model's price currency).
    pub max_cost: Option<f64>,
    /// How the terminal is told a turn ended or an approval waits: `auto`, `osc9`, `bel`,
    /// or `off` (which turns `notify` off too).
    pub notifications: Option<crate::notify::Notifications>,
    /// A command (program and arguments, no shell) run with a JSON description as its last
    /// argument, as Codex's `notify`.
    pub notify: Option<Vec<String>>,
    /// Seconds a run goes before it is worth a notification.
    pub notify_after_secs: Option<u64>,
    /// `[pricing."MODEL"]`: a model's prices, over the built-in ones.
    #[serde(default)]
    pub pricing: BTreeMap<String, PriceFile>,
    /// Every key as written, with the file it is in (filled in by the loader, never read from
    /// TOML), so that resolving the configuration can say where each setting came from.
    #[serde(skip)]
    pub written: Written,
}

/// `[pricing."MODEL"]`: per million tokens.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriceFile {
    pub input_cache_hit: f64,
    pub input_cache_miss: f64,
    pub output: f64,
    /// `USD` unless set.
    pub currency: Option<String>,
    pub peak: Option<PeakFile>,
}

/// `[pricing."MODEL".peak]`: other prices in windows of the UTC clock, Monday to Friday.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeakFile {
    /// `["01:00-04:00", "06:00-10:00"]`.
    pub utc: Vec<String>,
    pub input_cache_hit: f64,
    pub input_cache_miss: f64,
    pub output: f64,
}

/// `compact_at` as written: TOML tells a float (a share of the window) from an integer (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum CompactAtFile {
    Tokens(u64),
    Fraction(f64),
}

/// `sessions = false`, or `[sessions]` with its settings: the short form stays valid.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(untagged)]
pub enum SessionsFile {
    Enabled(bool),
    Table(SessionsTable),
}

#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionsTable {
    pub enabled: Option<bool>,
    /// Sessions not written for this many days are removed when a run starts.
    pub keep_days: Option<u32>,
}

impl SessionsFile {
    fn table(self) -> SessionsTable {
        match self {
            SessionsFile::Enabled(b) => SessionsTable {
                enabled: Some(b),
                keep_days: None,
            },
            SessionsFile::Table(t) => t,
        }
    }

    /// `self` with what `top` sets laid over it.
    fn under(self, top: SessionsFile) -> SessionsFile {
        let (base, top) = (self.table(), top.table());
        SessionsFile::Table(SessionsTable {
            enabled: top.enabled.or(base.enabled),
            keep_days: top.keep_days.or(base.keep_days),
        })
    }

    pub fn enabled(&self) -> Option<bool> {
        self.clone().table().enabled
    }

    pub fn keep_days(&self) -> Option<u32> {
        self.clone().table().keep_days
    }
}

macro_rules! overlay {
    ($base:expr, $top:expr, $($f:ident),+) => {
        $( if $top.$f.is_some() { $base.$f = $top.$f.clone(); } )+
    };
}

impl FileConfig {
    /// Reads one file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let Some(bytes) = trust::read_file(path).map_err(ConfigError)? else {
            return Ok(FileConfig::default());
        };
        let text = std::str::from_utf8(&bytes).map_err(|_| {
            ConfigError(format!(
                "bad config file {}: not UTF-8 text",
                path.display()
            ))
        })?;
        FileConfig::parse(path, text)
    }

    /// Parses the text of the file `path`; the error names the file.
    pub fn parse(path: &Path, text: &str) -> Result<FileConfig, ConfigError> {
        parse_toml(text)
            .map(|c| FileConfig {
                written: Written::read(text, format!("file {}", path.display())),
                ..c.sandbox_read_from(path)
            })
            .map_err(|(line, msg)| {
                let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
                ConfigError(format!("bad config file {}{at}: {msg}", path.display()))
            })
    }

    /// The same settings, their file named `name` where `hx config` says where they came from
    /// (`user file PATH`): whose file it is, the loader knows.
    pub(super) fn named(mut self, name: &str) -> FileConfig {
        self.written = self.written.named(name);
        self
    }

    /// Remembers which file set the sandbox mode, for `hx sandbox`.
    fn sandbox_read_from(mut self, path: &Path) -> FileConfig {
        self.sandbox = self.sandbox.read_from(path);
        self
    }

    /// `self` with `top`'s settings laid over it.
    pub(super) fn overlay(mut self, top: FileConfig) -> FileConfig {
        self.sessions = match (self.sessions.take(), top.sessions.clone()) {
            (base, None) => base,
            (None, top) => top,
            (Some(base), Some(top)) => Some(base.under(top)),
        };
        overlay!(
            self,
            top,
            provider,
            model,
            max_turns,
            subagent_max_turns,
            effort,
            subagent_effort,
            show_reasoning,
            trace,
            guard,
            skills_catalog_budget,
            context_window,
            compact_at,
            project_doc,
            project_doc_max_bytes,
            max_cost,
            notifications,
            notify,
            notify_after_secs
        );
        self.pricing.extend(top.pricing);
        overlay!(
            self.network,
            top.network,
            retries,
            retry_base_delay_ms,
            connect_timeout_secs,
            idle_timeout_secs,
            request_timeout_secs,
            max_response_secs,
            max_event_bytes,
            max_response_bytes
        );
        overlay!(
            self.tools,
            top.tools,
            output_chars,
            bash_timeout_secs,
            keep_background,
            background_shells,
            profile
        );
        overlay!(
            self.shell_env,
            top.shell_env,
            inherit,
            ignore_default_excludes,
            include_only
        );
        overlay!(
            self.checkpoints,
            top.checkpoints,
            enabled,
            max_file_bytes,
            max_files,
            keep_days,
            keep_sessions,
            max_store_bytes
        );
        overlay!(self.loops, top.loops, repeats, stop_after);
        self.written = self.written.under(top.written);
        self.shell_env.exclude.extend(top.shell_env.exclude);
        self.shell_env.set.extend(top.shell_env.set);
        self.sandbox = self.sandbox.overlay(top.sandbox);
        // A server is one table: the project file's replaces the user's of the same name.
        self.mcp_servers.extend(top.mcp_servers);
        for (name, p) in top.providers {
            let e = self.providers.entry(name).or_default();
            overlay!(
                e,
                p,
                base_url,
                api_key_env,
                model,
                send_reasoning,
                context_window,
                effort,
                subagent_effort
            );
        }
        self
    }
}

/// Parses a config file's text; the error is the line (when known) and the message.
fn parse_toml(text: &str) -> Result<FileConfig, (Option<usize>, String)> {
    toml::from_str(text).map_err(|e| {
        let line = e
            .span()
            // `get`, not indexing: a span inside a multi-byte character must not panic.
            .map(|s| {
                let before = text.get(..s.start.min(text.len())).unwrap_or(text);
                before.matches('\n').count() + 1
            });
        (line, crate::text::collapse_whitespace(e.message()))
    })
}

/// `hx trust` on a project config: the problem that keeps it from applying, or its lines as
/// shown for approval (all of them: any line can change where requests go).
pub fn review(_path: &Path, text: &str) -> trust::Review {
    match parse_toml(text) {
        Ok(_) => Ok(text.lines().map(trust::escaped).collect()),
        Err((Some(line), msg)) => Err(vec![format!("line {line}: {msg}")]),
        Err((None, msg)) => Err(vec![msg]),
    }
}

/// `.hx/config.toml` needs `hx trust`: it can point a provider (and its API key) at any
/// server, or turn the guard off.
pub const TRUST: trust::Kind = trust::Kind {
    path: ".hx/config.toml",
    label: "project config",
    review,
    content: trust::Content::File,
};
