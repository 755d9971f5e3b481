//! The one place a model name becomes a [`Profile`]: a retired DeepSeek name mapped to the
//! model that answers it now (thinking as it did, unless an effort is set), the window (a
//! configured one, else the one the server stated when asked, else the model's own, else the
//! assumption), the price (`[pricing."MODEL"]`, else the built-in table of the provider) and
//! the provider's reasoning echo.

use std::collections::BTreeMap;

use super::presets::{self, Retired};
use super::Config;
use crate::context;
use crate::model::window::Stated;
use crate::model::{Dialect, Effort, Price, Profile, ReasoningEcho, Thinking};
use crate::text::Warning;

/// What turns a model name into a [`Profile`] for a run: everything but the user's choice of
/// model and effort, so it stays the same for the whole run (`/model` and `/effort` change
/// only that choice). The `task` tool keeps one to make its subagents' profiles.
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    provider: String,
    dialect: Dialect,
    reasoning_echo: ReasoningEcho,
    pricing: BTreeMap<String, Price>,
    /// The window a config file (or the provider's table) set; `None`: each model's own.
    window: Option<u64>,
    /// The window the server stated for a model when asked (see [`Profiles::with_server`]).
    server: Option<(String, Stated)>,
    /// `subagent_effort`: the subagents' own, when it differs from their caller's.
    subagent_effort: Option<Effort>,
}

impl Profiles {
    /// The profile of `model` at `effort` (the user's; `None` leaves a retired name's own),
    /// and the line saying which model answers a retired name.
    pub fn resolve(&self, model: &str, effort: Option<Effort>) -> (Profile, Option<Warning>) {
        let retired = (self.dialect == Dialect::DeepSeek)
            .then(|| presets::retired(model))
            .flatten();
        let name = retired.map_or(model, |r| r.model);
        let notice = retired.map(|r| retired_notice(r, effort));
        (
            self.make(name, effort.or(retired.map(|r| r.effort))),
            notice,
        )
    }

    /// These profiles, with the window the server stated for `model` (asked only when no
    /// window is configured, which wins anyway).
    pub fn with_server(mut self, model: &str, stated: Option<Stated>) -> Profiles {
        self.server = stated.map(|s| (model.to_string(), s));
        self
    }

    /// The window of `model` and where it comes from.
    pub fn window_of(&self, model: &str) -> (u64, WindowFrom) {
        if let Some(w) = self.window {
            return (w, WindowFrom::Configured);
        }
        if let Some((_, s)) = self.server.as_ref().filter(|(m, _)| m == model) {
            return (s.tokens, WindowFrom::Server(s.from.clone()));
        }
        match context::builtin_window(model) {
            Some(w) => (w, WindowFrom::BuiltIn),
            None => (context::DEFAULT_WINDOW, WindowFrom::Assumed),
        }
    }

    /// The profile of `model` as named (no mapping) at `effort`.
    pub fn make(&self, model: &str, effort: Option<Effort>) -> Profile {
        let price = self
            .pricing
            .get(model)
            .cloned()
            .or_else(|| crate::model::price::builtin(&self.provider, model));
        let (window, _) = self.window_of(model);
        let thinking = effort.map(|effort| Thinking {
            effort,
            dialect: self.dialect,
        });
        Profile::new(model, thinking, price, window, self.reasoning_echo)
    }

    /// The profile of a subagent that `caller` starts: the caller's model, or the one its
    /// type names (`model`, mapped as the main agent's would be), at `subagent_effort`, else
    /// the caller's effort.
    pub fn subagent(&self, caller: &Profile, model: Option<&str>) -> (Profile, Option<Warning>) {
        let effort = self.subagent_effort.or(caller.effort());
        match model {
            None => (self.make(caller.model(), effort), None),
            Some(m) => self.resolve(m, effort),
        }
    }
}

/// Where the window of a profile comes from (`hx context` says it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowFrom {
    /// `context_window` in a config file.
    Configured,
    /// The server stated it when asked: the path asked and the field read.
    Server(String),
    /// hx knows the model (DeepSeek's).
    BuiltIn,
    /// Nothing said otherwise: [`context::DEFAULT_WINDOW`].
    Assumed,
}

impl std::fmt::Display for WindowFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowFrom::Configured => f.write_str("set: context_window"),
            WindowFrom::Server(from) => write!(f, "the server said: {from}"),
            WindowFrom::BuiltIn => f.write_str("built in"),
            WindowFrom::Assumed => f.write_str("assumed"),
        }
    }
}

/// The line saying which model answers the retired name, and how it thinks: at the effort
/// set, else as the name did.
fn retired_notice(r: &Retired, effort: Option<Effort>) -> Warning {
    let how = match effort {
        Some(e) => format!(", at effort {} as set", e.name()),
        None if r.effort == Effort::Off => " with thinking off, as it answered".into(),
        None => " with thinking on, as it answered".into(),
    };
    Warning::notice(format!(
        "{} was retired on 2026-07-24: using {}{how}",
        r.name, r.model
    ))
}

impl Config {
    /// What turns model names into profiles in this run.
    pub fn profiles(&self) -> Profiles {
        Profiles {
            provider: self.provider.clone(),
            dialect: self.dialect,
            reasoning_echo: self.reasoning_echo,
            pricing: self.pricing.clone(),
            window: self.window_configured.then_some(self.context.window),
            server: None,
            subagent_effort: self.subagent_effort,
        }
    }

    /// The main agent's profile: the chosen model (a retired name already mapped by
    /// [`Config::set_model`] or at load) at the chosen effort.
    pub fn profile(&self) -> Profile {
        self.profiles().make(&self.model, self.main_effort())
    }

    /// The profile of `model` for one message (a command's `model:`), as
    /// `/model` would make it, at the effort the user chose; and the retired name's line.
    pub fn profile_for(&self, model: &str) -> (Profile, Option<Warning>) {
        self.profiles().resolve(model, self.effort)
    }

    /// The line saying which model answers the retired name the user gave.
    pub fn retired_notice(&self) -> Option<Warning> {
        let r = self.retired?;
        Some(retired_notice(r, self.effort))
    }
}
