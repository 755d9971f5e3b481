//! Configuration: defaults < user file < project file < environment < flags.
//!
//! Files are TOML: `$XDG_CONFIG_HOME/hx/config.toml` (or `~/.config/hx/config.toml`) and the
//! nearest `.hx/config.toml` found walking up from the working directory. Unknown keys are
//! errors, so a typo never silently does nothing. The project file comes with the repository
//! and can send the API key elsewhere or turn the guard off, so it applies only while trusted
//! (`crate::trust`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

// The environment map and the user's folders are a leaf module every layer reads; re-exported
// here, where callers have always found them.
pub use crate::paths::{process_env, user_config_dir, Env};

use crate::context::{self, CompactAt};
use crate::model::{ClientOptions, ReasoningEcho};
use crate::process::{EnvPolicy, Inherit};
use crate::sandbox;
use crate::tools::ToolLimits;
use crate::trust::{self, gate, Gate};

pub const DEFAULT_PROVIDER: &str = "deepseek";
pub const DEFAULT_MAX_TURNS: u32 = 200;
pub const DEFAULT_SUBAGENT_MAX_TURNS: u32 = 30;

/// A configuration problem: reported in one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

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
    pub show_reasoning: Option<bool>,
    /// The built-in guard against destructive bash commands (default on).
    pub guard: Option<bool>,
    /// Characters the skill catalog may take in the system prompt (default 8,000).
    pub skills_catalog_budget: Option<usize>,
    /// Record every run as a session file (default on).
    pub sessions: Option<bool>,
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
    /// `sandbox = "MODE"` or a `[sandbox]` table (mode, writable_roots, network, required).
    #[serde(default)]
    pub sandbox: sandbox::SandboxFile,
    /// `[mcp_servers.NAME]`: MCP servers whose tools the agent gets (see `crate::mcp`).
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, crate::mcp::config::ServerFile>,
}

/// `compact_at` as written: TOML tells a float (a share of the window) from an integer (tokens).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum CompactAtFile {
    Tokens(u64),
    Fraction(f64),
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
            .map(|c| c.sandbox_read_from(path))
            .map_err(|(line, msg)| {
                let at = line.map(|l| format!(" (line {l})")).unwrap_or_default();
                ConfigError(format!("bad config file {}{at}: {msg}", path.display()))
            })
    }

    /// Remembers which file set the sandbox mode, for `hx sandbox`.
    fn sandbox_read_from(mut self, path: &Path) -> FileConfig {
        self.sandbox = self.sandbox.read_from(path);
        self
    }

    /// `self` with `top`'s settings laid over it.
    fn overlay(mut self, top: FileConfig) -> FileConfig {
        overlay!(
            self,
            top,
            provider,
            model,
            max_turns,
            subagent_max_turns,
            show_reasoning,
            guard,
            skills_catalog_budget,
            sessions,
            context_window,
            compact_at,
            project_doc,
            project_doc_max_bytes
        );
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
            keep_background
        );
        overlay!(
            self.shell_env,
            top.shell_env,
            inherit,
            ignore_default_excludes,
            include_only
        );
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
                context_window
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

/// What the command line says (all optional: absent flags leave lower layers in force).
#[derive(Debug, Default, Clone)]
pub struct Flags {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub base_url: Option<String>,
    pub max_turns: Option<u32>,
    pub show_reasoning: bool,
    pub no_guard: bool,
    /// `--sandbox MODE`.
    pub sandbox: Option<sandbox::Mode>,
    /// `--no-project-doc`.
    pub no_project_doc: bool,
}

/// Everything a run needs to know, resolved.
#[derive(Debug, Clone)]
pub struct Config {
    pub provider: String,
    pub model: String,
    pub base_url: String,
    /// The variable the key came from, for error messages.
    pub api_key_env: Option<String>,
    pub api_key: Option<String>,
    pub reasoning_echo: ReasoningEcho,
    pub max_turns: u32,
    pub subagent_max_turns: u32,
    pub show_reasoning: bool,
    pub guard: bool,
    pub skills_catalog_budget: usize,
    /// Whether runs are recorded as session files.
    pub sessions: bool,
    /// The model's context window and when to compact.
    pub context: context::Settings,
    /// Whether `context_window` came from a config file (else from the model's name, which
    /// [`Config::set_model`] looks at again).
    pub window_configured: bool,
    /// Whether the AGENTS.md files go into the system prompt, and how many bytes of them.
    pub project_doc: bool,
    pub project_doc_max_bytes: usize,
    pub client: ClientOptions,
    pub limits: ToolLimits,
    /// The environment policy of tool commands.
    pub shell_env: EnvPolicy,
    /// `[tools] keep_background`.
    pub keep_background: bool,
    /// What bash may write and reach (see `crate::sandbox`).
    pub sandbox: sandbox::Settings,
    /// `[mcp_servers]` of the config files, each checked.
    pub mcp_servers: BTreeMap<String, crate::mcp::config::ServerFile>,
}

