//! `hx skills list`, `show` and `check` tell one story about the same files: what check fails,
//! list marks, and show says why a skill folder is not loaded.

use crate::support::Hx;
use serde_json::Value;

/// A valid skill, one whose name breaks the specification, and one that does not parse.
fn fixture() -> Hx {
    let mut hx = Hx::new_offline();
    hx.env_remove("DEEPSEEK_API_KEY")
        .write_file(
            ".agents/skills/deploy/SKILL.md",
            "---\nname: deploy\ndescription: Ship it\n---\nSteps.\n",
        )
        .write_file(
            ".agents/skills/lint/SKILL.md",
            "---\nname: Lint_Now\ndescription: Run the linter\n---\nRun it.\n",
        )
        .write_file(
            ".agents/skills/broken/SKILL.md",
            "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
        );
    hx
}

#[test]
fn list_marks_the_skills_check_finds_invalid() {
    let hx = fixture();
    let out = hx.run_args(&["skills", "list"]);
    out.assert_code(0);
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("no row for {name}\n{}", out.dump()))
            .to_string()
    };
    assert!(out.stdout.starts_with("NAME"), "{}", out.dump());
    assert!(row("deploy").contains("  ok  "), "{}", out.dump());
    assert!(row("Lint_Now").contains("  2 errors  "), "{}", out.dump());
    // The file that does not parse is a row too, with check's error, and not also a warning.
    let broken = row("broken");
    assert!(broken.contains("  not loaded  "), "{}", out.dump());
    assert!(
        broken.contains(".agents/skills/broken/SKILL.md"),
        "{broken}"
    );
    assert!(!out.stderr.contains("skipping skill"), "{}", out.dump());
    assert!(
        out.stderr.contains(
            "hx: 2 of these skills fail the specification (1 not loaded: the agent cannot use \
             it); hx skills check says why"
        ),
        "{}",
        out.dump()
    );

    let out = hx.run_args(&["skills", "list", "--json"]);
    out.assert_code(0);
    let rows: Value = serde_json::from_str(&out.stdout).expect("JSON list");
    let errors = |name: &str| {
        rows.as_array()
            .expect("array")
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["errors"].as_array().expect("errors").len())
    };
    assert_eq!(errors("deploy"), Some(0));
    assert_eq!(errors("Lint_Now"), Some(2));
    assert_eq!(errors("broken"), Some(1));
    let loaded = |name: &str| {
        rows.as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == name))
            .map(|r| r["loaded"].clone())
    };
    assert_eq!(loaded("broken"), Some(Value::Bool(false)));
    assert_eq!(loaded("deploy"), Some(Value::Bool(true)));

    // Check gives the broken file the same error the listing shows.
    let check = hx.run_args(&["skills", "check", ".agents/skills/broken"]);
    check.assert_code(1);
    let listed = rows
        .as_array()
        .and_then(|a| a.iter().find(|r| r["name"] == "broken"))
        .and_then(|r| r["errors"][0].as_str())
        .expect("the broken row's error")
        .to_string();
    assert!(check.stdout.contains(&listed), "{listed}\n{}", check.dump());

    // The same two errors, from check.
    let check = hx.run_args(&["skills", "check", ".agents/skills/lint"]);
    check.assert_code(1);
    assert_eq!(check.stdout.lines().count(), 2, "{}", check.dump());
}

#[test]
fn show_says_why_a_skill_folder_was_not_loaded() {
    let hx = fixture();
    let out = hx.run_args(&["skills", "show", "broken"]);
    out.assert_code(1);
    assert_eq!(
        out.stderr,
        "hx: skill broken is not loaded: .agents/skills/broken/SKILL.md: invalid frontmatter: \
         unclosed bracket '[' at line 2, column 14; hx skills check \
         .agents/skills/broken/SKILL.md lists every problem\n",
        "{}",
        out.dump()
    );
    let out = hx.run_args(&["skills", "show", "lint"]);
    out.assert_code(1);
    assert!(
        out.stderr.contains(
            "no skill is named lint: the skill in .agents/skills/lint/SKILL.md is named \
             Lint_Now; hx skills show Lint_Now shows it"
        ),
        "{}",
        out.dump()
    );
    // A name that is nowhere is still unknown, with the names there are.
    let out = hx.run_args(&["skills", "show", "nope"]);
    out.assert_code(2);
    assert!(
        out.stderr
            .contains("unknown skill nope. Available: Lint_Now, deploy"),
        "{}",
        out.dump()
    );
}

#[test]
fn check_reports_each_broken_file_once() {
    let hx = fixture();
    let out = hx.run_args(&["skills", "check"]);
    out.assert_code(1);
    let both = format!("{}{}", out.stdout, out.stderr);
    assert_eq!(
        both.matches(".agents/skills/broken/SKILL.md").count(),
        1,
        "{}",
        out.dump()
    );
    assert_eq!(
        both.matches("unclosed bracket").count(),
        1,
        "{}",
        out.dump()
    );
}

#[test]
fn check_takes_argument_hint_as_a_field_hx_uses() {
    let mut hx = crate::support::Hx::new_offline();
    hx.write_file(
        ".agents/skills/sync/SKILL.md",
        "---\nname: sync\ndescription: Sync a branch\nargument-hint: \"[remote] [branch]\"\n---\nSync.\n",
    )
    .write_file(
        ".agents/skills/odd/SKILL.md",
        "---\nname: odd\ndescription: Odd\nargument-hint: {a: b}\n---\nOdd.\n",
    );
    hx.write_file(
        ".agents/skills/list/SKILL.md",
        "---\nname: list\ndescription: A list hint, as Claude Code writes it\nargument-hint: [message]\n---\nList.\n",
    );
    for skill in ["sync", "list"] {
        let out = hx.run_args(&["skills", "check", &format!(".agents/skills/{skill}")]);
        out.assert_code(0);
        assert!(!out.stdout.contains("argument-hint"), "{}", out.dump());
    }
    // A hint that is not text is still a problem worth a warning.
    let out = hx.run_args(&["skills", "check", ".agents/skills/odd"]);
    assert!(
        out.stdout
            .contains("warning: argument-hint is a mapping, not text; left out"),
        "{}",
        out.dump()
    );
}
