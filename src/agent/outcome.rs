//! How a run's ending is named: in the session's `end` line, and in words. The one mapping
//! the main agent's commands (through `app::Ending`) and the `task` tool share.

use super::Outcome;
use crate::model::{FailureKind, ModelError};
use crate::session::EndOutcome;

/// The outcome and detail a session's `end` line gives a run that ended with `result`.
pub fn session_end(result: &Result<Outcome, ModelError>) -> (EndOutcome, Option<String>) {
    match result {
        Ok(Outcome::Answered(_)) => (EndOutcome::Answered, None),
        Ok(Outcome::MaxTurns(_)) => (EndOutcome::MaxTurns, None),
        Ok(Outcome::MaxCost(why)) => (EndOutcome::MaxCost, Some(why.clone())),
        Ok(Outcome::Looped(why)) => (EndOutcome::Loop, Some(why.clone())),
        Ok(Outcome::GoalUnmet(why)) => (EndOutcome::GoalUnmet, Some(why.clone())),
        Ok(Outcome::Stopped(reason)) => (EndOutcome::Stopped, Some(reason.clone())),
        Err(e) => (EndOutcome::Error, Some(e.to_string())),
    }
}

/// The kind of failure of a run that ended with `result`; `None` when the model answered.
pub fn failure_kind(result: &Result<Outcome, ModelError>) -> Option<FailureKind> {
    match result {
        Ok(Outcome::Answered(_)) => None,
        Ok(Outcome::MaxTurns(_)) => Some(FailureKind::MaxTurns),
        Ok(Outcome::MaxCost(_)) => Some(FailureKind::MaxCost),
        Ok(Outcome::Looped(_)) => Some(FailureKind::Loop),
        Ok(Outcome::GoalUnmet(_)) => Some(FailureKind::GoalUnmet),
        Ok(Outcome::Stopped(_)) => Some(FailureKind::Hook),
        Err(e) => Some(e.kind()),
    }
}

/// `stopped after N turns`: a run that reached its limit of `max_turns` model requests.
pub fn stopped_after(max_turns: u32) -> String {
    format!(
        "stopped after {}",
        crate::text::count(max_turns.into(), "turn")
    )
}
