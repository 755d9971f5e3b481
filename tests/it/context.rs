//! End-to-end tests of compaction: a tiny `context_window` in the user's config, the fake
//! server, and assertions on the requests hx sends next, on stderr and on the session file.
//!
//! Replies carry no token counts (`quiet`), so hx estimates every request whole (3 bytes a
//! token); the sizes below are chosen with a wide margin around the limits, so that the system
//! prompt and the tool schemas may grow by a thousand tokens without breaking a test.

use crate::support::calls::{bash_printing, load_skill};
use crate::support::{
    is_summary, json_lines, messages, session_lines, system_prompt, tool_answer, Call, FakeServer,
    Hx, Recorded, Reply,
};
use serde_json::{json, Value};

/// `context_window` 10,000: compaction at 8,000 tokens (24,000 bytes).
const SMALL: &str = "context_window = 10000\n";
/// The same window on a server that keeps no prompt cache (a model without a price, whose
/// usage reports no cache hits): there a prune costs nothing beyond itself, so compaction
/// prunes whenever that frees enough.
const SMALL_NO_CACHE: &str = "context_window = 10000\nmodel = \"local-coder\"\n";
const LIMIT_TOKENS: usize = 8_000;

/// A reply without token counts, streamed without pauses (long texts come in many events).
fn quiet(r: Reply) -> Reply {
    r.with_usage(0, 0, 0).unpaced()
}

fn calls(cs: Vec<Call>) -> Reply {
    quiet(Reply::tool_calls(cs))
}

fn text(t: &str) -> Reply {
    quiet(Reply::text(t))
}

/// A summary request: the one whose last message is hx's summary instruction.
fn is_summary_request(r: &Recorded) -> bool {
    is_summary(&r.body)
}

/// Asserts that request `b` sends request `a`'s messages first, unchanged (the prompt cache's
/// prefix), and the same tools.
fn extends(a: &Recorded, b: &Recorded) {
    let (ma, mb) = (messages(&a.body), messages(&b.body));
    assert!(ma.len() < mb.len(), "{} then {}", ma.len(), mb.len());
    assert_eq!(&mb[..ma.len()], &ma[..], "not an extension");
    assert_eq!(a.body["tools"], b.body["tools"]);
}

/// The parent session's lines, parsed.
fn parent_session_lines(hx: &Hx) -> Vec<Value> {
    let file = hx
        .session_files()
        .into_iter()
        .find(|f| {
            let text = std::fs::read_to_string(f).unwrap_or_default();
            !text.lines().next().unwrap_or("").contains("parent_id")
        })
        .expect("a session file");
    session_lines(&file)
}

fn of_type<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == kind).collect()
}

