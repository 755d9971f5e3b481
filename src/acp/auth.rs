//! The one authentication method hx announces: where its API key comes from. hx has no login
//! of its own (the key is the provider's, read from the environment variable its config
//! names), yet clients and the ACP registry look for at least one method in `initialize`'s
//! `authMethods` to know how a user gets the agent working. An `agent` method (the schema's
//! default kind, which the registry accepts) says where to put the key, and `authenticate`
//! with it answers whether the key is there, so that a client that authenticates first
//! learns what is missing before it opens a session.

use agent_client_protocol::v1::schema::{
    AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
};

use super::rpc::{error, RpcError, INVALID_PARAMS};
use super::AUTH_REQUIRED;

/// The method's id, as clients pass it back to `authenticate`.
pub const METHOD_ID: &str = "api-key";

/// The key of the provider hx starts with (its config where `hx acp` was started), as far as
/// the method says: a session in another folder may choose another provider, and its
/// `session/new` then names that one's variable when it is missing.
#[derive(Debug, Clone, Default)]
pub struct Key {
    pub provider: String,
    /// The variable the key is read from; `None`: the provider takes no key.
    pub var: Option<String>,
    /// Why a session cannot start (the variable is not set), as `session/new` would say.
    pub missing: Option<String>,
}

impl Key {
    pub fn of(config: &crate::config::Config) -> Key {
        Key {
            provider: config.provider.clone(),
            var: config.api_key_env.clone(),
            missing: config.require_key().err().map(|e| e.to_string()),
        }
    }
}

/// The method `initialize` lists.
pub fn method(key: &Key) -> AuthMethod {
    let (name, description) = match &key.var {
        Some(var) => (
            format!("API key in {var}"),
            format!(
                "hx sends provider {} the API key in the environment variable {var}: set it in \
                 the environment the client starts `hx acp` with. The provider, and the \
                 variable each provider's key is read from (api_key_env), are chosen in hx's \
                 config file ($XDG_CONFIG_HOME/hx/config.toml, or ~/.config/hx/config.toml) or \
                 with --provider.",
                key.provider
            ),
        ),
        None => (
            "No API key".to_string(),
            format!(
                "Provider {} takes no API key, as hx's config sets it up; another provider \
                 and the variable its key is read from (api_key_env) are chosen in hx's config \
                 file ($XDG_CONFIG_HOME/hx/config.toml, or ~/.config/hx/config.toml) or with \
                 --provider.",
                key.provider
            ),
        ),
    };
    AuthMethod::Agent(AuthMethodAgent::new(METHOD_ID, name).description(description))
}

/// `authenticate`: nothing to log in to, so the method answers whether the key is there;
/// -32000 (auth required) names the variable to set, as `session/new` would.
pub fn authenticate(
    key: &Key,
    req: &AuthenticateRequest,
) -> Result<AuthenticateResponse, RpcError> {
    if &*req.method_id.0 != METHOD_ID {
        return Err(error(
            INVALID_PARAMS,
            format!(
                "Invalid params: hx has no authentication method {:?}; its one method is \
                 {METHOD_ID:?} (the provider's API key in the environment)",
                crate::text::one_line(&req.method_id.0, 80)
            ),
        ));
    }
    match &key.missing {
        Some(why) => Err(error(AUTH_REQUIRED, why.clone())),
        None => Ok(AuthenticateResponse::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deepseek(missing: bool) -> Key {
        Key {
            provider: "deepseek".into(),
            var: Some("DEEPSEEK_API_KEY".into()),
            missing: missing.then(|| "DEEPSEEK_API_KEY is not set".into()),
        }
    }

    #[test]
    fn the_method_names_the_variable_and_the_config() {
        let m = serde_json::to_value(method(&deepseek(false))).expect("json");
        assert_eq!(m["id"], METHOD_ID);
        // The schema's default kind: no `type`, which the registry reads as `agent`.
        assert!(m.get("type").is_none(), "{m}");
        assert!(m["name"].as_str().unwrap().contains("DEEPSEEK_API_KEY"));
        let d = m["description"].as_str().unwrap();
        assert!(
            d.contains("DEEPSEEK_API_KEY") && d.contains("config.toml"),
            "{d}"
        );
        let keyless = Key {
            provider: "ollama".into(),
            ..Key::default()
        };
        let m = serde_json::to_value(method(&keyless)).expect("json");
        assert!(m["description"].as_str().unwrap().contains("ollama"));
    }

    #[test]
    fn authenticate_says_whether_the_key_is_there() {
        let req = AuthenticateRequest::new(METHOD_ID);
        assert!(authenticate(&deepseek(false), &req).is_ok());
        let e = authenticate(&deepseek(true), &req).expect_err("missing");
        assert_eq!(i32::from(e.code), AUTH_REQUIRED);
        assert!(e.message.contains("DEEPSEEK_API_KEY"), "{}", e.message);
        let e = authenticate(&deepseek(false), &AuthenticateRequest::new("oauth"))
            .expect_err("unknown");
        assert_eq!(i32::from(e.code), INVALID_PARAMS);
    }
}
