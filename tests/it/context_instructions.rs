//! End-to-end tests of project instructions: which AGENTS.md / CLAUDE.md files reach the system
//! prompt, in which order and where, the cut with its warning, subagents, and `hx context`.

use crate::support::{system_prompt, Call, FakeServer, Hx, Reply};

const SKILL: &str = "---\nname: deploy\ndescription: How to deploy\n---\nRun it.\n";

/// A repository with instruction files at three levels and a skill, hx started two levels
/// down, and the user's own file.
fn repo(hx: &mut Hx) {
    hx.write_file(".git/HEAD", "ref: refs/heads/main\n")
        .write_file("AGENTS.md", "ROOT-RULES\n")
        .write_file("CLAUDE.md", "ROOT-CLAUDE: not read, AGENTS.md is there\n")
        .write_file("sub/CLAUDE.md", "SUB-RULES\n")
        .write_file("sub/deeper/AGENTS.md", "DEEPER-RULES\n")
        .write_file(".agents/skills/deploy/SKILL.md", SKILL)
        .write_user_config("AGENTS.md", "USER-RULES\n")
        .current_dir_rel("sub/deeper");
}

/// Where `what` is in `text`, or a failure showing `text`.
fn at(text: &str, what: &str) -> usize {
    text.find(what)
        .unwrap_or_else(|| panic!("{what:?} not in:\n{text}"))
}

#[test]
fn the_user_s_file_then_the_root_s_down_to_the_working_directory_between_rules_and_catalog() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("g", "glob", r#"{"pattern":"*"}"#)]),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    repo(&mut hx);
    hx.args(["agent", "work"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    let reqs = server.requests();
    let prompt = system_prompt(&reqs[0].body);
    let order = [
        "You are hx, a coding agent",
        "# Project instructions",
        "(the user's own)\n\nUSER-RULES",
        "\n## AGENTS.md\n\nROOT-RULES",
        "\n## sub/CLAUDE.md\n\nSUB-RULES",
        "\n## sub/deeper/AGENTS.md\n\nDEEPER-RULES",
        "- deploy: How to deploy",
    ];
    let places: Vec<usize> = order.iter().map(|w| at(&prompt, w)).collect();
    assert!(
        places.windows(2).all(|w| w[0] < w[1]),
        "{places:?}\n{prompt}"
    );
    assert!(!prompt.contains("ROOT-CLAUDE"));
    // The same prompt for the whole run.
    assert_eq!(system_prompt(&reqs[1].body), prompt);
}

#[test]
fn over_the_cap_the_furthest_file_is_cut_with_a_marker_and_one_warning() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    hx.write_file(".git/HEAD", "ref: refs/heads/main\n")
        .write_file("AGENTS.md", &"r".repeat(200))
        .write_file("sub/AGENTS.md", &"s".repeat(60))
        .write_user_config("config.toml", "project_doc_max_bytes = 100\n")
        .current_dir_rel("sub");
    hx.args(["agent", "work"]);
    let run = hx.run();
    run.assert_code(0);
    let warnings: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("hx: warning"))
        .collect();
    assert_eq!(warnings.len(), 1, "{}", run.stderr);
    assert!(
        warnings[0].contains("project_doc_max_bytes (100 bytes)")
            && warnings[0].contains(": 160 bytes of AGENTS.md"),
        "{}",
        warnings[0]
    );
    let prompt = system_prompt(&server.requests()[0].body);
    let root = at(
        &prompt,
        &format!(
            "## AGENTS.md\n\n{}\n\n[hx: the last 160 bytes of this file are cut",
            "r".repeat(40)
        ),
    );
    assert!(root < at(&prompt, &format!("## sub/AGENTS.md\n\n{}", "s".repeat(60))));
    assert!(!prompt.contains(&"r".repeat(41)));
}

