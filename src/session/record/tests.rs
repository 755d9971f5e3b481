use super::*;
use crate::model::{ToolCall, Usage};

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
    let mut lines = vec![Line::Header(&header()).text()];
    lines.extend(sample().iter().map(|m| Line::message(m).text()));
    lines.push(
        Line::usage(
            &Usage {
                prompt_tokens: 10,
                prompt_cache_hit_tokens: 4,
                completion_tokens: 2,
                ..Usage::default()
            },
            None,
            None,
            None,
        )
        .text(),
    );
    lines.push(
        Line::End(&End {
            outcome: EndOutcome::Answered,
            detail: None,
            kind: None,
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
        })
        .text(),
    );
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
        assert_eq!(Line::message(m).text(), line);
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
    text.push_str(&Line::compaction(&cleared).text());
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
    text.push_str(&Line::compaction(&replaced).text());
    text.push('\n');
    text.push_str(&Line::message(&Message::User("next".into())).text());
    text.push('\n');
    text.push_str(&Line::usage(&Usage::default(), None, None, Some("summary")).text());
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
    text.push_str(&Line::compaction(&bad).text());
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
    let e = read_from(format!("{}\n", Line::Header(&h).text()).as_bytes()).expect_err("newer");
    assert!(e.message.contains("newer hx"), "{e}");
}

