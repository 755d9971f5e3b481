//! From the merged files, the environment and the flags to the [`Config`] of a run, one
//! section at a time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::origins::{Origin, Origins};
use super::presets::{find_preset, preset, retired, PRESETS};
use super::{
    CompactAtFile, Config, ConfigError, FileConfig, Flags, LoopSettings, NetworkFile, ProviderFile,
    ToolsFile, DEFAULT_LOOP, DEFAULT_MAX_TURNS, DEFAULT_PROVIDER, DEFAULT_SUBAGENT_MAX_TURNS,
};
use crate::context::{self, CompactAt};
use crate::mcp::config::ServerFile;
use crate::model::{ClientOptions, Dialect, Effort, ReasoningEcho};
use crate::paths::Env;
use crate::process::EnvPolicy;
use crate::sandbox;
use crate::tools::ToolLimits;

impl Config {
    pub(super) fn resolve(
        mut file: FileConfig,
        env: &Env,
        flags: &Flags,
    ) -> Result<Config, ConfigError> {
        // Each setting `hx config` lists records where it came from as it is chosen.
        let mut origins = Origins::new(std::mem::take(&mut file.written));
        // The sections run in this order, and each stops at its first problem: with two
        // mistakes in the files, the one reported is always the same.
        let provider = provider(&file, env, flags, &mut origins)?;
        let mut client = network(
            &file.network,
            &provider.base_url,
            provider.refused_hint.clone(),
        );
        client.auth_hint = Some(match &provider.api_key_env {
            Some(var) => format!(
                "the key in {var} was refused by provider {} at {}",
                provider.name, provider.base_url
            ),
            None => format!(
                "no key was sent: provider {} (at {}) names no api_key_env",
                provider.name, provider.base_url
            ),
        });
        let limits = tool_limits(&file.tools);
        let turns = turn_limits(&file, flags, &mut origins)?;
        let loops = loop_settings(&file, &mut origins)?;
        let shell_env = shell_env(&file)?;
        let sandbox =
            sandbox::Settings::resolve(&file.sandbox, flags.sandbox, env).map_err(ConfigError)?;
        let sandbox_origin = match &sandbox.source {
            sandbox::Source::Flag => Origin::Flag("--sandbox"),
            // `sandbox = "MODE"` or a table's `mode`, whichever file set it last.
            sandbox::Source::File(_) => origins.file(&["sandbox.mode", "sandbox"]),
            sandbox::Source::Default => Origin::Default("default"),
        };
        origins.set("sandbox.mode", sandbox_origin);
        // A retired DeepSeek name is the model that answers it now, window included.
        let retired = (provider.dialect == Some(Dialect::DeepSeek))
            .then(|| retired(&provider.model))
            .flatten();
        let model = retired.map_or(provider.model, |r| r.model.to_string());
        let (context, window_configured) =
            context_settings(&file, provider.context_window, &model)?;
        check_mcp_servers(&file.mcp_servers)?;
        let pricing = pricing(&file.pricing)?;
        let max_cost = flags.max_cost.or(file.max_cost);
        let max_cost_origin = max_cost.map(|_| match flags.max_cost {
            Some(_) => Origin::Flag("--max-cost"),
            None => origins.file(&["max_cost"]),
        });
        if let Some(m) = max_cost {
            if !(m.is_finite() && m > 0.0) {
                return Err(ConfigError(format!(
                    "max_cost must be a positive amount, not {m}"
                )));
            }
        }
        let (notify, notify_after) = notify_settings(&file)?;
        let notifications = origins
            .pick("notifications")
            .file(&["notifications"], file.notifications)
            .or("default", crate::notify::Notifications::default());
        // Checked above; here only where they came from, for `hx config`.
        for (key, set) in [
            ("notify", file.notify.is_some()),
            ("notify_after_secs", file.notify_after_secs.is_some()),
        ] {
            let origin = if set {
                origins.file(&[key])
            } else {
                Origin::Default("default")
            };
            origins.set(key, origin);
        }
        let efforts = efforts(
            &file,
            provider.dialect.is_some(),
            &provider.table,
            flags,
            &mut origins,
        );
        let show_reasoning = origins
            .pick("show_reasoning")
            .flag("--show-reasoning", flags.show_reasoning.then_some(true))
            .file(&["show_reasoning"], file.show_reasoning)
            .or("default", false);
        let trace = origins
            .pick("trace")
            .file(&["trace"], file.trace)
            .or("default", super::Trace::Short);
        let guard = origins
            .pick("guard")
            .flag("--no-guard", flags.no_guard.then_some(false))
            .file(&["guard"], file.guard)
            .or("default", true);
        let project_doc = origins
            .pick("project_doc")
            .flag("--no-project-doc", flags.no_project_doc.then_some(false))
            .file(&["project_doc"], file.project_doc)
            .or("default", true);
        let tool_profile = origins
            .pick("tools.profile")
            .flag("--tools", flags.tools)
            .file(&["tools.profile"], file.tools.profile)
            .or("default", crate::tools::minimal::Profile::Default);
        let sessions = origins
            .pick("sessions")
            .file(
                &["sessions", "sessions.enabled"],
                file.sessions.as_ref().and_then(|s| s.enabled()),
            )
            .or("default", true);
        Ok(Config {
            sandbox,
            api_key: provider.api_key,
            reasoning_echo: provider.reasoning_echo,
            effort: efforts.main,
            subagent_effort: efforts.subagents,
            retired,
            dialect: provider.dialect.unwrap_or_default(),
            api_key_env: provider.api_key_env,
            provider: provider.name,
            model,
            base_url: provider.base_url,
            max_turns: turns.max_turns,
            subagent_max_turns: turns.subagent_max_turns,
            loops,
            show_reasoning,
            trace,
            guard,
            skills_catalog_budget: file
                .skills_catalog_budget
                .unwrap_or(crate::skills::DEFAULT_CATALOG_BUDGET),
            sessions,
            sessions_keep_days: file.sessions.as_ref().and_then(|s| s.keep_days()),
            context,
            window_configured,
            project_doc,
            project_doc_max_bytes: file
                .project_doc_max_bytes
                .unwrap_or(context::DEFAULT_PROJECT_DOC_MAX_BYTES),
            client,
            limits,
            shell_env,
            keep_background: file.tools.keep_background.unwrap_or(false),
            tool_profile,
            checkpoints: checkpoint_settings(&file.checkpoints),
            mcp_servers: file.mcp_servers,
            pricing,
            max_cost,
            max_cost_origin,
            notifications,
            notify,
            notify_after,
            origins,
        })
    }
}

