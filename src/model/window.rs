//! What a server says of the context windows of its models, in the shapes the local servers
//! hx talks to answer in. The hosted APIs (DeepSeek, OpenAI) state no window; a local server
//! is started with one, often far smaller than the model was trained for, and says so:
//!
//! - llama.cpp's `llama-server`: `GET /v1/models`, each `data[]` entry's `meta.n_ctx` (the
//!   context of one slot, which is what one request may fill; `n_ctx_train` beside it is the
//!   model's trained length, not what the server serves). Older servers have no `n_ctx` there;
//!   their `GET /props` has `default_generation_settings.n_ctx`. A router (several models)
//!   answers `/props` with `n_ctx: 0`, which says nothing.
//! - vLLM: `GET /v1/models`, `data[].max_model_len` (the longest sequence it schedules).
//! - Ollama: `POST /api/show {"model": NAME}`, `parameters` (the Modelfile's, one `name value`
//!   a line) with `num_ctx` when the model sets it, and `model_info` with
//!   `<architecture>.context_length`, the model's trained length. Ollama serves `num_ctx` when
//!   the Modelfile sets it (capped at the trained length); otherwise its own default
//!   (`OLLAMA_CONTEXT_LENGTH`, else 2,048 or 4,096 by version, or more by VRAM in recent ones),
//!   which `/api/show` does not state. `GET /api/ps` states the `context_length` a loaded
//!   model was given, so that is taken next. The trained length is never taken: Ollama cuts
//!   a longer prompt silently to the window it serves, which a larger guess would hide.
//!
//! Every number is checked: zero, or one outside [`MIN_STATED`]..=[`MAX_STATED`], states
//! nothing.

use serde_json::Value;

/// A window below this is no window hx can work in (the system prompt and the tools take
/// about 2,000 tokens): the smallest window hx accepts.
pub const MIN_STATED: u64 = 1_000;
/// No model serves a billion tokens: a larger number is garbage, not a window.
pub const MAX_STATED: u64 = 1 << 30;
/// Facts kept of one model, and characters of each value.
const MAX_FACTS: usize = 16;
const MAX_FACT_CHARS: usize = 100;
/// Characters of a model's name or alias kept.
pub const MAX_NAME_CHARS: usize = 200;
/// Aliases kept of one model.
const MAX_ALIASES: usize = 16;

/// The window a server serves a model with, and where it said so (`/v1/models meta.n_ctx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stated {
    pub tokens: u64,
    /// The path asked and the field read.
    pub from: String,
}

/// One model as a server describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Described {
    pub id: String,
    /// Other names the server answers it under (llama.cpp's `aliases`).
    pub aliases: Vec<String>,
    /// The window it serves the model with, when it says.
    pub window: Option<Stated>,
    /// What else it states, in its own words: (`n_ctx_train`, `40960`), ...
    pub facts: Vec<(String, String)>,
}

impl Described {
    /// Whether requests naming `model` go to this one.
    pub fn answers(&self, model: &str) -> bool {
        self.id == model || self.aliases.iter().any(|a| a == model)
    }

    fn fact(&mut self, name: &str, value: &Value) {
        let text = match value {
            Value::String(s) if !s.is_empty() => crate::text::one_line(s, MAX_FACT_CHARS),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return,
        };
        if self.facts.len() < MAX_FACTS && !self.facts.iter().any(|(n, _)| n == name) {
            self.facts.push((name.to_string(), text));
        }
    }

    fn state(&mut self, tokens: Option<u64>, from: String) {
        if self.window.is_none() {
            self.window = tokens.map(|tokens| Stated { tokens, from });
        }
    }
}

/// A window as a number in the server's JSON: an integer, an integral float, or digits in a
/// string; `None` for anything else or outside the bounds.
pub fn tokens(v: &Value) -> Option<u64> {
    let n = match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            n.as_f64()
                .filter(|f| f.is_finite() && f.fract() == 0.0 && *f >= 0.0 && *f < 1e18)
                .map(|f| f as u64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }?;
    (MIN_STATED..=MAX_STATED).contains(&n).then_some(n)
}

/// The models of a `/models` answer (`path`: the path asked, for [`Stated::from`]), at most
/// `max`: OpenAI's shape (`data[]` with `id`), which llama.cpp, vLLM, Ollama and OpenRouter
/// serve, each with its own fields beside; a list under `models` with `name`s otherwise.
pub fn from_models(v: &Value, path: &str, max: usize) -> Option<Vec<Described>> {
    let list = v
        .get("data")
        .or_else(|| v.get("models"))
        .and_then(Value::as_array)?;
    Some(
        list.iter()
            .filter_map(|m| described(m, path))
            .take(max)
            .collect(),
    )
}

