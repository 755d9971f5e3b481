use std::path::Path;

use super::*;

fn def(text: &str) -> Result<Definition, String> {
    definition_from(Path::new("/p/.claude/agents/x.md"), text, Source::Project)
}

#[test]
fn claude_tool_names_map_and_missing_ones_are_notes() {
    let d = def("name: rev\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash, MultiEdit, Edit, LS, WebSearch, mcp__gh__search\n")
        .expect("parses");
    assert_eq!(
        d.tools.as_deref(),
        Some(&["read_file", "glob", "bash", "edit_file", "mcp__gh__search"].map(String::from)[..])
    );
    assert_eq!(
        d.notes,
        [
            "tool Grep: hx has no such tool, left out",
            "tool WebSearch: hx has no such tool, left out"
        ]
    );
}

#[test]
fn a_yaml_list_of_tools_and_the_boundary() {
    let d = def("name: a\ndescription: d\ntools:\n  - Read\n  - Task\n  - todo_write\n  - Bash(git diff:*)\n")
        .expect("parses");
    assert_eq!(d.tools, Some(vec!["read_file".to_string()]));
    assert_eq!(d.notes.len(), 3, "{:?}", d.notes);
    assert!(d.notes[0].contains("tool Task: a subagent never gets it"));
    assert!(d.notes[2].contains("cannot limit bash"));
}

#[test]
fn the_tool_names_are_what_each_tool_states() {
    use std::sync::Arc;

    use crate::tools::todo::{TodoList, TodoWrite};
    use crate::tools::Registry;

    // Every tool this layer can make; `task` (a layer above) states tools::TASK itself.
    let mut registry = Registry::standard();
    registry.register(Arc::new(TodoWrite::new(TodoList::new())));
    registry.register(Arc::new(crate::skills::LoadSkill::new(Default::default())));
    let mut stated: Vec<_> = registry
        .names()
        .filter_map(|n| registry.get(&n).and_then(|t| t.claude()))
        .collect();
    stated.push(tools::TASK);
    for tool in &stated {
        assert!(tools::TOOLS.contains(tool), "{tool:?} is not in TOOLS");
    }
    assert_eq!(tools::TOOLS.len(), stated.len());
    let d = def("name: a\ndescription: d\ntools: Agent\n").expect("parses");
    assert_eq!(
        d.notes,
        [
            "tool Agent: a subagent never gets it (no task, todo_write or load_skill in a \
          subagent), left out"
        ]
    );
}

#[test]
fn no_tools_or_a_star_means_every_subagent_tool() {
    assert_eq!(def("name: a\ndescription: d\n").expect("ok").tools, None);
    assert_eq!(
        def("name: a\ndescription: d\ntools: \"*\"\n")
            .expect("ok")
            .tools,
        None
    );
    assert_eq!(
        def("name: a\ndescription: d\ntools: WebFetch\n")
            .expect("ok")
            .tools,
        Some(vec![])
    );
}

#[test]
fn claude_models_mean_inherit_with_a_note() {
    for m in ["sonnet", "opus", "haiku", "claude-sonnet-4-5", "inherit"] {
        let d = def(&format!("name: a\ndescription: d\nmodel: {m}\n")).expect("ok");
        assert_eq!(d.model, None, "{m}");
        assert_eq!(d.notes.len(), usize::from(m != "inherit"), "{m}");
    }
    let d = def("name: a\ndescription: d\nmodel: deepseek-reasoner\n").expect("ok");
    assert_eq!(d.model.as_deref(), Some("deepseek-reasoner"));
    assert!(d.notes.is_empty());
}

#[test]
fn unquoted_colons_and_broken_yaml_still_read() {
    let d = def("name: a\ndescription: Use when: the user asks\n").expect("rewrite");
    assert_eq!(d.description, "Use when: the user asks");
    assert!(d.notes.is_empty());
    // A quote in the middle and a colon: no YAML reading takes it.
    let d = def("name: b\ndescription: \"Use this\" one: for x\n  and y\ntools: Read\n")
        .expect("line by line");
    assert_eq!(d.description, "\"Use this\" one: for x and y");
    assert_eq!(d.tools, Some(vec!["read_file".to_string()]));
    assert!(d.notes[0].contains("read line by line"), "{:?}", d.notes);
}

#[test]
fn the_name_defaults_to_the_file_and_bad_ones_are_refused() {
    assert_eq!(def("description: d\n").expect("ok").name, "x");
    assert!(def("name: a b\ndescription: d\n").is_err());
    assert!(def(&format!("name: {}\ndescription: d\n", "n".repeat(65))).is_err());
    assert_eq!(
        def("name: a\n").expect_err("no description"),
        "no description"
    );
}

#[test]
fn the_listing_is_bounded_and_stable() {
    let agents: Vec<Definition> = (0..50)
        .map(|i| {
            def(&format!(
                "name: agent-{i:02}\ndescription: {}\n",
                "word ".repeat(200)
            ))
            .expect("ok")
        })
        .collect();
    let full = listing(&agents[..2], LIST_BUDGET);
    assert!(full.starts_with("\n- agent-00: word word"));
    let cut = listing(&agents, 2_000);
    assert!(cut.chars().count() <= 2_000, "{}", cut.chars().count());
    assert!(cut.contains("- agent-49"));
    assert_eq!(cut, listing(&agents, 2_000));
    let names = listing(&agents, 300);
    assert!(names.chars().count() <= 300);
    assert!(
        names.ends_with("more (an unknown subagent_type lists them all)"),
        "{names}"
    );
}

#[test]
fn discovery_reads_both_folders_and_the_project_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (project, home) = (dir.path().join("p"), dir.path().join("h"));
    let w = |p: &Path, t: &str| {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, t).expect("write");
    };
    w(
        &project.join(".agents/agents/a.md"),
        "---\nname: a\ndescription: project a\n---\nbody a\n",
    );
    w(
        &project.join(".claude/agents/b.md"),
        "---\nname: b\ndescription: project b\n---\nbody b\n",
    );
    w(
        &project.join(".claude/agents/README.md"),
        "# not an agent\n",
    );
    w(&project.join(".claude/agents/bad.md"), "no frontmatter\n");
    w(
        &home.join(".claude/agents/a.md"),
        "---\nname: a\ndescription: user a\n---\nuser\n",
    );
    w(
        &home.join(".agents/agents/c.md"),
        "---\nname: c\ndescription: user c\n---\nuser c\n",
    );
    let d = discover(&project, Some(&home));
    let names: Vec<(&str, &str)> = d
        .agents
        .iter()
        .map(|a| (a.name.as_str(), a.description.as_str()))
        .collect();
    assert_eq!(
        names,
        [("a", "project a"), ("b", "project b"), ("c", "user c")]
    );
    assert_eq!(d.broken.len(), 1);
    assert!(
        d.warnings.iter().any(|w| w.contains("is shadowed by")),
        "{:?}",
        d.warnings
    );
    assert_eq!(read_body(d.get("b").expect("b")).as_deref(), Ok("body b"));
}

#[test]
fn a_linked_root_outside_the_project_does_not_count() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (project, outside) = (dir.path().join("p"), dir.path().join("o"));
    std::fs::create_dir_all(project.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("x.md"), "---\nname: x\ndescription: d\n---\n").expect("write");
    std::os::unix::fs::symlink(&outside, project.join(".claude/agents")).expect("link");
    let d = discover(&project, None);
    assert!(d.agents.is_empty());
    assert!(
        d.warnings[0].contains("outside the project"),
        "{:?}",
        d.warnings
    );
}
