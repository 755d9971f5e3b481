//! JSON-RPC 2.0 over newline-delimited lines, as ACP v1 carries it on stdin and stdout: a
//! bounded reader on a thread of its own, a writer on another (a client that stops reading
//! must not block the run), and the requests hx sends the client, waiting for their answers.
//!
//! Written by hand rather than with the `agent-client-protocol` crate's connection engine (see
//! Cargo.toml): the crate's transports read lines without a bound, and its handlers must be
//! `Send`, where a run of hx lives on the current thread.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

pub use agent_client_protocol::v1::schema::Error as RpcError;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

/// The longest line hx reads: 64 MiB, room for an embedded file far larger than any the model
/// could take. A longer line is answered with an error and skipped without being kept.
pub const MAX_LINE: usize = 64 << 20;

/// What the reader thread hands the loop.
#[derive(Debug)]
pub enum Incoming {
    Line(Vec<u8>),
    /// A line over [`MAX_LINE`], skipped.
    TooLong,
    /// stdin ended (or failed: the client is gone either way).
    Eof,
}

/// Reads `input` line by line on a thread of its own until it ends or the loop stops
/// listening. A line is never held past [`MAX_LINE`] bytes.
pub fn read_lines(input: impl Read + Send + 'static, tx: mpsc::Sender<Incoming>) {
    std::thread::spawn(move || {
        let mut reader = BufReader::with_capacity(64 * 1024, input);
        let mut line = Vec::new();
        let mut skipping = false;
        loop {
            let (used, ended) = match reader.fill_buf() {
                Ok([]) => break,
                Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        if !skipping && line.len() + i <= MAX_LINE {
                            line.extend_from_slice(&buf[..i]);
                        } else {
                            skipping = true;
                        }
                        (i + 1, true)
                    }
                    None => {
                        if !skipping && line.len() + buf.len() <= MAX_LINE {
                            line.extend_from_slice(buf);
                        } else {
                            skipping = true;
                            line = Vec::new();
                        }
                        (buf.len(), false)
                    }
                },
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            reader.consume(used);
            if ended {
                let item = if std::mem::take(&mut skipping) {
                    line = Vec::new();
                    Incoming::TooLong
                } else {
                    Incoming::Line(std::mem::take(&mut line))
                };
                if tx.blocking_send(item).is_err() {
                    return;
                }
            }
        }
        // A last line without its newline still counts.
        if skipping {
            let _ = tx.blocking_send(Incoming::TooLong);
        } else if !line.is_empty() {
            let _ = tx.blocking_send(Incoming::Line(line));
        }
        let _ = tx.blocking_send(Incoming::Eof);
    });
}

/// Where every message hx sends goes: one line each, in the order sent, written by a thread
/// of its own. Cheap to clone; usable from any thread (the views are called from the run).
#[derive(Clone)]
pub struct Output {
    tx: std::sync::mpsc::Sender<String>,
}

impl Output {
    /// Starts the writer on `out`. Its thread ends when every `Output` is dropped, or when a
    /// write fails (the client is gone: what is left to say is dropped).
    pub fn start(out: impl Write + Send + 'static) -> (Output, std::thread::JoinHandle<()>) {
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let writer = std::thread::spawn(move || {
            let mut out = std::io::BufWriter::new(out);
            while let Ok(mut line) = rx.recv() {
                line.push('\n');
                if out.write_all(line.as_bytes()).is_err() {
                    return;
                }
                // Everything queued goes out in one write, then it is flushed.
                while let Ok(mut more) = rx.try_recv() {
                    more.push('\n');
                    if out.write_all(more.as_bytes()).is_err() {
                        return;
                    }
                }
                if out.flush().is_err() {
                    return;
                }
            }
        });
        (Output { tx }, writer)
    }

    fn send(&self, message: &Value) {
        // serde_json escapes every control character: a message is always one line.
        let _ = self.tx.send(message.to_string());
    }

    pub fn result(&self, id: &Value, result: impl Serialize) {
        match serde_json::to_value(result) {
            Ok(r) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": r})),
            Err(e) => self.error(id, &RpcError::into_internal_error(e)),
        }
    }

    pub fn error(&self, id: &Value, error: &RpcError) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": error}));
    }

    pub fn notify(&self, method: &str, params: impl Serialize) {
        if let Ok(p) = serde_json::to_value(params) {
            self.send(&json!({"jsonrpc": "2.0", "method": method, "params": p}));
        }
    }
}

/// An error with a message of hx's own (the codes' standard messages say too little).
pub fn error(code: i32, message: impl Into<String>) -> RpcError {
    RpcError::new(code, message)
}

pub const PARSE_ERROR: i32 = -32700;
pub const INVALID_REQUEST: i32 = -32600;
pub const METHOD_NOT_FOUND: i32 = -32601;
pub const INVALID_PARAMS: i32 = -32602;
pub const INTERNAL_ERROR: i32 = -32603;

/// One message from the client, classified.
#[derive(Debug)]
pub enum Message {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// The answer to a request hx sent.
    Response {
        id: Value,
        result: Result<Value, Value>,
    },
}

