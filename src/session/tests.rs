use std::os::unix::fs::PermissionsExt;

use super::*;
use crate::model::ToolCall;

fn header(id: &str) -> Header {
    Header {
        id: id.into(),
        workspace: "/w".into(),
        model: "m".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        started_at: store::now_rfc3339(),
        ..Header::default()
    }
}

fn run_info() -> RunInfo {
    RunInfo {
        started_at: store::now_rfc3339(),
        model: "m2".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        effort: None,
    }
}

fn call_turn() -> Message {
    Message::Assistant {
        content: String::new(),
        reasoning: Some(String::new()),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: "{}".into(),
        }],
    }
}

#[test]
fn a_recorded_session_reads_back_and_continues() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/some/workspace"));
    let id = store::new_id();
    let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    s.push(Message::System("sys".into()));
    s.push(Message::User("task".into()));
    s.stats.turns += 1;
    let cost = crate::model::Cost {
        nanos: 12_345,
        currency: crate::model::price::Currency::USD,
        peak: true,
    };
    s.record_usage(
        &Usage {
            prompt_tokens: 7,
            ..Usage::default()
        },
        Some(cost),
        "deepseek-flash",
    );
    s.push(call_turn());
    s.end(EndOutcome::Interrupted, None, None);
    assert_eq!(s.close(), None);

    let path = store.path_of(&id);
    let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(store.dir()), 0o700);

    let loaded = record::read(&path).expect("read");
    assert_eq!(loaded.messages.len(), 3);
    // The request's cost reads back exactly, as the end line's totals and from its own line.
    assert_eq!(loaded.totals.cost.known(), Some((12_345, cost.currency)));
    let valid = loaded.valid_len;
    let log = SessionLog::append(&path, valid).expect("append");
    let (mut s, repaired) = Session::resume(loaded, run_info(), Some(log));
    assert_eq!(repaired, 1);
    assert_eq!(
        s.messages().last(),
        Some(&Message::Tool {
            tool_call_id: "c1".into(),
            content: NOT_RUN_ANSWER.into()
        })
    );
    s.push(Message::User("more".into()));
    s.end(EndOutcome::Answered, None, None);
    s.close();

    let again = record::read(&path).expect("read again");
    assert_eq!(again.messages.len(), 5);
    assert_eq!(again.model, "m2");
    assert_eq!(again.runs, 2);
    assert_eq!(again.last_outcome.as_deref(), Some("answered"));
    assert_eq!(again.totals.turns, 1);
    assert_eq!(again.totals.prompt_tokens, 7);

    let (list, warnings) = store.list(false);
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, id);
    assert_eq!(list[0].task, "task");
    assert_eq!(list[0].outcome, "answered");
    assert_eq!(list[0].turns, 1);
}

#[test]
fn a_torn_tail_is_cut_before_appending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let id = store::new_id();
    let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    s.push(Message::User("task".into()));
    s.close();
    let path = store.path_of(&id);
    // A crash in the middle of writing the next line.
    let mut text = std::fs::read(&path).expect("read");
    text.extend_from_slice(b"{\"type\":\"message\",\"mess");
    std::fs::write(&path, &text).expect("write");

    let loaded = record::read(&path).expect("read");
    assert_eq!(loaded.warnings.len(), 1);
    let log = SessionLog::append(&path, loaded.valid_len).expect("append");
    let (mut s, _) = Session::resume(loaded, run_info(), Some(log));
    s.push(Message::User("next".into()));
    s.close();
    let again = record::read(&path).expect("read again");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.messages.len(), 2);
}

#[test]
fn a_session_being_written_cannot_be_opened_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let id = store::new_id();
    let s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    let path = store.path_of(&id);
    assert!(log::is_busy(&path));
    assert!(matches!(
        SessionLog::append(&path, 0),
        Err(log::OpenError::Busy)
    ));
    drop(s);
    assert!(!log::is_busy(&path));
}

