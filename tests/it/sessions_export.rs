//! `hx sessions export`: a real `hx agent` run against the fake server (tool calls, reasoning,
//! usage with cache hits, a priced model, a subagent), then exported as ATIF, Markdown and
//! the file's own lines, asserted on exactly and, when a Python with Harbor is at hand, checked
//! by Harbor's own validator.

use std::path::Path;

use crate::support::{session_id, session_lines, short_id, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};

/// The variable naming a Python that has Harbor installed (`pip install harbor==0.25.0`).
const HARBOR_PYTHON: &str = "HX_TEST_HARBOR_PYTHON";

/// Harbor's validator on `file`: `python -m harbor.utils.trajectory_validator FILE`, which
/// exits 0 and says the trajectory is valid. Skipped, with the reason, without a Python that
/// has Harbor; a variable that is set but names none fails the test.
fn harbor_accepts(file: &Path) {
    let Some(python) = std::env::var_os(HARBOR_PYTHON) else {
        eprintln!(
            "skipped: Harbor's validator was not run on {}: {HARBOR_PYTHON} is not set. Set it \
             to a Python that has Harbor installed (python -m venv /tmp/hv && /tmp/hv/bin/pip \
             install harbor==0.25.0, then {HARBOR_PYTHON}=/tmp/hv/bin/python) to check the ATIF \
             export with it.",
            file.display()
        );
        return;
    };
    let out = std::process::Command::new(&python)
        .args(["-m", "harbor.utils.trajectory_validator"])
        .arg(file)
        .output()
        .unwrap_or_else(|e| panic!("{HARBOR_PYTHON}={python:?} does not run: {e}"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("Trajectory is valid"),
        "Harbor's validator refused {}:\n{said}",
        file.display()
    );
    eprintln!("Harbor's validator: {}", said.trim());
}

/// The session's lines of `kind` (`message`s by role).
fn lines_of<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["type"] == kind || l["message"]["role"] == kind)
        .collect()
}

/// One task: a turn that says something, thinks, and calls bash and glob; their results; an
/// answer. DeepSeek's model (priced), with cache hits.
fn run_one_task() -> (Hx, String) {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            Call::new("c1", "bash", r#"{"command":"printf 'a```b\\n'"}"#),
            Call::new("c2", "glob", r#"{"pattern":"*.txt"}"#),
        ])
        .with_content("Let me look.")
        .with_usage(1200, 1024, 100),
        Reply::text("There is a.txt.").with_usage(1500, 1280, 40),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("a.txt", "x").args(["agent", "what is here?"]);
    hx.run().assert_success();
    let id = session_id(&hx.session_files()[0]);
    (hx, id)
}

#[test]
fn atif_has_each_step_with_its_calls_results_and_metrics_and_harbor_accepts_it() {
    let (hx, id) = run_one_task();
    let lines = session_lines(&hx.session_files()[0]);
    let run = hx.run_args(&["sessions", "export", short_id(&id), "--format", "atif"]);
    run.assert_success();
    assert_eq!(run.stderr, "");
    let t: Value = serde_json::from_str(&run.stdout).expect("one JSON document");

    // What the run recorded, to compare with: the system prompt, the results, the usage.
    let system = lines_of(&lines, "system")[0]["message"]["content"].clone();
    let results = lines_of(&lines, "tool");
    let usage = lines_of(&lines, "usage");
    assert_eq!(usage.len(), 2);
    let end = lines_of(&lines, "end")[0];
    let cost = |u: &Value| u["cost"].as_f64().expect("priced");
    assert!(cost(usage[0]) > 0.0);
    let reasoning_tokens = usage[0]["reasoning_tokens"].as_u64().expect("counted");

    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["session_id"], id.as_str());
    assert_eq!(
        t["agent"],
        json!({"name": "hx", "version": env!("CARGO_PKG_VERSION"),
               "model_name": "deepseek-flash"})
    );
    assert_eq!(
        t["steps"],
        json!([
            {"step_id": 1, "source": "system", "message": system},
            {"step_id": 2, "source": "user", "message": "what is here?"},
            {
                "step_id": 3, "source": "agent", "model_name": "deepseek-flash",
                "message": "Let me look.",
                "reasoning_content": "I should look at the workspace with a tool before answering.",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "bash",
                     "arguments": {"command": "printf 'a```b\\n'"}},
                    {"tool_call_id": "c2", "function_name": "glob",
                     "arguments": {"pattern": "*.txt"}},
                ],
                "observation": {"results": [
                    {"source_call_id": "c1", "content": results[0]["message"]["content"]},
                    {"source_call_id": "c2", "content": results[1]["message"]["content"]},
                ]},
                "metrics": {"prompt_tokens": 1200, "completion_tokens": 100,
                            "cached_tokens": 1024, "cost_usd": cost(usage[0]),
                            "extra": {"reasoning_tokens": reasoning_tokens}},
                "llm_call_count": 1,
            },
            {
                "step_id": 4, "source": "agent", "model_name": "deepseek-flash",
                "message": "There is a.txt.",
                "reasoning_content": "The user wants a direct answer. I will keep it short.",
                "metrics": {"prompt_tokens": 1500, "completion_tokens": 40,
                            "cached_tokens": 1280, "cost_usd": cost(usage[1]),
                            "extra": {"reasoning_tokens": usage[1]["reasoning_tokens"]}},
                "llm_call_count": 1,
            },
        ])
    );
    assert_eq!(results[0]["message"]["content"], "a```b\n");
    assert_eq!(results[1]["message"]["content"], "a.txt");
    let session = &end["session"];
    assert_eq!(
        t["final_metrics"],
        json!({
            "total_prompt_tokens": 2700, "total_completion_tokens": 140,
            "total_cached_tokens": 2304, "total_cost_usd": session["cost"]["amount"],
            "total_steps": 4,
            "extra": {"turns": 2, "tool_calls": 2, "blocked": 0,
                      "reasoning_tokens": session["reasoning_tokens"]},
        })
    );
    assert_eq!(t["extra"]["runs"][0]["outcome"], "answered");
    assert_eq!(t["extra"]["provider"], "deepseek");

    // -o writes the same document, replacing what was there.
    let file = hx.workspace().join("out/trajectory.json");
    std::fs::create_dir_all(file.parent().expect("folder")).expect("mkdir");
    std::fs::write(&file, "old").expect("write");
    let to_file = hx.run_args(&[
        "sessions",
        "export",
        &id,
        "--format",
        "atif",
        "-o",
        &file.to_string_lossy(),
    ]);
    to_file.assert_success();
    assert_eq!(to_file.stdout, "");
    assert_eq!(std::fs::read_to_string(&file).expect("written"), run.stdout);
    harbor_accepts(&file);
}

