//! Self-tests of the fake chat-completions server, over raw HTTP/1.1 on a TcpStream.
//!
//! They pin the exact bytes the fake sends, so a change to the harness that would silently weaken
//! the hx integration tests (wrong shape, missing split, lost event) fails here first.

use crate::support::raw_http::{chat, Resp};
use crate::support::{Call, FakeServer, Reply};
use serde_json::{json, Value};

/// The JSON of a `data: ` event.
fn data(event: &str) -> Value {
    let json = event
        .strip_prefix("data: ")
        .unwrap_or_else(|| panic!("not a data event: {event:?}"));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("bad JSON {json:?}: {e}"))
}

fn delta(event: &str) -> Value {
    data(event)["choices"][0]["delta"].clone()
}

fn assert_sse_headers(r: &Resp) {
    assert_eq!(r.status, 200);
    let names: Vec<&str> = r.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        [
            "content-type",
            "cache-control",
            "connection",
            "transfer-encoding"
        ]
    );
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(r.header("cache-control"), Some("no-cache"));
    assert_eq!(r.header("connection"), Some("close"));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
}

/// Consumes consecutive events at `*i` whose delta satisfies `take`, returning their pieces.
fn take_pieces(ev: &[&str], i: &mut usize, take: impl Fn(&Value) -> Option<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(p) = ev
        .get(*i)
        .filter(|e| e.starts_with("data: {"))
        .and_then(|e| take(&delta(e)))
    {
        out.push(p);
        *i += 1;
    }
    out
}

#[test]
fn text_reply_streams_deepseek_events_in_order() {
    let (reasoning, text) = (
        "Think first. Then answer.",
        "Hello, wörld! Ünïcödé ✓ is fine here.",
    );
    let server = FakeServer::start(vec![Reply::text(text)
        .with_reasoning(reasoning)
        .with_usage(100, 64, 20)]);
    let r = chat(&server);
    assert_sse_headers(&r);
    assert!(r.terminated, "stream must end with the 0-length chunk");
    let ev = r.events();
    let first = data(ev[0]);
    let (id, created) = (
        first["id"].as_str().expect("id").to_string(),
        first["created"].as_u64().expect("created"),
    );
    assert_eq!(
        ev[0],
        format!(
            r#"data: {{"id":"{id}","object":"chat.completion.chunk","created":{created},"model":"deepseek-v4-flash","system_fingerprint":"fp_test","choices":[{{"index":0,"delta":{{"role":"assistant","content":null,"reasoning_content":""}},"logprobs":null,"finish_reason":null}}],"usage":null}}"#
        )
    );
    let mut i = 1;
    let thoughts = take_pieces(&ev, &mut i, |d| {
        let p = d["reasoning_content"].as_str()?.to_string();
        assert_eq!(*d, json!({"content": null, "reasoning_content": p}));
        Some(p)
    });
    assert!(
        thoughts.len() >= 2,
        "reasoning in >= 2 pieces: {thoughts:?}"
    );
    assert_eq!(thoughts.concat(), reasoning);
    assert_eq!(ev[i], ": keep-alive");
    i += 1;
    let answer = take_pieces(&ev, &mut i, |d| {
        let p = d["content"].as_str().filter(|p| !p.is_empty())?.to_string();
        assert_eq!(*d, json!({"content": p, "reasoning_content": null}));
        Some(p)
    });
    assert!(answer.len() >= 2, "text in >= 2 pieces: {answer:?}");
    assert_eq!(answer.concat(), text);
    let fin = data(ev[i]);
    assert_eq!(
        fin["choices"][0],
        json!({"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"})
    );
    assert_eq!(
        fin["usage"],
        json!({"prompt_tokens":100,"completion_tokens":20,"total_tokens":120,
               "prompt_tokens_details":{"cached_tokens":64},"prompt_cache_hit_tokens":64,
               "prompt_cache_miss_tokens":36,"completion_tokens_details":{"reasoning_tokens":7}})
    );
    assert_eq!(ev[i + 1], "data: [DONE]");
    assert_eq!(ev.len(), i + 2, "nothing after [DONE]");
    assert!(r.body.ends_with("data: [DONE]\n\n"));
    for e in ev.iter().filter(|e| e.starts_with("data: {")) {
        let d = data(e);
        assert_eq!(
            (d["id"].as_str(), d["created"].as_u64()),
            (Some(id.as_str()), Some(created))
        );
        assert_eq!(d["object"], "chat.completion.chunk");
        assert_eq!(d["model"], "deepseek-v4-flash");
        assert_eq!(d["system_fingerprint"], "fp_test");
    }
    // Some events must straddle HTTP chunks so the client's parser has to buffer.
    assert!(
        r.chunks.len() > ev.len(),
        "{} chunks for {} events",
        r.chunks.len(),
        ev.len()
    );
    assert!(
        r.chunks.iter().any(|c| !c.ends_with(b"\n\n")),
        "no event was split"
    );
}

