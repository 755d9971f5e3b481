//! End-to-end tests of what hx shows: the trace for a person on stderr (its first line, the
//! preview of a tool result, the plan, the totals, quiet and verbose) and the `--json` event
//! stream for a program on stdout, from the same run.

use std::collections::{HashMap, HashSet};

use crate::support::calls::call;
use crate::support::hooks::{groups, script, stop_line, user_hooks};
use crate::support::{messages, FakeServer, Hx, Reply, Run};
use serde_json::{json, Value};

/// Usage of each of the main agent's responses, and of each of the subagent's.
const MAIN_USAGE: (u64, u64, u64) = (1000, 500, 10);
const SUB_USAGE: (u64, u64, u64) = (100, 50, 1);

const SKILL: &str = "---\nname: deploy\ndescription: Ship it\n---\nRun ./ship.\n";
const FINAL: &str = "All done: the file is edited and the tests were run.";

fn todos(states: [&str; 2]) -> Value {
    json!({"todos": [
        {"content": "Read the notes", "status": states[0], "activeForm": "Reading the notes"},
        {"content": "Fix the file", "status": states[1], "activeForm": "Fixing the file"},
    ]})
}

/// One run that uses everything a view must show: a plan, a skill, bash (failing, with long
/// output), read, write and edit, a subagent with a call of its own, and a call the guard
/// blocks. The subagent's two requests come between the third and fourth of the main agent.
fn full_script() -> Vec<Reply> {
    let (p, h, c) = MAIN_USAGE;
    let (sp, sh, sc) = SUB_USAGE;
    vec![
        Reply::tool_calls(vec![
            call("c1", "todo_write", todos(["in_progress", "pending"])),
            call("c2", "load_skill", json!({"name": "deploy"})),
        ])
        .with_usage(p, h, c),
        Reply::tool_calls(vec![
            call(
                "c3",
                "bash",
                json!({"command": "seq 1 10; echo 'error: boom'; exit 3"}),
            ),
            call("c4", "read_file", json!({"path": "notes.txt"})),
            call(
                "c5",
                "write_file",
                json!({"path": "new.txt", "content": "fresh\n"}),
            ),
            call(
                "c6",
                "edit_file",
                json!({"path": "notes.txt", "old_text": "old", "new_text": "new"}),
            ),
        ])
        .with_content("Running the tests first.")
        .with_usage(p, h, c),
        Reply::tool_calls(vec![
            call(
                "c7",
                "task",
                json!({"description": "count files", "prompt": "Count the text files."}),
            ),
            call("c8", "bash", json!({"command": "sudo rm -rf /"})),
        ])
        .with_usage(p, h, c),
        // The subagent.
        Reply::tool_calls(vec![call("s1", "bash", json!({"command": "ls *.txt"}))])
            .with_usage(sp, sh, sc),
        Reply::text("Two text files.").with_usage(sp, sh, sc),
        // The main agent again.
        Reply::tool_calls(vec![call(
            "c9",
            "todo_write",
            todos(["completed", "completed"]),
        )])
        .with_usage(p, h, c),
        Reply::text(FINAL).with_usage(p, h, c),
    ]
}

fn full_run(extra: &[&str]) -> (FakeServer, Hx, Run) {
    full_run_with("", extra)
}

/// [`full_run`] with `config` as the user's config file.
fn full_run_with(config: &str, extra: &[&str]) -> (FakeServer, Hx, Run) {
    let server = FakeServer::start(full_script());
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", config)
        .write_file("notes.txt", "old notes\n")
        .write_file(".agents/skills/deploy/SKILL.md", SKILL)
        .arg("agent")
        .args(extra)
        .arg("fix the notes");
    let run = hx.run();
    run.assert_success();
    assert_eq!(server.requests().len(), 7, "{}", run.dump());
    (server, hx, run)
}

/// Every stdout line as JSON (panics, naming the line, on one that is not an object).
fn events(run: &Run) -> Vec<Value> {
    run.stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {l:?}\n{}", run.dump()));
            assert!(v["type"].is_string(), "no type: {l}");
            v
        })
        .collect()
}

/// The items of `kind` events (`item.started`, ...).
fn items<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| &e["item"])
        .collect()
}

fn completed_of_type<'a>(events: &'a [Value], item_type: &str) -> Vec<&'a Value> {
    items(events, "item.completed")
        .into_iter()
        .filter(|i| i["type"] == item_type)
        .collect()
}

