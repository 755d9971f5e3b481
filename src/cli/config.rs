//! `hx config`: the effective configuration here, each value with where it came from.

use super::{exit, ConfigArgs};
use crate::config::origins::report;
use crate::config::process_env;

pub(super) fn config_command(args: ConfigArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let flags = args.run.flags();
    // The notice about an untrusted project file is shown below, with what it would set.
    let config = match crate::app::config::load(&cwd, &env, &flags) {
        Ok(loaded) => loaded.config,
        Err(f) => return super::show_failure(f),
    };
    let o = report(&config);
    if args.json {
        let ignored = o.ignored.as_ref().map(|(path, keys)| {
            serde_json::json!({
                "path": path,
                "why": "not trusted: run hx trust to apply it",
                "settings": keys.iter().map(|(k, v)| serde_json::json!({"key": k, "value": v})).collect::<Vec<_>>(),
            })
        });
        let v = serde_json::json!({"settings": o.settings, "ignored": ignored});
        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return exit::ANSWERED;
    }
    let width = o
        .settings
        .iter()
        .map(|s| s.key.len() + s.value.len() + 3)
        .max()
        .unwrap_or(0)
        .min(60);
    for s in &o.settings {
        let line = format!("{} = {}", s.key, s.value);
        outln!("{line:<width$}  # {}", s.origin);
    }
    if let Some((path, keys)) = &o.ignored {
        outln!(
            "\n# ignored: {} is not trusted (hx trust shows it and applies it); it would set:",
            path.display()
        );
        for (k, v) in keys {
            outln!("#   {k} = {v}");
        }
    }
    exit::ANSWERED
}
