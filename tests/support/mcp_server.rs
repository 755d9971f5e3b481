//! The test suite's MCP server, built with rmcp's server side (an example target, so the
//! server is a program of its own that hx starts like any MCP server, and rmcp's server
//! features stay in dev-dependencies).
//!
//! Its tools answer, fail (`isError`), sleep, exit mid-call, return a huge text or an image,
//! and change the tool list. The environment picks how it starts:
//!
//! - `MCP_TEST_PID_FILE`: a file it appends its pid to first (tests check it is gone later);
//! - `MCP_TEST_START_DELAY_MS`: sleeps this long before it answers anything;
//! - `MCP_TEST_NOTIFY_FIRST=1`: writes two notifications before reading the `initialize`
//!   request (real servers log while they boot);
//! - `MCP_TEST_FAIL_START=1`: writes an error to stderr and exits 1 at once;
//! - `MCP_TEST_LINGER=1`: starts a `sleep` child (its pid in the pid file too) and keeps
//!   running after its input ends, as a careless server would: only killing its process
//!   group ends it.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig, Tool};
use rmcp::service::RequestContext;
use rmcp::{schemars, tool, tool_handler, tool_router, RoleServer, ServerHandler, ServiceExt};

#[derive(Clone)]
struct TestServer {
    router: Arc<Mutex<ToolRouter<TestServer>>>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// Milliseconds to sleep before answering.
    ms: u64,
    /// Sleep on the thread (precise, but the server answers nothing meanwhile) and say how
    /// long the sleep really took, in microseconds: the benchmark's measure of the server's
    /// own time.
    #[serde(default)]
    precise: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct HugeArgs {
    /// Characters of text to return.
    chars: usize,
}

#[tool_router]
impl TestServer {
    #[tool(description = "Sends the text back, prefixed with 'echo: '.")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        format!("echo: {text}")
    }

    #[tool(description = "Always fails, with isError set.")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")])
    }

    #[tool(description = "Sleeps, then answers.")]
    async fn sleep(&self, Parameters(SleepArgs { ms, precise }): Parameters<SleepArgs>) -> String {
        if precise {
            let start = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(ms));
            return format!("slept {ms} ms in {} us", start.elapsed().as_micros());
        }
        tokio::time::sleep(Duration::from_millis(ms)).await;
        format!("slept {ms} ms")
    }

    #[tool(description = "Exits the server in the middle of the call.")]
    fn exit(&self) -> String {
        eprintln!("test server: exiting on purpose");
        std::process::exit(3)
    }

    #[tool(description = "Returns HEAD, that many x characters, then TAIL.")]
    fn huge(&self, Parameters(HugeArgs { chars }): Parameters<HugeArgs>) -> String {
        format!("HEAD{}TAIL", "x".repeat(chars))
    }

    #[tool(description = "Returns a text and a small PNG image.")]
    fn picture(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("a picture follows"),
            ContentBlock::image("iVBORw0KGgo=", "image/png"),
        ])
    }

    #[tool(description = "Says the tool list changed, and changes nothing.")]
    async fn touch(&self, ctx: RequestContext<RoleServer>) -> String {
        let _ = ctx.peer.notify_tool_list_changed().await;
        "touched".to_string()
    }

    #[tool(description = "Adds the tool 'extra' and says the tool list changed.")]
    async fn grow(&self, ctx: RequestContext<RoleServer>) -> String {
        lock(&self.router).add_route(extra_route());
        let _ = ctx.peer.notify_tool_list_changed().await;
        "grown".to_string()
    }
}

impl TestServer {
    /// The tools as of now (a copy, so no lock is held while a call runs).
    fn current(&self) -> ToolRouter<TestServer> {
        lock(&self.router).clone()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A tool added at run time, with a schema that needs cleaning (no top-level type, an array
/// without items).
fn extra_route() -> ToolRoute<TestServer> {
    let schema = serde_json::json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"tags": {"type": "array"}}
    });
    let serde_json::Value::Object(schema) = schema else {
        unreachable!()
    };
    ToolRoute::new_dyn(
        Tool::new("extra", "A tool that appeared later.", schema),
        |_ctx| {
            Box::pin(async {
                Ok(CallToolResult::success(vec![ContentBlock::text("extra answered")]).into())
            })
        },
    )
}

#[tool_handler(router = self.current())]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    if let Some(path) = env("MCP_TEST_PID_FILE") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .expect("pid file");
        writeln!(f, "{}", std::process::id()).expect("write pid");
    }
    let linger = env("MCP_TEST_LINGER").is_some();
    if linger {
        // Never waited for on purpose: it must outlive the server's own work.
        #[allow(clippy::zombie_processes)]
        let child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("spawn sleep");
        if let Some(path) = env("MCP_TEST_PID_FILE") {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .expect("pid file");
            writeln!(f, "{}", child.id()).expect("write pid");
        }
    }
    if env("MCP_TEST_FAIL_START").is_some() {
        eprintln!("test server: fatal: the database is not reachable");
        std::process::exit(1);
    }
    if let Some(ms) = env("MCP_TEST_START_DELAY_MS").and_then(|v| v.parse().ok()) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if env("MCP_TEST_NOTIFY_FIRST").is_some() {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"booting"}}}}"#
        );
        let _ = writeln!(
            out,
            r#"{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}"#
        );
        let _ = out.flush();
    }
    let server = TestServer {
        router: Arc::new(Mutex::new(TestServer::tool_router())),
    };
    let Ok(running) = server.serve(rmcp::transport::stdio()).await else {
        std::process::exit(2);
    };
    let _ = running.waiting().await;
    if linger {
        tokio::time::sleep(Duration::from_secs(300)).await;
    }
}