/// A line that is no message: the id to answer (null when it had none) and the error.
pub type Refused = Box<(Value, RpcError)>;

/// A line as a message, or the error to answer it with.
pub fn parse(line: &[u8]) -> Result<Message, Refused> {
    let value: Value = serde_json::from_slice(line).map_err(|e| {
        Box::new((
            Value::Null,
            error(PARSE_ERROR, format!("Parse error: not JSON: {e}")),
        ))
    })?;
    let Value::Object(mut map) = value else {
        return Err(Box::new((
            Value::Null,
            error(INVALID_REQUEST, "Invalid request: not a JSON object"),
        )));
    };
    let id = map.remove("id");
    let invalid = |id: Option<Value>, why: &str| {
        Err(Box::new((
            id.unwrap_or(Value::Null),
            error(INVALID_REQUEST, format!("Invalid request: {why}")),
        )))
    };
    if map.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid(id, "\"jsonrpc\" must be \"2.0\"");
    }
    if let Some(id) = &id {
        if !(id.is_string() || id.is_i64() || id.is_u64() || id.is_null()) {
            return invalid(None, "an id is a string or an integer");
        }
    }
    match (map.remove("method"), id) {
        (Some(Value::String(method)), id) => {
            let params = map.remove("params").unwrap_or(Value::Null);
            Ok(match id {
                Some(id) => Message::Request { id, method, params },
                None => Message::Notification { method, params },
            })
        }
        (Some(_), id) => invalid(id, "\"method\" must be a string"),
        (None, Some(id)) => {
            let result = match (map.remove("result"), map.remove("error")) {
                (Some(r), None) => Ok(r),
                (None, Some(e)) => Err(e),
                _ => return invalid(Some(id), "a response has one of result and error"),
            };
            Ok(Message::Response { id, result })
        }
        (None, None) => invalid(None, "no method and no id"),
    }
}

/// The params of a request as `T`, or -32602 saying what was wrong.
pub fn params<T: serde::de::DeserializeOwned>(method: &str, params: Value) -> Result<T, RpcError> {
    serde_json::from_value(params)
        .map_err(|e| error(INVALID_PARAMS, format!("Invalid params for {method}: {e}")))
}

/// The client's answer to a request of hx's: its result, or its error.
type Answer = Result<Value, Value>;

/// The requests hx sends the client and has not had answers to, by id.
#[derive(Clone, Default)]
pub struct Pending {
    next: Arc<AtomicI64>,
    waiting: Arc<Mutex<HashMap<i64, oneshot::Sender<Answer>>>>,
}

impl Pending {
    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<i64, oneshot::Sender<Answer>>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sends the request and waits for its answer: `Err` is the client's error, or that it
    /// went away ([`Pending::drop_all`]).
    pub async fn request(
        &self,
        out: &Output,
        method: &str,
        params: impl Serialize,
    ) -> Result<Value, Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.waiting().insert(id, tx);
        let params = serde_json::to_value(params).map_err(|e| json!(e.to_string()))?;
        out.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await
            .unwrap_or_else(|_| Err(json!({"message": "the client went away"})))
    }

    /// The client's answer to one of hx's requests; an unknown id is dropped.
    pub fn answer(&self, id: &Value, result: Result<Value, Value>) {
        let Some(id) = id.as_i64() else { return };
        if let Some(tx) = self.waiting().remove(&id) {
            let _ = tx.send(result);
        }
    }

    /// Every waiting request fails (stdin ended).
    pub fn drop_all(&self) {
        self.waiting().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(input: &'static [u8]) -> Vec<Incoming> {
        let (tx, mut rx) = mpsc::channel(8);
        read_lines(input, tx);
        let mut got = Vec::new();
        while let Some(item) = rx.blocking_recv() {
            let eof = matches!(item, Incoming::Eof);
            got.push(item);
            if eof {
                break;
            }
        }
        got
    }

    #[test]
    fn lines_split_on_newlines_and_the_last_needs_none() {
        let got = lines_of(b"{\"a\":1}\n\n{\"b\":2}");
        let lines: Vec<String> = got
            .iter()
            .map(|i| match i {
                Incoming::Line(l) => String::from_utf8_lossy(l).into_owned(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(lines, ["{\"a\":1}", "", "{\"b\":2}", "Eof"]);
    }

    #[test]
    fn messages_are_classified_and_bad_ones_named() {
        let m = parse(br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#);
        assert!(matches!(m, Ok(Message::Request { .. })));
        let m = parse(br#"{"jsonrpc":"2.0","method":"session/cancel","params":{}}"#);
        assert!(matches!(m, Ok(Message::Notification { .. })));
        let m = parse(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#);
        assert!(matches!(m, Ok(Message::Response { .. })));
        let Err(refused) = parse(b"not json") else {
            panic!("parsed")
        };
        let (id, e) = *refused;
        assert_eq!((id, i32::from(e.code)), (Value::Null, PARSE_ERROR));
        let Err(refused) = parse(br#"{"jsonrpc":"1.0","id":7,"method":"x"}"#) else {
            panic!("parsed")
        };
        let (id, e) = *refused;
        assert_eq!((id, i32::from(e.code)), (json!(7), INVALID_REQUEST));
    }
}
