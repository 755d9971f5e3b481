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
    let terminal = std::io::stdout().is_terminal();
    let result = block_on(async {
        let store = open_store(&cwd, &env).await?;
        rewind::diff(
            &store,
            resumed.id(),
            &resumed.loaded.checkpoints,
            args.turn,
            args.stat,
        )
        .await
        .map_err(|e| super::fail(exit::FAILED, e))
    });
    let bytes = match result {
        Ok(Ok(b)) => b,
        Ok(Err(code)) | Err(code) => return code,
    };
    // Piped, exactly as git wrote it, so that `hx diff | git apply -R` undoes it. On a
    // terminal the patch is outside text like any other (the files' contents and names are
    // the model's): escaped, then coloured by hx, since git's own colours would be escaped
    // with the rest. A closed pipe ends the output, not hx.
    let bytes = if terminal {
        let color = !env.contains_key("NO_COLOR");
        for_terminal(&bytes, color, args.stat).into_bytes()
    } else {
        bytes
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(&bytes).and_then(|()| out.flush());
    exit::ANSWERED
}

const BOLD: &str = "\x1b[1m";
const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const RESET: &str = "\x1b[m";

/// A patch (or `--stat`) as a terminal shows it: every control character and bidi mark of
/// it made visible (`text::escape_controls`), then, with `color`, git's colours put back
/// around the escaped lines: headers bold, hunk lines cyan, removed red, added green; in a
/// stat, the graph's `+` and `-`.
fn for_terminal(patch: &[u8], color: bool, stat: bool) -> String {
    let text = String::from_utf8_lossy(patch);
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    // Between a `diff --git` line and its first hunk: the header, whose `---` and `+++`
    // lines are names, not removed and added lines.
    let mut header = false;
    for line in text.split_inclusive('\n') {
        let shown = crate::text::escape_controls(line);
        if !color {
            out.push_str(&shown);
            continue;
        }
        // The colour ends before the line does, as git's does.
        let body = shown.trim_end_matches(['\r', '\n']);
        let end = &shown[body.len()..];
        if stat {
            out.push_str(&stat_graph(body));
            out.push_str(end);
            continue;
        }
        let paint = if body.starts_with("diff --git ") {
            header = true;
            Some(BOLD)
        } else if body.starts_with("@@") {
            header = false;
            Some(CYAN)
        } else if header {
            Some(BOLD)
        } else if body.starts_with('+') {
            Some(GREEN)
        } else if body.starts_with('-') {
            Some(RED)
        } else {
            None
        };
        match paint {
            Some(p) if !body.is_empty() => {
                out.push_str(p);
                out.push_str(body);
                out.push_str(RESET);
            }
            _ => out.push_str(body),
        }
        out.push_str(end);
    }
    out
}

/// One line of a stat with its graph (what follows the last `|`) coloured.
fn stat_graph(line: &str) -> String {
    let Some(bar) = line.rfind('|') else {
        return line.to_string();
    };
    let (name, graph) = line.split_at(bar);
    let mut out = String::with_capacity(line.len() + 16);
    out.push_str(name);
    let mut open: Option<char> = None;
    for c in graph.chars() {
        let want = matches!(c, '+' | '-').then_some(c);
        if want != open {
            if open.is_some() {
                out.push_str(RESET);
            }
            match want {
                Some('+') => out.push_str(GREEN),
                Some(_) => out.push_str(RED),
                None => {}
            }
            open = want;
        }
        out.push(c);
    }
    if open.is_some() {
        out.push_str(RESET);
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_for_the_terminal_is_escaped_and_coloured_by_its_lines() {
        let patch = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\x1b[2J\n+new\x1b]52;c;aGk=\x07\n same\r\n";
        let plain = for_terminal(patch, false, false);
        assert_eq!(
            plain,
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old^[[2J\n+new^[]52;c;aGk=^G\n same\r\n"
        );
        let coloured = for_terminal(patch, true, false);
        assert_eq!(
            coloured,
            "\x1b[1mdiff --git a/x b/x\x1b[m\n\x1b[1m--- a/x\x1b[m\n\x1b[1m+++ b/x\x1b[m\n\
             \x1b[36m@@ -1 +1 @@\x1b[m\n\x1b[31m-old^[[2J\x1b[m\n\
             \x1b[32m+new^[]52;c;aGk=^G\x1b[m\n same\r\n"
        );
    }

    #[test]
    fn a_stat_for_the_terminal_colours_only_its_graph() {
        let stat = " a-b+c\u{202e}.txt | 3 ++-\n 1 file changed, 2 insertions(+), 1 deletion(-)\n";
        assert_eq!(
            for_terminal(stat.as_bytes(), true, true),
            " a-b+c\\u{202e}.txt | 3 \x1b[32m++\x1b[m\x1b[31m-\x1b[m\n 1 file changed, 2 insertions(+), 1 deletion(-)\n"
        );
    }
}
