//! The last line of defence: a panic inside one tool call becomes that call's
//! `Error: internal error in TOOL` result, and the run goes on with every call answered once.
//!
//! Library level, through the real loop and HTTP client against the fake server: hx ships no
//! tool that panics, and adding one to the binary for a test would ship it to users.

use std::sync::{Arc, Mutex};

use crate::support::{tool_messages, Call, FakeServer, Reply};
use futures_util::future::BoxFuture;
use hx::agent::{Agent, Outcome};
use hx::events::{Event, Events, Observer, Scope};
use hx::hooks::{HookContext, Hooks};
use hx::model::{ClientOptions, OpenAiClient, Profile, ReasoningEcho};
use hx::session::Recorder;
use hx::tools::{Registry, Tool, ToolContext, ToolResult, ToolSet, ToolSpec, Workspace};
use serde_json::{json, Value};

/// A tool whose call panics: in its future, before returning one, on a blocking thread, or
/// (`concurrent`) beside the others.
struct Boom {
    name: &'static str,
    how: How,
}

#[derive(Clone, Copy, PartialEq)]
enum How {
    InFuture,
    BeforeFuture,
    Blocking,
    Concurrent,
}

impl Tool for Boom {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: self.name.into(),
            description: "panics".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn concurrent(&self) -> bool {
        self.how == How::Concurrent
    }

    fn call<'a>(&'a self, _args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        if self.how == How::BeforeFuture {
            panic!("{} panicked before its future", self.name);
        }
        Box::pin(async move {
            match self.how {
                How::Blocking => {
                    hx::tools::run_blocking(|| panic!("panicked on a blocking thread")).await
                }
                _ => panic!("{} panicked", self.name),
            }
        })
    }
}

/// What the views are told of the tool calls: `+ID` when one starts, `-ID: RESULT` when it
/// finishes.
#[derive(Default)]
struct Calls(Mutex<Vec<String>>);

impl Observer for Calls {
    fn event(&self, _scope: &Scope, event: &Event<'_>) {
        let line = match event {
            Event::ToolStarted { call, .. } => format!("+{}", call.id),
            Event::ToolFinished { call, result, .. } => format!("-{}: {}", call.id, result.content),
            _ => return,
        };
        self.0.lock().expect("lock").push(line);
    }
}

fn agent(server: &FakeServer, workspace: &std::path::Path, events: Events) -> Agent {
    let mut registry = Registry::standard();
    for (name, how) in [
        ("boom", How::InFuture),
        ("boom_early", How::BeforeFuture),
        ("boom_blocking", How::Blocking),
        ("boom_concurrent", How::Concurrent),
    ] {
        registry.register(Arc::new(Boom { name, how }));
    }
    let client = OpenAiClient::new(ClientOptions {
        base_url: server.url(),
        retries: 0,
        ..ClientOptions::default()
    })
    .expect("client");
    let profile = Profile::new(
        "deepseek-v4-flash",
        None,
        None,
        128_000,
        ReasoningEcho::Always,
    );
    Agent::builder(
        Arc::new(client),
        profile,
        ToolSet::all(registry),
        ToolContext::new(Workspace::new(workspace).expect("workspace")),
        events,
    )
    .hooks(
        Hooks::new(),
        HookContext {
            cwd: workspace.to_path_buf(),
            scope: Default::default(),
            session_id: "test".into(),
            ..HookContext::default()
        },
    )
    .system_prompt("You are a test.".into())
    .max_turns(5)
    .build()
}

#[tokio::test]
async fn a_panicking_tool_call_is_an_error_result_and_the_run_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("a.txt"), "still here\n").expect("write");
    let calls = vec![
        Call::new("c0", "boom", "{}"),
        Call::new("c1", "read_file", r#"{"path":"a.txt"}"#),
        Call::new("c2", "boom_concurrent", "{}"),
        Call::new("c3", "boom_early", "{}"),
        Call::new("c4", "boom_blocking", "{}"),
        Call::new("c5", "boom_concurrent", "{}"),
    ];
    let server = FakeServer::start(vec![
        Reply::tool_calls(calls),
        Reply::tool_calls(vec![Call::new("c6", "boom", "{}")]),
        Reply::text("done"),
    ]);
    let seen = Arc::new(Calls::default());
    let agent = agent(&server, dir.path(), Events::new(seen.clone()));
    let (mut session, _) = Recorder::default().start(None, agent.profile());
    let outcome = agent
        .run(&mut session, "go")
        .await
        .expect("the run ends normally");
    assert_eq!(outcome, Outcome::Answered("done".into()));
    assert_eq!(session.stats.tool_calls, 7);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let answers: Vec<(String, String)> = tool_messages(&reqs[2].body)
        .iter()
        .map(|m| {
            let s = |k: &str| m[k].as_str().expect(k).to_string();
            (s("tool_call_id"), s("content"))
        })
        .collect();
    let expected = [
        ("c0", "Error: internal error in boom"),
        ("c1", "still here\n"),
        ("c2", "Error: internal error in boom_concurrent"),
        ("c3", "Error: internal error in boom_early"),
        ("c4", "Error: internal error in boom_blocking"),
        ("c5", "Error: internal error in boom_concurrent"),
        ("c6", "Error: internal error in boom"),
    ]
    .map(|(a, b)| (a.to_string(), b.to_string()));
    assert_eq!(answers, expected);

    // The views hear every call that started finish, with the result the model got, so no
    // spinner or `--json` item waits for a call that panicked.
    let seen = seen.0.lock().expect("lock").clone();
    for (id, content) in &expected {
        assert!(
            seen.contains(&format!("+{id}")),
            "{id} not started: {seen:#?}"
        );
        let finished = format!("-{id}: {content}");
        assert_eq!(
            seen.iter().filter(|l| **l == finished).count(),
            1,
            "{id} not finished once: {seen:#?}"
        );
    }
}
