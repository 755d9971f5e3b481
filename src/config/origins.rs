//! Where each setting of the effective configuration came from, for `hx config`: the
//! defaults, the user's file, the project's (applied only while trusted), the environment, a
//! flag. The values are the resolved ones; the origins are found by asking the layers in the
//! order they win.

use std::path::{Path, PathBuf};

use super::presets::find_preset;
use super::{Config, Env, Flags, TRUST};
use crate::trust::{gate, Gate};

/// One setting: its key as a config file writes it (`sandbox.mode`), its value as TOML, and
/// where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Setting {
    pub key: String,
    pub value: String,
    pub origin: String,
}

/// What `hx config` shows: the settings in force, and the project file's that are not,
/// because the file waits for `hx trust`.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Origins {
    pub settings: Vec<Setting>,
    /// The untrusted project file and what it would set.
    pub ignored: Option<(PathBuf, Vec<(String, String)>)>,
}

/// One config file's keys, flattened (`tools.output_chars`), with its description.
struct Layer {
    origin: String,
    keys: Vec<(String, String)>,
}

impl Layer {
    fn read(text: &str, origin: String) -> Layer {
        let keys = toml::from_str::<toml::Table>(text)
            .map(|t| flatten(&t))
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                let v = if secret(&k) { "\"***\"".to_string() } else { v };
                (k, v)
            })
            .collect();
        Layer { origin, keys }
    }

    fn get(&self, key: &str) -> Option<&str> {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A key whose value may be a credential (an MCP server's `env` or headers, a token): its
/// value is not printed, so that `hx config` output can be pasted into a bug report.
fn secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.split('.').any(|part| {
        matches!(part, "env" | "http_headers" | "headers")
            || ["token", "secret", "password", "api_key"]
                .iter()
                .any(|w| part.contains(w) && !part.ends_with("_env"))
    })
}

/// Every leaf of `table` as `a.b.c = VALUE`; arrays are leaves.
fn flatten(table: &toml::Table) -> Vec<(String, String)> {
    fn walk(prefix: &str, table: &toml::Table, out: &mut Vec<(String, String)>) {
        for (k, v) in table {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(t) => walk(&key, t, out),
                other => out.push((key, other.to_string())),
            }
        }
    }
    let mut out = Vec::new();
    walk("", table, &mut out);
    out
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The settings of `config` (resolved for `cwd` with `env` and `flags`) and their origins.
/// The files are read again; one that cannot be read adds nothing here (loading the config
/// said why).
pub fn origins(config: &Config, cwd: &Path, env: &Env, flags: &Flags) -> Origins {
    let mut layers = Vec::new();
    if let Some(dir) = crate::paths::user_config_dir(env) {
        let path = dir.join("config.toml");
        // Read as the loader reads it: a regular file only, bounded.
        if let Ok(Some(bytes)) = crate::trust::read_file(&path) {
            let text = String::from_utf8_lossy(&bytes);
            layers.push(Layer::read(&text, format!("user file {}", path.display())));
        }
    }
    let mut ignored = None;
    match gate(&TRUST, cwd, env) {
        Ok(Some(Gate::Trusted { path, text })) => layers.push(Layer::read(
            &text,
            format!("project file {} (trusted)", path.display()),
        )),
        Ok(Some(Gate::Skipped { path, bytes, .. })) => {
            let text = bytes
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            ignored = Some((path, Layer::read(&text, String::new()).keys));
        }
        Ok(None) | Err(_) => {}
    }
    // The file that set a key last, as the overlay does.
    let from_files = |key: &str| layers.iter().rev().find(|l| l.get(key).is_some());
    let env_var = |name: &str| {
        env.get(name)
            .filter(|v| !v.trim().is_empty())
            .map(|_| format!("environment {name}"))
    };
    let origin = |flag: Option<&str>, var: Option<&str>, keys: &[&str], default: &str| {
        if let Some(f) = flag {
            return format!("flag {f}");
        }
        if let Some(o) = var.and_then(env_var) {
            return o;
        }
        keys.iter()
            .find_map(|k| from_files(k).map(|l| l.origin.clone()))
            .unwrap_or_else(|| default.to_string())
    };
    let provider_key = |field: &str| format!("providers.{}.{field}", config.provider);
    let preset = find_preset(&config.provider);
    let mut settings = vec![
        Setting {
            key: "provider".into(),
            value: quoted(&config.provider),
            origin: origin(
                flags.provider.as_ref().map(|_| "--provider"),
                Some("HX_PROVIDER"),
                &["provider"],
                "default",
            ),
        },
        Setting {
            key: "model".into(),
            value: quoted(&config.model),
            origin: origin(
                flags.model.as_ref().map(|_| "--model"),
                Some("HX_MODEL"),
                &[&provider_key("model"), "model"],
                "the provider's default",
            ),
        },
        Setting {
            key: "base_url".into(),
            value: quoted(&crate::model::client::shown_url(&config.base_url)),
            origin: origin(
                flags.base_url.as_ref().map(|_| "--base-url"),
                preset.and_then(|p| p.base_url_env),
                &[&provider_key("base_url")],
                "the provider's default",
            ),
        },
        Setting {
            key: "api_key_env".into(),
            value: config
                .api_key_env
                .as_deref()
                .map(quoted)
                .unwrap_or_else(|| "\"\" (no key sent)".into()),
            origin: {
                let o = origin(
                    None,
                    None,
                    &[&provider_key("api_key_env")],
                    "the provider's default",
                );
                match (&config.api_key_env, &config.api_key) {
                    (Some(_), Some(_)) => format!("{o}; the variable is set"),
                    (Some(_), None) => format!("{o}; the variable is NOT set"),
                    (None, _) => o,
                }
            },
        },
        Setting {
            key: "max_turns".into(),
            value: config.max_turns.to_string(),
            origin: origin(
                flags.max_turns.map(|_| "--max-turns"),
                None,
                &["max_turns"],
                "default",
            ),
        },
        Setting {
            key: "effort".into(),
            value: config.main_effort().map_or_else(
                || "(none sent: the model's own)".into(),
                |e| quoted(e.name()),
            ),
            origin: origin(
                flags.effort.map(|_| "--effort"),
                None,
                &[&provider_key("effort"), "effort"],
                "default",
            ),
        },
        Setting {
            key: "sandbox.mode".into(),
            value: quoted(config.sandbox.mode.name()),
            origin: origin(
                flags.sandbox.map(|_| "--sandbox"),
                None,
                &["sandbox.mode"],
                "default",
            ),
        },
        Setting {
            key: "guard".into(),
            value: config.guard.to_string(),
            origin: origin(
                flags.no_guard.then_some("--no-guard"),
                None,
                &["guard"],
                "default",
            ),
        },
        Setting {
            key: "project_doc".into(),
            value: config.project_doc.to_string(),
            origin: origin(
                flags.no_project_doc.then_some("--no-project-doc"),
                None,
                &["project_doc"],
                "default",
            ),
        },
        Setting {
            key: "show_reasoning".into(),
            value: config.show_reasoning.to_string(),
            origin: origin(
                flags.show_reasoning.then_some("--show-reasoning"),
                None,
                &["show_reasoning"],
                "default",
            ),
        },
        Setting {
            key: "sessions".into(),
            value: config.sessions.to_string(),
            origin: origin(None, None, &["sessions", "sessions.enabled"], "default"),
        },
    ];
    // Every other key a file set, with the file that set it last. The keys above are the
    // resolved ones: a file's `model` under another provider's table is not in force.
    let shown: Vec<String> = settings.iter().map(|s| s.key.clone()).collect();
    let covered = |k: &str| {
        shown.iter().any(|s| s == k)
            || k == provider_key("model")
            || k == provider_key("base_url")
            || k == provider_key("api_key_env")
            || k == provider_key("effort")
            || k == "sessions.enabled"
    };
    let mut rest: Vec<(String, String, String)> = Vec::new();
    for layer in &layers {
        for (k, v) in &layer.keys {
            if covered(k) {
                continue;
            }
            rest.retain(|(key, _, _)| key != k);
            rest.push((k.clone(), v.clone(), layer.origin.clone()));
        }
    }
    rest.sort();
    settings.extend(
        rest.into_iter()
            .map(|(key, value, origin)| Setting { key, value, origin }),
    );
    Origins { settings, ignored }
}
