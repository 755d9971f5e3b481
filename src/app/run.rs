//! One task, run to its end: the agent built, the session opened (new or resumed), the run
//! raced against the cancelling signals, its ending mapped and recorded, the session closed.
//! `hx agent` is this with views and flags around it.

use std::path::PathBuf;

use super::conversation::{Closed, Conversation, Outgoing};
use super::outcome::{Ending, Front};
use super::session::{self, Resumed};
use super::signals::{self, Signals};
use super::{build, exit, invoke};
use crate::agent::compact::Ended;
use crate::agent::Outcome;
use crate::config::{Config, Env};
use crate::events::{Event, Events, Scope, Start, TurnEnd};
use crate::text::Warning;

/// What one run is asked to do.
pub struct Task {
    pub config: Config,
    pub cwd: PathBuf,
    pub env: Env,
    /// The user's message; `None` compacts the resumed session and stops.
    pub message: Option<String>,
    /// The session to continue; `None` starts one.
    pub resume: Option<Resumed>,
    /// Record nothing.
    pub ephemeral: bool,
    /// `--until CMD`: the command the answer must pass.
    pub until: Option<String>,
    /// What was said before the views existed (the config's warnings): shown after the line
    /// saying where the run goes, or before the error that stops it.
    pub warnings: Vec<Warning>,
}

