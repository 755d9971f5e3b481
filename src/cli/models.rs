//! `hx models`: the models the provider's server lists, the configured one marked, each with
//! its window and what else the server states of it.

use std::time::Duration;

use super::{exit, fail, show_failure, ModelsArgs};
use crate::app::window;
use crate::config::{process_env, Config, Flags};
use crate::context::{builtin_window, thousands};
use crate::model::window::Described;
use crate::model::OpenAiClient;

/// How long `hx models` asks a local server about the models its list does not give a window
/// for (llama.cpp's `/props`, Ollama's `/api/show` and `/api/ps`), after the list.
pub const MORE_TIME: Duration = Duration::from_secs(10);

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
    let models = match describe(&config) {
        Ok(m) => m,
        Err(e) => return fail(exit::FAILED, e),
    };
    // Asked afresh: what a run believes of the configured model is renewed.
    if !window::hosted(&config.base_url) {
        let configured = pick(&models, &config.model);
        window::renew(&config, &env, configured.and_then(|m| m.window.clone()));
    }
    let rows: Vec<Row> = models.iter().map(Row::of).collect();
    let names: Vec<&str> = models.iter().map(|m| m.id.as_str()).collect();
    if args.json {
        let v = serde_json::json!({
            "provider": config.provider,
            "base_url": crate::model::client::shown_url(&config.base_url),
            "configured": config.model,
            "models": names,
            "details": models.iter().zip(&rows).map(|(m, r)| serde_json::json!({
                "id": m.id,
                "window": r.tokens,
                "from": r.from,
                "facts": m.facts.iter()
                    .map(|(k, v)| (k.clone(), serde_json::Value::from(v.as_str())))
                    .collect::<serde_json::Map<_, _>>(),
            })).collect::<Vec<_>>(),
        });
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return exit::ANSWERED;
    }
    if models.is_empty() {
        outln!(
            "{} lists no models",
            crate::model::client::shown_url(&config.base_url)
        );
    } else {
        print_table(&models, &rows, &config.model);
    }
    if !models.is_empty() && !names.contains(&config.model.as_str()) {
        errln!(
            "hx: the configured model {} is not in the list",
            config.model
        );
    }
    exit::ANSWERED
}

/// The model requests naming `model` go to: the one of that name, or the only one (a server
/// started with one model answers every name with it).
fn pick<'a>(models: &'a [Described], model: &str) -> Option<&'a Described> {
    models
        .iter()
        .find(|m| m.answers(model))
        .or(models.first().filter(|_| models.len() == 1))
}

/// One line of the table: the window and where it came from.
struct Row {
    tokens: Option<u64>,
    from: Option<String>,
}

impl Row {
    fn of(m: &Described) -> Row {
        match (&m.window, builtin_window(&m.id)) {
            (Some(s), _) => Row {
                tokens: Some(s.tokens),
                from: Some(s.from.clone()),
            },
            (None, Some(w)) => Row {
                tokens: Some(w),
                from: Some("built in".into()),
            },
            (None, None) => Row {
                tokens: None,
                from: None,
            },
        }
    }
}

fn print_table(models: &[Described], rows: &[Row], configured: &str) {
    let cells: Vec<[String; 4]> = models
        .iter()
        .zip(rows)
        .map(|(m, r)| {
            [
                m.id.clone(),
                r.tokens.map_or_else(|| "-".into(), thousands),
                r.from.clone().unwrap_or_else(|| "not stated".into()),
                facts(m),
            ]
        })
        .collect();
    let stated = if cells.iter().any(|c| !c[3].is_empty()) {
        "the server states"
    } else {
        ""
    };
    let header = ["model", "window", "from", stated];
    let width = |i: usize| {
        cells
            .iter()
            .map(|c| c[i].chars().count())
            .chain([header[i].len()])
            .max()
            .unwrap_or(0)
    };
    let (w0, w1, w2) = (width(0), width(1), width(2));
    let line = |mark: &str, c: &[String; 4]| {
        format!(
            "{mark} {:<w0$}  {:>w1$}  {:<w2$}  {}",
            c[0], c[1], c[2], c[3]
        )
        .trim_end()
        .to_string()
    };
    outln!("{}", line(" ", &header.map(String::from)));
    for (m, c) in models.iter().zip(&cells) {
        let mark = if m.id == configured { "*" } else { " " };
        outln!("{}", line(mark, c));
    }
}

/// What else the server states of a model, on one line: `n_ctx_train 40,960, size ...`.
fn facts(m: &Described) -> String {
    m.facts
        .iter()
        .map(|(name, value)| match value.parse::<u64>() {
            Ok(n) => format!("{name} {}", thousands(n)),
            Err(_) => format!("{name} {value}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The server's list, described, fetched on a runtime of its own (nothing else runs). A
/// hosted API is asked for its list alone; another server about the models it gives no
/// window for, within [`MORE_TIME`].
fn describe(config: &Config) -> Result<Vec<Described>, String> {
    let client = OpenAiClient::new(config.client_options())?;
    let runtime = runtime()?;
    let more = (!window::hosted(&config.base_url)).then_some(MORE_TIME);
    let ask = |m: &str| builtin_window(m).is_none();
    runtime
        .block_on(client.describe_models(more, &ask))
        .map_err(|e| e.to_string())
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))
}
