//! End-to-end tests of on-demand skills: the catalog in the first request's system prompt,
//! `load_skill` results as tool messages, the trace lines, and `hx skills`.

use crate::support::{system_prompt, tool_messages, tool_results, Call, FakeServer, Hx, Reply};
use serde_json::{json, Value};

const DEPLOY: &str = "---\nname: deploy\ndescription: >\n  Ship the service to production:\n  build, tag and roll out.\nlicense: MIT\nmetadata:\n  owner: ops\n---\n\n# Deploy\n\nRun scripts/run.sh, never by hand.\nA literal </skill> stays inside.\n";
const REVIEW: &str = "\u{feff}---\r\nname: review\r\ndescription: \"Review a change: check \\\"tests\\\" first\"\r\n---\r\nReview body line.\r\n";

/// A workspace with project skills, a broken one, a nested one and a shadowed user skill.
fn fixture(hx: &mut Hx) {
    hx.write_file(".agents/skills/deploy/SKILL.md", DEPLOY)
        .write_file(".agents/skills/deploy/scripts/run.sh", "echo deploy\n")
        .write_file(".agents/skills/deploy/references/guide.md", "# Guide\n")
        .write_file(".agents/skills/review/SKILL.md", REVIEW)
        .write_file(
            ".agents/skills/broken/SKILL.md",
            "---\nname: broken\n---\nNo description.\n",
        )
        .write_file(
            ".agents/skills/group/inner/SKILL.md",
            "---\ndescription: Nested skill: found by the recursive walk\n---\nInner body.\n",
        );
    let user = hx.home().join(".agents/skills/deploy");
    std::fs::create_dir_all(&user).expect("user skill dir");
    std::fs::write(
        user.join("SKILL.md"),
        "---\nname: deploy\ndescription: The user's deploy\n---\nUser body.\n",
    )
    .expect("user skill");
}

fn load(id: &str, args: Value) -> Call {
    Call::new(id, "load_skill", &args.to_string())
}

#[test]
fn catalog_in_the_prompt_and_bodies_only_on_demand() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            load("l1", json!({"name": "deploy"})),
            load("l2", json!({"name": "review"})),
        ]),
        Reply::tool_calls(vec![
            load("l3", json!({"name": "deploy"})),
            load("l4", json!({"name": "nope"})),
            load("l5", json!({"name": "  "})),
            load("l6", json!({"name": 3})),
        ]),
        Reply::text("loaded"),
    ]);
    let mut hx = Hx::new(&server);
    fixture(&mut hx);
    hx.args(["agent", "-v", "deploy the service"]);
    let run = hx.run();
    run.assert_code(0);

    let reqs = server.requests();
    let system = system_prompt(&reqs[0].body);
    for line in [
        "- deploy: Ship the service to production: build, tag and roll out.\n",
        "- inner: Nested skill: found by the recursive walk\n",
        "- review: Review a change: check \"tests\" first",
        "call `load_skill`",
    ] {
        assert!(
            system.contains(line),
            "system prompt lacks {line:?}:\n{system}"
        );
    }
    assert!(
        !system.contains("broken"),
        "a skill without description is skipped"
    );
    assert!(
        !system.contains("Run scripts/run.sh"),
        "no body in the prompt"
    );
    assert!(
        !system.contains("The user's deploy"),
        "the project skill shadows the user's"
    );
    // The system prompt never changes during a run.
    for r in &reqs[1..] {
        assert_eq!(r.body["messages"][0]["content"], system.as_str());
    }

    let first = tool_results(&reqs[1].body);
    assert_eq!(
        first[0],
        "<skill name=\"deploy\">\n# Deploy\n\nRun scripts/run.sh, never by hand.\nA literal <\\/skill> stays inside.\n\n\
         Other files in this skill (read them with read_file when the instructions call for them):\n\
         - .agents/skills/deploy/references/guide.md\n\
         - .agents/skills/deploy/scripts/run.sh\n</skill>"
    );
    assert_eq!(
        first[1],
        "<skill name=\"review\">\nReview body line.\n</skill>"
    );
    let second = tool_results(&reqs[2].body);
    assert_eq!(
        second[2],
        "Skill deploy is already loaded above in this conversation; follow those instructions."
    );
    assert_eq!(
        second[3],
        "Error: unknown skill nope. Available: deploy, inner, review"
    );
    assert_eq!(
        second[4],
        "Error: load_skill.name must be a non-empty string"
    );
    assert_eq!(
        second[5],
        "Error: load_skill.name must be a non-empty string"
    );

    let n = first[0].chars().count();
    for line in [
        "> load_skill name=deploy\n".to_string(),
        "[HOOK] PreToolUse load_skill({\"name\":\"deploy\"})\n".to_string(),
        format!("[HOOK] PostToolUse load_skill output_chars={n}\n"),
    ] {
        assert!(
            run.stderr.contains(&line),
            "missing {line:?} in\n{}",
            run.stderr
        );
    }
    assert!(
        run.stderr.contains("broken"),
        "broken skill warned about: {}",
        run.stderr
    );
    assert!(
        run.stderr.contains("shadow"),
        "shadowed skill warned about: {}",
        run.stderr
    );

    // `hx skills show` prints exactly what load_skill returned.
    let mut show = Hx::new_offline();
    fixture(&mut show);
    show.env_remove("DEEPSEEK_API_KEY")
        .args(["skills", "show", "deploy"]);
    let out = show.run();
    out.assert_code(0);
    assert_eq!(out.stdout, format!("{}\n", first[0]));
}

