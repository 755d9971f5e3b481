//! `hx sessions list | show ID | rm | prune`: the recorded sessions of this workspace
//! (`export` is in `export.rs`).

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{exit, SessionsArgs, SessionsCommand};
use crate::app::session::store_for;
use crate::config::{process_env, Env};
use crate::context::{summary, thousands};
use crate::session::store::{sessions_root, summarize, Store, Summary};
use crate::term::one_line;
use crate::text::Warning;

/// Characters of a task, answer or tool output line shown in a transcript.
const SHOWN: usize = 160;
/// Subagent transcripts shown inside one another at most.
const MAX_NESTING: usize = 4;
/// Lines of a tool's output shown in a transcript: the first and the last ones.
const SHOWN_HEAD: usize = 3;
const SHOWN_TAIL: usize = 2;

pub(super) fn sessions_command(args: SessionsArgs) -> i32 {
    let cwd = match super::current_dir() {
        Ok(d) => d,
        Err(code) => return code,
    };
    let env = process_env();
    let Some(root) = sessions_root(&env) else {
        return super::fail(
            exit::USAGE,
            "no place for sessions: set HOME or XDG_STATE_HOME",
        );
    };
    let store = store_for(&root, &cwd);
    match args.command {
        SessionsCommand::List { all, json } => list(&root, &store, all, json),
        SessionsCommand::Show { id, json } => show(&root, &store, &id, json),
        SessionsCommand::Export { id, format, output } => {
            super::export::export(&root, &store, &id, format, output.as_deref())
        }
        SessionsCommand::Rm { ids } => remove(&root, &store, &ids, (&cwd, &env)),
        SessionsCommand::Prune { older_than, all } => {
            prune(&root, &store, older_than, all, (&cwd, &env))
        }
    }
}

