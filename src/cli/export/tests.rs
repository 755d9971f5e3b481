use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::timeline::{self, By, Step, Timeline};
use super::{atif, markdown};
use crate::context::summary;
use crate::model::price::Currency;
use crate::model::{Cost, Message, ToolCall, Usage};
use crate::session::{Change, Compaction, End, EndOutcome, Figures, Header, Line, Store};

const ID: &str = "019a0000-0000-7000-8000-00000000aaaa";
const CHILD: &str = "019a0000-0000-7000-8000-00000000bbbb";

fn header(id: &str) -> Header {
    Header {
        id: id.into(),
        workspace: "/w".into(),
        model: "deepseek-flash".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        started_at: "2026-12-01T00:00:00Z".into(),
        effort: Some("high".into()),
        ..Header::default()
    }
}

fn msg(m: Message) -> String {
    Line::message(&m).text()
}

fn user(text: &str) -> String {
    msg(Message::User(text.into()))
}

fn assistant(content: &str, reasoning: Option<&str>, calls: &[(&str, &str, &str)]) -> String {
    msg(Message::Assistant {
        content: content.into(),
        reasoning: reasoning.map(str::to_string),
        tool_calls: calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect(),
    })
}

fn tool(id: &str, content: &str) -> String {
    msg(Message::Tool {
        tool_call_id: id.into(),
        content: content.into(),
    })
}

/// A usage line: (prompt, cache hits, completion, reasoning), priced in dollars when `nanos`.
fn usage(t: (u64, u64, u64, u64), nanos: Option<u64>, request: Option<&str>) -> String {
    let u = Usage {
        prompt_tokens: t.0,
        prompt_cache_hit_tokens: t.1,
        completion_tokens: t.2,
        reasoning_tokens: t.3,
    };
    let cost = nanos.map(|nanos| Cost {
        nanos,
        currency: Currency::USD,
        peak: false,
    });
    Line::usage(&u, cost.as_ref(), Some("deepseek-flash"), request).text()
}

fn end(session: Figures) -> String {
    Line::End(&End {
        outcome: EndOutcome::Answered,
        detail: None,
        kind: None,
        ended_at: "2026-12-01T00:00:09Z".into(),
        duration_ms: 9000,
        run: session,
        session,
    })
    .text()
}

/// The session file `id` in `dir`, its header then `lines`.
fn write(dir: &Path, h: &Header, lines: &[String]) -> PathBuf {
    let mut text = Line::Header(h).text();
    text.push('\n');
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    let path = dir.join(format!("{}.jsonl", h.id));
    std::fs::write(&path, text).expect("write");
    path
}

fn load(lines: &[String]) -> Timeline {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), &header(ID), lines);
    timeline::load(&Store::at(dir.path()), &path).expect("load")
}

