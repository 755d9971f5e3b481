//! Configuration: defaults < user file < project file < environment < flags.
//!
//! Files are TOML: `$XDG_CONFIG_HOME/hx/config.toml` (or `~/.config/hx/config.toml`) and the
//! nearest `.hx/config.toml` found walking up from the working directory. Unknown keys are
//! errors, so a typo never silently does nothing. The project file comes with the repository
//! and can send the API key elsewhere or turn the guard off, so it applies only while trusted
//! (`crate::trust`).

mod file;
pub mod origins;
mod presets;
mod profile;
mod resolve;

use std::collections::BTreeMap;
use std::path::Path;

pub use file::{review, CompactAtFile, FileConfig, NetworkFile, ProviderFile, ToolsFile, TRUST};
pub use presets::{Retired, PRESETS, RETIRED};
pub use profile::{Profiles, WindowFrom};
// The environment map and the user's folders are a leaf module every layer reads; re-exported
// here, where callers have always found them.
pub use crate::paths::{process_env, Env};

use crate::paths::user_config_dir;

use crate::context;
use crate::model::{ClientOptions, Dialect, Effort, ReasoningEcho};
use crate::process::EnvPolicy;
use crate::sandbox;
use crate::text::Warning;
use crate::tools::ToolLimits;
use crate::trust::{gate, Gate};

pub const DEFAULT_PROVIDER: &str = "deepseek";
pub const DEFAULT_MAX_TURNS: u32 = 200;
pub const DEFAULT_SUBAGENT_MAX_TURNS: u32 = 30;

/// `[loop]`: the same call (tool, arguments and result) made again and again, as small models
/// do. From `repeats` such calls in a row on, the model is told so; `stop_after` more end the
/// run. 0 turns either off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSettings {
    pub repeats: u32,
    pub stop_after: u32,
}

/// Told at the third identical call, the run ended at the fifth: a model that ignored two
/// notices is not going to stop (one repeated a `git clone` 29 times, to its turn limit).
pub const DEFAULT_LOOP: LoopSettings = LoopSettings {
    repeats: 3,
    stop_after: 2,
};

/// How much the trace on stderr shows (`trace` in a config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Trace {
    /// What happened: a line per tool call, a short line where one failed or was refused,
    /// the plan, the Stop line.
    #[default]
    Short,
    /// Every hook step as a `[HOOK]` line, with previews of tool results.
    Hooks,
}

impl Trace {
    pub fn name(self) -> &'static str {
        match self {
            Trace::Short => "short",
            Trace::Hooks => "hooks",
        }
    }

    /// The trace's level without `-q` or `-v`.
    pub fn verbosity(self) -> crate::events::Verbosity {
        match self {
            Trace::Short => crate::events::Verbosity::Normal,
            Trace::Hooks => crate::events::Verbosity::Hooks,
        }
    }
}

/// A configuration problem: reported in one line, exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

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
    /// `--effort`.
    pub effort: Option<Effort>,
    /// `--max-cost`.
    pub max_cost: Option<f64>,
    /// `--tools PROFILE`.
    pub tools: Option<crate::tools::minimal::Profile>,
    /// The effort of the session this run continues (`Some(None)`: its requests said none),
    /// which wins over the files' so that its requests stay the same.
    pub session_effort: Option<Option<Effort>>,
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
    /// The effort the user chose: `--effort`, the continued session's, the provider's table,
    /// the top-level `effort` (only for a provider hx knows effort words for), `/effort`.
    pub effort: Option<Effort>,
    /// The subagents' effort, when it differs from the main agent's.
    pub subagent_effort: Option<Effort>,
    /// The retired DeepSeek name the user gave, which `model` stands in for; its effort
    /// holds when the user set none.
    pub retired: Option<&'static Retired>,
    /// How the provider's API is told the effort.
    pub dialect: Dialect,
    pub max_turns: u32,
    pub subagent_max_turns: u32,
    /// `[loop]`, for the main agent and its subagents.
    pub loops: LoopSettings,
    pub show_reasoning: bool,
    /// `trace`: how much the trace shows without `-q` or `-v`.
    pub trace: Trace,
    pub guard: bool,
    pub skills_catalog_budget: usize,
    /// Whether runs are recorded as session files.
    pub sessions: bool,
    /// Sessions not written for this many days are removed when a run starts (`None`: kept).
    pub sessions_keep_days: Option<u32>,
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
    /// `[tools] profile` or `--tools`: which tools the model is offered.
    pub tool_profile: crate::tools::minimal::Profile,
    /// What bash may write and reach (see `crate::sandbox`).
    pub sandbox: sandbox::Settings,
    /// `[checkpoints]`.
    pub checkpoints: crate::checkpoint::Settings,
    /// `[mcp_servers]` of the config files, each checked.
    pub mcp_servers: BTreeMap<String, crate::mcp::config::ServerFile>,
    /// `[pricing."MODEL"]`, checked: over the built-in prices.
    pub pricing: BTreeMap<String, crate::model::Price>,
    /// `--max-cost` or `max_cost`: the run ends after the request that takes its cost past it.
    pub max_cost: Option<f64>,
    /// Where `max_cost` came from (the flag, or the file that set it), for the error that
    /// refuses a limit on a model without a price.
    pub max_cost_origin: Option<origins::Origin>,
    /// `notifications`, `notify` and `notify_after_secs` (see `crate::notify`).
    pub notifications: crate::notify::Notifications,
    pub notify: Vec<String>,
    pub notify_after: std::time::Duration,
    /// Where the settings `hx config` lists came from, recorded as they were resolved.
    pub origins: origins::Origins,
}