#[test]
fn pruning_clears_old_outputs_without_a_model_call_and_requests_extend_each_other() {
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 6_000)]),
        calls(vec![bash_printing("c2", 6_000)]),
        calls(vec![bash_printing("c3", 9_000)]),
        calls(vec![Call::new("c4", "bash", r#"{"command":"echo small"}"#)]),
        text("done"),
        text("again"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL_NO_CACHE);
    hx.args(["agent", "-v", "make output"]);
    let run = hx.run();
    run.assert_code(0);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "no summary request: {}", run.stderr);
    assert!(
        run.stderr.contains(
            "hx: compaction cleared old tool outputs: the next request misses the prompt cache \
             for about "
        ),
        "{}",
        run.stderr
    );
    assert!(!reqs.iter().any(is_summary_request));
    // Before the limit, each request extends the one before; after the compaction too.
    extends(&reqs[0], &reqs[1]);
    extends(&reqs[1], &reqs[2]);
    extends(&reqs[3], &reqs[4]);
    let cleared = "[output cleared to save context: 6,000 chars of bash; run it again if needed]";
    assert_eq!(tool_answer(&reqs[3].body, "c1"), cleared);
    assert_eq!(tool_answer(&reqs[3].body, "c2"), cleared);
    assert_eq!(tool_answer(&reqs[3].body, "c3"), "a".repeat(9_000));
    assert_eq!(system_prompt(&reqs[3].body), system_prompt(&reqs[0].body));
    assert!(reqs[3].raw_body.len() / 3 < LIMIT_TOKENS);

    assert!(
        run.stderr.contains("[HOOK] PreCompact auto tokens="),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(" tokens (cleared 2 old tool outputs)")
            && run.stderr.contains("compacted: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("tool_calls=4, blocked=0")
            && run.stderr.contains(", compactions=1, duration="),
        "{}",
        run.stderr
    );

    // The session keeps every line sent, and a compaction line after them.
    let lines = parent_session_lines(&hx);
    let compactions = of_type(&lines, "compaction");
    assert_eq!(compactions.len(), 1);
    let c = compactions[0];
    assert_eq!(
        (c["trigger"].as_str(), c["step"].as_str()),
        (Some("auto"), Some("prune"))
    );
    assert!(
        c["tokens_before"].as_u64() > c["tokens_after"].as_u64(),
        "{c}"
    );
    let full = of_type(&lines, "message")
        .iter()
        .filter(|m| m["message"]["content"] == "a".repeat(6_000))
        .count();
    assert_eq!(full, 2, "the cleared outputs are still on record");

    // `-c` goes on from the pruned history: nothing to compact again.
    hx.clear_args().args(["agent", "-v", "-c", "next"]);
    let second = hx.run();
    second.assert_code(0);
    assert!(!second.stderr.contains("PreCompact"), "{}", second.stderr);
    let reqs = server.requests();
    let resumed = messages(&reqs[5].body);
    let last = messages(&reqs[4].body);
    assert_eq!(&resumed[..last.len()], &last[..]);
    assert_eq!(
        resumed[last.len() + 1],
        json!({"role": "user", "content": "next"})
    );
}

const DEPLOY: &str =
    "---\nname: deploy\ndescription: How to deploy\n---\nRun scripts/deploy.sh, never by hand.\n";
const TODOS: &str =
    r#"{"todos":[{"content":"Ship it","status":"in_progress","activeForm":"Shipping it"}]}"#;
const TASK: &str = "Ship the service: build it, then deploy it";

/// A workspace with a small skill and one too large to carry over a summary.
fn skills(hx: &mut Hx) {
    hx.write_file(".agents/skills/deploy/SKILL.md", DEPLOY);
    let big = format!(
        "---\nname: big\ndescription: A long one\n---\n{}\n",
        "Big rule.\n".repeat(400)
    );
    hx.write_file(".agents/skills/big/SKILL.md", &big);
}

#[test]
fn the_summary_keeps_the_system_prompt_the_task_the_skill_and_the_todos_and_resumes() {
    let server = FakeServer::start(vec![
        calls(vec![load_skill("l1", "deploy"), load_skill("l2", "big")]),
        calls(vec![Call::new("t1", "todo_write", TODOS)]),
        calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(9_000))
            .unpaced(),
        calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(9_000))
            .unpaced(),
        text("SUMMARY: the build passes; next step: deploy."),
        calls(vec![load_skill("l3", "big"), load_skill("l4", "deploy")]),
        text("done"),
        calls(vec![load_skill("l5", "deploy")]),
        text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL);
    skills(&mut hx);
    hx.args(["agent", TASK]);
    let run = hx.run();
    run.assert_code(0);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 7, "{}", run.stderr);
    for (i, r) in reqs.iter().enumerate() {
        assert_eq!(is_summary_request(r), i == 4, "request {i}");
    }
    // The summary request: the history, then the fixed prompt, without tools.
    // In a window this small its input is shrunk to leave room for the answer.
    let s = messages(&reqs[4].body);
    assert_eq!(&s[..2], &messages(&reqs[3].body)[..2]);
    assert!(reqs[4].raw_body.len() / 3 < 10_000);
    let prompt = s.last().expect("prompt")["content"].as_str().expect("text");
    assert!(prompt.starts_with("Context compaction:") && prompt.contains("7. Next step"));

    // The next request: under the limit, the same system prompt byte for byte, the task
    // verbatim, the summary, the small skill's body and the todo list.
    let next = &reqs[5];
    assert!(
        next.raw_body.len() / 3 < LIMIT_TOKENS,
        "{}",
        next.raw_body.len()
    );
    let m = messages(&next.body);
    assert_eq!(m[0], messages(&reqs[0].body)[0]);
    assert_eq!(m[1], json!({"role": "user", "content": TASK}));
    let summary = m[2]["content"].as_str().expect("summary");
    assert!(
        summary.starts_with("[hx compacted the conversation")
            && summary.ends_with("SUMMARY: the build passes; next step: deploy."),
        "{summary}"
    );
    let carried: Vec<&str> = m[3]["tool_calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["function"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(carried, ["load_skill", "todo_write"]);
    assert_eq!(m[3]["tool_calls"][1]["function"]["arguments"], TODOS);
    let body = m[4]["content"].as_str().expect("skill");
    assert!(
        body.starts_with("<skill name=\"deploy\">") && body.contains("Run scripts/deploy.sh"),
        "{body}"
    );
    assert_eq!(m[5]["content"], "[>] Ship it\n(0/1 completed)");
    assert_eq!(m.len(), 6);
    assert!(
        !next.raw_body.contains("Big rule."),
        "the big skill is not carried"
    );
    extends(&reqs[5], &reqs[6]);
    // The skill that did not fit loads again; the one carried is already loaded.
    assert!(tool_answer(&reqs[6].body, "l3").starts_with("<skill name=\"big\">"));
    assert!(tool_answer(&reqs[6].body, "l4").contains("is already loaded"));

    assert!(
        run.stderr
            .contains("tokens (summarised; 1 skills kept, big left to load again)"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(", compactions=1, duration="),
        "{}",
        run.stderr
    );
    let lines = parent_session_lines(&hx);
    let c = of_type(&lines, "compaction");
    assert_eq!(c.len(), 1);
    assert_eq!(c[0]["step"], "summary");
    let usage = of_type(&lines, "usage");
    assert_eq!(
        usage.iter().filter(|u| u["request"] == "summary").count(),
        1
    );
    assert!(
        of_type(&lines, "message")
            .iter()
            .any(|l| l["message"]["content"] == "x".repeat(9_000)),
        "the lines before the compaction stay"
    );

    // `-c` after the compaction goes on from the compacted history, and what is loaded
    // there is known to be loaded.
    hx.clear_args().args(["agent", "-c", "next"]);
    let second = hx.run();
    second.assert_code(0);
    let reqs = server.requests();
    let resumed = messages(&reqs[7].body);
    let before = messages(&reqs[6].body);
    assert_eq!(&resumed[..before.len()], &before[..]);
    assert_eq!(resumed.len(), before.len() + 2);
    assert_eq!(resumed[before.len()]["content"], "done");
    assert_eq!(
        resumed[before.len() + 1],
        json!({"role": "user", "content": "next"})
    );
    assert!(tool_answer(&reqs[8].body, "l5").contains("is already loaded"));
}

#[test]
fn an_overflow_compacts_and_the_retry_succeeds() {
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 6_000)]),
        Reply::deepseek_overflow(9_000),
        text("SUM"),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "-v", "look"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "done\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(is_summary_request(&reqs[2]));
    let m = messages(&reqs[3].body);
    assert_eq!(m[0], messages(&reqs[1].body)[0]);
    assert_eq!(m[1], json!({"role": "user", "content": "look"}));
    assert!(m[2]["content"].as_str().expect("summary").ends_with("SUM"));
    assert!(
        run.stderr.contains(
            "the server's context window is 9,000 tokens, not 1,048,576 (context_window)"
        ),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("[HOOK] PreCompact auto tokens="),
        "{}",
        run.stderr
    );
    let lines = parent_session_lines(&hx);
    assert_eq!(of_type(&lines, "compaction")[0]["trigger"], "overflow");
}