/// A provider hx knows without configuration.
#[derive(Debug, Clone, Copy)]
pub struct Preset {
    pub name: &'static str,
    pub base_url: &'static str,
    /// The variable holding the API key; `None`: no Authorization header.
    pub api_key_env: Option<&'static str>,
    /// The variable that overrides the base URL (above config files, below `--base-url`).
    pub base_url_env: Option<&'static str>,
    pub model: Option<&'static str>,
    pub echo: ReasoningEcho,
    /// Said when its server on this machine refuses the connection.
    pub refused_hint: Option<&'static str>,
}

/// The providers hx knows without configuration, as `hx agent --help` and the README list
/// them. A `[providers.NAME]` table overrides any of their fields or defines a new one.
pub const PRESETS: [Preset; 4] = [
    Preset {
        name: "deepseek",
        base_url: "https://api.deepseek.com",
        api_key_env: Some("DEEPSEEK_API_KEY"),
        base_url_env: Some("DEEPSEEK_BASE_URL"),
        model: Some("deepseek-v4-flash"),
        echo: ReasoningEcho::Always,
        refused_hint: None,
    },
    Preset {
        name: "ollama",
        base_url: "http://localhost:11434/v1",
        api_key_env: None,
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        refused_hint: Some("is Ollama running? start it with `ollama serve`"),
    },
    Preset {
        name: "openai",
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        base_url_env: Some("OPENAI_BASE_URL"),
        model: None,
        echo: ReasoningEcho::Never,
        refused_hint: None,
    },
    Preset {
        name: "openrouter",
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        refused_hint: None,
    },
];

fn find_preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// A preset as a provider table.
fn preset(name: &str) -> Option<ProviderFile> {
    let p = find_preset(name)?;
    Some(ProviderFile {
        base_url: Some(p.base_url.into()),
        api_key_env: p.api_key_env.map(Into::into),
        model: p.model.map(Into::into),
        send_reasoning: Some(p.echo),
        context_window: None,
    })
}

/// `.hx/config.toml` needs `hx trust`: it can point a provider (and its API key) at any
/// server, or turn the guard off.
pub const TRUST: trust::Kind = trust::Kind {
    path: ".hx/config.toml",
    label: "project config",
    review,
};

/// The window and the compaction point of a run: the provider's table, else the top-level
/// `context_window`, else what hx knows of the model, else [`context::DEFAULT_WINDOW`].
fn context_settings(
    file: &FileConfig,
    table: &ProviderFile,
    model: &str,
) -> Result<context::Settings, ConfigError> {
    let window = table
        .context_window
        .or(file.context_window)
        .or_else(|| context::builtin_window(model))
        .unwrap_or(context::DEFAULT_WINDOW);
    if window < context::MIN_WINDOW {
        return Err(ConfigError(format!(
            "context_window = {window} is too small: set it to the model's window in tokens (at \
             least {}; the system prompt and the tool schemas alone take a few thousand)",
            context::MIN_WINDOW
        )));
    }
    let compact_at = match file.compact_at {
        None => CompactAt::Fraction(context::DEFAULT_COMPACT_AT),
        Some(CompactAtFile::Fraction(f)) if f > 0.0 && f <= 1.0 => CompactAt::Fraction(f),
        Some(CompactAtFile::Fraction(f)) => {
            return Err(ConfigError(format!(
                "compact_at = {f} is not a share of the window: write a number above 0 and at \
                 most 1.0 (0.8 is 80 %), or a number of tokens such as 200000"
            )))
        }
        Some(CompactAtFile::Tokens(t)) if t >= context::MIN_WINDOW => CompactAt::Tokens(t),
        Some(CompactAtFile::Tokens(t)) => {
            return Err(ConfigError(format!(
                "compact_at = {t} is a number of tokens, and too small (at least {}); for a \
                 share of the window write a fraction such as 0.8",
                context::MIN_WINDOW
            )))
        }
    };
    Ok(context::Settings { window, compact_at })
}