#[test]
fn no_project_doc_and_project_doc_false_leave_them_out() {
    let server = FakeServer::start(vec![Reply::text("a"), Reply::text("b"), Reply::text("c")]);
    let mut hx = Hx::new(&server);
    repo(&mut hx);
    hx.args(["agent", "--ephemeral", "--no-project-doc", "work"]);
    hx.run().assert_code(0);
    hx.write_user_config("config.toml", "project_doc = false\n");
    hx.clear_args().args(["agent", "--ephemeral", "work"]);
    hx.run().assert_code(0);
    hx.write_user_config("config.toml", "project_doc = true\n");
    hx.run().assert_code(0);
    let reqs = server.requests();
    for (i, has) in [(0, false), (1, false), (2, true)] {
        let prompt = system_prompt(&reqs[i].body);
        assert_eq!(prompt.contains("DEEPER-RULES"), has, "run {i}:\n{prompt}");
        assert_eq!(prompt.contains("# Project instructions"), has);
        assert!(prompt.contains("- deploy:"), "the catalog stays");
    }
}

#[test]
fn subagents_get_the_instructions_but_not_the_catalog() {
    let server = FakeServer::start(vec![
        Reply::tool_calls(vec![Call::new("t1", "task", r#"{"prompt":"look around"}"#)]),
        Reply::text("found"),
        Reply::text("done"),
    ]);
    let mut hx = Hx::new(&server);
    repo(&mut hx);
    hx.args(["agent", "delegate"]);
    hx.run().assert_code(0);
    let reqs = server.requests();
    let child = system_prompt(&reqs[1].body);
    assert!(child.starts_with("You are a subagent of hx"), "{child}");
    let order = ["USER-RULES", "ROOT-RULES", "SUB-RULES", "DEEPER-RULES"];
    let places: Vec<usize> = order.iter().map(|w| at(&child, w)).collect();
    assert!(places.windows(2).all(|w| w[0] < w[1]), "{child}");
    assert!(!child.contains("deploy"), "no catalog:\n{child}");
}

#[test]
fn an_instruction_file_linking_out_of_the_project_is_skipped_with_a_warning() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    hx.write_file(".git/HEAD", "ref: refs/heads/main\n");
    let secret = hx.home().join("secret.txt");
    std::fs::write(&secret, "TOP-SECRET\n").expect("secret");
    std::os::unix::fs::symlink(&secret, hx.workspace().join("AGENTS.md")).expect("link");
    hx.args(["agent", "work"]);
    let run = hx.run();
    run.assert_code(0);
    assert!(
        run.stderr.contains("AGENTS.md: a link to") && run.stderr.contains("outside the project"),
        "{}",
        run.stderr
    );
    let prompt = system_prompt(&server.requests()[0].body);
    assert!(!prompt.contains("TOP-SECRET"));
    assert!(!prompt.contains("# Project instructions"));
}

#[test]
fn hx_context_prints_the_prompt_a_run_starts_with_and_what_takes_its_room() {
    let server = FakeServer::start(vec![Reply::text("done")]);
    let mut hx = Hx::new(&server);
    repo(&mut hx);
    hx.args(["agent", "--ephemeral", "work"]);
    hx.run().assert_code(0);
    let prompt = system_prompt(&server.requests()[0].body);

    hx.env_remove("DEEPSEEK_API_KEY");
    let out = hx.run_args(&["context"]);
    out.assert_code(0);
    let (shown, table) = out
        .stdout
        .split_once("\n\npart ")
        .unwrap_or_else(|| panic!("no table:\n{}", out.stdout));
    assert_eq!(shown, prompt);
    for row in [
        "hx's own instructions",
        "the user's own)",
        "\nAGENTS.md ",
        "\nsub/CLAUDE.md ",
        "\nsub/deeper/AGENTS.md ",
        "\nskill catalog ",
        "\ntool schemas (10 tools) ",
        "\ntotal ",
        "\ncontext window: 1,048,576 tokens (deepseek-flash, built in); compaction at 838,860 tokens\n",
    ] {
        assert!(table.contains(row), "{row:?} not in:\n{table}");
    }
    let no_doc = hx.run_args(&["context", "--no-project-doc"]);
    assert!(!no_doc.stdout.contains("DEEPER-RULES"));
    // The sizes add up: the total is the prompt and the schemas.
    let total: usize = table
        .lines()
        .find(|l| l.starts_with("total "))
        .and_then(|l| l.split_whitespace().nth(1))
        .map(|n| n.replace(',', "").parse().expect("a number"))
        .expect("total row");
    assert!(total > prompt.len(), "{total} vs {}", prompt.len());
}
