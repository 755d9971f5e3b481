//! A session's config options (`configOptions` of `session/new` and `session/load`, changed
//! with `session/set_config_option`): the model, of category `model`, and the effort, of
//! category `thought_level`. Choosing one is `/model` or `/effort` in `hx chat`: the config's
//! choice changes, and the session's next prompt goes on with the profile made from it.
//!
//! The model's values are the configured model, the models the provider's server lists (when
//! it answered in time; see `Server::listing`) and, for DeepSeek, the retired names hx still
//! maps. A value outside them is refused: a client picks from what it was shown, and a
//! benchmark runner that asked for a model must learn that it is not there rather than run
//! another.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption, SetSessionConfigOptionRequest,
};

use super::rpc::{error, RpcError, INVALID_PARAMS};
use crate::config::{Config, RETIRED};
use crate::model::{Dialect, Effort};
use crate::text::one_line;

/// The options' ids.
pub const MODEL: &str = "model";
pub const EFFORT: &str = "effort";

/// The effort's value while none is set (the model's own default holds): offered only then,
/// since hx has no way back to "none" once one is chosen, as `/effort` has none.
pub const DEFAULT_EFFORT: &str = "default";

/// The most models one session offers (OpenRouter lists a few hundred; a server listing
/// thousands would make every `session/new` answer megabytes).
pub const MAX_OFFERED: usize = 1_000;

/// The longest model name offered (and `/model` takes).
const MAX_MODEL_CHARS: usize = 200;

/// The model as the session shows it: the retired name the user gave, when it stands for
/// another, so that the value chosen is the value shown.
pub fn current_model(config: &Config) -> &str {
    config.retired.map_or(config.model.as_str(), |r| r.name)
}

/// Adds `names` to `offered`, each once, in order, up to [`MAX_OFFERED`]; a name that could
/// not be a model's (empty, spaces or control characters, too long) is left out.
pub fn merge<'a>(offered: &mut Vec<String>, names: impl IntoIterator<Item = &'a str>) {
    for name in names {
        if offered.len() >= MAX_OFFERED {
            return;
        }
        let usable = !name.is_empty()
            && name.chars().count() <= MAX_MODEL_CHARS
            && !name.chars().any(|c| c.is_whitespace() || c.is_control());
        if usable && !offered.iter().any(|o| o == name) {
            offered.push(name.to_string());
        }
    }
}

/// The models a session starts offering: its configured one first, then the provider's
/// `listed` ones, then (DeepSeek) the retired names.
pub fn offered(config: &Config, listed: &[String]) -> Vec<String> {
    let mut offered = Vec::new();
    merge(&mut offered, [current_model(config)]);
    merge(&mut offered, listed.iter().map(String::as_str));
    if config.dialect == Dialect::DeepSeek {
        merge(&mut offered, RETIRED.iter().map(|r| r.name));
    }
    offered
}

/// Every option with its current value.
pub fn options(config: &Config, offered: &[String]) -> Vec<SessionConfigOption> {
    let models: Vec<SessionConfigSelectOption> = offered
        .iter()
        .map(|name| {
            let option = SessionConfigSelectOption::new(name.clone(), name.clone());
            match RETIRED.iter().find(|r| r.name == name) {
                Some(r) if config.dialect == Dialect::DeepSeek => option.description(format!(
                    "retired name: {} answers it, at effort {}",
                    r.model,
                    r.effort.name()
                )),
                _ => option,
            }
        })
        .collect();
    let model =
        SessionConfigOption::select(MODEL, "Model", current_model(config).to_string(), models)
            .category(SessionConfigOptionCategory::Model)
            .description(format!(
            "The model of provider {} that the next prompt's requests go to (as /model in hx chat)",
            config.provider
        ));
    let main = config.main_effort();
    let mut efforts = Vec::new();
    if main.is_none() {
        efforts.push(
            SessionConfigSelectOption::new(DEFAULT_EFFORT, "Model's default")
                .description("no effort is sent: the model thinks as it does by default"),
        );
    }
    efforts.extend(
        Effort::ALL
            .iter()
            .map(|e| SessionConfigSelectOption::new(e.name(), e.name())),
    );
    let current = main.map_or(DEFAULT_EFFORT, Effort::name);
    let effort = SessionConfigOption::select(EFFORT, "Effort", current, efforts)
        .category(SessionConfigOptionCategory::ThoughtLevel)
        .description("How hard the model thinks (as --effort, and /effort in hx chat)");
    vec![model, effort]
}

/// What a `session/set_config_option` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Model(String),
    /// `None`: the model's default, already in force (nothing changes).
    Effort(Option<Effort>),
}

