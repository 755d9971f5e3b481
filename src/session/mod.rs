//! Sessions: the conversation as a value that outlives the process.
//!
//! A [`Session`] owns the messages, the figures of the current run, its id and its log. The
//! agent loop appends every message through it, so each one is on disk (see [`log`]) by the
//! time the next thing happens; a model error, Ctrl-C, a kill or a power cut loses at most
//! what was in flight. `hx agent -c` / `-r ID` read a file back ([`record::read`]), answer
//! the calls a crash left open ([`history`]) and go on with a new user message.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::model::{Cost, Effort, FailureKind, Message, Profile, ReasoningEcho, Spend, Usage};

pub mod history;
pub mod log;
pub mod record;
pub mod store;

pub use log::SessionLog;
pub use record::{
    ApprovalLine, Change, Checkpoint, CheckpointKind, CheckpointLine, Compaction, End, EndOutcome,
    Figures, Header, Line, Loaded, RewindLine, RunInfo,
};
pub use store::Store;

/// What a run did, for the Stop line and the session's `end` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Model requests made.
    pub turns: u32,
    /// Tool calls the model made (blocked ones included).
    pub tool_calls: u32,
    /// Calls a PreToolUse hook refused.
    pub blocked: u32,
    pub usage: Usage,
    /// Whether any response reported usage (so zeros are not shown as facts).
    pub has_usage: bool,
    /// Times the history was compacted to fit the context window.
    pub compactions: u32,
    /// Times the model was told it made the same call again (`[loop]`).
    pub loop_notices: u32,
    /// Answers that were a tool call written as text, sent back to the model.
    pub text_calls: u32,
    /// What its requests cost (this agent's own; subagents have sessions of their own).
    pub cost: Spend,
    /// Tokens and cost by model, in the order first used.
    pub by_model: Vec<(String, Usage, Spend)>,
    /// The prompt tokens of the last turn's request: how full the context is.
    pub last_prompt_tokens: u64,
}

impl RunStats {
    /// What was added since `base` (an earlier copy of these figures).
    pub fn since(&self, base: &RunStats) -> RunStats {
        let u = |a: u64, b: u64| a.saturating_sub(b);
        RunStats {
            turns: self.turns.saturating_sub(base.turns),
            tool_calls: self.tool_calls.saturating_sub(base.tool_calls),
            blocked: self.blocked.saturating_sub(base.blocked),
            usage: Usage {
                prompt_tokens: u(self.usage.prompt_tokens, base.usage.prompt_tokens),
                prompt_cache_hit_tokens: u(
                    self.usage.prompt_cache_hit_tokens,
                    base.usage.prompt_cache_hit_tokens,
                ),
                completion_tokens: u(self.usage.completion_tokens, base.usage.completion_tokens),
                reasoning_tokens: u(self.usage.reasoning_tokens, base.usage.reasoning_tokens),
            },
            has_usage: self.has_usage,
            compactions: self.compactions.saturating_sub(base.compactions),
            loop_notices: self.loop_notices.saturating_sub(base.loop_notices),
            text_calls: self.text_calls.saturating_sub(base.text_calls),
            cost: crate::model::Spend {
                nanos: u(self.cost.nanos, base.cost.nanos),
                priced: self.cost.priced.saturating_sub(base.cost.priced),
                unpriced: self.cost.unpriced.saturating_sub(base.cost.unpriced),
                ..self.cost
            },
            // Per model and the context's fill are the session's as they are now.
            by_model: self.by_model.clone(),
            last_prompt_tokens: self.last_prompt_tokens,
        }
    }

    /// `turns=2, tool_calls=1, blocked=0`, then token figures when the server sent them.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "turns={}, tool_calls={}, blocked={}",
            self.turns, self.tool_calls, self.blocked
        );
        if self.has_usage {
            s.push_str(&format!(
                ", prompt_tokens={}, cache_hit_tokens={}, completion_tokens={}",
                self.usage.prompt_tokens,
                self.usage.prompt_cache_hit_tokens,
                self.usage.completion_tokens
            ));
        }
        s.push_str(&self.occasional());
        s
    }

    /// `, compactions=1, loop_notices=2, text_calls=1`: the figures shown only when not 0.
    pub fn occasional(&self) -> String {
        let mut s = String::new();
        for (name, n) in [
            ("compactions", self.compactions),
            ("loop_notices", self.loop_notices),
            ("text_calls", self.text_calls),
        ] {
            if n > 0 {
                s.push_str(&format!(", {name}={n}"));
            }
        }
        s
    }

    pub fn figures(&self) -> Figures {
        Figures {
            turns: self.turns,
            tool_calls: self.tool_calls,
            blocked: self.blocked,
            prompt_tokens: self.usage.prompt_tokens,
            cache_hit_tokens: self.usage.prompt_cache_hit_tokens,
            completion_tokens: self.usage.completion_tokens,
            reasoning_tokens: self.usage.reasoning_tokens,
            cost: self.cost,
        }
    }

    /// Counts one request to `model`.
    fn count(&mut self, u: &Usage, cost: Option<Cost>, model: &str) {
        self.usage.add(u);
        self.has_usage = true;
        self.cost.add_cost(cost);
        let i = match self.by_model.iter().position(|(m, ..)| m == model) {
            Some(i) => i,
            None => {
                self.by_model
                    .push((model.to_string(), Usage::default(), Spend::default()));
                self.by_model.len() - 1
            }
        };
        let (_, usage, spend) = &mut self.by_model[i];
        usage.add(u);
        spend.add_cost(cost);
    }
}