#[test]
fn tool_call_fragments_carry_id_and_name_only_first() {
    let calls = vec![
        Call::new("call_1", "read_file", r#"{"path":"a.txt"}"#),
        Call::new(
            "call_2",
            "bash",
            r#"{"command":"echo \"hi\" && ls -la src/"}"#,
        ),
        Call::new("call_3", "glob", "{}"),
    ];
    let server = FakeServer::start(vec![
        Reply::tool_calls(calls.clone()).with_content("Let me look.")
    ]);
    let r = chat(&server);
    assert_sse_headers(&r);
    let ev = r.events();
    let mut i = 1;
    let thoughts = take_pieces(&ev, &mut i, |d| {
        d["reasoning_content"].as_str().map(String::from)
    });
    assert!(thoughts.len() >= 2);
    assert_eq!(ev[i], ": keep-alive");
    i += 1;
    let text = take_pieces(&ev, &mut i, |d| {
        d["content"]
            .as_str()
            .filter(|p| !p.is_empty())
            .map(String::from)
    });
    assert_eq!(text.concat(), "Let me look.");
    for (index, call) in calls.iter().enumerate() {
        assert_eq!(
            delta(ev[i]),
            json!({"tool_calls":[{"index":index,"id":call.id,"type":"function","function":{"name":call.name,"arguments":""}}]})
        );
        i += 1;
        let args = take_pieces(&ev, &mut i, |d| {
            let frag = &d["tool_calls"][0];
            (frag["index"] == index && frag.get("id").is_none()).then_some(())?;
            let p = frag["function"]["arguments"].as_str()?.to_string();
            assert_eq!(
                *d,
                json!({"tool_calls":[{"index":index,"function":{"arguments":p}}]})
            );
            Some(p)
        });
        assert!(
            args.len() >= 3,
            "arguments of {} in >= 3 pieces: {args:?}",
            call.id
        );
        assert_eq!(args.concat(), call.arguments);
    }
    let fin = data(ev[i]);
    assert_eq!(fin["choices"][0]["delta"], json!({"content":""}));
    assert_eq!(fin["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(&ev[i + 1..], ["data: [DONE]"]);
}

#[test]
fn without_reasoning_has_no_reasoning_key_anywhere() {
    let server = FakeServer::start(vec![Reply::text("plain answer here").without_reasoning()]);
    let r = chat(&server);
    assert!(!r.body.contains("reasoning_content"), "{}", r.body);
    let ev = r.events();
    assert_eq!(delta(ev[0]), json!({"role":"assistant","content":null}));
    assert_eq!(ev[1], ": keep-alive");
    assert_eq!(delta(ev[2]), json!({"content":"plain ans"}));
    assert_eq!(delta(ev[3]), json!({"content":"wer here"}));
    assert_eq!(
        data(ev[4])["usage"]["completion_tokens_details"]["reasoning_tokens"],
        0
    );
    assert_eq!(ev.len(), 6);
}

#[test]
fn keep_alives_and_finish_reason_override() {
    let server = FakeServer::start(vec![Reply::text("ok fine")
        .keep_alives(2)
        .finish_reason("insufficient_system_resource")]);
    let ev = chat(&server)
        .events()
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    assert_eq!(&ev[..2], [": keep-alive", ": keep-alive"]);
    assert!(ev[2].starts_with("data: {"));
    assert_eq!(ev.iter().filter(|e| *e == ": keep-alive").count(), 3);
    assert_eq!(
        data(&ev[ev.len() - 2])["choices"][0]["finish_reason"],
        "insufficient_system_resource"
    );
}

#[test]
fn ollama_shape_sends_whole_calls_and_usage_on_finish() {
    let args = r#"{"path":"src/main.rs"}"#;
    let server = FakeServer::start(vec![Reply::tool_calls(vec![Call::new(
        "call_x",
        "read_file",
        args,
    )])
    .ollama()]);
    let r = chat(&server);
    assert!(
        !r.body.contains("reasoning_content") && !r.body.contains("keep-alive"),
        "{}",
        r.body
    );
    let ev = r.events();
    assert_eq!(ev.len(), 3, "{ev:?}");
    let call = data(ev[0]);
    assert_eq!(call["model"], "qwen3:8b");
    assert!(call.get("usage").is_none() && call["choices"][0].get("logprobs").is_none());
    assert_eq!(
        call["choices"][0]["delta"],
        json!({"role":"assistant","content":"","tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"read_file","arguments":args}}]})
    );
    let fin = data(ev[1]);
    assert_eq!(
        fin["choices"][0],
        json!({"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"})
    );
    assert_eq!(
        fin["usage"],
        json!({"prompt_tokens":1200,"completion_tokens":150,"total_tokens":1350})
    );
    assert_eq!(ev[2], "data: [DONE]");
}

#[test]
fn openai_usage_comes_in_its_own_chunk_before_done() {
    let server = FakeServer::start(vec![Reply::text("hi there")
        .with_usage(50, 0, 5)
        .openai_usage()]);
    let ev = chat(&server)
        .events()
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>();
    let n = ev.len();
    let fin = data(&ev[n - 3]);
    assert_eq!(fin["choices"][0]["finish_reason"], "stop");
    assert!(
        fin.get("usage").is_none(),
        "finish chunk must not carry usage: {fin}"
    );
    assert!(
        ev[..n - 2].iter().all(|e| !e.contains("\"usage\"")),
        "no usage key before the usage chunk"
    );
    let usage = data(&ev[n - 2]);
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["id"], fin["id"]);
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens":50,"completion_tokens":5,"total_tokens":55,
               "prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":5}})
    );
    assert_eq!(ev[n - 1], "data: [DONE]");
}

