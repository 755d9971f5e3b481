//! A session as it went: its file's lines replayed in order into steps (the system prompt,
//! each user message, each model response with its calls and their results, each compaction
//! and rewind), where `record::read` gives only the history the session ended with. ATIF and
//! Markdown are both drawn from this.

use std::collections::HashSet;
use std::path::Path;

use crate::context::summary;
use crate::model::Message;
use crate::session::record::{self, Entry, Figures, Header, RequestUsage, RewindLine};
use crate::session::{Change, Compaction, Store};

/// Subagents' sessions nested inside one another at most: subagents do not start subagents,
/// so real nesting is one level; a damaged or crafted header naming a cycle stops here.
pub const MAX_NESTING: usize = 4;

/// One session replayed, with the subagents it started.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub header: Header,
    pub steps: Vec<Step>,
    /// The first run (from the header) and each later one.
    pub runs: Vec<Run>,
    /// The session's own figures (its `end` lines', and the requests of a run that did not
    /// end), as `hx sessions list` counts them: subagents' are in their own timelines.
    pub totals: Figures,
    /// What did not stop the read (a torn last line, a subagent's file left out).
    pub warnings: Vec<String>,
    pub subagents: Vec<Subagent>,
}

/// A subagent's session, and the `task` call of the parent that started it.
#[derive(Debug, Clone)]
pub struct Subagent {
    pub call_id: Option<String>,
    pub timeline: Timeline,
}

/// One run of the session: the first is the header's, each later one a `run` line's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Run {
    pub started_at: String,
    pub model: String,
    pub provider: String,
    pub effort: Option<String>,
    /// From its `end` line; none when it has none (it crashed, was killed, or still runs).
    pub outcome: Option<String>,
    pub detail: Option<String>,
    pub ended_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    System {
        text: String,
        /// Part of the history a compaction put in place of the old one, repeated from before.
        copied: bool,
    },
    User {
        text: String,
        copied: bool,
        /// hx's message holding a compaction's summary (`context::summary::HEADER`).
        summary: bool,
    },
    Agent(Turn),
    Compaction(Compacted),
    /// `hx rewind`; with the conversation, the history went back to `kept` messages, the last
    /// of which is step `last_kept` (none: nothing kept).
    Rewind {
        line: RewindLine,
        last_kept: Option<usize>,
    },
    /// A later run continued the session: `runs[i]`.
    Run(usize),
    /// `runs[i]` ended.
    End(usize),
    /// `/model` in `hx chat`.
    Model(String),
    /// `/effort` in `hx chat` (`None`: no setting).
    Effort(Option<String>),
    /// A tool result whose call is in no step (a damaged file).
    Stray {
        call_id: String,
        content: String,
    },
}

/// Who made an agent step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// A response of the model in the conversation.
    Model,
    /// The response to a compaction's summary request: its text is the summary.
    Summary,
    /// A request whose usage is on record but whose response is not (the run stopped between
    /// the two, or a summary that gave no summary).
    Unrecorded,
    /// hx itself: the calls a compaction carries over (skills loaded, the todo list), put back
    /// with their answers.
    Hx,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub by: By,
    pub content: String,
    /// `None` when empty.
    pub reasoning: Option<String>,
    pub calls: Vec<Call>,
    /// The `usage` line of the request that gave it.
    pub usage: Option<RequestUsage>,
    /// The model its request went to (the usage line's, else the session's at the time).
    pub model: String,
    pub effort: Option<String>,
    pub copied: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub id: String,
    pub name: String,
    /// As recorded: the JSON text of the arguments.
    pub arguments: String,
    pub result: Option<CallResult>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub content: String,
    /// Given when a later run was resumed: the call had none when the session stopped.
    pub at_resume: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    pub trigger: String,
    pub step: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// A prune: each result cleared, as (step, call index, the text that replaced it).
    pub cleared: Vec<(usize, usize, String)>,
    /// A replacement: the messages of the history from here on (the steps right after).
    pub replaced: Option<usize>,
    /// The summary's text, without hx's header.
    pub summary: Option<String>,
}

