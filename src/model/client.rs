//! The HTTP client for OpenAI-compatible chat completions (DeepSeek, OpenAI, Ollama, vLLM,
//! llama.cpp, OpenRouter): one streaming request per turn, retried on transient failures.

use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use futures_util::StreamExt;
use reqwest::header::{HeaderMap, CONTENT_TYPE};

use super::accumulate::{Accumulator, MAX_TOOL_CALLS};
use super::retry::{backoff, is_retryable_status, retry_after};
use super::sse::{EventTooLarge, SseEvent, SseParser};
use super::types::Chunk;
use super::{AssistantTurn, ChatModel, ChatRequest, EventSink, ModelError};
use describe::describe_reqwest;

mod describe;
mod probe;

/// How the client connects, waits and retries.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    pub base_url: String,
    /// Sent as `Authorization: Bearer KEY`; `None` sends no Authorization header (local
    /// servers).
    pub api_key: Option<String>,
    pub retries: u32,
    pub retry_base_delay: Duration,
    pub retry_max_delay: Duration,
    pub connect_timeout: Duration,
    /// No bytes at all for this long aborts the attempt.
    pub idle_timeout: Duration,
    /// Keep-alive comments keep a connection alive, but not forever: with no real data for
    /// this long the attempt is aborted.
    pub request_timeout: Duration,
    /// One attempt, from sending the request to the last byte of the response. Events reset
    /// the two timeouts above; nothing extends this one, so a server that trickles data
    /// forever cannot hold a request forever.
    pub max_response_time: Duration,
    /// Bytes one server-sent event (or one line of it) may hold.
    pub max_event_bytes: usize,
    /// Bytes one response body may hold, streamed or not.
    pub max_response_bytes: usize,
    /// Said when a port on this machine refuses the connection, for a provider whose server
    /// the user starts themselves (`is Ollama running? ...`).
    pub refused_hint: Option<String>,
    /// Said after a 401 or 403: where the key came from, for which provider and URL.
    pub auth_hint: Option<String>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            base_url: "https://api.deepseek.com".into(),
            api_key: None,
            retries: 4,
            retry_base_delay: Duration::from_millis(500),
            retry_max_delay: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            request_timeout: Duration::from_secs(600),
            max_response_time: Duration::from_secs(1800),
            max_event_bytes: super::sse::DEFAULT_MAX_EVENT,
            max_response_bytes: 64 * 1024 * 1024,
            refused_hint: None,
            auth_hint: None,
        }
    }
}

/// The chat-completions client.
pub struct OpenAiClient {
    http: reqwest::Client,
    url: String,
    opts: ClientOptions,
}

/// How one attempt failed.
enum AttemptError {
    Fatal(ModelError),
    Retry {
        error: ModelError,
        after: Option<Duration>,
    },
}

fn transport(msg: impl Into<String>) -> AttemptError {
    AttemptError::Retry {
        error: ModelError::Transport(msg.into()),
        after: None,
    }
}

/// A broken limit: the error names the limit and its setting, and is final (see
/// [`ModelError::Limit`] for why it is not retried).
fn limit(what: String, setting: &str) -> AttemptError {
    AttemptError::Fatal(ModelError::Limit(format!(
        "{what} (the limit is [network] {setting})"
    )))
}

fn response_too_large(max: usize) -> AttemptError {
    limit(
        format!("the response is larger than {}", size(max)),
        "max_response_bytes",
    )
}

