//! `hx mcp list`: the MCP servers a run here would start, started as a run starts them: each
//! one's state, how long it took to start, and its tools. No API key needed.

use serde_json::{json, Value};
use std::sync::Arc;

use super::{exit, fail, McpArgs, McpCommand};
use crate::app::{self, runtime::Guard, signals::Signals};
use crate::config::{process_env, Flags};
use crate::mcp::{config::plan, Local, Mcp, Sandboxing, Status};
use crate::process;
use crate::sandbox::{Kernel, Plan};
use crate::term::{one_line, Term};
use crate::text::Warning;

/// Characters of a tool's description in the text listing.
const DESCRIPTION_CHARS: usize = 100;

pub(super) fn mcp_command(args: McpArgs) -> i32 {
    let McpCommand::List { json } = args.command;
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let term = Term::detect();
    let app::config::Loaded {
        config,
        mut warnings,
    } = match app::config::load(&cwd, &env, &Flags::default()) {
        Ok(l) => l,
        Err(f) => return super::show_failure(f),
    };
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let home = crate::paths::home_dir();
    let planned = match plan(
        &config.mcp_servers,
        &workspace,
        &env,
        home.as_deref(),
        &mut warnings,
    ) {
        Ok(p) => p,
        Err(e) => return fail(exit::USAGE, e),
    };
    for w in warnings {
        term.line(&w.to_string());
    }
    if planned.is_empty() {
        if json {
            term.out_line("[]");
        } else {
            term.line(
                "hx: no MCP servers configured ([mcp_servers.NAME] in a config file, or a \
                 project's .mcp.json)",
            );
        }
        return exit::ANSWERED;
    }
    // The run's sandbox and commands' environment, which local servers get as in a run, with
    // the run's warnings and its refusal when `sandbox.required` cannot be met.
    let sandbox_plan = Plan::new(&config.sandbox, &workspace, &env, Kernel::detect());
    let (sandbox_plan, pod) = sandbox_plan.with_pod(&env);
    for w in &sandbox_plan.warnings {
        term.line(&Warning::new(w).to_string());
    }
    let local = match sandbox_plan.sandbox_in(pod) {
        Ok(sandbox) => Local {
            env: process::env::for_tools(&config.shell_env, &config.sandbox),
            sandbox,
            writable: sandbox_plan.written_by_commands(),
        },
        Err(refusal) => return fail(exit::USAGE, refusal),
    };
    // Started exactly as a run starts them, in the same guarded runtime, then ended with
    // everything they left behind, on every path: an interrupted start too.
    let guard = Guard {
        shell_env: &config.shell_env,
        keep_background: false,
    };
    let mut statuses = Err(0);
    let ran = guard.run(
        || {},
        || async {
            let shown = term.clone();
            let mcp = Mcp::new(
                planned,
                env,
                local,
                Arc::new(move |w: &Warning| shown.line(&w.to_string())),
            );
            // A server can take its whole startup timeout (an npx download): Ctrl-C, SIGTERM
            // or SIGHUP stops the wait, and dropping `mcp` kills what started.
            let mut signals = Signals::cancelling().ok();
            let stopped = match signals.as_mut() {
                Some(s) => tokio::select! {
                    () = mcp.start() => None,
                    sig = s.recv() => Some(sig),
                },
                None => {
                    mcp.start().await;
                    None
                }
            };
            statuses = stopped.map_or_else(|| Ok(mcp.status()), Err);
            exit::ANSWERED
        },
    );
    match ran {
        Ok(exit::ANSWERED) => {}
        Ok(code) => return code,
        Err(f) => return super::show_failure(f),
    }
    let statuses = match statuses {
        Ok(s) => s,
        Err(sig) => {
            term.line(&format!(
                "hx: interrupted by {}; the servers were stopped",
                process::signal_name(sig)
            ));
            return exit::signalled(sig);
        }
    };
    if json {
        match serde_json::to_string_pretty(&Value::Array(statuses.iter().map(to_json).collect())) {
            Ok(text) => term.out_line(&text),
            Err(e) => return fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        }
    } else {
        for s in &statuses {
            for line in to_text(s) {
                term.out_line(&line);
            }
        }
    }
    // A server that a run would miss is a failure a script can see.
    if statuses.iter().any(|s| s.state == "failed") {
        exit::FAILED
    } else {
        exit::ANSWERED
    }
}

fn to_json(s: &Status) -> Value {
    json!({
        "name": s.name,
        "source": s.source,
        "target": s.target,
        "state": s.state,
        "why": s.why,
        "start_ms": s.start_ms,
        // A local server's: the mode it runs in, or "off" and why; null for an HTTP server.
        "sandbox": s.sandbox.map(Sandboxing::name),
        "sandbox_off": s.sandbox.and_then(Sandboxing::why_off),
        "tools": s.tools.iter().map(|(name, description)| json!({
            "name": name,
            "description": description,
        })).collect::<Vec<_>>(),
    })
}

/// `NAME: STATE ...`, the source and target (and a local server's sandbox), then one line per
/// tool.
fn to_text(s: &Status) -> Vec<String> {
    let took = s
        .start_ms
        .map(|ms| format!(" in {ms} ms"))
        .unwrap_or_default();
    let head = match (s.state, &s.why) {
        ("started", _) => format!(
            "{}: started{took}, {}",
            s.name,
            crate::text::count(s.tools.len() as u64, "tool")
        ),
        ("failed", Some(why)) => format!(
            "{}: failed{}: {why}",
            s.name,
            took.replace(" in ", " after ")
        ),
        (state, Some(why)) => format!("{}: {state}: {why}", s.name),
        (state, None) => format!("{}: {state}", s.name),
    };
    let sandbox = match s.sandbox {
        None => String::new(),
        Some(b) => match b.why_off() {
            None => format!(" · sandbox: {}", b.name()),
            Some(why) => format!(" · sandbox: off ({why})"),
        },
    };
    // The sandbox goes before the target, which may be long enough to be cut.
    let mut lines = vec![
        one_line(&head, 300),
        one_line(&format!("  {}{sandbox} · {}", s.source, s.target), 300),
    ];
    for (name, description) in &s.tools {
        lines.push(format!(
            "  {name}  {}",
            one_line(
                &crate::term::collapse_whitespace(description),
                DESCRIPTION_CHARS
            )
        ));
    }
    lines
}
