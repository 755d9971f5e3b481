//! Unit tests for `check`: the Agent Skills specification's rules.

use super::*;
use crate::skills::test_util::write;

fn messages(problems: &[Problem]) -> Vec<(Severity, &str)> {
    problems
        .iter()
        .map(|p| (p.severity, p.message.as_str()))
        .collect()
}

#[test]
fn a_valid_skill_has_no_problems() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("pdf-tools/SKILL.md");
    write(
        &file,
        "---\nname: pdf-tools\ndescription: Work with PDFs.\nlicense: MIT\nallowed-tools: Bash Read\nmetadata:\n  author: me\ncompatibility: needs poppler\n---\nBody\n",
    );
    assert_eq!(check(tmp.path()), vec![]);
    assert_eq!(check(&file), vec![]);
    assert_eq!(check(&tmp.path().join("pdf-tools")), vec![]);
}

#[test]
fn name_folder_mismatch_is_an_error() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("folder/SKILL.md");
    write(&file, "---\nname: other\ndescription: d\n---\n");
    assert_eq!(
        check(tmp.path()),
        vec![Problem {
            file: file.clone(),
            severity: Severity::Error,
            message: "name other does not match its folder name folder".into(),
        }]
    );
}

#[test]
fn folder_name_is_found_through_dot_dot() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("pdf-tools");
    write(
        &dir.join("SKILL.md"),
        "---\nname: pdf-tools\ndescription: d\n---\n",
    );
    std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
    // `pdf-tools/scripts/..` names the skill folder, but its last component is `..`.
    let via = dir.join("scripts/..");
    assert_eq!(check(&via), vec![]);
    assert_eq!(check(&via.join("SKILL.md")), vec![]);
}

#[test]
fn a_symlinked_skill_folder_is_named_by_the_link() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let real = tmp.path().join("store/deploy-v2");
    write(
        &real.join("SKILL.md"),
        "---\nname: deploy\ndescription: d\n---\n",
    );
    let link = tmp.path().join("skills/deploy");
    std::fs::create_dir_all(tmp.path().join("skills")).expect("mkdir");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    assert_eq!(check(&link.join("SKILL.md")), vec![]);
}

#[test]
fn name_rules() {
    assert_eq!(name_problems("good-name-2"), Vec::<String>::new());
    assert_eq!(
        name_problems("Bad_Name"),
        ["name Bad_Name may only contain lowercase letters a-z, digits and hyphens"]
    );
    assert_eq!(
        name_problems("-x-"),
        ["name -x- must not start or end with a hyphen"]
    );
    assert_eq!(
        name_problems("a--b"),
        ["name a--b must not contain consecutive hyphens"]
    );
    assert_eq!(
        name_problems(&"a".repeat(65)),
        ["name is 65 characters, more than 64"]
    );
    assert_eq!(
        name_problems("café"),
        ["name café may only contain lowercase letters a-z, digits and hyphens"]
    );
}

#[test]
fn field_limits_and_unknown_keys() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("s/SKILL.md");
    write(
        &file,
        format!(
            "---\nname: s\ndescription: {}\ncompatibility: {}\nmetadata: [x]\nversion: 2\n---\n",
            "d".repeat(1025),
            "c".repeat(501)
        ),
    );
    assert_eq!(
        messages(&check(&file)),
        [
            (Severity::Error, "description is 1025 characters, more than 1024"),
            (Severity::Error, "compatibility is 501 characters, more than 500"),
            (Severity::Error, "metadata must be a mapping, not a list"),
            (
                Severity::Warning,
                "unknown field version (the specification defines name, description, license, allowed-tools, metadata, compatibility)"
            ),
        ]
    );
}

#[test]
fn missing_and_non_string_fields() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("s/SKILL.md");
    write(&file, "---\nname: [s]\ncompatibility: ''\n---\n");
    assert_eq!(
        messages(&check(&file)),
        [
            (Severity::Error, "name must be a string, not a list"),
            (Severity::Error, "missing required field description"),
            (Severity::Error, "compatibility is empty"),
        ]
    );
}

#[test]
fn parse_failures_and_recoveries() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let broken = tmp.path().join("broken/SKILL.md");
    write(&broken, "---\nname: [broken\ndescription: d\n---\n");
    let problems = check(&broken);
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].severity, Severity::Error);
    assert!(
        problems[0]
            .message
            .starts_with("frontmatter is not valid YAML: "),
        "{}",
        problems[0].message
    );

    let none = tmp.path().join("none/SKILL.md");
    write(&none, "# no frontmatter\n");
    assert_eq!(
        messages(&check(&none)),
        [(
            Severity::Error,
            "no frontmatter: the file must start with a --- line and the frontmatter end with one"
        )]
    );

    let loose = tmp.path().join("loose/SKILL.md");
    write(
        &loose,
        "---\nname: loose\ndescription: Use when: asked\n---\n",
    );
    assert_eq!(
        messages(&check(&loose)),
        [(
            Severity::Warning,
            "frontmatter is not strict YAML: quote values that contain \": \" (hx reads it, other tools may not)"
        )]
    );

    let binary = tmp.path().join("binary/SKILL.md");
    write(&binary, b"\xff\xfe---\n");
    assert_eq!(
        messages(&check(&binary)),
        [(Severity::Error, "the file is not valid UTF-8")]
    );
}

