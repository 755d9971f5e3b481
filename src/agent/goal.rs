//! A goal the run checks (`hx agent --until CMD`, `/goal CMD`): when the model answers, CMD
//! runs as a `bash` call would (in the sandbox, in the workspace, its output bounded); a
//! failure goes back to the model as the next user message and the run goes on, until CMD
//! passes, the turn limit or the budget ends the run, or [`Goal::max_rounds`] answers were
//! checked in vain.
//!
//! It is checked before the Stop hooks: a run whose goal fails has not stopped.

use std::sync::Arc;

use serde_json::json;

use super::{Agent, Outcome, Run};
use crate::events::{Event, GoalCheck};
use crate::model::Message;
use crate::session::Session;
use crate::tools::bash::Bash;
use crate::tools::output::quote;
use crate::tools::{Tool, ToolResult};

/// What the user message that sends a failed check back starts with.
pub const NOTICE: &str = "[hx: the goal check failed] ";

/// Answers checked in one run (one message) before it ends without the goal, when nothing
/// else says otherwise.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;

/// A command that must pass for the run to have answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Goal {
    /// The shell command, as `bash -c` runs it.
    pub command: String,
    /// Answers checked, at most.
    pub max_rounds: u32,
}

impl Goal {
    pub fn new(command: impl Into<String>) -> Arc<Goal> {
        Arc::new(Goal {
            command: command.into(),
            max_rounds: DEFAULT_MAX_ROUNDS,
        })
    }
}

/// What a check of the goal decided.
pub(super) enum Checked {
    /// It passed: the answer stands.
    Passed,
    /// It failed and the run goes on: the message for the model is in the session.
    Again,
    /// It failed on the last round: the run ends.
    Unmet(Outcome),
}

impl Agent {
    /// Runs the goal's command after an answer, and says what it decided; `None` without a
    /// goal. Its whole time is the command's: the `bash` tool's longest timeout bounds it.
    pub(super) async fn check_goal(
        &self,
        session: &mut Session,
        run: &mut Run<'_>,
    ) -> Option<Checked> {
        let goal = self.goal.clone()?;
        run.goal_rounds = run.goal_rounds.saturating_add(1);
        let round = run.goal_rounds;
        let timeout = self.tool_cx.limits.bash_max_timeout.as_secs();
        let args = json!({"command": goal.command, "timeout": timeout});
        let result = Bash.call(args, &self.tool_cx).await;
        let passed = passed(&result);
        self.emit(&Event::GoalChecked(&GoalCheck {
            command: &goal.command,
            round,
            max_rounds: goal.max_rounds,
            passed,
            exit_code: result.exit_code,
            output: &result.content,
        }));
        if passed {
            return Some(Checked::Passed);
        }
        let command = quote(&goal.command);
        if round >= goal.max_rounds {
            self.stop(session, run.began, false).await;
            return Some(Checked::Unmet(Outcome::GoalUnmet(format!(
                "the goal `{command}` still failed after {round} rounds (--until)"
            ))));
        }
        // The output is bounded as a bash result is (the `bash` tool cut it).
        session.push(Message::User(format!(
            "{NOTICE}You answered, but the command `{command}` that checks the work failed \
             (round {round} of {}). Its output:\n\n{}\n\nFix what it reports, then answer \
             again: it runs again after your answer.",
            goal.max_rounds, result.content
        )));
        Some(Checked::Again)
    }
}

/// A check passes when its command exited 0: a timeout, a signal or a command that could not
/// start fails it.
fn passed(result: &ToolResult) -> bool {
    !result.is_error && result.exit_code == Some(0)
}
