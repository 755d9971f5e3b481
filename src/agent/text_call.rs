//! A tool call written as text. Small models write a call as JSON in their answer (bare, in a
//! fenced block, or in the `<tool_call>` tags their template asks for, which the server then
//! failed to parse) instead of making it: Qwen2.5-Coder does so most of the time. The server
//! returns it as the answer's text, and without this the run would end with it as the final
//! answer, exit 0, nothing done.
//!
//! Such an answer is never run: text is not a call, and guessing at one would run what the
//! model may not have meant. It stays in the history as the model wrote it, one user message
//! after it says it was text, and the run goes on, at most [`MAX_CORRECTIONS`] times a run;
//! after that the answer is taken as it is.

use serde_json::{Map, Value};

use super::{Agent, Run};
use crate::model::{Message, ToolSpec};
use crate::session::Session;
use crate::tools::output::quote;

/// How the corrective message begins: hx's words, which a summary does not carry over as the
/// user's.
pub const CORRECTION: &str = "[hx: a tool call written as text] ";

/// Corrections in one run (one message of a conversation): a model that writes its calls as
/// text a third time will not change, and its answer may be meant.
pub const MAX_CORRECTIONS: u32 = 2;

/// An answer longer than this is not looked at: calls written as text are short, and an
/// answer is no reason to parse megabytes.
const MAX_BYTES: usize = 256 * 1024;
/// Calls one answer may hold to be taken for calls written as text.
const MAX_CALLS: usize = 64;

/// Keys that name the tool, in the shapes models write: `{"name": ..., "arguments": ...}`
/// (Qwen's template, Hermes), `{"tool": ..., "parameters": ...}`, `{"function": ...}`.
const NAME_KEYS: [&str; 4] = ["name", "tool", "tool_name", "function"];
/// Keys that hold the arguments.
const ARGUMENT_KEYS: [&str; 5] = ["arguments", "parameters", "args", "input", "tool_input"];
/// Other keys a call written as text may have (OpenAI's wire shape).
const OTHER_KEYS: [&str; 2] = ["type", "id"];

/// The tools `text` calls, when it is nothing but calls of tools in `offered` written as
/// JSON: bare, in one fenced block, or in `<tool_call>` (or `<tools>`) tags; several calls
/// one after the other, or as an array, count too.
pub fn written_calls(text: &str, offered: &[ToolSpec]) -> Option<Vec<String>> {
    let text = text.trim();
    if text.is_empty() || text.len() > MAX_BYTES {
        return None;
    }
    let text = unfence(text).unwrap_or(text).trim();
    let mut names = Vec::new();
    for json in untag(text)? {
        for value in serde_json::Deserializer::from_str(json).into_iter::<Value>() {
            let calls = match value.ok()? {
                Value::Array(items) => items,
                one => vec![one],
            };
            for call in &calls {
                names.push(call_of(call, offered)?);
                if names.len() > MAX_CALLS {
                    return None;
                }
            }
        }
    }
    (!names.is_empty()).then_some(names)
}

/// The inside of one fenced block that is the whole text (```` ```json ````, or a fence
/// without a language, or another one-word language).
fn unfence(text: &str) -> Option<&str> {
    let body = text.strip_prefix("```")?.strip_suffix("```")?;
    let (lang, inner) = body.split_once('\n')?;
    let word = lang.trim();
    let one_word = word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (one_word && !inner.contains("```")).then_some(inner)
}

/// The JSON texts inside the `<tool_call>` (or `<tools>`) tags that are the whole text, or
/// the text itself when it has none.
fn untag(text: &str) -> Option<Vec<&str>> {
    let Some((open, close)) = [("<tool_call>", "</tool_call>"), ("<tools>", "</tools>")]
        .into_iter()
        .find(|(open, _)| text.starts_with(open))
    else {
        return Some(vec![text]);
    };
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let inner = rest.strip_prefix(open)?;
        // A last block the model did not close is still one.
        let (json, after) = inner.split_once(close).unwrap_or((inner, ""));
        out.push(json.trim());
        if out.len() > MAX_CALLS {
            return None;
        }
        rest = after.trim_start();
    }
    Some(out)
}

/// What the correction asks for. A server that serves a model through its chat template
/// (llama-server `--jinja`, Ollama, vLLM) takes a call from the model's text, in the format
/// the template's instructions give (Qwen's: the JSON between `<tool_call>` tags): telling
/// such a model not to write tags would forbid the only call it can make. So: for JSON bare or
/// in a code block, that format; for the tags themselves, which the server then did not take
/// as a call, the tool-calling interface.
fn how_to_call(text: &str) -> &'static str {
    let text = text.trim();
    let text = unfence(text).unwrap_or(text).trim_start();
    if text.starts_with("<tool_call>") || text.starts_with("<tools>") {
        "The server did not take those tags as a call: a tool runs only when you call it \
         through the tool-calling interface. Make the call again as a tool call."
    } else {
        "A tool runs only when you call it as a tool call: in exactly the format your \
         instructions give for tool calls, not as JSON in a code block or bare. Make the call \
         again as a tool call."
    }
}

