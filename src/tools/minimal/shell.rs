//! The minimal profile's `bash`: one long-lived shell per run, so a `cd`, an `export` or a
//! function holds from one call to the next. It is started as every tool command is
//! (`Launch` with the tool role: the environment policy, the sandbox, the run's pod), with a
//! pipe for its stdin; each call writes one command to it, followed by a `printf` of an end
//! marker unique to the call with `$?`, and reads the shell's output (stdout and stderr on
//! one pipe, as the default `bash` has them) until that marker.
//!
//! The command is handed over quoted, as the argument of `eval`, with its stdin from
//! `/dev/null`: a syntax error in it is an error of `eval` and the marker still comes, and a
//! command reading stdin cannot swallow the marker (it reads nothing, as the default bash's
//! commands do). A call that times out kills the shell (its whole process group, as the
//! default `bash` does) and says that its state is lost; a shell that exited (`exit`) is
//! replaced by the next call, which says so. The shell ends with the run: its handle kills its
//! group when dropped, and every exit path of hx ends what hx started.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::sync::Mutex;

use crate::process::{signal_name, Launch, Role, Started};
use crate::sandbox::Sandbox;
use crate::tools::output::{BoundedText, Utf8Decoder};
use crate::tools::{args, Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};

/// How long output is still read after the shell exits or is killed.
const GRACE: Duration = Duration::from_millis(200);

/// Bytes of one command: it is written to the shell's stdin whole.
pub const MAX_COMMAND_BYTES: usize = 1024 * 1024;

/// Said before the answer of a call that had to start a new shell.
const NEW_SHELL: &str = "[a new shell was started: the previous one ended, so the working \
    folder, variables and functions start afresh]\n";

pub struct PersistentBash {
    slot: Mutex<Slot>,
}

#[derive(Default)]
struct Slot {
    live: Option<Live>,
    /// Whether a shell ran before, so that a new one is news to the model.
    started_before: bool,
    /// Calls so far, part of each marker.
    calls: u64,
}

/// The running shell.
struct Live {
    child: Started,
    stdin: ChildStdin,
    out: pipe::Receiver,
    /// Whether a call is reading its output: still set when a call was dropped mid-command
    /// (Ctrl-C in `hx chat`), whose output and marker would reach the next call.
    busy: bool,
}

impl PersistentBash {
    pub fn new() -> Self {
        PersistentBash {
            slot: Mutex::new(Slot::default()),
        }
    }
}

impl Default for PersistentBash {
    fn default() -> Self {
        PersistentBash::new()
    }
}

impl Tool for PersistentBash {
    /// Claude Code's `Bash`, as the default bash is: hooks written for it (a check of each
    /// command) hold in this profile too.
    fn claude(&self) -> Option<crate::tools::Claude> {
        Some(crate::tools::bash::CLAUDE)
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
            name: "bash".into(),
            description: "Run a command in a persistent bash shell and return its combined \
                stdout and stderr. The shell stays alive between calls: the working folder, \
                environment variables and functions carry over (a cd holds for the next \
                call). It starts in the workspace root. Stdin is empty, so interactive \
                commands will not wait for input. A non-zero exit code is reported on the \
                last line; long output keeps its start and end. A command that runs past the \
                timeout is killed together with the shell, whose state is then lost. Set \
                restart to start a fresh shell."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The command to run."
                    },
                    "restart": {
                        "type": "boolean",
                        "description": "Kill the shell and start a fresh one (then run \
                            command, if given)."
                    }
                },
                "required": []
            }),
        }
    }

    fn call<'a>(&'a self, args: Value, cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let restart = match args.get("restart") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => false,
                Some(Value::Bool(true)) => true,
                Some(_) => return ToolResult::error("bash.restart must be a boolean"),
            };
            let command = match args.get("command") {
                None | Some(Value::Null) if restart => "",
                _ => match args::string("bash", &args, "command") {
                    Ok(c) => c,
                    Err(e) => return e,
                },
            };
            if command.len() > MAX_COMMAND_BYTES {
                return ToolResult::error(format!(
                    "bash.command is {} bytes long; the limit is {MAX_COMMAND_BYTES}",
                    command.len()
                ));
            }
            if command.contains('\0') {
                return ToolResult::error("bash.command must not contain NUL characters");
            }
            let mut slot = self.slot.lock().await;
            if restart {
                // Dropping the handle kills the shell's group.
                slot.live = None;
                slot.started_before = false;
                if command.trim().is_empty() {
                    return match slot.ensure(cx) {
                        Ok(_) => ToolResult::ok(
                            "The shell was restarted: a fresh shell in the workspace root.",
                        ),
                        Err(e) => ToolResult::error(e),
                    };
                }
            } else if command.trim().is_empty() {
                return ToolResult::error("bash.command must not be empty");
            }
            slot.run(command, cx).await
        })
    }
}

