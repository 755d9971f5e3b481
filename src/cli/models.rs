//! `hx models`: the models the provider's server lists, the configured one marked.

use super::{exit, fail, show_failure, ModelsArgs};
use crate::config::{process_env, Flags};
use crate::model::OpenAiClient;

pub(super) fn models_command(args: ModelsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let flags = Flags {
        provider: args.provider,
        base_url: args.base_url,
        ..Flags::default()
    };
    let config = match crate::app::config::load_for_model(&cwd, &env, &flags) {
        Ok(loaded) => {
            for w in loaded.warnings {
                errln!("{w}");
            }
            loaded.config
        }
        Err(f) => return show_failure(f),
    };
    let models = match list(&config) {
        Ok(m) => m,
        Err(e) => return fail(exit::FAILED, e),
    };
    if args.json {
        let v = serde_json::json!({
            "provider": config.provider,
            "base_url": crate::model::client::shown_url(&config.base_url),
            "configured": config.model,
            "models": models,
        });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return exit::ANSWERED;
    }
    if models.is_empty() {
        outln!(
            "{} lists no models",
            crate::model::client::shown_url(&config.base_url)
        );
    }
    for m in &models {
        let mark = if *m == config.model { "*" } else { " " };
        outln!("{mark} {m}");
    }
    if !models.is_empty() && !models.contains(&config.model) {
        errln!(
            "hx: the configured model {} is not in the list",
            config.model
        );
    }
    exit::ANSWERED
}

/// The server's list, fetched on a runtime of its own (nothing else runs).
pub(crate) fn list(config: &crate::config::Config) -> Result<Vec<String>, String> {
    let client = OpenAiClient::new(config.client_options())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    runtime
        .block_on(client.list_models())
        .map_err(|e| e.to_string())
}
