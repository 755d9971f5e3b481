//! What runs cost: the Stop line, `--json`, the session file and `--max-cost`, priced at a
//! time fixed by `HX_NOW` (the harness's default is off-peak).

use crate::support::{json_lines, session_lines, Call, FakeServer, Hx, Reply};

/// One answer of 1,000,000 prompt tokens (900,000 hits) and 10,000 out.
fn big_answer() -> FakeServer {
    FakeServer::start(vec![
        Reply::text("done").with_usage(1_000_000, 900_000, 10_000)
    ])
}

#[test]
fn a_request_costs_the_off_peak_or_the_peak_rates_of_its_time() {
    // Off-peak: 0.9 * $0.003 + 0.1 * $0.15 + 0.01 * $0.6.
    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("cost=$0.0237 cache=90%"),
        "{}",
        run.stderr
    );
    // A Wednesday at 02:30 UTC is in DeepSeek's peak: twice that.
    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.env("HX_NOW", "2026-12-02T02:30:00Z")
        .args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("cost=$0.0474 cache=90%"),
        "{}",
        run.stderr
    );
    // The session file has the request's cost, and the run's.
    let lines = session_lines(&hx.session_files()[0]);
    let usage = lines.iter().find(|l| l["type"] == "usage").expect("usage");
    assert_eq!(usage["cost"], 0.0474);
    assert_eq!(usage["currency"], "USD");
    assert_eq!(usage["peak"], true);
    assert_eq!(usage["model"], "deepseek-flash");
    let end = lines.iter().find(|l| l["type"] == "end").expect("end");
    assert_eq!(end["session"]["cost"]["amount"], 0.0474);
}

