//! Self-tests of the fake server's HTTP behaviour: status replies, routing, request recording,
//! timing and shutdown, over raw HTTP/1.1 so nothing in between hides a mistake.

use crate::support::raw_http::{chat, exchange, post, Resp};
use crate::support::{FakeServer, Reply};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn text_of(r: &Resp) -> String {
    let events = r.events();
    let data = events
        .iter()
        .filter_map(|e| e.strip_prefix("data: {").map(|j| format!("{{{j}")));
    let deltas = data.map(|j| serde_json::from_str::<Value>(&j).expect("chunk JSON"));
    deltas
        .filter_map(|d| {
            d["choices"][0]["delta"]["content"]
                .as_str()
                .map(String::from)
        })
        .collect()
}

#[test]
fn status_replies_carry_headers_then_script_exhaustion_is_500() {
    let body = r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#;
    let server = FakeServer::start(vec![
        Reply::status(429, body).with_header("Retry-After", "0")
    ]);
    let r = chat(&server);
    assert_eq!(r.status, 429);
    assert_eq!(
        r.headers,
        [
            ("content-type", "application/json"),
            ("content-length", "62"),
            ("connection", "close"),
            ("Retry-After", "0")
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()))
    );
    assert_eq!(r.body, body);
    let r = chat(&server);
    assert_eq!(r.status, 500);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(
        r.body,
        r#"{"error":{"message":"fake server: no scripted reply left","type":"test"}}"#
    );
    assert_eq!(server.remaining(), 0);
}

#[test]
fn other_paths_and_methods_are_404_and_do_not_consume_replies() {
    let server = FakeServer::start(vec![Reply::text("kept for later")]);
    assert_eq!(post(&server, "/models", "{}").status, 404);
    assert_eq!(
        exchange(
            &server,
            b"GET /chat/completions HTTP/1.1\r\nHost: x\r\n\r\n"
        )
        .status,
        404
    );
    assert_eq!(server.remaining(), 1);
    assert_eq!(
        post(&server, "/v1/chat/completions?beta=1", "{}").status,
        200
    );
    assert_eq!(server.remaining(), 0);
    let paths: Vec<String> = server
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        paths,
        [
            "POST /models",
            "GET /chat/completions",
            "POST /v1/chat/completions?beta=1"
        ]
    );
}

#[test]
fn requests_are_recorded_with_lowercased_headers_and_json_body() {
    let server = FakeServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
    ]);
    let body = r#"{"model":"deepseek-v4-flash","stream":true,"messages":[{"role":"user","content":"hi ✓"}]}"#;
    chat(&server);
    post(&server, "/chat/completions", body);
    let chunked = "POST /chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nX-Trace: A\r\n\r\n5\r\nnot j\r\n4;ext=1\r\nson!\r\n0\r\n\r\n";
    exchange(&server, chunked.as_bytes());
    assert!(server.wait_for_requests(3, Duration::from_secs(5)));
    assert!(!server.wait_for_requests(4, Duration::from_millis(50)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let r = &reqs[1];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/chat/completions")
    );
    assert_eq!(r.body["messages"][0]["content"], "hi ✓");
    assert_eq!(r.raw_body, body);
    assert_eq!(r.header("authorization"), Some("Bearer test-key"));
    assert_eq!(r.header("Content-Type"), Some("application/json"));
    let names: Vec<&str> = r.headers.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["host", "authorization", "content-type", "content-length"]
    );
    assert_eq!(
        (reqs[2].raw_body.as_str(), &reqs[2].body),
        ("not json!", &Value::Null)
    );
    assert_eq!(reqs[2].header("x-trace"), Some("A"));
    for r in &reqs {
        let finished = r
            .finished
            .expect("finished is set once the response is written");
        assert!(finished >= r.arrived);
    }
    assert!(reqs[0].arrived <= reqs[1].arrived && reqs[1].arrived <= reqs[2].arrived);
}

#[test]
fn delays_hold_back_headers_and_events() {
    let server = FakeServer::start(vec![
        Reply::text("x").delay(Duration::from_millis(300)),
        Reply::text("y")
            .without_reasoning()
            .event_delay(Duration::from_millis(60)),
    ]);
    let t = Instant::now();
    assert_eq!(chat(&server).status, 200);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    let t = Instant::now();
    let r = chat(&server);
    // role, keep-alive, 2 text pieces, finish, [DONE]: 5 gaps.
    assert_eq!(r.events().len(), 6);
    assert!(
        t.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn hang_sends_headers_then_nothing_until_the_server_is_dropped() {
    let server = FakeServer::start(vec![Reply::hang()]);
    let mut s = TcpStream::connect(server.addr()).expect("connect");
    s.write_all(b"POST /chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
        .expect("send");
    s.set_read_timeout(Some(Duration::from_millis(400)))
        .expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n @ 1..) = s.read(&mut buf) {
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8(got).expect("utf-8");
    assert!(
        text.starts_with("HTTP/1.1 200 OK\r\n") && text.ends_with("\r\n\r\n"),
        "{text:?}"
    );
    assert!(server.requests()[0].finished.is_none());
    let t = Instant::now();
    drop(server);
    assert!(
        t.elapsed() < Duration::from_secs(2),
        "drop took {:?}",
        t.elapsed()
    );
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .expect("timeout");
    assert_eq!(s.read(&mut buf).expect("EOF after drop, not a timeout"), 0);
}

#[test]
fn concurrent_servers_and_reply_order_are_independent() {
    let a = FakeServer::start(vec![Reply::text("from a 1"), Reply::text("from a 2")]);
    let b = FakeServer::start(vec![Reply::text("from b")]);
    assert_eq!(text_of(&chat(&b)), "from b");
    assert_eq!(text_of(&chat(&a)), "from a 1");
    assert_eq!(text_of(&chat(&a)), "from a 2");
    assert_ne!(a.url(), b.url());
    assert!(a.url().starts_with("http://127.0.0.1:"));
}
