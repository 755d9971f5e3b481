//! `/NAME args`: a command file or a skill the user invokes, made into the message it sends,
//! the same for `hx chat` and `hx agent`.
//!
//! A command's body, its arguments put in, is the user's message; its `model` and
//! `allowed-tools` hold for that message only (see [`Invocation::outgoing`]). A
//! skill's body goes in as `load_skill` would give it, the `<skill name=...>` block, with
//! the user's words after it: one user message appended, so the history before it, the
//! system prompt and the tools stay byte for byte what the prompt cache holds.
//!
//! Preparing ([`prepare`]) is cheap and synchronous, so an unknown name is an error before
//! anything is recorded or sent; running what the body runs ([`Prepared::finish`]) is async,
//! so the caller races it against Ctrl-C like a turn.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::Outgoing;
use crate::agent::Agent;
use crate::commands::{self, Command, ShellSpan};
use crate::config::{Config, Env};
use crate::skills::render::render;
use crate::skills::{Skill, SkillRegistry};
use crate::text::Warning;
use crate::tools::{Tool, ToolContext};

/// Most characters of one `` !`cmd` ``'s output put into a message (head and tail kept).
pub const MAX_SHELL_OUTPUT_CHARS: usize = 8_000;
/// Longest one `` !`cmd` `` may run.
pub const SHELL_TIMEOUT: Duration = Duration::from_secs(30);
/// Most near names an unknown `/NAME`'s error lists.
const NEAR_NAMES: usize = 5;

/// What a typed line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line<'a> {
    /// Sent as it is (`//text` is `/text`, the first slash only saying "literally").
    Message(String),
    /// `/NAME args`.
    Slash { name: &'a str, args: &'a str },
}

/// Reads a line: a leading `/` names a command or skill, `//` sends a literal slash.
pub fn classify(line: &str) -> Line<'_> {
    let trimmed = line.trim_start();
    if let Some(rest) = trimmed.strip_prefix("//") {
        return Line::Message(format!("/{}", rest.trim_end()));
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Line::Message(line.trim_end().to_string());
    };
    let (name, args) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest.trim_end(), ""),
    };
    Line::Slash { name, args }
}

/// What the user may invoke by name: command files, then skills.
#[derive(Debug, Clone, Default)]
pub struct Invocables {
    pub commands: Arc<commands::Discovery>,
    pub skills: Arc<SkillRegistry>,
}

/// One thing `/NAME` names, with its one-line help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub name: String,
    pub hint: Option<String>,
    pub description: String,
    /// `command` or `skill`.
    pub what: &'static str,
}

