//! A word when hx needs you: when a turn ends, or hx waits for an approval, after a run
//! that took a while (`notify_after_secs`), the terminal is told (OSC 9, which iTerm2,
//! WezTerm, Ghostty, kitty and Windows Terminal show as a desktop notification, else BEL;
//! inside tmux wrapped in its passthrough so it reaches the outer terminal), and the `notify`
//! command of the config, if any, is run with a JSON description as its last argument, as
//! Codex's `notify` is. `notifications = "off"` turns both off.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use crate::process::{Launch, Role};

/// How long the `notify` command may run before it is killed: hx waits for it, so that a
/// one-shot run does not end (and kill it) before it has said anything.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(5);

/// Characters of the answer or question given to the terminal; of the answer and the user's
/// message in the `notify` command's JSON.
pub const TERMINAL_CHARS: usize = 100;
pub const COMMAND_CHARS: usize = 2_000;

/// How long a run goes before it is worth a word, by default.
pub const DEFAULT_AFTER: Duration = Duration::from_secs(5);

/// `notifications`: how the terminal is told, or not at all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Notifications {
    /// OSC 9 where the terminal is known to show it (and inside tmux), else BEL.
    #[default]
    Auto,
    Osc9,
    Bel,
    /// Nothing: no terminal notification and no `notify` command.
    Off,
}

impl Notifications {
    pub fn name(self) -> &'static str {
        match self {
            Notifications::Auto => "auto",
            Notifications::Osc9 => "osc9",
            Notifications::Bel => "bel",
            Notifications::Off => "off",
        }
    }
}

/// What happened that needs the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why<'a> {
    /// A turn ended: the answer (or why there was none).
    TurnEnded {
        input: &'a str,
        answer: &'a str,
        failed: bool,
    },
    /// hx asks whether to run a command.
    Approval { command: &'a str },
}

impl<'a> Why<'a> {
    /// A turn that ended by itself: the user's message and how it ended.
    pub fn turn(input: &'a str, end: &'a crate::events::TurnEnd) -> Why<'a> {
        let (answer, failed) = match end {
            crate::events::TurnEnd::Answered(text) => (text.as_str(), false),
            crate::events::TurnEnd::Failed { message, .. } => (message.as_str(), true),
        };
        Why::TurnEnded {
            input,
            answer,
            failed,
        }
    }
}

/// Tells the user, as the config says.
#[derive(Debug, Clone)]
pub struct Notifier {
    mode: Notifications,
    command: Vec<String>,
    after: Duration,
    cwd: PathBuf,
}

impl Notifier {
    /// `None` when `notifications = "off"`.
    pub fn new(
        mode: Notifications,
        command: Vec<String>,
        after: Duration,
        cwd: PathBuf,
    ) -> Option<Arc<Notifier>> {
        (mode != Notifications::Off).then(|| {
            Arc::new(Notifier {
                mode,
                command,
                after,
                cwd,
            })
        })
    }

    /// Says `why`, when the run has gone on for `elapsed`, long enough to be worth it: the
    /// terminal (only when stderr is one), then the `notify` command, waited for.
    pub async fn tell(&self, elapsed: Duration, session_id: &str, why: Why<'_>) {
        if elapsed < self.after {
            return;
        }
        let stderr = std::io::stderr();
        if stderr.is_terminal() {
            let env = TermEnv::from_process();
            let bytes = sequence(self.mode, &env, &headline(why));
            let mut e = stderr.lock();
            let _ = e.write_all(bytes.as_bytes());
            let _ = e.flush();
        }
        if !self.command.is_empty() {
            let payload = payload(why, session_id, &self.cwd);
            self.run_command(payload.to_string()).await;
        }
    }

    /// The user's own command (the config's, a project's only once trusted), as a hook runs:
    /// outside the sandbox, its output discarded, killed after [`COMMAND_TIMEOUT`].
    async fn run_command(&self, payload: String) {
        let (program, args) = match self.command.split_first() {
            Some(p) => p,
            None => return,
        };
        let mut args = args.to_vec();
        args.push(payload);
        let launch = Launch::program(program, &args, &self.cwd, Role::Hook)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let Ok(mut child) = launch.spawn() else {
            return;
        };
        if tokio::time::timeout(COMMAND_TIMEOUT, child.wait())
            .await
            .is_ok()
        {
            child.group.disarm();
        } else {
            child.group.kill();
        }
    }
}

/// What decides the terminal's sequence: tmux, and which terminal it is.
#[derive(Debug, Clone, Default)]
pub struct TermEnv {
    pub tmux: bool,
    pub term: String,
    pub term_program: String,
}