/// How new sessions are made in a run: where they are stored (`None`: `--ephemeral`, or
/// `sessions = false`) and what their headers say.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    pub store: Option<Store>,
    pub workspace: String,
    pub provider: String,
    pub base_url: String,
}

impl Recorder {
    /// The header of a new session whose requests `profile` makes; `parent` is the starting
    /// session's id and call id.
    pub fn header(&self, id: String, parent: Option<(&str, &str)>, profile: &Profile) -> Header {
        Header {
            id,
            parent_id: parent.map(|(s, _)| s.to_string()),
            parent_call_id: parent.map(|(_, c)| c.to_string()),
            workspace: self.workspace.clone(),
            model: profile.model().to_string(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            hx_version: env!("CARGO_PKG_VERSION").to_string(),
            started_at: store::now_rfc3339(),
            effort: profile.effort().map(|e| e.name().to_string()),
            ..Header::default()
        }
    }

    /// A new session of an agent on `profile`, recorded when there is a store. A file that
    /// cannot be created leaves the session unrecorded, with the reason.
    pub fn start(
        &self,
        parent: Option<(&str, &str)>,
        profile: &Profile,
    ) -> (Session, Option<String>) {
        self.start_with_id(store::new_id(), parent, profile)
    }

    /// [`Recorder::start`] with an id chosen beforehand (the agent is built with it before
    /// the file is created, so a run that cannot start leaves no empty session behind).
    pub fn start_with_id(
        &self,
        id: String,
        parent: Option<(&str, &str)>,
        profile: &Profile,
    ) -> (Session, Option<String>) {
        let header = self.header(id.clone(), parent, profile);
        match &self.store {
            None => (Session::new(header, None), None),
            Some(store) => match store.create(&id) {
                Ok(log) => (Session::new(header, Some(log)), None),
                Err(e) => (
                    Session::new(header, None),
                    Some(format!("this session is not recorded: {e}")),
                ),
            },
        }
    }

    /// What this run, on `profile`, records when it continues a session.
    pub fn run_info(&self, profile: &Profile) -> RunInfo {
        RunInfo {
            started_at: store::now_rfc3339(),
            model: profile.model().to_string(),
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            hx_version: env!("CARGO_PKG_VERSION").to_string(),
            effort: profile.effort().map(|e| e.name().to_string()),
        }
    }
}

/// The answer given, on resume, to a call the session recorded without its result.
pub const NOT_RUN_ANSWER: &str = "Error: not run: the session ended before this call finished";

/// One conversation: its messages, this run's figures and where it is recorded.
pub struct Session {
    header: Header,
    messages: Vec<Message>,
    /// This run's figures.
    pub stats: RunStats,
    /// The figures of the runs before this one.
    earlier: Figures,
    log: Option<SessionLog>,
    started: Instant,
    ended: bool,
    /// The JSON bytes of the first N messages as recorded: (N, bytes), from reading the file,
    /// for the context meter (see [`Session::measured`]).
    measured: Option<(usize, u64)>,
    /// Begun by this run, not read from a file.
    is_new: bool,
    /// `stats` when the current message began (`hx chat`: a Stop line is the message's).
    message_base: RunStats,
    /// The checkpoints of the workspace taken for it, in order (recorded and this run's).
    checkpoints: Vec<Checkpoint>,
    /// User messages sent for `/NAME args`: each one's text and what was typed (recorded and
    /// this run's), as [`Loaded::typed`].
    typed: Vec<(String, String)>,
    /// Checkpoints taken beside a request, waiting to be recorded (see [`Arriving`]).
    arriving: Arriving,
}

/// Where a checkpoint taken while the session is busy (beside a request, which holds the
/// session) leaves its line: recorded at the next [`Session::record_arrived`], which the
/// agent calls once the request is back, and which ending the run or answering calls a
/// cancel left open also call, so that a run cut short keeps a checkpoint already taken.
#[derive(Clone, Debug, Default)]
pub struct Arriving(Arc<ArrivingInner>);

#[derive(Debug, Default)]
struct ArrivingInner {
    lines: Mutex<Vec<CheckpointLine>>,
    /// Checkpoints still being taken ([`Arriving::expect`]).
    pending: std::sync::atomic::AtomicUsize,
    done: tokio::sync::Notify,
}

/// A checkpoint being taken for an [`Arriving`]: counted until dropped (its line put, or
/// none to put), so that a run cut short can wait for it.
#[derive(Debug)]
pub struct Expected(Arc<ArrivingInner>);

impl Drop for Expected {
    fn drop(&mut self) {
        self.0
            .pending
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.done.notify_waiters();
    }
}

impl Arriving {
    /// Counts a checkpoint being taken until what this gives is dropped.
    pub fn expect(&self) -> Expected {
        self.0
            .pending
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Expected(self.0.clone())
    }

