use super::*;
use crate::model::ToolCall;

fn turn(ids: &[&str]) -> Message {
    Message::Assistant {
        content: String::new(),
        reasoning: None,
        tool_calls: ids
            .iter()
            .map(|id| ToolCall {
                id: id.to_string(),
                name: "bash".into(),
                arguments: "{}".into(),
            })
            .collect(),
    }
}

fn result(id: &str, content: &str) -> Message {
    Message::Tool {
        tool_call_id: id.into(),
        content: content.into(),
    }
}

fn user(text: &str) -> Message {
    Message::User(text.into())
}

#[test]
fn open_calls_are_the_ones_without_a_result_in_the_run_after_their_turn() {
    let history = vec![
        user("go"),
        turn(&["a", "b", "c"]),
        result("b", "ok"),
        user("more"),
        // A result of `a` here is not in the run after its turn.
        turn(&["d"]),
        result("a", "late"),
        result("d", "ok"),
        turn(&["e", "f"]),
        result("f", "ok"),
    ];
    assert_eq!(
        open_calls(&history),
        vec![
            OpenCalls {
                turn: 1,
                at: 3,
                ids: vec!["a", "c"],
            },
            OpenCalls {
                turn: 7,
                at: 9,
                ids: vec!["e"],
            },
        ]
    );
    assert_eq!(
        open_calls_at_end(&history),
        Some(OpenCalls {
            turn: 7,
            at: 9,
            ids: vec!["e"],
        })
    );
    // Once the conversation went on, the last turn's open calls are not at the end.
    let mut went_on = history.clone();
    went_on.push(user("next"));
    assert_eq!(open_calls_at_end(&went_on), None);
    assert_eq!(open_calls(&went_on).len(), 2);
    // A last turn without calls, or with all its results, leaves nothing open at the end.
    assert_eq!(open_calls_at_end(&[user("go"), turn(&[])]), None);
    assert_eq!(
        open_calls_at_end(&[user("go"), turn(&["a"]), result("a", "ok")]),
        None
    );
    assert_eq!(open_calls(&[]), vec![]);
}

#[test]
fn answers_carry_their_places_in_the_answered_history() {
    let mut history = vec![
        user("go"),
        turn(&["a", "b"]),
        result("a", "ok"),
        user("more"),
        turn(&["c"]),
    ];
    let answers = answers(&history, "not run");
    assert_eq!(
        answers,
        vec![(3, result("b", "not run")), (6, result("c", "not run"))]
    );
    insert(&mut history, answers).expect("fits");
    assert_eq!(
        history,
        vec![
            user("go"),
            turn(&["a", "b"]),
            result("a", "ok"),
            result("b", "not run"),
            user("more"),
            turn(&["c"]),
            result("c", "not run"),
        ]
    );
    assert!(open_calls(&history).is_empty());
}

#[test]
fn insertions_that_do_not_fit_are_refused_and_change_nothing() {
    let history = vec![user("a"), user("b")];
    for (bad, says) in [
        (vec![(1, user("x")), (1, user("y"))], "comes after"),
        (vec![(2, user("x")), (0, user("y"))], "comes after"),
        (vec![(3, user("x"))], "past the end"),
        (vec![(0, user("x")), (4, user("y"))], "past the end"),
    ] {
        let mut m = history.clone();
        let e = insert(&mut m, bad).expect_err("does not fit");
        assert!(e.contains(says), "{e}");
        assert_eq!(m, history);
    }
    let mut m = history.clone();
    insert(&mut m, vec![(0, user("x")), (3, user("y"))]).expect("fits");
    assert_eq!(m, vec![user("x"), user("a"), user("b"), user("y")]);
    let mut m = history.clone();
    insert(&mut m, Vec::new()).expect("nothing to insert");
    assert_eq!(m, history);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// `record::repair` as it was before the pairing had one home, to check the new one
    /// against.
    fn old_repair(messages: &mut Vec<Message>, answer: &str) -> (usize, bool) {
        let mut added = 0;
        let mut all_at_end = true;
        let mut i = 0;
        while i < messages.len() {
            let Message::Assistant { tool_calls, .. } = &messages[i] else {
                i += 1;
                continue;
            };
            let ids: Vec<String> = tool_calls.iter().map(|c| c.id.clone()).collect();
            let mut j = i + 1;
            let mut answered = Vec::new();
            while let Some(Message::Tool { tool_call_id, .. }) = messages.get(j) {
                answered.push(tool_call_id.clone());
                j += 1;
            }
            let missing: Vec<Message> = ids
                .iter()
                .filter(|id| !answered.contains(id))
                .map(|id| result(id, answer))
                .collect();
            if !missing.is_empty() {
                if j < messages.len() {
                    all_at_end = false;
                }
                added += missing.len();
                let count = missing.len();
                messages.splice(j..j, missing);
                j += count;
            }
            i = j;
        }
        (added, all_at_end)
    }

    /// The ids a cancelled chat turn's answers went to before the pairing had one home.
    fn old_open_at_end(messages: &[Message]) -> Vec<String> {
        let Some(last) = messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. }))
        else {
            return Vec::new();
        };
        let Message::Assistant { tool_calls, .. } = &messages[last] else {
            return Vec::new();
        };
        let after = &messages[last + 1..];
        if !after.iter().all(|m| matches!(m, Message::Tool { .. })) {
            return Vec::new();
        }
        tool_calls
            .iter()
            .filter(|c| {
                !after.iter().any(
                    |m| matches!(m, Message::Tool { tool_call_id, .. } if *tool_call_id == c.id),
                )
            })
            .map(|c| c.id.clone())
            .collect()
    }

    /// Histories of users, turns and results over a few ids, so that calls, results,
    /// repeated ids and strays all meet.
    fn history() -> impl Strategy<Value = Vec<Message>> {
        let id = prop::sample::select(vec!["a", "b", "c", "d"]);
        let message = prop_oneof![
            Just(user("u")),
            prop::collection::vec(id.clone(), 0..4).prop_map(|ids| turn(&ids)),
            id.prop_map(|id| result(id, "r")),
        ];
        prop::collection::vec(message, 0..24)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

        #[test]
        fn repair_does_what_it_did(h in history()) {
            let mut old = h.clone();
            let mut new = h.clone();
            let was = old_repair(&mut old, "x");
            prop_assert_eq!(repair(&mut new, "x"), was);
            prop_assert_eq!(&new, &old);
            prop_assert!(open_calls(&new).is_empty());
            // The answers in their places are what the repair inserted.
            let mut inserted = h.clone();
            insert(&mut inserted, answers(&h, "x")).expect("fits");
            prop_assert_eq!(inserted, old);
        }

        #[test]
        fn the_open_calls_at_the_end_are_the_ones_a_cancelled_turn_answered(h in history()) {
            let new: Vec<String> = open_calls_at_end(&h)
                .map(|open| open.ids.into_iter().map(str::to_string).collect())
                .unwrap_or_default();
            prop_assert_eq!(new, old_open_at_end(&h));
        }
    }
}
