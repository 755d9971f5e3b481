//! The main agent's checkpoints of the workspace (see `crate::checkpoint`): one before each
//! user message (taken beside its first request), one before each turn whose calls may change
//! files, and one after that turn's tools, which tells the views what the turn changed (taken
//! on a thread of its own while the next request goes out: nothing of the run changes the
//! workspace between a turn's last answer and the model's next calls, and a model's first
//! token comes far later than a checkpoint is done).
//! Each is a `checkpoint` line of the session; one that cannot be taken is a warning, never
//! the end of the run.

use std::future::Future;
use std::pin::Pin;

use super::{Agent, Run};
use crate::checkpoint::{Changes, Snap, Store};
use crate::events::Event;
use crate::model::ToolCall;
use crate::session::{CheckpointKind, CheckpointLine, Session};
use crate::tools::{Kind as ToolKind, ToolSet};

/// What taking a checkpoint gave: none when checkpoints are off or the run is unrecorded;
/// else the checkpoint and its warnings, or why it could not be taken.
pub(super) type Taken = Option<Result<(Snap, Vec<String>), String>>;

/// Work going on beside other work.
type Going<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A checkpoint being taken beside other work, until what it took is asked for once.
pub(super) struct Beside<'a, T = Taken> {
    taking: Option<Going<'a, T>>,
    taken: Option<T>,
}

impl<'a, T> Beside<'a, T> {
    pub(super) fn new(taking: Going<'a, T>) -> Self {
        Beside {
            taking: Some(taking),
            taken: None,
        }
    }

    /// Runs `work` to its end while the checkpoint, if still being taken, goes on beside it.
    /// The work is polled first. Both share the runtime's one thread: what the side does
    /// without waiting holds the work back (a request's bytes are written by its
    /// connection's task), so work that must truly go on at once runs on a thread of its own
    /// and is only awaited here (`Agent::after_turn`).
    pub(super) async fn run<W>(&mut self, work: impl Future<Output = W>) -> W {
        let mut work = std::pin::pin!(work);
        if let Some(t) = self.taking.as_mut() {
            tokio::select! {
                biased;
                out = &mut work => return out,
                t = t.as_mut() => {
                    self.taken = Some(t);
                    self.taking = None;
                }
            }
        }
        work.await
    }

    /// What the checkpoint took, waited for if need be; none once asked before.
    pub(super) async fn finish(&mut self) -> Option<T> {
        if let Some(t) = self.taking.take() {
            self.taken = Some(t.await);
        }
        self.taken.take()
    }
}

/// What the checkpoint after a turn found on its own thread, for the views.
#[derive(Default)]
struct Apart {
    /// What opening the store had to say.
    said: Vec<String>,
    taken: Option<Result<(Snap, Vec<String>), String>>,
    changes: Option<Result<Changes, String>>,
}

/// The last turn's checkpoint ([`Agent::after_turn`]), waited for if it is still being
/// taken, and recorded: before anything else may change the workspace or read the session's
/// checkpoints.
pub(super) async fn settle(session: &mut Session, after: &mut Option<Beside<'_, ()>>) {
    if let Some(mut a) = after.take() {
        a.finish().await;
    }
    session.record_arrived();
}

/// The session's last checkpoint, the one a new checkpoint follows.
fn last_snap(session: &Session) -> Option<Snap> {
    session.checkpoints().last().map(|c| Snap {
        commit: c.line.commit.clone(),
        tree: c.line.tree.clone(),
    })
}

/// A checkpoint's line in the session.
fn line(
    what: CheckpointKind,
    n: Option<u32>,
    snap: &Snap,
    at_message: usize,
    label: String,
) -> CheckpointLine {
    CheckpointLine {
        n,
        what,
        commit: snap.commit.clone(),
        tree: snap.tree.clone(),
        at_message,
        label,
        at: crate::session::store::now_rfc3339(),
    }
}

/// [`Beside::run`] for a checkpoint that may not be being taken.
pub(super) async fn beside<W>(
    side: &mut Option<Beside<'_, ()>>,
    work: impl Future<Output = W>,
) -> W {
    match side {
        Some(s) => s.run(work).await,
        None => work.await,
    }
}

impl Agent {
    /// Whether a turn's calls may change files: any call of a tool that does not say it only
    /// reads or searches (a tool the set does not have is answered without running).
    pub(super) fn may_change_files(&self, tools: &ToolSet, calls: &[ToolCall]) -> bool {
        self.checkpoints.is_some()
            && calls.iter().any(|c| {
                tools
                    .get(&c.name)
                    .is_some_and(|t| !matches!(t.kind(), ToolKind::Read | ToolKind::Search))
            })
    }

    /// Takes a checkpoint of the workspace for `session` and records it, numbered. Its number
    /// and what the store knows of it, or nothing when checkpoints are off or it could not be
    /// taken (the run goes on; a warning says why).
    pub(super) async fn checkpoint(
        &self,
        session: &mut Session,
        kind: CheckpointKind,
        label: String,
    ) -> Option<(u32, Snap)> {
        let at_message = session.messages().len();
        let taken = self.take_checkpoint(session).await;
        self.record_checkpoint(session, kind, label, at_message, taken, true)
    }

