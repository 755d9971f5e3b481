//! One connection to an MCP server through rmcp: a local process started by hx's one spawn
//! path (its stdin and stdout handed to rmcp's JSON-RPC transport, its stderr kept, bounded,
//! to explain a failure), or a streamable-HTTP endpoint.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{ClientInitializeError, NotificationContext, RunningService};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::io::AsyncReadExt;

use super::config::{ServerConfig, Transport};
use crate::paths::Env;
use crate::process::{Launch, Role, Started};

/// Bytes of a server's stderr kept (the end of it): enough for the error that explains a
/// failure, however much the server logs over a long run.
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;

/// The largest JSON-RPC message hx reads from a local server (rmcp's default, which its HTTP
/// client also uses for one event). A longer one is dropped, and the call it answered times
/// out.
pub const MAX_MESSAGE_BYTES: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// What the server tells hx between requests: only that its tool list changed, which the
/// next turn picks up.
#[derive(Clone)]
pub struct Handler {
    pub tools_changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    async fn on_tool_list_changed(&self, _cx: NotificationContext<RoleClient>) {
        self.tools_changed.store(true, Ordering::SeqCst);
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("hx", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The end of a server's stderr.
#[derive(Default)]
pub struct Tail {
    bytes: Vec<u8>,
}

impl Tail {
    fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
        if self.bytes.len() > STDERR_TAIL_BYTES {
            let cut = self.bytes.len() - STDERR_TAIL_BYTES;
            self.bytes.drain(..cut);
        }
    }

    /// Whether the text shows a write the system refused, as programs word it (`Permission
    /// denied`, npm's `EACCES`, `Read-only file system`).
    pub fn shows_refused_write(&self) -> bool {
        let text = String::from_utf8_lossy(&self.bytes).to_ascii_lowercase();
        [
            "permission denied",
            "eacces",
            "read-only file system",
            "erofs",
        ]
        .iter()
        .any(|m| text.contains(m))
    }

    /// The last `n` non-empty lines, as text.
    pub fn last_lines(&self, n: usize) -> Vec<String> {
        let text = String::from_utf8_lossy(&self.bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(n)..]
            .iter()
            .map(|l| l.to_string())
            .collect()
    }
}

/// A live connection: the rmcp service, and the server's process for a local server (its
/// process group is killed when this is dropped).
pub struct Connection {
    pub service: RunningService<RoleClient, Handler>,
    pub process: Option<Started>,
}

/// Connects to `config`'s server and completes the MCP handshake. The caller bounds the time.
/// A local server is started as a command is (`local`: the commands' environment and the
/// run's sandbox); `env` is hx's own, for an HTTP server's token. `drain` gets the task that
/// reads a local server's stderr into `stderr`.
pub async fn connect(
    config: &ServerConfig,
    program: Option<&Path>,
    env: &Env,
    local: &super::Local,
    handler: Handler,
    stderr: Arc<Mutex<Tail>>,
    drain: &mut Option<tokio::task::JoinHandle<()>>,
) -> Result<Connection, String> {
    match &config.transport {
        Transport::Stdio {
            command,
            args,
            env: vars,
            cwd,
            sandbox,
        } => {
            // A command's role, not a hook's: the server may run code of the repository it
            // starts in (a planted node_modules, a Python package), so it gets no secret but
            // what its own `env` passes on purpose, and the sandbox.
            let role = Role::Tool {
                env: &local.env,
                sandbox: local.sandbox_of(*sandbox),
            };
            // A server outside the sandbox starts from the path found when the run began.
            let program = program.map_or_else(|| command.as_ref(), Path::as_os_str);
            let mut launch = Launch::program(program, args, cwd, role);
            for (k, v) in vars {
                launch = launch.env(k, v);
            }
            let mut process = launch
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start {command:?}: {e}"))?;
            let (Some(stdin), Some(stdout)) = (process.take_stdin(), process.take_stdout()) else {
                return Err("no pipes to the server".into());
            };
            if let Some(mut pipe) = process.take_stderr() {
                // Read to the end, so a chatty server never blocks on a full pipe.
                *drain = Some(tokio::spawn(async move {
                    let mut buf = vec![0u8; 8192];
                    while let Ok(n @ 1..) = pipe.read(&mut buf).await {
                        stderr
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push(&buf[..n]);
                    }
                }));
            }
            let transport =
                AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(MAX_MESSAGE_BYTES);
            // The server's exit ends the wait at once, whatever still holds its output (a
            // child it left), and says how it ended rather than only that the pipe closed.
            let served = tokio::select! {
                served = handler.serve(transport) => served,
                status = process.wait() => return Err(exited(status)),
            };
            let service = match served {
                Ok(s) => s,
                Err(e) => {
                    // Its output closed: most likely it is exiting; if so, how.
                    return Err(
                        match tokio::time::timeout(EXIT_GRACE, process.wait()).await {
                            Ok(status) => exited(status),
                            Err(_) => handshake(&e, false),
                        },
                    );
                }
            };
            Ok(Connection {
                service,
                process: Some(process),
            })
        }
        Transport::Http {
            url,
            bearer_token_env_var,
            headers,
        } => {
            let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            if let Some(var) = bearer_token_env_var {
                match env.get(var).filter(|v| !v.is_empty()) {
                    Some(token) => cfg = cfg.auth_header(token.clone()),
                    None => return Err(format!("{var} (bearer_token_env_var) is not set")),
                }
            }
            let mut map = HashMap::new();
            for (k, v) in headers {
                let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| format!("{k:?} is not a valid header name"))?;
                let value = reqwest::header::HeaderValue::from_str(v)
                    .map_err(|_| format!("the value of header {k:?} is not valid"))?;
                map.insert(name, value);
            }
            cfg = cfg.custom_headers(map);
            // The model client's: no redirect followed, so the bearer token and the headers
            // go to this URL alone.
            let client = crate::model::client::http_client(
                url,
                crate::model::ClientOptions::default().connect_timeout,
            )?;
            let transport = StreamableHttpClientTransport::with_client(client, cfg);
            let service = handler
                .serve(transport)
                .await
                .map_err(|e| handshake(&e, true))?;
            Ok(Connection {
                service,
                process: None,
            })
        }
    }
}

/// How long a server whose output closed during the handshake may take to exit, for the
/// error to say how it ended.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_millis(200);

/// The error of a server that exited before the handshake ended.
fn exited(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    let how = match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(code), _) => format!("it exited with code {code}"),
            (None, Some(sig)) => format!(
                "it was killed by signal {sig} ({})",
                crate::process::signal_name(sig)
            ),
            (None, None) => "it exited".to_string(),
        },
        Err(e) => format!("it exited or cannot be waited for ({e})"),
    };
    format!("{how} before the MCP handshake ended")
}