/// The trajectory of `t`, checked by Harbor's own validator when `HX_TEST_HARBOR_PYTHON`
/// names a Python that has Harbor (the integration tests say more when it does not).
fn trajectory(t: &Timeline) -> Value {
    let value = serde_json::to_value(atif::trajectory(t)).expect("json");
    let Some(python) = std::env::var_os("HX_TEST_HARBOR_PYTHON") else {
        return value;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("trajectory.json");
    std::fs::write(&file, atif::document(t)).expect("write");
    let out = std::process::Command::new(python)
        .args(["-m", "harbor.utils.trajectory_validator"])
        .arg(&file)
        .output()
        .expect("run the validator");
    assert!(
        out.status.success(),
        "Harbor's validator refused it:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    value
}

/// One task: a turn with two calls (one whose arguments are no JSON object), their results,
/// the answer; priced, with cache hits and reasoning.
fn one_task() -> Vec<String> {
    let figures = Figures {
        turns: 2,
        tool_calls: 2,
        blocked: 0,
        prompt_tokens: 3000,
        cache_hit_tokens: 2000,
        completion_tokens: 150,
        reasoning_tokens: 40,
        cost: {
            let mut s = crate::model::Spend::default();
            s.add_cost(Some(Cost {
                nanos: 1_000_000,
                currency: Currency::USD,
                peak: false,
            }));
            s.add_cost(Some(Cost {
                nanos: 500_000,
                currency: Currency::USD,
                peak: false,
            }));
            s
        },
    };
    vec![
        msg(Message::System("You are hx.".into())),
        user("list the files"),
        usage((1000, 0, 100, 40), Some(1_000_000), None),
        assistant(
            "Looking.",
            Some("I should look."),
            &[
                ("c1", "bash", r#"{"command":"ls"}"#),
                ("c2", "glob", "not json"),
            ],
        ),
        tool("c1", "a.txt\nb.txt"),
        tool("c2", "Error: bad arguments"),
        usage((2000, 2000, 50, 0), Some(500_000), None),
        assistant("Two files.", Some(""), &[]),
        end(figures),
    ]
}

#[test]
fn a_task_maps_to_system_user_and_agent_steps_with_observations_and_metrics() {
    let t = trajectory(&load(&one_task()));
    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["session_id"], ID);
    assert_eq!(t["trajectory_id"], ID);
    assert_eq!(
        t["agent"],
        json!({"name": "hx", "version": env!("CARGO_PKG_VERSION"), "model_name": "deepseek-flash"})
    );
    assert_eq!(
        t["steps"],
        json!([
            {"step_id": 1, "source": "system", "message": "You are hx."},
            {"step_id": 2, "source": "user", "message": "list the files"},
            {
                "step_id": 3, "source": "agent", "model_name": "deepseek-flash",
                "reasoning_effort": "high", "message": "Looking.",
                "reasoning_content": "I should look.",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "bash",
                     "arguments": {"command": "ls"}},
                    {"tool_call_id": "c2", "function_name": "glob", "arguments": {},
                     "extra": {"raw_arguments": "not json"}},
                ],
                "observation": {"results": [
                    {"source_call_id": "c1", "content": "a.txt\nb.txt"},
                    {"source_call_id": "c2", "content": "Error: bad arguments"},
                ]},
                "metrics": {"prompt_tokens": 1000, "completion_tokens": 100,
                            "cached_tokens": 0, "cost_usd": 0.001,
                            "extra": {"reasoning_tokens": 40}},
                "llm_call_count": 1,
            },
            {
                "step_id": 4, "source": "agent", "model_name": "deepseek-flash",
                "reasoning_effort": "high", "message": "Two files.",
                "metrics": {"prompt_tokens": 2000, "completion_tokens": 50,
                            "cached_tokens": 2000, "cost_usd": 0.0005},
                "llm_call_count": 1,
            },
        ])
    );
    assert_eq!(
        t["final_metrics"],
        json!({
            "total_prompt_tokens": 3000, "total_completion_tokens": 150,
            "total_cached_tokens": 2000, "total_cost_usd": 0.0015, "total_steps": 4,
            "extra": {"turns": 2, "tool_calls": 2, "blocked": 0, "reasoning_tokens": 40},
        })
    );
    assert_eq!(
        t["extra"]["runs"],
        json!([{"started_at": "2026-12-01T00:00:00Z", "model": "deepseek-flash",
                "provider": "deepseek", "effort": "high", "outcome": "answered",
                "detail": null, "ended_at": "2026-12-01T00:00:09Z"}])
    );
    assert!(t.get("subagent_trajectories").is_none());
    assert!(t["notes"]
        .as_str()
        .is_some_and(|n| n.contains("is_copied_context")));
}