/// What a name invokes.
#[derive(Debug, Clone, Copy)]
pub enum Target<'a> {
    Command(&'a Command),
    Skill(&'a Skill),
}

impl Invocables {
    /// The commands visible from `root`, and the skills already discovered.
    pub fn discover(root: &Path, skills: Arc<SkillRegistry>) -> Invocables {
        let home = crate::paths::home_dir();
        Invocables {
            commands: Arc::new(commands::discover(root, home.as_deref())),
            skills,
        }
    }

    /// What `hx agent "/NAME"` needs: the command of that name alone when there is one
    /// (its file read, not every command file), else every command for the skills and the
    /// near names of an error.
    pub fn discover_for(root: &Path, skills: Arc<SkillRegistry>, name: &str) -> Invocables {
        let home = crate::paths::home_dir();
        let commands = commands::find(root, home.as_deref(), name)
            .unwrap_or_else(|| commands::discover(root, home.as_deref()));
        Invocables {
            commands: Arc::new(commands),
            skills,
        }
    }

    /// What discovering the command files found wrong, for the run to say at start.
    pub fn warnings(&self) -> Vec<Warning> {
        self.commands
            .run_warnings()
            .into_iter()
            .map(Warning::new)
            .collect()
    }

    /// What `/NAME` names: a command wins over a skill of the same name; a skill that says
    /// `user-invocable: false` is not one.
    pub fn find(&self, name: &str) -> Option<Target<'_>> {
        if let Some(c) = self.commands.get(name) {
            return Some(Target::Command(c));
        }
        self.skills
            .get(name)
            .filter(|s| s.user_invocable)
            .map(Target::Skill)
    }

    /// Everything `/` offers, in name order, each name once (as [`Invocables::find`]).
    pub fn listed(&self) -> Vec<Listed> {
        let mut out: Vec<Listed> = self
            .commands
            .commands
            .iter()
            .map(|c| Listed {
                name: c.name.clone(),
                hint: c.argument_hint.clone(),
                description: c.description.clone(),
                what: "command",
            })
            .collect();
        for s in self.skills.skills().iter().filter(|s| s.user_invocable) {
            if self.commands.get(&s.name).is_none() {
                out.push(Listed {
                    name: s.name.clone(),
                    hint: s.argument_hint.clone(),
                    description: s.description.clone(),
                    what: "skill",
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The error for a `/NAME` that names nothing: the names closest to it.
    pub fn unknown(&self, name: &str) -> String {
        let listed = self.listed();
        let near = commands::near_names(name, listed.iter().map(|l| l.name.as_str()), NEAR_NAMES);
        let shown = crate::text::one_line(name, 64);
        let mut s = format!("unknown command /{shown}: no command file or skill of that name");
        if near.is_empty() {
            if listed.is_empty() {
                s.push_str(" (there are none here)");
            }
        } else {
            let near: Vec<String> = near.iter().map(|n| format!("/{n}")).collect();
            s.push_str(&format!("; did you mean {}?", near.join(", ")));
        }
        s.push_str(" (start with // to send a literal /)");
        s
    }

    /// One warning per command or skill that a name in `builtins` hides (the chat's own
    /// commands win), and per skill a command file hides.
    pub fn shadowed(&self, builtins: &[&str]) -> Vec<Warning> {
        let mut out = Vec::new();
        for c in &self.commands.commands {
            if builtins.contains(&c.name.as_str()) {
                out.push(Warning::new(format!(
                    "command file {} is hidden by hx chat's own /{}",
                    c.path.display(),
                    c.name
                )));
            }
        }
        for s in self.skills.skills().iter().filter(|s| s.user_invocable) {
            if builtins.contains(&s.name.as_str()) {
                out.push(Warning::new(format!(
                    "skill {} ({}) is hidden by hx chat's own /{} (the model can still load it)",
                    s.name,
                    s.path.display(),
                    s.name
                )));
            } else if let Some(c) = self.commands.get(&s.name) {
                out.push(Warning::new(format!(
                    "skill {} is hidden from / by the command file {}",
                    s.name,
                    c.path.display()
                )));
            }
        }
        out
    }
}

/// An invocation read and checked, its shell spans not yet run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// `/NAME`, for messages.
    pub shown: String,
    /// `/NAME args` as the user typed it (trimmed), what lists of sessions show.
    typed: String,
    body: String,
    args: String,
    /// A skill's block (sent as it is), not a command's body.
    skill: bool,
    /// The body's spans; they run only when `run` says so, and stay as written otherwise.
    spans: Vec<ShellSpan>,
    run: bool,
    pub model: Option<String>,
    pub tools: Option<Vec<String>>,
    /// What to say before the message is sent.
    pub warnings: Vec<Warning>,
}

/// The message an invocation sends, and what holds for it alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub message: String,
    /// `/NAME args`, as typed.
    pub typed: String,
    pub model: Option<String>,
    pub tools: Option<Vec<String>>,
    /// A skill's block, not a command's body.
    pub skill: bool,
}

/// Reads what `target` invokes with `args`: a command's body (its notes as warnings when
/// `notes` is true, which the caller makes once per command), or a skill's block as
/// `load_skill` renders it (`root`: the workspace its resource paths are relative to).
pub fn prepare(
    target: Target<'_>,
    args: &str,
    skills: &SkillRegistry,
    root: &Path,
    env: &Env,
    notes: bool,
) -> Result<Prepared, String> {
    let typed = |name: &str| match args.trim() {
        "" => format!("/{name}"),
        args => format!("/{name} {args}"),
    };
    match target {
        Target::Skill(skill) => {
            let block = render(skills, &skill.name, root).map_err(|e| e.to_string())?;
            let body = if args.trim().is_empty() {
                block
            } else {
                format!("{block}\n\n{}", args.trim())
            };
            Ok(Prepared {
                shown: format!("/{}", skill.name),
                typed: typed(&skill.name),
                body,
                args: String::new(),
                skill: true,
                spans: Vec::new(),
                run: false,
                model: None,
                tools: None,
                warnings: Vec::new(),
            })
        }
        Target::Command(cmd) => {
            let body = commands::read_body(cmd)?;
            let mut warnings: Vec<Warning> = if notes {
                cmd.notes
                    .iter()
                    .map(|n| Warning::new(format!("command {}: {n}", cmd.name)))
                    .collect()
            } else {
                Vec::new()
            };
            let spans = commands::shell_spans(&body);
            let mut run = !spans.is_empty();
            if run {
                let runs: Vec<String> = spans.iter().map(|s| s.command.clone()).collect();
                if let Err(w) = commands::trust::may_run(cmd, &runs, env) {
                    warnings.push(w);
                    run = false;
                }
            }
            Ok(Prepared {
                shown: format!("/{}", cmd.name),
                typed: typed(&cmd.name),
                body,
                args: args.to_string(),
                skill: false,
                spans,
                run,
                model: cmd.model.clone(),
                tools: cmd.tools.clone(),
                warnings,
            })
        }
    }
}

impl Prepared {
    /// Runs the spans (each as the `bash` tool runs a command: the run's sandbox and
    /// environment, in the workspace, output bounded to [`MAX_SHELL_OUTPUT_CHARS`], at most
    /// [`SHELL_TIMEOUT`]), and makes the message. The guard and hooks do not see them: the
    /// user wrote the file, or approved what it runs.
    pub async fn finish(self, cx: &ToolContext) -> Invocation {
        let mut cx = cx.clone();
        cx.limits.output_chars = cx.limits.output_chars.min(MAX_SHELL_OUTPUT_CHARS);
        cx.limits.bash_timeout = cx.limits.bash_timeout.min(SHELL_TIMEOUT);
        let mut outputs = Vec::with_capacity(self.spans.len());
        for span in self.spans.iter().filter(|_| self.run) {
            let r = crate::tools::bash::Bash
                .call(json!({ "command": span.command }), &cx)
                .await;
            outputs.push(r.content.trim_end().to_string());
        }
        // A skill's block goes as `load_skill` gives it, its `$` signs its own.
        let message = if self.skill {
            self.body
        } else {
            commands::expand(&self.body, &self.spans, &outputs, &self.args)
        };
        Invocation {
            message,
            typed: self.typed,
            model: self.model,
            tools: self.tools,
            skill: self.skill,
        }
    }

    /// Whether [`Prepared::finish`] runs anything.
    pub fn runs(&self) -> bool {
        self.run
    }
}

impl Invocation {
    /// The message to send, with what holds for it alone: the profile of the command's
    /// `model` (made as `/model` makes one) and the tools of its `allowed-tools`, picked from
    /// `agent`'s. A tool it names that this run does not have is a warning.
    pub fn outgoing(self, agent: &Agent, config: &Config, warnings: &mut Vec<Warning>) -> Outgoing {
        let tools = self.tools.as_ref().map(|names| {
            let have: Vec<String> = agent
                .tools()
                .as_listed()
                .specs()
                .into_iter()
                .map(|s| s.name)
                .collect();
            let missing: Vec<&str> = names
                .iter()
                .filter(|n| !have.contains(n))
                .map(String::as_str)
                .collect();
            if !missing.is_empty() {
                warnings.push(Warning::new(format!(
                    "allowed-tools names {} this run does not have",
                    missing.join(", ")
                )));
            }
            agent.tools().only(names)
        });
        let profile = self.model.as_deref().map(|m| {
            let (profile, notice) = config.profile_for(m);
            warnings.extend(notice);
            profile
        });
        Outgoing {
            text: self.message,
            profile,
            tools,
            invoked_skill: self.skill,
            typed: Some(self.typed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified() {
        assert_eq!(classify("hello"), Line::Message("hello".into()));
        assert_eq!(
            classify("/review  src/a.rs now "),
            Line::Slash {
                name: "review",
                args: "src/a.rs now"
            }
        );
        assert_eq!(
            classify("/x"),
            Line::Slash {
                name: "x",
                args: ""
            }
        );
        assert_eq!(
            classify("//etc/hosts is odd"),
            Line::Message("/etc/hosts is odd".into())
        );
    }
}
