//! Why a request failed, in words that say what to check: a connection never made (a port
//! that refuses, a name that does not resolve, no answer in time) and reqwest's errors, whose
//! useful part hides in their source chain.

use super::{shown_url, transport, AttemptError, OpenAiClient};
use crate::model::ModelError;

impl OpenAiClient {
    /// Why a request could not be sent, saying what to check: the URL it went to, and for
    /// the common causes the next step. A refused port on this machine means no server runs
    /// there; a name that does not resolve is a wrong base URL or no network.
    /// A request that could not be sent: a connection that was never made is
    /// [`ModelError::Unreachable`], anything else a transport error.
    pub(super) fn send_error(&self, e: &reqwest::Error, url: &str) -> AttemptError {
        let message = self.describe_send_error(e, url);
        if !e.is_connect() {
            return transport(message);
        }
        let dns = source_chain(e).iter().any(|c| is_dns_failure(c));
        AttemptError::Retry {
            error: ModelError::Unreachable { message, dns },
            after: None,
        }
    }

    fn describe_send_error(&self, e: &reqwest::Error, to: &str) -> String {
        if !e.is_connect() {
            return describe_reqwest(e);
        }
        let url = shown_url(to);
        let (host, port, loopback) = match reqwest::Url::parse(to) {
            Ok(u) => {
                let host = u.host_str().unwrap_or_default().to_string();
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                let loopback = bare.eq_ignore_ascii_case("localhost")
                    || bare
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback());
                (host, u.port_or_known_default().unwrap_or(0), loopback)
            }
            Err(_) => (String::new(), 0, false),
        };
        let cause = source_chain(e);
        let refused = io_kinds(e).contains(&std::io::ErrorKind::ConnectionRefused);
        let dns = cause.iter().any(|c| is_dns_failure(c));
        if refused && loopback {
            let hint = self.opts.refused_hint.as_deref().unwrap_or(
                "start it, or check the port in the base URL (--base-url, or the provider's \
                 base_url)",
            );
            format!("cannot connect to {url}: connection refused: no server is running on {host}:{port}; {hint}")
        } else if refused {
            format!("cannot connect to {url}: {host}:{port} refused the connection; check the port in the base URL")
        } else if dns {
            let last = cause.last().map(String::as_str).unwrap_or("dns error");
            format!("cannot connect to {url}: cannot resolve {host} ({last}); check the base URL and the network connection")
        } else if e.is_timeout() || io_kinds(e).contains(&std::io::ErrorKind::TimedOut) {
            format!(
                "cannot connect to {url}: no answer from {host}:{port} within {} s ([network] \
                 connect_timeout_secs); check the base URL and the network connection",
                self.opts.connect_timeout.as_secs()
            )
        } else {
            match cause.last() {
                Some(last) => format!("cannot connect to {url}: {last}"),
                None => format!("cannot connect to {url}"),
            }
        }
    }
}

/// One cause in a send error's chain says the host name did not resolve (reqwest and the
/// system resolver word it so; there is no typed kind for it).
fn is_dns_failure(cause: &str) -> bool {
    cause == "dns error"
        || cause.contains("failed to lookup address")
        || cause.contains("Name or service")
}

/// The messages of an error's sources, outermost first.
fn source_chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        out.push(s.to_string());
        source = s.source();
    }
    out
}

/// The kinds of the I/O errors among an error's sources.
fn io_kinds(e: &(dyn std::error::Error + 'static)) -> Vec<std::io::ErrorKind> {
    let mut out = Vec::new();
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            out.push(io.kind());
        }
        source = s.source();
    }
    out
}

/// reqwest's errors hide the useful part (connection refused, DNS) in their source chain.
pub(super) fn describe_reqwest(e: &reqwest::Error) -> String {
    let mut msg = if e.is_connect() {
        "cannot connect".to_string()
    } else if e.is_timeout() {
        "timed out".to_string()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    let mut last = String::new();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    if !last.is_empty() && !msg.contains(&last) {
        msg = format!("{msg}: {last}");
    }
    msg
}
