//! The `bash` tool: runs a shell command in the workspace with a timeout, bounded output, and
//! a process group that is always cleaned up (on timeout, on lingering background children, and
//! when the call is dropped mid-run).

use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::time::Instant;

use super::output::{BoundedText, Utf8Decoder};
use super::{args, Claude, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};
use crate::process::{signal_name, Launch, Role, ToolEnv};
use crate::sandbox::Sandbox;

/// How long output is still collected after the shell exits while something it started in the
/// background keeps the pipe open.
const GRACE: Duration = Duration::from_millis(200);

/// Claude Code's `Bash`, which its files may limit to some commands (`Bash(git add:*)`).
pub const CLAUDE: Claude = Claude {
    tool: "bash",
    names: &["Bash"],
    for_subagents: true,
    by_command: true,
};

pub struct Bash;

impl Tool for Bash {
    fn claude(&self) -> Option<Claude> {
        Some(CLAUDE)
    }

    fn kind(&self) -> Kind {
        Kind::Execute
    }

    fn shown(&self) -> Shown {
        Shown::Command
    }

    fn command<'a>(&self, args: &'a Value) -> Option<&'a str> {
        args.get("command").and_then(Value::as_str)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: CLAUDE.tool.into(),
            description: "Run a shell command (bash -c) in the workspace root and return its \
                combined stdout and stderr. Stdin is empty, so interactive commands will not \
                wait for input. Long output keeps its start and end. A non-zero exit code is \
                reported on the last line. Background processes still holding the output open \
                are killed shortly after the command exits. For a command that keeps running \
                (a dev server, a watcher, a long build), set run_in_background: the call \
                returns at once with a shell id for bash_output and kill_shell, and you are \
                told when it ends."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The command line to run."
                    },
                    "timeout": {
                        "type": "integer",
                        "description": "Seconds before the command is killed (default 120); \
                            a background shell has none."
                    },
                    "run_in_background": {
                        "type": "boolean",
                        "description": "Start the command and return at once with its shell \
                            id; read its output with bash_output, end it with kill_shell."
                    }
                },
                "required": ["command"]
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let command = match args::string("bash", &args, "command") {
                Ok(c) => c,
                Err(e) => return e,
            };
            if command.trim().is_empty() {
                return ToolResult::error("bash.command must not be empty");
            }
            match args.get("run_in_background") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => return background(command, cx),
                Some(_) => return ToolResult::error("bash.run_in_background must be a boolean"),
            }
            let timeout = match args::opt_u64("bash", &args, "timeout") {
                Ok(Some(secs)) => Duration::from_secs(secs.max(1)).min(cx.limits.bash_max_timeout),
                Ok(None) => cx.limits.bash_timeout,
                Err(e) => return e,
            };
            run(
                command,
                cx.workspace.root(),
                &cx.env,
                cx.sandbox.as_deref(),
                timeout,
                cx.limits.output_chars,
            )
            .await
        })
    }
}

/// Starts `command` as a background shell; the answer names it.
fn background(command: &str, cx: &ToolContext) -> ToolResult {
    match cx.shells.start(command, cx) {
        Ok(shell) => ToolResult {
            shell_id: Some(shell.id.clone()),
            ..ToolResult::ok(format!(
                "Started background shell {id}. Read its output with bash_output \
             {{\"shell_id\": \"{id}\"}} (it can wait for output or a pattern); end it with \
             kill_shell. You will be told when it ends. Its whole output goes to {log}.",
                id = shell.id,
                log = shell.log.display()
            ))
        },
        Err(e) => ToolResult::error(e),
    }
}

enum End {
    /// The shell exited and the output reached end-of-file.
    Finished(ExitStatus),
    /// The shell exited but something kept the output open past the grace period.
    Lingering(ExitStatus),
    TimedOut,
}

