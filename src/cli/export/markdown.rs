//! A session as a Markdown document, for people: a title (the task), the model, provider,
//! start and figures, then each user message, the model's reasoning and text, its tool calls
//! (the arguments as JSON) and their results, compactions, rewinds and runs noted in line,
//! subagents' sessions under the call that started them.
//!
//! Everything from the session is outside text: in a document someone will render, it goes
//! into fenced code blocks (a fence longer than any run of backticks in it, so no text can
//! close it early), names, ids and times into code spans built the same way, and the task in
//! the title has every ASCII punctuation character escaped, so nothing becomes a link, an
//! image, HTML or a heading.
//! Nothing is fetched or run. Tool results, arguments and reasoning longer than
//! [`CUT_CHARS`] characters keep their start and end, with a line saying how much was left
//! out; the messages themselves are whole.

use std::fmt::Write as _;

use super::timeline::{By, Call, Step, Timeline, Turn};
use crate::text::{one_line, thousands};
use crate::tools::output::BoundedText;

/// Characters of a tool result, a call's arguments or the reasoning kept in the document.
pub const CUT_CHARS: usize = 4_000;
/// Characters of the task in the title.
const TITLE_CHARS: usize = 100;

/// The document of `t`.
pub fn document(t: &Timeline) -> String {
    let mut out = String::new();
    let task = t
        .steps
        .iter()
        .find_map(|s| match s {
            Step::User { text, .. } => Some(text.trim()),
            _ => None,
        })
        .filter(|t| !t.is_empty())
        .unwrap_or("(no task)");
    let _ = writeln!(out, "# {}\n", inline(&one_line(task, TITLE_CHARS)));
    session(&mut out, t, 0);
    let _ = writeln!(
        out,
        "---\n\nExported by hx {} (`hx sessions export --format markdown`). Tool results, \
         arguments and reasoning longer than {} characters keep their start and end. The \
         system prompt is left out (`hx context` shows it).",
        env!("CARGO_PKG_VERSION"),
        thousands(CUT_CHARS as u64)
    );
    out
}

/// `t`'s facts and steps, its headings `depth` levels below the document's.
fn session(out: &mut String, t: &Timeline, depth: usize) {
    let h = &t.header;
    let f = &t.totals;
    let mut model = format!("{} ({})", code(&h.model), code(&h.provider));
    if let Some(e) = &h.effort {
        let _ = write!(model, ", effort {}", code(e));
    }
    let _ = writeln!(out, "- Session: {}", code(&h.id));
    if let (Some(p), Some(c)) = (&h.parent_id, &h.parent_call_id) {
        let _ = writeln!(out, "- Subagent of session {}, call {}", code(p), code(c));
    }
    let _ = writeln!(out, "- Model: {model}");
    let _ = writeln!(out, "- Started: {}", code(&h.started_at));
    let last = t
        .runs
        .last()
        .and_then(|r| r.outcome.as_deref())
        .unwrap_or("unfinished");
    let _ = writeln!(out, "- Runs: {}, the last {}", t.runs.len(), code(last));
    let mut figures = format!(
        "{} turns, {} tool calls ({} blocked); {} prompt tokens ({} cache hits), {} completion \
         tokens",
        f.turns,
        f.tool_calls,
        f.blocked,
        thousands(f.prompt_tokens),
        thousands(f.cache_hit_tokens),
        thousands(f.completion_tokens)
    );
    if f.reasoning_tokens > 0 {
        let _ = write!(figures, " ({} reasoning)", thousands(f.reasoning_tokens));
    }
    // hx's own words: nothing in them is Markdown.
    let _ = write!(figures, "; cost {}", f.cost.show());
    let _ = writeln!(out, "- Figures: {figures}\n");

    for step in &t.steps {
        match step {
            // The system prompt is long and the same in every session of a workspace; copied
            // steps repeat what is above.
            Step::System { .. } => {}
            Step::User { copied: true, .. } => {}
            Step::Agent(turn) if turn.copied => {}
            // Shown under its compaction.
            Step::User { summary: true, .. } => {}
            Step::Agent(turn) if turn.by == By::Summary => {}
            Step::User { text, .. } => {
                heading(out, depth, "User");
                fenced(out, "text", text);
            }
            Step::Agent(turn) => agent(out, t, turn, depth),
            Step::Compaction(c) => {
                match c.replaced {
                    Some(_) => {
                        let _ = writeln!(
                            out,
                            "*Compacted ({}, {}): about {} tokens before, {} after; the \
                             history was replaced by the summary below, the task and the \
                             latest messages.*\n",
                            code(&c.trigger),
                            code(&c.step),
                            thousands(c.tokens_before),
                            thousands(c.tokens_after)
                        );
                    }
                    None => {
                        let _ = writeln!(
                            out,
                            "*Compacted ({}, {}): about {} tokens before, {} after; {} old \
                             tool results cleared.*\n",
                            code(&c.trigger),
                            code(&c.step),
                            thousands(c.tokens_before),
                            thousands(c.tokens_after),
                            c.cleared.len()
                        );
                    }
                }
                if let Some(s) = &c.summary {
                    fenced(out, "text", s);
                }
            }
            Step::Rewind { line, .. } => {
                let what = match (line.code, line.conversation) {
                    (true, true) => "the files and the conversation",
                    (false, true) => "the conversation",
                    _ => "the files",
                };
                let _ = writeln!(
                    out,
                    "*Rewound to checkpoint {}: {what} went back.*\n",
                    line.to
                );
            }
            Step::Run(i) => {
                if let Some(r) = t.runs.get(*i) {
                    let _ = writeln!(
                        out,
                        "*Run {} started {}, {} ({}).*\n",
                        i + 1,
                        code(&r.started_at),
                        code(&r.model),
                        code(&r.provider)
                    );
                }
            }
            Step::End(i) => {
                if let Some(r) = t.runs.get(*i) {
                    let detail = r
                        .detail
                        .as_deref()
                        .map(|d| format!(": {}", inline(&one_line(d, 200))))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "*Run {} ended: {}{detail}.*\n",
                        i + 1,
                        code(r.outcome.as_deref().unwrap_or("unknown"))
                    );
                }
            }
            Step::Model(m) => {
                let _ = writeln!(out, "*Model switched to {}.*\n", code(m));
            }
            Step::Effort(e) => {
                let _ = writeln!(
                    out,
                    "*Effort set to {}.*\n",
                    code(e.as_deref().unwrap_or("none"))
                );
            }
            Step::Stray { call_id, content } => {
                let _ = writeln!(
                    out,
                    "*A result of call {}, which is not in the session:*\n",
                    code(call_id)
                );
                cut_fenced(out, content);
            }
        }
    }
}