/// A prune clears results where they are; a summary replaces the history: the summary
/// request's response (priced), the compaction, then the new history, copied but for hx's
/// summary, the carried calls hx's own.
#[test]
fn compactions_are_system_steps_and_the_new_history_follows_as_copied_context() {
    let mut lines = one_task();
    lines.pop();
    lines.push(
        Line::compaction(&Compaction {
            trigger: "auto".into(),
            step: "prune".into(),
            tokens_before: 900,
            tokens_after: 300,
            change: Change::Cleared(vec![(3, "[cleared]".into())]),
        })
        .text(),
    );
    lines.push(usage((5000, 4000, 300, 0), Some(2_000), Some("summary")));
    let summary_text = "Goal: list files.";
    let replaced = vec![
        Message::System("You are hx.".into()),
        Message::User("list the files".into()),
        Message::User(format!("{}{summary_text}", summary::HEADER)),
        Message::Assistant {
            content: String::new(),
            reasoning: Some(String::new()),
            tool_calls: vec![ToolCall {
                id: format!("{}0", summary::CARRIED_ID),
                name: "todo_write".into(),
                arguments: "{}".into(),
            }],
        },
        Message::Tool {
            tool_call_id: format!("{}0", summary::CARRIED_ID),
            content: "todos".into(),
        },
    ];
    lines.push(
        Line::compaction(&Compaction {
            trigger: "auto".into(),
            step: "summary".into(),
            tokens_before: 5000,
            tokens_after: 800,
            change: Change::Replaced(replaced),
        })
        .text(),
    );
    lines.push(usage((800, 700, 10, 0), None, None));
    lines.push(assistant("Done.", None, &[]));
    let tl = load(&lines);
    let t = trajectory(&tl);
    let steps = t["steps"].as_array().expect("steps");
    assert_eq!(
        steps[4],
        json!({"step_id": 5, "source": "system",
            "message": "hx cleared 1 old tool results to fit the context window (auto, prune): \
                about 900 tokens before, 300 after. From here on the model reads them as \
                extra.context_management.cleared says; the steps above keep them as they were \
                sent then.",
            "extra": {"context_management": {"type": "compaction", "boundary": "edit",
                "trigger": "auto", "step": "prune", "tokens_before": 900, "tokens_after": 300,
                "cleared": [{"step_id": 3, "tool_call_id": "c1", "content": "[cleared]"}]}}})
    );
    // The steps above keep what was sent then.
    assert_eq!(
        steps[2]["observation"]["results"][0]["content"],
        "a.txt\nb.txt"
    );
    assert_eq!(
        steps[5],
        json!({"step_id": 6, "source": "agent", "model_name": "deepseek-flash",
            "reasoning_effort": "high", "message": summary_text,
            "metrics": {"prompt_tokens": 5000, "completion_tokens": 300, "cached_tokens": 4000,
                        "cost_usd": 0.000002},
            "llm_call_count": 1, "extra": {"request": "compaction_summary"}})
    );
    assert_eq!(
        steps[6]["extra"]["context_management"],
        json!({"type": "compaction", "boundary": "replace", "trigger": "auto",
               "step": "summary", "tokens_before": 5000, "tokens_after": 800})
    );
    assert_eq!(
        steps[7],
        json!({"step_id": 8, "source": "system", "message": "You are hx.",
               "is_copied_context": true})
    );
    assert_eq!(
        steps[8],
        json!({"step_id": 9, "source": "user", "message": "list the files",
               "is_copied_context": true})
    );
    assert_eq!(
        steps[9],
        json!({"step_id": 10, "source": "user",
               "message": format!("{}{summary_text}", summary::HEADER),
               "extra": {"compaction_summary": true}})
    );
    assert_eq!(steps[10]["source"], "agent");
    assert_eq!(steps[10]["llm_call_count"], 0);
    assert_eq!(steps[10]["is_copied_context"], true);
    assert!(steps[10].get("reasoning_content").is_none());
    assert!(steps[10].get("metrics").is_none());
    assert_eq!(
        steps[10]["observation"],
        json!({"results": [{"source_call_id": "hx_carried_0", "content": "todos"}]})
    );
    assert_eq!(steps[11]["message"], "Done.");
    assert_eq!(steps[11]["metrics"]["cached_tokens"], 700);
    assert_eq!(steps.len(), 12);
    assert_eq!(t["final_metrics"]["total_steps"], 12);

    let md = markdown::document(&tl);
    assert!(
        md.contains("*Compacted (`auto`, `prune`): about 900 tokens before, 300 after; 1 old tool results cleared.*"),
        "{md}"
    );
    assert!(
        md.contains(&format!("```text\n{summary_text}\n```")),
        "{md}"
    );
    // The copied history and hx's summary message are not shown again.
    assert_eq!(md.matches("list the files").count(), 2, "{md}");
    assert!(!md.contains("todo\\_write"), "{md}");
}

