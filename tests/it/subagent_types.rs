//! Subagent types from agent files (`.agents/agents`, `.claude/agents`, the user's), end to
//! end: what `task` offers, and what the typed subagent's requests hold.

use crate::support::{messages, tool_names, tool_results, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};

fn typed_call(id: &str, kind: &str, prompt: &str) -> Call {
    Call::new(
        id,
        "task",
        &json!({"description": "typed", "prompt": prompt, "subagent_type": kind}).to_string(),
    )
}

/// The `task` tool's spec in a request.
fn task_spec(body: &Value) -> &Value {
    body["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["function"]["name"] == "task")
        .expect("a task tool")
}

fn system(body: &Value) -> &str {
    messages(body)[0]["content"]
        .as_str()
        .expect("system prompt")
}

#[test]
fn a_typed_subagent_gets_its_body_its_mapped_tools_and_the_configured_model() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![typed_call("t1", "reviewer", "Review a.txt.")]),
        Reply::text("Looks fine."),
        Reply::text("Reviewed."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code: finds bugs\ntools: Read, Grep, Glob\nmodel: sonnet\ncolor: red\n---\nYou review code carefully.\n",
    )
    .write_file(
        ".agents/agents/writer.md",
        "---\nname: writer\ndescription: Writes docs\n---\nYou write docs.\n",
    )
    .args(["agent", "review it"]);
    // The user's: one shadowed by the project's reviewer, one of its own name.
    let home = hx.home().to_path_buf();
    for (rel, text) in [
        (
            ".claude/agents/reviewer.md",
            "---\nname: reviewer\ndescription: the user's reviewer\n---\nUser body.\n",
        ),
        (
            ".agents/agents/helper.md",
            "---\nname: helper\ndescription: Helps\n---\nYou help.\n",
        ),
    ] {
        let path = home.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    let run = hx.run();
    run.assert_code(0);
    assert_eq!(run.stdout, "Reviewed.\n");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);

    let description = task_spec(&reqs[0].body)["function"]["description"]
        .as_str()
        .expect("description");
    assert!(
        description.ends_with(
            "\n- helper: Helps\n- reviewer: Reviews code: finds bugs\n- writer: Writes docs"
        ),
        "{description}"
    );
    assert!(!description.contains("the user's reviewer"));
    assert_eq!(
        task_spec(&reqs[0].body)["function"]["parameters"]["properties"]["subagent_type"]["type"],
        "string"
    );

    let child = &reqs[1].body;
    assert_eq!(tool_names(child), ["read_file", "glob"]);
    let prompt = system(child);
    assert!(
        prompt.starts_with("You review code carefully.\n\nYou are a subagent of hx"),
        "{prompt}"
    );
    assert_eq!(messages(child)[1]["content"], "Review a.txt.");
    assert_eq!(
        child["model"], reqs[0].body["model"],
        "sonnet means inherit"
    );
    // The schema is the same bytes in every request of the run.
    assert_eq!(
        reqs[0].body["tools"].to_string(),
        reqs[2].body["tools"].to_string()
    );
    assert_eq!(tool_results(&reqs[2].body), ["Looks fine."]);
    for line in [
        "hx: warning: agent reviewer: model sonnet is Claude's; the configured model is used",
        "hx: warning: agent reviewer: tool Grep: hx has no such tool, left out",
        "is shadowed by",
    ] {
        assert!(run.stderr.contains(line), "{line:?} in\n{}", run.stderr);
    }
    assert_eq!(
        run.stderr.matches("model sonnet").count(),
        1,
        "one warning\n{}",
        run.stderr
    );
}

#[test]
fn a_definition_asking_for_task_todo_write_or_load_skill_gets_none_of_them() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![typed_call("t1", "boss", "Plan it.")]),
        Reply::text("Planned."),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/agents/boss.md",
        "---\nname: boss\ndescription: Delegates\ntools:\n  - Task\n  - TodoWrite\n  - load_skill\n  - Bash\n---\nYou delegate.\n",
    )
    .args(["agent", "plan"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(tool_names(&reqs[1].body), ["bash"]);
    for tool in ["Task", "TodoWrite", "load_skill"] {
        let line = format!(
            "agent boss: tool {tool}: a subagent never gets it (no task, todo_write or \
             load_skill in a subagent), left out"
        );
        assert!(run.stderr.contains(&line), "{line:?} in\n{}", run.stderr);
    }
}

#[test]
fn an_unknown_subagent_type_is_an_error_naming_the_known_ones() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![typed_call("t1", "nobody", "Do it.")]),
        Reply::text("Sorry."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/agents/a.md",
        "---\nname: alpha\ndescription: A\n---\nA.\n",
    )
    .write_file(
        ".claude/agents/b.md",
        "---\nname: beta\ndescription: B\nmodel: deepseek-reasoner\n---\nB.\n",
    )
    .args(["agent", "go"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "no subagent started");
    assert_eq!(
        tool_results(&reqs[1].body),
        ["Error: unknown subagent_type \"nobody\"; the defined ones are: alpha, beta (or leave it out for a general subagent)"]
    );
}