/// The exact text of every kind of line: files are read by other versions of hx and by
/// other programs, so a change here is a change of the file format.
#[test]
fn each_line_kind_has_its_exact_text() {
    let mut child = header();
    child.parent_id = Some("p".into());
    child.parent_call_id = Some("pc".into());
    let usage = Usage {
        prompt_tokens: 10,
        prompt_cache_hit_tokens: 4,
        completion_tokens: 2,
        ..Usage::default()
    };
    let cleared = Compaction {
        trigger: "auto".into(),
        step: "prune".into(),
        tokens_before: 900,
        tokens_after: 300,
        change: Change::Cleared(vec![(3, "[output cleared]".into())]),
    };
    let replaced = Compaction {
        trigger: "manual".into(),
        step: "summary".into(),
        tokens_before: 300,
        tokens_after: 40,
        change: Change::Replaced(vec![Message::User("s".into())]),
    };
    let run = RunInfo {
        started_at: "2026-12-01T00:00:02Z".into(),
        model: "m2".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        effort: None,
    };
    let approval = ApprovalLine {
        call_id: "c1".into(),
        command: "sudo true".into(),
        reason: "privilege escalation".into(),
        answer: "always".into(),
        at: "2026-12-01T00:00:03Z".into(),
    };
    let answered = End {
        outcome: EndOutcome::Answered,
        detail: None,
        kind: None,
        ended_at: "2026-12-01T00:00:01Z".into(),
        duration_ms: 5,
        run: Figures {
            turns: 2,
            ..Figures::default()
        },
        session: Figures {
            turns: 2,
            tool_calls: 2,
            blocked: 1,
            prompt_tokens: 10,
            cache_hit_tokens: 4,
            completion_tokens: 2,
            ..Figures::default()
        },
    };
    let failed = End {
        outcome: EndOutcome::Error,
        detail: Some("bad \"x\"".into()),
        kind: Some("network".into()),
        ended_at: "t".into(),
        duration_ms: 0,
        run: Figures::default(),
        session: Figures::default(),
    };
    let messages = sample();
    let mut lines = vec![Line::Header(&header()).text(), Line::Header(&child).text()];
    lines.extend(messages.iter().map(|m| Line::message(m).text()));
    lines.extend([
        Line::usage(&usage, None, None, None).text(),
        Line::usage(&usage, None, None, Some("summary")).text(),
        Line::compaction(&cleared).text(),
        Line::compaction(&replaced).text(),
        Line::Run(&run).text(),
        Line::Approval(&approval).text(),
        Line::Model {
            model: "other",
            at: "2026-12-01T00:00:04Z",
        }
        .text(),
        Line::Repair {
            answers: &[(
                3,
                Message::Tool {
                    tool_call_id: "c2".into(),
                    content: "Error: not run".into(),
                },
            )],
        }
        .text(),
        Line::End(&answered).text(),
        Line::End(&failed).text(),
    ]);
    let expected = [
        r#"{"type":"header","version":1,"id":"0190aaaa-0000-7000-8000-000000000000","workspace":"/w","model":"m","provider":"deepseek","base_url":"http://x","hx_version":"0.1.0","started_at":"2026-12-01T00:00:00Z"}"#,
        r#"{"type":"header","version":1,"id":"0190aaaa-0000-7000-8000-000000000000","parent_id":"p","parent_call_id":"pc","workspace":"/w","model":"m","provider":"deepseek","base_url":"http://x","hx_version":"0.1.0","started_at":"2026-12-01T00:00:00Z"}"#,
        r#"{"type":"message","message":{"role":"system","content":"sys\nprompt"}}"#,
        r#"{"type":"message","message":{"role":"user","content":"task ✓ \u001b[31m"}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":"","reasoning_content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"bash","arguments":"{ \"command\" : \"ls\" }"}},{"id":"c2","type":"function","function":{"name":"glob","arguments":"{}"}}]}}"#,
        r#"{"type":"message","message":{"role":"tool","tool_call_id":"c1","content":"a\nb"}}"#,
        r#"{"type":"message","message":{"role":"tool","tool_call_id":"c2","content":""}}"#,
        r#"{"type":"message","message":{"role":"assistant","content":"done"}}"#,
        r#"{"type":"usage","prompt_tokens":10,"prompt_cache_hit_tokens":4,"completion_tokens":2}"#,
        r#"{"type":"usage","prompt_tokens":10,"prompt_cache_hit_tokens":4,"completion_tokens":2,"request":"summary"}"#,
        r#"{"type":"compaction","trigger":"auto","step":"prune","tokens_before":900,"tokens_after":300,"cleared":[[3,"[output cleared]"]]}"#,
        r#"{"type":"compaction","trigger":"manual","step":"summary","tokens_before":300,"tokens_after":40,"messages":[{"role":"user","content":"s"}]}"#,
        r#"{"type":"run","started_at":"2026-12-01T00:00:02Z","model":"m2","provider":"deepseek","base_url":"http://x","hx_version":"0.1.0"}"#,
        r#"{"type":"approval","call_id":"c1","command":"sudo true","reason":"privilege escalation","answer":"always","at":"2026-12-01T00:00:03Z"}"#,
        r#"{"type":"model","model":"other","at":"2026-12-01T00:00:04Z"}"#,
        r#"{"type":"repair","answers":[[3,{"role":"tool","tool_call_id":"c2","content":"Error: not run"}]]}"#,
        r#"{"type":"end","outcome":"answered","ended_at":"2026-12-01T00:00:01Z","duration_ms":5,"run":{"turns":2,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0},"session":{"turns":2,"tool_calls":2,"blocked":1,"prompt_tokens":10,"cache_hit_tokens":4,"completion_tokens":2}}"#,
        r#"{"type":"end","outcome":"error","detail":"bad \"x\"","kind":"network","ended_at":"t","duration_ms":0,"run":{"turns":0,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0},"session":{"turns":0,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0}}"#,
    ];
    assert_eq!(lines.len(), expected.len());
    for (line, want) in lines.iter().zip(expected) {
        assert_eq!(line, want);
    }
    // Whatever a header value says its kind is, the line is a header line.
    let mut odd = header();
    odd.kind = "other".into();
    assert_eq!(Line::Header(&odd).text(), expected[0]);
}