impl TermEnv {
    fn from_process() -> TermEnv {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        TermEnv {
            tmux: std::env::var_os("TMUX").is_some_and(|v| !v.is_empty()),
            term: var("TERM"),
            term_program: var("TERM_PROGRAM"),
        }
    }

    /// Terminals that show OSC 9 as a notification.
    fn shows_osc9(&self) -> bool {
        const PROGRAMS: [&str; 3] = ["iTerm.app", "WezTerm", "ghostty"];
        const TERMS: [&str; 3] = ["xterm-kitty", "xterm-ghostty", "wezterm"];
        PROGRAMS.contains(&self.term_program.as_str()) || TERMS.contains(&self.term.as_str())
    }
}

/// The bytes that tell the terminal `text`: OSC 9 (`ESC ] 9 ; text BEL`), inside tmux wrapped
/// in its passthrough (`ESC P tmux; ... ESC \`, each ESC inside doubled), or a BEL alone.
/// `TERM=dumb` gets BEL: it takes no escape codes.
pub fn sequence(mode: Notifications, env: &TermEnv, text: &str) -> String {
    let osc9 = match mode {
        Notifications::Off => return String::new(),
        Notifications::Bel => false,
        Notifications::Osc9 => env.term != "dumb",
        Notifications::Auto => env.term != "dumb" && (env.tmux || env.shows_osc9()),
    };
    if !osc9 {
        return "\x07".into();
    }
    let osc = format!("\x1b]9;{}\x07", clean(text, TERMINAL_CHARS));
    if env.tmux {
        format!("\x1bPtmux;{}\x1b\\", osc.replace('\x1b', "\x1b\x1b"))
    } else {
        osc
    }
}

/// The line a notification shows.
fn headline(why: Why<'_>) -> String {
    match why {
        Why::TurnEnded {
            answer,
            failed: false,
            ..
        } => format!("hx: done: {answer}"),
        Why::TurnEnded { answer, .. } => format!("hx: stopped: {answer}"),
        Why::Approval { command } => format!("hx: waiting for your approval: {command}"),
    }
}

/// The `notify` command's argument: Codex's `agent-turn-complete` (its keys), or hx's own
/// `approval-requested`.
pub fn payload(why: Why<'_>, session_id: &str, cwd: &std::path::Path) -> serde_json::Value {
    let cut = |s: &str| crate::text::cut(s, COMMAND_CHARS);
    match why {
        Why::TurnEnded {
            input,
            answer,
            failed,
        } => json!({
            "type": "agent-turn-complete",
            "thread-id": session_id,
            "cwd": cwd,
            "input-messages": [cut(input)],
            "last-assistant-message": cut(answer),
            "failed": failed,
        }),
        Why::Approval { command } => json!({
            "type": "approval-requested",
            "thread-id": session_id,
            "cwd": cwd,
            "command": cut(command),
        }),
    }
}

/// `text` on one line, without a control character (it goes inside an escape sequence: the
/// model's text must not end it or start another), at most `max` characters.
fn clean(text: &str, max: usize) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::text::cut(&crate::text::collapse_whitespace(&line), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(tmux: bool, term: &str, program: &str) -> TermEnv {
        TermEnv {
            tmux,
            term: term.into(),
            term_program: program.into(),
        }
    }

    #[test]
    fn osc9_where_shown_bel_elsewhere_and_tmux_passes_it_through() {
        let auto = Notifications::Auto;
        assert_eq!(
            sequence(auto, &env(false, "xterm-256color", "iTerm.app"), "hi"),
            "\x1b]9;hi\x07"
        );
        assert_eq!(
            sequence(auto, &env(false, "xterm-256color", ""), "hi"),
            "\x07"
        );
        assert_eq!(
            sequence(auto, &env(true, "screen", "tmux"), "hi"),
            "\x1bPtmux;\x1b\x1b]9;hi\x07\x1b\\"
        );
        assert_eq!(
            sequence(Notifications::Bel, &env(true, "", ""), "hi"),
            "\x07"
        );
        assert_eq!(
            sequence(Notifications::Osc9, &env(false, "dumb", ""), "hi"),
            "\x07"
        );
        assert_eq!(sequence(Notifications::Off, &env(true, "", ""), "hi"), "");
    }

    #[test]
    fn the_text_cannot_end_the_sequence() {
        let s = sequence(
            Notifications::Osc9,
            &env(false, "xterm", ""),
            "a\x07b\x1b]9;evil\x1b\\\nc",
        );
        assert_eq!(s, "\x1b]9;a b ]9;evil \\ c\x07");
    }
}
