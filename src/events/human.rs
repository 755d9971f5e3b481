//! The view for a person: the trace on stderr, one line per step in the format the README
//! documents, the answer on stdout, and a spinner while hx waits.
//!
//! On a terminal the answer streams to stdout as it arrives. When stdout is piped only the
//! final answer is printed, once, at the end of the turn; text of responses that also call
//! tools is interim and goes to stderr when its response ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::Value;

use super::{brief, Event, GoalCheck, Observer, Scope, Start, TurnEnd};
use crate::model::{AssistantTurn, ToolCall, Usage};
use crate::session::RunStats;
use crate::term::{one_line, Spinner, Term, WaitGuard};
use crate::text::thousands;
use crate::tools::todo;
use crate::tools::{About, Shown, ToolResult};

/// Lines of a tool result shown under its PostToolUse line: the first ones...
const PREVIEW_HEAD: usize = 3;
/// ...and the last ones, where a failing command's error and its exit code are.
const PREVIEW_TAIL: usize = 2;
/// Characters of one preview line.
const PREVIEW_LINE_CHARS: usize = 200;
/// Characters of one argument value on the `> NAME k=v` line.
const VALUE_CHARS: usize = 80;

/// How much of the run the trace shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Verbosity {
    /// No trace at all; warnings and errors only (`-q`).
    Quiet,
    /// What happened: each call's `>` line, a short line under a call that failed or was
    /// refused, the plan, the Stop line; the `[HOOK]` lines of the events the user hooked.
    #[default]
    Normal,
    /// Every hook step as a `[HOOK]` line, tool results previewed (`trace = "hooks"`).
    Hooks,
    /// As `Hooks`, with whole tool results instead of previews, every retry in full (`-v`).
    Verbose,
}

pub struct HumanView {
    term: Arc<Term>,
    spinner: Spinner,
    show_reasoning: bool,
    verbosity: Verbosity,
    state: Mutex<State>,
}

/// What the view remembers between events.
#[derive(Default)]
struct State {
    /// The main agent's text of the response being received, held back when stdout is piped.
    pending: String,
    /// Text of the current answer reached stdout while streaming.
    streamed_any: bool,
    in_reasoning: bool,
    /// The streamed text on stdout does not end with a newline yet.
    line_open: bool,
    /// The final answer is on stdout already.
    answer_streamed: bool,
    /// Tokens of every request of the turn, subagents' included.
    usage: Usage,
    has_usage: bool,
    costs: super::Costs,
    /// What the main agent is waiting for: `model`, or a call id.
    waits: HashMap<String, WaitGuard>,
    /// The reason of the last retry, so a repeated one is said once.
    last_retry: Option<String>,
    /// The events the user's hooks listen to: their steps are traced at every level.
    hooked: Vec<String>,
    /// Calls the hooks or the guard refused, whose refusal line said how they ended.
    refused: std::collections::HashSet<String>,
    /// The last call started, by scope: a call that ends right after its own `>` line needs
    /// no name on its result line.
    last_started: HashMap<String, String>,
}

const MODEL_WAIT: &str = "\u{0}model";
const COMPACTION_WAIT: &str = "\u{0}compaction";