#[test]
fn llama_cpp_s_overflow_is_pruned_without_a_model_call() {
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 6_000)]),
        calls(vec![bash_printing("c2", 6_000)]),
        calls(vec![bash_printing("c3", 6_000)]),
        Reply::status(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8000}}"#,
        ),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    assert!(!reqs.iter().any(is_summary_request));
    assert!(tool_answer(&reqs[4].body, "c1").starts_with("[output cleared to save context"));
    assert_eq!(tool_answer(&reqs[4].body, "c3"), "a".repeat(6_000));
}

#[test]
fn a_second_overflow_ends_the_run_with_the_server_s_message_and_the_session_saved() {
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 6_000)]),
        Reply::deepseek_overflow(9_000),
        text("SUM"),
        Reply::deepseek_overflow(9_000),
        text("never asked"),
    ]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "look"]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 4);
    assert!(
        run.stderr.contains(
            "hx: API error 400: Bad Request: This model's maximum context length is 9000 tokens."
        ),
        "{}",
        run.stderr
    );
    let lines = parent_session_lines(&hx);
    assert_eq!(of_type(&lines, "compaction").len(), 1);
    let end = of_type(&lines, "end");
    assert_eq!(end[0]["outcome"], "error");
    assert!(end[0]["detail"]
        .as_str()
        .is_some_and(|d| d.contains("maximum context length")));
}

