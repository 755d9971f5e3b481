//! What a line typed at the `hx chat` prompt asks for: a message for the model, one of the
//! chat's slash commands, or a command file or skill to invoke. Pure, so every rule is a
//! unit test.

/// The slash commands, with their one-line help, in the order `/help` lists them.
pub const COMMANDS: [(&str, &str); 19] = [
    ("/help", "this list"),
    ("/exit", "leave (also /quit, Ctrl-D, or Ctrl-C twice)"),
    ("/quit", "leave"),
    ("/new", "start a new session (also /clear)"),
    ("/clear", "start a new session"),
    (
        "/resume",
        "/resume [ID]: list this workspace's sessions and pick one",
    ),
    ("/compact", "summarise the conversation to free context"),
    ("/model", "/model [NAME]: show or switch the model"),
    (
        "/effort",
        "/effort [off|low|high|max]: show or switch how hard the model thinks",
    ),
    (
        "/goal",
        "/goal [CMD|off]: each answer must pass CMD (run in the sandbox), or show the goal",
    ),
    ("/diff", "what this session's turns changed, as a diff"),
    (
        "/rewind",
        "/rewind [N] [--code|--conversation] [--force]: the checkpoints, or go back to one",
    ),
    ("/skills", "the skill catalog, with sizes"),
    ("/todos", "the model's current todo list"),
    (
        "/shells",
        "/shells [kill ID]: the background shells, or end one",
    ),
    (
        "/queue",
        "the messages queued during a turn (Up on an empty prompt takes the last back)",
    ),
    ("/usage", "tokens so far and cache hits"),
    (
        "/context",
        "what the system prompt and the conversation hold",
    ),
    (
        "/NAME",
        "/NAME [args]: a command file or a skill, listed below (//text sends a literal /)",
    ),
];

/// The names of the chat's own commands, which win over a command file or skill of the
/// same name.
pub fn builtin_names() -> Vec<&'static str> {
    let mut names: Vec<&str> = COMMANDS
        .iter()
        .map(|(c, _)| c.trim_start_matches('/'))
        .filter(|c| *c != "NAME")
        .collect();
    names.push("?");
    names
}

/// One name `/` offers besides the chat's own commands (a command file or a skill), as Tab
/// and `/help` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Named {
    pub name: String,
    pub hint: Option<String>,
    pub description: String,
}

/// One completion: what Tab puts in the line, and what the list of candidates shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub replacement: String,
    pub display: String,
}

/// One line from the prompt, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing but whitespace: nothing to do.
    Empty,
    /// Sent to the model as typed (`//text` as `/text`).
    Message(String),
    Help,
    Exit,
    New,
    Resume(Option<String>),
    Compact,
    Model(Option<String>),
    Effort(Option<String>),
    /// `/goal CMD`, `/goal off`, `/goal`: set, clear or show the goal.
    Goal(Option<String>),
    Diff,
    Rewind(Option<String>),
    Skills,
    Todos,
    /// `/shells`, or `/shells kill ID`.
    Shells(Option<String>),
    Usage,
    Context,
    /// `/queue`: what was queued during a turn.
    Queue,
    /// `/NAME args` that is none of the chat's own: a command file or a skill, if one has
    /// that name (`app::invoke` decides).
    Invoke {
        name: String,
        args: String,
    },
}

/// Reads one line.
pub fn parse(line: &str) -> Input {
    use crate::app::invoke::{classify, Line};
    if line.trim().is_empty() {
        return Input::Empty;
    }
    let (word, args) = match classify(line) {
        Line::Message(m) => return Input::Message(m),
        Line::Slash { name, args } => (name, args),
    };
    let arg = Some(args).filter(|a| !a.is_empty()).map(str::to_string);
    match word {
        "help" | "?" => Input::Help,
        "exit" | "quit" => Input::Exit,
        "new" | "clear" => Input::New,
        "resume" => Input::Resume(arg),
        "compact" => Input::Compact,
        "model" => Input::Model(arg),
        "effort" => Input::Effort(arg),
        "goal" => Input::Goal(arg),
        "diff" => Input::Diff,
        "rewind" => Input::Rewind(arg),
        "skills" => Input::Skills,
        "todos" => Input::Todos,
        "shells" => Input::Shells(arg),
        "usage" => Input::Usage,
        "context" => Input::Context,
        "queue" => Input::Queue,
        w => Input::Invoke {
            name: w.to_string(),
            args: args.to_string(),
        },
    }
}

/// The candidates for Tab at the start of a line: the chat's commands, then the command
/// files and skills (shown with their argument hint), that begin with `word` (which starts
/// with `/`). A name the chat's own commands take is not offered twice.
pub fn complete(word: &str, named: &[Named]) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| *c != "/NAME" && c.starts_with(word))
        .map(|c| Candidate {
            replacement: c.to_string(),
            display: c.to_string(),
        })
        .collect();
    let mut more: Vec<Candidate> = named
        .iter()
        .map(|n| (format!("/{}", n.name), n))
        .filter(|(s, _)| s.starts_with(word) && !out.iter().any(|c| c.replacement == *s))
        .map(|(s, n)| Candidate {
            display: match &n.hint {
                Some(h) => format!("{s} {}", crate::text::escape_line(h)),
                None => s.clone(),
            },
            replacement: s,
        })
        .collect();
    more.sort_by(|a, b| a.replacement.cmp(&b.replacement));
    out.extend(more);
    out
}