/// `16 MiB`, `64 KiB` or `1000 bytes`.
fn size(bytes: usize) -> String {
    const KIB: usize = 1024;
    const MIB: usize = 1024 * KIB;
    match bytes {
        b if b >= MIB && b % MIB == 0 => format!("{} MiB", b / MIB),
        b if b >= KIB && b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// Whether requests to `base_url` go over plain HTTP: its scheme is http, and none of the
/// proxies reqwest may take for it (`proxies`: the values of the environment's variables) is
/// reached over HTTPS.
fn is_plain_http(base_url: &str, proxies: &[std::ffi::OsString]) -> bool {
    let scheme = |url: &str, s: &str| {
        url.get(..s.len())
            .is_some_and(|u| u.eq_ignore_ascii_case(s))
    };
    let tls_proxy = proxies
        .iter()
        .any(|p| p.to_str().is_none_or(|p| scheme(p, "https://")));
    scheme(base_url, "http://") && !tls_proxy
}

/// The proxy variables reqwest reads for an http URL.
const HTTP_PROXY_VARS: [&str; 4] = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"];

/// The HTTP client of every request hx makes to a server (the model's, an MCP server's):
/// rustls with ring, hx's user agent, and no redirect followed, since the requests carry keys
/// and headers the user meant for `base_url` alone: an endpoint that moved is a URL to
/// correct, not a hop to take silently.
pub fn http_client(base_url: &str, connect_timeout: Duration) -> Result<reqwest::Client, String> {
    // reqwest is built without a crypto provider (see Cargo.toml); ring is the process's
    // one. An error only means a provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("hx/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none());
    // A plain-HTTP endpoint (a local Ollama, llama.cpp or vLLM) never makes a TLS
    // connection, redirects being off: an empty root store spares every start reading the
    // system's certificates (a hundred and more files, about 2 ms).
    let proxies: Vec<_> = HTTP_PROXY_VARS
        .iter()
        .filter_map(std::env::var_os)
        .collect();
    if is_plain_http(base_url, &proxies) {
        builder = builder.tls_certs_only(std::iter::empty());
    }
    builder
        .build()
        .map_err(|e| format!("cannot build HTTP client: {e}"))
}

/// Bytes of a `/models` answer read; a list of thousands of models (OpenRouter's) fits.
const MAX_MODELS_BYTES: usize = 4 * 1024 * 1024;
/// Models of a `/models` answer kept, and characters of each name.
pub const MAX_MODELS: usize = 10_000;
const MAX_MODEL_NAME: usize = 200;

impl OpenAiClient {
    pub fn new(opts: ClientOptions) -> Result<Self, String> {
        let http = http_client(&opts.base_url, opts.connect_timeout)?;
        let url = format!("{}/chat/completions", opts.base_url.trim_end_matches('/'));
        Ok(OpenAiClient { http, url, opts })
    }

    /// The model names the server's `GET {base}/models` lists (OpenAI's shape, which
    /// DeepSeek, OpenRouter, Ollama, vLLM and llama.cpp's server all serve), in its order.
    /// One attempt: a person is waiting, and the error says what to fix.
    pub async fn list_models(&self) -> Result<Vec<String>, ModelError> {
        let until = tokio::time::Instant::now() + self.opts.request_timeout;
        let (v, url) = self.models_json(until).await?;
        let list = v
            .get("data")
            .or_else(|| v.get("models"))
            .and_then(serde_json::Value::as_array)
            .ok_or_else(|| {
                ModelError::Transport(format!("{url} answered without a \"data\" list"))
            })?;
        Ok(list
            .iter()
            .filter_map(|m| m.get("id").or_else(|| m.get("name"))?.as_str())
            .take(MAX_MODELS)
            .map(|id| crate::text::one_line(id, MAX_MODEL_NAME))
            .collect())
    }

    /// The server's `GET {base}/models` answer as JSON, and the URL asked; an answer that is
    /// not a success is the error, in words that say what to fix. No answer by `until` is one
    /// too.
    async fn models_json(
        &self,
        until: tokio::time::Instant,
    ) -> Result<(serde_json::Value, String), ModelError> {
        let url = format!("{}/models", self.opts.base_url.trim_end_matches('/'));
        let mut rb = self.http.get(&url);
        if let Some(key) = &self.opts.api_key {
            rb = rb.bearer_auth(key);
        }
        let resp = tokio::time::timeout_at(until, rb.send())
            .await
            .map_err(|_| ModelError::Transport(format!("no answer from {url} in time")))?
            .map_err(|e| match self.send_error(&e, &url) {
                AttemptError::Fatal(e) | AttemptError::Retry { error: e, .. } => e,
            })?;
        let status = resp.status().as_u16();
        let reason = resp.status().canonical_reason().unwrap_or("");
        let ok = resp.status().is_success();
        let text = tokio::time::timeout_at(until, read_capped(resp, MAX_MODELS_BYTES))
            .await
            .map_err(|_| ModelError::Transport(format!("no whole answer from {url} in time")))?;
        if !ok {
            let message = format!("{reason}: {}", error_message(&text))
                .trim_start_matches(": ")
                .to_string();
            let message = match (&self.opts.auth_hint, status) {
                (Some(hint), 401 | 403) => format!("{message} ({hint})"),
                _ => message,
            };
            return Err(ModelError::Api { status, message });
        }
        let v = serde_json::from_str(&text).map_err(|e| {
            ModelError::Transport(format!("{url} did not answer with a list of models: {e}"))
        })?;
        Ok((v, url))
    }

    async fn attempt(
        &self,
        body: &bytes::Bytes,
        sink: &mut dyn EventSink,
    ) -> Result<AssistantTurn, AttemptError> {
        let mut rb = self
            .http
            .post(&self.url)
            .header(CONTENT_TYPE, "application/json")
            .header("accept", "text/event-stream")
            // A shared handle, not a copy: a long history's body can be tens of MB.
            .body(body.clone());
        if let Some(key) = &self.opts.api_key {
            rb = rb.bearer_auth(key);
        }
        let started = Instant::now();
        let resp = tokio::time::timeout(self.opts.idle_timeout, rb.send())
            .await
            .map_err(|_| transport("timed out waiting for the response headers"))?
            .map_err(|e| self.send_error(&e, &self.url))?;
        let status = resp.status().as_u16();
        if resp.status().is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|l| crate::text::one_line(&crate::text::escape_line(l), 200))
                .unwrap_or_else(|| "somewhere else".into());
            let message = format!(
                "the server redirects to {to}; hx does not follow redirects (the request \
                 carries the API key): set the base URL to where the API is"
            );
            return Err(AttemptError::Fatal(ModelError::Api { status, message }));
        }
        if !resp.status().is_success() {
            let after = retry_after(resp.headers(), self.opts.retry_max_delay * 4);
            let reason = resp.status().canonical_reason().unwrap_or("");
            let text = read_capped(resp, 64 * 1024).await;
            let message = format!("{reason}: {}", error_message(&text))
                .trim_start_matches(": ")
                .to_string();
            // Too long for the window: whatever the status, the same request would only fail
            // again (and cost again); the loop shrinks the conversation instead.
            if let Some(o) = super::overflow::detect(&text) {
                return Err(AttemptError::Fatal(ModelError::ContextOverflow {
                    status,
                    message,
                    window: o.window,
                }));
            }
            let message = match (&self.opts.auth_hint, status) {
                (Some(hint), 401 | 403) => format!("{message} ({hint})"),
                _ => message,
            };
            let error = ModelError::Api { status, message };
            return Err(if is_retryable_status(status) {
                AttemptError::Retry { error, after }
            } else {
                AttemptError::Fatal(error)
            });
        }
        if is_json(resp.headers()) {
            // The server ignored `stream: true` and sent one whole completion.
            let body = self.read_body(resp).await?;
            let chunk: Chunk = serde_json::from_slice(&body)
                .map_err(|e| transport(format!("unreadable JSON response: {e}")))?;
            if let Some(err) = chunk.error.as_ref() {
                return Err(stream_error(err));
            }
            let mut acc = Accumulator::new();
            acc.apply(chunk, sink);
            check_calls(&acc)?;
            return complete(acc);
        }
        self.read_stream(resp, started, sink).await
    }

    /// A whole (non-streamed) body, within `max_response_bytes`.
    async fn read_body(&self, resp: reqwest::Response) -> Result<Vec<u8>, AttemptError> {
        let max = self.opts.max_response_bytes;
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        loop {
            match tokio::time::timeout(self.opts.idle_timeout, stream.next()).await {
                Err(_) => {
                    return Err(transport(format!(
                        "no bytes from the server for {} s",
                        self.opts.idle_timeout.as_secs()
                    )))
                }
                Ok(None) => return Ok(body),
                Ok(Some(Err(e))) => {
                    return Err(transport(format!(
                        "response ended before it was complete: {}",
                        describe_reqwest(&e)
                    )))
                }
                Ok(Some(Ok(bytes))) => {
                    if body.len().saturating_add(bytes.len()) > max {
                        return Err(response_too_large(max));
                    }
                    body.extend_from_slice(&bytes);
                }
            }
        }
    }

    async fn read_stream(
        &self,
        resp: reqwest::Response,
        started: Instant,
        sink: &mut dyn EventSink,
    ) -> Result<AssistantTurn, AttemptError> {
        let mut stream = resp.bytes_stream();
        let mut parser = SseParser::with_limit(self.opts.max_event_bytes);
        let mut received = 0usize;
        let mut acc = Accumulator::new();
        let mut events = Vec::new();
        let mut last_data = started;
        let mut done = false;
        while !done {
            let no_data_left = self
                .opts
                .request_timeout
                .saturating_sub(last_data.elapsed());
            let wait = self.opts.idle_timeout.min(no_data_left);
            let next = match tokio::time::timeout(wait, stream.next()).await {
                Ok(n) => n,
                Err(_) if wait < self.opts.idle_timeout => {
                    return Err(transport(format!(
                        "no data for {} s (only keep-alives)",
                        self.opts.request_timeout.as_secs()
                    )))
                }
                Err(_) => {
                    return Err(transport(format!(
                        "no bytes from the server for {} s",
                        self.opts.idle_timeout.as_secs()
                    )))
                }
            };
            match next {
                Some(Ok(bytes)) => {
                    // Everything kept (the parser's buffer, the accumulated turn) comes from
                    // these bytes, so bounding them bounds the memory one response can take.
                    received = received.saturating_add(bytes.len());
                    if received > self.opts.max_response_bytes {
                        return Err(response_too_large(self.opts.max_response_bytes));
                    }
                    parser
                        .feed(&bytes, &mut events)
                        .map_err(|EventTooLarge { limit: max }| {
                            limit(
                                format!("a server-sent event is larger than {}", size(max)),
                                "max_event_bytes",
                            )
                        })?;
                }
                Some(Err(e)) => {
                    return Err(transport(format!(
                        "stream ended before the response was complete: {}",
                        describe_reqwest(&e)
                    )))
                }
                None => {
                    parser.finish(&mut events);
                    done = true;
                }
            }
            for ev in events.drain(..) {
                let SseEvent::Data(data) = ev else { continue };
                last_data = Instant::now();
                if data.trim() == "[DONE]" {
                    return complete(acc);
                }
                let chunk: Chunk = match serde_json::from_str(&data) {
                    Ok(c) => c,
                    Err(e) => return Err(transport(format!("unreadable stream chunk: {e}"))),
                };
                if let Some(err) = chunk.error.as_ref() {
                    return Err(stream_error(err));
                }
                acc.apply(chunk, sink);
                check_calls(&acc)?;
            }
        }
        // The connection closed without `[DONE]`: complete only if the finish chunk came.
        if acc.finish_reason.is_some() {
            complete(acc)
        } else {
            Err(transport("stream ended before the response was complete"))
        }
    }
}

