//! From the merged files, the environment and the flags to the [`Config`] of a run.

use std::collections::BTreeSet;
use std::time::Duration;

use super::presets::{find_preset, preset, PRESETS};
use super::{
    CompactAtFile, Config, ConfigError, FileConfig, Flags, ProviderFile, DEFAULT_MAX_TURNS,
    DEFAULT_PROVIDER, DEFAULT_SUBAGENT_MAX_TURNS,
};
use crate::context::{self, CompactAt};
use crate::model::ClientOptions;
use crate::paths::Env;
use crate::process::EnvPolicy;
use crate::sandbox;
use crate::tools::ToolLimits;

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
    pub(super) fn resolve(
        file: FileConfig,
        env: &Env,
        flags: &Flags,
    ) -> Result<Config, ConfigError> {
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
}