    /// The message's checkpoint of `run`, once: waited for if it is still being taken, then
    /// recorded (`numbered`: as a point to rewind to).
    pub(super) async fn message_checkpoint(
        &self,
        session: &mut Session,
        run: &mut Run<'_>,
        numbered: bool,
    ) {
        if let Some(t) = run.beside.finish().await {
            let label = run.label.clone();
            self.record_checkpoint(
                session,
                CheckpointKind::Message,
                label,
                run.at_message,
                t,
                numbered,
            );
        }
    }

    /// The work of a checkpoint that does not need the session, so that it can go on while
    /// the session is busy: none when checkpoints are off or the run is unrecorded.
    pub(super) fn take_checkpoint(
        &self,
        session: &Session,
    ) -> impl Future<Output = Taken> + Send + '_ {
        // A rewind needs the session file: an unrecorded run keeps none.
        let recorded = session.path().is_some();
        let id = session.id().to_string();
        let previous = last_snap(session);
        async move {
            if !recorded {
                return None;
            }
            let store = self.store().await?;
            Some(store.snapshot(&id, previous.as_ref()).await)
        }
    }

    /// Records what [`Agent::take_checkpoint`] took, `at_message` the place in the history
    /// it precedes; warns when it could not be taken.
    fn record_checkpoint(
        &self,
        session: &mut Session,
        kind: CheckpointKind,
        label: String,
        at_message: usize,
        taken: Taken,
        numbered: bool,
    ) -> Option<(u32, Snap)> {
        let snap = self.told(taken?)?;
        let n = numbered.then(|| session.next_checkpoint());
        session.record_checkpoint(line(kind, n, &snap, at_message, label));
        Some((n.unwrap_or(0), snap))
    }

    /// A checkpoint taken, its warnings told; or why none was taken.
    fn told(&self, taken: Result<(Snap, Vec<String>), String>) -> Option<Snap> {
        match taken {
            Ok((snap, warnings)) => {
                for w in warnings {
                    self.warn(&w);
                }
                Some(snap)
            }
            Err(e) => {
                self.warn(&format!("no checkpoint taken: {e}"));
                None
            }
        }
    }

    async fn store(&self) -> Option<&Store> {
        let warn = |line: &str| self.warn(line);
        self.checkpoints.as_ref()?.store(&warn).await
    }

    /// After a turn's tools: the checkpoint that tells what they changed, and the views
    /// told. Taken from now on a thread of the runtime's blocking pool, beside what comes
    /// next (the next request): the runtime has one thread, and a checkpoint's work (reading,
    /// hashing and writing what changed) mostly never waits, so on that thread it would hold
    /// the request back until it was done, its bytes being written by the connection's task.
    /// Its line is left in the session's [`Arriving`](crate::session::Arriving) as soon as it
    /// is taken (a run cut short still records it) for [`Agent::after_recorded`];
    /// `at_message`: the history's length after the turn's answers.
    pub(super) fn after_turn(
        &self,
        session: &Session,
        n: u32,
        before: Snap,
        at_message: usize,
    ) -> Beside<'_, ()> {
        // A rewind needs the session file: an unrecorded run keeps none.
        let recorded = session.path().is_some();
        let runtime = tokio::runtime::Handle::try_current();
        let (Some(checkpoints), true, Ok(runtime)) = (self.checkpoints.clone(), recorded, runtime)
        else {
            return Beside::new(Box::pin(std::future::ready(())));
        };
        let arriving = session.arriving();
        // Counted from now, so that a run cut short before the thread starts waits too.
        let expected = arriving.expect();
        let id = session.id().to_string();
        let previous = last_snap(session);
        let apart = tokio::task::spawn_blocking(move || {
            let _expected = expected;
            runtime.block_on(async move {
                let said = std::sync::Mutex::new(Vec::new());
                let warn = |line: &str| {
                    said.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(line.to_string())
                };
                let mut apart = Apart::default();
                if let Some(store) = checkpoints.store(&warn).await {
                    let taken = store.snapshot(&id, previous.as_ref()).await;
                    if let Ok((after, _)) = &taken {
                        arriving.put(line(
                            CheckpointKind::After,
                            None,
                            after,
                            at_message,
                            String::new(),
                        ));
                        apart.changes = Some(store.changes(&before.tree, &after.tree).await);
                    }
                    apart.taken = Some(taken);
                }
                apart.said = said.into_inner().unwrap_or_else(|p| p.into_inner());
                apart
            })
        });
        Beside::new(Box::pin(async move {
            let Ok(apart) = apart.await else {
                self.warn("no checkpoint taken: its thread failed");
                return;
            };
            for line in &apart.said {
                self.warn(line);
            }
            if let Some(taken) = apart.taken {
                self.told(taken);
            }
            match apart.changes {
                Some(Ok(c)) if !c.paths.is_empty() => self.emit(&Event::FilesChanged {
                    checkpoint: n,
                    changes: &c,
                }),
                Some(Err(e)) => self.warn(&format!("cannot tell what the turn changed: {e}")),
                _ => {}
            }
        }))
    }

    /// [`settle`] for `run`'s last turn.
    pub(super) async fn after_recorded(&self, session: &mut Session, run: &mut Run<'_>) {
        settle(session, &mut run.after).await;
    }
}
