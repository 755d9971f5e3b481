//! What a line typed at the `hx chat` prompt asks for: a message for the model, or one of the
//! slash commands. Pure, so every rule is a unit test.

/// The slash commands, with their one-line help, in the order `/help` lists them.
pub const COMMANDS: [(&str, &str); 16] = [
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
    ("/diff", "what this session's turns changed, as a diff"),
    (
        "/rewind",
        "/rewind [N] [--code|--conversation] [--force]: the checkpoints, or go back to one",
    ),
    ("/skills", "the skill catalog, with sizes"),
    ("/todos", "the model's current todo list"),
    ("/usage", "tokens so far and cache hits"),
    (
        "/context",
        "what the system prompt and the conversation hold",
    ),
    (
        "/SKILL",
        "a skill's name sends the line as typed; the model loads the skill",
    ),
];

/// One line from the prompt, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Nothing but whitespace: nothing to do.
    Empty,
    /// Sent to the model as typed (a message, or `/skill-name ...`).
    Message(String),
    Help,
    Exit,
    New,
    Resume(Option<String>),
    Compact,
    Model(Option<String>),
    Effort(Option<String>),
    Diff,
    Rewind(Option<String>),
    Skills,
    Todos,
    Usage,
    Context,
    /// `/word` that is no command and no skill: nothing is sent.
    Unknown(String),
}

/// Reads one line. `is_skill` says whether a name is a skill of the catalog.
pub fn parse(line: &str, is_skill: impl Fn(&str) -> bool) -> Input {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Input::Message(line.trim_end().to_string());
    };
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, Some(a.trim()).filter(|a| !a.is_empty())),
        None => (rest, None),
    };
    let arg = arg.map(str::to_string);
    match word {
        "help" | "?" => Input::Help,
        "exit" | "quit" => Input::Exit,
        "new" | "clear" => Input::New,
        "resume" => Input::Resume(arg),
        "compact" => Input::Compact,
        "model" => Input::Model(arg),
        "effort" => Input::Effort(arg),
        "diff" => Input::Diff,
        "rewind" => Input::Rewind(arg),
        "skills" => Input::Skills,
        "todos" => Input::Todos,
        "usage" => Input::Usage,
        "context" => Input::Context,
        // The catalog's description is what leads the model to load the skill, as the
        // skill's author wrote it; hx does not load it behind the model's back.
        w if !w.is_empty() && is_skill(w) => Input::Message(line.trim_end().to_string()),
        w => Input::Unknown(format!("/{w}")),
    }
}

/// The candidates for Tab at the start of a line: commands, then `/skill` names, that begin
/// with `word` (which starts with `/`).
pub fn complete<'a>(word: &str, skills: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = COMMANDS
        .iter()
        .map(|(c, _)| *c)
        .filter(|c| *c != "/SKILL" && c.starts_with(word))
        .map(str::to_string)
        .collect();
    let mut names: Vec<String> = skills
        .map(|s| format!("/{s}"))
        .filter(|s| s.starts_with(word) && !out.contains(s))
        .collect();
    names.sort();
    out.extend(names);
    out
}

/// `/help`'s text.
pub fn help() -> String {
    let mut s = String::from(
        "Type a message and press Enter. Alt-Enter or a trailing \\ starts a new line; a \
         pasted block is one message. Ctrl-R searches the history, Tab completes commands \
         and skill names. Ctrl-C stops the running turn.\n",
    );
    for (cmd, what) in COMMANDS {
        s.push_str(&format!("  {cmd:<10} {what}\n"));
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
        parse(line, |n| n == "sync-upstream")
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
        assert_eq!(p("/effort"), Input::Effort(None));
        assert_eq!(p("/diff"), Input::Diff);
        assert_eq!(p("/rewind"), Input::Rewind(None));
        assert_eq!(
            p("/rewind 2 --code"),
            Input::Rewind(Some("2 --code".into()))
        );
        assert_eq!(p("/effort  low "), Input::Effort(Some("low".into())));
    }

    #[test]
    fn a_skill_name_is_sent_as_typed_and_other_words_are_not() {
        assert_eq!(
            p("/sync-upstream now"),
            Input::Message("/sync-upstream now".into())
        );
        assert_eq!(p("/sync"), Input::Unknown("/sync".into()));
        assert_eq!(p("/ what"), Input::Unknown("/".into()));
        // A message that merely contains a slash is a message.
        assert_eq!(p("see /etc/hosts"), Input::Message("see /etc/hosts".into()));
    }

    #[test]
    fn completion_lists_commands_then_skills() {
        let skills = ["sync-upstream", "release"];
        assert_eq!(
            complete("/s", skills.iter().copied()),
            vec!["/skills", "/sync-upstream"]
        );
        assert_eq!(
            complete("/re", skills.iter().copied()),
            vec!["/resume", "/rewind", "/release"]
        );
        assert!(complete("/zz", skills.iter().copied()).is_empty());
    }

    #[test]
    fn continued_lines_lose_their_backslashes() {
        assert_eq!(join_continued("a\\\nb\\\nc"), "a\nb\nc");
        assert_eq!(join_continued("keep \\ this"), "keep \\ this");
    }
}
