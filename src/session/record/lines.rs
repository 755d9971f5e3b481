//! What each line of a session file holds, and the one writer of their text.

use serde::{Deserialize, Serialize};

use super::FORMAT_VERSION;
use crate::model::price::{Cost, Currency, Spend};
use crate::model::{Message, Usage};

/// Line 1 of a session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"header"` when read. Not written from here: [`Line::Header`]'s tag is.
    #[serde(rename = "type", skip_serializing)]
    pub kind: String,
    pub version: u32,
    pub id: String,
    /// The session of the agent that started this one (subagents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// The `task` call of the parent that started this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call_id: Option<String>,
    pub workspace: String,
    pub model: String,
    pub provider: String,
    pub base_url: String,
    pub hx_version: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// The effort its requests were sent with (`off`, `low`, `high`, `max`); none: no setting.
    /// A string, not an effort: a newer hx's effort must not make the file unreadable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

impl Default for Header {
    fn default() -> Self {
        Header {
            kind: "header".into(),
            version: FORMAT_VERSION,
            id: String::new(),
            parent_id: None,
            parent_call_id: None,
            workspace: String::new(),
            model: String::new(),
            provider: String::new(),
            base_url: String::new(),
            hx_version: String::new(),
            started_at: String::new(),
            effort: None,
        }
    }
}

/// What one run of a session ran with (written when a later run continues the session, so a
/// model or provider change is on record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunInfo {
    pub started_at: String,
    pub model: String,
    pub provider: String,
    pub base_url: String,
    pub hx_version: String,
    /// As the header's: the effort of this run's requests, if they said one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
}

/// Turn, call and token figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Figures {
    pub turns: u32,
    pub tool_calls: u32,
    pub blocked: u32,
    pub prompt_tokens: u64,
    pub cache_hit_tokens: u64,
    pub completion_tokens: u64,
    /// Of the completion tokens, those spent thinking, when the server said (older files and
    /// servers that do not say have none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// What the requests cost, when any had a price or usage (older files have none).
    #[serde(default, skip_serializing_if = "Spend::is_empty", with = "spend_file")]
    pub cost: Spend,
}

