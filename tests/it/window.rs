//! End to end: hx asks a local server for its context window, in the shapes llama.cpp, vLLM
//! and Ollama answer in, and plans for it from the first request, with no overflow error to
//! learn it from; the answer is remembered; a server that keeps quiet holds no run up; and
//! `hx context` and `hx models` show what the server said.
//!
//! Every run is the same: the model's first turn prints 6,000 bytes with bash (2,000 tokens by
//! hx's estimate), then it answers. Beside the system prompt and the tools (about 2,000
//! tokens) that passes 80 % of a 4,096-token window and stays far inside the 128,000 hx
//! assumes, so the second request shows which window hx planned for: the output cleared
//! (a prune, which always pays on a server without prices), or sent whole.

use std::time::Duration;

use crate::support::calls::bash_printing;
use crate::support::windows::{
    llama_cpp_models, llama_cpp_models_without_n_ctx, llama_cpp_props, ollama_models, ollama_ps,
    ollama_show, vllm_models,
};
use crate::support::{tool_answer, FakeServer, Hx, Reply, Run};
use serde_json::Value;

/// The window every server here states.
const WINDOW: u64 = 4096;
/// How hx marks a result the model has not seen that it cut to fit the window (never cleared:
/// the model must see what its call gave, `small_window`).
const CUT: &str = "[hx cut this output to fit the context window: ";

/// Whether `answer` is the 6,000-byte output cut to fit, not sent whole.
fn cut_to_fit(answer: &str) -> bool {
    answer.contains(CUT) && answer.len() < 6_000 && answer.starts_with('a')
}

/// A reply without token counts (hx estimates every request whole), streamed without pauses.
fn quiet(r: Reply) -> Reply {
    r.with_usage(0, 0, 0).unpaced()
}

/// The chat replies of `runs` runs: a 6,000-byte tool output, then the answer.
fn chat_server(runs: usize) -> FakeServer {
    let mut replies = Vec::new();
    for _ in 0..runs {
        replies.push(quiet(Reply::tool_calls(vec![bash_printing("c1", 6_000)])));
        replies.push(quiet(Reply::text("done")));
    }
    FakeServer::start(replies)
}

/// hx against `server` at `/v1`, as a local server's base URL reads, on `model`.
fn hx_on(server: &FakeServer, model: &str) -> Hx {
    let mut hx = Hx::with_base_url(&format!("{}/v1", server.url()));
    hx.write_user_config("config.toml", &format!("model = \"{model}\"\n"))
        .args(["agent", "make output"]);
    hx
}

/// Runs `hx` and returns the second chat request's answer to the tool call.
fn second_request_answer(server: &FakeServer, hx: &Hx, run_no: usize) -> (String, Run) {
    let run = hx.run();
    run.assert_code(0);
    let chats = server.completions();
    assert_eq!(chats.len(), 2 * run_no, "{}", run.dump());
    let answer = tool_answer(&chats[2 * run_no - 1].body, "c1").to_string();
    (answer, run)
}

/// Runs `hx` and asserts that it planned for the small window from the start.
fn assert_planned_for_the_stated_window(server: &FakeServer, hx: &Hx) -> Run {
    let (answer, run) = second_request_answer(server, hx, 1);
    assert!(
        cut_to_fit(&answer),
        "not cut to fit: not planned for {WINDOW}: {answer:.200}\n{}",
        run.dump()
    );
    assert!(
        !run.stderr.contains("context window is"),
        "learned from an overflow, not from the server\n{}",
        run.dump()
    );
    run
}

#[test]
fn llama_cpp_states_its_slot_context_in_v1_models() {
    let server = chat_server(1);
    server.answer(
        "GET",
        "/v1/models",
        200,
        &llama_cpp_models("qwen3-8b", WINDOW),
    );
    assert_planned_for_the_stated_window(&server, &hx_on(&server, "qwen3-8b"));
    // The list said it: nothing else was asked.
    assert_eq!(server.count("GET", "/props"), 0);
    assert_eq!(server.count("POST", "/api/show"), 0);
}

