//! Where each setting of the effective configuration came from, for `hx config`: the
//! defaults, the user's file, the project's (applied only while trusted), the environment, a
//! flag. Recorded while the configuration is resolved: each setting `hx config` lists is
//! chosen through a [`Pick`], which keeps the value and where it was found together, so the
//! order in which flags, variables, files and defaults win is stated once, in `resolve.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::PathBuf;

use super::Config;

/// Where one setting in force came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag (`--model`).
    Flag(&'static str),
    /// A variable of the environment (`HX_MODEL`).
    Env(String),
    /// A config file, as [`Written`] names it (`user file PATH`).
    File(String),
    /// The session this run continues (its effort).
    Session,
    /// Nothing set it: `default`, or `the provider's default`.
    Default(&'static str),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::Env(var) => write!(f, "environment {var}"),
            Origin::File(name) => f.write_str(name),
            Origin::Session => f.write_str("the continued session"),
            Origin::Default(what) => f.write_str(what),
        }
    }
}

/// What the config files in force wrote, each file's keys flattened (`tools.output_chars`)
/// with their values as TOML (a credential's hidden), in the order the files are laid over
/// each other: the last file that wrote a key set it.
#[derive(Debug, Clone, Default)]
pub struct Written(Vec<WrittenFile>);

#[derive(Debug, Clone)]
struct WrittenFile {
    /// The file as `hx config` names it.
    name: String,
    keys: Vec<(String, String)>,
}

impl Written {
    /// The keys of one file's text, named `name`. Text that is not TOML writes nothing: the
    /// loader refuses it, or (an untrusted file) it only ever applies once it parses.
    pub(super) fn read(text: &str, name: String) -> Written {
        let keys = toml::from_str::<toml::Table>(text)
            .map(|t| flatten(&t))
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                let v = if secret(&k) { "\"***\"".to_string() } else { v };
                (k, v)
            })
            .collect();
        Written(vec![WrittenFile { name, keys }])
    }

    /// The same keys, the files named `name` (the loader knows whose file it read).
    pub(super) fn named(mut self, name: &str) -> Written {
        for file in &mut self.0 {
            file.name = name.to_string();
        }
        self
    }

    /// `top`'s files laid over these, as [`super::FileConfig`] overlays them.
    pub(super) fn under(mut self, top: Written) -> Written {
        self.0.extend(top.0);
        self
    }

    /// The file that wrote any of `keys` (spellings of one setting, `sessions` and
    /// `sessions.enabled`) last.
    fn file_of(&self, keys: &[&str]) -> Option<&str> {
        self.0
            .iter()
            .rev()
            .find(|f| f.keys.iter().any(|(k, _)| keys.contains(&k.as_str())))
            .map(|f| f.name.as_str())
    }

    /// Every key with its value and the file that set it last, in key order.
    fn last(&self) -> BTreeMap<&str, (&str, &str)> {
        let mut out = BTreeMap::new();
        for file in &self.0 {
            for (k, v) in &file.keys {
                out.insert(k.as_str(), (v.as_str(), file.name.as_str()));
            }
        }
        out
    }

    /// Every key with its value, in file order (one file's: an untrusted one).
    fn keys(self) -> Vec<(String, String)> {
        self.0.into_iter().flat_map(|f| f.keys).collect()
    }
}

/// Where the settings of a [`Config`] came from, as resolving it found.
#[derive(Debug, Clone, Default)]
pub struct Origins {
    /// By key as `hx config` lists it (`sandbox.mode`).
    chosen: BTreeMap<&'static str, Origin>,
    /// The file keys those settings were read from (and their own keys): not listed again
    /// among the rest, since a file's `model` under another provider's table is not in force.
    read: BTreeSet<String>,
    written: Written,
    /// The untrusted project file and what it would set.
    ignored: Option<(PathBuf, Vec<(String, String)>)>,
    /// The provider chosen, whose table the later settings are read from.
    provider: String,
}

impl Origins {
    pub(super) fn new(written: Written) -> Origins {
        Origins {
            written,
            ..Origins::default()
        }
    }

    /// Starts choosing the setting `key`: the first of the places [`Pick`] is given that has
    /// a value wins.
    pub(super) fn pick<T>(&mut self, key: &'static str) -> Pick<'_, T> {
        self.read.insert(key.to_string());
        Pick {
            origins: self,
            key,
            found: None,
        }
    }

    /// Records where `key` came from, for a setting another module chose.
    pub(super) fn set(&mut self, key: &'static str, origin: Origin) {
        self.read.insert(key.to_string());
        self.chosen.insert(key, origin);
    }

    /// The file that set any of `keys` last, for a setting whose value was found in the files.
    pub(super) fn file(&self, keys: &[&str]) -> Origin {
        Origin::File(
            self.written
                .file_of(keys)
                // A configuration resolved from no file's text (a test's).
                .unwrap_or("a config file")
                .to_string(),
        )
    }

    /// The provider whose table [`Pick::table`] reads.
    pub(super) fn read_tables_of(&mut self, name: &str) {
        self.provider = name.to_string();
    }

    /// The project file left out until trusted, with what it would set.
    pub(super) fn ignore(&mut self, path: PathBuf, text: &str) {
        self.ignored = Some((path, Written::read(text, String::new()).keys()));
    }
}

/// One setting being chosen: each place is offered in the order it wins, and the first with
/// a value is kept with its origin.
pub(super) struct Pick<'a, T> {
    origins: &'a mut Origins,
    key: &'static str,
    found: Option<(T, Origin)>,
}