#[test]
fn no_skills_is_said_in_one_line() {
    let server = FakeServer::start(vec![Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    let system = system_prompt(&server.requests()[0].body);
    assert!(system.ends_with("No skills are available."), "{system}");
}

#[test]
fn many_skills_keep_every_name_within_the_budget() {
    let server = FakeServer::start(vec![Reply::text("ok")]);
    let mut hx = Hx::new(&server);
    let long = "word ".repeat(150);
    for i in 0..300 {
        hx.write_file(
            &format!(".agents/skills/s{i:03}/SKILL.md"),
            &format!("---\nname: s{i:03}\ndescription: {long}\n---\nbody {i}\n"),
        );
    }
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    let system = system_prompt(&server.requests()[0].body);
    for i in 0..300 {
        assert!(system.contains(&format!("- s{i:03}:")), "s{i:03} dropped");
    }
    let catalog = &system[system
        .find("These are the available skills")
        .expect("intro")..];
    assert!(
        catalog.chars().count() <= 8_000,
        "{}",
        catalog.chars().count()
    );
}

#[test]
fn skills_list_show_and_check_work_without_a_key() {
    let mut hx = Hx::new_offline();
    fixture(&mut hx);
    hx.write_file(
        ".agents/skills/Bad_Name/SKILL.md",
        "---\nname: Bad_Name\ndescription: x\nfrobs: 1\n---\nbody\n",
    );
    hx.env_remove("DEEPSEEK_API_KEY");

    let out = hx.clear_args().args(["skills", "list", "--json"]).run();
    out.assert_code(0);
    let rows: Value = serde_json::from_str(&out.stdout).expect("JSON list");
    let names: Vec<&str> = rows
        .as_array()
        .expect("array")
        .iter()
        .map(|r| r["name"].as_str().expect("name"))
        .collect();
    // The folder whose SKILL.md does not parse is listed, as not loaded.
    assert_eq!(names, ["Bad_Name", "broken", "deploy", "inner", "review"]);
    assert_eq!(rows[1]["loaded"], false);
    assert_eq!(rows[2]["source"], "project");

    let out = hx.clear_args().args(["skills", "list"]).run();
    out.assert_code(0);
    assert!(out.stdout.starts_with("NAME"), "{}", out.stdout);
    assert!(out.stdout.contains(".agents/skills/review/SKILL.md"));

    let out = hx.clear_args().args(["skills", "show", "nope"]).run();
    out.assert_code(2);
    assert!(out
        .stderr
        .contains("unknown skill nope. Available: Bad_Name, deploy, inner, review"));

    let out = hx.clear_args().args(["skills", "check"]).run();
    out.assert_code(1);
    for s in [
        ".agents/skills/Bad_Name/SKILL.md: error:",
        ".agents/skills/Bad_Name/SKILL.md: warning:",
        ".agents/skills/broken/SKILL.md: error:",
    ] {
        assert!(out.stdout.contains(s), "missing {s:?} in\n{}", out.stdout);
    }
    let out = hx
        .clear_args()
        .args(["skills", "check", ".agents/skills/review"])
        .run();
    out.assert_code(0);
}

#[test]
fn user_skill_files_are_readable_but_not_writable() {
    let mut hx = Hx::new_offline();
    let dir = hx.home().join(".agents/skills/notes");
    std::fs::create_dir_all(dir.join("refs")).expect("user skill dir");
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: notes\ndescription: Notes\n---\nRead refs/style.md.\n",
    )
    .expect("skill");
    std::fs::write(dir.join("refs/style.md"), "Use short lines.\n").expect("ref");
    let style = dir.join("refs/style.md").canonicalize().expect("canonical");
    let style = style.to_str().expect("utf8").to_string();
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![
            load("l1", json!({"name": "notes"})),
            Call::new("r1", "read_file", &json!({ "path": style }).to_string()),
            Call::new(
                "w1",
                "write_file",
                &json!({"path": style, "content": "x"}).to_string(),
            ),
        ]),
        Reply::text("ok"),
    ]);
    hx.env("DEEPSEEK_BASE_URL", server.url())
        .args(["agent", "take notes"]);
    hx.run().assert_code(0);
    let tools = tool_results(&server.requests()[1].body);
    assert!(tools[0].contains(&format!("- {style}\n")), "{}", tools[0]);
    assert_eq!(tools[1], "Use short lines.\n");
    assert_eq!(tools[2], format!("Error: path escapes workspace: {style}"));
    assert_eq!(
        std::fs::read_to_string(&style).expect("still there"),
        "Use short lines.\n"
    );
}