/// The change `req` asks for, checked against what the session offers; -32602 names what
/// was wrong and what would do.
pub fn change(
    req: &SetSessionConfigOptionRequest,
    config: &Config,
    offered: &[String],
) -> Result<Change, RpcError> {
    let id = &*req.config_id.0;
    let value = match &req.value {
        SessionConfigOptionValue::ValueId { value } => &*value.0,
        _ => {
            return Err(invalid(format!(
                "option {:?} takes one of its values' ids, not a boolean",
                shown(id)
            )))
        }
    };
    match id {
        MODEL => match offered.iter().find(|m| *m == value) {
            Some(m) => Ok(Change::Model(m.clone())),
            None => Err(invalid(format!(
                "model {:?} is not among the {} this session offers (provider {}): {}",
                shown(value),
                offered.len(),
                config.provider,
                listing(offered)
            ))),
        },
        EFFORT => {
            if value == DEFAULT_EFFORT && config.main_effort().is_none() {
                return Ok(Change::Effort(None));
            }
            Effort::parse(value)
                .map(|e| Change::Effort(Some(e)))
                .map_err(|_| {
                    invalid(format!(
                        "effort {:?} is not one of off, low, high, max",
                        shown(value)
                    ))
                })
        }
        _ => Err(invalid(format!(
            "hx has no config option {:?}; its options are {MODEL:?} and {EFFORT:?}",
            shown(id)
        ))),
    }
}

fn invalid(why: String) -> RpcError {
    error(INVALID_PARAMS, format!("Invalid params: {why}"))
}

/// What the client sent, as an error quotes it: one line, cut.
fn shown(text: &str) -> String {
    one_line(text, 80)
}

/// The first few offered models, for an error to name.
fn listing(offered: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut s = offered
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if offered.len() > SHOWN {
        s.push_str(&format!(", and {} more", offered.len() - SHOWN));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Env, Flags};

    fn config(model: &str) -> Config {
        let mut env = Env::default();
        env.insert("HOME".into(), "/nonexistent-hx-home".into());
        env.insert("DEEPSEEK_API_KEY".into(), "k".into());
        let flags = Flags {
            model: Some(model.into()),
            ..Flags::default()
        };
        let mut warnings = Vec::new();
        Config::load(std::path::Path::new("/"), &env, &flags, &mut warnings).expect("config")
    }

    fn set(id: &str, value: &str) -> SetSessionConfigOptionRequest {
        SetSessionConfigOptionRequest::new("s", id.to_string(), value)
    }

    #[test]
    fn the_configured_model_comes_first_then_the_listed_then_the_retired() {
        let c = config("deepseek-flash");
        let listed = vec![
            "deepseek-v4-pro".to_string(),
            "deepseek-flash".to_string(),
            "has space".to_string(),
            "x".repeat(201),
        ];
        assert_eq!(
            offered(&c, &listed),
            [
                "deepseek-flash",
                "deepseek-v4-pro",
                "deepseek-chat",
                "deepseek-reasoner"
            ]
        );
        let many: Vec<String> = (0..MAX_OFFERED + 5).map(|i| format!("m{i}")).collect();
        assert_eq!(offered(&c, &many).len(), MAX_OFFERED);
    }

    #[test]
    fn the_options_are_a_model_select_and_an_effort_select() {
        let c = config("deepseek-chat");
        let offered = offered(&c, &[]);
        let json = serde_json::to_value(options(&c, &offered)).expect("json");
        assert_eq!(json[0]["id"], MODEL);
        assert_eq!(json[0]["category"], "model");
        assert_eq!(json[0]["type"], "select");
        // A retired name is shown as given, with what answers it.
        assert_eq!(json[0]["currentValue"], "deepseek-chat");
        let chat = json[0]["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["value"] == "deepseek-chat")
            .expect("retired name offered");
        assert!(chat["description"]
            .as_str()
            .unwrap()
            .contains("deepseek-flash"));
        assert_eq!(json[1]["id"], EFFORT);
        assert_eq!(json[1]["category"], "thought_level");
        // deepseek-chat thinks at off unless an effort was set.
        assert_eq!(json[1]["currentValue"], "off");
        let c = config("deepseek-flash");
        let json = serde_json::to_value(options(&c, &[])).expect("json");
        assert_eq!(json[1]["currentValue"], DEFAULT_EFFORT);
        assert_eq!(json[1]["options"][0]["value"], DEFAULT_EFFORT);
    }

    #[test]
    fn a_change_is_checked_against_what_is_offered() {
        let c = config("deepseek-flash");
        let offered = offered(&c, &["deepseek-v4-pro".to_string()]);
        assert_eq!(
            change(&set(MODEL, "deepseek-v4-pro"), &c, &offered).expect("offered"),
            Change::Model("deepseek-v4-pro".into())
        );
        let e = change(&set(MODEL, "gpt-9"), &c, &offered).expect_err("not offered");
        assert_eq!(i32::from(e.code), INVALID_PARAMS);
        assert!(
            e.message.contains("gpt-9") && e.message.contains("deepseek-v4-pro"),
            "{}",
            e.message
        );
        assert_eq!(
            change(&set(EFFORT, "max"), &c, &offered).expect("effort"),
            Change::Effort(Some(Effort::Max))
        );
        assert_eq!(
            change(&set(EFFORT, DEFAULT_EFFORT), &c, &offered).expect("default"),
            Change::Effort(None)
        );
        assert!(change(&set(EFFORT, "extreme"), &c, &offered).is_err());
        let e = change(&set("mode", "x"), &c, &offered).expect_err("unknown id");
        assert!(e.message.contains("\"mode\""), "{}", e.message);
        let boolean = SetSessionConfigOptionRequest::new("s", MODEL, true);
        assert!(change(&boolean, &c, &offered).is_err());
    }
}