/// A rewind of the conversation says where the history went back to; a resumed session's
/// answers to calls a crash left open go to their calls; a usage whose response is not in
/// the file is a step of its own.
#[test]
fn rewinds_repairs_and_unrecorded_responses() {
    let lines = vec![
        msg(Message::System("s".into())),
        user("one"),
        usage((10, 0, 1, 0), None, None),
        assistant("", None, &[("c1", "bash", "{}"), ("c2", "bash", "{}")]),
        tool("c1", "ok"),
        user("two"),
        Line::Repair {
            answers: &[(
                5,
                Message::Tool {
                    tool_call_id: "c2".into(),
                    content: "Error: not run".into(),
                },
            )],
        }
        .text(),
        usage((20, 0, 2, 0), None, None),
        r#"{"type":"checkpoint","n":1,"what":"turn","commit":"a","tree":"b","at_message":7,"label":"","at":"t"}"#.into(),
        r#"{"type":"rewind","to":1,"code":true,"conversation":true,"at_message":2,"safety":2,"paths":1,"at":"2026-12-01T00:00:05Z"}"#.into(),
        user("three"),
    ];
    let tl = load(&lines);
    let t = trajectory(&tl);
    let steps = t["steps"].as_array().expect("steps");
    assert_eq!(
        steps[2]["observation"]["results"],
        json!([{"source_call_id": "c1", "content": "ok"},
               {"source_call_id": "c2", "content": "Error: not run",
                "extra": {"answered_at_resume": true}}])
    );
    assert_eq!(steps[3]["message"], "two");
    assert_eq!(
        steps[4],
        json!({"step_id": 5, "source": "agent", "model_name": "deepseek-flash",
            "reasoning_effort": "high", "message": "",
            "metrics": {"prompt_tokens": 20, "completion_tokens": 2, "cached_tokens": 0},
            "llm_call_count": 1,
            "extra": {"request": "turn",
                      "response": "not recorded: the session has the request's usage, not its answer"}})
    );
    assert_eq!(
        steps[5]["extra"],
        json!({"rewind": {"to_checkpoint": 1, "files": true, "conversation": true,
                          "paths": 1, "at": "2026-12-01T00:00:05Z"},
               "context_management": {"type": "rewind", "boundary": "truncate",
                                      "messages_kept": 2, "last_step_kept": 2}})
    );
    assert_eq!(steps[6]["message"], "three");
    assert_eq!(steps.len(), 7);
    assert!(matches!(&tl.steps[4], Step::Agent(t) if t.by == By::Unrecorded));
}