/// Why the MCP handshake failed, in words: rmcp's messages name its own types.
fn handshake(e: &ClientInitializeError, http: bool) -> String {
    match e {
        ClientInitializeError::TransportError { error, .. } if http => {
            format!("cannot reach it: {}", super::said(&causes(error)))
        }
        ClientInitializeError::ConnectionClosed(_)
        | ClientInitializeError::TransportError { .. } => {
            "it exited or closed the connection before the MCP handshake ended".into()
        }
        ClientInitializeError::JsonRpcError(e) => {
            format!("it refused the MCP handshake: {}", super::said(&e.message))
        }
        other => format!(
            "the MCP handshake failed: {}",
            super::said(&other.to_string())
        ),
    }
}

/// An error and its causes, without rmcp's transport type names.
fn causes(e: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut next = Some(e);
    while let Some(err) = next.take() {
        let text = err.to_string();
        let text = text
            .rsplit_once("] error: ")
            .map_or(text.as_str(), |(_, r)| r);
        if !parts.iter().any(|p: &String| p.contains(text)) {
            parts.push(text.to_string());
        }
        next = err.source();
        if parts.len() >= 6 {
            break;
        }
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_end() {
        let mut t = Tail::default();
        t.push(b"first\n\n");
        t.push(b"second\nthird\n");
        assert_eq!(t.last_lines(2), ["second", "third"]);
        t.push(&vec![b'x'; STDERR_TAIL_BYTES]);
        assert_eq!(t.bytes.len(), STDERR_TAIL_BYTES);
        assert_eq!(t.last_lines(5).len(), 1);
        assert!(!t.shows_refused_write());
        for refused in [
            "npm error code EACCES",
            "sh: 1: cannot create /x: Permission denied",
            "OSError: [Errno 30] Read-only file system: '/x'",
        ] {
            let mut t = Tail::default();
            t.push(refused.as_bytes());
            assert!(t.shows_refused_write(), "{refused}");
        }
    }
}