#[test]
fn an_older_llama_cpp_states_it_in_props_and_hx_context_says_so() {
    let server = chat_server(1);
    // The list's one model, under its file's name: the server answers every name with it.
    server
        .answer(
            "GET",
            "/v1/models",
            200,
            &llama_cpp_models_without_n_ctx("Qwen3-8B-Q4_K_M.gguf"),
        )
        .answer(
            "GET",
            "/props",
            200,
            &llama_cpp_props("Qwen3-8B-Q4_K_M.gguf", WINDOW),
        );
    let hx = hx_on(&server, "qwen3-8b");
    assert_planned_for_the_stated_window(&server, &hx);
    // Root of the base URL, not /v1/props.
    assert_eq!(server.count("GET", "/props"), 1);

    let run = hx.run_args(&["context"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(
            "\ncontext window: 4,096 tokens (qwen3-8b, the server said: /props \
             default_generation_settings.n_ctx, an earlier run asked); compaction at 3,276 tokens\n"
        ),
        "{}",
        run.dump()
    );
}

#[test]
fn vllm_states_max_model_len() {
    let server = chat_server(1);
    server.answer(
        "GET",
        "/v1/models",
        200,
        &vllm_models("Qwen/Qwen3-8B", WINDOW),
    );
    assert_planned_for_the_stated_window(&server, &hx_on(&server, "Qwen/Qwen3-8B"));
}

#[test]
fn ollama_serves_the_num_ctx_its_modelfile_sets() {
    let server = chat_server(1);
    server
        .answer(
            "GET",
            "/v1/models",
            200,
            &ollama_models(&["qwen3:8b", "llama3.2:3b"]),
        )
        .answer("POST", "/api/show", 200, &ollama_show(Some(WINDOW), 40_960));
    assert_planned_for_the_stated_window(&server, &hx_on(&server, "qwen3:8b"));
    let shown: Vec<Value> = server
        .requests()
        .into_iter()
        .filter(|r| r.path == "/api/show")
        .map(|r| r.body)
        .collect();
    assert_eq!(shown, vec![serde_json::json!({"model": "qwen3:8b"})]);
}

#[test]
fn ollama_without_num_ctx_serves_what_a_loaded_model_was_given_never_its_trained_length() {
    let server = chat_server(1);
    server
        .answer("GET", "/v1/models", 200, &ollama_models(&["qwen3:8b"]))
        .answer("POST", "/api/show", 200, &ollama_show(None, 40_960))
        .answer("GET", "/api/ps", 200, &ollama_ps("qwen3:8b", WINDOW));
    assert_planned_for_the_stated_window(&server, &hx_on(&server, "qwen3:8b"));

    // Not loaded: the trained 40,960 is not what Ollama serves, so nothing is taken.
    let server = chat_server(1);
    server
        .answer("GET", "/v1/models", 200, &ollama_models(&["qwen3:8b"]))
        .answer("POST", "/api/show", 200, &ollama_show(None, 40_960))
        .answer("GET", "/api/ps", 200, r#"{"models":[]}"#);
    let hx = hx_on(&server, "qwen3:8b");
    let (answer, run) = second_request_answer(&server, &hx, 1);
    assert_eq!(answer, "a".repeat(6_000), "{}", run.dump());
    let run = hx.run_args(&["context"]);
    assert!(
        run.stdout.contains(
            "context window: 128,000 tokens (qwen3:8b, assumed: the server states none, an \
             earlier run asked; set context_window)"
        ),
        "{}",
        run.dump()
    );
}

#[test]
fn the_answer_is_remembered_and_the_next_run_does_not_ask_again() {
    let server = chat_server(2);
    server.answer(
        "GET",
        "/v1/models",
        200,
        &llama_cpp_models("qwen3-8b", WINDOW),
    );
    let hx = hx_on(&server, "qwen3-8b");
    assert_planned_for_the_stated_window(&server, &hx);
    let (answer, run) = second_request_answer(&server, &hx, 2);
    assert!(cut_to_fit(&answer), "{answer:.200}\n{}", run.dump());
    assert_eq!(server.count("GET", "/v1/models"), 1, "asked twice");
    let cache = hx.home().join(".cache/hx/server-windows.json");
    let text = std::fs::read_to_string(&cache).expect("the cache file");
    assert!(text.contains("\"window\":4096"), "{text}");
}

#[test]
fn a_configured_window_wins_and_the_server_is_not_asked() {
    let server = chat_server(1);
    server.answer(
        "GET",
        "/v1/models",
        200,
        &llama_cpp_models("qwen3-8b", WINDOW),
    );
    let mut hx = hx_on(&server, "qwen3-8b");
    hx.write_user_config(
        "config.toml",
        "model = \"qwen3-8b\"\ncontext_window = 100000\n",
    );
    let (answer, run) = second_request_answer(&server, &hx, 1);
    assert_eq!(answer, "a".repeat(6_000), "{}", run.dump());
    assert_eq!(server.count("GET", "/v1/models"), 0);
}

#[test]
fn a_server_that_never_answers_holds_no_run_up() {
    let server = FakeServer::start(vec![quiet(Reply::text("done"))]);
    server.never_answer("GET", "/v1/models");
    let mut hx = hx_on(&server, "qwen3-8b");
    // Generous: what fails here is a run that waits for the answer, forever.
    hx.timeout(Duration::from_secs(30));
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "done", "{}", run.dump());
    assert_eq!(server.count("GET", "/v1/models"), 1);

    let run = hx.run_args(&["context"]);
    run.assert_code(0);
    assert!(
        run.stdout.contains(
            "context window: 128,000 tokens (qwen3-8b, assumed: the server did not say within \
             2 s; set context_window)"
        ),
        "{}",
        run.dump()
    );
}

#[test]
fn an_answer_that_comes_during_the_run_applies_from_the_next_request() {
    // The list comes after the build stopped waiting, while the first request is out.
    let server = FakeServer::start(vec![
        quiet(Reply::tool_calls(vec![bash_printing("c1", 6_000)]))
            .delay(Duration::from_millis(1_500)),
        quiet(Reply::text("done")),
    ]);
    server.answer_after(
        "GET",
        "/v1/models",
        Duration::from_millis(700),
        200,
        &llama_cpp_models("qwen3-8b", WINDOW),
    );
    assert_planned_for_the_stated_window(&server, &hx_on(&server, "qwen3-8b"));
}

#[test]
fn hx_models_shows_each_models_window_and_what_the_server_states() {
    let server = FakeServer::start(vec![]);
    server.answer(
        "GET",
        "/v1/models",
        200,
        &llama_cpp_models("qwen3-8b", WINDOW),
    );
    let hx = hx_on(&server, "qwen3-8b");
    let run = hx.run_args(&["models"]);
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", run.dump());
    assert!(
        lines[0].starts_with("  model ") && lines[0].contains("window"),
        "{}",
        run.dump()
    );
    let row = lines[1];
    for part in [
        "* qwen3-8b",
        "4,096",
        "/v1/models meta.n_ctx",
        "n_ctx 4,096, n_ctx_train 40,960, n_params 8,190,735,360, size 5,027,783,488",
    ] {
        assert!(row.contains(part), "{part:?} not in {row:?}");
    }
    let run = hx.run_args(&["models", "--json"]);
    let v: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(v["models"], serde_json::json!(["qwen3-8b"]));
    assert_eq!(v["details"][0]["window"], 4096);
    assert_eq!(v["details"][0]["from"], "/v1/models meta.n_ctx");
    assert_eq!(v["details"][0]["facts"]["n_ctx_train"], "40960");

    // Ollama: each model asked at /api/show (what it serves, and what it was trained for).
    let server = FakeServer::start(vec![]);
    server
        .answer(
            "GET",
            "/v1/models",
            200,
            &ollama_models(&["qwen3:8b", "llama3.2:3b"]),
        )
        .answer("POST", "/api/show", 200, &ollama_show(Some(8192), 40_960));
    let run = hx_on(&server, "qwen3:8b").run_args(&["models"]);
    run.assert_code(0);
    assert_eq!(server.count("POST", "/api/show"), 2, "{}", run.dump());
    let row = run
        .stdout
        .lines()
        .find(|l| l.contains("llama3.2:3b"))
        .unwrap_or_else(|| panic!("{}", run.dump()));
    for part in [
        "8,192",
        "/api/show num_ctx",
        "context_length 40,960",
        "parameter_size 8.2B",
    ] {
        assert!(row.contains(part), "{part:?} not in {row:?}");
    }
}