#[test]
fn json_events_of_a_full_run_parse_pair_up_and_end_with_the_answer() {
    let (_, _, plain) = full_run(&[]);
    let (server, hx, run) = full_run(&["--json"]);
    // Nothing but events on stdout, nothing at all on stderr: no trace, no session line.
    assert_eq!(run.stderr, "", "{}", run.dump());
    let ev = events(&run);

    let first = &ev[0];
    assert_eq!(first["type"], "thread.started");
    assert_eq!(first["schema_version"], 1);
    assert_eq!(first["model"], "deepseek-flash");
    assert_eq!(first["base_url"], server.url());
    let thread = first["thread_id"].as_str().expect("thread id");
    assert_eq!(ev[1]["type"], "turn.started");
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "turn.completed");
    // Every request of the run counts, the subagent's included.
    assert_eq!(
        last["usage"],
        json!({
            "input_tokens": 5 * MAIN_USAGE.0 + 2 * SUB_USAGE.0,
            "cached_input_tokens": 5 * MAIN_USAGE.1 + 2 * SUB_USAGE.1,
            "output_tokens": 5 * MAIN_USAGE.2 + 2 * SUB_USAGE.2,
            // The fake counts a token of reasoning per four characters of it, at most the
            // completion: here all of each completion.
            "reasoning_output_tokens": 5 * MAIN_USAGE.2 + 2 * SUB_USAGE.2,
            // At DeepSeek Flash's off-peak prices: 5 * $0.0000825 + 2 * $0.00000825.
            "cost": 0.000429,
            "currency": "USD",
            "subagent_cost": 0.0000165,
        })
    );
    // The thread is the session recorded.
    let recorded = hx.session_files();
    assert!(
        recorded.iter().any(|f| f
            .file_name()
            .is_some_and(|n| *n == *format!("{thread}.jsonl"))),
        "no session file named {thread}: {recorded:?}"
    );

    // Ids are unique; every started item completes exactly once, after it started; items
    // that only complete are messages, reasoning and warnings.
    let mut started = HashSet::new();
    let mut completed = HashSet::new();
    for e in &ev {
        let Some(id) = e["item"]["id"].as_str() else {
            continue;
        };
        match e["type"].as_str() {
            Some("item.started") => assert!(started.insert(id), "started twice: {id}"),
            Some("item.updated") => {
                assert!(started.contains(id) && !completed.contains(id), "{id}")
            }
            Some("item.completed") => {
                assert!(completed.insert(id), "completed twice: {id}");
                let t = e["item"]["type"].as_str().unwrap_or_default();
                assert!(
                    started.contains(id) || ["agent_message", "reasoning", "error"].contains(&t),
                    "completed without a start: {e}"
                );
            }
            other => panic!("an item in a {other:?} event: {e}"),
        }
    }
    assert!(
        started.is_subset(&completed),
        "{started:?} vs {completed:?}"
    );

    // The final message is the last agent message, and what stdout holds without --json.
    let messages = completed_of_type(&ev, "agent_message");
    let last_message = messages.last().expect("an agent message")["text"]
        .as_str()
        .expect("text");
    assert_eq!(format!("{last_message}\n"), plain.stdout);
    assert_eq!(plain.stdout, format!("{FINAL}\n"));
    assert!(
        messages
            .iter()
            .any(|m| m["text"] == "Running the tests first."),
        "interim text is an agent message too"
    );
    assert!(!completed_of_type(&ev, "reasoning").is_empty());

    let by_call: HashMap<&str, &Value> = items(&ev, "item.completed")
        .into_iter()
        .filter_map(|i| Some((i["call_id"].as_str()?, i)))
        .collect();
    let bash = by_call["c3"];
    assert_eq!(bash["type"], "command_execution");
    assert_eq!(bash["command"], "seq 1 10; echo 'error: boom'; exit 3");
    assert_eq!(bash["exit_code"], 3);
    assert_eq!(bash["status"], "failed");
    // What the command printed, as in Codex: hx's `[exit code: 3]` line is `exit_code`.
    let printed: String = (1..=10).map(|i| format!("{i}\n")).collect();
    assert_eq!(bash["aggregated_output"], format!("{printed}error: boom\n"));
    assert_eq!(by_call["c2"]["type"], "load_skill");
    assert_eq!(by_call["c2"]["name"], "deploy");
    assert_eq!(by_call["c2"]["status"], "completed");
    assert_eq!(by_call["c4"]["type"], "tool_call");
    assert_eq!(by_call["c4"]["tool"], "read_file");
    assert_eq!(by_call["c4"]["arguments"], json!({"path": "notes.txt"}));
    assert_eq!(
        by_call["c5"]["changes"],
        json!([{"path": "new.txt", "kind": "add"}])
    );
    assert_eq!(
        by_call["c6"]["changes"],
        json!([{"path": "notes.txt", "kind": "update"}])
    );
    assert_eq!(by_call["c6"]["status"], "completed");
    let blocked = by_call["c8"];
    assert_eq!(blocked["type"], "command_execution");
    assert_eq!(blocked["status"], "declined");
    assert_eq!(blocked["aggregated_output"], "");
    assert_eq!(blocked["blocked_by"], "guard");
    assert!(blocked["reason"].as_str().is_some_and(|r| !r.is_empty()));

    // The subagent's items name the task item that started it.
    let task = by_call["c7"];
    assert_eq!(task["type"], "task");
    assert_eq!(task["output"], "Two text files.");
    let task_id = task["id"].as_str().expect("id");
    let sub_bash = by_call["s1"];
    assert_eq!(sub_bash["parent_item_id"], task_id);
    assert_eq!(sub_bash["exit_code"], 0);
    assert_eq!(sub_bash["status"], "completed");
    assert!(messages
        .iter()
        .any(|m| m["text"] == "Two text files." && m["parent_item_id"] == task_id));
    assert!(
        bash.get("parent_item_id").is_none(),
        "the main agent's items have no parent"
    );

    // The plan: started with its first version, updated with the second, completed at the
    // end; the todo calls themselves are not separate items.
    let todo_events: Vec<&Value> = ev
        .iter()
        .filter(|e| e["item"]["type"] == "todo_list")
        .collect();
    let kinds: Vec<&str> = todo_events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(kinds, ["item.started", "item.updated", "item.completed"]);
    assert_eq!(
        todo_events[0]["item"]["items"][0],
        json!({"text": "Read the notes", "completed": false, "status": "in_progress"})
    );
    assert_eq!(todo_events[2]["item"]["items"][1]["completed"], true);
    assert!(!by_call.contains_key("c1") && !by_call.contains_key("c9"));
}