impl Config {
    /// The configuration of a run started in `cwd`. The project file applies only while
    /// trusted; otherwise the line saying so is pushed to `warnings`.
    pub fn load(
        cwd: &Path,
        env: &Env,
        flags: &Flags,
        warnings: &mut Vec<Warning>,
    ) -> Result<Config, ConfigError> {
        let mut merged = FileConfig::default();
        if let Some(dir) = user_config_dir(env) {
            let path = dir.join("config.toml");
            let name = format!("user file {}", path.display());
            merged = merged.overlay(FileConfig::load(&path)?.named(&name));
        }
        let mut ignored = None;
        match gate(&TRUST, cwd, env).map_err(ConfigError)? {
            Some(Gate::Trusted { path, text }) => {
                let name = format!("project file {} (trusted)", path.display());
                merged = merged.overlay(FileConfig::parse(&path, &text)?.named(&name));
            }
            Some(Gate::Skipped {
                notice,
                path,
                bytes,
            }) => {
                warnings.push(notice);
                ignored = Some((path, bytes));
            }
            None => {}
        }
        let mut config = Config::resolve(merged, env, flags)?;
        // Kept for `hx config`, which lists what the file would set; a file not read (a link
        // out of the project) would set nothing hx can show.
        if let Some((path, bytes)) = ignored {
            let text = bytes
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            config.origins.ignore(path, &text);
        }
        warnings.extend(config.retired_notice());
        Ok(config)
    }

    /// Goes on with another model of the same provider (`/model` in `hx chat`). A window
    /// that no config file set is the new model's: a chat that moves from a 1M-token model to
    /// a local one must compact for the local one's window.
    /// A retired DeepSeek name goes to the model that answers it now, and the line saying so
    /// is returned.
    pub fn set_model(&mut self, model: &str) -> Option<Warning> {
        self.retired = (self.dialect == Dialect::DeepSeek)
            .then(|| presets::retired(model))
            .flatten();
        self.model = self.retired.map_or(model, |r| r.model).to_string();
        if !self.window_configured {
            self.context.window =
                context::builtin_window(&self.model).unwrap_or(context::DEFAULT_WINDOW);
        }
        self.retired_notice()
    }

    /// Goes on at another effort (`/effort` in `hx chat`).
    pub fn set_effort(&mut self, effort: Effort) {
        self.effort = Some(effort);
    }

    /// The main agent's effort: the user's, else the retired model name's.
    pub fn main_effort(&self) -> Option<Effort> {
        self.effort.or(self.retired.map(|r| r.effort))
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

    /// Fails, naming `[pricing."MODEL"]`, when a cost limit is set for a model hx has no price
    /// for: its cost is unknown, so the run could never reach the limit and would end only at
    /// `--max-turns`. Checked before any request, as the key is.
    pub fn require_price(&self) -> Result<(), ConfigError> {
        if self.max_cost.is_none() || self.profile().price().is_some() {
            return Ok(());
        }
        let limit = match &self.max_cost_origin {
            Some(origins::Origin::Flag(flag)) => flag.to_string(),
            Some(other) => format!("max_cost ({other})"),
            None => "max_cost".to_string(),
        };
        let model = &self.model;
        Err(ConfigError(format!(
            "{limit} needs the price of model {model}, and hx has none: its cost is unknown, so \
             the limit could never be reached; give its rates as [pricing.\"{model}\"] in a \
             config file (input_cache_hit, input_cache_miss and output per million tokens), or \
             leave the limit out"
        )))
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