/// Runs `task` to its end and gives the exit code; everything it does goes to `events`.
/// `answered` gets the answer, when there is one, before the session is closed; its error
/// fails the run.
pub async fn run(
    task: Task,
    events: Events,
    answered: impl FnOnce(&str) -> Result<(), String>,
) -> i32 {
    let Task {
        config,
        cwd,
        env,
        message,
        resume,
        ephemeral,
        until,
        mut warnings,
    } = task;
    let main = Scope::default();
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.clone());
    let recorder = build::recorder(&config, &workspace, &env, ephemeral);
    // The agent first, so a run that cannot start (a broken hooks file) records nothing.
    let id = match &resume {
        Some(r) => r.id().to_string(),
        None => crate::session::store::new_id(),
    };
    let fatal = |code: i32, message: &str, warnings: &[Warning]| {
        for w in warnings {
            events.warn(&main, w);
        }
        events.emit(&main, &Event::Error(message));
        code
    };
    let built = match build::build_agent_with(
        &config,
        &cwd,
        &env,
        events.clone(),
        recorder.clone(),
        &id,
        build::Asks::default(),
        &mut warnings,
    ) {
        Ok(b) => b,
        Err(e) => return fatal(exit::USAGE, &e, &warnings),
    };
    let mut conversation = Conversation::new(recorder.clone(), id.clone());
    conversation.set_goal(until.map(crate::agent::goal::Goal::new));
    let agent = built.agent;
    let root = agent.tool_cx().workspace.root().to_path_buf();
    // `/NAME args`: read before anything is recorded, so an unknown name sends nothing;
    // `//text` is the message `/text`. Command files are looked for only then.
    let (message, prepared) = match message.as_deref().map(invoke::classify) {
        Some(invoke::Line::Slash { name, args }) => {
            let invocables = invoke::Invocables::discover_for(&root, built.skills, name);
            warnings.extend(invocables.warnings());
            let Some(target) = invocables.find(name) else {
                return fatal(exit::USAGE, &invocables.unknown(name), &warnings);
            };
            match invoke::prepare(target, args, &invocables.skills, &root, &env, true) {
                Ok(p) => {
                    warnings.extend(p.warnings.iter().cloned());
                    (message, Some(p))
                }
                Err(e) => return fatal(exit::USAGE, &e, &warnings),
            }
        }
        Some(invoke::Line::Message(m)) => (Some(m), None),
        None => (None, None),
    };
    let resumed = resume.is_some();
    let session = session::open(&recorder, id, resume, agent.profile(), &mut warnings);
    match session {
        Ok(s) => conversation.open(s),
        Err(e) => return fatal(exit::FAILED, &e, &warnings),
    }
    events.emit(
        &main,
        &Event::Started(&Start {
            session_id: conversation.id(),
            model: &config.model,
            provider: &config.provider,
            base_url: &config.base_url,
            resumed,
        }),
    );
    for w in &warnings {
        events.warn(&main, w);
    }
    // What the tools remember (skills loaded, the todo list) follows the history they see.
    conversation.set_agent(agent.clone());
    let mut signals = match Signals::cancelling() {
        Ok(s) => s,
        Err(e) => {
            conversation.ended(Ending::Failed(e.to_string()), Front::Run);
            let code = fatal(exit::FAILED, &format!("cannot watch signals: {e}"), &[]);
            closed(conversation.close(), &events);
            return code;
        }
    };
    let reaper = tokio::spawn(signals::reap_orphans());
    let began = std::time::Instant::now();
    let work = async {
        match (&message, prepared) {
            (Some(_), Some(prepared)) => {
                let inv = prepared.finish(agent.tool_cx()).await;
                let mut said = Vec::new();
                let outgoing = inv.outgoing(&agent, &config, &mut said);
                for w in &said {
                    events.warn(&main, w);
                }
                Ending::Run(conversation.send(&outgoing).await)
            }
            (Some(text), None) => Ending::Run(conversation.send(&Outgoing::text(text)).await),
            (None, _) => {
                // A compaction on its own is the run's one turn.
                events.emit(&main, &Event::TurnStarted);
                match conversation.compact().await {
                    Ok(()) => Ending::Compacted,
                    Err(Ended::Stopped(reason)) => Ending::Run(Ok(Outcome::Stopped(reason))),
                    Err(Ended::Error(e)) => Ending::Run(Err(e)),
                }
            }
        }
    };
    let ending = tokio::select! {
        r = work => r,
        sig = signals.recv() => Ending::Signalled(sig),
    };
    // The run is over, or was just dropped: that killed the running commands' process groups
    // and the subagents, and the session still holds everything it appended. The handlers
    // stay installed, so a second signal (a closing terminal sends SIGHUP twice) cannot cut
    // the cleanup short: the session's last lines and the end of everything hx started, which
    // take at most about 2 s.
    drop(signals);
    reaper.abort();
    if let Ending::Signalled(_) = ending {
        conversation.settle_checkpoints().await;
        conversation.stopped(began.elapsed());
    }
    let ran = matches!(ending, Ending::Run(_));
    let mapped = conversation.ended(ending, Front::Run);
    events.emit(&main, &Event::TurnEnded(&mapped.turn));
    if let (true, Some(text)) = (ran, &message) {
        let notifier = crate::notify::Notifier::new(
            config.notifications,
            config.notify.clone(),
            config.notify_after,
            workspace.clone(),
        );
        if let Some(n) = notifier {
            n.tell(
                began.elapsed(),
                conversation.id(),
                crate::notify::Why::turn(text, &mapped.turn),
            )
            .await;
        }
    }
    let mut code = mapped.code;
    if let (TurnEnd::Answered(text), Some(_)) = (&mapped.turn, &message) {
        if let Err(e) = answered(text) {
            code = fatal(exit::FAILED, &e, &[]);
        }
    }
    if let (Some(agent), Some(_)) = (conversation.agent(), &message) {
        agent.session_end("other").await;
    }
    let checkpoints = conversation.agent().and_then(|a| a.checkpoints().cloned());
    let closing = conversation.close();
    if let (Closed::Discarded(id), Some(checkpoints)) = (&closing, checkpoints) {
        // The message's checkpoint was taken beside the request that never got an answer:
        // it goes with the session, which nothing can go back to. Should that fail, the
        // store's next prune drops it, and `hx checkpoints` counts it apart until then.
        let _ = checkpoints.forget(std::slice::from_ref(id)).await;
    }
    closed(closing, &events);
    code
}

/// Tells the views what became of the session: its id and how to go on from it when it was
/// kept and recorded, and a failure to write it.
pub fn closed(closed: Closed, events: &Events) {
    let main = Scope::default();
    let Closed::Kept { id, short, error } = closed else {
        return;
    };
    if let Some(e) = error {
        events.warn(&main, &Warning::new(e));
    }
    if let Some(short) = short {
        events.emit(
            &main,
            &Event::SessionSaved {
                id: &id,
                short: &short,
            },
        );
    }
}
