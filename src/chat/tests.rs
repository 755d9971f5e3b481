use super::*;
use crate::model::ToolCall;
use crate::session::{Header, Session};

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn assistant(calls: Vec<ToolCall>) -> Message {
    Message::Assistant {
        content: String::new(),
        reasoning: Some(String::new()),
        tool_calls: calls,
    }
}

fn tool(id: &str, content: &str) -> Message {
    Message::Tool {
        tool_call_id: id.into(),
        content: content.into(),
    }
}

fn session(messages: Vec<Message>) -> Session {
    let mut s = Session::new(Header::default(), None);
    for m in messages {
        s.push(m);
    }
    s
}

#[test]
fn a_cancelled_turn_gets_answers_after_the_ones_it_has() {
    let mut s = session(vec![
        Message::System("sys".into()),
        Message::User("go".into()),
        assistant(vec![call("a", "bash", "{}"), call("b", "bash", "{}")]),
        tool("a", "done"),
    ]);
    assert_eq!(s.answer_open_calls(INTERRUPTED), 1);
    assert_eq!(s.messages().last(), Some(&tool("b", INTERRUPTED)));
    // Nothing more to answer the second time.
    assert_eq!(s.answer_open_calls(INTERRUPTED), 0);
    assert_eq!(s.messages().len(), 5);
}

#[test]
fn a_complete_conversation_is_left_alone() {
    let mut s = session(vec![
        Message::User("go".into()),
        assistant(vec![call("a", "bash", "{}")]),
        tool("a", "done"),
        Message::User("<reminder>".into()),
    ]);
    assert_eq!(s.answer_open_calls(INTERRUPTED), 0);
    // Cancelled while the model was still answering: there is no open call.
    let mut s = session(vec![Message::User("go".into())]);
    assert_eq!(s.answer_open_calls(INTERRUPTED), 0);
}

#[test]
fn todos_come_from_the_last_todo_write_that_succeeded() {
    let first = r#"{"todos":[{"content":"one","status":"completed"}]}"#;
    let second = r#"{"todos":[{"content":"two","status":"pending"}]}"#;
    let messages = vec![
        assistant(vec![call("1", "todo_write", first)]),
        tool("1", "ok"),
        assistant(vec![call("2", "todo_write", second)]),
        tool("2", "Error: bad"),
    ];
    let text = todos_text(&messages);
    assert!(text.contains("[x] one"), "{text}");
    assert_eq!(todos_text(&[]), "no todos in this session");
}

#[test]
fn usage_shows_the_cache_share() {
    let f = Figures {
        turns: 2,
        prompt_tokens: 200,
        cache_hit_tokens: 150,
        completion_tokens: 9,
        ..Figures::default()
    };
    let text = usage_text(&f);
    assert!(
        text.contains("cache hits: 150 (75.0% of prompt tokens)"),
        "{text}"
    );
}

#[test]
fn effort_shows_the_setting_or_the_models_default_and_the_subagents_when_theirs_differs() {
    use crate::config::{Config, Env, Flags};
    use crate::model::Effort;
    let dir = tempfile::tempdir().expect("dir");
    let mut config =
        Config::load(dir.path(), &Env::new(), &Flags::default(), &mut Vec::new()).expect("config");
    assert_eq!(
        effort_text(&config),
        "effort: none set, so the model's default holds (DeepSeek V4: thinking on, at high)"
    );
    config.set_effort(Effort::Max);
    assert_eq!(effort_text(&config), "effort: max");
    config.subagent_effort = Some(Effort::Low);
    assert_eq!(effort_text(&config), "effort: max; subagents: low");
    config.set_effort(Effort::Low);
    assert_eq!(effort_text(&config), "effort: low");
}

#[test]
fn usage_shows_the_tokens_spent_thinking_beside_the_completion_when_counted() {
    let f = Figures {
        completion_tokens: 90,
        ..Figures::default()
    };
    assert!(
        usage_text(&f).ends_with("\ncompletion tokens: 90"),
        "{}",
        usage_text(&f)
    );
    let f = Figures {
        reasoning_tokens: 60,
        ..f
    };
    assert!(
        usage_text(&f).ends_with("\ncompletion tokens: 90 (60 of them reasoning)"),
        "{}",
        usage_text(&f)
    );
}
