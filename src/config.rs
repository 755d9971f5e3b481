//! Configuration: defaults < user file < project file < environment < flags.
//!
//! Files are TOML: `$XDG_CONFIG_HOME/hx/config.toml` (or `~/.config/hx/config.toml`) and the
//! nearest `.hx/config.toml` found walking up from the working directory. Unknown keys are
//! errors, so a typo never silently does nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::model::{ClientOptions, ReasoningEcho};
use crate::tools::ToolLimits;

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
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderFile>,
    #[serde(default)]
    pub network: NetworkFile,
    #[serde(default)]
    pub tools: ToolsFile,
}

macro_rules! overlay {
    ($base:expr, $top:expr, $($f:ident),+) => {
        $( if $top.$f.is_some() { $base.$f = $top.$f.clone(); } )+
    };
}

impl FileConfig {
    /// Reads one file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<FileConfig, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(FileConfig::default()),
            Err(e) => {
                return Err(ConfigError(format!(
                    "cannot read config file {}: {e}",
                    path.display()
                )))
            }
        };
        toml::from_str(&text).map_err(|e| {
            let msg = e.message().to_string();
            let at = e
                .span()
                .map(|s| {
                    let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                    format!(" (line {line})")
                })
                .unwrap_or_default();
            ConfigError(format!("bad config file {}{at}: {msg}", path.display()))
        })
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
            skills_catalog_budget
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
        overlay!(self.tools, top.tools, output_chars, bash_timeout_secs);
        for (name, p) in top.providers {
            let e = self.providers.entry(name).or_default();
            overlay!(e, p, base_url, api_key_env, model, send_reasoning);
        }
        self
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
}

/// The environment as hx reads it; a map so tests need not touch the process environment.
pub type Env = BTreeMap<String, String>;

pub fn process_env() -> Env {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
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
    pub client: ClientOptions,
    pub limits: ToolLimits,
}

/// The names [`preset`] knows.
const PRESETS: [&str; 4] = ["deepseek", "ollama", "openai", "openrouter"];

/// The providers hx knows without configuration. A `[providers.NAME]` table overrides any of
/// their fields or defines a new one.
fn preset(name: &str) -> Option<ProviderFile> {
    let (url, key, model, echo) = match name {
        "deepseek" => (
            "https://api.deepseek.com",
            Some("DEEPSEEK_API_KEY"),
            Some("deepseek-v4-flash"),
            ReasoningEcho::Always,
        ),
        "openai" => (
            "https://api.openai.com/v1",
            Some("OPENAI_API_KEY"),
            None,
            ReasoningEcho::Never,
        ),
        "openrouter" => (
            "https://openrouter.ai/api/v1",
            Some("OPENROUTER_API_KEY"),
            None,
            ReasoningEcho::Auto,
        ),
        "ollama" => ("http://localhost:11434/v1", None, None, ReasoningEcho::Auto),
        _ => return None,
    };
    Some(ProviderFile {
        base_url: Some(url.into()),
        api_key_env: key.map(Into::into),
        model: model.map(Into::into),
        send_reasoning: Some(echo),
    })
}

/// The user's config file: `$XDG_CONFIG_HOME/hx/config.toml`, else `~/.config/hx/...`.
pub fn user_config_dir(env: &Env) -> Option<PathBuf> {
    let xdg = env.get("XDG_CONFIG_HOME").filter(|v| !v.is_empty());
    match xdg {
        Some(x) => Some(PathBuf::from(x).join("hx")),
        None => env
            .get("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| PathBuf::from(h).join(".config").join("hx")),
    }
}

/// The nearest `.hx/config.toml` at or above `cwd`.
pub fn project_config_file(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .map(|d| d.join(".hx").join("config.toml"))
        .find(|p| p.is_file())
}

impl Config {
    pub fn load(cwd: &Path, env: &Env, flags: &Flags) -> Result<Config, ConfigError> {
        let mut merged = FileConfig::default();
        let user = user_config_dir(env).map(|d| d.join("config.toml"));
        for path in [user, project_config_file(cwd)].into_iter().flatten() {
            if path.is_file() {
                merged = merged.overlay(FileConfig::load(&path)?);
            }
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
                .map(|s| s.to_string())
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

        let env_url = (provider == DEFAULT_PROVIDER)
            .then(|| nonempty("DEEPSEEK_BASE_URL"))
            .flatten();
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
            limits.bash_timeout = Duration::from_secs(s.max(1));
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
        Ok(Config {
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
            client,
            limits,
        })
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