impl Slot {
    /// The live shell, started when there is none (or the last call was dropped mid-command);
    /// whether it is new after another one ended.
    fn ensure(&mut self, cx: &ToolContext) -> Result<bool, String> {
        if self.live.as_ref().is_some_and(|l| l.busy) {
            self.live = None;
        }
        if self.live.is_some() {
            return Ok(false);
        }
        let live = start(cx)?;
        self.live = Some(live);
        let news = self.started_before;
        self.started_before = true;
        Ok(news)
    }

    async fn run(&mut self, command: &str, cx: &ToolContext) -> ToolResult {
        let mut news = match self.ensure(cx) {
            Ok(n) => n,
            Err(e) => return ToolResult::error(e),
        };
        self.calls += 1;
        let marker = format!("__hx_end_{:016x}_{}", fastrand::u64(..), self.calls);
        let script = script(command, &marker);
        // Busy from the first byte written: a call cancelled mid-write leaves half a script
        // in the shell, which the next call must not follow.
        let written = match self.live.as_mut() {
            Some(live) => {
                live.busy = true;
                live.stdin.write_all(script.as_bytes()).await
            }
            None => return ToolResult::error("the shell could not be started"),
        };
        if written.is_err() {
            // It ended since the last call without anyone seeing: a new one, once.
            self.live = None;
            news = match self.ensure(cx) {
                Ok(n) => n,
                Err(e) => return ToolResult::error(e),
            };
            let again = match self.live.as_mut() {
                Some(live) => {
                    live.busy = true;
                    live.stdin.write_all(script.as_bytes()).await
                }
                None => return ToolResult::error("the shell could not be started"),
            };
            if let Err(e) = again {
                self.live = None;
                return ToolResult::error(format!("cannot write to the shell: {e}"));
            }
        }
        let Some(live) = self.live.as_mut() else {
            return ToolResult::error("the shell could not be started");
        };
        live.busy = true;
        let timeout = cx.limits.bash_timeout;
        let (end, body) = read_until(live, &marker, timeout, cx.limits.output_chars).await;
        match end {
            End::Done(_) => live.busy = false,
            End::Exited(_) | End::TimedOut => self.live = None,
        }
        let mut result = answer(end, body, timeout, cx.sandbox.as_deref());
        if news {
            result.content.insert_str(0, NEW_SHELL);
        }
        result
    }
}