impl Config {
    /// The configuration of a run started in `cwd`. The project file applies only while
    /// trusted; otherwise the line saying so is pushed to `warnings`.
    pub fn load(
        cwd: &Path,
        env: &Env,
        flags: &Flags,
        warnings: &mut Vec<String>,
    ) -> Result<Config, ConfigError> {
        let mut merged = FileConfig::default();
        if let Some(dir) = user_config_dir(env) {
            merged = merged.overlay(FileConfig::load(&dir.join("config.toml"))?);
        }
        match gate(&TRUST, cwd, env).map_err(ConfigError)? {
            Some(Gate::Trusted { path, text }) => {
                merged = merged.overlay(FileConfig::parse(&path, &text)?);
            }
            Some(Gate::Skipped { line, .. }) => warnings.push(line),
            None => {}
        }
        Config::resolve(merged, env, flags)
    }

    fn resolve(file: FileConfig, env: &Env, flags: &Flags) -> Result<Config, ConfigError> {
        let nonempty = |k: &str| env.get(k).filter(|v| !v.trim().is_empty()).cloned();
        let provider = flags
            .provider
            .clone()
            .or_else(|| nonempty("HX_PROVIDER"))
            .or(file.provider.clone())
            .unwrap_or_else(|| DEFAULT_PROVIDER.into());
        let preset = preset(&provider);
        let table = file.providers.get(&provider);
        if preset.is_none() && table.is_none() {
            let mut known: Vec<String> = PRESETS
                .iter()
                .map(|p| p.name.to_string())
                .chain(file.providers.keys().cloned())
                .collect();
            known.sort();
            known.dedup();
            return Err(ConfigError(format!(
                "unknown provider '{provider}' (known: {}); define it in a config file as [providers.{provider}]",
                known.join(", ")
            )));
        }
        let preset = preset.unwrap_or_default();
        let table = table.cloned().unwrap_or_default();
        // A table inherits what it does not set from the preset of the same name;
        // `api_key_env = ""` makes a preset keyless.
        let api_key_env = table
            .api_key_env
            .clone()
            .or(preset.api_key_env.clone())
            .filter(|v| !v.is_empty());

        // A preset's own variable (DEEPSEEK_BASE_URL, OPENAI_BASE_URL), as their own tools
        // read it.
        let env_url = find_preset(&provider)
            .and_then(|p| p.base_url_env)
            .and_then(nonempty);
        let base_url = flags
            .base_url
            .clone()
            .or(env_url)
            .or(table.base_url.clone())
            .or(preset.base_url.clone())
            .ok_or_else(|| {
                ConfigError(format!(
                    "provider '{provider}' has no base_url; set [providers.{provider}] base_url in a config file or pass --base-url"
                ))
            })?;
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return Err(ConfigError(format!(
                "base URL must start with http:// or https://, got '{base_url}'"
            )));
        }
        let model = flags
            .model
            .clone()
            .or_else(|| nonempty("HX_MODEL"))
            .or(table.model.clone())
            .or(file.model.clone())
            .or(preset.model.clone())
            .ok_or_else(|| {
                ConfigError(format!(
                    "no model set for provider '{provider}'; pass --model, set HX_MODEL, or set [providers.{provider}] model in a config file"
                ))
            })?;