    pub fn put(&self, line: CheckpointLine) {
        self.0
            .lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(line);
    }

    fn take(&self) -> Vec<CheckpointLine> {
        std::mem::take(&mut *self.0.lines.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Waits until no checkpoint is being taken, `limit` at most.
    async fn settled(&self, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.0.done.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.0.pending.load(std::sync::atomic::Ordering::SeqCst) == 0 {
                return;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }
}

impl Session {
    /// A new, empty session; recorded when `log` is given (its header is written first).
    pub fn new(header: Header, log: Option<SessionLog>) -> Session {
        if let Some(l) = &log {
            l.write(&Line::Header(&header).text());
        }
        Session {
            header,
            messages: Vec::new(),
            stats: RunStats::default(),
            earlier: Figures::default(),
            log,
            started: Instant::now(),
            ended: false,
            measured: None,
            is_new: true,
            message_base: RunStats::default(),
            checkpoints: Vec::new(),
            typed: Vec::new(),
            arriving: Arriving::default(),
        }
    }

    /// A recorded session, continued by a new run that uses `run`'s model and provider.
    /// Calls that were left without an answer get one ([`NOT_RUN_ANSWER`]); returns how many.
    pub fn resume(loaded: Loaded, run: RunInfo, log: Option<SessionLog>) -> (Session, usize) {
        if let Some(l) = &log {
            l.write(&Line::Run(&run).text());
        }
        let mut messages = loaded.messages;
        let before = messages.len();
        let answers = history::answers(&messages, NOT_RUN_ANSWER);
        let added = answers.len();
        let at_end = answers.first().is_none_or(|(at, _)| *at == before);
        // Answers inside the history are recorded as a repair line, which says where each
        // goes, so that later lines that name messages by their place (a prune) name the same
        // messages on the next read. Answers at the end are recorded as messages, so the file
        // holds what the next request sends.
        let repair_line = (!at_end).then(|| Line::Repair { answers: &answers }.text());
        // The answers come from this very history, so they fit it.
        let _ = history::insert(&mut messages, answers);
        // What the reader measured still describes the first `before` messages when any
        // repair went after them.
        let measured = loaded
            .sent_bytes
            .filter(|_| at_end)
            .map(|bytes| (before, bytes));
        if let Some(l) = &log {
            match repair_line {
                Some(line) => l.write(&line),
                None => {
                    for m in &messages[before..] {
                        l.write(&Line::message(m).text());
                    }
                }
            }
        }
        let session = Session {
            header: loaded.header,
            messages,
            stats: RunStats::default(),
            earlier: loaded.totals,
            log,
            started: Instant::now(),
            ended: false,
            measured,
            is_new: false,
            message_base: RunStats::default(),
            checkpoints: loaded.checkpoints,
            typed: loaded.typed,
            arriving: Arriving::default(),
        };
        (session, added)
    }

    /// How many of the first messages are known to take how many bytes as sent, when the file
    /// they were read from said so (a resumed session): measuring them again would mean
    /// serializing a history that may be tens of megabytes.
    pub fn measured(&self) -> Option<(usize, u64)> {
        self.measured
    }

    /// Adapts the recorded assistant messages to a provider's reasoning rule (a resumed
    /// session that switched provider). In memory only: the file keeps what was sent, and its
    /// `run` line says which provider came next.
    pub fn adapt_reasoning(&mut self, echo: ReasoningEcho) {
        // Messages change: the recorded sizes no longer describe them.
        self.measured = None;
        for m in &mut self.messages {
            if let Message::Assistant { reasoning, .. } = m {
                match echo {
                    ReasoningEcho::Always if reasoning.is_none() => {
                        *reasoning = Some(String::new())
                    }
                    ReasoningEcho::Never => *reasoning = None,
                    _ => {}
                }
            }
        }
    }

    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// Continued from its file: earlier runs' figures are in [`Session::totals`], not in
    /// `stats`.
    pub fn resumed(&self) -> bool {
        !self.is_new
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The session file, when it is recorded.
    pub fn path(&self) -> Option<&Path> {
        self.log.as_ref().map(|l| l.path())
    }

    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// Appends a message to the conversation and to the log.
    pub fn push(&mut self, m: Message) {
        if let Some(l) = &self.log {
            l.write(&Line::message(&m).text());
        }
        self.messages.push(m);
    }

    /// Answers the calls of the last assistant turn that have no result yet, when only
    /// results follow it (a turn cancelled during its tools), each with `answer` and recorded
    /// like any message, so the next request is valid. Returns how many.
    pub fn answer_open_calls(&mut self, answer: &str) -> usize {
        // A checkpoint taken before the cancel is the turn's: it goes before the answers.
        self.record_arrived();
        let Some(open) = history::open_calls_at_end(&self.messages) else {
            return 0;
        };
        let ids: Vec<String> = open.ids.into_iter().map(str::to_string).collect();
        for id in &ids {
            self.push(Message::Tool {
                tool_call_id: id.clone(),
                content: answer.to_string(),
            });
        }
        self.turn_done();
        ids.len()
    }

    /// Records the token figures the server reported for one request.
    pub fn record_usage(&mut self, u: &Usage, cost: Option<Cost>, model: &str) {
        self.stats.count(u, cost, model);
        self.stats.last_prompt_tokens = u.prompt_tokens.saturating_add(u.completion_tokens);
        if let Some(l) = &self.log {
            l.write(&Line::usage(u, cost.as_ref(), Some(model), None).text());
        }
    }

    /// Records what the user typed (`/NAME args`) for the user message `text` pushed next,
    /// which lists of sessions show instead of the body it sent.
    pub fn record_typed(&mut self, typed: &str, text: &str) {
        if let Some(l) = &self.log {
            l.write(&Line::Typed { typed }.text());
        }
        self.typed.push((text.to_string(), typed.to_string()));
    }

    /// What the user typed for the user message `text`, when that was not the text itself
    /// (`/NAME args`).
    pub fn typed_for(&self, text: &str) -> Option<&str> {
        self.typed
            .iter()
            .rev()
            .find(|(sent, _)| sent == text)
            .map(|(_, typed)| typed.as_str())
    }

    /// Records the user's answer to an approval question (`hx chat`).
    pub fn record_approval(&mut self, a: &ApprovalLine) {
        if let Some(l) = &self.log {
            l.write(&Line::Approval(a).text());
        }
    }

    /// Records that the conversation goes on with another model (`/model`): a resumed
    /// session continues with it.
    pub fn record_model(&mut self, model: &str) {
        if let Some(l) = &self.log {
            l.write(
                &Line::Model {
                    model,
                    at: &store::now_rfc3339(),
                }
                .text(),
            );
        }
    }

    /// Records that the conversation goes on at another effort (`/effort`; `None`: no
    /// setting): a resumed session continues with it, so its requests stay the same.
    pub fn record_effort(&mut self, effort: Option<Effort>) {
        if let Some(l) = &self.log {
            l.write(
                &Line::Effort {
                    effort: effort.map(Effort::name),
                    at: &store::now_rfc3339(),
                }
                .text(),
            );
        }
    }

    /// The checkpoints taken for this session, oldest first.
    pub fn checkpoints(&self) -> &[Checkpoint] {
        &self.checkpoints
    }

    /// The number the next numbered checkpoint gets.
    pub fn next_checkpoint(&self) -> u32 {
        self.checkpoints
            .iter()
            .filter_map(|c| c.line.n)
            .max()
            .unwrap_or(0)
            .saturating_add(1)
    }

    /// Where a checkpoint taken beside a request leaves its line for [`Session::record_arrived`].
    pub fn arriving(&self) -> Arriving {
        self.arriving.clone()
    }

    /// For a run cut short: waits for the checkpoints still being taken beside its request,
    /// `limit` at most, and records what arrived. Without it a checkpoint of the turn's
    /// changes would be lost, and a rewind would count them as someone else's.
    pub async fn settle_arriving(&mut self, limit: std::time::Duration) {
        self.arriving.settled(limit).await;
        self.record_arrived();
    }

    /// Records the checkpoints that arrived (see [`Arriving`]), in the order they did.
    pub fn record_arrived(&mut self) {
        for line in self.arriving.take() {
            self.record_checkpoint(line);
        }
    }

    /// Records a checkpoint of the workspace taken for this session.
    pub fn record_checkpoint(&mut self, line: CheckpointLine) {
        if let Some(l) = &self.log {
            l.write(&Line::Checkpoint(&line).text());
        }
        self.checkpoints.push(Checkpoint {
            line,
            conversation_ok: true,
        });
    }

    /// Records a rewind; with the conversation, the history goes back to its first
    /// `at_message` messages here too, as a reader of the file will see it.
    pub fn record_rewind(&mut self, line: &RewindLine) {
        if let Some(l) = &self.log {
            l.write(&Line::Rewind(line).text());
            l.sync();
        }
        if let (true, Some(k)) = (line.conversation, line.at_message) {
            if k <= self.messages.len() {
                self.messages.truncate(k);
                self.measured = None;
                for c in self
                    .checkpoints
                    .iter_mut()
                    .filter(|c| c.line.at_message > k)
                {
                    c.conversation_ok = false;
                }
            }
        }
    }

    /// Records the token figures of a request that was not a turn (the summary of a
    /// compaction): they count in the run's tokens, not its turns.
    pub fn record_request_usage(
        &mut self,
        u: &Usage,
        cost: Option<Cost>,
        model: &str,
        request: &str,
    ) {
        self.stats.count(u, cost, model);
        if let Some(l) = &self.log {
            l.write(&Line::usage(u, cost.as_ref(), Some(model), Some(request)).text());
        }
    }

    /// Compaction: the one place a history changes other than by appending. The log gets a
    /// line saying what the history became and keeps every line before it; a session read
    /// back from here on starts from the compacted history.
    pub fn compact(&mut self, c: Compaction) -> Result<(), String> {
        c.apply(&mut self.messages)?;
        self.measured = None;
        if let Some(l) = &self.log {
            l.write(&Line::compaction(&c).text());
            l.sync();
        }
        self.stats.compactions = self.stats.compactions.saturating_add(1);
        Ok(())
    }

    /// A turn is over: the file should reach the disk (without waiting for it).
    pub fn turn_done(&self) {
        if let Some(l) = &self.log {
            l.sync();
        }
    }

    /// The figures of every run of the session, this one included.
    pub fn totals(&self) -> Figures {
        let mut t = self.earlier;
        t.add(&self.stats.figures());
        t
    }

    /// Records how this run ended (once; later calls do nothing); `kind` when it failed.
    pub fn end(&mut self, outcome: EndOutcome, detail: Option<&str>, kind: Option<FailureKind>) {
        if self.ended {
            return;
        }
        self.record_arrived();
        self.ended = true;
        if let Some(l) = &self.log {
            let end = End {
                outcome,
                detail: detail.map(str::to_string),
                kind: kind.map(|k| k.as_str().to_string()),
                ended_at: store::now_rfc3339(),
                duration_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
                run: self.stats.figures(),
                session: self.totals(),
            };
            l.write(&Line::End(&end).text());
        }
    }

    /// Writes what is queued and waits for it to reach the disk; the first write error of
    /// the whole run, if any (the conversation itself is unaffected).
    pub fn close(&mut self) -> Option<String> {
        self.log.take().and_then(SessionLog::close)
    }

    /// A message of the conversation begins: [`Session::message_stats`] counts from here.
    pub fn begin_message(&mut self) {
        self.message_base = self.stats.clone();
    }

    /// This message's figures: the run's since [`Session::begin_message`] (the whole run's in
    /// `hx agent`, which has one message).
    pub fn message_stats(&self) -> RunStats {
        self.stats.since(&self.message_base)
    }

    /// Begun by this run and never answered by the model (no key, a host that does not
    /// resolve, a 401): there is nothing in it to go on with.
    pub fn never_answered(&self) -> bool {
        self.is_new
            && !self
                .messages
                .iter()
                .any(|m| matches!(m, Message::Assistant { .. }))
    }

    /// Closes the session and removes its file, which holds nothing to continue (see
    /// [`Session::never_answered`]); gives whether there was a file.
    pub fn discard(&mut self) -> bool {
        let path = self.log.as_ref().map(|l| l.path().to_path_buf());
        self.close();
        path.is_some_and(|p| std::fs::remove_file(p).is_ok())
    }
}

#[cfg(test)]
mod tests;
