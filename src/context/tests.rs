use std::sync::Arc;

use super::*;
use crate::model::{Message, ReasoningEcho, ToolCall};
use crate::skills::{LoadSkill, SkillRegistry};
use crate::tools::todo::{TodoList, TodoWrite};
use crate::tools::{Registry, Reminder, ToolSet};

/// The main agent's tools, whose own words say what compaction keeps, and its reminder.
fn main_tools() -> (ToolSet, Vec<Arc<dyn Reminder>>) {
    let todos = TodoList::new();
    let mut registry = Registry::standard();
    registry.register(Arc::new(TodoWrite::new(todos.clone())));
    registry.register(Arc::new(LoadSkill::new(Arc::new(SkillRegistry::default()))));
    (ToolSet::all(registry), vec![todos])
}

/// [`summary::rebuild`] with the main agent's tools.
fn rebuild(
    history: &[Message],
    text: &str,
    budgets: &Budgets,
    echo: ReasoningEcho,
    room: u64,
) -> Result<summary::Rebuilt, u64> {
    let (tools, reminders) = main_tools();
    let keep = summary::Keep {
        tools: &tools,
        reminders: &reminders,
        notes: &[],
    };
    summary::rebuild(history, text, budgets, echo, room, &keep)
}

fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: arguments.into(),
    }
}

