//! The providers hx knows without configuration.

use super::ProviderFile;
use crate::model::{Dialect, Effort, ReasoningEcho};

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
    /// How its API is told the effort; `None`: hx does not know, so only an effort set for
    /// this provider (its table, or `--effort`) is sent, in OpenAI's words.
    pub dialect: Option<Dialect>,
    /// Said when its server on this machine refuses the connection.
    pub refused_hint: Option<&'static str>,
}

/// The providers hx knows without configuration, as `hx agent --help` and the README list
/// them. A `[providers.NAME]` table overrides any of their fields or defines a new one.
pub const PRESETS: [Preset; 6] = [
    Preset {
        name: "deepseek",
        base_url: "https://api.deepseek.com",
        api_key_env: Some("DEEPSEEK_API_KEY"),
        base_url_env: Some("DEEPSEEK_BASE_URL"),
        model: Some("deepseek-flash"),
        echo: ReasoningEcho::Always,
        dialect: Some(Dialect::DeepSeek),
        refused_hint: None,
    },
    Preset {
        name: "ollama",
        base_url: "http://localhost:11434/v1",
        api_key_env: None,
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        dialect: None,
        refused_hint: Some("is Ollama running? start it with `ollama serve`"),
    },
    // llama.cpp's server listens on 127.0.0.1 alone by default, so "localhost" could try ::1
    // first. Without --jinja it does not apply the model's chat template, and tool calls come
    // back as text: the hint says so where it matters, at the first refused connection.
    Preset {
        name: "llamacpp",
        base_url: "http://127.0.0.1:8080/v1",
        api_key_env: None,
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        dialect: None,
        refused_hint: Some(
            "is llama-server running? start it with `llama-server --jinja -m MODEL.gguf` \
             (--jinja: tool calls need the model's chat template)",
        ),
    },
    // vLLM takes a key only when started with --api-key; a [providers.vllm] table with
    // api_key_env sends one.
    Preset {
        name: "vllm",
        base_url: "http://localhost:8000/v1",
        api_key_env: None,
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        dialect: None,
        refused_hint: Some(
            "is vLLM running? start it with `vllm serve MODEL --enable-auto-tool-choice \
             --tool-call-parser PARSER`",
        ),
    },
    Preset {
        name: "openai",
        base_url: "https://api.openai.com/v1",
        api_key_env: Some("OPENAI_API_KEY"),
        base_url_env: Some("OPENAI_BASE_URL"),
        model: None,
        echo: ReasoningEcho::Never,
        dialect: Some(Dialect::OpenAi),
        refused_hint: None,
    },
    Preset {
        name: "openrouter",
        base_url: "https://openrouter.ai/api/v1",
        api_key_env: Some("OPENROUTER_API_KEY"),
        base_url_env: None,
        model: None,
        echo: ReasoningEcho::Auto,
        dialect: Some(Dialect::OpenRouter),
        refused_hint: None,
    },
];

/// A DeepSeek model name that was retired, and what answers it now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retired {
    pub name: &'static str,
    /// The model requests go to instead.
    pub model: &'static str,
    /// How hard it thinks, as the retired name did (unless the user set an effort).
    pub effort: Effort,
}

/// DeepSeek retired `deepseek-chat` and `deepseek-reasoner` on 2026-07-24; an old config or
/// muscle memory still types them. Each was V4 Flash with thinking off or on, so each goes to
/// `deepseek-flash` thinking as it did. (`deepseek-v4-flash` needs nothing: DeepSeek still
/// takes it, and V4.1 Flash answers.)
pub const RETIRED: [Retired; 2] = [
    Retired {
        name: "deepseek-chat",
        model: "deepseek-flash",
        effort: Effort::Off,
    },
    Retired {
        name: "deepseek-reasoner",
        model: "deepseek-flash",
        effort: Effort::High,
    },
];

/// The retired DeepSeek name `model` is, if it is one.
pub(super) fn retired(model: &str) -> Option<&'static Retired> {
    RETIRED.iter().find(|r| r.name == model)
}

pub(super) fn find_preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name == name)
}

/// A preset as a provider table.
pub(super) fn preset(name: &str) -> Option<ProviderFile> {
    let p = find_preset(name)?;
    Some(ProviderFile {
        base_url: Some(p.base_url.into()),
        api_key_env: p.api_key_env.map(Into::into),
        model: p.model.map(Into::into),
        send_reasoning: Some(p.echo),
        context_window: None,
        effort: None,
        subagent_effort: None,
    })
}