impl ChatModel for OpenAiClient {
    fn complete<'a>(
        &'a self,
        req: &'a ChatRequest<'a>,
        sink: &'a mut dyn EventSink,
    ) -> BoxFuture<'a, Result<AssistantTurn, ModelError>> {
        Box::pin(async move {
            // Serialized once: every retry sends the identical bytes.
            let body = serde_json::to_vec(req)
                .map(bytes::Bytes::from)
                .map_err(|e| ModelError::Transport(format!("cannot encode request: {e}")))?;
            let mut attempt = 0u32;
            let deadline = self.opts.max_response_time;
            loop {
                let outcome = tokio::time::timeout(deadline, self.attempt(&body, sink))
                    .await
                    .unwrap_or_else(|_| {
                        Err(limit(
                            format!("no complete response after {} s", deadline.as_secs()),
                            "max_response_secs",
                        ))
                    });
                match outcome {
                    Ok(turn) => return Ok(turn),
                    Err(AttemptError::Fatal(e)) => return Err(e),
                    Err(AttemptError::Retry { error, after }) => {
                        // A name that did not resolve gets one more try, not all of them: a
                        // missing network or a typo in the URL does not mend in seconds.
                        let retries = match error {
                            ModelError::Unreachable { dns: true, .. } => self.opts.retries.min(1),
                            _ => self.opts.retries,
                        };
                        if attempt >= retries {
                            let after_attempts =
                                |m: String| format!("{m} (after {} attempts)", attempt + 1);
                            return Err(match error {
                                ModelError::Transport(m) if attempt > 0 => {
                                    ModelError::Transport(after_attempts(m))
                                }
                                ModelError::Unreachable { message, dns } if attempt > 0 => {
                                    ModelError::Unreachable {
                                        message: after_attempts(message),
                                        dns,
                                    }
                                }
                                other => other,
                            });
                        }
                        let delay = after.unwrap_or_else(|| {
                            backoff(
                                self.opts.retry_base_delay,
                                attempt,
                                self.opts.retry_max_delay,
                            )
                        });
                        attempt += 1;
                        sink.retrying(attempt, retries, delay, &error.to_string());
                        tokio::time::sleep(delay).await;
                    }
                }
            }
        })
    }
}

