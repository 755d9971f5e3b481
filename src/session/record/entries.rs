//! The lines of a session file after its header, as written ([`Entry`]), and the one
//! reading of what each line's type needs ([`entry`]).

use super::*;

/// One line of a session file after the header, as written: a message, one request's usage,
/// a change of the history (compaction, repair, rewind), a run's start and end, a switch.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Message(Message),
    Usage(RequestUsage),
    Compaction(Compaction),
    /// Answers to calls a crash left open inside the history, each with its index once all
    /// are in.
    Repair(Vec<(usize, Message)>),
    Run(RunLine),
    /// `/model`: the model the conversation goes on with.
    Model(Option<String>),
    /// `/effort`: the effort it goes on with (`None`: no setting).
    Effort(Option<String>),
    /// What the user typed for the next user message (`/NAME args`).
    Typed(String),
    Checkpoint(CheckpointLine),
    Rewind(RewindLine),
    End(EndLine),
    /// A line the history does not depend on (an approval), or of a type a later hx wrote:
    /// its type.
    Other(String),
}

/// A `usage` line: one request's token figures, and its cost when it had a price.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestUsage {
    pub usage: crate::model::Usage,
    /// The request was not a turn of the conversation (`summary`: a compaction's).
    pub request: Option<String>,
    /// The model it went to (older files do not say).
    pub model: Option<String>,
    pub cost: Option<crate::model::Cost>,
}

/// A `run` line, as much of it as is there.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunLine {
    pub started_at: Option<String>,
    pub model: Option<String>,
    pub provider: Option<String>,
    pub base_url: Option<String>,
    /// This run's effort; none: its requests said none.
    pub effort: Option<String>,
}

/// An `end` line, as much of it as a reader needs.
#[derive(Debug, Clone, PartialEq)]
pub struct EndLine {
    /// `unknown` when the line does not say.
    pub outcome: String,
    pub detail: Option<String>,
    pub ended_at: Option<String>,
    /// The session's figures so far.
    pub session: Option<Figures>,
}

/// What a line says, checked for what its type needs.
pub(super) fn entry(ev: EventLine) -> Result<Entry, String> {
    Ok(match ev.kind.as_str() {
        "message" => Entry::Message(
            ev.message
                .ok_or("a message line without a message")?
                .into_message()?,
        ),
        "usage" => {
            // A line without a cost: no price, or an hx from before costs; either way, not
            // known.
            let nanos = ev.cost_nanos.or_else(|| {
                ev.cost
                    .filter(|a| a.is_finite() && *a >= 0.0)
                    .map(|a| (a * 1e9).round() as u64)
            });
            let currency = ev
                .currency
                .as_deref()
                .and_then(crate::model::price::Currency::parse);
            Entry::Usage(RequestUsage {
                usage: crate::model::Usage {
                    prompt_tokens: ev.prompt_tokens.unwrap_or(0),
                    prompt_cache_hit_tokens: ev.prompt_cache_hit_tokens.unwrap_or(0),
                    completion_tokens: ev.completion_tokens.unwrap_or(0),
                    reasoning_tokens: ev.reasoning_tokens.unwrap_or(0),
                },
                request: ev.request,
                model: ev.model,
                cost: match (nanos, currency) {
                    (Some(nanos), Some(currency)) => Some(crate::model::Cost {
                        nanos,
                        currency,
                        peak: ev.peak.unwrap_or(false),
                    }),
                    _ => None,
                },
            })
        }
        "compaction" => {
            let change = match (ev.messages, ev.cleared) {
                (Some(ms), _) => Change::Replaced(
                    ms.into_iter()
                        .map(WireMessage::into_message)
                        .collect::<Result<_, _>>()?,
                ),
                (None, Some(cleared)) => Change::Cleared(cleared),
                (None, None) => return Err("a compaction line without messages or cleared".into()),
            };
            Entry::Compaction(Compaction {
                trigger: ev.trigger.unwrap_or_default(),
                step: ev.step.unwrap_or_default(),
                tokens_before: ev.tokens_before.unwrap_or(0),
                tokens_after: ev.tokens_after.unwrap_or(0),
                change,
            })
        }
        "repair" => Entry::Repair(
            ev.answers
                .ok_or("a repair line without answers")?
                .into_iter()
                .map(|(at, m)| match m.into_message()? {
                    m @ Message::Tool { .. } => Ok((at, m)),
                    _ => Err("a repair line's answer is not a tool result".to_string()),
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        "run" => Entry::Run(RunLine {
            started_at: ev.started_at,
            model: ev.model,
            provider: ev.provider,
            base_url: ev.base_url,
            effort: ev.effort,
        }),
        "model" => Entry::Model(ev.model),
        "typed" => Entry::Typed(ev.typed.ok_or("a typed line without typed")?),
        "effort" => Entry::Effort(ev.effort),
        "checkpoint" => {
            let (Some(what), Some(commit), Some(tree)) = (ev.what, ev.commit, ev.tree) else {
                return Err("a checkpoint line without what, commit or tree".into());
            };
            Entry::Checkpoint(CheckpointLine {
                n: ev.n,
                what,
                commit,
                tree,
                at_message: ev.at_message.unwrap_or(0),
                label: ev.label.unwrap_or_default(),
                at: ev.at.unwrap_or_default(),
            })
        }
        "rewind" => Entry::Rewind(RewindLine {
            to: ev.to.unwrap_or(0),
            code: ev.code.unwrap_or(false),
            conversation: ev.conversation.unwrap_or(false),
            at_message: ev.at_message,
            safety: ev.safety,
            paths: ev.paths.unwrap_or(0),
            at: ev.at.unwrap_or_default(),
        }),
        "end" => Entry::End(EndLine {
            outcome: ev.outcome.unwrap_or_else(|| "unknown".into()),
            detail: ev.detail,
            ended_at: ev.ended_at,
            session: ev.session,
        }),
        // Written by a later hx, or not needed to continue the conversation.
        other => Entry::Other(other.to_string()),
    })
}