#[test]
fn no_trailing_blank_line_and_no_done() {
    let server = FakeServer::start(vec![
        Reply::text("answer").no_trailing_blank_line(),
        Reply::text("answer").no_done(),
        Reply::text("answer").no_done().no_trailing_blank_line(),
    ]);
    let a = chat(&server);
    assert!(a.terminated);
    assert!(a.body.ends_with("}\n\ndata: [DONE]"), "{:?}", a.body);
    let b = chat(&server);
    assert!(b.terminated && !b.body.contains("[DONE]"));
    assert_eq!(
        data(b.events().last().expect("event"))["choices"][0]["finish_reason"],
        "stop"
    );
    assert!(b.body.ends_with("}\n\n"));
    let c = chat(&server);
    assert!(
        c.body.ends_with(r#""reasoning_tokens":14}}}"#),
        "{:?}",
        c.body
    );
}

#[test]
fn cut_after_events_drops_the_connection_mid_stream() {
    let server = FakeServer::start(vec![
        Reply::text("a longer answer that is cut").cut_after_events(3)
    ]);
    let r = chat(&server);
    assert_sse_headers(&r);
    assert!(
        !r.terminated,
        "a cut stream must not send the 0-length chunk"
    );
    let data_events: Vec<&str> = r
        .events()
        .into_iter()
        .filter(|e| e.starts_with("data:"))
        .collect();
    assert_eq!(data_events.len(), 3);
    assert!(r.body.ends_with("\n\n"), "the last sent event is complete");
    assert!(!r.body.contains("finish_reason\":\"stop") && !r.body.contains("[DONE]"));
}

#[test]
fn stream_error_and_raw_sse() {
    let server = FakeServer::start(vec![
        Reply::stream_error(
            json!({"message":"Model overloaded","type":"server_error","code":"overloaded"}),
        ),
        Reply::raw_sse(vec![
            "data: {\"x\":1}\n\n".into(),
            ": hi\n".into(),
            "\ndata: [DONE]\n\n".into(),
        ]),
    ]);
    let e = chat(&server);
    assert!(e.terminated);
    let ev = e.events();
    assert_eq!(ev.len(), 2);
    assert_eq!(delta(ev[0]), json!({"role":"assistant","content":null}));
    assert_eq!(
        ev[1],
        r#"data: {"error":{"message":"Model overloaded","type":"server_error","code":"overloaded"}}"#
    );
    let raw = chat(&server);
    assert_sse_headers(&raw);
    assert_eq!(raw.body, "data: {\"x\":1}\n\n: hi\n\ndata: [DONE]\n\n");
    assert_eq!(
        raw.chunks.len(),
        3,
        "raw events are sent one chunk each, unsplit"
    );
}
