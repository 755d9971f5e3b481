use super::*;
use crate::tools::Reminder;

fn call(name: &str) -> ToolCall {
    ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments: "{}".into(),
    }
}

fn item(content: &str, status: &str) -> Value {
    json!({"content": content, "status": status})
}

#[test]
fn renders_marks_and_count() {
    let items = parse_todos(&json!({"todos": [
        item("Read the code", "completed"),
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        item("Run the tests", "pending"),
    ]}))
    .expect("valid");
    assert_eq!(
        render(&items, false),
        "[x] Read the code\n[>] Fix the bug\n[ ] Run the tests\n(1/3 completed)"
    );
    assert_eq!(
        render(&items, true),
        "[x] Read the code\n[>] Fixing the bug\n[ ] Run the tests\n(1/3 completed)"
    );
}

#[test]
fn accepts_todos_as_a_json_string() {
    let s = json!([item("a", "pending")]).to_string();
    assert_eq!(parse_todos(&json!({ "todos": s })).expect("valid").len(), 1);
}

#[test]
fn refusals_say_why() {
    let many: Vec<Value> = (0..21).map(|i| item(&format!("t{i}"), "pending")).collect();
    let cases = [
        (json!({ "todos": many }), "too many todos (21)"),
        (
            json!({"todos": [item("a", "in_progress"), item("b", "in_progress")]}),
            "2 todos are in_progress",
        ),
        (
            json!({"todos": [item("  ", "pending")]}),
            "todo 1 has empty content",
        ),
        (
            json!({"todos": [item("a", "done")]}),
            "unknown status 'done'",
        ),
        (json!({}), "todo_write.todos is required"),
        (
            json!({"todos": [item("a", "pending"), item(&"x".repeat(1001), "pending")]}),
            "todo 2 has 1001 characters; the limit is 1000",
        ),
        (
            json!({"todos": [{"content": "a", "status": "in_progress", "activeForm": "y".repeat(5000)}]}),
            "todo 1's activeForm has 5000 characters; the limit is 1000",
        ),
        (json!({"todos": 3}), "must be an array"),
    ];
    for (args, want) in cases {
        let e = parse_todos(&args).expect_err("refused");
        assert!(e.contains(want), "{e} should contain {want}");
    }
}

#[test]
fn refused_call_keeps_the_previous_list() {
    let list = TodoList::new();
    let tool = TodoWrite::new(list.clone());
    let cx = ToolContext::new(crate::tools::Workspace::new(std::env::temp_dir()).expect("ws"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("rt");
    let ok = rt.block_on(tool.call(json!({"todos": [item("a", "pending")]}), &cx));
    assert!(!ok.is_error, "{}", ok.content);
    let bad = rt.block_on(tool.call(json!({"todos": [item("b", "nope")]}), &cx));
    assert!(bad.content.starts_with("Error: todo 1 has unknown status"));
    assert_eq!(list.items()[0].content, "a");
}

#[test]
fn reminds_after_three_turns_without_update_while_open() {
    let list = TodoList::new();
    assert_eq!(list.after_tool_turn(&[call("bash")]), None, "no todos yet");
    list.replace(vec![Todo {
        content: "a".into(),
        status: Status::Pending,
        active_form: None,
    }]);
    assert_eq!(list.after_tool_turn(&[call(NAME)]), None);
    assert_eq!(list.after_tool_turn(&[call("bash")]), None);
    assert_eq!(list.after_tool_turn(&[call("glob")]), None);
    assert_eq!(
        list.after_tool_turn(&[call("bash")]).as_deref(),
        Some(REMINDER)
    );
    assert_eq!(
        list.after_tool_turn(&[call("bash")]),
        None,
        "counter restarts"
    );
    list.replace(vec![Todo {
        content: "a".into(),
        status: Status::Completed,
        active_form: None,
    }]);
    for _ in 0..5 {
        assert_eq!(list.after_tool_turn(&[call("bash")]), None, "all done");
    }
}
