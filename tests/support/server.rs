//! A scripted fake of an OpenAI-compatible chat-completions server that streams in DeepSeek's shape.
//!
//! Plain std (threads + `TcpListener`) so tests stay ordinary `#[test]` fns and a benchmark can
//! include this file by path. Each connection gets one request and one scripted reply, then closes.
#![allow(dead_code)]

use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Model name the fake reports in DeepSeek-style chunks.
pub const MODEL: &str = "deepseek-v4-flash";
/// Model name the fake reports in `.ollama()` chunks.
pub const OLLAMA_MODEL: &str = "qwen3:8b";
/// Body of the 500 sent once the script is used up.
pub const EXHAUSTED_BODY: &str =
    r#"{"error":{"message":"fake server: no scripted reply left","type":"test"}}"#;
/// Pause between the two halves of a split event: long enough that they arrive as separate reads.
const SPLIT_PAUSE: Duration = Duration::from_millis(5);
const DEFAULT_REASONING: &str = "The user wants a direct answer. I will keep it short.";
const TOOL_REASONING: &str = "I should look at the workspace with a tool before answering.";

/// One scripted tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl Call {
    pub fn new(id: &str, name: &str, arguments: &str) -> Self {
        Call {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

#[derive(Clone, Debug)]
enum Kind {
    Stream,
    Status { code: u16, body: String },
    StreamError(Value),
    Raw(Vec<String>),
    Hang,
}

/// One scripted response. Build with the constructors, refine with the chainable methods.
#[derive(Clone, Debug)]
pub struct Reply {
    kind: Kind,
    reasoning: Option<String>,
    content: Option<String>,
    calls: Vec<Call>,
    /// (prompt, cache hit, completion) tokens.
    usage: (u64, u64, u64),
    keep_alives: usize,
    finish_reason: Option<String>,
    ollama: bool,
    openai_usage: bool,
    trailing_blank_line: bool,
    done: bool,
    cut_after: Option<usize>,
    delay: Duration,
    event_delay: Duration,
    headers: Vec<(String, String)>,
}

impl Reply {
    fn base(kind: Kind) -> Self {
        Reply {
            kind,
            reasoning: None,
            content: None,
            calls: Vec::new(),
            usage: (1200, 1024, 150),
            keep_alives: 0,
            finish_reason: None,
            ollama: false,
            openai_usage: false,
            trailing_blank_line: true,
            done: true,
            cut_after: None,
            delay: Duration::ZERO,
            event_delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }

    /// Reasoning then `answer`, finish `stop`.
    pub fn text(answer: &str) -> Self {
        let mut r = Self::base(Kind::Stream);
        r.reasoning = Some(DEFAULT_REASONING.into());
        r.content = Some(answer.into());
        r
    }

    /// Reasoning then the calls one after the other, finish `tool_calls`.
    pub fn tool_calls(calls: Vec<Call>) -> Self {
        let mut r = Self::base(Kind::Stream);
        r.reasoning = Some(TOOL_REASONING.into());
        r.calls = calls;
        r
    }

    /// A plain non-stream response (`content-type: application/json`) with this status and body.
    pub fn status(code: u16, body: &str) -> Self {
        Self::base(Kind::Status {
            code,
            body: body.into(),
        })
    }

    /// A 200 stream whose second event is `data: {"error": <error>}`, then the stream ends.
    pub fn stream_error(error: Value) -> Self {
        Self::base(Kind::StreamError(error))
    }

    /// Exactly these bytes, one HTTP chunk per event (never split, no `[DONE]` added).
    pub fn raw_sse(events: Vec<String>) -> Self {
        Self::base(Kind::Raw(events))
    }

    /// Headers of a 200 stream, then silence until the server is dropped.
    pub fn hang() -> Self {
        Self::base(Kind::Hang)
    }

    /// Text streamed before the tool calls (or the answer, for `text`).
    pub fn with_content(mut self, text: &str) -> Self {
        self.content = Some(text.into());
        self
    }

    pub fn with_reasoning(mut self, text: &str) -> Self {
        self.reasoning = Some(text.into());
        self
    }

    /// No reasoning chunks and no `reasoning_content` key anywhere.
    pub fn without_reasoning(mut self) -> Self {
        self.reasoning = None;
        self
    }

    /// Token counts for the final usage object; reasoning tokens are derived from the reasoning text.
    pub fn with_usage(mut self, prompt: u64, cache_hit: u64, completion: u64) -> Self {
        self.usage = (prompt, cache_hit, completion);
        self
    }

    /// `n` extra `: keep-alive` comments before the first data event.
    pub fn keep_alives(mut self, n: usize) -> Self {
        self.keep_alives = n;
        self
    }

    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish_reason = Some(reason.into());
        self
    }

    /// Ollama's shape: no reasoning, each call whole in one chunk, usage (without cache fields) on
    /// the finish chunk, no `logprobs`/`usage: null` keys.
    pub fn ollama(mut self) -> Self {
        self.ollama = true;
        self
    }

    /// OpenAI's shape: no usage key on choice chunks, then a `"choices":[]` chunk carrying usage.
    pub fn openai_usage(mut self) -> Self {
        self.openai_usage = true;
        self
    }

    /// The last event ends right after its data (no `\n\n`) and the stream closes.
    pub fn no_trailing_blank_line(mut self) -> Self {
        self.trailing_blank_line = false;
        self
    }

    pub fn no_done(mut self) -> Self {
        self.done = false;
        self
    }

    /// Send `n` data events (comments don't count), then drop the connection without the 0-chunk.
    pub fn cut_after_events(mut self, n: usize) -> Self {
        self.cut_after = Some(n);
        self
    }

    /// Wait before sending the response headers.
    pub fn delay(mut self, d: Duration) -> Self {
        self.delay = d;
        self
    }

    /// Wait between events.
    pub fn event_delay(mut self, d: Duration) -> Self {
        self.event_delay = d;
        self
    }

    /// Extra response header (any reply kind), e.g. `Retry-After: 0`.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The SSE events of a stream reply, each as `(bytes, is_data_event)`.
    fn events(&self, id: &str, created: u64) -> Vec<(String, bool)> {
        let chunk = |delta: &str, finish: Option<&str>, usage: Option<&str>| {
            let finish = finish.map_or_else(|| "null".to_string(), js);
            let (model, fp, logprobs) = if self.ollama {
                (OLLAMA_MODEL, "fp_ollama", "")
            } else {
                (MODEL, "fp_test", r#","logprobs":null"#)
            };
            let usage = usage
                .map(|u| format!(r#","usage":{u}"#))
                .unwrap_or_default();
            let json = format!(
                r#"{{"id":{},"object":"chat.completion.chunk","created":{created},"model":"{model}","system_fingerprint":"{fp}","choices":[{{"index":0,"delta":{delta}{logprobs},"finish_reason":{finish}}}]{usage}}}"#,
                js(id)
            );
            (format!("data: {json}\n\n"), true)
        };
        // Ollama and OpenAI-style chunks carry no `usage` key until the end; DeepSeek sends null.
        let mid_usage = if self.ollama || self.openai_usage {
            None
        } else {
            Some("null")
        };
        let keep_alive = || (": keep-alive\n\n".to_string(), false);
        let reasoning = self.reasoning.as_deref().filter(|_| !self.ollama);
        let mut ev: Vec<(String, bool)> = (0..self.keep_alives).map(|_| keep_alive()).collect();

        if let Kind::StreamError(err) = &self.kind {
            ev.push(chunk(
                r#"{"role":"assistant","content":null}"#,
                None,
                mid_usage,
            ));
            ev.push((
                format!("data: {}\n\n", serde_json::json!({ "error": err })),
                true,
            ));
            return ev;
        }
        if !self.ollama {
            let role = match reasoning {
                Some(_) => r#"{"role":"assistant","content":null,"reasoning_content":""}"#,
                None => r#"{"role":"assistant","content":null}"#,
            };
            ev.push(chunk(role, None, mid_usage));
        }
        if let Some(text) = reasoning {
            for piece in pieces(text, 2) {
                let delta = format!(r#"{{"content":null,"reasoning_content":{}}}"#, js(&piece));
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        if !self.ollama {
            ev.push(keep_alive());
        }
        if let Some(text) = &self.content {
            for piece in pieces(text, 2) {
                let delta = match (self.ollama, reasoning) {
                    (true, _) => format!(r#"{{"role":"assistant","content":{}}}"#, js(&piece)),
                    (false, Some(_)) => {
                        format!(r#"{{"content":{},"reasoning_content":null}}"#, js(&piece))
                    }
                    (false, None) => format!(r#"{{"content":{}}}"#, js(&piece)),
                };
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        for (i, call) in self.calls.iter().enumerate() {
            let (id, name) = (js(&call.id), js(&call.name));
            if self.ollama {
                let args = js(&call.arguments);
                let delta = format!(
                    r#"{{"role":"assistant","content":"","tool_calls":[{{"id":{id},"index":{i},"type":"function","function":{{"name":{name},"arguments":{args}}}}}]}}"#
                );
                ev.push(chunk(&delta, None, mid_usage));
                continue;
            }
            let first = format!(
                r#"{{"tool_calls":[{{"index":{i},"id":{id},"type":"function","function":{{"name":{name},"arguments":""}}}}]}}"#
            );
            ev.push(chunk(&first, None, mid_usage));
            for piece in pieces(&call.arguments, 3) {
                let delta = format!(
                    r#"{{"tool_calls":[{{"index":{i},"function":{{"arguments":{}}}}}]}}"#,
                    js(&piece)
                );
                ev.push(chunk(&delta, None, mid_usage));
            }
        }
        let default_finish = if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        let finish = self.finish_reason.as_deref().unwrap_or(default_finish);
        let final_delta = if self.ollama {
            r#"{"role":"assistant","content":""}"#
        } else {
            r#"{"content":""}"#
        };
        let usage = self.usage_json();
        if self.openai_usage {
            ev.push(chunk(final_delta, Some(finish), None));
            let model = if self.ollama { OLLAMA_MODEL } else { MODEL };
            let json = format!(
                r#"{{"id":{},"object":"chat.completion.chunk","created":{created},"model":"{model}","choices":[],"usage":{usage}}}"#,
                js(id)
            );
            ev.push((format!("data: {json}\n\n"), true));
        } else {
            ev.push(chunk(final_delta, Some(finish), Some(&usage)));
        }
        if self.done {
            ev.push(("data: [DONE]\n\n".into(), true));
        }
        if !self.trailing_blank_line {
            if let Some(last) = ev.last_mut() {
                last.0.truncate(last.0.trim_end_matches('\n').len());
            }
        }
        ev
    }

    fn usage_json(&self) -> String {
        let (p, h, c) = self.usage;
        let reasoning_chars = self
            .reasoning
            .as_deref()
            .filter(|_| !self.ollama)
            .map_or(0, |r| r.chars().count());
        // Roughly four characters per token, never more than the completion itself.
        let r = (reasoning_chars as u64).div_ceil(4).min(c);
        let t = p + c;
        if self.ollama {
            format!(r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t}}}"#)
        } else if self.openai_usage {
            format!(
                r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":{h}}},"completion_tokens_details":{{"reasoning_tokens":{r}}}}}"#
            )
        } else {
            let miss = p.saturating_sub(h);
            format!(
                r#"{{"prompt_tokens":{p},"completion_tokens":{c},"total_tokens":{t},"prompt_tokens_details":{{"cached_tokens":{h}}},"prompt_cache_hit_tokens":{h},"prompt_cache_miss_tokens":{miss},"completion_tokens_details":{{"reasoning_tokens":{r}}}}}"#
            )
        }
    }
}

/// A JSON string literal.
fn js(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Splits `s` on char boundaries into at least `min` pieces of about 10 chars. Strings shorter
/// than `min` chars are padded with empty pieces so the piece-count guarantee always holds.
fn pieces(s: &str, min: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let n = min.max(chars.len().div_ceil(10));
    let size = chars.len().div_ceil(n).max(1);
    let mut out: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    while out.len() < min {
        out.push(String::new());
    }
    out
}

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: String,
    /// The request target as sent, query string included.
    pub path: String,
    /// Names lowercased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// Parsed body, `Value::Null` if it was not JSON.
    pub body: Value,
    pub raw_body: String,
    /// When the request had been read completely.
    pub arrived: Instant,
    /// When the server stopped writing the response (None while still responding).
    pub finished: Option<Instant>,
}

impl Recorded {
    /// First header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
    responses: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panicking connection thread must not take the whole harness down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running fake. Dropping it stops accepting and releases hung replies.
pub struct FakeServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

impl FakeServer {
    pub fn start(replies: Vec<Reply>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake server: local_addr");
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            responses: AtomicU64::new(0),
        });
        let s = shared.clone();
        let accept = thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(stream) = conn {
                    let s = s.clone();
                    thread::spawn(move || serve(stream, &s));
                }
            }
        });
        FakeServer {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// Base URL, e.g. `http://127.0.0.1:41234`; the client appends `/chat/completions`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Every request received so far (all paths), in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Scripted replies not yet used.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.replies).len()
    }

    /// True once at least `n` requests were recorded, false if `timeout` passed first.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if lock(&self.shared.requests).len() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept() so the thread sees the flag; if even that fails, detach.
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)).is_ok() {
            if let Some(h) = self.accept.take() {
                let _ = h.join();
            }
        }
    }
}

/// Sleeps `d` in small steps; false if the server was dropped meanwhile.
fn pause(shared: &Shared, d: Duration) -> bool {
    let deadline = Instant::now() + d;
    while Instant::now() < deadline {
        if shared.stop.load(Ordering::SeqCst) {
            return false;
        }
        thread::sleep((deadline - Instant::now()).min(Duration::from_millis(10)));
    }
    !shared.stop.load(Ordering::SeqCst)
}

fn serve(stream: TcpStream, shared: &Shared) {
    // Bounded I/O so a stuck client can never pin a thread (or a test) forever.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    let _ = stream.set_nodelay(true);
    let Some((method, path, headers, raw)) = read_request(&stream) else {
        return;
    };
    let raw_body = String::from_utf8_lossy(&raw).into_owned();
    let body = serde_json::from_str(&raw_body).unwrap_or(Value::Null);
    let route = path.split('?').next().unwrap_or("").to_string();
    let index = {
        let mut reqs = lock(&shared.requests);
        let arrived = Instant::now();
        reqs.push(Recorded {
            method: method.clone(),
            path,
            headers,
            body,
            raw_body,
            arrived,
            finished: None,
        });
        reqs.len() - 1
    };
    let mut out = &stream;
    if method == "POST" && route.ends_with("/chat/completions") {
        let next = lock(&shared.replies).pop_front();
        match next {
            Some(reply) => respond(&mut out, &reply, shared),
            None => {
                let _ = plain(&mut out, 500, EXHAUSTED_BODY, &[]);
            }
        }
    } else {
        let body = format!(
            r#"{{"error":{{"message":"fake server: no route for {method} {route}","type":"test"}}}}"#
        );
        let _ = plain(&mut out, 404, &body, &[]);
    }
    if let Some(r) = lock(&shared.requests).get_mut(index) {
        r.finished = Some(Instant::now());
    }
}

type Request = (String, String, Vec<(String, String)>, Vec<u8>);

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next()?.to_string(), parts.next()?.to_string());
    let mut headers = Vec::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end_matches(['\r', '\n']);
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let get = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mut body = Vec::new();
    if get("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        loop {
            line.clear();
            r.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?.trim(), 16).ok()?;
            if size == 0 {
                // Trailers, up to the blank line.
                while {
                    line.clear();
                    r.read_line(&mut line).ok()? > 0 && !line.trim().is_empty()
                } {}
                break;
            }
            let start = body.len();
            body.resize(start + size, 0);
            r.read_exact(&mut body[start..]).ok()?;
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf).ok()?;
        }
    } else if let Some(len) = get("content-length") {
        body.resize(len.trim().parse().ok()?, 0);
        r.read_exact(&mut body).ok()?;
    }
    Some((method, path, headers, body))
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

fn plain(
    out: &mut &TcpStream,
    code: u16,
    body: &str,
    extra: &[(String, String)],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        reason(code),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    head.push_str(body);
    out.write_all(head.as_bytes())?;
    out.flush()
}

fn chunk(out: &mut &TcpStream, bytes: &[u8]) -> std::io::Result<()> {
    // A zero-length chunk would end the body, so empty pieces are simply not sent.
    if bytes.is_empty() {
        return Ok(());
    }
    let mut buf = format!("{:x}\r\n", bytes.len()).into_bytes();
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(b"\r\n");
    out.write_all(&buf)?;
    out.flush()
}

fn respond(out: &mut &TcpStream, reply: &Reply, shared: &Shared) {
    if !pause(shared, reply.delay) {
        return;
    }
    if let Kind::Status { code, body } = &reply.kind {
        let _ = plain(out, *code, body, &reply.headers);
        return;
    }
    let _ = stream_reply(out, reply, shared);
}

fn stream_reply(out: &mut &TcpStream, reply: &Reply, shared: &Shared) -> std::io::Result<()> {
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\nconnection: close\r\ntransfer-encoding: chunked\r\n",
    );
    for (k, v) in &reply.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    out.flush()?;
    let n = shared.responses.fetch_add(1, Ordering::SeqCst) + 1;
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let id = format!("fake-{n:04}-{created}");
    let (events, split) = match &reply.kind {
        Kind::Hang => {
            while pause(shared, Duration::from_millis(50)) {}
            return Ok(());
        }
        Kind::Raw(events) => (events.iter().map(|e| (e.clone(), true)).collect(), false),
        _ => (reply.events(&id, created), true),
    };
    let mut data_sent = 0;
    for (i, (bytes, is_data)) in events.iter().enumerate() {
        if i > 0 && !pause(shared, reply.event_delay) {
            return Ok(());
        }
        let bytes = bytes.as_bytes();
        // Every third event goes out in two chunks (possibly mid UTF-8 char) so the client's
        // SSE parser has to buffer partial lines and bytes.
        if split && i % 3 == 2 && bytes.len() >= 2 {
            let (a, b) = bytes.split_at(bytes.len() / 2);
            chunk(out, a)?;
            thread::sleep(SPLIT_PAUSE);
            chunk(out, b)?;
        } else {
            chunk(out, bytes)?;
        }
        if *is_data {
            data_sent += 1;
            if reply.cut_after == Some(data_sent) {
                // Dies mid-stream: no terminating 0-chunk.
                return out.shutdown(Shutdown::Both);
            }
        }
    }
    out.write_all(b"0\r\n\r\n")?;
    out.flush()
}