fn list(root: &Path, store: &Store, all: bool, json: bool) -> i32 {
    let (mut sessions, warnings) = if all {
        let mut out = Vec::new();
        let mut warnings = Vec::new();
        let folders = std::fs::read_dir(root)
            .map(|rd| rd.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_else(|_| Vec::<PathBuf>::new());
        for dir in folders.iter().filter(|p| p.is_dir()) {
            let s = Store::at(dir);
            let (l, w) = s.list(false);
            out.extend(l);
            warnings.extend(w);
        }
        (out, warnings)
    } else {
        store.list(false)
    };
    sessions.sort_by(|a, b| b.id.cmp(&a.id));
    for w in &warnings {
        errln!("{}", Warning::new(w));
    }
    if json {
        let text = serde_json::to_string_pretty(&sessions_json(&sessions)).unwrap_or_default();
        outln!("{text}");
        return exit::ANSWERED;
    }
    if sessions.is_empty() {
        outln!("no sessions recorded in this workspace");
        return exit::ANSWERED;
    }
    for s in &sessions {
        let place = if all {
            format!("  {}", s.workspace)
        } else {
            String::new()
        };
        // A parent's cost counts its subagents' sessions (they are paid for by its run).
        let mut spend = s.spend;
        for c in sessions
            .iter()
            .filter(|c| c.parent_id.as_deref() == Some(s.id.as_str()))
        {
            spend.add(&c.spend);
        }
        outln!(
            "{}  {}{place}  turns={:<3} cost={:<10} {:<11} {}",
            s.short_id,
            s.started_at,
            s.turns,
            spend.show(),
            s.outcome,
            one_line(&s.task, 100)
        );
    }
    exit::ANSWERED
}

/// `hx sessions rm ID...`: each id found as `-r` finds it; every one is tried, and the exit
/// code says whether all went.
fn remove(root: &Path, store: &Store, ids: &[String], here: (&Path, &Env)) -> i32 {
    let mut code = exit::ANSWERED;
    let mut gone = Vec::new();
    for id in ids {
        let path = match crate::app::session::locate(root, store, id) {
            Ok(p) => p,
            Err(f) => {
                code = super::show_failure(f);
                continue;
            }
        };
        let home = path.parent().map(Store::at);
        let owner = home.as_ref().unwrap_or(store);
        let short = path
            .file_stem()
            .map(|s| owner.short(&s.to_string_lossy()))
            .unwrap_or_default();
        match owner.remove(&path) {
            Ok(removed) => {
                let subagents = removed.len() - 1;
                let with = match subagents {
                    0 => String::new(),
                    1 => " and its subagent's".into(),
                    n => format!(" and its {n} subagents'"),
                };
                outln!("removed session {short}{with}");
                gone.extend(removed);
            }
            Err(e) => code = super::fail(exit::FAILED, e),
        }
    }
    if !forget_checkpoints(&gone, here) {
        code = exit::FAILED;
    }
    code
}

/// The checkpoints of sessions removed go with them: nothing can go back to them any more,
/// and `hx checkpoints` counts what a rewind can reach. Whether that went.
fn forget_checkpoints(ids: &[String], (cwd, env): (&Path, &Env)) -> bool {
    if ids.is_empty() {
        return true;
    }
    // git as a run here would find it (never in a folder a command may write); a config
    // that does not load leaves the checkpoints to the next prune, said.
    let Ok(config) = super::load_config(cwd, env, &crate::config::Flags::default()) else {
        return false;
    };
    let git = super::checkpoints::host_git(&config, cwd, env);
    match super::checkpoints::block_on(crate::checkpoint::forget(env, ids, &git)) {
        Ok(Ok(_)) => true,
        Ok(Err(e)) => {
            errln!(
                "{}",
                Warning::new(format!("their checkpoints are kept: {e}"))
            );
            false
        }
        Err(_) => false,
    }
}

/// `hx sessions prune --older-than AGE [--all]`.
fn prune(
    root: &Path,
    store: &Store,
    age: std::time::Duration,
    all: bool,
    here: (&Path, &Env),
) -> i32 {
    let stores: Vec<Store> = if all {
        std::fs::read_dir(root)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .map(|p| Store::at(&p))
                    .collect()
            })
            .unwrap_or_default()
    } else {
        vec![store.clone()]
    };
    let (mut removed, mut problems) = (Vec::new(), Vec::new());
    for s in &stores {
        let (r, p) = s.prune(age);
        removed.extend(r);
        problems.extend(p);
    }
    let forgot = forget_checkpoints(&removed, here);
    let removed = removed.len();
    for p in &problems {
        errln!("{}", Warning::new(p));
    }
    let files = if removed == 1 { "file" } else { "files" };
    outln!(
        "removed {removed} session {files} not written for {}",
        humantime::format_duration(age)
    );
    if problems.is_empty() && forgot {
        exit::ANSWERED
    } else {
        exit::FAILED
    }
}

fn sessions_json(sessions: &[Summary]) -> Value {
    serde_json::to_value(sessions).unwrap_or(Value::Null)
}

fn show(root: &Path, store: &Store, id: &str, json: bool) -> i32 {
    let path = match crate::app::session::locate(root, store, id) {
        Ok(p) => p,
        Err(f) => return super::show_failure(f),
    };
    // Found in another workspace: its subagents are there too.
    let home = path.parent().map(Store::at);
    let store = home.as_ref().unwrap_or(store);
    if json {
        return match print_raw(&path) {
            Ok(()) => exit::ANSWERED,
            Err(e) => super::fail(exit::FAILED, format!("{}: {e}", path.display())),
        };
    }
    match transcript(store, &path, "") {
        Ok(text) => {
            super::out_text(&text);
            exit::ANSWERED
        }
        Err(e) => super::fail(exit::FAILED, format!("{}: {e}", path.display())),
    }
}

/// The file's complete lines, as they are.
fn print_raw(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(file);
    let mut out = std::io::stdout().lock();
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = (&mut reader)
            .take(crate::session::record::MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| e.to_string())?;
        if n == 0 || !line.ends_with(b"\n") {
            return Ok(());
        }
        // JSON escapes C0 controls but not C1 ones or bidi overrides: on a terminal the line
        // goes through the escaping every outside text gets. In a pipe it is exact.
        let written = if std::io::IsTerminal::is_terminal(&out) {
            let text = String::from_utf8_lossy(&line);
            std::io::Write::write_all(&mut out, crate::text::escape_controls(&text).as_bytes())
        } else {
            std::io::Write::write_all(&mut out, &line)
        };
        if written.is_err() {
            return Ok(());
        }
    }
}

