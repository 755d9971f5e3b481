//! `hx diff`, `hx rewind` and `hx checkpoints`: what the agent changed, undoing it, and the
//! store that keeps it.

use std::io::{IsTerminal, Write};
use std::path::Path;

use super::{exit, CheckpointsArgs, CheckpointsCommand, DiffArgs, RewindArgs};
use crate::app::rewind::{self, Refused};
use crate::app::session::{find, Pick, Resumed};
use crate::checkpoint::git::Program;
use crate::checkpoint::Store;
use crate::config::{process_env, Env, Flags};
use crate::sandbox::{Kernel, Plan};
use crate::session::{RewindLine, SessionLog};

/// A current-thread runtime for the git runs; no agent runs here.
pub(super) fn block_on<F: std::future::Future>(f: F) -> Result<F::Output, i32> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => Ok(rt.block_on(f)),
        Err(e) => Err(super::fail(exit::FAILED, format!("cannot start: {e}"))),
    }
}

/// git as a run in `cwd` finds it: never in a folder a command may write.
pub(super) fn host_git(config: &crate::config::Config, cwd: &Path, env: &Env) -> Program {
    let workspace = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let plan = Plan::new(&config.sandbox, &workspace, env, Kernel::detect());
    Program::find(&plan.host_path(env), env.get("PATH").map(String::as_str))
}

/// The workspace's store, as a run here would open it.
async fn open_store(cwd: &Path, env: &Env) -> Result<Store, i32> {
    let config = match super::load_config(cwd, env, &Flags::default()) {
        Ok(c) => c,
        Err(code) => return Err(code),
    };
    let settings = crate::checkpoint::Settings {
        // Looking at and undoing what was kept works even with taking new ones turned off.
        enabled: true,
        ..config.checkpoints.clone()
    };
    let git = host_git(&config, cwd, env);
    Store::open(cwd, env, &settings, &git).await.map_err(|off| {
        super::fail(
            exit::FAILED,
            off.line.unwrap_or_else(|| "checkpoints are off".into()),
        )
    })
}

fn session(pick: Option<&str>, record: bool, cwd: &Path, env: &Env) -> Result<Resumed, i32> {
    let pick = pick.map_or(Pick::Newest, Pick::Id);
    find(pick, record, cwd, env).map_err(super::show_failure)
}

pub(super) fn diff_command(args: DiffArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let resumed = match session(args.session.as_deref(), false, &cwd, &env) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let color = std::io::stdout().is_terminal() && !env.contains_key("NO_COLOR");
    let result = block_on(async {
        let store = open_store(&cwd, &env).await?;
        rewind::diff(
            &store,
            resumed.id(),
            &resumed.loaded.checkpoints,
            args.turn,
            color,
            args.stat,
        )
        .await
        .map_err(|e| super::fail(exit::FAILED, e))
    });
    let bytes = match result {
        Ok(Ok(b)) => b,
        Ok(Err(code)) | Err(code) => return code,
    };
    // As git wrote it (its colours included); a closed pipe ends the output, not hx.
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
    exit::ANSWERED
}

pub(super) fn rewind_command(args: RewindArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let listing = args.n.is_none() && !args.undo;
    // Locked when it changes: a run still writing the session must end first.
    let resumed = match session(args.session.as_deref(), !listing, &cwd, &env) {
        Ok(r) => r,
        Err(code) => return code,
    };
    match block_on(rewind_async(args, resumed, &cwd, &env, listing)) {
        Ok(code) | Err(code) => code,
    }
}