impl HumanView {
    pub fn new(term: Arc<Term>, show_reasoning: bool, verbosity: Verbosity) -> Self {
        let spinner = if verbosity == Verbosity::Quiet {
            Spinner::off()
        } else {
            term.spinner()
        };
        HumanView {
            term,
            spinner,
            show_reasoning,
            verbosity,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn tracing(&self) -> bool {
        self.verbosity != Verbosity::Quiet
    }

    /// Whether the `[HOOK]` line of `event` is shown: at `Hooks` and above, or when the user
    /// hooked that event.
    fn hook_line(&self, event: &str) -> bool {
        self.tracing()
            && (self.verbosity >= Verbosity::Hooks
                || self.state().hooked.iter().any(|e| e == event))
    }

    /// A trace line (or lines), each line starting with the scope's prefix.
    fn trace(&self, text: &str) {
        if self.tracing() {
            self.term.line(text);
        }
    }

    fn end_reasoning(&self, st: &mut State) {
        if st.in_reasoning {
            self.term.err_raw("\n", false);
            st.in_reasoning = false;
        }
    }

    fn started(&self, s: &Start<'_>) {
        let mut line = format!(
            "hx {} · {} · {} · {}",
            env!("CARGO_PKG_VERSION"),
            s.model,
            s.provider,
            crate::model::client::shown_url(s.base_url)
        );
        if s.resumed {
            line.push_str(&format!(" · continuing session {}", s.session_id));
        }
        self.trace(&line);
    }

    fn text(&self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let mut st = self.state();
        self.end_reasoning(&mut st);
        if self.term.stdout_is_tty() {
            st.waits.remove(MODEL_WAIT);
            self.term.out_raw(delta);
            st.streamed_any = true;
            st.line_open = !delta.ends_with('\n');
        } else {
            st.pending.push_str(delta);
        }
    }

    fn reasoning(&self, delta: &str) {
        let mut st = self.state();
        if !self.show_reasoning {
            if let Some(w) = st.waits.get(MODEL_WAIT) {
                w.relabel("thinking");
            }
            return;
        }
        if delta.is_empty() {
            return;
        }
        st.waits.remove(MODEL_WAIT);
        if !st.in_reasoning && !self.term.stderr_is_rich() {
            // Without dimming, nothing else would tell the reasoning from the answer.
            self.term.err_raw("thinking: ", false);
        }
        st.in_reasoning = true;
        self.term.err_raw(delta, true);
    }

    fn retrying(&self, scope: &Scope, attempt: u32, max: u32, delay: Duration, why: &str) {
        let mut st = self.state();
        let p = &scope.prefix;
        let repeated = st.last_retry.as_deref() == Some(why);
        st.last_retry = Some(why.to_string());
        let when = format!("retry {attempt}/{max} in {:.1} s", delay.as_secs_f64());
        if scope.is_subagent() {
            if self.tracing() && !(repeated && self.verbosity != Verbosity::Verbose) {
                self.term.line(&format!("{p}hx: {why}; {when}"));
            }
            return;
        }
        if let Some(w) = st.waits.get(MODEL_WAIT) {
            w.relabel(&format!("retry {attempt}/{max}"));
        }
        self.end_reasoning(&mut st);
        if st.line_open {
            self.term.out_raw("\n");
        }
        let discarded = if st.streamed_any || st.line_open {
            "; the partial output above is discarded"
        } else {
            ""
        };
        if self.tracing() {
            if repeated && self.verbosity != Verbosity::Verbose && discarded.is_empty() {
                self.term.line(&format!("hx: {when} (same error)"));
            } else {
                self.term.line(&format!("hx: {why}; {when}{discarded}"));
            }
        }
        st.pending.clear();
        st.streamed_any = false;
        st.line_open = false;
    }

    fn response(&self, scope: &Scope, turn: &AssistantTurn) {
        let mut st = self.state();
        if let Some(u) = &turn.usage {
            st.usage.add(u);
            st.has_usage = true;
            st.costs.count(scope, turn.cost);
        }
        if scope.is_subagent() {
            return;
        }
        st.waits.remove(MODEL_WAIT);
        let has_calls = !turn.tool_calls.is_empty();
        self.end_reasoning(&mut st);
        if self.term.stdout_is_tty() {
            // Close the line now, before the hooks' lines (Stop) reach the same screen.
            if st.line_open {
                self.term.out_raw("\n");
            }
            if has_calls {
                st.streamed_any = false;
            }
        } else if has_calls && !st.pending.trim().is_empty() && self.tracing() {
            self.term.line(st.pending.trim_end());
        }
        st.answer_streamed = self.term.stdout_is_tty() && st.streamed_any;
        st.line_open = false;
        st.pending.clear();
    }

    fn tool_started(&self, scope: &Scope, call: &ToolCall, args: Option<&Value>) {
        let p = &scope.prefix;
        let mut text = format!("{p}> {}", call_summary(&call.name, args));
        if self.hook_line("PreToolUse") {
            text.push_str(&format!(
                "\n{p}[HOOK] PreToolUse {}({})",
                call.name,
                compact_args(call, args, self.verbosity == Verbosity::Verbose)
            ));
        }
        self.trace(&text);
        let mut st = self.state();
        st.last_started.insert(scope.key.clone(), call.id.clone());
        if !scope.is_subagent() {
            let wait = self.spinner.wait(&format!("running {}", call.name));
            st.waits.insert(call.id.clone(), wait);
        }
    }

    fn tool_blocked(
        &self,
        scope: &Scope,
        call: &ToolCall,
        args: Option<&Value>,
        by: &str,
        why: &str,
    ) {
        let mut st = self.state();
        if !scope.is_subagent() {
            st.waits.remove(&call.id);
        }
        st.refused.insert(call.id.clone());
        let named = st.last_started.get(&scope.key) != Some(&call.id);
        drop(st);
        let p = &scope.prefix;
        if self.hook_line("PreToolUse") {
            // The guard stands in the PreToolUse step too, but it is not a hook the user
            // wrote: the line says which refused.
            let who = if by == "guard" { " (guard)" } else { "" };
            self.trace(&format!(
                "{p}[HOOK] PreToolUse blocked {}({}){who}: {why}",
                call.name,
                compact_args(call, args, self.verbosity == Verbosity::Verbose)
            ));
        } else {
            self.trace(&result_line(p, &brief::refused(by, why), named, call, args));
        }
    }

    /// A round of `--until`: one line, and for a failure the end of what the command said
    /// (the whole output with -v), dimmed as a result is.
    fn goal_checked(&self, scope: &Scope, check: &GoalCheck<'_>) {
        if !self.tracing() {
            return;
        }
        let p = &scope.prefix;
        let how = match (check.passed, check.exit_code) {
            (true, _) => "passed".to_string(),
            (false, Some(code)) => format!("failed, exit {code}"),
            (false, None) => "failed".to_string(),
        };
        self.term.line(&format!(
            "{p}goal: {} · {how} · round {} of {}",
            one_line(check.command, 120),
            check.round,
            check.max_rounds
        ));
        if check.passed {
            return;
        }
        let shown = match self.verbosity {
            Verbosity::Verbose => prefixed(check.output, p),
            _ => preview(check.output, p),
        };
        if !shown.is_empty() {
            self.term.dim_line(&shown);
        }
    }

    fn tool_finished(
        &self,
        scope: &Scope,
        call: &ToolCall,
        args: Option<&Value>,
        tool: &About,
        result: &ToolResult,
    ) {
        let mut st = self.state();
        if !scope.is_subagent() {
            st.waits.remove(&call.id);
        }
        let refused = st.refused.remove(&call.id);
        let named = st.last_started.get(&scope.key) != Some(&call.id);
        drop(st);
        if !self.tracing() {
            return;
        }
        let p = &scope.prefix;
        let hook_line = self.hook_line("PostToolUse");
        if hook_line {
            self.term.line(&format!(
                "{p}[HOOK] PostToolUse {} output_chars={}",
                call.name,
                result.content.chars().count()
            ));
        }
        // The plan is what a person follows: shown whole, once, as they read it (the
        // in-progress item in its active form).
        if tool.shown == Shown::Plan && !result.is_error {
            if let Some(Ok(items)) = args.map(todo::parse_todos) {
                let list = todo::render(&items, true);
                self.term.line(&prefixed(&list, p));
                return;
            }
        }
        let shown = match self.verbosity {
            Verbosity::Verbose => prefixed(&result.content, p),
            Verbosity::Hooks => preview(&result.content, p),
            // Under a hook's line of its own, the result's end stays where it was.
            _ if hook_line => String::new(),
            // A refused call's line said how it ended.
            _ if refused => String::new(),
            _ => brief::ended(tool, result)
                .map(|line| result_line(p, &line, named, call, args))
                .unwrap_or_default(),
        };
        if !shown.is_empty() {
            self.term.dim_line(&shown);
        }
    }

    /// The compaction's waits end: its own, and the summary request's.
    fn end_compaction_waits(&self) {
        let mut st = self.state();
        st.waits.remove(COMPACTION_WAIT);
        st.waits.remove(MODEL_WAIT);
    }

    fn stopped(&self, scope: &Scope, stats: &RunStats, elapsed: Duration, subagent: bool) {
        let mut st = self.state();
        let name = if subagent { "SubagentStop" } else { "Stop" };
        let mut line = format!(
            "{}[HOOK] {name}: turns={}, tool_calls={}, blocked={}",
            scope.prefix, stats.turns, stats.tool_calls, stats.blocked
        );
        // A subagent's line has its own figures; the main agent's tokens are every request's
        // of the turn, its subagents' included, since all of them are paid for.
        let (usage, has_usage, costs) = if subagent {
            let costs = super::Costs {
                all: stats.cost,
                ..Default::default()
            };
            (stats.usage, stats.has_usage, costs)
        } else {
            st.waits.clear();
            (st.usage, st.has_usage, st.costs)
        };
        if has_usage {
            line.push_str(&format!(
                ", prompt_tokens={}, cache_hit_tokens={}, completion_tokens={}, {}",
                usage.prompt_tokens,
                usage.prompt_cache_hit_tokens,
                usage.completion_tokens,
                super::cost_words(&usage, &costs)
            ));
        }
        line.push_str(&stats.occasional());
        line.push_str(&format!(", duration={:.1}s", elapsed.as_secs_f64()));
        drop(st);
        self.trace(&line);
    }

    fn turn_ended(&self, end: &TurnEnd) {
        let mut st = self.state();
        st.waits.clear();
        match end {
            TurnEnd::Answered(text) => {
                // A streamed answer is on the screen already, its line closed.
                if !st.answer_streamed && !text.is_empty() {
                    self.term
                        .out_raw(&format!("{}\n", text.trim_end_matches('\n')));
                }
            }
            TurnEnd::Failed { message, .. } => self.term.line(&format!("hx: {message}")),
        }
        st.answer_streamed = false;
        st.streamed_any = false;
    }
}

impl Observer for HumanView {
    fn event(&self, scope: &Scope, event: &Event<'_>) {
        let main = !scope.is_subagent();
        match event {
            Event::Started(s) => self.started(s),
            Event::Warning(w) => self.term.line(&prefixed(&w.to_string(), &scope.prefix)),
            Event::Error(message) => self.term.line(&format!("hx: {message}")),
            // Its first line says what happened; the model reads the rest.
            Event::Noted(text) => self.trace(&prefixed(
                text.lines().next().unwrap_or_default(),
                &scope.prefix,
            )),
            Event::Steered(text) => self.trace(&prefixed(
                &format!("› steer: {}", crate::text::one_line(text, 100)),
                &scope.prefix,
            )),
            Event::TurnStarted => {
                let mut st = self.state();
                st.usage = Usage::default();
                st.has_usage = false;
                st.costs = Default::default();
                st.last_retry = None;
            }
            Event::PromptSubmitted { cwd } if self.hook_line("UserPromptSubmit") => {
                self.trace(&format!(
                    "{}[HOOK] UserPromptSubmit cwd={}",
                    scope.prefix,
                    cwd.display()
                ))
            }
            Event::UserHooks(events) => {
                self.state().hooked = events.iter().map(|e| e.to_string()).collect();
            }
            Event::RequestStarted if main => {
                let wait = self.spinner.wait("waiting for the model");
                self.state().waits.insert(MODEL_WAIT.into(), wait);
            }
            Event::Text(delta) if main => self.text(delta),
            Event::Reasoning(delta) if main => self.reasoning(delta),
            Event::Retrying {
                attempt,
                max,
                delay,
                why,
            } => self.retrying(scope, *attempt, *max, *delay, why),
            Event::Response(turn) => self.response(scope, turn),
            Event::ToolStarted { call, args, .. } => self.tool_started(scope, call, *args),
            Event::ToolBlocked {
                call,
                args,
                by,
                reason,
                ..
            } => self.tool_blocked(scope, call, *args, by, reason),
            Event::ToolFinished {
                call,
                args,
                tool,
                result,
            } => self.tool_finished(scope, call, *args, tool, result),
            Event::Stopped {
                stats,
                elapsed,
                subagent,
            } => self.stopped(scope, stats, *elapsed, *subagent),
            Event::CompactionStarted { trigger, tokens } => {
                // Hooks match `auto` or `manual` (Claude Code's words): an overflow is `auto`.
                let hook = if *trigger == "manual" {
                    "manual"
                } else {
                    "auto"
                };
                if self.hook_line("PreCompact") {
                    self.trace(&format!(
                        "{}[HOOK] PreCompact {hook} tokens={tokens}",
                        scope.prefix
                    ));
                }
                if main {
                    let wait = self.spinner.wait("compacting");
                    self.state().waits.insert(COMPACTION_WAIT.into(), wait);
                }
            }
            Event::SummaryUsage(u, cost) => {
                let mut st = self.state();
                st.usage.add(u);
                st.has_usage = true;
                st.costs.count(scope, *cost);
            }
            Event::FilesChanged {
                checkpoint,
                changes,
            } => {
                let n = changes.paths.len();
                self.trace(&format!(
                    "{}{n} file{} changed, +{} -{} (hx diff --turn {checkpoint}; undo: hx rewind {checkpoint})",
                    scope.prefix,
                    if n == 1 { "" } else { "s" },
                    changes.added,
                    changes.removed
                ));
            }
            Event::Compacted {
                before,
                after,
                detail,
                ..
            } => {
                if main {
                    self.end_compaction_waits();
                }
                self.trace(&format!(
                    "{}compacted: {} → {} tokens ({detail})",
                    scope.prefix,
                    thousands(*before),
                    thousands(*after)
                ));
            }
            // Its reason is in the warning or the error that goes with it.
            Event::CompactionFailed { .. } => {
                if main {
                    self.end_compaction_waits();
                }
            }
            Event::HookRan {
                event,
                command,
                ended,
                took,
                stdout,
                stderr,
                context_chars,
            } => {
                let p = &scope.prefix;
                let context = context_chars
                    .map(|n| format!(" · its output went into the task ({n} chars)"))
                    .unwrap_or_default();
                let mut text = format!(
                    "{p}hook {event}: {} · {ended} · {} ms{context}",
                    one_line(command, 120),
                    took.as_millis()
                );
                if self.verbosity == Verbosity::Verbose {
                    let said = stdout.lines().chain(stderr.lines());
                    for l in said.filter(|l| !l.trim().is_empty()) {
                        text.push_str(&format!("\n{p}  | {}", one_line(l, 300)));
                    }
                }
                self.trace(&text);
            }
            Event::GoalChecked(check) => self.goal_checked(scope, check),
            Event::TurnEnded(end) => self.turn_ended(end),
            Event::SessionSaved { short, .. } => self.trace(&format!(
                "hx: session {short} · continue with: hx agent -r {short} \"...\""
            )),
            Event::RequestStarted
            | Event::Text(_)
            | Event::Reasoning(_)
            | Event::PromptSubmitted { .. } => {}
        }
    }
}

/// A call's result line, indented under its `>` line; `named` when other calls were started
/// since, so the line says which call it is about.
fn result_line(
    prefix: &str,
    line: &str,
    named: bool,
    call: &ToolCall,
    args: Option<&Value>,
) -> String {
    match named {
        true => format!(
            "{prefix}  {}: {line}",
            one_line(&call_summary(&call.name, args), NAMED_CHARS)
        ),
        false => format!("{prefix}  {line}"),
    }
}

/// Characters of the call named on a result line that does not follow its `>` line.
const NAMED_CHARS: usize = 60;

/// Each line of `text` with `prefix` before it.
fn prefixed(text: &str, prefix: &str) -> String {
    if prefix.is_empty() {
        return text.to_string();
    }
    text.lines()
        .map(|l| format!("{prefix}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The arguments as compact JSON; the raw text when they are not JSON.
/// Characters of a call's arguments on its `PreToolUse` line, unless `-v`: a `write_file`
/// would print the whole file.
const ARGS_CHARS: usize = 200;

/// The arguments as one line of JSON; cut to [`ARGS_CHARS`] unless `whole`.
fn compact_args(call: &ToolCall, args: Option<&Value>, whole: bool) -> String {
    let text = match args {
        Some(v) => v.to_string(),
        None => call.arguments.clone(),
    };
    one_line(&text, if whole { usize::MAX } else { ARGS_CHARS })
}

/// `NAME k=v k=v` with each value on one line, cut short.
pub fn call_summary(name: &str, args: Option<&Value>) -> String {
    let mut s = name.to_string();
    if let Some(Value::Object(map)) = args {
        for (k, v) in map {
            let text = match v {
                Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            s.push_str(&format!(" {k}={}", one_line(&text, VALUE_CHARS)));
        }
    }
    s
}

/// The first and the last lines of a tool result, with the number of lines left out between
/// them: the start says what ran, the end how it ended (a failing test's error, `[exit code:
/// 3]`).
fn preview(content: &str, prefix: &str) -> String {
    let lines: Vec<&str> = content.lines().collect();
    let line = |l: &&str| format!("{prefix}{}", one_line(l, PREVIEW_LINE_CHARS));
    // Leaving out a single line would take as much room as showing it.
    if lines.len() <= PREVIEW_HEAD + PREVIEW_TAIL + 1 {
        return lines.iter().map(line).collect::<Vec<_>>().join("\n");
    }
    let omitted = lines.len() - PREVIEW_HEAD - PREVIEW_TAIL;
    let mut out: Vec<String> = lines[..PREVIEW_HEAD].iter().map(line).collect();
    out.push(format!("{prefix}... [{omitted} lines omitted] ..."));
    out.extend(lines[lines.len() - PREVIEW_TAIL..].iter().map(line));
    out.join("\n")
}

#[cfg(test)]
#[path = "human_tests.rs"]
mod tests;