/// `[pricing."MODEL"]` checked: rates are amounts (finite, not negative), the currency a code,
/// each peak window `HH:MM-HH:MM`.
fn pricing(
    file: &BTreeMap<String, super::file::PriceFile>,
) -> Result<BTreeMap<String, crate::model::Price>, ConfigError> {
    use crate::model::price::{Currency, Price, Rates, Window};
    let mut out = BTreeMap::new();
    for (model, p) in file {
        let bad = |what: String| ConfigError(format!("[pricing.\"{model}\"]: {what}"));
        let rates = |hit: f64, miss: f64, output: f64| -> Result<Rates, ConfigError> {
            for (name, v) in [
                ("input_cache_hit", hit),
                ("input_cache_miss", miss),
                ("output", output),
            ] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(bad(format!(
                        "{name} must be an amount per million tokens, not {v}"
                    )));
                }
            }
            Ok(Rates {
                input_cache_hit: hit,
                input_cache_miss: miss,
                output,
            })
        };
        let base = rates(p.input_cache_hit, p.input_cache_miss, p.output)?;
        let currency = match &p.currency {
            None => Currency::USD,
            Some(c) => Currency::parse(c)
                .ok_or_else(|| bad(format!("currency {c:?} is not a code like \"USD\"")))?,
        };
        let peak = match &p.peak {
            None => None,
            Some(k) => {
                let windows = k
                    .utc
                    .iter()
                    .map(|w| {
                        Window::parse(w).ok_or_else(|| {
                            bad(format!("peak window {w:?} is not \"HH:MM-HH:MM\" (UTC)"))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some((
                    windows,
                    rates(k.input_cache_hit, k.input_cache_miss, k.output)?,
                ))
            }
        };
        out.insert(
            model.clone(),
            Price {
                base,
                peak,
                currency,
            },
        );
    }
    Ok(out)
}

/// A variable of the environment, unless it is unset or blank: an exported but empty
/// `HX_MODEL` means "no choice", not "the model named ''".
fn nonempty(env: &Env, key: &str) -> Option<String> {
    env.get(key).filter(|v| !v.trim().is_empty()).cloned()
}

/// The provider of a run, with everything its preset, its table, the environment and the
/// flags say of it.
#[derive(Debug)]
struct Provider {
    name: String,
    base_url: String,
    model: String,
    /// The variable the key comes from; `None`: no Authorization header.
    api_key_env: Option<String>,
    api_key: Option<String>,
    reasoning_echo: ReasoningEcho,
    refused_hint: Option<String>,
    /// The table's `context_window`, which wins over the top-level one.
    context_window: Option<u64>,
    /// How its API is told the effort, when hx knows (its preset's).
    dialect: Option<Dialect>,
    /// Its table as written (its efforts are read with the top-level ones).
    table: ProviderFile,
}

fn provider(
    file: &FileConfig,
    env: &Env,
    flags: &Flags,
    origins: &mut Origins,
) -> Result<Provider, ConfigError> {
    let name = origins
        .pick("provider")
        .flag("--provider", flags.provider.clone())
        .env("HX_PROVIDER", nonempty(env, "HX_PROVIDER"))
        .file(&["provider"], file.provider.clone())
        .or("default", DEFAULT_PROVIDER.into());
    origins.read_tables_of(&name);
    let (preset, table) = preset_and_table(&name, &file.providers)?;
    // A table inherits what it does not set from the preset of the same name;
    // `api_key_env = ""` makes a preset keyless.
    let api_key_env = origins
        .pick("api_key_env")
        .table("api_key_env", table.api_key_env.clone())
        .finish("the provider's default", preset.api_key_env.clone())
        .filter(|v| !v.is_empty());
    let base_url = base_url(&name, &preset, &table, env, flags, origins)?;
    let model = origins
        .pick("model")
        .flag("--model", flags.model.clone())
        .env("HX_MODEL", nonempty(env, "HX_MODEL"))
        .table("model", table.model.clone())
        .file(&["model"], file.model.clone())
        .finish("the provider's default", preset.model.clone())
        .ok_or_else(|| {
            ConfigError(format!(
                "no model set for provider '{name}'; pass --model, set HX_MODEL, or set [providers.{name}] model in a config file"
            ))
        })?;
    Ok(Provider {
        api_key: api_key_env.as_deref().and_then(|k| nonempty(env, k)),
        api_key_env,
        reasoning_echo: table
            .send_reasoning
            .or(preset.send_reasoning)
            .unwrap_or_default(),
        refused_hint: find_preset(&name)
            .and_then(|p| p.refused_hint)
            .map(Into::into),
        context_window: table.context_window,
        dialect: find_preset(&name).and_then(|p| p.dialect),
        table,
        base_url,
        model,
        name,
    })
}

/// The efforts of a run: the main agent's and, when set, the subagents'.
#[derive(Debug, PartialEq)]
struct Efforts {
    main: Option<Effort>,
    subagents: Option<Effort>,
}

/// `--effort`, else the continued session's, else the provider's table, else the top-level
/// key. A provider whose effort words hx does not know (`known` false: Ollama, a table of
/// one's own) may reject a key it does not know, so it gets only what was set for it.
fn efforts(
    file: &FileConfig,
    known: bool,
    table: &ProviderFile,
    flags: &Flags,
    origins: &mut Origins,
) -> Efforts {
    let top = |e: Option<Effort>| e.filter(|_| known);
    // A top-level effort this provider is not sent still counts as found, none: `hx config`
    // shows none sent, and the file that set the one left out.
    let main = origins
        .pick("effort")
        .flag("--effort", flags.effort.map(Some))
        .session(flags.session_effort)
        .table("effort", table.effort.map(Some))
        .file(&["effort"], file.effort.map(|e| top(Some(e))))
        .or("default", None);
    Efforts {
        main,
        subagents: table.subagent_effort.or(top(file.subagent_effort)),
    }
}

/// The preset of the provider `name` and its table, each empty where there is none; an error
/// when there is neither, listing every provider there is.
fn preset_and_table(
    name: &str,
    providers: &BTreeMap<String, ProviderFile>,
) -> Result<(ProviderFile, ProviderFile), ConfigError> {
    let preset = preset(name);
    let table = providers.get(name);
    if preset.is_none() && table.is_none() {
        let mut known: Vec<String> = PRESETS
            .iter()
            .map(|p| p.name.to_string())
            .chain(providers.keys().cloned())
            .collect();
        known.sort();
        known.dedup();
        return Err(ConfigError(format!(
            "unknown provider '{name}' (known: {}); define it in a config file as [providers.{name}]",
            known.join(", ")
        )));
    }
    Ok((
        preset.unwrap_or_default(),
        table.cloned().unwrap_or_default(),
    ))
}

/// `--base-url`, else the preset's own variable, else the table, else the preset.
fn base_url(
    name: &str,
    preset: &ProviderFile,
    table: &ProviderFile,
    env: &Env,
    flags: &Flags,
    origins: &mut Origins,
) -> Result<String, ConfigError> {
    // A preset's own variable (DEEPSEEK_BASE_URL, OPENAI_BASE_URL), as their own tools
    // read it.
    let var = find_preset(name).and_then(|p| p.base_url_env);
    let base_url = origins
        .pick("base_url")
        .flag("--base-url", flags.base_url.clone())
        .env(var.unwrap_or_default(), var.and_then(|k| nonempty(env, k)))
        .table("base_url", table.base_url.clone())
        .finish("the provider's default", preset.base_url.clone())
        .ok_or_else(|| {
            ConfigError(format!(
                "provider '{name}' has no base_url; set [providers.{name}] base_url in a config file or pass --base-url"
            ))
        })?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(ConfigError(format!(
            "base URL must start with http:// or https://, got '{base_url}'"
        )));
    }
    Ok(base_url)
}

/// The client's options: `[network]` over the defaults.
fn network(n: &NetworkFile, base_url: &str, refused_hint: Option<String>) -> ClientOptions {
    let mut client = ClientOptions {
        base_url: base_url.into(),
        refused_hint,
        ..ClientOptions::default()
    };
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
    client
}

/// `[tools]` over the defaults. A file's bash timeout is held to the bounds of one the model
/// asks for in a call (`tools::bash`).
/// `[checkpoints]` over the defaults; each limit at least 1.
fn checkpoint_settings(c: &super::file::CheckpointsFile) -> crate::checkpoint::Settings {
    let d = crate::checkpoint::Settings::default();
    crate::checkpoint::Settings {
        enabled: c.enabled.unwrap_or(d.enabled),
        max_file_bytes: c.max_file_bytes.unwrap_or(d.max_file_bytes).max(1),
        max_files: c.max_files.unwrap_or(d.max_files).max(1),
        keep_days: c.keep_days.unwrap_or(d.keep_days).max(1),
        keep_sessions: c.keep_sessions.unwrap_or(d.keep_sessions).max(1),
        max_store_bytes: c.max_store_bytes.unwrap_or(d.max_store_bytes).max(1),
    }
}

/// The most `[tools] background_shells` may allow: each shell holds a task, a pipe and a
/// process group for as long as it runs.
const MAX_BACKGROUND_SHELLS: usize = 64;

fn tool_limits(t: &ToolsFile) -> ToolLimits {
    let mut limits = ToolLimits::default();
    if let Some(c) = t.output_chars {
        limits.output_chars = c.max(1_000);
    }
    if let Some(s) = t.bash_timeout_secs {
        limits.bash_timeout = Duration::from_secs(s.max(1)).min(limits.bash_max_timeout);
    }
    if let Some(n) = t.background_shells {
        limits.background_shells = n.min(MAX_BACKGROUND_SHELLS);
    }
    limits
}

/// The turn limits of the agent and of each subagent.
#[derive(Debug, PartialEq)]
struct Turns {
    max_turns: u32,
    subagent_max_turns: u32,
}

/// `--max-turns` over the files; each limit at least 1.
fn turn_limits(
    file: &FileConfig,
    flags: &Flags,
    origins: &mut Origins,
) -> Result<Turns, ConfigError> {
    let max_turns = origins
        .pick("max_turns")
        .flag("--max-turns", flags.max_turns)
        .file(&["max_turns"], file.max_turns)
        .or("default", DEFAULT_MAX_TURNS);
    let subagent_max_turns = file
        .subagent_max_turns
        .unwrap_or(DEFAULT_SUBAGENT_MAX_TURNS);
    if max_turns == 0 || subagent_max_turns == 0 {
        return Err(ConfigError(
            "max_turns and subagent_max_turns must be at least 1".into(),
        ));
    }
    Ok(Turns {
        max_turns,
        subagent_max_turns,
    })
}

/// `[loop]`, each key with where it came from.
fn loop_settings(file: &FileConfig, origins: &mut Origins) -> Result<LoopSettings, ConfigError> {
    let repeats = origins
        .pick("loop.repeats")
        .file(&["loop.repeats"], file.loops.repeats)
        .or("default", DEFAULT_LOOP.repeats);
    let stop_after = origins
        .pick("loop.stop_after")
        .file(&["loop.stop_after"], file.loops.stop_after)
        .or("default", DEFAULT_LOOP.stop_after);
    // One call is no repetition: every call would be pointed out.
    if repeats == 1 {
        return Err(ConfigError(
            "loop.repeats must be 0 (off) or at least 2".into(),
        ));
    }
    Ok(LoopSettings {
        repeats,
        stop_after,
    })
}

/// The environment policy of tool commands, from `[shell_env]`.
fn shell_env(file: &FileConfig) -> Result<EnvPolicy, ConfigError> {
    let se = &file.shell_env;
    EnvPolicy::new(
        se.inherit.unwrap_or_default(),
        se.ignore_default_excludes.unwrap_or(false),
        &se.exclude,
        se.include_only.as_deref().unwrap_or_default(),
        se.set.clone(),
        key_vars(&file.providers),
    )
    .map_err(|e| ConfigError(format!("[shell_env] {e}")))
}

/// Every key variable hx knows of, not only the chosen provider's: a command has no business
/// with any of them.
fn key_vars(providers: &BTreeMap<String, ProviderFile>) -> BTreeSet<String> {
    PRESETS
        .iter()
        .filter_map(|p| p.api_key_env.map(String::from))
        .chain(providers.values().filter_map(|p| p.api_key_env.clone()))
        .filter(|k| !k.is_empty())
        .collect()
}

/// The window and the compaction point of a run, and whether a config file set the window
/// (else [`Config::set_model`] takes the next model's). The window is the provider's table's
/// (`table_window`), else the top-level `context_window`, else what hx knows of the model,
/// else [`context::DEFAULT_WINDOW`].
fn context_settings(
    file: &FileConfig,
    table_window: Option<u64>,
    model: &str,
) -> Result<(context::Settings, bool), ConfigError> {
    let configured = table_window.or(file.context_window);
    let window = configured
        .or_else(|| context::builtin_window(model))
        .unwrap_or(context::DEFAULT_WINDOW);
    if window < context::MIN_WINDOW {
        return Err(ConfigError(format!(
            "context_window = {window} is too small: set it to the model's window in tokens (at \
             least {}; the system prompt and the tool schemas alone take a few thousand)",
            context::MIN_WINDOW
        )));
    }
    let compact_at = compact_at(file.compact_at)?;
    Ok((
        context::Settings { window, compact_at },
        configured.is_some(),
    ))
}

/// `compact_at` as written, checked: a share of the window in (0, 1], or at least
/// [`context::MIN_WINDOW`] tokens.
fn compact_at(written: Option<CompactAtFile>) -> Result<CompactAt, ConfigError> {
    match written {
        None => Ok(CompactAt::Fraction(context::DEFAULT_COMPACT_AT)),
        Some(CompactAtFile::Fraction(f)) if f > 0.0 && f <= 1.0 => Ok(CompactAt::Fraction(f)),
        Some(CompactAtFile::Fraction(f)) => Err(ConfigError(format!(
            "compact_at = {f} is not a share of the window: write a number above 0 and at \
             most 1.0 (0.8 is 80 %), or a number of tokens such as 200000"
        ))),
        Some(CompactAtFile::Tokens(t)) if t >= context::MIN_WINDOW => Ok(CompactAt::Tokens(t)),
        Some(CompactAtFile::Tokens(t)) => Err(ConfigError(format!(
            "compact_at = {t} is a number of tokens, and too small (at least {}); for a \
             share of the window write a fraction such as 0.8",
            context::MIN_WINDOW
        ))),
    }
}

/// Each `[mcp_servers.NAME]` table checked, in name order; the first problem names its table.
fn check_mcp_servers(servers: &BTreeMap<String, ServerFile>) -> Result<(), ConfigError> {
    for (name, server) in servers {
        server
            .check(name)
            .map_err(|e| ConfigError(format!("[mcp_servers.{name}] {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "resolve_tests.rs"]
mod tests;

/// `notify` and `notify_after_secs` checked: a program to run (or none), and at most a day.
fn notify_settings(file: &FileConfig) -> Result<(Vec<String>, Duration), ConfigError> {
    let notify = file.notify.clone().unwrap_or_default();
    if notify.first().is_some_and(|p| p.trim().is_empty()) {
        return Err(ConfigError(
            "notify must start with a program to run, such as [\"notify-send\", \"hx\"]".into(),
        ));
    }
    const MAX_ARGS: usize = 64;
    if notify.len() > MAX_ARGS {
        return Err(ConfigError(format!(
            "notify may have at most {MAX_ARGS} words, not {}",
            notify.len()
        )));
    }
    let after = match file.notify_after_secs {
        None => crate::notify::DEFAULT_AFTER,
        Some(s) if s <= 86_400 => Duration::from_secs(s),
        Some(s) => {
            return Err(ConfigError(format!(
                "notify_after_secs must be at most 86400 (a day), not {s}"
            )))
        }
    };
    Ok((notify, after))
}
