//! End-to-end tests of how hard the model thinks (`--effort`, `effort` and `subagent_effort`
//! in a config file, `/effort` in chat, DeepSeek's model names): what each request says of
//! thinking, for the main agent, a subagent and a compaction's summary, in each provider's
//! words; what a continued session sends; and what the thinking cost, where it is shown.

use crate::support::{messages, Call, FakeServer, Hx, Recorded, Reply};
use serde_json::{json, Map, Value};

/// The keys of a request body that say how hard the model thinks, and nothing else.
fn thinking(r: &Recorded) -> Value {
    let keys = ["thinking", "reasoning_effort", "reasoning"];
    let picked: Map<String, Value> = keys
        .iter()
        .filter_map(|k| Some((k.to_string(), r.body.get(*k)?.clone())))
        .collect();
    Value::Object(picked)
}

/// What DeepSeek is sent at each effort (`None`: no setting).
fn deepseek(effort: Option<&str>) -> Value {
    match effort {
        None => json!({}),
        Some("off") => json!({"thinking": {"type": "disabled"}}),
        Some(e) => json!({"thinking": {"type": "enabled"}, "reasoning_effort": e}),
    }
}

fn task_call(prompt: &str) -> Call {
    Call::new(
        "t1",
        "task",
        &json!({"description": "look", "prompt": prompt}).to_string(),
    )
}

/// A run that starts one subagent: the main agent's first request, the subagent's, the main
/// agent's second.
fn with_a_subagent() -> FakeServer {
    FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("Look around.")]),
        Reply::text("Nothing here."),
        Reply::text("Done."),
    ])
}

#[test]
fn each_effort_is_sent_by_the_main_agent_and_its_subagents_and_changes_nothing_else() {
    let efforts = [None, Some("off"), Some("low"), Some("high"), Some("max")];
    // One workspace for every run, so that the system prompts can be compared.
    let replies = (0..efforts.len()).flat_map(|_| {
        [
            Reply::tool_calls(vec![task_call("Look around.")]),
            Reply::text("Nothing here."),
            Reply::text("Done."),
        ]
    });
    let server = FakeServer::start(replies.collect());
    let mut hx = Hx::new(&server);
    for effort in efforts {
        hx.clear_args().arg("agent");
        if let Some(e) = effort {
            hx.args(["--effort", e]);
        }
        hx.arg("go");
        hx.run().assert_code(0);
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3 * efforts.len());
    let runs: Vec<&[Recorded]> = reqs.chunks(3).collect();
    for (effort, run) in efforts.iter().zip(&runs) {
        // The main agent's two requests and the subagent's between them.
        for r in run.iter() {
            assert_eq!(thinking(r), deepseek(*effort), "{effort:?}");
            // DeepSeek's thinking mode takes neither; none is sent at any effort.
            assert!(r.body.get("temperature").is_none() && r.body.get("tool_choice").is_none());
        }
        // The tool-calling turn goes back with its reasoning, as thinking mode requires.
        let turn = &messages(&run[2].body)[2];
        assert_eq!(turn["role"], "assistant");
        assert!(
            turn["tool_calls"].is_array() && turn["reasoning_content"].is_string(),
            "{turn}"
        );
        // The effort is a setting of the request, never of the prompt: the tool schemas and
        // the system prompts are those of the run without one, byte for byte.
        for (plain, r) in runs[0].iter().zip(run.iter()) {
            assert_eq!(plain.body["tools"], r.body["tools"], "{effort:?}");
            assert_eq!(messages(&plain.body)[0], messages(&r.body)[0], "{effort:?}");
        }
    }
}