/// Where a message of the current history is among the steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    Step(usize),
    /// The result of call `.1` of agent step `.0`.
    Result(usize, usize),
}

/// A message of the history as it is at a point of the replay.
#[derive(Debug, Clone)]
struct Slot {
    message: Message,
    origin: Origin,
}

/// The session at `path` replayed, with its subagents' sessions found in `store` (the
/// session's own folder). A subagent's file that cannot be read is left out with a warning.
pub fn load(store: &Store, path: &Path) -> Result<Timeline, String> {
    let mut seen = HashSet::new();
    load_nested(store, path, 0, &mut seen)
}

fn load_nested(
    store: &Store,
    path: &Path,
    depth: usize,
    seen: &mut HashSet<String>,
) -> Result<Timeline, String> {
    let (loaded, entries) = record::read_entries(path).map_err(|e| e.to_string())?;
    let mut timeline = replay(loaded.header, entries, loaded.totals);
    timeline.warnings.extend(loaded.warnings);
    seen.insert(timeline.header.id.clone());
    for (h, child) in store.children(&timeline.header.id) {
        if depth + 1 > MAX_NESTING || !seen.insert(h.id.clone()) {
            timeline.warnings.push(format!(
                "subagent session {} is left out: nested deeper than {MAX_NESTING} levels, or \
                 in a cycle",
                h.id
            ));
            continue;
        }
        match load_nested(store, &child, depth + 1, seen) {
            Ok(t) => timeline.subagents.push(Subagent {
                call_id: h.parent_call_id.clone(),
                timeline: t,
            }),
            Err(e) => timeline.warnings.push(format!(
                "subagent session {} is left out: {}: {e}",
                h.id,
                child.display()
            )),
        }
    }
    Ok(timeline)
}

/// The steps of a session whose lines after the header are `entries`, in the order written.
/// The entries come from `record::read_entries`, which checked that every change of the
/// history fits it; a change that does not fit here is skipped rather than trusted.
pub fn replay(header: Header, entries: Vec<(usize, Entry)>, totals: Figures) -> Timeline {
    let mut r = Replay {
        model: header.model.clone(),
        effort: header.effort.clone(),
        steps: Vec::new(),
        history: Vec::new(),
        pending: None,
        runs: vec![Run {
            started_at: header.started_at.clone(),
            model: header.model.clone(),
            provider: header.provider.clone(),
            effort: header.effort.clone(),
            ..Run::default()
        }],
    };
    for (_, entry) in entries {
        r.entry(entry);
    }
    r.flush();
    Timeline {
        header,
        steps: r.steps,
        runs: r.runs,
        totals,
        warnings: Vec::new(),
        subagents: Vec::new(),
    }
}

struct Replay {
    /// The model and effort the session goes on with at this point.
    model: String,
    effort: Option<String>,
    steps: Vec<Step>,
    history: Vec<Slot>,
    /// A request's usage whose response has not come yet: it is written just before it.
    pending: Option<RequestUsage>,
    runs: Vec<Run>,
}

