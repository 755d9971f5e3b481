//! `hx context`: the system prompt a run here would start with, and what takes its room, so a
//! user can see what the model sees. No API key needed; nothing is sent.

use super::{exit, fail, ContextArgs};
use crate::app::build_agent_with;
use crate::config::{process_env, Flags};
use crate::context::{estimate, thousands};
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
        term.line(&w.to_string());
    }
    let (agent, parts) = match built {
        Ok(b) => (b.agent, b.parts),
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
    let c = config.context;
    table.push_str(&format!(
        "\ncontext window: {} tokens ({}); compaction at {} tokens\n",
        thousands(c.window),
        config.model,
        thousands(c.limit())
    ));
    term.out_raw(&table);
    exit::ANSWERED
}