/// Starts the shell as a tool command (sandbox, pod, environment), reading from a pipe.
fn start(cx: &ToolContext) -> Result<Live, String> {
    let (writer, out) = pipe::pipe().map_err(|e| format!("cannot create pipe: {e}"))?;
    let (out_fd, err_fd) = writer
        .into_blocking_fd()
        .and_then(|fd| Ok((fd.try_clone()?, fd)))
        .map_err(|e| format!("cannot create pipe: {e}"))?;
    let shell = crate::process::shell();
    // No startup files: the shell is the same whoever's account runs it.
    let args: Vec<String> = if shell == "bash" {
        vec!["--noprofile".into(), "--norc".into()]
    } else {
        Vec::new()
    };
    let role = Role::Tool {
        env: &cx.env,
        sandbox: cx.sandbox.as_deref(),
    };
    let mut child = Launch::program(shell, &args, cx.workspace.root(), role)
        .stdin(Stdio::piped())
        .stdout(Stdio::from(out_fd))
        .stderr(Stdio::from(err_fd))
        .spawn()
        .map_err(|e| format!("cannot start the shell: {e}"))?;
    let stdin = child
        .take_stdin()
        .ok_or_else(|| "cannot start the shell: no stdin".to_string())?;
    Ok(Live {
        child,
        stdin,
        out,
        busy: false,
    })
}

/// What the shell is given for one call: the command as `eval`'s quoted argument with an
/// empty stdin, then the marker with the command's status on a line of its own.
fn script(command: &str, marker: &str) -> String {
    let quoted = format!("'{}'", command.replace('\'', r"'\''"));
    format!("{{ eval {quoted}\n}} < /dev/null\nprintf '\\n{marker}:%s\\n' \"$?\"\n")
}

/// How a call's reading ended.
#[derive(Clone, Copy)]
enum End {
    /// The marker came, with the command's status.
    Done(i32),
    /// The shell itself ended (`exit`, a signal).
    Exited(Option<ExitStatus>),
    TimedOut,
}

/// Reads the shell's output until `marker` (or the shell's end, or the timeout), keeping at
/// most `limit` characters of it.
async fn read_until(
    live: &mut Live,
    marker: &str,
    timeout: Duration,
    limit: usize,
) -> (End, String) {
    // Without the newline printed before it: a background job's partial line may come
    // between the two writes; the newline, when it is there, is taken off the output.
    let needle = format!("{marker}:").into_bytes();
    let mut text = BoundedText::new(limit);
    let mut decoder = Utf8Decoder::new();
    // Bytes not yet decoded: they may be the start of the marker.
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let end = loop {
        tokio::select! {
            r = live.out.read(&mut buf) => match r {
                Ok(0) | Err(_) => {
                    let status = tokio::time::timeout(GRACE, live.child.wait()).await;
                    break End::Exited(status.ok().and_then(Result::ok));
                }
                Ok(n) => {
                    pending.extend_from_slice(&buf[..n]);
                    if let Some(code) = take_marker(&mut pending, &needle) {
                        break End::Done(code);
                    }
                    // Everything but what could still be the marker (or is it, its status
                    // line not yet whole) is output.
                    let cut = output_end(&pending, &needle);
                    decoder.decode(&pending[..cut], |s| text.push(s));
                    pending.drain(..cut);
                }
            },
            s = live.child.wait() => {
                // Pick up what it wrote before it ended.
                drain(&mut live.out, &mut pending, &mut buf).await;
                break End::Exited(s.ok());
            }
            _ = &mut deadline => {
                live.child.group.kill();
                drain(&mut live.out, &mut pending, &mut buf).await;
                break End::TimedOut;
            }
        }
    };
    // The rest of the output: before the marker when it came, else all that came.
    decoder.decode(&pending, |s| text.push(s));
    let mut rest = String::new();
    decoder.finish(|s| rest.push_str(s));
    text.push(&rest);
    let body = if text.is_empty() {
        String::new()
    } else {
        text.finish()
    };
    (end, body)
}

/// When `pending` holds the whole marker line: the command's status, with `pending` cut to
/// the output before the marker.
/// How much of `pending` is surely output: all before the marker when it came (its status
/// line not yet whole), else all but what could be the marker's start.
fn output_end(pending: &[u8], needle: &[u8]) -> usize {
    match pending.windows(needle.len()).position(|w| w == needle) {
        Some(at) => at.saturating_sub(1),
        None => pending.len() - needle.len().min(pending.len()),
    }
}

