//! The interactive mode: the conversation loop, which owns the session and the agent
//! (`conversation`), switching and resuming sessions (`switch`), the line editor
//! (`editor`), what a typed line asks for (`commands`), the approval questions (`approve`),
//! the terminal's saved settings (`terminal`), and what the slash commands show.
//!
//! A conversation is one [`Session`]: each message is `Agent::run_message` on it, so the
//! request of every message extends the previous one exactly. A turn cancelled with Ctrl-C
//! drops the run's future; [`answer_open_calls`] then answers what it left open before the
//! next request.

use std::fmt::Write as _;

use crate::model::Message;
use crate::session::{Figures, Session};
use crate::skills::SkillRegistry;
use crate::tools::todo::{self, Todo};
use crate::tools::ToolSpec;

pub mod approve;
pub mod commands;
mod conversation;
pub mod editor;
mod switch;
mod terminal;

pub use crate::app::outcome::INTERRUPTED;
pub use conversation::{run, Setup, PROMPT};
pub use terminal::SavedTerminal;

/// Answers the calls of the last assistant turn that have no result yet (a turn cancelled
/// during its tools), recording the answers, so the next request is valid. Returns how many.
pub fn answer_open_calls(session: &mut Session) -> usize {
    session.answer_open_calls(INTERRUPTED)
}

/// The model's latest todo list: the last `todo_write` call that succeeded (as the todo tool
/// itself finds it when it takes up a history).
pub fn latest_todos(messages: &[Message]) -> Option<Vec<Todo>> {
    todo::latest_in(messages).map(|(_, items)| items)
}

/// `/todos`.
pub fn todos_text(messages: &[Message]) -> String {
    match latest_todos(messages) {
        Some(items) if !items.is_empty() => todo::render(&items, true),
        _ => "no todos in this session".to_string(),
    }
}

/// `/usage`: the session's figures so far, every run of it included.
pub fn usage_text(f: &Figures) -> String {
    let hit = if f.prompt_tokens > 0 {
        // Shown to one decimal; u64 to f64 loses nothing that matters at that precision.
        format!(
            " ({:.1}% of prompt tokens)",
            f.cache_hit_tokens as f64 * 100.0 / f.prompt_tokens as f64
        )
    } else {
        String::new()
    };
    // Thinking is paid as output: shown beside it, when the server counted it.
    let thinking = match f.reasoning_tokens {
        0 => String::new(),
        n => format!(" ({n} of them reasoning)"),
    };
    let mut s = format!(
        "requests: {}, tool calls: {} ({} refused)\nprompt tokens: {}, cache hits: {}{hit}\ncompletion tokens: {}{thinking}",
        f.turns, f.tool_calls, f.blocked, f.prompt_tokens, f.cache_hit_tokens, f.completion_tokens
    );
    if !f.cost.is_empty() {
        let _ = write!(s, "\ncost: {}", f.cost.show());
    }
    s
}

/// `/usage`'s lines per model (this conversation's requests; a subagent's own are in its
/// session, and in the turn's status line).
pub fn by_model_text(by_model: &[(String, crate::model::Usage, crate::model::Spend)]) -> String {
    let mut s = String::new();
    for (model, u, spend) in by_model {
        let _ = write!(
            s,
            "\n  {model}: prompt tokens {}, cache hits {}, completion tokens {}, cost {}",
            u.prompt_tokens,
            u.prompt_cache_hit_tokens,
            u.completion_tokens,
            spend.show()
        );
    }
    if s.is_empty() {
        s
    } else {
        format!("\nby model:{s}")
    }
}

/// The line after each turn: how full the context is, what the turn cost (its subagents'
/// requests included) and the session (its own requests, every run), and the turn's cache
/// hit share.
pub fn status_text(
    context: u64,
    window: u64,
    turn: &crate::model::Spend,
    session: &crate::model::Spend,
    cache: Option<u64>,
) -> String {
    let mut s = format!(
        "context {} of {} tokens · turn {} · session {}",
        crate::text::thousands(context),
        crate::text::thousands(window),
        turn.show(),
        session.show()
    );
    if let Some(p) = cache {
        let _ = write!(s, " · cache {p}%");
    }
    s
}

/// `/effort`: how hard the model thinks, and the subagents when theirs differs.
pub fn effort_text(config: &crate::config::Config) -> String {
    let main = config.main_effort();
    let mut s = match main {
        Some(e) => format!("effort: {}", e.name()),
        None => "effort: none set, so the model's default holds (DeepSeek V4: thinking on, at \
                 high)"
            .to_string(),
    };
    if let Some(sub) = config.subagent_effort.filter(|e| Some(*e) != main) {
        let _ = write!(s, "; subagents: {}", sub.name());
    }
    s
}

/// `/context`: what the next request carries besides the new message.
pub fn context_text(
    system_prompt: &str,
    catalog: &str,
    skills: usize,
    budget: usize,
    tools: &[ToolSpec],
    messages: &[Message],
) -> String {
    let chars = |s: &str| s.chars().count();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "system prompt: {} characters: the base rules, then the skill catalog",
        chars(system_prompt)
    );
    let _ = writeln!(
        s,
        "skill catalog: {skills} skill(s), {} of at most {budget} characters (skills_catalog_budget)",
        chars(catalog)
    );
    let spec_chars: usize = tools
        .iter()
        .map(|t| chars(&t.name) + chars(&t.description) + chars(&t.parameters.to_string()))
        .sum();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(
        s,
        "tools: {} ({spec_chars} characters of specs)",
        names.join(", ")
    );
    let conversation: Vec<&Message> = messages
        .iter()
        .filter(|m| !matches!(m, Message::System(_)))
        .collect();
    let conv_chars: usize = conversation.iter().map(|m| message_chars(m)).sum();
    let _ = write!(
        s,
        "conversation: {} message(s), {conv_chars} characters",
        conversation.len()
    );
    s
}

fn message_chars(m: &Message) -> usize {
    match m {
        Message::System(t) | Message::User(t) => t.chars().count(),
        Message::Tool { content, .. } => content.chars().count(),
        Message::Assistant {
            content,
            reasoning,
            tool_calls,
        } => {
            content.chars().count()
                + reasoning.as_deref().map_or(0, |r| r.chars().count())
                + tool_calls
                    .iter()
                    .map(|c| c.name.chars().count() + c.arguments.chars().count())
                    .sum::<usize>()
        }
    }
}

/// `/skills`: one line per skill (name, where from, size of its SKILL.md, description), then
/// the catalog's size against its budget.
pub fn skills_text(registry: &SkillRegistry, catalog: &str, budget: usize) -> String {
    if registry.is_empty() {
        return "no skills: add .agents/skills/NAME/SKILL.md (see hx skills --help)".into();
    }
    let mut s = String::new();
    for skill in registry.skills() {
        let size = std::fs::metadata(&skill.path)
            .map(|m| format_size(m.len()))
            .unwrap_or_else(|_| "?".into());
        let _ = writeln!(
            s,
            "{:<24} {:<7} {:>8}  {}",
            skill.name,
            skill.source.as_str(),
            size,
            crate::term::one_line(&skill.description, 70)
        );
    }
    let _ = write!(
        s,
        "{} skill(s); the catalog in the system prompt is {} of at most {budget} characters",
        registry.len(),
        catalog.chars().count()
    );
    s
}

fn format_size(bytes: u64) -> String {
    if bytes < 10 * 1024 {
        format!("{bytes} B")
    } else {
        format!("{} KiB", bytes / 1024)
    }
}

#[cfg(test)]
mod tests;