#[test]
fn find_by_prefix_and_newest() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let ids = ["0190aaaa-1", "0190aaab-2", "0190bbbb-3"];
    for id in ids {
        let mut s = Session::new(header(id), Some(store.create(id).expect("create")));
        s.push(Message::User(format!("task {id}")));
        s.end(EndOutcome::Answered, None, None);
        s.close();
    }
    assert_eq!(
        store.find("0190b").expect("unique"),
        store.path_of("0190bbbb-3")
    );
    let e = store.find("0190aa").expect_err("ambiguous");
    assert!(e.contains("ambiguous") && e.contains("2 sessions"), "{e}");
    // One candidate a line, with its first message.
    assert!(e.lines().any(|l| l.contains("task 0190aaab-2")), "{e}");
    // Any part of an id will do, dashes and case aside.
    assert_eq!(
        store.find("BBB-3").expect("part"),
        store.path_of("0190bbbb-3")
    );
    let e = store.find("ffff").expect_err("unknown");
    assert!(e.contains("recent ones"), "{e}");
    // Garbage in the folder is skipped by listing, with a warning.
    std::fs::write(store.dir().join("zzzz.jsonl"), "garbage\n").expect("write");
    std::fs::create_dir(store.dir().join("dir.jsonl")).expect("mkdir");
    let (list, warnings) = store.list(false);
    assert_eq!(list.len(), 3);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(list[0].id, "0190bbbb-3");
}

#[test]
fn short_ids_are_the_end_of_the_id_and_grow_where_another_holds_them() {
    let a = "019a0000-0000-7000-8000-00000000abcd";
    let b = "019a0000-0000-7000-8000-11110000abcd";
    assert_eq!(store::short_id(a, [a]), "0000abcd");
    // Another id ends the same: one more character makes each unique.
    assert_eq!(store::short_id(a, [a, b]), "00000abcd");
    assert_eq!(store::short_id(b, [a, b]), "10000abcd");
    // Never longer than the id.
    assert_eq!(store::short_id("ab", ["ab", "xab"]), "ab");
}

#[test]
fn workspace_folders_are_safe_and_distinct() {
    let a = store::workspace_folder(Path::new("/a-b/c"));
    let b = store::workspace_folder(Path::new("/a/b-c"));
    assert_ne!(a, b);
    assert!(a.starts_with("a-b-c-"), "{a}");
    let weird = store::workspace_folder(Path::new("/x/../ü y/\n"));
    assert!(
        weird
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
        "{weird}"
    );
    let long = store::workspace_folder(Path::new(&format!("/{}", "d/".repeat(200))));
    assert!(long.len() <= 80 + 11, "{}", long.len());
}

#[test]
fn state_dir_follows_xdg() {
    let mut env = crate::paths::Env::new();
    env.insert("HOME".into(), "/home/u".into());
    assert_eq!(
        store::sessions_root(&env),
        Some(std::path::PathBuf::from("/home/u/.local/state/hx/sessions"))
    );
    env.insert("XDG_STATE_HOME".into(), "/s".into());
    assert_eq!(
        store::sessions_root(&env),
        Some(std::path::PathBuf::from("/s/hx/sessions"))
    );
    // A relative XDG path is invalid by the spec and ignored.
    env.insert("XDG_STATE_HOME".into(), "rel".into());
    assert_eq!(
        store::sessions_root(&env),
        Some(std::path::PathBuf::from("/home/u/.local/state/hx/sessions"))
    );
}

#[test]
fn a_model_switch_and_approvals_are_recorded_and_the_model_is_read_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let id = store::new_id();
    let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    s.push(Message::User("task".into()));
    s.record_approval(&ApprovalLine {
        call_id: "c1".into(),
        command: "sudo true".into(),
        reason: "privilege escalation".into(),
        answer: "always".into(),
        at: store::now_rfc3339(),
    });
    s.record_model("other-model");
    s.end(EndOutcome::Answered, None, None);
    assert_eq!(s.close(), None);

    let path = store.path_of(&id);
    let text = std::fs::read_to_string(&path).expect("read");
    let approval = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .find(|v| v["type"] == "approval")
        .expect("an approval line");
    assert_eq!(approval["command"], "sudo true");
    assert_eq!(approval["answer"], "always");
    let loaded = record::read(&path).expect("read back");
    assert_eq!(loaded.model, "other-model");
    assert_eq!(loaded.header.model, "m");
    assert_eq!(loaded.messages.len(), 1);
}