        let mut client = ClientOptions {
            base_url: base_url.clone(),
            refused_hint: find_preset(&provider)
                .and_then(|p| p.refused_hint)
                .map(Into::into),
            ..ClientOptions::default()
        };
        let n = &file.network;
        if let Some(r) = n.retries {
            client.retries = r;
        }
        if let Some(ms) = n.retry_base_delay_ms {
            client.retry_base_delay = Duration::from_millis(ms);
        }
        if let Some(s) = n.connect_timeout_secs {
            client.connect_timeout = Duration::from_secs(s.max(1));
        }
        if let Some(s) = n.idle_timeout_secs {
            client.idle_timeout = Duration::from_secs(s.max(1));
        }
        if let Some(s) = n.request_timeout_secs {
            client.request_timeout = Duration::from_secs(s.max(1));
        }
        if let Some(s) = n.max_response_secs {
            client.max_response_time = Duration::from_secs(s.max(1));
        }
        // A floor that any real event or response clears, so a typo cannot break every request.
        if let Some(b) = n.max_event_bytes {
            client.max_event_bytes = b.max(1024);
        }
        if let Some(b) = n.max_response_bytes {
            client.max_response_bytes = b.max(1024);
        }
        let mut limits = ToolLimits::default();
        if let Some(c) = file.tools.output_chars {
            limits.output_chars = c.max(1_000);
        }
        if let Some(s) = file.tools.bash_timeout_secs {
            limits.bash_timeout = Duration::from_secs(s.max(1)).min(limits.bash_max_timeout);
        }
        let max_turns = flags
            .max_turns
            .or(file.max_turns)
            .unwrap_or(DEFAULT_MAX_TURNS);
        let subagent_max_turns = file
            .subagent_max_turns
            .unwrap_or(DEFAULT_SUBAGENT_MAX_TURNS);
        if max_turns == 0 || subagent_max_turns == 0 {
            return Err(ConfigError(
                "max_turns and subagent_max_turns must be at least 1".into(),
            ));
        }
        // Every key variable hx knows of, not only the chosen provider's: a command has no
        // business with any of them.
        let key_vars: BTreeSet<String> = PRESETS
            .iter()
            .filter_map(|p| p.api_key_env.map(String::from))
            .chain(
                file.providers
                    .values()
                    .filter_map(|p| p.api_key_env.clone()),
            )
            .filter(|k| !k.is_empty())
            .collect();
        let se = &file.shell_env;
        let shell_env = EnvPolicy::new(
            se.inherit.unwrap_or_default(),
            se.ignore_default_excludes.unwrap_or(false),
            &se.exclude,
            se.include_only.as_deref().unwrap_or_default(),
            se.set.clone(),
            key_vars,
        )
        .map_err(|e| ConfigError(format!("[shell_env] {e}")))?;
        let sandbox =
            sandbox::Settings::resolve(&file.sandbox, flags.sandbox).map_err(ConfigError)?;
        let context = context_settings(&file, &table, &model)?;
        let window_configured = table.context_window.or(file.context_window).is_some();
        for (name, server) in &file.mcp_servers {
            server
                .check(name)
                .map_err(|e| ConfigError(format!("[mcp_servers.{name}] {e}")))?;
        }
        Ok(Config {
            sandbox,
            api_key: api_key_env.as_ref().and_then(|k| nonempty(k)),
            reasoning_echo: table
                .send_reasoning
                .or(preset.send_reasoning)
                .unwrap_or_default(),
            api_key_env,
            provider,
            model,
            base_url,
            max_turns,
            subagent_max_turns,
            show_reasoning: flags.show_reasoning || file.show_reasoning.unwrap_or(false),
            guard: !flags.no_guard && file.guard.unwrap_or(true),
            skills_catalog_budget: file
                .skills_catalog_budget
                .unwrap_or(crate::skills::DEFAULT_CATALOG_BUDGET),
            sessions: file.sessions.unwrap_or(true),
            context,
            window_configured,
            project_doc: !flags.no_project_doc && file.project_doc.unwrap_or(true),
            project_doc_max_bytes: file
                .project_doc_max_bytes
                .unwrap_or(context::DEFAULT_PROJECT_DOC_MAX_BYTES),
            client,
            limits,
            shell_env,
            keep_background: file.tools.keep_background.unwrap_or(false),
            mcp_servers: file.mcp_servers,
        })
    }

    /// Goes on with another model of the same provider (`/model` in `hx chat`). A window
    /// that no config file set is the new model's: a chat that moves from a 1M-token model to
    /// a local one must compact for the local one's window.
    pub fn set_model(&mut self, model: &str) {
        self.model = model.to_string();
        if !self.window_configured {
            self.context.window = context::builtin_window(model).unwrap_or(context::DEFAULT_WINDOW);
        }
    }

    /// Fails, naming the variable, when the provider needs a key that is not set. Checked
    /// before any request so a missing key never costs a round trip.
    pub fn require_key(&self) -> Result<(), ConfigError> {
        match (&self.api_key_env, &self.api_key) {
            (Some(var), None) => Err(ConfigError(format!(
                "{var} is not set: export {var}=<your API key> (provider '{}'), or choose another provider with --provider",
                self.provider
            ))),
            _ => Ok(()),
        }
    }

    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            api_key: self.api_key.clone(),
            ..self.client.clone()
        }
    }
}

#[cfg(test)]
mod tests;
