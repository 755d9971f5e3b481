//! `hx context`: the system prompt a run here would start with, and what takes its room, so a
//! user can see what the model sees; and the window, with where it came from. No API key
//! needed; nothing is sent to the model (a local server is asked its window, as a run asks).

use super::{exit, fail, ContextArgs};
use std::time::Duration;

use crate::app::build_agent_with;
use crate::app::window::{self, Outcome};
use crate::config::{process_env, Flags, WindowFrom};
use crate::context::{estimate, thousands, Settings};
use crate::events::Events;
use crate::sandbox::Mode;
use crate::session::Recorder;

pub(super) fn context_command(args: ContextArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let flags = Flags {
        provider: args.provider,
        model: args.model,
        no_project_doc: args.no_project_doc,
        // The sandbox changes nothing the model is told; a kernel that cannot enforce a
        // required one must not keep this from showing the prompt.
        sandbox: Some(Mode::Off),
        ..Flags::default()
    };
    let config = match super::load_config(&cwd, &env, &flags) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let term = super::shared_term();
    let mut warnings = Vec::new();
    // Nothing runs: no view of a run.
    let built = build_agent_with(
        &config,
        &cwd,
        &env,
        Events::default(),
        Recorder::default(),
        "hx-context",
        Default::default(),
        &mut warnings,
    );
    for w in warnings {
        // This shows no sandbox of commands (it is built off): a run's own line says it.
        if !w
            .text()
            .starts_with(crate::sandbox::deny::COMMANDS_CAN_READ)
        {
            term.line(&w.to_string());
        }
    }
    let (agent, parts, probe) = match built {
        Ok(b) => (b.agent, b.parts, b.window),
        Err(e) => return fail(exit::USAGE, e),
    };
    let specs = agent.tools().specs();
    let mut rows: Vec<(String, usize)> = parts
        .iter()
        .map(|(what, text)| (what.clone(), text.len()))
        .collect();
    let schema_bytes = estimate::overhead_bytes(&config.model, &specs);
    rows.push((
        format!("tool schemas ({} tools)", specs.len()),
        schema_bytes,
    ));
    let total = agent.system_prompt().len() + schema_bytes;

    term.out_raw(agent.system_prompt());
    term.out_raw("\n\n");
    let width = rows
        .iter()
        .map(|(w, _)| w.chars().count())
        .max()
        .unwrap_or(0)
        .max(5);
    let mut table = format!("{:<width$}  {:>9}  {:>8}\n", "part", "bytes", "~tokens");
    for (what, bytes) in rows.iter().chain([&("total".to_string(), total)]) {
        table.push_str(&format!(
            "{what:<width$}  {:>9}  {:>8}\n",
            thousands(*bytes as u64),
            thousands(estimate::tokens(*bytes))
        ));
    }
    // The question of the server's window is what a run would ask: here its answer is
    // waited for, within its bound, since showing it is the point.
    let outcome = probe.wait(window::PROBE_TIME + Duration::from_millis(100));
    let (tokens, from) = config
        .profiles()
        .with_server(&config.model, outcome.stated().cloned())
        .window_of(&config.model);
    let c = Settings {
        window: tokens,
        compact_at: config.context.compact_at,
    };
    table.push_str(&format!(
        "\ncontext window: {} tokens ({}, {}); compaction at {} tokens\n",
        thousands(c.window),
        config.model,
        source(&from, &outcome),
        // The point of a conversation that has not begun: before the limit in a window too
        // small for a summary request at the limit to leave room for its answer.
        thousands(crate::context::Meter::new(c, estimate::tokens(schema_bytes)).compact_point(&[]))
    ));
    table.push_str(&denied_text(&cwd, &env));
    term.out_raw(&table);
    exit::ANSWERED
}

/// What the model may not read here: each deny rule, its file, and how many files and
/// folders it matches now (a folder counts once, whatever it holds).
fn denied_text(cwd: &std::path::Path, env: &crate::paths::Env) -> String {
    use crate::sandbox::deny::{Deny, MAX_COUNTED, MAX_FOLDERS};
    let Ok(root) = cwd.canonicalize() else {
        return String::new();
    };
    let home = env.get("HOME").map(std::path::PathBuf::from);
    // Its warnings were the run's, printed above.
    let (deny, _) = Deny::load(&root, home.as_deref().filter(|h| h.is_absolute()));
    if deny.is_empty() {
        return "\ndenied to the model: nothing (no .hxignore, no Read(...) deny rules)\n".into();
    }
    let mut out = String::from("\ndenied to the model (the file tools refuse, glob leaves out):\n");
    for (i, rule) in deny.rules().iter().enumerate() {
        // A look through the workspace each: past a few dozen rules, not counted.
        let matches = if i < MAX_COUNTED {
            let found = deny.count_existing(rule, &root);
            let more = match found.bounded {
                true => format!(" or more (looked through {MAX_FOLDERS} folders)"),
                false => String::new(),
            };
            format!(
                "matches {}{more}",
                crate::text::count(found.paths.len() as u64, "existing path")
            )
        } else {
            format!("not counted past {MAX_COUNTED} rules")
        };
        let what = if rule.text == crate::sandbox::deny::HXIGNORE {
            "its patterns".to_string()
        } else {
            crate::text::escape_controls(&rule.text).into_owned()
        };
        out.push_str(&format!(
            "  {what}  ({}; {matches})\n",
            crate::paths::shown_from(&rule.file, &root),
        ));
    }
    out
}

/// Where the window came from, and for an assumed one why the server did not say.
fn source(from: &WindowFrom, outcome: &Outcome) -> String {
    let cached = matches!(
        outcome,
        Outcome::Stated { cached: true, .. }
            | Outcome::NoneStated { cached: true }
            | Outcome::NoAnswer { cached: true }
    );
    let when = if cached { ", an earlier run asked" } else { "" };
    match (from, outcome) {
        (WindowFrom::Server(_), _) => format!("{from}{when}"),
        (WindowFrom::Assumed, Outcome::NoneStated { .. }) => {
            format!("assumed: the server states none{when}; set context_window")
        }
        (WindowFrom::Assumed, Outcome::NoAnswer { .. } | Outcome::Pending) => format!(
            "assumed: the server did not say within {} s{when}; set context_window",
            window::PROBE_TIME.as_secs()
        ),
        _ => from.to_string(),
    }
}
