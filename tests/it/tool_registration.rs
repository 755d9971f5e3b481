//! Adding a tool is one file and one `register` call: a tool defined here, registered into an
//! agent the library builds, is offered to the model, run, traced, shown in `--json` and guarded
//! by what it says about itself, with no name of it anywhere in hx.
//!
//! The trace goes to the process's stderr, so the agent runs in a child: this test's own
//! executable, started again (isolated like every hx run, see `support::runner`) to run only
//! this test in the child's role, against the fake server this process holds.

use std::sync::Arc;

use crate::support::{tool_answer, tool_names, Call, FakeServer, Hx, Reply, BUILT_IN_TOOLS};
use futures_util::future::BoxFuture;
use hx::events::{Event, Events, HumanView, JsonView, Observer, Scope, Verbosity};
use hx::session::Recorder;
use hx::term::Term;
use hx::tools::{Kind, Shown, Tool, ToolContext, ToolResult, ToolSpec};
use serde_json::{json, Value};

/// Set in the child: where its `--json` view writes.
const CHILD: &str = "TOOL_REGISTRATION_JSON";

/// A tool that says it runs a shell command, so the guard reads that command; it runs none
/// (a guard that let `rm -rf /` through would cost nothing here).
struct Probe;

impl Tool for Probe {
    fn spec(&self) -> ToolSpec {
        spec("probe", "Pretends to run a command.")
    }

    fn call<'a>(&'a self, args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        let command = self.command(&args).unwrap_or_default().to_string();
        Box::pin(async move { ToolResult::ok(format!("ran: {command}\n")).with_exit_code(Some(0)) })
    }

    fn kind(&self) -> Kind {
        Kind::Execute
    }

    fn shown(&self) -> Shown {
        Shown::Command
    }

    fn command<'a>(&self, args: &'a Value) -> Option<&'a str> {
        args.get("command").and_then(Value::as_str)
    }
}

/// A tool that says nothing about itself: whatever its arguments hold is not a command.
struct Echo;

impl Tool for Echo {
    fn spec(&self) -> ToolSpec {
        spec("echo_args", "Gives its command argument back.")
    }

    fn call<'a>(&'a self, args: Value, _cx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        let text = args["command"].as_str().unwrap_or_default().to_string();
        Box::pin(async move { ToolResult::ok(format!("echo: {text}")) })
    }
}

fn spec(name: &str, description: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"]
        }),
    }
}

/// Both views of one run: the trace (stderr) and `--json` (a file).
struct Both(HumanView, JsonView);

impl Observer for Both {
    fn event(&self, scope: &Scope, event: &Event<'_>) {
        self.0.event(scope, event);
        self.1.event(scope, event);
    }
}

/// The child's part: the main agent as `hx agent` builds it, with the two tools registered,
/// runs one task.
fn run_child(json_path: &str) {
    let cwd = std::env::current_dir().expect("cwd");
    let env = hx::config::process_env();
    let mut warnings = Vec::new();
    let config =
        hx::config::Config::load(&cwd, &env, &Default::default(), &mut warnings).expect("config");
    let file = std::fs::File::create(json_path).expect("the --json file");
    let events = Events::new(Arc::new(Both(
        // The hook steps' level (`trace = "hooks"`): the steps the guard stands in.
        HumanView::new(Term::plain(), false, Verbosity::Hooks),
        JsonView::new(Box::new(file), Term::plain()),
    )));
    let recorder = Recorder::default();
    let agent = hx::app::build_agent(
        &config,
        &cwd,
        &env,
        events,
        recorder.clone(),
        "tool-registration",
        &mut warnings,
    )
    .expect("agent");
    let mut tools = agent.tools().clone();
    tools.register(Arc::new(Probe));
    tools.register(Arc::new(Echo));
    let agent = agent.with_tools(tools);
    let (mut session, _) = recorder.start(None, agent.profile());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let outcome = runtime
        .block_on(agent.run(&mut session, "try the new tools"))
        .expect("the run ends normally");
    assert_eq!(outcome, hx::agent::Outcome::Answered("done".into()));
}

