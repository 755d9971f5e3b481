//! How one turn of the user's ended, mapped once to everything that reports it: the exit
//! code, the end of the turn the views show, and the outcome of the session's `end` line.

use super::exit;
use crate::agent::{outcome, Outcome};
use crate::events::TurnEnd;
use crate::model::{FailureKind, ModelError};
use crate::process::signal_name;
use crate::session::EndOutcome;

/// The answer to each call a cancelled turn left without one.
pub const INTERRUPTED: &str = "Error: interrupted by the user";

/// How a turn ended.
#[derive(Debug)]
pub enum Ending {
    /// The run ended by itself: an answer, the turn limit, a hook, or a model error.
    Run(Result<Outcome, ModelError>),
    /// A compaction asked for on its own (`hx agent --compact`) is done; there is no answer.
    Compacted,
    /// A signal cut the run short (`hx agent`), or ended the program (`hx chat`).
    Signalled(i32),
    /// Ctrl-C cancelled a turn of `hx chat`; `open` calls it left were answered as
    /// interrupted.
    Cancelled { open: usize },
    /// The front end could not go on (it cannot watch the signals): why.
    Failed(String),
}

impl Ending {
    /// The run failed before the model answered anything it could: the server was not
    /// reached (after the retries), or refused the key. Nothing of such a run is worth
    /// continuing.
    pub fn unreached(&self) -> bool {
        match self {
            Ending::Run(Err(ModelError::Unreachable { .. })) => true,
            Ending::Run(Err(ModelError::Api { status, .. })) => matches!(status, 401 | 403),
            _ => false,
        }
    }
}

/// Who reads the turn's end: a one-shot run, or a conversation that goes on after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Front {
    Run,
    Conversation,
}

/// An [`Ending`], as each reader wants it.
#[derive(Debug)]
pub struct Mapped {
    pub code: i32,
    pub turn: TurnEnd,
    /// The session's `end` line: the outcome and its detail.
    pub outcome: EndOutcome,
    pub detail: Option<String>,
}