async fn run(
    command: &str,
    cwd: &Path,
    env: &ToolEnv,
    sandbox: Option<&Sandbox>,
    timeout: Duration,
    limit: usize,
) -> ToolResult {
    // One pipe for both stdout and stderr, as `2>&1` would, so the text keeps the exact order
    // in which the command wrote it.
    let (writer, reader) = match pipe::pipe() {
        Ok(p) => p,
        Err(e) => return ToolResult::error(format!("cannot create pipe: {e}")),
    };
    let (out_fd, err_fd) = match writer.into_blocking_fd().and_then(|fd| {
        let dup = fd.try_clone()?;
        Ok((fd, dup))
    }) {
        Ok(fds) => fds,
        Err(e) => return ToolResult::error(format!("cannot create pipe: {e}")),
    };

    let launch = Launch::shell(command, cwd, Role::Tool { env, sandbox })
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_fd))
        .stderr(Stdio::from(err_fd));
    // spawn() drops our copies of the write end, so end-of-file can arrive.
    let mut child = match launch.spawn() {
        Ok(c) => c,
        Err(e) => return ToolResult::error(format!("cannot run command: {e}")),
    };

    let mut reader = reader;
    let mut text = BoundedText::new(limit);
    let mut decoder = Utf8Decoder::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut eof = false;
    let mut status: Option<ExitStatus> = None;
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let grace = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(grace);

    let end = loop {
        if eof {
            if let Some(s) = status {
                break End::Finished(s);
            }
        }
        tokio::select! {
            r = reader.read(&mut buf), if !eof => match r {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => decoder.decode(&buf[..n], |s| text.push(s)),
            },
            s = child.wait(), if status.is_none() => match s {
                Ok(s) => {
                    status = Some(s);
                    grace.as_mut().reset(Instant::now() + GRACE);
                }
                Err(e) => return ToolResult::error(format!("cannot wait for command: {e}")),
            },
            _ = &mut grace, if status.is_some() => {
                if let Some(s) = status {
                    break End::Lingering(s);
                }
            },
            _ = &mut deadline => break End::TimedOut,
        }
    };

    match end {
        End::Finished(_) => child.group.disarm(),
        End::Lingering(_) | End::TimedOut => {
            child.group.kill();
            // Everything in the group is dead now; pick up what it wrote before dying.
            if !eof {
                drain(&mut reader, &mut buf, &mut decoder, &mut text).await;
            }
            // Reap the shell (tokio would do it later anyway; this just keeps it prompt).
            let _ = tokio::time::timeout(GRACE, child.wait()).await;
        }
    }
    decoder.finish(|s| text.push(s));
    // A git redirection the command made is undone before anything reads it (the next
    // hook, the user's git); the line says so, last, where a preview shows it.
    let undone = sandbox.and_then(Sandbox::undo_git_redirects);
    let body = if text.is_empty() {
        "(no output)".to_string()
    } else {
        text.finish()
    };
    let result = match end {
        End::Finished(s) | End::Lingering(s) => match status_line(s) {
            Some(line) => {
                // The marker goes on its own line without adding a blank one.
                let sep = if body.ends_with('\n') { "" } else { "\n" };
                // A write the sandbox refused gets one line saying so, before the exit code.
                let note = sandbox
                    .and_then(|s| s.denial_note(&body))
                    .map(|n| format!("{n}\n"))
                    .unwrap_or_default();
                ToolResult::ok(format!("{body}{sep}{note}{line}")).with_exit_code(s.code())
            }
            None => ToolResult::ok(body).with_exit_code(s.code()),
        },
        End::TimedOut => ToolResult::error(format!(
            "command timed out after {} s and was killed. Output so far:\n{body}",
            timeout.as_secs()
        )),
    };
    let mut result = result;
    if let Some(line) = undone {
        if !result.content.ends_with('\n') {
            result.content.push('\n');
        }
        result.content.push_str(&line);
    }
    result
}

/// Reads what is left in the pipe, for a short while at most: a process that escaped the group
/// (setsid) could hold it open forever.
async fn drain(
    reader: &mut pipe::Receiver,
    buf: &mut [u8],
    decoder: &mut Utf8Decoder,
    text: &mut BoundedText,
) {
    let _ = tokio::time::timeout(GRACE, async {
        while let Ok(n) = reader.read(buf).await {
            if n == 0 {
                break;
            }
            decoder.decode(&buf[..n], |s| text.push(s));
        }
    })
    .await;
}