#[test]
fn empty_or_missing_paths() {
    let tmp = tempfile::tempdir().expect("tempdir");
    assert_eq!(
        check(tmp.path()),
        vec![Problem {
            file: tmp.path().to_path_buf(),
            severity: Severity::Warning,
            message: "no SKILL.md found".into(),
        }]
    );
    let missing = tmp.path().join("nope");
    assert_eq!(
        messages(&check(&missing)),
        [(Severity::Error, "no such file or folder")]
    );
}

#[test]
fn problems_serialize_for_json_output() {
    let p = Problem {
        file: "a/SKILL.md".into(),
        severity: Severity::Warning,
        message: "m".into(),
    };
    assert_eq!(
        serde_json::to_string(&p).ok(),
        Some(r#"{"file":"a/SKILL.md","severity":"warning","message":"m"}"#.to_string())
    );
}

/// A project whose `.agents/skills` holds a good skill, a skill folder linked out of the root
/// and a SKILL.md linked out of it, and whose `.claude/skills` links out of the project.
#[cfg(unix)]
fn linked_project() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("p/.agents/skills");
    write(
        &root.join("ok/SKILL.md"),
        "---\nname: ok\ndescription: d\n---\n",
    );
    write(
        &base.join("out/far/SKILL.md"),
        "---\nname: far\ndescription: d\n---\n",
    );
    symlink(base.join("out/far"), root.join("far")).expect("symlink");
    std::fs::create_dir_all(root.join("file")).expect("mkdir");
    symlink(base.join("out/far/SKILL.md"), root.join("file/SKILL.md")).expect("symlink");
    std::fs::create_dir_all(base.join("p/.claude")).expect("mkdir");
    symlink(base.join("out"), base.join("p/.claude/skills")).expect("symlink");
    (tmp, base)
}

#[cfg(unix)]
#[test]
fn links_out_of_a_project_root_are_errors() {
    let (_tmp, base) = linked_project();
    let project = base.join("p");
    let root = project.join(".agents/skills");
    let roots = crate::skills::skill_roots(&project, None);
    let out_of_root = |link: &str, target: &str| Problem {
        file: root.join(link),
        severity: Severity::Error,
        message: format!(
            "links to {}, outside its skills root {}: hx skips it",
            base.join(target).display(),
            root.display()
        ),
    };
    let skipped_root = Problem {
        file: project.join(".claude/skills"),
        severity: Severity::Error,
        message: format!(
            "links to {}, outside the project {}: hx skips this skills root",
            base.join("out").display(),
            project.display()
        ),
    };
    assert_eq!(
        check_roots(&roots),
        [
            skipped_root.clone(),
            out_of_root("far", "out/far"),
            out_of_root("file/SKILL.md", "out/far/SKILL.md"),
        ]
    );
    // A path the user names inside a project root gets the same verdict, however it is written.
    std::fs::create_dir_all(root.join("x")).expect("mkdir");
    assert_eq!(
        check_path(&root.join("far"), &project, &roots),
        [out_of_root("far", "out/far")]
    );
    assert_eq!(
        check_path(&root.join("x/../file/SKILL.md"), &project, &roots),
        [Problem {
            file: root.join("x/../file/SKILL.md"),
            ..out_of_root("file/SKILL.md", "out/far/SKILL.md")
        }]
    );
    assert_eq!(
        check_path(&project.join("./.claude/skills/far"), &project, &roots),
        [skipped_root]
    );
    assert_eq!(check_path(&root.join("ok"), &project, &roots), []);
    // Named outside any project root, a link is the user's own business.
    assert_eq!(check(&root.join("far")), []);
}

#[test]
fn long_names_and_keys_are_quoted_cut() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let file = tmp.path().join("s/SKILL.md");
    let name = format!("X{}", "a".repeat(10_000));
    let key = "k".repeat(10_000);
    write(
        &file,
        // A plain key is at most 1,024 characters in YAML; an explicit one has no limit.
        format!("---\nname: {name}\ndescription: d\n? {key}\n: 1\n---\n"),
    );
    let cut_name = format!("X{}…", "a".repeat(62));
    let cut_key = format!("{}…", "k".repeat(63));
    assert_eq!(
        messages(&check(&file)),
        [
            (Severity::Error, "name is 10001 characters, more than 64"),
            (
                Severity::Error,
                format!(
                    "name {cut_name} may only contain lowercase letters a-z, digits and hyphens"
                )
                .as_str()
            ),
            (
                Severity::Error,
                format!("name {cut_name} does not match its folder name s").as_str()
            ),
            (
                Severity::Warning,
                format!(
                    "unknown field {cut_key} (the specification defines {})",
                    KNOWN_KEYS.join(", ")
                )
                .as_str()
            ),
        ]
    );
}

#[test]
fn the_invocation_keys_hx_honours_are_not_unknown_but_must_be_booleans() {
    let dir = tempfile::tempdir().expect("tempdir");
    let skill = dir.path().join("deploy");
    std::fs::create_dir_all(&skill).expect("mkdir");
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploy the app.\ndisable-model-invocation: true\nuser-invocable: \"yes\"\n---\nBody\n",
    )
    .expect("write");
    let found = check(&skill.join("SKILL.md"));
    let texts: Vec<&str> = found.iter().map(|p| p.message.as_str()).collect();
    assert_eq!(
        texts,
        ["user-invocable should be true or false, not a string"],
        "{found:?}"
    );
}