#[test]
fn subagent_effort_sets_the_subagents_own() {
    let server = with_a_subagent();
    let mut hx = Hx::new(&server);
    hx.write_user_config("config.toml", "subagent_effort = \"off\"\n")
        .args(["agent", "--effort", "max", "go"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(thinking(&reqs[0]), deepseek(Some("max")));
    assert_eq!(thinking(&reqs[1]), deepseek(Some("off")));
    assert_eq!(thinking(&reqs[2]), deepseek(Some("max")));

    // The file's effort for both; the provider's table wins over the top-level key.
    let server = with_a_subagent();
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "effort = \"high\"\nsubagent_effort = \"max\"\n[providers.deepseek]\nsubagent_effort = \"low\"\n",
    )
    .args(["agent", "go"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(thinking(&reqs[0]), deepseek(Some("high")));
    assert_eq!(thinking(&reqs[1]), deepseek(Some("low")));
}

/// A run whose history only a summary can shrink (a window of 10,000 tokens; replies without
/// token counts, so hx estimates the requests whole): request 3 is the summary request.
fn summarised_run() -> FakeServer {
    let quiet = |r: Reply| r.with_usage(0, 0, 0).unpaced();
    FakeServer::start(vec![
        quiet(
            Reply::tool_calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
                .with_content(&"x".repeat(9_000)),
        ),
        quiet(
            Reply::tool_calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
                .with_content(&"y".repeat(9_000)),
        ),
        quiet(Reply::text("SUMMARY: two commands ran.")),
        quiet(Reply::text("done")),
    ])
}

#[test]
fn the_summary_request_keeps_the_runs_effort() {
    for effort in ["off", "low", "high", "max"] {
        let server = summarised_run();
        let mut hx = Hx::new(&server);
        hx.write_user_config("config.toml", "context_window = 10000\n")
            .args(["agent", "--effort", effort, "go"]);
        let run = hx.run();
        run.assert_code(0);
        let reqs = server.requests();
        assert_eq!(reqs.len(), 4, "{}", run.dump());
        assert!(crate::support::is_summary(&reqs[2].body), "{}", run.dump());
        for r in &reqs {
            assert_eq!(thinking(r), deepseek(Some(effort)), "{effort}");
        }
    }
}

/// `hx agent --provider NAME --effort EFFORT` against the fake server: the thinking keys of
/// its one request.
fn provider_request(provider: &str, config: &str, effort: Option<&str>) -> Value {
    let server = FakeServer::start(vec![Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    let url = server.url();
    hx.env("OPENAI_API_KEY", "k")
        .env("OPENROUTER_API_KEY", "k")
        .write_user_config("config.toml", config)
        .args([
            "agent",
            "--provider",
            provider,
            "--model",
            "m",
            "--base-url",
            &url,
        ]);
    if let Some(e) = effort {
        hx.args(["--effort", e]);
    }
    hx.arg("go");
    let run = hx.run();
    run.assert_code(0);
    thinking(&server.completions()[0])
}

#[test]
fn openai_and_openrouter_are_told_the_effort_in_their_words() {
    for (effort, word) in [
        ("off", "none"),
        ("low", "low"),
        ("high", "high"),
        ("max", "xhigh"),
    ] {
        assert_eq!(
            provider_request("openai", "", Some(effort)),
            json!({"reasoning_effort": word})
        );
        assert_eq!(
            provider_request("openrouter", "", Some(effort)),
            json!({"reasoning": {"effort": word}})
        );
    }
    // The top-level key is theirs too; without any setting, nothing is sent.
    assert_eq!(
        provider_request("openai", "effort = \"low\"\n", None),
        json!({"reasoning_effort": "low"})
    );
    assert_eq!(provider_request("openai", "", None), json!({}));
    assert_eq!(provider_request("openrouter", "", None), json!({}));
}

#[test]
fn a_server_hx_knows_no_effort_words_for_gets_only_an_effort_set_for_it() {
    // Ollama, or a table of one's own, may reject a key it does not know: the top-level
    // effort (meant for another provider) is not sent to it.
    let top = "effort = \"low\"\nsubagent_effort = \"off\"\n";
    assert_eq!(provider_request("ollama", top, None), json!({}));
    let own = "[providers.work]\nbase_url = \"http://127.0.0.1:9\"\n";
    assert_eq!(
        provider_request("work", &format!("{top}{own}"), None),
        json!({})
    );
    // Set for it: its table, or the flag of this run.
    assert_eq!(
        provider_request("ollama", "[providers.ollama]\neffort = \"high\"\n", None),
        json!({"reasoning_effort": "high"})
    );
    assert_eq!(
        provider_request("work", &format!("{own}effort = \"max\"\n"), None),
        json!({"reasoning_effort": "xhigh"})
    );
    assert_eq!(
        provider_request("ollama", top, Some("off")),
        json!({"reasoning_effort": "none"})
    );
}

#[test]
fn an_unknown_effort_is_refused_before_any_request_naming_the_allowed_ones() {
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--effort", "huge", "go"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr
            .contains("invalid value 'huge' for '--effort <EFFORT>'")
            && run
                .stderr
                .contains("[possible values: off, low, high, max]"),
        "{}",
        run.stderr
    );
    let mut hx = Hx::new_offline();
    hx.write_user_config("config.toml", "effort = \"medium\"\n")
        .args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains(
            "(line 1): unknown variant `medium`, expected one of `off`, `low`, `high`, `max`"
        ),
        "{}",
        run.stderr
    );
}

/// A run with a subagent and then a compaction (a window of 10,000 tokens): the main agent's
/// request, the subagent's, two more of the main agent's, the summary request (request 5, the
/// one without tools) and the main agent's last.
fn subagent_then_summary() -> FakeServer {
    let quiet = |r: Reply| r.with_usage(0, 0, 0).unpaced();
    FakeServer::start(vec![
        quiet(Reply::tool_calls(vec![task_call("Look around.")])),
        quiet(Reply::text("Nothing here.")),
        quiet(
            Reply::tool_calls(vec![Call::new("b1", "bash", r#"{"command":"echo one"}"#)])
                .with_content(&"x".repeat(9_000)),
        ),
        quiet(
            Reply::tool_calls(vec![Call::new("b2", "bash", r#"{"command":"echo two"}"#)])
                .with_content(&"y".repeat(9_000)),
        ),
        quiet(Reply::text("SUMMARY: two commands ran.")),
        quiet(Reply::text("done")),
    ])
}

#[test]
fn each_deepseek_model_name_is_sent_as_deepseek_takes_it_by_every_request() {
    let retired = |old: &str, how: &str| {
        format!("hx: {old} was retired on 2026-07-24: using deepseek-flash with thinking {how}, as it answered\n")
    };
    let cases = [
        (None, "deepseek-flash", None, None),
        (Some("deepseek-flash"), "deepseek-flash", None, None),
        (Some("deepseek-v4-pro"), "deepseek-v4-pro", None, None),
        // The old V4 Flash name: DeepSeek still takes it (V4.1 Flash answers).
        (Some("deepseek-v4-flash"), "deepseek-v4-flash", None, None),
        (
            Some("deepseek-chat"),
            "deepseek-flash",
            Some("off"),
            Some(retired("deepseek-chat", "off")),
        ),
        (
            Some("deepseek-reasoner"),
            "deepseek-flash",
            Some("high"),
            Some(retired("deepseek-reasoner", "on")),
        ),
    ];
    for (given, sent, effort, line) in cases {
        let server = subagent_then_summary();
        let mut hx = Hx::new(&server);
        hx.write_user_config("config.toml", "context_window = 10000\n")
            .arg("agent");
        if let Some(m) = given {
            hx.args(["--model", m]);
        }
        hx.arg("go");
        let run = hx.run();
        run.assert_code(0);
        let reqs = server.requests();
        assert_eq!(reqs.len(), 6, "{given:?}: {}", run.dump());
        assert!(crate::support::is_summary(&reqs[4].body), "{}", run.dump());
        for (i, r) in reqs.iter().enumerate() {
            assert_eq!(r.body["model"], sent, "{given:?}, request {i}");
            assert_eq!(thinking(r), deepseek(effort), "{given:?}, request {i}");
        }
        match line {
            Some(l) => assert_eq!(run.stderr.matches(&l).count(), 1, "{}", run.stderr),
            None => assert!(!run.stderr.contains("retired"), "{}", run.stderr),
        }
    }
}

#[test]
fn an_effort_set_wins_over_a_retired_names_own() {
    let server = with_a_subagent();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--model", "deepseek-chat", "--effort", "max", "go"]);
    let run = hx.run();
    run.assert_code(0);
    for r in server.requests() {
        assert_eq!(r.body["model"], "deepseek-flash");
        assert_eq!(thinking(&r), deepseek(Some("max")));
    }
    assert!(
        run.stderr.contains(
            "hx: deepseek-chat was retired on 2026-07-24: using deepseek-flash, at effort max as set\n"
        ),
        "{}",
        run.stderr
    );
}

/// Asserts that request `b` is request `a` with messages added at the end of its list, byte
/// for byte: the same model, the same messages first, the same tools and settings after them.
fn extends_bytes(a: &Recorded, b: &Recorded) {
    let end = r#"],"stream":true"#;
    let (at_a, at_b) = (
        a.raw_body.find(end).expect("a messages array"),
        b.raw_body.find(end).expect("a messages array"),
    );
    assert!(at_a < at_b, "b adds messages");
    assert_eq!(&b.raw_body[..at_a], &a.raw_body[..at_a], "the same prefix");
    assert_eq!(&b.raw_body[at_b..], &a.raw_body[at_a..], "the same tail");
}

#[test]
fn a_continued_session_keeps_its_effort_so_its_requests_go_on_byte_for_byte() {
    let server = FakeServer::start((0..5).map(|_| Reply::text("ok")).collect());
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--effort", "low", "one"]);
    hx.run().assert_code(0);
    // The user's file says another effort now: the session's own holds.
    hx.write_user_config("config.toml", "effort = \"max\"\n");
    hx.clear_args().args(["agent", "-c", "two"]);
    hx.run().assert_code(0);
    // A flag says otherwise, and that run's effort is the session's from then on.
    hx.clear_args()
        .args(["agent", "-c", "--effort", "off", "three"]);
    hx.run().assert_code(0);
    hx.clear_args().args(["agent", "-c", "four"]);
    hx.run().assert_code(0);
    // Another provider named: the files decide again.
    hx.clear_args()
        .args(["agent", "-c", "--provider", "deepseek", "five"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5);
    let sent: Vec<Value> = reqs.iter().map(thinking).collect();
    let want: Vec<Value> = ["low", "low", "off", "off", "max"]
        .iter()
        .map(|e| deepseek(Some(e)))
        .collect();
    assert_eq!(sent, want);
    extends_bytes(&reqs[0], &reqs[1]);
    extends_bytes(&reqs[2], &reqs[3]);
    // The session file says it: the header, then each run.
    let files = hx.session_files();
    assert_eq!(files.len(), 1);
    let lines = crate::support::session_lines(&files[0]);
    assert_eq!(lines[0]["effort"], "low");
    let runs: Vec<&Value> = lines.iter().filter(|l| l["type"] == "run").collect();
    let efforts: Vec<&Value> = runs.iter().map(|r| &r["effort"]).collect();
    assert_eq!(
        efforts,
        [&json!("low"), &json!("off"), &json!("off"), &json!("max")]
    );
}

#[test]
fn a_session_whose_requests_said_no_effort_goes_on_saying_none() {
    let server = FakeServer::start(vec![Reply::text("first"), Reply::text("second")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "one"]);
    hx.run().assert_code(0);
    hx.write_user_config("config.toml", "effort = \"max\"\n");
    hx.clear_args().args(["agent", "-c", "two"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(
        (thinking(&reqs[0]), thinking(&reqs[1])),
        (json!({}), json!({}))
    );
    extends_bytes(&reqs[0], &reqs[1]);
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    assert!(lines.iter().all(|l| l.get("effort").is_none()), "{lines:?}");
}

#[test]
fn effort_in_chat_switches_the_next_request_and_is_recorded_for_the_next_run() {
    use crate::support::pty::Chat;
    let server = FakeServer::start((0..3).map(|_| Reply::text("ok")).collect());
    let mut hx = Hx::new(&server);
    hx.args(["chat", "--effort", "low"]);
    let mut chat = Chat::start(&hx);
    chat.say("first");
    assert!(chat.say("/effort").contains("effort: low"), "{}", chat.seen);
    assert!(
        chat.say("/effort huge")
            .contains("hx: unknown effort 'huge': use off, low, high or max"),
        "{}",
        chat.seen
    );
    assert!(
        chat.say("/effort max").contains("effort: max"),
        "{}",
        chat.seen
    );
    chat.say("second");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    // The next run goes on at the effort the chat switched to.
    hx.clear_args().args(["agent", "-c", "third"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let sent: Vec<Value> = reqs.iter().map(thinking).collect();
    assert_eq!(
        sent,
        [
            deepseek(Some("low")),
            deepseek(Some("max")),
            deepseek(Some("max"))
        ]
    );
    extends_bytes(&reqs[1], &reqs[2]);
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    let switches: Vec<&Value> = lines.iter().filter(|l| l["type"] == "effort").collect();
    assert_eq!(switches.len(), 1, "{lines:?}");
    assert_eq!(switches[0]["effort"], "max");
}

#[test]
fn a_retired_name_in_chat_says_so_and_its_effort_is_recorded_with_the_model() {
    use crate::support::pty::Chat;
    let server = FakeServer::start((0..3).map(|_| Reply::text("ok")).collect());
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    chat.say("first");
    let shown = chat.say("/model deepseek-chat");
    assert!(
        shown.contains("hx: deepseek-chat was retired on 2026-07-24: using deepseek-flash with thinking off, as it answered")
            && shown.contains("model: deepseek-flash"),
        "{}",
        chat.seen
    );
    chat.say("second");
    chat.say("/model deepseek-v4-pro");
    chat.say("third");
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
    let reqs = server.requests();
    let sent: Vec<(Value, Value)> = reqs
        .iter()
        .map(|r| (r.body["model"].clone(), thinking(r)))
        .collect();
    assert_eq!(
        sent,
        [
            (json!("deepseek-flash"), json!({})),
            (json!("deepseek-flash"), deepseek(Some("off"))),
            (json!("deepseek-v4-pro"), json!({})),
        ]
    );
    let lines = crate::support::session_lines(&hx.session_files()[0]);
    let switches: Vec<(&Value, &Value)> = lines
        .iter()
        .filter(|l| l["type"] == "model" || l["type"] == "effort")
        .map(|l| (&l["type"], l.get("model").unwrap_or(&l["effort"])))
        .collect();
    assert_eq!(
        switches,
        [
            (&json!("model"), &json!("deepseek-flash")),
            (&json!("effort"), &json!("off")),
            (&json!("model"), &json!("deepseek-v4-pro")),
            (&json!("effort"), &Value::Null),
        ]
    );
}

/// A run with a subagent whose replies count their reasoning: the fake says a token per four
/// characters of it, so 10, 5 and 20 tokens of 100, 50 and 200 completion tokens.
fn thinking_counted() -> FakeServer {
    let thought = |tokens: usize| "r".repeat(4 * tokens);
    FakeServer::start(vec![
        Reply::tool_calls(vec![task_call("Look around.")])
            .with_reasoning(&thought(10))
            .with_usage(1000, 500, 100),
        Reply::text("Nothing here.")
            .with_reasoning(&thought(5))
            .with_usage(300, 0, 50),
        Reply::text("Done.")
            .with_reasoning(&thought(20))
            .with_usage(1200, 1000, 200),
    ])
}

#[test]
fn the_tokens_spent_thinking_are_in_the_json_usage_and_the_session_totals() {
    let server = thinking_counted();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let events = crate::support::json_lines(&run.stdout);
    let last = events.last().expect("events");
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(
        last["usage"],
        json!({"input_tokens": 2500, "cached_input_tokens": 1500, "output_tokens": 350,
               "reasoning_output_tokens": 35, "cost": 0.0003645, "currency": "USD",
               "subagent_cost": 0.000075})
    );
    // The main session's file: each request's line, and the figures of the run and the
    // session (the subagent's requests are in its own file).
    let files = hx.session_files();
    let main = files
        .iter()
        .map(|f| crate::support::session_lines(f))
        .find(|lines| lines[0].get("parent_id").is_none())
        .expect("the main session");
    let usage: Vec<&Value> = main
        .iter()
        .filter(|l| l["type"] == "usage")
        .map(|l| &l["reasoning_tokens"])
        .collect();
    assert_eq!(usage, [&json!(10), &json!(20)]);
    let end = main
        .iter()
        .find(|l| l["type"] == "end")
        .expect("an end line");
    assert_eq!(end["run"]["reasoning_tokens"], 30);
    assert_eq!(end["session"]["reasoning_tokens"], 30);
    // The transcript shows each request's.
    let id = main[0]["id"].as_str().expect("an id").to_string();
    let show = hx.run_args(&["sessions", "show", &id]);
    show.assert_code(0);
    assert!(
        show.stdout
            .contains("usage: prompt=1000 cached=500 completion=100 (reasoning=10)\n"),
        "{}",
        show.stdout
    );
}

#[test]
fn a_server_that_counts_no_thinking_shows_none() {
    let server = FakeServer::start(vec![Reply::text("ok").ollama()]);
    let mut hx = Hx::new(&server);
    let url = server.url();
    hx.args([
        "agent",
        "--json",
        "--provider",
        "ollama",
        "--model",
        "m",
        "--base-url",
        &url,
        "go",
    ]);
    let run = hx.run();
    run.assert_code(0);
    let events = crate::support::json_lines(&run.stdout);
    let usage = &events.last().expect("events")["usage"];
    assert!(usage.get("output_tokens").is_some(), "{usage}");
    assert!(usage.get("reasoning_output_tokens").is_none(), "{usage}");
}

#[test]
fn usage_in_chat_shows_the_tokens_spent_thinking_beside_the_completion() {
    use crate::support::pty::Chat;
    let server = thinking_counted();
    let mut hx = Hx::new(&server);
    hx.arg("chat");
    let mut chat = Chat::start(&hx);
    chat.say("go");
    let shown = chat.say("/usage");
    // The main agent's two requests (the subagent's are its own session's).
    assert!(
        shown.contains("completion tokens: 300 (30 of them reasoning)"),
        "{}",
        chat.seen
    );
    chat.ctrl('d');
    assert_eq!(chat.exit_code(), 0);
}

#[test]
fn agent_help_explains_the_effort_and_the_default_it_leaves() {
    let mut hx = Hx::new_offline();
    hx.args(["agent", "--help"]);
    let run = hx.run();
    run.assert_code(0);
    // Words, not lines: how clap wraps them depends on the terminal's width.
    let help = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    for s in [
        "--effort <EFFORT>",
        "[default: none sent, so the model's own holds; DeepSeek V4: thinking on, at high]",
        "off: No thinking",
        "Effort (--effort;",
        "deepseek off: \"thinking\": {\"type\": \"disabled\"}; the others: \"thinking\": {\"type\": \"enabled\"} and \"reasoning_effort\": low, high or max",
        "openai \"reasoning_effort\": none, low, high or xhigh",
        "openrouter \"reasoning\": {\"effort\": none, low, high or xhigh}",
        "subagent_effort = \"...\" sets the subagents'",
        "model deepseek-flash",
    ] {
        assert!(help.contains(s), "help lacks {s:?}:\n{}", run.stdout);
    }
}