#[test]
fn a_retired_model_name_is_mapped_and_no_agents_leave_the_schema_as_it_was() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![typed_call("t1", "deep", "Think.")]),
        Reply::text("Thought."),
        Reply::text("Done."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/agents/deep.md",
        "---\nname: deep\ndescription: Thinks\nmodel: deepseek-reasoner\n---\nThink hard.\n",
    )
    .args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    // A retired name is the model that answers it now, thinking as it did: as for the main
    // agent's --model.
    assert_eq!(reqs[1].body["model"], "deepseek-flash");
    assert_eq!(reqs[1].body["thinking"]["type"], "enabled");
    assert_eq!(reqs[1].body["reasoning_effort"], "high");
    assert!(reqs[0].body.get("reasoning_effort").is_none());
    assert_eq!(
        run.stderr
            .matches("deepseek-reasoner was retired on 2026-07-24: using deepseek-flash with thinking on")
            .count(),
        1,
        "{}",
        run.stderr
    );
    // The generic subagent keeps all seven tools.
    assert_eq!(tool_names(&reqs[1].body).len(), 7);

    let plain = FakeServer::start(vec![Reply::text("hi")]);
    let mut hx = Hx::new(&plain);
    hx.args(["agent", "go"]);
    hx.run().assert_code(0);
    let spec = task_spec(&plain.requests()[0].body).clone();
    assert!(spec["function"]["parameters"]["properties"]
        .get("subagent_type")
        .is_none());
    assert!(!spec["function"]["description"]
        .as_str()
        .expect("description")
        .contains("Specialised"));
}

#[test]
fn hx_agents_lists_shows_and_checks() {
    let mut hx = crate::support::Hx::new_offline();
    hx.write_file(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews: code\ntools: Read, Grep, Task\nmodel: opus\n---\nYou review.\n",
    )
    .write_file(".agents/agents/notes.md", "just notes, no frontmatter\n")
    .args(["agents", "list"]);
    let run = hx.run();
    run.assert_code(0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].starts_with("NAME"), "{}", run.stdout);
    let row = lines
        .iter()
        .find(|l| l.starts_with("reviewer"))
        .expect("a row");
    for cell in [
        "project",
        "read_file",
        "(configured)",
        ".claude/agents/reviewer.md",
        "3 notes",
    ] {
        assert!(row.contains(cell), "{cell:?} in {row}");
    }
    assert!(
        run.stdout.contains("not read: no frontmatter"),
        "{}",
        run.stdout
    );

    let run = hx.run_args(&["agents", "show", "reviewer"]);
    run.assert_code(0);
    assert!(run.stdout.contains("tools: read_file\n"), "{}", run.stdout);
    assert!(run.stdout.ends_with("You review.\n"), "{}", run.stdout);
    assert!(run.stdout.contains("note: model opus is Claude's"));
    hx.run_args(&["agents", "show", "nobody"]).assert_code(1);

    let run = hx.run_args(&["agents", "check"]);
    run.assert_code(1);
    assert!(
        run.stdout
            .contains(".agents/agents/notes.md: error: no frontmatter"),
        "{}",
        run.stdout
    );
    assert!(run
        .stdout
        .contains("reviewer.md: warning: tool Grep: hx has no such tool"));
    let run = hx.run_args(&["agents", "check", ".claude/agents/reviewer.md"]);
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("1 agent file read: 1 used (1 with warnings)"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_mcp_tool_name_gives_that_tool_of_a_server_offered_to_subagents() {
    use crate::support::mcp::server_table;
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![typed_call("t1", "echoer", "Echo.")]),
        Reply::text("echoed"),
        Reply::tool_calls(vec![typed_call("t2", "whole", "All of both.")]),
        Reply::text("all"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    let config = [
        server_table("main", &[], ""),
        server_table("both", &[], "subagents = true"),
    ]
    .concat();
    hx.write_user_config("config.toml", &config)
        .write_file(
            ".claude/agents/echoer.md",
            "---\nname: echoer\ndescription: Echoes\ntools: Read, mcp__both__echo, mcp__main__echo, mcp__gone__x\n---\nEcho things.\n",
        )
        .write_file(
            ".claude/agents/whole.md",
            "---\nname: whole\ndescription: Every tool of a server\ntools: mcp__both\n---\nAll.\n",
        )
        .args(["agent", "delegate"]);
    let run = hx.run();
    run.assert_success();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "{}", run.dump());
    // A server named alone gives every tool of it, and no other.
    let whole = tool_names(&reqs[3].body);
    assert!(whole.contains(&"mcp__both__echo".to_string()), "{whole:?}");
    assert!(
        whole.iter().all(|n| n.starts_with("mcp__both__")),
        "{whole:?}"
    );
    assert!(tool_names(&reqs[0].body).contains(&"mcp__both__echo".to_string()));
    assert_eq!(tool_names(&reqs[1].body), ["read_file", "mcp__both__echo"]);
    for line in [
        "agent echoer: tool mcp__main__echo: MCP server main is not offered to subagents (subagents = true in its config), left out",
        "agent echoer: tool mcp__gone__x: no MCP server gone is configured, left out",
    ] {
        assert!(run.stderr.contains(line), "{line:?} in\n{}", run.stderr);
    }
}