/// One entry of a `/models` list.
fn described(m: &Value, path: &str) -> Option<Described> {
    let id = m.get("id").or_else(|| m.get("name"))?.as_str()?;
    let mut d = Described {
        id: crate::text::one_line(id, MAX_NAME_CHARS),
        ..Described::default()
    };
    d.aliases = m
        .get("aliases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .take(MAX_ALIASES)
        .map(|a| crate::text::one_line(a, MAX_NAME_CHARS))
        .collect();
    // llama.cpp: the slot's context first (what a request may fill), then the rest of `meta`
    // worth knowing beside it.
    if let Some(meta) = m.get("meta").filter(|v| v.is_object()) {
        d.state(
            meta.get("n_ctx").and_then(tokens),
            format!("{path} meta.n_ctx"),
        );
        for key in ["n_ctx", "n_ctx_train", "n_params", "size", "ftype"] {
            if let Some(v) = meta.get(key) {
                d.fact(key, v);
            }
        }
    }
    // vLLM.
    if let Some(v) = m.get("max_model_len") {
        d.state(tokens(v), format!("{path} max_model_len"));
        d.fact("max_model_len", v);
    }
    // OpenRouter and proxies in its shape.
    if let Some(v) = m.get("context_length") {
        d.state(tokens(v), format!("{path} context_length"));
        d.fact("context_length", v);
    }
    // llama.cpp's router: whether the model is loaded (`status.value`).
    if let Some(v) = m.get("status").and_then(|s| s.get("value")) {
        d.fact("status", v);
    }
    Some(d)
}

/// llama.cpp's `GET /props`: the slot context (`default_generation_settings.n_ctx`, 0 for a
/// router) and the name of the model it serves (`model_alias`).
pub fn from_props(v: &Value) -> (Option<u64>, Option<String>) {
    let n_ctx = v
        .get("default_generation_settings")
        .and_then(|s| s.get("n_ctx"))
        .and_then(tokens);
    let alias = v
        .get("model_alias")
        .and_then(Value::as_str)
        .map(|a| crate::text::one_line(a, MAX_NAME_CHARS));
    (n_ctx, alias)
}

/// What Ollama's `POST /api/show` says of one model: `num_ctx` of its Modelfile's parameters,
/// its trained `context_length`, and facts for `hx models`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shown {
    pub num_ctx: Option<u64>,
    pub context_length: Option<u64>,
    pub facts: Vec<(String, String)>,
}

impl Shown {
    /// The window Ollama serves the model with, as far as `/api/show` says: `num_ctx`, never
    /// more than the trained length (Ollama caps it so).
    pub fn window(&self, path: &str) -> Option<Stated> {
        let tokens = self.num_ctx?;
        Some(Stated {
            tokens: self.context_length.map_or(tokens, |c| tokens.min(c)),
            from: format!("{path} num_ctx"),
        })
    }
}

pub fn from_ollama_show(v: &Value) -> Shown {
    let mut shown = Shown::default();
    let mut d = Described::default();
    // `parameters` is text: one `name value` a line, `num_ctx` among them when set.
    if let Some(params) = v.get("parameters").and_then(Value::as_str) {
        shown.num_ctx = params.lines().find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("num_ctx"))
                .then(|| words.next())
                .flatten()
                .and_then(|n| tokens(&Value::String(n.to_string())))
        });
    }
    if let Some(info) = v.get("model_info").and_then(Value::as_object) {
        // `<architecture>.context_length`; another key of that ending when the architecture
        // is not named.
        let arch = info.get("general.architecture").and_then(Value::as_str);
        let key = arch.map(|a| format!("{a}.context_length"));
        let value = key.as_deref().and_then(|k| info.get(k)).or_else(|| {
            info.iter()
                .find(|(k, _)| k.ends_with(".context_length"))
                .map(|(_, v)| v)
        });
        shown.context_length = value.and_then(tokens);
        if let Some(v) = value {
            d.fact("context_length", v);
        }
        if let Some(v) = info.get("general.parameter_count") {
            d.fact("parameter_count", v);
        }
    }
    if let Some(n) = shown.num_ctx {
        d.fact("num_ctx", &Value::from(n));
    }
    if let Some(details) = v.get("details") {
        for key in ["parameter_size", "quantization_level"] {
            if let Some(v) = details.get(key) {
                d.fact(key, v);
            }
        }
    }
    shown.facts = d.facts;
    shown
}

/// Ollama's `GET /api/ps`: the `context_length` the loaded model `model` was given, if it is
/// loaded (`qwen3` and `qwen3:latest` are one model).
pub fn from_ollama_ps(v: &Value, model: &str) -> Option<u64> {
    let same = |name: &str| latest(name) == latest(model);
    v.get("models")?
        .as_array()?
        .iter()
        .find(|m| {
            ["name", "model"]
                .iter()
                .any(|k| m.get(k).and_then(Value::as_str).is_some_and(same))
        })?
        .get("context_length")
        .and_then(tokens)
}

/// An Ollama name with its tag: `:latest` when it has none.
fn latest(name: &str) -> String {
    let tagged = name
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'));
    if tagged {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

/// The server's root for a base URL: without a last `/v1` segment, where llama.cpp's `/props`
/// and Ollama's `/api/...` live (`http://localhost:11434/v1` → `http://localhost:11434`).
pub fn root(base_url: &str) -> &str {
    let base = base_url.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

#[cfg(test)]
mod tests;
