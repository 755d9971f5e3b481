//! Unit tests for rendering a loaded skill and for the `load_skill` tool.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::skills::test_util::{skill, write};
use crate::skills::{discover, LoadSkill};
use crate::tools::{Tool, ToolContext, ToolResult, Workspace};

fn registry(cwd: &Path, home: Option<&Path>) -> SkillRegistry {
    let d = discover(cwd, home);
    assert!(d.warnings.is_empty(), "{:?}", d.warnings);
    d.registry
}

fn context(root: &Path) -> ToolContext {
    ToolContext::new(Workspace::new(root).expect("workspace"))
}

#[test]
fn body_only_when_the_folder_has_no_other_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    skill(
        &tmp.path().join(".agents/skills"),
        "plain",
        "d",
        "\n\n# Plain\n\nDo it.\n\n",
    );
    let out = render(&registry(tmp.path(), None), "plain", tmp.path());
    assert_eq!(
        out,
        Ok("<skill name=\"plain\">\n# Plain\n\nDo it.\n</skill>".to_string())
    );
}

#[test]
fn resource_files_are_listed_relative_to_the_workspace() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().canonicalize().expect("canonical");
    let dir = ws.join(".agents/skills/deploy");
    skill(
        &ws.join(".agents/skills"),
        "deploy",
        "Deploy.",
        "Run scripts/run.sh.",
    );
    write(&dir.join("scripts/run.sh"), "echo hi");
    write(&dir.join("references/guide.md"), "# Guide");
    write(&dir.join("assets/a/b/logo.svg"), "<svg/>");
    write(&dir.join(".DS_Store"), "junk");
    // A nested skill is its own skill, not this one's resource.
    skill(&dir, "sub", "Nested.", "b");
    write(&dir.join("sub/own.txt"), "x");
    let out = render(&registry(&ws, None), "deploy", &ws);
    let expected = format!(
        "<skill name=\"deploy\">\nRun scripts/run.sh.\n\n{FILES_HEADER}\n\
         - .agents/skills/deploy/assets/a/b/logo.svg\n\
         - .agents/skills/deploy/references/guide.md\n\
         - .agents/skills/deploy/scripts/run.sh\n</skill>"
    );
    assert_eq!(out, Ok(expected));
}

#[test]
fn skills_outside_the_workspace_list_absolute_paths() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let home = base.join("home");
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    skill(&home.join(".agents/skills"), "mine", "d", "Body.");
    let file = home.join(".agents/skills/mine/notes.md");
    write(&file, "n");
    let out = render(&registry(&ws, Some(&home)), "mine", &ws);
    let expected = format!(
        "<skill name=\"mine\">\nBody.\n\n{FILES_HEADER}\n- {}\n</skill>",
        file.display()
    );
    assert_eq!(out, Ok(expected));
}

#[test]
fn at_most_fifty_files_are_listed() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let ws = tmp.path().canonicalize().expect("canonical");
    skill(&ws.join(".agents/skills"), "many", "d", "B");
    for i in 0..60 {
        write(&ws.join(format!(".agents/skills/many/f{i:02}.txt")), "x");
    }
    let out = render(&registry(&ws, None), "many", &ws).expect("renders");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[4], "- .agents/skills/many/f00.txt");
    assert_eq!(lines[53], "- .agents/skills/many/f49.txt");
    assert_eq!(lines[54], "- … and 10 more");
    assert_eq!(lines[55], "</skill>");
}

#[test]
fn closing_tag_in_body_is_defused_and_name_is_escaped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(
        &tmp.path().join(".agents/skills/x/SKILL.md"),
        "---\nname: 'a&\"<b>'\ndescription: d\n---\nbefore </skill> after\n",
    );
    let out = render(&registry(tmp.path(), None), "a&\"<b>", tmp.path());
    assert_eq!(
        out,
        Ok("<skill name=\"a&amp;&quot;&lt;b&gt;\">\nbefore <\\/skill> after\n</skill>".to_string())
    );
}

#[test]
fn closing_tags_of_any_case_or_spacing_are_defused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    write(
        &tmp.path().join(".agents/skills/x/SKILL.md"),
        "---\nname: x\ndescription: d\n---\nA </SKILL> b </skill > c </Skill\n> d </skillset> é</sKiLl>\ne </ skill> f <\\/skill> g </div> </ski\n",
    );
    let out = render(&registry(tmp.path(), None), "x", tmp.path());
    assert_eq!(
        out,
        Ok("<skill name=\"x\">\nA <\\/SKILL> b <\\/skill > c <\\/Skill\n> d <\\/skillset> é<\\/sKiLl>\n\
            e </ skill> f <\\/skill> g </div> </ski\n</skill>"
            .to_string())
    );
}

#[test]
fn unknown_names_list_what_exists() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    for name in ["charlie", "alpha", "bravo"] {
        skill(&root, name, "d", "b");
    }
    let reg = registry(tmp.path(), None);
    let err = render(&reg, "../alpha", tmp.path()).expect_err("unknown");
    assert_eq!(
        err.to_string(),
        "unknown skill ../alpha. Available: alpha, bravo, charlie"
    );
    let empty = SkillRegistry::default();
    let err = render(&empty, "x", tmp.path()).expect_err("unknown");
    assert_eq!(err.to_string(), "unknown skill x. Available: (none)");
}