fn take_marker(pending: &mut Vec<u8>, needle: &[u8]) -> Option<i32> {
    let at = pending.windows(needle.len()).position(|w| w == needle)?;
    let after = &pending[at + needle.len()..];
    let eol = after.iter().position(|&b| b == b'\n')?;
    let code = std::str::from_utf8(&after[..eol])
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(-1);
    let at = if at > 0 && pending[at - 1] == b'\n' {
        at - 1
    } else {
        at
    };
    pending.truncate(at);
    Some(code)
}

/// Reads what is left in the pipe, for a short while at most: a process the command left
/// behind may hold it open.
async fn drain(out: &mut pipe::Receiver, pending: &mut Vec<u8>, buf: &mut [u8]) {
    let _ = tokio::time::timeout(GRACE, async {
        while let Ok(n) = out.read(buf).await {
            if n == 0 {
                break;
            }
            pending.extend_from_slice(&buf[..n]);
        }
    })
    .await;
}

/// The model's answer for a call that ended so.
fn answer(end: End, body: String, timeout: Duration, sandbox: Option<&Sandbox>) -> ToolResult {
    // A git redirection the command made is undone before anything reads it.
    let undone = sandbox.and_then(Sandbox::undo_git_redirects);
    let shown = if body.is_empty() {
        "(no output)".to_string()
    } else {
        body
    };
    let sep = if shown.ends_with('\n') { "" } else { "\n" };
    let note = sandbox
        .and_then(|s| s.denial_note(&shown))
        .map(|n| format!("{n}\n"))
        .unwrap_or_default();
    let mut result = match end {
        // A clean exit keeps its text as the command wrote it, like the default bash's.
        End::Done(0) if note.is_empty() => ToolResult::ok(shown).with_exit_code(Some(0)),
        End::Done(0) => ToolResult::ok(format!("{shown}{sep}{note}")).with_exit_code(Some(0)),
        End::Done(code) => ToolResult::ok(format!("{shown}{sep}{note}[exit code: {code}]"))
            .with_exit_code(Some(code)),
        End::Exited(status) => ToolResult::ok(format!(
            "{shown}{sep}{note}[the shell exited ({}); the next call starts a new one, with the \
             working folder, variables and functions reset]",
            how(status)
        ))
        .with_exit_code(status.and_then(|s| s.code())),
        End::TimedOut => ToolResult::error(format!(
            "command timed out after {} s: the shell was killed with it, and the next call \
             starts a new one (the working folder, variables and functions are lost). Output \
             so far:\n{shown}",
            timeout.as_secs()
        )),
    };
    if let Some(line) = undone {
        if !result.content.ends_with('\n') {
            result.content.push('\n');
        }
        result.content.push_str(&line);
    }
    result
}

