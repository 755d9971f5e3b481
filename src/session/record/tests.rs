use super::*;
use crate::model::ToolCall;

fn header() -> Header {
    Header {
        id: "0190aaaa-0000-7000-8000-000000000000".into(),
        workspace: "/w".into(),
        model: "m".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        started_at: "2026-12-01T00:00:00Z".into(),
        ..Header::default()
    }
}

fn sample() -> Vec<Message> {
    vec![
        Message::System("sys\nprompt".into()),
        Message::User("task ✓ \u{1b}[31m".into()),
        Message::Assistant {
            content: String::new(),
            reasoning: Some(String::new()),
            tool_calls: vec![
                ToolCall {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: "{ \"command\" : \"ls\" }".into(),
                },
                ToolCall {
                    id: "c2".into(),
                    name: "glob".into(),
                    arguments: "{}".into(),
                },
            ],
        },
        Message::Tool {
            tool_call_id: "c1".into(),
            content: "a\nb".into(),
        },
        Message::Tool {
            tool_call_id: "c2".into(),
            content: String::new(),
        },
        Message::Assistant {
            content: "done".into(),
            reasoning: None,
            tool_calls: vec![],
        },
    ]
}

fn file_of(lines: &[String]) -> String {
    let mut s = String::new();
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

fn full_file() -> String {
    let mut lines = vec![header_line(&header())];
    lines.extend(sample().iter().map(message_line));
    lines.push(usage_line(&Usage {
        prompt_tokens: 10,
        prompt_cache_hit_tokens: 4,
        completion_tokens: 2,
    }));
    lines.push(end_line(&End {
        outcome: "answered".into(),
        detail: None,
        ended_at: "2026-12-01T00:00:01Z".into(),
        duration_ms: 5,
        run: Figures {
            turns: 2,
            ..Figures::default()
        },
        session: Figures {
            turns: 2,
            tool_calls: 2,
            ..Figures::default()
        },
    }));
    file_of(&lines)
}

#[test]
fn messages_round_trip_exactly() {
    let text = full_file();
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.header, header());
    assert_eq!(loaded.messages, sample());
    // Exactly as sent: the JSON of each message read back is the JSON written.
    for (m, line) in loaded.messages.iter().zip(text.lines().skip(1)) {
        assert_eq!(message_line(m), line);
    }
    assert_eq!(loaded.last_outcome.as_deref(), Some("answered"));
    assert_eq!(loaded.totals.turns, 2);
    assert_eq!(loaded.totals.tool_calls, 2);
    assert_eq!(loaded.valid_len, text.len() as u64);
    assert!(loaded.warnings.is_empty());
}

#[test]
fn the_reader_measures_the_messages_as_sent() {
    let loaded = read_from(full_file().as_bytes()).expect("read");
    let sent: usize = sample()
        .iter()
        .map(|m| serde_json::to_string(m).expect("json").len())
        .sum();
    assert_eq!(loaded.sent_bytes, Some(sent as u64));
    // A compaction line changes the messages: the count no longer holds.
    let mut text = full_file();
    text.push_str(
        "{\"type\":\"compaction\",\"trigger\":\"manual\",\"step\":\"summary\",\"messages\":[{\"role\":\"user\",\"content\":\"s\"}]}\n",
    );
    assert_eq!(read_from(text.as_bytes()).expect("read").sent_bytes, None);
}

#[test]
fn a_torn_last_line_is_skipped_with_a_warning() {
    let text = full_file();
    let cut = &text[..text.len() - 10];
    let loaded = read_from(cut.as_bytes()).expect("read");
    assert_eq!(loaded.messages.len(), 6);
    assert_eq!(loaded.warnings.len(), 1, "{:?}", loaded.warnings);
    assert_eq!(loaded.last_outcome, None);
    let complete = cut.rfind('\n').expect("a newline") + 1;
    assert_eq!(loaded.valid_len, complete as u64);
    // The open run's request is still counted.
    assert_eq!(loaded.totals.turns, 1);
}

#[test]
fn unknown_line_types_are_skipped() {
    let mut text = full_file();
    text.push_str("{\"type\":\"approval\",\"before\":5}\n");
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.messages.len(), 6);
}