impl<T> Pick<'_, T> {
    fn offer(mut self, value: Option<T>, origin: impl FnOnce(&Origins) -> Origin) -> Self {
        if self.found.is_none() {
            if let Some(v) = value {
                let origin = origin(self.origins);
                self.found = Some((v, origin));
            }
        }
        self
    }

    pub(super) fn flag(self, flag: &'static str, value: Option<T>) -> Self {
        self.offer(value, |_| Origin::Flag(flag))
    }

    pub(super) fn env(self, var: &str, value: Option<T>) -> Self {
        self.offer(value, |_| Origin::Env(var.to_string()))
    }

    pub(super) fn session(self, value: Option<T>) -> Self {
        self.offer(value, |_| Origin::Session)
    }

    /// The files' value, written under any of `keys` (spellings of one setting).
    pub(super) fn file(self, keys: &[&str], value: Option<T>) -> Self {
        self.origins.read.extend(keys.iter().map(|k| k.to_string()));
        self.offer(value, |o| o.file(keys))
    }

    /// The value of the chosen provider's table, its key `field`.
    pub(super) fn table(self, field: &str, value: Option<T>) -> Self {
        let key = format!("providers.{}.{field}", self.origins.provider);
        self.file(&[&key], value)
    }

    /// The value found, else `value` (none too) as `default` says.
    pub(super) fn finish(self, default: &'static str, value: Option<T>) -> Option<T> {
        let (value, origin) = match self.found {
            Some((v, origin)) => (Some(v), origin),
            None => (value, Origin::Default(default)),
        };
        self.origins.chosen.insert(self.key, origin);
        value
    }

    /// The value found, else `value`, as `default` says.
    pub(super) fn or(self, default: &'static str, value: T) -> T {
        match self.finish(default, None) {
            Some(v) => v,
            None => value,
        }
    }
}

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
pub struct Report {
    pub settings: Vec<Setting>,
    /// The untrusted project file and what it would set.
    pub ignored: Option<(PathBuf, Vec<(String, String)>)>,
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

/// The settings of `config` and their origins, as resolving it recorded them: the ones it
/// chose, then every other key a file in force set, with the file that set it last.
pub fn report(config: &Config) -> Report {
    let o = &config.origins;
    let setting = |key: &str, value: String| Setting {
        key: key.to_string(),
        value,
        origin: o
            .chosen
            .get(key)
            .map_or_else(|| "default".to_string(), Origin::to_string),
    };
    let api_key_env = {
        let mut s = setting(
            "api_key_env",
            config
                .api_key_env
                .as_deref()
                .map(quoted)
                .unwrap_or_else(|| "\"\" (no key sent)".into()),
        );
        match (&config.api_key_env, &config.api_key) {
            (Some(_), Some(_)) => s.origin.push_str("; the variable is set"),
            (Some(_), None) => s.origin.push_str("; the variable is NOT set"),
            (None, _) => {}
        }
        s
    };
    let mut settings = vec![
        setting("provider", quoted(&config.provider)),
        setting("model", quoted(&config.model)),
        setting(
            "base_url",
            quoted(&crate::model::client::shown_url(&config.base_url)),
        ),
        api_key_env,
        setting("max_turns", config.max_turns.to_string()),
        setting("loop.repeats", config.loops.repeats.to_string()),
        setting("loop.stop_after", config.loops.stop_after.to_string()),
        setting(
            "effort",
            config.main_effort().map_or_else(
                || "(none sent: the model's own)".into(),
                |e| quoted(e.name()),
            ),
        ),
        setting("sandbox.mode", quoted(config.sandbox.mode.name())),
        setting("tools.profile", quoted(config.tool_profile.name())),
        setting("guard", config.guard.to_string()),
        setting("project_doc", config.project_doc.to_string()),
        setting("show_reasoning", config.show_reasoning.to_string()),
        setting("trace", quoted(config.trace.name())),
        setting("sessions", config.sessions.to_string()),
        setting("notifications", quoted(config.notifications.name())),
        setting(
            "notify",
            toml::Value::Array(
                config
                    .notify
                    .iter()
                    .map(|w| toml::Value::String(w.clone()))
                    .collect(),
            )
            .to_string(),
        ),
        setting(
            "notify_after_secs",
            config.notify_after.as_secs().to_string(),
        ),
    ];
    settings.extend(
        o.written
            .last()
            .into_iter()
            .filter(|(k, _)| !o.read.contains(*k))
            .map(|(key, (value, origin))| Setting {
                key: key.to_string(),
                value: value.to_string(),
                origin: origin.to_string(),
            }),
    );
    Report {
        settings,
        ignored: o.ignored.clone(),
    }
}