#[test]
fn outcomes_are_named_as_before_and_unknown_ones_are_kept() {
    for name in [
        "answered",
        "max_turns",
        "stopped",
        "error",
        "interrupted",
        "compacted",
    ] {
        let outcome = EndOutcome::from(name);
        assert!(!matches!(outcome, EndOutcome::Other(_)), "{name}");
        assert_eq!(outcome.as_str(), name);
        let json = serde_json::to_string(&outcome).expect("json");
        assert_eq!(json, format!("\"{name}\""));
        let back: EndOutcome = serde_json::from_str(&json).expect("reads");
        assert_eq!(back, outcome);
    }
    // A newer hx's outcome reads, and is written again as it was.
    let newer: EndOutcome = serde_json::from_str("\"paused\"").expect("reads");
    assert_eq!(newer, EndOutcome::Other("paused".into()));
    assert_eq!(EndOutcome::from("paused"), newer);
    assert_eq!(serde_json::to_string(&newer).expect("json"), "\"paused\"");
    let end: End = serde_json::from_str(
        r#"{"type":"end","outcome":"paused","ended_at":"t","duration_ms":0,"run":{"turns":0,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0},"session":{"turns":0,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0}}"#,
    )
    .expect("an end line of a newer hx");
    assert_eq!(end.outcome.as_str(), "paused");
}