#[test]
fn a_subagents_session_is_embedded_and_its_task_call_refers_to_it() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new(
            "t1",
            "task",
            &json!({"description": "look", "prompt": "List the text files."}).to_string(),
        )]),
        Reply::tool_calls(vec![Call::new("g1", "glob", r#"{"pattern":"*.txt"}"#)]),
        Reply::text("One file: a.txt."),
        Reply::text("The subagent found a.txt."),
    ]);
    let mut hx = Hx::new(&server);
    hx.write_file("a.txt", "x").args(["agent", "what files?"]);
    hx.run().assert_success();
    let files = hx.session_files();
    assert_eq!(files.len(), 2);
    let (parent, child) = (session_id(&files[0]), session_id(&files[1]));

    let run = hx.run_args(&["sessions", "export", &parent, "--format", "atif"]);
    run.assert_success();
    let t: Value = serde_json::from_str(&run.stdout).expect("json");
    assert_eq!(
        t["steps"][2]["observation"]["results"],
        json!([{"source_call_id": "t1", "content": "One file: a.txt.",
                "subagent_trajectory_ref": [{"trajectory_id": child, "session_id": child}]}])
    );
    let subs = t["subagent_trajectories"].as_array().expect("embedded");
    assert_eq!(subs.len(), 1);
    let sub = &subs[0];
    assert_eq!(sub["trajectory_id"], child.as_str());
    assert_eq!(sub["extra"]["parent_session_id"], parent.as_str());
    assert_eq!(sub["extra"]["parent_call_id"], "t1");
    let sub_steps: Vec<&str> = sub["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| s["source"].as_str().expect("source"))
        .collect();
    assert_eq!(sub_steps, ["system", "user", "agent", "agent"]);
    assert_eq!(sub["steps"][1]["message"], "List the text files.");
    assert_eq!(
        sub["steps"][2]["observation"]["results"][0],
        json!({"source_call_id": "g1", "content": "a.txt"})
    );
    // The parent's cost counts its subagent's, as ATIF's total_cost_usd says.
    let cost = |f: &Path| {
        session_lines(f).last().expect("end")["session"]["cost"]["nanos"]
            .as_u64()
            .expect("priced")
    };
    let both = (cost(&files[0]) + cost(&files[1])) as f64 / 1e9;
    let total = t["final_metrics"]["total_cost_usd"]
        .as_f64()
        .expect("total");
    assert!((total - both).abs() < 1e-12, "{total} != {both}");

    let file = hx.workspace().join("trajectory.json");
    std::fs::write(&file, &run.stdout).expect("write");
    harbor_accepts(&file);

    // The subagent's own session exports alone, naming its parent.
    let alone = hx.run_args(&["sessions", "export", &child, "--format", "atif"]);
    alone.assert_success();
    let a: Value = serde_json::from_str(&alone.stdout).expect("json");
    assert_eq!(a["extra"]["parent_session_id"], parent.as_str());
    assert!(a.get("subagent_trajectories").is_none());

    // Markdown nests it under the call.
    let md = hx.run_args(&["sessions", "export", &parent, "--format", "markdown"]);
    md.assert_success();
    let call = md.stdout.find("Tool call `task` (`t1`):").expect("call");
    let nested = md.stdout.find("### Subagent\n").expect("subagent");
    let child_task = md
        .stdout
        .find("List the text files.\n```")
        .expect("child task");
    let answer = md.stdout.find("The subagent found a.txt.").expect("answer");
    assert!(
        call < nested && nested < child_task && child_task < answer,
        "{}",
        md.stdout
    );
}

#[test]
fn markdown_shows_each_message_call_and_result_in_fences_their_text_cannot_close() {
    let (hx, id) = run_one_task();
    let run = hx.run_args(&["sessions", "export", &id, "--format", "markdown"]);
    run.assert_success();
    let md = &run.stdout;
    assert!(md.starts_with("# what is here\\?\n\n"), "{md}");
    for part in [
        "- Model: `deepseek-flash` (`deepseek`)\n",
        "- Runs: 1, the last `answered`\n",
        "- Figures: 2 turns, 2 tool calls (0 blocked); 2,700 prompt tokens (2,304 cache hits), \
         140 completion tokens",
        "## User\n\n```text\nwhat is here?\n```\n\n## Assistant\n\nReasoning:\n\n```text\nI \
         should look at the workspace with a tool before answering.\n```\n\n```text\nLet me \
         look.\n```\n\nTool call `bash` (`c1`):\n\n````json\n{\n  \"command\": \"printf \
         'a```b\\\\n'\"\n}\n````\n\nResult:\n\n````text\na```b\n````\n\nTool call `glob` (`c2`):\n\n\
         ```json\n{\n  \"pattern\": \"*.txt\"\n}\n```\n\nResult:\n\n```text\na.txt\n```\n\n\
         ## Assistant\n\nReasoning:\n\n",
        "```text\nThere is a.txt.\n```\n\n*Run 1 ended: `answered`.*\n",
    ] {
        assert!(md.contains(part), "{part:?} not in:\n{md}");
    }
    // No system prompt.
    assert!(!md.contains("## System"), "{md}");

    let file = hx.workspace().join("session.md");
    let to_file = hx.run_args(&[
        "sessions",
        "export",
        &id,
        "--format",
        "markdown",
        "--output",
        &file.to_string_lossy(),
    ]);
    to_file.assert_success();
    assert_eq!(std::fs::read_to_string(&file).expect("written"), *md);
}

#[test]
fn jsonl_is_the_file_as_recorded_and_ids_are_found_as_show_finds_them() {
    let (mut hx, id) = run_one_task();
    let recorded = std::fs::read_to_string(&hx.session_files()[0]).expect("read");
    // From another folder of the machine: found as -r finds it.
    hx.current_dir_rel("elsewhere/deep");
    let run = hx.run_args(&["sessions", "export", short_id(&id), "--format", "jsonl"]);
    run.assert_success();
    assert_eq!(run.stdout, recorded);

    let file = hx.workspace().join("copy.jsonl");
    hx.run_args(&[
        "sessions",
        "export",
        &id,
        "--format",
        "jsonl",
        "-o",
        &file.to_string_lossy(),
    ])
    .assert_success();
    assert_eq!(std::fs::read_to_string(&file).expect("copy"), recorded);

    // A torn last line (a crash mid-write) is left out, with the reader's warning.
    let path = hx.session_files()[0].clone();
    std::fs::write(&path, format!("{recorded}{{\"type\":\"usa")).expect("tear");
    let torn = hx.run_args(&["sessions", "export", &id, "--format", "jsonl"]);
    torn.assert_success();
    assert_eq!(torn.stdout, recorded);
    assert!(torn.stderr.contains("is incomplete"), "{}", torn.stderr);

    // Damage inside is an error naming the file and the line; nothing is written.
    std::fs::write(&path, format!("{recorded}not json\n")).expect("damage");
    let out = hx.workspace().join("never.json");
    for format in ["jsonl", "atif", "markdown"] {
        let bad = hx.run_args(&[
            "sessions",
            "export",
            &id,
            "--format",
            format,
            "-o",
            &out.to_string_lossy(),
        ]);
        bad.assert_code(1);
        assert!(
            bad.stderr.contains(&format!("{id}.jsonl: line ")),
            "{}",
            bad.stderr
        );
        assert!(!out.exists());
    }

    // An unknown id is a usage error; so is a format hx does not write.
    let unknown = hx.run_args(&["sessions", "export", "ffffffffff", "--format", "atif"]);
    unknown.assert_code(2);
    let format = hx.run_args(&["sessions", "export", &id, "--format", "html"]);
    format.assert_code(2);
    assert!(format.stderr.contains("atif"), "{}", format.stderr);
}