#[test]
fn a_repair_inside_the_history_is_recorded_so_the_file_reads_as_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let id = store::new_id();
    let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    s.push(Message::System("sys".into()));
    s.push(Message::User("task".into()));
    // A call left without its answer, then more conversation (an older hx, an edited file).
    s.push(call_turn());
    s.push(Message::User("later".into()));
    s.close();
    let path = store.path_of(&id);
    let loaded = record::read(&path).expect("read");
    let log = SessionLog::append(&path, loaded.valid_len).expect("append");
    let (mut s, repaired) = Session::resume(loaded, run_info(), Some(log));
    assert_eq!(repaired, 1);
    let in_memory = s.messages().to_vec();
    s.close();
    let again = record::read(&path).expect("read again");
    assert_eq!(again.messages, in_memory);
    // A repair is not a compaction the user would count.
    assert_eq!(again.compactions, 0);
}

#[test]
fn an_outcome_is_recorded_by_its_name_and_read_back_as_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    for (name, expected) in [
        ("max_turns", EndOutcome::MaxTurns),
        ("compacted", EndOutcome::Compacted),
        ("paused", EndOutcome::Other("paused".into())),
    ] {
        let id = store::new_id();
        let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
        s.push(Message::User("task".into()));
        s.end(expected.clone(), Some("why"), None);
        // Only the first end counts.
        s.end(EndOutcome::Error, None, None);
        assert_eq!(s.close(), None);
        let path = store.path_of(&id);
        let loaded = record::read(&path).expect("read");
        assert_eq!(loaded.last_outcome.as_deref(), Some(name));
        assert_eq!(loaded.last_detail.as_deref(), Some("why"));
        let text = std::fs::read_to_string(&path).expect("read");
        let end: End = serde_json::from_str(text.lines().last().expect("a line")).expect("end");
        assert_eq!(end.outcome, expected);
    }
}

#[test]
fn a_repair_line_holds_just_the_answers_and_later_places_name_the_same_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::new(dir.path(), Path::new("/w"));
    let id = store::new_id();
    let mut s = Session::new(header(&id), Some(store.create(&id).expect("create")));
    s.push(Message::User("task".into()));
    s.push(call_turn());
    s.push(Message::User("later".into()));
    s.close();
    let path = store.path_of(&id);
    let loaded = record::read(&path).expect("read");
    let log = SessionLog::append(&path, loaded.valid_len).expect("append");
    let (mut s, repaired) = Session::resume(loaded, run_info(), Some(log));
    assert_eq!(repaired, 1);
    // The answer is message 2; a prune after the repair names it by that place.
    s.compact(Compaction {
        trigger: "auto".into(),
        step: "prune".into(),
        tokens_before: 2,
        tokens_after: 1,
        change: Change::Cleared(vec![(2, "[cleared]".into())]),
    })
    .expect("message 2 is the answer");
    let in_memory = s.messages().to_vec();
    s.close();

    let text = std::fs::read_to_string(&path).expect("read");
    let kinds: Vec<String> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            v["type"].as_str().expect("a type").to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "header",
            "message",
            "message",
            "message",
            "run",
            "repair",
            "compaction"
        ]
    );
    let repair = text.lines().nth(5).expect("the repair line");
    assert_eq!(
        repair,
        format!(
            r#"{{"type":"repair","answers":[[2,{{"role":"tool","tool_call_id":"c1","content":"{NOT_RUN_ANSWER}"}}]]}}"#
        )
    );
    let again = record::read(&path).expect("read again");
    assert_eq!(again.messages, in_memory);
    assert_eq!(
        again.messages[2],
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "[cleared]".into()
        }
    );
    assert_eq!(again.compactions, 1);
    assert_eq!(again.sent_bytes, None);
}