impl Ending {
    /// The ending for each reader; `max_turns` is the limit the run had.
    pub fn map(self, max_turns: u32, front: Front) -> Mapped {
        let (outcome, detail) = match &self {
            Ending::Run(result) => outcome::session_end(result),
            Ending::Compacted => (EndOutcome::Compacted, None),
            Ending::Signalled(sig) => {
                (EndOutcome::Interrupted, Some(signal_name(*sig).to_string()))
            }
            Ending::Cancelled { .. } => (
                EndOutcome::Interrupted,
                Some(signal_name(libc::SIGINT).into()),
            ),
            Ending::Failed(why) => (EndOutcome::Error, Some(why.clone())),
        };
        // Decided before the arms below take the ending apart: a model error's kind and
        // status are its own (`ModelError::kind`), the others are named here.
        let kind = match &self {
            Ending::Run(result) => outcome::failure_kind(result),
            Ending::Compacted => None,
            Ending::Signalled(_) | Ending::Cancelled { .. } => Some(FailureKind::Interrupted),
            Ending::Failed(_) => Some(FailureKind::Other),
        };
        let status = match &self {
            Ending::Run(Err(e)) => e.status(),
            _ => None,
        };
        let failed = |message: String| TurnEnd::Failed {
            message,
            kind: kind.unwrap_or(FailureKind::Other),
            status,
        };
        let (code, turn) = match self {
            Ending::Run(Ok(Outcome::Answered(text))) => (exit::ANSWERED, TurnEnd::Answered(text)),
            Ending::Run(Ok(Outcome::Stopped(reason))) => {
                (exit::FAILED, failed(format!("stopped by a hook: {reason}")))
            }
            Ending::Run(Ok(Outcome::MaxTurns(_))) => {
                let then = match front {
                    Front::Run => "",
                    Front::Conversation => "; a message goes on from here",
                };
                (
                    exit::MAX_TURNS,
                    failed(format!(
                        "{} (--max-turns) without a final answer{then}",
                        outcome::stopped_after(max_turns)
                    )),
                )
            }
            // The same code as --max-turns: the run reached a limit the user set. A loop is
            // one too (`[loop]`): the run went nowhere, as one at its turn limit does.
            // So is a goal's round limit: the run went as far as it was let.
            Ending::Run(Ok(
                Outcome::MaxCost(why) | Outcome::Looped(why) | Outcome::GoalUnmet(why),
            )) => (exit::MAX_TURNS, failed(format!("stopped: {why}"))),
            Ending::Run(Err(e)) => (exit::FAILED, failed(e.to_string())),
            Ending::Failed(why) => (exit::FAILED, failed(why)),
            // The compaction's lines said what it did.
            Ending::Compacted => (exit::ANSWERED, TurnEnd::Answered(String::new())),
            Ending::Signalled(sig) => {
                let message = match sig {
                    libc::SIGINT => "interrupted".to_string(),
                    other => format!("terminated by {}", signal_name(other)),
                };
                (exit::signalled(sig), failed(message))
            }
            Ending::Cancelled { open } => {
                let note = match open {
                    0 => String::new(),
                    n => format!("; {n} unfinished call(s) answered \"{INTERRUPTED}\""),
                };
                (
                    exit::signalled(libc::SIGINT),
                    failed(format!("interrupted{note}")),
                )
            }
        };
        Mapped {
            code,
            turn,
            outcome,
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_turn_limit_reads_the_same_in_a_run_and_a_conversation() {
        let run = Ending::Run(Ok(Outcome::MaxTurns(String::new()))).map(2, Front::Run);
        let chat = Ending::Run(Ok(Outcome::MaxTurns(String::new()))).map(2, Front::Conversation);
        assert_eq!(run.code, exit::MAX_TURNS);
        assert_eq!(
            run.turn,
            TurnEnd::failed(
                FailureKind::MaxTurns,
                "stopped after 2 turns (--max-turns) without a final answer"
            )
        );
        assert_eq!(
            chat.turn,
            TurnEnd::failed(
                FailureKind::MaxTurns,
                "stopped after 2 turns (--max-turns) without a final answer; a message goes on \
                 from here"
            )
        );
        assert_eq!(
            (run.outcome, chat.outcome),
            (EndOutcome::MaxTurns, EndOutcome::MaxTurns)
        );
    }

    #[test]
    fn a_signal_names_itself_and_gives_128_plus_its_number() {
        let m = Ending::Signalled(libc::SIGTERM).map(1, Front::Run);
        assert_eq!(m.code, 143);
        assert_eq!(
            m.turn,
            TurnEnd::failed(FailureKind::Interrupted, "terminated by SIGTERM")
        );
        assert_eq!(
            (m.outcome, m.detail.as_deref()),
            (EndOutcome::Interrupted, Some("SIGTERM"))
        );
        let m = Ending::Signalled(libc::SIGINT).map(1, Front::Run);
        assert_eq!(
            (m.code, m.turn),
            (
                130,
                TurnEnd::failed(FailureKind::Interrupted, "interrupted")
            )
        );
    }

    #[test]
    fn a_cancelled_turn_counts_the_calls_it_left() {
        let m = Ending::Cancelled { open: 2 }.map(1, Front::Conversation);
        assert_eq!(
            m.turn,
            TurnEnd::failed(
                FailureKind::Interrupted,
                "interrupted; 2 unfinished call(s) answered \"Error: interrupted by the user\""
            )
        );
        assert_eq!(
            (m.outcome, m.detail.as_deref()),
            (EndOutcome::Interrupted, Some("SIGINT"))
        );
        let m = Ending::Cancelled { open: 0 }.map(1, Front::Conversation);
        assert_eq!(
            m.turn,
            TurnEnd::failed(FailureKind::Interrupted, "interrupted")
        );
    }

    #[test]
    fn a_failed_run_carries_its_kind_and_the_server_s_status() {
        let m = Ending::Run(Err(ModelError::Api {
            status: 429,
            message: "Too Many Requests: slow down".into(),
        }))
        .map(1, Front::Run);
        assert_eq!(m.code, exit::FAILED);
        assert_eq!(
            m.turn,
            TurnEnd::Failed {
                message: "API error 429: Too Many Requests: slow down".into(),
                kind: FailureKind::RateLimit,
                status: Some(429),
            }
        );
        let m = Ending::Run(Ok(Outcome::Stopped("no".into()))).map(1, Front::Run);
        assert_eq!(
            (m.code, m.turn),
            (
                exit::FAILED,
                TurnEnd::failed(FailureKind::Hook, "stopped by a hook: no")
            )
        );
        let m = Ending::Run(Ok(Outcome::MaxCost("over".into()))).map(1, Front::Run);
        assert_eq!(
            (m.code, m.turn),
            (
                exit::MAX_TURNS,
                TurnEnd::failed(FailureKind::MaxCost, "stopped: over")
            )
        );
        let m = Ending::Failed("cannot watch signals".into()).map(1, Front::Run);
        assert_eq!(
            m.turn,
            TurnEnd::failed(FailureKind::Other, "cannot watch signals")
        );
    }

    #[test]
    fn a_compaction_alone_answers_nothing_and_succeeds() {
        let m = Ending::Compacted.map(1, Front::Run);
        assert_eq!(m.code, exit::ANSWERED);
        assert_eq!(m.turn, TurnEnd::Answered(String::new()));
        assert_eq!(m.outcome, EndOutcome::Compacted);
    }
}
