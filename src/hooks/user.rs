//! The user's command hooks as one `Hook`: picks the entries an event matches, runs each
//! distinct command once and concurrently, and merges what they say.

use std::collections::HashSet;

use futures_util::future::{join_all, BoxFuture};

use super::command::{input_json, interpret, run, Exit, Shell};
use super::config::{Entry, EventKind};
use super::{Hook, HookContext, HookEvent, HookOutput, Verdict};
use crate::events::{Event, Events};
use crate::tools::output::bound;

pub struct CommandHooks {
    entries: Vec<Entry>,
    /// Where failure and timeout lines go: the run's views, as warnings of the agent whose
    /// event it was.
    events: Events,
    /// Characters of each text the hooks give back (reason, context, stop reason).
    output_chars: usize,
    /// The shell each command runs with, found once for the run (`command::shell`).
    shell: Shell,
}

impl CommandHooks {
    pub fn new(entries: Vec<Entry>, events: Events, shell: Shell) -> Self {
        CommandHooks {
            entries,
            events,
            output_chars: crate::tools::ToolLimits::default().output_chars,
            shell,
        }
    }

    /// Cuts what the hooks say to `chars` characters, like tool output (`[tools]
    /// output_chars`).
    pub fn with_output_chars(mut self, chars: usize) -> Self {
        self.output_chars = chars;
        self
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The events some entry listens to, each once, in the order first listed.
    pub fn events(&self) -> Vec<&'static str> {
        let mut names: Vec<&'static str> = Vec::new();
        for e in &self.entries {
            if !names.contains(&e.event.name()) {
                names.push(e.event.name());
            }
        }
        names
    }

    /// The entries `event` runs, the first of each command per folder only: the same command
    /// listed in the user's and the project's file (or under two matchers) runs once. The
    /// same text run in two folders (a user hook from a subfolder, a project hook from the
    /// project root) may be two different scripts, so both run.
    fn selected(&self, event: &HookEvent<'_>, cx: &HookContext) -> Vec<&Entry> {
        let mut seen = HashSet::new();
        self.entries
            .iter()
            .filter(|e| e.applies_to(event, cx))
            .filter(|e| seen.insert((e.dir.as_path(), e.command.as_str())))
            .collect()
    }
}

impl Hook for CommandHooks {
    fn handle<'a>(
        &'a self,
        event: &'a HookEvent<'a>,
        cx: &'a HookContext,
    ) -> BoxFuture<'a, HookOutput> {
        let selected = self.selected(event, cx);
        Box::pin(async move {
            if selected.is_empty() {
                return HookOutput::default();
            }
            let kind = EventKind::of(event);
            let input = input_json(event, cx).to_string();
            let outputs = join_all(selected.into_iter().map(|e| {
                let input = input.as_bytes();
                async move {
                    let began = std::time::Instant::now();
                    let ran = run(&self.shell, &e.command, input, &e.dir, e.timeout).await;
                    let took = began.elapsed();
                    let (out, lines) = interpret(kind, &ran, &e.command);
                    // Every run is said, not only the failures: a hook that runs unseen, or
                    // adds to the task unseen, is a surprise.
                    let ended = match &ran.exit {
                        Exit::Code(c) => format!("exit {c}"),
                        Exit::Signal(s) => format!("signal {s}"),
                        Exit::TimedOut(_) => "timed out".to_string(),
                        Exit::NotStarted(_) => "not started".to_string(),
                    };
                    self.events.emit(
                        &cx.scope,
                        &Event::HookRan {
                            event: kind.name(),
                            command: &e.command,
                            ended: &ended,
                            took,
                            // JSON is hx's to read; plain text is the hook talking to the user.
                            stdout: if ran.stdout.trim_start().starts_with('{') {
                                ""
                            } else {
                                &ran.stdout
                            },
                            stderr: &ran.stderr,
                            context_chars: out
                                .additional_context
                                .as_ref()
                                .map(|c| c.chars().count()),
                        },
                    );
                    for l in lines {
                        self.events.warn(&cx.scope, &l);
                    }
                    out
                }
            }))
            .await;
            bounded(merge(outputs), self.output_chars)
        })
    }
}

/// What the hooks said, each text cut like tool output: a hook may print a megabyte (see
/// `command::MAX_OUTPUT`), and all of it would otherwise reach the model and the terminal.
/// `updatedInput` is left whole: it is the arguments of a call, which the tool bounds.
pub fn bounded(mut out: HookOutput, limit: usize) -> HookOutput {
    let cut = |t: String| bound(t, limit);
    out.verdict = out.verdict.map(|v| match v {
        Verdict::Block(reason) => Verdict::Block(cut(reason)),
        other => other,
    });
    out.additional_context = out.additional_context.map(cut);
    out.stop_run = out.stop_run.map(cut);
    out
}