/// `/help`'s text: the chat's commands, then the command files and skills `/` runs.
pub fn help(named: &[Named]) -> String {
    let mut s = String::from(
        "Type a message and press Enter. Alt-Enter or a trailing \\ starts a new line; a \
         pasted block is one message. Ctrl-R searches the history, Tab completes commands \
         and skill names. Ctrl-C stops the running turn.\n\
         While a turn runs the prompt (..>) stays up: Enter sends the line to the running \
         turn as a steer, added before its next request (a steer the turn ends without \
         sending goes as the next message); Tab queues it as the next turn instead. Up on \
         an empty prompt takes the last queued message back to edit; Ctrl-C on the line \
         then drops it. Ctrl-C on an empty prompt stops the turn and keeps what is queued: \
         Enter on an empty prompt sends the next of it.\n",
    );
    for (cmd, what) in COMMANDS {
        s.push_str(&format!("  {cmd:<10} {what}\n"));
    }
    if !named.is_empty() {
        s.push_str("Commands and skills:\n");
    }
    for n in named {
        let head = match &n.hint {
            Some(h) => format!("/{} {h}", n.name),
            None => format!("/{}", n.name),
        };
        s.push_str(&format!(
            "  {head:<24} {}\n",
            crate::term::one_line(&n.description, 80)
        ));
    }
    s
}

/// The text of a line typed with a trailing `\` before each newline: the backslashes only
/// asked for the new line.
pub fn join_continued(text: &str) -> String {
    text.replace("\\\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> Input {
        parse(line)
    }

    #[test]
    fn commands_and_messages() {
        assert_eq!(p("  "), Input::Empty);
        assert_eq!(p("hello there "), Input::Message("hello there".into()));
        assert_eq!(p("/exit"), Input::Exit);
        assert_eq!(p("/quit"), Input::Exit);
        assert_eq!(p("/clear"), Input::New);
        assert_eq!(p("/resume"), Input::Resume(None));
        assert_eq!(p("/resume 0192 "), Input::Resume(Some("0192".into())));
        assert_eq!(p("/model"), Input::Model(None));
        assert_eq!(
            p("/model  deepseek-v4-pro"),
            Input::Model(Some("deepseek-v4-pro".into()))
        );
        assert_eq!(p("/usage"), Input::Usage);
        assert_eq!(p("/shells"), Input::Shells(None));
        assert_eq!(
            p("/shells kill bg1"),
            Input::Shells(Some("kill bg1".into()))
        );
        assert_eq!(p("/effort"), Input::Effort(None));
        assert_eq!(p("/diff"), Input::Diff);
        assert_eq!(p("/rewind"), Input::Rewind(None));
        assert_eq!(
            p("/rewind 2 --code"),
            Input::Rewind(Some("2 --code".into()))
        );
        assert_eq!(p("/effort  low "), Input::Effort(Some("low".into())));
        assert_eq!(p("/goal"), Input::Goal(None));
        assert_eq!(
            p("/goal cargo test -q"),
            Input::Goal(Some("cargo test -q".into()))
        );
    }

    #[test]
    fn other_names_are_invocations_and_a_double_slash_is_literal() {
        assert_eq!(
            p("/sync-upstream now"),
            Input::Invoke {
                name: "sync-upstream".into(),
                args: "now".into()
            }
        );
        assert_eq!(p("//help me"), Input::Message("/help me".into()));
        // A message that merely contains a slash is a message.
        assert_eq!(p("see /etc/hosts"), Input::Message("see /etc/hosts".into()));
        assert!(builtin_names().contains(&"help"));
        assert!(!builtin_names().contains(&"NAME"));
    }

    #[test]
    fn completion_lists_commands_then_named_with_hints() {
        let named = [
            Named {
                name: "sync-upstream".into(),
                hint: Some("[branch]".into()),
                description: String::new(),
            },
            Named {
                name: "release".into(),
                hint: None,
                description: String::new(),
            },
        ];
        let shown = |w: &str| -> Vec<String> {
            complete(w, &named).into_iter().map(|c| c.display).collect()
        };
        assert_eq!(
            shown("/s"),
            vec!["/skills", "/shells", "/sync-upstream [branch]"]
        );
        assert_eq!(shown("/re"), vec!["/resume", "/rewind", "/release"]);
        assert_eq!(complete("/sy", &named)[0].replacement, "/sync-upstream");
        assert!(shown("/zz").is_empty());
        assert!(help(&named).contains("/sync-upstream [branch]"));
    }

    #[test]
    fn continued_lines_lose_their_backslashes() {
        assert_eq!(join_continued("a\\\nb\\\nc"), "a\nb\nc");
        assert_eq!(join_continued("keep \\ this"), "keep \\ this");
    }
}
