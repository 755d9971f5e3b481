//! `hx skills eval NAME`: the skill and its eval set found and checked before anything
//! starts, the eval run in the guarded runtime (a run's MCP servers may start), the report
//! printed (see `crate::app::skill_eval`).

use std::sync::Arc;

use super::{exit, fail, show_failure, SkillsEvalArgs};
use crate::app::build::build_editing_skills;
use crate::app::runtime::Guard;
use crate::app::signals::Signals;
use crate::app::skill_eval::{self, Report, Settings};
use crate::app::{self};
use crate::config::{process_env, Flags};
use crate::events::{Event, Events, Observer, Scope};
use crate::session::Recorder;
use crate::term::Term;
use crate::text::{count, one_line, Warning};

/// Characters of a query in the text report (`--json` has them whole).
const QUERY_CHARS: usize = 100;

pub(super) fn eval_command(args: SkillsEvalArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let home = crate::paths::home_dir();
    // Everything that can be wrong with the command line, before the config asks for a key
    // and long before a request is paid for.
    let registry = crate::skills::discover(&cwd, home.as_deref()).registry;
    let Some(skill) = registry.get(&args.name) else {
        let why = crate::skills::discover::not_loaded(&registry, &cwd, home.as_deref(), &args.name)
            .unwrap_or_else(|| {
                format!("no skill is named {}; hx skills list lists them", args.name)
            });
        return fail(exit::USAGE, why);
    };
    if !skill.model_invocable {
        return fail(
            exit::USAGE,
            format!(
                "skill {} says disable-model-invocation: true, so it is not in the catalog and \
                 the model never loads it; only the user invokes it, as /{}",
                skill.name, skill.name
            ),
        );
    }
    let tried = match args
        .description
        .as_deref()
        .map(skill_eval::description_to_try)
    {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => return fail(exit::USAGE, e),
    };
    let path = match args.eval_set.clone() {
        Some(p) => p,
        None => match skill_eval::skill_eval_set(skill) {
            Ok(Some(p)) => p,
            Ok(None) => {
                return fail(
                    exit::USAGE,
                    format!(
                        "skill {} has no eval set: give one with --eval-set FILE, or write {} \
                         (a JSON list of {{\"query\": \"...\", \"should_trigger\": true|false}})",
                        skill.name,
                        skill.folder.join(skill_eval::EVAL_SET_FILE).display()
                    ),
                )
            }
            Err(e) => return fail(exit::USAGE, e),
        },
    };
    let cases = match skill_eval::read_eval_set(&path) {
        Ok(c) => c,
        Err(e) => return fail(exit::USAGE, e),
    };
    let flags = Flags {
        provider: args.provider.clone(),
        model: args.model.clone(),
        effort: args.effort,
        ..Flags::default()
    };
    let app::config::Loaded { config, warnings } =
        match app::config::load_for_run(&cwd, &env, &flags) {
            Ok(l) => l,
            Err(f) => return show_failure(f),
        };
    let term = super::shared_term();
    for w in warnings {
        term.line(&w.to_string());
    }
    let settings = Settings {
        runs: args.runs,
        jobs: usize::from(args.jobs),
        threshold: args.threshold,
    };
    let requests = cases.len() as u64 * u64::from(settings.runs);
    term.line(&format!(
        "hx: skill {}: {} x {} = {} to {}, {} at a time",
        skill.name,
        queries(cases.len()),
        count(u64::from(settings.runs), "run"),
        count(requests, "request"),
        config.model,
        queries(settings.jobs.min(cases.len())),
    ));
    let name = skill.name.clone();
    let description = tried.clone().unwrap_or_else(|| skill.description.clone());
    let edit = |r| skill_eval::edited(r, &name, tried.as_deref(), args.only);
    let shell_env = config.shell_env.clone();
    let guard = Guard {
        shell_env: &shell_env,
        keep_background: false,
    };
    let json = args.json;
    guard
        .run(
            || {},
            || async {
                let events = Events::new(Arc::new(Lines(term.clone())));
                let mut warnings = Vec::new();
                // No session (a recorder without a store) and no approver: nothing runs.
                let built = build_editing_skills(
                    &config,
                    &cwd,
                    &env,
                    events,
                    Recorder::default(),
                    "hx-skills-eval",
                    crate::app::build::Asks::default(),
                    &edit,
                    &mut warnings,
                );
                for w in warnings {
                    term.line(&w.to_string());
                }
                let agent = match built {
                    Ok(b) => {
                        // The catalog as the system prompt has it (`hx context`'s parts).
                        let catalog = b.parts.iter().find(|(what, _)| what == "skill catalog");
                        let catalog = catalog.map_or(b.agent.system_prompt(), |p| &p.1);
                        if let Some(note) = skill_eval::catalog_note(catalog, &name, &description) {
                            term.line(&Warning::new(note).to_string());
                        }
                        b.agent
                    }
                    Err(e) => return fail(exit::USAGE, e),
                };
                let wait = term.spinner().wait(&format!("0/{requests} requests"));
                let done = |n: u32| wait.relabel(&format!("{n}/{requests} requests"));
                let work =
                    skill_eval::evaluate(&agent, &name, &description, &cases, settings, &done);
                let ended = match Signals::cancelling() {
                    Ok(mut signals) => tokio::select! {
                        r = work => Ok(r),
                        sig = signals.recv() => Err(sig),
                    },
                    Err(_) => Ok(work.await),
                };
                drop(wait);
                match ended {
                    Ok(Ok(report)) => show(&term, &report, json),
                    Ok(Err(e)) => fail(exit::FAILED, e),
                    Err(sig) => {
                        term.line(&format!(
                            "hx: interrupted by {}; no result",
                            crate::process::signal_name(sig)
                        ));
                        exit::signalled(sig)
                    }
                }
            },
        )
        .unwrap_or_else(show_failure)
}

