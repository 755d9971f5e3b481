//! Command hooks: running one hook command (event JSON on stdin, bounded output, a timeout
//! that kills its process group) and reading what it says back, in Claude Code's protocol.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use super::config::EventKind;
use super::{HookContext, HookEvent, HookOutput, Verdict};
use crate::process::Launch;
use crate::sandbox::{HostPath, NotFound};
use crate::text::{one_line, Warning};

/// Bytes of stdout and of stderr kept from one hook; the rest is read and dropped so a chatty
/// hook never blocks on a full pipe.
pub const MAX_OUTPUT: usize = 1024 * 1024;
/// How long output is still collected after the hook exits while something it started in the
/// background holds the pipes open; then that group is killed.
const GRACE: Duration = Duration::from_millis(500);
/// Characters of a command shown in a message line.
const SHOWN_COMMAND: usize = 120;

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    TimedOut(Duration),
    NotStarted(String),
}

/// What running a hook gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
}

/// The JSON a hook reads on stdin, in Claude Code's field names.
pub fn input_json(event: &HookEvent<'_>, cx: &HookContext) -> Value {
    let mut m = Map::new();
    m.insert("session_id".into(), json!(cx.session_id));
    m.insert("cwd".into(), json!(cx.cwd.display().to_string()));
    m.insert("hook_event_name".into(), json!(event.name()));
    // The arguments as parsed (or as a hook rewrote them); the raw text when they are not a
    // JSON object, so a hook still sees what the model sent. A blocked call's PostToolUse has
    // no `args`, so its raw text is parsed here again.
    let tool_input = |call: &crate::model::ToolCall, args: Option<&Value>| {
        args.cloned()
            .or_else(|| {
                serde_json::from_str::<Value>(&call.arguments)
                    .ok()
                    .filter(Value::is_object)
            })
            .unwrap_or_else(|| Value::String(call.arguments.clone()))
    };
    match event {
        HookEvent::SessionStart => {}
        HookEvent::UserPromptSubmit { prompt } => {
            m.insert("prompt".into(), json!(prompt));
        }
        HookEvent::PreToolUse { call, args } => {
            m.insert("tool_name".into(), json!(call.name));
            m.insert("tool_input".into(), tool_input(call, *args));
        }
        HookEvent::PostToolUse { call, args, result } => {
            m.insert("tool_name".into(), json!(call.name));
            m.insert("tool_input".into(), tool_input(call, *args));
            m.insert("tool_response".into(), json!(result.content));
        }
        HookEvent::Stop {
            stop_hook_active, ..
        }
        | HookEvent::SubagentStop {
            stop_hook_active, ..
        } => {
            m.insert("stop_hook_active".into(), json!(stop_hook_active));
        }
        HookEvent::PreCompact { trigger, tokens } => {
            m.insert("trigger".into(), json!(trigger));
            // Claude Code's field for the instructions of `/compact ...`; hx takes none.
            m.insert("custom_instructions".into(), json!(""));
            m.insert("tokens".into(), json!(tokens));
        }
        HookEvent::Notification { message, kind } => {
            m.insert("message".into(), json!(message));
            m.insert("notification_type".into(), json!(kind));
        }
        HookEvent::SessionEnd { reason } => {
            m.insert("reason".into(), json!(reason));
        }
    }
    Value::Object(m)
}

type Buf = Arc<Mutex<Vec<u8>>>;

/// Reads a pipe to its end, keeping the first `MAX_OUTPUT` bytes in `buf`.
async fn drain(pipe: Option<impl AsyncRead + Unpin>, buf: Buf) {
    let Some(mut pipe) = pipe else { return };
    let mut chunk = [0u8; 8192];
    while let Ok(n @ 1..) = pipe.read(&mut chunk).await {
        let mut b = buf.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_OUTPUT.saturating_sub(b.len());
        b.extend_from_slice(&chunk[..n.min(room)]);
    }
}