#[test]
fn a_tool_of_its_own_is_offered_run_traced_viewed_and_guarded_by_what_it_says() {
    if let Ok(path) = std::env::var(CHILD) {
        return run_child(&path);
    }
    let danger = r#"{"command":"rm -rf /"}"#;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new("p1", "probe", danger),
            Call::new("p2", "probe", r#"{"command":"echo hi"}"#),
            Call::new("e1", "echo_args", danger),
        ]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let json_path = hx.home().join("events.jsonl");
    // Only this test, in the child's role.
    let exe = std::env::current_exe().expect("this test's executable");
    hx.program(exe)
        .arg("a_tool_of_its_own_is_offered_run_traced_viewed_and_guarded_by_what_it_says")
        .env(CHILD, &json_path);
    let run = hx.run();
    run.assert_success();

    // Offered after the built-in tools, and answered: the guard refused the command the probe
    // said it runs, let its harmless one run, and left the tool that runs none alone.
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "{}", run.dump());
    let mut offered: Vec<String> = BUILT_IN_TOOLS.iter().map(|s| s.to_string()).collect();
    offered.extend(["probe".into(), "echo_args".into()]);
    assert_eq!(tool_names(&reqs[0].body), offered);
    let next = &reqs[1].body;
    let refused = tool_answer(next, "p1");
    assert!(
        refused.starts_with("Error: blocked by guard: "),
        "{refused}"
    );
    assert_eq!(tool_answer(next, "p2"), "ran: echo hi\n");
    assert_eq!(tool_answer(next, "e1"), "echo: rm -rf /");

    // The trace.
    let trace = &run.stderr;
    for line in [
        "> probe command=rm -rf /\n[HOOK] PreToolUse probe({\"command\":\"rm -rf /\"})\n",
        "[HOOK] PreToolUse blocked probe({\"command\":\"rm -rf /\"}) (guard): ",
        "> echo_args command=rm -rf /\n[HOOK] PreToolUse echo_args({\"command\":\"rm -rf /\"})\n",
        "[HOOK] PostToolUse echo_args output_chars=14\necho: rm -rf /\n",
        "[HOOK] PostToolUse probe output_chars=13\nran: echo hi\n",
    ] {
        assert!(trace.contains(line), "{line:?} not in the trace:\n{trace}");
    }
    assert!(!trace.contains("blocked echo_args"), "{trace}");

    // `--json`: the probe is a command, since it says it is one; the other is any tool.
    let text = std::fs::read_to_string(&json_path).expect("the --json file");
    let completed = |id: &str| -> Value {
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
            .find(|e| e["type"] == "item.completed" && e["item"]["call_id"] == id)
            .map(|e| e["item"].clone())
            .unwrap_or_else(|| panic!("no completed item for {id} in:\n{text}"))
    };
    let p1 = completed("p1");
    assert_eq!(p1["type"], "command_execution", "{p1}");
    assert_eq!(p1["command"], "rm -rf /");
    assert_eq!(p1["status"], "declined");
    assert_eq!(p1["blocked_by"], "guard");
    let p2 = completed("p2");
    assert_eq!(
        (&p2["type"], &p2["status"], &p2["exit_code"]),
        (&json!("command_execution"), &json!("completed"), &json!(0)),
        "{p2}"
    );
    assert_eq!(p2["aggregated_output"], "ran: echo hi\n");
    let e1 = completed("e1");
    assert_eq!(e1["type"], "tool_call", "{e1}");
    assert_eq!(e1["tool"], "echo_args");
    assert_eq!(e1["arguments"], json!({"command": "rm -rf /"}));
    assert_eq!(e1["status"], "completed");
    assert_eq!(e1["output"], "echo: rm -rf /");
}
