use super::*;

/// The standard registry's tools, in the order every request offers them.
const STANDARD: [&str; 7] = [
    "bash",
    "read_file",
    "write_file",
    "edit_file",
    "glob",
    "bash_output",
    "kill_shell",
];

#[test]
fn every_standard_tool_has_a_description_and_required_fields() {
    let set = ToolSet::all(Registry::standard());
    assert_eq!(set.names(), STANDARD);
    let sub = ToolSet::for_subagents(Registry::standard());
    assert_eq!(sub.names(), set.names());
    assert_eq!(
        ToolSet::new(Registry::standard(), &["bash", "nope"]).err(),
        Some("unknown tool \"nope\" in a tool list".to_string())
    );
    assert_eq!(
        Registry::standard().claude_names().get("read_file"),
        Some(&"Read")
    );
    for spec in set.specs() {
        assert!(spec.description.len() > 40, "{} description", spec.name);
        let required = spec.parameters["required"].as_array().unwrap();
        assert!(!required.is_empty(), "{} required", spec.name);
        for field in required {
            let field = field.as_str().unwrap();
            assert!(
                spec.parameters["properties"][field].is_object(),
                "{}.{field} is required but not described",
                spec.name
            );
        }
    }
}

#[test]
fn the_standard_tools_say_what_they_are() {
    let set = ToolSet::all(Registry::standard());
    let about = |kind, shown| About { kind, shown };
    assert_eq!(set.about("bash"), about(Kind::Execute, Shown::Command));
    assert_eq!(set.about("read_file"), about(Kind::Read, Shown::Other));
    assert_eq!(set.about("write_file"), about(Kind::Edit, Shown::FileWrite));
    assert_eq!(set.about("edit_file"), about(Kind::Edit, Shown::FileEdit));
    assert_eq!(set.about("glob"), about(Kind::Search, Shown::Other));
    assert_eq!(set.about("bash_output"), about(Kind::Other, Shown::Other));
    assert_eq!(set.about("kill_shell"), about(Kind::Execute, Shown::Other));
    assert_eq!(set.about("nope"), About::default());
    assert_eq!(Kind::Execute.acp_name(), "execute");
    // Only bash runs a command, so only its calls are the guard's.
    let args = serde_json::json!({"command": "rm -rf /", "path": "a"});
    let commands: Vec<Option<&str>> = set
        .names()
        .iter()
        .map(|n| set.get(n).expect("listed").command(&args))
        .collect();
    assert_eq!(
        commands,
        [Some("rm -rf /"), None, None, None, None, None, None]
    );
    // Their output can be made again: prune may clear it, and no summary carries it.
    let history = [crate::model::Message::User("task".into())];
    assert!(set.names().iter().all(|n| set.prunable(n)));
    assert!(set.prunable("nope"));
    assert_eq!(set.carry(&history), []);
}

#[test]
fn a_tool_registered_into_a_set_comes_after_its_fixed_tools_once() {
    let mut set = ToolSet::for_subagents(Registry::standard());
    set.register(Arc::new(bash::Bash));
    set.register(Arc::new(todo::TodoWrite::new(todo::TodoList::new())));
    set.register(Arc::new(todo::TodoWrite::new(todo::TodoList::new())));
    assert_eq!(set.names(), [&STANDARD[..], &["todo_write"]].concat());
    assert_eq!(set.specs().len(), 8);
    assert_eq!(set.about("todo_write").shown, Shown::Plan);
}

#[tokio::test]
async fn dispatch_turns_every_mistake_into_an_error_result() {
    let d = tempfile::tempdir().unwrap();
    let cx = ToolContext::new(Workspace::new(d.path()).unwrap());
    let set = ToolSet::new(Registry::standard(), &["read_file", "glob"]).expect("known");
    let r = set.dispatch("bash", r#"{"command":"ls"}"#, &cx).await;
    assert_eq!(r.content, "Error: unknown tool bash");
    let r = set.dispatch("glob", "{not json", &cx).await;
    assert!(r.content.starts_with("Error: invalid arguments for glob:"));
    let r = set.dispatch("read_file", "", &cx).await;
    assert_eq!(r.content, "Error: read_file.path is required");
    std::fs::write(d.path().join("a.txt"), "hi\n").unwrap();
    let r = set.dispatch("read_file", r#"{"path":"a.txt"}"#, &cx).await;
    assert_eq!(r, ToolResult::ok("hi\n"));
}