/// Fails once the response has started more tool calls than hx runs from one response (a
/// fixed limit, see [`MAX_TOOL_CALLS`]).
fn check_calls(acc: &Accumulator) -> Result<(), AttemptError> {
    if acc.too_many_calls {
        return Err(AttemptError::Fatal(ModelError::Limit(format!(
            "the response has more than {MAX_TOOL_CALLS} tool calls (the limit of hx)"
        ))));
    }
    Ok(())
}

/// A finished stream, unless the server says it gave up midway: DeepSeek ends a response it
/// could not finish with `insufficient_system_resource`, which is worth a retry, not an answer.
fn complete(acc: Accumulator) -> Result<AssistantTurn, AttemptError> {
    match acc.finish_reason.as_deref() {
        Some(r @ "insufficient_system_resource") => Err(transport(format!(
            "the server interrupted the response ({r})"
        ))),
        _ => Ok(acc.finish()),
    }
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"))
}

/// Reads at most `cap` bytes of a body as text; error bodies can be anything.
async fn read_capped(resp: reqwest::Response, cap: usize) -> String {
    let mut out = Vec::new();
    let mut stream = resp.bytes_stream();
    while let Ok(Some(Ok(b))) = tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
        let room = cap.saturating_sub(out.len());
        out.extend_from_slice(&b[..b.len().min(room)]);
        if out.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The human part of an error body: `{"error":{"message":..}}`, `{"message":..}`,
/// `{"error":"..."}`, or the text itself, on one line.
pub fn error_message(body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let e = v.get("error").unwrap_or(&v);
            e.get("message")
                .and_then(|m| m.as_str())
                .or_else(|| e.as_str())
                .map(str::to_string)
        });
    let text = from_json.unwrap_or_else(|| body.to_string());
    let one_line = crate::text::collapse_whitespace(&text);
    if one_line.chars().count() > 300 {
        let cut: String = one_line.chars().take(300).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// An `{"error": ...}` event inside a 200 stream. Providers that proxy others (OpenRouter)
/// report upstream overloads this way, with an HTTP-like code; those are worth a retry.
fn stream_error(err: &serde_json::Value) -> AttemptError {
    let body = serde_json::json!({ "error": err }).to_string();
    let message = error_message(&body);
    if let Some(o) = super::overflow::detect(&body) {
        return AttemptError::Fatal(ModelError::ContextOverflow {
            status: 200,
            message,
            window: o.window,
        });
    }
    let code = err
        .get("code")
        .and_then(|c| c.as_u64().or_else(|| c.as_str()?.parse().ok()));
    let error = ModelError::Stream(message);
    match code {
        Some(c) if c <= u16::MAX as u64 && is_retryable_status(c as u16) => {
            AttemptError::Retry { error, after: None }
        }
        _ => AttemptError::Fatal(error),
    }
}

/// A base URL as shown to the user (the trace's first line, `thread.started`, connection
/// errors): a user name or password in it is replaced by `***`, and so is a query, where a
/// key is sometimes put (`?key=...`); a fragment is left out.
pub fn shown_url(url: &str) -> String {
    let Ok(mut u) = reqwest::Url::parse(url) else {
        return url.to_string();
    };
    let credentials = !u.username().is_empty() || u.password().is_some();
    if !credentials && u.query().is_none() && u.fragment().is_none() {
        // As the user wrote it (parsing would add a trailing slash).
        return url.to_string();
    }
    if credentials {
        let _ = u.set_username("***");
        let _ = u.set_password(None);
    }
    if u.query().is_some() {
        u.set_query(Some("***"));
    }
    u.set_fragment(None);
    u.to_string()
}

#[cfg(test)]
mod tests;