fn agent(out: &mut String, t: &Timeline, turn: &Turn, depth: usize) {
    match turn.by {
        By::Unrecorded => {
            let what = if turn.usage.as_ref().is_some_and(|u| u.request.is_some()) {
                "*A compaction's summary request was made; no compaction followed it.*"
            } else {
                "*A request was made whose answer is not in the session (the run stopped \
                 before it was recorded).*"
            };
            let _ = writeln!(out, "{what}\n");
            return;
        }
        By::Hx | By::Summary | By::Model => {}
    }
    heading(out, depth, "Assistant");
    if let Some(r) = &turn.reasoning {
        let _ = writeln!(out, "Reasoning:\n");
        cut_fenced(out, r);
    }
    if !turn.content.trim().is_empty() {
        fenced(out, "text", &turn.content);
    }
    for call in &turn.calls {
        tool_call(out, t, call, depth);
    }
}

fn tool_call(out: &mut String, t: &Timeline, call: &Call, depth: usize) {
    let _ = writeln!(
        out,
        "Tool call {} ({}):\n",
        code(&call.name),
        code(&call.id)
    );
    let args = match serde_json::from_str::<serde_json::Value>(&call.arguments) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_else(|_| call.arguments.clone()),
        Err(_) => call.arguments.clone(),
    };
    let (args, note) = cut(&args);
    fenced(out, "json", &args);
    if let Some(note) = note {
        let _ = writeln!(out, "{note}\n");
    }
    match &call.result {
        Some(r) => {
            let when = if r.at_resume {
                " (given when the session was resumed)"
            } else {
                ""
            };
            let _ = writeln!(out, "Result{when}:\n");
            cut_fenced(out, &r.content);
        }
        None => {
            let _ = writeln!(
                out,
                "*No result: the session stopped before the call ended.*\n"
            );
        }
    }
    for sub in t
        .subagents
        .iter()
        .filter(|s| s.call_id.as_deref() == Some(call.id.as_str()))
    {
        heading(out, depth + 1, "Subagent");
        session(out, &sub.timeline, depth + 1);
        let _ = writeln!(out, "*End of the subagent's session.*\n");
    }
}

/// A heading of the session's steps, `depth` levels below the document's (at most six).
fn heading(out: &mut String, depth: usize, text: &str) {
    let level = (2 + depth).min(6);
    let _ = writeln!(out, "{} {text}\n", "#".repeat(level));
}

/// `text` cut to [`CUT_CHARS`], and the line saying what was left out.
fn cut(text: &str) -> (String, Option<String>) {
    let mut b = BoundedText::new(CUT_CHARS);
    b.push(text);
    let (total, omitted) = (b.total_chars(), b.omitted());
    let kept = b.finish();
    let note = (omitted > 0).then(|| {
        format!(
            "*Cut: {} of its {} characters left out in the middle.*",
            thousands(omitted as u64),
            thousands(total as u64)
        )
    });
    (kept, note)
}

fn cut_fenced(out: &mut String, text: &str) {
    let (kept, note) = cut(text);
    fenced(out, "text", &kept);
    if let Some(note) = note {
        let _ = writeln!(out, "{note}\n");
    }
}

/// `text` in a fenced code block whose fence no line of it can close: one backtick longer
/// than the longest run of backticks in it, and at least three.
fn fenced(out: &mut String, info: &str, text: &str) {
    let fence = "`".repeat((longest_backticks(text) + 1).max(3));
    let _ = writeln!(out, "{fence}{info}");
    out.push_str(text);
    if !text.ends_with('\n') {
        out.push('\n');
    }
    let _ = writeln!(out, "{fence}\n");
}

/// A short piece of outside text (an id, a name, a time) as a code span: shown as it is, never
/// read as Markdown or HTML. Its backticks are one more than the longest run in it, with a
/// space inside when it starts or ends with one, as CommonMark asks; newlines become spaces.
pub fn code(text: &str) -> String {
    let flat = one_line(text, usize::MAX);
    if flat.trim().is_empty() {
        return "(none)".into();
    }
    let ticks = "`".repeat(longest_backticks(&flat) + 1);
    let pad = if flat.starts_with('`') || flat.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{flat}{pad}{ticks}")
}

fn longest_backticks(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// Outside text in running Markdown: every ASCII punctuation character backslash-escaped
/// (CommonMark lets any of them be), so it stays literal text, and newlines as spaces.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_ascii_punctuation() => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}