#[test]
fn a_project_with_only_claude_skills_is_listed() {
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY");
    let out = hx.args(["skills", "list"]).run();
    out.assert_code(0);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "hx: no skills found (looked in .agents/skills and .claude/skills of the nearest folder \
         at or above this one that has either, and in ~/.agents/skills and ~/.claude/skills)\n"
    );

    hx.write_file(
        ".claude/skills/lint/SKILL.md",
        "---\nname: lint\ndescription: Run the linter\n---\nRun cargo clippy.\n",
    );
    let out = hx.clear_args().args(["skills", "list", "--json"]).run();
    out.assert_code(0);
    let rows: Value = serde_json::from_str(&out.stdout).expect("JSON list");
    assert_eq!(rows.as_array().map(Vec::len), Some(1), "{rows}");
    assert_eq!(rows[0]["name"], "lint");
    assert_eq!(rows[0]["source"], "project");
    assert_eq!(rows[0]["description"], "Run the linter");
}

#[test]
fn check_takes_relative_paths_inside_a_skill_folder() {
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY")
        .write_file(
            ".agents/skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: Ship it\n---\nBody\n",
        )
        .write_file(
            ".agents/skills/other/SKILL.md",
            "---\nname: renamed\ndescription: Misnamed\n---\nBody\n",
        );
    hx.current_dir_rel(".agents/skills/deploy");
    for path in [".", "SKILL.md", "./SKILL.md"] {
        let out = hx.clear_args().args(["skills", "check", path]).run();
        out.assert_code(0);
        assert_eq!(out.stdout, "", "check {path}");
        assert_eq!(out.stderr, "hx: 0 errors, 0 warnings\n", "check {path}");
    }
    // A real mismatch is still named with the folder's own name.
    hx.current_dir_rel(".agents/skills/other");
    let out = hx.clear_args().args(["skills", "check", "."]).run();
    out.assert_code(1);
    assert_eq!(
        out.stdout,
        "./SKILL.md: error: name renamed does not match its folder name other\n"
    );
    assert_eq!(out.stderr, "hx: 1 error, 0 warnings\n");
}