#[test]
fn a_task_that_cannot_fit_is_a_clear_error_not_a_loop() {
    let server = FakeServer::start(vec![text("never asked")]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL);
    let task = "t".repeat(30_000);
    hx.args(["agent", task.as_str()]);
    let run = hx.run();
    run.assert_code(1);
    assert_eq!(server.requests().len(), 0);
    assert!(
        run.stderr.contains("hx: the conversation cannot fit the context window: the system prompt, the tools and the task alone take about ")
            && run.stderr.contains("raise context_window"),
        "{}",
        run.stderr
    );
    assert_eq!(
        of_type(&parent_session_lines(&hx), "end")[0]["outcome"],
        "error"
    );
}

#[test]
fn compact_compacts_a_recorded_session_and_the_hook_and_the_transcript_say_so() {
    let server = FakeServer::start(vec![
        calls(vec![Call::new("c1", "bash", r#"{"command":"echo hi"}"#)]),
        text("done"),
        text("SUM-MANUAL"),
        text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "hooks.json",
        r#"{"hooks": {"PreCompact": [
            {"matcher": "manual", "hooks": [{"type": "command", "command": "cat > manual.json"}]},
            {"matcher": "auto", "hooks": [{"type": "command", "command": "touch auto.txt"}]}
        ]}}"#,
    );
    hx.args(["agent", "first"]);
    hx.run().assert_code(0);

    hx.clear_args().args(["agent", "--compact"]);
    let refused = hx.run();
    refused.assert_code(2);
    assert!(refused
        .stderr
        .contains("--compact compacts a recorded session"));

    hx.clear_args().args(["agent", "-c", "--compact"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "");
    assert!(
        run.stderr.contains("[HOOK] PreCompact manual tokens="),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("compacted: "), "{}", run.stderr);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    assert!(is_summary_request(&reqs[2]));
    // The whole history, then the prompt.
    let (last, input) = (messages(&reqs[1].body), messages(&reqs[2].body));
    assert_eq!(&input[..last.len()], &last[..]);
    assert_eq!(input[last.len()]["content"], "done");
    assert_eq!(input.len(), last.len() + 2);
    let input: Value = serde_json::from_str(&hx.read_file("manual.json")).expect("hook input");
    assert_eq!(input["hook_event_name"], "PreCompact");
    assert_eq!(input["trigger"], "manual");
    assert!(!hx.workspace().join("auto.txt").exists());

    hx.clear_args().args(["agent", "-c", "next"]);
    hx.run().assert_code(0);
    let m = messages(&server.requests()[3].body).clone();
    assert_eq!(m.len(), 4, "{m:#?}");
    assert_eq!(m[1], json!({"role": "user", "content": "first"}));
    assert!(m[2]["content"]
        .as_str()
        .expect("summary")
        .ends_with("SUM-MANUAL"));
    assert_eq!(m[3], json!({"role": "user", "content": "next"}));

    let id = hx.session_files()[0]
        .file_stem()
        .expect("stem")
        .to_string_lossy()
        .into_owned();
    let show = hx.run_args(&["sessions", "show", &id]);
    show.assert_code(0);
    let compacted = show
        .stdout
        .find("── compacted (manual, summary): ")
        .expect("marked");
    let summary = show
        .stdout
        .find("  summary: SUM-MANUAL")
        .expect("the summary");
    let call = show.stdout.find("> bash").expect("the earlier lines");
    let next = show.stdout.find("user: next").expect("the later lines");
    assert!(
        call < compacted && compacted < summary && summary < next,
        "{}",
        show.stdout
    );
}

#[test]
fn a_subagent_compacts_within_its_own_window() {
    let server = FakeServer::start(vec![
        calls(vec![Call::new("t1", "task", r#"{"prompt":"dig"}"#)]),
        calls(vec![bash_printing("c1", 6_000)]),
        calls(vec![bash_printing("c2", 6_000)]),
        calls(vec![bash_printing("c3", 9_000)]),
        text("found it"),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL_NO_CACHE);
    hx.args(["agent", "-v", "delegate"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 6);
    assert!(tool_answer(&reqs[4].body, "c1").starts_with("[output cleared to save context"));
    assert!(
        run.stderr
            .contains("  [task 1] [HOOK] PreCompact auto tokens=")
            && run.stderr.contains("  [task 1] compacted: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("compactions=1, duration="),
        "{}",
        run.stderr
    );
    // The parent's own history never passed its limit.
    assert_eq!(tool_answer(&reqs[5].body, "t1"), "found it");
}

#[test]
fn bad_window_settings_are_refused_with_what_to_write() {
    let mut hx = Hx::new_offline();
    for (config, says) in [
        ("context_window = 10\n", "context_window = 10 is too small"),
        (
            "compact_at = 1.5\n",
            "compact_at = 1.5 is not a share of the window",
        ),
        (
            "compact_at = 1\n",
            "compact_at = 1 is a number of tokens, and too small",
        ),
    ] {
        hx.write_user_config("config.toml", config);
        hx.clear_args().args(["agent", "x"]);
        let run = hx.run();
        run.assert_code(2);
        assert!(run.stderr.contains(says), "{config}: {}", run.stderr);
    }
}

#[test]
fn a_failed_summary_lets_the_run_go_on_while_its_requests_fit_the_window() {
    let server = FakeServer::start(vec![
        calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(9_000))
            .unpaced(),
        calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(9_000))
            .unpaced(),
        Reply::status(500, r#"{"error":{"message":"summary service down"}}"#),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", &format!("{SMALL}[network]\nretries = 0\n"));
    hx.args(["agent", "talk"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4);
    assert!(is_summary_request(&reqs[2]));
    // Sent as it was: the next request extends the last one.
    extends(&reqs[1], &reqs[3]);
    assert!(
        run.stderr
            .contains("hx: warning: compaction failed: API error 500")
            && run.stderr.contains("the run goes on without it"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("compactions="), "{}", run.stderr);
}

/// The `item` of each event of type `kind` whose item is a compaction.
fn compaction_items<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind && e["item"]["type"] == "compaction")
        .map(|e| &e["item"])
        .collect()
}

#[test]
fn at_deepseek_s_prices_a_prune_that_would_not_pay_for_its_misses_gives_way_to_the_summary() {
    // Three large outputs pass the limit: on a server without a cache, c1 and c2 would be
    // cleared. On DeepSeek's model with its built-in prices, clearing them would make the next
    // request miss everything after c1, each token 49/50 of a miss dearer, to save the hits
    // of the few requests before the history is back at the limit. The summary request,
    // which extends the request before it, hits instead.
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 9_000)]),
        calls(vec![bash_printing("c2", 9_000)]),
        calls(vec![bash_printing("c3", 12_000)]),
        text("SUMMARY: three commands printed their output."),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", ROOMY);
    hx.args(["agent", "make output"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{}", run.stderr);
    assert!(is_summary_request(&reqs[3]), "{}", run.stderr);
    // Nothing was cleared in the request the summary was made from: it extends the one
    // before it, the prefix the cache holds.
    extends(&reqs[2], &reqs[3]);
    assert_eq!(tool_answer(&reqs[3].body, "c1"), "a".repeat(9_000));
    assert!(
        !run.stderr.contains("cleared old tool outputs"),
        "{}",
        run.stderr
    );
    let lines = parent_session_lines(&hx);
    let compactions = of_type(&lines, "compaction");
    assert_eq!(compactions.len(), 1);
    assert_eq!(compactions[0]["step"], "summary");
}

#[test]
fn in_json_a_compaction_is_an_item_that_starts_and_completes() {
    let server = FakeServer::start(vec![
        calls(vec![bash_printing("c1", 6_000)]),
        calls(vec![bash_printing("c2", 6_000)]),
        calls(vec![bash_printing("c3", 9_000)]),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL_NO_CACHE);
    hx.args(["agent", "--json", "make output"]);
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stderr, "", "only fatal errors on stderr");
    // The prune happened: the request after it has the old outputs cleared.
    let reqs = server.requests();
    assert!(tool_answer(&reqs[3].body, "c1").starts_with("[output cleared to save context"));

    let events = json_lines(&run.stdout);
    let started = compaction_items(&events, "item.started");
    let completed = compaction_items(&events, "item.completed");
    assert_eq!((started.len(), completed.len()), (1, 1), "{}", run.stdout);
    let (s, c) = (started[0], completed[0]);
    assert_eq!(s["id"], c["id"]);
    assert_eq!(s["trigger"], "auto");
    assert_eq!(s["status"], "in_progress");
    assert_eq!(c["status"], "completed");
    assert_eq!(c["step"], "prune");
    assert_eq!(c["detail"], "cleared 2 old tool outputs");
    let (before, after) = (c["tokens_before"].as_u64(), c["tokens_after"].as_u64());
    assert!(before.is_some() && after < before, "{c}");
    // In the order it happened: after the third command, before the answer.
    let at = |pred: &dyn Fn(&Value) -> bool| events.iter().position(pred).expect("event");
    let third = at(&|e| e["type"] == "item.completed" && e["item"]["call_id"] == "c3");
    let start = at(&|e| e["type"] == "item.started" && e["item"]["type"] == "compaction");
    let answer_at = at(&|e| e["item"]["type"] == "agent_message");
    assert!(third < start && start < answer_at, "{}", run.stdout);
    assert_eq!(events.last().expect("events")["type"], "turn.completed");
}

/// A run whose history only a summary can shrink (its assistant texts are long, its tool
/// outputs short); the summary request reports tokens, the others none.
fn summarised_run() -> FakeServer {
    FakeServer::start(vec![
        calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(9_000))
            .unpaced(),
        calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(9_000))
            .unpaced(),
        Reply::text("SUMMARY: two commands ran.")
            .with_usage(5_000, 1_000, 400)
            .unpaced(),
        text("done"),
    ])
}

#[test]
fn the_summary_request_s_tokens_count_in_the_totals() {
    let server = summarised_run();
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL);
    hx.args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.stderr);
    assert!(is_summary_request(&reqs[2]));
    assert!(
        run.stderr.contains(
            "[HOOK] Stop: turns=3, tool_calls=2, blocked=0, prompt_tokens=5000, \
             cache_hit_tokens=1000, completion_tokens=400, cost=$0.000843 cache=20%, \
             compactions=1, duration="
        ),
        "{}",
        run.stderr
    );

    let server = summarised_run();
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", SMALL);
    hx.args(["agent", "--json", "go"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(is_summary_request(&server.requests()[2]));
    let events = json_lines(&run.stdout);
    let completed = compaction_items(&events, "item.completed");
    assert_eq!(completed.len(), 1, "{}", run.stdout);
    assert_eq!(completed[0]["step"], "summary");
    let last = events.last().expect("events");
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(
        last["usage"],
        // The summary's reasoning: a token per four of its 53 characters, as the fake counts.
        json!({"input_tokens": 5000, "cached_input_tokens": 1000, "output_tokens": 400,
               "reasoning_output_tokens": 14, "cost": 0.000843, "currency": "USD"})
    );
}

/// `context_window` 20,000, compaction past half of it: the summary request's input fits whole,
/// so nothing in it is shrunk.
const ROOMY: &str = "context_window = 20000\ncompact_at = 0.5\n";

/// The body's bytes up to the end of its last message (before `],"stream"`).
fn messages_bytes(raw: &str) -> &str {
    let end = raw.find(r#"],"stream":"#).expect("a messages array");
    &raw[..end]
}

/// The body's bytes after its messages: every other setting (stream, tools, effort).
fn settings_bytes(raw: &str) -> &str {
    let end = raw.find(r#"],"stream":"#).expect("a messages array");
    &raw[end..]
}

#[test]
fn the_summary_request_is_the_next_request_plus_one_user_message_byte_for_byte() {
    let server = FakeServer::start(vec![
        calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(15_000))
            .unpaced(),
        calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(15_000))
            .unpaced(),
        text("SUMMARY: two echoes done."),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", ROOMY);
    hx.args(["agent", "echo twice"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.stderr);
    assert!(is_summary_request(&reqs[2]), "{}", run.stderr);
    let (before, summary) = (&reqs[1], &reqs[2]);

    // Everything the request before it sent comes first, byte for byte, and every setting
    // after the messages (the tools among them) is the same: the cache hits on all of it.
    assert!(
        summary
            .raw_body
            .starts_with(messages_bytes(&before.raw_body)),
        "the summary request does not extend the request before it"
    );
    assert_eq!(
        settings_bytes(&summary.raw_body),
        settings_bytes(&before.raw_body)
    );
    assert!(summary.body["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty()));
    // Its messages: the history the next turn would have sent (the model's answer and the
    // call's result after the request before it), then the instruction, the one new message.
    let (prev, input) = (messages(&before.body), messages(&summary.body));
    assert_eq!(&input[..prev.len()], &prev[..]);
    assert_eq!(input[prev.len()]["content"], "y".repeat(15_000));
    assert_eq!(input[prev.len() + 1]["tool_call_id"], "b2");
    assert_eq!(input.len(), prev.len() + 3);
    let last = &input[prev.len() + 2];
    assert_eq!(last["role"], "user");
    assert!(last["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("Context compaction:")));
    // The trace says the next request misses the cache, and what that costs.
    assert!(
        run.stderr.contains(
            "hx: compaction replaced the history with a summary: the next request misses the \
             prompt cache for about "
        ) && run.stderr.contains(" more than hits)"),
        "{}",
        run.stderr
    );
    // The request after it starts from the summary, with the same tools.
    assert_eq!(reqs[3].body["tools"], before.body["tools"]);
    assert!(serde_json::to_string(messages(&reqs[3].body))
        .expect("json")
        .contains("SUMMARY: two echoes done."));
}

#[test]
fn tool_calls_in_the_summary_s_answer_are_not_run() {
    let server = FakeServer::start(vec![
        calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
            .with_content(&"x".repeat(15_000))
            .unpaced(),
        calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
            .with_content(&"y".repeat(15_000))
            .unpaced(),
        // A model that calls a tool anyway, beside its summary.
        calls(vec![Call::new(
            "s1",
            "bash",
            r#"{"command":"touch ran.txt"}"#,
        )])
        .with_content("SUMMARY: with a call beside it."),
        text("done"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", ROOMY);
    hx.args(["agent", "echo twice"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 4, "{}", run.stderr);
    assert!(is_summary_request(&reqs[2]));
    let next = serde_json::to_string(messages(&reqs[3].body)).expect("json");
    assert!(next.contains("SUMMARY: with a call beside it."), "{next}");
    assert!(
        !next.contains("s1"),
        "the summary's call is in the history: {next}"
    );
    assert!(!hx.workspace().join("ran.txt").exists(), "the call ran");
}