/// Combines the outputs of several commands as `Hooks` combines hooks: the first Block wins
/// and beats any Allow, the last updated input wins, every context is kept in order, the first
/// request to stop the run wins.
pub fn merge(outputs: Vec<HookOutput>) -> HookOutput {
    let mut merged = HookOutput::default();
    let mut context: Vec<String> = Vec::new();
    for out in outputs {
        merged.verdict = match (merged.verdict.take(), out.verdict) {
            (Some(Verdict::Block(r)), _) => Some(Verdict::Block(r)),
            (_, Some(Verdict::Block(r))) => Some(Verdict::Block(r)),
            (a, b) => a.or(b),
        };
        if out.updated_input.is_some() {
            merged.updated_input = out.updated_input;
        }
        context.extend(out.additional_context);
        if merged.stop_run.is_none() {
            merged.stop_run = out.stop_run;
        }
    }
    if !context.is_empty() {
        merged.additional_context = Some(context.join("\n\n"));
    }
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn out(verdict: Option<Verdict>) -> HookOutput {
        HookOutput {
            verdict,
            ..HookOutput::default()
        }
    }

    #[test]
    fn first_block_wins_and_beats_allow() {
        let b = |r: &str| Some(Verdict::Block(r.into()));
        let m = merge(vec![
            out(Some(Verdict::Allow)),
            out(b("one")),
            out(b("two")),
        ]);
        assert_eq!(m.verdict, b("one"));
        let m = merge(vec![out(None), out(Some(Verdict::Allow)), out(None)]);
        assert_eq!(m.verdict, Some(Verdict::Allow));
        assert_eq!(merge(vec![]), HookOutput::default());
    }

    #[test]
    fn one_run_per_command_and_folder() {
        let entry = |command: &str, dir: &str| Entry {
            event: EventKind::Stop,
            matcher: crate::hooks::config::Matcher::All,
            command: command.into(),
            timeout: std::time::Duration::from_secs(1),
            source: "/hooks.json".into(),
            dir: dir.into(),
        };
        let hooks = CommandHooks::new(
            vec![
                entry("./check.sh", "/proj/sub"),
                entry("./check.sh", "/proj"),
                entry("./check.sh", "/proj/sub"),
                entry("other", "/proj"),
            ],
            Events::default(),
            Ok("/bin/sh".into()),
        );
        let stats = crate::session::RunStats::default();
        let event = HookEvent::Stop {
            stats: &stats,
            stop_hook_active: false,
        };
        let picked: Vec<(&str, &str)> = hooks
            .selected(&event, &HookContext::default())
            .iter()
            .map(|e| (e.command.as_str(), e.dir.to_str().unwrap_or("")))
            .collect();
        assert_eq!(
            picked,
            [
                ("./check.sh", "/proj/sub"),
                ("./check.sh", "/proj"),
                ("other", "/proj")
            ]
        );
    }

    #[test]
    fn every_text_a_hook_gives_is_cut_but_not_the_input() {
        let long = "x".repeat(10_000);
        let out = bounded(
            HookOutput {
                verdict: Some(Verdict::Block(long.clone())),
                updated_input: Some(json!({ "command": long })),
                additional_context: Some(long.clone()),
                stop_run: Some(long.clone()),
            },
            100,
        );
        let cut = format!(
            "{}\n... [9900 characters omitted] ...\n{}",
            "x".repeat(50),
            "x".repeat(50)
        );
        assert_eq!(out.verdict, Some(Verdict::Block(cut.clone())));
        assert_eq!(out.additional_context.as_deref(), Some(cut.as_str()));
        assert_eq!(out.stop_run.as_deref(), Some(cut.as_str()));
        assert_eq!(out.updated_input, Some(json!({ "command": long })));
    }

    #[test]
    fn inputs_contexts_and_stops() {
        let a = HookOutput {
            updated_input: Some(json!({"a": 1})),
            additional_context: Some("first".into()),
            stop_run: Some("stop 1".into()),
            ..HookOutput::default()
        };
        let b = HookOutput {
            updated_input: Some(json!({"b": 2})),
            additional_context: Some("second".into()),
            stop_run: Some("stop 2".into()),
            ..HookOutput::default()
        };
        let m = merge(vec![a, HookOutput::default(), b]);
        assert_eq!(m.updated_input, Some(json!({"b": 2})));
        assert_eq!(m.additional_context.as_deref(), Some("first\n\nsecond"));
        assert_eq!(m.stop_run.as_deref(), Some("stop 1"));
    }
}