impl Replay {
    fn entry(&mut self, entry: Entry) {
        match entry {
            Entry::Message(m) => self.message(m, false),
            Entry::Usage(u) => {
                self.flush();
                self.pending = Some(u);
            }
            Entry::Compaction(c) => self.compaction(c),
            Entry::Repair(answers) => self.repair(answers),
            Entry::Rewind(line) => {
                self.flush();
                let mut last_kept = None;
                if let (true, Some(k)) = (line.conversation, line.at_message) {
                    if k <= self.history.len() {
                        self.history.truncate(k);
                    }
                    last_kept = self.history.iter().rev().map(|s| s.step()).next();
                }
                self.steps.push(Step::Rewind { line, last_kept });
            }
            Entry::Run(run) => {
                self.flush();
                if let Some(m) = &run.model {
                    self.model = m.clone();
                }
                self.effort = run.effort.clone();
                self.runs.push(Run {
                    started_at: run.started_at.unwrap_or_default(),
                    model: self.model.clone(),
                    provider: run.provider.unwrap_or_default(),
                    effort: run.effort,
                    ..Run::default()
                });
                self.steps.push(Step::Run(self.runs.len() - 1));
            }
            Entry::Model(Some(m)) => {
                self.model = m.clone();
                self.steps.push(Step::Model(m));
            }
            Entry::Model(None) => {}
            Entry::Effort(e) => {
                self.effort = e.clone();
                self.steps.push(Step::Effort(e));
            }
            Entry::End(end) => {
                self.flush();
                let i = self.runs.len() - 1;
                let run = &mut self.runs[i];
                run.outcome = Some(end.outcome);
                run.detail = end.detail;
                run.ended_at = end.ended_at;
                self.steps.push(Step::End(i));
            }
            // Between a request's usage and its response: it must not end the wait.
            Entry::Checkpoint(_) | Entry::Typed(_) | Entry::Other(_) => {}
        }
    }

    /// A usage still waiting for its response will not get one: a step of its own.
    fn flush(&mut self) {
        if let Some(u) = self.pending.take() {
            let turn = self.turn(By::Unrecorded, String::new(), None, Vec::new(), Some(u));
            self.steps.push(Step::Agent(turn));
        }
    }

    fn turn(
        &self,
        by: By,
        content: String,
        reasoning: Option<String>,
        calls: Vec<Call>,
        usage: Option<RequestUsage>,
    ) -> Turn {
        let model = usage
            .as_ref()
            .and_then(|u| u.model.clone())
            .unwrap_or_else(|| self.model.clone());
        Turn {
            by,
            content,
            reasoning: reasoning.filter(|r| !r.is_empty()),
            calls,
            usage,
            model,
            effort: self.effort.clone(),
            copied: false,
        }
    }

    /// A message appended to the history; `copied` when a compaction put it there.
    fn message(&mut self, m: Message, copied: bool) {
        let origin = match &m {
            Message::System(text) => {
                self.flush();
                self.push(Step::System {
                    text: text.clone(),
                    copied,
                })
            }
            Message::User(text) => {
                self.flush();
                let summary = summary::is_summary(&m);
                self.push(Step::User {
                    text: text.clone(),
                    copied: copied && !summary,
                    summary,
                })
            }
            Message::Assistant {
                content,
                reasoning,
                tool_calls,
            } => {
                let calls: Vec<Call> = tool_calls
                    .iter()
                    .map(|c| Call {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                        result: None,
                    })
                    .collect();
                let carried = !calls.is_empty()
                    && calls.iter().all(|c| c.id.starts_with(summary::CARRIED_ID));
                let (by, usage) = if copied {
                    (if carried { By::Hx } else { By::Model }, None)
                } else {
                    // A summary request's usage is not this response's.
                    if self.pending.as_ref().is_some_and(|u| u.request.is_some()) {
                        self.flush();
                    }
                    (By::Model, self.pending.take())
                };
                let mut turn = self.turn(by, content.clone(), reasoning.clone(), calls, usage);
                turn.copied = copied;
                self.push(Step::Agent(turn))
            }
            Message::Tool {
                tool_call_id,
                content,
            } => match self.answer(tool_call_id, content, false) {
                Some(origin) => origin,
                None => self.push(Step::Stray {
                    call_id: tool_call_id.clone(),
                    content: content.clone(),
                }),
            },
        };
        self.history.push(Slot { message: m, origin });
    }

    fn push(&mut self, step: Step) -> Origin {
        self.steps.push(step);
        Origin::Step(self.steps.len() - 1)
    }

    /// Gives `content` to the call `id` of the history's latest turn that made it and has no
    /// result yet.
    fn answer(&mut self, id: &str, content: &str, at_resume: bool) -> Option<Origin> {
        for slot in self.history.iter().rev() {
            let Origin::Step(i) = slot.origin else {
                continue;
            };
            let Some(Step::Agent(turn)) = self.steps.get_mut(i) else {
                continue;
            };
            if let Some(j) = turn
                .calls
                .iter()
                .position(|c| c.id == id && c.result.is_none())
            {
                turn.calls[j].result = Some(CallResult {
                    content: content.to_string(),
                    at_resume,
                });
                return Some(Origin::Result(i, j));
            }
        }
        None
    }