/// The report on stdout; exit 0 when every query passed, 1 otherwise.
fn show(term: &Term, report: &Report, json: bool) -> i32 {
    if json {
        match serde_json::to_string_pretty(&report.to_json()) {
            Ok(text) => term.out_line(&text),
            Err(e) => return fail(exit::FAILED, format!("cannot encode JSON: {e}")),
        }
    } else {
        for line in text(report) {
            term.out_line(&line);
        }
    }
    if report.all_passed() {
        exit::ANSWERED
    } else {
        exit::FAILED
    }
}

/// The text report: a line per query, then the figures.
fn text(report: &Report) -> Vec<String> {
    let mut lines: Vec<String> = report
        .results
        .iter()
        .map(|r| {
            format!(
                "{}  {:>7}  {:<18}  {}",
                if r.pass { "PASS" } else { "FAIL" },
                format!("{}/{}", r.triggers, r.runs),
                if r.should_trigger {
                    "should trigger"
                } else {
                    "should not trigger"
                },
                one_line(&r.query, QUERY_CHARS)
            )
        })
        .collect();
    let s = &report.summary;
    let percent = |x: f64| format!("{:.0}%", x * 100.0);
    lines.push(format!(
        "{}: {} of {} passed (threshold {}); precision {}, recall {}",
        report.skill_name,
        s.passed,
        queries(s.total),
        report.threshold,
        percent(s.precision),
        percent(s.recall),
    ));
    let u = &report.usage;
    let costs = crate::events::Costs {
        all: report.spend,
        ..Default::default()
    };
    lines.push(format!(
        "{}: prompt_tokens={}, cache_hit_tokens={}, completion_tokens={}, {}",
        count(u64::from(report.requests), "request"),
        u.prompt_tokens,
        u.prompt_cache_hit_tokens,
        u.completion_tokens,
        crate::events::cost_words(u, &costs)
    ));
    lines
}

/// `1 query`, `3 queries` (`text::count` adds an s).
fn queries(n: usize) -> String {
    if n == 1 {
        "1 query".into()
    } else {
        format!("{n} queries")
    }
}

/// What the eval shows of its agent's events: warnings (an MCP server that did not start)
/// and retries; it emits no others.
struct Lines(Arc<Term>);

impl Observer for Lines {
    fn event(&self, _scope: &Scope, event: &Event<'_>) {
        match event {
            Event::Warning(w) => self.0.line(&w.to_string()),
            Event::Retrying {
                attempt,
                max,
                delay,
                why,
            } => self.0.line(&format!(
                "hx: {why}; retry {attempt}/{max} in {:.1} s",
                delay.as_secs_f64()
            )),
            _ => {}
        }
    }
}