#[test]
fn unreadable_bodies_are_errors_that_say_why() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    skill(&root, "gone", "d", "b");
    skill(&root, "binary", "d", "b");
    let reg = registry(tmp.path(), None);
    let gone = root.join("gone/SKILL.md");
    std::fs::remove_file(&gone).expect("rm");
    let binary = root.join("binary/SKILL.md");
    write(&binary, b"---\ndescription: d\n---\n\xff\xfe");
    assert_eq!(
        render(&reg, "gone", tmp.path()).map_err(|e| e.to_string()),
        Err(format!(
            "cannot load skill gone from {}: the file no longer exists",
            gone.display()
        ))
    );
    assert_eq!(
        render(&reg, "binary", tmp.path()).map_err(|e| e.to_string()),
        Err(format!(
            "cannot load skill binary from {}: the file is not valid UTF-8",
            binary.display()
        ))
    );
}

#[test]
fn tool_loads_once_then_notes_it_is_loaded() {
    let tmp = tempfile::tempdir().expect("tempdir");
    skill(&tmp.path().join(".agents/skills"), "once", "d", "Body.");
    let tool = LoadSkill::new(Arc::new(registry(tmp.path(), None)));
    let cx = context(tmp.path());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let call = |args| rt.block_on(tool.call(args, &cx));
    let first = call(json!({"name": " once "}));
    assert_eq!(
        first,
        ToolResult::ok("<skill name=\"once\">\nBody.\n</skill>")
    );
    let again = call(json!({"name": "once"}));
    assert_eq!(
        again,
        ToolResult::ok(
            "Skill once is already loaded above in this conversation; follow those instructions."
        )
    );
    assert_eq!(call(json!({"name": "once"})), again);
}

#[test]
fn tool_argument_and_lookup_errors() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join(".agents/skills");
    skill(&root, "b", "d", "x");
    skill(&root, "a", "d", "x");
    let tool = LoadSkill::new(Arc::new(registry(tmp.path(), None)));
    let cx = context(tmp.path());
    let bad = "Error: load_skill.name must be a non-empty string";
    for args in [
        json!({}),
        json!({"name": 3}),
        json!({"name": "  "}),
        json!({"name": null}),
    ] {
        let r = tool.load(&args, &cx);
        assert_eq!((r.content.as_str(), r.is_error), (bad, true), "{args}");
    }
    let r = tool.load(&json!({"name": "zzz"}), &cx);
    assert_eq!(r.content, "Error: unknown skill zzz. Available: a, b");
    assert!(r.is_error);
}

#[test]
fn tool_spec_requires_a_name() {
    let tool = LoadSkill::new(Arc::new(SkillRegistry::default()));
    let spec = tool.spec();
    assert_eq!(spec.name, "load_skill");
    assert_eq!(spec.parameters["required"], json!(["name"]));
    assert_eq!(spec.parameters["properties"]["name"]["type"], "string");
    assert!(spec.description.contains("runs nothing"));
}

/// A project skill whose files are swapped for links out of the project after discovery (as
/// a command run during the session could do) is not read through them when loaded.
#[cfg(unix)]
#[test]
fn links_made_after_discovery_are_not_followed_when_loading() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let ws = base.join("ws");
    let root = ws.join(".agents/skills");
    skill(&root, "swapped", "d", "Body.");
    skill(&root, "moved", "d", "Body.");
    write(&root.join("moved/guide.md"), "g");
    write(
        &base.join("out/notes.md"),
        "---\ndescription: private\n---\nPRIVATE NOTES\n",
    );
    write(&base.join("out/secret.txt"), "s");
    let reg = registry(&ws, None);
    std::fs::remove_file(root.join("swapped/SKILL.md")).expect("rm");
    symlink(base.join("out/notes.md"), root.join("swapped/SKILL.md")).expect("symlink");
    std::fs::rename(root.join("moved"), base.join("moved-away")).expect("mv");
    symlink(base.join("out"), root.join("moved")).expect("symlink");

    assert_eq!(
        render(&reg, "swapped", &ws).map_err(|e| e.to_string()),
        Err(format!(
            "cannot load skill swapped from {}: the file now links to {}, outside its skills root {}",
            root.join("swapped/SKILL.md").display(),
            base.join("out/notes.md").display(),
            root.display()
        ))
    );
    // The folder itself now leads out: its SKILL.md is refused, and nothing of it is listed.
    let moved = render(&reg, "moved", &ws).map_err(|e| e.to_string());
    assert_eq!(
        moved,
        Err(format!(
            "cannot load skill moved from {}: the file no longer exists",
            root.join("moved/SKILL.md").display(),
        ))
    );
    std::fs::write(
        base.join("out/SKILL.md"),
        "---\ndescription: d\n---\nOut.\n",
    )
    .expect("write");
    let moved = render(&reg, "moved", &ws).map_err(|e| e.to_string());
    assert_eq!(
        moved,
        Err(format!(
            "cannot load skill moved from {}: the file now links to {}, outside its skills root {}",
            root.join("moved/SKILL.md").display(),
            base.join("out/SKILL.md").display(),
            root.display()
        ))
    );
}

#[cfg(unix)]
#[test]
fn a_skill_folder_swapped_for_a_link_lists_nothing() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let home = base.join("home");
    let ws = base.join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    // A user skill: its SKILL.md may lead anywhere, but its listing stays in its folder.
    let dir = home.join(".agents/skills/mine");
    skill(&home.join(".agents/skills"), "mine", "d", "Body.");
    write(&base.join("out/secret.txt"), "s");
    let reg = registry(&ws, Some(&home));
    std::fs::rename(&dir, base.join("mine-away")).expect("mv");
    std::fs::create_dir_all(base.join("out")).expect("mkdir");
    std::fs::write(
        base.join("out/SKILL.md"),
        "---\ndescription: d\n---\nOut.\n",
    )
    .expect("write");
    symlink(base.join("out"), &dir).expect("symlink");
    assert_eq!(
        render(&reg, "mine", &ws),
        Ok("<skill name=\"mine\">\nOut.\n</skill>".to_string())
    );
}