#[test]
fn a_model_without_a_price_has_tokens_and_an_unknown_cost_until_config_prices_it() {
    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--json", "--model", "local-model", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let last = json_lines(&run.stdout).pop().expect("events");
    assert_eq!(last["type"], "turn.completed");
    assert_eq!(last["usage"]["input_tokens"], 1_000_000);
    assert_eq!(last["usage"]["cost"], serde_json::Value::Null);

    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "--model", "local-model", "go"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("cost=unknown cache=90%"),
        "{}",
        run.stderr
    );

    // Priced in config, in its currency; a peak window of the config's own.
    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.write_user_config(
        "config.toml",
        "[pricing.\"local-model\"]\ninput_cache_hit = 0.1\ninput_cache_miss = 1.0\n\
         output = 2.0\ncurrency = \"eur\"\n[pricing.\"local-model\".peak]\n\
         utc = [\"11:00-13:00\"]\ninput_cache_hit = 1.0\ninput_cache_miss = 1.0\noutput = 1.0\n",
    );
    hx.args(["agent", "--json", "--model", "local-model", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let last = json_lines(&run.stdout).pop().expect("events");
    // Noon is in its peak: 1,010,000 tokens at 1.0 per million.
    assert_eq!(last["usage"]["cost"], 1.01);
    assert_eq!(last["usage"]["currency"], "EUR");

    let mut bad = Hx::new(&server);
    bad.write_user_config(
        "config.toml",
        "[pricing.m]\ninput_cache_hit = -1.0\ninput_cache_miss = 1.0\noutput = 2.0\n",
    );
    bad.args(["agent", "go"]);
    let run = bad.run();
    run.assert_code(2);
    assert!(
        run.stderr.contains("input_cache_hit must be an amount"),
        "{}",
        run.stderr
    );
}

#[test]
fn max_cost_ends_the_run_after_the_request_that_passes_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("c1", "bash", r#"{"command":"echo one"}"#)])
            .with_usage(100_000, 0, 1_000),
        Reply::tool_calls(vec![
            Call::new("c2", "bash", r#"{"command":"touch ran.txt"}"#),
            Call::new("c3", "bash", r#"{"command":"echo three"}"#),
        ])
        .with_usage(100_000, 0, 1_000),
        Reply::text("never asked"),
    ]);
    let mut hx = Hx::new(&server);
    // Each request: 0.1 * $0.15 + 0.001 * $0.6 = $0.0156; the second passes $0.02.
    hx.args(["agent", "--max-cost", "0.02", "go"]);
    let run = hx.run();
    run.assert_code(3);
    assert_eq!(server.requests().len(), 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("stopped: the run cost $0.0312 and passed --max-cost $0.0200"),
        "{}",
        run.stderr
    );
    assert!(!hx.workspace().join("ran.txt").exists(), "a call ran");
    // Every call has its answer in the session, and the end line says why.
    let lines = session_lines(&hx.session_files()[0]);
    let answered: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "message" && l["message"]["role"] == "tool")
        .map(|l| l["message"]["tool_call_id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(answered, ["c1", "c2", "c3"]);
    let end = lines.iter().find(|l| l["type"] == "end").expect("end");
    assert_eq!(end["outcome"], "max_cost");
}

#[test]
fn sessions_list_and_show_give_each_session_s_cost() {
    let server = big_answer();
    let mut hx = Hx::new(&server);
    hx.args(["agent", "go"]);
    hx.run().assert_code(0);
    hx.clear_args().args(["sessions", "list"]);
    let list = hx.run();
    list.assert_code(0);
    assert!(list.stdout.contains("cost=$0.0237"), "{}", list.stdout);
    hx.clear_args().args(["sessions", "list", "--json"]);
    let json = hx.run();
    json.assert_code(0);
    let v: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    assert_eq!(v[0]["cost"], 0.0237);
    let id = v[0]["id"].as_str().expect("id").to_string();
    hx.clear_args().args(["sessions", "show", &id]);
    let show = hx.run();
    show.assert_code(0);
    assert!(
        show.stdout.contains("cost=$0.0237 · session cost=$0.0237"),
        "{}",
        show.stdout
    );
}

/// A cost limit on a model hx has no price for could never be reached (its cost is unknown),
/// so `hx agent`, `hx chat` and `hx acp` refuse it before any request, naming the table that
/// prices the model and where the limit was set; once priced, the same run goes.
#[test]
fn a_cost_limit_on_a_model_without_a_price_is_refused_at_start() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    let refusal = |limit: &str| {
        format!(
            "hx: {limit} needs the price of model local-model, and hx has none: its cost is \
             unknown, so the limit could never be reached; give its rates as \
             [pricing.\"local-model\"] in a config file (input_cache_hit, input_cache_miss and \
             output per million tokens), or leave the limit out\n"
        )
    };
    for command in [
        &["agent", "--model", "local-model", "--max-cost", "1", "go"][..],
        &["acp", "--model", "local-model", "--max-cost", "1"],
    ] {
        let run = hx.run_args(command);
        run.assert_code(2);
        assert_eq!(run.stderr, refusal("--max-cost"), "{}", run.dump());
    }
    // `hx chat` on a terminal says the same before its prompt.
    hx.args(["chat", "--model", "local-model", "--max-cost", "1"]);
    let run = crate::support::pty::run_on_terminal(&hx);
    assert!(
        run.stdout
            .replace("\r\n", "\n")
            .contains(&refusal("--max-cost")),
        "{}",
        run.dump()
    );
    run.assert_code(2);
    // A limit from a config file names the file.
    hx.write_user_config("config.toml", "max_cost = 1\n");
    let config = hx.user_config_dir().join("config.toml");
    let run = hx.run_args(&["agent", "--model", "local-model", "go"]);
    run.assert_code(2);
    assert_eq!(
        run.stderr,
        refusal(&format!("max_cost (user file {})", config.display())),
        "{}",
        run.dump()
    );
    assert!(server.requests().is_empty());
    // Priced, the run goes.
    hx.write_user_config(
        "config.toml",
        "max_cost = 1\n[pricing.\"local-model\"]\ninput_cache_hit = 0.1\n\
         input_cache_miss = 0.2\noutput = 0.3\n",
    );
    let run = hx.run_args(&["agent", "--model", "local-model", "go"]);
    run.assert_code(0);
    assert_eq!(run.stdout, "done\n");
}