fn turn(calls: Vec<ToolCall>) -> Message {
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

fn user(t: &str) -> Message {
    Message::User(t.into())
}

#[test]
fn the_limit_is_a_share_or_a_count_never_past_the_window() {
    let s = Settings {
        window: 100_000,
        compact_at: CompactAt::Fraction(0.8),
    };
    assert_eq!(s.limit(), 80_000);
    let s = Settings {
        compact_at: CompactAt::Tokens(30_000),
        ..s
    };
    assert_eq!(s.limit(), 30_000);
    let s = Settings {
        compact_at: CompactAt::Tokens(300_000),
        ..s
    };
    assert_eq!(s.limit(), 100_000);
    assert_eq!(builtin_window("deepseek-v4-flash"), Some(1_048_576));
    assert_eq!(builtin_window("DeepSeek-V4-Pro"), Some(1_048_576));
    for current in ["deepseek-flash", "deepseek-chat", "deepseek-reasoner"] {
        assert_eq!(builtin_window(current), Some(1_048_576), "{current}");
    }
    assert_eq!(builtin_window("qwen3-coder"), None);
    assert_eq!(thousands(812_344), "812,344");
    assert_eq!(thousands(1_048_576), "1,048,576");
    assert_eq!(thousands(999), "999");
}

#[test]
fn budgets_are_the_issue_s_figures_for_large_windows_and_scale_down_for_small_ones() {
    let b = Budgets::for_limit(102_400);
    assert_eq!(
        (
            b.keep_tool_output,
            b.min_prune_gain,
            b.skill_each,
            b.skills_total,
            b.user_messages
        ),
        (40_000, 20_000, 5_000, 25_000, 20_000)
    );
    let b = Budgets::for_limit(3_200);
    assert_eq!((b.keep_tool_output, b.min_prune_gain), (1_600, 640));
}

#[test]
fn the_next_request_is_the_server_s_count_plus_an_estimate_of_what_was_appended() {
    let history = vec![Message::System("s".repeat(3000)), user("task")];
    let mut m = Meter::new(Settings::default(), 100);
    // No count yet: the whole request, tools included, at 3 bytes a token.
    let whole = m.request(&history);
    assert!(whole > 1_000 + 100, "{whole}");
    // A real tokenizer counts fewer tokens than the estimate: 4 bytes a token, say.
    let count = whole * 3 / 4;
    m.observed(count, &history);
    assert_eq!(m.request(&history), count);
    let mut longer = history.clone();
    longer.push(tool("x", &"y".repeat(300)));
    let appended = estimate::message(&longer[2]);
    assert!((100..=130).contains(&appended), "{appended}");
    assert_eq!(m.request(&longer), count + appended);
    // Zero is no count, nor is more tokens than the request has bytes; a changed history
    // drops the count.
    m.observed(0, &longer);
    assert_eq!(m.request(&longer), count + appended);
    m.observed(u64::MAX / 2, &longer);
    assert_eq!(m.request(&longer), count + appended);
    m.history_changed();
    assert_eq!(m.request(&longer), m.whole(&longer));
}

#[test]
fn a_count_under_a_quarter_of_the_estimate_is_no_count() {
    let history = vec![Message::System("s".repeat(3000)), user(&"x".repeat(30_000))];
    let mut m = Meter::new(Settings::default(), 100);
    let whole = m.whole(&history);
    assert!(whole > 11_000, "{whole}");
    // A server that says 1 for a large request would keep compaction off: the whole request
    // is estimated instead.
    m.observed(1, &history);
    assert_eq!(m.request(&history), whole);
    m.observed(whole.div_ceil(4) - 1, &history);
    assert_eq!(m.request(&history), whole);
    // A quarter is the lowest count believed, and a believed count stays when a later one
    // is made up.
    let quarter = whole.div_ceil(4);
    m.observed(quarter, &history);
    assert_eq!(m.request(&history), quarter);
    m.observed(1, &history);
    assert_eq!(m.request(&history), quarter);
}

#[test]
fn an_overflow_teaches_the_meter_the_real_window_or_a_smaller_limit() {
    let mut m = Meter::new(
        Settings {
            window: 128_000,
            compact_at: CompactAt::Fraction(0.8),
        },
        0,
    );
    let warning = m.overflowed(Some(32_768), 40_000).expect("a warning");
    assert!(
        warning.contains("32,768") && warning.contains("128,000"),
        "{warning}"
    );
    assert_eq!((m.window(), m.limit()), (32_768, 26_214));
    // The window named is not smaller: the estimate was off, so the limit halves the size.
    assert_eq!(m.overflowed(Some(32_768), 20_000), None);
    assert_eq!(m.limit(), 10_000);
    assert_eq!(m.overflowed(None, 30_000), None);
    assert_eq!(m.limit(), 10_000);
}

#[test]
fn a_window_the_server_stated_replaces_the_assumed_one_once_and_yields_to_an_overflow() {
    let assumed = Settings {
        window: 128_000,
        compact_at: CompactAt::Fraction(0.8),
    };
    // At the start of a run: larger or smaller, the stated window is the one.
    let m = Meter::new(assumed, 0).with_learned(Learned::stated(262_144));
    assert_eq!(m.window(), 262_144);
    let mut m = Meter::new(assumed, 0);
    assert!(m.restate(Learned::stated(4_096)));
    assert_eq!((m.window(), m.limit()), (4_096, 3_276));
    // Taken once: a later overflow's smaller window is not undone by the same statement.
    m.overflowed(Some(3_000), 4_000);
    assert!(!m.restate(Learned::stated(4_096)));
    assert_eq!(m.window(), 3_000);
    // A window a refused request showed wins over the statement.
    let mut learned = m.learned(&assumed);
    learned.merge(Learned::stated(4_096));
    let next = Meter::new(assumed, 0).with_learned(learned);
    assert_eq!(next.window(), 3_000);
    // Nothing stated: nothing changes.
    assert!(!Meter::new(assumed, 0).restate(Learned::default()));
}

#[test]
fn what_a_run_learned_survives_new_tools_and_starts_the_next_run() {
    let settings = Settings {
        window: 128_000,
        compact_at: CompactAt::Fraction(0.8),
    };
    let mut m = Meter::new(settings, 100);
    assert_eq!(m.learned(&settings), Learned::default());
    m.overflowed(Some(32_768), 40_000);
    m.tools_changed(5_000);
    assert_eq!(
        (m.window(), m.limit(), m.overhead()),
        (32_768, 26_214, 5_000)
    );
    let next = Meter::new(settings, 100).with_learned(m.learned(&settings));
    assert_eq!((next.window(), next.limit()), (32_768, 26_214));
    m.overflowed(None, 20_000);
    let next = Meter::new(settings, 100).with_learned(m.learned(&settings));
    assert_eq!((next.window(), next.limit()), (32_768, 10_000));

    // Another meter that learned only a limit does not erase the window.
    let mut other = Meter::new(settings, 100);
    other.overflowed(None, 60_000);
    let mut kept = m.learned(&settings);
    kept.merge(other.learned(&settings));
    let next = Meter::new(settings, 100).with_learned(kept);
    assert_eq!((next.window(), next.limit()), (32_768, 10_000));
}

#[test]
fn a_failed_summary_stops_proactive_compaction_until_the_window_is_at_stake() {
    let mut m = Meter::new(
        Settings {
            window: 10_000,
            compact_at: CompactAt::Fraction(0.5),
        },
        0,
    );
    assert!(m.over_limit(6_000, &[]));
    m.summary_failed();
    assert!(!m.over_limit(6_000, &[]));
    assert!(m.over_limit(10_001, &[]));
}

/// A history with `n` bash turns of `size`-byte outputs, after a loaded skill.
fn long_history(n: usize, size: usize) -> Vec<Message> {
    let mut h = vec![
        Message::System("system".into()),
        user("the task"),
        turn(vec![call("s", "load_skill", r#"{"name":"deploy"}"#)]),
        tool(
            "s",
            &format!("<skill name=\"deploy\">\n{}\n</skill>", "d".repeat(size)),
        ),
    ];
    for i in 0..n {
        h.push(turn(vec![call(
            &format!("c{i}"),
            "bash",
            r#"{"command":"ls"}"#,
        )]));
        h.push(tool(&format!("c{i}"), &"o".repeat(size)));
    }
    h
}

#[test]
fn prune_clears_older_outputs_keeps_the_newest_and_never_touches_skills() {
    let h = long_history(6, 3_000);
    // Each output is about 1,000 tokens: keeping 2,500 keeps the two newest.
    let (tools, _) = main_tools();
    let plan = prune::plan(&h, 2_500, &tools);
    let cleared: Vec<usize> = plan.cleared.iter().map(|(i, _)| *i).collect();
    assert_eq!(cleared, [5, 7, 9, 11]);
    assert!(plan.freed > 3_800 && plan.freed < 4_100, "{}", plan.freed);
    assert_eq!(
        plan.cleared[0].1,
        "[output cleared to save context: 3,000 chars of bash; run it again if needed]"
    );
    let mut pruned = h.clone();
    prune::apply(&mut pruned, &plan.cleared);
    assert_eq!(pruned[3], h[3], "the skill body stays");
    assert_eq!(pruned[13], h[13]);
    // Cleared outputs are not cleared again.
    assert_eq!(prune::plan(&pruned, 2_500, &tools).cleared, []);
}

#[test]
fn results_the_model_has_not_seen_are_never_cleared_and_are_cut_head_and_tail() {
    let mut h = long_history(2, 3_000);
    let last = h.len() - 1;
    if let Some(Message::Tool { content, .. }) = h.get_mut(last) {
        *content = format!("START{}END", "o".repeat(15_000));
    }
    assert_eq!(prune::unseen_from(&h), last);
    let (tools, _) = main_tools();
    // The newest result alone passes what a prune keeps: the older ones go, it stays.
    let plan = prune::plan(&h, 2_500, &tools);
    assert!(plan.cleared.iter().all(|(i, _)| *i < last), "{plan:?}");
    assert_eq!((plan.old().len(), plan.cut), (plan.cleared.len(), 0));
    // Cut to the room given, its start and end kept around the line saying so.
    let unseen = prune::unseen(&h, &tools);
    assert_eq!(unseen.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [last]);
    let cuts = prune::cut(&h, &unseen, 1_000);
    assert_eq!(cuts.cut, 1);
    let (at, text) = &cuts.cleared[0];
    assert_eq!(*at, last);
    assert!(
        text.starts_with("STARTooo") && text.ends_with("oooEND"),
        "{text}"
    );
    assert!(
        text.contains("characters are left out here") && text.contains("of its 15,008"),
        "{text}"
    );
    let mut cut = h.clone();
    prune::apply(&mut cut, &cuts.cleared);
    let size = estimate::message(&cut[last]);
    assert!((900..=1_000).contains(&size), "{size}");
    let both = plan.with_cuts(cuts);
    assert_eq!(both.cut, 1);
    assert!(both.old().iter().all(|(i, _)| *i < last));
    // Results that fit their share stay whole, and leave the rest of it to the others.
    let mut two = h.clone();
    two.insert(last, tool("c1b", "small"));
    let unseen = prune::unseen(&two, &tools);
    assert_eq!(unseen.len(), 2);
    let cuts = prune::cut(&two, &unseen, 1_000);
    assert_eq!(cuts.cleared.len(), 1);
    assert_eq!(cuts.cleared[0].0, last + 1);
}

#[test]
fn the_summary_request_cuts_the_newest_results_rather_than_clearing_them() {
    let mut h = long_history(3, 3_000);
    let last = h.len() - 1;
    if let Some(Message::Tool { content, .. }) = h.get_mut(last) {
        *content = format!("START{}END", "o".repeat(15_000));
    }
    let shrunk = summary::request(&h, 3_000).expect("fits");
    assert!(estimate::messages(&shrunk) <= 3_000);
    let Message::Tool { content, .. } = &shrunk[last] else {
        panic!("{shrunk:?}")
    };
    assert!(
        content.starts_with("START") && content.ends_with("END"),
        "{content}"
    );
    // The older ones were cleared first.
    let Message::Tool { content, .. } = &shrunk[last - 2] else {
        panic!("{shrunk:?}")
    };
    assert!(content.starts_with(prune::CLEARED_PREFIX), "{content}");
}

#[test]
fn a_summary_request_over_its_room_cuts_only_the_newest_results_when_that_is_enough() {
    let mut h = long_history(3, 3_000);
    let last = h.len() - 1;
    if let Some(Message::Tool { content, .. }) = h.get_mut(last) {
        *content = format!("START{}END", "o".repeat(15_000));
    }
    // The rest takes about 3,500 tokens: 6,000 leaves the newest result (5,000) about 2,500.
    let shrunk = summary::request(&h, 6_000).expect("fits");
    assert!(estimate::messages(&shrunk) <= 6_000);
    assert_eq!(
        &shrunk[..last],
        &h[..last],
        "the request before it stays whole"
    );
    let Message::Tool { content, .. } = &shrunk[last] else {
        panic!("{shrunk:?}")
    };
    assert!(
        content.starts_with("START")
            && content.ends_with("END")
            && content.contains("hx cut this output"),
        "{content}"
    );
    assert_eq!(shrunk.last(), Some(&user(summary::PROMPT)));
}

fn meter_at(window: u64, compact_at: f64, schemas: u64) -> Meter {
    Meter::new(
        Settings {
            window,
            compact_at: CompactAt::Fraction(compact_at),
        },
        schemas,
    )
}

#[test]
fn compaction_starts_where_the_summary_request_still_fits_whole() {
    let at = |window: u64| meter_at(window, 0.8, 0);
    let h = long_history(3, 3_000);
    let instruction = estimate::message(&user(summary::PROMPT));
    let last_turn = estimate::messages(&h[h.len() - 2..]);
    // 40,000: the summary request leaves its answer the 8,000 a turn's has past the limit,
    // so it fits 32,000; compaction comes while the next one can still carry the
    // instruction.
    let m = at(40_000);
    assert_eq!(m.summary_room(), 32_000);
    assert_eq!(m.compact_point(&h), 32_000 - instruction - last_turn);
    assert!(m.over_limit(32_000 - instruction - last_turn + 1, &h));
    assert!(!m.over_limit(32_000 - instruction - last_turn, &h));
    // A turn larger than a quarter of that room is no guide to the next.
    let mut big = h.clone();
    big.push(turn(vec![call("b", "bash", r#"{"command":"ls"}"#)]));
    big.push(tool("b", &"o".repeat(30_000)));
    assert_eq!(m.compact_point(&big), 32_000 - instruction);
    // 100,000: the room (84,000) is past the limit, which stands.
    assert_eq!(at(100_000).compact_point(&h), 80_000);
    // 1,000, and 10,000 with 2,000 tokens of tool schemas: compacting early would keep less
    // than two thirds of the room to work; compaction waits for the limit.
    assert_eq!(at(1_000).compact_point(&h), 800);
    assert_eq!(meter_at(10_000, 0.8, 2_000).compact_point(&h), 8_000);
}

#[test]
fn the_summary_answer_has_the_room_a_turn_answer_has_within_one_and_two_summaries() {
    // The room past the limit: 8,000 of 40,000 and 4,000 of 20,000 at the default 0.8 (the
    // summary's budget there is the same), so the summary request may reach the limit.
    assert_eq!(meter_at(40_000, 0.8, 0).summary_room(), 32_000);
    assert_eq!(meter_at(20_000, 0.8, 0).summary_room(), 16_000);
    // A limit near the window leaves the answer at least the summary's budget (8,000).
    assert_eq!(meter_at(40_000, 0.95, 0).summary_room(), 32_000);
    // A low limit leaves more, of which the answer takes twice the summary's budget
    // (5,000 at a limit of 20,000): the room is past the limit, which stands.
    let low = meter_at(40_000, 0.5, 0);
    assert_eq!(low.summary_room(), 30_000);
    assert_eq!(low.compact_point(&long_history(3, 3_000)), 20_000);
    // Small windows keep twice the summary's budget, up to 4,000, as before: 2,000 of
    // 10,000 is a quarter of the limit, 819 of 4,096 too.
    assert_eq!(meter_at(10_000, 0.8, 0).summary_room(), 6_000);
    assert_eq!(meter_at(4_096, 0.8, 0).summary_room(), 4_096 - 1_638);
    // Large windows keep twice the summary's 8,000, as before.
    assert_eq!(meter_at(100_000, 0.8, 0).summary_room(), 84_000);
    assert_eq!(
        meter_at(DEEPSEEK_V4_WINDOW, 0.8, 0).summary_room(),
        DEEPSEEK_V4_WINDOW - 16_000
    );
}

#[test]
fn the_summary_request_is_the_history_and_the_prompt_shrunk_to_its_room() {
    let h = long_history(6, 3_000);
    let whole = summary::request(&h, 100_000).expect("fits");
    assert_eq!(whole.len(), h.len() + 1);
    assert_eq!(whole.last(), Some(&user(summary::PROMPT)));
    // Outputs are cleared first, oldest first.
    let shrunk = summary::request(&h, 4_000).expect("fits");
    assert_eq!(shrunk.len(), h.len() + 1);
    assert!(estimate::messages(&shrunk) <= 4_000);
    let Message::Tool { content, .. } = &shrunk[3] else {
        panic!("{shrunk:?}")
    };
    assert!(content.starts_with(prune::CLEARED_PREFIX), "{content}");
    // Then whole turns after the task, with a note where they were.
    let tiny = summary::request(&h, 800).expect("fits");
    assert_eq!(&tiny[..2], &h[..2]);
    let Message::User(note) = &tiny[2] else {
        panic!("{tiny:?}")
    };
    assert!(note.contains("earlier messages are left out"), "{note}");
    assert!(estimate::messages(&tiny) <= 800);
    // The task and the prompt alone do not fit: an error, with their size.
    let huge = vec![Message::System("s".into()), user(&"t".repeat(30_000))];
    let size = summary::request(&huge, 800).expect_err("too large");
    assert!(size > 10_000, "{size}");
}

#[test]
fn the_rebuilt_history_keeps_the_system_prompt_the_task_newest_messages_skills_and_todos() {
    let todos = r#"{"todos":[{"content":"Ship it","status":"in_progress"}]}"#;
    let mut h = long_history(3, 300);
    h.push(user(crate::tools::todo::REMINDER));
    h.push(turn(vec![call("t", "todo_write", todos)]));
    h.push(tool("t", "[>] Ship it\n(0/1 completed)"));
    h.push(Message::Assistant {
        content: "done".into(),
        reasoning: None,
        tool_calls: vec![],
    });
    h.push(user("now also update the docs"));
    let budgets = Budgets::for_limit(100_000);
    let r = rebuild(
        &h,
        "  The summary.  ",
        &budgets,
        ReasoningEcho::Always,
        100_000,
    )
    .expect("fits");
    let n = &r.history;
    assert_eq!(n[0], h[0]);
    assert_eq!(n[1], user("the task"));
    assert_eq!(
        n[2],
        user("now also update the docs"),
        "the reminder is not carried"
    );
    assert_eq!(n[3], user(&format!("{}The summary.", summary::HEADER)));
    assert!(summary::is_summary(&n[3]));
    let Message::Assistant {
        tool_calls,
        reasoning,
        ..
    } = &n[4]
    else {
        panic!("{n:?}")
    };
    assert_eq!(reasoning.as_deref(), Some(""));
    let names: Vec<&str> = tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["load_skill", "todo_write"]);
    assert_eq!(tool_calls[1].arguments, todos);
    assert_eq!(
        n[5],
        tool(
            "hx_carried_0",
            &format!("<skill name=\"deploy\">\n{}\n</skill>", "d".repeat(300))
        )
    );
    assert_eq!(n[6], tool("hx_carried_1", "[>] Ship it\n(0/1 completed)"));
    assert_eq!(n.len(), 7);
    assert_eq!(r.skills, ["deploy"]);
    assert!(r.forgotten.is_empty());

    // Under `auto` the carried calls echo reasoning as the server's own last message did.
    let reasoning_of = |h: &[Message]| {
        let r = rebuild(h, "S", &budgets, ReasoningEcho::Auto, 100_000).expect("fits");
        r.history
            .iter()
            .find_map(|m| match m {
                Message::Assistant { reasoning, .. } => Some(reasoning.clone()),
                _ => None,
            })
            .expect("the carried calls")
    };
    assert_eq!(reasoning_of(&long_history(1, 300)), Some(String::new()));
    assert_eq!(reasoning_of(&h), None);

    // Compacting the compacted history finds the same skills and todos, and summarises the
    // old summary instead of carrying it.
    let again = rebuild(n, "Second.", &budgets, ReasoningEcho::Never, 100_000).expect("fits");
    assert_eq!(again.history.len(), 7);
    assert_eq!(
        again.history[3],
        user(&format!("{}Second.", summary::HEADER))
    );
    assert_eq!(again.history[5], n[5]);
    assert_eq!(again.history[6], n[6]);
}

#[test]
fn a_skill_over_its_budget_is_forgotten_and_what_does_not_fit_the_room_is_shed() {
    let h = long_history(1, 30_000);
    let budgets = Budgets::for_limit(100_000);
    let r = rebuild(&h, "S", &budgets, ReasoningEcho::Never, 100_000).expect("fits");
    assert_eq!(r.skills, Vec::<String>::new());
    assert_eq!(r.forgotten, ["deploy"]);
    assert_eq!(r.history.len(), 3, "{:?}", r.history);

    // A small room: the skill is within its budget but the room takes only the essentials.
    let h = long_history(1, 600);
    let budgets = Budgets::for_limit(100_000);
    let room = estimate::messages(&h[..2]) + 60;
    let r = rebuild(&h, "S", &budgets, ReasoningEcho::Never, room).expect("fits");
    assert_eq!(r.forgotten, ["deploy"]);
    assert!(estimate::messages(&r.history) <= room);
    // Not even the essentials: the error is their size.
    let size = rebuild(&h, "S", &budgets, ReasoningEcho::Never, 5).expect_err("no");
    assert!(size > 5);
}

mod instructions_discovery {
    use super::super::instructions::{discover, project_root};
    use std::path::Path;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn files_from_the_user_then_the_root_down_to_the_working_directory() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap().join("repo");
        let user = d.path().canonicalize().unwrap().join("config");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&user.join("AGENTS.md"), "user rules");
        write(&root.join("AGENTS.md"), "root rules");
        write(&root.join("CLAUDE.md"), "not read: AGENTS.md is there");
        write(&root.join("a/CLAUDE.md"), "a rules");
        write(&root.join("a/b/c/AGENTS.md"), "c rules");
        // Above the project root: not read.
        write(&d.path().join("AGENTS.md"), "outside");
        let cwd = root.join("a/b/c");
        assert_eq!(project_root(&cwd), root);
        let got = discover(&cwd, Some(&user), 32 * 1024);
        let labels: Vec<&str> = got.docs.iter().map(|d| d.label.as_str()).collect();
        assert_eq!(labels.len(), 4, "{labels:?}");
        assert!(
            labels[0].ends_with("config/AGENTS.md (the user's own)"),
            "{labels:?}"
        );
        assert_eq!(
            &labels[1..],
            ["AGENTS.md", "a/CLAUDE.md", "a/b/c/AGENTS.md"]
        );
        let texts: Vec<&str> = got.docs.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, ["user rules", "root rules", "a rules", "c rules"]);
        assert!(got.warnings.is_empty(), "{:?}", got.warnings);
        let section = got.section();
        let at = |s: &str| {
            section
                .find(s)
                .unwrap_or_else(|| panic!("{s} in {section}"))
        };
        assert!(at("# Project instructions") < at("user rules"));
        assert!(at("## AGENTS.md\n\nroot rules") < at("## a/CLAUDE.md\n\na rules"));
        assert!(at("a rules") < at("## a/b/c/AGENTS.md\n\nc rules"));
    }

    #[test]
    fn over_the_cap_the_furthest_files_are_cut_first_and_it_is_said() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir(root.join(".git")).unwrap();
        write(&root.join("AGENTS.md"), &"r".repeat(600));
        write(&root.join("sub/AGENTS.md"), &"s".repeat(300));
        let got = discover(&root.join("sub"), None, 500);
        assert_eq!(got.docs[1].text, "s".repeat(300));
        assert_eq!(got.docs[0].text, "r".repeat(200));
        assert_eq!(got.docs[0].cut, 400);
        assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
        assert!(
            got.warnings[0].contains("project_doc_max_bytes (500 bytes)")
                && got.warnings[0].contains("400 bytes of AGENTS.md"),
            "{}",
            got.warnings[0]
        );
        assert!(got
            .section()
            .contains("[hx: the last 400 bytes of this file are cut"));
        // Smaller still: the root's file is left out whole, and the nearest one cut.
        let got = discover(&root.join("sub"), None, 100);
        assert_eq!((got.docs[0].text.as_str(), got.docs[0].cut), ("", 600));
        assert_eq!(got.docs[1].cut, 200);
        assert!(got
            .section()
            .contains("[hx: this file (600 bytes) is left out"));
    }

    #[test]
    fn a_link_out_of_the_project_is_skipped_with_a_warning() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().canonicalize().unwrap();
        let root = base.join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        write(&base.join("secret.txt"), "a secret");
        std::os::unix::fs::symlink(base.join("secret.txt"), root.join("AGENTS.md")).unwrap();
        // A link inside the project is fine (CLAUDE.md -> AGENTS.md is common).
        write(&root.join("sub/AGENTS.md"), "sub rules");
        std::fs::create_dir_all(root.join("sub/x")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/AGENTS.md"), root.join("sub/x/CLAUDE.md"))
            .unwrap();
        let got = discover(&root.join("sub/x"), None, 32 * 1024);
        let texts: Vec<&str> = got.docs.iter().map(|d| d.text.as_str()).collect();
        assert_eq!(texts, ["sub rules", "sub rules"]);
        assert_eq!(got.warnings.len(), 1, "{:?}", got.warnings);
        assert!(
            got.warnings[0].contains("outside the project"),
            "{}",
            got.warnings[0]
        );
    }
}

#[test]
fn a_prune_pays_only_when_its_savings_before_the_next_compaction_pass_its_misses() {
    use prune::{pays, Cache, Weighed};
    // The bench's first prune: 60,450 tokens freed, 29,155 rewritten, about 14 requests until
    // the next compaction, at Flash's 1/50: it saves 16,926 miss-tokens' worth, loses 28,572.
    let w = Weighed {
        freed: 60_450,
        rewritten: 29_155,
        room_after: 14 * 3_000,
        growth: 3_000,
    };
    assert!(!pays(w, Cache::HitShare(0.02)));
    // The same prune with many more requests to come pays.
    assert!(pays(
        Weighed {
            room_after: 30 * 3_000,
            ..w
        },
        Cache::HitShare(0.02)
    ));
    // A cache at half price (OpenAI's older models) makes it pay at once.
    assert!(pays(w, Cache::HitShare(0.5)));
    // No cache: nothing to lose.
    assert!(pays(w, Cache::None));
    // Rewriting nothing always pays; a garbage share is taken as the dearest cache.
    assert!(pays(
        Weighed {
            rewritten: 0,
            growth: 0,
            ..w
        },
        Cache::HitShare(f64::NAN)
    ));
    assert!(!pays(w, Cache::HitShare(f64::NAN)));
}