#[test]
fn the_trace_says_where_the_run_goes_shows_the_end_of_output_and_honest_totals() {
    let (server, _, run) = full_run_with("trace = \"hooks\"\n", &[]);
    let first = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "hx {} · deepseek-flash · deepseek · {}",
            env!("CARGO_PKG_VERSION"),
            server.url()
        ),
        "{}",
        run.dump()
    );
    // The first lines of the failing command's output, how many were left out, and its end.
    assert!(
        run.stderr.contains(
            "[HOOK] PostToolUse bash output_chars=47\n1\n2\n3\n... [7 lines omitted] ...\n\
             error: boom\n[exit code: 3]\n"
        ),
        "{}",
        run.dump()
    );
    // Each plan once, as the user reads it (the active form of the item in progress).
    assert_eq!(
        run.stderr
            .matches("[>] Reading the notes\n[ ] Fix the file")
            .count(),
        1,
        "{}",
        run.dump()
    );
    // Two todo_write calls, two lists.
    assert_eq!(
        run.stderr.matches("/2 completed)").count(),
        2,
        "{}",
        run.dump()
    );
    // The subagent's line has its own figures; the main agent's tokens are every request's.
    let (sp, sh, sc) = SUB_USAGE;
    assert!(
        run.stderr.contains(&format!(
            "  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=1, blocked=0, \
             prompt_tokens={}, cache_hit_tokens={}, completion_tokens={}, cost={} cache=50%, \
             duration=",
            2 * sp,
            2 * sh,
            2 * sc,
            hx::model::price::Currency::USD.show(16_500),
        )),
        "{}",
        run.dump()
    );
    let (p, h, c) = MAIN_USAGE;
    let stop = stop_line(&run);
    let expected = format!(
        "[HOOK] Stop: turns=5, tool_calls=9, blocked=1, prompt_tokens={}, cache_hit_tokens={}, \
         completion_tokens={}, cost=$0.000429 cache=50% (subagents {}), duration=",
        5 * p + 2 * sp,
        5 * h + 2 * sh,
        5 * c + 2 * sc,
        hx::model::price::Currency::USD.show(16_500),
    );
    assert!(stop.starts_with(&expected), "{stop}");
    let secs = stop[expected.len()..]
        .strip_suffix('s')
        .and_then(|s| s.parse::<f64>().ok());
    assert!(secs.is_some_and(|s| s >= 0.0), "{stop}");
}