    fn repair(&mut self, answers: Vec<(usize, Message)>) {
        self.flush();
        for (at, m) in answers {
            let Message::Tool {
                tool_call_id,
                content,
            } = &m
            else {
                continue;
            };
            let origin = match self.answer(tool_call_id, content, true) {
                Some(o) => o,
                None => self.push(Step::Stray {
                    call_id: tool_call_id.clone(),
                    content: content.clone(),
                }),
            };
            // Each answer's index is the one it has once those before it are in.
            let at = at.min(self.history.len());
            self.history.insert(at, Slot { message: m, origin });
        }
    }

    fn compaction(&mut self, c: Compaction) {
        match c.change {
            Change::Cleared(cleared) => {
                self.flush();
                let mut done = Vec::new();
                for (i, text) in cleared {
                    let Some(slot) = self.history.get_mut(i) else {
                        continue;
                    };
                    if let (Message::Tool { content, .. }, Origin::Result(step, call)) =
                        (&mut slot.message, slot.origin)
                    {
                        content.clone_from(&text);
                        done.push((step, call, text));
                    }
                }
                self.steps.push(Step::Compaction(Compacted {
                    trigger: c.trigger,
                    step: c.step,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                    cleared: done,
                    replaced: None,
                    summary: None,
                }));
            }
            // Before repair lines, a resume's answers were written as a compaction holding
            // the whole repaired history: the answers are what it added.
            Change::Replaced(messages) if c.trigger == "repair" => self.old_repair(messages),
            Change::Replaced(messages) => {
                let text = messages.iter().find_map(|m| match m {
                    Message::User(t) => t.strip_prefix(summary::HEADER).map(str::to_string),
                    _ => None,
                });
                // The summary request's usage comes right before its compaction; a turn's
                // usage there had no response.
                let usage = match self.pending.take() {
                    Some(u) if u.request.is_some() => Some(u),
                    other => {
                        self.pending = other;
                        self.flush();
                        None
                    }
                };
                if c.step == "summary" || usage.is_some() {
                    let content = text.clone().unwrap_or_default();
                    let turn = self.turn(By::Summary, content, None, Vec::new(), usage);
                    self.steps.push(Step::Agent(turn));
                }
                self.steps.push(Step::Compaction(Compacted {
                    trigger: c.trigger,
                    step: c.step,
                    tokens_before: c.tokens_before,
                    tokens_after: c.tokens_after,
                    cleared: Vec::new(),
                    replaced: Some(messages.len()),
                    summary: text,
                }));
                self.history.clear();
                for m in messages {
                    self.message(m, true);
                }
            }
        }
    }

    /// An old repair: the same history with answers put in; each message found in the old
    /// one keeps its place among the steps, each answer goes to its call.
    fn old_repair(&mut self, messages: Vec<Message>) {
        self.flush();
        let old = std::mem::take(&mut self.history);
        let mut next = 0;
        for m in messages {
            if let Some(k) = old[next..].iter().position(|s| s.message == m) {
                let slot = old[next + k].clone();
                next += k + 1;
                self.history.push(slot);
                continue;
            }
            match &m {
                Message::Tool {
                    tool_call_id,
                    content,
                } => {
                    // The answer's call is in the history being rebuilt.
                    let origin = match self.answer(tool_call_id, content, true) {
                        Some(o) => o,
                        None => self.push(Step::Stray {
                            call_id: tool_call_id.clone(),
                            content: content.clone(),
                        }),
                    };
                    self.history.push(Slot { message: m, origin });
                }
                _ => self.message(m, false),
            }
        }
    }
}

impl Slot {
    fn step(&self) -> usize {
        match self.origin {
            Origin::Step(i) | Origin::Result(i, _) => i,
        }
    }
}
