//! A scripted fake of an OpenAI-compatible chat-completions server that streams in DeepSeek's shape.
//!
//! Plain std (threads + `TcpListener`) so tests stay ordinary `#[test]` fns and a benchmark can
//! include this file by path. Each connection gets one request and one scripted reply, then closes.
#![allow(dead_code)]

use super::prefix_cache::PrefixCache;
use super::reply::Kind;
pub use super::reply::{Call, Reply, MODEL, OLLAMA_MODEL};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Body of the 500 sent once the script is used up.
pub const EXHAUSTED_BODY: &str =
    r#"{"error":{"message":"fake server: no scripted reply left","type":"test"}}"#;
/// Pause between the two halves of a split event: long enough that they arrive as separate reads.
const SPLIT_PAUSE: Duration = Duration::from_millis(5);

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

/// Makes the reply to a request from the request itself (see [`FakeServer::start_with`]).
pub type Responder = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// A fixed answer to one method and path (see [`FakeServer::answer`]).
#[derive(Clone)]
struct Canned {
    method: String,
    path: String,
    status: u16,
    body: String,
    delay: Duration,
    /// Never answers: the connection is held until the server is dropped.
    hang: bool,
}

struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    /// Answers that win over the fake's own routes.
    canned: Mutex<Vec<Canned>>,
    responder: Option<Responder>,
    requests: Mutex<Vec<Recorded>>,
    stop: AtomicBool,
    responses: AtomicU64,
    /// Counts each streamed reply's usage as DeepSeek's prefix cache would.
    cache: Option<Arc<PrefixCache>>,
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
        Self::start_shared(replies, None, None)
    }

    /// [`FakeServer::start`] whose replies report the tokens DeepSeek's prefix cache would
    /// (see [`PrefixCache`]): prompt, hit and miss tokens of each request, whatever the
    /// replies said.
    pub fn start_cached(replies: Vec<Reply>) -> FakeServer {
        Self::start_shared(replies, None, Some(Arc::default()))
    }

    /// [`FakeServer::start_with`] with the prefix cache counting the usage.
    pub fn start_cached_with(
        respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static,
    ) -> FakeServer {
        Self::start_shared(Vec::new(), Some(Box::new(respond)), Some(Arc::default()))
    }

    /// The prefix cache of a server started with one.
    pub fn cache(&self) -> &PrefixCache {
        self.shared
            .cache
            .as_deref()
            .expect("a server started with a prefix cache")
    }

    /// A server that answers each chat request with what `respond` makes of it, for runs whose
    /// requests are not known in advance (a benchmark whose compactions come where the sizes
    /// say).
    pub fn start_with(respond: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FakeServer {
        Self::start_shared(Vec::new(), Some(Box::new(respond)), None)
    }

    fn start_shared(
        replies: Vec<Reply>,
        responder: Option<Responder>,
        cache: Option<Arc<PrefixCache>>,
    ) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake server: local_addr");
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            canned: Mutex::new(Vec::new()),
            responder,
            requests: Mutex::new(Vec::new()),
            stop: AtomicBool::new(false),
            responses: AtomicU64::new(0),
            cache,
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

    /// The chat requests received so far, in arrival order: without the `GET /models` that
    /// `hx acp` sends when a session opens (for the models it offers).
    pub fn completions(&self) -> Vec<Recorded> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.method == "POST" && r.path.ends_with("/chat/completions"))
            .cloned()
            .collect()
    }

    /// Answers `method path` (the path as sent, without its query) with `status` and the JSON
    /// `body` from now on, instead of the fake's own routes: the shapes a server answers
    /// besides chat completions (llama.cpp's `/props`, Ollama's `/api/show`, ...).
    pub fn answer(&self, method: &str, path: &str, status: u16, body: &str) -> &Self {
        self.answer_after(method, path, Duration::ZERO, status, body)
    }

    /// [`FakeServer::answer`], `delay` after the request came.
    pub fn answer_after(
        &self,
        method: &str,
        path: &str,
        delay: Duration,
        status: u16,
        body: &str,
    ) -> &Self {
        self.can(Canned {
            method: method.into(),
            path: path.into(),
            status,
            body: body.into(),
            delay,
            hang: false,
        })
    }

    /// Never answers `method path`: the connection stays open, silent, until the server is
    /// dropped.
    pub fn never_answer(&self, method: &str, path: &str) -> &Self {
        self.can(Canned {
            method: method.into(),
            path: path.into(),
            status: 0,
            body: String::new(),
            delay: Duration::ZERO,
            hang: true,
        })
    }

    fn can(&self, c: Canned) -> &Self {
        let mut canned = lock(&self.shared.canned);
        canned.retain(|o| !(o.method == c.method && o.path == c.path));
        canned.push(c);
        self
    }

    /// How many requests of `method` to `path` (without its query) came so far.
    pub fn count(&self, method: &str, path: &str) -> usize {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.method == method && r.path.split('?').next() == Some(path))
            .count()
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

/// What `GET /models` answers, in OpenAI's (and DeepSeek's) shape.
pub const MODELS_BODY: &str = r#"{"object":"list","data":[{"id":"deepseek-flash","object":"model","owned_by":"deepseek"},{"id":"deepseek-v4-pro","object":"model","owned_by":"deepseek"}]}"#;

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
    let canned = lock(&shared.canned)
        .iter()
        .find(|c| c.method == method && c.path == route)
        .cloned();
    let chat = canned.is_none() && method == "POST" && route.ends_with("/chat/completions");
    let (index, made) = {
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
        let made = shared.responder.as_ref().and_then(|f| reqs.last().map(f));
        // Taken while the request is recorded: two requests at once get the replies in the
        // order `requests()` lists them (popped later, the second could take the first's).
        let made = match made {
            Some(m) => Some(m),
            None if chat => lock(&shared.replies).pop_front(),
            None => None,
        };
        (reqs.len() - 1, made)
    };
    let mut out = &stream;
    if let Some(c) = canned {
        if c.hang {
            while pause(shared, Duration::from_millis(50)) {}
        } else if pause(shared, c.delay) {
            let _ = plain(&mut out, c.status, &c.body, &[]);
        }
    } else if chat {
        let mut next = made;
        if let Some(cache) = &shared.cache {
            let recorded = lock(&shared.requests).get(index).cloned();
            next = next.map(|reply| match (recorded, &reply.kind) {
                (Some(r), Kind::Stream) => cache.answer(&r, reply),
                _ => reply,
            });
        }
        match next {
            Some(reply) => respond(&mut out, &reply, shared),
            None => {
                let _ = plain(&mut out, 500, EXHAUSTED_BODY, &[]);
            }
        }
    } else if method == "GET" && route.ends_with("/models") {
        let _ = plain(&mut out, 200, MODELS_BODY, &[]);
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
            if !reply.unpaced {
                thread::sleep(SPLIT_PAUSE);
            }
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