#[test]
fn a_compaction_line_switches_the_history_and_keeps_what_came_before() {
    let mut text = full_file();
    let cleared = Compaction {
        trigger: "auto".into(),
        step: "prune".into(),
        tokens_before: 900,
        tokens_after: 300,
        change: Change::Cleared(vec![(3, "[output cleared]".into())]),
    };
    text.push_str(&compaction_line(&cleared));
    text.push('\n');
    let loaded = read_from(text.as_bytes()).expect("read");
    let mut expected = sample();
    cleared.apply(&mut expected).expect("applies");
    assert_eq!(loaded.messages, expected);
    assert_eq!(loaded.compactions, 1);

    let new = vec![
        Message::System("sys\nprompt".into()),
        Message::User("task ✓ \u{1b}[31m".into()),
        Message::User("summary".into()),
    ];
    let replaced = Compaction {
        trigger: "manual".into(),
        step: "summary".into(),
        tokens_before: 300,
        tokens_after: 40,
        change: Change::Replaced(new.clone()),
    };
    text.push_str(&compaction_line(&replaced));
    text.push('\n');
    text.push_str(&message_line(&Message::User("next".into())));
    text.push('\n');
    text.push_str(&request_usage_line(&Usage::default(), "summary"));
    text.push('\n');
    let loaded = read_from(text.as_bytes()).expect("read");
    let mut expected = new;
    expected.push(Message::User("next".into()));
    assert_eq!(loaded.messages, expected);
    assert_eq!(loaded.compactions, 2);
    // The end line's two turns; the summary's usage counts no turn.
    assert_eq!(loaded.totals.turns, 2);
}

#[test]
fn a_compaction_that_clears_no_tool_result_is_damage() {
    let mut text = full_file();
    let bad = Compaction {
        trigger: "auto".into(),
        step: "prune".into(),
        tokens_before: 1,
        tokens_after: 1,
        change: Change::Cleared(vec![(1, "x".into())]),
    };
    text.push_str(&compaction_line(&bad));
    text.push('\n');
    let e = read_from(text.as_bytes()).expect_err("damage");
    assert!(
        e.message.contains("message 1, which is not a tool result"),
        "{e}"
    );
    let lines = text.lines().count();
    assert_eq!(e.line, lines);
}

#[test]
fn damage_is_an_error_naming_the_line() {
    let good = full_file();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[3] = "{\"type\":\"message\",\"message\":{\"role\":\"wizard\"}}";
    let bad = format!("{}\n", lines.join("\n"));
    let e = read_from(bad.as_bytes()).expect_err("bad role");
    assert_eq!(e.line, 4, "{e}");
    lines[3] = "garbage";
    let bad = format!("{}\n", lines.join("\n"));
    assert_eq!(read_from(bad.as_bytes()).expect_err("garbage").line, 4);
    for (text, line) in [
        ("", 0),
        ("garbage\n", 1),
        ("{\"type\":\"header\"}\n", 1),
        ("\u{0}\u{1}\n", 1),
        ("{\"type\":\"header\",\"version\":99,\"id\":\"x\",\"workspace\":\"\",\"model\":\"\",\"provider\":\"\",\"base_url\":\"\",\"hx_version\":\"\",\"started_at\":\"\"}\n", 1),
    ] {
        let e = read_from(text.as_bytes()).expect_err(text);
        assert_eq!(e.line, line, "{text:?}: {e}");
    }
}

#[test]
fn newer_versions_are_named() {
    let mut h = header();
    h.version = FORMAT_VERSION + 1;
    let e = read_from(format!("{}\n", header_line(&h)).as_bytes()).expect_err("newer");
    assert!(e.message.contains("newer hx"), "{e}");
}

#[test]
fn repair_answers_open_calls_after_the_existing_answers() {
    let mut m = sample();
    m.truncate(4); // c1 answered, c2 not, no final answer
    let (added, at_end) = repair(&mut m, "Error: not run");
    assert_eq!((added, at_end), (1, true));
    assert_eq!(
        m[4],
        Message::Tool {
            tool_call_id: "c2".into(),
            content: "Error: not run".into()
        }
    );

    // An open call in the middle of the history is answered in place.
    let mut m = sample();
    m.remove(4);
    let (added, at_end) = repair(&mut m, "x");
    assert_eq!((added, at_end), (1, false));
    assert_eq!(m.len(), 6);
    assert!(matches!(&m[4], Message::Tool { tool_call_id, .. } if tool_call_id == "c2"));

    let mut whole = sample();
    assert_eq!(repair(&mut whole, "x"), (0, true));
    assert_eq!(whole, sample());
}

mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Whatever the bytes, reading never panics.
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
            let _ = read_from(&bytes[..]);
        }

        /// Cutting a valid file anywhere keeps every complete line before the cut.
        #[test]
        fn any_cut_keeps_the_complete_lines(cut in 0usize..2000) {
            let text = full_file();
            let cut = cut.min(text.len());
            let part = &text.as_bytes()[..cut];
            if let Ok(l) = read_from(part) {
                let complete = part.iter().filter(|&&b| b == b'\n').count();
                // header + messages + usage + end lines, in that order
                prop_assert_eq!(l.messages.len(), complete.saturating_sub(1).min(6));
                prop_assert!(l.valid_len as usize <= cut);
            }
        }
    }
}