/// A subagent's session is embedded and referred to from the call that started it.
#[test]
fn subagents_are_embedded_and_referred_to_by_their_task_call() {
    let dir = tempfile::tempdir().expect("tempdir");
    let parent = write(
        dir.path(),
        &header(ID),
        &[
            user("delegate"),
            assistant("", None, &[("t1", "task", r#"{"prompt":"look"}"#)]),
            tool("t1", "found it"),
            assistant("Done.", None, &[]),
        ],
    );
    let mut child = header(CHILD);
    child.parent_id = Some(ID.into());
    child.parent_call_id = Some("t1".into());
    write(
        dir.path(),
        &child,
        &[
            user("look"),
            usage((10, 5, 1, 0), Some(3_000), None),
            assistant("found it", None, &[]),
        ],
    );
    let tl = timeline::load(&Store::at(dir.path()), &parent).expect("load");
    let t = trajectory(&tl);
    assert_eq!(
        t["steps"][1]["observation"]["results"],
        json!([{"source_call_id": "t1", "content": "found it",
                "subagent_trajectory_ref": [{"trajectory_id": CHILD, "session_id": CHILD}]}])
    );
    let subs = t["subagent_trajectories"].as_array().expect("embedded");
    assert_eq!(subs.len(), 1);
    assert_eq!(subs[0]["trajectory_id"], CHILD);
    assert_eq!(subs[0]["extra"]["parent_session_id"], ID);
    assert_eq!(subs[0]["extra"]["parent_call_id"], "t1");
    assert_eq!(subs[0]["steps"][1]["metrics"]["cost_usd"], 0.000003);
    // The parent priced nothing of its own; with its subagent's the total is known.
    assert_eq!(t["final_metrics"]["total_cost_usd"], 0.000003);

    let md = markdown::document(&tl);
    let call = md.find("Tool call `task` (`t1`)").expect("the call");
    let sub = md.find("### Subagent").expect("the subagent");
    let answer = md.find("```text\nDone.").expect("the answer");
    assert!(call < sub && sub < answer, "{md}");
    assert!(md.contains(&format!("- Session: `{CHILD}`")), "{md}");
}

#[test]
fn markdown_fences_cannot_be_closed_by_the_text_they_hold() {
    let hostile = "```\n# not a heading\n````\n<img src=x>";
    let lines = vec![
        user("[click](http://evil) <b>task</b>\nsecond line"),
        assistant("", None, &[("c1", "bash", r#"{"command":"cat x"}"#)]),
        tool("c1", hostile),
        assistant(hostile, None, &[]),
    ];
    let md = markdown::document(&load(&lines));
    assert!(
        md.starts_with("# \\[click\\]\\(http\\:\\/\\/evil\\) \\<b\\>task\\<\\/b\\> second line\n"),
        "{md}"
    );
    assert!(
        md.contains(&format!("`````text\n{hostile}\n`````\n")),
        "{md}"
    );
    assert_eq!(md.matches("`````text\n").count(), 2, "{md}");
    assert!(
        md.contains("```json\n{\n  \"command\": \"cat x\"\n}\n```\n"),
        "{md}"
    );
}

#[test]
fn markdown_cuts_long_results_and_says_so() {
    let long = format!("{}\nEND", "x".repeat(10_000));
    let lines = vec![
        user("go"),
        assistant("", None, &[("c1", "bash", "{}")]),
        tool("c1", &long),
    ];
    let md = markdown::document(&load(&lines));
    assert!(
        md.contains("*Cut: 6,004 of its 10,004 characters left out in the middle.*"),
        "{md}"
    );
    assert!(md.contains("END\n```"), "{md}");
    assert!(md.len() < 6_000, "{}", md.len());
    // A call without a result says so.
    let md = markdown::document(&load(&[
        user("go"),
        assistant("", None, &[("c1", "bash", "{}")]),
    ]));
    assert!(
        md.contains("*No result: the session stopped before the call ended.*"),
        "{md}"
    );
}

/// The exact document of a small session: the facts, then each message.
#[test]
fn markdown_of_a_task() {
    let md = markdown::document(&load(&one_task()));
    let expected = format!(
        "# list the files

- Session: `{ID}`
- Model: `deepseek-flash` (`deepseek`), effort `high`
- Started: `2026-12-01T00:00:00Z`
- Runs: 1, the last `answered`
- Figures: 2 turns, 2 tool calls (0 blocked); 3,000 prompt tokens (2,000 cache hits), 150 \
completion tokens (40 reasoning); cost $0.001500

## User

```text
list the files
```

## Assistant

Reasoning:

```text
I should look.
```

```text
Looking.
```

Tool call `bash` (`c1`):

```json
{{
  \"command\": \"ls\"
}}
```

Result:

```text
a.txt
b.txt
```

Tool call `glob` (`c2`):

```json
not json
```

Result:

```text
Error: bad arguments
```

## Assistant

```text
Two files.
```

*Run 1 ended: `answered`.*

---

Exported by hx {version} (`hx sessions export --format markdown`). Tool results, arguments and \
reasoning longer than 4,000 characters keep their start and end. The system prompt is left out \
(`hx context` shows it).
",
        version = env!("CARGO_PKG_VERSION"),
    );
    assert_eq!(md, expected);
}

#[test]
fn code_spans_hold_any_backticks() {
    assert_eq!(markdown::code("c1"), "`c1`");
    assert_eq!(markdown::code("a`b"), "``a`b``");
    assert_eq!(markdown::code("`x``"), "``` `x`` ```");
    assert_eq!(markdown::code("two\nlines"), "`two lines`");
    assert_eq!(markdown::code(" "), "(none)");
}

/// A later run, a `/model` switch, a summary request that gave no summary, and a resume's
/// answers recorded as an older hx did (a compaction holding the whole repaired history).
#[test]
fn runs_switches_failed_summaries_and_old_repairs() {
    let open = vec![
        Message::System("s".into()),
        Message::User("one".into()),
        Message::Assistant {
            content: String::new(),
            reasoning: None,
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "bash".into(),
                arguments: "{}".into(),
            }],
        },
    ];
    let mut repaired = open.clone();
    repaired.push(Message::Tool {
        tool_call_id: "c1".into(),
        content: "Error: not run".into(),
    });
    let mut lines: Vec<String> = open.into_iter().map(msg).collect();
    lines.extend([
        r#"{"type":"run","started_at":"2026-12-01T01:00:00Z","model":"deepseek-v4-pro","provider":"deepseek","effort":"max"}"#.to_string(),
        Line::compaction(&Compaction {
            trigger: "repair".into(),
            step: "repair".into(),
            tokens_before: 0,
            tokens_after: 0,
            change: Change::Replaced(repaired),
        })
        .text(),
        user("two"),
        usage((50, 0, 5, 0), None, Some("summary")),
        r#"{"type":"model","model":"other-model","at":"2026-12-01T01:00:01Z"}"#.to_string(),
        msg(Message::Assistant {
            content: "Answer.".into(),
            reasoning: Some("thought".into()),
            tool_calls: vec![],
        }),
    ]);
    let tl = load(&lines);
    let t = trajectory(&tl);
    let steps = t["steps"].as_array().expect("steps");
    let sources: Vec<&str> = steps
        .iter()
        .map(|s| s["source"].as_str().expect("source"))
        .collect();
    assert_eq!(
        sources,
        ["system", "user", "agent", "user", "agent", "agent"]
    );
    assert_eq!(
        steps[2]["observation"]["results"],
        json!([{"source_call_id": "c1", "content": "Error: not run",
                "extra": {"answered_at_resume": true}}])
    );
    assert_eq!(
        steps[4]["extra"],
        json!({"request": "compaction_summary",
               "response": "not recorded: the session has the request's usage, not its answer"})
    );
    // The response after the switch: the run's effort, the switched model.
    assert_eq!(steps[5]["model_name"], "other-model");
    assert_eq!(steps[5]["reasoning_effort"], "max");
    assert!(steps[5].get("metrics").is_none());
    assert_eq!(t["extra"]["runs"][1]["model"], "deepseek-v4-pro");
    assert_eq!(t["extra"]["runs"][1]["effort"], "max");

    let md = markdown::document(&tl);
    for part in [
        "*Run 2 started `2026-12-01T01:00:00Z`, `deepseek-v4-pro` (`deepseek`).*",
        "Result (given when the session was resumed):",
        "*A compaction's summary request was made; no compaction followed it.*",
        "*Model switched to `other-model`.*",
    ] {
        assert!(md.contains(part), "{part:?} not in:\n{md}");
    }
}