/// A [`Spend`] in a file: `{"amount": 0.0123, "currency": "USD", "priced": 3}`, and
/// `"unpriced"` when requests had no price. The amount is written in billionths too
/// (`nanos`), which is what is read back when present, so a sum stays exact.
mod spend_file {
    use super::{Currency, Spend};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize, Default)]
    struct File {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        amount: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nanos: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        currency: Option<String>,
        #[serde(default)]
        priced: u32,
        #[serde(default, skip_serializing_if = "is_zero")]
        unpriced: u32,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        mixed: bool,
    }

    fn is_zero(n: &u32) -> bool {
        *n == 0
    }

    pub fn serialize<S: Serializer>(s: &Spend, ser: S) -> Result<S::Ok, S::Error> {
        File {
            amount: s.currency.map(|_| s.nanos as f64 / 1e9),
            nanos: s.currency.map(|_| s.nanos),
            currency: s.currency.map(|c| c.code().to_string()),
            priced: s.priced,
            unpriced: s.unpriced,
            mixed: s.mixed,
        }
        .serialize(ser)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(de: D) -> Result<Spend, D::Error> {
        // A figure this hx cannot read is no figure, not a file it cannot read.
        let f = Option::<File>::deserialize(de)
            .unwrap_or_default()
            .unwrap_or_default();
        let nanos = f.nanos.unwrap_or_else(|| {
            f.amount
                .filter(|a| a.is_finite() && *a > 0.0)
                .map_or(0, |a| (a * 1e9).round() as u64)
        });
        Ok(Spend {
            nanos,
            currency: f.currency.as_deref().and_then(Currency::parse),
            priced: f.priced,
            unpriced: f.unpriced,
            mixed: f.mixed,
        })
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Figures {
    pub fn add(&mut self, other: &Figures) {
        self.turns = self.turns.saturating_add(other.turns);
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
        self.blocked = self.blocked.saturating_add(other.blocked);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.cache_hit_tokens = self.cache_hit_tokens.saturating_add(other.cache_hit_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(other.completion_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cost.add(&other.cost);
    }
}

/// How a run ended, as its `end` line names it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndOutcome {
    /// The model gave its final answer.
    Answered,
    /// The run reached its turn limit.
    MaxTurns,
    /// The run's requests cost more than `--max-cost`.
    MaxCost,
    /// The model kept making the same call (`[loop]`).
    Loop,
    /// The goal's command (`--until`) still failed when its rounds ran out.
    GoalUnmet,
    /// A hook stopped the run.
    Stopped,
    /// The run failed (the model's server, a broken history); `detail` says how.
    Error,
    /// A signal (Ctrl-C, SIGTERM) ended the run.
    Interrupted,
    /// `hx agent --compact`: the run compacted the session and asked nothing.
    Compacted,
    /// An outcome this hx does not know (a newer one wrote it), kept as written.
    #[serde(untagged)]
    Other(String),
}

impl EndOutcome {
    pub fn as_str(&self) -> &str {
        match self {
            EndOutcome::Answered => "answered",
            EndOutcome::MaxTurns => "max_turns",
            EndOutcome::MaxCost => "max_cost",
            EndOutcome::Loop => "loop",
            EndOutcome::GoalUnmet => "goal_unmet",
            EndOutcome::Stopped => "stopped",
            EndOutcome::Error => "error",
            EndOutcome::Interrupted => "interrupted",
            EndOutcome::Compacted => "compacted",
            EndOutcome::Other(s) => s,
        }
    }
}

impl From<&str> for EndOutcome {
    fn from(s: &str) -> EndOutcome {
        match s {
            "answered" => EndOutcome::Answered,
            "max_turns" => EndOutcome::MaxTurns,
            "max_cost" => EndOutcome::MaxCost,
            "loop" => EndOutcome::Loop,
            "goal_unmet" => EndOutcome::GoalUnmet,
            "stopped" => EndOutcome::Stopped,
            "error" => EndOutcome::Error,
            "interrupted" => EndOutcome::Interrupted,
            "compacted" => EndOutcome::Compacted,
            other => EndOutcome::Other(other.to_string()),
        }
    }
}

impl std::fmt::Display for EndOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    pub outcome: EndOutcome,
    /// The error or the reason, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// A failed run's kind, as `turn.failed` names it (`rate_limit`, `max_turns`, ...). Text,
    /// so a kind a newer hx wrote reads back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub ended_at: String,
    pub duration_ms: u64,
    /// This run's figures.
    pub run: Figures,
    /// The whole session's figures so far (every run), so a listing needs only the last line.
    pub session: Figures,
}

/// The user's answer when the guard would have refused a command (`hx chat`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalLine {
    /// The call the question was about.
    pub call_id: String,
    pub command: String,
    /// The guard's reason.
    pub reason: String,
    /// `once`, `always` (this exact command for the rest of the session), `refused`, or
    /// `allowed` (run without asking, after an earlier `always`).
    pub answer: String,
    /// RFC 3339, UTC.
    pub at: String,
}

/// A checkpoint of the workspace taken for this session (see `crate::checkpoint`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointLine {
    /// Its number for the user (the session's oldest is 1); none for the ones taken after a
    /// turn's tools ran, which only tell the turn's changes from the user's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u32>,
    pub what: CheckpointKind,
    pub commit: String,
    pub tree: String,
    /// Messages of the history before it: where a conversation rewind to it cuts.
    pub at_message: usize,
    /// The message or the turn it precedes, shortened, for the list.
    #[serde(default)]
    pub label: String,
    /// RFC 3339, UTC.
    pub at: String,
}

impl CheckpointLine {
    /// Whether what follows it, up to the next checkpoint, is hx's own doing (a turn's tools,
    /// a rewind) rather than possibly the user's.
    pub fn starts_hx_work(&self) -> bool {
        matches!(self.what, CheckpointKind::Turn | CheckpointKind::Rewind)
    }
}

/// What a checkpoint was taken before or after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckpointKind {
    /// Before a user message.
    Message,
    /// Before a turn's tool calls run.
    Turn,
    /// After them, or after a rewind: unnumbered, it only tells hx's changes from others'.
    After,
    /// What a rewind is about to replace.
    Rewind,
    /// A kind a newer hx wrote: kept, shown as it is not known.
    #[serde(other)]
    Other,
}

impl CheckpointKind {
    /// How a listing names the point it marks.
    pub fn shown(self) -> &'static str {
        match self {
            CheckpointKind::Message => "before message",
            CheckpointKind::Turn => "before turn",
            CheckpointKind::Rewind => "before rewind",
            CheckpointKind::After => "after",
            CheckpointKind::Other => "checkpoint",
        }
    }
}

/// `hx rewind`: the files, the conversation or both went back to checkpoint `to`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindLine {
    pub to: u32,
    pub code: bool,
    pub conversation: bool,
    /// With `conversation`: the history is cut to this many messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_message: Option<usize>,
    /// The checkpoint of what the rewind replaced (`hx rewind --undo` goes back to it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety: Option<u32>,
    /// Paths the rewind wrote or removed.
    #[serde(default)]
    pub paths: usize,
    /// RFC 3339, UTC.
    pub at: String,
}

/// What a compaction did to the history, as its session line records it.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// Tool results replaced in place, each by a line: (index in the history, new content).
    Cleared(Vec<(usize, String)>),
    /// The whole history replaced by this one.
    Replaced(Vec<Message>),
}

/// One compaction: why, which step, the estimated request size before and after, and the
/// change.
#[derive(Debug, Clone, PartialEq)]
pub struct Compaction {
    /// `auto` (the next request would pass the limit), `overflow` (the server refused one as
    /// too long) or `manual` (`hx agent --compact`).
    pub trigger: String,
    /// `prune` or `summary`.
    pub step: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub change: Change,
}