/// A readable transcript of one session, subagents nested under the call that started them.
fn transcript(store: &Store, path: &Path, indent: &str) -> Result<String, String> {
    // Subagents do not start subagents, so real nesting is one level; a damaged or crafted
    // file whose header names itself (or a cycle) as its parent must not recurse forever.
    if indent.len() > 4 * MAX_NESTING {
        return Ok(format!(
            "{indent}(nested deeper than {MAX_NESTING} levels; not shown)\n"
        ));
    }
    let summary = summarize(path)?;
    let mut out = String::new();
    let line = |out: &mut String, text: &str| {
        out.push_str(indent);
        out.push_str(text);
        out.push('\n');
    };
    line(
        &mut out,
        &format!(
            "session {} ({})  started {}  in {}  {} ({})",
            store.short(&summary.id),
            summary.id,
            summary.started_at,
            summary.workspace,
            summary.model,
            summary.provider
        ),
    );
    let children = store.children(&summary.id);
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let reader = BufReader::new(file);
    let mut run = 1;
    let mut calls = Calls {
        store,
        children: &children,
        indent,
        open: Vec::new(),
    };
    for (n, text) in reader.split(b'\n').enumerate() {
        let Ok(text) = text else { break };
        if n == 0 {
            continue;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&text) else {
            calls.flush(&mut out)?;
            line(&mut out, &format!("(line {} is unreadable)", n + 1));
            continue;
        };
        let kind = v["type"].as_str().unwrap_or("");
        // A tool result goes under its call; anything else first shows the calls that got
        // none (the run ended during them).
        let is_result = kind == "message" && v["message"]["role"] == "tool";
        if !is_result && kind != "usage" {
            calls.flush(&mut out)?;
        }
        match kind {
            "run" => {
                run += 1;
                line(
                    &mut out,
                    &format!(
                        "── run {run} · {} · {} ({})",
                        v["started_at"].as_str().unwrap_or("?"),
                        v["model"].as_str().unwrap_or("?"),
                        v["provider"].as_str().unwrap_or("?")
                    ),
                );
            }
            "message" => message(&mut out, &v["message"], &mut calls)?,
            "usage" => line(
                &mut out,
                &format!(
                    "  usage{}: prompt={} cached={} completion={}{}",
                    v["request"]
                        .as_str()
                        .map(|r| format!(" ({})", one_line(r, 20)))
                        .unwrap_or_default(),
                    v["prompt_tokens"],
                    v["prompt_cache_hit_tokens"],
                    v["completion_tokens"],
                    v["reasoning_tokens"]
                        .as_u64()
                        .map(|n| format!(" (reasoning={n})"))
                        .unwrap_or_default()
                ),
            ),
            "compaction" => compaction(&mut out, indent, &v),
            // The numbered ones: what hx rewind N and hx diff --turn N name.
            "checkpoint" => {
                if let Some(n) = v["n"].as_u64() {
                    line(
                        &mut out,
                        &format!(
                            "── checkpoint {n} · {} · before {} {}",
                            v["at"].as_str().unwrap_or("?"),
                            one_line(v["what"].as_str().unwrap_or("?"), 20),
                            one_line(v["label"].as_str().unwrap_or(""), 60)
                        ),
                    );
                }
            }
            "rewind" => line(
                &mut out,
                &format!(
                    "── rewound to checkpoint {}{}{}",
                    v["to"],
                    if v["code"].as_bool() == Some(true) {
                        " · files"
                    } else {
                        ""
                    },
                    if v["conversation"].as_bool() == Some(true) {
                        " · conversation"
                    } else {
                        ""
                    }
                ),
            ),
            // Shown as it was when a repair was written as a compaction line.
            "repair" => line(&mut out, "── compacted (repair, repair): 0 → 0 tokens"),
            "end" => {
                let r = &v["run"];
                let detail = v["detail"]
                    .as_str()
                    .map(|d| format!(": {}", one_line(d, SHOWN)))
                    .unwrap_or_default();
                line(
                    &mut out,
                    &format!(
                        "end: {}{detail} · turns={}, tool_calls={}, blocked={}, cost={} · \
                         session cost={} · {:.1} s",
                        v["outcome"].as_str().unwrap_or("?"),
                        r["turns"],
                        r["tool_calls"],
                        r["blocked"],
                        shown_cost(&r["cost"]),
                        shown_cost(&v["session"]["cost"]),
                        v["duration_ms"].as_f64().unwrap_or(0.0) / 1000.0
                    ),
                );
            }
            _ => {}
        }
    }
    calls.flush(&mut out)?;
    Ok(out)
}