/// The trace of [`full_run`] with what changes from run to run fixed: the server's URL is
/// `URL`, the workspace `CWD`, each duration `D` and the session's id `ID`.
fn normalized(server: &FakeServer, hx: &Hx, run: &Run) -> String {
    let cwd = hx.workspace().canonicalize().expect("workspace");
    let mut text = run
        .stderr
        .replace(&server.url(), "URL")
        .replace(&cwd.display().to_string(), "CWD");
    if let Some(file) = hx.session_files().first() {
        let id = crate::support::session_id(file);
        text = text.replace(crate::support::short_id(&id), "ID");
    }
    text.lines()
        .map(|l| match l.rfind(", duration=") {
            Some(at) if l.ends_with('s') => format!("{}, duration=D", &l[..at]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The trace as `-v` showed it before the short trace was the default, byte for byte but for
/// what [`normalized`] fixes: every hook step, every result whole.
const SEED_VERBOSE: &str = r#"hx VERSION · deepseek-flash · deepseek · URL
[HOOK] UserPromptSubmit cwd=CWD
> todo_write todos=[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the n…
[HOOK] PreToolUse todo_write({"todos":[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the notes"},{"content":"Fix the file","status":"pending","activeForm":"Fixing the file"}]})
[HOOK] PostToolUse todo_write output_chars=51
[>] Reading the notes
[ ] Fix the file
(0/2 completed)
> load_skill name=deploy
[HOOK] PreToolUse load_skill({"name":"deploy"})
[HOOK] PostToolUse load_skill output_chars=42
<skill name="deploy">
Run ./ship.
</skill>
Running the tests first.
> bash command=seq 1 10; echo 'error: boom'; exit 3
[HOOK] PreToolUse bash({"command":"seq 1 10; echo 'error: boom'; exit 3"})
[HOOK] PostToolUse bash output_chars=47
1
2
3
4
5
6
7
8
9
10
error: boom
[exit code: 3]
> read_file path=notes.txt
[HOOK] PreToolUse read_file({"path":"notes.txt"})
[HOOK] PostToolUse read_file output_chars=10
old notes

> write_file path=new.txt content=fresh 
[HOOK] PreToolUse write_file({"path":"new.txt","content":"fresh\n"})
[HOOK] PostToolUse write_file output_chars=24
Wrote 6 bytes to new.txt
> edit_file path=notes.txt old_text=old new_text=new
[HOOK] PreToolUse edit_file({"path":"notes.txt","old_text":"old","new_text":"new"})
[HOOK] PostToolUse edit_file output_chars=40
Edited notes.txt (replaced 1 occurrence)
2 files changed, +2 -1 (hx diff --turn 3; undo: hx rewind 3)
> bash command=sudo rm -rf /
[HOOK] PreToolUse bash({"command":"sudo rm -rf /"})
[HOOK] PreToolUse blocked bash({"command":"sudo rm -rf /"}) (guard): privilege escalation (sudo)
[HOOK] PostToolUse bash output_chars=52
Error: blocked by guard: privilege escalation (sudo)
> task description=count files prompt=Count the text files.
[HOOK] PreToolUse task({"description":"count files","prompt":"Count the text files."})
  [task 1] > bash command=ls *.txt
  [task 1] [HOOK] PreToolUse bash({"command":"ls *.txt"})
  [task 1] [HOOK] PostToolUse bash output_chars=18
  [task 1] new.txt
  [task 1] notes.txt
  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=1, blocked=0, prompt_tokens=200, cache_hit_tokens=100, completion_tokens=2, cost=$0.000017 cache=50%, duration=D
[HOOK] PostToolUse task output_chars=15
Two text files.
> todo_write todos=[{"content":"Read the notes","status":"completed","activeForm":"Reading the not…
[HOOK] PreToolUse todo_write({"todos":[{"content":"Read the notes","status":"completed","activeForm":"Reading the notes"},{"content":"Fix the file","status":"completed","activeForm":"Fixing the file"}]})
[HOOK] PostToolUse todo_write output_chars=51
[x] Read the notes
[x] Fix the file
(2/2 completed)
[HOOK] Stop: turns=5, tool_calls=9, blocked=1, prompt_tokens=5200, cache_hit_tokens=2600, completion_tokens=52, cost=$0.000429 cache=50% (subagents $0.000017), duration=D
hx: session ID · continue with: hx agent -r ID "...""#;

/// The trace the seed showed by default, which `trace = "hooks"` keeps: as [`SEED_VERBOSE`],
/// with a preview of each result.
const SEED_HOOKS: &str = r#"hx VERSION · deepseek-flash · deepseek · URL
[HOOK] UserPromptSubmit cwd=CWD
> todo_write todos=[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the n…
[HOOK] PreToolUse todo_write({"todos":[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the notes"},{"content":"Fix the file","status":"pending","activeForm":"Fixing the file"}]})
[HOOK] PostToolUse todo_write output_chars=51
[>] Reading the notes
[ ] Fix the file
(0/2 completed)
> load_skill name=deploy
[HOOK] PreToolUse load_skill({"name":"deploy"})
[HOOK] PostToolUse load_skill output_chars=42
<skill name="deploy">
Run ./ship.
</skill>
Running the tests first.
> bash command=seq 1 10; echo 'error: boom'; exit 3
[HOOK] PreToolUse bash({"command":"seq 1 10; echo 'error: boom'; exit 3"})
[HOOK] PostToolUse bash output_chars=47
1
2
3
... [7 lines omitted] ...
error: boom
[exit code: 3]
> read_file path=notes.txt
[HOOK] PreToolUse read_file({"path":"notes.txt"})
[HOOK] PostToolUse read_file output_chars=10
old notes
> write_file path=new.txt content=fresh 
[HOOK] PreToolUse write_file({"path":"new.txt","content":"fresh\n"})
[HOOK] PostToolUse write_file output_chars=24
Wrote 6 bytes to new.txt
> edit_file path=notes.txt old_text=old new_text=new
[HOOK] PreToolUse edit_file({"path":"notes.txt","old_text":"old","new_text":"new"})
[HOOK] PostToolUse edit_file output_chars=40
Edited notes.txt (replaced 1 occurrence)
2 files changed, +2 -1 (hx diff --turn 3; undo: hx rewind 3)
> bash command=sudo rm -rf /
[HOOK] PreToolUse bash({"command":"sudo rm -rf /"})
[HOOK] PreToolUse blocked bash({"command":"sudo rm -rf /"}) (guard): privilege escalation (sudo)
[HOOK] PostToolUse bash output_chars=52
Error: blocked by guard: privilege escalation (sudo)
> task description=count files prompt=Count the text files.
[HOOK] PreToolUse task({"description":"count files","prompt":"Count the text files."})
  [task 1] > bash command=ls *.txt
  [task 1] [HOOK] PreToolUse bash({"command":"ls *.txt"})
  [task 1] [HOOK] PostToolUse bash output_chars=18
  [task 1] new.txt
  [task 1] notes.txt
  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=1, blocked=0, prompt_tokens=200, cache_hit_tokens=100, completion_tokens=2, cost=$0.000017 cache=50%, duration=D
[HOOK] PostToolUse task output_chars=15
Two text files.
> todo_write todos=[{"content":"Read the notes","status":"completed","activeForm":"Reading the not…
[HOOK] PreToolUse todo_write({"todos":[{"content":"Read the notes","status":"completed","activeForm":"Reading the notes"},{"content":"Fix the file","status":"completed","activeForm":"Fixing the file"}]})
[HOOK] PostToolUse todo_write output_chars=51
[x] Read the notes
[x] Fix the file
(2/2 completed)
[HOOK] Stop: turns=5, tool_calls=9, blocked=1, prompt_tokens=5200, cache_hit_tokens=2600, completion_tokens=52, cost=$0.000429 cache=50% (subagents $0.000017), duration=D
hx: session ID · continue with: hx agent -r ID "...""#;

/// The default trace: what happened, a line per call, a short line under the call that failed
/// and the one the guard refused, the plans, the Stop lines.
const SHORT: &str = r#"hx VERSION · deepseek-flash · deepseek · URL
> todo_write todos=[{"content":"Read the notes","status":"in_progress","activeForm":"Reading the n…
[>] Reading the notes
[ ] Fix the file
(0/2 completed)
> load_skill name=deploy
Running the tests first.
> bash command=seq 1 10; echo 'error: boom'; exit 3
  failed: exit code 3 · 11 lines · error: boom
> read_file path=notes.txt
> write_file path=new.txt content=fresh 
> edit_file path=notes.txt old_text=old new_text=new
2 files changed, +2 -1 (hx diff --turn 3; undo: hx rewind 3)
> bash command=sudo rm -rf /
  blocked by the guard: privilege escalation (sudo)
> task description=count files prompt=Count the text files.
  [task 1] > bash command=ls *.txt
  [task 1] [HOOK] SubagentStop: turns=2, tool_calls=1, blocked=0, prompt_tokens=200, cache_hit_tokens=100, completion_tokens=2, cost=$0.000017 cache=50%, duration=D
> todo_write todos=[{"content":"Read the notes","status":"completed","activeForm":"Reading the not…
[x] Read the notes
[x] Fix the file
(2/2 completed)
[HOOK] Stop: turns=5, tool_calls=9, blocked=1, prompt_tokens=5200, cache_hit_tokens=2600, completion_tokens=52, cost=$0.000429 cache=50% (subagents $0.000017), duration=D
hx: session ID · continue with: hx agent -r ID "...""#;

fn with_version(text: &str) -> String {
    text.replace("VERSION", env!("CARGO_PKG_VERSION"))
}

#[test]
fn verbose_shows_the_seed_s_whole_trace_byte_for_byte() {
    let (server, hx, run) = full_run(&["-v"]);
    assert_eq!(
        normalized(&server, &hx, &run),
        with_version(SEED_VERBOSE),
        "{}",
        run.dump()
    );
}

#[test]
fn trace_hooks_in_the_config_shows_the_seed_s_default_trace_byte_for_byte() {
    let server = FakeServer::start([full_script(), full_script()].concat());
    let mut hx = Hx::new(&server);
    hx.write_file("notes.txt", "old notes\n")
        .write_file(".agents/skills/deploy/SKILL.md", SKILL)
        .write_user_config("config.toml", "trace = \"hooks\"\n")
        .args(["agent", "fix the notes"]);
    let run = hx.run();
    run.assert_success();
    assert_eq!(
        normalized(&server, &hx, &run),
        with_version(SEED_HOOKS),
        "{}",
        run.dump()
    );
    // `-v` shows the whole results over the config's previews.
    hx.clear_args().args(["agent", "-v", "fix the notes"]);
    let verbose = hx.run();
    assert!(
        verbose
            .stderr
            .contains("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\nerror: boom\n"),
        "{}",
        verbose.dump()
    );
}

#[test]
fn the_default_trace_is_a_line_per_call_and_a_short_line_where_one_failed() {
    let (server, hx, run) = full_run(&[]);
    assert_eq!(
        normalized(&server, &hx, &run),
        with_version(SHORT),
        "{}",
        run.dump()
    );
}

#[test]
fn a_hooked_event_s_steps_show_in_the_default_trace_and_no_other_s() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "bash", json!({"command": "echo hi"}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let noted = script(&hx, "noted.sh", "cat > /dev/null");
    user_hooks(
        &hx,
        json!({ "PostToolUse": groups("Bash", &[&noted], None) }),
    );
    hx.args(["agent", "say hi"]);
    let run = hx.run();
    run.assert_success();
    // The PostToolUse step the user hooked, and the run of the hook; no other hook step.
    assert!(
        run.stderr
            .contains("> bash command=echo hi\nhook PostToolUse: ")
            && run
                .stderr
                .contains(" ms\n[HOOK] PostToolUse bash output_chars=3\n[HOOK] Stop: "),
        "{}",
        run.dump()
    );
    for absent in ["[HOOK] PreToolUse", "[HOOK] UserPromptSubmit"] {
        assert!(!run.stderr.contains(absent), "{absent}\n{}", run.dump());
    }
}

#[test]
fn a_result_line_after_other_calls_names_its_call() {
    let task = |id: &str, job: &str| {
        call(
            id,
            "task",
            json!({"description": "look around", "prompt": job}),
        )
    };
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![task("t1", "Job A"), task("t2", "Job B")]),
        // The first subagent to ask is refused at once; the other answers later.
        Reply::status(401, r#"{"error":{"message":"bad key"}}"#),
        Reply::text("report").delay(std::time::Duration::from_millis(700)),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "two jobs"]);
    let run = hx.run();
    run.assert_success();
    // Both calls' lines came before either ended.
    assert!(
        run.stderr.contains(
            "> task description=look around prompt=Job A\n> task description=look around \
             prompt=Job B\n"
        ),
        "{}",
        run.dump()
    );
    let refused = messages(&server.requests()[1].body)[1]["content"].clone();
    let failed = "failed: subagent failed: API error 401";
    // The line of the call started last follows its own `>` line as far as the trace of its
    // agent goes; the other's names it.
    let expected = if refused == "Job A" {
        format!("\n  task description=look around prompt=Job A: {failed}")
    } else {
        format!("\n  {failed}")
    };
    assert!(
        run.stderr.contains(&expected),
        "{expected:?}\n{}",
        run.dump()
    );

    let (_, _, quiet) = full_run(&["-q"]);
    assert!(!quiet.stderr.contains("failed:"), "{}", quiet.dump());
    assert!(!quiet.stderr.contains("blocked by"), "{}", quiet.dump());
}

/// A new user's five-turn fix: look around, run the failing test, edit, look again, run the
/// test and see the change: eight calls.
fn five_turn_fix(config: &str) -> (FakeServer, Hx, Run) {
    let test = "sh test.sh";
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            call("c1", "glob", json!({"pattern": "*"})),
            call("c2", "read_file", json!({"path": "calc.txt"})),
            call("c3", "read_file", json!({"path": "test.sh"})),
        ]),
        Reply::tool_calls(vec![call("c4", "bash", json!({"command": test}))]),
        Reply::tool_calls(vec![
            call(
                "c5",
                "edit_file",
                json!({"path": "calc.txt", "old_text": "2+2=5", "new_text": "2+2=4"}),
            ),
            call("c6", "read_file", json!({"path": "calc.txt"})),
        ]),
        Reply::tool_calls(vec![
            call("c7", "bash", json!({"command": test})),
            call("c8", "bash", json!({"command": "cat calc.txt"})),
        ]),
        Reply::text("Fixed: 2+2 is 4 again, and the test passes."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", config)
        .write_file("calc.txt", "sums\n2+2=5\n")
        .write_file(
            "test.sh",
            "grep -q '2+2=4' calc.txt && echo ok || { echo 'FAIL: 2+2 is not 5'; exit 1; }\n",
        )
        .args(["agent", "fix the failing test"]);
    let run = hx.run();
    run.assert_success();
    (server, hx, run)
}

#[test]
fn a_five_turn_fix_shows_a_line_per_call_and_the_summary() {
    let (server, hx, run) = five_turn_fix("");
    let expected = "hx VERSION · deepseek-flash · deepseek · URL
> glob pattern=*
> read_file path=calc.txt
> read_file path=test.sh
> bash command=sh test.sh
  failed: exit code 1 · 1 line · FAIL: 2+2 is not 5
> edit_file path=calc.txt old_text=2+2=5 new_text=2+2=4
> read_file path=calc.txt
1 file changed, +1 -1 (hx diff --turn 3; undo: hx rewind 3)
> bash command=sh test.sh
> bash command=cat calc.txt
[HOOK] Stop: turns=5, tool_calls=8, blocked=0, prompt_tokens=6000, cache_hit_tokens=5120, completion_tokens=750, cost=$0.000597 cache=85%, duration=D
hx: session ID · continue with: hx agent -r ID \"...\"";
    assert_eq!(
        normalized(&server, &hx, &run),
        with_version(expected),
        "{}",
        run.dump()
    );
    // The seed's trace of the same run, as `trace = "hooks"` keeps it: three lines a call and
    // the results' previews.
    let (_, _, hooks) = five_turn_fix("trace = \"hooks\"\n");
    eprintln!(
        "five-turn fix, 8 calls: {} stderr lines by default, {} with trace = \"hooks\" (the seed's)",
        run.stderr.lines().count(),
        hooks.stderr.lines().count()
    );
    assert_eq!(hooks.stderr.matches("[HOOK] PreToolUse").count(), 8);
}

#[test]
fn quiet_shows_no_trace_and_verbose_the_whole_output() {
    let (_, _, quiet) = full_run(&["-q"]);
    assert_eq!(quiet.stdout, format!("{FINAL}\n"));
    for absent in [
        "[HOOK]",
        "> bash",
        "hx 0.",
        "Running the tests first",
        "hx: session",
    ] {
        assert!(
            !quiet.stderr.contains(absent),
            "{absent:?}\n{}",
            quiet.dump()
        );
    }
    let (_, _, verbose) = full_run(&["--verbose"]);
    assert!(
        verbose
            .stderr
            .contains("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\nerror: boom\n[exit code: 3]\n"),
        "{}",
        verbose.dump()
    );
    assert!(!verbose.stderr.contains("lines omitted"));
}

#[test]
fn the_last_message_is_written_to_a_file_with_and_without_json() {
    for json_mode in [false, true] {
        let server = FakeServer::start(vec![Reply::text("The answer\nin two lines.\n\n")]);
        let mut hx = Hx::new(&server);
        hx.args(["agent", "-o", "out/answer.md", "q"]);
        if json_mode {
            hx.arg("--json");
        }
        std::fs::create_dir_all(hx.workspace().join("out")).expect("mkdir");
        let run = hx.run();
        run.assert_success();
        assert_eq!(hx.read_file("out/answer.md"), "The answer\nin two lines.\n");
        if !json_mode {
            assert_eq!(run.stdout, "The answer\nin two lines.\n");
        }
        // Written through a temporary file that is gone.
        let left: Vec<_> = std::fs::read_dir(hx.workspace().join("out"))
            .expect("read out")
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}

#[test]
fn an_output_file_in_a_missing_folder_is_refused_before_any_request() {
    let server = FakeServer::start(vec![Reply::text("never")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "-o", "no/such/dir/answer.md", "q"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("the folder no/such/dir does not exist"),
        "{}",
        run.dump()
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn without_colour_reasoning_is_marked_off_from_the_answer() {
    let server = FakeServer::start(vec![Reply::text("the answer").with_reasoning("I ponder.")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--show-reasoning", "q"]);
    let run = hx.run();
    run.assert_success();
    assert!(
        run.stderr.contains("thinking: I ponder.\n"),
        "{}",
        run.dump()
    );
    assert_eq!(run.stdout, "the answer\n");
}

#[test]
fn a_repeated_retry_reason_is_said_once() {
    let server = FakeServer::start(vec![
        Reply::status(503, r#"{"error":{"message":"busy"}}"#),
        Reply::status(503, r#"{"error":{"message":"busy"}}"#),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[network]\nretries = 4\nretry_base_delay_ms = 1\n",
    )
    .args(["agent", "x"]);
    let run = hx.run();
    run.assert_success();
    assert_eq!(run.stderr.matches("busy").count(), 1, "{}", run.dump());
    assert!(run.stderr.contains("hx: retry 2/4 in "), "{}", run.dump());
    assert!(run.stderr.contains("(same error)"), "{}", run.dump());
}

#[test]
fn a_task_without_agent_gets_the_command_to_run() {
    let mut hx = Hx::new_offline();
    hx.args(["fix the bug"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("run: hx agent \"fix the bug\""),
        "{}",
        run.dump()
    );
    let mut hx = Hx::new_offline();
    hx.args(["fix", "the", "bug"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("run: hx agent \"fix the bug\""),
        "{}",
        run.dump()
    );
}

#[test]
fn dash_c_runs_in_another_folder_and_dash_m_names_the_model() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "bash", json!({"command": "pwd"}))]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("sub/marker.txt", "x").args([
        "-C",
        "sub",
        "agent",
        "-m",
        "my-model",
        "where am I",
    ]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.completions();
    assert_eq!(reqs[0].body["model"], "my-model");
    let sub = hx.workspace().join("sub").canonicalize().expect("sub");
    assert_eq!(
        messages(&reqs[1].body)[3]["content"],
        format!("{}\n", sub.display())
    );
    let missing = hx.run_args(&["-C", "nowhere", "agent", "x"]);
    missing.assert_code(2);
    assert!(
        missing.stderr.contains("hx: -C nowhere: "),
        "{}",
        missing.dump()
    );
}

#[test]
fn no_stdin_leaves_a_piped_stdin_unread() {
    for (flag, expect_stdin) in [(None, true), (Some("--no-stdin"), false)] {
        let server = FakeServer::start(vec![Reply::text("ok")]);
        let mut hx = Hx::new(&server);
        hx.arg("agent")
            .args(flag)
            .arg("summarize")
            .stdin("line one\n");
        let run = hx.run();
        run.assert_success();
        let task = messages(&server.requests()[0].body)[1]["content"]
            .as_str()
            .expect("task")
            .to_string();
        assert_eq!(task.contains("<stdin>\nline one"), expect_stdin, "{task}");
    }
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--no-stdin"]).stdin("the task on stdin");
    let run = hx.run();
    run.assert_code(2);
    assert!(run.stderr.contains("no task given"), "{}", run.dump());
}

#[test]
fn openai_base_url_is_honoured_for_the_openai_provider() {
    let server = FakeServer::start(vec![Reply::text("hi").openai_usage()]);
    let mut hx = Hx::new_offline();
    hx.env("OPENAI_BASE_URL", server.url())
        .env("OPENAI_API_KEY", "sk-openai")
        .args(["agent", "--provider", "openai", "-m", "gpt-test", "x"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.completions();
    assert_eq!(reqs.len(), 1, "{}", run.dump());
    assert_eq!(reqs[0].header("authorization"), Some("Bearer sk-openai"));
}

#[test]
fn a_refused_connection_names_the_url_and_says_no_server_runs_there() {
    let mut hx = Hx::new_offline();
    let url = hx.base_url().to_string();
    let port = url.rsplit(':').next().unwrap_or_default().to_string();
    hx.write_user_config("config.toml", "[network]\nretries = 0\n")
        .args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(1);
    assert!(
        run.stderr.contains(&format!(
            "hx: cannot connect to {url}/chat/completions: connection refused: no server is \
             running on 127.0.0.1:{port}"
        )),
        "{}",
        run.dump()
    );
    // The presets of local servers say how to start theirs.
    for (provider, hint) in [
        ("ollama", "is Ollama running? start it with `ollama serve`"),
        (
            "llamacpp",
            "is llama-server running? start it with `llama-server --jinja -m MODEL.gguf` \
             (--jinja: tool calls need the model's chat template)",
        ),
        (
            "vllm",
            "is vLLM running? start it with `vllm serve MODEL --enable-auto-tool-choice \
             --tool-call-parser PARSER`",
        ),
    ] {
        let mut hx = Hx::new_offline();
        let url = format!("{}/v1", hx.base_url());
        hx.write_user_config("config.toml", "[network]\nretries = 0\n")
            .args([
                "agent",
                "--provider",
                provider,
                "-m",
                "qwen",
                "--base-url",
                &url,
                "x",
            ]);
        let run = hx.run();
        run.assert_code(1);
        assert!(
            run.stderr
                .contains(&format!("cannot connect to {url}/chat/completions"))
                && run.stderr.contains(hint),
            "{provider}: {}",
            run.dump()
        );
    }
}

#[test]
fn json_mode_reports_a_failed_turn_on_stdout_and_the_reason_on_stderr() {
    let server = FakeServer::start(vec![Reply::status(
        401,
        r#"{"error":{"message":"bad key"}}"#,
    )]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "x"]);
    let run = hx.run();
    run.assert_code(1);
    let ev = events(&run);
    let last = ev.last().expect("events");
    assert_eq!(last["type"], "turn.failed");
    assert!(last["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("bad key")));
    assert_eq!(
        run.stderr,
        format!(
            "hx: API error 401: Unauthorized: bad key (the key in DEEPSEEK_API_KEY was refused \
             by provider deepseek at {})\n",
            server.url()
        ),
        "{}",
        run.dump()
    );
}

#[test]
fn a_blocked_write_ends_failed_as_codex_file_changes_do_naming_who_blocked_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call(
            "w1",
            "write_file",
            json!({"path": "new.txt", "content": "x"}),
        )]),
        Reply::text("Could not write."),
    ]);
    let mut hx = Hx::new(&server);
    let deny = script(&hx, "deny.sh", "echo 'no writes' >&2\nexit 2");
    user_hooks(
        &hx,
        json!({ "PreToolUse": groups("write_file", &[&deny], None) }),
    );
    hx.args(["agent", "--json", "write it"]);
    let run = hx.run();
    run.assert_success();
    let events = events(&run);
    let changes = completed_of_type(&events, "file_change");
    assert_eq!(changes.len(), 1, "{}", run.dump());
    assert_eq!(changes[0]["status"], "failed");
    assert_eq!(changes[0]["blocked_by"], "hook");
    assert_eq!(changes[0]["reason"], "no writes");
    assert!(!hx.workspace().join("new.txt").exists());
}

#[test]
fn the_last_message_keeps_the_file_s_mode_and_goes_through_a_link() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let server = FakeServer::start(vec![Reply::text("First."), Reply::text("Second.")]);
    let mut hx = Hx::new(&server);
    let ws = hx.workspace().to_path_buf();
    std::fs::write(ws.join("answer.md"), "old\n").expect("write");
    std::fs::set_permissions(ws.join("answer.md"), std::fs::Permissions::from_mode(0o640))
        .expect("chmod");
    symlink("answer.md", ws.join("latest.md")).expect("symlink");
    hx.args(["agent", "-o", "latest.md", "q"]);
    hx.run().assert_success();
    assert!(std::fs::symlink_metadata(ws.join("latest.md"))
        .expect("the link")
        .file_type()
        .is_symlink());
    assert_eq!(hx.read_file("answer.md"), "First.\n");
    let mode = std::fs::metadata(ws.join("answer.md"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o640);

    // A new file is readable as the umask allows, not private like a temporary file.
    let mut hx2 = Hx::new(&server);
    hx2.args(["agent", "-o", "new.md", "q"]);
    hx2.run().assert_success();
    let mode = std::fs::metadata(hx2.workspace().join("new.md"))
        .expect("stat")
        .permissions()
        .mode();
    let status = std::fs::read_to_string("/proc/self/status").expect("proc status");
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|u| u32::from_str_radix(u.trim(), 8).ok())
        .expect("the umask");
    assert_eq!(mode & 0o7777, 0o666 & !umask, "{mode:o}");
}

#[test]
fn in_json_mode_a_run_that_cannot_start_is_an_error_event_too() {
    let server = FakeServer::start(vec![]);
    // No key; a session that does not exist; a folder for -o that does not exist.
    let cases: [(&[&str], &str, &str); 3] = [
        (
            &["agent", "--json", "q"],
            "DEEPSEEK_API_KEY",
            "DEEPSEEK_API_KEY",
        ),
        (&["agent", "--json", "-r", "nosuchid", "q"], "", "nosuchid"),
        (
            &["agent", "--json", "-o", "no/dir/a.md", "q"],
            "",
            "does not exist",
        ),
    ];
    for (args, unset, says) in cases {
        let mut hx = Hx::new(&server);
        if !unset.is_empty() {
            hx.env_remove(unset);
        }
        hx.args(args);
        let run = hx.run();
        run.assert_code(2);
        let events = events(&run);
        assert_eq!(events.len(), 1, "{}", run.dump());
        assert_eq!(events[0]["type"], "error");
        let message = events[0]["message"].as_str().expect("a message");
        assert!(message.contains(says), "{message}");
        assert!(run.stderr.contains(message), "{}", run.dump());
    }
    assert!(server.requests().is_empty());
}

#[test]
fn a_link_the_model_makes_at_the_output_path_is_replaced_not_followed() {
    // The model points `answer.md` out of the workspace (its sandbox lets it make the link);
    // hx, which writes the answer unsandboxed, must not follow it.
    let link = json!({"command": "ln -sf \"$HOME/outside.txt\" answer.md && ls -l answer.md"});
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![call("c1", "bash", link)]),
        Reply::text("The answer."),
    ]);
    let mut hx = Hx::new(&server);
    let outside = hx.home().join("outside.txt");
    std::fs::write(&outside, "keep me\n").expect("write");
    hx.args(["agent", "-o", "answer.md", "go"]);
    let run = hx.run();
    run.assert_success();
    assert!(
        messages(&server.requests()[1].body)
            .iter()
            .any(|m| m["content"]
                .as_str()
                .is_some_and(|c| c.contains("answer.md ->"))),
        "the link was not made\n{}",
        run.dump()
    );
    assert_eq!(
        std::fs::read_to_string(&outside).expect("read"),
        "keep me\n"
    );
    let answer = hx.workspace().join("answer.md");
    assert!(!std::fs::symlink_metadata(&answer)
        .expect("answer.md")
        .file_type()
        .is_symlink());
    assert_eq!(hx.read_file("answer.md"), "The answer.\n");
}

#[test]
fn json_item_ids_run_without_gaps_in_the_order_they_appear() {
    let (_server, _hx, run) = full_run(&["--json"]);
    let events = events(&run);
    let mut seen: Vec<u64> = Vec::new();
    for e in &events {
        let Some(id) = e["item"]["id"].as_str() else {
            continue;
        };
        let n: u64 = id
            .strip_prefix("item_")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("odd id {id}"));
        if !seen.contains(&n) {
            seen.push(n);
        }
    }
    // The plan's call shows as its list, and takes no id of its own.
    let want: Vec<u64> = (0..seen.len() as u64).collect();
    assert_eq!(seen, want, "{}", run.stdout);
}

#[test]
fn a_long_call_is_cut_on_its_pre_tool_use_line_and_whole_with_verbose() {
    let content = "x".repeat(5000);
    let script = || {
        vec![
            Reply::tool_calls(vec![call(
                "w1",
                "write_file",
                json!({"path": "big.txt", "content": content}),
            )]),
            Reply::text("Written."),
        ]
    };
    let server = FakeServer::start(script());
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "trace = \"hooks\"\n")
        .args(["agent", "write it"]);
    let run = hx.run();
    run.assert_success();
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("[HOOK] PreToolUse write_file("))
        .unwrap_or_else(|| panic!("no PreToolUse line:\n{}", run.stderr));
    assert!(line.chars().count() < 260, "{} chars: {line}", line.len());
    assert!(line.contains('…'), "{line}");

    let server = FakeServer::start(script());
    let mut hx = Hx::new(&server);
    hx.args(["agent", "-v", "write it"]);
    let run = hx.run();
    run.assert_success();
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("[HOOK] PreToolUse write_file("))
        .unwrap_or_else(|| panic!("no PreToolUse line:\n{}", run.stderr));
    assert!(line.contains(&"x".repeat(5000)), "{} chars", line.len());
}