async fn rewind_async(
    args: RewindArgs,
    resumed: Resumed,
    cwd: &Path,
    env: &Env,
    listing: bool,
) -> i32 {
    let checkpoints = &resumed.loaded.checkpoints;
    let id = resumed.id().to_string();
    let code_too = !args.conversation;
    let store = if code_too || listing {
        match open_store(cwd, env).await {
            Ok(s) => Some(s),
            Err(code) => return code,
        }
    } else {
        None
    };
    if listing {
        let Some(store) = &store else {
            return exit::FAILED;
        };
        return list(store, &id, checkpoints).await;
    }
    let (n, conversation) = if args.undo {
        let Some(last) = resumed.loaded.rewinds.iter().rev().find(|r| r.code) else {
            return super::fail(exit::USAGE, "this session has no rewind of files to undo");
        };
        match last.safety {
            Some(s) => (s, false),
            None => return super::fail(exit::USAGE, "the last rewind kept no checkpoint"),
        }
    } else {
        (args.n.unwrap_or(0), !args.code)
    };
    let at = match rewind::find(checkpoints, n) {
        Ok(i) => i,
        Err(e) => return super::fail(exit::USAGE, e),
    };
    let target = &checkpoints[at];
    if conversation && !target.conversation_ok {
        return super::fail(
            exit::USAGE,
            format!(
                "the conversation was compacted or rewound past checkpoint {n} since; \
                 rewind the files only (--code)"
            ),
        );
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            return super::fail(
                exit::USAGE,
                "stdin is not a terminal, so hx cannot ask; add --yes to rewind",
            );
        }
        let what = match (code_too, conversation) {
            (true, true) => "the files and the conversation",
            (true, false) => "the files",
            _ => "the conversation",
        };
        if !super::trust::ask(&format!("Rewind {what} to checkpoint {n}?")) {
            errln!("hx: nothing rewound");
            return exit::FAILED;
        }
    }
    let next = checkpoints
        .iter()
        .filter_map(|c| c.line.n)
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    let at_message = target.line.at_message;
    let mut lines = Vec::new();
    let mut paths = 0;
    let mut safety = None;
    if let (true, Some(store)) = (code_too, &store) {
        match rewind::rewind_code(store, &id, checkpoints, n, args.force).await {
            Ok(r) => {
                let shown_written = rewind::shown(store, &r.restored.written);
                let shown_removed = rewind::shown(store, &r.restored.removed);
                for p in &shown_written {
                    outln!("restored {p}");
                }
                for p in &shown_removed {
                    outln!("removed {p}");
                }
                for p in rewind::shown(store, &r.restored.refused) {
                    errln!("hx: warning: left alone (a link or a file is where a folder on its way was): {p}");
                }
                paths = shown_written.len() + shown_removed.len();
                // The messages the history has at the end, for the checkpoint of now.
                let history = resumed.loaded.messages.len();
                lines.extend(rewind::lines_of(&r, n, next, history));
                safety = Some(next);
            }
            Err(Refused::Conflicts(list)) => {
                errln!(
                    "hx: {} changed outside hx's turns after checkpoint {n}, and a rewind would overwrite:",
                    if list.len() == 1 { "1 file was".to_string() } else { format!("{} files were", list.len()) }
                );
                for p in &list {
                    errln!("  {p}");
                }
                errln!("hx: nothing rewound; hx rewind {n} --force overwrites them");
                return exit::FAILED;
            }
            Err(e) => return super::fail(exit::FAILED, e),
        }
    }
    let line = RewindLine {
        to: n,
        code: code_too,
        conversation,
        at_message: conversation.then_some(at_message),
        safety,
        paths,
        at: crate::session::store::now_rfc3339(),
    };
    if let Err(code) = record(&resumed, &lines, &line) {
        return code;
    }
    let mut summary = match (code_too, paths) {
        (false, _) => String::new(),
        (true, 0) => "no file to restore".to_string(),
        (true, 1) => "1 file restored".to_string(),
        (true, k) => format!("{k} files restored"),
    };
    if conversation {
        if !summary.is_empty() {
            summary.push_str("; ");
        }
        summary.push_str(&format!(
            "the conversation goes on from before checkpoint {n} (hx agent -c)"
        ));
    }
    errln!("hx: rewound to checkpoint {n}: {summary}");
    if let Some(s) = safety {
        errln!("hx: what was replaced is checkpoint {s}: hx rewind --undo puts it back");
    }
    exit::ANSWERED
}

/// Appends the rewind's lines to the session file it was read from, under the lock it was
/// read with.
fn record(
    resumed: &Resumed,
    checkpoints: &[crate::session::CheckpointLine],
    rewind: &RewindLine,
) -> Result<(), i32> {
    let Some(file) = resumed.locked.as_ref().and_then(|f| f.try_clone().ok()) else {
        return Err(super::fail(exit::FAILED, "the session file is not open"));
    };
    let log = SessionLog::append_locked(&resumed.path, file, resumed.loaded.valid_len)
        .map_err(|e| super::fail(exit::FAILED, format!("cannot record the rewind: {e}")))?;
    for c in checkpoints {
        log.write(&crate::session::Line::Checkpoint(c).text());
    }
    log.write(&crate::session::Line::Rewind(rewind).text());
    match log.close() {
        None => Ok(()),
        Some(e) => Err(super::fail(
            exit::FAILED,
            format!("cannot record the rewind: {e}"),
        )),
    }
}

async fn list(store: &Store, id: &str, checkpoints: &[crate::session::Checkpoint]) -> i32 {
    let listed = match rewind::list(store, id, checkpoints).await {
        Ok(l) => l,
        Err(e) => return super::fail(exit::FAILED, e),
    };
    if listed.is_empty() {
        outln!("session {id} has no checkpoints");
        return exit::ANSWERED;
    }
    for l in listed {
        outln!("{}", rewind::listed_line(&l));
    }
    exit::ANSWERED
}

pub(super) fn checkpoints_command(args: CheckpointsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let result = block_on(async {
        let store = open_store(&cwd, &env).await?;
        let recorded = crate::app::session::recorded_ids(&env);
        if let Some(CheckpointsCommand::Prune) = args.command {
            match store.prune(recorded.as_ref()).await {
                Ok(p) => {
                    let gone = match p.sessions_gone {
                        0 => String::new(),
                        n => format!(" ({n} whose session is gone)"),
                    };
                    outln!(
                        "pruned: {} session(s) dropped{gone}, {} → {} bytes",
                        p.sessions_dropped,
                        crate::text::thousands(p.bytes_before),
                        crate::text::thousands(p.bytes_after)
                    )
                }
                Err(e) => return Err(super::fail(exit::FAILED, e)),
            }
        }
        let usage = store.usage(recorded.as_ref()).await;
        // Sessions removed before they took their checkpoints with them (by hand, or by an
        // older hx) are counted apart: nothing can go back to them.
        let gone = match usage.gone {
            0 => String::new(),
            n => format!(" ({n} whose session is gone: hx checkpoints prune drops them)"),
        };
        outln!("path:        {}", store.dir().display());
        outln!("size:        {} bytes", crate::text::thousands(usage.bytes));
        outln!("sessions:    {}{gone}", usage.sessions);
        outln!("checkpoints: {}", usage.checkpoints);
        Ok(exit::ANSWERED)
    });
    match result {
        Ok(Ok(code)) | Ok(Err(code)) | Err(code) => code,
    }
}