fn text(buf: &Buf) -> String {
    String::from_utf8_lossy(&buf.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
}

/// The shell hooks run with, found once for the run, or why there is none.
pub type Shell = Result<PathBuf, String>;

/// The shell hooks run with: `bash` (hooks written for Claude Code expect its syntax), else
/// `sh`, found on PATH outside every folder a command may write (`host`), so that a shell
/// the model wrote in the workspace (an activated virtualenv's `.venv/bin`) never runs with
/// hx's whole environment.
pub fn shell(host: &HostPath, path: Option<&str>) -> Shell {
    let cwd = Path::new("/");
    let mut refused = None;
    for name in ["bash", "sh"] {
        match host.find(name.as_ref(), cwd, path) {
            Ok(found) => return Ok(found),
            Err(NotFound::Refused(why)) => refused = refused.or(Some(why)),
            Err(NotFound::Missing) => {}
        }
    }
    Err(refused.unwrap_or_else(|| "there is no bash or sh on PATH".into()))
}

/// Runs `command` with `shell` in `dir` (its own process group, hx's whole environment: a
/// hook is the user's own program), feeding `input` on stdin.
pub async fn run(shell: &Shell, command: &str, input: &[u8], dir: &Path, timeout: Duration) -> Ran {
    let shell = match shell {
        Ok(s) => s,
        Err(why) => {
            return Ran {
                exit: Exit::NotStarted(why.clone()),
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    };
    let launch = Launch::hook(shell, command, dir)
        .env("HX_PROJECT_DIR", dir)
        .env("CLAUDE_PROJECT_DIR", dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = match launch.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                exit: Exit::NotStarted(e.to_string()),
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    };
    let (out, err): (Buf, Buf) = Default::default();
    let readers = [
        tokio::spawn(drain(child.take_stdout(), out.clone())),
        tokio::spawn(drain(child.take_stderr(), err.clone())),
    ];
    let stdin = child.take_stdin();
    let feed = async move {
        if let Some(mut s) = stdin {
            // A hook that ignores stdin closes it early; that broken pipe is not a failure.
            let _ = s.write_all(input).await;
        }
    };
    let waited = tokio::time::timeout(timeout, async {
        let mut feed = std::pin::pin!(feed);
        // Once the hook has exited, unwritten input is dropped: a background process that
        // inherited stdin but never reads it must not make a finished hook look hung.
        tokio::select! {
            status = child.wait() => status,
            () = &mut feed => child.wait().await,
        }
    })
    .await;
    let exit = match waited {
        Ok(Ok(status)) => {
            use std::os::unix::process::ExitStatusExt;
            match (status.code(), status.signal()) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(s)) => Exit::Signal(s),
                (None, None) => Exit::NotStarted("no exit status".into()),
            }
        }
        Ok(Err(e)) => Exit::NotStarted(e.to_string()),
        Err(_) => {
            child.group.kill();
            // Bounded: a hook that moved itself out of its group is not waited for forever.
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
            Exit::TimedOut(timeout)
        }
    };
    let aborts: Vec<_> = readers.iter().map(|r| r.abort_handle()).collect();
    let mut readers = std::pin::pin!(futures_util::future::join_all(readers));
    if tokio::time::timeout(GRACE, &mut readers).await.is_err() {
        // Leftovers of the hook still hold its pipes: they are part of the hook, end them.
        child.group.kill();
        if tokio::time::timeout(GRACE, &mut readers).await.is_err() {
            // Something escaped the group; keep what was read rather than wait on it.
            aborts.iter().for_each(|a| a.abort());
        }
    } else {
        // Every process holding our pipes is gone; whatever remains detached its output on
        // purpose (e.g. `server > log 2>&1 &`) and is left alone until hx exits.
        child.group.disarm();
    }
    Ran {
        exit,
        stdout: text(&out),
        stderr: text(&err),
    }
}

/// What a hook's run means for the event, plus the lines to show the user (failures and
/// warnings), each naming the command.
pub fn interpret(kind: EventKind, ran: &Ran, command: &str) -> (HookOutput, Vec<Warning>) {
    let cmd = one_line(command, SHOWN_COMMAND);
    let first_err = ran.stderr.lines().map(str::trim).find(|l| !l.is_empty());
    let with_err = |head: String| {
        Warning::notice(match first_err {
            Some(l) => format!("{head}: {cmd}: {}", one_line(l, 200)),
            None => format!("{head}: {cmd}"),
        })
    };
    match &ran.exit {
        Exit::Code(0) => {
            let mut warnings = Vec::new();
            let out = parse_stdout(kind, &ran.stdout, &mut warnings);
            let lines = warnings
                .into_iter()
                .map(|w| Warning::notice(format!("hook {w}: {cmd}")))
                .collect();
            (out, lines)
        }
        Exit::Code(2) => {
            let reason = match ran.stderr.trim() {
                "" => "the hook exited with code 2 and gave no reason".to_string(),
                r => r.to_string(),
            };
            (block(reason), Vec::new())
        }
        Exit::Code(n) => (
            HookOutput::default(),
            vec![with_err(format!("hook failed (exit {n})"))],
        ),
        Exit::Signal(s) => (
            HookOutput::default(),
            vec![with_err(format!("hook failed (signal {s})"))],
        ),
        Exit::TimedOut(t) => (
            HookOutput::default(),
            vec![Warning::notice(format!(
                "hook timed out after {} s and was killed: {cmd}",
                t.as_secs_f64()
            ))],
        ),
        Exit::NotStarted(e) => (
            HookOutput::default(),
            vec![Warning::notice(format!(
                "hook failed (cannot start: {e}): {cmd}"
            ))],
        ),
    }
}

fn block(reason: String) -> HookOutput {
    HookOutput {
        verdict: Some(Verdict::Block(reason)),
        ..HookOutput::default()
    }
}

fn nonempty_str(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// Reads the stdout of a hook that exited 0. JSON when it starts with `{`; otherwise plain
/// text, which only SessionStart and UserPromptSubmit use (as context for the task, as Claude
/// Code does); for other events it is chatter, not meant for the model.
pub fn parse_stdout(kind: EventKind, stdout: &str, warnings: &mut Vec<String>) -> HookOutput {
    let mut out = HookOutput::default();
    let trimmed = stdout.trim();
    if !trimmed.starts_with('{') {
        let is_context = matches!(kind, EventKind::SessionStart | EventKind::UserPromptSubmit);
        if is_context && !trimmed.is_empty() {
            out.additional_context = Some(trimmed.to_string());
        }
        return out;
    }
    let o = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(o)) => o,
        Ok(_) => return out,
        Err(e) => {
            warnings.push(format!("printed invalid JSON ({e}); its output is ignored"));
            return out;
        }
    };
    if o.get("continue") == Some(&Value::Bool(false)) {
        let reason = nonempty_str(o.get("stopReason")).unwrap_or("a hook said continue: false");
        out.stop_run = Some(reason.to_string());
    }
    let reason = nonempty_str(o.get("reason"));
    match o.get("decision").and_then(Value::as_str) {
        Some("block") => {
            let r = reason.unwrap_or("blocked by a hook (no reason given)");
            out.verdict = Some(Verdict::Block(r.to_string()));
        }
        // Claude Code's older spelling of permissionDecision "allow".
        Some("approve") if kind == EventKind::PreToolUse => out.verdict = Some(Verdict::Allow),
        _ => {}
    }
    let specific = o.get("hookSpecificOutput").and_then(Value::as_object);
    if let (EventKind::PreToolUse, Some(s)) = (kind, specific) {
        let why = nonempty_str(s.get("permissionDecisionReason"));
        // The newer field wins over `decision` when a hook prints both.
        match s.get("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                let r = why.unwrap_or("denied by a hook (no reason given)");
                out.verdict = Some(Verdict::Block(r.to_string()));
            }
            Some("allow") => out.verdict = Some(Verdict::Allow),
            Some("ask") => {
                let asked = "the hook asked for the user's confirmation, and hx agent has no one \
                             to ask, so the call is denied";
                let r = match why {
                    Some(w) => format!("{w} ({asked})"),
                    None => asked.to_string(),
                };
                out.verdict = Some(Verdict::Block(r));
            }
            Some(other) => warnings.push(format!(
                "gave unknown permissionDecision {:?}",
                crate::tools::output::quote(other)
            )),
            None => {}
        }
        match s.get("updatedInput") {
            None | Some(Value::Null) => {}
            Some(v @ Value::Object(_)) => out.updated_input = Some(v.clone()),
            Some(_) => warnings.push("gave an updatedInput that is not an object".into()),
        }
    }
    let context = specific
        .and_then(|s| nonempty_str(s.get("additionalContext")))
        .or_else(|| nonempty_str(o.get("additionalContext")));
    out.additional_context = context.map(str::to_string);
    out
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
