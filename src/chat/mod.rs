//! The interactive mode: the loop that drives an `app::Conversation` from the terminal
//! (`conversation`), `/model` and `/effort` (`model`), switching and resuming sessions
//! (`switch`), the line editor (`editor`), what a typed line asks for (`commands`), the
//! approval questions (`approve`), the terminal's saved settings (`terminal`), and what the
//! slash commands show.
//!
//! Each message is one `Conversation::send` on the session, so the request of every message
//! extends the previous one exactly. A turn cancelled with Ctrl-C drops that future;
//! `Conversation::cancelled` then answers what it left open before the next request.

use std::fmt::Write as _;

use crate::model::Message;
use crate::session::Figures;
use crate::skills::SkillRegistry;
use crate::tools::todo::{self, Todo};
use crate::tools::ToolSpec;

pub mod approve;
pub mod commands;
mod conversation;
pub mod editor;
mod invoke;
mod model;
pub mod queue;
mod recap;
mod rewind;
mod switch;
mod terminal;

pub use crate::app::outcome::INTERRUPTED;
pub use conversation::{run, Setup, PROMPT};
pub use terminal::SavedTerminal;

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

/// `/usage`, each block headed by its scope. A resumed session's figures are shown twice:
/// every run's (what the file adds up to) and this run's (since hx opened it); the lines per
/// model count this run's requests only (the file keeps no earlier figures by model), so
/// they go under this run. A session this run began has one scope.
pub fn usage_report(session: Option<&crate::session::Session>) -> String {
    let indented = |text: &str| {
        text.lines()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let Some(s) = session else {
        return format!(
            "this session:\n{}",
            indented(&usage_text(&Figures::default()))
        );
    };
    let this_run = format!(
        "{}{}",
        usage_text(&s.stats.figures()),
        by_model_text(&s.stats.by_model)
    );
    if s.resumed() {
        format!(
            "this session, every run:\n{}\nthis run (since it was resumed):\n{}",
            indented(&usage_text(&s.totals())),
            indented(&this_run)
        )
    } else {
        format!("this session:\n{}", indented(&this_run))
    }
}

/// The figures of `/usage`, one scope's.
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
/// hit share; the background shells running, when any are.
pub fn status_text(
    context: u64,
    window: u64,
    turn: &crate::model::Spend,
    session: &crate::model::Spend,
    cache: Option<u64>,
    shells: usize,
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
    match shells {
        0 => {}
        1 => s.push_str(" · 1 shell running"),
        n => {
            let _ = write!(s, " · {n} shells running");
        }
    }
    s
}

/// `/shells`: each background shell of the run, how it stands, its command and output size.
pub fn shells_text(shells: &[crate::tools::shells::Listed]) -> String {
    if shells.is_empty() {
        return "no background shells (bash starts one with run_in_background)".to_string();
    }
    let lines: Vec<String> = shells
        .iter()
        .map(|s| {
            let state = match &s.end {
                None => "running".to_string(),
                Some(end) => format!("ended ({end})"),
            };
            format!(
                "{} {state}: {} ({} bytes of output)",
                s.id,
                crate::text::one_line(&s.command, 60),
                s.bytes
            )
        })
        .collect();
    lines.join("\n")
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

/// `/context`: what the next request carries besides the new message, in tokens (hx's
/// estimate, as compaction counts them) against the window, each part with its characters.
pub fn context_text(
    system_prompt: &str,
    catalog: &str,
    skills: usize,
    budget: usize,
    tools: &[ToolSpec],
    messages: &[Message],
    size: &ContextSize,
) -> String {
    use crate::context::estimate;
    use crate::text::thousands;
    let chars = |s: &str| s.chars().count();
    let tokens = |s: &str| thousands(estimate::tokens(s.len()));
    let mut s = String::new();
    let share = size.tokens.saturating_mul(100) / size.window.max(1);
    let _ = writeln!(
        s,
        "next request: about {} tokens of the {}-token window ({share} %); compaction past {}",
        thousands(size.tokens),
        thousands(size.window),
        thousands(size.limit)
    );
    let _ = writeln!(
        s,
        "system prompt: about {} tokens ({} characters): the base rules, then the skill catalog",
        tokens(system_prompt),
        chars(system_prompt)
    );
    let _ = writeln!(
        s,
        "skill catalog: {}, {} of at most {budget} characters (skills_catalog_budget)",
        crate::text::count(skills as u64, "skill"),
        chars(catalog)
    );
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let _ = writeln!(
        s,
        "tools: {} (about {} tokens of specs)",
        names.join(", "),
        thousands(size.tools)
    );
    let conversation: Vec<&Message> = messages
        .iter()
        .filter(|m| !matches!(m, Message::System(_)))
        .collect();
    let conv_chars: usize = conversation.iter().map(|m| message_chars(m)).sum();
    let conv_tokens: u64 = conversation.iter().map(|m| estimate::message(m)).sum();
    let _ = write!(
        s,
        "conversation: {}, about {} tokens ({conv_chars} characters)",
        crate::text::count(conversation.len() as u64, "message"),
        thousands(conv_tokens)
    );
    s
}

/// The sizes `/context` measures against.
#[derive(Debug, Clone, Copy)]
pub struct ContextSize {
    /// The whole next request, as compaction estimates it.
    pub tokens: u64,
    /// The tool schemas and the request's fixed keys.
    pub tools: u64,
    pub window: u64,
    /// Where compaction starts.
    pub limit: u64,
}

impl ContextSize {
    /// Before the first message there is no session yet: the request would be the system
    /// prompt alone.
    pub fn measure(
        settings: crate::context::Settings,
        model: &str,
        system_prompt: &str,
        tools: &[ToolSpec],
        messages: &[Message],
    ) -> ContextSize {
        let overhead = crate::context::estimate::overhead(model, tools);
        let mut meter = crate::context::Meter::new(settings, overhead);
        let tokens = if messages.is_empty() {
            meter.whole(&[Message::System(system_prompt.to_string())])
        } else {
            meter.whole(messages)
        };
        ContextSize {
            tokens,
            tools: overhead,
            window: meter.window(),
            // Where this conversation compacts: before the limit in a smaller window, so that
            // the summary request fits whole.
            limit: meter.compact_point(messages),
        }
    }
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
        "{}; the catalog in the system prompt is {} of at most {budget} characters",
        crate::text::count(registry.len() as u64, "skill"),
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
