//! One ACP session of `hx acp`: its conversation while no prompt holds it, the agent being
//! built for it, its config options, and one prompt run to its end or to `session/cancel`.

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Instant;

use agent_client_protocol::v1::schema::{SessionConfigOption, StopReason};
use tokio::sync::oneshot;

use super::permission::Permissions;
use super::rpc::{self, error};
use super::view::{log, AcpView, Updates};
use super::{options, Listing};
use crate::agent::{Agent, Outcome};
use crate::app::outcome::{Ending, Front};
use crate::app::{build, Closed, Conversation, Outgoing, Switched};
use crate::config::Config;
use crate::model::Profile;

/// What building an agent on the blocking pool gives back.
pub(super) type Building =
    tokio::task::JoinHandle<(Result<build::Built, String>, Vec<crate::text::Warning>)>;

/// One ACP session: its conversation when no prompt holds it, and the agent being built.
pub(super) struct Slot {
    /// Built on the blocking pool while `session/new` has already answered (2,000 skills
    /// take tens of milliseconds to read, as in `hx chat`): the first prompt waits for it.
    pub(super) building: RefCell<Option<Building>>,
    pub(super) agent: tokio::sync::OnceCell<Result<Agent, String>>,
    /// The session's id, as the client names it.
    pub(super) id: String,
    pub(super) view: Arc<AcpView>,
    pub(super) permissions: Arc<Permissions>,
    pub(super) state: RefCell<SlotState>,
}

pub(super) struct SlotState {
    /// `None` while a prompt runs.
    pub(super) conversation: Option<Conversation>,
    pub(super) cancel: Option<oneshot::Sender<()>>,
    pub(super) running: Option<tokio::task::JoinHandle<()>>,
    /// The session's config, whose model and effort its config options change.
    pub(super) config: Config,
    /// The models the session offers (see [`options`]).
    pub(super) offered: Vec<String>,
    pub(super) listing: Listing,
    /// The profiles chosen since the last prompt, at most one for what each switched, in the
    /// order chosen: the next prompt goes on with them (the agent may still be building, or
    /// a prompt running, when the client chooses).
    pub(super) pending: Vec<(Profile, Switched)>,
    /// Prompts that came while one ran, oldest first (at most [`MAX_QUEUED`]): each runs when
    /// the one before it has its answer.
    pub(super) queued: std::collections::VecDeque<(serde_json::Value, String)>,
}

/// Prompts a session holds while one runs; one more is refused as busy.
pub(super) const MAX_QUEUED: usize = 16;

impl SlotState {
    /// Adds the models the provider listed so far at the end of those offered: the ones
    /// offered before stay where they were (a client's list does not reorder under the user,
    /// and the model the session started with can be chosen again).
    pub(super) fn refresh(&mut self) {
        let listing = self.listing.borrow();
        let listed = listing.as_deref().unwrap_or_default();
        if self.offered.is_empty() {
            self.offered = options::offered(&self.config, listed);
        } else {
            options::merge(&mut self.offered, listed.iter().map(String::as_str));
        }
    }

    pub(super) fn options(&mut self) -> Vec<SessionConfigOption> {
        self.refresh();
        options::options(&self.config, &self.offered)
    }

    pub(super) fn switch(&mut self, switched: Switched) {
        self.pending.retain(|(_, s)| *s != switched);
        self.pending.push((self.config.profile(), switched));
    }
}

impl Slot {
    pub(super) fn session_id(&self) -> String {
        self.id.clone()
    }

    /// The session's agent, once its build is done; a build that failed (a hooks file that
    /// is not valid, a sandbox that is required and cannot be had) fails every prompt.
    pub(super) async fn agent(&self) -> Result<Agent, rpc::RpcError> {
        let built = self
            .agent
            .get_or_init(|| async {
                let Some(building) = self.building.borrow_mut().take() else {
                    return Err("the agent was not built".to_string());
                };
                let (built, warnings) = building
                    .await
                    .map_err(|e| format!("cannot build the agent: {e}"))?;
                for w in &warnings {
                    log(&w.to_string());
                }
                built.map(|b| b.agent)
            })
            .await;
        built.clone().map_err(|e| {
            error(
                rpc::INTERNAL_ERROR,
                format!("cannot start the session's agent: {e}"),
            )
        })
    }

    pub(super) fn view_updates(&self) -> Updates {
        self.view.updates()
    }

    /// One prompt: a message of the conversation, to its end or to a `session/cancel`.
    pub(super) async fn run(
        &self,
        conversation: &mut Conversation,
        text: &str,
        mut cancelled: oneshot::Receiver<()>,
    ) -> Result<StopReason, rpc::RpcError> {
        let began = Instant::now();
        self.view.begin_prompt();
        // A cancel while the agent is still being built ends the prompt before it starts.
        let agent = tokio::select! {
            a = self.agent() => a?,
            Ok(()) = &mut cancelled => return Ok(StopReason::Cancelled),
        };
        if conversation.agent().is_none() {
            conversation.set_agent(agent);
        }
        let pending = std::mem::take(&mut self.state.borrow_mut().pending);
        for (profile, switched) in pending {
            self.view.set_window(profile.window());
            conversation.set_profile(profile, switched);
        }
        let message = Outgoing::text(text);
        let end = tokio::select! {
            r = conversation.send(&message) => Some(r),
            Ok(()) = &mut cancelled => None,
        };
        // The run's future is gone: its HTTP request dropped, its commands' process groups
        // killed, its subagents stopped.
        conversation.record_approvals(self.permissions.take_answered());
        let (ending, answer) = match end {
            Some(result) => {
                let answer = match &result {
                    Ok(Outcome::Answered(_)) => Ok(StopReason::EndTurn),
                    Ok(
                        Outcome::MaxTurns(_)
                        | Outcome::MaxCost(_)
                        | Outcome::Looped(_)
                        | Outcome::GoalUnmet(_),
                    ) => Ok(StopReason::MaxTurnRequests),
                    Ok(Outcome::Stopped(_)) => Ok(StopReason::Refusal),
                    Err(e) => Err(error(rpc::INTERNAL_ERROR, e.to_string())),
                };
                (Ending::Run(result), answer)
            }
            None => {
                let ending = conversation.cancelled(began.elapsed()).await;
                self.view.close_open();
                (ending, Ok(StopReason::Cancelled))
            }
        };
        conversation.ended(ending, Front::Conversation);
        answer
    }

    /// The session's `end` line written; a session with nothing to go on with (no prompt
    /// was sent, the agent could not be built, or the model was never reached) is removed,
    /// so `hx agent -c` finds the one before it.
    pub(super) fn close(&self) {
        let mut st = self.state.borrow_mut();
        let Some(mut conversation) = st.conversation.take() else {
            return;
        };
        if let Closed::Kept { error: Some(e), .. } = conversation.close() {
            log(&crate::text::Warning::new(e).to_string());
        }
    }
}