impl Compaction {
    /// `history` as the compaction leaves it. A change that does not fit it (a cleared index
    /// that is no tool result) is an error naming the index.
    pub fn apply(&self, history: &mut Vec<Message>) -> Result<(), String> {
        match &self.change {
            Change::Replaced(new) => *history = new.clone(),
            Change::Cleared(cleared) => {
                for (i, text) in cleared {
                    match history.get_mut(*i) {
                        Some(Message::Tool { content, .. }) => *content = text.clone(),
                        _ => {
                            return Err(format!(
                                "the compaction clears message {i}, which is not a tool result"
                            ))
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Every kind of line, borrowing what it writes: a message line is written straight from the
/// history, with no copy of a message that may be megabytes long.
///
/// The tag comes first in every line. Lines written before this enum existed had it last in
/// `run`, `approval` and `end` lines; readers look it up by name, so both read the same.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line<'a> {
    Header(&'a Header),
    Run(&'a RunInfo),
    /// One message exactly as sent to the API. The reader measures a message as the line
    /// minus its frame: `{"type":"message","message":` before it and `}` after.
    Message {
        message: &'a Message,
    },
    /// One model request's token figures; `request` names a request that was not a turn of
    /// the conversation (`summary`): it counts in the tokens, not in the turns.
    Usage {
        prompt_tokens: u64,
        prompt_cache_hit_tokens: u64,
        completion_tokens: u64,
        /// Of the completion tokens, those spent thinking, when the server said.
        #[serde(skip_serializing_if = "is_zero")]
        reasoning_tokens: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        request: Option<&'a str>,
        /// The model it went to (a chat may switch).
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<&'a str>,
        /// What it cost at its time, in `currency`; absent: no price (or an older hx).
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        cost_nanos: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        currency: Option<&'a str>,
        /// Priced at the peak rates.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        peak: bool,
    },
    /// Exactly one of `cleared` and `messages` is set, after [`Change`].
    Compaction {
        trigger: &'a str,
        step: &'a str,
        tokens_before: u64,
        tokens_after: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        cleared: Option<&'a [(usize, String)]>,
        #[serde(skip_serializing_if = "Option::is_none")]
        messages: Option<&'a [Message]>,
    },
    /// Answers a resumed run gave to calls the history left without a result, where the
    /// history reads them: each (its index once all are in, the tool message). Only answers
    /// inside the history get this line; answers at its end are message lines.
    Repair {
        answers: &'a [(usize, Message)],
    },
    /// The model the conversation goes on with, from here (`/model` in `hx chat`).
    Model {
        model: &'a str,
        at: &'a str,
    },
    /// The effort the conversation goes on with, from here (`/effort` in `hx chat`, or a
    /// `/model` that changed it); `null`: no setting.
    Effort {
        effort: Option<&'a str>,
        at: &'a str,
    },
    Approval(&'a ApprovalLine),
    /// What the user typed for the user message on the next line, when that message is not
    /// it: `/NAME args` (a command file or a skill), which the message is the body of. What
    /// lists a session shows this; the model was sent the message.
    Typed {
        typed: &'a str,
    },
    Checkpoint(&'a CheckpointLine),
    Rewind(&'a RewindLine),
    End(&'a End),
}

impl<'a> Line<'a> {
    pub fn message(message: &'a Message) -> Line<'a> {
        Line::Message { message }
    }

    pub fn usage(
        u: &Usage,
        cost: Option<&'a Cost>,
        model: Option<&'a str>,
        request: Option<&'a str>,
    ) -> Line<'a> {
        Line::Usage {
            prompt_tokens: u.prompt_tokens,
            prompt_cache_hit_tokens: u.prompt_cache_hit_tokens,
            completion_tokens: u.completion_tokens,
            reasoning_tokens: u.reasoning_tokens,
            request,
            model,
            cost: cost.map(|c| c.nanos as f64 / 1e9),
            cost_nanos: cost.map(|c| c.nanos),
            currency: cost.map(|c| c.currency.code()),
            peak: cost.is_some_and(|c| c.peak),
        }
    }

    pub fn compaction(c: &'a Compaction) -> Line<'a> {
        let (cleared, messages) = match &c.change {
            Change::Cleared(v) => (Some(v.as_slice()), None),
            Change::Replaced(v) => (None, Some(v.as_slice())),
        };
        Line::Compaction {
            trigger: &c.trigger,
            step: &c.step,
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            cleared,
            messages,
        }
    }

    /// The line's JSON text, without its newline.
    pub fn text(&self) -> String {
        // Nothing here can fail to serialize (every map key is a string); should that change,
        // an empty line is one that readers skip rather than a half-written one.
        serde_json::to_string(self).unwrap_or_default()
    }
}