#[test]
fn skills_check_with_warnings_alone_exits_0() {
    let mut hx = Hx::new_offline();
    hx.write_file(
        ".agents/skills/tidy/SKILL.md",
        "---\nname: tidy\ndescription: Tidy up\nfrobs: 1\n---\nbody\n",
    )
    .env_remove("DEEPSEEK_API_KEY")
    .args(["skills", "check"]);
    let out = hx.run();
    out.assert_code(0);
    assert!(
        out.stdout
            .starts_with(".agents/skills/tidy/SKILL.md: warning: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stderr.contains("hx: 0 errors, 1 warning\n"),
        "{}",
        out.stderr
    );
}

/// The catalog section of a system prompt: from the intro to the end.
fn catalog_of(system: &str) -> &str {
    &system[system
        .find("These are the available skills")
        .expect("intro")..]
}

#[test]
fn names_over_64_characters_are_refused_and_the_budget_holds() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![load("l1", json!({"name": "a".repeat(65)}))]),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    let long = "a".repeat(65);
    let huge = "b".repeat(50_000);
    let folder = "c".repeat(70);
    hx.write_file(
        ".agents/skills/ok/SKILL.md",
        "---\nname: ok\ndescription: Fine\n---\nbody\n",
    )
    .write_file(
        ".agents/skills/long/SKILL.md",
        &format!("---\nname: {long}\ndescription: Long name\n---\nbody\n"),
    )
    .write_file(
        ".agents/skills/huge/SKILL.md",
        &format!("---\nname: {huge}\ndescription: Huge name\n---\nbody\n"),
    )
    // Without a name field the folder's name is used, and held to the same limit.
    .write_file(
        &format!(".agents/skills/{folder}/SKILL.md"),
        "---\ndescription: Long folder\n---\nbody\n",
    )
    // A description is cut to 1,024 characters, however long.
    .write_file(
        ".agents/skills/wordy/SKILL.md",
        &format!(
            "---\nname: wordy\ndescription: {}\n---\nbody\n",
            "w".repeat(5_000)
        ),
    );
    hx.args(["agent", "x"]);
    let run = hx.run();
    run.assert_code(0);
    let ws = hx.workspace().canonicalize().expect("canonical");
    for (dir, n) in [("long", 65), ("huge", 50_000), (folder.as_str(), 70)] {
        let line = format!(
            "hx: warning: skipping skill {}: name is {n} characters, more than 64\n",
            ws.join(".agents/skills")
                .join(dir)
                .join("SKILL.md")
                .display()
        );
        assert!(
            run.stderr.contains(&line),
            "missing {line:?} in\n{}",
            run.stderr
        );
    }
    let reqs = server.requests();
    let system = system_prompt(&reqs[0].body);
    let catalog = catalog_of(&system);
    assert!(
        catalog.chars().count() <= 8_000,
        "{}",
        catalog.chars().count()
    );
    let lines: Vec<&str> = catalog.lines().filter(|l| l.starts_with("- ")).collect();
    assert_eq!(
        lines,
        [
            "- ok: Fine".to_string(),
            format!("- wordy: {}…", "w".repeat(1023))
        ]
    );
    let tool = tool_messages(&reqs[1].body)
        .first()
        .and_then(|m| m["content"].as_str())
        .expect("tool message")
        .to_string();
    assert_eq!(
        tool,
        format!("Error: unknown skill {long}. Available: ok, wordy")
    );

    // `hx skills check` says why, in lines of bounded length.
    let out = hx
        .env_remove("DEEPSEEK_API_KEY")
        .clear_args()
        .args(["skills", "check"])
        .run();
    out.assert_code(1);
    for s in [
        ".agents/skills/huge/SKILL.md: error: name is 50000 characters, more than 64\n",
        ".agents/skills/long/SKILL.md: error: name is 65 characters, more than 64\n",
        ".agents/skills/wordy/SKILL.md: error: description is 5000 characters, more than 1024\n",
    ] {
        assert!(out.stdout.contains(s), "missing {s:?} in\n{}", out.stdout);
    }
    let longest = out.stdout.lines().map(|l| l.chars().count()).max();
    assert!(longest < Some(400), "a line of {longest:?} characters");
}

#[test]
fn names_alone_over_the_budget_are_listed_as_far_as_they_fit() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![load(
            "l1",
            json!({"name": format!("{:z<64}", "s199-")}),
        )]),
        Reply::text("ok"),
    ]);
    let mut hx = Hx::new(&server);
    // 200 names of 64 characters take about 13,400 characters without any description.
    let name = |i: usize| format!("{:z<64}", format!("s{i:03}-"));
    for i in 0..200 {
        hx.write_file(
            &format!(".agents/skills/{}/SKILL.md", name(i)),
            &format!(
                "---\nname: {}\ndescription: Skill {i}\n---\nBody {i}.\n",
                name(i)
            ),
        );
    }
    hx.args(["agent", "x"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let system = system_prompt(&reqs[0].body);
    let catalog = catalog_of(&system);
    assert!(
        catalog.chars().count() <= 8_000,
        "{}",
        catalog.chars().count()
    );
    let lines: Vec<&str> = catalog.lines().filter(|l| l.starts_with("- ")).collect();
    let listed = lines.len() - 1;
    assert!(listed > 100, "{listed}");
    for (i, line) in lines[..listed].iter().enumerate() {
        assert_eq!(*line, format!("- {}", name(i)));
    }
    assert_eq!(
        lines[listed],
        format!(
            "- … and {} more, not listed for lack of room (load_skill with a name it does not know lists them all)",
            200 - listed
        )
    );
    // An unlisted skill still loads.
    let tool = tool_messages(&reqs[1].body)
        .first()
        .and_then(|m| m["content"].as_str())
        .expect("tool message")
        .to_string();
    assert_eq!(
        tool,
        format!("<skill name=\"{}\">\nBody 199.\n</skill>", name(199))
    );
}
