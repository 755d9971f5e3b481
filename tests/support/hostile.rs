//! A hostile model server: it answers every request with a fixed head, then writes the same
//! bytes again and again until the client hangs up (or the server is dropped). It stands for
//! servers that never end an event, never end a stream, or trickle forever.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Response head of an SSE stream that ends when the connection closes.
pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
/// Response head of a whole JSON body that ends when the connection closes.
pub const JSON_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";

/// What the server writes after the head: `prefix` once, then `repeat` forever, pausing
/// `pause` between two writes.
#[derive(Clone)]
pub struct Endless {
    pub head: &'static str,
    pub prefix: Vec<u8>,
    pub repeat: Vec<u8>,
    pub pause: Duration,
}

pub struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
    written: Arc<AtomicU64>,
}

impl Hostile {
    pub fn start(plan: Endless) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind hostile server");
        let addr = listener.local_addr().expect("local addr");
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let written = Arc::new(AtomicU64::new(0));
        let (s, r, w) = (stop.clone(), requests.clone(), written.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = conn else { continue };
                let (s, r, w, plan) = (s.clone(), r.clone(), w.clone(), plan.clone());
                thread::spawn(move || serve(stream, &plan, &s, &r, &w));
            }
        });
        Hostile {
            addr,
            stop,
            requests,
            written,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Requests whose head and body were read.
    pub fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }

    /// Body bytes written so far, over all connections.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::SeqCst)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// Reads the request (head and a content-length body) so the client sees a normal exchange.
fn read_request(stream: &TcpStream) -> Option<()> {
    let mut r = BufReader::new(stream);
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).ok()
}

fn serve(
    mut stream: TcpStream,
    plan: &Endless,
    stop: &AtomicBool,
    requests: &AtomicUsize,
    written: &AtomicU64,
) {
    let _ = stream.set_write_timeout(Some(Duration::from_secs(30)));
    if read_request(&stream).is_none() {
        return;
    }
    requests.fetch_add(1, Ordering::SeqCst);
    if stream.write_all(plan.head.as_bytes()).is_err() || stream.write_all(&plan.prefix).is_err() {
        return;
    }
    // Until the client hangs up: a write to a closed connection fails.
    while !stop.load(Ordering::SeqCst) {
        if stream.write_all(&plan.repeat).is_err() {
            return;
        }
        written.fetch_add(plan.repeat.len() as u64, Ordering::SeqCst);
        if !plan.pause.is_zero() {
            thread::sleep(plan.pause);
        }
    }
}