/// The calls of the last assistant message that have no result shown yet: each is shown
/// when its result comes, with the result under it.
struct Calls<'a> {
    store: &'a Store,
    children: &'a [(crate::session::Header, PathBuf)],
    indent: &'a str,
    open: Vec<Value>,
}

impl Calls<'_> {
    /// `> NAME ARGS`, then the transcript of the subagent it started, if it was a `task`.
    fn show_call(&self, out: &mut String, call: &Value) -> Result<(), String> {
        let name = call["function"]["name"].as_str().unwrap_or("?");
        let args = call["function"]["arguments"].as_str().unwrap_or("");
        out.push_str(&format!(
            "{}> {name} {}\n",
            self.indent,
            one_line(args, SHOWN)
        ));
        let id = call["id"].as_str().unwrap_or("");
        for (_, child) in self
            .children
            .iter()
            .filter(|(h, _)| h.parent_call_id.as_deref() == Some(id))
        {
            let nested = format!("{}    ", self.indent);
            out.push_str(&transcript(self.store, child, &nested)?);
        }
        Ok(())
    }

    /// The call `id` answers, shown now (with the ones before it that got no result);
    /// `false` when no open call has that id.
    fn answer(&mut self, out: &mut String, id: &str) -> Result<bool, String> {
        let Some(at) = self.open.iter().position(|c| c["id"] == id) else {
            return Ok(false);
        };
        let before: Vec<Value> = self.open.drain(..=at).collect();
        for call in &before {
            self.show_call(out, call)?;
        }
        Ok(true)
    }

    /// Shows the calls still open.
    fn flush(&mut self, out: &mut String) -> Result<(), String> {
        for call in std::mem::take(&mut self.open) {
            self.show_call(out, &call)?;
        }
        Ok(())
    }
}

/// Where the history was compacted: why, how, the sizes, and what the summary says. The
/// messages before it stay in the transcript as they were sent.
fn compaction(out: &mut String, indent: &str, v: &Value) {
    let line = |out: &mut String, text: &str| {
        out.push_str(indent);
        out.push_str(text);
        out.push('\n');
    };
    let tokens = |key: &str| thousands(v[key].as_u64().unwrap_or(0));
    line(
        out,
        &format!(
            "── compacted ({}, {}): {} → {} tokens",
            one_line(v["trigger"].as_str().unwrap_or("?"), 20),
            one_line(v["step"].as_str().unwrap_or("?"), 20),
            tokens("tokens_before"),
            tokens("tokens_after")
        ),
    );
    if let Some(cleared) = v["cleared"].as_array() {
        line(
            out,
            &format!("  cleared {} old tool outputs", cleared.len()),
        );
    }
    let summary = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str())
        .find_map(|c| c.strip_prefix(summary::HEADER));
    if let Some(text) = summary {
        line(out, &format!("  summary: {}", one_line(text, SHOWN)));
    }
}