/// The agent files a run read are kept in hx's cache while they are unchanged
/// (`agents::cache`): the second run takes them from it, and a file edited since is read again.
#[test]
fn unchanged_agent_files_come_from_the_cache_and_an_edited_one_is_read_again() {
    let server = FakeServer::start(vec![
        Reply::text("one"),
        Reply::text("two"),
        Reply::text("three"),
        Reply::text("four"),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file(
        ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Use when: code needs review\n---\nYou review.\n",
    )
    .write_file(
        ".claude/agents/writer.md",
        "---\nname: writer\ndescription: Writes docs\n---\nYou write.\n",
    )
    .args(["agent", "go"]);
    // A file changed in the last seconds is not kept; these were written before the run.
    std::thread::sleep(std::time::Duration::from_secs(
        hx::agents::cache::RACY_SECS + 1,
    ));
    let listed = |i: usize| {
        let reqs = server.requests();
        let d = task_spec(&reqs[i].body)["function"]["description"]
            .as_str()
            .expect("description")
            .to_string();
        d[d.find("\n- ").expect("a list")..].to_string()
    };
    let want = "\n- reviewer: Use when: code needs review\n- writer: Writes docs";
    hx.run().assert_code(0);
    assert_eq!(listed(0), want);
    let cache = hx
        .home()
        .join(".cache/hx")
        .join(hx::agents::cache::FILE_NAME);
    let mut disk: Value =
        serde_json::from_slice(&std::fs::read(&cache).expect("the cache is written"))
            .expect("json");
    assert_eq!(disk["entries"].as_array().map(Vec::len), Some(2));

    // What the cache says is what the second run offers: it did not parse the files.
    disk["entries"][1]["read"]["Ok"]["description"] = "Writes docs (cached)".into();
    std::fs::write(&cache, disk.to_string()).expect("write");
    hx.run().assert_code(0);
    assert_eq!(
        listed(1),
        "\n- reviewer: Use when: code needs review\n- writer: Writes docs (cached)"
    );

    // An edit is seen at once, though the cache still holds the old entry.
    hx.write_file(
        ".claude/agents/writer.md",
        "---\nname: writer\ndescription: Writes the docs\n---\nYou write.\n",
    );
    hx.run().assert_code(0);
    assert_eq!(
        listed(2),
        "\n- reviewer: Use when: code needs review\n- writer: Writes the docs"
    );

    // A damaged cache costs a read.
    std::fs::write(&cache, "{\"format\": 1, \"entries\": [").expect("write");
    hx.run().assert_code(0);
    assert_eq!(
        listed(3),
        "\n- reviewer: Use when: code needs review\n- writer: Writes the docs"
    );
}

/// A typed subagent on another model of the provider is that model's: its requests name it,
/// its usage is priced at its rates (in its session, in the Stop lines and against
/// `--max-cost`), and a retired name is mapped as it is for the main agent.
#[test]
fn a_typed_subagent_on_another_model_is_priced_and_mapped_as_that_model() {
    let deep = "---\nname: deep\ndescription: Thinks\nmodel: deepseek-v4-pro\n---\nThink hard.\n";
    // One subagent request of 1,000,000 prompt tokens (900,000 hits) and 10,000 out: at
    // deepseek-v4-pro's off-peak rates 0.9 * $0.022 + 0.1 * $0.66 + 0.01 * $1.98 = $0.1056
    // (at the parent's flash rates it would be $0.0237).
    let replies = || {
        vec![
            Reply::tool_calls(vec![typed_call("t1", "deep", "Think.")]),
            Reply::text("Thought.").with_usage(1_000_000, 900_000, 10_000),
            Reply::text("Done."),
        ]
    };
    let server = FakeServer::start(replies());
    let mut hx = Hx::new(&server);
    hx.write_file(".claude/agents/deep.md", deep)
        .args(["agent", "go"]);
    let run = hx.run();
    run.assert_code(0);
    let reqs = server.requests();
    assert_eq!(reqs[1].body["model"], "deepseek-v4-pro");
    assert!(
        run.stderr.contains("cost=$0.1056 cache=90%, duration="),
        "the SubagentStop line: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("(subagents $0.1056)"),
        "the Stop line: {}",
        run.stderr
    );
    let files = hx.session_files();
    let child = files
        .iter()
        .map(|f| crate::support::session_lines(f))
        .find(|lines| lines[0]["parent_id"].is_string())
        .expect("the subagent's session");
    assert_eq!(child[0]["model"], "deepseek-v4-pro");
    let usage = child.iter().find(|l| l["type"] == "usage").expect("usage");
    assert_eq!(usage["model"], "deepseek-v4-pro");
    assert_eq!(usage["cost"], 0.1056);
    let end = child.iter().find(|l| l["type"] == "end").expect("end");
    assert_eq!(end["session"]["cost"]["amount"], 0.1056);

    // --max-cost counts it at those rates: with the parent's first request ($0.0001 at the
    // fake server's usage) $0.1057 passes $0.05, so the parent's next request is never made.
    let server = FakeServer::start(replies());
    let mut hx = Hx::new(&server);
    hx.write_file(".claude/agents/deep.md", deep)
        .args(["agent", "--max-cost", "0.05", "go"]);
    let run = hx.run();
    run.assert_code(3);
    assert_eq!(server.requests().len(), 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("stopped: the run cost $0.1057 and passed --max-cost $0.0500"),
        "{}",
        run.stderr
    );
}

/// A standard Claude Code agent file: a Claude model and a tool hx lacks.
const CLAUDE_REVIEWER: &str = "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Glob, Grep\nmodel: sonnet\n---\nYou review.\n";

#[test]
fn a_claude_agent_file_s_notes_are_said_once_per_change_at_warning_level() {
    let server = FakeServer::start((0..5).map(|_| Reply::text("ok")).collect());
    let mut hx = Hx::new(&server);
    hx.write_file(".claude/agents/reviewer.md", CLAUDE_REVIEWER);
    let model =
        "hx: warning: agent reviewer: model sonnet is Claude's; the configured model is used";
    let grep = "hx: warning: agent reviewer: tool Grep: hx has no such tool, left out";
    // The first run says both, even with -q.
    let first = hx.run_args(&["agent", "-q", "x"]);
    first.assert_success();
    for line in [model, grep] {
        assert_eq!(first.stderr.matches(line).count(), 1, "{}", first.dump());
    }
    // The file has not changed: nothing more, in a run or in --json.
    let second = hx.run_args(&["agent", "x"]);
    second.assert_success();
    assert!(
        !second.stderr.contains("agent reviewer"),
        "{}",
        second.dump()
    );
    let json = hx.run_args(&["agent", "--json", "x"]);
    json.assert_success();
    assert!(!json.stdout.contains("agent reviewer"), "{}", json.dump());
    // Changed, it is said again: in --json as warning items, never as error items.
    hx.write_file(
        ".claude/agents/reviewer.md",
        &CLAUDE_REVIEWER.replace("Reviews code", "Reviews code for bugs"),
    );
    let changed = hx.run_args(&["agent", "--json", "x"]);
    changed.assert_success();
    let items: Vec<Value> = crate::support::json_lines(&changed.stdout)
        .into_iter()
        .filter(|e| {
            e["item"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("agent reviewer"))
        })
        .map(|e| e["item"].clone())
        .collect();
    assert_eq!(items.len(), 2, "{}", changed.stdout);
    for item in &items {
        assert_eq!(item["type"], "warning", "{item}");
    }
    assert_eq!(
        items[0]["message"],
        "agent reviewer: model sonnet is Claude's; the configured model is used"
    );
    let again = hx.run_args(&["agent", "x"]);
    assert!(!again.stderr.contains("agent reviewer"), "{}", again.dump());
    // `hx agents check` says it every time.
    for _ in 0..2 {
        let check = hx.run_args(&["agents", "check"]);
        assert!(
            check
                .stdout
                .contains("reviewer.md: warning: tool Grep: hx has no such tool"),
            "{}",
            check.dump()
        );
    }
}