/// How the shell ended, in words.
fn how(status: Option<ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Some(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig} ({})", signal_name(sig)),
            (None, None) => "status unknown".into(),
        },
        None => "status unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    /// The marker read in pieces, its status line last, is still found: nothing of it is
    /// taken for output before it is whole.
    #[test]
    fn a_marker_split_across_reads_is_found() {
        let needle = b"__hx_end_1:";
        let mut pending = b"out\n__hx_end_1:".to_vec();
        assert_eq!(super::take_marker(&mut pending, needle), None);
        let cut = super::output_end(&pending, needle);
        assert_eq!(&pending[..cut], b"out");
        pending.drain(..cut);
        pending.extend_from_slice(b"0");
        assert_eq!(super::take_marker(&mut pending, needle), None);
        pending.extend_from_slice(b"\n");
        assert_eq!(super::take_marker(&mut pending, needle), Some(0));
        assert_eq!(pending, b"\n".to_vec().split_off(1));
        // A partial line of another process between the newline and the marker.
        let mut mixed = b"a\nprogress 50%__hx_end_1:3\n".to_vec();
        assert_eq!(super::take_marker(&mut mixed, needle), Some(3));
        assert_eq!(mixed, b"a\nprogress 50%".to_vec());
    }

    use super::*;
    use crate::tools::Workspace;

    fn cx(dir: &tempfile::TempDir) -> ToolContext {
        ToolContext::new(Workspace::new(dir.path()).expect("workspace"))
    }

    async fn run(tool: &PersistentBash, cx: &ToolContext, command: &str) -> ToolResult {
        tool.call(json!({ "command": command }), cx).await
    }

    #[tokio::test]
    async fn state_carries_over_between_calls() {
        let d = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(d.path().join("sub")).expect("mkdir");
        let cx = cx(&d);
        let tool = PersistentBash::new();
        let r = run(&tool, &cx, "cd sub && export X=42 && f() { echo fn; }").await;
        assert_eq!(r, ToolResult::ok("(no output)").with_exit_code(Some(0)));
        let r = run(&tool, &cx, "basename \"$PWD\"; echo $X; f").await;
        assert_eq!(r.content, "sub\n42\nfn\n");
    }

    #[tokio::test]
    async fn exit_codes_syntax_errors_and_stdin() {
        let d = tempfile::tempdir().expect("tempdir");
        let cx = cx(&d);
        let tool = PersistentBash::new();
        let r = run(&tool, &cx, "printf 'no newline'; false").await;
        assert_eq!(r.content, "no newline\n[exit code: 1]");
        assert_eq!(r.exit_code, Some(1));
        // An unmatched quote is eval's error; the shell goes on.
        let r = run(&tool, &cx, "echo 'unterminated").await;
        assert!(r.content.contains("[exit code: 2]"), "{}", r.content);
        let r = run(&tool, &cx, "cat; echo after").await;
        assert_eq!(r.content, "after\n");
    }

    #[tokio::test]
    async fn exit_ends_the_shell_and_the_next_call_says_a_new_one_started() {
        let d = tempfile::tempdir().expect("tempdir");
        let cx = cx(&d);
        let tool = PersistentBash::new();
        run(&tool, &cx, "export Y=1").await;
        let r = run(&tool, &cx, "echo bye; exit 3").await;
        assert!(
            r.content
                .starts_with("bye\n[the shell exited (exit code 3)"),
            "{}",
            r.content
        );
        let r = run(&tool, &cx, "echo \"y=$Y\"").await;
        assert_eq!(r.content, format!("{NEW_SHELL}y=\n"));
    }

    #[tokio::test]
    async fn a_timeout_kills_the_shell_and_says_its_state_is_lost() {
        let d = tempfile::tempdir().expect("tempdir");
        let mut cx = cx(&d);
        cx.limits.bash_timeout = Duration::from_secs(1);
        let tool = PersistentBash::new();
        let r = run(&tool, &cx, "echo started; sleep 30").await;
        assert!(r.is_error);
        assert!(
            r.content
                .starts_with("Error: command timed out after 1 s: the shell was killed"),
            "{}",
            r.content
        );
        assert!(
            r.content.ends_with("Output so far:\nstarted\n"),
            "{}",
            r.content
        );
        let r = run(&tool, &cx, "echo again").await;
        assert_eq!(r.content, format!("{NEW_SHELL}again\n"));
    }

    #[tokio::test]
    async fn restart_and_bad_arguments() {
        let d = tempfile::tempdir().expect("tempdir");
        let cx = cx(&d);
        let tool = PersistentBash::new();
        run(&tool, &cx, "export Z=1").await;
        let r = tool.call(json!({ "restart": true }), &cx).await;
        assert!(
            r.content.starts_with("The shell was restarted"),
            "{}",
            r.content
        );
        let r = run(&tool, &cx, "echo \"z=$Z\"").await;
        assert_eq!(r.content, "z=\n");
        let r = tool.call(json!({}), &cx).await;
        assert_eq!(r.content, "Error: bash.command is required");
        let r = tool
            .call(json!({ "command": "ls", "restart": 1 }), &cx)
            .await;
        assert_eq!(r.content, "Error: bash.restart must be a boolean");
    }
}