/// Lines as hx wrote them before the tag moved to the front of `run`, `approval` and `end`
/// lines read as they did.
#[test]
fn lines_with_the_tag_last_still_read() {
    let mut text = full_file();
    text.push_str(r#"{"started_at":"2026-12-01T00:00:02Z","model":"m2","provider":"p2","base_url":"http://y","hx_version":"0.1.0","type":"run"}"#);
    text.push('\n');
    text.push_str(r#"{"call_id":"c1","command":"sudo true","reason":"privilege escalation","answer":"always","at":"2026-12-01T00:00:03Z","type":"approval"}"#);
    text.push('\n');
    text.push_str(r#"{"outcome":"error","detail":"bad","ended_at":"t","duration_ms":0,"run":{"turns":1,"tool_calls":0,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0},"session":{"turns":3,"tool_calls":2,"blocked":0,"prompt_tokens":0,"cache_hit_tokens":0,"completion_tokens":0},"type":"end"}"#);
    text.push('\n');
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.runs, 2);
    assert_eq!(
        (
            loaded.model.as_str(),
            loaded.provider.as_str(),
            loaded.base_url.as_str()
        ),
        ("m2", "p2", "http://y")
    );
    assert_eq!(loaded.last_outcome.as_deref(), Some("error"));
    assert_eq!(loaded.last_detail.as_deref(), Some("bad"));
    assert_eq!(loaded.totals.turns, 3);
    assert_eq!(loaded.messages, sample());
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

/// The history of [`sample`] with the result of `c2` taken out, and the file that records
/// it.
fn open_inside() -> (Vec<Message>, String) {
    let mut open = sample();
    open.remove(4);
    let mut lines = vec![Line::Header(&header()).text()];
    lines.extend(open.iter().map(|m| Line::message(m).text()));
    (open, file_of(&lines))
}

#[test]
fn a_repair_line_puts_its_answers_where_it_says() {
    let (open, mut text) = open_inside();
    assert_ne!(open, sample());
    let answer = Message::Tool {
        tool_call_id: "c2".into(),
        content: String::new(),
    };
    text.push_str(
        &Line::Repair {
            answers: &[(4, answer)],
        }
        .text(),
    );
    text.push('\n');
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.messages, sample());
    assert_eq!(loaded.compactions, 0);
    assert_eq!(loaded.sent_bytes, None);
}

/// Before repair lines, a repair was a compaction line with the whole repaired history.
#[test]
fn an_old_repair_written_as_a_compaction_reads_as_before() {
    let (_, mut text) = open_inside();
    let old = Compaction {
        trigger: "repair".into(),
        step: "repair".into(),
        tokens_before: 0,
        tokens_after: 0,
        change: Change::Replaced(sample()),
    };
    text.push_str(&Line::compaction(&old).text());
    text.push('\n');
    assert!(text.contains(r#"{"type":"compaction","trigger":"repair","step":"repair","tokens_before":0,"tokens_after":0,"messages":[{"role":"system""#));
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.messages, sample());
    // Not a compaction the user would count.
    assert_eq!(loaded.compactions, 0);
    assert_eq!(loaded.sent_bytes, None);
}

#[test]
fn a_repair_line_that_does_not_fit_is_damage_naming_the_line() {
    let (open, text) = open_inside();
    let line = open.len() + 2;
    for (repair, says) in [
        (r#"{"type":"repair"}"#, "without answers"),
        (
            r#"{"type":"repair","answers":[[4,{"role":"user","content":"x"}]]}"#,
            "not a tool result",
        ),
        (
            r#"{"type":"repair","answers":[[9,{"role":"tool","tool_call_id":"c2","content":""}]]}"#,
            "past the end",
        ),
        (
            r#"{"type":"repair","answers":[[4,{"role":"tool","tool_call_id":"c2","content":""}],[4,{"role":"tool","tool_call_id":"c3","content":""}]]}"#,
            "comes after",
        ),
        (
            r#"{"type":"repair","answers":[[-1,{"role":"tool"}]]}"#,
            "not a valid session line",
        ),
    ] {
        let bad = format!("{text}{repair}\n");
        let e = read_from(bad.as_bytes()).expect_err(repair);
        assert_eq!(e.line, line, "{repair}: {e}");
        assert!(e.message.contains(says), "{repair}: {e}");
    }
}

/// Tokens spent thinking: in a usage line and the figures when the server counted any,
/// summed by the reader; lines without them (older files) read as none.
#[test]
fn reasoning_tokens_are_written_when_counted_and_summed_when_read() {
    let thought = Usage {
        prompt_tokens: 10,
        prompt_cache_hit_tokens: 4,
        completion_tokens: 20,
        reasoning_tokens: 12,
    };
    let line = Line::usage(&thought, None, None, Some("summary")).text();
    assert_eq!(
        line,
        r#"{"type":"usage","prompt_tokens":10,"prompt_cache_hit_tokens":4,"completion_tokens":20,"reasoning_tokens":12,"request":"summary"}"#
    );
    let figures = Figures {
        completion_tokens: 20,
        reasoning_tokens: 12,
        ..Figures::default()
    };
    let json = serde_json::to_string(&figures).expect("json");
    assert!(
        json.ends_with(r#""completion_tokens":20,"reasoning_tokens":12}"#),
        "{json}"
    );
    let back: Figures = serde_json::from_str(&json).expect("reads");
    assert_eq!(back, figures);
    let old: Figures = serde_json::from_str(
        r#"{"turns":1,"tool_calls":0,"blocked":0,"prompt_tokens":1,"cache_hit_tokens":0,"completion_tokens":2}"#,
    )
    .expect("an older hx's figures");
    assert_eq!(old.reasoning_tokens, 0);
    // Summed over a run that has no end line yet, beside the usage lines that have none.
    let mut text = full_file();
    text.push_str(&Line::usage(&thought, None, None, None).text());
    text.push('\n');
    text.push_str(&Line::usage(&thought, None, None, None).text());
    text.push('\n');
    let loaded = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.totals.reasoning_tokens, 24);
    // The end line says the session so far had none; the two lines after it add theirs.
    assert_eq!(loaded.totals.completion_tokens, 40);
}

/// The effort a session's requests went with: the header's, then each run's (a run line
/// without one sent none), then each `effort` line's; an effort line's text is exact.
#[test]
fn the_effort_is_the_headers_then_each_runs_and_effort_lines() {
    let mut h = header();
    h.effort = Some("low".into());
    let header_line = Line::Header(&h).text();
    assert!(header_line.ends_with(r#","started_at":"2026-12-01T00:00:00Z","effort":"low"}"#));
    let mut lines = vec![header_line];
    let read = |lines: &[String]| read_from(file_of(lines).as_bytes()).expect("read").effort;
    assert_eq!(read(&lines), Some("low".into()));
    let set = Line::Effort {
        effort: Some("max"),
        at: "2026-12-01T00:00:05Z",
    }
    .text();
    assert_eq!(
        set,
        r#"{"type":"effort","effort":"max","at":"2026-12-01T00:00:05Z"}"#
    );
    lines.push(set);
    assert_eq!(read(&lines), Some("max".into()));
    let run = |effort: Option<&str>| RunInfo {
        started_at: "2026-12-01T00:00:06Z".into(),
        model: "m".into(),
        provider: "deepseek".into(),
        base_url: "http://x".into(),
        hx_version: "0.1.0".into(),
        effort: effort.map(str::to_string),
    };
    let plain = Line::Run(&run(None)).text();
    assert!(!plain.contains("effort"), "{plain}");
    lines.push(plain);
    assert_eq!(read(&lines), None);
    lines.push(Line::Run(&run(Some("off"))).text());
    assert!(lines
        .last()
        .expect("a line")
        .ends_with(r#","effort":"off"}"#));
    assert_eq!(read(&lines), Some("off".into()));
    let cleared = Line::Effort {
        effort: None,
        at: "t",
    }
    .text();
    assert_eq!(cleared, r#"{"type":"effort","effort":null,"at":"t"}"#);
    lines.push(cleared);
    assert_eq!(read(&lines), None);
    // A file from before efforts were recorded: its requests said none.
    assert_eq!(
        read_from(full_file().as_bytes()).expect("read").effort,
        None
    );
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

/// The lines in the order written, each with its number, and the session they end in, as
/// `read` gives it.
#[test]
fn entries_are_the_lines_in_order_and_end_in_what_read_gives() {
    let mut text = full_file();
    let usage = Usage {
        prompt_tokens: 100,
        prompt_cache_hit_tokens: 60,
        completion_tokens: 7,
        reasoning_tokens: 3,
    };
    let cost = crate::model::Cost {
        nanos: 1_500,
        currency: crate::model::price::Currency::USD,
        peak: true,
    };
    for line in [
        r#"{"type":"run","started_at":"2026-12-01T00:01:00Z","model":"m2","provider":"p"}"#
            .to_string(),
        Line::message(&Message::User("more".into())).text(),
        Line::usage(&usage, Some(&cost), Some("m2"), Some("summary")).text(),
        r#"{"type":"compaction","trigger":"auto","step":"summary","messages":[{"role":"user","content":"s"}]}"#.to_string(),
        r#"{"type":"approval","call_id":"c9"}"#.to_string(),
        r#"{"type":"rewind","to":1,"code":false,"conversation":true,"at_message":0,"at":"x"}"#
            .to_string(),
    ] {
        text.push_str(&line);
        text.push('\n');
    }
    let (loaded, entries) = read_entries_from(text.as_bytes()).expect("read");
    let numbers: Vec<usize> = entries.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (2..=15).collect::<Vec<_>>());
    let messages: Vec<&Message> = entries
        .iter()
        .filter_map(|(_, e)| match e {
            Entry::Message(m) => Some(m),
            _ => None,
        })
        .collect();
    assert_eq!(messages.len(), 7);
    assert_eq!(*messages[6], Message::User("more".into()));
    assert_eq!(
        entries[8].1,
        Entry::Run(RunLine {
            started_at: Some("2026-12-01T00:01:00Z".into()),
            model: Some("m2".into()),
            provider: Some("p".into()),
            ..RunLine::default()
        })
    );
    assert_eq!(
        entries[10].1,
        Entry::Usage(RequestUsage {
            usage,
            request: Some("summary".into()),
            model: Some("m2".into()),
            cost: Some(cost),
        })
    );
    assert!(
        matches!(&entries[7].1, Entry::End(e) if e.outcome == "answered"
        && e.ended_at.as_deref() == Some("2026-12-01T00:00:01Z")
        && e.session.map(|s| s.tool_calls) == Some(2))
    );
    assert!(matches!(&entries[11].1, Entry::Compaction(c) if c.step == "summary"));
    assert_eq!(entries[12].1, Entry::Other("approval".into()));
    assert!(matches!(&entries[13].1, Entry::Rewind(r) if r.at_message == Some(0)));
    let read = read_from(text.as_bytes()).expect("read");
    assert_eq!(loaded.messages, read.messages);
    assert!(loaded.messages.is_empty());
    assert_eq!(loaded.totals, read.totals);
    assert_eq!(loaded.valid_len, read.valid_len);
}