/// The tool `v` calls, when it is one call of a tool in `offered` with its arguments.
fn call_of(v: &Value, offered: &[ToolSpec]) -> Option<String> {
    let obj = v.as_object()?;
    // OpenAI's shape: the call inside `function`.
    let (inner, outer_keys): (&Map<String, Value>, &[&str]) = match obj.get("function") {
        Some(Value::Object(f)) => (f, &["function", "type", "id"]),
        _ => (obj, &[]),
    };
    if !outer_keys.is_empty() && !obj.keys().all(|k| outer_keys.contains(&k.as_str())) {
        return None;
    }
    let known = |k: &String| {
        let k = k.as_str();
        NAME_KEYS.contains(&k) || ARGUMENT_KEYS.contains(&k) || OTHER_KEYS.contains(&k)
    };
    if !inner.keys().all(known) {
        return None;
    }
    let name = NAME_KEYS
        .iter()
        .find_map(|k| inner.get(*k).and_then(Value::as_str))?;
    let arguments = ARGUMENT_KEYS.iter().find_map(|k| inner.get(*k))?;
    let is_object = match arguments {
        Value::Object(_) => true,
        Value::String(s) => matches!(serde_json::from_str(s), Ok(Value::Object(_))),
        _ => false,
    };
    (is_object && offered.iter().any(|t| t.name == name)).then(|| name.to_string())
}

impl Agent {
    /// An answer (`content`, already in the history) that is only tool calls written as text:
    /// the model told it was text, and true, the run goes on. False: it is the answer (it is
    /// not such text, or the model was told [`MAX_CORRECTIONS`] times already).
    pub(super) fn text_call(
        &self,
        session: &mut Session,
        run: &mut Run<'_>,
        content: &str,
    ) -> bool {
        let Some(names) = written_calls(content, &run.tools) else {
            return false;
        };
        let name = quote(&names[0]);
        let what = match names.len() {
            1 => format!("a call of {name}"),
            n => format!("{n} calls ({name}, ...)"),
        };
        if run.text_calls >= MAX_CORRECTIONS {
            self.notice(&format!(
                "the model wrote {what} as text again; taken as its answer (told {MAX_CORRECTIONS} \
                 times already)"
            ));
            return false;
        }
        run.text_calls += 1;
        session.stats.text_calls = session.stats.text_calls.saturating_add(1);
        session.push(Message::User(format!(
            "{CORRECTION}Your last reply was {what} written as text, so nothing ran. {} If that \
             text was meant as your final answer, say so in plain words.",
            how_to_call(content)
        )));
        self.notice(&format!(
            "the model wrote {what} as text instead of calling it: not run; it is told so \
             ({} of {MAX_CORRECTIONS})",
            run.text_calls
        ));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn offered() -> Vec<ToolSpec> {
        ["bash", "glob", "todo_write"]
            .into_iter()
            .map(|name| ToolSpec {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }

    fn names(text: &str) -> Option<Vec<String>> {
        written_calls(text, &offered())
    }

    #[test]
    fn the_shapes_small_models_write_are_calls_written_as_text() {
        let bash = Some(vec!["bash".to_string()]);
        for text in [
            // Qwen2.5-Coder: bare, and in a fence.
            r#"{"name": "bash", "arguments": {"command": "ls"}}"#,
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```",
            "```\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\n",
            // Its template's tags, which the server did not parse; one left open.
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tool_call>",
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
            "<tools>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n</tools>",
            // Other words for the parts, arguments as a string, OpenAI's wire shape.
            r#"{"tool": "bash", "parameters": {"command": "ls"}}"#,
            r#"{"name": "bash", "arguments": "{\"command\": \"ls\"}"}"#,
            r#"{"type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}"#,
            r#"[{"name": "bash", "arguments": {"command": "ls"}}]"#,
        ] {
            assert_eq!(names(text), bash, "{text}");
        }
        assert_eq!(
            names(
                "<tool_call>\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}\n</tool_call>\n\
                 <tool_call>\n{\"name\": \"todo_write\", \"arguments\": {\"todos\": []}}\n</tool_call>"
            ),
            Some(vec!["glob".to_string(), "todo_write".to_string()])
        );
    }

    #[test]
    fn answers_that_are_not_only_calls_of_offered_tools_are_answers() {
        for text in [
            "",
            "Done: the tests pass.",
            // A tool this run does not offer, or no arguments.
            r#"{"name": "shell", "arguments": {"command": ["ls"]}}"#,
            r#"{"name": "bash"}"#,
            r#"{"name": "bash", "arguments": ["ls"]}"#,
            // JSON that is data, not a call.
            r#"{"name": "bash", "version": "5.2", "arguments": {}}"#,
            r#"{"status": "ok"}"#,
            // Words around the call.
            "I will run it:\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
            "```json\n{\"name\": \"bash\", \"arguments\": {}}\n```\nThat is the call.",
            "```json\n{\"name\": \"bash\", \"arguments\": {}}\n```\n```json\n{}\n```",
            "<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call> and more",
        ] {
            assert_eq!(names(text), None, "{text}");
        }
        let huge = format!(
            r#"{{"name": "bash", "arguments": {{"command": "{}"}}}}"#,
            "x".repeat(MAX_BYTES)
        );
        assert_eq!(names(&huge), None);
    }
}