/// One message of a transcript: an assistant's calls wait in `calls` for their results.
fn message(out: &mut String, m: &Value, calls: &mut Calls<'_>) -> Result<(), String> {
    let indent = calls.indent;
    let line = |out: &mut String, text: &str| {
        out.push_str(indent);
        out.push_str(text);
        out.push('\n');
    };
    let content = m["content"].as_str().unwrap_or("");
    match m["role"].as_str().unwrap_or("") {
        // The system prompt is the same in every session of a workspace: `hx context` shows it.
        "system" => {}
        "user" => line(out, &format!("user: {}", one_line(content, SHOWN))),
        "assistant" => {
            if !content.trim().is_empty() {
                line(out, &format!("assistant: {}", one_line(content, SHOWN)));
            }
            calls.open = m["tool_calls"].as_array().cloned().unwrap_or_default();
        }
        "tool" => {
            let id = m["tool_call_id"].as_str().unwrap_or("");
            if !calls.answer(out, id)? {
                // A result whose call is not in the file (a damaged file): shown alone.
                line(out, &format!("(result of call {})", one_line(id, 40)));
            }
            let lines: Vec<&str> = content.lines().collect();
            let shown: Vec<String> = if lines.len() > SHOWN_HEAD + SHOWN_TAIL + 1 {
                let mut v: Vec<String> =
                    lines[..SHOWN_HEAD].iter().map(|l| l.to_string()).collect();
                v.push(format!(
                    "… ({} lines)",
                    lines.len() - SHOWN_HEAD - SHOWN_TAIL
                ));
                v.extend(
                    lines[lines.len() - SHOWN_TAIL..]
                        .iter()
                        .map(|l| l.to_string()),
                );
                v
            } else {
                lines.iter().map(|l| l.to_string()).collect()
            };
            for l in shown {
                line(out, &format!("  | {}", one_line(&l, SHOWN)));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A figures' `cost` as the listing shows it; `unknown` when the file has none.
fn shown_cost(v: &serde_json::Value) -> String {
    use crate::model::price::Currency;
    let currency = v["currency"].as_str().and_then(Currency::parse);
    let nanos = v["nanos"].as_u64();
    match (nanos, currency) {
        (Some(n), Some(c)) if v["unpriced"].as_u64().unwrap_or(0) == 0 => c.show(n),
        (Some(n), Some(c)) => format!("{} + unknown", c.show(n)),
        _ => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, ToolCall};
    use crate::session::{store, Header, RunInfo, Session, SessionLog};

    /// A session whose resume answered a call inside the history reads in a transcript as it
    /// did when the answer was recorded as a compaction line.
    #[test]
    fn a_repair_shows_as_it_did_when_it_was_a_compaction() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::at(&dir.path().join("new"));
        let id = store::new_id();
        let header = Header {
            id: id.clone(),
            model: "m".into(),
            provider: "p".into(),
            started_at: "2026-12-01T00:00:00Z".into(),
            ..Header::default()
        };
        let mut s = Session::new(header, Some(store.create(&id).expect("create")));
        s.push(Message::User("task".into()));
        s.push(Message::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }],
        });
        s.push(Message::User("later".into()));
        s.close();
        let path = store.path_of(&id);
        let loaded = crate::session::record::read(&path).expect("read");
        let log = SessionLog::append(&path, loaded.valid_len).expect("append");
        let run = RunInfo {
            started_at: "2026-12-01T00:00:01Z".into(),
            model: "m".into(),
            provider: "p".into(),
            base_url: String::new(),
            hx_version: String::new(),
            effort: None,
        };
        let (mut s, repaired) = Session::resume(loaded, run, Some(log));
        assert_eq!(repaired, 1);
        let repaired_history = s.messages().to_vec();
        s.close();

        let text = std::fs::read_to_string(&path).expect("read");
        let repair = text
            .lines()
            .find(|l| l.starts_with(r#"{"type":"repair""#))
            .expect("a repair line");
        let old = crate::session::Line::compaction(&crate::session::Compaction {
            trigger: "repair".into(),
            step: "repair".into(),
            tokens_before: 0,
            tokens_after: 0,
            change: crate::session::Change::Replaced(repaired_history),
        })
        .text();
        let old_store = Store::at(&dir.path().join("old"));
        std::fs::create_dir_all(old_store.dir()).expect("mkdir");
        let old_path = old_store.path_of(&id);
        std::fs::write(&old_path, text.replace(repair, &old)).expect("write");

        let shown = transcript(&store, &path, "").expect("transcript");
        assert!(
            shown.contains("── compacted (repair, repair): 0 → 0 tokens\n"),
            "{shown}"
        );
        assert_eq!(
            shown,
            transcript(&old_store, &old_path, "").expect("old transcript")
        );
    }
}
