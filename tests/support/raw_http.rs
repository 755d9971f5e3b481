//! A minimal raw HTTP/1.1 client for the harness's self-tests: it keeps the exact chunk framing,
//! which a real HTTP client would hide, so tests can assert how the fake splits its events.
#![allow(dead_code)]

use super::server::FakeServer;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A decoded HTTP response as it came off the wire.
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// HTTP chunks exactly as framed by the server (empty for non-chunked bodies).
    pub chunks: Vec<Vec<u8>>,
    pub body: String,
    /// Saw the terminating 0-length chunk.
    pub terminated: bool,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// SSE events, split on blank lines (the last one may lack its blank line).
    pub fn events(&self) -> Vec<&str> {
        let mut ev: Vec<&str> = self.body.split("\n\n").collect();
        if ev.last() == Some(&"") {
            ev.pop();
        }
        ev
    }
}

pub fn exchange(server: &FakeServer, request: &[u8]) -> Resp {
    let mut s = TcpStream::connect(server.addr()).expect("connect to fake server");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("set timeout");
    s.write_all(request).expect("send request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read response to EOF");
    parse(&raw)
}

pub fn parse(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("response head");
    let head = String::from_utf8(raw[..split].to_vec()).expect("utf-8 head");
    let mut lines = head.split("\r\n");
    let status_line = lines.next().expect("status line");
    let status = status_line
        .split(' ')
        .nth(1)
        .expect("status code")
        .parse()
        .expect("numeric");
    let headers: Vec<(String, String)> = lines
        .map(|l| l.split_once(": ").expect("header line"))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut rest = &raw[split + 4..];
    let (mut chunks, mut terminated) = (Vec::new(), false);
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let body = if chunked {
        let mut body = Vec::new();
        while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
            let size = std::str::from_utf8(&rest[..eol]).expect("size line");
            let size = usize::from_str_radix(size, 16).expect("hex chunk size");
            if size == 0 {
                assert_eq!(&rest[eol..], b"\r\n\r\n", "bytes after the last chunk");
                terminated = true;
                break;
            }
            let data = &rest[eol + 2..eol + 2 + size];
            assert_eq!(
                &rest[eol + 2 + size..eol + 4 + size],
                b"\r\n",
                "chunk trailer"
            );
            chunks.push(data.to_vec());
            body.extend_from_slice(data);
            rest = &rest[eol + 4 + size..];
        }
        body
    } else {
        rest.to_vec()
    };
    let body = String::from_utf8(body).expect("utf-8 body");
    Resp {
        status,
        headers,
        chunks,
        body,
        terminated,
    }
}

pub fn post(server: &FakeServer, path: &str, body: &str) -> Resp {
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer test-key\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr(),
        body.len()
    );
    exchange(server, req.as_bytes())
}

pub fn chat(server: &FakeServer) -> Resp {
    post(
        server,
        "/chat/completions",
        r#"{"model":"deepseek-v4-flash","stream":true}"#,
    )
}