/// The line appended for an unsuccessful exit, if any.
fn status_line(status: ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return (code != 0).then(|| format!("[exit code: {code}]"));
    }
    let sig = status.signal()?;
    Some(format!("[killed by signal {sig} ({})]", signal_name(sig)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Workspace;

    fn cx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::new(Workspace::new(dir.path()).unwrap())
    }

    async fn bash(cx: &ToolContext, args: Value) -> ToolResult {
        Bash.call(args, cx).await
    }

    #[tokio::test]
    async fn runs_in_workspace_and_interleaves_streams() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("marker.txt"), "").unwrap();
        let r = bash(
            &cx(&d),
            json!({"command": "ls; echo out1; echo err1 >&2; echo out2"}),
        )
        .await;
        assert_eq!(
            r,
            ToolResult::ok("marker.txt\nout1\nerr1\nout2\n").with_exit_code(Some(0))
        );
    }

    #[tokio::test]
    async fn reports_exit_code_and_empty_output() {
        let d = tempfile::tempdir().unwrap();
        let r = bash(&cx(&d), json!({"command": "echo nope; exit 2"})).await;
        assert_eq!(
            r,
            ToolResult::ok("nope\n[exit code: 2]").with_exit_code(Some(2))
        );
        let r = bash(&cx(&d), json!({"command": "true"})).await;
        assert_eq!(r, ToolResult::ok("(no output)").with_exit_code(Some(0)));
        let r = bash(&cx(&d), json!({"command": "kill -TERM $$"})).await;
        assert_eq!(
            r,
            ToolResult::ok("(no output)\n[killed by signal 15 (SIGTERM)]")
        );
    }

    #[tokio::test]
    async fn bad_arguments_are_errors() {
        let d = tempfile::tempdir().unwrap();
        let r = bash(&cx(&d), json!({})).await;
        assert_eq!(r.content, "Error: bash.command is required");
        let r = bash(&cx(&d), json!({"command": 3})).await;
        assert_eq!(r.content, "Error: bash.command must be a string");
        let r = bash(&cx(&d), json!({"command": "ls", "timeout": -1})).await;
        assert_eq!(
            r.content,
            "Error: bash.timeout must be a non-negative integer"
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let d = tempfile::tempdir().unwrap();
        let cmd = "echo started; sleep 30 & echo $! > pid; sleep 30";
        let start = std::time::Instant::now();
        let r = bash(&cx(&d), json!({"command": cmd, "timeout": 1})).await;
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(r.is_error);
        assert_eq!(
            r.content,
            "Error: command timed out after 1 s and was killed. Output so far:\nstarted\n"
        );
        assert_dies(read_pid(&d)).await;
    }

    #[tokio::test]
    async fn timeout_is_capped_by_the_limit() {
        let d = tempfile::tempdir().unwrap();
        let mut cx = cx(&d);
        cx.limits.bash_max_timeout = Duration::from_secs(1);
        let start = std::time::Instant::now();
        let r = bash(&cx, json!({"command": "sleep 30", "timeout": 999})).await;
        assert!(start.elapsed() < Duration::from_secs(10));
        assert!(r.content.starts_with("Error: command timed out after 1 s"));
    }

    #[tokio::test]
    async fn background_child_holding_the_pipe_does_not_hang() {
        let d = tempfile::tempdir().unwrap();
        let start = std::time::Instant::now();
        let cmd = "sleep 30 & echo $! > pid; echo done";
        let r = bash(&cx(&d), json!({ "command": cmd })).await;
        assert!(start.elapsed() < Duration::from_secs(10));
        assert_eq!(r, ToolResult::ok("done\n").with_exit_code(Some(0)));
        assert_dies(read_pid(&d)).await;
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_group() {
        let d = tempfile::tempdir().unwrap();
        let cx = cx(&d);
        let cmd = "sleep 30 & echo $! > pid.tmp; mv pid.tmp pid; wait";
        // Boxed so that drop() below really drops the call, as Ctrl-C would.
        let mut fut = Box::pin(bash(&cx, json!({ "command": cmd })));
        // Run the call until the background child exists.
        for _ in 0..200 {
            tokio::select! {
                r = &mut fut => panic!("command ended early: {r:?}"),
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
            }
            if d.path().join("pid").exists() {
                break;
            }
        }
        drop(fut);
        assert_dies(read_pid(&d)).await;
    }

    fn read_pid(d: &tempfile::TempDir) -> libc::pid_t {
        let text = std::fs::read_to_string(d.path().join("pid")).unwrap();
        text.trim().parse().unwrap()
    }

    /// Waits up to 5 s for the process to be gone (or a zombie awaiting its reaper).
    async fn assert_dies(pid: libc::pid_t) {
        for _ in 0..100 {
            // SAFETY: signal 0 only checks whether the process exists.
            let exists = unsafe { libc::kill(pid, 0) } == 0;
            if !exists || is_zombie(pid) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("process {pid} survived");
    }

    fn is_zombie(pid: libc::pid_t) -> bool {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        state.starts_with('Z')
    }

    #[tokio::test]
    async fn huge_output_is_capped_head_and_tail() {
        let d = tempfile::tempdir().unwrap();
        let mut cx = cx(&d);
        cx.limits.output_chars = 10;
        // 'yes' would print forever; head cuts it at 3 MB.
        let r = bash(
            &cx,
            json!({"command": "printf 'abcde'; yes | head -c 3000000; printf 'vwxyz'"}),
        )
        .await;
        assert_eq!(
            r.content,
            "abcde\n... [3000000 characters omitted] ...\nvwxyz"
        );
    }

    #[tokio::test]
    async fn multibyte_output_split_across_writes() {
        let d = tempfile::tempdir().unwrap();
        let r = bash(
            &cx(&d),
            json!({"command": "printf '\\342\\202'; sleep 0.2; printf '\\254 \\377\\n'"}),
        )
        .await;
        assert_eq!(r.content, "€ \u{FFFD}\n");
    }
}
